// prism-lower-gpu on single GEMMs and the functions around them: the kernel each takes on each chip, the tile it
// is given (prism.choice) in its launch, and the one module every kernel goes into.
// RUN: prism-opt %s --split-input-file --target=a100 -p 'prism-lower-gpu{chip=sm_80}' | filecheck %s --check-prefix=MLIR
// RUN: prism-opt %s --split-input-file --target=a100 -p 'prism-lower-gpu{chip=sm_80}' --emit=ptx 2>/dev/null | filecheck %s --check-prefixes=PTX,SM80
// RUN: prism-opt %s --split-input-file --target=a100 -p 'prism-lower-gpu{chip=sm_80}' --emit=manifest 2>/dev/null | filecheck %s --check-prefixes=MANIFEST,SM80-MANIFEST
// RUN: prism-opt %s --split-input-file --target=h200 -p prism-lower-gpu --emit=ptx 2>%t.remarks | filecheck %s --check-prefixes=PTX,SM90
// RUN: prism-opt %s --split-input-file --target=h200 -p prism-lower-gpu --emit=manifest 2>/dev/null | filecheck %s --check-prefixes=MANIFEST,SM90-MANIFEST
// RUN: filecheck %s --check-prefix=REMARK --input-file=%t.remarks

// Without --emit, the lowered module: one gpu.binary holding the chip's PTX.
// MLIR:      module attributes {gpu.container_module} {
// MLIR-NEXT:   gpu.binary @prism_kernels  [#gpu.object<#nvvm.target<O = 3, chip = "sm_80", features = "+ptx70">, assembly = "{{.*}}.target sm_80{{.*}}.visible .entry mma_k0_gemm(

// An f16 matmul with its tile for mma.sync (4 warps of 32 x 32), as prism-instantiate writes it on the named op:
// on sm_80, cp.async into shared memory, ldmatrix and mma.sync in 64 x 64 blocks.
// SM80: .target sm_80
// SM80: .visible .entry mma_k0_gemm(
// SM80: cp.async.cg.shared.global
// SM80: ldmatrix.sync.aligned.m8n8.x4.shared.b16
// SM80: mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32
// SM80-NOT: .entry
// SM80-MANIFEST:      "name": "mma_k0_gemm",
// SM80-MANIFEST-NEXT: "grid": [
// SM80-MANIFEST-NEXT:   "cdiv(128, 64)",
// SM80-MANIFEST-NEXT:   "cdiv(128, 64)",
// SM80-MANIFEST-NEXT:   "1"
// SM80-MANIFEST-NEXT: ],
// SM80-MANIFEST-NEXT: "block": [
// SM80-MANIFEST-NEXT:   128,
// On sm_90a the same GEMM takes the wgmma kernel, with TMA loads of both operands.
// SM90: .target sm_90a
// SM90: .visible .entry mma_k0_gemm(
// SM90-DAG: cp.async.bulk.tensor.2d
// SM90-DAG: wgmma.mma_async.sync.aligned
// SM90-NOT: .entry
// SM90-MANIFEST: "name": "mma_k0_gemm",
// SM90-MANIFEST: "tensormap": {
// SM90-MANIFEST-NEXT: "tensor": "arg_0",
// SM90-MANIFEST: "tensormap": {
// SM90-MANIFEST-NEXT: "tensor": "arg_1",
func.func @mma(%a: tensor<128x64xf16>, %b: tensor<64x128xf16>) -> tensor<128x128xf32> {
  %zero = arith.constant 0.0 : f32
  %empty = tensor.empty() : tensor<128x128xf32>
  %acc = linalg.fill ins(%zero : f32) outs(%empty : tensor<128x128xf32>) -> tensor<128x128xf32>
  %c = linalg.matmul {prism.roles = ["m", "n", "k"],
                      prism.choice = {BM = 64, BN = 64, BK = 32, WM = 32, WN = 32, MMA = 1, STAGES = 3}}
         ins(%a, %b : tensor<128x64xf16>, tensor<64x128xf16>) outs(%acc : tensor<128x128xf32>) -> tensor<128x128xf32>
  return %c : tensor<128x128xf32>
}

// -----

