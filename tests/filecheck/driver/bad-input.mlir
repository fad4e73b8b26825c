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

// A loop around a matmul, whose result is a new tensor on every iteration: the GPU has no mapping for the
// loop, and the host's bufferization refuses the yield (deallocating buffers returned from loops needs i1
// buffers, which this MLIR's conversion to LLVM aborts on).
// GPU: bad-input.mlir:[[# @LINE + 8]]:8: error: prism-lower-gpu: cannot map 'scf.for' to the GPU
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

// Linalg on buffers: not tuned; the host lowers it through loops, the GPU refuses it.
// GPU: bad-input.mlir:[[# @LINE + 3]]:3: error: prism-lower-gpu: 'linalg.matmul' works on buffers; Prism lowers Linalg on tensors
// HOST: bad-input.mlir:[[# @LINE + 2]]:3: remark: prism-lift: 'linalg.matmul' left unchanged: a contraction on buffers
func.func @buffers(%a: memref<8x8xf32>, %b: memref<8x8xf32>, %c: memref<8x8xf32>) {
  linalg.matmul ins(%a, %b : memref<8x8xf32>, memref<8x8xf32>) outs(%c : memref<8x8xf32>)
  return
}

// -----

// A matmul of 10^9 rows needs more blocks than a CUDA grid has (a host lowers it).
// GPU: bad-input.mlir:[[# @LINE + 6]]:8: error: prism-lower-gpu: the kernel needs 3906250 blocks along grid axis y, more than the 65535 CUDA allows
// HOST-NOT: error
func.func @tall(%a: tensor<1000000000x64xf32>, %b: tensor<64x64xf32>) -> tensor<1000000000x64xf32> {
  %z = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<1000000000x64xf32>
  %c = linalg.fill ins(%z : f32) outs(%e : tensor<1000000000x64xf32>) -> tensor<1000000000x64xf32>
  %r = linalg.matmul ins(%a, %b : tensor<1000000000x64xf32>, tensor<64x64xf32>) outs(%c : tensor<1000000000x64xf32>) -> tensor<1000000000x64xf32>
  return %r : tensor<1000000000x64xf32>
}

// -----

// A contraction written as a generic, scheduled without tensor cores: SIMT vector lowering runs out of
// memory or crashes on it (found by the fuzzer), so the GPU refuses it; the host lowers it.
// GPU: bad-input.mlir:[[# @LINE + 5]]:8: error: prism-lower-gpu: a contraction written as linalg.generic maps to the GPU only on tensor cores
func.func @widening(%a: tensor<32x8xf16>, %b: tensor<8x64xf16>) -> tensor<32x64xf32> {
  %z = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<32x64xf32>
  %f = linalg.fill ins(%z : f32) outs(%e : tensor<32x64xf32>) -> tensor<32x64xf32>
  %r = linalg.generic {indexing_maps = [affine_map<(m, n, k) -> (m, k)>, affine_map<(m, n, k) -> (k, n)>,
                                        affine_map<(m, n, k) -> (m, n)>],
                       iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%a, %b : tensor<32x8xf16>, tensor<8x64xf16>) outs(%f : tensor<32x64xf32>) {
  ^bb0(%x: f16, %y: f16, %acc: f32):
    %xf = arith.extf %x : f16 to f32
    %yf = arith.extf %y : f16 to f32
    %p = arith.mulf %xf, %yf : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  } -> tensor<32x64xf32>
  return %r : tensor<32x64xf32>
}
