// Attention of bf16 Q, K and V whose chain rounds P to bf16 before P V takes its two products on AMX tiles where
// the machine has AMX (python/prism/codegen/cpu/attention_amx.py): K packed once per call into pair panels of 16
// keys (each pair of the head dimension, zeros past the head size of 20 up to a whole tile of 32 and past the 129th
// key), V into pair panels of 16 values (two keys' rows interleaved; 48 values: three panels); per task its query
// rows staged as whole A tiles; per block of keys the scores from zero C tiles into the worker's S (a 2-D view), the
// online softmax writing each weight rounded to bf16 into the worker's P, and O += P V through C tiles loaded from
// and stored to the worker's O (2 x 2 tiles, then the third panel alone). No f32 copy of K^T and no extension of an
// operand remain. Down to LLVM the tile ops are the AMX intrinsics, and the module translates to LLVM IR (nothing
// here runs it). Without AMX (DOT) the f32 kernel runs the chain, K^T extended into its f32 copy. With or without
// AMX (POLY), the weights' exponential is the degree-4 polynomial (its leading coefficient 0.00958285294), accurate as
// far as the rounding to bf16 needs, never the full degree 6 (1.53375775E-4).
// RUN: env PRISM_HOST_CONFIG= PRISM_HOST_DESCRIPTION=%S/../Inputs/host-amx-tiles.json prism-opt %s -p 'prism-lower-cpu{threads=2}' --print-ir-after=cpu-tile -o /dev/null 2>&1 | filecheck %s --check-prefix=TILE
// RUN: env PRISM_HOST_CONFIG= PRISM_HOST_DESCRIPTION=%S/../Inputs/host-amx-tiles.json prism-opt %s -p 'prism-lower-cpu{threads=2}' --print-ir-after=cpu-llvm -o /dev/null 2>&1 | filecheck %s --check-prefix=LLVM
// RUN: env PRISM_HOST_CONFIG= PRISM_HOST_DESCRIPTION=%S/../Inputs/host-amx-tiles.json prism-opt %s --target=host --emit=llvm -p 'prism-lower-cpu{threads=2}' | python -c "import sys; from mlir import ir; from mlir.dialects.llvm import translate_module_to_llvmir; ctx = ir.Context(); print(translate_module_to_llvmir(ir.Module.parse(sys.stdin.read(), ctx).operation))" | filecheck %s --check-prefix=IR
// RUN: env PRISM_HOST_CONFIG= PRISM_HOST_DESCRIPTION=%S/../Inputs/host-avx512-bf16.json prism-opt %s -p 'prism-lower-cpu{threads=2}' --print-ir-after=cpu-tile -o /dev/null 2>&1 | filecheck %s --check-prefix=DOT
// RUN: env PRISM_HOST_CONFIG= PRISM_HOST_DESCRIPTION=%S/../Inputs/host-avx512-bf16.json prism-opt %s -p 'prism-lower-cpu{threads=2}' --print-ir-after=cpu-tile -o /dev/null 2>&1 | filecheck %s --check-prefix=POLY
// RUN: env PRISM_HOST_CONFIG= PRISM_HOST_DESCRIPTION=%S/../Inputs/host-amx-tiles.json prism-opt %s -p 'prism-lower-cpu{threads=2}' --print-ir-after=cpu-tile -o /dev/null 2>&1 | filecheck %s --check-prefix=POLY

