// Source: iree-org/iree tests/e2e/linalg/narrow_n_matmuls.mlir, @batch_matvec, commit b48a5955575cf8924ffc191f3b0804976e5738b9.
// Licence: Apache-2.0 WITH LLVM-exception.
// Adapted: the constant inputs are arguments; the check op is dropped and the result returned.
func.func @batch_matvec(%lhs: tensor<2x3x4xi8>, %rhs: tensor<2x4xi8>, %acc: tensor<2x3xi32>) -> tensor<2x3xi32> {
  %result = linalg.batch_matvec ins(%lhs, %rhs : tensor<2x3x4xi8>, tensor<2x4xi8>) outs(%acc : tensor<2x3xi32>) -> tensor<2x3xi32>
  return %result : tensor<2x3xi32>
}
