"""Roofline cost of one schedule of a contraction family.

A kernel's cost is the larger of compute time and memory time (plus a tenth
of the smaller: overlap is imperfect), where
- compute counts the padded work of every tile (remainders cost a full tile)
  at the unit's rate, in waves over the GPU's SMs or the host's cores;
- traffic counts each input re-read once per tile of the other output
  dimension (A once per N tile, B once per M tile) plus the output once.
On the host, the kernel runs between a packing phase (both inputs read and
written once) and an unpacking one (C read and written once), which do not
overlap it: their memory time adds to the kernel's.

The same formula is written as text into the family's ``cost`` attribute so
that the IR carries its own contract.

Every function is written once for both scalars and numpy arrays: a choice
maps each symbol to an int or to an integer array (one entry per point), and
the cost comes back with the same shape. Selection costs a whole candidate
set in one call that way, in microseconds per family.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from prism.space import Contraction
from prism.targets import GpuTarget, HostTarget

Knob = int | np.ndarray
Choice = Mapping[str, Knob]

GPU_COST_TEXT = ("max(waves * blocks_per_sm * 2*BM*BN*ceil(K/BK)*BK / (rate/SMs), "
                 "(bytesA*ceil(N/BN) + bytesB*ceil(M/BM) + bytesC) / bandwidth); "
                 "waves = ceil(B*ceil(M/BM)*ceil(N/BN) / (SMs*blocks_per_sm))")
CPU_COST_TEXT = ("2*(bytesA + bytesB + bytesC) / bandwidth + "
                 "max(rounds * (ceil(TM/RM)*ceil(TN/RN)*ceil(K/TK) * kernel_cycles(RM, RN, TK) / clock + task), "
                 "(bytesA*ceil(N/TN) + bytesB*ceil(M/TM) + bytesC) / bandwidth); "
                 "rounds = ceil(B*ceil(M/TM)*ceil(N/TN) / cores)")

# Launch and tail overhead of one kernel, so that tiny problems prefer fewer blocks.
GPU_LAUNCH_SECONDS = 3e-6
# Compute and traffic never overlap perfectly. Charging a tenth of the smaller
# term also keeps the ranking informative when one term dominates every point:
# with a pure max, all memory-bound schedules tie and the tie-break, not the
# model, would pick among them.
OVERLAP_PENALTY = 0.1


def _roofline(compute: Knob, memory: Knob) -> np.ndarray:
    return np.maximum(compute, memory) + OVERLAP_PENALTY * np.minimum(compute, memory)


def _ceil_div(a: Knob, b: Knob) -> Knob:
    """ceil(a / b) for non-negative integers, elementwise on arrays."""
    return -(-a // b)


def _extent(op: Contraction, role: str, assumed: int) -> int:
    value = op.extent(role) if role in op.roles else 1
    return assumed if value is None else value


def _traffic_bytes(op: Contraction, tile_m: Knob, tile_n: Knob, sizes: dict[str, int]) -> Knob:
    b, m, n, k = sizes["batch"], sizes["m"], sizes["n"], sizes["k"]
    a_bytes = b * m * k * op.elem_bytes[0]
    b_bytes = b * k * n * op.elem_bytes[1]
    c_bytes = b * m * n * op.acc_bytes
    return a_bytes * _ceil_div(n, tile_n) + b_bytes * _ceil_div(m, tile_m) + c_bytes


def _sizes(op: Contraction, assumed: int) -> dict[str, int]:
    return {role: _extent(op, role, assumed) for role in ("batch", "m", "n", "k")}


def _gpu_rate(op: Contraction, mma: Knob, target: GpuTarget) -> Knob:
    """FLOP/s of the whole GPU: tensor cores where ``mma`` is set, else the SIMT FMA rate."""
    return np.where(mma, target.flops.get(op.input_type, target.flops["f32"]), target.flops["f32"])


def gpu_seconds(op: Contraction, choice: Choice, target: GpuTarget, assumed: int = 1024) -> np.ndarray:
    """Predicted seconds of ``op`` scheduled by ``choice`` on a GPU."""
    s = _sizes(op, assumed)
    bm, bn, bk = choice["BM"], choice["BN"], choice["BK"]
    threads = (bm // choice["WM"]) * (bn // choice["WN"]) * 32
    smem = bm * bk * op.elem_bytes[0] + bk * bn * op.elem_bytes[1]
    resident = np.minimum(np.minimum(target.smem_per_sm // np.maximum(smem, 1), 2048 // threads),
                          target.regs_per_sm // (threads * 128))
    blocks_per_sm = np.maximum(1, resident)
    blocks = s["batch"] * _ceil_div(s["m"], bm) * _ceil_div(s["n"], bn)
    waves = _ceil_div(blocks, target.sm_count * blocks_per_sm)
    rate = _gpu_rate(op, choice.get("MMA", 0), target)
    block_flops = 2 * bm * bn * _ceil_div(s["k"], bk) * bk
    compute = waves * np.minimum(blocks, blocks_per_sm) * block_flops / (rate / target.sm_count)
    memory = _traffic_bytes(op, bm, bn, s) / target.dram_bytes_per_s
    return _roofline(compute, memory) + GPU_LAUNCH_SECONDS


# An FMA's latency in cycles (Zen 4 class): a micro-kernel needs latency x
# issue rate independent accumulators to keep the FMA units busy. Two loads
# (or broadcasts) per cycle.
FMA_LATENCY, LOAD_PORTS = 4, 2
# Cycles to load and store a micro-tile's accumulators and restart the K loop,
# paid once per TK slice of every micro-tile, beyond the loads and stores.
SLICE_OVERHEAD_CYCLES = 20
# Scheduling one parallel block on a worker thread (async runtime task).
BLOCK_OVERHEAD_SECONDS = 1e-6


def _micro_kernel_cycles(rm: Knob, rn: Knob, tk: Knob, lanes: int, target: HostTarget) -> Knob:
    """Cycles of one RM x RN micro-tile over one TK slice of K.

    Each k step issues RM*RN/lanes FMAs and RM broadcasts plus RN/lanes
    loads; with fewer accumulators than FMA_LATENCY times the FMA issue rate,
    the latency, not the units, sets the pace.
    """
    accumulators = rm * rn / lanes
    per_step = np.maximum(np.maximum(accumulators / target.vector_fmas_per_cycle, (rm + rn / lanes) / LOAD_PORTS),
                          FMA_LATENCY)
    return tk * per_step + 2 * accumulators / LOAD_PORTS + SLICE_OVERHEAD_CYCLES


def _lanes(op: Contraction, target: HostTarget) -> int:
    return target.vector_bits // (8 * op.acc_bytes)


def _cycle_seconds(op: Contraction, target: HostTarget) -> float:
    """Seconds per cycle of one core, from its FMA rate (one FMA is 2 FLOP per lane)."""
    per_cycle = 2 * _lanes(op, target) * target.vector_fmas_per_cycle
    return per_cycle / (target.flops[op.input_type] / target.cores)


def _host_rounds(op: Contraction, tm: Knob, tn: Knob, s: dict[str, int], target: HostTarget) -> Knob:
    """Rounds of parallel TM x TN blocks over the cores."""
    blocks = s["batch"] * _ceil_div(s["m"], tm) * _ceil_div(s["n"], tn)
    return _ceil_div(blocks, target.cores)


def cpu_seconds(op: Contraction, choice: Choice, target: HostTarget, assumed: int = 1024) -> np.ndarray:
    """Predicted seconds of ``op`` scheduled by ``choice`` on the host CPU."""
    s = _sizes(op, assumed)
    rm, rn = choice["RM"], choice["RN"]
    # A tile larger than its (packed, padded) extent covers just that extent.
    tm = np.minimum(choice["TM"], _ceil_div(s["m"], rm) * rm)
    tn = np.minimum(choice["TN"], _ceil_div(s["n"], rn) * rn)
    tk = np.minimum(choice["TK"], s["k"])
    micro_tiles = _ceil_div(tm, rm) * _ceil_div(tn, rn)
    block_cycles = micro_tiles * _ceil_div(s["k"], tk) * _micro_kernel_cycles(rm, rn, tk, _lanes(op, target), target)
    compute = _host_rounds(op, tm, tn, s, target) * (block_cycles * _cycle_seconds(op, target)
                                                     + BLOCK_OVERHEAD_SECONDS)
    return _pack_seconds(op, choice, s, target) + _roofline(compute, _kernel_memory_seconds(op, tm, tn, s, target))


def _bandwidth(op: Contraction, s: dict[str, int], target: HostTarget) -> float:
    """L3's bandwidth when the inputs and their packed copies fit half of it (the rest is shared), else DRAM's."""
    working_set = 2 * _input_bytes(op, s)
    return target.cache_bytes_per_s if working_set <= target.l3_bytes / 2 else target.dram_bytes_per_s


def _input_bytes(op: Contraction, s: dict[str, int]) -> int:
    return s["batch"] * s["k"] * (s["m"] * op.elem_bytes[0] + s["n"] * op.elem_bytes[1])


# Packing reads each operand as runs of contiguous bytes, jumping between
# runs; every jump costs as much as streaming this many more bytes (a page
# walk and a DRAM row opening). Measured 2026-12-01 on the development
# machine (16x4096x4096 f32, B packed into 16-, 32- and 64-wide panels: 64-,
# 128- and 256-byte runs took 1.47x and 1.12x the time of the 256-byte ones).
STRIDED_RUN_BYTES = 128


def _run_bytes(op: Contraction, operand: int, choice: Choice, s: dict[str, int]) -> Knob:
    """Contiguous bytes the pack reads from input ``operand`` before it jumps.

    The pack walks K innermost, so an operand stored with K last is read
    along whole rows; otherwise each row yields one inner tile (RM or RN
    elements) before the walk moves to the next row.
    """
    role = op.roles[op.operand_dims[operand][-1]]
    tile = {"m": choice["RM"], "n": choice["RN"]}.get(role, s[role])
    return np.minimum(tile, s[role]) * op.elem_bytes[operand]


def _pack_seconds(op: Contraction, choice: Choice, s: dict[str, int], target: HostTarget,
                  strided: bool = True) -> Knob:
    """The packing phase before the kernel and the unpacking after it, which do not overlap it.

    Each input and C is read and written once; reads pay STRIDED_RUN_BYTES
    per jump (the packed C is read back in RN-wide runs). ``strided=False``
    leaves the jumps out, for a bound that holds whatever the register block.
    """
    def moved(size: int, run: Knob) -> Knob:
        return size * (2 + (STRIDED_RUN_BYTES / run if strided else 0))

    sizes = (s["batch"] * s["m"] * s["k"] * op.elem_bytes[0], s["batch"] * s["k"] * s["n"] * op.elem_bytes[1])
    inputs = sum(moved(size, _run_bytes(op, i, choice, s)) for i, size in enumerate(sizes))
    c_bytes = s["batch"] * s["m"] * s["n"] * op.acc_bytes
    run_c = np.minimum(choice["RN"], s["n"]) * op.acc_bytes if strided else 1
    return (inputs + moved(c_bytes, run_c)) / _bandwidth(op, s, target)


def _kernel_memory_seconds(op: Contraction, tm: Knob, tn: Knob, s: dict[str, int], target: HostTarget) -> Knob:
    """The kernel streaming its packed tiles: A once per N tile, B once per M tile, C once."""
    return _traffic_bytes(op, tm, tn, s) / _bandwidth(op, s, target)


def lower_bound_seconds(op: Contraction, choice: Choice, target: GpuTarget | HostTarget,
                        assume: int = 1024) -> np.ndarray:
    """A lower bound on :func:`predicted_seconds` that reads only the output tile of ``choice``.

    Only BM, BN and MMA (GPU) or TM and TN (host) are read. The traffic term
    depends on those alone and is exact; the compute term is replaced by the
    unpadded work of the output tiles at the unit's peak, which no value of
    the other knobs can beat. Selection costs the points in bound order and
    stops paying for any whose bound exceeds the best cost found.
    """
    s = _sizes(op, assume)
    if isinstance(target, GpuTarget):
        bm, bn = choice["BM"], choice["BN"]
        blocks = s["batch"] * _ceil_div(s["m"], bm) * _ceil_div(s["n"], bn)
        compute = blocks * 2 * bm * bn * s["k"] / _gpu_rate(op, choice.get("MMA", 0), target)
        memory = _traffic_bytes(op, bm, bn, s) / target.dram_bytes_per_s
        return _roofline(compute, memory) + GPU_LAUNCH_SECONDS
    # Unpadded extents: the cost's tiles are at least these.
    tm, tn = np.minimum(choice["TM"], s["m"]), np.minimum(choice["TN"], s["n"])
    block_cycles = tm * tn * s["k"] / (_lanes(op, target) * target.vector_fmas_per_cycle)
    compute = _host_rounds(op, tm, tn, s, target) * (block_cycles * _cycle_seconds(op, target)
                                                     + BLOCK_OVERHEAD_SECONDS)
    return (_pack_seconds(op, choice, s, target, strided=False)
            + _roofline(compute, _kernel_memory_seconds(op, tm, tn, s, target)))


def predicted_seconds(op: Contraction, choice: Choice, target: GpuTarget | HostTarget,
                      assumed: int = 1024) -> np.ndarray:
    """Predicted seconds on ``target``; dynamic extents count as ``assumed``.

    The result has the shape of the choice's values: a 0-d array for ints.
    """
    if isinstance(target, GpuTarget):
        return gpu_seconds(op, choice, target, assumed)
    return cpu_seconds(op, choice, target, assumed)


def cost_text(target: GpuTarget | HostTarget) -> str:
    """The cost formula for families on ``target``, as stored in the IR."""
    return GPU_COST_TEXT if isinstance(target, GpuTarget) else CPU_COST_TEXT
