// Source: iree-org/iree tests/e2e/regression/i1_inlined_constant.mlir, @select_with_binary, commit b48a5955575cf8924ffc191f3b0804976e5738b9.
// Licence: Apache-2.0 WITH LLVM-exception.
// Adapted: the constant inputs are arguments; the check op is dropped and the result returned.
func.func @select_with_binary(%control: tensor<4xi1>, %a: tensor<4xi32>, %b: tensor<4xi32>) -> tensor<4xi32> {
  %init = tensor.empty() : tensor<4xi32>
  %c = linalg.generic {
      indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>,
                       affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>],
      iterator_types = ["parallel"]}
      ins(%control, %a, %b : tensor<4xi1>, tensor<4xi32>, tensor<4xi32>)
      outs(%init : tensor<4xi32>) {
    ^bb0(%b1 : i1, %b2 : i32, %b3 : i32, %b4 : i32):
      %0 = arith.select %b1, %b2, %b3 : i32
      linalg.yield %0 : i32
    } -> tensor<4xi32>
  return %c : tensor<4xi32>
}
