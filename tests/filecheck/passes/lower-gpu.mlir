// RUN: prism-opt %s --target=h200 -p prism-lower-gpu --emit=ptx | filecheck %s --check-prefix=PTX
// RUN: prism-opt %s --target=a100 -p 'prism-lower-gpu{chip=sm_80}' | filecheck %s --check-prefix=HOST

// An f16 GEMM with tensor cores: shared-memory staging, ldmatrix and mma.sync.
// PTX: // ----- gpu.module @mma_kernel
// PTX: .target sm_90
// PTX: .shared
// PTX: ldmatrix.sync.aligned
// PTX: mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32
// HOST-LABEL: llvm.func @mma(
// HOST:         gpu.launch_func @mma_kernel::@mma_kernel blocks in
// HOST:       gpu.binary @mma_kernel
func.func @mma(%a: tensor<128x64xf16>, %b: tensor<64x128xf16>) -> tensor<128x128xf32> {
  %zero = arith.constant 0.0 : f32
  %empty = tensor.empty() : tensor<128x128xf32>
  %acc = linalg.fill ins(%zero : f32) outs(%empty : tensor<128x128xf32>) -> tensor<128x128xf32>
  %c = linalg.matmul {prism.roles = ["m", "n", "k"],
                      prism.choice = {BM = 64, BN = 64, BK = 32, WM = 32, WN = 32, MMA = 1}}
         ins(%a, %b : tensor<128x64xf16>, tensor<64x128xf16>) outs(%acc : tensor<128x128xf32>) -> tensor<128x128xf32>
  return %c : tensor<128x128xf32>
}
