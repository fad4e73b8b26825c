// Source: iree-org/iree tests/e2e/regression/broadcast_batch_matmul_to_matmul.mlir,
// @broadcast_batch_matmul_transpose_b, commit b48a5955575cf8924ffc191f3b0804976e5738b9.
// Licence: Apache-2.0 WITH LLVM-exception.
// Adapted: the constant inputs are arguments; the reference copy behind util.optimization_barrier and the check
// op are dropped, and the result returned.
func.func @broadcast_batch_matmul_transpose_b(%act: tensor<2x2x3xf32>, %weight: tensor<4x3xf32>) -> tensor<2x2x4xf32> {
  %cst = arith.constant 0.0 : f32
  %init_broadcast = tensor.empty() : tensor<2x4x3xf32>
  %broadcast = linalg.broadcast ins(%weight : tensor<4x3xf32>)
                                outs(%init_broadcast : tensor<2x4x3xf32>) dimensions = [0]
  %init_out = tensor.empty() : tensor<2x2x4xf32>
  %fill = linalg.fill ins(%cst : f32) outs(%init_out : tensor<2x2x4xf32>) -> tensor<2x2x4xf32>
  %opt = linalg.batch_matmul
      indexing_maps = [affine_map<(b, m, n, k) -> (b, m, k)>,
                       affine_map<(b, m, n, k) -> (b, n, k)>,
                       affine_map<(b, m, n, k) -> (b, m, n)>]
      ins(%act, %broadcast : tensor<2x2x3xf32>, tensor<2x4x3xf32>)
      outs(%fill : tensor<2x2x4xf32>) -> tensor<2x2x4xf32>
  return %opt : tensor<2x2x4xf32>
}
