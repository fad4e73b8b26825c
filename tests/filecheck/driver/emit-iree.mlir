// RUN: prism-opt %s --target=host --emit=iree 2>/dev/null | filecheck %s
// RUN: prism-opt %s --target=host --emit=iree 2>&1 >/dev/null | filecheck %s --check-prefix=REMARK

// --emit=iree: the tuned module, each scheduled contraction with IREE's compilation_info (Prism's block as
// IREE's workgroup tile, its register block as IREE's vector tile), and none of Prism's own attributes.
// CHECK-LABEL: func.func @gemm(
// CHECK-SAME:    %{{.*}}: tensor<37x96xf32>, %{{.*}}: tensor<96x50xf32>)
// CHECK:         linalg.matmul {compilation_info = #iree_codegen.compilation_info<lowering_config = #iree_cpu.lowering_config<distribution = [{{[0-9]+}}, {{[0-9]+}}, 0], vector_common_parallel = [{{[0-9]+}}, {{[0-9]+}}, 0], vector_reduction = [0, 0, 1]>, translation_info = #iree_codegen.translation_info<pipeline = #iree_cpu.pipeline<DoubleTilingExpert>>>}
// CHECK-NOT:     prism.
// REMARK: emit-iree.mlir:[[# @LINE + 5]]:8: remark: IREE's configuration cannot express the K slice
func.func @gemm(%x: tensor<37x96xf32>, %w: tensor<96x50xf32> {prism.invariant}) -> tensor<37x50xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<37x50xf32>
  %c = linalg.fill ins(%zero : f32) outs(%e : tensor<37x50xf32>) -> tensor<37x50xf32>
  %y = linalg.matmul ins(%x, %w : tensor<37x96xf32>, tensor<96x50xf32>) outs(%c : tensor<37x50xf32>) -> tensor<37x50xf32>
  return %y : tensor<37x50xf32>
}
