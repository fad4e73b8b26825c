"""Tensors of rank >= 3 with several dynamic dimensions on the host: compiled and run in a child process (an
abort in the lowering shows as its exit status, not as a dead test run), checked against float64 numpy."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from conftest import REPO, run_cli

# The child: compile the program for the host, run @f on the saved inputs, save its results.
CHILD = """
import sys
import numpy as np
import prism
inputs = np.load(sys.argv[2])
result = prism.compile(sys.argv[1], target="host").jit("f")(*[inputs[f"a{i}"] for i in range(len(inputs.files))])
results = result if isinstance(result, tuple) else (result,)
np.savez(sys.argv[3], **{f"r{i}": r for i, r in enumerate(results)})
"""


def run_on_host(tmp_path: Path, text: str, inputs: list[np.ndarray]) -> list[np.ndarray]:
    """``@f`` of ``text`` on ``inputs``, compiled for the host and run in a child process."""
    source, arrays, out = tmp_path / "program.mlir", tmp_path / "inputs.npz", tmp_path / "results.npz"
    source.write_text(text)
    np.savez(arrays, **{f"a{i}": a for i, a in enumerate(inputs)})
    child = subprocess.run([sys.executable, "-c", CHILD, str(source), str(arrays), str(out)], capture_output=True,
                           text=True, cwd=REPO, timeout=300)
    assert child.returncode == 0, f"exit status {child.returncode}:\n{child.stderr[-3000:]}"
    with np.load(out) as results:
        return [results[f"r{i}"] for i in range(len(results.files))]


def _type(shape: tuple[str, ...]) -> str:
    return f"tensor<{'x'.join(shape)}xf32>"


def _dims(value: str, shape: tuple[str, ...], upto: int) -> tuple[list[str], str]:
    """Lines reading the dynamic sizes of ``value``'s first ``upto`` dimensions, and them as operands."""
    lines, names = [], []
    for d, s in enumerate(shape[:upto]):
        if s == "?":
            lines += [f"%i{d} = arith.constant {d} : index", f"%d{d} = tensor.dim {value}, %i{d} : {_type(shape)}"]
            names.append(f"%d{d}")
    return lines, ", ".join(names)


def _maps(rank: int) -> tuple[str, str]:
    """The identity map and the map onto every dimension but the last, over ``rank`` loops."""
    dims = [f"d{i}" for i in range(rank)]
    return (f"affine_map<({', '.join(dims)}) -> ({', '.join(dims)})>",
            f"affine_map<({', '.join(dims)}) -> ({', '.join(dims[:-1])})>")


def exp_program(shape: tuple[str, ...]) -> str:
    """``@f(x) = exp(x)`` as one generic over ``shape`` (``?`` for a dynamic size)."""
    full, rank = _type(shape), len(shape)
    dims, sizes = _dims("%x", shape, rank)
    identity, _ = _maps(rank)
    parallel = ", ".join(['"parallel"'] * rank)
    return "\n".join([
        f"func.func @f(%x: {full}) -> {full} {{", *dims, f"%e = tensor.empty({sizes}) : {full}",
        f"%y = linalg.generic {{indexing_maps = [{identity}, {identity}], "
        f"iterator_types = [{parallel}]}} ins(%x : {full}) outs(%e : {full}) {{",
        "^bb0(%a: f32, %b: f32):", "  %r = math.exp %a : f32", "  linalg.yield %r : f32", f"}} -> {full}",
        f"return %y : {full}", "}"])


def softmax_program(shape: tuple[str, ...]) -> str:
    """``@f(x) = softmax(x)`` over the last axis of ``shape``, as a max, exp, sum and division."""
    full, row, rank = _type(shape), _type(shape[:-1]), len(shape)
    dims, sizes = _dims("%x", shape, rank)
    _, row_sizes = _dims("%x", shape, rank - 1)
    identity, rows = _maps(rank)
    parallel = ", ".join(['"parallel"'] * rank)
    reduction = ", ".join(['"parallel"'] * (rank - 1) + ['"reduction"'])

    def generic(out: str, maps: list[str], iterators: str, ins: list[tuple[str, str]], init: str, typ: str,
                body: list[str]) -> list[str]:
        block = ", ".join([f"%a{i}: f32" for i in range(len(ins))] + ["%acc: f32"])
        return [f"%{out} = linalg.generic {{indexing_maps = [{', '.join(maps)}], iterator_types = [{iterators}]}} "
                f"ins({', '.join(n for n, _ in ins)} : {', '.join(t for _, t in ins)}) outs({init} : {typ}) {{",
                f"^bb0({block}):", *[f"  {line}" for line in body], "  linalg.yield %r : f32", f"}} -> {typ}"]

    return "\n".join([
        f"func.func @f(%x: {full}) -> {full} {{", *dims,
        "%zero = arith.constant 0.0 : f32", "%ninf = arith.constant 0xFF800000 : f32",
        f"%re = tensor.empty({row_sizes}) : {row}",
        f"%rm = linalg.fill ins(%ninf : f32) outs(%re : {row}) -> {row}",
        f"%rz = linalg.fill ins(%zero : f32) outs(%re : {row}) -> {row}", f"%e = tensor.empty({sizes}) : {full}",
        *generic("m", [identity, rows], reduction, [("%x", full)], "%rm", row, ["%r = arith.maximumf %acc, %a0 : f32"]),
        *generic("p", [identity, rows, identity], parallel, [("%x", full), ("%m", row)], "%e", full,
                 ["%t = arith.subf %a0, %a1 : f32", "%r = math.exp %t : f32"]),
        *generic("l", [identity, rows], reduction, [("%p", full)], "%rz", row, ["%r = arith.addf %acc, %a0 : f32"]),
        *generic("y", [identity, rows, identity], parallel, [("%p", full), ("%l", row)], "%e", full,
                 ["%r = arith.divf %a0, %a1 : f32"]),
        f"return %y : {full}", "}"])