// TILE-LABEL: IR Dump After cpu-tile
// TILE-NOT: linalg.generic
// 2 heads x 2 blocks of 128 keys x 8 panels x 16 pairs; 2 x 2 x 3 panels x 64 pairs of keys.
// TILE: %[[KP:.*]] = memref.alloc() {alignment = 64 : i64} : memref<512x32xbf16>
// TILE: %[[VP:.*]] = memref.alloc() {alignment = 64 : i64} : memref<768x32xbf16>
// TILE: vector.maskedload {{.*}} : memref<2x129x20xbf16>, vector<32xi1>, vector<32xbf16> into vector<32xbf16>
// TILE: vector.store {{.*}}, %[[KP]]{{\[.*\]}} : memref<512x32xbf16>, vector<2xbf16>
// TILE: vector.interleave {{.*}} : vector<48xbf16> -> vector<96xbf16>
// TILE: vector.store {{.*}}, %[[VP]]{{\[.*\]}} : memref<768x32xbf16>, vector<32xbf16>
// 37 query rows: one block of 64 rows per head; the workers' query tiles and bf16 weights, and 2-D views of S and O.
// TILE: memref.alloc() {alignment = 64 : i64} : memref<128x32xbf16>
// TILE: %[[P:.*]] = memref.alloc() {alignment = 64 : i64} : memref<128x128xbf16>
// TILE: %[[S:.*]] = memref.collapse_shape {{.*}} : memref<2x64x128xf32> into memref<128x128xf32>
// TILE: %[[O:.*]] = memref.collapse_shape {{.*}} : memref<2x64x48xf32> into memref<128x48xf32>
// TILE: amx.tile_zero : !amx.tile<16x16xf32>
// TILE: amx.tile_load {{.*}} : memref<128x32xbf16> into !amx.tile<16x32xbf16>
// TILE: amx.tile_load {{.*}} : memref<?x32xbf16> into !amx.tile<16x32xbf16>
// TILE: amx.tile_mulf
// TILE: amx.tile_store %[[S]]{{\[.*\]}}, {{.*}} : memref<128x128xf32>, !amx.tile<16x16xf32>
// TILE: arith.truncf {{.*}} : vector<16xf32> to vector<16xbf16>
// TILE: vector.store {{.*}}, %[[P]]{{\[.*\]}} : memref<128x128xbf16>, vector<16xbf16>
// TILE: amx.tile_load %[[O]]{{\[.*\]}} : memref<128x48xf32> into !amx.tile<16x16xf32>
// TILE: amx.tile_load %[[P]]{{\[.*\]}} : memref<128x128xbf16> into !amx.tile<16x32xbf16>
// TILE: amx.tile_mulf
// TILE: amx.tile_store %[[O]]{{\[.*\]}}, {{.*}} : memref<128x48xf32>, !amx.tile<16x16xf32>
// TILE-NOT: arith.extf

// LLVM-LABEL: IR Dump After cpu-llvm
// LLVM: %[[ZERO:[0-9]+]] = llvm.mlir.constant(dense<0.000000e+00> : vector<16xf32>) : vector<16xf32>
// LLVM: llvm.call_intrinsic "llvm.x86.tilezero.internal"
// LLVM: llvm.call_intrinsic "llvm.x86.tdpbf16ps.internal"
// The exponentials scale by 2**n and zero the lanes below the floor in one masked vscalefps (an AVX-512 host): the
// polynomial, n, then the zeros, the intrinsic's order of its operands.
// LLVM: llvm.call_intrinsic "llvm.x86.avx512.mask.scalef.ps.512"(%{{[0-9]+}}, %{{[0-9]+}}, %[[ZERO]], %{{[0-9]+}}, %{{[0-9]+}}) : (vector<16xf32>, vector<16xf32>, vector<16xf32>, i16, i32) -> vector<16xf32>
// LLVM: llvm.call_intrinsic "llvm.x86.tilestored64.internal"
// LLVM-NOT: amx.

// IR: call x86_amx @llvm.x86.tdpbf16ps.internal(i16 16, i16 64, i16 64,

