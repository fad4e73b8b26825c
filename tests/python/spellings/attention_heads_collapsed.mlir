// expect: attention
// Attention over (batch, heads, seq, d) tensors that the program itself collapses to (batch * heads, seq, d) at its start and expands back at its end.
#q = affine_map<(g, i, j, c) -> (g, i, c)>
#k = affine_map<(g, i, j, c) -> (g, j, c)>
#s = affine_map<(g, i, j, c) -> (g, i, j)>
#p = affine_map<(g, i, c, j) -> (g, i, j)>
#v = affine_map<(g, i, c, j) -> (g, j, c)>
#o = affine_map<(g, i, c, j) -> (g, i, c)>
#id = affine_map<(g, i, j) -> (g, i, j)>
#row = affine_map<(g, i, j) -> (g, i)>
func.func @attention(%q4: tensor<1x2x5x64xf32>, %k4: tensor<1x2x37x64xf32>, %v4: tensor<1x2x37x64xf32>) -> tensor<1x2x5x64xf32> {
  %zero = arith.constant 0.0 : f32
  %lowest = arith.constant 0xFF800000 : f32
  %scale = arith.constant 0.125 : f32
  %q = tensor.collapse_shape %q4 [[0, 1], [2], [3]] : tensor<1x2x5x64xf32> into tensor<2x5x64xf32>
  %k = tensor.collapse_shape %k4 [[0, 1], [2], [3]] : tensor<1x2x37x64xf32> into tensor<2x37x64xf32>
  %v = tensor.collapse_shape %v4 [[0, 1], [2], [3]] : tensor<1x2x37x64xf32> into tensor<2x37x64xf32>
  %se = tensor.empty() : tensor<2x5x37xf32>
  %s0 = linalg.fill ins(%zero : f32) outs(%se : tensor<2x5x37xf32>) -> tensor<2x5x37xf32>
  %scores = linalg.generic {indexing_maps = [#q, #k, #s], iterator_types = ["parallel", "parallel", "parallel", "reduction"]}
      ins(%q, %k : tensor<2x5x64xf32>, tensor<2x37x64xf32>) outs(%s0 : tensor<2x5x37xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %m = arith.mulf %a, %b : f32
    %r = arith.addf %acc, %m : f32
    linalg.yield %r : f32
  } -> tensor<2x5x37xf32>
  %re = tensor.empty() : tensor<2x5xf32>
  %m0 = linalg.fill ins(%lowest : f32) outs(%re : tensor<2x5xf32>) -> tensor<2x5xf32>
  %max = linalg.generic {indexing_maps = [#id, #row], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%scores : tensor<2x5x37xf32>) outs(%m0 : tensor<2x5xf32>) {
  ^bb0(%x: f32, %acc: f32):
    %r = arith.maximumf %acc, %x : f32
    linalg.yield %r : f32
  } -> tensor<2x5xf32>
  %ee = tensor.empty() : tensor<2x5x37xf32>
  %e = linalg.generic {indexing_maps = [#id, #row, #id], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%scores, %max : tensor<2x5x37xf32>, tensor<2x5xf32>) outs(%ee : tensor<2x5x37xf32>) {
  ^bb0(%x: f32, %mx: f32, %o: f32):
    %d = arith.subf %x, %mx : f32
    %t = arith.mulf %d, %scale : f32
    %r = math.exp %t : f32
    linalg.yield %r : f32
  } -> tensor<2x5x37xf32>
  %l0 = linalg.fill ins(%zero : f32) outs(%re : tensor<2x5xf32>) -> tensor<2x5xf32>
  %sum = linalg.generic {indexing_maps = [#id, #row], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%e : tensor<2x5x37xf32>) outs(%l0 : tensor<2x5xf32>) {
  ^bb0(%x: f32, %acc: f32):
    %r = arith.addf %acc, %x : f32
    linalg.yield %r : f32
  } -> tensor<2x5xf32>
  %oe = tensor.empty() : tensor<2x5x64xf32>
  %o0 = linalg.fill ins(%zero : f32) outs(%oe : tensor<2x5x64xf32>) -> tensor<2x5x64xf32>
  %pv = linalg.generic {indexing_maps = [#p, #v, #o], iterator_types = ["parallel", "parallel", "parallel", "reduction"]}
      ins(%e, %v : tensor<2x5x37xf32>, tensor<2x37x64xf32>) outs(%o0 : tensor<2x5x64xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %m = arith.mulf %a, %b : f32
    %r = arith.addf %acc, %m : f32
    linalg.yield %r : f32
  } -> tensor<2x5x64xf32>
  %de = tensor.empty() : tensor<2x5x64xf32>
  %out = linalg.generic {indexing_maps = [#id, #row, #id], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%pv, %sum : tensor<2x5x64xf32>, tensor<2x5xf32>) outs(%de : tensor<2x5x64xf32>) {
  ^bb0(%x: f32, %l: f32, %o: f32):
    %r = arith.divf %x, %l : f32
    linalg.yield %r : f32
  } -> tensor<2x5x64xf32>
  %o4 = tensor.expand_shape %out [[0, 1], [2], [3]] output_shape [1, 2, 5, 64] : tensor<2x5x64xf32> into tensor<1x2x5x64xf32>
  return %o4 : tensor<1x2x5x64xf32>
}
