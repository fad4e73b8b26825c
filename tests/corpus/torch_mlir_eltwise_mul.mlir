// Source: torch-mlir's linalg-on-tensors output of a multiplication (module "_lambda"), as stored in
// tenstorrent/tt-mlir test/ttmlir/Dialect/TTIR/simple_eltwise_linalg.mlir, @forward, commit 19c86fca45ae7c3d8f886c0401d8b40a40d2f294.
// Licence: Apache-2.0.
// Adapted: ttir.empty is tensor.empty again (what torch-mlir wrote); the CHECK lines, the module's attribute
// and its unused ml_program.global seed are dropped.
#map = affine_map<(d0, d1) -> (d0, d1)>
func.func @forward(%arg0: tensor<64x128xf32>, %arg1: tensor<64x128xf32>) -> tensor<64x128xf32> {
  %0 = tensor.empty() : tensor<64x128xf32>
  %1 = linalg.generic {indexing_maps = [#map, #map, #map], iterator_types = ["parallel", "parallel"]} ins(%arg0, %arg1 : tensor<64x128xf32>, tensor<64x128xf32>) outs(%0 : tensor<64x128xf32>) {
  ^bb0(%in: f32, %in_0: f32, %out: f32):
    %2 = arith.mulf %in, %in_0 : f32
    linalg.yield %2 : f32
  } -> tensor<64x128xf32>
  return %1 : tensor<64x128xf32>
}
