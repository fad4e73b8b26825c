// RUN: prism-opt %s -p 'prism-explore{target=host}' 2>%t.remarks | filecheck %s
// RUN: filecheck %s --check-prefix=REMARK < %t.remarks

// A named op that normalization does not rewrite (a convolution: neither a
// contraction the algebra reads nor an op with a generic twin it translates)
// passes through unchanged, and prism-explore says once that it is outside
// the algebra; the named ops around it are still normalized.
// REMARK: normalize-invalid.mlir:[[# @LINE + 12]]:8: remark: prism-explore: @conv kept as written: 'linalg.conv_2d_nhwc_hwcf' is outside the algebra
// REMARK-NOT: remark
// CHECK-LABEL: func.func @conv
// CHECK:         linalg.conv_2d_nhwc_hwcf ins(%arg0, %arg1 : tensor<1x8x8x4xf32>, tensor<3x3x4x8xf32>)
// CHECK-NOT:     linalg.exp
// CHECK:         linalg.generic
// CHECK:           math.exp
// CHECK:         return
func.func @conv(%x: tensor<1x8x8x4xf32>, %w: tensor<3x3x4x8xf32>) -> tensor<1x6x6x8xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<1x6x6x8xf32>
  %z = linalg.fill ins(%zero : f32) outs(%e : tensor<1x6x6x8xf32>) -> tensor<1x6x6x8xf32>
  %c = linalg.conv_2d_nhwc_hwcf ins(%x, %w : tensor<1x8x8x4xf32>, tensor<3x3x4x8xf32>) outs(%z : tensor<1x6x6x8xf32>) -> tensor<1x6x6x8xf32>
  %r = linalg.exp ins(%c : tensor<1x6x6x8xf32>) outs(%e : tensor<1x6x6x8xf32>) -> tensor<1x6x6x8xf32>
  return %r : tensor<1x6x6x8xf32>
}
