// A product of bf16 operands into f32 runs on AVX512-BF16 dot products where the machine has them
// (python/prism/codegen/cpu/kernel_bf16.py): B packed into interleaved pairs of k, then micro-tiles of
// x86vector.avx512.dot, each row's pair of A broadcast as one 32-bit word; an odd K's last pair reads its
// missing half as zero. Down to LLVM, the dot is the vdpbf16ps intrinsic. Without AVX512-BF16 (the tests'
// AVX2 machine) the same product takes the transform path, on f32 after conversion.
// RUN: env PRISM_HOST_DESCRIPTION=%S/../Inputs/host-avx512-bf16.json prism-opt %s -p 'prism-lower-cpu{threads=2}' --print-ir-after=cpu-tile -o /dev/null 2>&1 | filecheck %s --check-prefix=TILE
// RUN: env PRISM_HOST_DESCRIPTION=%S/../Inputs/host-avx512-bf16.json prism-opt %s -p 'prism-lower-cpu{threads=2}' --print-ir-after=cpu-llvm -o /dev/null 2>&1 | filecheck %s --check-prefix=LLVM
// RUN: prism-opt %s -p 'prism-lower-cpu{threads=2}' --print-ir-after=cpu-tile -o /dev/null 2>&1 | filecheck %s --check-prefix=AVX2
// RUN: prism-opt %s --emit=report | filecheck %s --check-prefix=AVX2-REPORT
// RUN: env PRISM_HOST_DESCRIPTION=%S/../Inputs/host-avx512-bf16.json prism-opt %s --emit=report | filecheck %s --check-prefix=REPORT

// TILE-LABEL: IR Dump After cpu-tile
// TILE: func.func @mm(
// TILE-NOT: linalg.matmul
// 70 columns: 2 groups of 4 panels of 16 (zeros past 70); 131 k: 66 pairs (zero past the last k).
// TILE: memref.alloc() {alignment = 64 : i64} : memref<8x66x32xbf16>
// TILE: scf.parallel
// TILE: vector.maskedload {{.*}} : memref<131x70xbf16>, vector<16xi1>, vector<16xbf16>
// TILE: vector.interleave {{.*}} : vector<16xbf16> -> vector<32xbf16>
// TILE: vector.store {{.*}} : memref<8x66x32xbf16>, vector<32xbf16>
// TILE: scf.parallel
// TILE: vector.load {{.*}} : memref<8x66x32xbf16>, vector<32xbf16>
// TILE: vector.load {{.*}} : memref<100x131xbf16>, vector<2xbf16>
// TILE: vector.bitcast {{.*}} : vector<2xbf16> to vector<1xi32>
// TILE: vector.bitcast {{.*}} : vector<16xi32> to vector<32xbf16>
// TILE-COUNT-4: x86vector.avx512.dot {{.*}} : vector<32xbf16> -> vector<16xf32>
// The last pair (k = 130): its first half only.
// TILE: vector.constant_mask [1] : vector<2xi1>
// TILE: vector.maskedload {{.*}} : memref<100x131xbf16>, vector<2xi1>, vector<2xbf16>
// TILE: vector.maskedstore {{.*}} : memref<100x70xf32>, vector<16xi1>, vector<16xf32>

// LLVM-LABEL: IR Dump After cpu-llvm
// LLVM: llvm.call_intrinsic "llvm.x86.avx512bf16.dpbf16ps.512"
// LLVM-NOT: x86vector.

// AVX2-LABEL: IR Dump After cpu-tile
// AVX2-NOT: x86vector
// AVX2-REPORT: "kind": "gemm (transform path)"

// A few rows (one block of rows covers M): B is read in place, two rows interleaved in registers; no panels.
// TILE-LABEL: func.func @few(
// TILE-NOT: memref<{{.*}}x32xbf16>
// TILE: vector.maskedload {{.*}} : memref<131x70xbf16>, vector<16xi1>, vector<16xbf16>
// TILE: vector.maskedload {{.*}} : memref<131x70xbf16>, vector<16xi1>, vector<16xbf16>
// TILE: vector.interleave {{.*}} : vector<16xbf16> -> vector<32xbf16>
// TILE: x86vector.avx512.dot
// TILE-NOT: memref<{{.*}}x32xbf16>

// REPORT: "kind": "gemm (bf16 dot products)"
// REPORT: "kind": "gemm (bf16 dot products)"
func.func @mm(%a: tensor<100x131xbf16>, %b: tensor<131x70xbf16>) -> tensor<100x70xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<100x70xf32>
  %init = linalg.fill ins(%zero : f32) outs(%e : tensor<100x70xf32>) -> tensor<100x70xf32>
  %r = linalg.matmul ins(%a, %b : tensor<100x131xbf16>, tensor<131x70xbf16>) outs(%init : tensor<100x70xf32>) -> tensor<100x70xf32>
  return %r : tensor<100x70xf32>
}

func.func @few(%a: tensor<5x131xbf16>, %b: tensor<131x70xbf16>) -> tensor<5x70xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<5x70xf32>
  %init = linalg.fill ins(%zero : f32) outs(%e : tensor<5x70xf32>) -> tensor<5x70xf32>
  %r = linalg.matmul ins(%a, %b : tensor<5x131xbf16>, tensor<131x70xbf16>) outs(%init : tensor<5x70xf32>) -> tensor<5x70xf32>
  return %r : tensor<5x70xf32>
}
