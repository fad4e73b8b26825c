// Source: iree-org/iree tests/e2e/regression/associative_reordering.mlir, @check_reordering, commit b48a5955575cf8924ffc191f3b0804976e5738b9.
// Licence: Apache-2.0 WITH LLVM-exception.
// Adapted: the 384 constant values and the 0-d constant are arguments; the check op is dropped and the
// result returned.
#map0 = affine_map<(d0) -> (d0)>
#map3 = affine_map<(d0) -> ()>
func.func @check_reordering(%0: tensor<384xf32>, %1: tensor<f32>) -> tensor<f32> {
  %cst = arith.constant -0.000000e+00 : f32
  %2 = tensor.empty() : tensor<f32>
  %3 = linalg.fill ins(%cst : f32) outs(%2 : tensor<f32>) -> tensor<f32>
  %4 = linalg.generic {indexing_maps = [#map0, #map3, #map3], iterator_types = ["reduction"]}
    ins(%0, %1 : tensor<384xf32>, tensor<f32>) outs(%3 : tensor<f32>){
  ^bb0(%arg3: f32, %arg4: f32, %arg5: f32):
    %5 = arith.subf %arg3, %arg4 : f32
    %6 = arith.mulf %5, %5 : f32
    %7 = arith.addf %6, %arg5 : f32
    linalg.yield %7 : f32
  } -> tensor<f32>
  return %4 : tensor<f32>
}
