// Source: llvm/llvm-project mlir/test/Integration/Dialect/Linalg/CPU/test-conv-1d-nwc-wcf-call.mlir, @conv_1d_nwc_wcf, commit 058ca9294e9ea00646f6e7bf445fc38b5b901c2d.
// Licence: Apache-2.0 WITH LLVM-exception.
// Adapted: on tensors instead of memrefs (the output is returned), at the sizes @main calls it with.
func.func @conv_1d_nwc_wcf(%arg0: tensor<3x8x1xf32>, %arg1: tensor<3x1x1xf32>, %arg2: tensor<3x6x1xf32>) -> tensor<3x6x1xf32> {
  %0 = linalg.conv_1d_nwc_wcf {dilations = dense<1> : tensor<1xi64>,
                              strides = dense<1> : tensor<1xi64>}
     ins (%arg0, %arg1: tensor<3x8x1xf32>, tensor<3x1x1xf32>)
    outs (%arg2: tensor<3x6x1xf32>) -> tensor<3x6x1xf32>
  return %0 : tensor<3x6x1xf32>
}
