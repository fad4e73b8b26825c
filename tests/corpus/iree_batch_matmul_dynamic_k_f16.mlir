// Source: iree-org/iree tests/e2e/regression/linalg_ops_dynamic.mlir, @batch_matmul_dynamic_reduction_size_B2_M1_N3_K5, commit b48a5955575cf8924ffc191f3b0804976e5738b9.
// Licence: Apache-2.0 WITH LLVM-exception.
// Adapted: the dynamic constants (flow.tensor.dynamic_constant) are arguments; the check op is dropped and the
// result returned.
#map = affine_map<(d0, d1, d2, d3) -> (d0, d1, d3)>
#map1 = affine_map<(d0, d1, d2, d3) -> (d0, d3, d2)>
#map2 = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2)>
func.func @batch_matmul_dynamic_reduction_size_B2_M1_N3_K5(%lhs: tensor<2x1x?xf16>, %rhs: tensor<2x?x3xf16>) -> tensor<2x1x3xf16> {

  %cst = arith.constant 0.000000 : f16
  %2 = tensor.empty() : tensor<2x1x3xf16>
  %3 = linalg.fill ins(%cst : f16) outs(%2 : tensor<2x1x3xf16>) -> tensor<2x1x3xf16>
  %observed = linalg.generic {
    indexing_maps = [#map, #map1, #map2],
    iterator_types = ["parallel", "parallel", "parallel", "reduction"]}
    ins(%lhs, %rhs : tensor<2x1x?xf16>, tensor<2x?x3xf16>) outs(%3 : tensor<2x1x3xf16>) {
  ^bb0(%in: f16, %in_0: f16, %out: f16):
    %6 = arith.mulf %in, %in_0 : f16
    %7 = arith.addf %out, %6 : f16
    linalg.yield %7 : f16
  } -> tensor<2x1x3xf16>

  return %observed : tensor<2x1x3xf16>
}
