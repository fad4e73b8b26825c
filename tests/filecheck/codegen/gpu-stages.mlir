// Each stage of the GPU code generator prints on its own; together they take an f16 matmul with its bias, and
// an RMSNorm, to one PTX module.
// RUN: prism-opt %s -p 'prism-lower-gpu{chip=sm_90a}' --print-ir-after=gpu-plan -o /dev/null 2>&1 | filecheck %s --check-prefix=PLAN
// RUN: prism-opt %s -p 'prism-lower-gpu{chip=sm_90a}' --print-ir-after=gpu-kernels -o /dev/null 2>&1 | filecheck %s --check-prefix=KERNELS
// RUN: prism-opt %s -p 'prism-lower-gpu{chip=sm_90a}' --print-ir-after=gpu-nvvm -o /dev/null 2>&1 | filecheck %s --check-prefix=NVVM
// RUN: prism-opt %s --target=h200 -p 'prism-lower-gpu{chip=sm_90a}' --emit=ptx | filecheck %s --check-prefix=PTX
// RUN: prism-opt %s --target=h200 -p 'prism-lower-gpu{chip=sm_90a}' --emit=manifest | filecheck %s --check-prefix=MANIFEST

// The fill is the accumulator's start and the bias the GEMM's epilogue: one kernel; the row sum, the scale and
// the normalization are one row kernel.
// PLAN: IR Dump After gpu-plan
// PLAN: linalg.generic {{.*}}prism.kernel = "mm_k0_gemm_epilogue"
// PLAN: linalg.generic {{.*}}prism.kernel = "mm_k0_gemm_epilogue"
// PLAN: linalg.generic {{.*}}prism.kernel = "norm_k0_rows"

// KERNELS: IR Dump After gpu-kernels
// KERNELS: gpu.module @prism_kernels
// KERNELS: gpu.func @mm_k0_gemm_epilogue
// KERNELS: nvgpu.tma.async.load
// KERNELS: nvvm.wgmma.mma_async
// KERNELS: gpu.func @norm_k0_rows
// KERNELS: gpu.shuffle xor

// NVVM: IR Dump After gpu-nvvm
// NVVM: gpu.binary @prism_kernels  [#gpu.object<#nvvm.target<O = 3, chip = "sm_90a", features = "+ptx80">, assembly = "{{.*}}.extern .shared .align 1024 .b8 __dynamic_shmem__0[];

// One module; dynamic shared memory declared once, at module scope.
// PTX: .target sm_90a
// PTX: .extern .shared .align 1024 .b8 __dynamic_shmem__0[];
// PTX: .entry mm_k0_gemm_epilogue(
// PTX: .maxnreg 168
// PTX-DAG: cp.async.bulk.tensor
// PTX-DAG: wgmma.mma_async
// PTX: .entry norm_k0_rows(
// PTX: shfl.sync.bfly
// PTX-NOT: .target

// MANIFEST: "version": 1,
// MANIFEST: "chip": "sm_90a",
// MANIFEST: "mm": {
// MANIFEST: "name": "mm_k0_gemm_epilogue",
// MANIFEST: "tensormap": {
// MANIFEST: "norm": {
// MANIFEST: "name": "norm_k0_rows",
func.func @mm(%a: tensor<200x256xf16>, %b: tensor<256x320xf16>, %bias: tensor<320xf32>) -> tensor<200x320xf16> {
  %z = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<200x320xf32>
  %f = linalg.fill ins(%z : f32) outs(%e : tensor<200x320xf32>) -> tensor<200x320xf32>
  %r = linalg.matmul ins(%a, %b : tensor<200x256xf16>, tensor<256x320xf16>) outs(%f : tensor<200x320xf32>)
         -> tensor<200x320xf32>
  %o = tensor.empty() : tensor<200x320xf16>
  %y = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (j)>,
                                        affine_map<(i, j) -> (i, j)>], iterator_types = ["parallel", "parallel"]}
      ins(%r, %bias : tensor<200x320xf32>, tensor<320xf32>) outs(%o : tensor<200x320xf16>) {
  ^bb0(%x: f32, %c: f32, %out: f16):
    %s = arith.addf %x, %c : f32
    %t = arith.truncf %s : f32 to f16
    linalg.yield %t : f16
  } -> tensor<200x320xf16>
  return %y : tensor<200x320xf16>
}

func.func @norm(%x: tensor<7x1000xbf16>) -> tensor<7x1000xbf16> {
  %z = arith.constant 0.0 : bf16
  %e = tensor.empty() : tensor<7xbf16>
  %f = linalg.fill ins(%z : bf16) outs(%e : tensor<7xbf16>) -> tensor<7xbf16>
  %ss = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i)>],
                        iterator_types = ["parallel", "reduction"]}
      ins(%x : tensor<7x1000xbf16>) outs(%f : tensor<7xbf16>) {
  ^bb0(%v: bf16, %acc: bf16):
    %sq = arith.mulf %v, %v : bf16
    %s = arith.addf %acc, %sq : bf16
    linalg.yield %s : bf16
  } -> tensor<7xbf16>
  %o = tensor.empty() : tensor<7x1000xbf16>
  %y = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i)>,
                                        affine_map<(i, j) -> (i, j)>], iterator_types = ["parallel", "parallel"]}
      ins(%x, %ss : tensor<7x1000xbf16>, tensor<7xbf16>) outs(%o : tensor<7x1000xbf16>) {
  ^bb0(%v: bf16, %s: bf16, %out: bf16):
    %r = math.rsqrt %s : bf16
    %n = arith.mulf %v, %r : bf16
    linalg.yield %n : bf16
  } -> tensor<7x1000xbf16>
  return %y : tensor<7x1000xbf16>
}
