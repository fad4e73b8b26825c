// RUN: prism-opt %s --split-input-file --target=h200 -p prism-lift,prism-prune | filecheck %s --check-prefix=GPU
// RUN: prism-opt %s --split-input-file --target=host -p prism-lift,prism-prune | filecheck %s --check-prefix=HOST
// RUN: prism-opt %S/Inputs/dynamic-m.mlir --target=host -p prism-lift,prism-prune | filecheck %s --check-prefix=DYN

// The funnel shrinks stage by stage; the domain keeps shapes symbolic.
// GPU-LABEL: func.func private @gemm_family0
// GPU:         "prism.family"()
// GPU-SAME:      domain = "[LB, LM, LN, LK, DM, DN, DK] -> { [bm, bn, bk, wm, wn, mma] :
// GPU-SAME:      stats = {divisibility = 882 : i64, registers = 2000 : i64, shape = 882 : i64, shared_memory = 1988 : i64, space = 3200 : i64, tensor_core = 1544 : i64, threads = 2440 : i64}
// GPU-SAME:      symbols = ["BM", "BN", "BK", "WM", "WN", "MMA"]
// HOST-LABEL: func.func private @gemm_family0
// HOST:         "prism.family"()
// HOST-SAME:      domain = "[LB, LM, LN, LK, DM, DN, DK] -> { [tm, tn, tk{{( = [0-9]+)?}}, rm{{( = [0-9]+)?}}, rn{{( = [0-9]+)?}}, m3{{( = [0-9]+)?}}, t3
// HOST-SAME:      stats = {l1 = {{[0-9]+}} : i64, l2 = {{[0-9]+}} : i64, registers = {{[0-9]+}} : i64, shape = {{[0-9]+}} : i64, space = {{[0-9]+}} : i64}
func.func @gemm(%a: tensor<256x128xf16>, %b: tensor<128x64xf16>, %c: tensor<256x64xf32>) -> tensor<256x64xf32> {
  %0 = linalg.matmul ins(%a, %b : tensor<256x128xf16>, tensor<128x64xf16>) outs(%c : tensor<256x64xf32>) -> tensor<256x64xf32>
  return %0 : tensor<256x64xf32>
}

// A dynamic M stays a parameter on the host: one domain serves every M.
// DYN-LABEL: func.func private @dynamic_family0
// DYN:         domain = "[LB, LM, LN, LK, DM, DN, DK] -> {
// DYN-SAME:      LM
