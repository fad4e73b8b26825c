// Source: iree-org/iree tests/e2e/regression/linalg_ops.mlir, @multi_result, commit b48a5955575cf8924ffc191f3b0804976e5738b9.
// Licence: Apache-2.0 WITH LLVM-exception.
// Adapted: the constant inputs (util.unfoldable_constant) are arguments; the check ops are dropped and both
// results returned.
func.func @multi_result(%input1: tensor<3x4xi32>, %input2: tensor<3x4xi32>) -> (tensor<3x4xi32>, tensor<3x4xi32>) {
  %init = tensor.empty() : tensor<3x4xi32>
  %0:2 = linalg.generic {
      indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>,
                       affine_map<(d0, d1) -> (d0, d1)>,
                       affine_map<(d0, d1) -> (d0, d1)>,
                       affine_map<(d0, d1) -> (d0, d1)>],
      iterator_types = ["parallel", "parallel"]}
      ins(%input1, %input2 : tensor<3x4xi32>, tensor<3x4xi32>)
      outs(%init, %init : tensor<3x4xi32>, tensor<3x4xi32>) {
      ^bb0(%arg0: i32, %arg1: i32, %arg2: i32, %arg3: i32) :
          %1 = arith.addi %arg0, %arg1 : i32
          %2 = arith.muli %arg0, %arg1 : i32
          linalg.yield %1, %2 : i32, i32
      } -> (tensor<3x4xi32>, tensor<3x4xi32>)
  return %0#0, %0#1 : tensor<3x4xi32>, tensor<3x4xi32>
}
