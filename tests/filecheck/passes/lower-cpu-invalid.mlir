// RUN: not prism-opt %s --split-input-file -p prism-lower-cpu 2>&1 | filecheck %s
// RUN: not prism-opt %s -p 'prism-lower-cpu{threads=-1}' 2>&1 | filecheck %s --check-prefix=THREADS
// RUN: not prism-opt %s -p 'prism-lower-cpu{copy_in_phase_bytes=-2}' 2>&1 | filecheck %s --check-prefix=IN-PHASE

// A choice whose values are not integers is rejected at the op.
// CHECK: lower-cpu-invalid.mlir:[[# @LINE + 2]]:8: error:
func.func @gemm(%a: tensor<8x8xf32>, %b: tensor<8x8xf32>, %c: tensor<8x8xf32>) -> tensor<8x8xf32> {
  %0 = linalg.matmul {prism.roles = ["m", "n", "k"], prism.choice = {TM = "big"}}
         ins(%a, %b : tensor<8x8xf32>, tensor<8x8xf32>) outs(%c : tensor<8x8xf32>) -> tensor<8x8xf32>
  return %0 : tensor<8x8xf32>
}

// THREADS: error: prism-lower-cpu: option 'threads' must be in [0, 1024], got -1
// IN-PHASE: error: prism-lower-cpu: option 'copy_in_phase_bytes' must be in [-1, {{[0-9]+}}], got -2

// -----

// A buffer expansion with two dynamic sizes in one group, which the lowering to LLVM would abort on, is
// refused at the op.
// CHECK: lower-cpu-invalid.mlir:[[# @LINE + 3]]:8: error: prism-lower-cpu: 'memref.expand_shape' gives dimensions [0, 1] of memref<?x?x8xf32> more than one dynamic size
func.func @expand(%m: memref<?x8xf32>, %a: index, %b: index) -> f32 {
  %c0 = arith.constant 0 : index
  %r = memref.expand_shape %m [[0, 1], [2]] output_shape [%a, %b, 8] : memref<?x8xf32> into memref<?x?x8xf32>
  %v = memref.load %r[%c0, %c0, %c0] : memref<?x?x8xf32>
  return %v : f32
}

// -----

// An op left after the conversions to LLVM is named at the program's op it came from.
// CHECK: lower-cpu-invalid.mlir:[[# @LINE + 5]]:10: error: prism-lower-cpu: 'arith.extf' has no lowering to LLVM on the host
func.func @f8(%x: tensor<16xf8E4M3FN>) -> tensor<16xf32> {
  %e = tensor.empty() : tensor<16xf32>
  %r = linalg.generic {indexing_maps = [affine_map<(i) -> (i)>, affine_map<(i) -> (i)>], iterator_types = ["parallel"]} ins(%x : tensor<16xf8E4M3FN>) outs(%e : tensor<16xf32>) {
  ^bb0(%a: f8E4M3FN, %o: f32):
    %y = arith.extf %a : f8E4M3FN to f32
    linalg.yield %y : f32
  } -> tensor<16xf32>
  return %r : tensor<16xf32>
}
