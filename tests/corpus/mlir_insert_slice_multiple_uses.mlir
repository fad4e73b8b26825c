// Source: llvm/llvm-project mlir/test/Integration/Dialect/Linalg/CPU/test-subtensor-insert-multiple-uses.mlir, @main, commit 0317f9c8561d6b6eabba0ca01641135cbeab307d.
// Licence: Apache-2.0 WITH LLVM-exception.
// Adapted: the two constants are arguments; the printing is dropped and both results returned.
func.func @main(%const: tensor<2xf32>, %insert_val: tensor<1xf32>) -> (tensor<2xf32>, tensor<2xf32>) {
  %inserted_at_position_0 = tensor.insert_slice %insert_val into %const[0][1][1] : tensor<1xf32> into tensor<2xf32>
  %inserted_at_position_1 = tensor.insert_slice %insert_val into %const[1][1][1] : tensor<1xf32> into tensor<2xf32>
  return %inserted_at_position_0, %inserted_at_position_1 : tensor<2xf32>, tensor<2xf32>
}
