// Source: iree-org/iree samples/custom_dispatch/cpu/mlp_plugin/mlp_linalg.mlir, @mlp_invocation, commit b48a5955575cf8924ffc191f3b0804976e5738b9.
// Licence: Apache-2.0 WITH LLVM-exception.
// Adapted: the module's hal.device.targets attribute (IREE's device) is dropped; the function is as written.
#map = affine_map<(d0, d1) -> (d0, d1)>
func.func @mlp_invocation(%lhs: tensor<?x?xf32>,
                          %rhs: tensor<?x?xf32>) -> (tensor<?x?xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %cst = arith.constant 0.0 : f32
  %dim0 = tensor.dim %lhs, %c0 : tensor<?x?xf32>
  %dim1 = tensor.dim %rhs, %c1 : tensor<?x?xf32>
  %empty = tensor.empty(%dim0, %dim1) : tensor<?x?xf32>
  %fill = linalg.fill ins(%cst : f32) outs(%empty : tensor<?x?xf32>) -> tensor<?x?xf32>
  %matmul = linalg.matmul ins(%lhs, %rhs : tensor<?x?xf32>, tensor<?x?xf32>)
      outs(%fill : tensor<?x?xf32>) -> tensor<?x?xf32>
  %relu = linalg.generic {
      indexing_maps = [#map, #map],
      iterator_types = ["parallel", "parallel"]}
      ins(%matmul : tensor<?x?xf32>) outs(%empty : tensor<?x?xf32>) {
    ^bb0(%b0 : f32, %b1 : f32):
      %0 = arith.maximumf %b0, %cst : f32
      linalg.yield %0 : f32
    } -> tensor<?x?xf32>
  %neg = linalg.generic {
      indexing_maps = [#map, #map],
      iterator_types  = ["parallel", "parallel"]}
      ins(%relu : tensor<?x?xf32>) outs(%empty : tensor<?x?xf32>) {
    ^bb0(%b0 : f32, %b1 : f32):
      %0 = arith.negf %b0 : f32
      linalg.yield %0 : f32
  } -> tensor<?x?xf32>
  return %neg : tensor<?x?xf32>
}
