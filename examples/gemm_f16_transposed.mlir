// A projection as in LLM layers: f16 activations times a transposed f16
// weight (stored N x K), accumulated in f32.
#act = affine_map<(m, n, k) -> (m, k)>
#weight = affine_map<(m, n, k) -> (n, k)>
#out = affine_map<(m, n, k) -> (m, n)>
func.func @projection(%x: tensor<512x2048xf16>, %w: tensor<1024x2048xf16>) -> tensor<512x1024xf32> {
  %zero = arith.constant 0.0 : f32
  %empty = tensor.empty() : tensor<512x1024xf32>
  %acc = linalg.fill ins(%zero : f32) outs(%empty : tensor<512x1024xf32>) -> tensor<512x1024xf32>
  %y = linalg.matmul indexing_maps = [#act, #weight, #out]
         ins(%x, %w : tensor<512x2048xf16>, tensor<1024x2048xf16>)
         outs(%acc : tensor<512x1024xf32>) -> tensor<512x1024xf32>
  return %y : tensor<512x1024xf32>
}
