// expect: rmsnorm
// The mean as a product with 1/d, and eps, sqrt, the division and gamma in one generic over the rows: y = x / sqrt(sum(x*x) * (1/d) + eps) * gamma, then y W.
#rows = affine_map<(i, j) -> (i, j)>
#row = affine_map<(i, j) -> (i)>
#col = affine_map<(i, j) -> (j)>
func.func @rmsnorm(%x: tensor<32x64xf32>, %gamma: tensor<64xf32>, %w: tensor<64x40xf32>) -> tensor<32x40xf32> {
  %zero = arith.constant 0.0 : f32
  %inv_d = arith.constant 1.5625e-02 : f32
  %eps = arith.constant 1.0e-06 : f32
  %re = tensor.empty() : tensor<32xf32>
  %r0 = linalg.fill ins(%zero : f32) outs(%re : tensor<32xf32>) -> tensor<32xf32>
  %ss = linalg.generic {indexing_maps = [#rows, #row], iterator_types = ["parallel", "reduction"]}
      ins(%x : tensor<32x64xf32>) outs(%r0 : tensor<32xf32>) {
  ^bb0(%v: f32, %acc: f32):
    %sq = arith.mulf %v, %v : f32
    %s = arith.addf %sq, %acc : f32
    linalg.yield %s : f32
  } -> tensor<32xf32>
  %ye = tensor.empty() : tensor<32x64xf32>
  %y = linalg.generic {indexing_maps = [#rows, #row, #col, #rows], iterator_types = ["parallel", "parallel"]}
      ins(%x, %ss, %gamma : tensor<32x64xf32>, tensor<32xf32>, tensor<64xf32>) outs(%ye : tensor<32x64xf32>) {
  ^bb0(%v: f32, %s: f32, %g: f32, %out: f32):
    %mean = arith.mulf %inv_d, %s : f32
    %sh = arith.addf %eps, %mean : f32
    %sd = math.sqrt %sh : f32
    %n = arith.divf %v, %sd : f32
    %scaled = arith.mulf %g, %n : f32
    linalg.yield %scaled : f32
  } -> tensor<32x64xf32>
  %oe = tensor.empty() : tensor<32x40xf32>
  %o0 = linalg.fill ins(%zero : f32) outs(%oe : tensor<32x40xf32>) -> tensor<32x40xf32>
  %out = linalg.matmul ins(%y, %w : tensor<32x64xf32>, tensor<64x40xf32>) outs(%o0 : tensor<32x40xf32>) -> tensor<32x40xf32>
  return %out : tensor<32x40xf32>
}
