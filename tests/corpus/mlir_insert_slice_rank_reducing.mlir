// Source: llvm/llvm-project mlir/test/Integration/Dialect/Linalg/CPU/vectorize-insert-slice-rank-reducing.mlir, @main,
// commit 6f7e587d97e2f0d7beac48c38c2fee099468b85f.
// Licence: Apache-2.0 WITH LLVM-exception.
// Adapted: the constant source is an argument; the printing and the transform script are dropped and the
// result returned.
func.func @main(%src: tensor<5xi32>) -> tensor<5x3xi32> {
  %pad = arith.constant 0 : i32
  %empty = tensor.empty() : tensor<5x3xi32>
  %init = linalg.fill ins(%pad : i32) outs(%empty : tensor<5x3xi32>) -> tensor<5x3xi32>
  %res = tensor.insert_slice %src into %init[0, 2] [5, 1] [1, 1]
    : tensor<5xi32> into tensor<5x3xi32>
  return %res : tensor<5x3xi32>
}
