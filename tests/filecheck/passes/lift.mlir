// RUN: prism-opt %s --split-input-file -p prism-lift 2>%t.remarks | filecheck %s
// RUN: filecheck %s --check-prefix=REMARK --input-file=%t.remarks

// A plain matmul becomes a family; its payload moves to a private function.
// CHECK-LABEL: func.func @matmul
// CHECK-SAME:    (%[[A:.*]]: tensor<64x32xf32>, %[[B:.*]]: tensor<32x16xf32>, %[[C:.*]]: tensor<64x16xf32>)
// CHECK:         %[[F:.*]] = call @matmul_family0(%[[A]], %[[B]], %[[C]])
// CHECK:         return %[[F]]
// CHECK:       func.func private @matmul_family0
// CHECK-SAME:    attributes {prism.family_body}
// CHECK-NEXT:    "prism.family"()
// CHECK-SAME:      domain = "[LB, LM, LN, LK, DM, DN, DK] -> { [tm, tn, tk{{( = [0-9]+)?}}, rm{{( = [0-9]+)?}}, rn{{( = [0-9]+)?}}, m3{{( = [0-9]+)?}}, t3
// CHECK-SAME:      kind = "gemm"
// CHECK-SAME:      stats = {space = {{[0-9]+}} : i64}
// CHECK-SAME:      symbols = ["TM", "TN", "TK", "RM", "RN"]
// CHECK-NEXT:    linalg.matmul
func.func @matmul(%a: tensor<64x32xf32>, %b: tensor<32x16xf32>, %c: tensor<64x16xf32>) -> tensor<64x16xf32> {
  %0 = linalg.matmul ins(%a, %b : tensor<64x32xf32>, tensor<32x16xf32>) outs(%c : tensor<64x16xf32>) -> tensor<64x16xf32>
  return %0 : tensor<64x16xf32>
}

// -----

// A product's init made by a fill moves into its family's body with it, so that the body computes what the
// program does (a kernel starts at a fill of zero rather than reading it): one fill shared by two products is
// copied into both and erased outside, with the size it reads from a tensor. A fill whose size is a scalar from
// elsewhere stays outside: the body would take that scalar as an argument.
// CHECK-LABEL: func.func @filled_inits
// CHECK-SAME:    (%[[A:.*]]: tensor<?x32xf32>, %[[B:.*]]: tensor<32x16xf32>, %[[B2:.*]]: tensor<32x16xf32>, %[[N:.*]]: index, %[[W:.*]]: tensor<16x32xf32>)
// CHECK-NOT:     linalg.fill
// CHECK:         call @filled_inits_family0(%[[A]], %[[B]]) : (tensor<?x32xf32>, tensor<32x16xf32>)
// CHECK-NOT:     linalg.fill
// CHECK:         call @filled_inits_family1(%[[A]], %[[B2]]) : (tensor<?x32xf32>, tensor<32x16xf32>)
// CHECK:         %[[E:.*]] = tensor.empty(%[[N]])
// CHECK:         %[[I:.*]] = linalg.fill ins(%{{.*}} : f32) outs(%[[E]] : tensor<?x32xf32>)
// CHECK:         call @filled_inits_family2(%{{.*}}, %[[W]], %[[I]])
// CHECK:       func.func private @filled_inits_family0(%[[FA:.*]]: tensor<?x32xf32>, %{{.*}}: tensor<32x16xf32>)
// CHECK-NEXT:    "prism.family"()
// CHECK:         %[[D:.*]] = tensor.dim %[[FA]]
// CHECK-NEXT:    %[[FE:.*]] = tensor.empty(%[[D]]) : tensor<?x16xf32>
// CHECK-NEXT:    %[[FI:.*]] = linalg.fill ins(%{{.*}} : f32) outs(%[[FE]] : tensor<?x16xf32>)
// CHECK-NEXT:    linalg.matmul ins({{.*}}) outs(%[[FI]] : tensor<?x16xf32>)
// CHECK:       func.func private @filled_inits_family1
// CHECK:         linalg.fill
// CHECK-NEXT:    linalg.matmul
// CHECK:       func.func private @filled_inits_family2(%{{.*}}: tensor<?x16xf32>, %{{.*}}: tensor<16x32xf32>, %{{.*}}: tensor<?x32xf32>)
// CHECK-NEXT:    "prism.family"()
// CHECK-NEXT:    linalg.matmul
func.func @filled_inits(%a: tensor<?x32xf32>, %b: tensor<32x16xf32>, %b2: tensor<32x16xf32>, %n: index,
                        %w: tensor<16x32xf32>)
    -> (tensor<?x16xf32>, tensor<?x16xf32>, tensor<?x32xf32>) {
  %i0 = arith.constant 0 : index
  %zero = arith.constant 0.0 : f32
  %m = tensor.dim %a, %i0 : tensor<?x32xf32>
  %e = tensor.empty(%m) : tensor<?x16xf32>
  %init = linalg.fill ins(%zero : f32) outs(%e : tensor<?x16xf32>) -> tensor<?x16xf32>
  %0 = linalg.matmul ins(%a, %b : tensor<?x32xf32>, tensor<32x16xf32>) outs(%init : tensor<?x16xf32>) -> tensor<?x16xf32>
  %1 = linalg.matmul ins(%a, %b2 : tensor<?x32xf32>, tensor<32x16xf32>) outs(%init : tensor<?x16xf32>) -> tensor<?x16xf32>
  %e2 = tensor.empty(%n) : tensor<?x32xf32>
  %init2 = linalg.fill ins(%zero : f32) outs(%e2 : tensor<?x32xf32>) -> tensor<?x32xf32>
  %2 = linalg.matmul ins(%0, %w : tensor<?x16xf32>, tensor<16x32xf32>) outs(%init2 : tensor<?x32xf32>) -> tensor<?x32xf32>
  return %0, %1, %2 : tensor<?x16xf32>, tensor<?x16xf32>, tensor<?x32xf32>
}

