// RUN: prism-opt %s --verify-against=%S/Inputs/qkv.mlir --emit=report | filecheck %s --check-prefix=REPORT
// RUN: prism-opt %s -p 'prism-verify{against=%S/Inputs/qkv.mlir}' | filecheck %s
// RUN: prism-opt %S/Inputs/qkv.mlir -p 'prism-lift,prism-prune,prism-select,prism-instantiate,prism-verify' --emit=report | filecheck %s --check-prefix=PIPELINE

// The three projections of one input, fused into one GEMM over the
// concatenated weights and sliced apart, are proven equal to the three GEMMs;
// the report lists the laws the proof used.
// REPORT:      "proofs": [
// REPORT:          "function": "qkv",
// REPORT-NEXT:     "laws": {
// REPORT:            "concat-of-matmuls-sharing-a":
// REPORT:            "slice-inside-first-of-concat":
// REPORT:            "slice-inside-second-of-concat":
// REPORT:          "proved": true

// A proven module is printed unchanged.
// CHECK-LABEL: func.func @qkv
// CHECK:         tensor.concat dim(1)
// CHECK:         linalg.matmul
// CHECK-COUNT-3: tensor.extract_slice

// The tuning passes only annotate the ops, so the terms are identical and the
// proof needs no law.
// PIPELINE:      "proofs": [
// PIPELINE:          "function": "qkv",
// PIPELINE-NEXT:     "laws": {},
// PIPELINE-NEXT:     "proved": true
func.func @qkv(%x: tensor<16x64xf32>, %wq: tensor<64x64xf32>, %wk: tensor<64x32xf32>, %wv: tensor<64x32xf32>)
    -> (tensor<16x64xf32>, tensor<16x32xf32>, tensor<16x32xf32>) {
  %zero = arith.constant 0.0 : f32
  %w = tensor.concat dim(1) %wq, %wk, %wv : (tensor<64x64xf32>, tensor<64x32xf32>, tensor<64x32xf32>) -> tensor<64x128xf32>
  %e = tensor.empty() : tensor<16x128xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<16x128xf32>) -> tensor<16x128xf32>
  %s = linalg.matmul ins(%x, %w : tensor<16x64xf32>, tensor<64x128xf32>) outs(%f : tensor<16x128xf32>) -> tensor<16x128xf32>
  %q = tensor.extract_slice %s[0, 0] [16, 64] [1, 1] : tensor<16x128xf32> to tensor<16x64xf32>
  %k = tensor.extract_slice %s[0, 64] [16, 32] [1, 1] : tensor<16x128xf32> to tensor<16x32xf32>
  %v = tensor.extract_slice %s[0, 96] [16, 32] [1, 1] : tensor<16x128xf32> to tensor<16x32xf32>
  return %q, %k, %v : tensor<16x64xf32>, tensor<16x32xf32>, tensor<16x32xf32>
}
