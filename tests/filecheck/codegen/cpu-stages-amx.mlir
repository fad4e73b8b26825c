// A product of bf16 operands into f32 runs on AMX tiles where the machine has AMX
// (python/prism/codegen/cpu/kernel_amx.py), ahead of its AVX512-BF16 dot products: A staged in whole tiles, each
// contiguous (zeros past M and K); B packed into the pair panels of the bf16 kernel (VNNI rows of 64 bytes, zero
// pairs up to whole tiles of K), interleaved by groups of AN panels: all of B first, or, where one task's rows
// cover M (@mm, @acc), by each task, a slice at a time, into its worker's buffer. Tasks of TM x TN of C walk K in
// slices of TK, each block's C tiles starting as zero tiles at K's first tile (or loaded), taking a whole slice's
// A and B tiles in straight-line code (a ragged last slice one tile of K at a time), and stored. C is staged in
// whole blocks and copied out masked past N, unless M and N are static and whole blocks (@whole: tiles straight
// to the result). Down to LLVM, the tile ops are the tilezero, tileloadd64, tdpbf16ps and tilestored64
// intrinsics, and the module translates to LLVM IR (nothing here runs it: the machine that runs the tests need
// not have AMX). The tiles and tasks are knobs of prism.choice (AR rows, AB bytes per row, AM x AN C tiles, TM,
// TN, TK). The RUN lines describe a machine with AMX and without AVX512-BF16; the FEW line, the AMX machine
// itself, on which a few rows (@acc's 9) take the tiles too.
// RUN: env PRISM_HOST_DESCRIPTION=%S/../Inputs/host-amx-tiles.json prism-opt %s -p 'prism-lower-cpu{threads=2}' --print-ir-after=cpu-tile -o /dev/null 2>&1 | filecheck %s --check-prefix=TILE
// RUN: env PRISM_HOST_DESCRIPTION=%S/../Inputs/host-amx-tiles.json prism-opt %s -p 'prism-lower-cpu{threads=2}' --print-ir-after=cpu-llvm -o /dev/null 2>&1 | filecheck %s --check-prefix=LLVM
// RUN: env PRISM_HOST_DESCRIPTION=%S/../Inputs/host-amx-tiles.json prism-opt %s --target=host --emit=llvm -p 'prism-lower-cpu{threads=2}' | python -c "import sys; from mlir import ir; from mlir.dialects.llvm import translate_module_to_llvmir; ctx = ir.Context(); print(translate_module_to_llvmir(ir.Module.parse(sys.stdin.read(), ctx).operation))" | filecheck %s --check-prefix=IR
// RUN: env PRISM_HOST_DESCRIPTION=%S/../Inputs/host-amx-tiles.json prism-opt %s --emit=report | filecheck %s --check-prefix=REPORT
// RUN: env PRISM_HOST_DESCRIPTION=%S/../Inputs/host-amx.json prism-opt %s --emit=report | filecheck %s --check-prefix=FEW
// RUN: env PRISM_HOST_DESCRIPTION=%S/../Inputs/host-avx512-bf16.json prism-opt %s -p 'prism-lower-cpu{threads=2}' --print-ir-after=cpu-tile -o /dev/null 2>&1 | filecheck %s --check-prefix=DOT