def softmax_reference(x: np.ndarray) -> np.ndarray:
    x = x.astype(np.float64)
    p = np.exp(x - x.max(axis=-1, keepdims=True))
    return p / p.sum(axis=-1, keepdims=True)


# (the type's shape, the run's shape): rank 3 and 4, two or three dynamic sizes, odd extents.
SHAPES = [(("?", "?", "8"), (3, 5, 8)), (("?", "?", "?"), (2, 7, 13)), (("?", "3", "?", "?"), (5, 3, 2, 11)),
          (("2", "?", "?", "9"), (2, 3, 5, 9)), (("?", "?", "?", "?"), (3, 1, 4, 37))]


@pytest.mark.parametrize("shape, sizes", SHAPES)
def test_exp_of_several_dynamic_sizes(tmp_path: Path, rng: np.random.Generator, shape: tuple[str, ...],
                                      sizes: tuple[int, ...]) -> None:
    x = (rng.standard_normal(sizes) * 4).astype(np.float32)
    (y,) = run_on_host(tmp_path, exp_program(shape), [x])
    np.testing.assert_allclose(y, np.exp(x.astype(np.float64)), rtol=3e-7, atol=0)


@pytest.mark.parametrize("shape, sizes", SHAPES)
def test_softmax_of_several_dynamic_sizes(tmp_path: Path, rng: np.random.Generator, shape: tuple[str, ...],
                                          sizes: tuple[int, ...]) -> None:
    x = (rng.standard_normal(sizes) * 4).astype(np.float32)
    (y,) = run_on_host(tmp_path, softmax_program(shape), [x])
    np.testing.assert_allclose(y, softmax_reference(x), rtol=2e-6, atol=1e-7)


def test_expansion_of_two_dynamic_sizes(tmp_path: Path, rng: np.random.Generator) -> None:
    """The program's own expand_shape of two dynamic sizes in one group, then exp: a reshape, then a row kernel."""
    identity, _ = _maps(3)
    text = "\n".join([
        "func.func @f(%x: tensor<?x8xf32>, %y: tensor<?xf32>) -> tensor<?x?x8xf32> {",
        "%c0 = arith.constant 0 : index", "%n = tensor.dim %x, %c0 : tensor<?x8xf32>",
        "%b = tensor.dim %y, %c0 : tensor<?xf32>", "%a = arith.divui %n, %b : index",
        "%v = tensor.expand_shape %x [[0, 1], [2]] output_shape [%a, %b, 8] : tensor<?x8xf32> into tensor<?x?x8xf32>",
        "%e = tensor.empty(%a, %b) : tensor<?x?x8xf32>",
        f"%r = linalg.generic {{indexing_maps = [{identity}, {identity}], "
        'iterator_types = ["parallel", "parallel", "parallel"]} ins(%v : tensor<?x?x8xf32>) '
        "outs(%e : tensor<?x?x8xf32>) {",
        "^bb0(%i: f32, %o: f32):", "  %t = math.exp %i : f32", "  linalg.yield %t : f32", "} -> tensor<?x?x8xf32>",
        "return %r : tensor<?x?x8xf32>", "}"])
    x = rng.standard_normal((15, 8)).astype(np.float32)
    (r,) = run_on_host(tmp_path, text, [x, np.zeros(3, np.float32)])
    np.testing.assert_allclose(r, np.exp(x.astype(np.float64)).reshape(5, 3, 8), rtol=3e-7, atol=0)


def test_the_gpu_lowering_takes_an_expansion_of_two_dynamic_sizes(tmp_path: Path) -> None:
    """The GPU's host code reshapes too, rather than abort in the lowering of the expansion to LLVM."""
    source = tmp_path / "expand.mlir"
    source.write_text("func.func @f(%x: tensor<?x8xf32>, %a: index, %b: index) -> tensor<?x?x8xf32> {\n"
                      "  %r = tensor.expand_shape %x [[0, 1], [2]] output_shape [%a, %b, 8] : tensor<?x8xf32> "
                      "into tensor<?x?x8xf32>\n  return %r : tensor<?x?x8xf32>\n}\n")
    result = run_cli(str(source), "--target=h200", "-p", "prism-lower-gpu", "-o", os.devnull)
    assert result.returncode == 0, result.stderr
