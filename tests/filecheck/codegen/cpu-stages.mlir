// Each stage of the host code generator prints on its own; together they take a tuned f32 matmul to LLVM
// through the direct GEMM kernel (python/prism/codegen/cpu/kernel.py). Other contractions take the
// transform-dialect path (cpu-stages-transform.mlir).
// RUN: prism-opt %s -p prism-lower-cpu --print-ir-after=cpu-tile -o /dev/null 2>&1 | filecheck %s --check-prefix=TILE
// RUN: prism-opt %s -p prism-lower-cpu --print-ir-after=cpu-bufferize -o /dev/null 2>&1 | filecheck %s --check-prefix=BUFFERS
// RUN: prism-opt %s -p prism-lower-cpu --print-ir-after=cpu-parallel -o /dev/null 2>&1 | filecheck %s --check-prefix=PARALLEL
// RUN: prism-opt %s -p 'prism-lower-cpu{threads=2}' --print-ir-after=cpu-llvm -o /dev/null 2>&1 | filecheck %s --check-prefix=LLVM
// RUN: prism-opt %s -p prism-lower-cpu{threads=2} --print-ir-after=cpu-tile -o /dev/null 2>&1 | filecheck %s --check-prefix=PANELS

// On tensors: the matmul is gone; each worker runs a share of the 16x32 blocks of C; the task copies its
// 16x32 slice of B into two 16-wide panels, 8 rows side by side (then any rows left one by one), then a
// 4x16 micro-tile (8 accumulators of 8 lanes) runs over each K slice, the first starting from C's init
// (the argument %c: not a fill of zero).
// TILE: IR Dump After cpu-tile
// TILE: func.func @mm(
// TILE-NOT: linalg.matmul
// TILE: scf.parallel
// TILE: scf.for
// TILE: scf.for {{.*}} step %c16
// TILE: scf.for %[[KK:.*]] = %c0 to %{{.*}} step %c8
// TILE: scf.for %[[JP:.*]] = %c0 to %{{.*}} step %c1
// TILE: vector.store {{.*}}[%{{.*}}, %c0, %[[JP]], %[[KK]], %c0] : memref<{{[0-9]+}}x1x2x16x16xf32>, vector<8xf32>
// TILE-COUNT-15: vector.store {{.*}} : memref<{{[0-9]+}}x1x2x16x16xf32>, vector<8xf32>
// TILE: } else {
// TILE: scf.for {{.*}} step %c1
// TILE: vector.store {{.*}} : memref<{{[0-9]+}}x1x2x16x16xf32>, vector<8xf32>
// TILE: scf.for {{.*}} step %c4
// TILE: scf.if
// TILE-COUNT-8: vector.load %{{.*}} : memref<16x64xf32>, vector<8xf32>
// TILE: scf.for {{.*}} iter_args
// TILE-COUNT-8: vector.fma
// TILE: scf.yield
// TILE: vector.maskedstore
// TILE: bufferization.to_tensor
// TILE-NOT: IR Dump After

// On buffers: one result allocation and the panel buffer; no tensors left.
// BUFFERS: IR Dump After cpu-bufferize
// BUFFERS: func.func @mm(%arg0: memref<16x32xf32>, %arg1: memref<32x64xf32>, %arg2: memref<16x64xf32>) -> memref<16x64xf32>
// BUFFERS-DAG: memref.alloc() {alignment = 64 : i64} : memref<16x64xf32>
// BUFFERS-DAG: memref.alloc() {alignment = 64 : i64} : memref<{{[0-9]+}}x1x2x16x16xf32>
// BUFFERS-NOT: tensor.

// One flat parallel loop over the workers.
// PARALLEL: IR Dump After cpu-parallel
// PARALLEL: scf.parallel (%{{.*}}) = (%{{.*}}) to (%{{.*}}) step (%{{.*}})

// Everything in the LLVM dialect, with thread-pool tasks (cpu-tasks.mlir) and the C interface the runtime calls.
// LLVM: IR Dump After cpu-llvm
// LLVM-DAG: llvm.func @mm(
// LLVM-DAG: llvm.func @_mlir_ciface_mm(
// LLVM-DAG: llvm.call @prism_parallel_for(
// LLVM-DAG: llvm.intr.fmuladd
// LLVM-NOT: func.func

// threads=2: one panel buffer per worker.
// PANELS: memref.alloc() {alignment = 64 : i64} : memref<2x1x2x16x16xf32>
// PANELS: scf.parallel ({{.*}}) = (%c0) to (%c2) step (%c1)
func.func @mm(%a: tensor<16x32xf32>, %b: tensor<32x64xf32>, %c: tensor<16x64xf32>) -> tensor<16x64xf32> {
  %r = linalg.matmul {prism.roles = ["m", "n", "k"], prism.choice = {TM = 16, TN = 32, TK = 16, RM = 4, RN = 16}}
         ins(%a, %b : tensor<16x32xf32>, tensor<32x64xf32>) outs(%c : tensor<16x64xf32>) -> tensor<16x64xf32>
  return %r : tensor<16x64xf32>
}
