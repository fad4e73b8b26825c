// The Q, K and V projections of one input, (n, d, kv) = (16, 2048, 512). The
// weights are marked invariant (the same on every call), so prism-explore may
// prepare them once: here it concatenates them into one [2048, 3072] weight
// in @qkv_prepare, and @qkv_apply computes all three projections with one GEMM.
func.func @qkv(%x: tensor<16x2048xf32>, %wq: tensor<2048x2048xf32> {prism.invariant},
               %wk: tensor<2048x512xf32> {prism.invariant}, %wv: tensor<2048x512xf32> {prism.invariant})
    -> (tensor<16x2048xf32>, tensor<16x512xf32>, tensor<16x512xf32>) {
  %zero = arith.constant 0.0 : f32
  %q_empty = tensor.empty() : tensor<16x2048xf32>
  %q_zero = linalg.fill ins(%zero : f32) outs(%q_empty : tensor<16x2048xf32>) -> tensor<16x2048xf32>
  %q = linalg.matmul ins(%x, %wq : tensor<16x2048xf32>, tensor<2048x2048xf32>)
      outs(%q_zero : tensor<16x2048xf32>) -> tensor<16x2048xf32>
  %kv_empty = tensor.empty() : tensor<16x512xf32>
  %kv_zero = linalg.fill ins(%zero : f32) outs(%kv_empty : tensor<16x512xf32>) -> tensor<16x512xf32>
  %k = linalg.matmul ins(%x, %wk : tensor<16x2048xf32>, tensor<2048x512xf32>)
      outs(%kv_zero : tensor<16x512xf32>) -> tensor<16x512xf32>
  %v = linalg.matmul ins(%x, %wv : tensor<16x2048xf32>, tensor<2048x512xf32>)
      outs(%kv_zero : tensor<16x512xf32>) -> tensor<16x512xf32>
  return %q, %k, %v : tensor<16x2048xf32>, tensor<16x512xf32>, tensor<16x512xf32>
}
