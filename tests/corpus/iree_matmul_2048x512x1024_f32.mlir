// Source: iree-org/iree tests/e2e/linalg/large_linalg_matmul.mlir, @matmul_2048x512x1024_f32_f32, commit b48a5955575cf8924ffc191f3b0804976e5738b9.
// Licence: Apache-2.0 WITH LLVM-exception.
// Adapted: the constant inputs are arguments; the check op is dropped and the result returned.
func.func @matmul_2048x512x1024_f32_f32(%lhs: tensor<2048x1024xf32>, %rhs: tensor<1024x512xf32>) -> tensor<2048x512xf32> {
  %c0 = arith.constant 0.0 : f32
  %init = tensor.empty() : tensor<2048x512xf32>
  %CC = linalg.fill ins(%c0 : f32) outs(%init : tensor<2048x512xf32>) -> tensor<2048x512xf32>
  %D = linalg.matmul ins(%lhs, %rhs: tensor<2048x1024xf32>, tensor<1024x512xf32>)
                    outs(%CC: tensor<2048x512xf32>) -> tensor<2048x512xf32>
  return %D : tensor<2048x512xf32>
}
