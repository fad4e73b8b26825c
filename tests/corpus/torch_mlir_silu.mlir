// Source: llvm/torch-mlir test/python/fx_importer/iree_test/linalg-ir/Silu.mlir (torch-mlir's
// linalg-on-tensors output of aten's Silu), pull request 3064, commit 2973688406b965512ae3216d8ada30fdee5f128c.
// Licence: Apache-2.0 WITH LLVM-exception.
// Adapted: the module around @main and its unused ml_program.global seed are dropped.
#map = affine_map<(d0, d1) -> (d0, d1)>
func.func @main(%arg0: tensor<128x128xf32>) -> tensor<128x128xf32> {
  %cst = arith.constant 1.000000e+00 : f32
  %0 = tensor.empty() : tensor<128x128xf32>
  %1 = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel", "parallel"]} ins(%arg0 : tensor<128x128xf32>) outs(%0 : tensor<128x128xf32>) {
  ^bb0(%in: f32, %out: f32):
    %3 = arith.negf %in : f32
    %4 = math.exp %3 : f32
    %5 = arith.addf %4, %cst : f32
    %6 = arith.divf %cst, %5 : f32
    linalg.yield %6 : f32
  } -> tensor<128x128xf32>
  %2 = linalg.generic {indexing_maps = [#map, #map, #map], iterator_types = ["parallel", "parallel"]} ins(%1, %arg0 : tensor<128x128xf32>, tensor<128x128xf32>) outs(%0 : tensor<128x128xf32>) {
  ^bb0(%in: f32, %in_0: f32, %out: f32):
    %3 = arith.mulf %in, %in_0 : f32
    linalg.yield %3 : f32
  } -> tensor<128x128xf32>
  return %2 : tensor<128x128xf32>
}
