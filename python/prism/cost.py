"""Roofline cost of one schedule of a contraction family.

The cost is the larger of compute time and memory time (plus a tenth of the
smaller: overlap is imperfect), where
- compute counts the padded work of every tile (remainders cost a full tile)
  at the unit's rate, in waves over the GPU's SMs or the host's cores;
- traffic counts each input re-read once per tile of the other output
  dimension (A once per N tile, B once per M tile) plus the output once; on
  the host, packing reads and writes both inputs once more.

The same formula is written as text into the family's ``cost`` attribute so
that the IR carries its own contract.
"""

from __future__ import annotations

import math

from prism.space import Contraction
from prism.targets import GpuTarget, HostTarget

GPU_COST_TEXT = ("max(waves * blocks_per_sm * 2*BM*BN*ceil(K/BK)*BK / (rate/SMs), "
                 "(bytesA*ceil(N/BN) + bytesB*ceil(M/BM) + bytesC) / bandwidth); "
                 "waves = ceil(B*ceil(M/BM)*ceil(N/BN) / (SMs*blocks_per_sm))")
CPU_COST_TEXT = ("max(rounds * (ceil(TM/RM)*ceil(TN/RN)*ceil(K/TK) * kernel_cycles(RM, RN, TK) / clock + task), "
                 "(bytesA*ceil(N/TN) + bytesB*ceil(M/TM) + bytesC) / bandwidth); "
                 "rounds = ceil(B*ceil(M/TM)*ceil(N/TN) / cores)")

# Launch and tail overhead of one kernel, so that tiny problems prefer fewer blocks.
GPU_LAUNCH_SECONDS = 3e-6
# Compute and traffic never overlap perfectly. Charging a tenth of the smaller
# term also keeps the ranking informative when one term dominates every point:
# with a pure max, all memory-bound schedules tie and the tie-break, not the
# model, would pick among them.
OVERLAP_PENALTY = 0.1


def _roofline(compute: float, memory: float) -> float:
    return max(compute, memory) + OVERLAP_PENALTY * min(compute, memory)


def _extent(op: Contraction, role: str, assumed: int) -> int:
    value = op.extent(role) if role in op.roles else 1
    return assumed if value is None else value


def _traffic_bytes(op: Contraction, tile_m: int, tile_n: int, sizes: dict[str, int]) -> float:
    b, m, n, k = sizes["batch"], sizes["m"], sizes["n"], sizes["k"]
    a_bytes = b * m * k * op.elem_bytes[0]
    b_bytes = b * k * n * op.elem_bytes[1]
    c_bytes = b * m * n * op.acc_bytes
    return a_bytes * math.ceil(n / tile_n) + b_bytes * math.ceil(m / tile_m) + c_bytes


def _sizes(op: Contraction, assumed: int) -> dict[str, int]:
    return {role: _extent(op, role, assumed) for role in ("batch", "m", "n", "k")}


