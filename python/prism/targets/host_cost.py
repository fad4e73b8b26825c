"""The host's cost model of a GEMM family (see :mod:`prism.targets.host`'s docstring for what it follows).

The cost model follows the code generator that will run the contraction
(see :mod:`prism.codegen.cpu`), asking :mod:`prism.kernels.host_gemm` what
the kernel does. An f32 contraction in the row-major layout runs the direct
kernel: each task copies its slice of B into panels when more than one row
panel reuses them (else it reads B in place, or streams it along whole rows
for a one-row block), so that copy is part of the task's work, and B's reads
(and C's writes) pay for each jump between contiguous runs. The memory time is that of the
worker with the most columns of B, at its share of the bandwidth (cores left
without a block leave theirs unused); one row of C splits K over every core.
Other contractions run between a packing phase (both inputs read and written
once) and an unpacking one (C read and written once), which do not overlap
the kernel, so their memory time adds to its roofline.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from prism.kernels import host_gemm
from prism.search.cost import Knob, KnobValues, ceil_div, problem_sizes, roofline, traffic_bytes
from prism.search.space import Contraction
from prism.targets.host_space import direct_kernel

if TYPE_CHECKING:
    from prism.targets.host import HostTarget

# A product of at most host_gemm.STREAMING_ROWS rows whose B comes from the L3: its cores finish far apart
# when each runs one or two tasks (8 x 2048 x 512 on two cores: one task each ran 1.2-2.8x slower than four
# each, two each 1.0-1.35x, differently from process to process), and the tasks that a core claims as it
# frees even that out. Why one task per core runs slow there is not known (not huge pages, alignment or
# another thread; on one core every width ran alike); the busiest core's time, priced at the mean over
# processes, is an even share times 1 + CACHED_FEW_ROWS_SKEW / rounds.
# Within the cache, a jump between two rows of B read in place costs nothing: narrower tasks were as fast
# or faster there (benchmarks/RESULTS.md, "Eight-row products in the L3: tasks per core").
CACHED_FEW_ROWS_SKEW = 0.5

# The direct kernel reads a micro-tile's RM rows of A in place, one run of TK elements each per K slice. Where the
# task's rows of A (TM x K) outgrow half of L2, each slice of them comes from beyond it, and where that slice
# (TM x TK) also outgrows A_WARM_L1 times L1, it does not stay close across the task's column panels: each run
# starts cold, before the prefetchers follow it, at so many cycles, fitted to 2048^3 with 6 x 64 blocks (TK = 128
# ran 1.1x slower than TK = 512 at TM = 192 and 1.2x at TM = 512; alike at TM = 96, at TM = 128 for 128 x 4096 x
# 4096, and at TM = 512 for 512^3, whose rows of A stay in L2: benchmarks/RESULTS.md, "Deep K slices for the
# square GEMMs").
A_RUN_START_CYCLES, A_WARM_L1 = 48, 1.5
# Where every input stays in the cache and the product has more than WARM_START_ROWS rows, a run of A that starts
# warm (its rows within L2) still costs so many cycles per row, micro-tile and slice beyond the first: 512^3 and
# 1024^3 ran 5-7% and 2-3% faster per halving of their slices than the slice's loads and stores account for, and
# so did 48 to 200 rows; 32 rows ran TK = 256 5% slower than 128 (benchmarks/RESULTS.md, "Warm slices of the
# square GEMMs").
A_WARM_RUN_START_CYCLES, WARM_START_ROWS = 16, 32

COST_TEXT = ("[transform path only: 2*(bytesA + bytesB + bytesC) / bandwidth] + "
             "max(rounds * (tiles(M, TM, RM)*tiles(N, TN, RN)*ceil(K/TK) * (kernel_cycles(RM, RN, TK) "
             f"[+ RM*{A_RUN_START_CYCLES} where B panels are copied, TM*TK bytes of A exceed {A_WARM_L1} L1 and TM*K "
             f"bytes half of L2; else + RM*{A_WARM_RUN_START_CYCLES} per slice beyond the first where every input "
             f"stays in the cache and M exceeds {WARM_START_ROWS} rows: direct kernel]) "
             "+ [B panels: ceil(K/TK)*TK*TN/lanes vector copies if ceil(TM/RM) > 1, each a load and a store, or "
             "beyond the L2 its bytes*(1 + 128/(TN bytes)) at a core's share of the bandwidth; panels kept across "
             "row blocks are copied by a column's first task and, beyond half the L2, read back by the others "
             "at a core's share of the L3's bandwidth]) / clock + task), "
             "(bytesA*ceil(N/TN) + bytesB*ceil(M/TM)*(1 + 128/run) + bytesC) / bandwidth * cores/busy); "
             "rounds = ceil(B*ceil(M/TM)*ceil(N/TN) / cores); busy = min(B*ceil(M/TM)*ceil(N/TN), cores), "
             "or cores for one row of C (K split); run = bytes of B read contiguously (TN wide; RN wide in place "
             f"unless TK <= {host_gemm.PREFETCH_STREAMS} and TM covers M <= {host_gemm.STREAMING_ROWS}; N at decode), "
             "and C written RN wide pays 128/run too (direct kernel); the copy and the memory term x "
             "pipelined_factor(TK) where the copy of B is pipelined (calibrated); the sum of the two terms, not "
             "their max, where B comes from DRAM and "
             f"1 < M <= {host_gemm.STREAMING_ROWS} (direct kernel); "
             f"where B comes from the L3 and 1 < M <= {host_gemm.STREAMING_ROWS}, "
             f"x (1 + {CACHED_FEW_ROWS_SKEW}/rounds), and B read in place within the cores' L2s together pays "
             "no jumps (direct kernel); "
             "+ 2*bytesC*(1 + 128/(TN bytes)) / DRAM bandwidth where C's init is read (not a fill of zero) and C "
             "does not stay in the L3 (direct kernel); "
             "tiles(M, TM, RM) = micro-tile rows per block, averaged over the blocks (the last one ragged)")

# An FMA's latency in cycles on current x86 cores: a micro-kernel needs
# latency x issue rate independent accumulators to keep the FMA units busy.
# Two loads (or broadcasts) per cycle.
FMA_LATENCY, LOAD_PORTS = 4, 2
# With just latency x rate accumulators, every load or loop instruction that
# slips leaves an FMA unit idle: a step then takes this much longer than the
# latency, so 6-row register blocks (12 accumulators) beat 4-row ones (8)
# (benchmarks/RESULTS.md, "Host code against every baseline", fourth pass:
# the register block).
LATENCY_SLACK_CYCLES = 0.4
# Cycles to load and store a micro-tile's accumulators and restart the K loop,
# paid once per TK slice of every micro-tile, beyond the loads and stores.
SLICE_OVERHEAD_CYCLES = 20
# The direct kernel's rows of A alias in one L1 set when K's stride is a whole number of ways (K a multiple of
# 1024 f32 on a 48 KiB 12-way L1): with more rows than the set's ways less SET_RESERVED_WAYS (B's panel line
# and C's), a micro-tile then runs SET_CONFLICT_FACTOR times slower (benchmarks/RESULTS.md, "Host code
# against every baseline", sixth pass: L1 set aliasing).
SET_RESERVED_WAYS, SET_CONFLICT_FACTOR = 2, 1.5
# Handing one parallel block to a thread of the pool (a claimed chunk).
BLOCK_OVERHEAD_SECONDS = 1e-6
# Copying one vector of B into a panel: a load and a store, at least; the copy runs before the task's
# micro-tiles, so B's bytes come in at the core's share of the bandwidth without overlapping them
# (_panel_copy_cycles).
PANEL_COPY_CYCLES = 1
# Packing reads each operand as runs of contiguous bytes, jumping between
# runs; every jump costs as much as streaming this many more bytes (a page
# walk and a DRAM row opening), fitted to B packed into 16-, 32- and 64-wide
# panels (benchmarks/RESULTS.md, "Measurements behind rules in the code":
# packing per strided run).
STRIDED_RUN_BYTES = 128


def gemm_seconds(target: HostTarget, op: Contraction, values: KnobValues, assumed: int = 1024) -> np.ndarray:
    """Predicted seconds of ``op`` scheduled by ``values`` (see the module docstring)."""
    s = problem_sizes(op, assumed)
    rm, rn = values["RM"], values["RN"]
    # A tile larger than its (padded) extent covers just that extent.
    tm = np.minimum(values["TM"], ceil_div(s["m"], rm) * rm)
    tn = np.minimum(values["TN"], ceil_div(s["n"], rn) * rn)
    tk = np.minimum(values["TK"], s["k"])
    lanes = target.lanes(op)
    # Workers take contiguous shares of the blocks (row block by row block): unless one share holds a whole
    # row of column blocks, the first worker's blocks are all full-width, and it finishes last
    # (benchmarks/RESULTS.md, "Measurements behind rules in the code": the busiest worker's columns of B).
    rounds = _rounds(target, tm, tn, s)  # each worker's share of the blocks
    columns = np.where(rounds < ceil_div(s["n"], tn), ceil_div(tn, rn), _inner_tiles_per_block(s["n"], tn, rn))
    # Its row blocks are whole too: the ragged last one falls to the last worker (with M = 256 and TM = 192 on
    # two cores, one worker takes 192 rows while the other takes 64).
    micro_tiles = ceil_div(tm, rm) * columns
    run, direct = None, direct_kernel(op)
    cached = _in_cache(target, op, s)
    few_rows = op.extent("m") is not None and 1 < op.extent("m") <= host_gemm.STREAMING_ROWS
    kernel = "direct" if direct else "packed"
    block_cycles = micro_tiles * ceil_div(s["k"], tk) * micro_kernel_cycles(target, rm, rn, tk, lanes, kernel)
    if direct:
        # The kernel reads A in place, RM rows K apart: where that stride is a whole number of L1 ways, every
        # row's line falls in one set, and more rows than the set holds (beside B's and C's) evict each other.
        way_bytes = target.l1d_bytes // target.l1d_ways
        aliased = (s["k"] * op.elem_bytes[0] % way_bytes == 0) & (rm > target.l1d_ways - SET_RESERVED_WAYS)
        block_cycles = np.where(aliased, block_cycles * SET_CONFLICT_FACTOR, block_cycles)
        # B panels are copied per task (one vector load and store each) when several row panels of several
        # rows read them; the copy reads rows of B TN wide, and so does a one-row block (it streams whole
        # rows of the task's columns), and so does a task that streams B in place (host_gemm.streams_in_place:
        # a few rows in one row panel, shallow slices); other tasks of one row panel read B RN wide.
        packs = host_gemm.copies_panels(tm, rm, s["m"])
        copies = np.where(packs, ceil_div(s["k"], tk) * tk * ceil_div(tn, lanes), 0)
        # Kept across row blocks, a column block's panels are copied once rather than once per block.
        reused = host_gemm.reuses_panels(packs, tm, tn, s["m"], op.extent("k"), op.elem_bytes[1])
        copies = np.where(reused, copies / ceil_div(s["m"], tm), copies)
        block_cycles = block_cycles + _kept_panel_cycles(target, op, s, tm, tn, tk, reused)
        cold = packs & (tm * tk * op.elem_bytes[0] > A_WARM_L1 * target.l1d_bytes) \
            & (tm * s["k"] * op.elem_bytes[0] > target.l2_bytes / 2)
        block_cycles = block_cycles + np.where(cold, micro_tiles * ceil_div(s["k"], tk) * rm * A_RUN_START_CYCLES, 0)
        if cached and op.extent("m") is not None and op.extent("m") > WARM_START_ROWS:
            block_cycles = block_cycles + np.where(
                packs & ~cold, micro_tiles * (ceil_div(s["k"], tk) - 1) * rm * A_WARM_RUN_START_CYCLES, 0)
        # A pipelined copy streams B slower at some slice depths than at others, by as much as calibration
        # measured (on 16 rows, where B's stream is most of the time): the factor slows the copy and B's
        # stream, not the micro-tiles, so a product of many rows hides most of it (benchmarks/RESULTS.md, "The
        # pipelined copy's depth slows B's stream").
        b_bytes = s["batch"] * s["k"] * s["n"] * op.elem_bytes[1]
        pipelined = host_gemm.pipelines_copy(packs, reused, "batch" in op.roles, b_bytes, target.copy_in_phase_bytes,
                                             op.extent("k"))
        depth_factor = np.where(pipelined, target.pipelined_factor(tk), 1.0)
        block_cycles = block_cycles + copies * _panel_copy_cycles(target, op, s, tn) * depth_factor
        in_place = host_gemm.streams_in_place(packs, rm, tm, tk, op.extent("m"))
        streamed = packs | (rm == 1) | in_place
        run = np.minimum(np.where(streamed, tn, rn), s["n"]) * op.elem_bytes[1]
        # Within the cores' L2s together, a jump between two rows of B read in place costs nothing; beyond them
        # B streams from the L3, and a wider task's longer runs read it faster (benchmarks/RESULTS.md, "Eight-row
        # products in the L3: tasks per core" and "Eight-row products beyond the L2s").
        within_l2s = b_bytes <= target.cores * target.l2_bytes
        run = np.where(in_place & cached & within_l2s, s["n"] * op.elem_bytes[1], run)
    # The worker with the most columns of B to read finishes last, streaming at its share of the bandwidth
    # (idle cores leave theirs unused); a single row of C instead splits K over every core, each streaming
    # whole rows of B.
    imbalance = _memory_imbalance(target, tm, tn, s)
    if direct:
        split = host_gemm.splits_k(rm, op.extent("m"), op.extent("n"), "batch" in op.roles, target.cores)
        run = np.where(split, s["n"] * op.elem_bytes[1], run)
        imbalance = np.where(split, 1.0, imbalance)
    compute = rounds * (block_cycles * target.cycle_seconds(op) + BLOCK_OVERHEAD_SECONDS)
    memory = _kernel_memory_seconds(target, op, tm, tn, s, run=run, c_run=np.minimum(rn, s["n"]) * op.acc_bytes
                                    if direct else None) * imbalance
    if direct and target.stream_bytes_per_s and not cached:
        # One-row blocks and a split K stream B from DRAM at the rate measured for the kernel at decode.
        streams = split | (rm == 1)
        memory = np.where(streams, memory * target.dram_bytes_per_s / target.stream_bytes_per_s, memory)
    if direct:
        memory = memory * depth_factor
    phases = 0 if direct else _pack_seconds(target, op, values, s)
    seconds = phases + roofline(compute, memory)
    if direct and cached and few_rows:
        seconds = np.where(split, seconds, seconds * (1 + CACHED_FEW_ROWS_SKEW / rounds))
    if direct and not cached:
        # A product of a few rows does too little work per byte of B to hide memory behind it: its loads wait
        # on DRAM, so compute and memory add rather than overlap (benchmarks/RESULTS.md, "Eight-row products
        # from DRAM": within 10% at 8 rows). Decode has a measured rate of its own.
        seconds = np.where(few_rows & ~split, phases + compute + memory, seconds)
    if direct and op.reads_init:
        seconds = seconds + _init_from_memory_seconds(target, op, tn, s)
    return seconds


def gemm_lower_bound(target: HostTarget, op: Contraction, values: KnobValues, assumed: int = 1024
                     ) -> np.ndarray:
    """Reads TM and TN: exact traffic at the fastest rate (DRAM's, or the direct kernel's measured streaming rate
    where it is higher), unpadded work at the FMA peak (or the fastest measured micro-kernel's rate, where one
    beats it), packing phases without their jumps."""
    s = problem_sizes(op, assumed)
    # Unpadded extents: the cost's tiles are at least these.
    tm, tn = np.minimum(values["TM"], s["m"]), np.minimum(values["TN"], s["n"])
    # A block's rows and columns averaged over the blocks, as the cost counts them (the last ones ragged).
    rows, columns = s["m"] / ceil_div(s["m"], tm), s["n"] / ceil_div(s["n"], tn)
    block_cycles = rows * columns * s["k"] / target.lanes(op) * target.vector_fma_cycles(target.lanes(op))
    compute = _rounds(target, tm, tn, s) * (block_cycles * target.cycle_seconds(op) + BLOCK_OVERHEAD_SECONDS)
    phases = 0 if direct_kernel(op) else _pack_seconds(target, op, values, s, strided=False)
    memory = _kernel_memory_seconds(target, op, tm, tn, s)
    if direct_kernel(op) and target.stream_bytes_per_s and _bandwidth(target, op, s) == target.dram_bytes_per_s:
        memory = memory * target.dram_bytes_per_s / max(target.dram_bytes_per_s, target.stream_bytes_per_s)
    return phases + roofline(compute, memory)


def micro_kernel_cycles(target: HostTarget, rm: Knob, rn: Knob, tk: Knob, lanes: int,
                        kernel: str | None = None) -> Knob:
    """Cycles of one RM x RN micro-tile over one TK slice of K.

    A step of K takes what the machine's calibration measured for that
    micro-tile of ``kernel`` (``direct`` or ``packed``:
    :meth:`HostTarget.measured_step_cycles`). Where nothing was measured:
    each k step issues RM*RN/lanes FMAs and RM broadcasts plus RN/lanes
    loads; with no more accumulators than FMA_LATENCY times the FMA
    issue rate, the latency (and its slack), not the units, sets the pace.
    """
    accumulators = rm * rn / lanes
    per_step = np.maximum(np.maximum(accumulators / target.vector_fmas_per_cycle, (rm + rn / lanes) / LOAD_PORTS),
                          FMA_LATENCY + LATENCY_SLACK_CYCLES)
    if kernel is not None:
        measured = target.measured_step_cycles(kernel, rm, rn, lanes)
        per_step = np.where(np.isnan(measured), per_step, measured)
    return tk * per_step + 2 * accumulators / LOAD_PORTS + SLICE_OVERHEAD_CYCLES


def _panel_copy_cycles(target: HostTarget, op: Contraction, s: dict[str, int], tn: Knob) -> Knob:
    """Cycles to copy one vector of B into a panel: a load and a store where the core's share of B (the columns of
    all its tasks, or one task's where wider) and a task's panels fit the core's L2 together (B stays there from call to
    call: a narrow task's B alone fitting it does not keep the rest there); else the vector's bytes at one core's
    share of the bandwidth B is read at, as the copy runs before the micro-tiles and does not overlap them
    (benchmarks/RESULTS.md, "The host calibrated": panels copied against B read in place at 16 rows), and the copy
    reads B's rows TN wide, paying STRIDED_RUN_BYTES per jump between them (benchmarks/RESULTS.md, "16 rows copied
    from DRAM")."""
    vector_bytes = target.lanes(op) * op.elem_bytes[1]
    task = np.minimum(tn, s["n"])  # a task's columns of B
    arrival = vector_bytes * (1 + STRIDED_RUN_BYTES / (task * op.elem_bytes[1])) \
        / (_bandwidth(target, op, s) / target.cores) / target.cycle_seconds(op)
    share = np.maximum(task, s["n"] / target.cores)
    in_l2 = s["k"] * (share + task) * op.elem_bytes[1] < target.l2_bytes
    return np.where(in_l2, PANEL_COPY_CYCLES, np.maximum(PANEL_COPY_CYCLES, arrival))


