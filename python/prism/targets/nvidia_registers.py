"""What the NVIDIA GEMM kernels declare as registers per thread: facts of the chip and of the kernels' rules that
the cost model (:meth:`prism.targets.nvidia.GpuModel.resident_blocks`) and the code generator
(:mod:`prism.codegen.gpu`) share.

- The wgmma kernel: a producer warpgroup and one or more consumer warpgroups of WARPGROUP threads; ``setmaxnreg``
  leaves the producer PRODUCER_REGISTERS and gives each consumer CONSUMER_REGISTERS, so the kernel declares as
  ``.maxnreg`` what covers both at entry (:func:`wgmma_max_registers`).
- The mma.sync and FMA kernels declare their :func:`gemm_allotment` as ``.maxnreg``: a formula of the tile's knobs,
  with constants calibrated against ptxas (the least ``.maxnreg`` it assembles the GEMM space's tiles under
  without spilling).
"""

from __future__ import annotations

import numpy as np

# m, n, k of mma.sync for 16-bit inputs: a tensor-core warp tile is a multiple of it.
MMA_SHAPE = (16, 8, 16)
WARP = 32
WARPGROUP = 128  # threads of a warpgroup, which issues wgmma together
# setmaxnreg: what the wgmma GEMM's producer keeps and each consumer gets (multiples of 8 in [24, 256]).
PRODUCER_REGISTERS = 40
CONSUMER_REGISTERS = 232
MAX_REGISTERS = 255
REGISTER_FILE = 65536  # 32-bit registers of an SM, which a block's threads share
# The mma.sync and FMA kernels' allotment (see gemm_allotment), per kind (True: tensor cores), calibrated against
# ptxas: the least .maxnreg it assembles the GEMM space's tiles under without spilling.
ALLOT_STEP = {True: 0, False: 4}  # quarters of a k-step's fragments
ALLOT_HOISTED = {True: (96, 4), False: (48, 2)}  # the most hoisted fragments counted, and quarters of them
ALLOT_HELD = {True: 8, False: 2}  # quarters of the element-loaded chunks' registers (values and addresses)
ALLOT_OVERHEAD = {True: 32, False: 40}
ALLOT_SPLIT = {True: 40, False: 0}
ALLOT_ELEMENT = 16  # an element-loading kernel's element addresses and masks
ALLOT_EPILOGUE = 40  # a fused epilogue's (or an initial C tensor's) operands' addresses and values


def wgmma_max_registers(consumers):
    """The wgmma kernel's ``.maxnreg`` with ``consumers`` consumer warpgroups: the block's registers at entry
    cover what setmaxnreg moves (PRODUCER_REGISTERS + consumers * CONSUMER_REGISTERS over the block's
    warpgroups), rounded up to a multiple of 8 (``consumers`` may be an array)."""
    need = PRODUCER_REGISTERS + consumers * CONSUMER_REGISTERS
    return -(-need // (8 * (1 + consumers))) * 8


def register_cap(threads):
    """The most registers ptxas gives a thread of a block of ``threads`` (the kernel declares its block size):
    the block within the 64K-register file, rounded down to 8, at most MAX_REGISTERS (arrays too; a block
    without threads, 0)."""
    cap = np.minimum(MAX_REGISTERS, REGISTER_FILE // np.maximum(threads, 1) // 8 * 8)
    return np.where(np.asarray(threads) > 0, cap, 0)


def hoisted_fragments(wm, wn, bk, products: int = 1):
    """The mma.sync kernel's hoisted fragments as :func:`gemm_allotment` counts them (the BK tile's k-steps'
    fragments, at most ALLOT_HOISTED's first figure, times its second / 4)."""
    mma_m, mma_n, mma_k = MMA_SHAPE
    step = wm // mma_m * 4 + wn // mma_n * 2 * products
    most, quarters = ALLOT_HOISTED[True]
    return np.minimum(bk // mma_k * step, most) * quarters // 4


def gemm_allotment(bm, bn, bk, wm, wn, splitk=1, tensor_cores=True, products: int = 1, held=0,
                   capped: bool = True):
    """The registers a thread of the mma.sync (``tensor_cores``) or FMA kernel is allotted: what the kernel
    declares as ``.maxnreg``, calibrated so that ptxas fits within it without spilling (the knobs may be
    arrays of the space's points, as the cost model passes them).

    What a thread holds, rounded up to a multiple of 8:

    - the f32 accumulators, WM*WN/32 per product;
    - one k-step's operand fragments (mma.sync: 4 registers per 16 rows of A and 2 per 8 columns of B per
      product; FMA: WM/4 values of A and WN/8 of B per product), times ALLOT_STEP / 4;
    - the BK tile's fragments (BK/16 or BK/4 k-steps) that ptxas hoists ahead of the math: at most
      ALLOT_HOISTED's first figure of them, times its second / 4;
    - the element-loaded chunks ``held`` and their addresses, times ALLOT_HELD / 4, and ALLOT_ELEMENT where
      there are any (the elements' addresses and masks); with SPLITK > 1 as well, the cap (ptxas takes about
      what it would unbounded there, up to 255, with no rule of the tile found);
    - ALLOT_OVERHEAD for the addresses, indices and loop state, and ALLOT_SPLIT more with SPLITK > 1 (the
      last block's sum of the shares' partials).

    ``capped``: at most :func:`register_cap` of the block's threads (uncapped, what the space's registers rule
    keeps within that cap).
    """
    tc = np.asarray(tensor_cores, dtype=bool)
    mma_m, mma_n, mma_k = MMA_SHAPE

    def pick(table):
        return np.where(tc, table[True], table[False])

    accumulators = wm * wn // WARP * products
    steps = np.where(tc, bk // mma_k, bk // 4)
    step = np.where(tc, wm // mma_m * 4 + wn // mma_n * 2 * products, wm // 4 + wn // 8 * products)
    most, quarters = (np.where(tc, a, b) for a, b in zip(ALLOT_HOISTED[True], ALLOT_HOISTED[False], strict=True))
    need = (accumulators + step * pick(ALLOT_STEP) // 4 + np.minimum(steps * step, most) * quarters // 4
            + held * pick(ALLOT_HELD) // 4 + np.where(np.asarray(held) > 0, ALLOT_ELEMENT, 0) + pick(ALLOT_OVERHEAD)
            + np.where(np.asarray(splitk) > 1, pick(ALLOT_SPLIT), 0))
    need = (need + 7) // 8 * 8
    # element loads in a split kernel: ptxas needs up to what it takes unbounded (no tile rule found), the cap
    need = np.where((np.asarray(held) > 0) & (np.asarray(splitk) > 1), MAX_REGISTERS, need)
    return np.minimum(need, register_cap(bm // wm * (bn // wn) * WARP)) if capped else need
