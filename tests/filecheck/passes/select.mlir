// RUN: prism-opt %s --target=h200 -p prism-lift,prism-prune,prism-select | filecheck %s --check-prefix=GPU
// RUN: prism-opt %s --target=a100 -p prism-lift,prism-prune,prism-select | filecheck %s --check-prefix=A100
// RUN: prism-opt %s --target=host -p prism-lift,prism-prune,prism-select | filecheck %s --check-prefix=HOST

// One point of the domain is chosen and the cost formula recorded. The f16 GEMM on a GPU picks tensor cores and a
// pipeline depth: on the H200 wgmma, whose warpgroup tile is 64 rows (WM = 64); on the A100 mma.sync.
// GPU-LABEL: func.func private @gemm_family0
// GPU:         "prism.family"() {choice = {BK = {{[0-9]+}} : i64, BM = {{[0-9]+}} : i64, BN = {{[0-9]+}} : i64, GROUP_M = {{[1248]}} : i64, MMA = 1 : i64, PERSISTENT = {{[01]}} : i64, SPLITK = {{[0-9]+}} : i64, STAGES = {{[2-5]}} : i64, WM = 64 : i64, WN = {{[0-9]+}} : i64}, cost = "max(ceil(blocks/SMs)
// A100-LABEL: func.func private @gemm_family0
// A100:         "prism.family"() {choice = {BK = {{[0-9]+}} : i64, BM = {{[0-9]+}} : i64, BN = {{[0-9]+}} : i64, GROUP_M = {{[1248]}} : i64, MMA = 1 : i64, PERSISTENT = {{[01]}} : i64, SPLITK = {{[0-9]+}} : i64, STAGES = {{[2-5]}} : i64, WM = {{[0-9]+}} : i64, WN = {{[0-9]+}} : i64}, cost = "max(ceil(blocks/SMs)
// HOST-LABEL: func.func private @gemm_family0
// HOST:         "prism.family"() {choice = {RM = {{[0-9]+}} : i64, RN = {{[0-9]+}} : i64, TK = {{[0-9]+}} : i64, TM = {{[0-9]+}} : i64, TN = {{[0-9]+}} : i64}, cost = "[transform path only: 2*(bytesA + bytesB + bytesC) / bandwidth] + max(rounds
func.func @gemm(%a: tensor<512x256xf16>, %b: tensor<256x512xf16>, %c: tensor<512x512xf32>) -> tensor<512x512xf32> {
  %0 = linalg.matmul ins(%a, %b : tensor<512x256xf16>, tensor<256x512xf16>) outs(%c : tensor<512x512xf32>) -> tensor<512x512xf32>
  return %0 : tensor<512x512xf32>
}
