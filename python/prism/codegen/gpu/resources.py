"""What each GPU kernel costs in registers and shared memory, predicted from its spec, and what ``ptxas`` says.

:func:`predict` takes a kernel's spec (and the emitted :class:`Kernel`, whose
name tells a kernel's variant: the unaligned GEMM, a row kernel's class, the
decode or combine half of attention) and gives :class:`Resources`:

- **shared memory**, exact: the dynamic bytes of the launch (the tiles'
  rings) plus the static ``.shared`` the kernel declares (the wgmma kernel's
  mbarrier rings, a block row kernel's slot per warp and reduction). In a
  module that declares dynamic shared memory (``.extern .shared .align
  1024``, every module holding a GEMM or attention kernel) ptxas rounds a
  kernel's static bytes up to that alignment, so the model does too.
- **registers per thread**: an estimate and a band
  ``[registers_floor, registers_bound]`` that ptxas's count lies in. The
  wgmma kernel declares ``.maxnreg`` (what ``setmaxnreg`` moves:
  PRODUCER_REGISTERS for the producer, CONSUMER_REGISTERS for each
  consumer), which is what ptxas allots: exact. The mma.sync and FMA
  kernels declare their allotment (:mod:`prism.targets.nvidia_registers`,
  :func:`prism.codegen.gpu.gemm.gemm_tile_allotment`) as ``.maxnreg`` (the
  accumulators, a k-step's and the hoisted operand fragments, element-loaded
  chunks, split-K's last-block sum, rounded up to 8), calibrated so that
  ptxas keeps to it without spilling (it takes the space's knobs as arrays
  as well). Attention, row, elementwise and
  generic kernels: the sum of what a thread holds (attention's fragment
  registers, a row's cached chunks) plus a fixed overhead per kind,
  calibrated against ptxas, within REGISTER_TOLERANCE (and at most 255, or
  the kernel's ``.maxnreg``).

:func:`assembled` reads what ptxas reports per kernel of a module
(:func:`prism.codegen.gpu.ptx.ptxas`) and adds each launch's dynamic bytes,
for comparing with :func:`predict`.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace

from prism.codegen.gpu import attention as attn
from prism.codegen.gpu import gemm as mma
from prism.codegen.gpu import gemm_sm90 as sm90
from prism.codegen.gpu import rows
from prism.codegen.gpu.spec import (
    AttentionSpec,
    GemmSpec,
    GemmTile,
    GenericSpec,
    Kernel,
    PointwiseSpec,
    RowSpec,
)
from prism.targets.nvidia_registers import MAX_REGISTERS

# The relative error of the attention, row, elementwise and generic kernels' register estimates.
REGISTER_TOLERANCE = 0.25
# The alignment of the module's dynamic shared memory (ptx.py declares it so): ptxas rounds each kernel's static
# shared bytes up to it.
DYNAMIC_ALIGN = 1024
MBARRIER_BYTES = 8
GEMM_FLOOR_OVERHEAD = 8
ATTENTION_DECODE_EXTRA = 8  # the decode kernel's share bounds and partial-result addresses
COMBINE_REGISTERS = 36  # the decode's combine: a few running values and addresses a thread
# ptxas gives the combine kernel 23 to 40 registers by head size and chip: its band
MIN_REGISTERS_COMBINE, MAX_REGISTERS_COMBINE = 16, 48
ROW_REGISTERS = 19  # a row kernel without cached chunks: ids, the row's addresses, the running reductions
POINTWISE_REGISTERS = 22
GENERIC_REGISTERS = 28


@dataclass(frozen=True)
class Resources:
    """A kernel's predicted resources: ``registers`` per thread (the estimate), ``registers_bound`` (the most
    ptxas may allot), ``shared_bytes`` (static + dynamic, exact), ``registers_floor`` (the least)."""

    registers: int
    registers_bound: int
    shared_bytes: int
    registers_floor: int = 0

    def admits(self, registers: int) -> bool:
        """Whether a register count ptxas reported lies in the band."""
        return self.registers_floor <= registers <= self.registers_bound


def _band(estimate: int, shared: int, cap: int = MAX_REGISTERS) -> Resources:
    """The estimate with its tolerance band (the top capped at ``cap``)."""
    estimate = min(estimate, cap)
    return Resources(estimate, min(cap, math.ceil(estimate * (1 + REGISTER_TOLERANCE))), shared,
                     math.floor(estimate * (1 - REGISTER_TOLERANCE)))


def static_shared(raw: int, aligned: bool = True) -> int:
    """Static shared bytes as ptxas reports them: rounded up to DYNAMIC_ALIGN in a module with dynamic shared
    memory (``aligned``)."""
    return -(-raw // DYNAMIC_ALIGN) * DYNAMIC_ALIGN if aligned and raw else raw


def predict(spec, chip: str, kernel: Kernel | None = None, aligned: bool = True) -> Resources:
    """The resources of the kernel emitted for ``spec`` on ``chip`` (``kernel`` names its variant; without it,
    the first kernel the spec makes). ``aligned``: the module declares dynamic shared memory."""
    name = kernel.name if kernel is not None else ""
    if isinstance(spec, GemmSpec):
        return predict_gemm(spec, chip, name.endswith("_unaligned") or "_unaligned_class" in name, aligned)
    if isinstance(spec, AttentionSpec):
        if name.endswith(("_prefill_sm90", "_decode_sm90")):
            return predict_sm90_attention(spec, aligned)
        return predict_attention(spec, chip, "_combine" in name)
    if isinstance(spec, RowSpec):
        return predict_rows(spec, name, aligned)
    if isinstance(spec, PointwiseSpec):
        return _band(POINTWISE_REGISTERS, 0)
    if isinstance(spec, GenericSpec):
        return _band(GENERIC_REGISTERS + len(spec.inputs) + len(spec.outputs), 0)
    raise TypeError(f"no resource model for {type(spec).__name__}")


# -- GEMM --------------------------------------------------------------------------------------------------------


def gemm_kernel(spec: GemmSpec, chip: str) -> tuple[str, GemmSpec]:
    """Which GEMM kernel ``spec`` makes on ``chip`` (``"wgmma"``, ``"mma"`` or ``"fma"``) and the spec with the
    tile it takes, as :mod:`prism.codegen.gpu.kernels` routes it (a tile a kernel refuses becomes its default)."""
    from prism.codegen.gpu.kernels import MMA_SYNC_DUAL_TILE, MMA_SYNC_TILE, WGMMA_TILE
    if chip == "sm_90a" and spec.a.dtype in sm90.INPUT_TYPES:
        for tile in (spec.tile, WGMMA_TILE):
            candidate = replace(spec, tile=tile)
            if sm90.tma_problem(candidate) is None:
                return "wgmma", candidate
    elif mma.gemm_tile_problem(spec, chip) is None:
        return ("mma" if spec.a.dtype in mma.TENSOR_CORE_TYPES else "fma"), spec
    fallback = replace(spec, tile=MMA_SYNC_DUAL_TILE if spec.b2 is not None else MMA_SYNC_TILE)
    return ("mma" if spec.a.dtype in mma.TENSOR_CORE_TYPES else "fma"), fallback


def predict_gemm(spec: GemmSpec, chip: str, unaligned: bool = False, aligned: bool = True) -> Resources:
    """A GEMM kernel: wgmma (registers = its ``.maxnreg``, exact) or mma.sync / FMA (see :func:`gemm_registers`)."""
    kind, spec = gemm_kernel(spec, chip)
    if kind == "wgmma":
        plan = sm90._plan(spec)
        barriers = 2 * spec.tile.STAGES * MBARRIER_BYTES  # a full and an empty mbarrier per stage
        shared = plan.launch_shared_bytes + static_shared(barriers, aligned)
        return Resources(plan.max_registers, plan.max_registers, shared, plan.max_registers)
    dynamic = mma.gemm_shared_bytes(spec.tile, spec.a.dtype, a_layout=spec.a_layout, b_layout=spec.b_layout,
                                    dual=spec.b2 is not None)
    return replace(gemm_registers(spec, kind, element_loaded(spec, unaligned)), shared_bytes=dynamic)


def gemm_registers(spec: GemmSpec, kind: str, loaded: tuple[bool, bool] = (False, False)) -> Resources:
    """The mma.sync or FMA kernel's registers a thread (shared bytes left 0): the kernel declares its
    :func:`~prism.codegen.gpu.gemm.gemm_tile_allotment` as ``.maxnreg``, which ptxas keeps to (the bound) without
    spilling; it uses about all of it (the floor: the accumulators plus GEMM_FLOOR_OVERHEAD)."""
    t = spec.tile
    allotment = mma.gemm_tile_allotment(spec, loaded)
    accumulators = t.WM * t.WN // 32 * (2 if spec.b2 is not None else 1)
    floor = min(allotment, accumulators + GEMM_FLOOR_OVERHEAD)
    return Resources(allotment, allotment, 0, floor)


def element_loaded(spec: GemmSpec, unaligned: bool) -> tuple[bool, bool]:
    """Whether A and B are loaded element by element (16-bit rows of odd stride; a size symbol's stride in the
    unaligned variant)."""
    widths = mma._copy_widths(spec)
    found = []
    for name in ("a", "b"):
        width = widths[name]
        if isinstance(width, str):
            width = mma._fallback_width(name, spec) if unaligned else mma.WIDEST[name]
        found.append(width == 0)
    return found[0], found[1]


# -- attention, rows ----------------------------------------------------------------------------------------------


def predict_attention(spec: AttentionSpec, chip: str, combine: bool = False) -> Resources:
    """Flash attention: the plan's fragment registers (Q, O, scores, P, copy addresses, REGISTER_OVERHEAD),
    ATTENTION_DECODE_EXTRA more in the decode kernel; capped at the ``.maxnreg`` it declares. The combine kernel:
    COMBINE_REGISTERS. Shared memory: the plan's tiles (the combine kernel has none)."""
    if combine:  # a few dozen registers whatever the head size: ptxas's count varies more than the band allows
        return Resources(COMBINE_REGISTERS, MAX_REGISTERS_COMBINE, 0, MIN_REGISTERS_COMBINE)
    plan = attn.plan_attention(spec, chip)
    estimate = plan.registers + (ATTENTION_DECODE_EXTRA if plan.decode else 0)
    return _band(estimate, plan.shared_bytes, attn.REGISTER_LIMIT)


