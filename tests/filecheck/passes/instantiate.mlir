// RUN: prism-opt %s -p prism-instantiate | filecheck %s

// The call is replaced by the payload, annotated; the payload function goes.
// CHECK-LABEL: func.func @gemm
// CHECK-NOT:     call
// CHECK:         %[[R:.*]] = linalg.matmul {prism.choice = {RM = 4 : i64, RN = 16 : i64, TK = 128 : i64, TM = 64 : i64, TN = 256 : i64}, prism.roles = ["m", "n", "k"]} ins(%arg0, %arg1 : {{.*}}) outs(%arg2 : {{.*}})
// CHECK:         return %[[R]]
// CHECK-NOT:   func.func private @gemm_family0
func.func @gemm(%a: tensor<64x32xf32>, %b: tensor<32x16xf32>, %c: tensor<64x16xf32>) -> tensor<64x16xf32> {
  %0 = call @gemm_family0(%a, %b, %c) : (tensor<64x32xf32>, tensor<32x16xf32>, tensor<64x16xf32>) -> tensor<64x16xf32>
  return %0 : tensor<64x16xf32>
}
func.func private @gemm_family0(%a: tensor<64x32xf32>, %b: tensor<32x16xf32>, %c: tensor<64x16xf32>)
    -> tensor<64x16xf32> attributes {prism.family_body} {
  "prism.family"() {kind = "gemm", symbols = ["TM", "TN", "TK", "RM", "RN"], domain = "{ [tm, tn, tk, rm, rn] : tm = 6 }",
                    cost = "", stats = {}, choice = {TM = 64, TN = 256, TK = 128, RM = 4, RN = 16}} : () -> ()
  %0 = linalg.matmul ins(%a, %b : tensor<64x32xf32>, tensor<32x16xf32>) outs(%c : tensor<64x16xf32>) -> tensor<64x16xf32>
  return %0 : tensor<64x16xf32>
}
