// Source: llvm/torch-mlir test/python/fx_importer/iree_test/linalg-ir/Index_select.mlir (torch-mlir's
// linalg-on-tensors output of aten's Index_select), pull request 3064,
// commit 2973688406b965512ae3216d8ada30fdee5f128c.
// Licence: Apache-2.0 WITH LLVM-exception.
// Adapted: the module around @main and its unused ml_program.global seed are dropped.
#map = affine_map<(d0, d1) -> (d0)>
#map1 = affine_map<(d0, d1) -> (d0, d1)>
func.func @main(%arg0: tensor<128x128xf32>, %arg1: i64, %arg2: tensor<4xi64>) -> tensor<4x128xf32> {
  %0 = tensor.empty() : tensor<4x128xf32>
  %1 = linalg.generic {indexing_maps = [#map, #map1], iterator_types = ["parallel", "parallel"]} ins(%arg2 : tensor<4xi64>) outs(%0 : tensor<4x128xf32>) {
  ^bb0(%in: i64, %out: f32):
    %2 = arith.index_cast %in : i64 to index
    %3 = linalg.index 1 : index
    %extracted = tensor.extract %arg0[%2, %3] : tensor<128x128xf32>
    linalg.yield %extracted : f32
  } -> tensor<4x128xf32>
  return %1 : tensor<4x128xf32>
}
