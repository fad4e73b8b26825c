// Unusual but valid programs lower to PTX (or to host code only), with remarks, never an error or an abort.
// RUN: prism-opt %s --split-input-file --target=h200 --emit=ptx 2>/dev/null | filecheck %s
// RUN: prism-opt %s --split-input-file --target=h200 --emit=ptx 2>&1 >/dev/null | filecheck %s --check-prefix=REMARK

// A rank-4 elementwise op: three dimensions are spread over the grid, the fourth is a loop in each block
// (thread ids are linearized over at most three dimensions).
// CHECK-LABEL: // ----- gpu.module @add4_kernel
// CHECK: .visible .entry add4_kernel
func.func @add4(%a: tensor<2x3x4x8xf32>, %b: tensor<2x3x4x8xf32>) -> tensor<2x3x4x8xf32> {
  %e = tensor.empty() : tensor<2x3x4x8xf32>
  %r = linalg.add ins(%a, %b : tensor<2x3x4x8xf32>, tensor<2x3x4x8xf32>) outs(%e : tensor<2x3x4x8xf32>) -> tensor<2x3x4x8xf32>
  return %r : tensor<2x3x4x8xf32>
}

// -----

// A rank-4 transpose.
// CHECK-LABEL: // ----- gpu.module @transpose4_kernel
// CHECK: .visible .entry transpose4_kernel
func.func @transpose4(%a: tensor<2x3x4x8xf32>) -> tensor<8x4x3x2xf32> {
  %e = tensor.empty() : tensor<8x4x3x2xf32>
  %r = linalg.transpose ins(%a : tensor<2x3x4x8xf32>) outs(%e : tensor<8x4x3x2xf32>) permutation = [3, 2, 1, 0]
  return %r : tensor<8x4x3x2xf32>
}

// -----

// An empty dimension: nothing to tune (a remark at the op) and nothing to run on the GPU.
// REMARK: gpu-unusual.mlir:[[# @LINE + 5]]:8: remark: prism-lift: 'linalg.matmul' left unchanged: an empty dimension leaves nothing to compute
// REMARK: gpu-unusual.mlir: remark: prism-lower-gpu: no op to run on the GPU
func.func @empty(%a: tensor<0x16xf32>, %b: tensor<16x16xf32>, %c: tensor<0x16xf32>) -> tensor<0x16xf32> {
  %z = arith.constant 0.0 : f32
  %f = linalg.fill ins(%z : f32) outs(%c : tensor<0x16xf32>) -> tensor<0x16xf32>
  %r = linalg.matmul ins(%a, %b : tensor<0x16xf32>, tensor<16x16xf32>) outs(%f : tensor<0x16xf32>) -> tensor<0x16xf32>
  return %r : tensor<0x16xf32>
}

// -----

// A function with no tensors at all.
// REMARK: gpu-unusual.mlir:[[# @LINE + 2]]:1: remark: prism-explore: @nothing kept as written: it has no tensor arguments or results
// REMARK: gpu-unusual.mlir: remark: prism-lower-gpu: no op to run on the GPU
func.func @nothing() {
  return
}
