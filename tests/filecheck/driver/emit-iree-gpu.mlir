// RUN: prism-opt %s --target=h200 --emit=iree 2>/dev/null | filecheck %s --check-prefix=H200
// RUN: prism-opt %s --target=mi300x --emit=iree 2>/dev/null | filecheck %s --check-prefix=MI300X
// RUN: prism-opt %s --target=h200 --emit=iree-spec 2>&1 >/dev/null | filecheck %s --check-prefix=SPEC

// --emit=iree for GPU targets: IREE's tile-and-fuse pipeline with Prism's block as the workgroup tile and, with
// tensor cores, each warp's tile as the subgroup tile and BK as the reduction tile, in the chip's intrinsics.
// An NVIDIA module names its device with the chip's limits (IREE 3.13 cannot name sm_90a by flags; iree-compile
// takes the module as written and emits sm_90a PTX).
// H200:      module attributes {hal.device.targets = [#hal.device.target<"cuda", [#hal.executable.target<"cuda", "cuda-nvptx-fb", {iree_codegen.target_info = #iree_gpu.target<arch = "sm_90a", features = "+ptx80"
// H200-SAME:   max_workgroup_memory_bytes = 232448
// H200:        linalg.matmul {compilation_info = #iree_codegen.compilation_info<lowering_config = #iree_gpu.lowering_config<{workgroup = [{{[0-9]+}}, {{[0-9]+}}, 0], reduction = [0, 0, {{[0-9]+}}], subgroup = [{{[0-9]+}}, {{[0-9]+}}, 0], mma_kind = #iree_gpu.mma_layout<NV_MMA_SYNC_F32_16x8x16_F16>, convert_acc_gemm, promote_operands = [0, 1]}>, translation_info = #iree_codegen.translation_info<pipeline = #iree_gpu.pipeline<TileAndFuse> workgroup_size = [{{[0-9]+}}, 1, 1] subgroup_size = 32>>}
// H200-NOT:    prism.
// On the MI300X, 64-lane wavefronts and MFMA; IREE names gfx942 from its flags, so the module names no device.
// MI300X-NOT:  hal.device.targets
// MI300X:      linalg.matmul {compilation_info = {{.*}}mma_kind = #iree_gpu.mma_layout<MFMA_F32_16x16x16_F16>, promote_operands = [0, 1]}>{{.*}}subgroup_size = 64>>}
// SPEC: remark: IREE cannot name h200's chip by flags
func.func @mm(%a: tensor<512x256xf16>, %b: tensor<256x512xf16>) -> tensor<512x512xf32> {
  %z = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<512x512xf32>
  %c = linalg.fill ins(%z : f32) outs(%e : tensor<512x512xf32>) -> tensor<512x512xf32>
  %r = linalg.matmul ins(%a, %b : tensor<512x256xf16>, tensor<256x512xf16>) outs(%c : tensor<512x512xf32>) -> tensor<512x512xf32>
  return %r : tensor<512x512xf32>
}
