// expect: swiglu
// Gate and up products as linalg.generic contractions, silu(g) = g * (1 / (1 + exp(-g))) over two generics, then times up.
#xa = affine_map<(i, j, k) -> (i, k)>
#wb = affine_map<(i, j, k) -> (k, j)>
#cc = affine_map<(i, j, k) -> (i, j)>
#id = affine_map<(i, j) -> (i, j)>
func.func @swiglu(%x: tensor<16x40xf32>, %wg: tensor<40x56xf32>, %wu: tensor<40x56xf32>, %wd: tensor<56x40xf32>) -> tensor<16x40xf32> {
  %zero = arith.constant 0.0 : f32
  %one = arith.constant 1.0 : f32
  %he = tensor.empty() : tensor<16x56xf32>
  %h0 = linalg.fill ins(%zero : f32) outs(%he : tensor<16x56xf32>) -> tensor<16x56xf32>
  %g = linalg.generic {indexing_maps = [#xa, #wb, #cc], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%x, %wg : tensor<16x40xf32>, tensor<40x56xf32>) outs(%h0 : tensor<16x56xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %p = arith.mulf %a, %b : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  } -> tensor<16x56xf32>
  %u = linalg.generic {indexing_maps = [#xa, #wb, #cc], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%x, %wu : tensor<16x40xf32>, tensor<40x56xf32>) outs(%h0 : tensor<16x56xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %p = arith.mulf %a, %b : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  } -> tensor<16x56xf32>
  %sig = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%g : tensor<16x56xf32>) outs(%he : tensor<16x56xf32>) {
  ^bb0(%a: f32, %out: f32):
    %n = arith.negf %a : f32
    %e = math.exp %n : f32
    %den = arith.addf %one, %e : f32
    %s = arith.divf %one, %den : f32
    linalg.yield %s : f32
  } -> tensor<16x56xf32>
  %silu = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%g, %sig : tensor<16x56xf32>, tensor<16x56xf32>) outs(%he : tensor<16x56xf32>) {
  ^bb0(%a: f32, %s: f32, %out: f32):
    %y = arith.mulf %a, %s : f32
    linalg.yield %y : f32
  } -> tensor<16x56xf32>
  %h = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%silu, %u : tensor<16x56xf32>, tensor<16x56xf32>) outs(%he : tensor<16x56xf32>) {
  ^bb0(%a: f32, %b: f32, %out: f32):
    %y = arith.mulf %a, %b : f32
    linalg.yield %y : f32
  } -> tensor<16x56xf32>
  %oe = tensor.empty() : tensor<16x40xf32>
  %o0 = linalg.fill ins(%zero : f32) outs(%oe : tensor<16x40xf32>) -> tensor<16x40xf32>
  %out = linalg.matmul ins(%h, %wd : tensor<16x56xf32>, tensor<56x40xf32>) outs(%o0 : tensor<16x40xf32>) -> tensor<16x40xf32>
  return %out : tensor<16x40xf32>
}
