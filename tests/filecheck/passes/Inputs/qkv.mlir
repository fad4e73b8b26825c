// The Q, K and V projections of one input, as three GEMMs: the original that
// verify.mlir and verify-invalid.mlir are proven against.
func.func @qkv(%x: tensor<16x64xf32>, %wq: tensor<64x64xf32>, %wk: tensor<64x32xf32>, %wv: tensor<64x32xf32>)
    -> (tensor<16x64xf32>, tensor<16x32xf32>, tensor<16x32xf32>) {
  %zero = arith.constant 0.0 : f32
  %e0 = tensor.empty() : tensor<16x64xf32>
  %f0 = linalg.fill ins(%zero : f32) outs(%e0 : tensor<16x64xf32>) -> tensor<16x64xf32>
  %q = linalg.matmul ins(%x, %wq : tensor<16x64xf32>, tensor<64x64xf32>) outs(%f0 : tensor<16x64xf32>) -> tensor<16x64xf32>
  %e1 = tensor.empty() : tensor<16x32xf32>
  %f1 = linalg.fill ins(%zero : f32) outs(%e1 : tensor<16x32xf32>) -> tensor<16x32xf32>
  %k = linalg.matmul ins(%x, %wk : tensor<16x64xf32>, tensor<64x32xf32>) outs(%f1 : tensor<16x32xf32>) -> tensor<16x32xf32>
  %v = linalg.matmul ins(%x, %wv : tensor<16x64xf32>, tensor<64x32xf32>) outs(%f1 : tensor<16x32xf32>) -> tensor<16x32xf32>
  return %q, %k, %v : tensor<16x64xf32>, tensor<16x32xf32>, tensor<16x32xf32>
}
