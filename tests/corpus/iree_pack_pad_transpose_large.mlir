// Source: iree-org/iree tests/e2e/linalg/pack.mlir, @static_pack_pad_transpose_inner_and_outer_dims_large, commit b48a5955575cf8924ffc191f3b0804976e5738b9.
// Licence: Apache-2.0 WITH LLVM-exception.
// Adapted: the generated source (through a call, a barrier and a cast there) is an argument; the check op is
// dropped and both tensors it compared are returned.
func.func @static_pack_pad_transpose_inner_and_outer_dims_large(%source: tensor<100x250xi32>) -> (tensor<16x4x16x32xi32>, tensor<16x4x16x32xi32>) {
  %padding_value = arith.constant 42 : i32

  %init_pack = tensor.empty() : tensor<16x4x16x32xi32>
  %pack = linalg.pack %source padding_value(%padding_value : i32)
      outer_dims_perm = [1, 0] inner_dims_pos = [1, 0] inner_tiles = [16, 32] into %init_pack
      : tensor<100x250xi32> -> tensor<16x4x16x32xi32>

  %pad = tensor.pad %source low[0, 0] high[28, 6] {
    ^bb0(%b0 : index, %b1 : index):
      tensor.yield %padding_value : i32
  } : tensor<100x250xi32> to tensor<128x256xi32>
  %reshape = tensor.expand_shape %pad [[0, 1], [2, 3]] output_shape [4, 32, 16, 16] : tensor<128x256xi32> into tensor<4x32x16x16xi32>
  %init_transpose = tensor.empty() : tensor<16x4x16x32xi32>
  %transpose = linalg.transpose
    ins(%reshape : tensor<4x32x16x16xi32>)
    outs(%init_transpose : tensor<16x4x16x32xi32>)
    permutation = [2, 0, 3, 1]

  return %pack, %transpose : tensor<16x4x16x32xi32>, tensor<16x4x16x32xi32>
}
