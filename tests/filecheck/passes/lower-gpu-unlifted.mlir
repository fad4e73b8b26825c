// Contractions Prism does not lift (so does not tune) still run on the GPU: each is the generic kernel, one
// thread per output point in a grid-stride loop, its reduction in the thread. The lift's remark says why the
// op is not tuned and what to write instead.
// RUN: prism-opt %s --split-input-file --target=h200 --emit=ptx 2>%t.remarks | filecheck %s --check-prefix=PTX
// RUN: filecheck %s --check-prefix=REMARK --input-file=%t.remarks
// RUN: prism-opt %s --split-input-file --target=h200 --emit=manifest 2>/dev/null | filecheck %s

// REMARK-NOT: error
// REMARK-NOT: prism-lower-gpu

// An integer matmul (i8 x i8 into i32, from a zero fill): the fill is the reduction's start, not a buffer.
// REMARK: lower-gpu-unlifted.mlir:[[# @LINE + 18]]:8: remark: prism-lift: 'linalg.matmul' left unchanged: its element types (i32, i8) are not ones Prism tunes (f64, f32, f16, bf16)
// PTX:        .visible .entry i8_k0_loops(
// PTX:        ld.global.s8
// PTX:        mul.wide.s16
// PTX:        add.s32
// PTX-NOT:    .entry
// CHECK:      "i8": {
// CHECK:      "kernels": [
// CHECK:        "name": "i8_k0_loops",
// CHECK-NEXT:   "grid": [
// CHECK-NEXT:     "max(1, min(cdiv(64 * 64, 256), 65536))",
// CHECK:        "params": [
// CHECK-NEXT:     {
// CHECK-NEXT:       "tensor": "result_0"
func.func @i8(%a: tensor<64x64xi8>, %b: tensor<64x64xi8>) -> tensor<64x64xi32> {
  %z = arith.constant 0 : i32
  %e = tensor.empty() : tensor<64x64xi32>
  %c = linalg.fill ins(%z : i32) outs(%e : tensor<64x64xi32>) -> tensor<64x64xi32>
  %r = linalg.matmul ins(%a, %b : tensor<64x64xi8>, tensor<64x64xi8>) outs(%c : tensor<64x64xi32>)
      -> tensor<64x64xi32>
  return %r : tensor<64x64xi32>
}


// -----

// A matrix-vector product accumulates onto its output vector, which the kernel reads.
// REMARK: lower-gpu-unlifted.mlir:[[# @LINE + 11]]:8: remark: prism-lift: 'linalg.matvec' left unchanged: a matrix-vector product, a contraction Prism does not lift (it has no M or no N loop); to have it tuned, write it as linalg.matmul (linalg.batch_matmul) with a unit dimension
// PTX:        // -----
// PTX:        .visible .entry matvec_k0_loops(
// PTX:        mul.rn.f32
// PTX:        add.rn.f32
// PTX-NOT:    .entry
// CHECK:      "matvec": {
// CHECK:        "name": "matvec_k0_loops",
// CHECK-NEXT:   "grid": [
// CHECK-NEXT:     "max(1, min(cdiv(64, 256), 65536))",
func.func @matvec(%a: tensor<64x32xf32>, %x: tensor<32xf32>, %y: tensor<64xf32>) -> tensor<64xf32> {
  %r = linalg.matvec ins(%a, %x : tensor<64x32xf32>, tensor<32xf32>) outs(%y : tensor<64xf32>) -> tensor<64xf32>
  return %r : tensor<64xf32>
}


// -----

// A product of packed operands: one thread per point of the 4x4x8x8 result.
// REMARK: lower-gpu-unlifted.mlir:[[# @LINE + 11]]:8: remark: prism-lift: 'linalg.mmt4d' left unchanged: a product of packed operands, a contraction Prism does not lift; to have it tuned, write the product unpacked, as linalg.matmul
// PTX:        // -----
// PTX:        .visible .entry mmt4d_k0_loops(
// PTX:        mul.rn.f32
// PTX:        add.rn.f32
// PTX-NOT:    .entry
// CHECK:      "mmt4d": {
// CHECK:        "name": "mmt4d_k0_loops",
// CHECK-NEXT:   "grid": [
// CHECK-NEXT:     "max(1, min(cdiv(4 * 4 * 8 * 8, 256), 65536))",
func.func @mmt4d(%a: tensor<4x8x8x1xf32>, %b: tensor<4x8x8x1xf32>, %c: tensor<4x4x8x8xf32>) -> tensor<4x4x8x8xf32> {
  %r = linalg.mmt4d ins(%a, %b : tensor<4x8x8x1xf32>, tensor<4x8x8x1xf32>) outs(%c : tensor<4x4x8x8xf32>)
      -> tensor<4x4x8x8xf32>
  return %r : tensor<4x4x8x8xf32>
}


// -----

// A quantized product: its zero points are scalar arguments, each a buffer of one element the kernel reads.
// REMARK: lower-gpu-unlifted.mlir:[[# @LINE + 22]]:8: remark: prism-lift: 'linalg.quantized_matmul' left unchanged: a quantized product (with zero points), a contraction Prism does not lift; to have it tuned, subtract the zero points in a linalg.generic that widens the operands to a float type, then write linalg.matmul
// PTX:        // -----
// PTX:        .visible .entry quantized_k0_loops(
// PTX:        sub.s32
// PTX:        mad.lo.s32
// PTX-NOT:    .entry
// CHECK:      "quantized": {
// CHECK:          "name": "arg_2",
// CHECK-NEXT:     "dtype": "i32",
// CHECK-NEXT:     "shape": []
// CHECK:          "name": "arg_3",
// CHECK-NEXT:     "dtype": "i32",
// CHECK-NEXT:     "shape": []
// CHECK:        "name": "quantized_k0_loops",
// CHECK-NEXT:   "grid": [
// CHECK-NEXT:     "max(1, min(cdiv(16 * 8, 256), 65536))",
// CHECK:          "tensor": "arg_2"
// CHECK-NEXT:   },
// CHECK-NEXT:   {
// CHECK-NEXT:     "tensor": "arg_3"
func.func @quantized(%a: tensor<16x32xi8>, %b: tensor<32x8xi8>, %az: i32, %bz: i32,
                     %c: tensor<16x8xi32>) -> tensor<16x8xi32> {
  %r = linalg.quantized_matmul ins(%a, %b, %az, %bz : tensor<16x32xi8>, tensor<32x8xi8>, i32, i32)
      outs(%c : tensor<16x8xi32>) -> tensor<16x8xi32>
  return %r : tensor<16x8xi32>
}
