// RUN: prism-opt %s -p 'prism-lift{target=host}' 2>&1 | filecheck %s
// RUN: prism-opt %s --target=host -p prism-lift,prism-prune,prism-select,prism-instantiate | filecheck %s --check-prefix=CHOSEN
// RUN: prism-opt %s -p 'prism-lift{target=h200}' 2>/dev/null | filecheck %s --check-prefix=GPU

// An attention chain (here through linalg.softmax, which every pass reads as its parts: a row max, the exp of the
// difference, a row sum and a division; the scores scaled by an op of their own) is one family on
// the host: its ops and the inits they read move into the payload, and the call takes Q, K and V.
// CHECK-NOT:   remark
// CHECK-LABEL: func.func @attention
// CHECK-SAME:    (%[[Q:.*]]: tensor<2x8x16xf32>, %[[K:.*]]: tensor<2x40x16xf32>, %[[V:.*]]: tensor<2x40x24xf32>)
// CHECK-NEXT:    %[[R:.*]] = call @attention_family0(%[[Q]], %[[K]], %[[V]])
// CHECK-NEXT:    return %[[R]]
// CHECK:       func.func private @attention_family0
// CHECK-SAME:    attributes {prism.family_body}
// CHECK-NEXT:    "prism.family"()
// CHECK-SAME:      domain = "[LB, LM, LN, LK, DM, DN, DK] -> { [bq, bkv, rm, rn{{( = [0-9]+)?}}, ks, q3, m3]
// CHECK-SAME:      kind = "attention"
// CHECK-SAME:      symbols = ["BQ", "BKV", "RM", "RN", "KVS"]
// CHECK:         linalg.fill
// CHECK:         linalg.generic
// CHECK:         linalg.generic
// CHECK-NOT:     linalg.softmax
// CHECK:           arith.maxnumf
// CHECK:           math.exp
// CHECK:           arith.divf
// CHECK:         linalg.batch_matmul
// CHECK-NEXT:    return

// Selected and instantiated, the chain is back in place, its choice on the scores' product.
// CHOSEN-LABEL: func.func @attention
// CHOSEN:        linalg.generic {{.*}} ins(%arg0, %arg1 : {{.*}} attrs = {prism.attention = {BKV = {{[0-9]+}} : i64, BQ = {{[0-9]+}} : i64, KVS = 1 : i64, RM = {{[0-9]+}} : i64, RN = {{[0-9]+}} : i64}
// CHOSEN-NOT:    prism.choice
// CHOSEN:          arith.maxnumf
// CHOSEN:          arith.divf
// CHOSEN-NOT:    call
// CHOSEN-NOT:  func.func private

// A GPU target has no attention family: the two products are lifted as batched GEMMs.
// GPU-LABEL:   func.func @attention
// GPU:           call @attention_family0(
// GPU:             arith.maxnumf
// GPU:             arith.divf
// GPU:           call @attention_family1(
// GPU:         "prism.family"(){{.*}}kind = "batch_gemm"
// GPU:         "prism.family"(){{.*}}kind = "batch_gemm"
#q = affine_map<(b, i, j, c) -> (b, i, c)>
#k = affine_map<(b, i, j, c) -> (b, j, c)>
#s = affine_map<(b, i, j, c) -> (b, i, j)>
#id = affine_map<(b, i, j) -> (b, i, j)>
func.func @attention(%q: tensor<2x8x16xf32>, %k: tensor<2x40x16xf32>, %v: tensor<2x40x24xf32>) -> tensor<2x8x24xf32> {
  %zero = arith.constant 0.0 : f32
  %c = arith.constant 0.25 : f32
  %se = tensor.empty() : tensor<2x8x40xf32>
  %s0 = linalg.fill ins(%zero : f32) outs(%se : tensor<2x8x40xf32>) -> tensor<2x8x40xf32>
  %s = linalg.generic {indexing_maps = [#q, #k, #s], iterator_types = ["parallel", "parallel", "parallel", "reduction"]}
      ins(%q, %k : tensor<2x8x16xf32>, tensor<2x40x16xf32>) outs(%s0 : tensor<2x8x40xf32>) {
  ^bb0(%a: f32, %b: f32, %acc: f32):
    %x = arith.mulf %a, %b : f32
    %y = arith.addf %acc, %x : f32
    linalg.yield %y : f32
  } -> tensor<2x8x40xf32>
  %scaled = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%s : tensor<2x8x40xf32>) outs(%se : tensor<2x8x40xf32>) {
  ^bb0(%a: f32, %o: f32):
    %x = arith.mulf %a, %c : f32
    linalg.yield %x : f32
  } -> tensor<2x8x40xf32>
  %p = linalg.softmax dimension(2) ins(%scaled : tensor<2x8x40xf32>) outs(%se : tensor<2x8x40xf32>) -> tensor<2x8x40xf32>
  %oe = tensor.empty() : tensor<2x8x24xf32>
  %o0 = linalg.fill ins(%zero : f32) outs(%oe : tensor<2x8x24xf32>) -> tensor<2x8x24xf32>
  %o = linalg.batch_matmul ins(%p, %v : tensor<2x8x40xf32>, tensor<2x40x24xf32>)
      outs(%o0 : tensor<2x8x24xf32>) -> tensor<2x8x24xf32>
  return %o : tensor<2x8x24xf32>
}