// -----

// Transposed B through indexing_maps, and a batch matmul.
// CHECK-LABEL: func.func @transposed_and_batched
// CHECK:         call @transposed_and_batched_family0(
// CHECK:         call @transposed_and_batched_family1(
// CHECK:       func.func private @transposed_and_batched_family0
// CHECK:         "prism.family"(){{.*}}kind = "gemm"
// CHECK:         linalg.matmul indexing_maps
// CHECK:       func.func private @transposed_and_batched_family1
// CHECK:         "prism.family"(){{.*}}kind = "batch_gemm"
// CHECK:         linalg.batch_matmul
func.func @transposed_and_batched(%a: tensor<8x4xf32>, %bt: tensor<6x4xf32>, %c: tensor<8x6xf32>,
                                  %x: tensor<2x8x4xf32>, %y: tensor<2x4x6xf32>, %z: tensor<2x8x6xf32>)
    -> (tensor<8x6xf32>, tensor<2x8x6xf32>) {
  %0 = linalg.matmul indexing_maps = [affine_map<(m, n, k) -> (m, k)>, affine_map<(m, n, k) -> (n, k)>,
                                      affine_map<(m, n, k) -> (m, n)>]
         ins(%a, %bt : tensor<8x4xf32>, tensor<6x4xf32>) outs(%c : tensor<8x6xf32>) -> tensor<8x6xf32>
  %1 = linalg.batch_matmul ins(%x, %y : tensor<2x8x4xf32>, tensor<2x4x6xf32>) outs(%z : tensor<2x8x6xf32>) -> tensor<2x8x6xf32>
  return %0, %1 : tensor<8x6xf32>, tensor<2x8x6xf32>
}

// -----

// A linalg.generic contraction (A^T B) is lifted too.
// CHECK-LABEL: func.func @generic_contraction
// CHECK:         call @generic_contraction_family0
// CHECK:       func.func private @generic_contraction_family0
// CHECK:         "prism.family"
// CHECK:         linalg.generic
func.func @generic_contraction(%at: tensor<16x8xf32>, %b: tensor<16x4xf32>, %c: tensor<8x4xf32>) -> tensor<8x4xf32> {
  %0 = linalg.generic {indexing_maps = [affine_map<(m, n, k) -> (k, m)>, affine_map<(m, n, k) -> (k, n)>,
                                        affine_map<(m, n, k) -> (m, n)>],
                       iterator_types = ["parallel", "parallel", "reduction"]}
       ins(%at, %b : tensor<16x8xf32>, tensor<16x4xf32>) outs(%c : tensor<8x4xf32>) {
  ^bb0(%x: f32, %y: f32, %acc: f32):
    %p = arith.mulf %x, %y : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  } -> tensor<8x4xf32>
  return %0 : tensor<8x4xf32>
}

// -----

// Everything else stays as it is; a computation that is not lifted gets a remark pointing at it, plumbing
// (a pad, constants) none.
// CHECK-LABEL: func.func @mixed
// CHECK:         tensor.pad
// CHECK:         linalg.conv_2d_nhwc_hwcf
// CHECK:         call @mixed_family0
// REMARK-NOT: tensor.pad
// REMARK: lift.mlir:[[# @LINE + 8]]:11: remark: prism-lift: 'linalg.conv_2d_nhwc_hwcf' left unchanged: not a contraction
func.func @mixed(%img: tensor<1x6x6x2xf32>, %filter: tensor<3x3x2x4xf32>, %out: tensor<1x6x6x4xf32>,
                 %a: tensor<4x4xf32>, %b: tensor<4x4xf32>, %c: tensor<4x4xf32>) -> (tensor<1x6x6x4xf32>, tensor<4x4xf32>) {
  %zero = arith.constant 0.0 : f32
  %padded = tensor.pad %img low[0, 1, 1, 0] high[0, 1, 1, 0] {
  ^bb0(%i: index, %j: index, %k: index, %l: index):
    tensor.yield %zero : f32
  } : tensor<1x6x6x2xf32> to tensor<1x8x8x2xf32>
  %conv = linalg.conv_2d_nhwc_hwcf ins(%padded, %filter : tensor<1x8x8x2xf32>, tensor<3x3x2x4xf32>)
                                   outs(%out : tensor<1x6x6x4xf32>) -> tensor<1x6x6x4xf32>
  %mm = linalg.matmul ins(%a, %b : tensor<4x4xf32>, tensor<4x4xf32>) outs(%c : tensor<4x4xf32>) -> tensor<4x4xf32>
  return %conv, %mm : tensor<1x6x6x4xf32>, tensor<4x4xf32>
}
