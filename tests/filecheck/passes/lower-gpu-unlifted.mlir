// RUN: not prism-opt %s --split-input-file --target=h200 --emit=ptx -o /dev/null 2>&1 | filecheck %s

// A contraction the GPU has no kernel for says why, as the host's remark does: here its element types.
// CHECK: lower-gpu-unlifted.mlir:[[# @LINE + 5]]:8: error: prism-lower-gpu: cannot map 'linalg.matmul' to the GPU, which runs only the products Prism tunes: its element types (i32, i8) are not ones Prism tunes (f64, f32, f16, bf16)
func.func @i8(%a: tensor<64x64xi8>, %b: tensor<64x64xi8>) -> tensor<64x64xi32> {
  %z = arith.constant 0 : i32
  %e = tensor.empty() : tensor<64x64xi32>
  %c = linalg.fill ins(%z : i32) outs(%e : tensor<64x64xi32>) -> tensor<64x64xi32>
  %r = linalg.matmul ins(%a, %b : tensor<64x64xi8>, tensor<64x64xi8>) outs(%c : tensor<64x64xi32>)
      -> tensor<64x64xi32>
  return %r : tensor<64x64xi32>
}

// -----

// Named contractions Prism does not lift are called contractions, with what to write instead.
// CHECK: lower-gpu-unlifted.mlir:[[# @LINE + 3]]:8: remark: prism-lift: 'linalg.matvec' left unchanged: a matrix-vector product, a contraction Prism does not lift (it has no M or no N loop); to have it tuned, write it as linalg.matmul (linalg.batch_matmul) with a unit dimension
// CHECK: lower-gpu-unlifted.mlir:[[# @LINE + 2]]:8: error: prism-lower-gpu: cannot map 'linalg.matvec' to the GPU, which runs only the products Prism tunes: a matrix-vector product, a contraction
func.func @matvec(%a: tensor<64x32xf32>, %x: tensor<32xf32>, %y: tensor<64xf32>) -> tensor<64xf32> {
  %r = linalg.matvec ins(%a, %x : tensor<64x32xf32>, tensor<32xf32>) outs(%y : tensor<64xf32>) -> tensor<64xf32>
  return %r : tensor<64xf32>
}

// -----

// CHECK: lower-gpu-unlifted.mlir:[[# @LINE + 3]]:8: remark: prism-lift: 'linalg.mmt4d' left unchanged: a product of packed operands, a contraction Prism does not lift; to have it tuned, write the product unpacked, as linalg.matmul
// CHECK: lower-gpu-unlifted.mlir:[[# @LINE + 2]]:8: error: prism-lower-gpu: cannot map 'linalg.mmt4d' to the GPU, which runs only the products Prism tunes: a product of packed operands
func.func @mmt4d(%a: tensor<4x8x8x1xf32>, %b: tensor<4x8x8x1xf32>, %c: tensor<4x4x8x8xf32>) -> tensor<4x4x8x8xf32> {
  %r = linalg.mmt4d ins(%a, %b : tensor<4x8x8x1xf32>, tensor<4x8x8x1xf32>) outs(%c : tensor<4x4x8x8xf32>)
      -> tensor<4x4x8x8xf32>
  return %r : tensor<4x4x8x8xf32>
}

// -----

// CHECK: lower-gpu-unlifted.mlir:[[# @LINE + 4]]:8: remark: prism-lift: 'linalg.quantized_matmul' left unchanged: a quantized product (with zero points), a contraction Prism does not lift; to have it tuned, subtract the zero points in a linalg.generic that widens the operands to a float type, then write linalg.matmul
// CHECK: lower-gpu-unlifted.mlir:[[# @LINE + 3]]:8: error: prism-lower-gpu: cannot map 'linalg.quantized_matmul' to the GPU, which runs only the products Prism tunes: a quantized product
func.func @quantized(%a: tensor<16x32xi8>, %b: tensor<32x8xi8>, %az: i32, %bz: i32,
                     %c: tensor<16x8xi32>) -> tensor<16x8xi32> {
  %r = linalg.quantized_matmul ins(%a, %b, %az, %bz : tensor<16x32xi8>, tensor<32x8xi8>, i32, i32)
      outs(%c : tensor<16x8xi32>) -> tensor<16x8xi32>
  return %r : tensor<16x8xi32>
}
