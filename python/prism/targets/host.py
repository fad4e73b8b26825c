"""The CPU Prism runs on: the host target and its cost model.

The target's other parts have modules of their own: the machine read off
/proc, sysfs or a JSON description (:mod:`.host_machine`), the calibration
file (:mod:`.host_calibration`), the GEMM space (:mod:`.host_space`), the
attention family (:mod:`.host_attention`) and the IREE export
(:mod:`.host_iree`); the kernel's decisions are :mod:`prism.kernels.host_gemm`'s.
Its FMA rate and bandwidth come from the calibration file, else from
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

import functools
import os
from dataclasses import dataclass

import numpy as np

from prism.kernels import host_gemm
from prism.search.attention import Attention, attention_lanes
from prism.search.cost import Knob, KnobValues, ceil_div, problem_sizes, roofline, traffic_bytes
from prism.search.space import Contraction, Space
from prism.targets import host_iree, host_space
from prism.targets.base import BANDWIDTH_MARGIN
from prism.targets.host_attention import COST_TEXT as ATTENTION_COST_TEXT
from prism.targets.host_attention import attention_lower_bound, attention_seconds, attention_space
from prism.targets.host_calibration import Calibration, config_path
from prism.targets.host_machine import described_machine

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
        return attention_space(op, self) if isinstance(op, Attention) else host_space.gemm_space(op, self)

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
        run, direct = None, host_space.direct_kernel(op)
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
        phases = 0 if host_space.direct_kernel(op) else self._pack_seconds(op, values, s, strided=False)
        return phases + roofline(compute, self._kernel_memory_seconds(op, tm, tn, s))

    iree_backend = "llvm-cpu"
    iree_flags = ("--iree-llvmcpu-target-cpu=host",)
    iree_device = None  # the flags name this machine

    def iree_config(self, op: Contraction, choice: dict[str, int]) -> tuple[str, list[str]]:
        """IREE's CPU double-tiling pipeline, as near Prism's choice as it runs well (:mod:`.host_iree`)."""
        return host_iree.iree_config(self, op, choice)

    def iree_data_tiling(self, op: Contraction, choice: dict[str, int]
                         ) -> tuple[tuple[int, int, int], str, list[str]] | None:
        """Where IREE runs the product on packed operands (:mod:`.host_iree`)."""
        return host_iree.iree_data_tiling(self, op, choice)

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
