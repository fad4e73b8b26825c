// Source: iree-org/iree tests/e2e/linalg/unpack.mlir, @dynamic_unpack_transpose_inner_and_outer_dims_large,
// commit b48a5955575cf8924ffc191f3b0804976e5738b9.
// Licence: Apache-2.0 WITH LLVM-exception.
// Adapted: the two generated sources (through calls and casts there) and the unfoldable sizes are arguments;
// the check op is dropped and both tensors it compared are returned (the unpacked one before its cast).
func.func @dynamic_unpack_transpose_inner_and_outer_dims_large(%source: tensor<?x?x16x32xi32>, %static_source: tensor<16x4x16x32xi32>, %packed_d0: index, %packed_d1: index) -> (tensor<?x?xi32>, tensor<128x256xi32>) {
  %init_unpack = tensor.empty(%packed_d0, %packed_d1) : tensor<?x?xi32>
  %unpack = linalg.unpack %source outer_dims_perm = [1, 0]  inner_dims_pos = [1, 0] inner_tiles = [16, 32] into %init_unpack
      : tensor<?x?x16x32xi32> -> tensor<?x?xi32>

  %init_transpose = tensor.empty() : tensor<4x32x16x16xi32>
  // The permutation for [2, 0, 3, 1] -> [0, 1, 2, 3] is [1, 3, 0, 2].
  %transpose = linalg.transpose
    ins(%static_source: tensor<16x4x16x32xi32>)
    outs(%init_transpose: tensor<4x32x16x16xi32>)
    permutation = [1, 3, 0, 2]
  %collapse = tensor.collapse_shape %transpose [[0, 1], [2, 3]] : tensor<4x32x16x16xi32> into tensor<128x256xi32>

  return %unpack, %collapse : tensor<?x?xi32>, tensor<128x256xi32>
}
