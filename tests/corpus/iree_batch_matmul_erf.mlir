// Source: iree-org/iree tests/e2e/regression/linalg_ops_dynamic.mlir, @batch_matmul_B1_M1_N32_K64_followed_by_erf, commit b48a5955575cf8924ffc191f3b0804976e5738b9.
// Licence: Apache-2.0 WITH LLVM-exception.
// Adapted: the dynamic constants are arguments; the expected value and the check op are dropped, and the
// result returned.
func.func @batch_matmul_B1_M1_N32_K64_followed_by_erf(%lhs: tensor<?x?x64xf32>, %rhs: tensor<?x64x32xf32>) -> tensor<?x?x32xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c0_f32 = arith.constant 0.0 : f32

  %B = tensor.dim %lhs, %c0 : tensor<?x?x64xf32>
  %M = tensor.dim %lhs, %c1 : tensor<?x?x64xf32>

  %empty = tensor.empty(%B, %M) : tensor<?x?x32xf32>
  %filled = linalg.fill ins(%c0_f32: f32) outs(%empty : tensor<?x?x32xf32>) -> tensor<?x?x32xf32>
  %bmm = linalg.batch_matmul ins(%lhs, %rhs : tensor<?x?x64xf32>, tensor<?x64x32xf32>)
                                    outs(%filled : tensor<?x?x32xf32>) -> tensor<?x?x32xf32>

  %erfed = math.erf %bmm : tensor<?x?x32xf32>

  return %erfed : tensor<?x?x32xf32>
}
