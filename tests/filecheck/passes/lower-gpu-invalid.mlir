// RUN: not prism-opt %s --split-input-file --target=h200 -p prism-lower-gpu 2>&1 | filecheck %s
// RUN: not prism-opt %s --split-input-file -p 'prism-lower-gpu{chip=sm_75}' 2>&1 | filecheck %s --check-prefix=CHIP

// GPU kernels need static shapes.
// CHECK: lower-gpu-invalid.mlir:[[# @LINE + 2]]:8: error:
func.func @dynamic(%a: tensor<?x64xf32>, %b: tensor<64x32xf32>, %c: tensor<?x32xf32>) -> tensor<?x32xf32> {
  %0 = linalg.matmul ins(%a, %b : tensor<?x64xf32>, tensor<64x32xf32>) outs(%c : tensor<?x32xf32>) -> tensor<?x32xf32>
  return %0 : tensor<?x32xf32>
}

// -----

// A choice the lowering cannot realize is rejected before any upstream pass runs.
// CHECK: lower-gpu-invalid.mlir:[[# @LINE + 2]]:8: error:
func.func @ragged(%a: tensor<100x64xf32>, %b: tensor<64x32xf32>, %c: tensor<100x32xf32>) -> tensor<100x32xf32> {
  %0 = linalg.matmul {prism.roles = ["m", "n", "k"], prism.choice = {BM = 64, BN = 32, BK = 16, WM = 32, WN = 32, MMA = 0}}
         ins(%a, %b : tensor<100x64xf32>, tensor<64x32xf32>) outs(%c : tensor<100x32xf32>) -> tensor<100x32xf32>
  return %0 : tensor<100x32xf32>
}

// CHIP: error: {{.*}}sm_75
