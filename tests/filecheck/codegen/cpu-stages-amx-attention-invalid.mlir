// The attention kernel on AMX tiles reads its blocks from the chain's prism.attention choice before any code is
// written: a block of no query rows (BQ = 0), or a choice without its share count, stops cpu-tile with the scores'
// location, and no stage's IR is printed.
// RUN: not env PRISM_HOST_CONFIG= PRISM_HOST_DESCRIPTION=%S/../Inputs/host-amx-tiles.json prism-opt %s -p 'prism-lower-cpu{threads=2}' --print-ir-after=cpu-tile 2>&1 | filecheck %s
// RUN: sed 's/BQ = 0/BQ = 64/; s/, KVS = 1//' %s | not env PRISM_HOST_CONFIG= PRISM_HOST_DESCRIPTION=%S/../Inputs/host-amx-tiles.json prism-opt - -p 'prism-lower-cpu{threads=2}' 2>&1 | filecheck %s --check-prefix=SHARES

// CHECK-NOT: IR Dump
// CHECK: cpu-stages-amx-attention-invalid.mlir:[[# @LINE + 10]]:8: error: prism-lower-cpu: prism.attention.BQ must be a positive integer
// CHECK-NOT: IR Dump
// SHARES: <stdin>:18:8: error: prism-lower-cpu: prism.attention.KVS must be a positive integer
func.func @attention(%q: tensor<2x37x20xbf16>, %k: tensor<2x129x20xbf16>, %v: tensor<2x129x48xbf16>) -> tensor<2x37x48xf32> {
  %zero = arith.constant 0.0 : f32
  %ninf = arith.constant 0xFF800000 : f32
  %scale = arith.constant 0.22360679774997896 : f32
  %se = tensor.empty() : tensor<2x37x129xf32>
  %sn = tensor.empty() : tensor<2x37x129xbf16>
  %s0 = linalg.fill ins(%zero : f32) outs(%se : tensor<2x37x129xf32>) -> tensor<2x37x129xf32>
  %s = linalg.generic {prism.attention = {BQ = 0, BKV = 64, RM = 6, RN = 16, KVS = 1}, indexing_maps = [affine_map<(b0, i, j, c) -> (b0, i, c)>, affine_map<(b0, i, j, c) -> (b0, j, c)>, affine_map<(b0, i, j, c) -> (b0, i, j)>], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%q, %k : tensor<2x37x20xbf16>, tensor<2x129x20xbf16>) outs(%s0 : tensor<2x37x129xf32>) {
  ^bb0(%a: bf16, %b: bf16, %acc: f32):
    %w0 = arith.extf %a : bf16 to f32
    %w1 = arith.extf %b : bf16 to f32
    %x = arith.mulf %w0, %w1 : f32
    %y = arith.addf %acc, %x : f32
    linalg.yield %y : f32
  } -> tensor<2x37x129xf32>
  %re = tensor.empty() : tensor<2x37xf32>
  %m0 = linalg.fill ins(%ninf : f32) outs(%re : tensor<2x37xf32>) -> tensor<2x37xf32>
  %l0 = linalg.fill ins(%zero : f32) outs(%re : tensor<2x37xf32>) -> tensor<2x37xf32>
  %m = linalg.generic {indexing_maps = [affine_map<(b0, i, j) -> (b0, i, j)>, affine_map<(b0, i, j) -> (b0, i)>], iterator_types = ["parallel", "parallel", "reduction"]} ins(%s : tensor<2x37x129xf32>) outs(%m0 : tensor<2x37xf32>) {
  ^bb0(%a: f32, %acc: f32):
    %y = arith.maximumf %acc, %a : f32
    linalg.yield %y : f32
  } -> tensor<2x37xf32>
  %p = linalg.generic {indexing_maps = [affine_map<(b0, i, j) -> (b0, i, j)>, affine_map<(b0, i, j) -> (b0, i)>, affine_map<(b0, i, j) -> (b0, i, j)>], iterator_types = ["parallel", "parallel", "parallel"]} ins(%s, %m : tensor<2x37x129xf32>, tensor<2x37xf32>) outs(%se : tensor<2x37x129xf32>) {
  ^bb0(%a: f32, %b: f32, %out: f32):
    %x = arith.subf %a, %b : f32
    %y = arith.mulf %x, %scale : f32
    %z = math.exp %y : f32
    linalg.yield %z : f32
  } -> tensor<2x37x129xf32>
  %l = linalg.generic {indexing_maps = [affine_map<(b0, i, j) -> (b0, i, j)>, affine_map<(b0, i, j) -> (b0, i)>], iterator_types = ["parallel", "parallel", "reduction"]} ins(%p : tensor<2x37x129xf32>) outs(%l0 : tensor<2x37xf32>) {
  ^bb0(%a: f32, %acc: f32):
    %y = arith.addf %acc, %a : f32
    linalg.yield %y : f32
  } -> tensor<2x37xf32>
  %oe = tensor.empty() : tensor<2x37x48xf32>
  %o0 = linalg.fill ins(%zero : f32) outs(%oe : tensor<2x37x48xf32>) -> tensor<2x37x48xf32>
  %pr = linalg.generic {indexing_maps = [affine_map<(b0, i, j) -> (b0, i, j)>, affine_map<(b0, i, j) -> (b0, i, j)>], iterator_types = ["parallel", "parallel", "parallel"]} ins(%p : tensor<2x37x129xf32>) outs(%sn : tensor<2x37x129xbf16>) {
  ^bb0(%a: f32, %out: bf16):
    %r = arith.truncf %a : f32 to bf16
    linalg.yield %r : bf16
  } -> tensor<2x37x129xbf16>
  %o = linalg.generic {indexing_maps = [affine_map<(b0, i, e, j) -> (b0, i, j)>, affine_map<(b0, i, e, j) -> (b0, j, e)>, affine_map<(b0, i, e, j) -> (b0, i, e)>], iterator_types = ["parallel", "parallel", "parallel", "reduction"]} ins(%pr, %v : tensor<2x37x129xbf16>, tensor<2x129x48xbf16>) outs(%o0 : tensor<2x37x48xf32>) {
  ^bb0(%a: bf16, %b: bf16, %acc: f32):
    %w0 = arith.extf %a : bf16 to f32
    %w1 = arith.extf %b : bf16 to f32
    %x = arith.mulf %w0, %w1 : f32
    %y = arith.addf %acc, %x : f32
    linalg.yield %y : f32
  } -> tensor<2x37x48xf32>
  %out = linalg.generic {indexing_maps = [affine_map<(b0, i, e) -> (b0, i, e)>, affine_map<(b0, i, e) -> (b0, i)>, affine_map<(b0, i, e) -> (b0, i, e)>], iterator_types = ["parallel", "parallel", "parallel"]} ins(%o, %l : tensor<2x37x48xf32>, tensor<2x37xf32>) outs(%oe : tensor<2x37x48xf32>) {
  ^bb0(%a: f32, %b: f32, %out: f32):
    %y = arith.divf %a, %b : f32
    linalg.yield %y : f32
  } -> tensor<2x37x48xf32>
  return %out : tensor<2x37x48xf32>
}
