// RMSNorm + matmul with the row scale moved after the matmul and gamma folded
// into the weights: out = (x @ (gamma * W)) * rsqrt(mean(x^2) + eps), with
// gamma scaling W's rows. Same signature and results as ../rmsnorm_matmul.mlir.
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
  %w_empty = tensor.empty() : tensor<4096x4096xf32>
  %wg = linalg.generic {indexing_maps = [#rows, #row, #rows], iterator_types = ["parallel", "parallel"]}
      ins(%w, %gamma : tensor<4096x4096xf32>, tensor<4096xf32>) outs(%w_empty : tensor<4096x4096xf32>) {
  ^bb0(%v: f32, %g: f32, %out: f32):
    %p = arith.mulf %v, %g : f32
    linalg.yield %p : f32
  } -> tensor<4096x4096xf32>
  %out_empty = tensor.empty() : tensor<16x4096xf32>
  %acc = linalg.fill ins(%zero : f32) outs(%out_empty : tensor<16x4096xf32>) -> tensor<16x4096xf32>
  %product = linalg.matmul ins(%x, %wg : tensor<16x4096xf32>, tensor<4096x4096xf32>)
                           outs(%acc : tensor<16x4096xf32>) -> tensor<16x4096xf32>
  %out = linalg.generic {indexing_maps = [#rows, #row, #rows], iterator_types = ["parallel", "parallel"]}
      ins(%product, %scale : tensor<16x4096xf32>, tensor<16xf32>) outs(%out_empty : tensor<16x4096xf32>) {
  ^bb0(%v: f32, %s: f32, %o: f32):
    %p = arith.mulf %v, %s : f32
    linalg.yield %p : f32
  } -> tensor<16x4096xf32>
  return %out : tensor<16x4096xf32>
}
