// The AMX kernel's tiles and tasks from prism.choice are checked before any code is written: a block of C tiles
// that does not fit the eight tile registers, or a task of no rows, stops cpu-tile with the op's location, and no
// stage's IR is printed.
// RUN: not env PRISM_HOST_CONFIG= PRISM_HOST_DESCRIPTION=%S/../Inputs/host-amx-tiles.json prism-opt %s -p 'prism-lower-cpu{threads=2}' --print-ir-after=cpu-tile 2>&1 | filecheck %s
// RUN: sed 's/AM = 3/AM = 2, TM = 0/' %s | not env PRISM_HOST_CONFIG= PRISM_HOST_DESCRIPTION=%S/../Inputs/host-amx-tiles.json prism-opt - -p 'prism-lower-cpu{threads=2}' 2>&1 | filecheck %s --check-prefix=TASK

// CHECK-NOT: IR Dump
// CHECK: cpu-stages-amx-invalid.mlir:[[# @LINE + 7]]:8: error: prism-lower-cpu: AMX tiles of 16 rows x 64 bytes in blocks of 3 x 2 C tiles do not fit the 8 tile registers
// CHECK-NOT: IR Dump
// TASK: <stdin>:15:8: error: prism-lower-cpu: prism.choice.TM must be a positive integer
func.func @mm(%a: tensor<64x200xbf16>, %b: tensor<200x96xbf16>) -> tensor<64x96xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<64x96xf32>
  %init = linalg.fill ins(%zero : f32) outs(%e : tensor<64x96xf32>) -> tensor<64x96xf32>
  %r = linalg.matmul {prism.choice = {AR = 16, AB = 64, AM = 3, AN = 2}}
         ins(%a, %b : tensor<64x200xbf16>, tensor<200x96xbf16>) outs(%init : tensor<64x96xf32>) -> tensor<64x96xf32>
  return %r : tensor<64x96xf32>
}
