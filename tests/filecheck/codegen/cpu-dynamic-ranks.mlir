// Tensors of rank >= 3 with several dynamic dimensions. A row kernel's output is allocated at the output's
// own rank and written through a collapsed rows x columns view, so no expand_shape with two dynamic sizes in
// one group reaches the lowering to LLVM (which aborts on one); a user's such expand_shape becomes a reshape.
// RUN: prism-opt %s --split-input-file -p 'prism-lower-cpu{threads=2}' --print-ir-after=cpu-tile -o /dev/null 2>&1 | filecheck %s
// RUN: prism-opt %s --split-input-file -p 'prism-lower-cpu{threads=2}' | filecheck %s --check-prefix=LLVM

// CHECK-LABEL: func.func @exp(
// CHECK-NOT:     expand_shape
// CHECK:         %[[OUT:.*]] = memref.alloc(%{{.*}}, %{{.*}}) {alignment = 64 : i64} : memref<?x?x8xf32>
// CHECK:         %[[WHOLE:.*]] = memref.cast %[[OUT]] : memref<?x?x8xf32> to memref<?x?x?xf32>
// CHECK:         %[[ROWS:.*]] = memref.collapse_shape %[[OUT]] {{\[\[}}0, 1], [2]] : memref<?x?x8xf32> into memref<?x8xf32>
// CHECK:         scf.parallel
// CHECK:         vector.store %{{.*}}, %[[ROWS]]
// CHECK:         bufferization.to_tensor %[[WHOLE]] restrict : memref<?x?x?xf32> to tensor<?x?x?xf32>
// CHECK-NOT:     expand_shape
// CHECK:         return
// LLVM-LABEL:  llvm.func @exp(
// LLVM-LABEL:  llvm.func @_mlir_ciface_exp(
#id3 = affine_map<(d0, d1, d2) -> (d0, d1, d2)>
func.func @exp(%x: tensor<?x?x8xf32>) -> tensor<?x?x8xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %d0 = tensor.dim %x, %c0 : tensor<?x?x8xf32>
  %d1 = tensor.dim %x, %c1 : tensor<?x?x8xf32>
  %e = tensor.empty(%d0, %d1) : tensor<?x?x8xf32>
  %r = linalg.generic {indexing_maps = [#id3, #id3], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%x : tensor<?x?x8xf32>) outs(%e : tensor<?x?x8xf32>) {
  ^bb0(%a: f32, %b: f32):
    %y = math.exp %a : f32
    linalg.yield %y : f32
  } -> tensor<?x?x8xf32>
  return %r : tensor<?x?x8xf32>
}

// -----

// A row sum of a rank-4 tensor with three dynamic sizes: its rank-3 result is allocated as such and written
// through a one-dimensional view of the rows.
// CHECK-LABEL: func.func @row_sum(
// CHECK-NOT:     expand_shape
// CHECK:         %[[SUM:.*]] = memref.alloc(%{{.*}}, %{{.*}}) {alignment = 64 : i64} : memref<?x3x?xf32>
// CHECK:         %[[WHOLE:.*]] = memref.cast %[[SUM]] : memref<?x3x?xf32> to memref<?x?x?xf32>
// CHECK:         %[[ROWS:.*]] = memref.collapse_shape %[[SUM]] {{\[\[}}0, 1, 2]] : memref<?x3x?xf32> into memref<?xf32>
// CHECK:         vector.reduction <add>
// CHECK:         memref.store %{{.*}}, %[[ROWS]]
// CHECK:         bufferization.to_tensor %[[WHOLE]] restrict
// CHECK-NOT:     expand_shape
// LLVM-LABEL:  llvm.func @row_sum(
#id4 = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2, d3)>
#rows4 = affine_map<(d0, d1, d2, d3) -> (d0, d1, d2)>
func.func @row_sum(%x: tensor<?x3x?x?xf32>) -> tensor<?x3x?xf32> {
  %c0 = arith.constant 0 : index
  %c2 = arith.constant 2 : index
  %zero = arith.constant 0.0 : f32
  %d0 = tensor.dim %x, %c0 : tensor<?x3x?x?xf32>
  %d2 = tensor.dim %x, %c2 : tensor<?x3x?x?xf32>
  %e = tensor.empty(%d0, %d2) : tensor<?x3x?xf32>
  %z = linalg.fill ins(%zero : f32) outs(%e : tensor<?x3x?xf32>) -> tensor<?x3x?xf32>
  %r = linalg.generic {indexing_maps = [#id4, #rows4], iterator_types = ["parallel", "parallel", "parallel", "reduction"]}
      ins(%x : tensor<?x3x?x?xf32>) outs(%z : tensor<?x3x?xf32>) {
  ^bb0(%a: f32, %acc: f32):
    %s = arith.addf %acc, %a : f32
    linalg.yield %s : f32
  } -> tensor<?x3x?xf32>
  return %r : tensor<?x3x?xf32>
}

// -----

// The user's expand_shape of two dynamic sizes in one group becomes a reshape to its output shape.
// CHECK-LABEL: func.func @expand(
// CHECK:         %[[SHAPE:.*]] = tensor.from_elements %{{.*}}, %{{.*}}, %{{.*}} : tensor<3xindex>
// CHECK:         tensor.reshape %{{.*}}(%[[SHAPE]]) : (tensor<?x8xf32>, tensor<3xindex>) -> tensor<?x?x8xf32>
// CHECK-NOT:     expand_shape
// LLVM-LABEL:  llvm.func @expand(
func.func @expand(%x: tensor<?x8xf32>, %a: index, %b: index) -> tensor<?x?x8xf32> {
  %r = tensor.expand_shape %x [[0, 1], [2]] output_shape [%a, %b, 8] : tensor<?x8xf32> into tensor<?x?x8xf32>
  return %r : tensor<?x?x8xf32>
}

// -----

// One dynamic size per group is left alone.
// CHECK-LABEL: func.func @expand_one(
// CHECK:         tensor.expand_shape
// CHECK-NOT:     tensor.reshape
// LLVM-LABEL:  llvm.func @expand_one(
func.func @expand_one(%x: tensor<?x8xf32>, %a: index) -> tensor<?x4x8xf32> {
  %r = tensor.expand_shape %x [[0, 1], [2]] output_shape [%a, 4, 8] : tensor<?x8xf32> into tensor<?x4x8xf32>
  return %r : tensor<?x4x8xf32>
}
