// Source: iree-org/iree tests/e2e/linalg/gather_like_ops.mlir, @gather_like_op, commit b48a5955575cf8924ffc191f3b0804976e5738b9.
// Licence: Apache-2.0 WITH LLVM-exception.
// Adapted: the constant inputs are arguments; the check op is dropped and the result returned.
#map = affine_map<(d0, d1) -> (d1)>
#map1 = affine_map<(d0, d1) -> (d0, d1)>
func.func @gather_like_op(%input_init: tensor<2x4xi64>, %indices: tensor<4xi64>) -> tensor<4x4xi64> {
  %empty = tensor.empty() : tensor<4x4xi64>
  %res = linalg.generic {
    indexing_maps = [#map, #map1],
    iterator_types = ["parallel", "parallel"]
  } ins(%indices : tensor<4xi64>) outs(%empty : tensor<4x4xi64>) {
  ^bb0(%in: i64, %out: i64):
    %dim1 = linalg.index 1 : index
    %dim0 = arith.index_cast %in : i64 to index
    %extracted = tensor.extract %input_init[%dim0, %dim1] : tensor<2x4xi64>
    linalg.yield %extracted : i64
  } -> tensor<4x4xi64>
  return %res : tensor<4x4xi64>
}
