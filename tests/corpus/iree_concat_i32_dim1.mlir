// Source: iree-org/iree tests/e2e/tensor_ops/concat.mlir, @concat_i32_dim1, commit b48a5955575cf8924ffc191f3b0804976e5738b9.
// Licence: Apache-2.0 WITH LLVM-exception.
// Adapted: the constant inputs behind util.optimization_barrier are arguments; the check op is dropped and
// the result returned.
func.func @concat_i32_dim1(%lhs_barrier: tensor<2x3xi32>, %rhs_barrier: tensor<2x5xi32>) -> tensor<2x8xi32> {
  %concat = tensor.concat dim(1) %lhs_barrier, %rhs_barrier : (tensor<2x3xi32>, tensor<2x5xi32>) -> tensor<2x8xi32>
  return %concat : tensor<2x8xi32>
}
