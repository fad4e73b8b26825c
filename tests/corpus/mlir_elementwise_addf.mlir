// Source: llvm/llvm-project mlir/test/Integration/Dialect/Linalg/CPU/test-elementwise.mlir, @main, commit 0f9b9541236e776630d14d537008ea95ac1da985.
// Licence: Apache-2.0 WITH LLVM-exception.
// Adapted: the two constant operands are arguments; the printing is dropped and the result returned.
func.func @main(%a: tensor<3xf32>, %b: tensor<3xf32>) -> tensor<3xf32> {
  %addf = arith.addf %a, %b : tensor<3xf32>
  return %addf : tensor<3xf32>
}
