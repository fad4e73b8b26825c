// Source: iree-org/iree tests/e2e/tensor_ops/extract_slice.mlir, @extract_slice_i32_offset1_size2_stride2, commit b48a5955575cf8924ffc191f3b0804976e5738b9.
// Licence: Apache-2.0 WITH LLVM-exception.
// Adapted: the constant input behind util.optimization_barrier is an argument; the check op is dropped and
// the result returned.
func.func public @extract_slice_i32_offset1_size2_stride2(%2: tensor<4xi32>) -> tensor<2xi32> {
  %extracted_slice = tensor.extract_slice %2[1] [2] [2] : tensor<4xi32> to tensor<2xi32>
  return %extracted_slice : tensor<2xi32>
}
