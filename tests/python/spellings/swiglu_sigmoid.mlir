// expect: swiglu
// silu as x * sigmoid(x), sigmoid(x) = 1 / (1 + exp(0 - x)), then times up, then the down product.
#id = affine_map<(i, j) -> (i, j)>
func.func @swiglu(%x: tensor<24x32xf32>, %wg: tensor<32x64xf32>, %wu: tensor<32x64xf32>, %wd: tensor<64x32xf32>) -> tensor<24x32xf32> {
  %zero = arith.constant 0.0 : f32
  %one = arith.constant 1.0 : f32
  %he = tensor.empty() : tensor<24x64xf32>
  %h0 = linalg.fill ins(%zero : f32) outs(%he : tensor<24x64xf32>) -> tensor<24x64xf32>
  %g = linalg.matmul ins(%x, %wg : tensor<24x32xf32>, tensor<32x64xf32>) outs(%h0 : tensor<24x64xf32>) -> tensor<24x64xf32>
  %u = linalg.matmul ins(%x, %wu : tensor<24x32xf32>, tensor<32x64xf32>) outs(%h0 : tensor<24x64xf32>) -> tensor<24x64xf32>
  %sig = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%g : tensor<24x64xf32>) outs(%he : tensor<24x64xf32>) {
  ^bb0(%a: f32, %out: f32):
    %n = arith.subf %zero, %a : f32
    %e = math.exp %n : f32
    %den = arith.addf %one, %e : f32
    %s = arith.divf %one, %den : f32
    linalg.yield %s : f32
  } -> tensor<24x64xf32>
  %h = linalg.generic {indexing_maps = [#id, #id, #id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%g, %sig, %u : tensor<24x64xf32>, tensor<24x64xf32>, tensor<24x64xf32>) outs(%he : tensor<24x64xf32>) {
  ^bb0(%a: f32, %s: f32, %b: f32, %out: f32):
    %silu = arith.mulf %a, %s : f32
    %p = arith.mulf %silu, %b : f32
    linalg.yield %p : f32
  } -> tensor<24x64xf32>
  %oe = tensor.empty() : tensor<24x32xf32>
  %o0 = linalg.fill ins(%zero : f32) outs(%oe : tensor<24x32xf32>) -> tensor<24x32xf32>
  %out = linalg.matmul ins(%h, %wd : tensor<24x64xf32>, tensor<64x32xf32>) outs(%o0 : tensor<24x32xf32>) -> tensor<24x32xf32>
  return %out : tensor<24x32xf32>
}
