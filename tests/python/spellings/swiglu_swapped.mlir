// expect: swiglu
// up * silu(gate), silu(g) = g / (1 + exp(-g)) in a generic of its own, the product's operands swapped.
#id = affine_map<(i, j) -> (i, j)>
func.func @swiglu(%x: tensor<32x48xf32>, %wg: tensor<48x40xf32>, %wu: tensor<48x40xf32>, %wd: tensor<40x48xf32>) -> tensor<32x48xf32> {
  %zero = arith.constant 0.0 : f32
  %one = arith.constant 1.0 : f32
  %he = tensor.empty() : tensor<32x40xf32>
  %h0 = linalg.fill ins(%zero : f32) outs(%he : tensor<32x40xf32>) -> tensor<32x40xf32>
  %u = linalg.matmul ins(%x, %wu : tensor<32x48xf32>, tensor<48x40xf32>) outs(%h0 : tensor<32x40xf32>) -> tensor<32x40xf32>
  %g = linalg.matmul ins(%x, %wg : tensor<32x48xf32>, tensor<48x40xf32>) outs(%h0 : tensor<32x40xf32>) -> tensor<32x40xf32>
  %silu = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%g : tensor<32x40xf32>) outs(%he : tensor<32x40xf32>) {
  ^bb0(%a: f32, %out: f32):
    %n = arith.negf %a : f32
    %e = math.exp %n : f32
    %den = arith.addf %e, %one : f32
    %s = arith.divf %a, %den : f32
    linalg.yield %s : f32
  } -> tensor<32x40xf32>
  %h = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%u, %silu : tensor<32x40xf32>, tensor<32x40xf32>) outs(%he : tensor<32x40xf32>) {
  ^bb0(%b: f32, %s: f32, %out: f32):
    %p = arith.mulf %b, %s : f32
    linalg.yield %p : f32
  } -> tensor<32x40xf32>
  %oe = tensor.empty() : tensor<32x48xf32>
  %o0 = linalg.fill ins(%zero : f32) outs(%oe : tensor<32x48xf32>) -> tensor<32x48xf32>
  %out = linalg.matmul ins(%h, %wd : tensor<32x40xf32>, tensor<40x48xf32>) outs(%o0 : tensor<32x48xf32>) -> tensor<32x48xf32>
  return %out : tensor<32x48xf32>
}
