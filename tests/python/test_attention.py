"""The host's attention kernel: recognized from its six ops, checked against float64, and left alone on a near miss."""

from __future__ import annotations

import math
import re

import numpy as np
import pytest
from mlir import ir

import prism
from conftest import lower_on_host
from prism.infra.ir import make_context
from prism.search.attention import match_attention
from prism.summary import summarize
from prism.targets.host_machine import Machine

NINF = "0xFF800000"


def attention_text(batch: tuple[int | None, ...], sq: int | None, skv: int | None, d: int, dv: int,
                   scale: float | None = None, max_init: str = NINF, extra_use: bool = False) -> str:
    """softmax(scale * q k^T) v over batch dims ``batch`` as six linalg.generic ops (None: a dynamic size)."""
    scale = 1 / math.sqrt(d) if scale is None else scale
    dims = "".join("?x" if n is None else f"{n}x" for n in batch)
    letters = "".join(f"b{i}, " for i in range(len(batch)))

    def t(*shape: int | None) -> str:
        return "tensor<" + dims + "".join("?x" if n is None else f"{n}x" for n in shape) + "f32>"

    def maps(*parts: str, loops: str) -> str:
        return ", ".join(f"affine_map<({letters}{loops}) -> ({letters}{p})>" for p in parts)

    par = ", ".join(['"parallel"'] * (len(batch) + 2))
    par_row = ", ".join(['"parallel"'] * (len(batch) + 1))
    q, k, v = t(sq, d), t(skv, d), t(skv, dv)
    s, row, o = t(sq, skv), t(sq), t(sq, dv)
    dyn = [f"%n{i}" for i, n in enumerate(batch) if n is None]
    size_ops = [f"  %n{i} = tensor.dim %q, %c{i} : {q}" for i, n in enumerate(batch) if n is None]
    consts = {i for i, n in enumerate(batch) if n is None}
    nb = len(batch)
    if sq is None:
        size_ops.append(f"  %sq = tensor.dim %q, %c{nb} : {q}")
        consts.add(nb)
    if skv is None:
        size_ops.append(f"  %skv = tensor.dim %k, %c{nb} : {k}")
        consts.add(nb)
    s_sizes = ", ".join(dyn + (["%sq"] if sq is None else []) + (["%skv"] if skv is None else []))
    row_sizes = ", ".join(dyn + (["%sq"] if sq is None else []))
    results = f"{o}, {s}" if extra_use else o
    returned = "%out, %p : " + f"{o}, {s}" if extra_use else f"%out : {o}"
    return "\n".join([
        f"func.func @attention(%q: {q}, %k: {k}, %v: {v}) -> ({results}) {{",
        *[f"  %c{i} = arith.constant {i} : index" for i in sorted(consts)],
        *size_ops,
        "  %zero = arith.constant 0.0 : f32",
        f"  %ninit = arith.constant {max_init} : f32",
        f"  %scale = arith.constant {scale!r} : f32",
        f"  %se = tensor.empty({s_sizes}) : {s}",
        f"  %s0 = linalg.fill ins(%zero : f32) outs(%se : {s}) -> {s}",
        f"  %s = linalg.generic {{indexing_maps = [{maps('i, c', 'j, c', 'i, j', loops='i, j, c')}], "
        f"iterator_types = [{par}, \"reduction\"]}} ins(%q, %k : {q}, {k}) outs(%s0 : {s}) {{",
        "  ^bb0(%a: f32, %b: f32, %acc: f32):",
        "    %x = arith.mulf %a, %b : f32", "    %y = arith.addf %acc, %x : f32", "    linalg.yield %y : f32",
        f"  }} -> {s}",
        f"  %re = tensor.empty({row_sizes}) : {row}",
        f"  %m0 = linalg.fill ins(%ninit : f32) outs(%re : {row}) -> {row}",
        f"  %l0 = linalg.fill ins(%zero : f32) outs(%re : {row}) -> {row}",
        f"  %m = linalg.generic {{indexing_maps = [{maps('i, j', 'i', loops='i, j')}], "
        f"iterator_types = [{par_row}, \"reduction\"]}} ins(%s : {s}) outs(%m0 : {row}) {{",
        "  ^bb0(%a: f32, %acc: f32):", "    %y = arith.maximumf %acc, %a : f32", "    linalg.yield %y : f32",
        f"  }} -> {row}",
        f"  %p = linalg.generic {{indexing_maps = [{maps('i, j', 'i', 'i, j', loops='i, j')}], "
        f"iterator_types = [{par}]}} ins(%s, %m : {s}, {row}) outs(%se : {s}) {{",
        "  ^bb0(%a: f32, %b: f32, %out: f32):",
        "    %x = arith.subf %a, %b : f32", "    %y = arith.mulf %x, %scale : f32", "    %z = math.exp %y : f32",
        "    linalg.yield %z : f32",
        f"  }} -> {s}",
        f"  %l = linalg.generic {{indexing_maps = [{maps('i, j', 'i', loops='i, j')}], "
        f"iterator_types = [{par_row}, \"reduction\"]}} ins(%p : {s}) outs(%l0 : {row}) {{",
        "  ^bb0(%a: f32, %acc: f32):", "    %y = arith.addf %acc, %a : f32", "    linalg.yield %y : f32",
        f"  }} -> {row}",
        f"  %oe = tensor.empty({row_sizes}) : {o}",
        f"  %o0 = linalg.fill ins(%zero : f32) outs(%oe : {o}) -> {o}",
        f"  %o = linalg.generic {{indexing_maps = [{maps('i, j', 'j, e', 'i, e', loops='i, e, j')}], "
        f"iterator_types = [{par}, \"reduction\"]}} ins(%p, %v : {s}, {v}) outs(%o0 : {o}) {{",
        "  ^bb0(%a: f32, %b: f32, %acc: f32):",
        "    %x = arith.mulf %a, %b : f32", "    %y = arith.addf %acc, %x : f32", "    linalg.yield %y : f32",
        f"  }} -> {o}",
        f"  %out = linalg.generic {{indexing_maps = [{maps('i, e', 'i', 'i, e', loops='i, e')}], "
        f"iterator_types = [{par}]}} ins(%o, %l : {o}, {row}) outs(%oe : {o}) {{",
        "  ^bb0(%a: f32, %b: f32, %out: f32):", "    %y = arith.divf %a, %b : f32", "    linalg.yield %y : f32",
        f"  }} -> {o}",
        f"  return {returned}",
        "}",
    ])


