// Source: llvm/llvm-project mlir/test/Integration/Dialect/Linalg/CPU/ArmSVE/reduce_2d.mlir, @generic_reduce_2d_i32, commit 43cfbab639e430bb61d99f64b438f213c5e3d4ae.
// Licence: Apache-2.0 WITH LLVM-exception.
// Adapted: the input (16x1000 filled with 3 there) is an argument; the printing and the transform script are
// dropped and the result returned.
func.func @generic_reduce_2d_i32(%A_in: tensor<?x?xi32>) -> tensor<?xi32> {
  %c0 = arith.constant 0 : index
  %M = tensor.dim %A_in, %c0 : tensor<?x?xi32>
  %c0_i32 = arith.constant 0 : i32
  %C_alloc = bufferization.alloc_tensor(%M) : tensor<?xi32>
  %C_in = linalg.fill ins(%c0_i32 : i32) outs(%C_alloc : tensor<?xi32>) -> tensor<?xi32>
  %C_out = linalg.generic { indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>,
                                             affine_map<(d0, d1) -> (d0)>],
                            iterator_types = ["parallel", "reduction"] }
    ins(%A_in : tensor<?x?xi32>)
    outs(%C_in : tensor<?xi32>) {
    ^bb(%in: i32, %out: i32) :
      %0 = arith.addi %in, %out : i32
      linalg.yield %0 : i32
    } -> tensor<?xi32>
  return %C_out : tensor<?xi32>
}
