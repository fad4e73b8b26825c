// Source: llvm/llvm-project mlir/test/Integration/Dialect/Linalg/CPU/pack-unpack-mmt4d.mlir, @mmt4d, commit 23223c8bdeb0ebf3f6a9437f09d5a2dc8bbdad09.
// Licence: Apache-2.0 WITH LLVM-exception.
// Adapted: the function is public; otherwise as written.
func.func @mmt4d(%A: tensor<7x16xi32>, %B: tensor<16x13xi32>, %C: tensor<7x13xi32>) -> tensor<7x13xi32> {
  %zero = arith.constant 0 : i32

  %A_pack_empty = tensor.empty() : tensor<1x16x8x1xi32>
  %B_pack_empty = tensor.empty() : tensor<2x16x8x1xi32>
  %C_pack_empty = tensor.empty() : tensor<1x2x8x8xi32>

  // Pack matrices
  %A_pack = linalg.pack %A padding_value(%zero : i32) inner_dims_pos = [0, 1] inner_tiles = [8, 1] into %A_pack_empty : tensor<7x16xi32> -> tensor<1x16x8x1xi32>
  %B_pack = linalg.pack %B padding_value(%zero : i32) outer_dims_perm = [1, 0] inner_dims_pos = [1, 0] inner_tiles = [8, 1] into %B_pack_empty : tensor<16x13xi32> -> tensor<2x16x8x1xi32>
  %C_pack = linalg.pack %C padding_value(%zero : i32) outer_dims_perm = [0, 1] inner_dims_pos = [0, 1] inner_tiles = [8, 8] into %C_pack_empty : tensor<7x13xi32> -> tensor<1x2x8x8xi32>

  // MMT4D
  %mmt4d = linalg.mmt4d ins(%A_pack, %B_pack : tensor<1x16x8x1xi32>, tensor<2x16x8x1xi32>) outs(%C_pack : tensor<1x2x8x8xi32>) -> tensor<1x2x8x8xi32>

  // Unpack output
  %C_out_empty = tensor.empty() : tensor<7x13xi32>
  %C_out_unpack = linalg.unpack %mmt4d outer_dims_perm = [0, 1] inner_dims_pos = [0, 1] inner_tiles = [8, 8] into %C_out_empty : tensor<1x2x8x8xi32> -> tensor<7x13xi32>

  return %C_out_unpack : tensor<7x13xi32>
}
