// expect: attention
// The scale applied to K before the scores (named batch_matmul products, K transposed by linalg.transpose).
#all = affine_map<(b, i, j) -> (b, i, j)>
#row = affine_map<(b, i, j) -> (b, i)>
func.func @attention(%q: tensor<2x28x16xf32>, %k: tensor<2x36x16xf32>, %v: tensor<2x36x16xf32>) -> tensor<2x28x16xf32> {
  %zero = arith.constant 0.0 : f32
  %ninf = arith.constant 0xFF800000 : f32
  %c = arith.constant 0.25 : f32
  %ke = tensor.empty() : tensor<2x36x16xf32>
  %ks = linalg.generic {indexing_maps = [#all, #all], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%k : tensor<2x36x16xf32>) outs(%ke : tensor<2x36x16xf32>) {
  ^bb0(%a: f32, %out: f32):
    %y = arith.mulf %a, %c : f32
    linalg.yield %y : f32
  } -> tensor<2x36x16xf32>
  %kte = tensor.empty() : tensor<2x16x36xf32>
  %kt = linalg.transpose ins(%ks : tensor<2x36x16xf32>) outs(%kte : tensor<2x16x36xf32>) permutation = [0, 2, 1]
  %se = tensor.empty() : tensor<2x28x36xf32>
  %s0 = linalg.fill ins(%zero : f32) outs(%se : tensor<2x28x36xf32>) -> tensor<2x28x36xf32>
  %s = linalg.batch_matmul ins(%q, %kt : tensor<2x28x16xf32>, tensor<2x16x36xf32>) outs(%s0 : tensor<2x28x36xf32>) -> tensor<2x28x36xf32>
  %re = tensor.empty() : tensor<2x28xf32>
  %m0 = linalg.fill ins(%ninf : f32) outs(%re : tensor<2x28xf32>) -> tensor<2x28xf32>
  %m = linalg.generic {indexing_maps = [#all, #row], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%s : tensor<2x28x36xf32>) outs(%m0 : tensor<2x28xf32>) {
  ^bb0(%a: f32, %acc: f32):
    %y = arith.maximumf %acc, %a : f32
    linalg.yield %y : f32
  } -> tensor<2x28xf32>
  %e = linalg.generic {indexing_maps = [#all, #row, #all], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%s, %m : tensor<2x28x36xf32>, tensor<2x28xf32>) outs(%se : tensor<2x28x36xf32>) {
  ^bb0(%a: f32, %mx: f32, %out: f32):
    %d = arith.subf %a, %mx : f32
    %z = math.exp %d : f32
    linalg.yield %z : f32
  } -> tensor<2x28x36xf32>
  %l0 = linalg.fill ins(%zero : f32) outs(%re : tensor<2x28xf32>) -> tensor<2x28xf32>
  %l = linalg.generic {indexing_maps = [#all, #row], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%e : tensor<2x28x36xf32>) outs(%l0 : tensor<2x28xf32>) {
  ^bb0(%a: f32, %acc: f32):
    %y = arith.addf %acc, %a : f32
    linalg.yield %y : f32
  } -> tensor<2x28xf32>
  %p = linalg.generic {indexing_maps = [#all, #row, #all], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%e, %l : tensor<2x28x36xf32>, tensor<2x28xf32>) outs(%se : tensor<2x28x36xf32>) {
  ^bb0(%a: f32, %b: f32, %out: f32):
    %y = arith.divf %a, %b : f32
    linalg.yield %y : f32
  } -> tensor<2x28x36xf32>
  %oe = tensor.empty() : tensor<2x28x16xf32>
  %o0 = linalg.fill ins(%zero : f32) outs(%oe : tensor<2x28x16xf32>) -> tensor<2x28x16xf32>
  %o = linalg.batch_matmul ins(%p, %v : tensor<2x28x36xf32>, tensor<2x36x16xf32>) outs(%o0 : tensor<2x28x16xf32>) -> tensor<2x28x16xf32>
  return %o : tensor<2x28x16xf32>
}
