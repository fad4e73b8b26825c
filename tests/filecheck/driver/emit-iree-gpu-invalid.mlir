// RUN: not prism-opt %s --target=mi300x --emit=ptx 2>&1 | filecheck %s --check-prefix=LOWER
// RUN: not prism-opt %s --target=mi300x --emit=llvm 2>&1 | filecheck %s --check-prefix=LOWER
// RUN: not prism-opt %s --target=mi300x -p 'prism-lower-gpu{chip=gfx942}' 2>&1 | filecheck %s --check-prefix=CHIP

// Prism searches the MI300X but does not lower for it (its LLVM has no AMDGPU backend): asking for PTX or the
// LLVM dialect is refused before anything runs, and prism-lower-gpu knows NVIDIA chips only.
// LOWER-NOT: Traceback
// LOWER: emit-iree-gpu-invalid.mlir: error: --emit={{ptx|llvm}}: Prism does not lower for target 'mi300x' itself; --emit=iree writes IREE's input with Prism's configurations
// CHIP-NOT: Traceback
// CHIP: error: prism-lower-gpu: option 'chip' must be one of {sm_80, sm_90, sm_90a}, got 'gfx942'
func.func @mm(%a: tensor<64x64xf16>, %b: tensor<64x64xf16>) -> tensor<64x64xf32> {
  %z = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<64x64xf32>
  %c = linalg.fill ins(%z : f32) outs(%e : tensor<64x64xf32>) -> tensor<64x64xf32>
  %r = linalg.matmul ins(%a, %b : tensor<64x64xf16>, tensor<64x64xf16>) outs(%c : tensor<64x64xf32>) -> tensor<64x64xf32>
  return %r : tensor<64x64xf32>
}
