"""The GPU kernels' arithmetic, checked without a GPU: each workload's planned kernels run as their tiled program
on the host (``CompiledModule.tiled``) against float64 numpy, in f16 and bf16, with ragged and dynamic sizes, and
on fuzzed programs. Running on a GPU is ``benchmarks/gpu/run.py``'s job; this catches the plan's and the tiles'
bugs (edges, masks, fusion order, the online softmax's rescaling) on any machine."""

from __future__ import annotations

import sys

import ml_dtypes
import numpy as np
import pytest

import prism
from conftest import REPO, fuzz_kinds

sys.path.insert(0, str(REPO / "benchmarks"))
import cpu_workloads as cw  # noqa: E402  (the workloads live with the benchmarks)
import fuzz  # noqa: E402
import gpu_workloads as gw  # noqa: E402

NUMPY = {"f16": np.float16, "bf16": ml_dtypes.bfloat16}
# Relative to the reference's largest magnitude: a few roundings of the type at each step.
TOLERANCE = {"f16": 5e-3, "bf16": 3e-2}

WORKLOADS = [
    cw.gemm("gemm-77x100x130", 77, 100, 130),
    cw.rmsnorm_linear(5, 64),
    cw.swiglu(3, 64),
    cw.rmsnorm_mlp(5, 64),
    cw.rmsnorm_mlp_batched(2, 3, 64),
    cw.qkv(5, 64),
    cw.lora(5, 64),
    cw.attention(1, 2, 5, 37, 64),
    cw.attention(2, 2, 1, 77, 64),
    cw.causal_attention(1, 2, 33, 64),
    cw.qk_norm_attention(1, 2, 9, 40, 64),
]


def check(workload: cw.Workload, dtype: str, target: str, rng: np.random.Generator,
          shapes: dict[str, tuple[int, ...]] | None = None) -> None:
    compiled = prism.compile(gw.retype(workload.mlir, dtype), target=target, emit="mlir")
    values = workload.inputs(rng) if shapes is None else \
        {a.name: rng.standard_normal(shapes.get(a.name, a.shape)).astype(np.float32) for a in workload.args}
    arrays = [values[a.name].astype(NUMPY[dtype]) for a in workload.args]
    got = compiled.tiled()(*arrays)
    want = workload.compute(cw.NumpyOps, *(a.astype(np.float64) for a in arrays))
    for have, reference in zip(got, want, strict=True):
        assert have.shape == reference.shape
        error = float(np.abs(have.astype(np.float64) - reference).max() / np.abs(reference).max())
        assert error < TOLERANCE[dtype], f"{workload.name} {dtype} on {target}: error {error:.2e}"


@pytest.mark.parametrize("dtype", ["f16", "bf16"])
@pytest.mark.parametrize("workload", WORKLOADS, ids=lambda w: w.name)
def test_workload_tiled_program_matches_float64(workload, dtype, rng):
    check(workload, dtype, "h200", rng)


@pytest.mark.parametrize("mkn", gw.RAGGED_GEMMS[:2] + ((33, 17, 9),), ids=str)
def test_ragged_gemm_on_both_chips(mkn, rng):
    m, k, n = mkn
    for target in ("h200", "a100"):
        check(cw.gemm(f"gemm-{m}x{k}x{n}", m, k, n), "bf16", target, rng)


@pytest.mark.parametrize("m", gw.DYNAMIC_M)
def test_dynamic_m_projection(m, rng):
    check(gw.dynamic_m_gemm(96, 80), "f16", "h200", rng, shapes={"x": (m, 96)})


# Sixteen of the fuzzer's first 50 programs that together take every kind of step those 50 take (products named
# and generic, B stored either way, batched; elementwise ops generic, named and on whole tensors, erf and tanh
# among them; a 0-d operand on either side; sum and max reductions with their broadcast; transposes), at ranks
# 2 to 4 with up to 2 dynamic dimensions, in f32, f16 and f16 with f32 products, with sizes 1, odd, powers of
# two and 64, zero to four steps and several results: the kinds conftest.fuzz_kinds names.
TILED_SEEDS = [7, 12, 15, 17, 22, 24, 25, 26, 32, 33, 36, 37, 40, 41, 43, 49]


