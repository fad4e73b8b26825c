// Source: iree-org/iree tests/e2e/linalg/narrow_n_matmuls.mlir, @matmul_narrow_n_1, commit b48a5955575cf8924ffc191f3b0804976e5738b9.
// Licence: Apache-2.0 WITH LLVM-exception.
// Adapted: the constant inputs are arguments; the check op is dropped and the result returned.
func.func @matmul_narrow_n_1(%lhs: tensor<3x4xi8>, %rhs: tensor<4x1xi8>, %acc: tensor<3x1xi32>) -> tensor<3x1xi32> {
  %result = linalg.matmul ins(%lhs, %rhs : tensor<3x4xi8>, tensor<4x1xi8>) outs(%acc : tensor<3x1xi32>) -> tensor<3x1xi32>
  return %result : tensor<3x1xi32>
}
