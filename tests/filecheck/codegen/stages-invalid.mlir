// A stage name that no pass of the pipeline has is refused before anything runs.
// RUN: not prism-opt %s -p prism-lower-cpu --print-ir-after=gpu-tiles 2>&1 | filecheck %s
// RUN: not prism-opt %s -p prism-lower-gpu --print-ir-after=gpu-plan 2>&1 | filecheck %s --check-prefix=FAILED
// RUN: not prism-opt %s -p prism-lower-gpu --print-ir-after=gpu-nvvm 2>&1 | filecheck %s --check-prefix=FAILED

// CHECK: error: --print-ir-after=gpu-tiles: no pass or code-generator stage of that name; see prism-opt --help
// CHECK-NOT: IR Dump

// A stage that fails prints nothing, nor do the stages after it: here the GPU planner refuses a tensor.pad, which
// has no GPU kernel.
// FAILED-NOT: IR Dump
// FAILED: stages-invalid.mlir:[[# @LINE + 4]]:8: error: prism-lower-gpu: 'tensor.pad' has no GPU kernel
// FAILED-NOT: IR Dump
func.func @pad(%a: tensor<4x8xf32>) -> tensor<6x8xf32> {
  %z = arith.constant 0.0 : f32
  %p = tensor.pad %a low[1, 0] high[1, 0] {
  ^bb0(%i: index, %j: index):
    tensor.yield %z : f32
  } : tensor<4x8xf32> to tensor<6x8xf32>
  return %p : tensor<6x8xf32>
}
