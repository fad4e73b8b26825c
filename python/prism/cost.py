"""Roofline cost of one schedule of a contraction family.

The cost is the larger of compute time and memory time, where
- compute counts the padded work of every tile (remainders cost a full tile)
  at the unit's rate, in waves over the GPU's SMs or the host's cores;
- traffic counts each input re-read once per tile of the other output
  dimension (A once per N tile, B once per M tile) plus the output once.

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
CPU_COST_TEXT = ("max(rounds * 2*TM*TN*K / (rate/cores) / efficiency(RM, RN), "
                 "(bytesA*ceil(N/TN) + bytesB*ceil(M/TM) + bytesC) / bandwidth); "
                 "rounds = ceil(B*ceil(M/TM)*ceil(N/TN) / cores)")

# Launch and tail overhead of one kernel, so that tiny problems prefer fewer blocks.
GPU_LAUNCH_SECONDS = 3e-6


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
    return max(compute, memory) + GPU_LAUNCH_SECONDS


def _register_efficiency(rm: int, rn: int, lanes: int) -> float:
    """Fraction of FMA peak a RM x RN micro-kernel can sustain.

    Per k step it issues RM*RN/lanes FMAs against RM broadcasts plus RN/lanes
    loads; two FMA pipes and two load ports (Zen 4) bound it.
    """
    fmas = rm * rn / lanes
    loads = rm + rn / lanes
    return fmas / max(fmas, loads)


def cpu_seconds(op: Contraction, choice: dict[str, int], target: HostTarget, assumed: int = 1024) -> float:
    """Predicted seconds of ``op`` scheduled by ``choice`` on the host CPU."""
    s = _sizes(op, assumed)
    tm, tn = choice["TM"], choice["TN"]
    lanes = target.vector_bits // (8 * op.acc_bytes)
    tiles = s["batch"] * math.ceil(s["m"] / tm) * math.ceil(s["n"] / tn)
    rounds = math.ceil(tiles / target.cores)
    per_core = target.flops[op.input_type] / target.cores
    padded_k = s["k"]
    efficiency = _register_efficiency(choice["RM"], choice["RN"], lanes)
    compute = rounds * 2 * tm * tn * padded_k / per_core / efficiency
    memory = _traffic_bytes(op, tm, tn, s) / target.dram_bytes_per_s
    return max(compute, memory)


def predicted_seconds(op: Contraction, choice: dict[str, int], target: GpuTarget | HostTarget,
                      assumed: int = 1024) -> float:
    """Predicted seconds on ``target``; dynamic extents count as ``assumed``."""
    if isinstance(target, GpuTarget):
        return gpu_seconds(op, choice, target, assumed)
    return cpu_seconds(op, choice, target, assumed)


def cost_text(target: GpuTarget | HostTarget) -> str:
    """The cost formula for families on ``target``, as stored in the IR."""
    return GPU_COST_TEXT if isinstance(target, GpuTarget) else CPU_COST_TEXT
