// RUN: prism-opt %s --split-input-file --target=h200 -p prism-lift,prism-prune | filecheck %s --check-prefix=GPU
// RUN: prism-opt %s --split-input-file --target=a100 -p prism-lift,prism-prune | filecheck %s --check-prefix=A100
// RUN: prism-opt %s --split-input-file --target=host -p prism-lift,prism-prune | filecheck %s --check-prefix=HOST
// RUN: prism-opt %S/Inputs/dynamic-m.mlir --target=host -p prism-lift,prism-prune | filecheck %s --check-prefix=DYN
// RUN: prism-opt %S/Inputs/dynamic-m.mlir --target=h200 -p prism-lift,prism-prune | filecheck %s --check-prefix=DYN-GPU

// The funnel shrinks stage by stage; the domain keeps shapes symbolic. An f16 GEMM on the H200 (sm_90a) is a
// wgmma kernel: warpgroups of WM = 64 (wm = 6) on tensor cores (mma = 1), one or two consumers a block, STAGES
// deep.
// GPU-LABEL: func.func private @gemm_family0
// GPU:         "prism.family"()
// GPU-SAME:      domain = "[LB, LM, LN, LK, DM, DN, DK] -> { [bm, bn, bk, wm = 6, wn, sk, gm, mma = 1, stages, persistent] :
// GPU-SAME:      stats = {registers = 2240 : i64, shape = 184 : i64, shared_memory = 1760 : i64, space = 5760 : i64, split_k = 568 : i64, warpgroups = 2560 : i64}
// GPU-SAME:      symbols = ["BM", "BN", "BK", "WM", "WN", "SPLITK", "GROUP_M", "MMA", "STAGES", "PERSISTENT"]
// On the A100 (sm_80), the mma.sync kernel: warps of any WM x WN, bounded by the threads of a block.
// A100-LABEL: func.func private @gemm_family0
// A100:         "prism.family"()
// A100-SAME:      domain = "[LB, LM, LN, LK, DM, DN, DK] -> { [bm, bn, bk, wm, wn, sk, gm, mma = 1, stages, persistent = 0] :
// A100-SAME:      stats = {registers = 31920 : i64, shape = 9944 : i64, shared_memory = 30840 : i64, space = 54000 : i64, split_k = 15840 : i64, threads = 45600 : i64}
// A100-SAME:      symbols = ["BM", "BN", "BK", "WM", "WN", "SPLITK", "GROUP_M", "MMA", "STAGES", "PERSISTENT"]
// HOST-LABEL: func.func private @gemm_family0
// HOST:         "prism.family"()
// HOST-SAME:      domain = "[LB, LM, LN, LK, DM, DN, DK] -> { [tm, tn, tk{{( = [0-9]+)?}}, rm{{( = [0-9]+)?}}, rn{{( = [0-9]+)?}}, m3{{( = [0-9]+)?}}, t3
// HOST-SAME:      stats = {l1 = {{[0-9]+}} : i64, l2 = {{[0-9]+}} : i64, registers = {{[0-9]+}} : i64, shape = {{[0-9]+}} : i64, space = {{[0-9]+}} : i64}
func.func @gemm(%a: tensor<256x128xf16>, %b: tensor<128x64xf16>, %c: tensor<256x64xf32>) -> tensor<256x64xf32> {
  %0 = linalg.matmul ins(%a, %b : tensor<256x128xf16>, tensor<128x64xf16>) outs(%c : tensor<256x64xf32>) -> tensor<256x64xf32>
  return %0 : tensor<256x64xf32>
}

// A dynamic M stays a parameter on the host and on GPUs; one domain serves every M.
// DYN-LABEL: func.func private @dynamic_family0
// DYN:         domain = "[LB, LM, LN, LK, DM, DN, DK] -> {
// DYN-SAME:      LM
// DYN-GPU-LABEL: func.func private @dynamic_family0
// DYN-GPU:         domain = "[LB, LM, LN, LK, DM, DN, DK] -> { [bm, bn, bk, wm, wn, sk, gm = 0, mma = 0, stages, persistent = 0] :
// DYN-GPU-SAME:      bm <= LM

// -----

// The GPU kernels mask their edges: no tile need divide M = 100, and no divisibility constraint prunes the
// family (the shape constraint only bounds the tiles by the padded problem).
// GPU-LABEL: func.func private @ragged_family0
// GPU:         "prism.family"()
// GPU-SAME:      domain = "[LB, LM, LN, LK, DM, DN, DK] -> { [bm, bn, bk, wm, wn, sk, gm = 0, mma = 0, stages, persistent = 0] :
// GPU-SAME:      stats = {registers = 20540 : i64, shape = 4211 : i64, shared_memory = 18550 : i64, space = 50000 : i64, split_k = 10540 : i64, threads = 30500 : i64}
// A100-LABEL: func.func private @ragged_family0
// A100-NOT:     divisibility
// A100:         symbols = ["BM", "BN", "BK", "WM", "WN", "SPLITK", "GROUP_M", "MMA", "STAGES", "PERSISTENT"]
// HOST-LABEL: func.func private @ragged_family0
func.func @ragged(%a: tensor<100x64xf32>, %b: tensor<64x32xf32>, %c: tensor<100x32xf32>) -> tensor<100x32xf32> {
  %0 = linalg.matmul ins(%a, %b : tensor<100x64xf32>, tensor<64x32xf32>) outs(%c : tensor<100x32xf32>) -> tensor<100x32xf32>
  return %0 : tensor<100x32xf32>
}
