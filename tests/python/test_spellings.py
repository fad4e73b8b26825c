"""Spellings of attention, RMSNorm + linear and SwiGLU reach the host's fused kernels, proven and right.

Every file in tests/python/spellings/ says on its first line what it computes (``// expect: attention``,
``rmsnorm`` or ``swiglu``) and on its second how it spells it. Its arguments come in the order q, k, v;
x, gamma, w; or x, wg, wu, wd. Each must reach the expected kernels on the host (from the report's
``kernels``): attention one attention kernel; RMSNorm + linear and SwiGLU the kernels of their bundled form
(benchmarks/workloads/) written at the spelling's sizes, and at the workloads' sizes their fused kernels. Its
explored program must be proven equal to it (the report's ``proofs``), and the compiled function must match a
float64 numpy reference of its kind. The references' one free constant (attention's
scale, RMSNorm's epsilon) is one of the file's own float constants.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from functools import cache
from pathlib import Path

import numpy as np
import pytest
from mlir import ir

import prism
from prism.algebra import explore
from prism.algebra.prove import public_functions
from prism.algebra.terms import Term, translate
from prism.infra.ir import make_context, normalize_program
from prism.targets.host import host_target

SPELLINGS = Path(__file__).parent / "spellings"
FILES = sorted(SPELLINGS.glob("*.mlir"))
KINDS = ("attention", "rmsnorm", "swiglu")
# Per kind, the sizes of benchmarks/workloads/ by the role of each argument's axes (rows, model, ...).
WORKLOAD_ROLES = {"rmsnorm": (("rows", "model"), ("model",), ("model", "out")),
                  "swiglu": (("rows", "model"), ("model", "hidden"), ("model", "hidden"), ("hidden", "model"))}
WORKLOAD_SIZES = {"rows": 16, "model": 1024, "out": 1024, "hidden": 2816}


def expectation(path: Path) -> str:
    """The kind of computation a spelling's first line names."""
    first = path.read_text().splitlines()[0]
    found = re.fullmatch(r"//\s*expect:\s*(\w+)\s*", first)
    assert found and found.group(1) in KINDS, f"{path.name}: first line must be '// expect: {'|'.join(KINDS)}'"
    return found.group(1)


def constants(text: str) -> list[float]:
    """The finite float constants of a program, each once, in order of appearance."""
    values = []
    for literal in re.findall(r"arith\.constant\s+([-+0-9.eE]+)\s*:\s*f32", text):
        value = float(literal)
        if np.isfinite(value) and value not in values:
            values.append(value)
    return values


def attention(q: np.ndarray, k: np.ndarray, v: np.ndarray, scale: float) -> np.ndarray:
    s = scale * (q @ np.swapaxes(k, -1, -2))
    e = np.exp(s - s.max(axis=-1, keepdims=True))
    return (e / e.sum(axis=-1, keepdims=True)) @ v


def rmsnorm(x: np.ndarray, gamma: np.ndarray, w: np.ndarray, eps: float) -> np.ndarray:
    return (x / np.sqrt((x * x).mean(axis=-1, keepdims=True) + eps) * gamma) @ w


def swiglu(x: np.ndarray, wg: np.ndarray, wu: np.ndarray, wd: np.ndarray, _: float) -> np.ndarray:
    g = x @ wg
    return (g / (1 + np.exp(-g)) * (x @ wu)) @ wd


REFERENCES: dict[str, Callable[..., np.ndarray]] = {"attention": attention, "rmsnorm": rmsnorm, "swiglu": swiglu}


@cache
def compiled_for_host(text: str) -> prism.CompiledModule:
    """``text`` compiled for the host with ``emit="report"``, once per text: the report's kernels and proofs,
    and the optimized module (the same as the default emit's) that ``jit()`` builds."""
    return prism.compile(text, target="host", emit="report")


def kernel_kinds(report: dict) -> list[str]:
    return [kernel["kind"] for function in report["kernels"] for kernel in function["kernels"]]


