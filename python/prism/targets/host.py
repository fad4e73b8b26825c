"""The CPU Prism runs on: what it reads off the machine, the cache-blocked schedule space, and its cost.

The machine is read from ``/proc/cpuinfo``, the sysfs cache descriptions
and the process's CPU affinity, or from the JSON file that
``PRISM_HOST_DESCRIPTION`` names (:class:`Machine`: to compile for another
machine, or to pin what the output depends on, as the FileCheck tests do);
its FMA rate and bandwidth come from the calibration file, else from
configured defaults (two FMA pipes per core at ~3.6 GHz, each as wide as
the machine's ``fma_bits``: 256 on a Zen 4 with AVX-512, which takes a
512-bit FMA on both pipes at once, else the vector width), and can be
overridden with environment variables ``PRISM_HOST_GFLOPS``,
``PRISM_HOST_GBPS`` and ``PRISM_HOST_FMA_BITS``.

The cost model follows the code generator that will run the contraction
(see :mod:`prism.codegen.cpu`). An f32 contraction in the row-major layout
runs the direct kernel: each task copies its slice of B into panels when
more than one row panel reuses them (else it reads B in place, or streams
it along whole rows for a one-row block), so that copy is part of the
task's work, and B's reads pay for each jump between contiguous runs.
The memory time is that of the worker with the most columns of B, at its
share of the bandwidth (cores left without a block leave theirs unused);
one row of C splits K over every core. Other contractions run between a packing phase (both
inputs read and written once) and an unpacking one (C read and written
once), which do not overlap the kernel, so their memory time adds to its
roofline.
"""

from __future__ import annotations

import dataclasses
import functools
import json
import math
import os
import re
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from prism.infra.errors import TargetError
from prism.kernels import host_gemm
from prism.search.attention import Attention, attention_lanes
from prism.search.cost import Knob, KnobValues, ceil_div, problem_sizes, roofline, traffic_bytes
from prism.search.space import Contraction, Space, pow2_sum_le, shape_fit, shape_param_bounds
from prism.targets.base import BANDWIDTH_MARGIN, iree_tile_levels
from prism.targets.host_attention import COST_TEXT as ATTENTION_COST_TEXT
from prism.targets.host_attention import attention_lower_bound, attention_seconds, attention_space

COST_TEXT = ("[transform path only: 2*(bytesA + bytesB + bytesC) / bandwidth] + "
             "max(rounds * (tiles(M, TM, RM)*tiles(N, TN, RN)*ceil(K/TK) * kernel_cycles(RM, RN, TK) "
             "+ [B panels: ceil(K/TK)*TK*TN/lanes if ceil(TM/RM) > 1]) / clock + task), "
             "(bytesA*ceil(N/TN) + bytesB*ceil(M/TM)*(1 + 128/run) + bytesC) / bandwidth * cores/busy); "
             "rounds = ceil(B*ceil(M/TM)*ceil(N/TN) / cores); busy = min(B*ceil(M/TM)*ceil(N/TN), cores), "
             "or cores for one row of C (K split); run = bytes of B read contiguously (TN or RN wide, N at decode); "
             "tiles(M, TM, RM) = micro-tile rows per block, averaged over the blocks (the last one ragged)")

# An FMA's latency in cycles (Zen 4 class): a micro-kernel needs latency x
# issue rate independent accumulators to keep the FMA units busy. Two loads
# (or broadcasts) per cycle.
FMA_LATENCY, LOAD_PORTS = 4, 2
# With just latency x rate accumulators, every load or loop instruction that
# slips leaves an FMA unit idle: a step then takes this much longer than the
# latency. Measured 2026-12-01 on the development machine (2-core Zen 3, f32,
# TN = TK = 256): 4x16 blocks (8 accumulators) took 1.09x the time of 6x16
# (12) at 1024^3 and 1.10-1.13x at 2048^3.
LATENCY_SLACK_CYCLES = 0.4
# Cycles to load and store a micro-tile's accumulators and restart the K loop,
# paid once per TK slice of every micro-tile, beyond the loads and stores.
SLICE_OVERHEAD_CYCLES = 20
# The direct kernel's rows of A alias in one L1 set when K's stride is a whole number of ways (K a multiple of
# 1024 f32 on a 48 KiB 12-way L1): with more rows than the set's ways less SET_RESERVED_WAYS (B's panel line
# and C's), a micro-tile then runs SET_CONFLICT_FACTOR times slower. Measured on the 2-core Zen 5 at
# 16x1024x1024 (TN = 512, TK = 256; fastest of 120 calls, three processes each): RM x RN = 16 x 16 0.257-0.276
# ms, 12 x 32 0.181-0.240, 8 x 32 0.163-0.192. On the 8-way Zen 3, 6 x 16 blocks ran fastest.
SET_RESERVED_WAYS, SET_CONFLICT_FACTOR = 2, 1.5
# Handing one parallel block to a thread of the pool (a claimed chunk).
BLOCK_OVERHEAD_SECONDS = 1e-6
# Copying one vector of B into a panel: a load and a store.
PANEL_COPY_CYCLES = 1
# Packing reads each operand as runs of contiguous bytes, jumping between
# runs; every jump costs as much as streaming this many more bytes (a page
# walk and a DRAM row opening). Measured 2026-12-01 on the development
# machine (16x4096x4096 f32, B packed into 16-, 32- and 64-wide panels: 64-,
# 128- and 256-byte runs took 1.47x and 1.12x the time of the 256-byte ones).
STRIDED_RUN_BYTES = 128