def test_fuzzed_programs_tiled_match_numpy():
    outcomes = {seed: fuzz.check_tiled(fuzz.generate(seed), np.random.default_rng(seed)) for seed in TILED_SEEDS}
    wrong = {seed: o for seed, o in outcomes.items() if o[0] not in ("ok", "refused")}
    assert not wrong, wrong
    assert sum(o[0] == "ok" for o in outcomes.values()) >= len(TILED_SEEDS) * 9 // 10, outcomes


def test_the_tiled_seeds_take_every_kind_of_step_of_the_first_50_programs():
    def kinds(seeds):
        return set().union(*(fuzz_kinds(fuzz.generate(seed)) for seed in seeds))

    assert kinds(range(50)) - kinds(TILED_SEEDS) == set()


def test_a_wrong_tiled_program_is_caught(rng, monkeypatch):
    """The check can fail: a GEMM whose masked edge is dropped gives wrong results at the ragged rows."""
    from prism.codegen.gpu import tiled

    def drop_last_k_slice(self, spec, *args, **kwargs):  # a tiled GEMM that skips its ragged K edge
        raise AssertionError("replaced below")
    workload = cw.gemm("gemm-ragged", 33, 70, 20)
    compiled = prism.compile(gw.retype(workload.mlir, "f16"), target="h200", emit="mlir")
    arrays = [workload.inputs(rng)[a.name].astype(np.float16) for a in workload.args]
    right = compiled.tiled()(*arrays)[0]
    original = tiled.TiledProgram.gemm

    def gemm_without_the_last_row(self, spec):
        from dataclasses import replace
        return original(self, replace(spec, m=spec.m - 1) if isinstance(spec.m, int) else spec)
    monkeypatch.setattr(tiled.TiledProgram, "gemm", gemm_without_the_last_row)
    wrong = compiled.tiled()(*arrays)[0]
    assert np.isnan(wrong[-1]).all() and np.allclose(wrong[:-1], right[:-1])


NAMED_4D = """
func.func @f(%a: tensor<2x?x5x64xbf16>, %b: tensor<2x?x5x64xbf16>) -> (tensor<2x5x?xbf16>, tensor<2x64xbf16>) {
  %c1 = arith.constant 1 : index
  %d = tensor.dim %a, %c1 : tensor<2x?x5x64xbf16>
  %e = tensor.empty(%d) : tensor<2x?x5x64xbf16>
  %s = linalg.add ins(%a, %b : tensor<2x?x5x64xbf16>, tensor<2x?x5x64xbf16>)
         outs(%e : tensor<2x?x5x64xbf16>) -> tensor<2x?x5x64xbf16>
  %z = arith.constant 0.0 : bf16
  %r0 = tensor.empty(%d) : tensor<2x?x5xbf16>
  %rf = linalg.fill ins(%z : bf16) outs(%r0 : tensor<2x?x5xbf16>) -> tensor<2x?x5xbf16>
  %r = linalg.reduce ins(%s : tensor<2x?x5x64xbf16>) outs(%rf : tensor<2x?x5xbf16>) dimensions = [3]
    (%x: bf16, %acc: bf16) { %y = arith.addf %x, %acc : bf16
      linalg.yield %y : bf16 }
  %t0 = tensor.empty(%d) : tensor<2x5x?xbf16>
  %t = linalg.transpose ins(%r : tensor<2x?x5xbf16>) outs(%t0 : tensor<2x5x?xbf16>) permutation = [0, 2, 1]
  %e2 = tensor.empty(%d) : tensor<2x?x5x64xbf16>
  %x2 = linalg.exp ins(%a : tensor<2x?x5x64xbf16>) outs(%e2 : tensor<2x?x5x64xbf16>) -> tensor<2x?x5x64xbf16>
  %m0 = tensor.empty() : tensor<2x64xbf16>
  %mf = linalg.fill ins(%z : bf16) outs(%m0 : tensor<2x64xbf16>) -> tensor<2x64xbf16>
  %m = linalg.reduce ins(%x2 : tensor<2x?x5x64xbf16>) outs(%mf : tensor<2x64xbf16>) dimensions = [1, 2]
    (%x: bf16, %acc: bf16) { %y = arith.addf %x, %acc : bf16
      linalg.yield %y : bf16 }
  return %t, %m : tensor<2x5x?xbf16>, tensor<2x64xbf16>
}"""


