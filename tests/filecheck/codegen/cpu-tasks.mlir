// Parallel loops run on Prism's thread pool (python/prism/codegen/cpu/tasks.py and pool.py). With two
// threads, the kernel's loop over its workers becomes a task function over a range of iterations, an entry
// that reads the task's captured values back from a context record, and a launch that fills the record
// and calls prism_parallel_for with the width of the loop. With one thread, nothing is outlined.
// RUN: prism-opt %s -p 'prism-lower-cpu{threads=2}' --print-ir-after=cpu-llvm -o /dev/null 2>&1 | filecheck %s --check-prefix=TWO
// RUN: prism-opt %s -p 'prism-lower-cpu{threads=1}' --print-ir-after=cpu-llvm -o /dev/null 2>&1 | filecheck %s --check-prefix=ONE
// RUN: not prism-opt %s -p 'prism-lower-cpu{threads=-1}' -o /dev/null 2>&1 | filecheck %s --check-prefix=BAD

// TWO-LABEL: IR Dump After cpu-llvm
// TWO: llvm.func @__prism_task_mm_0(%{{.*}}: i64, %{{.*}}: i64, %{{.*}}: !llvm.ptr,
// TWO: llvm.func @mm(
// TWO: llvm.call @__prism_task_mm_0_launch(
// TWO-NOT: llvm.call @__prism_task_mm_1
// TWO: llvm.func @prism_parallel_for(!llvm.ptr, !llvm.ptr, i64, i64)
// TWO: llvm.func internal @__prism_task_mm_0_entry(%[[CTX:arg[0-9]+]]: !llvm.ptr, %[[BEGIN:arg[0-9]+]]: i64, %[[END:arg[0-9]+]]: i64)
// TWO: %[[BASE:.*]] = llvm.load %{{.*}} : !llvm.ptr -> i64
// TWO: %[[LO:.*]] = llvm.add %[[BASE]], %[[BEGIN]] : i64
// TWO: %[[HI:.*]] = llvm.add %[[BASE]], %[[END]] : i64
// TWO: llvm.call @__prism_task_mm_0(%[[LO]], %[[HI]],
// TWO: llvm.func internal @__prism_task_mm_0_launch(%[[FROM:arg[0-9]+]]: i64, %[[TO:arg[0-9]+]]: i64,
// TWO: %[[REC:.*]] = llvm.alloca %{{.*}} x !llvm.struct<(i64, ptr, ptr,
// TWO: %[[N:.*]] = llvm.sub %[[TO]], %[[FROM]] : i64
// TWO: %[[FN:.*]] = llvm.mlir.addressof @__prism_task_mm_0_entry : !llvm.ptr
// TWO: %[[W:.*]] = llvm.mlir.constant(2 : i64) : i64
// TWO: llvm.call @prism_parallel_for(%[[FN]], %[[REC]], %[[N]], %[[W]])

// ONE-LABEL: IR Dump After cpu-llvm
// ONE-NOT: __prism_task
// ONE-NOT: prism_parallel_for
// ONE: llvm.func @mm(

// BAD: error: prism-lower-cpu: option 'threads' must be in [0, 1024], got -1
func.func @mm(%a: tensor<16x32xf32>, %b: tensor<32x64xf32>, %c: tensor<16x64xf32>) -> tensor<16x64xf32> {
  %r = linalg.matmul {prism.roles = ["m", "n", "k"], prism.choice = {TM = 16, TN = 32, TK = 16, RM = 4, RN = 16}}
         ins(%a, %b : tensor<16x32xf32>, tensor<32x64xf32>) outs(%c : tensor<16x64xf32>) -> tensor<16x64xf32>
  return %r : tensor<16x64xf32>
}
