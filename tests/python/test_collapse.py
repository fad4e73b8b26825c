"""Loops that move together, collapsed into one (:mod:`prism.infra.collapse`): a product whose rows run over
several loops is the product of flattened operands, for the algebra, the search and the kernels alike."""

from __future__ import annotations

import math
import re
import sys

import numpy as np
import pytest
from mlir import ir

import prism
from conftest import REPO
from prism.algebra.egraph import prove
from prism.algebra.terms import A, Program, View, Views
from prism.infra.ir import iter_ops, make_context, normalize_program

ROW_PRODUCT = "affine_map<(b, s, n, k) -> (b, s, k)>, affine_map<(b, s, n, k) -> (k, n)>, " \
              "affine_map<(b, s, n, k) -> (b, s, n)>"
SAME = "affine_map<(b, s, j) -> (b, s, j)>"
# SwiGLU's gating, silu(gate) * up, as a generic's body.
GATING = """  ^bb0(%a0: f32, %a1: f32, %o: f32):
    %neg = arith.negf %a0 : f32
    %e = math.exp %neg : f32
    %den = arith.addf %one, %e : f32
    %silu = arith.divf %a0, %den : f32
    %r = arith.mulf %silu, %a1 : f32
    linalg.yield %r : f32
"""


def product(out: str, x: str, w: str, rows: str, k: int, n: int, init: str = "") -> str:
    """``out = x @ w`` for a ``rows x k`` activation (``rows`` like ``2x8``) read through two row loops."""
    t = f"tensor<{rows}x{n}xf32>"
    fill = init or f"%{out}_z"
    made = "" if init else f"""
  %{out}_e = tensor.empty() : {t}
  %{out}_z = linalg.fill ins(%zero : f32) outs(%{out}_e : {t}) -> {t}"""
    return f"""{made}
  %{out} = linalg.generic {{indexing_maps = [{ROW_PRODUCT}],
                          iterator_types = ["parallel", "parallel", "parallel", "reduction"]}}
      ins(%{x}, %{w} : tensor<{rows}x{k}xf32>, tensor<{k}x{n}xf32>) outs({fill} : {t}) {{
  ^bb0(%p: f32, %q: f32, %o: f32):
    %m = arith.mulf %p, %q : f32
    %s = arith.addf %o, %m : f32
    linalg.yield %s : f32
  }} -> {t}"""


def swiglu_3d(b: int, s: int, d: int, h: int) -> str:
    """SwiGLU over ``b x s x d`` activations, every op written over the batch and sequence loops."""
    t = f"tensor<{b}x{s}x{h}xf32>"
    return f"""func.func @f(%x: tensor<{b}x{s}x{d}xf32>, %wg: tensor<{d}x{h}xf32>, %wu: tensor<{d}x{h}xf32>,
             %wd: tensor<{h}x{d}xf32>) -> tensor<{b}x{s}x{d}xf32> {{
  %zero = arith.constant 0.0 : f32
  %one = arith.constant 1.0 : f32
{product("g", "x", "wg", f"{b}x{s}", d, h)}
{product("u", "x", "wu", f"{b}x{s}", d, h)}
  %he = tensor.empty() : {t}
  %h = linalg.generic {{indexing_maps = [{SAME}, {SAME}, {SAME}],
                       iterator_types = ["parallel", "parallel", "parallel"]}} ins(%g, %u : {t}, {t}) outs(%he : {t}) {{
{GATING}  }} -> {t}
{product("o", "h", "wd", f"{b}x{s}", h, d)}
  return %o : tensor<{b}x{s}x{d}xf32>
}}
"""


def swiglu_2d(n: int, d: int, h: int) -> str:
    """The same SwiGLU over ``n x d`` activations, as named products."""
    t = f"tensor<{n}x{h}xf32>"
    same = "affine_map<(i, j) -> (i, j)>"

    def matmul(out: str, x: str, w: str, k: int, cols: int) -> str:
        c = f"tensor<{n}x{cols}xf32>"
        return f"""
  %{out}_e = tensor.empty() : {c}
  %{out}_z = linalg.fill ins(%zero : f32) outs(%{out}_e : {c}) -> {c}
  %{out} = linalg.matmul ins(%{x}, %{w} : tensor<{n}x{k}xf32>, tensor<{k}x{cols}xf32>) outs(%{out}_z : {c}) -> {c}"""
    return f"""func.func @f(%x: tensor<{n}x{d}xf32>, %wg: tensor<{d}x{h}xf32>, %wu: tensor<{d}x{h}xf32>,
             %wd: tensor<{h}x{d}xf32>) -> tensor<{n}x{d}xf32> {{
  %zero = arith.constant 0.0 : f32
  %one = arith.constant 1.0 : f32
{matmul("g", "x", "wg", d, h)}{matmul("u", "x", "wu", d, h)}
  %he = tensor.empty() : {t}
  %h = linalg.generic {{indexing_maps = [{same}, {same}, {same}], iterator_types = ["parallel", "parallel"]}}
      ins(%g, %u : {t}, {t}) outs(%he : {t}) {{
{GATING}  }} -> {t}
{matmul("o", "h", "wd", h, d)}
  return %o : tensor<{n}x{d}xf32>
}}
"""


