// expect: rmsnorm
// The row scale as 1/sqrt(mean + eps), then a product: y = x * (1 / sqrt(mean(x*x) + eps)) * gamma, then y W.
#rows = affine_map<(i, j) -> (i, j)>
#row = affine_map<(i, j) -> (i)>
#col = affine_map<(i, j) -> (j)>
#vec = affine_map<(i) -> (i)>
func.func @rmsnorm(%x: tensor<24x64xf32>, %gamma: tensor<64xf32>, %w: tensor<64x48xf32>) -> tensor<24x48xf32> {
  %zero = arith.constant 0.0 : f32
  %one = arith.constant 1.0 : f32
  %inv_d = arith.constant 1.5625e-02 : f32
  %eps = arith.constant 1.0e-06 : f32
  %re = tensor.empty() : tensor<24xf32>
  %r0 = linalg.fill ins(%zero : f32) outs(%re : tensor<24xf32>) -> tensor<24xf32>
  %ss = linalg.generic {indexing_maps = [#rows, #row], iterator_types = ["parallel", "reduction"]}
      ins(%x : tensor<24x64xf32>) outs(%r0 : tensor<24xf32>) {
  ^bb0(%v: f32, %acc: f32):
    %sq = arith.mulf %v, %v : f32
    %s = arith.addf %acc, %sq : f32
    linalg.yield %s : f32
  } -> tensor<24xf32>
  %rs = linalg.generic {indexing_maps = [#vec, #vec], iterator_types = ["parallel"]}
      ins(%ss : tensor<24xf32>) outs(%re : tensor<24xf32>) {
  ^bb0(%s: f32, %out: f32):
    %mean = arith.mulf %s, %inv_d : f32
    %sh = arith.addf %mean, %eps : f32
    %sd = math.sqrt %sh : f32
    %r = arith.divf %one, %sd : f32
    linalg.yield %r : f32
  } -> tensor<24xf32>
  %ye = tensor.empty() : tensor<24x64xf32>
  %y = linalg.generic {indexing_maps = [#rows, #row, #col, #rows], iterator_types = ["parallel", "parallel"]}
      ins(%x, %rs, %gamma : tensor<24x64xf32>, tensor<24xf32>, tensor<64xf32>) outs(%ye : tensor<24x64xf32>) {
  ^bb0(%v: f32, %r: f32, %g: f32, %out: f32):
    %n = arith.mulf %v, %r : f32
    %s = arith.mulf %n, %g : f32
    linalg.yield %s : f32
  } -> tensor<24x64xf32>
  %oe = tensor.empty() : tensor<24x48xf32>
  %o0 = linalg.fill ins(%zero : f32) outs(%oe : tensor<24x48xf32>) -> tensor<24x48xf32>
  %out = linalg.matmul ins(%y, %w : tensor<24x64xf32>, tensor<64x48xf32>) outs(%o0 : tensor<24x48xf32>) -> tensor<24x48xf32>
  return %out : tensor<24x48xf32>
}