def gpu_seconds(op: Contraction, choice: dict[str, int], target: GpuTarget, assumed: int = 1024) -> float:
    """Predicted seconds of ``op`` scheduled by ``choice`` on a GPU."""
    s = _sizes(op, assumed)
    bm, bn, bk = choice["BM"], choice["BN"], choice["BK"]
    threads = (bm // choice["WM"]) * (bn // choice["WN"]) * 32
    smem = bm * bk * op.elem_bytes[0] + bk * bn * op.elem_bytes[1]
    blocks_per_sm = max(1, min(target.smem_per_sm // max(smem, 1), 2048 // threads,
                               target.regs_per_sm // (threads * 128)))
    blocks = s["batch"] * math.ceil(s["m"] / bm) * math.ceil(s["n"] / bn)
    waves = math.ceil(blocks / (target.sm_count * blocks_per_sm))
    rate = target.flops[op.input_type] if choice.get("MMA") else target.flops["f32"]
    block_flops = 2 * bm * bn * math.ceil(s["k"] / bk) * bk
    compute = waves * min(blocks, blocks_per_sm) * block_flops / (rate / target.sm_count)
    memory = _traffic_bytes(op, bm, bn, s) / target.dram_bytes_per_s
    return _roofline(compute, memory) + GPU_LAUNCH_SECONDS


# Zen 4 class cores: two FMA pipes with a 4-cycle latency, so 8 independent
# accumulators keep them busy; two vector loads per cycle.
FMA_PIPES, FMA_LATENCY, LOAD_PORTS = 2, 4, 2
# Cycles to load and store a micro-tile's accumulators and restart the K loop,
# paid once per TK slice of every micro-tile, beyond the loads and stores.
SLICE_OVERHEAD_CYCLES = 20
# Scheduling one parallel block on a worker thread (async runtime task).
BLOCK_OVERHEAD_SECONDS = 1e-6


def _micro_kernel_cycles(rm: int, rn: int, tk: int, lanes: int) -> float:
    """Cycles of one RM x RN micro-tile over one TK slice of K.

    Each k step issues RM*RN/lanes FMAs and RM broadcasts plus RN/lanes
    loads; with fewer accumulators than FMA_PIPES * FMA_LATENCY the FMA
    latency, not the pipes, sets the pace.
    """
    accumulators = rm * rn / lanes
    per_step = max(accumulators / FMA_PIPES, (rm + rn / lanes) / LOAD_PORTS, FMA_LATENCY)
    return tk * per_step + 2 * accumulators / LOAD_PORTS + SLICE_OVERHEAD_CYCLES


def cpu_seconds(op: Contraction, choice: dict[str, int], target: HostTarget, assumed: int = 1024) -> float:
    """Predicted seconds of ``op`` scheduled by ``choice`` on the host CPU."""
    s = _sizes(op, assumed)
    tm, tn, tk, rm, rn = (choice[key] for key in ("TM", "TN", "TK", "RM", "RN"))
    lanes = target.vector_bits // (8 * op.acc_bytes)
    blocks = s["batch"] * math.ceil(s["m"] / tm) * math.ceil(s["n"] / tn)
    rounds = math.ceil(blocks / target.cores)
    micro_tiles = math.ceil(tm / rm) * math.ceil(tn / rn)
    block_cycles = micro_tiles * math.ceil(s["k"] / tk) * _micro_kernel_cycles(rm, rn, tk, lanes)
    cycle_seconds = FMA_PIPES * 2 * lanes / (target.flops[op.input_type] / target.cores)
    compute = rounds * (block_cycles * cycle_seconds + BLOCK_OVERHEAD_SECONDS)
    return _roofline(compute, _memory_seconds(op, tm, tn, s, target))


def _memory_seconds(op: Contraction, tm: int, tn: int, s: dict[str, int], target: HostTarget) -> float:
    """Packing both inputs (read and write once each), then streaming the packed tiles.

    Traffic comes from L3 when both inputs fit it, else from DRAM.
    """
    inputs = s["batch"] * s["k"] * (s["m"] * op.elem_bytes[0] + s["n"] * op.elem_bytes[1])
    bandwidth = target.cache_bytes_per_s if inputs <= target.l3_bytes else target.dram_bytes_per_s
    return (2 * inputs + _traffic_bytes(op, tm, tn, s)) / bandwidth


# The knobs each target's lower bound reads: select groups points by them.
BOUND_KNOBS = {"gpu": ("BM", "BN", "MMA"), "host": ("TM", "TN")}


def lower_bound_seconds(op: Contraction, partial: dict[str, int], target: GpuTarget | HostTarget,
                        assume: int = 1024) -> float:
    """A lower bound on :func:`predicted_seconds` over every choice that agrees with ``partial``.

    ``partial`` holds the BOUND_KNOBS of the target. The traffic term only
    depends on those knobs and is exact; the compute term is replaced by the
    unpadded work of the output tiles at the unit's peak, which no choice of
    the other knobs can beat.
    """
    s = _sizes(op, assume)
    if isinstance(target, GpuTarget):
        bm, bn = partial["BM"], partial["BN"]
        rate = target.flops[op.input_type] if partial.get("MMA") else target.flops["f32"]
        blocks = s["batch"] * math.ceil(s["m"] / bm) * math.ceil(s["n"] / bn)
        compute = blocks * 2 * bm * bn * s["k"] / rate
        memory = _traffic_bytes(op, bm, bn, s) / target.dram_bytes_per_s
        return _roofline(compute, memory) + GPU_LAUNCH_SECONDS
    tm, tn = partial["TM"], partial["TN"]
    lanes = target.vector_bits // (8 * op.acc_bytes)
    blocks = s["batch"] * math.ceil(s["m"] / tm) * math.ceil(s["n"] / tn)
    cycle_seconds = FMA_PIPES * 2 * lanes / (target.flops[op.input_type] / target.cores)
    block_cycles = tm * tn * s["k"] / (lanes * FMA_PIPES)
    compute = math.ceil(blocks / target.cores) * (block_cycles * cycle_seconds + BLOCK_OVERHEAD_SECONDS)
    return _roofline(compute, _memory_seconds(op, tm, tn, s, target))


def predicted_seconds(op: Contraction, choice: dict[str, int], target: GpuTarget | HostTarget,
                      assumed: int = 1024) -> float:
    """Predicted seconds on ``target``; dynamic extents count as ``assumed``."""
    if isinstance(target, GpuTarget):
        return gpu_seconds(op, choice, target, assumed)
    return cpu_seconds(op, choice, target, assumed)


def cost_text(target: GpuTarget | HostTarget) -> str:
    """The cost formula for families on ``target``, as stored in the IR."""
    return GPU_COST_TEXT if isinstance(target, GpuTarget) else CPU_COST_TEXT
