// Each lowered host function keeps the relations among its arguments' sizes that its ops assume
// (prism.shape_rules, python/prism/codegen/shapes.py), for the runtime to check before a call: one loop's
// extents (a product's inner sizes), a size argument against zero and against the rows it meets, a slice's end
// against the rows it slices. Sizes that only one argument gives, sizes computed by arithmetic, and static
// programs give none.
// RUN: prism-opt %s --split-input-file -p 'prism-lower-cpu{threads=2}' | filecheck %s

// CHECK-LABEL: llvm.func @mm(
// CHECK-SAME:    prism.shape_rules = {{\[}}["a0.1 == a1.0", "linalg.matmul", "{{.*}}cpu-shape-rules.mlir:[[# @LINE + 9]]:8"]]
func.func @mm(%a: tensor<?x?xf32>, %b: tensor<?x?xf32>) -> tensor<?x?xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %m = tensor.dim %a, %c0 : tensor<?x?xf32>
  %n = tensor.dim %b, %c1 : tensor<?x?xf32>
  %z = arith.constant 0.0 : f32
  %e = tensor.empty(%m, %n) : tensor<?x?xf32>
  %f = linalg.fill ins(%z : f32) outs(%e : tensor<?x?xf32>) -> tensor<?x?xf32>
  %r = linalg.matmul ins(%a, %b : tensor<?x?xf32>, tensor<?x?xf32>) outs(%f : tensor<?x?xf32>) -> tensor<?x?xf32>
  return %r : tensor<?x?xf32>
}

// -----

// CHECK-LABEL: llvm.func @padded(
// CHECK-SAME:    prism.shape_rules = {{\[}}["a1 >= 0", "tensor.empty", "{{.*}}:[[# @LINE + 4]]:8"], ["a0.0 == a1", "linalg.generic", "{{.*}}:[[# @LINE + 6]]:8"]]
func.func @padded(%a: tensor<?x4xf32>, %rows: i32) -> tensor<?x4xf32> {
  %n = arith.index_cast %rows : i32 to index
  %z = arith.constant 1.0 : f32
  %e = tensor.empty(%n) : tensor<?x4xf32>
  %f = linalg.fill ins(%z : f32) outs(%e : tensor<?x4xf32>) -> tensor<?x4xf32>
  %r = linalg.add ins(%a, %f : tensor<?x4xf32>, tensor<?x4xf32>) outs(%f : tensor<?x4xf32>) -> tensor<?x4xf32>
  return %r : tensor<?x4xf32>
}

// -----

// All of one argument's rows: nothing to check.
// CHECK-LABEL: llvm.func @rows(
// CHECK-NOT:     prism.shape_rules
// CHECK-SAME:    prism.signature
func.func @rows(%a: tensor<?x4xf32>) -> tensor<?x4xf32> {
  %c0 = arith.constant 0 : index
  %n = tensor.dim %a, %c0 : tensor<?x4xf32>
  %e = tensor.empty(%n) : tensor<?x4xf32>
  %r = linalg.add ins(%a, %a : tensor<?x4xf32>, tensor<?x4xf32>) outs(%e : tensor<?x4xf32>) -> tensor<?x4xf32>
  return %r : tensor<?x4xf32>
}

// -----

// A size computed by arithmetic is not followed.
// CHECK-LABEL: llvm.func @doubled(
// CHECK-NOT:     prism.shape_rules
// CHECK-SAME:    prism.signature
func.func @doubled(%a: tensor<?xf32>, %n: index) -> tensor<?xf32> {
  %two = arith.constant 2 : index
  %m = arith.muli %n, %two : index
  %e = tensor.empty(%m) : tensor<?xf32>
  %r = linalg.add ins(%a, %a : tensor<?xf32>, tensor<?xf32>) outs(%e : tensor<?xf32>) -> tensor<?xf32>
  return %r : tensor<?xf32>
}

// -----

// A slice's offset and size given as arguments are not negative, and it ends within the rows it slices.
// CHECK-LABEL: llvm.func @window(
// CHECK-SAME:    prism.shape_rules = {{\[}}["a2 >= 0", "tensor.extract_slice", "{{.*}}"], ["a1 >= 0", "tensor.extract_slice", "{{.*}}"], ["a0.0 >= a2 + a1", "tensor.extract_slice", "{{.*}}:[[# @LINE + 2]]:8"]]
func.func @window(%a: tensor<?x4xf32>, %n: index, %o: index) -> tensor<?x2xf32> {
  %s = tensor.extract_slice %a[%o, 1] [%n, 2] [1, 1] : tensor<?x4xf32> to tensor<?x2xf32>
  return %s : tensor<?x2xf32>
}
