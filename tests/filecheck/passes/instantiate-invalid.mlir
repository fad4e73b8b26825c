// RUN: not prism-opt %s -p prism-instantiate 2>&1 | filecheck %s

// A family that was never selected cannot be instantiated.
// CHECK: instantiate-invalid.mlir:[[# @LINE + 7]]:3: error: prism-instantiate: family 'gemm_family0' has no choice; run prism-select first
func.func @gemm(%a: tensor<8x8xf32>, %b: tensor<8x8xf32>, %c: tensor<8x8xf32>) -> tensor<8x8xf32> {
  %0 = call @gemm_family0(%a, %b, %c) : (tensor<8x8xf32>, tensor<8x8xf32>, tensor<8x8xf32>) -> tensor<8x8xf32>
  return %0 : tensor<8x8xf32>
}
func.func private @gemm_family0(%a: tensor<8x8xf32>, %b: tensor<8x8xf32>, %c: tensor<8x8xf32>)
    -> tensor<8x8xf32> attributes {prism.family_body} {
  "prism.family"() {kind = "gemm", symbols = [], domain = "{ [x] : x = 0 }", cost = "", stats = {}} : () -> ()
  %0 = linalg.matmul ins(%a, %b : tensor<8x8xf32>, tensor<8x8xf32>) outs(%c : tensor<8x8xf32>) -> tensor<8x8xf32>
  return %0 : tensor<8x8xf32>
}