def normalized(text: str) -> tuple[str, list[str]]:
    """``text`` normalized (checked to be a fixed point: normalizing again changes nothing), and its ops' names."""
    with make_context():
        module = ir.Module.parse(text)
        normalize_program(module)
        module.operation.verify()
        once = str(module)
        normalize_program(module)
        assert str(module) == once, "normalizing a normalized program changed it"
        return once, [op.name for op in iter_ops(module)]


def swiglu_reference(x: np.ndarray, wg: np.ndarray, wu: np.ndarray, wd: np.ndarray) -> np.ndarray:
    x, wg, wu, wd = (a.astype(np.float64) for a in (x, wg, wu, wd))
    g, u = x @ wg, x @ wu
    return (g / (1 + np.exp(-g)) * u) @ wd


def test_a_chain_over_two_row_loops_is_collapsed_once_at_its_ends():
    """Both products of x read one collapse of it, the gating and the down product run on collapsed tensors,
    and one expansion makes the result: every op between is the 2-D spelling's."""
    text, names = normalized(swiglu_3d(2, 8, 32, 48))
    assert names.count("tensor.collapse_shape") == 1 and names.count("tensor.expand_shape") == 1, text
    assert "tensor<16x32xf32>" in text and "tensor<16x48xf32>" in text
    assert "tensor<2x8x48xf32>" not in text  # no intermediate keeps the two row loops
    assert "output_shape [2, 8, 32]" in text


@pytest.mark.parametrize("reads, shape, why", [
    ("(s, b, k)", "8x2x4", "x reads the row loops in the other order"),
    ("(b, k, s)", "2x4x8", "x reads the row loops apart"),
])
def test_rows_that_an_operand_reads_otherwise_stay_loops(reads, shape, why):
    text = f"""func.func @f(%x: tensor<{shape}xf32>, %w: tensor<4x3xf32>, %c: tensor<2x8x3xf32>) -> tensor<2x8x3xf32> {{
  %r = linalg.generic {{indexing_maps = [affine_map<(b, s, n, k) -> {reads}>, affine_map<(b, s, n, k) -> (k, n)>,
                                         affine_map<(b, s, n, k) -> (b, s, n)>],
                        iterator_types = ["parallel", "parallel", "parallel", "reduction"]}}
      ins(%x, %w : tensor<{shape}xf32>, tensor<4x3xf32>) outs(%c : tensor<2x8x3xf32>) {{
  ^bb0(%p: f32, %q: f32, %o: f32):
    %m = arith.mulf %p, %q : f32
    %s = arith.addf %o, %m : f32
    linalg.yield %s : f32
  }} -> tensor<2x8x3xf32>
  return %r : tensor<2x8x3xf32>
}}"""
    _, names = normalized(text)
    assert "tensor.collapse_shape" not in names, why


def test_rows_over_two_dynamic_loops_are_collapsed_with_both_sizes(rng):
    """A dynamic batch and a dynamic sequence, accumulated into an init the program passes: one product over
    ``? * ?`` rows, the expansion given both sizes; right on the host at several sizes and in the GPU's tiled
    check."""
    text = f"""func.func @f(%x: tensor<?x?x4xf32>, %w: tensor<4x3xf32>, %c: tensor<?x?x3xf32>) -> tensor<?x?x3xf32> {{
  %r = linalg.generic {{indexing_maps = [{ROW_PRODUCT}],
                        iterator_types = ["parallel", "parallel", "parallel", "reduction"]}}
      ins(%x, %w : tensor<?x?x4xf32>, tensor<4x3xf32>) outs(%c : tensor<?x?x3xf32>) {{
  ^bb0(%p: f32, %q: f32, %o: f32):
    %m = arith.mulf %p, %q : f32
    %s = arith.addf %o, %m : f32
    linalg.yield %s : f32
  }} -> tensor<?x?x3xf32>
  return %r : tensor<?x?x3xf32>
}}"""
    normal, names = normalized(text)
    assert names.count("tensor.collapse_shape") == 2, normal
    assert re.search(r"output_shape \[%dim\w*, %dim\w*, 3\]", normal), normal
    w = rng.standard_normal((4, 3)).astype(np.float32)
    f = prism.compile(text, target="host").jit("f")
    for batch, rows in ((1, 1), (3, 7), (2, 33)):
        x = rng.standard_normal((batch, rows, 4)).astype(np.float32)
        c = rng.standard_normal((batch, rows, 3)).astype(np.float32)
        reference = c + x.astype(np.float64) @ w
        assert np.abs(f(x, w, c) - reference).max() / np.abs(reference).max() < 1e-5, (batch, rows)
    x, c = rng.standard_normal((2, 5, 4)).astype(np.float16), rng.standard_normal((2, 5, 3)).astype(np.float16)
    (have,) = prism.compile(text.replace("f32", "f16"), target="h200").tiled()(x, w.astype(np.float16), c)
    reference = c + x.astype(np.float64) @ w.astype(np.float16).astype(np.float64)
    assert np.abs(have - reference).max() / np.abs(reference).max() < 5e-3


