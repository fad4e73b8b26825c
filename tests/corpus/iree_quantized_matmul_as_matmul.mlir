// Source: iree-org/iree tests/e2e/regression/linalg_quantized_matmul_vs_linalg_matmul.mlir,
// @quantized_matmul_as_matmul_3x4x5, commit b48a5955575cf8924ffc191f3b0804976e5738b9.
// Licence: Apache-2.0 WITH LLVM-exception.
// Adapted: the function is public; otherwise as written.
func.func @quantized_matmul_as_matmul_3x4x5(%lhs : tensor<3x4xi8>, %rhs : tensor<4x5xi8>,  %lhs_zp : i32, %rhs_zp : i32) -> tensor<3x5xi32> {
  %c_0 = arith.constant 0 : i32
  %init_acc_uninitialized =  tensor.empty() : tensor<3x5xi32>
  %zero_acc = linalg.fill ins(%c_0 : i32) outs(%init_acc_uninitialized : tensor<3x5xi32>) -> tensor<3x5xi32>

  // compute the matmul itself, which would be the end result already in the case
  // where both zero-point values %lhs_zp and %rhs_zp are zero.
  %matmul_result = linalg.matmul ins(%lhs, %rhs : tensor<3x4xi8>, tensor<4x5xi8>) outs(%zero_acc : tensor<3x5xi32>) -> tensor<3x5xi32>

  %k_size = arith.constant 4 : i32  // = dim 1 of %lhs = dim 0 of %rhs

  // compute the sums along rows of %lhs.
  %lhs_i32 = arith.extsi %lhs : tensor<3x4xi8> to tensor<3x4xi32>
  %init_lhs_sums_uninitialized = tensor.empty() : tensor<3xi32>
  %zero_lhs_sums = linalg.fill ins(%c_0 : i32) outs(%init_lhs_sums_uninitialized : tensor<3xi32>) -> tensor<3xi32>
  %lhs_sums = linalg.generic {
      indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>,
                       affine_map<(d0, d1) -> (d0)>],
      iterator_types = ["parallel", "reduction"]}
      ins(%lhs_i32 : tensor<3x4xi32>)
      outs(%zero_lhs_sums : tensor<3xi32>) {
      ^bb0(%arg0: i32, %arg1: i32) :
          %1 = arith.addi %arg0, %arg1 : i32
          linalg.yield %1 : i32
      } -> tensor<3xi32>

  // compute the sums along columns of %rhs.
  %rhs_i32 = arith.extsi %rhs : tensor<4x5xi8> to tensor<4x5xi32>
  %init_rhs_sums_uninitialized = tensor.empty() : tensor<5xi32>
  %zero_rhs_sums = linalg.fill ins(%c_0 : i32) outs(%init_rhs_sums_uninitialized : tensor<5xi32>) -> tensor<5xi32>
  %rhs_sums = linalg.generic {
      indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>,
                       affine_map<(d0, d1) -> (d1)>],
      iterator_types = ["reduction", "parallel"]}
      ins(%rhs_i32 : tensor<4x5xi32>)
      outs(%zero_rhs_sums : tensor<5xi32>) {
      ^bb0(%arg0: i32, %arg1: i32) :
          %1 = arith.addi %arg0, %arg1 : i32
          linalg.yield %1 : i32
      } -> tensor<5xi32>

  // add all the terms together.
  %quantized_matmul_from_matmul_result = linalg.generic {
      indexing_maps = [
        affine_map<(d0, d1) -> (d0, d1)>,
        affine_map<(d0, d1) -> (d0)>,
        affine_map<(d0, d1) -> (d1)>,
        affine_map<(d0, d1) -> ()>,
        affine_map<(d0, d1) -> ()>,
        affine_map<(d0, d1) -> ()>,
        affine_map<(d0, d1) -> (d0, d1)>],
      iterator_types = ["parallel", "parallel"]}
      ins(%matmul_result, %lhs_sums, %rhs_sums, %lhs_zp, %rhs_zp, %k_size : tensor<3x5xi32>, tensor<3xi32>, tensor<5xi32>, i32, i32, i32)
      outs(%init_acc_uninitialized : tensor<3x5xi32>) {
      ^bb0(%matmul_result_val : i32, %lhs_sums_val: i32, %rhs_sums_val: i32, %lhs_zp_val: i32, %rhs_zp_val: i32, %k : i32, %acc_val: i32) :
          %linear_term_in_rhs_zp = arith.muli %lhs_sums_val, %rhs_zp_val : i32
          %linear_term_in_lhs_zp = arith.muli %rhs_sums_val, %lhs_zp_val : i32
          %linear_term = arith.addi %linear_term_in_rhs_zp, %linear_term_in_lhs_zp : i32
          %product_of_zp = arith.muli %lhs_zp_val, %rhs_zp_val : i32
          %quadratic_term = arith.muli %k, %product_of_zp : i32
          %corrected_for_linear_term = arith.subi %matmul_result_val, %linear_term : i32
          %corrected = arith.addi %corrected_for_linear_term, %quadratic_term : i32
          linalg.yield %corrected : i32
      } -> tensor<3x5xi32>
  return %quantized_matmul_from_matmul_result : tensor<3x5xi32>
}
