// Source: iree-org/iree tests/e2e/linalg/conv2d.mlir, @conv2d_nopadding, commit b48a5955575cf8924ffc191f3b0804976e5738b9.
// Licence: Apache-2.0 WITH LLVM-exception.
// Adapted: the constant inputs are arguments; the check op is dropped and the result returned.
func.func @conv2d_nopadding(%inputs: tensor<1x2x4x4xf32>, %weights: tensor<1x2x3x2xf32>) -> tensor<1x1x2x3xf32> {
  %cst = arith.constant 0.000000e+00 : f32
  %fill = tensor.empty() : tensor<1x1x2x3xf32>
  %out = linalg.fill ins(%cst : f32) outs(%fill : tensor<1x1x2x3xf32>) -> tensor<1x1x2x3xf32>
  %result = linalg.conv_2d_nchw_fchw {dilations = dense<1> : vector<2xi64>, strides = dense<1> : vector<2xi64>} ins(%inputs, %weights : tensor<1x2x4x4xf32>, tensor<1x2x3x2xf32>) outs(%out : tensor<1x1x2x3xf32>) -> tensor<1x1x2x3xf32>
  return %result : tensor<1x1x2x3xf32>
}