// TILE-LABEL: IR Dump After cpu-tile
// TILE: func.func @mm(
// TILE-NOT: linalg.matmul
// 100 rows: 4 blocks of 2 tiles of 16 rows; 131 k: 5 tiles of 32, each staged row's 5 tiles 32 rows apart.
// TILE: memref.alloc() {alignment = 64 : i64} : memref<640x32xbf16>
// TILE: vector.maskedload {{.*}} : memref<100x131xbf16>, vector<32xi1>, vector<32xbf16>
// TILE: vector.store {{.*}} : memref<640x32xbf16>, vector<32xbf16>
// The 100 rows are within one task's rows: no pass packs B first, each task packs its slices into its worker's
// buffer (8 groups of 2 panels of 16 columns, 16 tiles of 16 pairs each).
// TILE-NOT: scf.for %{{.*}} step %c16
// TILE: memref.alloc() {alignment = 64 : i64} : memref<16x512x32xbf16>
// TILE: memref.alloc() {alignment = 64 : i64} : memref<100x70xf32>
// TILE: memref.alloc() {alignment = 64 : i64} : memref<128x96xf32>
// The 65 pairs of two rows inside K, row by row across the task: the two groups inside N's 70 columns read whole
// (a cache line of each row) after prefetching the same columns 8 rows down (clamped to row 130); the third
// under a mask. Then the pairs past K's end up to whole tiles of K (80 pairs), every group under masks.
// TILE: scf.for {{.*}} = %c0 to %c65 step %c1
// TILE: scf.for {{.*}} = %c0 to %c2 step %c1
// TILE: arith.addi {{.*}}, %c8 : index
// TILE: arith.minui {{.*}}, %c130 : index
// TILE: memref.prefetch {{.*}} : memref<131x70xbf16>
// TILE: vector.load {{.*}} : memref<131x70xbf16>, vector<32xbf16>
// TILE: vector.interleave {{.*}} : vector<32xbf16> -> vector<64xbf16>
// TILE-COUNT-2: vector.store {{.*}} : memref<16x512x32xbf16>, vector<32xbf16>
// TILE: vector.maskedload {{.*}} : memref<131x70xbf16>, vector<32xi1>, vector<32xbf16>
// TILE: scf.for {{.*}} = %c65 to %c80 step %c1
// TILE: vector.maskedload {{.*}} : memref<131x70xbf16>, vector<32xi1>, vector<32xbf16>
// 5 tiles of K, fewer than a slice: one at a time, from zero tiles at the first.
// TILE: scf.for {{.*}} = %c0 to %c5 step %c1
// TILE: scf.if
// TILE-COUNT-4: amx.tile_zero : !amx.tile<16x16xf32>
// TILE-COUNT-2: amx.tile_load {{.*}} : memref<?x?xbf16> into !amx.tile<16x32xbf16>
// TILE-COUNT-2: amx.tile_load {{.*}} : memref<?x?x32xbf16> into !amx.tile<16x32xbf16>
// TILE-COUNT-4: amx.tile_mulf {{.*}} : !amx.tile<16x32xbf16>, !amx.tile<16x32xbf16>, !amx.tile<16x16xf32>
// TILE-COUNT-4: amx.tile_store {{.*}} : memref<?x?xf32>, !amx.tile<16x16xf32>
// TILE: } else {
// TILE-COUNT-4: amx.tile_load {{.*}} : memref<?x?xf32> into !amx.tile<16x16xf32>
// TILE: vector.maskedstore {{.*}} : memref<100x70xf32>, vector<16xi1>, vector<16xf32>

// A batch from a C operand, on tiles of the choice: 8 rows x 32 bytes (16 k, 8 pairs), 1 x 2 C tiles, slices of
// 2 tiles of K: 45 k are one whole slice, then one tile.
// TILE-LABEL: func.func @acc(
// TILE: vector.maskedload {{.*}} : memref<3x9x45xbf16>, vector<16xi1>, vector<16xbf16>
// TILE: vector.maskedload {{.*}} : memref<3x9x40xf32>, vector<16xi1>, vector<16xf32>
// TILE: scf.if
// TILE-COUNT-2: amx.tile_load {{.*}} : memref<?x?xf32> into !amx.tile<8x16xf32>
// TILE: amx.tile_load {{.*}} : memref<?x?xbf16> into !amx.tile<8x16xbf16>
// TILE-COUNT-2: amx.tile_load {{.*}} : memref<?x?x32xbf16> into !amx.tile<8x32xbf16>
// TILE-COUNT-2: amx.tile_mulf {{.*}} : !amx.tile<8x16xbf16>, !amx.tile<8x32xbf16>, !amx.tile<8x16xf32>
// TILE: amx.tile_load {{.*}} : memref<?x?xbf16> into !amx.tile<8x16xbf16>
// TILE-COUNT-2: amx.tile_load {{.*}} : memref<?x?x32xbf16> into !amx.tile<8x32xbf16>
// TILE-COUNT-2: amx.tile_mulf {{.*}} : !amx.tile<8x16xbf16>, !amx.tile<8x32xbf16>, !amx.tile<8x16xf32>
// TILE-COUNT-2: amx.tile_store {{.*}} : memref<?x?xf32>, !amx.tile<8x16xf32>
// TILE: } else {
// TILE: vector.maskedstore {{.*}} : memref<3x9x40xf32>, vector<16xi1>, vector<16xf32>

