// RUN: not prism-opt %s -p prism-lift 2>&1 | filecheck %s

// A type mismatch is reported at its line, and nothing is printed.
// CHECK: lift-invalid.mlir:[[# @LINE + 3]]:{{[0-9]+}}: error:
// CHECK-NOT: func.func
func.func @bad(%a: tensor<4x4xf32>, %b: tensor<4x4xf32>) -> tensor<4x4xf32> {
  %0 = linalg.matmul ins(%a, %b : tensor<4x4xf32>, tensor<4x4xf32>) outs(%a : tensor<4x4xf16>) -> tensor<4x4xf32>
  return %0 : tensor<4x4xf32>
}
