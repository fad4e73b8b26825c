// RUN: prism-opt %s --split-input-file -p 'prism-explore{target=host}' 2>%t.remarks | filecheck %s
// RUN: filecheck %s --check-prefix=REMARK --allow-empty < %t.remarks

// Every pass reads the program normalized: named Linalg ops that are not
// contractions become linalg.generic ops, linalg.softmax becomes its parts,
// and statistics kept with a unit axis (read back at a constant 0) are inside
// the algebra, so prism-explore accepts each function (no remark says an op is
// outside the algebra).
// REMARK-NOT: outside the algebra

// CHECK-LABEL: func.func @rmsnorm
// CHECK-NOT:     linalg.mul
// CHECK-NOT:     linalg.reduce
// CHECK-NOT:     linalg.broadcast
// CHECK-NOT:     linalg.div
// CHECK:         linalg.generic {{.*}} iterator_types = ["parallel", "reduction"]
// CHECK:           arith.addf
// CHECK:         return
func.func @rmsnorm(%x: tensor<8x32xf32>, %g: tensor<32xf32>) -> tensor<8x32xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<8x32xf32>
  %sq = linalg.mul ins(%x, %x : tensor<8x32xf32>, tensor<8x32xf32>) outs(%e : tensor<8x32xf32>) -> tensor<8x32xf32>
  %re = tensor.empty() : tensor<8xf32>
  %s0 = linalg.fill ins(%zero : f32) outs(%re : tensor<8xf32>) -> tensor<8xf32>
  %ss = linalg.reduce ins(%sq : tensor<8x32xf32>) outs(%s0 : tensor<8xf32>) dimensions = [1]
    (%a: f32, %acc: f32) {
      %r = arith.addf %a, %acc : f32
      linalg.yield %r : f32
    }
  %b = linalg.broadcast ins(%ss : tensor<8xf32>) outs(%e : tensor<8x32xf32>) dimensions = [1]
  %gb = linalg.broadcast ins(%g : tensor<32xf32>) outs(%e : tensor<8x32xf32>) dimensions = [0]
  %n = linalg.div ins(%x, %b : tensor<8x32xf32>, tensor<8x32xf32>) outs(%e : tensor<8x32xf32>) -> tensor<8x32xf32>
  %y = linalg.mul ins(%n, %gb : tensor<8x32xf32>, tensor<8x32xf32>) outs(%e : tensor<8x32xf32>) -> tensor<8x32xf32>
  return %y : tensor<8x32xf32>
}

// -----

// CHECK-LABEL: func.func @softmax
// CHECK-NOT:     linalg.softmax
// CHECK:         linalg.generic {{.*}} iterator_types = ["parallel", "reduction"]
// CHECK:           arith.maxnumf
// CHECK:         math.exp
// CHECK:         arith.addf
// CHECK:         arith.divf
// CHECK:         return
func.func @softmax(%x: tensor<8x32xf32>) -> tensor<8x32xf32> {
  %e = tensor.empty() : tensor<8x32xf32>
  %s = linalg.softmax dimension(1) ins(%x : tensor<8x32xf32>) outs(%e : tensor<8x32xf32>) -> tensor<8x32xf32>
  return %s : tensor<8x32xf32>
}

// -----

// CHECK-LABEL: func.func @transposed
// CHECK-NOT:     linalg.transpose
// CHECK-NOT:     linalg.exp
// CHECK:         linalg.generic
// CHECK:           linalg.yield %in
// CHECK:         linalg.generic
// CHECK:           math.exp
// CHECK:         return
func.func @transposed(%x: tensor<2x8x4xf32>) -> tensor<2x4x8xf32> {
  %e = tensor.empty() : tensor<2x4x8xf32>
  %t = linalg.transpose ins(%x : tensor<2x8x4xf32>) outs(%e : tensor<2x4x8xf32>) permutation = [0, 2, 1]
  %r = linalg.exp ins(%t : tensor<2x4x8xf32>) outs(%e : tensor<2x4x8xf32>) -> tensor<2x4x8xf32>
  return %r : tensor<2x4x8xf32>
}

// -----

// A row sum kept as tensor<4x1xf32> and read back at the constant 0.
// CHECK-LABEL: func.func @keepdims
// CHECK:         return
#id = affine_map<(i, j) -> (i, j)>
#row = affine_map<(i, j) -> (i, 0)>
func.func @keepdims(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %zero = arith.constant 0.0 : f32
  %re = tensor.empty() : tensor<4x1xf32>
  %s0 = linalg.fill ins(%zero : f32) outs(%re : tensor<4x1xf32>) -> tensor<4x1xf32>
  %s = linalg.generic {indexing_maps = [#id, #row], iterator_types = ["parallel", "reduction"]}
      ins(%x : tensor<4x8xf32>) outs(%s0 : tensor<4x1xf32>) {
  ^bb0(%a: f32, %acc: f32):
    %r = arith.addf %acc, %a : f32
    linalg.yield %r : f32
  } -> tensor<4x1xf32>
  %e = tensor.empty() : tensor<4x8xf32>
  %d = linalg.generic {indexing_maps = [#id, #row, #id], iterator_types = ["parallel", "parallel"]}
      ins(%x, %s : tensor<4x8xf32>, tensor<4x1xf32>) outs(%e : tensor<4x8xf32>) {
  ^bb0(%a: f32, %l: f32, %o: f32):
    %r = arith.divf %a, %l : f32
    linalg.yield %r : f32
  } -> tensor<4x8xf32>
  return %d : tensor<4x8xf32>
}

// -----

// Contractions stay named.
// CHECK-LABEL: func.func @product
// CHECK:         linalg.matmul
// CHECK:         return
func.func @product(%a: tensor<8x16xf32>, %b: tensor<16x4xf32>) -> tensor<8x4xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<8x4xf32>
  %z = linalg.fill ins(%zero : f32) outs(%e : tensor<8x4xf32>) -> tensor<8x4xf32>
  %c = linalg.matmul ins(%a, %b : tensor<8x16xf32>, tensor<16x4xf32>) outs(%z : tensor<8x4xf32>) -> tensor<8x4xf32>
  return %c : tensor<8x4xf32>
}
