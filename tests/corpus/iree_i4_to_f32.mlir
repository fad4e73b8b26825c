// Source: iree-org/iree tests/e2e/linalg/subbyte_to_fp.mlir, @i4_to_f32_1d,
// commit b48a5955575cf8924ffc191f3b0804976e5738b9.
// Licence: Apache-2.0 WITH LLVM-exception.
// Adapted: util.unfoldable_constant is arith.constant (numpy has no i4 to pass); the check op is dropped and the
// result returned.
func.func @i4_to_f32_1d() -> tensor<8xf32> {
  %input = arith.constant dense<[0, 1, 2, 3, 4, 5, 6, 7]> : tensor<8xi4>
  %0 = tensor.empty() : tensor<8xf32>
  %res = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]}
    ins(%input : tensor<8xi4>) outs(%0 : tensor<8xf32>) {
  ^bb0(%in: i4, %out: f32):
    %2 = arith.extui %in : i4 to i32
    %3 = arith.uitofp %2 : i32 to f32
    linalg.yield %3 : f32
  } -> tensor<8xf32>
  return %res : tensor<8xf32>
}
