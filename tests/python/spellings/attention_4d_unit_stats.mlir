// expect: attention
// Attention over (batch, heads, seq, d) tensors whose row max and row sum stay tensor<2x2x24x1xf32> (keepdims), read back through maps with a constant 0.
#q = affine_map<(b, h, i, j, k) -> (b, h, i, k)>
#k = affine_map<(b, h, i, j, k) -> (b, h, j, k)>
#s = affine_map<(b, h, i, j, k) -> (b, h, i, j)>
#id = affine_map<(b, h, i, j) -> (b, h, i, j)>
#row = affine_map<(b, h, i, j) -> (b, h, i, 0)>
#p = affine_map<(b, h, i, d, j) -> (b, h, i, j)>
#v = affine_map<(b, h, i, d, j) -> (b, h, j, d)>
#o = affine_map<(b, h, i, d, j) -> (b, h, i, d)>
func.func @attention(%q: tensor<2x2x24x16xf32>, %k: tensor<2x2x40x16xf32>, %v: tensor<2x2x40x16xf32>) -> tensor<2x2x24x16xf32> {
  %zero = arith.constant 0.0 : f32
  %lowest = arith.constant 0xFF800000 : f32
  %scale = arith.constant 0.25 : f32
  %se = tensor.empty() : tensor<2x2x24x40xf32>
  %s0 = linalg.fill ins(%zero : f32) outs(%se : tensor<2x2x24x40xf32>) -> tensor<2x2x24x40xf32>
  %scores = linalg.generic {indexing_maps = [#q, #k, #s], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]}
      ins(%q, %k : tensor<2x2x24x16xf32>, tensor<2x2x40x16xf32>) outs(%s0 : tensor<2x2x24x40xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %m = arith.mulf %a, %b : f32
    %r = arith.addf %acc, %m : f32
    linalg.yield %r : f32
  } -> tensor<2x2x24x40xf32>
  %re = tensor.empty() : tensor<2x2x24x1xf32>
  %m0 = linalg.fill ins(%lowest : f32) outs(%re : tensor<2x2x24x1xf32>) -> tensor<2x2x24x1xf32>
  %max = linalg.generic {indexing_maps = [#id, #row], iterator_types = ["parallel", "parallel", "parallel", "reduction"]}
      ins(%scores : tensor<2x2x24x40xf32>) outs(%m0 : tensor<2x2x24x1xf32>) {
  ^bb0(%x: f32, %acc: f32):
    %r = arith.maximumf %acc, %x : f32
    linalg.yield %r : f32
  } -> tensor<2x2x24x1xf32>
  %ee = tensor.empty() : tensor<2x2x24x40xf32>
  %e = linalg.generic {indexing_maps = [#id, #row, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%scores, %max : tensor<2x2x24x40xf32>, tensor<2x2x24x1xf32>) outs(%ee : tensor<2x2x24x40xf32>) {
  ^bb0(%x: f32, %mx: f32, %o: f32):
    %d = arith.subf %x, %mx : f32
    %t = arith.mulf %d, %scale : f32
    %r = math.exp %t : f32
    linalg.yield %r : f32
  } -> tensor<2x2x24x40xf32>
  %l0 = linalg.fill ins(%zero : f32) outs(%re : tensor<2x2x24x1xf32>) -> tensor<2x2x24x1xf32>
  %sum = linalg.generic {indexing_maps = [#id, #row], iterator_types = ["parallel", "parallel", "parallel", "reduction"]}
      ins(%e : tensor<2x2x24x40xf32>) outs(%l0 : tensor<2x2x24x1xf32>) {
  ^bb0(%x: f32, %acc: f32):
    %r = arith.addf %acc, %x : f32
    linalg.yield %r : f32
  } -> tensor<2x2x24x1xf32>
  %pe = tensor.empty() : tensor<2x2x24x40xf32>
  %p = linalg.generic {indexing_maps = [#id, #row, #id], iterator_types = ["parallel", "parallel", "parallel", "parallel"]}
      ins(%e, %sum : tensor<2x2x24x40xf32>, tensor<2x2x24x1xf32>) outs(%pe : tensor<2x2x24x40xf32>) {
  ^bb0(%x: f32, %l: f32, %o: f32):
    %r = arith.divf %x, %l : f32
    linalg.yield %r : f32
  } -> tensor<2x2x24x40xf32>
  %oe = tensor.empty() : tensor<2x2x24x16xf32>
  %o0 = linalg.fill ins(%zero : f32) outs(%oe : tensor<2x2x24x16xf32>) -> tensor<2x2x24x16xf32>
  %out = linalg.generic {indexing_maps = [#p, #v, #o], iterator_types = ["parallel", "parallel", "parallel", "parallel", "reduction"]}
      ins(%p, %v : tensor<2x2x24x40xf32>, tensor<2x2x40x16xf32>) outs(%o0 : tensor<2x2x24x16xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %m = arith.mulf %a, %b : f32
    %r = arith.addf %acc, %m : f32
    linalg.yield %r : f32
  } -> tensor<2x2x24x16xf32>
  return %out : tensor<2x2x24x16xf32>
}
