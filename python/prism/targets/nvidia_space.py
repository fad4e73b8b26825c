"""The schedule space of Prism's own GPU GEMM kernels, per kernel form.

Knobs (exponents of two in the set; ``STAGES`` an integer):

- **wgmma** (sm_90a, 16-bit inputs): a block of BM x BN in one or two consumer
  warpgroups of WM x WN (WM = 64, the wgmma M), BK-deep TMA boxes, STAGES in
  the mbarrier ring. BM, BN, BK, WN are multiples of 64 up to 256 (BK up to
  128: one swizzle row); (BM/WM)(BN/WN) is 1 or 2 consumers. Registers: the
  kernel declares ``.maxnreg`` 136 (one consumer) or 168 (two), and a
  consumer's wgmma needs its WM*WN/128 accumulators and about 26 more within
  it: one consumer takes at most 64 x 128 (wm + wn <= 13 in exponents), two
  64 x 256 (gemm_sm90.wgmma_problem; gemm_sm90.tma_problem refuses the rest).
  STAGES x (BM + BN) x BK x 2 bytes plus the barriers within the opt-in
  shared memory.
- **mma.sync** (sm_80, and sm_90a where TMA cannot read the operands):
  warps of WM x WN (multiples of 16), BK a multiple of 16, at most 512
  threads, WM*WN/32 <= 128 accumulators a thread (16 with 512 threads: the
  register file is shared), STAGES x (A + B tiles) within the opt-in shared
  memory. The kernel declares the registers it is allotted
  (nvidia_registers.gemm_allotment: accumulators, fragments, split-K's sum, rounded
  up to 8) as ``.maxnreg``; the rules keep every point's allotment within
  min(255, 65536 / threads).
- **FMA** (f32 inputs, any chip): warps of WM x WN (WM a multiple of 4, WN of
  8), BK a multiple of 4, the same thread, register and shared-memory limits,
  and WM*WN/32 + BK/4 x WM/4 within 160 registers.

Both kernels split K (``SPLITK`` = 2**sk shares, 1 to 16, the knob ``sk``;
one launch; the last block of each tile sums the shares' partials): a split
needs each share to hold at least one BK step (SPLITK x BK <= K's padded
extent), batch x SPLITK blocks along grid z (below 2**16), registers for the
last block's sum (mma.sync at most 64 accumulators a thread, and with 512
threads WM x WN x BK <= 2**14; FMA at most 32), and fewer output tiles than
the chip has SMs (split-K only fills SMs that the tiles leave idle; beyond, it
adds the partials' traffic for nothing). Whether it pays is the cost's to say.

No tile need divide the problem: the kernels mask their edges, and the cost
counts the padded tiles' work (the wasted lanes). Every point of these spaces
is a tile the kernels take; ``tests/python/test_gpu_space.py`` holds them to
it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from prism.search.space import Contraction, Space, pow2_sum_le, shape_fit, shape_param_bounds

if TYPE_CHECKING:
    from prism.targets.nvidia import GpuModel

TENSOR_CORE_TYPES = ("f16", "bf16")
MIN_STAGES, MAX_STAGES = 2, 5
# Shared memory the wgmma kernel keeps besides its tiles: the mbarrier rings, padded to the 1024-byte alignment
# of the swizzled tiles.
WGMMA_RESERVED_BYTES = 1024
WGMMA_M = 64
MAX_SPLITK_LOG2 = 4  # SPLITK up to 16
GRID_Z_LOG2 = 16  # batch x SPLITK blocks along grid z: below 2**16 (65535)
# The tile orders: output tiles in groups of GROUP_M = 2**gm rows of tiles (1: row by row, up to 8), on both
# kernels; and the wgmma kernel's persistent grid (PERSISTENT = 1: at most the resident blocks, each looping over
# tiles).
MAX_GROUP_M_LOG2 = 3

# FMA: WM*WN/32 accumulators plus a BK tile's WM/4 values of A per k-step within 160 registers, i.e.
# 2**a + 2**b <= 160 for a = wm + wn - 5 and b = bk + wm - 4: over integers, exactly these three pieces (fewer
# than pow2_sum_le's general form, which made pruning an FMA space several times slower).
FMA_HELD_RULE = ("((wm + wn <= 12 and bk + wm <= 9) or (wm + wn <= 11 and bk + wm <= 10) or "
                 "(wm + wn <= 10 and bk + wm <= 11))")


def uses_wgmma(op: Contraction, target: GpuModel) -> bool:
    """Whether the contraction's kernel on ``target`` is the wgmma one (sm_90a, 16-bit inputs)."""
    return target.chip == "sm_90a" and op.input_type in TENSOR_CORE_TYPES


def _shared(op: Contraction, limit: int, reserved: int = 0) -> str:
    """STAGES x (A tile + B tile) + ``reserved`` bytes within ``limit``, one piece per STAGES value."""
    tiles = {"m": "bm", "n": "bn", "k": "bk"}
    a, b = op.footprint_exponent(0, tiles), op.footprint_exponent(1, tiles)
    return "(" + " or ".join(f"(stages = {s} and {pow2_sum_le(a, b, (limit - reserved) / s)})"
                             for s in range(MIN_STAGES, MAX_STAGES + 1)) + ")"