def reaches(kind: str, kernels: list[str]) -> bool:
    """Whether ``kernels`` are the fused kernels ``kind`` should become on the host."""
    if kind == "attention":
        return kernels == ["attention"]
    if kind == "rmsnorm":
        return len(kernels) <= 2
    return sorted(kernels) == ["dual gemm + epilogue", "gemm"]


def signature_shapes(text: str) -> list[tuple[int, ...]]:
    """The shapes of a spelling's arguments, in order."""
    signature = re.search(r"func\.func @\w+\(([^)]*)\)", text).group(1)
    return [tuple(int(n) for n in found.split("x")) for found in re.findall(r"tensor<([0-9x]+)xf32>", signature)]


def at_workload_size(path: Path) -> str | None:
    """The spelling with every size replaced by the workload's size of its role; None when its arguments do not
    take the roles one-to-one (their ranks differ, or two roles share a size)."""
    text, roles = path.read_text(), WORKLOAD_ROLES.get(expectation(path))
    shapes = signature_shapes(text)
    if roles is None or [len(s) for s in shapes] != [len(r) for r in roles]:
        return None
    sizes: dict[int, str] = {}
    for shape, named in zip(shapes, roles, strict=True):
        for size, role in zip(shape, named, strict=True):
            if sizes.setdefault(size, role) != role:
                return None
    if len(set(sizes.values())) != len(sizes):
        return None

    def scaled(found: re.Match) -> str:
        dims = [str(WORKLOAD_SIZES[sizes[int(n)]]) if int(n) in sizes else n for n in found.group(1).split("x")]
        return f"tensor<{'x'.join(dims)}xf32>"

    return re.sub(r"tensor<([0-9x]+)xf32>", scaled, text)


SCALABLE = [p for p in FILES if expectation(p) != "attention" and at_workload_size(p) is not None]


@pytest.mark.parametrize("path", SCALABLE, ids=[p.stem for p in SCALABLE])
def test_spelling_at_workload_size(path: Path, tuned_host: None) -> None:
    """At the sizes of benchmarks/workloads/, where the host runs the bundled spellings fused, so does this one."""
    report = prism.compile(at_workload_size(path), target="host", emit="report").report
    kernels = kernel_kinds(report)
    assert reaches(expectation(path), kernels), f"{path.name}: {expectation(path)} became {kernels}"
    assert report["proofs"] and all(proof["proved"] for proof in report["proofs"]), report["proofs"]


def test_every_spelling_names_a_kind() -> None:
    assert len(FILES) >= 8
    for path in FILES:
        lines = path.read_text().splitlines()
        assert expectation(path) in KINDS and lines[1].startswith("//"), path.name


