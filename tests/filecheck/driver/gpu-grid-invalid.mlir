// A launch needs more blocks than a CUDA grid has along the axis they are on (65535 along y and z): the GPU
// refuses it at the op rather than write a launch that cannot run; a host lowers it.
// RUN: not prism-opt %s --split-input-file --target=h200 --emit=ptx 2>&1 | filecheck %s --check-prefix=GPU
// RUN: prism-opt %s --split-input-file --target=host --emit=llvm 2>&1 >/dev/null | filecheck %s --check-prefix=HOST --allow-empty

// HOST-NOT: error

// A matmul of 10^9 rows: its row blocks are along grid axis y.
// GPU: gpu-grid-invalid.mlir:[[# @LINE + 5]]:8: error: prism-lower-gpu: {{.*}}65535
func.func @tall(%a: tensor<1000000000x64xf32>, %b: tensor<64x64xf32>) -> tensor<1000000000x64xf32> {
  %z = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<1000000000x64xf32>
  %c = linalg.fill ins(%z : f32) outs(%e : tensor<1000000000x64xf32>) -> tensor<1000000000x64xf32>
  %r = linalg.matmul ins(%a, %b : tensor<1000000000x64xf32>, tensor<64x64xf32>) outs(%c : tensor<1000000000x64xf32>) -> tensor<1000000000x64xf32>
  return %r : tensor<1000000000x64xf32>
}

// -----

// A batch of 70000 f32 products: the batch is along grid axis z.
// GPU: gpu-grid-invalid.mlir:[[# @LINE + 5]]:8: error: prism-lower-gpu: {{.*}}65535
func.func @batch(%a: tensor<70000x16x16xf32>, %b: tensor<70000x16x16xf32>) -> tensor<70000x16x16xf32> {
  %z = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<70000x16x16xf32>
  %c = linalg.fill ins(%z : f32) outs(%e : tensor<70000x16x16xf32>) -> tensor<70000x16x16xf32>
  %r = linalg.batch_matmul ins(%a, %b : tensor<70000x16x16xf32>, tensor<70000x16x16xf32>) outs(%c : tensor<70000x16x16xf32>) -> tensor<70000x16x16xf32>
  return %r : tensor<70000x16x16xf32>
}

// -----

// The same batch of f16 products takes the persistent wgmma kernel, whose grid is the blocks the chip holds.
// GPU-NOT: error: {{.*}}half_batch
func.func @half_batch(%a: tensor<70000x16x16xf16>, %b: tensor<70000x16x16xf16>) -> tensor<70000x16x16xf32> {
  %z = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<70000x16x16xf32>
  %c = linalg.fill ins(%z : f32) outs(%e : tensor<70000x16x16xf32>) -> tensor<70000x16x16xf32>
  %r = linalg.batch_matmul ins(%a, %b : tensor<70000x16x16xf16>, tensor<70000x16x16xf16>) outs(%c : tensor<70000x16x16xf32>) -> tensor<70000x16x16xf32>
  return %r : tensor<70000x16x16xf32>
}
