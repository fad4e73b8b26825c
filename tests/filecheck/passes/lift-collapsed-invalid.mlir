// RUN: not prism-opt %s -p prism-lift 2>&1 | filecheck %s

// A program's own expansion that does not keep its element count is reported at its line before any loop is
// collapsed, and nothing is printed.
// CHECK: lift-collapsed-invalid.mlir:[[# @LINE + 14]]:{{[0-9]+}}: error:
// CHECK-NOT: func.func
#x = affine_map<(b, s, n, k) -> (b, s, k)>
#w = affine_map<(b, s, n, k) -> (k, n)>
#y = affine_map<(b, s, n, k) -> (b, s, n)>
func.func @bad(%x: tensor<16x4xf32>, %w: tensor<4x3xf32>, %c: tensor<2x8x3xf32>) -> tensor<2x8x3xf32> {
  %x3 = tensor.expand_shape %x [[0, 1], [2]] output_shape [2, 8, 4] : tensor<16x4xf32> into tensor<2x8x4xf32>
  %r = linalg.generic {indexing_maps = [#x, #w, #y], iterator_types = ["parallel", "parallel", "parallel", "reduction"]}
      ins(%x3, %w : tensor<2x8x4xf32>, tensor<4x3xf32>) outs(%c : tensor<2x8x3xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %m = arith.mulf %a, %b : f32
    %s = arith.addf %o, %m : f32
    linalg.yield %s : f32
  } -> tensor<2x8x3xf32>
  %bad = tensor.expand_shape %r [[0], [1, 2], [3]] output_shape [2, 4, 3, 3] : tensor<2x8x3xf32> into tensor<2x4x3x3xf32>
  return %r : tensor<2x8x3xf32>
}
