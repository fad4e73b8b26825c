// RUN: not prism-opt %s -p prism-lower-cpu 2>&1 | filecheck %s
// RUN: not prism-opt %s -p 'prism-lower-cpu{threads=-1}' 2>&1 | filecheck %s --check-prefix=THREADS

// A choice whose values are not integers is rejected at the op.
// CHECK: lower-cpu-invalid.mlir:[[# @LINE + 2]]:8: error:
func.func @gemm(%a: tensor<8x8xf32>, %b: tensor<8x8xf32>, %c: tensor<8x8xf32>) -> tensor<8x8xf32> {
  %0 = linalg.matmul {prism.roles = ["m", "n", "k"], prism.choice = {TM = "big"}}
         ins(%a, %b : tensor<8x8xf32>, tensor<8x8xf32>) outs(%c : tensor<8x8xf32>) -> tensor<8x8xf32>
  return %0 : tensor<8x8xf32>
}

// THREADS: error: prism-lower-cpu: option 'threads' must be in [0, 1024], got -1
