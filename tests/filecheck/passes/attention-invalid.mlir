// RUN: not prism-opt %s --split-input-file --target=host -p prism-prune,prism-lower-cpu 2>&1 | filecheck %s

// A family that says it is an attention but holds a plain product is rejected where it is.
// CHECK: attention-invalid.mlir:[[# @LINE + 1]]:1: error: prism-prune: an attention family's body does not compute an attention
func.func private @fake_family0(%a: tensor<8x8xf32>, %b: tensor<8x8xf32>, %c: tensor<8x8xf32>)
    -> tensor<8x8xf32> attributes {prism.family_body} {
  "prism.family"() {kind = "attention", symbols = ["BQ", "BKV", "RM", "RN", "KVS"],
                    domain = "[LB, LM, LN, LK, DM, DN, DK] -> { [bq, bkv, rm, rn, ks, q3, m3] }", cost = "", stats = {}} : () -> ()
  %0 = linalg.matmul ins(%a, %b : tensor<8x8xf32>, tensor<8x8xf32>) outs(%c : tensor<8x8xf32>) -> tensor<8x8xf32>
  return %0 : tensor<8x8xf32>
}

// -----

// A chosen register block of 12 columns is no whole number of vectors: the lowering names the choice.
// CHECK: attention-invalid.mlir:[[# @LINE + 8]]:{{[0-9]+}}: error: prism-lower-cpu: prism.attention {{.*}} does not fit a value size of 24
#q = affine_map<(b, i, j, c) -> (b, i, c)>
#k = affine_map<(b, i, j, c) -> (b, j, c)>
#s = affine_map<(b, i, j, c) -> (b, i, j)>
func.func @attention(%q: tensor<2x8x16xf32>, %k: tensor<2x40x16xf32>, %v: tensor<2x40x24xf32>) -> tensor<2x8x24xf32> {
  %zero = arith.constant 0.0 : f32
  %se = tensor.empty() : tensor<2x8x40xf32>
  %s0 = linalg.fill ins(%zero : f32) outs(%se : tensor<2x8x40xf32>) -> tensor<2x8x40xf32>
  %s = linalg.generic {indexing_maps = [#q, #k, #s], iterator_types = ["parallel", "parallel", "parallel", "reduction"],
                       prism.attention = {BQ = 8, BKV = 36, RM = 1, RN = 12, KVS = 1}}
      ins(%q, %k : tensor<2x8x16xf32>, tensor<2x40x16xf32>) outs(%s0 : tensor<2x8x40xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %x = arith.mulf %a, %b : f32
    %y = arith.addf %acc, %x : f32
    linalg.yield %y : f32
  } -> tensor<2x8x40xf32>
  %p = linalg.softmax dimension(2) ins(%s : tensor<2x8x40xf32>) outs(%se : tensor<2x8x40xf32>) -> tensor<2x8x40xf32>
  %oe = tensor.empty() : tensor<2x8x24xf32>
  %o0 = linalg.fill ins(%zero : f32) outs(%oe : tensor<2x8x24xf32>) -> tensor<2x8x24xf32>
  %o = linalg.batch_matmul ins(%p, %v : tensor<2x8x40xf32>, tensor<2x40x24xf32>)
      outs(%o0 : tensor<2x8x24xf32>) -> tensor<2x8x24xf32>
  return %o : tensor<2x8x24xf32>
}