def reference(q: np.ndarray, k: np.ndarray, v: np.ndarray, scale: float) -> np.ndarray:
    s = q.astype(np.float64) @ np.swapaxes(k.astype(np.float64), -1, -2)
    p = np.exp((s - s.max(axis=-1, keepdims=True)) * scale)
    return (p @ v.astype(np.float64)) / p.sum(axis=-1, keepdims=True)


def lower(text: str, threads: int = 2):
    return lower_on_host(text, "attention", threads)


# Sequence lengths 1, 77 and 1000 (ragged query and key blocks), several batch dimensions, a head size of 16
# (one vector pair), a value size other than the query's, dynamic sizes, and three workers.
@pytest.mark.parametrize("batch, sq, skv, d, dv, threads, dynamic", [
    ((2, 3), 1, 77, 64, 64, 2, False),  # decode: one query row per head
    ((1, 2), 77, 77, 64, 64, 2, False),
    ((1,), 1000, 1000, 32, 32, 2, False),
    ((2,), 5, 13, 16, 8, 3, False),  # Dv = one vector: 1-vector register blocks
    ((2, 2), 50, 130, 64, 64, 2, True),  # every size dynamic but the head dims
    ((), 7, 200, 16, 16, 1, False),  # no batch dimension
    ((2,), 3, 33, 20, 32, 2, False),  # one-row blocks: dot products over K's rows, a head size of 2.5 vectors
    ((3,), 9, 40, 20, 16, 2, False),  # register blocks over K^T with a head size of 20
    ((2,), 9, 40, 16, 12, 2, False),  # a value size of 12: vectors of 4 lanes, whatever the machine's
    ((2,), 5, 33, 24, 24, 2, False),  # 24: vectors of 8 lanes, on AVX-512 too
])
def test_attention_kernel_matches_float64(rng: np.random.Generator, batch, sq, skv, d, dv, threads,
                                          dynamic) -> None:
    shape = tuple(None for _ in batch) if dynamic else batch
    text = attention_text(shape, None if dynamic else sq, None if dynamic else skv, d, dv)
    tiled, fn = lower(text, threads)
    assert "linalg.generic" not in tiled and "math.exp" not in tiled  # one kernel; exp by its polynomial
    q = rng.standard_normal((*batch, sq, d), dtype=np.float32)
    k = rng.standard_normal((*batch, skv, d), dtype=np.float32)
    v = rng.standard_normal((*batch, skv, dv), dtype=np.float32)
    result = fn(q, k, v)
    # Softmax weights within a few ulp of f32 each (the exp polynomial, the online rescaling), summed over
    # the keys: the output is a convex combination of rows of V, so errors scale with V's magnitude.
    np.testing.assert_allclose(result, reference(q, k, v, 1 / math.sqrt(d)), rtol=0, atol=2e-5 * np.abs(v).max())


