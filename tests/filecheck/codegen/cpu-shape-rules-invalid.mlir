// Constant sizes that contradict each other (an output of 5 rows for inputs of 3) are refused at the op, by
// both code generators, and nothing is written.
// RUN: not prism-opt %s -p 'prism-lower-cpu{threads=2}' 2>&1 | filecheck %s
// RUN: not prism-opt %s --target h200 -p 'prism-lower-gpu' 2>&1 | filecheck %s --check-prefix=GPU

// CHECK: cpu-shape-rules-invalid.mlir:[[# @LINE + 6]]:8: error: prism-lower-cpu: 'linalg.generic' takes 3 and 5 as the extent of one loop; they must be equal
// CHECK-NOT: llvm.func
// GPU: cpu-shape-rules-invalid.mlir:[[# @LINE + 4]]:8: error: prism-lower-gpu: 'linalg.generic' takes 3 and 5 as the extent of one loop; they must be equal
func.func @f(%a: tensor<3x4xf32>) -> tensor<?x4xf32> {
  %c5 = arith.constant 5 : index
  %e = tensor.empty(%c5) : tensor<?x4xf32>
  %r = linalg.add ins(%a, %a : tensor<3x4xf32>, tensor<3x4xf32>) outs(%e : tensor<?x4xf32>) -> tensor<?x4xf32>
  return %r : tensor<?x4xf32>
}
