// Batched attention scores: 8 heads of (128 x 64) x (64 x 256).
func.func @scores(%q: tensor<8x128x64xf32>, %k: tensor<8x64x256xf32>) -> tensor<8x128x256xf32> {
  %zero = arith.constant 0.0 : f32
  %empty = tensor.empty() : tensor<8x128x256xf32>
  %acc = linalg.fill ins(%zero : f32) outs(%empty : tensor<8x128x256xf32>) -> tensor<8x128x256xf32>
  %s = linalg.batch_matmul ins(%q, %k : tensor<8x128x64xf32>, tensor<8x64x256xf32>)
                           outs(%acc : tensor<8x128x256xf32>) -> tensor<8x128x256xf32>
  return %s : tensor<8x128x256xf32>
}
