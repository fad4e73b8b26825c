// expect: attention
// Attention with Q scaled first by 1/sqrt(d), scores = Q K^T by a batch_matmul whose maps transpose K, linalg.softmax over the last axis, then P V.
#scaled = affine_map<(b, i, k) -> (b, i, k)>
#qa = affine_map<(b, i, j, k) -> (b, i, k)>
#kb = affine_map<(b, i, j, k) -> (b, j, k)>
#sc = affine_map<(b, i, j, k) -> (b, i, j)>
func.func @attention(%q: tensor<2x24x16xf32>, %k: tensor<2x40x16xf32>, %v: tensor<2x40x16xf32>) -> tensor<2x24x16xf32> {
  %zero = arith.constant 0.0 : f32
  %scale = arith.constant 0.25 : f32
  %qe = tensor.empty() : tensor<2x24x16xf32>
  %qs = linalg.generic {indexing_maps = [#scaled, #scaled], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%q : tensor<2x24x16xf32>) outs(%qe : tensor<2x24x16xf32>) {
  ^bb0(%x: f32, %o: f32):
    %r = arith.mulf %x, %scale : f32
    linalg.yield %r : f32
  } -> tensor<2x24x16xf32>
  %se = tensor.empty() : tensor<2x24x40xf32>
  %s0 = linalg.fill ins(%zero : f32) outs(%se : tensor<2x24x40xf32>) -> tensor<2x24x40xf32>
  %scores = linalg.batch_matmul indexing_maps = [#qa, #kb, #sc]
      ins(%qs, %k : tensor<2x24x16xf32>, tensor<2x40x16xf32>) outs(%s0 : tensor<2x24x40xf32>) -> tensor<2x24x40xf32>
  %pe = tensor.empty() : tensor<2x24x40xf32>
  %p = linalg.softmax dimension(2) ins(%scores : tensor<2x24x40xf32>) outs(%pe : tensor<2x24x40xf32>) -> tensor<2x24x40xf32>
  %oe = tensor.empty() : tensor<2x24x16xf32>
  %o0 = linalg.fill ins(%zero : f32) outs(%oe : tensor<2x24x16xf32>) -> tensor<2x24x16xf32>
  %out = linalg.batch_matmul ins(%p, %v : tensor<2x24x40xf32>, tensor<2x40x16xf32>) outs(%o0 : tensor<2x24x16xf32>) -> tensor<2x24x16xf32>
  return %out : tensor<2x24x16xf32>
}
