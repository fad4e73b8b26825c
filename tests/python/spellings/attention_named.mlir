// expect: attention
// Attention in named ops: K transposed by linalg.transpose, linalg.batch_matmul scores, linalg.reduce max and sum, linalg.sub/exp/div with linalg.broadcast'ed statistics.
func.func @attention(%q: tensor<2x24x16xf32>, %k: tensor<2x40x16xf32>, %v: tensor<2x40x16xf32>) -> tensor<2x24x16xf32> {
  %zero = arith.constant 0.0 : f32
  %lowest = arith.constant 0xFF800000 : f32
  %quarter = arith.constant 0.25 : f32
  %kte = tensor.empty() : tensor<2x16x40xf32>
  %kt = linalg.transpose ins(%k : tensor<2x40x16xf32>) outs(%kte : tensor<2x16x40xf32>) permutation = [0, 2, 1]
  %se = tensor.empty() : tensor<2x24x40xf32>
  %s0 = linalg.fill ins(%zero : f32) outs(%se : tensor<2x24x40xf32>) -> tensor<2x24x40xf32>
  %raw = linalg.batch_matmul ins(%q, %kt : tensor<2x24x16xf32>, tensor<2x16x40xf32>) outs(%s0 : tensor<2x24x40xf32>) -> tensor<2x24x40xf32>
  %scale = linalg.fill ins(%quarter : f32) outs(%se : tensor<2x24x40xf32>) -> tensor<2x24x40xf32>
  %scores = linalg.mul ins(%raw, %scale : tensor<2x24x40xf32>, tensor<2x24x40xf32>) outs(%se : tensor<2x24x40xf32>) -> tensor<2x24x40xf32>
  %re = tensor.empty() : tensor<2x24xf32>
  %m0 = linalg.fill ins(%lowest : f32) outs(%re : tensor<2x24xf32>) -> tensor<2x24xf32>
  %max = linalg.reduce ins(%scores : tensor<2x24x40xf32>) outs(%m0 : tensor<2x24xf32>) dimensions = [2]
    (%x: f32, %acc: f32) {
      %r = arith.maximumf %x, %acc : f32
      linalg.yield %r : f32
    }
  %mb = linalg.broadcast ins(%max : tensor<2x24xf32>) outs(%se : tensor<2x24x40xf32>) dimensions = [2]
  %d = linalg.sub ins(%scores, %mb : tensor<2x24x40xf32>, tensor<2x24x40xf32>) outs(%se : tensor<2x24x40xf32>) -> tensor<2x24x40xf32>
  %e = linalg.exp ins(%d : tensor<2x24x40xf32>) outs(%se : tensor<2x24x40xf32>) -> tensor<2x24x40xf32>
  %l0 = linalg.fill ins(%zero : f32) outs(%re : tensor<2x24xf32>) -> tensor<2x24xf32>
  %sum = linalg.reduce ins(%e : tensor<2x24x40xf32>) outs(%l0 : tensor<2x24xf32>) dimensions = [2]
    (%x: f32, %acc: f32) {
      %r = arith.addf %x, %acc : f32
      linalg.yield %r : f32
    }
  %lb = linalg.broadcast ins(%sum : tensor<2x24xf32>) outs(%se : tensor<2x24x40xf32>) dimensions = [2]
  %p = linalg.div ins(%e, %lb : tensor<2x24x40xf32>, tensor<2x24x40xf32>) outs(%se : tensor<2x24x40xf32>) -> tensor<2x24x40xf32>
  %oe = tensor.empty() : tensor<2x24x16xf32>
  %o0 = linalg.fill ins(%zero : f32) outs(%oe : tensor<2x24x16xf32>) -> tensor<2x24x16xf32>
  %out = linalg.batch_matmul ins(%p, %v : tensor<2x24x40xf32>, tensor<2x40x16xf32>) outs(%o0 : tensor<2x24x16xf32>) -> tensor<2x24x16xf32>
  return %out : tensor<2x24x16xf32>
}
