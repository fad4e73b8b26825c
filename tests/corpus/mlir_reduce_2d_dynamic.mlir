// Source: llvm/llvm-project mlir/test/Integration/Dialect/Linalg/CPU/ArmSVE/reduce_2d.mlir, @reduce_2d_f32, commit 43cfbab639e430bb61d99f64b438f213c5e3d4ae.
// Licence: Apache-2.0 WITH LLVM-exception.
// Adapted: the input (16x1000 filled with 3.1416 there) is an argument; the printing and the transform script
// are dropped and the result returned.
func.func @reduce_2d_f32(%A_in: tensor<?x?xf32>) -> tensor<?xf32> {
  %c0 = arith.constant 0 : index
  %M = tensor.dim %A_in, %c0 : tensor<?x?xf32>
  %c0_f32 = arith.constant 0.0 : f32
  %C_alloc = bufferization.alloc_tensor(%M) : tensor<?xf32>
  %C_in = linalg.fill ins(%c0_f32 : f32) outs(%C_alloc : tensor<?xf32>) -> tensor<?xf32>
  %C_out = linalg.reduce ins(%A_in : tensor<?x?xf32>) outs(%C_in: tensor<?xf32>) dimensions = [1]
    (%in: f32, %init: f32) {
      %0 = arith.addf %in, %init : f32
      linalg.yield %0 : f32
    }
  return %C_out : tensor<?xf32>
}
