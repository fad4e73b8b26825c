// LoRA merged into one GEMM on the activations: out = x @ (W + A @ B).
// Same signature and results as ../lora.mlir.
func.func @lora(%x: tensor<16x4096xf32>, %w: tensor<4096x4096xf32>, %a: tensor<4096x16xf32>, %b: tensor<16x4096xf32>) -> tensor<16x4096xf32> {
  %zero = arith.constant 0.0 : f32
  %ab_empty = tensor.empty() : tensor<4096x4096xf32>
  %ab_zero = linalg.fill ins(%zero : f32) outs(%ab_empty : tensor<4096x4096xf32>) -> tensor<4096x4096xf32>
  %ab = linalg.matmul ins(%a, %b : tensor<4096x16xf32>, tensor<16x4096xf32>)
      outs(%ab_zero : tensor<4096x4096xf32>) -> tensor<4096x4096xf32>
  %merged_empty = tensor.empty() : tensor<4096x4096xf32>
  %merged = linalg.add ins(%w, %ab : tensor<4096x4096xf32>, tensor<4096x4096xf32>) outs(%merged_empty : tensor<4096x4096xf32>) -> tensor<4096x4096xf32>
  %out_empty = tensor.empty() : tensor<16x4096xf32>
  %out_zero = linalg.fill ins(%zero : f32) outs(%out_empty : tensor<16x4096xf32>) -> tensor<16x4096xf32>
  %out = linalg.matmul ins(%x, %merged : tensor<16x4096xf32>, tensor<4096x4096xf32>)
      outs(%out_zero : tensor<16x4096xf32>) -> tensor<16x4096xf32>
  return %out : tensor<16x4096xf32>
}
