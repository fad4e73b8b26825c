// Source: iree-org/iree tests/e2e/regression/transpose.mlir, @transpose_small, commit b48a5955575cf8924ffc191f3b0804976e5738b9.
// Licence: Apache-2.0 WITH LLVM-exception.
// Adapted: the constant inputs are arguments; the check op is dropped and the result returned.
func.func @transpose_small(%ins: tensor<3x3xi32>) -> tensor<3x3xi32> {
    %outs = tensor.empty() : tensor<3x3xi32>
    %result = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d1, d0)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%ins : tensor<3x3xi32>) outs(%outs : tensor<3x3xi32>) {
    ^bb0(%arg1: i32, %arg2: i32):
      linalg.yield %arg1 : i32
    } -> tensor<3x3xi32>
    return %result : tensor<3x3xi32>
}
