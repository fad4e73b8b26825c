// Source: llvm/llvm-project mlir/test/Dialect/Linalg/elementwise/roundtrip.mlir, @unary_identity_exp, commit 8df9cb32e66c4d5b10fda04a8f485932a827521a.
// Licence: Apache-2.0 WITH LLVM-exception.
// Taken as it is.
func.func @unary_identity_exp(%A : tensor<8x16x32xf32>, %B: tensor<8x16x32xf32>) ->  tensor<8x16x32xf32> {
  %r = linalg.elementwise
      kind=#linalg.elementwise_kind<exp>
      ins(%A : tensor<8x16x32xf32>)
      outs(%B: tensor<8x16x32xf32>) -> tensor<8x16x32xf32>
  return %r : tensor<8x16x32xf32>
}
