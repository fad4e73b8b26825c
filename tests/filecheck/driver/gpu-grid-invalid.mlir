// A matmul of 10^9 rows needs more blocks than a CUDA grid has along the axis its row blocks are on (65535
// along y and z): the GPU refuses it at the op rather than write a launch that cannot run; a host lowers it.
// RUN: not prism-opt %s --target=h200 --emit=ptx 2>&1 | filecheck %s --check-prefix=GPU
// RUN: prism-opt %s --target=host --emit=llvm 2>&1 >/dev/null | filecheck %s --check-prefix=HOST

// GPU: gpu-grid-invalid.mlir:[[# @LINE + 7]]:8: error: prism-lower-gpu: {{.*}}65535
// HOST-NOT: error
func.func @tall(%a: tensor<1000000000x64xf32>, %b: tensor<64x64xf32>) -> tensor<1000000000x64xf32> {
  %z = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<1000000000x64xf32>
  %c = linalg.fill ins(%z : f32) outs(%e : tensor<1000000000x64xf32>) -> tensor<1000000000x64xf32>
  %r = linalg.matmul ins(%a, %b : tensor<1000000000x64xf32>, tensor<64x64xf32>) outs(%c : tensor<1000000000x64xf32>) -> tensor<1000000000x64xf32>
  return %r : tensor<1000000000x64xf32>
}
