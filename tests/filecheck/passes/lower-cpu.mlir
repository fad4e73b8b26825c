// RUN: prism-opt %s --split-input-file -p 'prism-lower-cpu{threads=2}' > %t.mlir
// RUN: filecheck %s --input-file=%t.mlir
// RUN: filecheck %s --check-prefix=FMA --input-file=%t.mlir

// A tuned GEMM becomes vectorized LLVM with a C interface; the tensor-level
// signature is kept for the runtime.
// FMA:         llvm.intr.fmuladd{{.*}}vector<
// CHECK-LABEL: llvm.func @gemm(
// CHECK-LABEL: llvm.func @_mlir_ciface_gemm(
// CHECK-SAME:    llvm.emit_c_interface
// CHECK-SAME:    prism.signature = (tensor<64x32xf32>, tensor<32x48xf32>, tensor<64x48xf32>) -> tensor<64x48xf32>
func.func @gemm(%a: tensor<64x32xf32>, %b: tensor<32x48xf32>, %c: tensor<64x48xf32>) -> tensor<64x48xf32> {
  %0 = linalg.matmul {prism.roles = ["m", "n", "k"], prism.choice = {TM = 32, TN = 16, TK = 32, RM = 4, RN = 16}}
         ins(%a, %b : tensor<64x32xf32>, tensor<32x48xf32>) outs(%c : tensor<64x48xf32>) -> tensor<64x48xf32>
  return %0 : tensor<64x48xf32>
}

// -----

// Ops Prism does not tune still lower, through loops.
// CHECK-LABEL: llvm.func @conv(
// CHECK-NOT:     linalg.
// CHECK-LABEL: llvm.func @_mlir_ciface_conv(
func.func @conv(%img: tensor<1x8x8x2xf32>, %filter: tensor<3x3x2x4xf32>, %out: tensor<1x6x6x4xf32>) -> tensor<1x6x6x4xf32> {
  %0 = linalg.conv_2d_nhwc_hwcf ins(%img, %filter : tensor<1x8x8x2xf32>, tensor<3x3x2x4xf32>)
                                outs(%out : tensor<1x6x6x4xf32>) -> tensor<1x6x6x4xf32>
  return %0 : tensor<1x6x6x4xf32>
}
