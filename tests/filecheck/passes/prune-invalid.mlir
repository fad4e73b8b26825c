// RUN: not prism-opt %s -p 'prism-prune{target=h200}' --split-input-file 2>&1 | filecheck %s

// A family narrowed by hand to 256x256 block tiles of 8x8 warp tiles would
// need 1024 warps per block: the error names the constraint that emptied it.
// CHECK: prune-invalid.mlir:[[# @LINE + 3]]:3: error: prism-prune: constraint 'threads' on target 'h200' removed every schedule of family 'big_family0'
func.func private @big_family0(%a: tensor<1024x1024xf16>, %b: tensor<1024x1024xf16>, %c: tensor<1024x1024xf32>)
    -> tensor<1024x1024xf32> attributes {prism.family_body} {
  "prism.family"() {kind = "gemm", symbols = ["BM", "BN", "BK", "WM", "WN", "MMA"],
                    domain = "[LB, LM, LN, LK] -> { [bm, bn, bk, wm, wn, mma] : bm = 8 and bn = 8 and wm = 3 and wn = 3 }",
                    cost = "", stats = {}} : () -> ()
  %0 = linalg.matmul ins(%a, %b : tensor<1024x1024xf16>, tensor<1024x1024xf16>) outs(%c : tensor<1024x1024xf32>) -> tensor<1024x1024xf32>
  return %0 : tensor<1024x1024xf32>
}

// -----

// A domain that is not an isl set is rejected with its location.
// CHECK: prune-invalid.mlir:[[# @LINE + 3]]:3: error: prism-prune: family 'broken_family0' has a domain that is not an isl set
func.func private @broken_family0(%a: tensor<8x8xf32>, %b: tensor<8x8xf32>, %c: tensor<8x8xf32>)
    -> tensor<8x8xf32> attributes {prism.family_body} {
  "prism.family"() {kind = "gemm", symbols = [], domain = "{ [x] : x >", cost = "", stats = {}} : () -> ()
  %0 = linalg.matmul ins(%a, %b : tensor<8x8xf32>, tensor<8x8xf32>) outs(%c : tensor<8x8xf32>) -> tensor<8x8xf32>
  return %0 : tensor<8x8xf32>
}

// -----

// GPU kernels have no remainder handling: no power-of-two tile of at least
// 16 divides M = 100, and the error says so.
// CHECK: prune-invalid.mlir:[[# @LINE + 2]]:3: error: prism-prune: constraint 'divisibility' on target 'h200' removed every schedule of family 'ragged_family0': no BM that the other constraints allow (16, 32, 64, 128) divides M = 100; funnel:
func.func private @ragged_family0(%a: tensor<100x64xf32>, %b: tensor<64x32xf32>, %c: tensor<100x32xf32>) -> tensor<100x32xf32> attributes {prism.family_body} {
  "prism.family"() {kind = "gemm", symbols = [], domain = "[LB, LM, LN, LK, DM, DN, DK] -> { [bm, bn, bk, wm, wn, mma] }", cost = "", stats = {}} : () -> ()
  %0 = linalg.matmul ins(%a, %b : tensor<100x64xf32>, tensor<64x32xf32>) outs(%c : tensor<100x32xf32>) -> tensor<100x32xf32>
  return %0 : tensor<100x32xf32>
}
