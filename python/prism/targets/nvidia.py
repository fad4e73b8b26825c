"""NVIDIA GPUs: hardware numbers, the block/warp/tensor-core schedule space, and its roofline.

Figures come from the vendors' datasheets and CUDA programming guide
(compute-capability tables), except where a line says "measured": those were
read on an H200 SXM (PyTorch device properties, a device-to-device copy, an
8192^3 bf16 matmul; benchmarks/RESULTS.md, "Measurements behind rules in
the code": H200 figures). Effective
bandwidths carry a safety margin because a roofline that assumes peak
bandwidth prunes too much.

The numbers the GPU code generator depends on (warp size, the static
shared-memory cap, the mma.sync shape, PTX features per chip) live here too,
once; :mod:`prism.codegen.gpu` reads them.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

import numpy as np

from prism.search.cost import Knob, KnobValues, ceil_div, problem_sizes, roofline, traffic_bytes
from prism.search.families import family_model, family_of
from prism.search.space import Contraction, Space, pow2_sum_le, shape_fit, shape_param_bounds
from prism.targets import nvidia_registers, nvidia_space
from prism.targets.base import BANDWIDTH_MARGIN, iree_tile_levels
from prism.targets.nvidia_registers import MMA_SHAPE

if TYPE_CHECKING:
    from prism.search.family import Problem

WARP_SIZE = 32
MAX_THREADS_PER_BLOCK = 1024  # on every chip Prism targets
# The GPU code generator allocates shared memory statically, which CUDA caps at 48 KiB per block.
STATIC_SHARED_BYTES = 48 * 1024
# Blocks a grid may have along x, y and z.
MAX_GRID = (2**31 - 1, 65535, 65535)
# The PTX feature each chip needs: without it, sm_90 makes the NVPTX backend abort the process instead of failing.
# sm_90a needs 8.0 for wgmma and setmaxnreg; the wheel silently ignores features above +ptx90.
PTX_FEATURES = {"sm_80": "+ptx70", "sm_90": "+ptx80", "sm_90a": "+ptx80"}

# Launch and tail overhead of one kernel, so that tiny problems prefer fewer blocks.
LAUNCH_SECONDS = 3e-6
# The most DRAM bandwidth one SM draws, in even shares (bandwidth / SMs): the bytes its blocks keep in flight
# over the memory latency bound it (an estimate: tens of KiB against some 600 ns), so that a grid of few blocks
# cannot stream at the chip's rate.
SM_BANDWIDTH_SHARE = 2
# What split-K adds to a launch besides the partials' traffic: the fence, the count, and the last block's pass over
# the partials after the others (a few dependent trips to memory).
SPLIT_SECONDS = 1e-6
# What each wave of a GEMM's blocks adds besides its products: the blocks' start, the latency of their first loads
# before the first product and their epilogue's stores after the last. A persistent kernel (PERSISTENT = 1) pays it
# once: its blocks start once and load a tile's first steps during the previous tile's epilogue.
WAVE_SECONDS = 1e-6
# L2's bandwidth to the SMs over the effective DRAM bandwidth (an estimate): every tile's loads of A and B pass
# through L2 whether DRAM or L2 serves them, and the measured 8192^3 bf16 rate (128 x 256 tiles) reads them at
# some 10 TB/s, about three times the effective DRAM bandwidth.
L2_BANDWIDTH_RATIO = 3
# The latency of a load from DRAM under load, an estimate (published microbenchmarks of the A100 and H100 put it
# near 500 to 700 ns); a pipeline with STAGES tiles in flight hides it behind STAGES - 1 steps of the K loop.
LOAD_LATENCY_SECONDS = 600e-9

# The CUDA chips IREE 3.13 knows by name (--iree-cuda-target); it knows none after sm_87, so a module for
# sm_90 names its device itself (GpuModel.iree_device).
IREE_CUDA_CHIPS = frozenset({"sm_60", "sm_61", "sm_62", "sm_70", "sm_72", "sm_75", "sm_80", "sm_86", "sm_87"})
# IREE's tensor-core intrinsics with Prism's MMA shape (m16 n8 k16, mma.sync), by input and accumulator type.
NVIDIA_INTRINSICS = {("f16", "f32"): "NV_MMA_SYNC_F32_16x8x16_F16", ("f16", "f16"): "NV_MMA_SYNC_F16_16x8x16_F16",
                     ("bf16", "f32"): "NV_MMA_SYNC_F32_16x8x16_BF16"}

COST_TEXT = ("max(ceil(blocks/SMs) * 2*BM*BN*ceil(ceil(K/SPLITK)/BK)*BK / (rate/SMs), "
             "(bytesA*ceil(N/BN) + bytesB*ceil(M/BM) + bytesC + [SPLITK > 1] 2*SPLITK*B*M*N*4) / "
             "(bandwidth * min(1, 2 * min(blocks, SMs) / SMs))), the first term at least "
             "waves * ceil(ceil(K/SPLITK)/BK) * latency / (STAGES - 1), + launch "
             "+ [SPLITK > 1] 1us + (PERSISTENT ? 1 : waves) * 1us, the memory term also at least the same A and B "
             "count over L2's bandwidth (3 x DRAM's); "
             "blocks = B*ceil(M/BM)*ceil(N/BN)*SPLITK; waves = ceil(blocks / (SMs*blocks_per_sm)), "
             "blocks_per_sm by the kernel's threads, declared registers and shared memory; "
             "with GROUP_M > 1, A and B traffic: waves * a wave's unique bytes (its grouped tiles' rows and columns) "
             "where they fit L2, tending to the count above as they exceed it")

_TERA = 1e12


@dataclass(frozen=True)
class GpuModel:
    """What NVIDIA's and AMD's GPUs share: their numbers, the block/warp/tensor-core space, its roofline and
    IREE's configuration of it (NVIDIA's by default). Sizes in bytes, rates in FLOP/s and bytes/s."""

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
    # Input types whose products may use the tensor cores (MMA = 1).
    mma_types: tuple[str, ...] = ("f16",)
    # The most shared memory a block's operand tiles may take.
    shared_cap: int = STATIC_SHARED_BYTES
    # Whether the kernels mask ragged edges (then a tile need not divide the problem: the lanes it wastes are
    # a cost), and whether the tensor cores are always used where the input type allows.
    ragged: bool = False
    mma_always: bool = False
    # IREE's names for what this chip has: its tensor-core intrinsics of MMA_SHAPE by (input, accumulator)
    # type, and all of them, as its device description lists them.
    iree_intrinsics: dict[tuple[str, str], str] = field(default_factory=lambda: dict(NVIDIA_INTRINSICS))
    iree_all_intrinsics: tuple[str, ...] = (*NVIDIA_INTRINSICS.values(), "NV_WMMA_F32_16x16x16_F16",
                                            "NV_WMMA_F16_16x16x16_F16")

    fusion = frozenset()  # each elementwise op is a kernel of its own

    def space(self, op: Problem) -> Space | None:
        """Block tile (BM, BN, BK), warp tile (WM, WN) and tensor-core use (MMA); for another family, its
        model's space on this chip (None where the chip has no model of it: its parts are lifted then)."""
        if family_of(op) is None:
            return gemm_space(op, self)
        model = family_of(op).model(self.name)
        return None if model is None else model.space(op, self)

    def seconds(self, op: Problem, values: KnobValues, assumed: int = 1024) -> np.ndarray:
        """Predicted seconds of ``op`` scheduled by ``values`` (for another family, its model's)."""
        if family_of(op) is not None:
            return family_model(op, self.name).seconds(self, op, values, assumed)
        s = problem_sizes(op, assumed)
        bm, bn, bk = values["BM"], values["BN"], values["BK"]
        blocks_per_sm = self.resident_blocks(op, values)
        # Split-K: SPLITK blocks a tile, each over its share of K, writing f32 partials that the tile's last
        # block reads back (in the same launch).
        split = values.get("SPLITK", 1)
        blocks = s["batch"] * ceil_div(s["m"], bm) * ceil_div(s["n"], bn) * split
        rate = self._rate(op, values.get("MMA", 0))
        block_flops = 2 * bm * bn * ceil_div(ceil_div(s["k"], split), bk) * bk
        # The SM with the most blocks runs them at its share of the rate, whether they are resident together
        # (sharing it) or in waves: the last wave's quantization is this rounding. Residency sets the waves
        # (each exposing a start, WAVE_SECONDS, unless the kernel is persistent) and what L2 holds at once.
        compute = ceil_div(blocks, self.sm_count) * block_flops / (rate / self.sm_count)
        partials = np.where(split > 1, 2 * split * s["batch"] * s["m"] * s["n"] * 4, 0)
        # Fewer blocks than SMs draw only part of the bandwidth: each SM at most SM_BANDWIDTH_SHARE times its
        # even share (what split-K is for).
        drawn = np.minimum(1.0, SM_BANDWIDTH_SHARE * np.minimum(blocks, self.sm_count) / self.sm_count)
        wave = np.minimum(blocks, self.sm_count * blocks_per_sm)
        waves = ceil_div(blocks, self.sm_count * blocks_per_sm)
        dram = (self.gemm_traffic(op, values, s, wave) + partials) / (self.dram_bytes_per_s * drawn)
        memory = np.maximum(dram, (traffic_bytes(op, bm, bn, s) + partials) / (self.l2_bytes_per_s * drawn))
        exposed = np.where(values.get("PERSISTENT", 0) > 0, 1, waves) * WAVE_SECONDS
        # Each K step waits for its tile's loads unless STAGES - 1 steps of the loop cover their latency; a wave's
        # resident blocks wait together.
        steps = ceil_div(ceil_div(s["k"], split), bk)
        latency = (waves * steps * LOAD_LATENCY_SECONDS / np.maximum(values["STAGES"] - 1, 1)
                   if "STAGES" in values else 0.0)  # a kernel without the knob (IREE's) pipelines as it will
        return (roofline(np.maximum(compute, latency), memory) + LAUNCH_SECONDS + exposed
                + np.where(split > 1, SPLIT_SECONDS, 0.0))

    def resident_blocks(self, op: Contraction, values: KnobValues) -> Knob:
        """Blocks of the GEMM kernel an SM holds at once: its threads, registers and shared memory against the
        SM's. The registers are what the kernel declares: the wgmma kernel's ``.maxnreg`` for its warpgroups,
        the mma.sync and FMA kernels' allotment (:mod:`prism.targets.nvidia_registers`)."""
        threads, registers, smem = self.block_resources(op, values)
        # a point without a warp (WM > BM or WN > BN) holds none of either: 0 rather than a division by zero
        block_registers = threads * registers
        by_threads = np.where(threads > 0, 2048 // np.maximum(threads, 1), 0)
        by_registers = np.where(block_registers > 0, self.regs_per_sm // np.maximum(block_registers, 1), 0)
        resident = np.minimum(np.minimum(self.smem_per_sm // np.maximum(smem, 1), by_threads), by_registers)
        return np.maximum(1, resident)

    def block_resources(self, op: Contraction, values: KnobValues) -> tuple[Knob, Knob, Knob]:
        """A block's threads, registers per thread and shared memory: here a kernel's warps of WM x WN, some 128
        registers each and one stage of tiles (IREE's kernels on AMD chips; Prism's own on NVIDIA override it)."""
        bm, bn, bk, wm, wn = (values[k] for k in ("BM", "BN", "BK", "WM", "WN"))
        threads = (bm // wm) * (bn // wn) * self.warp_size
        return threads, 128, bm * bk * op.elem_bytes[0] + bk * bn * op.elem_bytes[1]

    @property
    def l2_bytes_per_s(self) -> float:
        """What L2 serves the SMs (L2_BANDWIDTH_RATIO times the effective DRAM bandwidth)."""
        return L2_BANDWIDTH_RATIO * self.dram_bytes_per_s

    def gemm_traffic(self, op: Contraction, values: KnobValues, s: dict[str, int], wave: Knob) -> Knob:
        """DRAM bytes of a GEMM whose blocks run ``wave`` at a time: A once per N tile and B once per M tile,
        C once. Tiles grouped by GROUP_M (at least two rows of tiles a group) share their A and B panels by
        construction: where the bytes a wave's tiles read (their rows of M tiles and columns of N tiles, each over
        its share of K) fit L2, each wave reads them from DRAM once, tending to the count above as they exceed it
        (L2 keeps the fraction L2 / those bytes for the wave's other tiles). The row-by-row order is credited
        no reuse."""
        bm, bn = values["BM"], values["BN"]
        split = values.get("SPLITK", 1)
        tiles_m, tiles_n = ceil_div(s["m"], bm), ceil_div(s["n"], bn)
        per_z = tiles_m * tiles_n  # a batch index's (and share's) tiles
        rows, cols = wave_tiles(np.minimum(wave, per_z), tiles_m, tiles_n, values.get("GROUP_M", 1))
        k = ceil_div(s["k"], split)
        unique = ceil_div(wave, per_z) * (rows * bm * k * op.elem_bytes[0] + cols * bn * k * op.elem_bytes[1])
        reread = traffic_bytes(op, bm, bn, s)
        # the tiles over the wave's, each wave's bytes read once (a last, partial wave reads its part)
        reused = s["batch"] * per_z * split / wave * unique + s["batch"] * s["m"] * s["n"] * op.acc_bytes
        kept = np.minimum(1.0, self.l2_bytes / np.maximum(unique, 1))
        grouped = np.minimum(values.get("GROUP_M", 1), tiles_m) > 1
        return np.where(grouped, np.minimum(reread, kept * reused + (1 - kept) * reread), reread)

    def lower_bound(self, op: Problem, values: KnobValues, assumed: int = 1024) -> np.ndarray:
        """Reads BM, BN and MMA: exact traffic, and the unpadded work of the output tiles at peak (for another
        family, its model's bound)."""
        if family_of(op) is not None:
            return family_model(op, self.name).lower_bound(self, op, values, assumed)
        s = problem_sizes(op, assumed)
        bm, bn = values["BM"], values["BN"]
        blocks = s["batch"] * ceil_div(s["m"], bm) * ceil_div(s["n"], bn)
        compute = blocks * 2 * bm * bn * s["k"] / self._rate(op, values.get("MMA", 0))
        # L2 may serve every re-read of A and B (gemm_traffic): each is read from DRAM at least once
        unique = s["batch"] * (s["m"] * s["k"] * op.elem_bytes[0] + s["k"] * s["n"] * op.elem_bytes[1]
                               + s["m"] * s["n"] * op.acc_bytes)
        memory = np.maximum(np.minimum(traffic_bytes(op, bm, bn, s), unique) / self.dram_bytes_per_s,
                            traffic_bytes(op, bm, bn, s) / self.l2_bytes_per_s)
        return roofline(compute, memory) + LAUNCH_SECONDS + WAVE_SECONDS

    iree_backend = "cuda"

    @property
    def iree_flags(self) -> tuple[str, ...]:
        """IREE's CUDA target for this chip, for a module that does not name its device; none for a chip IREE
        does not know (sm_90), whose modules must name it (:attr:`iree_device`)."""
        return (f"--iree-cuda-target={self.chip}",) if self.chip in IREE_CUDA_CHIPS else ()

    @property
    def iree_device(self) -> str:
        """IREE's device for this chip with its limits, which ``--emit=iree`` writes into the module: IREE then
        compiles for the chip whatever its flags say, sm_90 included, which it cannot name itself."""
        executable = (f'#hal.executable.target<"cuda", "cuda-nvptx-fb", {{iree_codegen.target_info = '
                      f'{self._iree_target()}}}>')
        return f'#hal.device.target<"cuda", [{executable}]> : !hal.device'

    def _iree_target(self) -> str:
        """The ``#iree_gpu.target`` of this chip: its intrinsics, subgroup, workgroup and shared-memory limits."""
        mma = ", ".join(f"<{name}>" for name in self.iree_all_intrinsics)
        counts = ", ".join(str(c) for c in MAX_GRID)
        return (f'#iree_gpu.target<arch = "{self.chip}", features = "{PTX_FEATURES[self.chip]}", wgp = <compute = '
                "fp64|fp32|fp16|int64|int32|int16|int8, storage = b64|b32|b16|b8, subgroup = shuffle|arithmetic, "
                f"dot = dp4xi8toi32, mma = [{mma}], subgroup_size_choices = [{self.warp_size}], max_workgroup_sizes "
                f"= [1024, 1024, 1024], max_thread_count_per_workgroup = {self.max_threads_per_block}, "
                f"max_workgroup_memory_bytes = {self.smem_per_block}, max_workgroup_counts = [{counts}]>>")

    def iree_config(self, op: Contraction, choice: dict[str, int]) -> tuple[str, list[str]]:
        """IREE's GPU tile-and-fuse pipeline with Prism's block: a BM x BN workgroup, K in BK steps, A and B staged
        in shared memory (``promote_operands``).

        With tensor cores (MMA = 1), each warp's WM x WN tile is IREE's
        subgroup tile, counted in intrinsics, and BK its reduction tile, counted
        the same way; the intrinsic is this chip's of Prism's MMA shape for the
        operand types. Without them, the warp tile is spread over its lanes
        (WM/4 x WN/8 elements a thread for 32 lanes, WM/8 x WN/8 for 64).
        Pipeline stages have no counterpart: Prism's GPU space has none.
        """
        bm, bn, bk, wm, wn = (choice[key] for key in ("BM", "BN", "BK", "WM", "WN"))
        threads = (bm // wm) * (bn // wn) * self.warp_size
        unexpressed = []
        accumulator = {2: "f16", 4: "f32"}.get(op.acc_bytes, "")
        intrinsic = self.iree_intrinsics.get((op.input_type, accumulator)) if choice.get("MMA") else None
        if choice.get("MMA") and intrinsic is None:
            unexpressed.append(f"tensor cores for {op.input_type} into {accumulator or 'this type'}: the warps compute "
                               "without them")
        if intrinsic:
            im, in_, ik = self.mma_shape
            tiles = {"batch": (1, 0, 0), "m": (bm, 0, wm // im), "n": (bn, 0, wn // in_), "k": (0, bk // ik, 0)}
            levels = ("workgroup", "reduction", "subgroup")
            # IREE converts accumulating products for mma.sync itself only when told to.
            extra = f"mma_kind = #iree_gpu.mma_layout<{intrinsic}>, " + (
                "convert_acc_gemm, " if intrinsic.startswith("NV_MMA_SYNC") else "")
        else:
            lanes_m = 4 if self.warp_size == 32 else 8
            lanes_n = self.warp_size // lanes_m
            tm, tn = max(1, wm // lanes_m), max(1, wn // lanes_n)
            tiles = {"batch": (1, 0, 1), "m": (bm, 0, tm), "n": (bn, 0, tn), "k": (0, bk, 0)}
            levels = ("workgroup", "reduction", "thread")
            extra = ""
            if wm % lanes_m or wn % lanes_n:
                unexpressed.append(f"the warp tile {wm} x {wn} (threads take {tm} x {tn} elements each)")
                threads = (bm // tm) * (bn // tn)
        config = iree_tile_levels(op.roles, tiles, levels)
        text = (f"#iree_codegen.compilation_info<lowering_config = #iree_gpu.lowering_config<{{{config}, "
                f"{extra}promote_operands = [0, 1]}}>, translation_info = #iree_codegen.translation_info<pipeline = "
                f"#iree_gpu.pipeline<TileAndFuse> workgroup_size = [{threads}, 1, 1] "
                f"subgroup_size = {self.warp_size}>>")
        return text, unexpressed

    def iree_data_tiling(self, op: Contraction, choice: dict[str, int]) -> None:
        """None: IREE's GPU pipeline takes each product as it is."""
        return None

    def cost_text(self, op: Problem) -> str:
        """The GPU roofline, as text (for another family, its model's)."""
        return COST_TEXT if family_of(op) is None else family_model(op, self.name).cost_text

    def pass_seconds(self, moved: int) -> float:
        """One kernel launch streaming ``moved`` bytes through DRAM."""
        return LAUNCH_SECONDS + moved / self.dram_bytes_per_s

    def _rate(self, op: Contraction, mma: Knob) -> Knob:
        """FLOP/s of the whole GPU: tensor cores where ``mma`` is set, else the SIMT FMA rate."""
        return np.where(mma, self.flops.get(op.input_type, self.flops["f32"]), self.flops["f32"])


@dataclass(frozen=True)
class NvidiaTarget(GpuModel):
    """An NVIDIA GPU, which Prism lowers for itself (to PTX)."""

    artifact = "ptx"
    runs_here = False
    # Prism's own kernels: every 16-bit product on tensor cores, masked edges, dynamic shared memory up to the
    # chip's opt-in limit.
    mma_types: tuple[str, ...] = ("f16", "bf16")
    ragged: bool = True
    mma_always: bool = True
    shared_cap: int = 227 * 1024
    fusion = frozenset({"epilogue", "dual"})  # a GEMM's elementwise readers and dual GEMMs (codegen/gpu/plan.py)

    def lowering(self) -> str:
        """prism-lower-gpu for this chip."""
        return f"prism-lower-gpu{{chip={self.chip}}}"

    def block_resources(self, op: Contraction, values: KnobValues) -> tuple[Knob, Knob, Knob]:
        """What Prism's GEMM kernels declare: the wgmma kernel's warpgroups and ``.maxnreg``, the mma.sync and FMA
        kernels' warps and register allotment (:mod:`.nvidia_registers`); STAGES of tiles."""
        bm, bn, bk, wm, wn = (values[k] for k in ("BM", "BN", "BK", "WM", "WN"))
        units = (bm // wm) * (bn // wn)  # warps, or on the wgmma kernel consumer warpgroups
        tiles = values.get("STAGES", 2) * (bm * bk * op.elem_bytes[0] + bk * bn * op.elem_bytes[1])
        if nvidia_space.uses_wgmma(op, self):
            return (nvidia_registers.WARPGROUP * (1 + units), nvidia_registers.wgmma_max_registers(units),
                    tiles + nvidia_space.WGMMA_RESERVED_BYTES)
        registers = nvidia_registers.gemm_allotment(bm, bn, bk, wm, wn, values.get("SPLITK", 1),
                                                    tensor_cores=values.get("MMA", 0) > 0)
        return units * self.warp_size, registers, tiles

    def space(self, op: Problem) -> Space | None:
        """The space of Prism's own kernel for a contraction (:mod:`.nvidia_space`); for another family, its
        model's space on this chip."""
        if family_of(op) is None:
            return nvidia_space.gemm_space(op, self)
        return super().space(op)


def wave_tiles(wave: Knob, tiles_m: Knob, tiles_n: Knob, group_m: Knob) -> tuple[Knob, Knob]:
    """The rows of M tiles and columns of N tiles that the first ``wave`` tiles (at most one batch index's
    ``tiles_m x tiles_n``) span in the order of groups of ``group_m`` rows (codegen.gpu.gemm.tile_order): whole
    groups span every column, a group's first tiles its rows and as many columns as they fill."""
    group = np.minimum(group_m, tiles_m)
    whole = wave // (group * tiles_n)
    rest = wave - whole * group * tiles_n
    last = np.maximum(np.minimum(group, tiles_m - whole * group), 1)  # the rows of the group the rest lies in
    rows = np.minimum(tiles_m, whole * group + np.where(rest > 0, np.minimum(last, rest), 0))
    cols = np.where(whole > 0, tiles_n, ceil_div(rest, last))
    return rows, cols


def gemm_space(op: Contraction, target: GpuModel, stages: int = 1) -> Space:
    """Block tile (BM, BN, BK), warp tile (WM, WN) and tensor-core use (MMA) for a GPU."""
    tiles = {"m": "bm", "n": "bn", "k": "bk"}
    mma_ok = op.input_type in target.mma_types
    lowest_mma = 1 if mma_ok and target.mma_always else 0
    universe = (f"{shape_param_bounds()} and 4 <= bm <= 8 and 4 <= bn <= 8 and 3 <= bk <= 6"
                f" and 3 <= wm <= bm and 3 <= wn <= bn and {lowest_mma} <= mma <= {1 if mma_ok else 0}")
    a_bytes = op.footprint_exponent(0, tiles)
    b_bytes = op.footprint_exponent(1, tiles)
    max_threads_log2 = int(math.log2(target.max_threads_per_block))
    warp_log2 = int(math.log2(target.warp_size))
    # f32 accumulators per thread: a warp's WM x WN tile over its lanes; keep
    # half the register file for addresses, fragments and pipelining.
    acc_regs_log2 = int(math.log2(target.regs_per_thread // 2))
    mm, mn, mk = target.mma_shape
    groups = [
        ("threads", f"(bm - wm) + (bn - wn) + {warp_log2} <= {max_threads_log2} and (bm - wm) + (bn - wn) >= 1"),
        ("registers", f"wm + wn - {warp_log2} <= {acc_regs_log2}"),
        ("shared_memory", pow2_sum_le(a_bytes, b_bytes, min(target.smem_per_block, target.shared_cap) / stages)),
        ("tensor_core", f"mma = 0 or (wm >= {int(math.log2(mm))} and wn >= {int(math.log2(mn))}"
                        f" and bk >= {int(math.log2(mk))})"),
        ("shape", " and ".join([shape_fit("bm", "m", 4), shape_fit("bn", "n", 4), shape_fit("bk", "k", 3)])),
    ]
    if not target.ragged:
        # Kernels without remainder handling (IREE's on this target): tiles divide the problem.
        groups.append(("divisibility", "bm <= DM and bn <= DN and bk <= DK"))
    return Space(kind="gemm", knobs={"bm": "BM", "bn": "BN", "bk": "BK", "wm": "WM", "wn": "WN"},
                 flags={"mma": "MMA"}, universe=universe, groups=tuple(groups))


# H100 SXM5 and H200 share the GH100 die: 132 SMs, 227 KiB of shared memory per
# block (228 KiB per SM), 64 Ki registers per SM, 255 per thread.
_HOPPER = dict(
    chip="sm_90a", sm_count=132, smem_per_block=227 * 1024, smem_per_sm=228 * 1024,
    regs_per_thread=255, regs_per_sm=65536, max_threads_per_block=MAX_THREADS_PER_BLOCK,
)

GPU_TARGETS: dict[str, NvidiaTarget] = {
    # H200 SXM: 132 SMs and 60 MB of L2 (device properties); the copy bandwidth
    # and the bf16 matmul rate are measured (benchmarks/RESULTS.md, "Measurements
    # behind rules in the code": H200 figures), fp32 from the datasheet (67 TFLOP/s).
    "h200": NvidiaTarget(name="h200", l2_bytes=60 * 1024**2, dram_bytes_per_s=4.3e12 * BANDWIDTH_MARGIN,
                      flops={"f16": 788 * _TERA, "bf16": 788 * _TERA, "f32": 67 * _TERA}, **_HOPPER),
    # H100 SXM5 80 GB: 3.35 TB/s HBM3, L2 50 MB, dense f16/bf16 989 TFLOP/s,
    # fp32 67 TFLOP/s (datasheet). The matmul rate is scaled like the H200's
    # measured 788/989 since the arithmetic units are the same.
    "h100": NvidiaTarget(name="h100", l2_bytes=50 * 1024**2, dram_bytes_per_s=3.35e12 * BANDWIDTH_MARGIN,
                      flops={"f16": 788 * _TERA, "bf16": 788 * _TERA, "f32": 67 * _TERA}, **_HOPPER),
    # A100 SXM4 80 GB: 108 SMs, 163 KiB shared memory per block (164 KiB per
    # SM), 40 MB L2, 2.039 TB/s HBM2e, dense f16/bf16 312 TFLOP/s, fp32 19.5.
    "a100": NvidiaTarget(name="a100", chip="sm_80", sm_count=108, smem_per_block=163 * 1024,
                      smem_per_sm=164 * 1024, regs_per_thread=255, regs_per_sm=65536,
                      max_threads_per_block=MAX_THREADS_PER_BLOCK, l2_bytes=40 * 1024**2,
                      dram_bytes_per_s=2.039e12 * BANDWIDTH_MARGIN,
                      flops={"f16": 312 * _TERA, "bf16": 312 * _TERA, "f32": 19.5 * _TERA}),
}
