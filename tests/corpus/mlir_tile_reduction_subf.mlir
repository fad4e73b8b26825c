// Source: llvm/llvm-project mlir/test/Integration/Dialect/Linalg/CPU/test-tile-reduction-subf.mlir, @main, commit 01345ea6686d5e38fa593f1a52641fb52804e311.
// Licence: Apache-2.0 WITH LLVM-exception.
// Adapted: the constant input is an argument; the printing and the transform script are dropped and the result
// returned.
func.func @main(%input: tensor<2x8xf32>) -> tensor<2xf32> {
  %cst = arith.constant 0.000000e+00 : f32
  %empty = tensor.empty() : tensor<2xf32>
  %init = linalg.fill ins(%cst : f32) outs(%empty : tensor<2xf32>) -> tensor<2xf32>
  %res = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>,
                                          affine_map<(d0, d1) -> (d0)>],
                         iterator_types = ["parallel", "reduction"]}
      ins(%input : tensor<2x8xf32>) outs(%init : tensor<2xf32>) {
  ^bb0(%in: f32, %acc: f32):
    %sub = arith.subf %acc, %in : f32
    linalg.yield %sub : f32
  } -> tensor<2xf32>
  return %res : tensor<2xf32>
}
