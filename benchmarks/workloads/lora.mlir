// LoRA, (n, d, rank) = (16, 4096, 16): out = x @ W + (x @ A) @ B.
func.func @lora(%x: tensor<16x4096xf32>, %w: tensor<4096x4096xf32>, %a: tensor<4096x16xf32>, %b: tensor<16x4096xf32>) -> tensor<16x4096xf32> {
  %zero = arith.constant 0.0 : f32
  %base_empty = tensor.empty() : tensor<16x4096xf32>
  %base_zero = linalg.fill ins(%zero : f32) outs(%base_empty : tensor<16x4096xf32>) -> tensor<16x4096xf32>
  %base = linalg.matmul ins(%x, %w : tensor<16x4096xf32>, tensor<4096x4096xf32>)
      outs(%base_zero : tensor<16x4096xf32>) -> tensor<16x4096xf32>
  %down_empty = tensor.empty() : tensor<16x16xf32>
  %down_zero = linalg.fill ins(%zero : f32) outs(%down_empty : tensor<16x16xf32>) -> tensor<16x16xf32>
  %down = linalg.matmul ins(%x, %a : tensor<16x4096xf32>, tensor<4096x16xf32>)
      outs(%down_zero : tensor<16x16xf32>) -> tensor<16x16xf32>
  %up_empty = tensor.empty() : tensor<16x4096xf32>
  %up_zero = linalg.fill ins(%zero : f32) outs(%up_empty : tensor<16x4096xf32>) -> tensor<16x4096xf32>
  %up = linalg.matmul ins(%down, %b : tensor<16x16xf32>, tensor<16x4096xf32>)
      outs(%up_zero : tensor<16x4096xf32>) -> tensor<16x4096xf32>
  %sum_empty = tensor.empty() : tensor<16x4096xf32>
  %sum = linalg.add ins(%base, %up : tensor<16x4096xf32>, tensor<16x4096xf32>) outs(%sum_empty : tensor<16x4096xf32>) -> tensor<16x4096xf32>
  return %sum : tensor<16x4096xf32>
}
