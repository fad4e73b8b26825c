// Source: llvm/llvm-project mlir/test/Integration/Dialect/Linalg/CPU/test-tensor-matmul.mlir, @main, commit 058ca9294e9ea00646f6e7bf445fc38b5b901c2d.
// Licence: Apache-2.0 WITH LLVM-exception.
// Adapted: the three constant operands are arguments; the printing is dropped and the result returned.
func.func @main(%A: tensor<2x3xf32>, %B: tensor<3x4xf32>, %C: tensor<2x4xf32>) -> tensor<2x4xf32> {
  %D = linalg.matmul ins(%A, %B: tensor<2x3xf32>, tensor<3x4xf32>)
                     outs(%C: tensor<2x4xf32>) -> tensor<2x4xf32>
  return %D : tensor<2x4xf32>
}
