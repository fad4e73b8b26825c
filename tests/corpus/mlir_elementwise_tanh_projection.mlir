// Source: llvm/llvm-project mlir/test/Dialect/Linalg/elementwise/roundtrip.mlir, @unary_projection_tanh, commit 8df9cb32e66c4d5b10fda04a8f485932a827521a.
// Licence: Apache-2.0 WITH LLVM-exception.
// Taken as it is.
func.func @unary_projection_tanh(%A: tensor<?x16xf32>,
                                          %B: tensor<8x16x?xf32>) ->  tensor<8x16x?xf32> {
  %r = linalg.elementwise
      kind=#linalg.elementwise_kind<tanh>
      indexing_maps = [affine_map<(d0, d1, d2) -> (d2, d1)>,
                       affine_map<(d0, d1, d2) -> (d0, d1, d2)>]
      ins(%A : tensor<?x16xf32>)
      outs(%B: tensor<8x16x?xf32>) -> tensor<8x16x?xf32>
  return %r : tensor<8x16x?xf32>
}
