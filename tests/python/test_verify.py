"""prism.verify and prism-verify on whole programs: proofs of real rewrites, counterexamples for wrong ones."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pytest
from mlir import ir

import prism
from prism.algebra.prove import FunctionProof
from prism.driver import Compilation
from prism.infra.passbase import Pass, PassContext
from prism.passes import PIPELINES, VerifyPass
from prism.runtime.compare import _difference

RMSNORM_PREFIX = """
#rows = affine_map<(i, j) -> (i, j)>
#row = affine_map<(i, j) -> (i)>
#col = affine_map<(i, j) -> (j)>
#vec = affine_map<(i) -> (i)>
func.func @rmsnorm_matmul(%x: tensor<8x32xf32>, %gamma: tensor<32xf32>, %w: tensor<32x16xf32>) -> tensor<8x16xf32> {
  %zero = arith.constant 0.0 : f32
  %inv_d = arith.constant 3.125e-02 : f32
  %eps = arith.constant 1.0e-06 : f32
  %row_empty = tensor.empty() : tensor<8xf32>
  %row_zero = linalg.fill ins(%zero : f32) outs(%row_empty : tensor<8xf32>) -> tensor<8xf32>
  %sum_sq = linalg.generic {indexing_maps = [#rows, #row], iterator_types = ["parallel", "reduction"]}
      ins(%x : tensor<8x32xf32>) outs(%row_zero : tensor<8xf32>) {
  ^bb0(%v: f32, %acc: f32):
    %sq = arith.mulf %v, %v : f32
    %sum = arith.addf %acc, %sq : f32
    linalg.yield %sum : f32
  } -> tensor<8xf32>
  %scale = linalg.generic {indexing_maps = [#vec, #vec], iterator_types = ["parallel"]}
      ins(%sum_sq : tensor<8xf32>) outs(%row_empty : tensor<8xf32>) {
  ^bb0(%s: f32, %out: f32):
    %mean = arith.mulf %s, %inv_d : f32
    %shifted = arith.addf %mean, %eps : f32
    %r = math.rsqrt %shifted : f32
    linalg.yield %r : f32
  } -> tensor<8xf32>
  %out_empty = tensor.empty() : tensor<8x16xf32>
  %acc = linalg.fill ins(%zero : f32) outs(%out_empty : tensor<8x16xf32>) -> tensor<8x16xf32>
"""

# y = x * scale * gamma, then y @ W.
RMSNORM = RMSNORM_PREFIX + """
  %y_empty = tensor.empty() : tensor<8x32xf32>
  %y = linalg.generic {indexing_maps = [#rows, #row, #col, #rows], iterator_types = ["parallel", "parallel"]}
      ins(%x, %scale, %gamma : tensor<8x32xf32>, tensor<8xf32>, tensor<32xf32>) outs(%y_empty : tensor<8x32xf32>) {
  ^bb0(%v: f32, %s: f32, %g: f32, %o: f32):
    %n = arith.mulf %v, %s : f32
    %scaled = arith.mulf %n, %g : f32
    linalg.yield %scaled : f32
  } -> tensor<8x32xf32>
  %out = linalg.matmul ins(%y, %w : tensor<8x32xf32>, tensor<32x16xf32>) outs(%acc : tensor<8x16xf32>)
      -> tensor<8x16xf32>
  return %out : tensor<8x16xf32>
}
"""

# gamma folded into the rows of W, the matmul on x itself, and the scale applied to its rows after.
RMSNORM_FOLDED = RMSNORM_PREFIX + """
  %w_empty = tensor.empty() : tensor<32x16xf32>
  %wg = linalg.generic {indexing_maps = [#rows, #row, #rows], iterator_types = ["parallel", "parallel"]}
      ins(%w, %gamma : tensor<32x16xf32>, tensor<32xf32>) outs(%w_empty : tensor<32x16xf32>) {
  ^bb0(%v: f32, %g: f32, %o: f32):
    %p = arith.mulf %v, %g : f32
    linalg.yield %p : f32
  } -> tensor<32x16xf32>
  %product = linalg.matmul ins(%x, %wg : tensor<8x32xf32>, tensor<32x16xf32>) outs(%acc : tensor<8x16xf32>)
      -> tensor<8x16xf32>
  %out = linalg.generic {indexing_maps = [#rows, #row, #rows], iterator_types = ["parallel", "parallel"]}
      ins(%product, %scale : tensor<8x16xf32>, tensor<8xf32>) outs(%out_empty : tensor<8x16xf32>) {
  ^bb0(%v: f32, %s: f32, %o: f32):
    %p = arith.mulf %v, %s : f32
    linalg.yield %p : f32
  } -> tensor<8x16xf32>
  return %out : tensor<8x16xf32>
}
"""


def _gemm(name: str, ins: str, ty: str = "tensor<8x16xf32>") -> str:
    """``%name = ins[0] @ ins[1]`` into a zero-filled ``ty``."""
    return (f"  %{name}_e = tensor.empty() : {ty}\n"
            f"  %{name}_z = linalg.fill ins(%zero : f32) outs(%{name}_e : {ty}) -> {ty}\n"
            f"  %{name} = linalg.matmul ins({ins}) outs(%{name}_z : {ty}) -> {ty}\n")


LORA_SIGNATURE = ("func.func @lora(%x: tensor<8x32xf32>, %w: tensor<32x16xf32>, %a: tensor<32x4xf32>, "
                  "%b: tensor<4x16xf32>) -> tensor<8x16xf32> {\n  %zero = arith.constant 0.0 : f32\n")
# x W + (x A) B
LORA = (LORA_SIGNATURE
        + _gemm("base", "%x, %w : tensor<8x32xf32>, tensor<32x16xf32>")
        + _gemm("down", "%x, %a : tensor<8x32xf32>, tensor<32x4xf32>", "tensor<8x4xf32>")
        + _gemm("up", "%down, %b : tensor<8x4xf32>, tensor<4x16xf32>")
        + "  %e = tensor.empty() : tensor<8x16xf32>\n"
          "  %sum = linalg.add ins(%base, %up : tensor<8x16xf32>, tensor<8x16xf32>) outs(%e : tensor<8x16xf32>)"
          " -> tensor<8x16xf32>\n  return %sum : tensor<8x16xf32>\n}\n")
# x (W + A B): one GEMM on the activations.
LORA_FUSED = (LORA_SIGNATURE
              + _gemm("ab", "%a, %b : tensor<32x4xf32>, tensor<4x16xf32>", "tensor<32x16xf32>")
              + "  %e = tensor.empty() : tensor<32x16xf32>\n"
                "  %merged = linalg.add ins(%w, %ab : tensor<32x16xf32>, tensor<32x16xf32>)"
                " outs(%e : tensor<32x16xf32>) -> tensor<32x16xf32>\n"
              + _gemm("out", "%x, %merged : tensor<8x32xf32>, tensor<32x16xf32>")
              + "  return %out : tensor<8x16xf32>\n}\n")

def _square(rhs_def: str, rhs: str, rows: str = "16") -> str:
    """``a @ rhs`` for an ``a`` of ``rows`` x 16 (``?`` for dynamic) and a 16 x 16 ``b``."""
    dynamic = rows == "?"
    size = "  %i0 = arith.constant 0 : index\n  %m = tensor.dim %a, %i0 : tensor<?x16xf32>\n" if dynamic else ""
    return f"""
func.func @f(%a: tensor<{rows}x16xf32>, %b: tensor<16x16xf32>) -> tensor<{rows}x16xf32> {{
  %zero = arith.constant 0.0 : f32
{size}  %e = tensor.empty({"%m" if dynamic else ""}) : tensor<{rows}x16xf32>
  %z = linalg.fill ins(%zero : f32) outs(%e : tensor<{rows}x16xf32>) -> tensor<{rows}x16xf32>
{rhs_def}  %c = linalg.matmul ins(%a, {rhs} : tensor<{rows}x16xf32>, tensor<16x16xf32>) outs(%z : tensor<{rows}x16xf32>)
      -> tensor<{rows}x16xf32>
  return %c : tensor<{rows}x16xf32>
}}
"""


PLAIN = _square("", "%b")
TRANSPOSED = _square("  %te = tensor.empty() : tensor<16x16xf32>\n"
                     "  %t = linalg.transpose ins(%b : tensor<16x16xf32>) outs(%te : tensor<16x16xf32>) "
                     "permutation = [1, 0]\n", "%t")


def _row_sums(reduced: str) -> str:
    kept = "i" if reduced == "j" else "j"
    return f"""
func.func @sums(%x: tensor<16x16xf32>) -> tensor<16xf32> {{
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<16xf32>
  %z = linalg.fill ins(%zero : f32) outs(%e : tensor<16xf32>) -> tensor<16xf32>
  %s = linalg.generic {{indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> ({kept})>],
                       iterator_types = [{'"reduction", "parallel"' if reduced == "i" else '"parallel", "reduction"'}]}}
      ins(%x : tensor<16x16xf32>) outs(%z : tensor<16xf32>) {{
  ^bb0(%v: f32, %acc: f32):
    %sum = arith.addf %acc, %v : f32
    linalg.yield %sum : f32
  }} -> tensor<16xf32>
  return %s : tensor<16xf32>
}}
"""


def _equations(proof: FunctionProof) -> set[str]:
    """The laws a proof applied, either way round."""
    return {law.rstrip("~") for law in proof.proof.laws}


def test_rmsnorm_scale_moves_after_the_matmul_with_gamma_in_the_weights() -> None:
    (proof,) = prism.verify(RMSNORM, RMSNORM_FOLDED)
    assert proof.proof.proved
    assert {"row-scaling-commutes-with-matmul", "column-scaling-moves-into-b"} <= _equations(proof)


def test_lora_becomes_one_gemm_on_the_activations() -> None:
    (proof,) = prism.verify(LORA, LORA_FUSED)
    assert {"matmul-associative", "matmul-distributes-over-add-right"} <= _equations(proof)


def test_a_transposed_operand_is_rejected_with_a_counterexample() -> None:
    assert prism.verify(PLAIN, PLAIN)[0].proof.laws == {}
    with pytest.raises(prism.VerificationError, match=r"could not prove @f .*counterexample: result #0 differs at"):
        prism.verify(PLAIN, TRANSPOSED)


def test_a_wrong_reduction_axis_is_rejected_with_a_counterexample() -> None:
    prism.verify(_row_sums("j"), _row_sums("j"))
    with pytest.raises(prism.VerificationError, match=r"could not prove @sums .*counterexample: result #0 differs"):
        prism.verify(_row_sums("j"), _row_sums("i"))


CONV = """
func.func @conv(%img: tensor<1x6x6x3xf32>, %f: tensor<3x3x3x4xf32>, %g: tensor<3x3x3x4xf32>) -> tensor<1x4x4x4xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<1x4x4x4xf32>
  %z = linalg.fill ins(%zero : f32) outs(%e : tensor<1x4x4x4xf32>) -> tensor<1x4x4x4xf32>
  %c = linalg.conv_2d_nhwc_hwcf ins(%img, FILTER : tensor<1x6x6x3xf32>, tensor<3x3x3x4xf32>)
                                outs(%z : tensor<1x4x4x4xf32>) -> tensor<1x4x4x4xf32>
  return %c : tensor<1x4x4x4xf32>
}
"""


def test_ops_outside_the_algebra_are_compared_as_opaque_terms() -> None:
    (proof,) = prism.verify(CONV.replace("FILTER", "%f"), CONV.replace("FILTER", "%f"))
    assert proof.proof.proved
    with pytest.raises(prism.VerificationError, match="counterexample"):
        prism.verify(CONV.replace("FILTER", "%f"), CONV.replace("FILTER", "%g"))


def test_an_exhausted_budget_is_an_error_not_a_pass(tmp_path: Path) -> None:
    original = tmp_path / "lora.mlir"
    original.write_text(LORA)
    pipeline = f"prism-verify{{against={original} max_nodes=10}}"
    with pytest.raises(prism.VerificationError, match=r"unproven \(e-graph size"):
        prism.compile(LORA_FUSED, target="host", pipeline=pipeline)


def test_dynamic_shapes_are_verified_too() -> None:
    dynamic = _square("", "%b", rows="?")
    assert prism.verify(dynamic, dynamic)[0].proof.proved
    with pytest.raises(prism.VerificationError, match="counterexample"):
        prism.verify(dynamic, _square("  %b2 = linalg.add ins(%b, %b : tensor<16x16xf32>, tensor<16x16xf32>) "
                                      "outs(%b : tensor<16x16xf32>) -> tensor<16x16xf32>\n", "%b2", rows="?"))


@dataclass(frozen=True)
class SwapMatmulOperandsPass(Pass):
    """A deliberately wrong rewrite: A @ B becomes B @ A."""

    NAME = "test-swap-matmul-operands"

    def run(self, module: ir.Module, ctx: PassContext) -> None:
        for op in module.body.operations[0].regions[0].blocks[0].operations:
            if op.operation.name == "linalg.matmul":
                a, b = op.operation.operands[0], op.operation.operands[1]
                op.operation.operands[0], op.operation.operands[1] = b, a


def test_the_pipeline_refuses_a_wrong_rewrite() -> None:
    """prism-optimize ends with prism-verify: a wrong pass slipped in before it makes the pipeline fail."""
    _, passes = PIPELINES["prism-optimize"]
    assert passes[-1] is VerifyPass
    module = ir.Module.parse(PLAIN, prism.infra.ir.make_context())
    compilation = Compilation(module, "host")
    stages = [cls() for cls in passes[:-1]] + [SwapMatmulOperandsPass(), VerifyPass()]
    with pytest.raises(prism.VerificationError, match="could not prove @f"):
        compilation.run(stages)
    honest = Compilation(ir.Module.parse(PLAIN, prism.infra.ir.make_context()), "host")
    honest.run([cls() for cls in passes])
    assert honest.ctx.report["proofs"] == [{"function": "f", "laws": {}, "proved": True}]


def _f16_matmul(accumulator: str) -> str:
    """f16 inputs, an f32 result; the product accumulated in ``accumulator`` (then widened if f16)."""
    widen = accumulator == "f16"
    product = "%p" if widen else "%c"
    text = f"""
func.func @mm(%a: tensor<32x256xf16>, %b: tensor<256x32xf16>) -> tensor<32x32xf32> {{
  %zero = arith.constant 0.0 : {accumulator}
  %e = tensor.empty() : tensor<32x32x{accumulator}>
  %z = linalg.fill ins(%zero : {accumulator}) outs(%e : tensor<32x32x{accumulator}>) -> tensor<32x32x{accumulator}>
  {product} = linalg.matmul ins(%a, %b : tensor<32x256xf16>, tensor<256x32xf16>) outs(%z : tensor<32x32x{accumulator}>)
      -> tensor<32x32x{accumulator}>
"""
    if widen:
        text += """  %we = tensor.empty() : tensor<32x32xf32>
  %c = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i, j)>],
                       iterator_types = ["parallel", "parallel"]}
      ins(%p : tensor<32x32xf16>) outs(%we : tensor<32x32xf32>) {
  ^bb0(%x: f16, %o: f32):
    %y = arith.extf %x : f16 to f32
    linalg.yield %y : f32
  } -> tensor<32x32xf32>
"""
    return text + "  return %c : tensor<32x32xf32>\n}\n"


def test_the_accumulator_precision_is_part_of_the_value() -> None:
    """The algebra's operators carry no element types: a change of precision must still tell programs apart."""
    assert prism.verify(_f16_matmul("f32"), _f16_matmul("f32"))[0].proof.proved
    with pytest.raises(prism.VerificationError, match="could not prove @mm"):
        prism.verify(_f16_matmul("f32"), _f16_matmul("f16"))


def test_values_outside_the_translation_are_keyed_by_their_definition() -> None:
    """Such values never equal each other by SSA name: the key is the defining block or op and the position."""
    from prism.algebra.terms import _Translator

    module = ir.Module.parse(PLAIN, prism.infra.ir.make_context())
    block = module.body.operations[0].regions[0].blocks[0]
    translator = _Translator(None)
    first, second = (translator.term({}, arg) for arg in block.arguments)
    assert first.op == second.op == "opaque" and first != second
    assert first == translator.term({}, block.arguments[0])


def test_the_numeric_check_treats_nan_on_both_sides_as_agreement() -> None:
    """NaN where both results have NaN (or the same infinity) agrees; NaN or inf on one side only is a difference."""
    want = np.array([1.0, np.nan, np.inf, 2.0], dtype=np.float32)
    assert _difference(want, want.copy(), "float32") is None
    assert _difference(want, np.array([1.0, 0.0, np.inf, 2.0], dtype=np.float32), "float32")[0] == (1,)
    assert _difference(want, np.array([1.0, np.nan, np.nan, 2.0], dtype=np.float32), "float32")[0] == (2,)
    assert _difference(want, np.array([1.0, np.nan, np.inf, 2.5], dtype=np.float32), "float32")[0] == (3,)


def _scaled(rounded_first: bool, factor: str) -> str:
    """@f: x (f32) times ``factor``, rounded to bf16 before the product or after it, returned in f32."""
    body = (["%b = arith.truncf %v : f32 to bf16", "%w = arith.extf %b : bf16 to f32", "%r = arith.mulf %w, %c : f32"]
            if rounded_first else
            ["%p = arith.mulf %v, %c : f32", "%b = arith.truncf %p : f32 to bf16", "%r = arith.extf %b : bf16 to f32"])
    return "\n".join([
        "#id = affine_map<(i) -> (i)>",
        "func.func @f(%x: tensor<4096xf32>) -> tensor<4096xf32> {",
        f"  %c = arith.constant {factor} : f32",
        "  %e = tensor.empty() : tensor<4096xf32>",
        "  %y = linalg.generic {indexing_maps = [#id, #id], iterator_types = [\"parallel\"]}",
        "      ins(%x : tensor<4096xf32>) outs(%e : tensor<4096xf32>) {",
        "  ^bb0(%v: f32, %o: f32):",
        *[f"    {line}" for line in body],
        "    linalg.yield %r : f32",
        "  } -> tensor<4096xf32>",
        "  return %y : tensor<4096xf32>",
        "}"])


def test_the_numeric_check_allows_the_rounding_of_the_narrowest_type_computed_in() -> None:
    """A function of f32 results that rounds to bf16 on the way is checked at bf16's tolerance: moving the
    rounding past a product (up to 2**-8 of each value, over f32's 1e-3 of the scale) is no counterexample, a
    wrong factor (3% off) is one; a function of f32 alone keeps f32's."""
    from prism.infra.ir import make_context
    from prism.runtime.compare import find_counterexample, narrowest_float

    with make_context():
        original, moved, wrong = (ir.Module.parse(_scaled(first, factor))
                                  for first, factor in ((True, "3.3"), (False, "3.3"), (False, "3.4")))
        assert narrowest_float(original, "f") == "bf16"
        assert find_counterexample(original, moved, "f") is None
        assert find_counterexample(original, wrong, "f") is not None
        f32_only = ir.Module.parse(_scaled(True, "3.3").replace("bf16", "f32").replace(
            "%b = arith.truncf %v : f32 to f32", "%b = arith.addf %v, %v : f32").replace(
            "%w = arith.extf %b : f32 to f32", "%w = arith.mulf %b, %c : f32"))
        assert narrowest_float(f32_only, "f") == "f32"
