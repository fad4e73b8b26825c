"""NVIDIA GPUs: hardware numbers, the block/warp/tensor-core schedule space, and its roofline.

Figures come from the vendors' datasheets and CUDA programming guide
(compute-capability tables), except where a line says "measured": those were
read on an H200 SXM in October and November 2026 (PyTorch device
properties, a device-to-device copy, an 8192^3 bf16 matmul). Effective
bandwidths carry a safety margin because a roofline that assumes peak
bandwidth prunes too much.

The numbers the GPU code generator depends on (warp size, the static
shared-memory cap, the mma.sync shape, PTX features per chip) live here too,
once; :mod:`prism.codegen.gpu` reads them.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from prism.infra.errors import TargetError
from prism.search.attention import Attention
from prism.search.cost import Knob, KnobValues, ceil_div, problem_sizes, roofline, traffic_bytes
from prism.search.space import Contraction, Space, pow2_sum_le, shape_fit, shape_param_bounds
from prism.targets.base import BANDWIDTH_MARGIN, iree_tile_levels

if TYPE_CHECKING:
    from mlir import ir

WARP_SIZE = 32
MAX_THREADS_PER_BLOCK = 1024  # on every chip Prism targets
# The GPU code generator allocates shared memory statically, which CUDA caps at 48 KiB per block.
STATIC_SHARED_BYTES = 48 * 1024
# Blocks a grid may have along x, y and z.
MAX_GRID = (2**31 - 1, 65535, 65535)
# m, n, k of mma.sync for 16-bit inputs: a tensor-core warp tile is a multiple of it.
MMA_SHAPE = (16, 8, 16)
# The PTX feature each chip needs: without it, sm_90 makes the NVPTX backend abort the process instead of failing.
PTX_FEATURES = {"sm_80": "+ptx70", "sm_90": "+ptx80", "sm_90a": "+ptx80"}

# Launch and tail overhead of one kernel, so that tiny problems prefer fewer blocks.
LAUNCH_SECONDS = 3e-6

COST_TEXT = ("max(waves * blocks_per_sm * 2*BM*BN*ceil(K/BK)*BK / (rate/SMs), "
             "(bytesA*ceil(N/BN) + bytesB*ceil(M/BM) + bytesC) / bandwidth); "
             "waves = ceil(B*ceil(M/BM)*ceil(N/BN) / (SMs*blocks_per_sm))")

_TERA = 1e12


@dataclass(frozen=True)
class GpuTarget:
    """An NVIDIA GPU. Sizes in bytes, rates in FLOP/s and bytes/s."""

    name: str
    chip: str  # the sm_XX name given to ptxas and NVVM
    sm_count: int
    smem_per_block: int  # the opt-in maximum of dynamic shared memory per block
    smem_per_sm: int
    regs_per_thread: int
    regs_per_sm: int
    max_threads_per_block: int
    l2_bytes: int
    dram_bytes_per_s: float  # effective, margin applied
    # Dense tensor-core rate by input element type; "f32" is the SIMT FMA rate.
    flops: dict[str, float] = field(default_factory=dict)
    mma_shape: tuple[int, int, int] = MMA_SHAPE
    warp_size: int = WARP_SIZE

    artifact = "ptx"
    runs_here = False
    fusion = frozenset()  # each elementwise op is a kernel of its own

    def lowering(self) -> str:
        """prism-lower-gpu for this chip."""
        return f"prism-lower-gpu{{chip={self.chip}}}"

    def space(self, op: Contraction | Attention) -> Space | None:
        """Block tile (BM, BN, BK), warp tile (WM, WN) and tensor-core use (MMA); no attention family (its
        products are lifted as GEMMs)."""
        return None if isinstance(op, Attention) else gemm_space(op, self)

    def seconds(self, op: Contraction, values: KnobValues, assumed: int = 1024) -> np.ndarray:
        """Predicted seconds of ``op`` scheduled by ``values``."""
        s = problem_sizes(op, assumed)
        bm, bn, bk = values["BM"], values["BN"], values["BK"]
        threads = (bm // values["WM"]) * (bn // values["WN"]) * self.warp_size
        smem = bm * bk * op.elem_bytes[0] + bk * bn * op.elem_bytes[1]
        resident = np.minimum(np.minimum(self.smem_per_sm // np.maximum(smem, 1), 2048 // threads),
                              self.regs_per_sm // (threads * 128))
        blocks_per_sm = np.maximum(1, resident)
        blocks = s["batch"] * ceil_div(s["m"], bm) * ceil_div(s["n"], bn)
        waves = ceil_div(blocks, self.sm_count * blocks_per_sm)
        rate = self._rate(op, values.get("MMA", 0))
        block_flops = 2 * bm * bn * ceil_div(s["k"], bk) * bk
        compute = waves * np.minimum(blocks, blocks_per_sm) * block_flops / (rate / self.sm_count)
        memory = traffic_bytes(op, bm, bn, s) / self.dram_bytes_per_s
        return roofline(compute, memory) + LAUNCH_SECONDS

    def lower_bound(self, op: Contraction, values: KnobValues, assumed: int = 1024) -> np.ndarray:
        """Reads BM, BN and MMA: exact traffic, and the unpadded work of the output tiles at peak."""
        s = problem_sizes(op, assumed)
        bm, bn = values["BM"], values["BN"]
        blocks = s["batch"] * ceil_div(s["m"], bm) * ceil_div(s["n"], bn)
        compute = blocks * 2 * bm * bn * s["k"] / self._rate(op, values.get("MMA", 0))
        memory = traffic_bytes(op, bm, bn, s) / self.dram_bytes_per_s
        return roofline(compute, memory) + LAUNCH_SECONDS

    iree_backend = "cuda"

    @property
    def iree_flags(self) -> tuple[str, ...]:
        """IREE's CUDA target for this chip."""
        return (f"--iree-cuda-target={self.chip.removesuffix('a')}",)

    def iree_config(self, roles: Sequence[str], extents: Sequence[int | None], choice: dict[str, int]
                    ) -> tuple[str, list[str]]:
        """IREE's GPU tile-and-fuse pipeline with Prism's block: a BM x BN workgroup, K in BK steps, A and B staged
        in shared memory, and each warp's WM x WN tile spread over its 32 lanes (WM/4 x WN/8 elements a thread).

        Tensor cores and pipeline stages are left to IREE: the names of
        IREE's NVIDIA MMA intrinsics and its prefetch options are not mapped.
        """
        bm, bn, bk, wm, wn = (choice[key] for key in ("BM", "BN", "BK", "WM", "WN"))
        tm, tn = max(1, wm // 4), max(1, wn // 8)
        threads = (bm // tm) * (bn // tn)
        tiles = {"batch": (1, 0, 1), "m": (bm, 0, tm), "n": (bn, 0, tn), "k": (0, bk, 0)}
        config = iree_tile_levels(roles, tiles, ("workgroup", "reduction", "thread"))
        text = (f"#iree_codegen.compilation_info<lowering_config = #iree_gpu.lowering_config<{{{config}, "
                "promote_operands = [0, 1]}>, translation_info = #iree_codegen.translation_info<pipeline = "
                f"#iree_gpu.pipeline<TileAndFuse> workgroup_size = [{threads}, 1, 1] subgroup_size = 32>>")
        unexpressed = []
        if choice.get("MMA"):
            unexpressed.append("tensor cores (MMA = 1): IREE chooses its own intrinsic")
        if choice.get("STAGES", 1) > 1:
            unexpressed.append(f"{choice['STAGES']} pipeline stages")
        if wm % 4 or wn % 8 or threads != (bm // wm) * (bn // wn) * self.warp_size:
            unexpressed.append(f"the warp tile {wm} x {wn} (threads take {tm} x {tn} elements each)")
        return text, unexpressed

    def cost_text(self, op: Contraction) -> str:
        """The GPU roofline, as text."""
        return COST_TEXT

    def pass_seconds(self, moved: int) -> float:
        """One kernel launch streaming ``moved`` bytes through DRAM."""
        return LAUNCH_SECONDS + moved / self.dram_bytes_per_s

    def measure(self, body: ir.Operation, choice: dict[str, int], assume: int) -> float:
        """GPU kernels are not run by Prism."""
        raise TargetError(f"measuring runs candidates on this machine; it needs target=host, not '{self.name}'")

    def _rate(self, op: Contraction, mma: Knob) -> Knob:
        """FLOP/s of the whole GPU: tensor cores where ``mma`` is set, else the SIMT FMA rate."""
        return np.where(mma, self.flops.get(op.input_type, self.flops["f32"]), self.flops["f32"])


def gemm_space(op: Contraction, target: GpuTarget, stages: int = 1) -> Space:
    """Block tile (BM, BN, BK), warp tile (WM, WN) and tensor-core use (MMA) for a GPU."""
    tiles = {"m": "bm", "n": "bn", "k": "bk"}
    # The lowering reaches mma.sync for f16 only: upstream's vector-to-mma
    # conversion does not take bf16 operands.
    mma_ok = op.input_type == "f16"
    universe = (f"{shape_param_bounds()} and 4 <= bm <= 8 and 4 <= bn <= 8 and 3 <= bk <= 6"
                f" and 3 <= wm <= bm and 3 <= wn <= bn and 0 <= mma <= {1 if mma_ok else 0}")
    a_bytes = op.footprint_exponent(0, tiles)
    b_bytes = op.footprint_exponent(1, tiles)
    max_threads_log2 = int(math.log2(target.max_threads_per_block))
    warp_log2 = int(math.log2(target.warp_size))
    # f32 accumulators per thread: a warp's WM x WN tile over its lanes; keep
    # half the register file for addresses, fragments and pipelining.
    acc_regs_log2 = int(math.log2(target.regs_per_thread // 2))
    mm, mn, mk = target.mma_shape
    groups = (
        ("threads", f"(bm - wm) + (bn - wn) + {warp_log2} <= {max_threads_log2} and (bm - wm) + (bn - wn) >= 1"),
        ("registers", f"wm + wn - {warp_log2} <= {acc_regs_log2}"),
        ("shared_memory", pow2_sum_le(a_bytes, b_bytes, min(target.smem_per_block, STATIC_SHARED_BYTES) / stages)),
        ("tensor_core", f"mma = 0 or (wm >= {int(math.log2(mm))} and wn >= {int(math.log2(mn))}"
                        f" and bk >= {int(math.log2(mk))})"),
        # Shared-memory promotion copies operand tiles that are views of larger operands: without a batch,
        # a block may not cover A whole (BM = M, BK = K) or B whole (BK = K, BN = N).
        ("shape", " and ".join([shape_fit("bm", "m", 4), shape_fit("bn", "n", 4), shape_fit("bk", "k", 3),
                                "(LB >= 1 or bk < LK or (bm < LM and bn < LN))"])),
        # The GPU kernels have no remainder handling: tiles divide the problem.
        ("divisibility", "bm <= DM and bn <= DN and bk <= DK"),
    )
    return Space(kind="gemm", knobs={"bm": "BM", "bn": "BN", "bk": "BK", "wm": "WM", "wn": "WN"},
                 flags={"mma": "MMA"}, universe=universe, groups=groups)


# H100 SXM5 and H200 share the GH100 die: 132 SMs, 227 KiB of shared memory per
# block (228 KiB per SM), 64 Ki registers per SM, 255 per thread.
_HOPPER = dict(
    chip="sm_90", sm_count=132, smem_per_block=227 * 1024, smem_per_sm=228 * 1024,
    regs_per_thread=255, regs_per_sm=65536, max_threads_per_block=MAX_THREADS_PER_BLOCK,
)

GPU_TARGETS: dict[str, GpuTarget] = {
    # H200 SXM: L2 60 MB and 132 SMs measured (device properties); copy
    # bandwidth measured 4.3 TB/s against 4.8 TB/s on the datasheet; bf16 matmul
    # measured 788 TFLOP/s (datasheet dense 989); fp32 datasheet 67.
    "h200": GpuTarget(name="h200", l2_bytes=60 * 1024**2, dram_bytes_per_s=4.3e12 * BANDWIDTH_MARGIN,
                      flops={"f16": 788 * _TERA, "bf16": 788 * _TERA, "f32": 67 * _TERA}, **_HOPPER),
    # H100 SXM5 80 GB: 3.35 TB/s HBM3, L2 50 MB, dense f16/bf16 989 TFLOP/s,
    # fp32 67 TFLOP/s (datasheet). The matmul rate is scaled like the H200's
    # measured 788/989 since the arithmetic units are the same.
    "h100": GpuTarget(name="h100", l2_bytes=50 * 1024**2, dram_bytes_per_s=3.35e12 * BANDWIDTH_MARGIN,
                      flops={"f16": 788 * _TERA, "bf16": 788 * _TERA, "f32": 67 * _TERA}, **_HOPPER),
    # A100 SXM4 80 GB: 108 SMs, 163 KiB shared memory per block (164 KiB per
    # SM), 40 MB L2, 2.039 TB/s HBM2e, dense f16/bf16 312 TFLOP/s, fp32 19.5.
    "a100": GpuTarget(name="a100", chip="sm_80", sm_count=108, smem_per_block=163 * 1024,
                      smem_per_sm=164 * 1024, regs_per_thread=255, regs_per_sm=65536,
                      max_threads_per_block=MAX_THREADS_PER_BLOCK, l2_bytes=40 * 1024**2,
                      dram_bytes_per_s=2.039e12 * BANDWIDTH_MARGIN,
                      flops={"f16": 312 * _TERA, "bf16": 312 * _TERA, "f32": 19.5 * _TERA}),
}
