// RUN: prism-opt %s --split-input-file -p prism-lift | filecheck %s

// A product whose rows run over two loops (batch and sequence) is lifted as the product of the collapsed
// activations: one M loop, the family of the 2-D spelling. The elementwise op that reads its result over the
// same loops runs on the collapsed rows too, and one expansion makes the result.
// CHECK-LABEL: func.func @rows
// CHECK-SAME:    (%[[X:.*]]: tensor<2x8x32xf32>, %[[W:.*]]: tensor<32x48xf32>, %[[R:.*]]: tensor<2x8x48xf32>)
// CHECK-DAG:     %[[R2:.*]] = tensor.collapse_shape %[[R]] {{\[\[}}0, 1], [2]] : tensor<2x8x48xf32> into tensor<16x48xf32>
// CHECK-DAG:     %[[X2:.*]] = tensor.collapse_shape %[[X]] {{\[\[}}0, 1], [2]] : tensor<2x8x32xf32> into tensor<16x32xf32>
// CHECK:         %[[P:.*]] = call @rows_family0(%[[X2]], %[[W]]) : (tensor<16x32xf32>, tensor<32x48xf32>) -> tensor<16x48xf32>
// CHECK:         %[[S:.*]] = linalg.generic
// CHECK-SAME:      iterator_types = ["parallel", "parallel"]
// CHECK-SAME:      ins(%[[P]], %[[R2]] : tensor<16x48xf32>, tensor<16x48xf32>)
// CHECK:         %[[Y:.*]] = tensor.expand_shape %[[S]] {{\[\[}}0, 1], [2]] output_shape [2, 8, 48] : tensor<16x48xf32> into tensor<2x8x48xf32>
// CHECK:         return %[[Y]]
// CHECK:       func.func private @rows_family0
// CHECK:         "prism.family"()
// CHECK-SAME:      kind = "gemm"
// CHECK:         linalg.fill
// CHECK-SAME:      tensor<16x48xf32>
// CHECK:         linalg.generic
// CHECK-SAME:      iterator_types = ["parallel", "parallel", "reduction"]
#x = affine_map<(b, s, n, k) -> (b, s, k)>
#w = affine_map<(b, s, n, k) -> (k, n)>
#y = affine_map<(b, s, n, k) -> (b, s, n)>
#e = affine_map<(b, s, n) -> (b, s, n)>
func.func @rows(%x: tensor<2x8x32xf32>, %w: tensor<32x48xf32>, %r: tensor<2x8x48xf32>) -> tensor<2x8x48xf32> {
  %zero = arith.constant 0.0 : f32
  %pe = tensor.empty() : tensor<2x8x48xf32>
  %pz = linalg.fill ins(%zero : f32) outs(%pe : tensor<2x8x48xf32>) -> tensor<2x8x48xf32>
  %p = linalg.generic {indexing_maps = [#x, #w, #y], iterator_types = ["parallel", "parallel", "parallel", "reduction"]}
      ins(%x, %w : tensor<2x8x32xf32>, tensor<32x48xf32>) outs(%pz : tensor<2x8x48xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %m = arith.mulf %a, %b : f32
    %s = arith.addf %o, %m : f32
    linalg.yield %s : f32
  } -> tensor<2x8x48xf32>
  %ye = tensor.empty() : tensor<2x8x48xf32>
  %sum = linalg.generic {indexing_maps = [#e, #e, #e], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%p, %r : tensor<2x8x48xf32>, tensor<2x8x48xf32>) outs(%ye : tensor<2x8x48xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %s = arith.addf %a, %b : f32
    linalg.yield %s : f32
  } -> tensor<2x8x48xf32>
  return %sum : tensor<2x8x48xf32>
}

// -----

// A dynamic batch: the collapsed rows are the batch times 5, and the expansion reads the batch from the
// init's own size.
// CHECK-LABEL: func.func @dynamic_rows
// CHECK-SAME:    (%[[X:.*]]: tensor<?x5x40xf32>, %[[W:.*]]: tensor<40x17xf32>)
// CHECK:         %[[X2:.*]] = tensor.collapse_shape %[[X]] {{\[\[}}0, 1], [2]] : tensor<?x5x40xf32> into tensor<?x40xf32>
// CHECK:         %[[B:.*]] = tensor.dim %[[X]], %{{.*}} : tensor<?x5x40xf32>
// CHECK:         %[[P:.*]] = call @dynamic_rows_family0(%[[X2]], %[[W]]
// CHECK-SAME:      -> tensor<?x17xf32>
// CHECK:         tensor.expand_shape %[[P]] {{\[\[}}0, 1], [2]] output_shape [%[[B]], 5, 17] : tensor<?x17xf32> into tensor<?x5x17xf32>
#x = affine_map<(b, s, n, k) -> (b, s, k)>
#w = affine_map<(b, s, n, k) -> (k, n)>
#y = affine_map<(b, s, n, k) -> (b, s, n)>
func.func @dynamic_rows(%x: tensor<?x5x40xf32>, %w: tensor<40x17xf32>) -> tensor<?x5x17xf32> {
  %zero = arith.constant 0.0 : f32
  %c0 = arith.constant 0 : index
  %b = tensor.dim %x, %c0 : tensor<?x5x40xf32>
  %pe = tensor.empty(%b) : tensor<?x5x17xf32>
  %pz = linalg.fill ins(%zero : f32) outs(%pe : tensor<?x5x17xf32>) -> tensor<?x5x17xf32>
  %p = linalg.generic {indexing_maps = [#x, #w, #y], iterator_types = ["parallel", "parallel", "parallel", "reduction"]}
      ins(%x, %w : tensor<?x5x40xf32>, tensor<40x17xf32>) outs(%pz : tensor<?x5x17xf32>) {
  ^bb0(%a: f32, %c: f32, %o: f32):
    %m = arith.mulf %a, %c : f32
    %s = arith.addf %o, %m : f32
    linalg.yield %s : f32
  } -> tensor<?x5x17xf32>
  return %p : tensor<?x5x17xf32>
}
