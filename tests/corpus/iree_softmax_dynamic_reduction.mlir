// Source: iree-org/iree tests/e2e/regression/linalg_ops_dynamic.mlir, @softmax_dynamic_reduction_N65_K1531, commit b48a5955575cf8924ffc191f3b0804976e5738b9.
// Licence: Apache-2.0 WITH LLVM-exception.
// Adapted: the dynamic constant input is an argument; the expected value and the check op are dropped, and the
// result returned.
func.func @softmax_dynamic_reduction_N65_K1531(%input: tensor<65x?xf32>) -> tensor<65x?xf32> {

  %c_1_index = arith.constant 1 : index
  %dim_0 = tensor.dim %input, %c_1_index : tensor<65x?xf32>
  %output = tensor.empty(%dim_0) : tensor<65x?xf32>

  %sm = linalg.softmax dimension(1) ins(%input : tensor<65x?xf32>)
                                       outs(%output : tensor<65x?xf32>) -> tensor<65x?xf32>

  return %sm : tensor<65x?xf32>
}