// 64 x 96: whole blocks of 32 x 32, so C's tiles go to the result, no staging buffer and no copy out; tasks of
// 32 x 64 (2 x 2 of them), slices of 2 tiles of K (200 k: 7 tiles, 3 whole slices and one tile).
// Its tasks' 32 rows do not cover M: B is packed whole first, 16 pairs of every panel at a time.
// TILE-LABEL: func.func @whole(
// TILE: memref.alloc() {alignment = 64 : i64} : memref<448x32xbf16>
// TILE: memref.alloc() {alignment = 64 : i64} : memref<3x224x32xbf16>
// TILE: scf.for {{.*}} = %c0 to %c100 step %c16
// TILE-NOT: memref.prefetch
// TILE: vector.interleave {{.*}} : vector<16xbf16> -> vector<32xbf16>
// TILE: %[[RESULT:.*]] = memref.alloc() {alignment = 64 : i64} : memref<64x96xf32>
// TILE: %[[C:.*]] = memref.cast %[[RESULT]] : memref<64x96xf32> to memref<?x?xf32>
// TILE-NOT: memref.alloc
// TILE: scf.for {{.*}} = %c0 to %c7 step %c2
// TILE-COUNT-4: amx.tile_zero
// TILE-COUNT-8: amx.tile_mulf
// TILE-COUNT-4: amx.tile_store %[[C]]
// TILE-NOT: vector.maskedstore
// TILE: return

// LLVM-LABEL: IR Dump After cpu-llvm
// LLVM: llvm.call_intrinsic "llvm.x86.tilezero.internal"
// LLVM: llvm.call_intrinsic "llvm.x86.tileloadd64.internal"
// LLVM: llvm.call_intrinsic "llvm.x86.tdpbf16ps.internal"
// LLVM: llvm.call_intrinsic "llvm.x86.tilestored64.internal"
// LLVM-NOT: amx.

// IR: call x86_amx @llvm.x86.tileloadd64.internal(i16 16, i16 64,
// IR: call x86_amx @llvm.x86.tdpbf16ps.internal(i16 16, i16 64, i16 64,
// IR: call void @llvm.x86.tilestored64.internal(i16 16, i16 64,

// REPORT: "kind": "gemm (AMX tiles)"
// REPORT: "kind": "gemm (AMX tiles)"

// On the AMX machine, 9 rows take the tiles too.
// FEW: "function": "@mm"
// FEW: "kind": "gemm (AMX tiles)"
// FEW: "function": "@acc"
// FEW: "kind": "gemm (AMX tiles)"

// Without AMX, the dot products.
// DOT-LABEL: IR Dump After cpu-tile
// DOT-NOT: amx.
// DOT: x86vector.avx512.dot
// DOT-NOT: amx.
func.func @mm(%a: tensor<100x131xbf16>, %b: tensor<131x70xbf16>) -> tensor<100x70xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<100x70xf32>
  %init = linalg.fill ins(%zero : f32) outs(%e : tensor<100x70xf32>) -> tensor<100x70xf32>
  %r = linalg.matmul ins(%a, %b : tensor<100x131xbf16>, tensor<131x70xbf16>) outs(%init : tensor<100x70xf32>) -> tensor<100x70xf32>
  return %r : tensor<100x70xf32>
}

func.func @acc(%a: tensor<3x9x45xbf16>, %b: tensor<3x45x40xbf16>, %c: tensor<3x9x40xf32>) -> tensor<3x9x40xf32> {
  %r = linalg.batch_matmul {prism.choice = {AR = 8, AB = 32, AM = 1, AN = 2, TK = 32}}
         ins(%a, %b : tensor<3x9x45xbf16>, tensor<3x45x40xbf16>) outs(%c : tensor<3x9x40xf32>) -> tensor<3x9x40xf32>
  return %r : tensor<3x9x40xf32>
}

func.func @whole(%a: tensor<64x200xbf16>, %b: tensor<200x96xbf16>) -> tensor<64x96xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<64x96xf32>
  %init = linalg.fill ins(%zero : f32) outs(%e : tensor<64x96xf32>) -> tensor<64x96xf32>
  %r = linalg.matmul {prism.choice = {AR = 16, AB = 64, AM = 2, AN = 2, TM = 32, TN = 64, TK = 64}}
         ins(%a, %b : tensor<64x200xbf16>, tensor<200x96xbf16>) outs(%init : tensor<64x96xf32>) -> tensor<64x96xf32>
  return %r : tensor<64x96xf32>
}
