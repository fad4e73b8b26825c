// The direct GEMM kernel copies B into panels in a phase of its own up to prism-lower-cpu's copy_in_phase_bytes
// of B, and pipelined beyond (KernelPlan.pipelined): a 256 KiB B, which any L3 holds, at the two sides of that
// bound. Pipelined, each worker has two panel buffers and prefetches the B it will copy; in phase, one, and no
// prefetch.
// RUN: prism-opt %s -p 'prism-lower-cpu{threads=2 copy_in_phase_bytes=0}' --print-ir-after=cpu-tile -o /dev/null 2>&1 | filecheck %s --check-prefix=PIPELINED
// RUN: prism-opt %s -p 'prism-lower-cpu{threads=2 copy_in_phase_bytes=262143}' --print-ir-after=cpu-tile -o /dev/null 2>&1 | filecheck %s --check-prefix=PIPELINED
// RUN: prism-opt %s -p 'prism-lower-cpu{threads=2 copy_in_phase_bytes=262144}' --print-ir-after=cpu-tile -o /dev/null 2>&1 | filecheck %s --check-prefix=IN-PHASE

// PIPELINED-LABEL: IR Dump After cpu-tile
// PIPELINED: memref.alloc() {alignment = 64 : i64} : memref<2x2x8x64x16xf32>
// PIPELINED: scf.parallel
// PIPELINED: memref.prefetch %{{.*}}, read, locality<3>, data : memref<256x256xf32>
// PIPELINED: return

// IN-PHASE-LABEL: IR Dump After cpu-tile
// IN-PHASE: memref.alloc() {alignment = 64 : i64} : memref<2x1x8x64x16xf32>
// IN-PHASE: scf.parallel
// IN-PHASE-NOT: memref.prefetch
// IN-PHASE: return
func.func @mm(%a: tensor<16x256xf32>, %b: tensor<256x256xf32>) -> tensor<16x256xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<16x256xf32>
  %init = linalg.fill ins(%zero : f32) outs(%e : tensor<16x256xf32>) -> tensor<16x256xf32>
  %r = linalg.matmul {prism.roles = ["m", "n", "k"], prism.choice = {TM = 16, TN = 128, TK = 64, RM = 8, RN = 16, PACK = 1}}
         ins(%a, %b : tensor<16x256xf32>, tensor<256x256xf32>) outs(%init : tensor<16x256xf32>) -> tensor<16x256xf32>
  return %r : tensor<16x256xf32>
}