def test_named_ops_of_rank_4_with_a_dynamic_size(rng):
    """Named ops on 4-D bf16 tensors: the add fused into the row reduction, a reduction over middle dimensions
    (the generic kernel) reading an elementwise op's result, a transpose."""
    a, b = (rng.standard_normal((2, 7, 5, 64)).astype(ml_dtypes.bfloat16) for _ in range(2))
    transposed, middle = prism.compile(NAMED_4D, target="h200", emit="mlir").tiled()(a, b)
    wide = a.astype(np.float64)
    want = (wide + b.astype(np.float64)).sum(-1).transpose(0, 2, 1), np.exp(wide).sum((1, 2))
    for have, reference in zip((transposed, middle), want, strict=True):
        assert float(np.abs(have.astype(np.float64) - reference).max() / np.abs(reference).max()) < TOLERANCE["bf16"]


GENERIC_4D_PRODUCT = """
#a = affine_map<(b, h, i, j, k) -> (b, h, i, k)>
#w = affine_map<(b, h, i, j, k) -> (k, j)>
#c = affine_map<(b, h, i, j, k) -> (b, h, i, j)>
func.func @g4(%x: tensor<2x3x33x40xf16>, %w: tensor<40x17xf16>) -> tensor<2x3x33x17xf32> {
  %z = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<2x3x33x17xf32>
  %f = linalg.fill ins(%z : f32) outs(%e : tensor<2x3x33x17xf32>) -> tensor<2x3x33x17xf32>
  %r = linalg.generic {indexing_maps = [#a, #w, #c],
                       iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]}
      ins(%x, %w : tensor<2x3x33x40xf16>, tensor<40x17xf16>) outs(%f : tensor<2x3x33x17xf32>) {
  ^bb0(%p: f16, %q: f16, %acc: f32):
    %pe = arith.extf %p : f16 to f32
    %qe = arith.extf %q : f16 to f32
    %m = arith.mulf %pe, %qe : f32
    %s = arith.addf %acc, %m : f32
    linalg.yield %s : f32
  } -> tensor<2x3x33x17xf32>
  return %r : tensor<2x3x33x17xf32>
}
"""


@pytest.mark.parametrize("target", ["h200", "a100"])
def test_a_product_with_three_row_loops_on_both_chips(target, rng):
    """A 4-D activation times a 2-D weight, written as a linalg.generic widening f16 in its body: its three M loops
    share one tile (the space once refused every schedule, counting that tile three times in shared memory)."""
    x, w = rng.standard_normal((2, 3, 33, 40)).astype(np.float16), rng.standard_normal((40, 17)).astype(np.float16)
    (have,) = prism.compile(GENERIC_4D_PRODUCT, target=target).tiled()(x, w)
    reference = np.einsum("bhik,kj->bhij", x.astype(np.float64), w.astype(np.float64))
    assert float(np.abs(have - reference).max() / np.abs(reference).max()) < TOLERANCE["f16"]


@pytest.mark.parametrize("target", ["h200", "a100"])
def test_attention_over_heads_the_program_collapses(target, rng):
    """q, k and v collapsed by the program from (batch, heads) to one batch axis, the output expanded back: the
    attention kernel reads the arguments' own buffers through the collapses (it once read temporaries that nothing
    wrote, and gave NaN)."""
    text = gw.retype((REPO / "tests" / "python" / "spellings" / "attention_heads_collapsed.mlir").read_text(), "f16")
    q, k, v = (rng.standard_normal(shape).astype(np.float16) for shape in ((1, 2, 5, 64), (1, 2, 37, 64),
                                                                         (1, 2, 37, 64)))
    (have,) = prism.compile(text, target=target).tiled()(q, k, v)
    scores = np.einsum("bhic,bhjc->bhij", q.astype(np.float64), k.astype(np.float64)) * 0.125
    weights = np.exp(scores - scores.max(-1, keepdims=True))
    reference = weights / weights.sum(-1, keepdims=True) @ v.astype(np.float64)
    assert float(np.abs(have - reference).max() / np.abs(reference).max()) < TOLERANCE["f16"]