def test_a_body_that_reads_a_joined_loops_index_stays_loops_and_a_lone_one_is_renumbered():
    """A mask over the row index (linalg.index 1) cannot read one collapsed loop; a mask over the column
    (linalg.index 2) can, renumbered to the column's new loop."""
    def masked(dim: int) -> str:
        return f"""func.func @f(%x: tensor<2x8x4xf32>, %w: tensor<4x3xf32>) -> tensor<2x8x3xf32> {{
  %zero = arith.constant 0.0 : f32
{product("p", "x", "w", "2x8", 4, 3)}
  %e = tensor.empty() : tensor<2x8x3xf32>
  %r = linalg.generic {{indexing_maps = [{SAME}, {SAME}], iterator_types = ["parallel", "parallel", "parallel"]}}
      ins(%p : tensor<2x8x3xf32>) outs(%e : tensor<2x8x3xf32>) {{
  ^bb0(%a: f32, %o: f32):
    %i = linalg.index {dim} : index
    %c1 = arith.constant 1 : index
    %keep = arith.cmpi ult, %i, %c1 : index
    %v = arith.select %keep, %a, %zero : f32
    linalg.yield %v : f32
  }} -> tensor<2x8x3xf32>
  return %r : tensor<2x8x3xf32>
}}"""
    text, _ = normalized(masked(1))
    assert "linalg.index 1" in text and "tensor<2x8x3xf32>) outs" in text  # the mask runs over both row loops
    text, _ = normalized(masked(2))
    assert "linalg.index 1" in text and "linalg.index 2" not in text, text
    assert text.count("tensor.expand_shape") == 1


def test_both_spellings_get_the_same_schedules_and_kernels(rng, tuned_host):
    """The 3-D SwiGLU gets the 2-D spelling's explored program, families, choices and host kernels (a dual GEMM
    with the gating as its epilogue, then the down product), and matches float64."""
    b, s, d, h = 2, 8, 256, 512
    three, two = (prism.compile(text, target="host", emit="report")
                  for text in (swiglu_3d(b, s, d, h), swiglu_2d(b * s, d, h)))
    assert [f["choice"] for f in three.report["families"]] == [f["choice"] for f in two.report["families"]]
    x = rng.standard_normal((b, s, d)).astype(np.float32)
    wg, wu, wd = ((rng.standard_normal(shape) / np.sqrt(shape[0])).astype(np.float32)
                  for shape in ((d, h), (d, h), (h, d)))
    have = three.jit("f")(x, wg, wu, wd)
    assert have.shape == (b, s, d)
    reference = swiglu_reference(x, wg, wu, wd)
    assert np.abs(have - reference).max() / np.abs(reference).max() < 1e-5
    kinds = [[k["kind"] for k in function["kernels"]] for compiled in (three, two)
             for function in compiled.report["kernels"] if function["function"] == "@f"]
    assert kinds[0] == kinds[1] == ["dual gemm + epilogue", "gemm"], kinds


