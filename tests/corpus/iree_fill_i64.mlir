// Source: iree-org/iree tests/e2e/regression/fill_i64.mlir, @fill_i64, commit b48a5955575cf8924ffc191f3b0804976e5738b9.
// Licence: Apache-2.0 WITH LLVM-exception.
// Taken as it is (the RUN and CHECK lines dropped).
func.func @fill_i64(%arg0: tensor<?x?xi64>) -> (tensor<?x?xi64>, tensor<?x?xi64>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %0 = tensor.dim %arg0, %c0 : tensor<?x?xi64>
  %1 = tensor.dim %arg0, %c1 : tensor<?x?xi64>

  %cv0 = arith.constant -1 : i64
  %v0_init = tensor.empty(%0, %1) : tensor<?x?xi64>
  %v0 = linalg.fill ins(%cv0 : i64) outs(%v0_init : tensor<?x?xi64>) -> tensor<?x?xi64>

  %cv1 = arith.constant 9223372036854775807 : i64
  %v1_init = tensor.empty(%0, %1) : tensor<?x?xi64>
  %v1 = linalg.fill ins(%cv1 : i64) outs(%v1_init : tensor<?x?xi64>) -> tensor<?x?xi64>

  return %v0, %v1 : tensor<?x?xi64>, tensor<?x?xi64>
}
