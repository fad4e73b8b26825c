// PRISM_HOST_DESCRIPTION names the machine to compile for (python/prism/targets/host.py, Machine): its
// vector width, cores and caches replace this machine's. The tests pin the AVX2 one (lit.cfg.py); here the
// same decode lowers for AVX-512, in vectors of 16 lanes, and the host's space offers RN from 16 (2**4) rather than 8.
// RUN: env PRISM_HOST_DESCRIPTION=%S/../Inputs/host-avx512.json prism-opt %s -p prism-lower-cpu --print-ir-after=cpu-tile -o /dev/null 2>&1 | filecheck %s --check-prefix=WIDE
// RUN: prism-opt %s -p prism-lower-cpu --print-ir-after=cpu-tile -o /dev/null 2>&1 | filecheck %s --check-prefix=NARROW
// RUN: env PRISM_HOST_DESCRIPTION=%S/../Inputs/host-avx512.json prism-opt %s -p 'prism-lift{target=host}' | filecheck %s --check-prefix=SPACE
// RUN: prism-opt %s -p 'prism-lift{target=host}' | filecheck %s --check-prefix=SPACE8
// RUN: prism-opt --help | filecheck %s --check-prefix=HELP

// The two workers (the description's cores) split K; 16-lane vectors, none of 8.
// WIDE: memref.alloc() {alignment = 64 : i64} : memref<2x1x100xf32>
// WIDE: vector.fma {{.*}} : vector<16xf32>
// WIDE-NOT: vector<8xf32>
// NARROW: memref.alloc() {alignment = 64 : i64} : memref<2x1x100xf32>
// NARROW: vector.fma {{.*}} : vector<8xf32>
// NARROW-NOT: vector<16xf32>
// SPACE: "prism.family"()
// SPACE-SAME: 4 <= rn <= 6
// SPACE8: "prism.family"()
// SPACE8-SAME: 3 <= rn <= 5
// HELP: Environment (the host target):
// HELP-NEXT: PRISM_HOST_DESCRIPTION  a JSON file describing the machine to compile for instead of this one
func.func @decode(%x: tensor<1x60xf32>, %w: tensor<60x100xf32>) -> tensor<1x100xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<1x100xf32>
  %init = linalg.fill ins(%zero : f32) outs(%e : tensor<1x100xf32>) -> tensor<1x100xf32>
  %r = linalg.matmul {prism.roles = ["m", "n", "k"], prism.choice = {TM = 1, TN = 64, TK = 20, RM = 1, RN = 16}}
         ins(%x, %w : tensor<1x60xf32>, tensor<60x100xf32>) outs(%init : tensor<1x100xf32>) -> tensor<1x100xf32>
  return %r : tensor<1x100xf32>
}
