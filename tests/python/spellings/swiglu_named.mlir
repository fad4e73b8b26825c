// expect: swiglu
// SwiGLU MLP: gate and up by linalg.matmul, silu as named ops (linalg.negf, linalg.exp, linalg.add of a filled ones tensor, linalg.div), times up, then the down projection.
func.func @swiglu(%x: tensor<24x32xf32>, %wg: tensor<32x64xf32>, %wu: tensor<32x64xf32>, %wd: tensor<64x32xf32>) -> tensor<24x32xf32> {
  %zero = arith.constant 0.0 : f32
  %one = arith.constant 1.0 : f32
  %he = tensor.empty() : tensor<24x64xf32>
  %h0 = linalg.fill ins(%zero : f32) outs(%he : tensor<24x64xf32>) -> tensor<24x64xf32>
  %g = linalg.matmul ins(%x, %wg : tensor<24x32xf32>, tensor<32x64xf32>) outs(%h0 : tensor<24x64xf32>) -> tensor<24x64xf32>
  %u = linalg.matmul ins(%x, %wu : tensor<24x32xf32>, tensor<32x64xf32>) outs(%h0 : tensor<24x64xf32>) -> tensor<24x64xf32>
  %ng = linalg.negf ins(%g : tensor<24x64xf32>) outs(%he : tensor<24x64xf32>) -> tensor<24x64xf32>
  %e = linalg.exp ins(%ng : tensor<24x64xf32>) outs(%he : tensor<24x64xf32>) -> tensor<24x64xf32>
  %ones = linalg.fill ins(%one : f32) outs(%he : tensor<24x64xf32>) -> tensor<24x64xf32>
  %den = linalg.add ins(%e, %ones : tensor<24x64xf32>, tensor<24x64xf32>) outs(%he : tensor<24x64xf32>) -> tensor<24x64xf32>
  %silu = linalg.div ins(%g, %den : tensor<24x64xf32>, tensor<24x64xf32>) outs(%he : tensor<24x64xf32>) -> tensor<24x64xf32>
  %h = linalg.mul ins(%silu, %u : tensor<24x64xf32>, tensor<24x64xf32>) outs(%he : tensor<24x64xf32>) -> tensor<24x64xf32>
  %oe = tensor.empty() : tensor<24x32xf32>
  %o0 = linalg.fill ins(%zero : f32) outs(%oe : tensor<24x32xf32>) -> tensor<24x32xf32>
  %out = linalg.matmul ins(%h, %wd : tensor<24x64xf32>, tensor<64x32xf32>) outs(%o0 : tensor<24x32xf32>) -> tensor<24x32xf32>
  return %out : tensor<24x32xf32>
}
