// Source: llvm/llvm-project mlir/test/Integration/Dialect/Linalg/CPU/test-conv-2d-nchw-fchw-q-img2col.mlir, @conv,
// commit c1b83f83170a1b7abdb4373eccb0af9d0e92f0d5.
// Licence: Apache-2.0 WITH LLVM-exception.
// Taken as it is.
func.func @conv(%input: tensor<2x2x3x3xi8>,
                %filter: tensor<3x2x2x2xi8>,
                %init: tensor<2x3x2x2xi32>,
                %input_zp: i32, %filter_zp: i32) -> tensor<2x3x2x2xi32> {
  %result = linalg.conv_2d_nchw_fchw_q
      {strides = dense<1> : tensor<2xi64>, dilations = dense<1> : tensor<2xi64>}
      ins(%input, %filter, %input_zp, %filter_zp :
          tensor<2x2x3x3xi8>, tensor<3x2x2x2xi8>, i32, i32)
      outs(%init : tensor<2x3x2x2xi32>) -> tensor<2x3x2x2xi32>
  return %result : tensor<2x3x2x2xi32>
}
