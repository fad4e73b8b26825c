// Source: llvm/llvm-project mlir/test/Dialect/Linalg/elementwise/roundtrip.mlir, @binary_identity_mul_5Di, commit 8df9cb32e66c4d5b10fda04a8f485932a827521a.
// Licence: Apache-2.0 WITH LLVM-exception.
// Taken as it is.
func.func @binary_identity_mul_5Di(%A: tensor<1x2x3x4x5xi32>, %B: tensor<1x2x3x4x5xi32>,
                                   %C: tensor<1x2x3x4x5xi32>) ->  tensor<1x2x3x4x5xi32> {
  %r = linalg.elementwise
      kind=#linalg.elementwise_kind<mul>
      ins(%A, %B: tensor<1x2x3x4x5xi32>, tensor<1x2x3x4x5xi32>)
      outs(%C: tensor<1x2x3x4x5xi32>) -> tensor<1x2x3x4x5xi32>
  return %r : tensor<1x2x3x4x5xi32>
}
