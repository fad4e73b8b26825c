// A projection with a dynamic number of rows (tokens), M in [1, 8192]:
// f16 inputs, f32 accumulation, K = N = 4096. One family serves every M.
func.func @gemm_dynamic_m(%a: tensor<?x4096xf16>, %b: tensor<4096x4096xf16>) -> tensor<?x4096xf32> {
  %zero = arith.constant 0.0 : f32
  %i0 = arith.constant 0 : index
  %m = tensor.dim %a, %i0 : tensor<?x4096xf16>
  %empty = tensor.empty(%m) : tensor<?x4096xf32>
  %acc = linalg.fill ins(%zero : f32) outs(%empty : tensor<?x4096xf32>) -> tensor<?x4096xf32>
  %c = linalg.matmul ins(%a, %b : tensor<?x4096xf16>, tensor<4096x4096xf16>)
                     outs(%acc : tensor<?x4096xf32>) -> tensor<?x4096xf32>
  return %c : tensor<?x4096xf32>
}
