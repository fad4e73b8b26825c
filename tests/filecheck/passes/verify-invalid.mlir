// RUN: not prism-opt %s --split-input-file --verify-against=%S/Inputs/qkv.mlir 2>&1 | filecheck %s
// RUN: not prism-opt %s --split-input-file -p 'prism-verify{against=%S/Inputs/missing.mlir}' 2>&1 | filecheck %s --check-prefix=MISSING

// K sliced from V's columns: the proof fails, and random inputs show where.
// CHECK: verify-invalid.mlir:[[# @LINE + 1]]:1: error: prism-verify: could not prove @qkv equal to the original: results #1 unproven (saturated {{.*}}; laws applied: {{.*}}slice-inside-second-of-concat{{.*}}; counterexample: result #1 differs at [{{[0-9]+}}, {{[0-9]+}}]: original {{.*}}, candidate {{.*}} (inputs: numpy.random.default_rng(0).standard_normal
func.func @qkv(%x: tensor<16x64xf32>, %wq: tensor<64x64xf32>, %wk: tensor<64x32xf32>, %wv: tensor<64x32xf32>)
    -> (tensor<16x64xf32>, tensor<16x32xf32>, tensor<16x32xf32>) {
  %zero = arith.constant 0.0 : f32
  %w = tensor.concat dim(1) %wq, %wk, %wv : (tensor<64x64xf32>, tensor<64x32xf32>, tensor<64x32xf32>) -> tensor<64x128xf32>
  %e = tensor.empty() : tensor<16x128xf32>
  %f = linalg.fill ins(%zero : f32) outs(%e : tensor<16x128xf32>) -> tensor<16x128xf32>
  %s = linalg.matmul ins(%x, %w : tensor<16x64xf32>, tensor<64x128xf32>) outs(%f : tensor<16x128xf32>) -> tensor<16x128xf32>
  %q = tensor.extract_slice %s[0, 0] [16, 64] [1, 1] : tensor<16x128xf32> to tensor<16x64xf32>
  %k = tensor.extract_slice %s[0, 96] [16, 32] [1, 1] : tensor<16x128xf32> to tensor<16x32xf32>
  %v = tensor.extract_slice %s[0, 96] [16, 32] [1, 1] : tensor<16x128xf32> to tensor<16x32xf32>
  return %q, %k, %v : tensor<16x64xf32>, tensor<16x32xf32>, tensor<16x32xf32>
}

// -----

// A function the original does not have.
// CHECK: verify-invalid.mlir:[[# @LINE + 1]]:1: error: prism-verify: function @projections is not in the original program
func.func @projections(%x: tensor<16x64xf32>) -> tensor<16x64xf32> {
  return %x : tensor<16x64xf32>
}

// -----

// A candidate that drops a function of the original (here: all of them) proves nothing.
// CHECK: Inputs/qkv.mlir:{{[0-9]+}}:1: error: prism-verify: function @qkv of the original program is missing from the candidate
func.func private @helper(%x: tensor<16x64xf32>) -> tensor<16x64xf32> {
  return %x : tensor<16x64xf32>
}

// -----

// The same name with another type.
// CHECK: verify-invalid.mlir:[[# @LINE + 1]]:1: error: prism-verify: @qkv has type (tensor<16x64xf32>) -> tensor<16x64xf32> but the original has
func.func @qkv(%x: tensor<16x64xf32>) -> tensor<16x64xf32> {
  return %x : tensor<16x64xf32>
}

// MISSING: error: prism-verify: cannot read input file '{{.*}}missing.mlir': No such file or directory