def predict_sm90_attention(spec: AttentionSpec, aligned: bool = True) -> Resources:
    """The sm_90a TMA/wgmma prefill kernel and its decode split mode: registers = its ``.maxnreg`` (exact, as
    the wgmma GEMM's); shared memory: the plan's Q tile and K/V rings plus its mbarriers (static, under a
    DYNAMIC_ALIGN block)."""
    from prism.codegen.gpu.attention_sm90 import plan_sm90_attention
    plan = plan_sm90_attention(spec)
    shared = plan.shared_bytes + static_shared(MBARRIER_BYTES, aligned)
    return Resources(plan.max_registers, plan.max_registers, shared, plan.max_registers)


def predict_rows(spec: RowSpec, name: str = "", aligned: bool = True) -> Resources:
    """A row kernel (the plan whose suffix ``name`` ends with): ROW_REGISTERS plus the registers of the row's
    chunks it caches; static shared memory: one f32 slot per warp and reduction in a block-per-row kernel."""
    plans = rows.row_plans(spec)
    plan = next((p for p in plans if p.suffix and name.endswith(p.suffix)), plans[0])
    cached = max(p.cached * rows._cache_registers_per_chunk(spec, p.vector)
                 for p in (plan, plan.fallback) if p is not None)
    raw = rows.WARP * len(spec.reductions) * 4 if plan.threads > rows.WARP and spec.reductions else 0
    return _band(ROW_REGISTERS + cached, static_shared(raw, aligned))


# -- what ptxas says -----------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Assembled:
    """One kernel as assembled: ptxas's registers and spill bytes, static + dynamic shared bytes."""

    registers: int
    spill_bytes: int
    shared_bytes: int


def assembled(ptx: str, chip: str, kernels: list[Kernel]) -> dict[str, Assembled]:
    """Per kernel of ``ptx`` (a module of ``kernels``), what ptxas reports, its launch's dynamic bytes added."""
    from prism.codegen.gpu.ptx import ptxas
    found = ptxas(ptx, chip)
    return {k.name: Assembled(found[k.name].registers, found[k.name].spill_bytes,
                              found[k.name].shared_bytes + k.launch.shared_bytes) for k in kernels}


def tile_of(spec: GemmSpec, kernel_name: str, classes: tuple[tuple[str, GemmTile], ...]) -> GemmSpec:
    """The spec of one size class's kernel (named ``..._class<i>``) of a step with ``classes``."""
    if not classes or len(classes) == 1:
        return replace(spec, tile=classes[0][1]) if classes else spec
    index = int(kernel_name.rsplit("_class", 1)[1])
    return replace(spec, tile=classes[index][1])
