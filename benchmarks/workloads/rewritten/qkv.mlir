// Q, K and V as one GEMM over the concatenated weights [Wq | Wk | Wv], sliced apart.
// Same signature and results as ../qkv.mlir.
func.func @qkv(%x: tensor<16x4096xf32>, %wq: tensor<4096x4096xf32>, %wk: tensor<4096x1024xf32>, %wv: tensor<4096x1024xf32>)
    -> (tensor<16x4096xf32>, tensor<16x1024xf32>, tensor<16x1024xf32>) {
  %zero = arith.constant 0.0 : f32
  %w = tensor.concat dim(1) %wq, %wk, %wv : (tensor<4096x4096xf32>, tensor<4096x1024xf32>, tensor<4096x1024xf32>) -> tensor<4096x6144xf32>
  %s_empty = tensor.empty() : tensor<16x6144xf32>
  %s_zero = linalg.fill ins(%zero : f32) outs(%s_empty : tensor<16x6144xf32>) -> tensor<16x6144xf32>
  %s = linalg.matmul ins(%x, %w : tensor<16x4096xf32>, tensor<4096x6144xf32>)
      outs(%s_zero : tensor<16x6144xf32>) -> tensor<16x6144xf32>
  %q = tensor.extract_slice %s[0, 0] [16, 4096] [1, 1] : tensor<16x6144xf32> to tensor<16x4096xf32>
  %k = tensor.extract_slice %s[0, 4096] [16, 1024] [1, 1] : tensor<16x6144xf32> to tensor<16x1024xf32>
  %v = tensor.extract_slice %s[0, 5120] [16, 1024] [1, 1] : tensor<16x6144xf32> to tensor<16x1024xf32>
  return %q, %k, %v : tensor<16x4096xf32>, tensor<16x1024xf32>, tensor<16x1024xf32>
}
