// A product of bf16 operands into f32 runs on AMX tiles where the machine has AMX
// (python/prism/codegen/cpu/kernel_amx.py), ahead of its AVX512-BF16 dot products: A and C's start staged in
// whole tiles (zeros past M, N and K), B packed into the pair panels of the bf16 kernel (VNNI rows of 64 bytes,
// zero pairs up to whole tiles of K), then blocks of C tiles, each group of tiles of K as amx.tile_load and
// amx.tile_mulf between a load and a store of the C tiles, and C copied out masked past N. Down to LLVM, the tile
// ops are the tileloadd64, tdpbf16ps and tilestored64 intrinsics, and the module translates to LLVM IR (nothing
// here runs it: the machine that runs the tests need not have AMX). The tiles are knobs of prism.choice (AR rows,
// AB bytes per row, AM x AN C tiles). A product of a few static rows (16 at most) takes the dot products even
// where the machine has AMX (B read in place, not packed on every call): the tile kernel's RUN lines describe a
// machine with AMX and without AVX512-BF16, on which @acc's 9 rows take the tiles too; the FEW line, the AMX
// machine itself.
// RUN: env PRISM_HOST_DESCRIPTION=%S/../Inputs/host-amx-tiles.json prism-opt %s -p 'prism-lower-cpu{threads=2}' --print-ir-after=cpu-tile -o /dev/null 2>&1 | filecheck %s --check-prefix=TILE
// RUN: env PRISM_HOST_DESCRIPTION=%S/../Inputs/host-amx-tiles.json prism-opt %s -p 'prism-lower-cpu{threads=2}' --print-ir-after=cpu-llvm -o /dev/null 2>&1 | filecheck %s --check-prefix=LLVM
// RUN: env PRISM_HOST_DESCRIPTION=%S/../Inputs/host-amx-tiles.json prism-opt %s --target=host --emit=llvm -p 'prism-lower-cpu{threads=2}' | python -c "import sys; from mlir import ir; from mlir.dialects.llvm import translate_module_to_llvmir; ctx = ir.Context(); print(translate_module_to_llvmir(ir.Module.parse(sys.stdin.read(), ctx).operation))" | filecheck %s --check-prefix=IR
// RUN: env PRISM_HOST_DESCRIPTION=%S/../Inputs/host-amx-tiles.json prism-opt %s --emit=report | filecheck %s --check-prefix=REPORT
// RUN: env PRISM_HOST_DESCRIPTION=%S/../Inputs/host-amx.json prism-opt %s --emit=report | filecheck %s --check-prefix=FEW
// RUN: env PRISM_HOST_DESCRIPTION=%S/../Inputs/host-avx512-bf16.json prism-opt %s -p 'prism-lower-cpu{threads=2}' --print-ir-after=cpu-tile -o /dev/null 2>&1 | filecheck %s --check-prefix=DOT

// TILE-LABEL: IR Dump After cpu-tile
// TILE: func.func @mm(
// TILE-NOT: linalg.matmul
// 100 rows: 4 blocks of 2 tiles of 16 rows; 131 k: 5 tiles of 32.
// TILE: memref.alloc() {alignment = 64 : i64} : memref<128x160xbf16>
// TILE: vector.maskedload {{.*}} : memref<100x131xbf16>, vector<32xi1>, vector<32xbf16>
// TILE: vector.store {{.*}} : memref<128x160xbf16>, vector<32xbf16>
// 70 columns: 3 blocks of 2 panels of 16 columns; 66 pairs of k packed, zeros up to 80.
// TILE: memref.alloc() {alignment = 64 : i64} : memref<6x80x32xbf16>
// TILE: vector.interleave {{.*}} : vector<16xbf16> -> vector<32xbf16>
// TILE: vector.store {{.*}} : memref<6x80x32xbf16>, vector<32xbf16>
// TILE: scf.for {{.*}} = %c66 to %c80 step %c1
// TILE: memref.alloc() {alignment = 64 : i64} : memref<128x96xf32>
// TILE-COUNT-4: amx.tile_load {{.*}} : memref<?x?xf32> into !amx.tile<16x16xf32>
// TILE-COUNT-2: amx.tile_load {{.*}} : memref<?x?xbf16> into !amx.tile<16x32xbf16>
// TILE-COUNT-2: amx.tile_load {{.*}} : memref<?x?x32xbf16> into !amx.tile<16x32xbf16>
// TILE-COUNT-4: amx.tile_mulf {{.*}} : !amx.tile<16x32xbf16>, !amx.tile<16x32xbf16>, !amx.tile<16x16xf32>
// TILE: amx.tile_store {{.*}} : memref<?x?xf32>, !amx.tile<16x16xf32>
// TILE: vector.maskedstore {{.*}} : memref<100x70xf32>, vector<16xi1>, vector<16xf32>

// A batch from a C operand, on tiles of the choice: 8 rows x 32 bytes (16 k, 8 pairs), 1 x 2 C tiles.
// TILE-LABEL: func.func @acc(
// TILE: vector.maskedload {{.*}} : memref<3x9x45xbf16>, vector<16xi1>, vector<16xbf16>
// TILE: vector.maskedload {{.*}} : memref<3x9x40xf32>, vector<16xi1>, vector<16xf32>
// TILE: amx.tile_load {{.*}} : memref<?x?xf32> into !amx.tile<8x16xf32>
// TILE: amx.tile_load {{.*}} : memref<?x?xbf16> into !amx.tile<8x16xbf16>
// TILE: amx.tile_load {{.*}} : memref<?x?x32xbf16> into !amx.tile<8x32xbf16>
// TILE: amx.tile_mulf {{.*}} : !amx.tile<8x16xbf16>, !amx.tile<8x32xbf16>, !amx.tile<8x16xf32>
// TILE: vector.maskedstore {{.*}} : memref<3x9x40xf32>, vector<16xi1>, vector<16xf32>

// LLVM-LABEL: IR Dump After cpu-llvm
// LLVM: llvm.call_intrinsic "llvm.x86.tileloadd64.internal"
// LLVM: llvm.call_intrinsic "llvm.x86.tdpbf16ps.internal"
// LLVM: llvm.call_intrinsic "llvm.x86.tilestored64.internal"
// LLVM-NOT: amx.

// IR: call x86_amx @llvm.x86.tileloadd64.internal(i16 16, i16 64,
// IR: call x86_amx @llvm.x86.tdpbf16ps.internal(i16 16, i16 64, i16 64,
// IR: call void @llvm.x86.tilestored64.internal(i16 16, i16 64,

// REPORT: "kind": "gemm (AMX tiles)"
// REPORT: "kind": "gemm (AMX tiles)"

// On the AMX machine, 100 rows take the tiles and 9 rows the dot products.
// FEW: "function": "@mm"
// FEW: "kind": "gemm (AMX tiles)"
// FEW: "function": "@acc"
// FEW: "kind": "gemm (bf16 dot products)"

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
  %r = linalg.batch_matmul {prism.choice = {AR = 8, AB = 32, AM = 1, AN = 2}}
         ins(%a, %b : tensor<3x9x45xbf16>, tensor<3x45x40xbf16>) outs(%c : tensor<3x9x40xf32>) -> tensor<3x9x40xf32>
  return %r : tensor<3x9x40xf32>
}
