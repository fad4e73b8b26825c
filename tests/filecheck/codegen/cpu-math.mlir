// Every math op lowers on the host. In a row kernel, erf and tanh (as exp) run on vectors as polynomials,
// with no call per lane; on the generic path's scalar loops, erf is one libm call per element; ops without
// an LLVM intrinsic or libm function are rewritten first (isinf as a comparison).
// RUN: prism-opt %s --split-input-file -p 'prism-lower-cpu{threads=2}' | filecheck %s

// GELU, 0.5 x (1 + erf(x / sqrt 2)), over rows: a vectorized polynomial.
// CHECK-LABEL: llvm.func @gelu(
// CHECK-NOT:     @erff
// CHECK:         llvm.intr.fmuladd({{.*}}) : (vector<8xf32>, vector<8xf32>, vector<8xf32>) -> vector<8xf32>
// CHECK:         llvm.intr.copysign({{.*}}) : (vector<8xf32>, vector<8xf32>) -> vector<8xf32>
// CHECK-NOT:     @erff
// CHECK:         llvm.return
#id2 = affine_map<(i, j) -> (i, j)>
func.func @gelu(%x: tensor<16x100xf32>) -> tensor<16x100xf32> {
  %e = tensor.empty() : tensor<16x100xf32>
  %r = linalg.generic {indexing_maps = [#id2, #id2], iterator_types = ["parallel", "parallel"]}
      ins(%x : tensor<16x100xf32>) outs(%e : tensor<16x100xf32>) {
  ^bb0(%a: f32, %o: f32):
    %half = arith.constant 0.5 : f32
    %one = arith.constant 1.0 : f32
    %rsqrt2 = arith.constant 0.707106769 : f32
    %s = arith.mulf %a, %rsqrt2 : f32
    %f = math.erf %s : f32
    %p = arith.addf %f, %one : f32
    %h = arith.mulf %a, %half : f32
    %y = arith.mulf %h, %p : f32
    linalg.yield %y : f32
  } -> tensor<16x100xf32>
  return %r : tensor<16x100xf32>
}

// -----

// On scalars (a rank-1 op takes the generic path), erf is libm's erff, and f16 is computed in f32.
// CHECK:       llvm.func @erff(f32) -> f32
// CHECK-LABEL: llvm.func @erf16(
// CHECK:         llvm.fpext %{{.*}} : f16 to f32
// CHECK:         llvm.call @erff(%{{.*}}) : (f32) -> f32
// CHECK:         llvm.fptrunc %{{.*}} : f32 to f16
func.func @erf16(%x: tensor<37xf16>) -> tensor<37xf16> {
  %e = tensor.empty() : tensor<37xf16>
  %r = linalg.generic {indexing_maps = [affine_map<(i) -> (i)>, affine_map<(i) -> (i)>], iterator_types = ["parallel"]}
      ins(%x : tensor<37xf16>) outs(%e : tensor<37xf16>) {
  ^bb0(%a: f16, %o: f16):
    %y = math.erf %a : f16
    linalg.yield %y : f16
  } -> tensor<37xf16>
  return %r : tensor<37xf16>
}

// -----

// isinf has no LLVM intrinsic: |x| == inf.
// CHECK-LABEL: llvm.func @isinf(
// CHECK:         llvm.intr.fabs
// CHECK:         llvm.fcmp "oeq"
func.func @isinf(%x: tensor<37xf32>) -> tensor<37xi8> {
  %e = tensor.empty() : tensor<37xi8>
  %r = linalg.generic {indexing_maps = [affine_map<(i) -> (i)>, affine_map<(i) -> (i)>], iterator_types = ["parallel"]}
      ins(%x : tensor<37xf32>) outs(%e : tensor<37xi8>) {
  ^bb0(%a: f32, %o: i8):
    %b = math.isinf %a : f32
    %y = arith.extui %b : i1 to i8
    linalg.yield %y : i8
  } -> tensor<37xi8>
  return %r : tensor<37xi8>
}
