"""Epilogues: an elementwise consumer of a GEMM runs on each C tile as the kernel stores it (codegen/cpu/epilogue)."""

from __future__ import annotations

import re

import numpy as np
import pytest

from conftest import lower_on_host
from prism.codegen.cpu.kernel import COPY_AHEAD_BYTES

# K = 300 in five slices of 64, N = 45 in a ragged last column block and micro-tile.
CHOICE = '{prism.roles = ["m", "n", "k"], prism.choice = {TM = 16, TN = 32, TK = 64, RM = 4, RN = 16, PACK = 1}}'
# One-row blocks: B streamed in place (KernelPlan.streams).
# A register block one vector wide (on the 256-bit lowering these tests use): a dual GEMM doubles it.
ONE_VECTOR = '{prism.roles = ["m", "n", "k"], prism.choice = {TM = 16, TN = 32, TK = 64, RM = 4, RN = 8, PACK = 1}}'
STREAM = '{prism.roles = ["m", "n", "k"], prism.choice = {TM = 16, TN = 32, TK = 64, RM = 1, RN = 16, PACK = 0}}'
# A few rows in one row panel, B read in place in shallow slices (host_gemm.streams_in_place): a dual GEMM halves
# the slice, to 8 rows (K = 300 then ends in a ragged slice of 4).
SWEEP = '{prism.roles = ["m", "n", "k"], prism.choice = {TM = 8, TN = 32, TK = 16, RM = 8, RN = 16, PACK = 1}}'
ID, ROW, COL = "affine_map<(i, j) -> (i, j)>", "affine_map<(i, j) -> (i)>", "affine_map<(i, j) -> (j)>"
M, N, K = 37, 45, 300


def source(extras: list[tuple[str, str, str]], body: list[str], dynamic_m: bool = False, init: bool = False,
           reads_out: bool = False, second_use: bool = False) -> str:
    """``@f(a, b, [c0,] extras...)``: a matmul, then a generic over its result and ``extras`` (name, type, map)
    whose block arguments are ``%x`` (C), the extras' names, and ``%o``; ``body`` ends defining ``%r``."""
    m = "?" if dynamic_m else str(M)
    a, b, c = f"tensor<{m}x{K}xf32>", f"tensor<{K}x{N}xf32>", f"tensor<{m}x{N}xf32>"
    args = [f"%a: {a}", f"%b: {b}", *([f"%c0: {c}"] if init else []),
            *[f"%{name}: {typ.replace('M', m)}" for name, typ, _ in extras]]
    results = f"{c}, {c}" if second_use else c
    lines = [f"func.func @f({', '.join(args)}) -> ({results}) {{",
             "  %i0 = arith.constant 0 : index", f"  %d = tensor.dim %a, %i0 : {a}",
             "  %zero = arith.constant 0.0 : f32", f"  %e = tensor.empty({'%d' if dynamic_m else ''}) : {c}"]
    if not init:
        lines.append(f"  %c0 = linalg.fill ins(%zero : f32) outs(%e : {c}) -> {c}")
    ins = ", ".join(["%mm", *[f"%{name}" for name, _, _ in extras]])
    types = ", ".join([c, *[typ.replace("M", m) for _, typ, _ in extras]])
    maps = ", ".join([ID, *[amap for _, _, amap in extras], ID])
    block = ", ".join(["%x: f32", *[f"%{name}_v: f32" for name, _, _ in extras], "%o: f32"])
    body = [line.replace("%o_use", "%o") for line in body]
    lines += [f"  %mm = linalg.matmul {CHOICE} ins(%a, %b : {a}, {b}) outs(%c0 : {c}) -> {c}",
              f'  %y = linalg.generic {{indexing_maps = [{maps}], iterator_types = ["parallel", "parallel"]}} '
              f"ins({ins} : {types}) outs(%e : {c}) {{",
              f"  ^bb0({block}):", *[f"    {line}" for line in body],
              *(["    %r2 = arith.addf %r, %o : f32", "    linalg.yield %r2 : f32"] if reads_out
                else ["    linalg.yield %r : f32"]),
              f"  }} -> {c}",
              f"  return %y{', %mm' if second_use else ''} : {results}", "}"]
    return "\n".join(lines)