def _split_k(target: GpuModel, registers: str = "true") -> str:
    """SPLITK > 1 only where every share has a BK step, grid z holds batch x SPLITK, the output tiles
    (batch x M tiles x N tiles, each factor at least one) are at most the largest power of two within the SMs,
    and ``registers`` holds (the accumulators leave room for the last block's sum)."""
    sms = target.sm_count.bit_length() - 1
    pieces = [f"({m_case} and {n_case} and LB{m_tiles}{n_tiles} <= {sms})"
              for m_case, m_tiles in (("bm >= LM", ""), ("bm < LM", " + LM - bm"))
              for n_case, n_tiles in (("bn >= LN", ""), ("bn < LN", " + LN - bn"))]
    return (f"(sk = 0 or (sk + bk <= LK and LB + sk < {GRID_Z_LOG2} and {registers} and "
            f"({' or '.join(pieces)})))")


def gemm_space(op: Contraction, target: GpuModel) -> Space:
    """The space of the contraction's GPU kernel (see the module docstring)."""
    if uses_wgmma(op, target):
        universe = ("6 <= bm <= 8 and 6 <= bn <= 8 and 6 <= bk <= 7 and wm = 6 and 6 <= wn <= bn and mma = 1")
        groups = [
            ("warpgroups", "(bm - wm) + (bn - wn) <= 1"),
            # A consumer's wgmma needs its WM*WN/128 accumulators and about 26 registers more within the
            # kernel's .maxnreg: 136 with one consumer (at most 64 x 128), 168 with two (64 x 256 fits).
            ("registers", "wm + wn <= 13 or (wm + wn <= 14 and (bm - wm) + (bn - wn) = 1)"),
            ("shared_memory", _shared(op, target.smem_per_block, WGMMA_RESERVED_BYTES)),
        ]
        floor = 6
        persistent, group = "0 <= persistent <= 1", MAX_GROUP_M_LOG2
        split = _split_k(target)
    else:
        mma = op.input_type in TENSOR_CORE_TYPES
        low_wm, low_wn, low_bk = (4, 4, 4) if mma else (2, 3, 2)
        universe = (f"4 <= bm <= 8 and 4 <= bn <= 8 and {low_bk} <= bk <= 6 and {low_wm} <= wm <= bm and "
                    f"{low_wn} <= wn <= bn and mma = {int(mma)}")
        # A thread holds WM*WN/32 accumulators besides about a hundred registers of addresses, fragments and
        # loop state; 65536 registers a block: 256 threads may take 128 accumulators, 512 threads 16, and 1024
        # threads (64 registers each) none without spilling.
        groups = [
            ("threads", "(bm - wm) + (bn - wn) + 5 <= 9"),
            # FMA: a lane reads WM/4 values of A a k-step and ptxas loads the BK/4 steps ahead, which with the
            # WM*WN/32 accumulators must stay within 160 registers (beyond, it spills).
            ("registers", "wm + wn <= 12 and ((bm - wm) + (bn - wn) <= 3 or wm + wn <= 9)"
                          + ("" if mma else f" and {FMA_HELD_RULE}")),
            # f32 tiles pad each row by 16 bytes against bank conflicts, which at most doubles a row of 4 or more
            ("shared_memory", _shared(op, target.smem_per_block // (1 if mma else 2))),
        ]
        floor = 4
        # with SPLITK > 1, at most 64 accumulators a thread on tensor cores, 32 on FMAs (gemm.SPLIT_ACCUMULATORS);
        # on tensor cores, 512 threads (128 registers each) leave room for the last block's sum beside a BK tile
        # of fragments only while WM x WN x BK <= 2**14 (nvidia_registers.gemm_allotment)
        split = _split_k(target, "wm + wn <= 11 and ((bm - wm) + (bn - wn) <= 3 or wm + wn + bk <= 14)"
                         if mma else "wm + wn <= 10")
        # tiles grouped on tensor cores; the FMA kernel's are too slow for L2 to matter
        persistent, group = "persistent = 0", MAX_GROUP_M_LOG2 if mma else 0
    universe = (f"{shape_param_bounds()} and {universe} and {MIN_STAGES} <= stages <= {MAX_STAGES} and "
                f"0 <= sk <= {MAX_SPLITK_LOG2} and {persistent} and 0 <= gm <= {group}")
    groups.append(("split_k", split))
    groups.append(("shape", " and ".join([shape_fit("bm", "m", floor), shape_fit("bn", "n", floor),
                                          shape_fit("bk", "k", floor if uses_wgmma(op, target) else 4)])))
    return Space(kind="gemm", knobs={"bm": "BM", "bn": "BN", "bk": "BK", "wm": "WM", "wn": "WN", "sk": "SPLITK",
                                           "gm": "GROUP_M"},
                 flags={"mma": "MMA", "stages": "STAGES", "persistent": "PERSISTENT"},
                 universe=universe, groups=tuple(groups))
