// RUN: not prism-opt %s --target=h200 -p prism-select 2>&1 | filecheck %s

// A domain over the host's knobs cannot be searched for a GPU target.
// CHECK: select-invalid.mlir:[[# @LINE + 3]]:3: error: prism-select: family 'mm_family0' has a domain over [tm, tn, tk, rm, rn]; expected [bm, bn, bk, wm, wn, sk, gm, mma, stages, persistent] for this target
func.func private @mm_family0(%a: tensor<8x8xf32>, %b: tensor<8x8xf32>, %c: tensor<8x8xf32>)
    -> tensor<8x8xf32> attributes {prism.family_body} {
  "prism.family"() {kind = "gemm", symbols = [], domain = "[LB, LM, LN, LK] -> { [tm, tn, tk, rm, rn] : tm = 3 }", cost = "", stats = {}} : () -> ()
  %0 = linalg.matmul ins(%a, %b : tensor<8x8xf32>, tensor<8x8xf32>) outs(%c : tensor<8x8xf32>) -> tensor<8x8xf32>
  return %0 : tensor<8x8xf32>
}
