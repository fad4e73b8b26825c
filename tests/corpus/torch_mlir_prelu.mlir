// Source: llvm/torch-mlir test/python/fx_importer/iree_test/linalg-ir/Prelu.mlir (torch-mlir's
// linalg-on-tensors output of aten's Prelu), pull request 3064, commit 2973688406b965512ae3216d8ada30fdee5f128c.
// Licence: Apache-2.0 WITH LLVM-exception.
// Adapted: the module around @main and its unused ml_program.global seed are dropped;
// tensor.expand_shape gains the output_shape that MLIR now requires.
#map = affine_map<(d0, d1) -> (d0, d1)>
#map1 = affine_map<(d0, d1) -> (0, d1)>
func.func @main(%arg0: tensor<128x128xf32>, %arg1: tensor<128xf32>) -> tensor<128x128xf32> {
  %cst = arith.constant 0.000000e+00 : f32
  %expanded = tensor.expand_shape %arg1 [[0, 1]] output_shape [1, 128] : tensor<128xf32> into tensor<1x128xf32>
  %0 = tensor.empty() : tensor<128x128xi1>
  %1 = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel", "parallel"]} ins(%arg0 : tensor<128x128xf32>) outs(%0 : tensor<128x128xi1>) {
  ^bb0(%in: f32, %out: i1):
    %5 = arith.cmpf ugt, %in, %cst : f32
    linalg.yield %5 : i1
  } -> tensor<128x128xi1>
  %2 = tensor.empty() : tensor<128x128xf32>
  %3 = linalg.generic {indexing_maps = [#map1, #map, #map], iterator_types = ["parallel", "parallel"]} ins(%expanded, %arg0 : tensor<1x128xf32>, tensor<128x128xf32>) outs(%2 : tensor<128x128xf32>) {
  ^bb0(%in: f32, %in_0: f32, %out: f32):
    %5 = arith.mulf %in, %in_0 : f32
    linalg.yield %5 : f32
  } -> tensor<128x128xf32>
  %4 = linalg.generic {indexing_maps = [#map, #map, #map, #map], iterator_types = ["parallel", "parallel"]} ins(%1, %arg0, %3 : tensor<128x128xi1>, tensor<128x128xf32>, tensor<128x128xf32>) outs(%2 : tensor<128x128xf32>) {
  ^bb0(%in: i1, %in_0: f32, %in_1: f32, %out: f32):
    %5 = arith.select %in, %in_0, %in_1 : f32
    linalg.yield %5 : f32
  } -> tensor<128x128xf32>
  return %4 : tensor<128x128xf32>
}
