// RUN: prism-opt %s | prism-opt | filecheck %s
// RUN: %mlir-opt --irdl-file=%prism-dialect %s | filecheck %s
// RUN: prism-opt %s -p prism-lift | %mlir-opt --irdl-file=%prism-dialect | filecheck %s --check-prefix=LIFTED

// The sGraph dialect round-trips through prism-opt, and stock mlir-opt reads
// it from the IRDL file, including what prism-lift prints.
// CHECK-LABEL: func.func private @mm_family0
// CHECK:         "prism.family"() {choice = {TM = 64 : i64}, cost = "", domain = "{ [tm] : tm = 6 }", kind = "gemm", stats = {space = 1 : i64}, symbols = ["TM"]} : () -> ()
// LIFTED:      func.func private @mm_family0(
// LIFTED:        "prism.family"() {choice = {TM = 64 : i64}
// LIFTED:      func.func private @mm_family0_1(
// LIFTED:        "prism.family"() {cost = "", domain = "[LB, LM, LN, LK, DM, DN, DK] -> {
func.func private @mm_family0(%a: tensor<8x8xf32>, %b: tensor<8x8xf32>, %c: tensor<8x8xf32>)
    -> tensor<8x8xf32> attributes {prism.family_body} {
  "prism.family"() {kind = "gemm", symbols = ["TM"], domain = "{ [tm] : tm = 6 }", cost = "", stats = {space = 1},
                    choice = {TM = 64}} : () -> ()
  %0 = linalg.matmul ins(%a, %b : tensor<8x8xf32>, tensor<8x8xf32>) outs(%c : tensor<8x8xf32>) -> tensor<8x8xf32>
  return %0 : tensor<8x8xf32>
}
func.func @mm(%a: tensor<8x8xf32>, %b: tensor<8x8xf32>, %c: tensor<8x8xf32>) -> tensor<8x8xf32> {
  %0 = linalg.matmul ins(%a, %b : tensor<8x8xf32>, tensor<8x8xf32>) outs(%c : tensor<8x8xf32>) -> tensor<8x8xf32>
  return %0 : tensor<8x8xf32>
}
