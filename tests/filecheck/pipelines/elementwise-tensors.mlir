// Elementwise arith and math ops on whole tensors are read as the linalg.generic ops that apply them to each
// element, by every pass and by both code generators: optimized, proven against the program as written,
// and lowered, from the pipeline or on raw input.
// RUN: prism-opt %s -p 'prism-optimize{target=host}' 2>/dev/null | filecheck %s
// RUN: prism-opt %s -p 'prism-optimize{target=host}' | prism-opt - --verify-against=%s -o /dev/null
// RUN: prism-opt %s -p 'prism-lower-cpu{threads=2}' | filecheck %s --check-prefix=LLVM
// RUN: prism-opt %s --target=h200 -p prism-lower-gpu --emit=ptx | filecheck %s --check-prefix=PTX

// CHECK-LABEL: func.func @add(
// CHECK:         linalg.generic
// CHECK:           arith.addf %{{.*}}, %{{.*}} : f32
// CHECK-NOT:     : tensor<8x64xf32>, tensor<8x64xf32>
// CHECK:         return
// LLVM-LABEL:  llvm.func @add(
// PTX:         .target sm_90a
// PTX-LABEL:   .visible .entry add_k0_pointwise(
// PTX:         ld.global.v4.b32
// PTX:         add.rn.f32
// PTX:         st.global.v4.b32
func.func @add(%a: tensor<8x64xf32>, %b: tensor<8x64xf32>) -> tensor<8x64xf32> {
  %r = arith.addf %a, %b : tensor<8x64xf32>
  return %r : tensor<8x64xf32>
}

// CHECK-LABEL: func.func @ext(
// CHECK:         linalg.generic
// CHECK:           arith.extsi %{{.*}} : i8 to i32
// LLVM-LABEL:  llvm.func @ext(
// LLVM:          llvm.sext
// PTX-LABEL:   .visible .entry ext_k0_pointwise(
// PTX:         cvt.s32.s8
func.func @ext(%a: tensor<3x4xi8>) -> tensor<3x4xi32> {
  %r = arith.extsi %a : tensor<3x4xi8> to tensor<3x4xi32>
  return %r : tensor<3x4xi32>
}

// prism-explore writes the square root inside its one reader's loop nest.
// CHECK-LABEL: func.func @root(
// CHECK:         linalg.generic
// CHECK:           math.sqrt %{{.*}} : f32
// CHECK-NEXT:      arith.mulf %{{.*}}, %{{.*}} : f32
// LLVM-LABEL:  llvm.func @root(
// The square root is read once, by the product: one kernel computes both, with no buffer between them.
// PTX-LABEL:   .visible .entry root_k0_pointwise(
// PTX:         sqrt.{{(rn|approx)}}.f32
// PTX:         mul.rn.f32
// PTX-NOT:     .entry
func.func @root(%a: tensor<16x32xf32>) -> tensor<16x32xf32> {
  %r = math.sqrt %a : tensor<16x32xf32>
  %s = arith.mulf %r, %a : tensor<16x32xf32>
  return %s : tensor<16x32xf32>
}
