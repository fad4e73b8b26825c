// Unusual but valid programs lower to PTX and a manifest, with remarks, never an error or an abort.
// RUN: prism-opt %s --split-input-file --target=h200 --emit=ptx 2>%t.remarks | filecheck %s
// RUN: prism-opt %s --split-input-file --target=h200 --emit=manifest 2>/dev/null | filecheck %s --check-prefix=MANIFEST
// RUN: filecheck %s --check-prefix=REMARK --input-file=%t.remarks

// REMARK-NOT: error
// REMARK-NOT: warning

// A rank-4 elementwise op: one pointwise kernel over all 192 points, 4 a thread, in one block of 256 threads.
// CHECK: .target sm_90a
// CHECK: .visible .entry add4_k0_pointwise(
// CHECK-NOT: .entry
// MANIFEST: "add4": {
// MANIFEST: "name": "add4_k0_pointwise",
// MANIFEST-NEXT: "grid": [
// MANIFEST-NEXT: "cdiv(2 * 3 * 4 * 8 // 4, 256)",
// MANIFEST-NEXT: "1",
// MANIFEST-NEXT: "1"
func.func @add4(%a: tensor<2x3x4x8xf32>, %b: tensor<2x3x4x8xf32>) -> tensor<2x3x4x8xf32> {
  %e = tensor.empty() : tensor<2x3x4x8xf32>
  %r = linalg.add ins(%a, %b : tensor<2x3x4x8xf32>, tensor<2x3x4x8xf32>) outs(%e : tensor<2x3x4x8xf32>) -> tensor<2x3x4x8xf32>
  return %r : tensor<2x3x4x8xf32>
}

// -----

// A rank-4 transpose: one pointwise kernel that reads its input through the permutation.
// CHECK: // -----
// CHECK: .visible .entry transpose4_k0_pointwise(
// CHECK-NOT: .entry
// MANIFEST: "transpose4": {
// MANIFEST: "name": "transpose4_k0_pointwise",
// MANIFEST-NEXT: "grid": [
// MANIFEST-NEXT: "cdiv(8 * 4 * 3 * 2 // 2, 256)",
func.func @transpose4(%a: tensor<2x3x4x8xf32>) -> tensor<8x4x3x2xf32> {
  %e = tensor.empty() : tensor<8x4x3x2xf32>
  %r = linalg.transpose ins(%a : tensor<2x3x4x8xf32>) outs(%e : tensor<8x4x3x2xf32>) permutation = [3, 2, 1, 0]
  return %r : tensor<8x4x3x2xf32>
}

// -----

// A contraction written as a generic that widens f16 to f32 (the SIMT lowering of the former code generator
// crashed on it): Prism's GEMM kernel, on tensor cores (wgmma on sm_90a).
// CHECK: // -----
// CHECK: .visible .entry widening_k0_gemm(
// CHECK: wgmma.mma_async.sync.aligned.m64n{{[0-9]+}}k16.f32.f16.f16
// CHECK-NOT: .entry
// MANIFEST: "widening": {
// MANIFEST: "name": "widening_k0_gemm",
func.func @widening(%a: tensor<32x8xf16>, %b: tensor<8x64xf16>) -> tensor<32x64xf32> {
  %z = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<32x64xf32>
  %f = linalg.fill ins(%z : f32) outs(%e : tensor<32x64xf32>) -> tensor<32x64xf32>
  %r = linalg.generic {indexing_maps = [affine_map<(m, n, k) -> (m, k)>, affine_map<(m, n, k) -> (k, n)>,
                                        affine_map<(m, n, k) -> (m, n)>],
                       iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%a, %b : tensor<32x8xf16>, tensor<8x64xf16>) outs(%f : tensor<32x64xf32>) {
  ^bb0(%x: f16, %y: f16, %acc: f32):
    %xf = arith.extf %x : f16 to f32
    %yf = arith.extf %y : f16 to f32
    %p = arith.mulf %xf, %yf : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  } -> tensor<32x64xf32>
  return %r : tensor<32x64xf32>
}

// -----

// An empty dimension: nothing to tune (a remark at the op), and nothing runs on the GPU: the kernel's grid has a
// zero extent, and a kernel whose grid has a zero extent is not launched.
// REMARK: gpu-unusual.mlir:[[# @LINE + 10]]:8: remark: prism-lift: 'linalg.matmul' left unchanged: an empty dimension leaves nothing to compute
// CHECK: // -----
// CHECK: .visible .entry empty_k0_{{[a-z_]+}}(
// MANIFEST: "empty": {
// MANIFEST: "name": "empty_k0_{{[a-z_]+}}",
// MANIFEST-NEXT: "grid": [
// MANIFEST-NEXT: "cdiv(0 * 16, {{[0-9]+}})",
func.func @empty(%a: tensor<0x16xf32>, %b: tensor<16x16xf32>, %c: tensor<0x16xf32>) -> tensor<0x16xf32> {
  %z = arith.constant 0.0 : f32
  %f = linalg.fill ins(%z : f32) outs(%c : tensor<0x16xf32>) -> tensor<0x16xf32>
  %r = linalg.matmul ins(%a, %b : tensor<0x16xf32>, tensor<16x16xf32>) outs(%f : tensor<0x16xf32>) -> tensor<0x16xf32>
  return %r : tensor<0x16xf32>
}

// -----

// A function with no tensors at all: a function of no kernels, and a module with no entry.
// REMARK: gpu-unusual.mlir:[[# @LINE + 7]]:1: remark: prism-explore: @nothing kept as written: it has no tensor arguments or results
// CHECK: // -----
// CHECK: .target sm_90a
// CHECK-NOT: .entry
// MANIFEST: "nothing": {
// MANIFEST: "temporaries": [],
// MANIFEST-NEXT: "kernels": []
func.func @nothing() {
  return
}
