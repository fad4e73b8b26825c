// RUN: prism-opt %s --target=host --emit=iree 2>%t.remarks | filecheck %s
// RUN: filecheck %s --check-prefix=REMARK --input-file=%t.remarks
// RUN: prism-opt %s --target=host --emit=iree-spec 2>/dev/null | filecheck %s --check-prefix=SPEC

// --emit=iree: the tuned module, each scheduled contraction with IREE's compilation_info, and none of Prism's
// own attributes. A product of several row blocks runs on packed operands (linalg.mmt4d, IREE's data-tiled
// pipeline, with Prism's workgroup); one of a single row block keeps its form, with Prism's block as IREE's
// workgroup tile and its register block as IREE's vector tile.
// CHECK-LABEL: func.func @gemm(
// CHECK-SAME:    %[[X:.*]]: tensor<370x96xf32>, %[[W:.*]]: tensor<96x500xf32>)
// CHECK:         %[[PX:.*]] = linalg.pack %[[X]] padding_value(%{{.*}} : f32) outer_dims_perm = [0, 1] inner_dims_pos = [0, 1] inner_tiles = [[[L:[0-9]+]], 1] into %{{.*}} : tensor<370x96xf32> -> tensor<{{[0-9]+}}x96x[[L]]x1xf32>
// CHECK:         %[[PW:.*]] = linalg.pack %[[W]] padding_value(%{{.*}} : f32) outer_dims_perm = [1, 0] inner_dims_pos = [1, 0] inner_tiles = [[[L]], 1] into %{{.*}} : tensor<96x500xf32> -> tensor<{{[0-9]+}}x96x[[L]]x1xf32>
// CHECK:         %[[PC:.*]] = linalg.pack %{{.*}} inner_tiles = [[[L]], [[L]]] into %{{.*}} : tensor<370x500xf32>
// CHECK:         %[[R:.*]] = linalg.mmt4d {compilation_info = #iree_codegen.compilation_info<lowering_config = #iree_cpu.lowering_config<distribution = [{{[0-9]+}}, {{[0-9]+}}, 0, 0, 0, 0], vector_common_parallel = [1, 1, 0, [[L]], [[L]], 0], vector_reduction = [0, 0, 1, 0, 0, 1]>, translation_info = #iree_codegen.translation_info<pipeline = #iree_cpu.pipeline<Mmt4dTilingExpert>>>} ins(%[[PX]], %[[PW]] : {{.*}}) outs(%[[PC]] : {{.*}})
// CHECK:         %[[U:.*]] = linalg.unpack %[[R]] outer_dims_perm = [0, 1] inner_dims_pos = [0, 1] inner_tiles = [[[L]], [[L]]] into %{{.*}} -> tensor<370x500xf32>
// CHECK:         return %[[U]]
// CHECK-LABEL: func.func @row(
// CHECK:         linalg.matmul {compilation_info = #iree_codegen.compilation_info<lowering_config = #iree_cpu.lowering_config<distribution = [1, {{[0-9]+}}, 0], vector_common_parallel = [1, {{[0-9]+}}, 0], vector_reduction = [0, 0, 8]>, translation_info = #iree_codegen.translation_info<pipeline = #iree_cpu.pipeline<DoubleTilingExpert>>>}
// A product after one kept as it is is packed all the same.
// CHECK-LABEL: func.func @tall(
// CHECK:         linalg.mmt4d {compilation_info
// CHECK-NOT:     prism.
// --emit=iree-spec: the same configuration as a tuning spec, matching the product by its form and types.
// SPEC:      module attributes {iree_codegen.tuning_spec_with_default_entrypoint, transform.with_named_sequence}
// SPEC:        transform.named_sequence @apply_op_config(
// SPEC:          transform.annotate %op "compilation_info" = %config
// SPEC:        transform.named_sequence @match_0(
// SPEC:          transform.iree.match.cast_compatible_dag_from_root %root
// SPEC-NEXT:     ^bb0(%arg0: tensor<370x96xf32>, %arg1: tensor<96x500xf32>, %arg2: tensor<370x500xf32>):
// SPEC-NEXT:       linalg.matmul ins(%arg0, %arg1 : tensor<370x96xf32>, tensor<96x500xf32>) outs(%arg2 : tensor<370x500xf32>)
// SPEC:          transform.param.constant #iree_codegen.compilation_info<lowering_config = #iree_cpu.lowering_config<distribution
// SPEC:        transform.named_sequence @__kernel_config(
// SPEC-NEXT:     -> !transform.any_op attributes {iree_codegen.tuning_spec_entrypoint}
// SPEC:          transform.foreach_match in %variant
// SPEC-NEXT:       @match_0 -> @apply_op_config
// SPEC-NOT:    prism.
// REMARK: emit-iree.mlir:[[# @LINE + 5]]:8: remark: IREE's configuration cannot express the K slice
func.func @gemm(%x: tensor<370x96xf32>, %w: tensor<96x500xf32> {prism.invariant}) -> tensor<370x500xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<370x500xf32>
  %c = linalg.fill ins(%zero : f32) outs(%e : tensor<370x500xf32>) -> tensor<370x500xf32>
  %y = linalg.matmul ins(%x, %w : tensor<370x96xf32>, tensor<96x500xf32>) outs(%c : tensor<370x500xf32>) -> tensor<370x500xf32>
  return %y : tensor<370x500xf32>
}

func.func @row(%x: tensor<1x96xf32>, %w: tensor<96x500xf32>) -> tensor<1x500xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<1x500xf32>
  %c = linalg.fill ins(%zero : f32) outs(%e : tensor<1x500xf32>) -> tensor<1x500xf32>
  %y = linalg.matmul ins(%x, %w : tensor<1x96xf32>, tensor<96x500xf32>) outs(%c : tensor<1x500xf32>) -> tensor<1x500xf32>
  return %y : tensor<1x500xf32>
}

func.func @tall(%x: tensor<400x96xf32>, %w: tensor<96x500xf32>) -> tensor<400x500xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<400x500xf32>
  %c = linalg.fill ins(%zero : f32) outs(%e : tensor<400x500xf32>) -> tensor<400x500xf32>
  %y = linalg.matmul ins(%x, %w : tensor<400x96xf32>, tensor<96x500xf32>) outs(%c : tensor<400x500xf32>) -> tensor<400x500xf32>
  return %y : tensor<400x500xf32>
}
