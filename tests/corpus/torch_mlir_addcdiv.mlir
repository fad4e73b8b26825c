// Source: llvm/torch-mlir test/python/fx_importer/iree_test/linalg-ir/Addcdiv.mlir (torch-mlir's
// linalg-on-tensors output of aten's Addcdiv), pull request 3064, commit 2973688406b965512ae3216d8ada30fdee5f128c.
// Licence: Apache-2.0 WITH LLVM-exception.
// Adapted: the module around @main and its unused ml_program.global seed are dropped.
#map = affine_map<(d0, d1) -> (d0, 0)>
#map1 = affine_map<(d0, d1) -> (0, d1)>
#map2 = affine_map<(d0, d1) -> (d0, d1)>
func.func @main(%arg0: tensor<128x128xf32>, %arg1: tensor<128x1xf32>, %arg2: tensor<1x128xf32>) -> tensor<128x128xf32> {
  %0 = tensor.empty() : tensor<128x128xf32>
  %1 = linalg.generic {indexing_maps = [#map, #map1, #map2], iterator_types = ["parallel", "parallel"]} ins(%arg1, %arg2 : tensor<128x1xf32>, tensor<1x128xf32>) outs(%0 : tensor<128x128xf32>) {
  ^bb0(%in: f32, %in_0: f32, %out: f32):
    %3 = arith.divf %in, %in_0 : f32
    linalg.yield %3 : f32
  } -> tensor<128x128xf32>
  %2 = linalg.generic {indexing_maps = [#map2, #map2, #map2], iterator_types = ["parallel", "parallel"]} ins(%arg0, %1 : tensor<128x128xf32>, tensor<128x128xf32>) outs(%0 : tensor<128x128xf32>) {
  ^bb0(%in: f32, %in_0: f32, %out: f32):
    %3 = arith.addf %in, %in_0 : f32
    linalg.yield %3 : f32
  } -> tensor<128x128xf32>
  return %2 : tensor<128x128xf32>
}
