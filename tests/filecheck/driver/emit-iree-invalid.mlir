// RUN: not prism-opt %s --target=host --emit=iree 2>&1 | filecheck %s --check-prefix=ATTR
// RUN: not prism-opt %s --target=h200 --emit=iree-spec 2>&1 | filecheck %s --check-prefix=ATTR

// An input that already carries IREE's attributes is not Prism's to parse: an error at its place.
// ATTR-NOT: Traceback
// ATTR: emit-iree-invalid.mlir:[[# @LINE + 4]]:{{[0-9]+}}: error: {{.*}}unregistered dialect
func.func @gemm(%x: tensor<8x8xf32>, %w: tensor<8x8xf32>) -> tensor<8x8xf32> {
  %zero = arith.constant 0.0 : f32
  %c = linalg.fill ins(%zero : f32) outs(%x : tensor<8x8xf32>) -> tensor<8x8xf32>
  %y = linalg.matmul {compilation_info = #iree_codegen.compilation_info<lowering_config = #iree_cpu.lowering_config<distribution = [8, 8, 0]>>} ins(%x, %w : tensor<8x8xf32>, tensor<8x8xf32>) outs(%c : tensor<8x8xf32>) -> tensor<8x8xf32>
  return %y : tensor<8x8xf32>
}
