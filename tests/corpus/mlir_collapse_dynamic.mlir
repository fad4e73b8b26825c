// Source: llvm/llvm-project mlir/test/Integration/Dialect/Linalg/CPU/test-collapse-tensor.mlir, @collapse_dynamic_shape, commit 1647897741df4bd162d2cefd02331e2dc5ae9f29.
// Licence: Apache-2.0 WITH LLVM-exception.
// Taken as it is.
func.func @collapse_dynamic_shape(%arg0 : tensor<2x?x?x?xf32>) -> tensor<2x?x?xf32> {
  %0 = tensor.collapse_shape %arg0 [[0], [1, 2], [3]]: tensor<2x?x?x?xf32> into tensor<2x?x?xf32>
  return %0 : tensor<2x?x?xf32>
}
