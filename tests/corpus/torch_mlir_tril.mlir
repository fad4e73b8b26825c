// Source: llvm/torch-mlir test/python/fx_importer/iree_test/linalg-ir/Tril.mlir (torch-mlir's
// linalg-on-tensors output of aten's Tril), pull request 3064, commit 2973688406b965512ae3216d8ada30fdee5f128c.
// Licence: Apache-2.0 WITH LLVM-exception.
// Adapted: the module around @main and its unused ml_program.global seed are dropped.
#map = affine_map<(d0, d1) -> (d0, d1)>
func.func @main(%arg0: tensor<128x128xf32>) -> tensor<128x128xf32> {
  %cst = arith.constant 0.000000e+00 : f32
  %0 = tensor.empty() : tensor<128x128xf32>
  %1 = linalg.generic {indexing_maps = [#map, #map], iterator_types = ["parallel", "parallel"]} ins(%arg0 : tensor<128x128xf32>) outs(%0 : tensor<128x128xf32>) {
  ^bb0(%in: f32, %out: f32):
    %2 = linalg.index 0 : index
    %3 = arith.index_cast %2 : index to i64
    %4 = linalg.index 1 : index
    %5 = arith.index_cast %4 : index to i64
    %6 = arith.cmpi sle, %5, %3 : i64
    %7 = arith.select %6, %in, %cst : f32
    linalg.yield %7 : f32
  } -> tensor<128x128xf32>
  return %1 : tensor<128x128xf32>
}
