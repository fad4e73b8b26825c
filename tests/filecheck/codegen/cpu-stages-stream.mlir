// A one-row register block (RM = 1) streams B in place (KernelPlan.streams in
// python/prism/codegen/cpu/kernel.py): a row of C is updated from 8 rows of B
// at a time (a vector of C loaded, eight products summed in two chains of
// FMAs, stored), along whole rows of the
// task's columns; the rest of a K slice (20 = 2x8 + 4) one row of B at a time.
// No panel buffer is allocated.
// RUN: prism-opt %s --split-input-file -p 'prism-lower-cpu{threads=2}' --print-ir-after=cpu-tile -o /dev/null 2>&1 | filecheck %s --check-prefix=TILE
// RUN: prism-opt %s --split-input-file -p 'prism-lower-cpu{threads=2}' --print-ir-after=cpu-bufferize -o /dev/null 2>&1 | filecheck %s --check-prefix=BUFFERS
// RUN: prism-opt %s --split-input-file -p 'prism-lower-cpu{threads=2}' --print-ir-after=cpu-llvm -o /dev/null 2>&1 | filecheck %s --check-prefix=LLVM

// Decode (one row of C): the two workers split K, each summing into its own
// row of partial sums (zeroed first), and a second parallel loop adds them.
// TILE-LABEL: IR Dump After cpu-tile
// TILE: func.func @decode(
// TILE-NOT: linalg.matmul
// TILE: %[[PART:.*]] = memref.alloc() {alignment = 64 : i64} : memref<2x1x100xf32>
// TILE: scf.parallel (%[[W:.*]]) =
// TILE: vector.store %{{.*}}, %[[PART]][%[[W]], %c0, %{{.*}}] : memref<2x1x100xf32>, vector<8xf32>
// TILE: vector.maskedstore %[[PART]][%[[W]]
// TILE: scf.for {{.*}} step %c20
// TILE: scf.for {{.*}} step %c8
// TILE-COUNT-8: vector.broadcast
// TILE: scf.for {{.*}} step %c16
// TILE: vector.load %[[PART]][%[[W]]
// TILE-COUNT-14: vector.fma
// TILE: vector.store %{{.*}}, %[[PART]][%[[W]]
// TILE: vector.maskedload
// TILE: scf.for {{.*}} step %c1 {
// TILE: vector.broadcast
// TILE-NOT: vector.broadcast
// TILE: vector.fma
// TILE: scf.parallel
// TILE: vector.load %[[PART]][%c0, %c0
// TILE: vector.load %[[PART]][%c1, %c0
// TILE: arith.addf
// TILE: vector.store {{.*}} : memref<1x100xf32>, vector<8xf32>
// TILE: bufferization.to_tensor
// TILE-NOT: IR Dump After

// On buffers: the result and the partial sums; no tensors left.
// BUFFERS-LABEL: IR Dump After cpu-bufferize
// BUFFERS-DAG: memref.alloc() {alignment = 64 : i64} : memref<1x100xf32>
// BUFFERS-DAG: memref.alloc() {alignment = 64 : i64} : memref<2x1x100xf32>
// BUFFERS-NOT: tensor.

// LLVM-LABEL: IR Dump After cpu-llvm
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

// -----

// Three rows: the workers share the 64-wide column tasks, each row of C is
// set to its init (the argument %c) and then streamed into, in place: each
// group of 8 rows of B updates every row of the tile before the next group.
// TILE-LABEL: IR Dump After cpu-tile
// TILE: func.func @rows(
// TILE: %[[C:.*]] = memref.alloc() {alignment = 64 : i64} : memref<3x100xf32>
// TILE-NOT: memref.alloc
// TILE: scf.parallel
// TILE: vector.store %{{.*}}, %[[C]]
// TILE: scf.for %[[P0:.*]] = %c0 to %c60 step %c20
// TILE: scf.for %[[KK:.*]] = %c0 to %{{.*}} step %c8
// TILE-NEXT: arith.addi %[[P0]], %[[KK]]
// TILE-COUNT-7: arith.addi
// TILE-NEXT: scf.for %[[ROW:.*]] = %{{.*}} to %{{.*}} step %c1
// TILE-COUNT-8: tensor.extract %{{.*}}[%[[ROW]],
// TILE-COUNT-8: vector.broadcast
// TILE: vector.load %[[C]]
// TILE-COUNT-14: vector.fma
// TILE: vector.store %{{.*}}, %[[C]]
// TILE-NOT: scf.parallel
// TILE: bufferization.to_tensor