def _kept_panel_cycles(target: HostTarget, op: Contraction, s: dict[str, int], tm: Knob, tn: Knob, tk: Knob,
                       reused: Knob) -> Knob:
    """Cycles a task spends reading back the column block's kept panels, on average over a column's tasks.

    Every task after a column block's first reads the panels its first task copied and kept: from the L2 where
    they fit it twice over, else from the L3, a vector at a time at one core's share of the L3's bandwidth,
    before its micro-tiles use it (128 x 11008 x 4096 with TM = 64, TN = 256, panels of 4 MiB kept: 26.7 ms
    where TM = 128, which keeps nothing, ran 24.5-24.9 ms; benchmarks/RESULTS.md, "Kept panels read back from
    the L3")."""
    panel_bytes = ceil_div(s["k"], tk) * tk * np.minimum(tn, s["n"]) * op.elem_bytes[1]
    in_l2 = 2 * panel_bytes < target.l2_bytes
    later = 1 - 1 / ceil_div(s["m"], tm)  # the share of a column block's tasks that read the panels back
    seconds = panel_bytes / (target.cache_bytes_per_s / target.cores)
    return np.where(np.logical_and(reused, np.logical_not(in_l2)), later * seconds / target.cycle_seconds(op), 0.0)


def _rounds(target: HostTarget, tm: Knob, tn: Knob, s: dict[str, int]) -> Knob:
    """Rounds of parallel TM x TN blocks over the cores."""
    blocks = s["batch"] * ceil_div(s["m"], tm) * ceil_div(s["n"], tn)
    return ceil_div(blocks, target.cores)