// DOT-LABEL: IR Dump After cpu-tile
// DOT-NOT: amx.
// DOT: memref.alloc() {alignment = 64 : i64} : memref<2x2x20x128xf32>
// DOT-NOT: amx.
// POLY-LABEL: IR Dump After cpu-tile
// POLY-NOT: dense<1.53375775E-4>
// POLY: arith.constant dense<0.00958285294> : vector<16xf32>
// POLY-NOT: dense<1.53375775E-4>
func.func @attention(%q: tensor<2x37x20xbf16>, %k: tensor<2x129x20xbf16>, %v: tensor<2x129x48xbf16>) -> tensor<2x37x48xf32> {
  %zero = arith.constant 0.0 : f32
  %ninf = arith.constant 0xFF800000 : f32
  %scale = arith.constant 0.22360679774997896 : f32
  %se = tensor.empty() : tensor<2x37x129xf32>
  %sn = tensor.empty() : tensor<2x37x129xbf16>
  %s0 = linalg.fill ins(%zero : f32) outs(%se : tensor<2x37x129xf32>) -> tensor<2x37x129xf32>
  %s = linalg.generic {indexing_maps = [affine_map<(b0, i, j, c) -> (b0, i, c)>, affine_map<(b0, i, j, c) -> (b0, j, c)>, affine_map<(b0, i, j, c) -> (b0, i, j)>], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%q, %k : tensor<2x37x20xbf16>, tensor<2x129x20xbf16>) outs(%s0 : tensor<2x37x129xf32>) {
  ^bb0(%a: bf16, %b: bf16, %acc: f32):
    %w0 = arith.extf %a : bf16 to f32
    %w1 = arith.extf %b : bf16 to f32
    %x = arith.mulf %w0, %w1 : f32
    %y = arith.addf %acc, %x : f32
    linalg.yield %y : f32
  } -> tensor<2x37x129xf32>
  %re = tensor.empty() : tensor<2x37xf32>
  %m0 = linalg.fill ins(%ninf : f32) outs(%re : tensor<2x37xf32>) -> tensor<2x37xf32>
  %l0 = linalg.fill ins(%zero : f32) outs(%re : tensor<2x37xf32>) -> tensor<2x37xf32>
  %m = linalg.generic {indexing_maps = [affine_map<(b0, i, j) -> (b0, i, j)>, affine_map<(b0, i, j) -> (b0, i)>], iterator_types = ["parallel", "parallel", "reduction"]} ins(%s : tensor<2x37x129xf32>) outs(%m0 : tensor<2x37xf32>) {
  ^bb0(%a: f32, %acc: f32):
    %y = arith.maximumf %acc, %a : f32
    linalg.yield %y : f32
  } -> tensor<2x37xf32>
  %p = linalg.generic {indexing_maps = [affine_map<(b0, i, j) -> (b0, i, j)>, affine_map<(b0, i, j) -> (b0, i)>, affine_map<(b0, i, j) -> (b0, i, j)>], iterator_types = ["parallel", "parallel", "parallel"]} ins(%s, %m : tensor<2x37x129xf32>, tensor<2x37xf32>) outs(%se : tensor<2x37x129xf32>) {
  ^bb0(%a: f32, %b: f32, %out: f32):
    %x = arith.subf %a, %b : f32
    %y = arith.mulf %x, %scale : f32
    %z = math.exp %y : f32
    linalg.yield %z : f32
  } -> tensor<2x37x129xf32>
  %l = linalg.generic {indexing_maps = [affine_map<(b0, i, j) -> (b0, i, j)>, affine_map<(b0, i, j) -> (b0, i)>], iterator_types = ["parallel", "parallel", "reduction"]} ins(%p : tensor<2x37x129xf32>) outs(%l0 : tensor<2x37xf32>) {
  ^bb0(%a: f32, %acc: f32):
    %y = arith.addf %acc, %a : f32
    linalg.yield %y : f32
  } -> tensor<2x37xf32>
  %oe = tensor.empty() : tensor<2x37x48xf32>
  %o0 = linalg.fill ins(%zero : f32) outs(%oe : tensor<2x37x48xf32>) -> tensor<2x37x48xf32>
  %pr = linalg.generic {indexing_maps = [affine_map<(b0, i, j) -> (b0, i, j)>, affine_map<(b0, i, j) -> (b0, i, j)>], iterator_types = ["parallel", "parallel", "parallel"]} ins(%p : tensor<2x37x129xf32>) outs(%sn : tensor<2x37x129xbf16>) {
  ^bb0(%a: f32, %out: bf16):
    %r = arith.truncf %a : f32 to bf16
    linalg.yield %r : bf16
  } -> tensor<2x37x129xbf16>
  %o = linalg.generic {indexing_maps = [affine_map<(b0, i, e, j) -> (b0, i, j)>, affine_map<(b0, i, e, j) -> (b0, j, e)>, affine_map<(b0, i, e, j) -> (b0, i, e)>], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%pr, %v : tensor<2x37x129xbf16>, tensor<2x129x48xbf16>) outs(%o0 : tensor<2x37x48xf32>) {
  ^bb0(%a: bf16, %b: bf16, %acc: f32):
    %w0 = arith.extf %a : bf16 to f32
    %w1 = arith.extf %b : bf16 to f32
    %x = arith.mulf %w0, %w1 : f32
    %y = arith.addf %acc, %x : f32
    linalg.yield %y : f32
  } -> tensor<2x37x48xf32>
  %out = linalg.generic {indexing_maps = [affine_map<(b0, i, e) -> (b0, i, e)>, affine_map<(b0, i, e) -> (b0, i)>, affine_map<(b0, i, e) -> (b0, i, e)>], iterator_types = ["parallel", "parallel", "parallel"]} ins(%o, %l : tensor<2x37x48xf32>, tensor<2x37xf32>) outs(%oe : tensor<2x37x48xf32>) {
  ^bb0(%a: f32, %b: f32, %out: f32):
    %y = arith.divf %a, %b : f32
    linalg.yield %y : f32
  } -> tensor<2x37x48xf32>
  return %out : tensor<2x37x48xf32>
}