def bundled(kind: str, shapes: list[tuple[int, ...]]) -> str:
    """The bundled form of ``kind`` (benchmarks/workloads/rmsnorm_matmul.mlir, swiglu.mlir) over arguments of
    ``shapes``: RMSNorm's statistics and scale as generics, then linalg.matmul; SwiGLU's gate and up products,
    one generic computing silu(gate) * up, then the down product."""
    if kind == "rmsnorm":
        (n, d), _, (_, o) = shapes
        return f"""#rows = affine_map<(i, j) -> (i, j)>
#row = affine_map<(i, j) -> (i)>
#col = affine_map<(i, j) -> (j)>
#vec = affine_map<(i) -> (i)>
func.func @rmsnorm(%x: tensor<{n}x{d}xf32>, %gamma: tensor<{d}xf32>, %w: tensor<{d}x{o}xf32>) -> tensor<{n}x{o}xf32> {{
  %zero = arith.constant 0.0 : f32
  %inv_d = arith.constant {1.0 / d!r} : f32
  %eps = arith.constant 1.0e-06 : f32
  %re = tensor.empty() : tensor<{n}xf32>
  %r0 = linalg.fill ins(%zero : f32) outs(%re : tensor<{n}xf32>) -> tensor<{n}xf32>
  %ss = linalg.generic {{indexing_maps = [#rows, #row], iterator_types = ["parallel", "reduction"]}}
      ins(%x : tensor<{n}x{d}xf32>) outs(%r0 : tensor<{n}xf32>) {{
  ^bb0(%v: f32, %acc: f32):
    %sq = arith.mulf %v, %v : f32
    %sum = arith.addf %acc, %sq : f32
    linalg.yield %sum : f32
  }} -> tensor<{n}xf32>
  %scale = linalg.generic {{indexing_maps = [#vec, #vec], iterator_types = ["parallel"]}}
      ins(%ss : tensor<{n}xf32>) outs(%re : tensor<{n}xf32>) {{
  ^bb0(%s: f32, %out: f32):
    %mean = arith.mulf %s, %inv_d : f32
    %shifted = arith.addf %mean, %eps : f32
    %r = math.rsqrt %shifted : f32
    linalg.yield %r : f32
  }} -> tensor<{n}xf32>
  %ye = tensor.empty() : tensor<{n}x{d}xf32>
  %y = linalg.generic {{indexing_maps = [#rows, #row, #col, #rows], iterator_types = ["parallel", "parallel"]}}
      ins(%x, %scale, %gamma : tensor<{n}x{d}xf32>, tensor<{n}xf32>, tensor<{d}xf32>) outs(%ye : tensor<{n}x{d}xf32>) {{
  ^bb0(%v: f32, %s: f32, %g: f32, %out: f32):
    %nv = arith.mulf %v, %s : f32
    %scaled = arith.mulf %nv, %g : f32
    linalg.yield %scaled : f32
  }} -> tensor<{n}x{d}xf32>
  %oe = tensor.empty() : tensor<{n}x{o}xf32>
  %acc = linalg.fill ins(%zero : f32) outs(%oe : tensor<{n}x{o}xf32>) -> tensor<{n}x{o}xf32>
  %out = linalg.matmul ins(%y, %w : tensor<{n}x{d}xf32>, tensor<{d}x{o}xf32>)
      outs(%acc : tensor<{n}x{o}xf32>) -> tensor<{n}x{o}xf32>
  return %out : tensor<{n}x{o}xf32>
}}
"""
    (n, d), (_, h) = shapes[0], shapes[1]
    hidden, model = f"tensor<{n}x{h}xf32>", f"tensor<{n}x{d}xf32>"
    return f"""#id = affine_map<(i, j) -> (i, j)>
func.func @swiglu(%x: {model}, %wg: tensor<{d}x{h}xf32>, %wu: tensor<{d}x{h}xf32>,
                  %wd: tensor<{h}x{d}xf32>) -> {model} {{
  %zero = arith.constant 0.0 : f32
  %one = arith.constant 1.0 : f32
  %he = tensor.empty() : {hidden}
  %h0 = linalg.fill ins(%zero : f32) outs(%he : {hidden}) -> {hidden}
  %gate = linalg.matmul ins(%x, %wg : {model}, tensor<{d}x{h}xf32>) outs(%h0 : {hidden}) -> {hidden}
  %up = linalg.matmul ins(%x, %wu : {model}, tensor<{d}x{h}xf32>) outs(%h0 : {hidden}) -> {hidden}
  %h = linalg.generic {{indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel"]}}
      ins(%gate, %up : {hidden}, {hidden}) outs(%he : {hidden}) {{
  ^bb0(%g: f32, %u: f32, %out: f32):
    %neg = arith.negf %g : f32
    %e = math.exp %neg : f32
    %den = arith.addf %one, %e : f32
    %silu = arith.divf %g, %den : f32
    %prod = arith.mulf %silu, %u : f32
    linalg.yield %prod : f32
  }} -> {hidden}
  %oe = tensor.empty() : {model}
  %o0 = linalg.fill ins(%zero : f32) outs(%oe : {model}) -> {model}
  %out = linalg.matmul ins(%h, %wd : {hidden}, tensor<{h}x{d}xf32>) outs(%o0 : {model}) -> {model}
  return %out : {model}
}}
"""


