// RMSNorm followed by a projection, (n, d) = (16, 4096):
//   y = x * rsqrt(mean(x^2, axis=1) + 1e-6) * gamma;  out = y @ W  (W is d x d).
// The normalization is plain linalg.generic (a row reduction, then elementwise
// ops); only the matmul is a contraction that Prism lifts into a family.
#rows = affine_map<(i, j) -> (i, j)>
#row = affine_map<(i, j) -> (i)>
#col = affine_map<(i, j) -> (j)>
#vec = affine_map<(i) -> (i)>
func.func @rmsnorm_matmul(%x: tensor<16x4096xf32>, %gamma: tensor<4096xf32>, %w: tensor<4096x4096xf32>)
    -> tensor<16x4096xf32> {
  %zero = arith.constant 0.0 : f32
  %inv_d = arith.constant 2.44140625e-04 : f32  // 1 / 4096, exact in f32
  %eps = arith.constant 1.0e-06 : f32
  %row_empty = tensor.empty() : tensor<16xf32>
  %row_zero = linalg.fill ins(%zero : f32) outs(%row_empty : tensor<16xf32>) -> tensor<16xf32>
  %sum_sq = linalg.generic {indexing_maps = [#rows, #row], iterator_types = ["parallel", "reduction"]}
      ins(%x : tensor<16x4096xf32>) outs(%row_zero : tensor<16xf32>) {
  ^bb0(%v: f32, %acc: f32):
    %sq = arith.mulf %v, %v : f32
    %sum = arith.addf %acc, %sq : f32
    linalg.yield %sum : f32
  } -> tensor<16xf32>
  %scale = linalg.generic {indexing_maps = [#vec, #vec], iterator_types = ["parallel"]}
      ins(%sum_sq : tensor<16xf32>) outs(%row_empty : tensor<16xf32>) {
  ^bb0(%s: f32, %out: f32):
    %mean = arith.mulf %s, %inv_d : f32
    %shifted = arith.addf %mean, %eps : f32
    %r = math.rsqrt %shifted : f32
    linalg.yield %r : f32
  } -> tensor<16xf32>
  %y_empty = tensor.empty() : tensor<16x4096xf32>
  %y = linalg.generic {indexing_maps = [#rows, #row, #col, #rows], iterator_types = ["parallel", "parallel"]}
      ins(%x, %scale, %gamma : tensor<16x4096xf32>, tensor<16xf32>, tensor<4096xf32>)
      outs(%y_empty : tensor<16x4096xf32>) {
  ^bb0(%v: f32, %s: f32, %g: f32, %out: f32):
    %n = arith.mulf %v, %s : f32
    %scaled = arith.mulf %n, %g : f32
    linalg.yield %scaled : f32
  } -> tensor<16x4096xf32>
  %out_empty = tensor.empty() : tensor<16x4096xf32>
  %acc = linalg.fill ins(%zero : f32) outs(%out_empty : tensor<16x4096xf32>) -> tensor<16x4096xf32>
  %out = linalg.matmul ins(%y, %w : tensor<16x4096xf32>, tensor<4096x4096xf32>)
                       outs(%acc : tensor<16x4096xf32>) -> tensor<16x4096xf32>
  return %out : tensor<16x4096xf32>
}
