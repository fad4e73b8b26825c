// A tile that no GPU kernel can take (BM = 48 is not a power of two) is replaced by the kernel's default tile;
// the lowering says so at the op, naming the knob, instead of dropping the choice silently.
// RUN: prism-opt %s --target=h200 -p prism-lower-gpu --emit=manifest 2>&1 | filecheck %s

// CHECK: lower-gpu-tile-fallback.mlir:[[# @LINE + 6]]:8: remark: prism-lower-gpu: {{.*}}BM=48
// CHECK: "name": "odd_tile_k0_gemm",
// CHECK-NEXT: "grid": [
// CHECK-NEXT:   "cdiv(32, 128)",
// CHECK-NEXT:   "cdiv(100, 128)",
func.func @odd_tile(%a: tensor<100x64xf32>, %b: tensor<64x32xf32>, %c: tensor<100x32xf32>) -> tensor<100x32xf32> {
  %0 = linalg.matmul {prism.roles = ["m", "n", "k"], prism.choice = {BM = 48, BN = 32, BK = 16, WM = 16, WN = 32, MMA = 0}}
         ins(%a, %b : tensor<100x64xf32>, tensor<64x32xf32>) outs(%c : tensor<100x32xf32>) -> tensor<100x32xf32>
  return %0 : tensor<100x32xf32>
}
