// expect: rmsnorm
// RMSNorm + linear in named ops: linalg.mul for x*x, linalg.reduce, linalg.broadcast of the row statistic, linalg.div, linalg.mul by a broadcast gamma, then linalg.matmul.
func.func @rmsnorm_linear(%x: tensor<24x64xf32>, %gamma: tensor<64xf32>, %w: tensor<64x32xf32>) -> tensor<24x32xf32> {
  %zero = arith.constant 0.0 : f32
  %d = arith.constant 64.0 : f32
  %eps = arith.constant 1.0e-05 : f32
  %xe = tensor.empty() : tensor<24x64xf32>
  %sq = linalg.mul ins(%x, %x : tensor<24x64xf32>, tensor<24x64xf32>) outs(%xe : tensor<24x64xf32>) -> tensor<24x64xf32>
  %re = tensor.empty() : tensor<24xf32>
  %s0 = linalg.fill ins(%zero : f32) outs(%re : tensor<24xf32>) -> tensor<24xf32>
  %ss = linalg.reduce ins(%sq : tensor<24x64xf32>) outs(%s0 : tensor<24xf32>) dimensions = [1]
    (%a: f32, %acc: f32) {
      %r = arith.addf %a, %acc : f32
      linalg.yield %r : f32
    }
  %dv = linalg.fill ins(%d : f32) outs(%re : tensor<24xf32>) -> tensor<24xf32>
  %mean = linalg.div ins(%ss, %dv : tensor<24xf32>, tensor<24xf32>) outs(%re : tensor<24xf32>) -> tensor<24xf32>
  %ev = linalg.fill ins(%eps : f32) outs(%re : tensor<24xf32>) -> tensor<24xf32>
  %shifted = linalg.add ins(%mean, %ev : tensor<24xf32>, tensor<24xf32>) outs(%re : tensor<24xf32>) -> tensor<24xf32>
  %rms = linalg.sqrt ins(%shifted : tensor<24xf32>) outs(%re : tensor<24xf32>) -> tensor<24xf32>
  %rb = linalg.broadcast ins(%rms : tensor<24xf32>) outs(%xe : tensor<24x64xf32>) dimensions = [1]
  %n = linalg.div ins(%x, %rb : tensor<24x64xf32>, tensor<24x64xf32>) outs(%xe : tensor<24x64xf32>) -> tensor<24x64xf32>
  %gb = linalg.broadcast ins(%gamma : tensor<64xf32>) outs(%xe : tensor<24x64xf32>) dimensions = [0]
  %y = linalg.mul ins(%n, %gb : tensor<24x64xf32>, tensor<24x64xf32>) outs(%xe : tensor<24x64xf32>) -> tensor<24x64xf32>
  %oe = tensor.empty() : tensor<24x32xf32>
  %o0 = linalg.fill ins(%zero : f32) outs(%oe : tensor<24x32xf32>) -> tensor<24x32xf32>
  %out = linalg.matmul ins(%y, %w : tensor<24x64xf32>, tensor<64x32xf32>) outs(%o0 : tensor<24x32xf32>) -> tensor<24x32xf32>
  return %out : tensor<24x32xf32>
}
