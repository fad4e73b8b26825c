// Source: iree-org/iree tests/e2e/tensor_ops/collapse_shape.mlir, @collapse_shape_i64, commit b48a5955575cf8924ffc191f3b0804976e5738b9.
// Licence: Apache-2.0 WITH LLVM-exception.
// Adapted: the constant input behind util.optimization_barrier is an argument; the check op is dropped and
// the result returned.
func.func @collapse_shape_i64(%2: tensor<1x4xi64>) -> tensor<4xi64> {
  %collapsed = tensor.collapse_shape %2 [[0, 1]] : tensor<1x4xi64> into tensor<4xi64>
  return %collapsed : tensor<4xi64>
}
