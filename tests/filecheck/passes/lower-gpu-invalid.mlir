// RUN: not prism-opt %s --split-input-file --target=h200 -p prism-lower-gpu 2>&1 | filecheck %s
// RUN: not prism-opt %s --split-input-file -p 'prism-lower-gpu{chip=sm_75}' 2>&1 | filecheck %s --check-prefix=CHIP

// CHECK-NOT: Traceback
// An op with no GPU kernel is refused at its location, once (no function is left to run, so no remark before).
// CHECK-NOT: stays off the GPU
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

// GPU functions take ranked tensors and scalars: a buffer argument is refused at the function, naming it.
// CHECK: lower-gpu-invalid.mlir:[[# @LINE + 1]]:1: error: prism-lower-gpu: argument 1 of @buffer is memref<4x8xf32>: GPU functions take ranked tensors and scalars
func.func @buffer(%a: tensor<4x8xf32>, %b: memref<4x8xf32>) -> tensor<4x8xf32> {
  return %a : tensor<4x8xf32>
}

// -----

// A slice at an offset known only when the function runs has no GPU kernel (the copy kernels take static offsets).
// CHECK: lower-gpu-invalid.mlir:[[# @LINE + 3]]:8: error: prism-lower-gpu: 'tensor.extract_slice' with dynamic offsets, sizes or strides has no GPU kernel
func.func @offset(%a: tensor<16x8xf32>, %j: i64) -> tensor<4x8xf32> {
  %i = arith.index_cast %j : i64 to index
  %s = tensor.extract_slice %a[%i, 0] [4, 8] [1, 1] : tensor<16x8xf32> to tensor<4x8xf32>
  return %s : tensor<4x8xf32>
}

// An unknown chip is refused before anything runs.
// CHIP-NOT: Traceback
// CHIP: lower-gpu-invalid.mlir: error: prism-lower-gpu: option 'chip' must be one of {sm_80, sm_90, sm_90a}, got 'sm_75'
// CHIP-NOT: error
