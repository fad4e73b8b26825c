// Source: iree-org/iree tests/e2e/regression/linalg_quantized_matmul_vs_linalg_matmul.mlir,
// @check_one_quantized_matmul_as_matmul_3x4x5, commit b48a5955575cf8924ffc191f3b0804976e5738b9.
// Licence: Apache-2.0 WITH LLVM-exception.
// Adapted: the call to the reference and the check op are dropped; the function is public and returns
// linalg.quantized_matmul's result.
func.func @check_one_quantized_matmul_as_matmul_3x4x5(%lhs : tensor<3x4xi8>, %rhs : tensor<4x5xi8>, %lhs_zp : i32, %rhs_zp : i32) -> tensor<3x5xi32> {
    %c_0 = arith.constant 0 : i32
    %init_acc_uninitialized =  tensor.empty() : tensor<3x5xi32>
    %zero_acc = linalg.fill ins(%c_0 : i32) outs(%init_acc_uninitialized : tensor<3x5xi32>) -> tensor<3x5xi32>
    %result_of_quantized_matmul = linalg.quantized_matmul ins(%lhs, %rhs, %lhs_zp, %rhs_zp : tensor<3x4xi8>, tensor<4x5xi8>, i32, i32) outs(%zero_acc : tensor<3x5xi32>) -> tensor<3x5xi32>
    return %result_of_quantized_matmul : tensor<3x5xi32>
}
