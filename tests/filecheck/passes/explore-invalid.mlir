// RUN: not prism-opt %s -p 'prism-explore{iterations=0}' 2>&1 | filecheck %s
// RUN: not prism-opt %s -p 'prism-explore{target=tpu}' 2>&1 | filecheck %s --check-prefix=TARGET
// RUN: not prism-opt %s -p 'prism-explore{rounds=3}' 2>&1 | filecheck %s --check-prefix=OPTION

// A budget that allows no exploration is an error, and nothing is printed.
// CHECK: error: prism-explore: option 'iterations' must be in [1, 100], got 0
// CHECK-NOT: func.func
// TARGET: error: {{.*}}tpu
// OPTION: error: {{.*}}rounds
func.func @gemm(%a: tensor<64x64xf32>, %b: tensor<64x64xf32>) -> tensor<64x64xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<64x64xf32>
  %z = linalg.fill ins(%zero : f32) outs(%e : tensor<64x64xf32>) -> tensor<64x64xf32>
  %c = linalg.matmul ins(%a, %b : tensor<64x64xf32>, tensor<64x64xf32>) outs(%z : tensor<64x64xf32>) -> tensor<64x64xf32>
  return %c : tensor<64x64xf32>
}
