// expect: attention
// The scale applied inside the row maximum and again in the exponent: m = max(s*c), e = exp(s*c - m).
#qk = affine_map<(b, i, j, c) -> (b, i, c)>
#kk = affine_map<(b, i, j, c) -> (b, j, c)>
#ss = affine_map<(b, i, j, c) -> (b, i, j)>
#pv = affine_map<(b, i, e, j) -> (b, i, j)>
#vv = affine_map<(b, i, e, j) -> (b, j, e)>
#oo = affine_map<(b, i, e, j) -> (b, i, e)>
#all = affine_map<(b, i, j) -> (b, i, j)>
#row = affine_map<(b, i, j) -> (b, i)>
func.func @attention(%q: tensor<2x24x16xf32>, %k: tensor<2x40x16xf32>, %v: tensor<2x40x16xf32>) -> tensor<2x24x16xf32> {
  %zero = arith.constant 0.0 : f32
  %ninf = arith.constant 0xFF800000 : f32
  %c = arith.constant 0.25 : f32
  %se = tensor.empty() : tensor<2x24x40xf32>
  %s0 = linalg.fill ins(%zero : f32) outs(%se : tensor<2x24x40xf32>) -> tensor<2x24x40xf32>
  %s = linalg.generic {indexing_maps = [#qk, #kk, #ss], iterator_types = ["parallel", "parallel", "parallel", "reduction"]}
      ins(%q, %k : tensor<2x24x16xf32>, tensor<2x40x16xf32>) outs(%s0 : tensor<2x24x40xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %x = arith.mulf %a, %b : f32
    %y = arith.addf %acc, %x : f32
    linalg.yield %y : f32
  } -> tensor<2x24x40xf32>
  %re = tensor.empty() : tensor<2x24xf32>
  %m0 = linalg.fill ins(%ninf : f32) outs(%re : tensor<2x24xf32>) -> tensor<2x24xf32>
  %m = linalg.generic {indexing_maps = [#all, #row], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%s : tensor<2x24x40xf32>) outs(%m0 : tensor<2x24xf32>) {
  ^bb0(%a: f32, %acc: f32):
    %sc = arith.mulf %a, %c : f32
    %y = arith.maximumf %acc, %sc : f32
    linalg.yield %y : f32
  } -> tensor<2x24xf32>
  %e = linalg.generic {indexing_maps = [#all, #row, #all], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%s, %m : tensor<2x24x40xf32>, tensor<2x24xf32>) outs(%se : tensor<2x24x40xf32>) {
  ^bb0(%a: f32, %mx: f32, %out: f32):
    %sc = arith.mulf %a, %c : f32
    %d = arith.subf %sc, %mx : f32
    %z = math.exp %d : f32
    linalg.yield %z : f32
  } -> tensor<2x24x40xf32>
  %l0 = linalg.fill ins(%zero : f32) outs(%re : tensor<2x24xf32>) -> tensor<2x24xf32>
  %l = linalg.generic {indexing_maps = [#all, #row], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%e : tensor<2x24x40xf32>) outs(%l0 : tensor<2x24xf32>) {
  ^bb0(%a: f32, %acc: f32):
    %y = arith.addf %acc, %a : f32
    linalg.yield %y : f32
  } -> tensor<2x24xf32>
  %oe = tensor.empty() : tensor<2x24x16xf32>
  %o0 = linalg.fill ins(%zero : f32) outs(%oe : tensor<2x24x16xf32>) -> tensor<2x24x16xf32>
  %o = linalg.generic {indexing_maps = [#pv, #vv, #oo], iterator_types = ["parallel", "parallel", "parallel", "reduction"]}
      ins(%e, %v : tensor<2x24x40xf32>, tensor<2x40x16xf32>) outs(%o0 : tensor<2x24x16xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %x = arith.mulf %a, %b : f32
    %y = arith.addf %acc, %x : f32
    linalg.yield %y : f32
  } -> tensor<2x24x16xf32>
  %out = linalg.generic {indexing_maps = [#all, #row, #all], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%o, %l : tensor<2x24x16xf32>, tensor<2x24xf32>) outs(%oe : tensor<2x24x16xf32>) {
  ^bb0(%a: f32, %b: f32, %out0: f32):
    %y = arith.divf %a, %b : f32
    linalg.yield %y : f32
  } -> tensor<2x24x16xf32>
  return %out : tensor<2x24x16xf32>
}
