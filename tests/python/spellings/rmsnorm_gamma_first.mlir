// expect: rmsnorm
// gamma applied before the row scale: y = (x * gamma) * rsqrt(sum(x^2)/d + eps), then y W.
#rows = affine_map<(i, j) -> (i, j)>
#row = affine_map<(i, j) -> (i)>
#col = affine_map<(i, j) -> (j)>
#vec = affine_map<(i) -> (i)>
func.func @rmsnorm(%x: tensor<40x48xf32>, %gamma: tensor<48xf32>, %w: tensor<48x32xf32>) -> tensor<40x32xf32> {
  %zero = arith.constant 0.0 : f32
  %d = arith.constant 48.0 : f32
  %eps = arith.constant 1.0e-05 : f32
  %ge = tensor.empty() : tensor<40x48xf32>
  %xg = linalg.generic {indexing_maps = [#rows, #col, #rows], iterator_types = ["parallel", "parallel"]}
      ins(%x, %gamma : tensor<40x48xf32>, tensor<48xf32>) outs(%ge : tensor<40x48xf32>) {
  ^bb0(%v: f32, %g: f32, %out: f32):
    %y = arith.mulf %g, %v : f32
    linalg.yield %y : f32
  } -> tensor<40x48xf32>
  %re = tensor.empty() : tensor<40xf32>
  %r0 = linalg.fill ins(%zero : f32) outs(%re : tensor<40xf32>) -> tensor<40xf32>
  %ss = linalg.generic {indexing_maps = [#rows, #row], iterator_types = ["parallel", "reduction"]}
      ins(%x : tensor<40x48xf32>) outs(%r0 : tensor<40xf32>) {
  ^bb0(%v: f32, %acc: f32):
    %sq = arith.mulf %v, %v : f32
    %s = arith.addf %acc, %sq : f32
    linalg.yield %s : f32
  } -> tensor<40xf32>
  %rs = linalg.generic {indexing_maps = [#vec, #vec], iterator_types = ["parallel"]}
      ins(%ss : tensor<40xf32>) outs(%re : tensor<40xf32>) {
  ^bb0(%s: f32, %out: f32):
    %mean = arith.divf %s, %d : f32
    %sh = arith.addf %mean, %eps : f32
    %r = math.rsqrt %sh : f32
    linalg.yield %r : f32
  } -> tensor<40xf32>
  %y = linalg.generic {indexing_maps = [#rows, #row, #rows], iterator_types = ["parallel", "parallel"]}
      ins(%xg, %rs : tensor<40x48xf32>, tensor<40xf32>) outs(%ge : tensor<40x48xf32>) {
  ^bb0(%v: f32, %r: f32, %out: f32):
    %n = arith.mulf %v, %r : f32
    linalg.yield %n : f32
  } -> tensor<40x48xf32>
  %oe = tensor.empty() : tensor<40x32xf32>
  %o0 = linalg.fill ins(%zero : f32) outs(%oe : tensor<40x32xf32>) -> tensor<40x32xf32>
  %out = linalg.matmul ins(%y, %w : tensor<40x48xf32>, tensor<48x32xf32>) outs(%o0 : tensor<40x32xf32>) -> tensor<40x32xf32>
  return %out : tensor<40x32xf32>
}