def lower(text: str, threads: int = 2):
    return lower_on_host(text, "f", threads)


def inputs(rng: np.random.Generator):
    return rng.standard_normal((M, K), dtype=np.float32), rng.standard_normal((K, N), dtype=np.float32)


@pytest.mark.parametrize("dynamic_m, threads, choice", [(False, 2, CHOICE), (True, 3, CHOICE), (False, 2, "stream"),
                                                        (True, 3, "stream")])
def test_row_scale(rng: np.random.Generator, dynamic_m: bool, threads: int, choice: str) -> None:
    """RMSNorm after the matmul, y = (a @ b) * r[i]: the consumer runs inside the kernel, also where one-row
    blocks stream B."""
    text = source([("rs", "tensor<Mxf32>", ROW)], ["%r = arith.mulf %x, %rs_v : f32"], dynamic_m)
    if choice == "stream":
        text = text.replace(CHOICE, STREAM)
    tiled, fn = lower(text, threads)
    assert "linalg.generic" not in tiled and "linalg.matmul" not in tiled
    a, b = inputs(rng)
    r = rng.standard_normal(M, dtype=np.float32)
    np.testing.assert_allclose(fn(a, b, r), (a.astype(np.float64) @ b) * r[:, None], rtol=1e-5, atol=1e-4)


def test_bias_and_activation(rng: np.random.Generator) -> None:
    """A column bias, a constant from inside the body and one from outside, and exp: exp((a @ b + bias) * 0.05)."""
    body = ["%s = arith.constant 0.05 : f32", "%t = arith.addf %x, %bias_v : f32", "%u = arith.mulf %t, %s : f32",
            "%r = math.exp %u : f32"]
    tiled, fn = lower(source([("bias", f"tensor<{N}xf32>", COL)], body))
    assert "linalg.generic" not in tiled
    a, b = inputs(rng)
    bias = rng.standard_normal(N, dtype=np.float32)
    np.testing.assert_allclose(fn(a, b, bias), np.exp(((a.astype(np.float64) @ b) + bias) * 0.05), rtol=2e-5)


def test_residual_onto_an_init(rng: np.random.Generator) -> None:
    """C starts at an argument, and a residual of C's shape is added: y = max(c0 + a @ b + res, 0)."""
    body = ["%t = arith.addf %x, %res_v : f32", "%r = arith.maximumf %t, %zero : f32"]
    tiled, fn = lower(source([("res", f"tensor<Mx{N}xf32>", ID)], body, init=True))
    assert "linalg.generic" not in tiled
    a, b = inputs(rng)
    c0, res = (rng.standard_normal((M, N), dtype=np.float32) for _ in range(2))
    np.testing.assert_allclose(fn(a, b, c0, res), np.maximum(c0 + a.astype(np.float64) @ b + res, 0), rtol=1e-5,
                               atol=1e-4)


@pytest.mark.parametrize("change", ["reads its output", "result used twice"])
def test_a_consumer_that_does_not_fit_stays_a_loop(rng: np.random.Generator, change: str) -> None:
    from mlir import ir

    from prism.codegen.cpu import kernel_report
    from prism.infra.ir import make_context

    kind = {"reads its output": {"reads_out": True}, "result used twice": {"second_use": True}}[change]
    text = source([("rs", "tensor<Mxf32>", ROW)], ["%r = arith.mulf %x, %rs_v : f32"], **kind)
    with make_context(), ir.Location.unknown():
        (function,) = kernel_report(ir.Module.parse(text), 2)
    # The GEMM is a kernel of its own; the consumer a loop nest, or a row kernel where it fits one.
    assert [k["kind"] for k in function["kernels"]] == ["gemm", "loops" if change == "reads its output" else "rows"]
    tiled, fn = lower(text)
    a, b = inputs(rng)
    r = rng.standard_normal(M, dtype=np.float32)
    product = a.astype(np.float64) @ b
    result = fn(a, b, r)
    if change == "result used twice":
        np.testing.assert_allclose(result[1], product, rtol=1e-5, atol=1e-4)
        result = result[0]
    # With the output read, the body adds the init (%e, uninitialized): only the shape is checked there.
    if change == "result used twice":
        np.testing.assert_allclose(result, product * r[:, None], rtol=1e-5, atol=1e-4)
    else:
        assert result.shape == (M, N)


