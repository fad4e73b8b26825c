// The Q, K and V projections of one input, (n, d, kv) = (16, 4096, 1024).
func.func @qkv(%x: tensor<16x4096xf32>, %wq: tensor<4096x4096xf32>, %wk: tensor<4096x1024xf32>, %wv: tensor<4096x1024xf32>)
    -> (tensor<16x4096xf32>, tensor<16x1024xf32>, tensor<16x1024xf32>) {
  %zero = arith.constant 0.0 : f32
  %q_empty = tensor.empty() : tensor<16x4096xf32>
  %q_zero = linalg.fill ins(%zero : f32) outs(%q_empty : tensor<16x4096xf32>) -> tensor<16x4096xf32>
  %q = linalg.matmul ins(%x, %wq : tensor<16x4096xf32>, tensor<4096x4096xf32>)
      outs(%q_zero : tensor<16x4096xf32>) -> tensor<16x4096xf32>
  %k_empty = tensor.empty() : tensor<16x1024xf32>
  %k_zero = linalg.fill ins(%zero : f32) outs(%k_empty : tensor<16x1024xf32>) -> tensor<16x1024xf32>
  %k = linalg.matmul ins(%x, %wk : tensor<16x4096xf32>, tensor<4096x1024xf32>)
      outs(%k_zero : tensor<16x1024xf32>) -> tensor<16x1024xf32>
  %v_empty = tensor.empty() : tensor<16x1024xf32>
  %v_zero = linalg.fill ins(%zero : f32) outs(%v_empty : tensor<16x1024xf32>) -> tensor<16x1024xf32>
  %v = linalg.matmul ins(%x, %wv : tensor<16x4096xf32>, tensor<4096x1024xf32>)
      outs(%v_zero : tensor<16x1024xf32>) -> tensor<16x1024xf32>
  return %q, %k, %v : tensor<16x4096xf32>, tensor<16x1024xf32>, tensor<16x1024xf32>
}
