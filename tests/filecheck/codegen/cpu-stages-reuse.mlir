// Several row blocks (a dynamic M here, in blocks of TM = 16): each worker keeps the B panels of its column
// block for all of K ([workers][K slices][TN/RN][TK][RN] = 2x3x2x16x16) and copies them only when its
// column block changes, so it takes its tasks column by column (ti = task mod row blocks). A dynamic K
// cannot size the kept panels: each task copies its own slice of B, as with one row block; and as B's size
// is unknown, the copy is pipelined, into the second of two buffers (cpu-stages-pipelined.mlir).
// RUN: prism-opt %s --split-input-file -p 'prism-lower-cpu{threads=2}' --print-ir-after=cpu-tile -o /dev/null 2>&1 | filecheck %s

// CHECK-LABEL: IR Dump After cpu-tile
// CHECK: func.func @mm(
// CHECK: %[[ROWS:.*]] = arith.ceildivui %{{.*}}, %c16 : index
// CHECK: %[[PANELS:.*]] = memref.alloc() {alignment = 64 : i64} : memref<2x3x2x16x16xf32>
// CHECK: scf.parallel (%[[W:.*]]) =
// CHECK: scf.for %[[TASK:.*]] = %[[FIRST:.*]] to %{{.*}} step %c1
// CHECK: %[[TI:.*]] = arith.remui %[[TASK]], %[[ROWS]] : index
// CHECK: arith.divui %[[TASK]], %[[ROWS]] : index
// CHECK: %[[STARTS:.*]] = arith.cmpi eq, %[[TASK]], %[[FIRST]] : index
// CHECK: %[[TOP:.*]] = arith.cmpi eq, %[[TI]], %c0 : index
// CHECK: %[[FRESH:.*]] = arith.ori %[[STARTS]], %[[TOP]] : i1
// CHECK: scf.for %[[P0:.*]] = %c0 to %c48 step %c16
// CHECK: %[[SLICE:.*]] = arith.divui %[[P0]], %c16 : index
// CHECK: scf.if %[[FRESH]] {
// CHECK: vector.store %{{.*}}, %[[PANELS]][%[[W]], %[[SLICE]], %{{.*}}] : memref<2x3x2x16x16xf32>
// CHECK: vector.load %[[PANELS]][%[[W]], %[[SLICE]], %{{.*}}] : memref<2x3x2x16x16xf32>
func.func @mm(%a: tensor<?x48xf32>, %b: tensor<48x64xf32>, %c: tensor<?x64xf32>) -> tensor<?x64xf32> {
  %r = linalg.matmul {prism.roles = ["m", "n", "k"], prism.choice = {TM = 16, TN = 32, TK = 16, RM = 4, RN = 16}}
         ins(%a, %b : tensor<?x48xf32>, tensor<48x64xf32>) outs(%c : tensor<?x64xf32>) -> tensor<?x64xf32>
  return %r : tensor<?x64xf32>
}

// -----

// CHECK-LABEL: IR Dump After cpu-tile
// CHECK: func.func @dynamic_k(
// CHECK: memref.alloc() {alignment = 64 : i64} : memref<2x2x2x16x16xf32>
// CHECK-NOT: arith.ori
// CHECK: vector.store %{{.*}} : memref<2x2x2x16x16xf32>
func.func @dynamic_k(%a: tensor<?x?xf32>, %b: tensor<?x64xf32>, %c: tensor<?x64xf32>) -> tensor<?x64xf32> {
  %r = linalg.matmul {prism.roles = ["m", "n", "k"], prism.choice = {TM = 16, TN = 32, TK = 16, RM = 4, RN = 16}}
         ins(%a, %b : tensor<?x?xf32>, tensor<?x64xf32>) outs(%c : tensor<?x64xf32>) -> tensor<?x64xf32>
  return %r : tensor<?x64xf32>
}
