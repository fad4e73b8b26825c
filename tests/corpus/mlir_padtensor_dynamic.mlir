// Source: llvm/llvm-project mlir/test/Integration/Dialect/Linalg/CPU/test-padtensor.mlir, @main, commit 00ce9bbbade92ce4178411edb15d946a111ea28d.
// Licence: Apache-2.0 WITH LLVM-exception.
// Adapted: the constant, cast there to tensor<1x?x3xf32>, is an argument of that type; the printing is dropped
// and the result returned.
func.func @main(%dynamic: tensor<1x?x3xf32>) -> tensor<1x?x?xf32> {
  %offset = arith.constant 2 : index
  %cst = arith.constant 2.3 : f32
  %c0 = arith.constant 0 : index
  %out = tensor.pad %dynamic low[%c0, %offset, %c0] high[%c0, %c0, %offset]  {
  ^bb0(%gen_arg1: index, %gen_arg2: index, %gen_arg3: index):
    tensor.yield %cst : f32
  } : tensor<1x?x3xf32> to tensor<1x?x?xf32>
  return %out : tensor<1x?x?xf32>
}
