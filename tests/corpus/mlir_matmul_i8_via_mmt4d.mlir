// Source: llvm/llvm-project mlir/test/Integration/Dialect/Linalg/CPU/ArmNeon/matmul-i8.mlir, @matmul_via_mmt4d
// and the functions it calls, commit 06d9edc01ab587e6272cba61b2a20381b46f2fe8.
// Licence: Apache-2.0 WITH LLVM-exception.
// Adapted: @matmul_via_mmt4d is public; @main, the printing and the transform script are dropped.

// LHS packed tile: M0=4, K0=8 (K0 must be a multiple of 8 for FEAT_I8MM).
func.func private @pack_lhs(%A: tensor<7x16xi8>) -> tensor<2x2x4x8xi8> {
  %pad = arith.constant 0 : i8
  %A_pack_empty = tensor.empty() : tensor<2x2x4x8xi8>
  %A_pack = linalg.pack %A
    padding_value(%pad : i8)
    inner_dims_pos = [0, 1]
    inner_tiles = [4, 8]
    into %A_pack_empty : tensor<7x16xi8> -> tensor<2x2x4x8xi8>
  return %A_pack : tensor<2x2x4x8xi8>
}

// RHS packed tile: N0=4, K0=8.
func.func private @pack_rhs(%B: tensor<16x13xi8>) -> tensor<4x2x4x8xi8> {
  %pad = arith.constant 0 : i8
  %B_pack_empty = tensor.empty() : tensor<4x2x4x8xi8>
  %B_pack = linalg.pack %B
    padding_value(%pad : i8)
    outer_dims_perm = [1, 0]
    inner_dims_pos = [1, 0]
    inner_tiles = [4, 8]
    into %B_pack_empty : tensor<16x13xi8> -> tensor<4x2x4x8xi8>
  return %B_pack : tensor<4x2x4x8xi8>
}

func.func private @pack_acc(%C: tensor<7x13xi32>) -> tensor<2x4x4x4xi32> {
  %pad = arith.constant 0 : i32
  %C_pack_empty = tensor.empty() : tensor<2x4x4x4xi32>
  %C_pack = linalg.pack %C
    padding_value(%pad : i32)
    outer_dims_perm = [0, 1]
    inner_dims_pos = [0, 1]
    inner_tiles = [4, 4]
    into %C_pack_empty : tensor<7x13xi32> -> tensor<2x4x4x4xi32>
  return %C_pack : tensor<2x4x4x4xi32>
}

func.func private @unpack_acc(%C_packed: tensor<2x4x4x4xi32>) -> tensor<7x13xi32> {
  %C_out_empty = tensor.empty() : tensor<7x13xi32>
  %C_out_unpack = linalg.unpack %C_packed
    outer_dims_perm = [0, 1]
    inner_dims_pos = [0, 1]
    inner_tiles = [4, 4]
    into %C_out_empty : tensor<2x4x4x4xi32> -> tensor<7x13xi32>
  return %C_out_unpack: tensor<7x13xi32>
}

func.func @matmul_via_mmt4d(%A: tensor<7x16xi8>, %B: tensor<16x13xi8>, %C: tensor<7x13xi32>) -> tensor<7x13xi32> {
  %A_pack = func.call @pack_lhs(%A): (tensor<7x16xi8>) -> tensor<2x2x4x8xi8>
  %B_pack = func.call @pack_rhs(%B): (tensor<16x13xi8>) -> tensor<4x2x4x8xi8>
  %C_pack = func.call @pack_acc(%C): (tensor<7x13xi32>) -> tensor<2x4x4x4xi32>

  %mmt4d = linalg.mmt4d ins(%A_pack, %B_pack : tensor<2x2x4x8xi8>, tensor<4x2x4x8xi8>) outs(%C_pack : tensor<2x4x4x4xi32>) -> tensor<2x4x4x4xi32>

  %C_out_unpack = func.call @unpack_acc(%mmt4d) : (tensor<2x4x4x4xi32>) -> tensor<7x13xi32>
  return %C_out_unpack : tensor<7x13xi32>
}