def swiglu_source(m: str, choice: str = CHOICE, dynamic_weights: bool = False) -> str:
    """``@f(a, wg, wu) = silu(a @ wg) * (a @ wu)``: two GEMMs of one A, both read by one elementwise op; with
    ``dynamic_weights``, K and N are dynamic."""
    k, n = ("?", "?") if dynamic_weights else (K, N)
    a, b, c = f"tensor<{m}x{k}xf32>", f"tensor<{k}x{n}xf32>", f"tensor<{m}x{n}xf32>"
    sizes = [size for size, dynamic in (("%d", m == "?"), ("%dn", dynamic_weights)) if dynamic]
    return "\n".join([
        f"func.func @f(%a: {a}, %wg: {b}, %wu: {b}) -> {c} {{",
        "  %i0 = arith.constant 0 : index", f"  %d = tensor.dim %a, %i0 : {a}",
        "  %i1 = arith.constant 1 : index", f"  %dn = tensor.dim %wg, %i1 : {b}",
        "  %zero = arith.constant 0.0 : f32", "  %one = arith.constant 1.0 : f32",
        f"  %e = tensor.empty({', '.join(sizes)}) : {c}",
        f"  %c0 = linalg.fill ins(%zero : f32) outs(%e : {c}) -> {c}",
        f"  %g = linalg.matmul {choice} ins(%a, %wg : {a}, {b}) outs(%c0 : {c}) -> {c}",
        f"  %u = linalg.matmul {choice} ins(%a, %wu : {a}, {b}) outs(%c0 : {c}) -> {c}",
        f'  %y = linalg.generic {{indexing_maps = [{ID}, {ID}, {ID}], iterator_types = ["parallel", "parallel"]}} '
        f"ins(%g, %u : {c}, {c}) outs(%e : {c}) {{",
        "  ^bb0(%x: f32, %up: f32, %o: f32):",
        "    %n = arith.negf %x : f32", "    %ex = math.exp %n : f32", "    %den = arith.addf %one, %ex : f32",
        "    %s = arith.divf %x, %den : f32", "    %r = arith.mulf %s, %up : f32", "    linalg.yield %r : f32",
        f"  }} -> {c}", f"  return %y : {c}", "}"])



@pytest.mark.parametrize("m, rows, choice", [("37", M, CHOICE), ("?", M, CHOICE), ("?", 1, CHOICE), ("3", 3, CHOICE),
                                             ("37", M, ONE_VECTOR), ("3", 3, ONE_VECTOR),
                                             ("1", 1, ONE_VECTOR.replace("RM = 4", "RM = 1")),
                                             ("1", 1, STREAM), ("5", 5, STREAM), ("?", 7, STREAM),
                                             ("8", 8, SWEEP), ("5", 5, SWEEP)])