def _memory_imbalance(target: HostTarget, tm: Knob, tn: Knob, s: dict[str, int]) -> Knob:
    """The busiest worker's columns of B over an even share of them (1 when balanced, the cores when one
    block is all there is).

    Workers take contiguous shares of the blocks, row block by row block; the first takes whole rows of
    blocks and then full-width blocks, the most columns of any. With N = 5632 and TN = 4096, two blocks on
    two cores, it reads 4096 of the 5632 columns, 1.45 times an even share, where TN = 1024 leaves it 1.09
    (benchmarks/RESULTS.md, "Host code against every baseline", seventh pass: the code change; and
    "Measurements behind rules in the code": the busiest worker's columns of B).
    """
    row_blocks, nt = s["batch"] * ceil_div(s["m"], tm), ceil_div(s["n"], tn)
    share = _rounds(target, tm, tn, s)  # the first worker's blocks
    busiest = share // nt * s["n"] + share % nt * np.minimum(tn, s["n"])
    return np.maximum(busiest * target.cores / (row_blocks * s["n"]), 1.0)


def streams_from_memory(target: HostTarget, op: Contraction, assumed: int = 1024) -> bool:
    """Whether the cost reads ``op``'s inputs at DRAM's bandwidth (:func:`_bandwidth`)."""
    return not _in_cache(target, op, problem_sizes(op, assumed))


