// RUN: not prism-opt %s --split-input-file --target=h200 -p prism-lower-gpu 2>&1 | filecheck %s
// RUN: not prism-opt %s --split-input-file -p 'prism-lower-gpu{chip=sm_75}' 2>&1 | filecheck %s --check-prefix=CHIP

// CHECK-NOT: Traceback
// An op with no GPU kernel is refused at its location, after a remark at its function's; nothing else is left.
// CHECK: lower-gpu-invalid.mlir:[[# @LINE + 3]]:1: remark: prism-lower-gpu: @pad stays off the GPU: 'tensor.pad' has no GPU kernel (Prism maps Linalg ops, reshapes and fills) (at {{.*}}lower-gpu-invalid.mlir:[[# @LINE + 5]]:8)
// CHECK: lower-gpu-invalid.mlir:[[# @LINE + 4]]:8: error: prism-lower-gpu: 'tensor.pad' has no GPU kernel (Prism maps Linalg ops, reshapes and fills)
// CHECK-NOT: IR Dump
func.func @pad(%a: tensor<4x8xf32>) -> tensor<6x8xf32> {
  %z = arith.constant 0.0 : f32
  %p = tensor.pad %a low[1, 0] high[1, 0] {
  ^bb0(%i: index, %j: index):
    tensor.yield %z : f32
  } : tensor<4x8xf32> to tensor<6x8xf32>
  return %p : tensor<6x8xf32>
}

// -----

// GPU functions take ranked tensors only: a scalar argument is refused at the function, naming the argument.
// CHECK: lower-gpu-invalid.mlir:[[# @LINE + 1]]:1: error: prism-lower-gpu: argument 1 of @offset is not a ranked tensor (index); GPU functions take tensors
func.func @offset(%a: tensor<16x8xf32>, %i: index) -> tensor<4x8xf32> {
  %s = tensor.extract_slice %a[%i, 0] [4, 8] [1, 1] : tensor<16x8xf32> to tensor<4x8xf32>
  return %s : tensor<4x8xf32>
}

// An unknown chip is refused before anything runs.
// CHIP-NOT: Traceback
// CHIP: lower-gpu-invalid.mlir: error: prism-lower-gpu: option 'chip' must be one of {sm_80, sm_90, sm_90a}, got 'sm_75'
// CHIP-NOT: error
