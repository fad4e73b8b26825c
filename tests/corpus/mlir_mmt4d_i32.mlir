// Source: llvm/llvm-project mlir/test/Integration/Dialect/Linalg/CPU/mmt4d.mlir, @mmt4d, commit 2f46823ab4be3542232d636b1bf703d505f220be.
// Licence: Apache-2.0 WITH LLVM-exception.
// Adapted: the three operands (filled with 3 and 4 there, and a constant accumulator) are arguments; the
// printing and the transform script are dropped and the result returned.
func.func @mmt4d(%A: tensor<2x2x3x1xi32>, %B: tensor<2x2x3x1xi32>, %C_in: tensor<2x2x3x3xi32>) -> tensor<2x2x3x3xi32> {
  %C_out = linalg.mmt4d ins(%A, %B: tensor<2x2x3x1xi32>, tensor<2x2x3x1xi32>) outs(%C_in: tensor<2x2x3x3xi32>) -> tensor<2x2x3x3xi32>
  return %C_out : tensor<2x2x3x3xi32>
}
