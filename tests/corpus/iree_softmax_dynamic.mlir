// Source: iree-org/iree tests/e2e/linalg/softmax.mlir, @softmax_dynamic_10x256x256xf32, commit b48a5955575cf8924ffc191f3b0804976e5738b9.
// Licence: Apache-2.0 WITH LLVM-exception.
// Adapted: the dynamic constant (flow.tensor.dynamic_constant) is an argument; the barrier, the cast to a
// static shape and the check op are dropped, and the result is returned.
func.func @softmax_dynamic_10x256x256xf32(%input: tensor<?x?x?xf32>) -> tensor<?x?x?xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c2 = arith.constant 2 : index
  %d0 = tensor.dim %input, %c0 : tensor<?x?x?xf32>
  %d1 = tensor.dim %input, %c1 : tensor<?x?x?xf32>
  %d2 = tensor.dim %input, %c2 : tensor<?x?x?xf32>
  %init = tensor.empty(%d0, %d1, %d2) : tensor<?x?x?xf32>
  %0 = linalg.softmax dimension(2) ins(%input : tensor<?x?x?xf32>) outs(%init : tensor<?x?x?xf32>) -> tensor<?x?x?xf32>
  return %0 : tensor<?x?x?xf32>
}