// BUFFERS-LABEL: IR Dump After cpu-bufferize
// BUFFERS: memref.alloc() {alignment = 64 : i64} : memref<3x100xf32>
// BUFFERS-NOT: memref.alloc

// LLVM-LABEL: IR Dump After cpu-llvm
// LLVM: llvm.func @rows(
func.func @rows(%x: tensor<3x60xf32>, %w: tensor<60x100xf32>, %c: tensor<3x100xf32>) -> tensor<3x100xf32> {
  %r = linalg.matmul {prism.roles = ["m", "n", "k"], prism.choice = {TM = 4, TN = 64, TK = 20, RM = 1, RN = 16}}
         ins(%x, %w : tensor<3x60xf32>, tensor<60x100xf32>) outs(%c : tensor<3x100xf32>) -> tensor<3x100xf32>
  return %r : tensor<3x100xf32>
}

// -----

// Eight rows in one row panel of 8 (RM = 8): B is read in place, K slice by
// K slice (KernelPlan.sweeps_b), and each micro-tile prefetches the cache
// lines of its columns two slices (here 16 rows) further down, clamped to
// B's last row (59), one prefetch per 64-byte line (two 8-lane vectors);
// no panel buffer is allocated.
// TILE-LABEL: IR Dump After cpu-tile
// TILE: func.func @sweep(
// TILE: %[[B:.*]] = bufferization.to_buffer %arg1
// TILE-NOT: memref.alloc() {{.*}} : memref<{{.*}}x8x{{.*}}xf32>
// TILE: scf.parallel
// TILE: scf.for %[[P0:.*]] = %c0 to %c60 step %c8
// TILE: scf.for %[[K:.*]] = %c0 to %{{.*}} step %c1 iter_args
// TILE: %[[KG:.*]] = arith.addi %[[P0]], %[[K]] : index
// TILE-COUNT-2: vector.load %[[B]][%[[KG]],
// TILE-NEXT: %[[AHEAD:.*]] = arith.addi %[[KG]], %c16 : index
// TILE-NEXT: %[[ROW:.*]] = arith.minui %[[AHEAD]], %c59 : index
// TILE-NEXT: memref.prefetch %[[B]][%[[ROW]], %{{.*}}], read, locality<3>, data
// TILE-NEXT: tensor.extract
// TILE-COUNT-8: vector.broadcast
// TILE: bufferization.to_tensor

// BUFFERS-LABEL: IR Dump After cpu-bufferize
// BUFFERS: memref.alloc() {alignment = 64 : i64} : memref<8x100xf32>
// BUFFERS-NOT: memref.alloc

// The workers' task function holds the prefetch, as an LLVM intrinsic.
// LLVM-LABEL: IR Dump After cpu-llvm
// LLVM: llvm.func @__prism_task_sweep_0(
// LLVM: "llvm.intr.prefetch"({{.*}}) <{cache = 1 : i32, hint = 3 : i32, rw = 0 : i32}>
// LLVM: llvm.func @sweep(
func.func @sweep(%x: tensor<8x60xf32>, %w: tensor<60x100xf32>) -> tensor<8x100xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<8x100xf32>
  %init = linalg.fill ins(%zero : f32) outs(%e : tensor<8x100xf32>) -> tensor<8x100xf32>
  %r = linalg.matmul {prism.roles = ["m", "n", "k"], prism.choice = {TM = 8, TN = 64, TK = 8, RM = 8, RN = 16, PACK = 0}}
         ins(%x, %w : tensor<8x60xf32>, tensor<60x100xf32>) outs(%init : tensor<8x100xf32>) -> tensor<8x100xf32>
  return %r : tensor<8x100xf32>
}
