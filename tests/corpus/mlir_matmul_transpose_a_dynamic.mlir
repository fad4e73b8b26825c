// Source: llvm/llvm-project mlir/test/Integration/Dialect/Linalg/CPU/ArmSME/matmul-transpose-a.mlir,
// @matmul_transpose_a, commit 13a3884594afb765ba9e0aa34db4d2cc4e71c173.
// Licence: Apache-2.0 WITH LLVM-exception.
// Adapted: linalg.matmul_transpose_a, which MLIR has since removed, is written as the linalg.matmul with
// indexing maps that replaced it; the printing is dropped and the result returned.
func.func @matmul_transpose_a(%A : tensor<?x?xf32>, %B : tensor<?x?xf32>, %C : tensor<?x?xf32>) -> tensor<?x?xf32> {
  %res = linalg.matmul indexing_maps = [affine_map<(d0, d1, d2) -> (d2, d0)>,
                                        affine_map<(d0, d1, d2) -> (d2, d1)>,
                                        affine_map<(d0, d1, d2) -> (d0, d1)>]
                       ins(%A, %B: tensor<?x?xf32>, tensor<?x?xf32>)
                       outs(%C: tensor<?x?xf32>) -> tensor<?x?xf32>
  return %res : tensor<?x?xf32>
}
