// Each stage of the host code generator prints on its own; together they take a tuned matmul to LLVM.
// An f16 matmul takes the transform-dialect path (packs, tiles and vector.contract); f32 ones take the
// direct kernel (cpu-stages.mlir).
// RUN: prism-opt %s -p prism-lower-cpu --print-ir-after=cpu-tile -o /dev/null 2>&1 | filecheck %s --check-prefix=TILE
// RUN: prism-opt %s -p prism-lower-cpu --print-ir-after=cpu-bufferize -o /dev/null 2>&1 | filecheck %s --check-prefix=BUFFERS
// RUN: prism-opt %s -p prism-lower-cpu --print-ir-after=cpu-vector -o /dev/null 2>&1 | filecheck %s --check-prefix=VECTOR
// RUN: prism-opt %s -p prism-lower-cpu --print-ir-after=cpu-parallel -o /dev/null 2>&1 | filecheck %s --check-prefix=PARALLEL
// RUN: prism-opt %s -p 'prism-lower-cpu{threads=2}' --print-ir-after=cpu-llvm -o /dev/null 2>&1 | filecheck %s --check-prefix=LLVM
// RUN: prism-opt %s -p prism-lower-cpu --print-ir-after-all -o /dev/null 2>&1 | filecheck %s --check-prefix=ALL

// On tensors: A packed into 4x4 (RM x KU) panels, parallel blocks, a vectorized 4x16 micro-kernel.
// TILE: IR Dump After cpu-tile
// TILE: func.func @mm(%arg0: tensor<16x32xf16> {bufferization.writable = false}
// TILE: tensor.expand_shape {{.*}} into tensor<4x4x8x4xf16>
// TILE: scf.forall
// TILE: vector.contract
// TILE-NOT: IR Dump After

// On buffers: the packed operands are allocations; C's micro-tile is carried through its K loop.
// BUFFERS: IR Dump After cpu-bufferize
// BUFFERS: func.func @mm(%arg0: memref<16x32xf16>, %arg1: memref<32x64xf16>, %arg2: memref<16x64xf16>) -> memref<16x64xf16>
// BUFFERS: memref.alloc() {alignment = 64 : i64} : memref<4x8x4x4xf16>
// BUFFERS: scf.forall
// BUFFERS: vector.contract
// BUFFERS-NOT: tensor.empty

// Vectors in the 1-D form LLVM takes: rank-1 FMA updates of 16-wide rows.
// VECTOR: IR Dump After cpu-vector
// VECTOR-NOT: vector.contract
// VECTOR: vector.fma {{.*}} : vector<16xf16>

// Parallel blocks as flat scf.parallel loops.
// PARALLEL: IR Dump After cpu-parallel
// PARALLEL-NOT: scf.forall
// PARALLEL: scf.parallel (%{{.*}}) = (%{{.*}}) to (%{{.*}}) step (%{{.*}})

// Everything in the LLVM dialect, with thread-pool tasks (cpu-tasks.mlir) and the C interface the runtime calls.
// LLVM: IR Dump After cpu-llvm
// LLVM-DAG: llvm.func @mm(
// LLVM-DAG: llvm.func @_mlir_ciface_mm(
// LLVM-DAG: llvm.call @prism_parallel_for(
// LLVM-DAG: llvm.intr.fmuladd
// LLVM-NOT: func.func

// ALL: IR Dump After cpu-tile
// ALL: IR Dump After cpu-bufferize
// ALL: IR Dump After cpu-vector
// ALL: IR Dump After cpu-parallel
// ALL: IR Dump After cpu-llvm
// ALL: IR Dump After prism-lower-cpu
func.func @mm(%a: tensor<16x32xf16>, %b: tensor<32x64xf16>, %c: tensor<16x64xf16>) -> tensor<16x64xf16> {
  %r = linalg.matmul {prism.roles = ["m", "n", "k"], prism.choice = {TM = 8, TN = 32, TK = 16, RM = 4, RN = 16}}
         ins(%a, %b : tensor<16x32xf16>, tensor<32x64xf16>) outs(%c : tensor<16x64xf16>) -> tensor<16x64xf16>
  return %r : tensor<16x64xf16>
}