def _in_cache(target: HostTarget, op: Contraction, s: dict[str, int]) -> bool:
    """Whether the inputs and their packed copies fit half of the L3 (the rest is shared)."""
    working_set = 2 * s["batch"] * s["k"] * (s["m"] * op.elem_bytes[0] + s["n"] * op.elem_bytes[1])
    return bool(host_gemm.stays_in_cache(working_set, target.l3_bytes))


def _bandwidth(target: HostTarget, op: Contraction, s: dict[str, int]) -> float:
    """L3's bandwidth when the inputs and their packed copies fit half of it (:func:`_in_cache`), else DRAM's."""
    return target.cache_bytes_per_s if _in_cache(target, op, s) else target.dram_bytes_per_s


def _pack_seconds(target: HostTarget, op: Contraction, values: KnobValues, s: dict[str, int],
                  strided: bool = True) -> Knob:
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
    return (inputs + moved(c_bytes, run_c)) / _bandwidth(target, op, s)


def _kernel_memory_seconds(target: HostTarget, op: Contraction, tm: Knob, tn: Knob, s: dict[str, int],
                           run: Knob | None = None, c_run: Knob | None = None) -> Knob:
    """The kernel's traffic: A once per N tile, B once per M tile, C once.

    With ``run`` (the direct kernel), B is read from where it lies, in
    contiguous runs of that many bytes (a task's row of B), each jump
    costing STRIDED_RUN_BYTES more; with ``c_run``, C is written in runs of
    that many bytes (a micro-tile's row), each jump costing as much.
    """
    moved = traffic_bytes(op, tm, tn, s)
    if run is not None:
        b_bytes = s["batch"] * s["k"] * s["n"] * op.elem_bytes[1] * ceil_div(s["m"], tm)
        moved = moved + b_bytes * STRIDED_RUN_BYTES / run
    if c_run is not None:
        moved = moved + s["batch"] * s["m"] * s["n"] * op.acc_bytes * STRIDED_RUN_BYTES / c_run
    return moved / _bandwidth(target, op, s)


def _init_from_memory_seconds(target: HostTarget, op: Contraction, tn: Knob, s: dict[str, int]) -> Knob:
    """What reading C's init from memory adds to the direct kernel, where C does not stay in the L3.

    Each micro-tile's first K slice reads its rows of the init, and down a
    column strip consecutive micro-tiles read rows a row pitch apart: the
    time of C read and written back at DRAM's bandwidth adds to the FMAs'
    rather than hiding under them, and tasks of narrow columns run slower
    (4096 x 16 x 4096 into a 64 MiB init: TN = 256 1.0-1.25x slower than
    1024). Each task's rows of C are runs TN wide, each jump between them
    costing STRIDED_RUN_BYTES more. A fill of zero is not read
    (benchmarks/RESULTS.md, "C's init read from memory").
    """
    c_bytes = s["batch"] * s["m"] * s["n"] * op.acc_bytes
    if host_gemm.stays_in_cache(c_bytes, target.l3_bytes):
        return 0.0
    run = np.minimum(tn, s["n"]) * op.acc_bytes
    return 2 * c_bytes * (1 + STRIDED_RUN_BYTES / run) / target.dram_bytes_per_s


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
