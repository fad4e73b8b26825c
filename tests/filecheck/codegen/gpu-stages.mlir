// Each stage of the GPU code generator prints on its own; together they take a tuned f16 matmul to PTX.
// RUN: prism-opt %s -p prism-lower-gpu --print-ir-after=gpu-tile -o /dev/null 2>&1 | filecheck %s --check-prefix=TILE
// RUN: prism-opt %s -p prism-lower-gpu --print-ir-after=gpu-bufferize -o /dev/null 2>&1 | filecheck %s --check-prefix=BUFFERS
// RUN: prism-opt %s -p prism-lower-gpu --print-ir-after=gpu-map -o /dev/null 2>&1 | filecheck %s --check-prefix=MAP
// RUN: prism-opt %s -p prism-lower-gpu --print-ir-after=gpu-hoist -o /dev/null 2>&1 | filecheck %s --check-prefix=HOIST
// RUN: prism-opt %s -p prism-lower-gpu --print-ir-after=gpu-outline -o /dev/null 2>&1 | filecheck %s --check-prefix=OUTLINE
// RUN: prism-opt %s -p prism-lower-gpu --print-ir-after=gpu-mma -o /dev/null 2>&1 | filecheck %s --check-prefix=MMA
// RUN: prism-opt %s -p prism-lower-gpu --print-ir-after=gpu-vector -o /dev/null 2>&1 | filecheck %s --check-prefix=VECTOR
// RUN: prism-opt %s -p prism-lower-gpu --print-ir-after=gpu-shared -o /dev/null 2>&1 | filecheck %s --check-prefix=SHARED
// RUN: prism-opt %s -p prism-lower-gpu --print-ir-after=gpu-nvvm -o /dev/null 2>&1 | filecheck %s --check-prefix=NVVM

// Blocks of 32x32 on tensors (a 2x2 grid), the fill fused into each block, a loop over K in steps of 16.
// TILE: IR Dump After gpu-tile
// TILE: scf.forall (%{{.*}}, %{{.*}}) in (2, 2)
// TILE: linalg.fill
// TILE: scf.for
// TILE: linalg.matmul {{.*}}ins({{.*}} : tensor<32x16xf16>, tensor<16x32xf16>)
// TILE: mapping = [#gpu.block<linear_dim_1>, #gpu.block<linear_dim_0>]

// BUFFERS: IR Dump After gpu-bufferize
// BUFFERS: func.func @mm(%arg0: memref<64x64xf16>, %arg1: memref<64x64xf16>) -> memref<64x64xf32>
// BUFFERS-NOT: tensor<

// A launch; A and B tiles copied into workgroup memory; warps of the 2x2 warp grid.
// MAP: IR Dump After gpu-map
// MAP: gpu.launch
// MAP: memref.alloca() {{.*}}#gpu.address_space<workgroup>
// MAP: gpu.barrier
// MAP: vector.contract

// The accumulator is carried through the K loop in registers.
// HOIST: IR Dump After gpu-hoist
// HOIST: scf.for {{.*}} iter_args
// HOIST: vector.contract

// One kernel, outlined into its gpu.module.
// OUTLINE: IR Dump After gpu-outline
// OUTLINE: gpu.launch_func @mm_kernel::@mm_kernel
// OUTLINE: gpu.module @mm_kernel
// OUTLINE: gpu.func @mm_kernel({{.*}}) kernel

// Tensor cores: ldmatrix and mma.sync, no vector.contract left.
// MMA: IR Dump After gpu-mma
// MMA-NOT: vector.contract
// MMA: nvgpu.ldmatrix
// MMA: nvgpu.mma.sync

// VECTOR: IR Dump After gpu-vector
// VECTOR-NOT: vector.transfer_read
// VECTOR: nvgpu.mma.sync

// Shared memory as aligned globals in address space 3.
// SHARED: IR Dump After gpu-shared
// SHARED: memref.global "private" @alloca : memref<1024xi8, 3> {alignment = 16 : i64}
// SHARED-NOT: #gpu.address_space<workgroup>

// Host code in the LLVM dialect launching the compiled kernel.
// NVVM: IR Dump After gpu-nvvm
// NVVM: llvm.func @mm(
// NVVM: gpu.launch_func @mm_kernel::@mm_kernel
// NVVM: gpu.binary @mm_kernel [#gpu.object<#nvvm.target<chip = "sm_90", features = "+ptx80">
func.func @mm(%a: tensor<64x64xf16>, %b: tensor<64x64xf16>) -> tensor<64x64xf32> {
  %z = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<64x64xf32>
  %f = linalg.fill ins(%z : f32) outs(%e : tensor<64x64xf32>) -> tensor<64x64xf32>
  %r = linalg.matmul {prism.choice = {BM = 32, BN = 32, BK = 16, WM = 16, WN = 16, MMA = 1}}
         ins(%a, %b : tensor<64x64xf16>, tensor<64x64xf16>) outs(%f : tensor<64x64xf32>) -> tensor<64x64xf32>
  return %r : tensor<64x64xf32>
}
