// QK-norm attention scores with both gains folded into K and both row scales
// applied to the product: scores = (q @ (kt * gq * gk)) * sq[row] * sk[col].
// Same signature and results as ../qk_norm_scores.mlir.
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
  %kg_empty = tensor.empty() : tensor<16x128x1024xf32>
  %kg = linalg.generic {indexing_maps = [#id3, #mid3, #mid3, #id3], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%kt, %gq, %gk : tensor<16x128x1024xf32>, tensor<128xf32>, tensor<128xf32>) outs(%kg_empty : tensor<16x128x1024xf32>) {
  ^bb0(%x: f32, %g1: f32, %g2: f32, %o: f32):
    %a = arith.mulf %x, %g1 : f32
    %y = arith.mulf %a, %g2 : f32
    linalg.yield %y : f32
  } -> tensor<16x128x1024xf32>
  %raw_empty = tensor.empty() : tensor<16x128x1024xf32>
  %raw_zero = linalg.fill ins(%zero : f32) outs(%raw_empty : tensor<16x128x1024xf32>) -> tensor<16x128x1024xf32>
  %raw = linalg.batch_matmul ins(%q, %kg : tensor<16x128x128xf32>, tensor<16x128x1024xf32>)
      outs(%raw_zero : tensor<16x128x1024xf32>) -> tensor<16x128x1024xf32>
  %scores_empty = tensor.empty() : tensor<16x128x1024xf32>
  %scores = linalg.generic {indexing_maps = [#id3, #row3, #col3, #id3], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%raw, %sq, %sk : tensor<16x128x1024xf32>, tensor<16x128xf32>, tensor<16x1024xf32>) outs(%scores_empty : tensor<16x128x1024xf32>) {
  ^bb0(%x: f32, %a: f32, %b: f32, %o: f32):
    %r = arith.mulf %x, %a : f32
    %y = arith.mulf %r, %b : f32
    linalg.yield %y : f32
  } -> tensor<16x128x1024xf32>
  return %scores : tensor<16x128x1024xf32>
}
