// Inputs Prism cannot handle get an error at the op, exit 1, and never an abort or a traceback.
// RUN: not prism-opt %s --split-input-file --target=h200 --emit=ptx 2>&1 | filecheck %s --check-prefixes=CHECK,GPU
// RUN: not prism-opt %s --split-input-file --target=host --emit=llvm 2>&1 | filecheck %s --check-prefixes=CHECK,HOST

// A module inside the module.
// CHECK-NOT: Traceback
// GPU: bad-input.mlir:[[# @LINE + 3]]:3: error: prism-lower-gpu: nested modules are not supported
// HOST: bad-input.mlir:[[# @LINE + 2]]:3: error: prism-lower-cpu: nested modules are not supported
module {
  module @inner {
    func.func @mm(%a: tensor<16x16xf32>, %b: tensor<16x16xf32>, %c: tensor<16x16xf32>) -> tensor<16x16xf32> {
      %r = linalg.matmul ins(%a, %b : tensor<16x16xf32>, tensor<16x16xf32>) outs(%c : tensor<16x16xf32>) -> tensor<16x16xf32>
      return %r : tensor<16x16xf32>
    }
  }
}

// -----

// Complex numbers: refused at the first op that computes on them.
// GPU: bad-input.mlir:[[# @LINE + 3]]:8: error: prism-lower-gpu: 'tensor.empty' computes on tensor<4x4xcomplex<f32>>, whose element type Prism cannot lower
// HOST: bad-input.mlir:[[# @LINE + 2]]:8: error: prism-lower-cpu: 'tensor.empty' computes on tensor<4x4xcomplex<f32>>, whose element type Prism cannot lower
func.func @complex(%a: tensor<4x4xcomplex<f32>>, %b: tensor<4x4xcomplex<f32>>) -> tensor<4x4xcomplex<f32>> {
  %e = tensor.empty() : tensor<4x4xcomplex<f32>>
  %r = linalg.matmul ins(%a, %b : tensor<4x4xcomplex<f32>>, tensor<4x4xcomplex<f32>>) outs(%e : tensor<4x4xcomplex<f32>>) -> tensor<4x4xcomplex<f32>>
  return %r : tensor<4x4xcomplex<f32>>
}

// -----

// A loop around a matmul, whose result is a new tensor on every iteration: the GPU has no kernel for the
// loop (the refusal is printed once: no function is left to run), and the host's bufferization refuses the
// yield (deallocating buffers returned from loops needs i1 buffers, which this MLIR's conversion to LLVM aborts on).
// GPU-NOT: stays off the GPU
// GPU: bad-input.mlir:[[# @LINE + 8]]:8: error: prism-lower-gpu: 'scf.for' has no GPU kernel (Prism maps Linalg ops, reshapes and fills)
// HOST: bad-input.mlir:[[# @LINE + 7]]:8: remark: prism-explore: @loop kept as written: 'scf.for' is outside the algebra
// HOST: bad-input.mlir:[[# @LINE + 10]]:10: remark: prism-lower-cpu: a contraction inside a loop or region takes the generic path
// HOST: bad-input.mlir:[[# @LINE + 10]]:5: error: prism-lower-cpu: bufferization failed: Yield operand #0 is not equivalent to the corresponding iter bbArg
func.func @loop(%a: tensor<16x16xf32>, %b: tensor<16x16xf32>) -> tensor<16x16xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c3 = arith.constant 3 : index
  %r = scf.for %i = %c0 to %c3 step %c1 iter_args(%acc = %a) -> (tensor<16x16xf32>) {
    %z = arith.constant 0.0 : f32
    %e = tensor.empty() : tensor<16x16xf32>
    %f = linalg.fill ins(%z : f32) outs(%e : tensor<16x16xf32>) -> tensor<16x16xf32>
    %m = linalg.matmul ins(%acc, %b : tensor<16x16xf32>, tensor<16x16xf32>) outs(%f : tensor<16x16xf32>) -> tensor<16x16xf32>
    scf.yield %m : tensor<16x16xf32>
  }
  return %r : tensor<16x16xf32>
}

// -----

// Linalg on buffers: not tuned; the host lowers it through loops, the GPU refuses the function, whose arguments
// are neither tensors nor scalars.
// GPU: bad-input.mlir:[[# @LINE + 2]]:1: error: prism-lower-gpu: argument 0 of @buffers is memref<8x8xf32>: GPU functions take ranked tensors and scalars
// HOST: bad-input.mlir:[[# @LINE + 2]]:3: remark: prism-lift: 'linalg.matmul' left unchanged: a contraction on buffers
func.func @buffers(%a: memref<8x8xf32>, %b: memref<8x8xf32>, %c: memref<8x8xf32>) {
  linalg.matmul ins(%a, %b : memref<8x8xf32>, memref<8x8xf32>) outs(%c : memref<8x8xf32>)
  return
}

// -----

// An unranked tensor: the GPU refuses the function at its argument; the host keeps it as written.
// GPU: bad-input.mlir:[[# @LINE + 3]]:1: error: prism-lower-gpu: argument 0 of @unranked is tensor<*xf32>: GPU functions take ranked tensors and scalars
// HOST: bad-input.mlir:[[# @LINE + 2]]:1: remark: prism-explore: @unranked kept as written: its arguments and results must be tensors of static shape
// HOST-NOT: error
func.func @unranked(%a: tensor<*xf32>) -> tensor<*xf32> {
  return %a : tensor<*xf32>
}
