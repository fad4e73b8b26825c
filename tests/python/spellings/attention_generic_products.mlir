// expect: attention
// Products as linalg.generic over an explicit transpose of K, the row maximum from -FLT_MAX, exp(s*c - m*c).
#qk = affine_map<(b, i, j, c) -> (b, i, c)>
#kt = affine_map<(b, i, j, c) -> (b, c, j)>
#ss = affine_map<(b, i, j, c) -> (b, i, j)>
#pv = affine_map<(b, i, e, j) -> (b, i, j)>
#vv = affine_map<(b, i, e, j) -> (b, j, e)>
#oo = affine_map<(b, i, e, j) -> (b, i, e)>
#all = affine_map<(b, i, j) -> (b, i, j)>
#row = affine_map<(b, i, j) -> (b, i)>
func.func @attention(%q: tensor<2x40x16xf32>, %k: tensor<2x32x16xf32>, %v: tensor<2x32x16xf32>) -> tensor<2x40x16xf32> {
  %zero = arith.constant 0.0 : f32
  %lowest = arith.constant -3.40282347e+38 : f32
  %c = arith.constant 0.5 : f32
  %kte = tensor.empty() : tensor<2x16x32xf32>
  %ktr = linalg.transpose ins(%k : tensor<2x32x16xf32>) outs(%kte : tensor<2x16x32xf32>) permutation = [0, 2, 1]
  %se = tensor.empty() : tensor<2x40x32xf32>
  %s0 = linalg.fill ins(%zero : f32) outs(%se : tensor<2x40x32xf32>) -> tensor<2x40x32xf32>
  %s = linalg.generic {indexing_maps = [#qk, #kt, #ss], iterator_types = ["parallel", "parallel", "parallel", "reduction"]}
      ins(%q, %ktr : tensor<2x40x16xf32>, tensor<2x16x32xf32>) outs(%s0 : tensor<2x40x32xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %x = arith.mulf %a, %b : f32
    %y = arith.addf %acc, %x : f32
    linalg.yield %y : f32
  } -> tensor<2x40x32xf32>
  %re = tensor.empty() : tensor<2x40xf32>
  %m0 = linalg.fill ins(%lowest : f32) outs(%re : tensor<2x40xf32>) -> tensor<2x40xf32>
  %m = linalg.generic {indexing_maps = [#all, #row], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%s : tensor<2x40x32xf32>) outs(%m0 : tensor<2x40xf32>) {
  ^bb0(%a: f32, %acc: f32):
    %y = arith.maximumf %acc, %a : f32
    linalg.yield %y : f32
  } -> tensor<2x40xf32>
  %e = linalg.generic {indexing_maps = [#all, #row, #all], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%s, %m : tensor<2x40x32xf32>, tensor<2x40xf32>) outs(%se : tensor<2x40x32xf32>) {
  ^bb0(%a: f32, %mx: f32, %out: f32):
    %sa = arith.mulf %a, %c : f32
    %sm = arith.mulf %mx, %c : f32
    %d = arith.subf %sa, %sm : f32
    %z = math.exp %d : f32
    linalg.yield %z : f32
  } -> tensor<2x40x32xf32>
  %l0 = linalg.fill ins(%zero : f32) outs(%re : tensor<2x40xf32>) -> tensor<2x40xf32>
  %l = linalg.generic {indexing_maps = [#all, #row], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%e : tensor<2x40x32xf32>) outs(%l0 : tensor<2x40xf32>) {
  ^bb0(%a: f32, %acc: f32):
    %y = arith.addf %acc, %a : f32
    linalg.yield %y : f32
  } -> tensor<2x40xf32>
  %oe = tensor.empty() : tensor<2x40x16xf32>
  %o0 = linalg.fill ins(%zero : f32) outs(%oe : tensor<2x40x16xf32>) -> tensor<2x40x16xf32>
  %o = linalg.generic {indexing_maps = [#pv, #vv, #oo], iterator_types = ["parallel", "parallel", "parallel", "reduction"]}
      ins(%e, %v : tensor<2x40x32xf32>, tensor<2x32x16xf32>) outs(%o0 : tensor<2x40x16xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %x = arith.mulf %a, %b : f32
    %y = arith.addf %acc, %x : f32
    linalg.yield %y : f32
  } -> tensor<2x40x16xf32>
  %out = linalg.generic {indexing_maps = [#all, #row, #all], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%o, %l : tensor<2x40x16xf32>, tensor<2x40xf32>) outs(%oe : tensor<2x40x16xf32>) {
  ^bb0(%a: f32, %b: f32, %out0: f32):
    %y = arith.divf %a, %b : f32
    linalg.yield %y : f32
  } -> tensor<2x40x16xf32>
  return %out : tensor<2x40x16xf32>
}
