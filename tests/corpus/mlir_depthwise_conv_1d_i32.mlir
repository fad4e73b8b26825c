// Source: llvm/llvm-project mlir/test/Integration/Dialect/Linalg/CPU/ArmSVE/1d-depthwise-conv.mlir, @conv,
// commit 4660dda0a7de1ba3fa6d88d72e7412400695d225.
// Licence: Apache-2.0 WITH LLVM-exception.
// Adapted: the dynamically sized operands (filled and cast there) are arguments; the printing and the transform
// script are dropped and the result returned.
func.func @conv(%input_dyn: tensor<1x8x?xi32>, %filter_dyn: tensor<2x?xi32>, %output_dyn: tensor<1x7x?xi32>) -> tensor<1x7x?xi32> {
  %res = linalg.depthwise_conv_1d_nwc_wc
    ins(%input_dyn, %filter_dyn : tensor<1x8x?xi32>, tensor<2x?xi32>)
    outs(%output_dyn : tensor<1x7x?xi32>) -> tensor<1x7x?xi32>
  return %res : tensor<1x7x?xi32>
}
