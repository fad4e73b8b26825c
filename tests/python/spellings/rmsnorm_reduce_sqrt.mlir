// expect: rmsnorm
// RMSNorm + linear: a linalg.reduce sum of squares, the mean by a division by d, math.sqrt and a division by it (no rsqrt), gamma, then linalg.matmul.
#id = affine_map<(i, j) -> (i, j)>
#row = affine_map<(i, j) -> (i)>
#col = affine_map<(i, j) -> (j)>
#vec = affine_map<(i) -> (i)>
func.func @rmsnorm_linear(%x: tensor<24x64xf32>, %gamma: tensor<64xf32>, %w: tensor<64x32xf32>) -> tensor<24x32xf32> {
  %zero = arith.constant 0.0 : f32
  %d = arith.constant 64.0 : f32
  %eps = arith.constant 1.0e-05 : f32
  %xe = tensor.empty() : tensor<24x64xf32>
  %sq = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%x : tensor<24x64xf32>) outs(%xe : tensor<24x64xf32>) {
  ^bb0(%a: f32, %o: f32):
    %r = arith.mulf %a, %a : f32
    linalg.yield %r : f32
  } -> tensor<24x64xf32>
  %re = tensor.empty() : tensor<24xf32>
  %s0 = linalg.fill ins(%zero : f32) outs(%re : tensor<24xf32>) -> tensor<24xf32>
  %ss = linalg.reduce ins(%sq : tensor<24x64xf32>) outs(%s0 : tensor<24xf32>) dimensions = [1]
    (%a: f32, %acc: f32) {
      %r = arith.addf %a, %acc : f32
      linalg.yield %r : f32
    }
  %mean = linalg.generic {indexing_maps = [#vec, #vec], iterator_types = ["parallel"]}
      ins(%ss : tensor<24xf32>) outs(%re : tensor<24xf32>) {
  ^bb0(%a: f32, %o: f32):
    %m = arith.divf %a, %d : f32
    %r = arith.addf %m, %eps : f32
    linalg.yield %r : f32
  } -> tensor<24xf32>
  %rms = math.sqrt %mean : tensor<24xf32>
  %y = linalg.generic {indexing_maps = [#id, #row, #col, #id], iterator_types = ["parallel", "parallel"]}
      ins(%x, %rms, %gamma : tensor<24x64xf32>, tensor<24xf32>, tensor<64xf32>) outs(%xe : tensor<24x64xf32>) {
  ^bb0(%a: f32, %r: f32, %g: f32, %o: f32):
    %n = arith.divf %a, %r : f32
    %t = arith.mulf %n, %g : f32
    linalg.yield %t : f32
  } -> tensor<24x64xf32>
  %oe = tensor.empty() : tensor<24x32xf32>
  %o0 = linalg.fill ins(%zero : f32) outs(%oe : tensor<24x32xf32>) -> tensor<24x32xf32>
  %out = linalg.matmul ins(%y, %w : tensor<24x64xf32>, tensor<64x32xf32>) outs(%o0 : tensor<24x32xf32>) -> tensor<24x32xf32>
  return %out : tensor<24x32xf32>
}
