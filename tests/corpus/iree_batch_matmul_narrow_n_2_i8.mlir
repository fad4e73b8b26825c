// Source: iree-org/iree tests/e2e/linalg/narrow_n_matmuls.mlir, @batch_matmul_narrow_n_2, commit b48a5955575cf8924ffc191f3b0804976e5738b9.
// Licence: Apache-2.0 WITH LLVM-exception.
// Adapted: the constant inputs are arguments; the check op is dropped and the result returned.
func.func @batch_matmul_narrow_n_2(%lhs: tensor<2x3x4xi8>, %rhs: tensor<2x4x2xi8>, %acc: tensor<2x3x2xi32>) -> tensor<2x3x2xi32> {
  %result = linalg.batch_matmul ins(%lhs, %rhs : tensor<2x3x4xi8>, tensor<2x4x2xi8>) outs(%acc : tensor<2x3x2xi32>) -> tensor<2x3x2xi32>
  return %result : tensor<2x3x2xi32>
}