def direct_kernel(op: Contraction) -> bool:
    """Whether the host runs ``op`` with the direct GEMM kernel (:func:`prism.kernels.host_gemm.direct_layout`).

    (The contraction records its inputs' maps only; C is taken to follow the loops' order, as in linalg's named ops.)
    """
    if len(op.operand_dims) != 2:
        return False
    f32 = op.input_type == "f32" and op.elem_bytes == (4, 4) and op.acc_bytes == 4
    inputs = [[op.roles[d] for d in dims] for dims in op.operand_dims]
    return host_gemm.direct_layout(f32, [*inputs, [r for r in op.roles if r in ("batch", "m", "n")]])


@dataclass(frozen=True)
class HostTarget:
    """A CPU. Sizes in bytes, rates in FLOP/s and bytes/s."""

    name: str
    cores: int
    l1d_bytes: int
    l1d_ways: int
    l2_bytes: int
    l3_bytes: int
    vector_bits: int  # widest SIMD register: 512 with AVX-512F, 256 with AVX2
    vector_registers: int
    fma_pipes: int  # vector FMA units per core
    fma_bits: int  # width of one FMA unit; a wider vector FMA occupies several
    flops: dict[str, float]
    dram_bytes_per_s: float
    cache_bytes_per_s: float  # streaming from L3 into the cores, all cores together

    artifact = "llvm"
    runs_here = True
    block_overhead_seconds = BLOCK_OVERHEAD_SECONDS
    fusion = frozenset({"epilogue", "dual"})  # f32 products (see prism.codegen.cpu.epilogue)

    @property
    def vector_fmas_per_cycle(self) -> float:
        """Full-width vector FMAs one core issues per cycle (1 for 512-bit vectors on two 256-bit pipes)."""
        return self.fma_pipes * self.fma_bits / self.vector_bits

    def lowering(self) -> str:
        """prism-lower-cpu on every core."""
        return f"prism-lower-cpu{{threads={self.cores}}}"

    def space(self, op: Contraction | Attention) -> Space | None:
        """Cache tiles (TM, TN, TK) and register block (RM, RN); for attention, see :mod:`.host_attention`."""
        return attention_space(op, self) if isinstance(op, Attention) else gemm_space(op, self)

    def seconds(self, op: Contraction | Attention, values: KnobValues, assumed: int = 1024) -> np.ndarray:
        """Predicted seconds of ``op`` scheduled by ``values`` (see the module docstring)."""
        if isinstance(op, Attention):
            return attention_seconds(self, op, values, assumed)
        s = problem_sizes(op, assumed)
        rm, rn = values["RM"], values["RN"]
        # A tile larger than its (padded) extent covers just that extent.
        tm = np.minimum(values["TM"], ceil_div(s["m"], rm) * rm)
        tn = np.minimum(values["TN"], ceil_div(s["n"], rn) * rn)
        tk = np.minimum(values["TK"], s["k"])
        lanes = self.lanes(op)
        # Workers take contiguous shares of the blocks (row block by row block): unless one share holds a whole
        # row of column blocks, the first worker's blocks are all full-width, and it finishes last (N = 5632 in
        # blocks of 4096 gave one core 4096 columns and the other 1536: 6.2 ms, against 4.8 with TN = 512).
        rounds = self._rounds(tm, tn, s)  # each worker's share of the blocks
        columns = np.where(rounds < ceil_div(s["n"], tn), ceil_div(tn, rn), _inner_tiles_per_block(s["n"], tn, rn))
        micro_tiles = _inner_tiles_per_block(s["m"], tm, rm) * columns
        block_cycles = micro_tiles * ceil_div(s["k"], tk) * self.micro_kernel_cycles(rm, rn, tk, lanes)
        run, direct = None, direct_kernel(op)
        if direct:
            # The kernel reads A in place, RM rows K apart: where that stride is a whole number of L1 ways, every
            # row's line falls in one set, and more rows than the set holds (beside B's and C's) evict each other.
            way_bytes = self.l1d_bytes // self.l1d_ways
            aliased = (s["k"] * op.elem_bytes[0] % way_bytes == 0) & (rm > self.l1d_ways - SET_RESERVED_WAYS)
            block_cycles = np.where(aliased, block_cycles * SET_CONFLICT_FACTOR, block_cycles)
            # B panels are copied per task (one vector load and store each) when several row panels of several
            # rows read them; the copy reads rows of B TN wide, and so does a one-row block (it streams whole
            # rows of the task's columns), while a task with one row panel of several rows reads B RN wide.
            packs = host_gemm.copies_panels(tm, rm, s["m"])
            copies = np.where(packs, ceil_div(s["k"], tk) * tk * ceil_div(tn, lanes), 0)
            # Kept across row blocks, a column block's panels are copied once rather than once per block.
            reused = host_gemm.reuses_panels(packs, tm, tn, s["m"], op.extent("k"), op.elem_bytes[1])
            copies = np.where(reused, copies / ceil_div(s["m"], tm), copies)
            block_cycles = block_cycles + copies * PANEL_COPY_CYCLES
            run = np.minimum(np.where(packs | (rm == 1), tn, rn), s["n"]) * op.elem_bytes[1]
        # The worker with the most columns of B to read finishes last, streaming at its share of the bandwidth
        # (idle cores leave theirs unused); a single row of C instead splits K over every core, each streaming
        # whole rows of B.
        imbalance = self._memory_imbalance(tm, tn, s)
        if direct:
            split = host_gemm.splits_k(rm, op.extent("m"), op.extent("n"), "batch" in op.roles, self.cores)
            run = np.where(split, s["n"] * op.elem_bytes[1], run)
            imbalance = np.where(split, 1.0, imbalance)
        compute = rounds * (block_cycles * self.cycle_seconds(op) + BLOCK_OVERHEAD_SECONDS)
        memory = self._kernel_memory_seconds(op, tm, tn, s, run=run) * imbalance
        phases = 0 if direct else self._pack_seconds(op, values, s)
        return phases + roofline(compute, memory)

    def lower_bound(self, op: Contraction | Attention, values: KnobValues, assumed: int = 1024) -> np.ndarray:
        """Reads TM and TN: exact traffic, unpadded work at the FMA peak, packing phases without their jumps."""
        if isinstance(op, Attention):
            return attention_lower_bound(self, op, values, assumed)
        s = problem_sizes(op, assumed)
        # Unpadded extents: the cost's tiles are at least these.
        tm, tn = np.minimum(values["TM"], s["m"]), np.minimum(values["TN"], s["n"])
        # A block's rows and columns averaged over the blocks, as the cost counts them (the last ones ragged).
        rows, columns = s["m"] / ceil_div(s["m"], tm), s["n"] / ceil_div(s["n"], tn)
        block_cycles = rows * columns * s["k"] / (self.lanes(op) * self.vector_fmas_per_cycle)
        compute = self._rounds(tm, tn, s) * (block_cycles * self.cycle_seconds(op) + BLOCK_OVERHEAD_SECONDS)
        phases = 0 if direct_kernel(op) else self._pack_seconds(op, values, s, strided=False)
        return phases + roofline(compute, self._kernel_memory_seconds(op, tm, tn, s))

    iree_backend = "llvm-cpu"
    iree_flags = ("--iree-llvmcpu-target-cpu=host",)
    iree_device = None  # the flags name this machine

    def iree_config(self, op: Contraction, choice: dict[str, int]) -> tuple[str, list[str]]:
        """IREE's CPU double-tiling pipeline, as near Prism's choice as it runs well.

        IREE's pipeline keeps the whole of K in each workgroup (a cache-level
        K tile makes it vectorize whole slices) and reads B where it lies, so
        TK and B's panels have no counterpart. Its vector tiles run well as
        powers of two: RM becomes the largest one not above it (6 rows become
        4). The workgroup is :meth:`_iree_workgroup`'s. Prism's tiles as they
        are (96 x 256 blocks of 6 x 16) took 18.4 and 188 ms at 512^3 and
        1024^3 (IREE's default 6.2 and 63.6).
        """
        rm, rn = choice["RM"], choice["RN"]
        vm, wm, wn = self._iree_workgroup(op, choice)
        # K one step at a time as in Prism's micro-kernel, but 8 for a short K, as IREE's own configurations
        # take it: at 16 x 1024 x 1024 (ms, in process, alternating) 1.64 with one step, 1.33 with 8, IREE's
        # default 1.13; at 16 x 4096 x 4096, 35.7-38.6 with one, 39.0 with 8, IREE's default 42.5.
        reduction = 8 if self._iree_k(op) <= 1024 else 1
        tiles = {"batch": (1, 1, 0), "m": (wm, vm, 0), "n": (wn, rn, 0), "k": (0, 0, reduction)}
        config = iree_tile_levels(op.roles, tiles, ("distribution", "vector_common_parallel", "vector_reduction"))
        text = (f"#iree_codegen.compilation_info<lowering_config = #iree_cpu.lowering_config<{config}>, "
                "translation_info = #iree_codegen.translation_info<pipeline = #iree_cpu.pipeline<DoubleTilingExpert>>>")
        unexpressed = [f"the K slice (TK = {choice['TK']}) and B's panels (IREE keeps whole K in a workgroup)"]
        if vm != rm:
            unexpressed.append(f"RM = {rm} (IREE's vector tile takes {vm} rows)")
        if (wm, wn) != (choice["TM"], choice["TN"]):
            unexpressed.append(f"TM x TN = {choice['TM']} x {choice['TN']} (a workgroup of {wm} x {wn}, whose rows "
                               "of A and columns of B stay in cache over the whole of K)")
        return text, unexpressed

    def iree_data_tiling(self, op: Contraction, choice: dict[str, int]
                         ) -> tuple[tuple[int, int, int], str, list[str]] | None:
        """The inner tiles (m0, n0, k0) into which ``--emit=iree`` packs a product that IREE should run on
        packed operands (``linalg.mmt4d``), with the ``compilation_info`` of that mmt4d and, in words, what of
        the choice it cannot express; None to leave the product as it is.

        Packed, like Prism's own kernel with several row blocks: an f32
        product of static M above TM (each panel of B then serves several
        row blocks) or of dynamic M, without a batch. Each operand is packed
        once per call into lanes x lanes tiles (8 x 8 with AVX2, IREE's own
        data-tiling tile), and the workgroup is :meth:`_iree_workgroup`'s.
        Measured 2026-12-02 on the 2-core Zen 3 (IREE 3.13, ms, in process,
        alternating), IREE's default against the packed form with IREE's own
        workgroups and with these: 512^3 5.9, 4.7, -; 1024^3 54.6, 28.8-30.6,
        25.5 (workgroups of 32 x 64); 2048^3 557, 315, -. At 16 x 4096^2 the
        packed form lost (148 against 118: B is packed on every call for 16
        rows).
        """
        if op.input_type != "f32" or op.acc_bytes != 4 or "batch" in op.roles:
            return None
        m = op.extent("m")
        if m is not None and m <= choice["TM"]:
            return None
        lanes = self.lanes(op)
        _, wm, wn = self._iree_workgroup(op, choice)
        distribution = [-(-wm // lanes), max(1, wn // lanes), 0, 0, 0, 0]  # outer tiles of M and N
        config = (f"#iree_codegen.compilation_info<lowering_config = #iree_cpu.lowering_config<distribution = "
                  f"{distribution}, vector_common_parallel = [1, 1, 0, {lanes}, {lanes}, 0], vector_reduction "
                  "= [0, 0, 1, 0, 0, 1]>, translation_info = #iree_codegen.translation_info<pipeline = "
                  "#iree_cpu.pipeline<Mmt4dTilingExpert>>>")
        unexpressed = [f"the K slice (TK = {choice['TK']}): IREE packs whole operands and keeps K in a workgroup"]
        if (choice["RM"], choice["RN"]) != (lanes, lanes):
            unexpressed.append(f"the register block {choice['RM']} x {choice['RN']} (IREE's packed tile is "
                               f"{lanes} x {lanes})")
        if (wm, wn) != (choice["TM"], choice["TN"]):
            unexpressed.append(f"TM x TN = {choice['TM']} x {choice['TN']} (a workgroup of {wm} x {wn})")
        return (lanes, lanes, 1), config, unexpressed

    @staticmethod
    def _iree_workgroup(op: Contraction, choice: dict[str, int]) -> tuple[int, int, int]:
        """IREE's vector rows, and its workgroup's rows and columns, for Prism's ``choice``.

        A workgroup is 4 vector tiles wide (TN capped) and K/128 high, from 8
        to 32 vector tiles (TM capped): the longer K, the more rows share a
        workgroup's panel of B. Measured 2026-12-02 on the 2-core Zen 3 (IREE
        3.13, ms, in process; workgroups of 4 x 16 tiles): 512^3, 32 x 64 5.6
        against IREE's default 6.2; 1024^3, 32 x 64 44.5, 64 x 64 49.1, default
        63.6; 2048^3, 64 x 64 713, 128 x 64 684, 32 x 64 853, default 737;
        16 x 4096^2, 16 x 64 115 against 129.
        """
        vm = min(1 << (choice["RM"].bit_length() - 1), 8)
        rows = vm * min(max(HostTarget._iree_k(op) // 128, 8), 32)
        return vm, max(vm, min(choice["TM"], rows) // vm * vm), min(choice["TN"], 4 * choice["RN"])

    @staticmethod
    def _iree_k(op: Contraction) -> int:
        """The product's K, counting a dynamic extent as 1024."""
        return math.prod(extent or 1024 for extent, role in zip(op.extents, op.roles, strict=True) if role == "k")

    def cost_text(self, op: Contraction | Attention) -> str:
        """The host roofline of ``op``'s family (with the packing phases of a contraction), as text."""
        return ATTENTION_COST_TEXT if isinstance(op, Attention) else COST_TEXT

    def pass_seconds(self, moved: int) -> float:
        """One loop nest streaming ``moved`` bytes, from L3 when they fit half of it, else from DRAM."""
        fits = host_gemm.stays_in_cache(moved, self.l3_bytes)
        return moved / (self.cache_bytes_per_s if fits else self.dram_bytes_per_s)

    def micro_kernel_cycles(self, rm: Knob, rn: Knob, tk: Knob, lanes: int) -> Knob:
        """Cycles of one RM x RN micro-tile over one TK slice of K.

        Each k step issues RM*RN/lanes FMAs and RM broadcasts plus RN/lanes
        loads; with no more accumulators than FMA_LATENCY times the FMA
        issue rate, the latency (and its slack), not the units, sets the pace.
        """
        accumulators = rm * rn / lanes
        per_step = np.maximum(np.maximum(accumulators / self.vector_fmas_per_cycle, (rm + rn / lanes) / LOAD_PORTS),
                              FMA_LATENCY + LATENCY_SLACK_CYCLES)
        return tk * per_step + 2 * accumulators / LOAD_PORTS + SLICE_OVERHEAD_CYCLES

    def lanes(self, op: Contraction | Attention) -> int:
        """Vector lanes of the accumulator's type (for attention, of the kernel's vectors: see
        :func:`attention_lanes`)."""
        lanes = self.vector_bits // (8 * op.acc_bytes)
        return (attention_lanes(op.value_dim, lanes) or lanes) if isinstance(op, Attention) else lanes

    def cycle_seconds(self, op: Contraction | Attention) -> float:
        """Seconds per cycle of one core, from its FMA rate (one FMA is 2 FLOP per lane)."""
        per_cycle = 2 * self.lanes(op) * self.vector_fmas_per_cycle
        return per_cycle / (self.flops[op.input_type] / self.cores)

    def _rounds(self, tm: Knob, tn: Knob, s: dict[str, int]) -> Knob:
        """Rounds of parallel TM x TN blocks over the cores."""
        blocks = s["batch"] * ceil_div(s["m"], tm) * ceil_div(s["n"], tn)
        return ceil_div(blocks, self.cores)

    def _memory_imbalance(self, tm: Knob, tn: Knob, s: dict[str, int]) -> Knob:
        """The busiest worker's columns of B over an even share of them (1 when balanced, the cores when one
        block is all there is).

        Workers take contiguous shares of the blocks, row block by row block; the first takes whole rows of
        blocks and then full-width blocks, the most columns of any. With N = 5632 and TN = 4096, two blocks on
        two cores, it reads 4096 of the 5632 columns, 1.45 times an even share: the 8-row gate/up GEMM of
        SwiGLU 8x2048 (two such blocks) ran 9.2 ms with the next GEMM, against 6.7 with TN = 1024 and 4-row
        blocks (3072 columns, 1.09), which the cost had called a tie (2026-12-03, 2-core Zen 5).
        """
        row_blocks, nt = s["batch"] * ceil_div(s["m"], tm), ceil_div(s["n"], tn)
        share = self._rounds(tm, tn, s)  # the first worker's blocks
        busiest = share // nt * s["n"] + share % nt * np.minimum(tn, s["n"])
        return np.maximum(busiest * self.cores / (row_blocks * s["n"]), 1.0)

    def _bandwidth(self, op: Contraction, s: dict[str, int]) -> float:
        """L3's bandwidth when the inputs and their packed copies fit half of it (the rest is shared), else DRAM's."""
        working_set = 2 * s["batch"] * s["k"] * (s["m"] * op.elem_bytes[0] + s["n"] * op.elem_bytes[1])
        return self.cache_bytes_per_s if host_gemm.stays_in_cache(working_set, self.l3_bytes) \
            else self.dram_bytes_per_s

    def _pack_seconds(self, op: Contraction, values: KnobValues, s: dict[str, int], strided: bool = True) -> Knob:
        """The packing phase before the kernel and the unpacking after it, which do not overlap it.

        Each input and C is read and written once; reads pay
        STRIDED_RUN_BYTES per jump (the packed C is read back in RN-wide
        runs). ``strided=False`` leaves the jumps out, for a bound that holds
        whatever the register block.
        """
        def moved(size: int, run: Knob) -> Knob:
            return size * (2 + (STRIDED_RUN_BYTES / run if strided else 0))

        sizes = (s["batch"] * s["m"] * s["k"] * op.elem_bytes[0], s["batch"] * s["k"] * s["n"] * op.elem_bytes[1])
        inputs = sum(moved(size, _run_bytes(op, i, values, s)) for i, size in enumerate(sizes))
        c_bytes = s["batch"] * s["m"] * s["n"] * op.acc_bytes
        run_c = np.minimum(values["RN"], s["n"]) * op.acc_bytes if strided else 1
        return (inputs + moved(c_bytes, run_c)) / self._bandwidth(op, s)

    def _kernel_memory_seconds(self, op: Contraction, tm: Knob, tn: Knob, s: dict[str, int],
                               run: Knob | None = None) -> Knob:
        """The kernel's traffic: A once per N tile, B once per M tile, C once.

        With ``run`` (the direct kernel), B is read from where it lies, in
        contiguous runs of that many bytes (a task's row of B), each jump
        costing STRIDED_RUN_BYTES more.
        """
        moved = traffic_bytes(op, tm, tn, s)
        if run is not None:
            b_bytes = s["batch"] * s["k"] * s["n"] * op.elem_bytes[1] * ceil_div(s["m"], tm)
            moved = moved + b_bytes * STRIDED_RUN_BYTES / run
        return moved / self._bandwidth(op, s)


def _inner_tiles_per_block(extent: int, tile: Knob, inner: Knob) -> Knob:
    """Inner tiles (micro-tile rows or columns) of one block, averaged over the blocks of ``extent``.

    The last block holds only what is left of the extent: with M = 128, TM =
    96 and RM = 6, 16 and 6 micro-tile rows, 11 on average.
    """
    whole, left = extent // tile, extent % tile
    return (whole * ceil_div(tile, inner) + ceil_div(left, inner)) / ceil_div(extent, tile)


def _run_bytes(op: Contraction, operand: int, values: KnobValues, s: dict[str, int]) -> Knob:
    """Contiguous bytes the pack reads from input ``operand`` before it jumps.

    The pack walks K innermost, so an operand stored with K last is read
    along whole rows; otherwise each row yields one inner tile (RM or RN
    elements) before the walk moves to the next row.
    """
    role = op.roles[op.operand_dims[operand][-1]]
    tile = {"m": values["RM"], "n": values["RN"]}.get(role, s[role])
    return np.minimum(tile, s[role]) * op.elem_bytes[operand]


def gemm_space(op: Contraction, target: HostTarget) -> Space:
    """Cache tiles (TM, TN, TK) and register block (RM, RN) for the host CPU.

    RM is a power of two, or three times one (``m3 = 1``): a 6-row block
    fills AVX2's sixteen registers with 12 accumulators, which keeps more
    FMAs in flight than 4 rows (8 accumulators, just the FMA latency times
    two units). TM may then be three times a power of two as well
    (``t3 = 1``), so that a block holds whole micro-tiles; a power of two
    keeps a problem of that many rows in one block (measured on 128x4096x4096:
    TM = 128 with RM = 6, 22 micro-tiles of which the last repeats two rows,
    40.8 ms; TM = 96, two row blocks, 49.8 ms).
    """
    lanes_log2 = int(math.log2(target.vector_bits // (8 * op.acc_bytes)))
    # The direct kernel takes any register block and short K slices (decode
    # streams B best in slices of a few rows); the transform path needs
    # RM >= 2 (it folds unit dimensions of the micro-kernel, and a single-row
    # block would degenerate into a matrix-vector product).
    # A one-row block streams whole rows of its task's columns (only a row of C stays in L1), so its tasks
    # may be as wide as N's share of one core.
    rm_min, tk_min = (0, 3) if direct_kernel(op) else (1, 4)
    tn_max = "(tn <= 10 or (rm = 0 and m3 = 0 and tn <= 12))" if direct_kernel(op) else "tn <= 10"
    # RM <= TM: 3 * 2**rm <= 2**tm exactly when rm + 2 <= tm.
    universe = (f"{shape_param_bounds()} and {rm_min} <= rm <= 4 and 0 <= t3 <= m3 <= 1 and rm + 2 * m3 <= 4"
                f" and {lanes_log2} <= rn <= {lanes_log2 + 2} and rm + 2 * (m3 - t3) <= tm <= 9"
                f" and rn <= tn and {tn_max} and {tk_min} <= tk <= 10")
    footprint = op.footprint_exponent
    reg_tiles = {"m": "rm", "n": "rn", "k": "tk"}
    cache_tiles = {"m": "tm", "n": "tn", "k": "tk"}

    def by_factor(factor: str, constraint) -> str:
        """``constraint(scale)`` with the scale that the 0/1 variable ``factor`` gives: 1, or 3 when set."""
        return f"(({factor} = 0 and {constraint(1)}) or ({factor} = 1 and {constraint(3)}))"

    # Accumulators (RM x RN/lanes vectors) plus one row of B and one broadcast
    # register must fit the vector register file.
    acc = f"rm + rn - {lanes_log2}"
    b_row = f"rn - {lanes_log2}"
    c_block = op.output_footprint_exponent(cache_tiles)
    groups = (
        ("registers", by_factor("m3", lambda f: pow2_sum_le(acc, b_row, target.vector_registers - 1, scale_a=f))),
        # The loop order decides what each level must hold (see
        # prism.codegen.cpu): a B panel (TK x RN) is reused by every RM-high
        # row panel of the block, so it must stay in L1 beside the A panel
        # streaming through; the A slice (TM x TK) is reused by every column
        # panel and the C block (TM x TN) by every K slice, so both must stay
        # in L2, of which half is left to the B stream.
        ("l1", by_factor("m3", lambda f: pow2_sum_le(footprint(0, reg_tiles), footprint(1, reg_tiles),
                                                     target.l1d_bytes, scale_a=f))),
        ("l2", by_factor("t3", lambda f: pow2_sum_le(footprint(0, cache_tiles), c_block, target.l2_bytes / 2 / f))),
        # 3 * 2**tm <= 2**LM exactly when tm + 2 <= LM.
        ("shape", " and ".join([shape_fit("tm", "m", 1, scale_log2="2 * t3"), shape_fit("tn", "n", lanes_log2),
                                shape_fit("tk", "k", 4)])),
    )
    return Space(kind="gemm", knobs={"tm": "TM", "tn": "TN", "tk": "TK", "rm": "RM", "rn": "RN"},
                 flags={}, universe=universe, groups=groups, factors={"m3": (3, ("rm",)), "t3": (3, ("tm",))})


def _cpu_flags() -> set[str]:
    return set((_cpu_field("flags") or "").split())


def _cache_field(level: int, kind: str, field: str) -> str | None:
    """Field ``field`` of cpu0's cache at ``level`` of ``kind`` (Data/Unified), from sysfs; None if unknown."""
    for index in sorted(Path("/sys/devices/system/cpu/cpu0/cache").glob("index*")):
        try:
            if int((index / "level").read_text()) != level or (index / "type").read_text().strip() != kind:
                continue
            return (index / field).read_text().strip()
        except (OSError, ValueError):
            continue
    return None


def cache_size(level: int, kind: str, default: int) -> int:
    """Size of cpu0's cache at ``level`` of ``kind`` (Data/Unified), from sysfs."""
    size = _cache_field(level, kind, "size")
    if not size:
        return default
    try:
        return int(size.rstrip("KM")) * {"K": 1024, "M": 1024**2}.get(size[-1], 1)
    except ValueError:
        return default


def l1d_ways(default: int = 8) -> int:
    """The associativity of cpu0's L1 data cache, from sysfs."""
    ways = _cache_field(1, "Data", "ways_of_associativity")
    return int(ways) if ways and ways.isdigit() and int(ways) > 0 else default


# The file written by ``python -m prism.calibrate``; PRISM_HOST_CONFIG names another ('' for none).
CONFIG_NAME = "host.json"
CONFIG_VERSION = 1


def config_path() -> Path | None:
    """Where the host's calibration is read from and written to, or None when it is switched off."""
    if "PRISM_HOST_CONFIG" in os.environ:
        return Path(os.environ["PRISM_HOST_CONFIG"]) if os.environ["PRISM_HOST_CONFIG"] else None
    base = Path(os.environ.get("XDG_CONFIG_HOME") or Path.home() / ".config")
    return base / "prism" / CONFIG_NAME


@dataclass(frozen=True)
class Calibration:
    """What ``python -m prism.calibrate`` measured on this machine, all cores together."""

    machine: str
    cores: int
    gflops: float  # f32 FMA rate a tuned GEMM reaches
    dram_gbps: float  # streaming copy, bytes read and written, far beyond the caches
    cache_gbps: float  # the same within half the L3

    @staticmethod
    def read(path: Path, machine: Machine) -> Calibration | None:
        """The calibration at ``path`` (None without a file); TargetError if it is none, or not ``machine``'s."""
        try:
            data = json.loads(path.read_text())
        except FileNotFoundError:
            return None
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as error:
            raise TargetError(f"cannot read the host calibration: {error}", location=str(path)) from None
        fields = {"machine": str, "cores": int, "gflops": float, "dram_gbps": float, "cache_gbps": float}
        if not isinstance(data, dict) or data.get("version") != CONFIG_VERSION or any(
                not isinstance(data.get(key), (int, float) if kind is float else kind) for key, kind in fields.items()):
            raise TargetError(f"not a version-{CONFIG_VERSION} host calibration; rerun "
                              "'python -m prism.calibrate'", location=str(path))
        found = Calibration(**{key: kind(data[key]) for key, kind in fields.items()})
        if min(found.gflops, found.dram_gbps, found.cache_gbps) <= 0 or found.cores < 1:
            raise TargetError("the host calibration holds a rate that is not positive", location=str(path))
        if (found.machine, found.cores) != (machine.machine, machine.cores):
            raise TargetError(f"the host calibration was measured on '{found.machine}' with {found.cores} cores, "
                              f"not on this '{machine.machine}' with {machine.cores}; "
                              "rerun 'python -m prism.calibrate'",
                              location=str(path))
        return found

    def write(self, path: Path) -> None:
        """Save as JSON (deterministic: sorted keys)."""
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps({"version": CONFIG_VERSION, **dataclasses.asdict(self)}, indent=2,
                                   sort_keys=True) + "\n")


@functools.cache
def _cpuinfo() -> str:
    """/proc/cpuinfo, read once ('' where there is none)."""
    try:
        return Path("/proc/cpuinfo").read_text()
    except OSError:
        return ""


def _cpu_field(name: str) -> str | None:
    """Field ``name`` of the first processor in /proc/cpuinfo (None without one)."""
    match = re.search(rf"^{re.escape(name)}\s*:\s*(.*)$", _cpuinfo(), re.MULTILINE)
    return match.group(1).strip() if match else None


def machine_name() -> str:
    """The CPU's model name, from /proc/cpuinfo."""
    return _cpu_field("model name") or "unknown"


def available_cores() -> int:
    """The cores this process may run on."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)


DESCRIPTION_VARIABLE = "PRISM_HOST_DESCRIPTION"
DESCRIPTION_VERSION = 1


@dataclass(frozen=True)
class Machine:
    """What the host target reads off a machine: its name, cores, vector and FMA widths, and cache sizes."""

    machine: str
    cores: int
    vector_bits: int  # 128 (SSE), 256 (AVX2) or 512 (AVX-512F)
    fma_bits: int  # the width of one FMA unit (two per core): a wider vector FMA takes several
    l1d_bytes: int
    l1d_ways: int  # the L1 data cache's associativity
    l2_bytes: int
    l3_bytes: int

    @staticmethod
    def here() -> Machine:
        """This machine, from /proc/cpuinfo, sysfs and the process's CPU affinity."""
        flags = _cpu_flags()
        vector_bits = 512 if "avx512f" in flags else 256 if "avx2" in flags else 128
        # Zen 4 (AMD family 25) runs a 512-bit FMA on both of its 256-bit units at once; Zen 5 (26) and the
        # AVX-512 cores of Intel have 512-bit units.
        fma_bits = 256 if vector_bits == 512 and _cpu_field("vendor_id") == "AuthenticAMD" \
            and _cpu_field("cpu family") == "25" else vector_bits
        return Machine(machine=machine_name(), cores=available_cores(), vector_bits=vector_bits, fma_bits=fma_bits,
                       l1d_bytes=cache_size(1, "Data", 32 * 1024), l1d_ways=l1d_ways(),
                       l2_bytes=cache_size(2, "Unified", 1024 * 1024),
                       l3_bytes=cache_size(3, "Unified", 32 * 1024**2))

    @staticmethod
    def read(path: Path) -> Machine:
        """A machine described in JSON at ``path`` (see :func:`described_machine`); TargetError if it is not one."""
        try:
            data = json.loads(path.read_text())
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as error:
            raise TargetError(f"cannot read the host description: {error}", location=str(path)) from None
        kinds = {field.name: str if field.type == "str" else int for field in dataclasses.fields(Machine)}
        fields = list(kinds)
        if not isinstance(data, dict) or data.get("version") != DESCRIPTION_VERSION \
                or set(data) != {*fields, "version"} or any(type(data[name]) is not kinds[name] for name in fields):
            integers = ", ".join(repr(name) for name in fields if kinds[name] is int)
            raise TargetError(f"not a version-{DESCRIPTION_VERSION} host description: a JSON object of exactly "
                              f"'version' ({DESCRIPTION_VERSION}), 'machine' (a string) and the integers {integers}",
                              location=str(path))
        found = Machine(**{name: data[name] for name in fields})
        for name in ("vector_bits", "fma_bits"):
            if getattr(found, name) not in (128, 256, 512):
                raise TargetError(f"the host description's {name} is {getattr(found, name)}, not 128, 256 or 512",
                                  location=str(path))
        if found.fma_bits > found.vector_bits:
            raise TargetError(f"the host description's fma_bits ({found.fma_bits}) is wider than its vectors "
                              f"({found.vector_bits})", location=str(path))
        if min(found.cores, found.l1d_bytes, found.l1d_ways, found.l2_bytes, found.l3_bytes) < 1:
            raise TargetError("the host description holds a size that is not positive", location=str(path))
        return found


def described_machine() -> Machine:
    """The machine to compile for: the one named by ``PRISM_HOST_DESCRIPTION`` (a JSON file holding
    ``version`` (1) and every field of :class:`Machine`), else this one. A description compiles for another
    machine, or pins what the output depends on whatever machine runs the compiler (the FileCheck tests do)."""
    path = os.environ.get(DESCRIPTION_VARIABLE)
    return Machine.read(Path(path)) if path else Machine.here()


@functools.cache
def host_target() -> HostTarget:
    """Describe the machine to compile for: this one, unless PRISM_HOST_DESCRIPTION names another
    (:func:`described_machine`).

    Rates come from the calibration file when there is one (see
    :func:`config_path`), else from configured defaults; the environment
    variables PRISM_HOST_GFLOPS, PRISM_HOST_GBPS and PRISM_HOST_FMA_BITS
    override both. Nothing is timed here, so outputs stay a function of the
    input and the configuration.
    """
    machine = described_machine()
    vector_bits, cores = machine.vector_bits, machine.cores
    path = config_path()
    calibration = Calibration.read(path, machine) if path else None
    # Two FMA pipes per core at ~3.6 GHz (on a Zen 4, whose 256-bit pipes take a 512-bit FMA together, 230
    # GFLOP/s f32 measured on 2 cores). Override where it differs.
    fma_pipes, fma_bits = 2, int(os.environ.get("PRISM_HOST_FMA_BITS", machine.fma_bits))
    default_gflops = calibration.gflops if calibration else cores * fma_pipes * 2 * (fma_bits // 32) * 3.6
    gflops = float(os.environ.get("PRISM_HOST_GFLOPS", default_gflops))
    gbps = float(os.environ.get("PRISM_HOST_GBPS", calibration.dram_gbps if calibration else 20.0))
    # 32 bytes per cycle per core from L3 at ~3.6 GHz, a configured figure where nothing was measured.
    cache_gbps = calibration.cache_gbps if calibration else cores * 32 * 3.6
    return HostTarget(
        name="host", cores=cores,
        l1d_bytes=machine.l1d_bytes, l1d_ways=machine.l1d_ways, l2_bytes=machine.l2_bytes,
        l3_bytes=machine.l3_bytes,
        vector_bits=vector_bits, vector_registers=32 if vector_bits == 512 else 16,
        fma_pipes=fma_pipes, fma_bits=fma_bits,
        # 16-bit inputs are widened to f32 and multiplied at its rate.
        flops={"f32": gflops * 1e9, "f16": gflops * 1e9, "bf16": gflops * 1e9, "f64": gflops * 0.5e9},
        dram_bytes_per_s=gbps * 1e9 * BANDWIDTH_MARGIN,
        cache_bytes_per_s=cache_gbps * 1e9 * BANDWIDTH_MARGIN,
    )