def test_dual_gemm(rng: np.random.Generator, m: str, rows: int, choice: str) -> None:
    """SwiGLU's gate and up: one kernel computes both products, RN/2 columns of each per micro-tile (RN
    columns of each where RN is one vector), K in five slices, the second product's partial sums kept between
    them; a ragged N; panels copied (37 rows) or B read in place (3 rows, one row panel; 5 and 8 rows in slices
    of 8 K rows, half the plans' 16, with a ragged last one). One-row blocks stream
    both B's side by side: the workers split K for a single row (then the epilogue runs as their sums are
    added), else each task's tile takes the epilogue in a pass of its own."""
    from mlir import ir

    from prism.codegen.cpu import kernel_report
    from prism.infra.ir import make_context

    text = swiglu_source(m, choice)
    with make_context(), ir.Location.unknown():
        (function,) = kernel_report(ir.Module.parse(text), 2)
    assert [k["kind"] for k in function["kernels"]] == ["dual gemm + epilogue"]
    tiled, fn = lower(text, 3)
    assert "linalg." not in tiled
    if choice == SWEEP:  # B read in place by a few rows: each micro-tile prefetches both B's further down
        assert len(set(re.findall(r"memref.prefetch (%\w+)\[", tiled))) == 2
    a = rng.standard_normal((rows, K), dtype=np.float32)
    wg, wu = (rng.standard_normal((K, N), dtype=np.float32) * 0.2 for _ in range(2))
    g, u = a.astype(np.float64) @ wg, a.astype(np.float64) @ wu
    # The gate's f32 rounding (a few 1e-6 of values up to ~5 over K = 300) is multiplied by up's values.
    np.testing.assert_allclose(fn(a, wg, wu), g / (1 + np.exp(-g)) * u, rtol=1e-5, atol=1e-4)


def test_dual_gemm_with_a_pipelined_copy(rng: np.random.Generator) -> None:
    """SwiGLU's gate and up where the weights may not fit the caches (K and N dynamic): the copy of both B's
    into the panels runs inside the micro-tiles of the slice before (KernelPlan.pipelined)."""
    from mlir import ir

    from prism.codegen.cpu import kernel_report
    from prism.infra.ir import make_context

    text = swiglu_source("16", CHOICE, dynamic_weights=True)
    with make_context(), ir.Location.unknown():
        (function,) = kernel_report(ir.Module.parse(text), 2)
    assert [k["kind"] for k in function["kernels"]] == ["dual gemm + epilogue"]
    tiled, fn = lower(text, 2)
    assert "linalg." not in tiled and "memref.prefetch" in tiled
    # Each B's stream is prefetched COPY_AHEAD_BYTES ahead of the copy, as a single product's is: a unit of the
    # copy is a row of two panels (four micro-tiles down the row block), RN / 2 columns of each B.
    ahead = re.search(r"arith.addi %\w+, %c(\d+) : index\n(?:\s*%\w+ = .*\n){1,6}?\s*memref.prefetch", tiled)
    assert ahead and int(ahead.group(1)) * 2 * (16 // 2) * 4 == COPY_AHEAD_BYTES, ahead
    a = rng.standard_normal((16, K), dtype=np.float32)
    wg, wu = (rng.standard_normal((K, N), dtype=np.float32) * 0.2 for _ in range(2))
    g, u = a.astype(np.float64) @ wg, a.astype(np.float64) @ wu
    np.testing.assert_allclose(fn(a, wg, wu), g / (1 + np.exp(-g)) * u, rtol=1e-5, atol=1e-4)


def test_row_scale_on_a_prepared_weight(rng: np.random.Generator) -> None:
    """With B an invariant weight, @f_apply's kernel reads it packed once and still runs the row scale as its
    epilogue; bound and plain calls agree with float64."""
    import prism

    text = source([("rs", "tensor<Mxf32>", ROW)], ["%r = arith.mulf %x, %rs_v : f32"]).replace(
        f"%b: tensor<{K}x{N}xf32>", f"%b: tensor<{K}x{N}xf32> {{prism.invariant}}")
    compiled = prism.compile(text, target="host", emit="report")
    kinds = {f["function"]: [k["kind"] for k in f["kernels"]] for f in compiled.report["kernels"]}
    assert kinds["@f"] == ["gemm + epilogue"] and kinds["@f_apply"] == ["gemm (prepared weight) + epilogue"]
    a, b = inputs(rng)
    r = rng.standard_normal(M, dtype=np.float32)
    expected = (a.astype(np.float64) @ b) * r[:, None]
    np.testing.assert_allclose(compiled.bind("f", b=b)(a, r), expected, rtol=1e-5, atol=1e-4)
    np.testing.assert_allclose(compiled.jit("f")(a, b, r), expected, rtol=1e-5, atol=1e-4)
