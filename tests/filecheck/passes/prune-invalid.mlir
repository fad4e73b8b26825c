// RUN: not prism-opt %s -p 'prism-prune{target=h200}' --split-input-file 2>&1 | filecheck %s

// A family narrowed by hand to 256x256 block tiles of 8x8 warp tiles (f32: the FMA kernel's warps) would
// need 1024 warps per block: the error names the constraint that emptied it.
// CHECK: prune-invalid.mlir:[[# @LINE + 3]]:3: error: prism-prune: constraint 'threads' on target 'h200' removed every schedule of family 'big_family0': '(bm - wm) + (bn - wn) + 5 <= {{[0-9]+}}'; funnel: {'space': 100, 'threads': 0}
func.func private @big_family0(%a: tensor<1024x1024xf32>, %b: tensor<1024x1024xf32>, %c: tensor<1024x1024xf32>)
    -> tensor<1024x1024xf32> attributes {prism.family_body} {
  "prism.family"() {kind = "gemm", symbols = ["BM", "BN", "BK", "WM", "WN", "SPLITK", "GROUP_M", "MMA", "STAGES", "PERSISTENT"],
                    domain = "[LB, LM, LN, LK] -> { [bm, bn, bk, wm, wn, sk, gm, mma, stages, persistent] : bm = 8 and bn = 8 and wm = 3 and wn = 3 }",
                    cost = "", stats = {}} : () -> ()
  %0 = linalg.matmul ins(%a, %b : tensor<1024x1024xf32>, tensor<1024x1024xf32>) outs(%c : tensor<1024x1024xf32>) -> tensor<1024x1024xf32>
  return %0 : tensor<1024x1024xf32>
}

// -----

// An f16 family on sm_90a narrowed to 256x256 blocks of 64x64 warpgroup tiles would need 16 consumer warpgroups;
// the wgmma kernel has one or two.
// CHECK: prune-invalid.mlir:[[# @LINE + 3]]:3: error: prism-prune: constraint 'warpgroups' on target 'h200' removed every schedule of family 'wide_family0': '(bm - wm) + (bn - wn) <= 1'; funnel: {'space': 320, 'warpgroups': 0}
func.func private @wide_family0(%a: tensor<1024x1024xf16>, %b: tensor<1024x1024xf16>, %c: tensor<1024x1024xf32>)
    -> tensor<1024x1024xf32> attributes {prism.family_body} {
  "prism.family"() {kind = "gemm", symbols = ["BM", "BN", "BK", "WM", "WN", "SPLITK", "GROUP_M", "MMA", "STAGES", "PERSISTENT"],
                    domain = "[LB, LM, LN, LK] -> { [bm, bn, bk, wm, wn, sk, gm, mma, stages, persistent] : bm = 8 and bn = 8 and wn = 6 }",
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

// A domain over the knobs of another space (here the GPU space before STAGES was a knob) is refused, naming the
// dimensions the target expects.
// CHECK: prune-invalid.mlir:[[# @LINE + 3]]:3: error: prism-prune: family 'old_family0' has a domain over [bm, bn, bk, wm, wn, mma]; expected [bm, bn, bk, wm, wn, sk, gm, mma, stages, persistent] for this target
func.func private @old_family0(%a: tensor<64x64xf16>, %b: tensor<64x64xf16>, %c: tensor<64x64xf32>)
    -> tensor<64x64xf32> attributes {prism.family_body} {
  "prism.family"() {kind = "gemm", symbols = ["BM", "BN", "BK", "WM", "WN", "MMA"],
                    domain = "[LB, LM, LN, LK] -> { [bm, bn, bk, wm, wn, mma] : bm = 6 and bn = 6 }", cost = "", stats = {}} : () -> ()
  %0 = linalg.matmul ins(%a, %b : tensor<64x64xf16>, tensor<64x64xf16>) outs(%c : tensor<64x64xf32>) -> tensor<64x64xf32>
  return %0 : tensor<64x64xf32>
}