// An f16 GEMM written as a generic with its tile for wgmma on sm_90a: one consumer warpgroup of 64 x 128 and a producer (256 threads),
// 64 x 128 blocks, TMA and wgmma of N = 128.
// PTX: // -----
// MANIFEST: // -----
// SM90: .visible .entry wgmma_k0_gemm(
// SM90: .maxnreg
// SM90-DAG: cp.async.bulk.tensor.2d
// SM90-DAG: wgmma.mma_async.sync.aligned.m64n128k16.f32.f16.f16
// SM90-NOT: .entry
// SM90-MANIFEST:      "name": "wgmma_k0_gemm",
// SM90-MANIFEST-NEXT: "grid": [
// SM90-MANIFEST-NEXT:   "2",
// SM90-MANIFEST-NEXT:   "2",
// SM90-MANIFEST-NEXT:   "1"
// SM90-MANIFEST-NEXT: ],
// SM90-MANIFEST-NEXT: "block": [
// SM90-MANIFEST-NEXT:   256,
#a = affine_map<(m, n, k) -> (m, k)>
#b = affine_map<(m, n, k) -> (k, n)>
#c = affine_map<(m, n, k) -> (m, n)>
func.func @wgmma(%a: tensor<128x64xf16>, %b: tensor<64x256xf16>) -> tensor<128x256xf32> {
  %zero = arith.constant 0.0 : f32
  %empty = tensor.empty() : tensor<128x256xf32>
  %acc = linalg.fill ins(%zero : f32) outs(%empty : tensor<128x256xf32>) -> tensor<128x256xf32>
  %r = linalg.generic {indexing_maps = [#a, #b, #c], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%a, %b : tensor<128x64xf16>, tensor<64x256xf16>) outs(%acc : tensor<128x256xf32>)
      attrs = {prism.roles = ["m", "n", "k"],
               prism.choice = {BM = 64, BN = 128, BK = 64, WM = 64, WN = 128, MMA = 1, STAGES = 3}} {
  ^bb0(%x: f16, %y: f16, %s: f32):
    %xf = arith.extf %x : f16 to f32
    %yf = arith.extf %y : f16 to f32
    %p = arith.mulf %xf, %yf : f32
    %t = arith.addf %s, %p : f32
    linalg.yield %t : f32
  } -> tensor<128x256xf32>
  return %r : tensor<128x256xf32>
}

// -----

// A dynamic M: the size symbol is read from the argument's dimension 0, and the GEMM has one kernel per class of
// M (here M <= 128 and the rest: the search's tiles for small M and for the rest), each launched where its "when"
// holds, its grid following the size, the size a parameter and the last block's rows masked.
// PTX: // -----
// MANIFEST: // -----
// PTX: .visible .entry dynamic_k0_gemm_class0(
// PTX: .visible .entry dynamic_k0_gemm_class1(
// PTX-NOT: .entry
// MANIFEST:      "sizes": {
// MANIFEST-NEXT:   "size_0": {
// MANIFEST-NEXT:     "input": "arg_0",
// MANIFEST-NEXT:     "dim": 0
// MANIFEST:      "name": "dynamic_k0_gemm_class0",
// MANIFEST-NEXT: "grid": [
// MANIFEST-NEXT:   "cdiv(32, {{[0-9]+}})",
// MANIFEST-NEXT:   "cdiv(size_0, {{[0-9]+}})",
// MANIFEST:      "when": "size_0 <= 128",
// MANIFEST:      "size": "size_0"
// MANIFEST:      "name": "dynamic_k0_gemm_class1",
// MANIFEST-NEXT: "grid": [
// MANIFEST-NEXT:   "cdiv(32, {{[0-9]+}})",
// MANIFEST-NEXT:   "cdiv(size_0, {{[0-9]+}})",
// MANIFEST:      "when": "size_0 > 128",
// MANIFEST:      "size": "size_0"
func.func @dynamic(%a: tensor<?x64xf32>, %b: tensor<64x32xf32>, %c: tensor<?x32xf32>) -> tensor<?x32xf32> {
  %0 = linalg.matmul ins(%a, %b : tensor<?x64xf32>, tensor<64x32xf32>) outs(%c : tensor<?x32xf32>) -> tensor<?x32xf32>
  return %0 : tensor<?x32xf32>
}

// -----

// An f32 matmul whose 64-row blocks do not divide M = 100: the tile is kept (2 x 1 warps of 32 x 32, 64 threads) and
// the last block is masked.
// PTX: // -----
// MANIFEST: // -----
// PTX: .visible .entry ragged_k0_gemm(
// PTX-NOT: .entry
// MANIFEST:      "name": "ragged_k0_gemm",
// MANIFEST-NEXT: "grid": [
// MANIFEST-NEXT:   "cdiv(32, 32)",
// MANIFEST-NEXT:   "cdiv(100, 64)",
// MANIFEST-NEXT:   "1"
// MANIFEST-NEXT: ],
// MANIFEST-NEXT: "block": [
// MANIFEST-NEXT:   64,
func.func @ragged(%a: tensor<100x64xf32>, %b: tensor<64x32xf32>, %c: tensor<100x32xf32>) -> tensor<100x32xf32> {
  %0 = linalg.matmul {prism.roles = ["m", "n", "k"], prism.choice = {BM = 64, BN = 32, BK = 16, WM = 32, WN = 32, MMA = 0}}
         ins(%a, %b : tensor<100x64xf32>, tensor<64x32xf32>) outs(%c : tensor<100x32xf32>) -> tensor<100x32xf32>
  return %0 : tensor<100x32xf32>
}

// -----

// A function with an op the GPU has no kernel for stays off the GPU with a remark; the others still compile.
// REMARK-NOT: error
// REMARK: lower-gpu.mlir:[[# @LINE + 9]]:1: remark: prism-lower-gpu: @pad stays off the GPU: 'tensor.pad' has no GPU kernel (Prism maps Linalg ops, reshapes and fills) (at {{.*}}lower-gpu.mlir:[[# @LINE + 11]]:8)
// REMARK-NOT: error
// PTX: // -----
// MANIFEST: // -----
// PTX: .visible .entry scale_k0_pointwise(
// PTX-NOT: .entry
// MANIFEST:     "functions": {
// MANIFEST-NOT: "pad"
// MANIFEST:     "name": "scale_k0_pointwise",
func.func @pad(%a: tensor<4x8xf32>) -> tensor<6x8xf32> {
  %z = arith.constant 0.0 : f32
  %p = tensor.pad %a low[1, 0] high[1, 0] {
  ^bb0(%i: index, %j: index):
    tensor.yield %z : f32
  } : tensor<4x8xf32> to tensor<6x8xf32>
  return %p : tensor<6x8xf32>
}
func.func @scale(%a: tensor<4x8xf32>) -> tensor<4x8xf32> {
  %r = linalg.add ins(%a, %a : tensor<4x8xf32>, tensor<4x8xf32>) outs(%a : tensor<4x8xf32>) -> tensor<4x8xf32>
  return %r : tensor<4x8xf32>
}
