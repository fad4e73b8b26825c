// A LLaMA-style decoder block, f16, 32 tokens, model 256, 4 heads of 64, hidden 704.
// Written by benchmarks/workloads/decoder_block.py; regenerate rather than edit.
#td = affine_map<(t, d) -> (t, d)>
#t = affine_map<(t, d) -> (t)>
#d = affine_map<(t, d) -> (d)>
#v = affine_map<(t) -> (t)>
#s4 = affine_map<(h, i, j, c) -> (h, i, c)>
#k4 = affine_map<(h, i, j, c) -> (h, j, c)>
#o4 = affine_map<(h, i, j, c) -> (h, i, j)>
#a3 = affine_map<(h, i, j) -> (h, i, j)>
#r3 = affine_map<(h, i, j) -> (h, i)>
#hs = affine_map<(h, t, d) -> (h, t, d)>
#hr = affine_map<(h, t, d) -> (t, d)>
func.func @decoder_block_f16(%x: tensor<32x256xf16>, %g1: tensor<256xf16>, %wq: tensor<4x256x64xf16>, %wk: tensor<4x256x64xf16>, %wv: tensor<4x256x64xf16>, %wo: tensor<4x64x256xf16>, %g2: tensor<256xf16>, %wg: tensor<256x704xf16>, %wu: tensor<256x704xf16>, %wd: tensor<704x256xf16>) -> tensor<32x256xf16> {
  %zero = arith.constant 0.0 : f32
  %one = arith.constant 1.0 : f32
  %ninf = arith.constant 0xFF800000 : f32
  %inv_d = arith.constant 3.906250000e-03 : f32
  %eps = arith.constant 1.000000000e-06 : f32
  %scale = arith.constant 1.250000000e-01 : f32
  %xn_zero_empty = tensor.empty() : tensor<32xf32>
  %xn_zero = linalg.fill ins(%zero : f32) outs(%xn_zero_empty : tensor<32xf32>) -> tensor<32xf32>
  %xn_ss = linalg.generic {indexing_maps = [#td, #t], iterator_types = ["parallel", "reduction"]}
      ins(%x : tensor<32x256xf16>) outs(%xn_zero : tensor<32xf32>) {
  ^bb0(%a0: f16, %acc: f32):
    %w_a0 = arith.extf %a0 : f16 to f32
    %sq = arith.mulf %w_a0, %w_a0 : f32
    %r = arith.addf %acc, %sq : f32
    linalg.yield %r : f32
  } -> tensor<32xf32>
  %xn_rows = tensor.empty() : tensor<32xf32>
  %xn_scale = linalg.generic {indexing_maps = [#v, #v], iterator_types = ["parallel"]}
      ins(%xn_ss : tensor<32xf32>) outs(%xn_rows : tensor<32xf32>) {
  ^bb0(%a0: f32, %acc: f32):
    %mean = arith.mulf %a0, %inv_d : f32
    %shifted = arith.addf %mean, %eps : f32
    %r = math.rsqrt %shifted : f32
    linalg.yield %r : f32
  } -> tensor<32xf32>
  %xn_out = tensor.empty() : tensor<32x256xf16>
  %xn = linalg.generic {indexing_maps = [#td, #t, #d, #td], iterator_types = ["parallel", "parallel"]}
      ins(%x, %xn_scale, %g1 : tensor<32x256xf16>, tensor<32xf32>, tensor<256xf16>) outs(%xn_out : tensor<32x256xf16>) {
  ^bb0(%a0: f16, %a1: f32, %a2: f16, %acc: f16):
    %w_a0 = arith.extf %a0 : f16 to f32
    %g = arith.extf %a2 : f16 to f32
    %n = arith.mulf %w_a0, %a1 : f32
    %y = arith.mulf %n, %g : f32
    %r = arith.truncf %y : f32 to f16
    linalg.yield %r : f16
  } -> tensor<32x256xf16>
  %xb_out = tensor.empty() : tensor<4x32x256xf16>
  %xb = linalg.broadcast ins(%xn : tensor<32x256xf16>) outs(%xb_out : tensor<4x32x256xf16>) dimensions = [0]
  %q_zero_empty = tensor.empty() : tensor<4x32x64xf32>
  %q_zero = linalg.fill ins(%zero : f32) outs(%q_zero_empty : tensor<4x32x64xf32>) -> tensor<4x32x64xf32>
  %q = linalg.batch_matmul ins(%xb, %wq : tensor<4x32x256xf16>, tensor<4x256x64xf16>) outs(%q_zero : tensor<4x32x64xf32>) -> tensor<4x32x64xf32>
  %k_zero_empty = tensor.empty() : tensor<4x32x64xf32>
  %k_zero = linalg.fill ins(%zero : f32) outs(%k_zero_empty : tensor<4x32x64xf32>) -> tensor<4x32x64xf32>
  %k = linalg.batch_matmul ins(%xb, %wk : tensor<4x32x256xf16>, tensor<4x256x64xf16>) outs(%k_zero : tensor<4x32x64xf32>) -> tensor<4x32x64xf32>
  %v_zero_empty = tensor.empty() : tensor<4x32x64xf32>
  %v_zero = linalg.fill ins(%zero : f32) outs(%v_zero_empty : tensor<4x32x64xf32>) -> tensor<4x32x64xf32>
  %v = linalg.batch_matmul ins(%xb, %wv : tensor<4x32x256xf16>, tensor<4x256x64xf16>) outs(%v_zero : tensor<4x32x64xf32>) -> tensor<4x32x64xf32>
  %s_zero_empty = tensor.empty() : tensor<4x32x32xf32>
  %s_zero = linalg.fill ins(%zero : f32) outs(%s_zero_empty : tensor<4x32x32xf32>) -> tensor<4x32x32xf32>
  %s = linalg.generic {indexing_maps = [#s4, #k4, #o4], iterator_types = ["parallel", "parallel", "parallel", "reduction"]}
      ins(%q, %k : tensor<4x32x64xf32>, tensor<4x32x64xf32>) outs(%s_zero : tensor<4x32x32xf32>) {
  ^bb0(%a0: f32, %a1: f32, %acc: f32):
    %p = arith.mulf %a0, %a1 : f32
    %r = arith.addf %acc, %p : f32
    linalg.yield %r : f32
  } -> tensor<4x32x32xf32>
  %m_init_empty = tensor.empty() : tensor<4x32xf32>
  %m_init = linalg.fill ins(%ninf : f32) outs(%m_init_empty : tensor<4x32xf32>) -> tensor<4x32xf32>
  %m = linalg.generic {indexing_maps = [#a3, #r3], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%s : tensor<4x32x32xf32>) outs(%m_init : tensor<4x32xf32>) {
  ^bb0(%a0: f32, %acc: f32):
    %r = arith.maximumf %acc, %a0 : f32
    linalg.yield %r : f32
  } -> tensor<4x32xf32>
  %p_out = tensor.empty() : tensor<4x32x32xf32>
  %p = linalg.generic {indexing_maps = [#a3, #r3, #a3], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%s, %m : tensor<4x32x32xf32>, tensor<4x32xf32>) outs(%p_out : tensor<4x32x32xf32>) {
  ^bb0(%a0: f32, %a1: f32, %acc: f32):
    %diff = arith.subf %a0, %a1 : f32
    %scaled = arith.mulf %diff, %scale : f32
    %r = math.exp %scaled : f32
    linalg.yield %r : f32
  } -> tensor<4x32x32xf32>
  %l_zero_empty = tensor.empty() : tensor<4x32xf32>
  %l_zero = linalg.fill ins(%zero : f32) outs(%l_zero_empty : tensor<4x32xf32>) -> tensor<4x32xf32>
  %l = linalg.generic {indexing_maps = [#a3, #r3], iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%p : tensor<4x32x32xf32>) outs(%l_zero : tensor<4x32xf32>) {
  ^bb0(%a0: f32, %acc: f32):
    %r = arith.addf %acc, %a0 : f32
    linalg.yield %r : f32
  } -> tensor<4x32xf32>
  %pv_zero_empty = tensor.empty() : tensor<4x32x64xf32>
  %pv_zero = linalg.fill ins(%zero : f32) outs(%pv_zero_empty : tensor<4x32x64xf32>) -> tensor<4x32x64xf32>
  %pv = linalg.batch_matmul ins(%p, %v : tensor<4x32x32xf32>, tensor<4x32x64xf32>) outs(%pv_zero : tensor<4x32x64xf32>) -> tensor<4x32x64xf32>
  %att_out = tensor.empty() : tensor<4x32x64xf32>
  %att = linalg.generic {indexing_maps = [#a3, #r3, #a3], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%pv, %l : tensor<4x32x64xf32>, tensor<4x32xf32>) outs(%att_out : tensor<4x32x64xf32>) {
  ^bb0(%a0: f32, %a1: f32, %acc: f32):
    %r = arith.divf %a0, %a1 : f32
    linalg.yield %r : f32
  } -> tensor<4x32x64xf32>
  %att_n_out = tensor.empty() : tensor<4x32x64xf16>
  %att_n = linalg.generic {indexing_maps = [#a3, #a3], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%att : tensor<4x32x64xf32>) outs(%att_n_out : tensor<4x32x64xf16>) {
  ^bb0(%a0: f32, %acc: f16):
    %r = arith.truncf %a0 : f32 to f16
    linalg.yield %r : f16
  } -> tensor<4x32x64xf16>
  %proj_zero_empty = tensor.empty() : tensor<4x32x256xf32>
  %proj_zero = linalg.fill ins(%zero : f32) outs(%proj_zero_empty : tensor<4x32x256xf32>) -> tensor<4x32x256xf32>
  %proj = linalg.batch_matmul ins(%att_n, %wo : tensor<4x32x64xf16>, tensor<4x64x256xf16>) outs(%proj_zero : tensor<4x32x256xf32>) -> tensor<4x32x256xf32>
  %x_wide_out = tensor.empty() : tensor<32x256xf32>
  %x_wide = linalg.generic {indexing_maps = [#td, #td], iterator_types = ["parallel", "parallel"]}
      ins(%x : tensor<32x256xf16>) outs(%x_wide_out : tensor<32x256xf32>) {
  ^bb0(%a0: f16, %acc: f32):
    %r = arith.extf %a0 : f16 to f32
    linalg.yield %r : f32
  } -> tensor<32x256xf32>
  %x1 = linalg.generic {indexing_maps = [#hs, #hr], iterator_types = ["reduction", "parallel", "parallel"]}
      ins(%proj : tensor<4x32x256xf32>) outs(%x_wide : tensor<32x256xf32>) {
  ^bb0(%a0: f32, %acc: f32):
    %r = arith.addf %acc, %a0 : f32
    linalg.yield %r : f32
  } -> tensor<32x256xf32>
  %hn_zero_empty = tensor.empty() : tensor<32xf32>
  %hn_zero = linalg.fill ins(%zero : f32) outs(%hn_zero_empty : tensor<32xf32>) -> tensor<32xf32>
  %hn_ss = linalg.generic {indexing_maps = [#td, #t], iterator_types = ["parallel", "reduction"]}
      ins(%x1 : tensor<32x256xf32>) outs(%hn_zero : tensor<32xf32>) {
  ^bb0(%a0: f32, %acc: f32):
    %sq = arith.mulf %a0, %a0 : f32
    %r = arith.addf %acc, %sq : f32
    linalg.yield %r : f32
  } -> tensor<32xf32>
  %hn_rows = tensor.empty() : tensor<32xf32>
  %hn_scale = linalg.generic {indexing_maps = [#v, #v], iterator_types = ["parallel"]}
      ins(%hn_ss : tensor<32xf32>) outs(%hn_rows : tensor<32xf32>) {
  ^bb0(%a0: f32, %acc: f32):
    %mean = arith.mulf %a0, %inv_d : f32
    %shifted = arith.addf %mean, %eps : f32
    %r = math.rsqrt %shifted : f32
    linalg.yield %r : f32
  } -> tensor<32xf32>
  %hn_out = tensor.empty() : tensor<32x256xf16>
  %hn = linalg.generic {indexing_maps = [#td, #t, #d, #td], iterator_types = ["parallel", "parallel"]}
      ins(%x1, %hn_scale, %g2 : tensor<32x256xf32>, tensor<32xf32>, tensor<256xf16>) outs(%hn_out : tensor<32x256xf16>) {
  ^bb0(%a0: f32, %a1: f32, %a2: f16, %acc: f16):
    %g = arith.extf %a2 : f16 to f32
    %n = arith.mulf %a0, %a1 : f32
    %y = arith.mulf %n, %g : f32
    %r = arith.truncf %y : f32 to f16
    linalg.yield %r : f16
  } -> tensor<32x256xf16>
  %gate_zero_empty = tensor.empty() : tensor<32x704xf32>
  %gate_zero = linalg.fill ins(%zero : f32) outs(%gate_zero_empty : tensor<32x704xf32>) -> tensor<32x704xf32>
  %gate = linalg.matmul ins(%hn, %wg : tensor<32x256xf16>, tensor<256x704xf16>) outs(%gate_zero : tensor<32x704xf32>) -> tensor<32x704xf32>
  %up_zero_empty = tensor.empty() : tensor<32x704xf32>
  %up_zero = linalg.fill ins(%zero : f32) outs(%up_zero_empty : tensor<32x704xf32>) -> tensor<32x704xf32>
  %up = linalg.matmul ins(%hn, %wu : tensor<32x256xf16>, tensor<256x704xf16>) outs(%up_zero : tensor<32x704xf32>) -> tensor<32x704xf32>
  %act_out = tensor.empty() : tensor<32x704xf32>
  %act = linalg.generic {indexing_maps = [#td, #td, #td], iterator_types = ["parallel", "parallel"]}
      ins(%gate, %up : tensor<32x704xf32>, tensor<32x704xf32>) outs(%act_out : tensor<32x704xf32>) {
  ^bb0(%a0: f32, %a1: f32, %acc: f32):
    %neg = arith.negf %a0 : f32
    %e = math.exp %neg : f32
    %den = arith.addf %one, %e : f32
    %silu = arith.divf %a0, %den : f32
    %r = arith.mulf %silu, %a1 : f32
    linalg.yield %r : f32
  } -> tensor<32x704xf32>
  %act_n_out = tensor.empty() : tensor<32x704xf16>
  %act_n = linalg.generic {indexing_maps = [#td, #td], iterator_types = ["parallel", "parallel"]}
      ins(%act : tensor<32x704xf32>) outs(%act_n_out : tensor<32x704xf16>) {
  ^bb0(%a0: f32, %acc: f16):
    %r = arith.truncf %a0 : f32 to f16
    linalg.yield %r : f16
  } -> tensor<32x704xf16>
  %out = linalg.matmul ins(%act_n, %wd : tensor<32x704xf16>, tensor<704x256xf16>) outs(%x1 : tensor<32x256xf32>) -> tensor<32x256xf32>
  %out_n_out = tensor.empty() : tensor<32x256xf16>
  %out_n = linalg.generic {indexing_maps = [#td, #td], iterator_types = ["parallel", "parallel"]}
      ins(%out : tensor<32x256xf32>) outs(%out_n_out : tensor<32x256xf16>) {
  ^bb0(%a0: f32, %acc: f16):
    %r = arith.truncf %a0 : f32 to f16
    linalg.yield %r : f16
  } -> tensor<32x256xf16>
  return %out_n : tensor<32x256xf16>
}
