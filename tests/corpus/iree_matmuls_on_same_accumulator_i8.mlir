// Source: iree-org/iree tests/e2e/regression/dynamic_matmuls_on_same_accumulator_issue_12060.mlir, @matmul_i8,
// commit b48a5955575cf8924ffc191f3b0804976e5738b9.
// Licence: Apache-2.0 WITH LLVM-exception.
// Taken as it is.
func.func @matmul_i8(%lhs: tensor<?x?xi8>, %rhs: tensor<?x?xi8>, %acc: tensor<?x?xi32>) -> tensor<?x?xi32> {
  %result1 = linalg.matmul ins(%lhs, %rhs: tensor<?x?xi8>, tensor<?x?xi8>) outs(%acc: tensor<?x?xi32>) -> tensor<?x?xi32>
  %result2 = linalg.matmul ins(%lhs, %rhs: tensor<?x?xi8>, tensor<?x?xi8>) outs(%result1: tensor<?x?xi32>) -> tensor<?x?xi32>
  %result3 = linalg.matmul ins(%lhs, %rhs: tensor<?x?xi8>, tensor<?x?xi8>) outs(%result2: tensor<?x?xi32>) -> tensor<?x?xi32>
  return %result3: tensor<?x?xi32>
}