@pytest.mark.parametrize("lanes, scalef, degree", [
    (8, False, 6),
    (8, False, 4),
    (8, False, 5),
    pytest.param(16, True, 6, marks=pytest.mark.skipif(
        Machine.here().vector_bits < 512, reason="no AVX-512 here: vscalefps is checked as LLVM in "
        "cpu-stages-amx-attention.mlir")),
])
def test_exp2_of_nonpositive_vectors(lanes: int, scalef: bool, degree: int) -> None:
    """The kernel's softmax weights are 2**x on vectors of x <= 0 (base 2, the scale folded in): within 2 ulp of
    float64's down to 2**-126 with the full polynomial (within the lower degrees' own errors with those), 0 below
    it and for -inf, 1 at 0, and NaN for NaN; on AVX-512, with the scaling by 2**n and the zeros below the floor
    in one masked vscalefps (whose operands the wheels pass in the op's order)."""
    from prism.codegen.cpu.text import _EXP2_POLYNOMIALS, MlirText

    values = np.array([-np.inf, -300, -126.5, -126.01, -126, -125.5, -100.25, -64.5, -10.3, -1.5, -1, -0.5, -0.49,
                       -0.25, -1e-3, -1e-7, 0, np.nan, *np.linspace(-3, 0, 61)], np.float32)
    vectors = -(-values.size // lanes)
    typ, vec = f"tensor<{vectors * lanes}xf32>", f"vector<{lanes}xf32>"
    t = MlirText()
    with t.region(f"func.func @f(%x: {typ}) -> {typ}"):
        out = t.value(f"tensor.empty() : {typ}", "e")
        pad = t.value("arith.constant 0.0 : f32", "p")
        for i in range(vectors):
            x = t.value(f"vector.transfer_read %x[{t.const(i * lanes)}], {pad} {{in_bounds = [true]}} : {typ}, {vec}")
            y = t.exp2_nonpositive(x, lanes, scalef=scalef, degree=degree)
            out = t.value(f"vector.transfer_write {y}, {out}[{t.const(i * lanes)}] {{in_bounds = [true]}} : {vec}, "
                          f"{typ}")
        t.add(f"return {out} : {typ}")
    _, fn = lower_on_host(t.function_text(), "f", 1)
    x = np.zeros(vectors * lanes, np.float32)
    x[:values.size] = values
    result = fn(x)[:values.size]
    expected = np.exp2(values.astype(np.float64))
    normal = values >= -126
    np.testing.assert_allclose(result[normal], expected[normal], rtol=2.4e-7 + _EXP2_POLYNOMIALS[degree][1])
    assert np.all(result[values < -126] == 0) and result[values == 0][0] == 1
    assert np.isnan(result[np.isnan(values)]).all()



def test_exp2_degree_follows_the_rounding_of_its_results() -> None:
    """A result rounded next to bf16 or f16 takes the lowest polynomial whose error is a small share of that
    type's half ulp (a weight then rounds as the exact value does but rarely); unrounded results keep f32's full
    accuracy; every tabled polynomial is within its stated error over [-1/2, 1/2] when evaluated in f32."""
    from prism.codegen.cpu.text import _EXP2_POLYNOMIALS, EXP2_FULL_DEGREE, EXP2_ROUNDING_SHARE, exp2_degree

    assert (exp2_degree(None), exp2_degree(8), exp2_degree(11), exp2_degree(24)) == (EXP2_FULL_DEGREE, 4, 5, 6)
    for bits in (8, 11):
        degree = exp2_degree(bits)
        assert _EXP2_POLYNOMIALS[degree][1] <= EXP2_ROUNDING_SHARE * 2.0 ** -(bits + 1)
        assert all(error > EXP2_ROUNDING_SHARE * 2.0 ** -(bits + 1)
                   for d, (_, error) in _EXP2_POLYNOMIALS.items() if d < degree)
    f = np.linspace(-0.5, 0.5, 100001, dtype=np.float32)
    for coefficients, error in _EXP2_POLYNOMIALS.values():
        poly = np.full_like(f, np.float32(coefficients[0]))
        for c in coefficients[1:]:
            poly = poly * f + np.float32(c)
        assert np.max(np.abs(poly / np.exp2(f.astype(np.float64)) - 1)) <= error + 2.4e-7

def test_attention_allocates_no_score_matrix() -> None:
    """The scores live in one BQ x BKV block per worker; no buffer holds S x S (or any S-long row of scores)."""
    tiled, _ = lower(attention_text((1, 2), 512, 512, 64, 64))
    allocated = [re.search(r"(?:memref|tensor)<([0-9?x]*)f32>", line).group(1).split("x")[:-1]
                 for line in tiled.splitlines() if "memref.alloc" in line or "tensor.empty" in line]
    assert any(len(shape) == 3 and shape[0] == "2" and int(shape[1]) * int(shape[2]) < 512 * 64
               for shape in allocated if "?" not in shape)  # a block of scores per worker
    assert not any(shape.count("512") >= 2 or "262144" in shape for shape in allocated), allocated


def test_large_scores_do_not_overflow(rng: np.random.Generator) -> None:
    """Scores far beyond exp's range (up to a few hundred): the running maximum keeps every exponent <= 0, as
    the max subtraction does. f32 scores of that size carry absolute errors near 1e-4 (so do the weights,
    relatively), hence the tolerance."""
    q = rng.standard_normal((1, 40, 16), dtype=np.float32) * 5
    k = rng.standard_normal((1, 90, 16), dtype=np.float32) * 5
    v = rng.standard_normal((1, 90, 16), dtype=np.float32)
    _, fn = lower(attention_text((1,), 40, 90, 16, 16, scale=1.0))
    result = fn(q, k, v)
    assert np.isfinite(result).all()
    np.testing.assert_allclose(result, reference(q, k, v, 1.0), rtol=0, atol=1e-3 * np.abs(v).max())


@pytest.mark.parametrize("change", ["max from zero", "negative scale", "scores returned", "value rows of 10"])
def test_a_near_miss_is_left_to_the_generic_path(rng: np.random.Generator, change: str) -> None:
    """A chain that is not exactly attention (or whose rows of V are not whole vectors of 4 lanes) keeps its six
    ops, and still computes what it says."""
    options = {"max from zero": {"max_init": "0.0"}, "negative scale": {"scale": -0.25},
               "scores returned": {"extra_use": True}, "value rows of 10": {}}[change]
    dv = 10 if change == "value rows of 10" else 16
    text = attention_text((2,), 9, 21, 16, dv, **options)
    if change != "value rows of 10":
        with make_context(), ir.Location.unknown():
            module = ir.Module.parse(text)
            assert all(match_attention(op.operation) is None
                       for op in module.body.operations[0].regions[0].blocks[0])
    tiled, fn = lower(text)
    # Both contractions stay; the row ops around them become row kernels (exp by the polynomial: math.floor).
    assert tiled.count("linalg.generic") >= 2 and "math.floor" in tiled
    q, k = (rng.standard_normal((2, n, 16), dtype=np.float32) for n in (9, 21))
    v = rng.standard_normal((2, 21, dv), dtype=np.float32)
    result = fn(q, k, v)
    out = result[0] if change == "scores returned" else result
    scale = options.get("scale", 0.25)
    s = q.astype(np.float64) @ np.swapaxes(k, -1, -2)
    top = np.maximum(s.max(axis=-1, keepdims=True), 0.0) if change == "max from zero" else s.max(-1, keepdims=True)
    p = np.exp((s - top) * scale)
    np.testing.assert_allclose(out, (p @ v) / p.sum(-1, keepdims=True), rtol=0, atol=2e-5)


def test_compile_fuses_attention_end_to_end(rng: np.random.Generator) -> None:
    """Through prism.compile (lift, explore, select, verify) the chain still reaches the kernel."""
    text = attention_text((2, 4), 33, 70, 32, 32)
    compiled = prism.compile(text, target="host")
    q, k, v = (rng.standard_normal((2, 4, n, 32), dtype=np.float32) for n in (33, 70, 70))
    np.testing.assert_allclose(compiled.jit("attention")(q, k, v), reference(q, k, v, 1 / math.sqrt(32)),
                               rtol=0, atol=2e-5 * np.abs(v).max())


SOFTMAX_ATTENTION = """
#q = affine_map<(b, i, j, c) -> (b, i, c)>
#k = affine_map<(b, i, j, c) -> (b, j, c)>
#s = affine_map<(b, i, j, c) -> (b, i, j)>
#id = affine_map<(b, i, j) -> (b, i, j)>
func.func @attention(%q: tensor<2x{sq}x16xf32>, %k: tensor<2x{skv}x16xf32>, %v: tensor<2x{skv}x24xf32>)
    -> tensor<2x{sq}x24xf32> {{
  %zero = arith.constant 0.0 : f32
  %c = arith.constant 0.25 : f32
  %se = tensor.empty() : tensor<2x{sq}x{skv}xf32>
  %s0 = linalg.fill ins(%zero : f32) outs(%se : tensor<2x{sq}x{skv}xf32>) -> tensor<2x{sq}x{skv}xf32>
  %s = linalg.generic {{indexing_maps = [#q, #k, #s],
                        iterator_types = ["parallel", "parallel", "parallel", "reduction"]}}
      ins(%q, %k : tensor<2x{sq}x16xf32>, tensor<2x{skv}x16xf32>) outs(%s0 : tensor<2x{sq}x{skv}xf32>) {{
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %x = arith.mulf %a, %b : f32
    %y = arith.addf %acc, %x : f32
    linalg.yield %y : f32
  }} -> tensor<2x{sq}x{skv}xf32>
  %scaled = linalg.generic {{indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel", "parallel"]}}
      ins(%s : tensor<2x{sq}x{skv}xf32>) outs(%se : tensor<2x{sq}x{skv}xf32>) {{
  ^bb0(%a: f32, %o: f32):
    %x = arith.mulf %a, %c : f32
    linalg.yield %x : f32
  }} -> tensor<2x{sq}x{skv}xf32>
  %p = linalg.softmax dimension(2) ins(%scaled : tensor<2x{sq}x{skv}xf32>) outs(%se : tensor<2x{sq}x{skv}xf32>)
      -> tensor<2x{sq}x{skv}xf32>
  %oe = tensor.empty() : tensor<2x{sq}x24xf32>
  %o0 = linalg.fill ins(%zero : f32) outs(%oe : tensor<2x{sq}x24xf32>) -> tensor<2x{sq}x24xf32>
  %o = linalg.batch_matmul ins(%p, %v : tensor<2x{sq}x{skv}xf32>, tensor<2x{skv}x24xf32>)
      outs(%o0 : tensor<2x{sq}x24xf32>) -> tensor<2x{sq}x24xf32>
  return %o : tensor<2x{sq}x24xf32>
}}
"""


@pytest.mark.parametrize("sq, skv", [(1, 77), (9, 21), (100, 300)])
def test_attention_through_linalg_softmax_is_fused(rng: np.random.Generator, sq: int, skv: int) -> None:
    """Another style: the scores scaled by their own op, linalg.softmax (decomposed at cpu-tile: its maximum
    starts from NaN under maxnum), and a named batch_matmul after the division."""
    tiled, fn = lower(SOFTMAX_ATTENTION.format(sq=sq, skv=skv))
    assert "linalg." not in tiled
    q, k = (rng.standard_normal((2, n, 16), dtype=np.float32) for n in (sq, skv))
    v = rng.standard_normal((2, skv, 24), dtype=np.float32)
    np.testing.assert_allclose(fn(q, k, v), reference(q, k, v, 0.25), rtol=0, atol=2e-5 * np.abs(v).max())


@pytest.mark.parametrize("shape, dim", [((4, 77), 1), ((5, 3, 9), 1), ((1, 6), 0)])
def test_linalg_softmax_lowers_on_the_host(rng: np.random.Generator, shape: tuple[int, ...], dim: int) -> None:
    """linalg.softmax alone (no attention around it) is decomposed and runs as loops."""
    t = f"tensor<{'x'.join(map(str, shape))}xf32>"
    text = (f"func.func @attention(%x: {t}) -> {t} {{\n  %e = tensor.empty() : {t}\n"
            f"  %r = linalg.softmax dimension({dim}) ins(%x : {t}) outs(%e : {t}) -> {t}\n  return %r : {t}\n}}\n")
    _, fn = lower(text)
    x = rng.standard_normal(shape, dtype=np.float32) * 4
    e = np.exp(x.astype(np.float64) - x.max(axis=dim, keepdims=True))
    np.testing.assert_allclose(fn(x), e / e.sum(axis=dim, keepdims=True), rtol=1e-5, atol=1e-7)


def test_the_report_names_the_kernels_and_the_ops_fused_into_them() -> None:
    """--emit=report (here through the API) lists, per function, each kernel and the ops it runs."""
    report = prism.compile(attention_text((2,), 33, 70, 32, 32), target="host", emit="report").report
    assert " host @attention: 1 kernel(s): attention (6 ops)" in summarize(report)
    fused = report["kernels"]
    assert [(f["function"], f["count"]) for f in fused] == [("@attention", 1)]
    kernel = fused[0]["kernels"][0]
    assert kernel["kind"] == "attention" and len(kernel["ops"]) == 6
    assert all(op.startswith(("linalg.generic at ", "linalg.matmul at ", "linalg.batch_matmul at "))
               for op in kernel["ops"])
    missed = prism.compile(attention_text((2,), 9, 21, 16, 16, max_init="0.0"), target="host",
                           emit="report").report["kernels"]
    kinds = [k["kind"] for k in missed[0]["kernels"]]
    # Its contractions are GEMMs again, and its max, exp and sum one row kernel.
    assert "attention" not in kinds and "rows" in kinds and len(kinds) >= 3
