// RUN: prism-opt %s --split-input-file -p 'prism-explore{target=h200},prism-verify' 2>%t.remarks | filecheck %s
// RUN: filecheck %s --check-prefix=REMARK --input-file=%t.remarks

// Three projections of one input with invariant weights: one product over the
// weights concatenated once by @qkv_prepare, sliced apart by @qkv_apply. @qkv
// keeps its signature and stays three products (a call of it would concatenate
// the weights every time); its attributes say how the parts compose, and
// prism-verify proves both @qkv and that composition.
// REMARK: explore.mlir:[[# @LINE + 15]]:1: remark: prism-explore: @qkv kept as written for a plain call (predicted {{.*}} us); 1 value(s) prepared once by @qkv_prepare, then {{.*}} us per call of @qkv_apply ({{.*}}x)
// CHECK-LABEL: func.func @qkv_prepare(
// CHECK-SAME:    attributes {prism.part_of = "qkv"}
// CHECK-COUNT-2: tensor.concat dim(1)
// CHECK-LABEL: func.func @qkv_apply(%arg0: tensor<16x4096xf32>, %arg1: tensor<4096x6144xf32> {prism.invariant})
// CHECK:         linalg.matmul ins(%arg0, %arg1
// CHECK-NOT:     linalg.matmul
// CHECK-COUNT-3: tensor.extract_slice
// CHECK-LABEL: func.func @qkv(
// CHECK-SAME:    {prism.invariant}
// CHECK-SAME:    attributes {prism.apply_args = array<i64: 0, -1>, prism.prepare_args = array<i64: 1, 2, 3>}
// CHECK-NOT:     call
// CHECK-COUNT-3: linalg.matmul
// CHECK-NOT:     tensor.concat
// CHECK:         return
func.func @qkv(%x: tensor<16x4096xf32>, %wq: tensor<4096x4096xf32> {prism.invariant},
               %wk: tensor<4096x1024xf32> {prism.invariant}, %wv: tensor<4096x1024xf32> {prism.invariant})
    -> (tensor<16x4096xf32>, tensor<16x1024xf32>, tensor<16x1024xf32>) {
  %zero = arith.constant 0.0 : f32
  %qe = tensor.empty() : tensor<16x4096xf32>
  %qz = linalg.fill ins(%zero : f32) outs(%qe : tensor<16x4096xf32>) -> tensor<16x4096xf32>
  %q = linalg.matmul ins(%x, %wq : tensor<16x4096xf32>, tensor<4096x4096xf32>) outs(%qz : tensor<16x4096xf32>) -> tensor<16x4096xf32>
  %ke = tensor.empty() : tensor<16x1024xf32>
  %kz = linalg.fill ins(%zero : f32) outs(%ke : tensor<16x1024xf32>) -> tensor<16x1024xf32>
  %k = linalg.matmul ins(%x, %wk : tensor<16x4096xf32>, tensor<4096x1024xf32>) outs(%kz : tensor<16x1024xf32>) -> tensor<16x1024xf32>
  %v = linalg.matmul ins(%x, %wv : tensor<16x4096xf32>, tensor<4096x1024xf32>) outs(%kz : tensor<16x1024xf32>) -> tensor<16x1024xf32>
  return %q, %k, %v : tensor<16x4096xf32>, tensor<16x1024xf32>, tensor<16x1024xf32>
}

// -----

// A single product has no cheaper form: the function is printed as written.
// REMARK-NOT: @gemm
// CHECK-LABEL: func.func @gemm(%arg0: tensor<64x64xf32>, %arg1: tensor<64x64xf32>)
// CHECK:         linalg.matmul ins(%arg0, %arg1
// CHECK-NEXT:    return
func.func @gemm(%a: tensor<64x64xf32>, %b: tensor<64x64xf32>) -> tensor<64x64xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<64x64xf32>
  %z = linalg.fill ins(%zero : f32) outs(%e : tensor<64x64xf32>) -> tensor<64x64xf32>
  %c = linalg.matmul ins(%a, %b : tensor<64x64xf32>, tensor<64x64xf32>) outs(%z : tensor<64x64xf32>) -> tensor<64x64xf32>
  return %c : tensor<64x64xf32>
}

// -----

// An op outside the algebra: the function passes through untouched, with a remark at that op.
// REMARK: explore.mlir:[[# @LINE + 4]]:8: remark: prism-explore: @conv kept as written: 'linalg.conv_2d' is outside the algebra
// CHECK-LABEL: func.func @conv
// CHECK:         linalg.conv_2d
func.func @conv(%x: tensor<10x10xf32>, %k: tensor<3x3xf32>, %o: tensor<8x8xf32>) -> tensor<8x8xf32> {
  %c = linalg.conv_2d ins(%x, %k : tensor<10x10xf32>, tensor<3x3xf32>) outs(%o : tensor<8x8xf32>) -> tensor<8x8xf32>
  return %c : tensor<8x8xf32>
}
