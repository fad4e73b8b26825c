// Source: llvm/torch-mlir test/python/fx_importer/iree_test/linalg-ir/Bmm.mlir (torch-mlir's
// linalg-on-tensors output of aten's Bmm), pull request 3064, commit 2973688406b965512ae3216d8ada30fdee5f128c.
// Licence: Apache-2.0 WITH LLVM-exception.
// Adapted: the module around @main and its unused ml_program.global seed are dropped.
func.func @main(%arg0: tensor<8x128x8xf32>, %arg1: tensor<8x8x128xf32>) -> tensor<8x128x128xf32> {
  %cst = arith.constant 0.000000e+00 : f32
  %0 = tensor.empty() : tensor<8x128x128xf32>
  %1 = linalg.fill ins(%cst : f32) outs(%0 : tensor<8x128x128xf32>) -> tensor<8x128x128xf32>
  %2 = linalg.batch_matmul ins(%arg0, %arg1 : tensor<8x128x8xf32>, tensor<8x8x128xf32>) outs(%1 : tensor<8x128x128xf32>) -> tensor<8x128x128xf32>
  return %2 : tensor<8x128x128xf32>
}
