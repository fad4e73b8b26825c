// A stage name that no pass of the pipeline has is refused before anything runs.
// RUN: not prism-opt %s -p prism-lower-cpu --print-ir-after=gpu-tiles 2>&1 | filecheck %s
// RUN: not prism-opt %s -p prism-lower-gpu --print-ir-after=gpu-nvvm 2>&1 | filecheck %s --check-prefix=FAILED

// CHECK: error: --print-ir-after=gpu-tiles: no pass or code-generator stage of that name; see prism-opt --help
// CHECK-NOT: IR Dump

// A stage that fails prints nothing after it: here the GPU planner refuses a dynamic shape.
// FAILED: stages-invalid.mlir:[[# @LINE + 3]]:8: error: prism-lower-gpu: 'linalg.matmul' has a dynamic shape
// FAILED-NOT: IR Dump
func.func @mm(%a: tensor<?x8xf32>, %b: tensor<8x8xf32>, %c: tensor<?x8xf32>) -> tensor<?x8xf32> {
  %r = linalg.matmul ins(%a, %b : tensor<?x8xf32>, tensor<8x8xf32>) outs(%c : tensor<?x8xf32>) -> tensor<?x8xf32>
  return %r : tensor<?x8xf32>
}
