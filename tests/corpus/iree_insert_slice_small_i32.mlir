// Source: iree-org/iree tests/e2e/tensor_ops/tensor_insert_slice.mlir, @tensor_insert_slice_small, commit b48a5955575cf8924ffc191f3b0804976e5738b9.
// Licence: Apache-2.0 WITH LLVM-exception.
// Adapted: the constant inputs are arguments; the check op is dropped and the result returned.
func.func @tensor_insert_slice_small(%input1: tensor<10x10xi32>, %input2: tensor<5x5xi32>) -> tensor<10x10xi32> {
  %result = tensor.insert_slice %input2 into %input1[4, 3] [5, 5] [1, 1] :
      tensor<5x5xi32> into tensor<10x10xi32>
  return %result : tensor<10x10xi32>
}
