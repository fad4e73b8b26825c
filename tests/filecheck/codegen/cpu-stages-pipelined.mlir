// Where B may not stay in the caches (here K and N are unknown), the direct GEMM kernel copies each K slice
// of B into panels inside the micro-tiles of the slice before (KernelPlan.pipelined): two panel buffers per
// worker; the worker's first slice copied up front; each micro-tile's k loop taking 8 k at a time with one
// unit of the copy: the rows of two panels of the next slice (the 4 micro-tiles down a row block of 16 rows
// each take a share), copied into the other buffer after a prefetch of the B it will copy 4 KiB ahead (two
// cache lines); then the rest of the slice's k, one at a time; then any units the micro-tiles had no k left
// for.
// RUN: prism-opt %s -p 'prism-lower-cpu{threads=2}' --print-ir-after=cpu-tile -o /dev/null 2>&1 | filecheck %s

// CHECK-LABEL: IR Dump After cpu-tile
// CHECK: func.func @mm(
// CHECK-NOT: linalg.matmul
// CHECK: memref.alloc() {alignment = 64 : i64} : memref<2x2x4x32x16xf32>
// CHECK: scf.parallel
// The worker's first slice, in a phase of its own (8 rows of B side by side), into the slice's buffer.
// CHECK: %[[SLOT:.*]] = arith.remui %{{.*}}, %c2 : index
// CHECK: %[[NEXT:.*]] = arith.subi %c1, %[[SLOT]] : index
// CHECK: scf.if
// CHECK: scf.for {{.*}} step %c8
// CHECK: vector.store {{.*}}, %{{.*}}[%{{.*}}, %[[SLOT]], {{.*}}] : memref<2x2x4x32x16xf32>, vector<8xf32>
// The micro-tiles read the slice's buffer and copy the next slice into the other.
// CHECK: scf.for {{.*}} step %c16
// CHECK: scf.for {{.*}} step %c4
// CHECK: scf.for {{.*}} step %c8 iter_args
// CHECK: scf.if
// CHECK-COUNT-2: memref.prefetch %{{.*}}[%{{.*}}, %{{.*}}], read, locality<3>, data : memref<?x?xf32>
// CHECK-COUNT-4: vector.store {{.*}}, %{{.*}}[%{{.*}}, %[[NEXT]], {{.*}}] : memref<2x2x4x32x16xf32>, vector<8xf32>
// CHECK: } else {
// CHECK-COUNT-64: vector.fma
// CHECK: vector.load %{{.*}}[%{{.*}}, %[[SLOT]], {{.*}}] : memref<2x2x4x32x16xf32>, vector<8xf32>
// CHECK: scf.for {{.*}} step %c1 iter_args
// The copy's rest, after the slice's micro-tiles.
// CHECK: scf.for {{.*}} step %c1 {
// CHECK-NOT: memref.prefetch
// CHECK: vector.store {{.*}}, %{{.*}}[%{{.*}}, %[[NEXT]], {{.*}}] : memref<2x2x4x32x16xf32>, vector<8xf32>
// CHECK: return
func.func @mm(%a: tensor<16x?xf32>, %b: tensor<?x?xf32>) -> tensor<16x?xf32> {
  %i1 = arith.constant 1 : index
  %n = tensor.dim %b, %i1 : tensor<?x?xf32>
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty(%n) : tensor<16x?xf32>
  %init = linalg.fill ins(%zero : f32) outs(%e : tensor<16x?xf32>) -> tensor<16x?xf32>
  %r = linalg.matmul {prism.roles = ["m", "n", "k"], prism.choice = {TM = 16, TN = 64, TK = 32, RM = 4, RN = 16, PACK = 1}}
         ins(%a, %b : tensor<16x?xf32>, tensor<?x?xf32>) outs(%init : tensor<16x?xf32>) -> tensor<16x?xf32>
  return %r : tensor<16x?xf32>
}
