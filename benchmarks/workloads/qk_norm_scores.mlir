// QK-norm attention scores, (b*h, q, kv, d) = (16, 128, 1024, 128), K given transposed:
//   scores = rmsnorm(q, gq) @ rmsnorm_over_d(kt, gk), each normalized over d with its own gain.
#id3 = affine_map<(b, i, j) -> (b, i, j)>
#id2 = affine_map<(b, i) -> (b, i)>
#row3 = affine_map<(b, i, j) -> (b, i)>
#col3 = affine_map<(b, i, j) -> (b, j)>
#last3 = affine_map<(b, i, j) -> (j)>
#mid3 = affine_map<(b, i, j) -> (i)>
func.func @qk_norm_scores(%q: tensor<16x128x128xf32>, %kt: tensor<16x128x1024xf32>, %gq: tensor<128xf32>, %gk: tensor<128xf32>) -> tensor<16x128x1024xf32> {
  %zero = arith.constant 0.0 : f32
  %inv_d = arith.constant 0.0078125 : f32
  %eps = arith.constant 1.0e-06 : f32
  %sq_empty = tensor.empty() : tensor<16x128xf32>
  %sk_empty = tensor.empty() : tensor<16x1024xf32>
  %sq_zero = linalg.fill ins(%zero : f32) outs(%sq_empty : tensor<16x128xf32>) -> tensor<16x128xf32>
  %sq_ss = linalg.generic {indexing_maps = [#id3, #row3], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%q : tensor<16x128x128xf32>) outs(%sq_zero : tensor<16x128xf32>) {
  ^bb0(%x: f32, %acc: f32):
    %square = arith.mulf %x, %x : f32
    %sum = arith.addf %acc, %square : f32
    linalg.yield %sum : f32
  } -> tensor<16x128xf32>
  %sq = linalg.generic {indexing_maps = [#id2, #id2], iterator_types = ["parallel", "parallel"]}
      ins(%sq_ss : tensor<16x128xf32>) outs(%sq_empty : tensor<16x128xf32>) {
  ^bb0(%s: f32, %o: f32):
    %mean = arith.mulf %s, %inv_d : f32
    %shifted = arith.addf %mean, %eps : f32
    %r = math.rsqrt %shifted : f32
    linalg.yield %r : f32
  } -> tensor<16x128xf32>
  %sk_zero = linalg.fill ins(%zero : f32) outs(%sk_empty : tensor<16x1024xf32>) -> tensor<16x1024xf32>
  %sk_ss = linalg.generic {indexing_maps = [#id3, #col3], iterator_types = ["parallel", "reduction", "parallel"]}
      ins(%kt : tensor<16x128x1024xf32>) outs(%sk_zero : tensor<16x1024xf32>) {
  ^bb0(%x: f32, %acc: f32):
    %square = arith.mulf %x, %x : f32
    %sum = arith.addf %acc, %square : f32
    linalg.yield %sum : f32
  } -> tensor<16x1024xf32>
  %sk = linalg.generic {indexing_maps = [#id2, #id2], iterator_types = ["parallel", "parallel"]}
      ins(%sk_ss : tensor<16x1024xf32>) outs(%sk_empty : tensor<16x1024xf32>) {
  ^bb0(%s: f32, %o: f32):
    %mean = arith.mulf %s, %inv_d : f32
    %shifted = arith.addf %mean, %eps : f32
    %r = math.rsqrt %shifted : f32
    linalg.yield %r : f32
  } -> tensor<16x1024xf32>
  %qn_empty = tensor.empty() : tensor<16x128x128xf32>
  %qn = linalg.generic {indexing_maps = [#id3, #row3, #last3, #id3], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%q, %sq, %gq : tensor<16x128x128xf32>, tensor<16x128xf32>, tensor<128xf32>) outs(%qn_empty : tensor<16x128x128xf32>) {
  ^bb0(%x: f32, %s: f32, %g: f32, %o: f32):
    %n = arith.mulf %x, %s : f32
    %y = arith.mulf %n, %g : f32
    linalg.yield %y : f32
  } -> tensor<16x128x128xf32>
  %kn_empty = tensor.empty() : tensor<16x128x1024xf32>
  %kn = linalg.generic {indexing_maps = [#id3, #col3, #mid3, #id3], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%kt, %sk, %gk : tensor<16x128x1024xf32>, tensor<16x1024xf32>, tensor<128xf32>) outs(%kn_empty : tensor<16x128x1024xf32>) {
  ^bb0(%x: f32, %s: f32, %g: f32, %o: f32):
    %n = arith.mulf %x, %s : f32
    %y = arith.mulf %n, %g : f32
    linalg.yield %y : f32
  } -> tensor<16x128x1024xf32>
  %scores_empty = tensor.empty() : tensor<16x128x1024xf32>
  %scores_zero = linalg.fill ins(%zero : f32) outs(%scores_empty : tensor<16x128x1024xf32>) -> tensor<16x128x1024xf32>
  %scores = linalg.batch_matmul ins(%qn, %kn : tensor<16x128x128xf32>, tensor<16x128x1024xf32>)
      outs(%scores_zero : tensor<16x128x1024xf32>) -> tensor<16x128x1024xf32>
  return %scores : tensor<16x128x1024xf32>
}