def test_a_dynamic_batch_is_collapsed_with_its_size_kept(rng):
    """x of ``? x 5 x 40`` times w, plus a residual of the output's shape: one product over ``5 ?`` rows with the
    residual as its epilogue, right for every batch size."""
    text = f"""func.func @f(%x: tensor<?x5x40xf32>, %w: tensor<40x17xf32>,
             %res: tensor<?x5x17xf32>) -> tensor<?x5x17xf32> {{
  %zero = arith.constant 0.0 : f32
  %c0 = arith.constant 0 : index
  %d = tensor.dim %x, %c0 : tensor<?x5x40xf32>
  %pe = tensor.empty(%d) : tensor<?x5x17xf32>
  %pz = linalg.fill ins(%zero : f32) outs(%pe : tensor<?x5x17xf32>) -> tensor<?x5x17xf32>
{product("p", "x", "w", "?x5", 40, 17, init="%pz")}
  %e = tensor.empty(%d) : tensor<?x5x17xf32>
  %y = linalg.generic {{indexing_maps = [{SAME}, {SAME}, {SAME}],
                       iterator_types = ["parallel", "parallel", "parallel"]}}
      ins(%p, %res : tensor<?x5x17xf32>, tensor<?x5x17xf32>) outs(%e : tensor<?x5x17xf32>) {{
  ^bb0(%a: f32, %r: f32, %o: f32):
    %s = arith.addf %a, %r : f32
    linalg.yield %s : f32
  }} -> tensor<?x5x17xf32>
  return %y : tensor<?x5x17xf32>
}}"""
    normal, _ = normalized(text)
    assert "tensor<?x40xf32>" in normal and "tensor<?x5x17xf32>) outs" not in normal
    compiled = prism.compile(text, target="host", emit="report")
    w = rng.standard_normal((40, 17)).astype(np.float32)
    f = compiled.jit("f")
    for batch in (1, 3, 7):
        x = rng.standard_normal((batch, 5, 40)).astype(np.float32)
        res = rng.standard_normal((batch, 5, 17)).astype(np.float32)
        reference = x.astype(np.float64) @ w + res
        assert np.abs(f(x, w, res) - reference).max() / np.abs(reference).max() < 1e-5, batch
    (function,) = [fn for fn in compiled.report["kernels"] if fn["function"] == "@f"]
    assert [k["kind"] for k in function["kernels"]] == ["gemm + epilogue"]


def test_the_optimized_program_is_proven_equal_to_the_one_written_over_two_row_loops():
    """prism-verify reads the boundary's collapse and expansion as the arguments and results they view."""
    written = swiglu_3d(2, 8, 32, 48)
    optimized = prism.compile(written, target="host").mlir
    proofs = prism.verify(written, optimized)
    assert proofs and all(p.proof.proved for p in proofs)


def test_programs_that_view_their_arguments_otherwise_are_not_proven_equal_by_their_terms():
    """``arg(0)`` means the argument as its program's boundary collapses it: the same terms under other views
    are other functions, and the prover refuses them."""
    rows, cols = Views((View(((0, 1), (2,)), (2, 2, 2)),), (View(((0, 1), (2,)), (2, 2, 2)),)), \
        Views((View(((0,), (1, 2)), (2, 2, 2)),), (View(((0,), (1, 2)), (2, 2, 2)),))
    term = A.exp(A.arg(0))
    left = Program("f", [(4, 2)], [term], views=rows)
    assert prove(left, Program("f", [(4, 2)], [term], views=rows)).proved
    assert not prove(left, Program("f", [(4, 2)], [term], views=cols)).proved
    assert not prove(left, Program("f", [(4, 2)], [term])).proved


def test_a_normalization_before_the_products_is_collapsed_with_them(rng):
    """RMSNorm over (batch, sequence) rows feeding the SwiGLU products: the row statistics, the scale and the
    normalization are collapsed from the products' collapse upwards, so no op of the layer runs as loops, and the
    layer matches float64."""
    sys.path.insert(0, str(REPO / "benchmarks"))
    import cpu_workloads as cw  # the workloads live with the benchmarks

    workload = cw.rmsnorm_mlp_batched(2, 3, 64)
    normal, names = normalized(workload.mlir)
    assert names.count("tensor.collapse_shape") == 1 and names.count("tensor.expand_shape") == 1, normal
    compiled = prism.compile(workload.mlir, target="host", emit="report")
    kinds = [k["kind"] for function in compiled.report["kernels"] for k in function["kernels"]]
    assert "loops" not in kinds, kinds
    arrays = workload.inputs(rng)
    have = compiled.jit(workload.func)(*(arrays[a.name] for a in workload.args))
    (reference,) = workload.compute(cw.NumpyOps, *(arrays[a.name].astype(np.float64) for a in workload.args))
    assert np.abs(have - reference).max() / np.abs(reference).max() < 1e-5


def test_an_op_reading_the_expanded_product_twice_is_collapsed_once(rng):
    """An elementwise op whose input is also its init (``math.erf`` on a tensor, normalized) reads the product's
    expansion twice; collapsing it erases that expansion once (erasing it twice crashed the process)."""
    t = "tensor<13x1x3xf32>"
    text = f"""func.func @f(%x: tensor<13x1x8xf32>, %w: tensor<8x3xf32>) -> {t} {{
  %zero = arith.constant 0.0 : f32
{product("p", "x", "w", "13x1", 8, 3)}
  %y = math.erf %p : {t}
  return %y : {t}
}}
"""
    _, names = normalized(text)
    assert names.count("tensor.expand_shape") == 1 and names.count("tensor.collapse_shape") == 1, names
    x, w = rng.standard_normal((13, 1, 8), dtype=np.float32), rng.standard_normal((8, 3), dtype=np.float32)
    got = prism.compile(text, target="host").jit("f")(x, w)
    expected = np.vectorize(math.erf)(x.astype(np.float64) @ w)
    np.testing.assert_allclose(got, expected, rtol=0, atol=1e-5)
