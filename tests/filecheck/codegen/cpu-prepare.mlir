// An invariant weight that feeds a GEMM kernel is packed once: cpu-tile adds @f_prepare (the packing loops)
// and @f_apply (a copy of @f whose kernel reads the packed panels), and marks @f for the runtime's bind().
// RUN: prism-opt %s --split-input-file -p prism-lower-cpu{threads=2} --print-ir-after=cpu-tile -o /dev/null 2>&1 | filecheck %s
// RUN: prism-opt %s --split-input-file -p prism-lower-cpu{threads=2} --print-ir-after=cpu-tile -o /dev/null 2>&1 | filecheck %s --check-prefix=LEAD

// CHECK-LABEL: IR Dump After cpu-tile
// CHECK-DAG: func.func @f(%arg0: tensor<5x300xf32> {{.*}}, %arg1: tensor<300x200xf32> {{{.*}}prism.invariant}) {{.*}}prism.apply_args = array<i64: 0, 1, -1>, prism.prepare_args = array<i64: 1>
// CHECK-DAG: func.func @f_apply(%arg0: tensor<5x300xf32> {{.*}}, %arg1: tensor<300x200xf32> {{.*}}, %arg2: tensor<13x300x16xf32> {{.*}}) -> tensor<5x200xf32>
// CHECK-DAG: func.func @f_prepare(%arg0: tensor<300x200xf32> {{.*}}) -> tensor<13x300x16xf32>
// CHECK-DAG: vector.maskedload {{.*}} : memref<300x200xf32>, vector<8xi1>, vector<8xf32> into vector<8xf32>
// CHECK-DAG: vector.load {{.*}} : memref<13x300x16xf32>, vector<8xf32>
// One row block (TM = 8 covers the 5 rows): a panel's first micro-tile (its rows at the task's first, all its
// columns within N) prefetches the next panel's row at its k; the others, full or at N's edge, prefetch nothing.
// CHECK-DAG: memref.prefetch {{.*}}[{{.*}}, {{.*}}, %c0], read, locality<3>, data : memref<13x300x16xf32>
// LEAD-LABEL: func.func @f_apply(
// LEAD: %[[AHEAD:.*]] = arith.andi %{{.*}}, %{{.*}} : i1
// LEAD-NEXT: scf.if %[[AHEAD]] {
// LEAD: memref.prefetch {{.*}} : memref<13x300x16xf32>
// LEAD: } else {
// LEAD-NOT: memref.prefetch
// LEAD: return
func.func @f(%x: tensor<5x300xf32>, %w: tensor<300x200xf32> {prism.invariant}) -> tensor<5x200xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<5x200xf32>
  %init = linalg.fill ins(%zero : f32) outs(%e : tensor<5x200xf32>) -> tensor<5x200xf32>
  %r = linalg.matmul {prism.roles = ["m", "n", "k"], prism.choice = {TM = 8, TN = 64, TK = 64, RM = 4, RN = 16}}
         ins(%x, %w : tensor<5x300xf32>, tensor<300x200xf32>) outs(%init : tensor<5x200xf32>) -> tensor<5x200xf32>
  return %r : tensor<5x200xf32>
}

// -----

// Not prepared: a weight that is not marked invariant, and an invariant one of dynamic shape.
// CHECK-LABEL: IR Dump After cpu-tile
// CHECK-NOT: _prepare
// CHECK-NOT: prism.prepare_args
// CHECK: func.func @g(
// CHECK-NOT: _prepare
func.func @g(%x: tensor<5x300xf32>, %w: tensor<300x200xf32>, %v: tensor<300x?xf32> {prism.invariant},
             %c: tensor<5x?xf32>) -> (tensor<5x200xf32>, tensor<5x?xf32>) {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<5x200xf32>
  %init = linalg.fill ins(%zero : f32) outs(%e : tensor<5x200xf32>) -> tensor<5x200xf32>
  %r = linalg.matmul ins(%x, %w : tensor<5x300xf32>, tensor<300x200xf32>) outs(%init : tensor<5x200xf32>)
         -> tensor<5x200xf32>
  %s = linalg.matmul ins(%x, %v : tensor<5x300xf32>, tensor<300x?xf32>) outs(%c : tensor<5x?xf32>) -> tensor<5x?xf32>
  return %r, %s : tensor<5x200xf32>, tensor<5x?xf32>
}

// -----

// Several row blocks (40 rows, TM = 8): the panels are read again from the caches, and nothing is prefetched.
// CHECK-LABEL: IR Dump After cpu-tile
// CHECK: func.func @h_apply(
// CHECK-NOT: memref.prefetch
// CHECK: func.func @h_prepare(
func.func @h(%x: tensor<40x300xf32>, %w: tensor<300x200xf32> {prism.invariant}) -> tensor<40x200xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<40x200xf32>
  %init = linalg.fill ins(%zero : f32) outs(%e : tensor<40x200xf32>) -> tensor<40x200xf32>
  %r = linalg.matmul {prism.roles = ["m", "n", "k"], prism.choice = {TM = 8, TN = 64, TK = 64, RM = 4, RN = 16}}
         ins(%x, %w : tensor<40x300xf32>, tensor<300x200xf32>) outs(%init : tensor<40x200xf32>) -> tensor<40x200xf32>
  return %r : tensor<40x200xf32>
}