def expected_kernels(path: Path) -> list[str]:
    """The kernels a spelling should reach: one attention kernel, or those of its kind's bundled form at its
    sizes."""
    kind = expectation(path)
    if kind == "attention":
        return ["attention"]
    report = compiled_for_host(bundled(kind, signature_shapes(path.read_text()))).report
    return sorted(kernel_kinds(report))


@pytest.mark.parametrize("kind", ["rmsnorm", "swiglu"])
def test_bundled_form_at_workload_size_is_the_workload(kind: str, tuned_host: None) -> None:
    """The generator writes benchmarks/workloads/ at their own sizes, kernel for kernel."""
    name = "rmsnorm_matmul" if kind == "rmsnorm" else kind
    text = (Path(__file__).parents[2] / "benchmarks" / "workloads" / f"{name}.mlir").read_text()
    shapes = signature_shapes(text)
    report = prism.compile(bundled(kind, shapes), target="host", emit="report").report
    assert sorted(kernel_kinds(report)) == sorted(kernel_kinds(prism.compile(text, target="host",
                                                                            emit="report").report))
    assert reaches(kind, kernel_kinds(report))


@pytest.mark.parametrize("path", FILES, ids=[p.stem for p in FILES])
def test_spelling_reaches_its_kernels_proven(path: Path, tuned_host: None) -> None:
    kind = expectation(path)
    report = compiled_for_host(path.read_text()).report
    kernels = sorted(kernel_kinds(report))
    assert kernels == expected_kernels(path), f"{path.name}: {kind} became {kernels}"
    assert report["proofs"] and all(proof["proved"] for proof in report["proofs"]), report["proofs"]


_COMMUTATIVE = ("add", "mul", "maximum")


def normal(term: Term) -> Term:
    """``term`` with every subterm of constants alone as one constant, and the operands of commutative operators
    in one order: two spellings of one program differ in nothing else."""
    args = tuple(normal(arg) for arg in term.args)
    if term.op == "splat" or (args and all(arg.op == "constant" for arg in args)):
        return Term("constant")
    if term.op in _COMMUTATIVE:
        args = tuple(sorted(args, key=repr))
    return Term(term.op, args, term.attrs)


@cache
def explored_program(text: str) -> tuple[Term, ...]:
    """The results of the program prism-explore finds for the one function of ``text`` on the host, normal."""
    module = ir.Module.parse(text, make_context())
    with module.context, ir.Location.unknown():
        normalize_program(module)  # named ops and softmax as generics, as the passes read them
        program = translate(next(iter(public_functions(module).values())))
    found = explore.explore(program, host_target(), "f32")
    return tuple(normal(term) for term in found.best.results)


BUNDLED_KINDS = [p for p in FILES if expectation(p) != "attention"]


@pytest.mark.parametrize("path", BUNDLED_KINDS, ids=[p.stem for p in BUNDLED_KINDS])
def test_spelling_explores_to_the_program_of_the_bundled_form(path: Path, tuned_host: None) -> None:
    """Exploration settles every spelling of a function on one program: the bundled form's at the same sizes,
    up to the spelling of constants (the mean as a division by d or a product with 1/d, epsilon) and the order
    of commutative operands."""
    text = path.read_text()
    assert explored_program(text) == explored_program(bundled(expectation(path), signature_shapes(text)))


@pytest.mark.parametrize("path", FILES, ids=[p.stem for p in FILES])
def test_spelling_matches_numpy(path: Path, rng: np.random.Generator) -> None:
    text = path.read_text()
    function = compiled_for_host(text).jit()
    shapes = signature_shapes(text)
    args = [rng.standard_normal(shape).astype(np.float32) for shape in shapes]
    result = function(*args)
    got = np.asarray(result[0] if isinstance(result, tuple) else result, dtype=np.float64)
    wide = [a.astype(np.float64) for a in args]
    reference = REFERENCES[expectation(path)]
    errors = [float(np.max(np.abs(got - reference(*wide, c)))) for c in [*constants(text), 1.0]]
    assert min(errors) < 1e-3 * max(1.0, float(np.max(np.abs(reference(*wide, 1.0))))), errors
