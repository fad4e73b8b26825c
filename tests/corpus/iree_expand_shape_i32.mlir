// Source: iree-org/iree tests/e2e/tensor_ops/expand_shape.mlir, @expand_shape_i32, commit b48a5955575cf8924ffc191f3b0804976e5738b9.
// Licence: Apache-2.0 WITH LLVM-exception.
// Adapted: the constant input behind util.optimization_barrier is an argument; the check op is dropped and
// the result returned.
func.func @expand_shape_i32(%2: tensor<4xi32>) -> tensor<1x4xi32> {
  %expanded = tensor.expand_shape %2 [[0, 1]] output_shape [1, 4] : tensor<4xi32> into tensor<1x4xi32>
  return %expanded : tensor<1x4xi32>
}
