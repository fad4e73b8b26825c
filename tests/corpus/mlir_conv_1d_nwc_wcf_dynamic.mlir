// Source: llvm/llvm-project mlir/test/Dialect/Linalg/named-ops.mlir, @conv_1d_nwc_wcf (on tensors), commit 03464b2ca766d6d8d3ee5768553e1add0d3e3230.
// Licence: Apache-2.0 WITH LLVM-exception.
// Taken as it is (the CHECK lines dropped).
func.func @conv_1d_nwc_wcf(%input: tensor<?x?x?xf32>, %filter: tensor<?x?x?xf32>, %init: tensor<?x?x?xf32>) -> tensor<?x?x?xf32> {
  %0 = linalg.conv_1d_nwc_wcf {dilations = dense<1> : tensor<1xi64>,
                                            strides = dense<1> : tensor<1xi64>}
     ins (%input, %filter: tensor<?x?x?xf32>, tensor<?x?x?xf32>)
    outs (%init: tensor<?x?x?xf32>) -> tensor<?x?x?xf32>
  return %0 : tensor<?x?x?xf32>
}
