// A one-row register block (RM = 1) streams B in place (KernelPlan.streams in
// python/prism/codegen/cpu/kernel.py): the task's tile of C starts at its init,
// then each row of C is updated from 8 rows of B at a time, one vector of C
// loaded, eight FMAs, and stored, along whole rows of the task's columns; the
// K slice's rest (20 = 2x8 + 4) one row at a time. No panel buffer is allocated.
// RUN: prism-opt %s -p prism-lower-cpu --print-ir-after=cpu-tile -o /dev/null 2>&1 | filecheck %s --check-prefix=TILE
// RUN: prism-opt %s -p prism-lower-cpu --print-ir-after=cpu-bufferize -o /dev/null 2>&1 | filecheck %s --check-prefix=BUFFERS
// RUN: prism-opt %s -p prism-lower-cpu --print-ir-after=cpu-llvm -o /dev/null 2>&1 | filecheck %s --check-prefix=LLVM

// TILE: IR Dump After cpu-tile
// TILE: func.func @decode(
// TILE-NOT: linalg.matmul
// TILE: scf.parallel
// The tile of C starts at zero (the init is a fill of 0.0), whole vectors, then the masked rest.
// TILE: scf.for {{.*}} step %c8
// TILE: vector.store %{{.*}} : memref<1x100xf32>, vector<8xf32>
// TILE: vector.maskedstore
// TILE: scf.for {{.*}} step %c20
// TILE: scf.for {{.*}} step %c8
// TILE-COUNT-8: vector.broadcast
// TILE: scf.for {{.*}} step %c8
// TILE: vector.load
// TILE-COUNT-8: vector.fma
// TILE: vector.store
// TILE: vector.maskedload
// TILE: scf.for {{.*}} step %c1
// TILE: vector.broadcast
// TILE-NOT: vector.broadcast
// TILE: vector.fma
// TILE: bufferization.to_tensor
// TILE-NOT: IR Dump After

// On buffers: the result allocation only.
// BUFFERS: IR Dump After cpu-bufferize
// BUFFERS: memref.alloc() {alignment = 64 : i64} : memref<1x100xf32>
// BUFFERS-NOT: memref.alloc
// BUFFERS-NOT: tensor.

// LLVM: IR Dump After cpu-llvm
// LLVM-DAG: llvm.func @_mlir_ciface_decode(
// LLVM-DAG: llvm.intr.fmuladd
// LLVM-DAG: llvm.intr.masked.load
// LLVM-NOT: func.func
func.func @decode(%x: tensor<1x60xf32>, %w: tensor<60x100xf32>) -> tensor<1x100xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<1x100xf32>
  %init = linalg.fill ins(%zero : f32) outs(%e : tensor<1x100xf32>) -> tensor<1x100xf32>
  %r = linalg.matmul {prism.roles = ["m", "n", "k"], prism.choice = {TM = 1, TN = 64, TK = 20, RM = 1, RN = 16}}
         ins(%x, %w : tensor<1x60xf32>, tensor<60x100xf32>) outs(%init : tensor<1x100xf32>) -> tensor<1x100xf32>
  return %r : tensor<1x100xf32>
}
