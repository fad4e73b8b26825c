"""The CPU Prism runs on: the host target, the one object that answers for it.

The target's parts have modules of their own, by role: the machine read
off /proc, sysfs or a JSON description (:mod:`.host_machine`), the
calibration file (:mod:`.host_calibration`), the GEMM space
(:mod:`.host_space`) and cost (:mod:`.host_cost`), the attention family
(:mod:`.host_attention`) and the IREE export (:mod:`.host_iree`); the
kernel's decisions are :mod:`prism.kernels.host_gemm`'s.
Its FMA rate and bandwidth come from the calibration file, else from
configured defaults (two FMA pipes per core at ~3.6 GHz, each as wide as
the machine's ``fma_bits``: 256 on a Zen 4 with AVX-512, which takes a
512-bit FMA on both pipes at once, else the vector width), and can be
overridden with environment variables ``PRISM_HOST_GFLOPS``,
``PRISM_HOST_GBPS`` and ``PRISM_HOST_FMA_BITS``.
"""

from __future__ import annotations

import functools
import os
from dataclasses import dataclass
from typing import TYPE_CHECKING

import numpy as np

from prism.kernels import host_gemm
from prism.search.cost import Knob, KnobValues
from prism.search.families import family_model, family_of
from prism.search.space import Contraction, Space

if TYPE_CHECKING:
    from prism.search.family import Problem
from prism.targets import host_cost, host_iree, host_space
from prism.targets.base import BANDWIDTH_MARGIN
from prism.targets.host_calibration import Calibration, config_path
from prism.targets.host_machine import Machine, described_machine


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
    bf16_dot: bool = False  # AVX512-BF16 dot products (prism.codegen.cpu.kernel_bf16)
    amx: bool = False  # AMX tiles with bf16 products (prism.codegen.cpu.kernel_amx)

    artifact = "llvm"
    runs_here = True
    block_overhead_seconds = host_cost.BLOCK_OVERHEAD_SECONDS
    # f32 products (see prism.codegen.cpu.epilogue); f32 attention chains (prism.codegen.cpu.attention); row
    # statistics with their scalar ops per row (prism.codegen.cpu.rows)
    fusion = frozenset({"epilogue", "dual", "attention", "rows"})

    @property
    def vector_fmas_per_cycle(self) -> float:
        """Full-width vector FMAs one core issues per cycle (1 for 512-bit vectors on two 256-bit pipes)."""
        return self.fma_pipes * self.fma_bits / self.vector_bits

    def lowering(self) -> str:
        """prism-lower-cpu on every core."""
        return f"prism-lower-cpu{{threads={self.cores}}}"

    def space(self, op: Problem) -> Space | None:
        """Cache tiles (TM, TN, TK) and register block (RM, RN) (:mod:`.host_space`); for another family, its
        model's space on the host (attention's: :mod:`.host_attention`)."""
        if family_of(op) is None:
            return host_space.gemm_space(op, self)
        model = family_of(op).model(self.name)
        return None if model is None else model.space(op, self)

    def seconds(self, op: Problem, values: KnobValues, assumed: int = 1024) -> np.ndarray:
        """Predicted seconds of ``op`` scheduled by ``values`` (:mod:`.host_cost`, or its family's model)."""
        if family_of(op) is None:
            return host_cost.gemm_seconds(self, op, values, assumed) / self._tile_efficiency(op, values)
        return family_model(op, self.name).seconds(self, op, values, assumed)

    def lower_bound(self, op: Problem, values: KnobValues, assumed: int = 1024) -> np.ndarray:
        """A bound below :meth:`seconds` (:func:`.host_cost.gemm_lower_bound`, or its family's model)."""
        if family_of(op) is None:
            return host_cost.gemm_lower_bound(self, op, values, assumed) / self._tile_efficiency(op, values)
        return family_model(op, self.name).lower_bound(self, op, values, assumed)

    def _tile_efficiency(self, op: Problem, values: KnobValues) -> np.ndarray | float:
        """The share of the bf16 rate that a product on AMX tiles reaches with the tiles of ``values``
        (:func:`.host_space.amx_efficiency`; the same factor on the cost and its bound keeps the bound below it);
        1 for any other product."""
        return host_space.amx_efficiency(values) if host_space.amx_product(op, self) else 1.0

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

    def cost_text(self, op: Problem) -> str:
        """The host roofline of ``op``'s family (with the packing phases of a contraction), as text."""
        return host_cost.COST_TEXT if family_of(op) is None else family_model(op, self.name).cost_text

    def fuses_on_tiles(self, op: Contraction, choice: dict[str, int]) -> bool:
        """Whether the code generator runs the product ``op``, scheduled by ``choice``, in Prism's GEMM kernel
        reading B as written, the kernel that takes an epilogue on its tiles and a dual partner; else it takes
        the transform path, with neither (the decisions of prism.codegen.cpu.schedule.kernel_plan)."""
        sizes = dict(zip(op.roles, op.extents, strict=True))
        m, n, k = sizes.get("m"), sizes.get("n"), sizes.get("k")
        tiles = host_gemm.plan_tiles(choice, m, n, k, "batch" in op.roles, self.cores, self.lanes(op),
                                     op.elem_bytes[1])
        return bool(host_gemm.serves_as_written(m, tiles.tm, tiles.rm, tiles.reuse))

    def pass_seconds(self, moved: int) -> float:
        """One loop nest streaming ``moved`` bytes, from L3 when they fit half of it, else from DRAM."""
        fits = host_gemm.stays_in_cache(moved, self.l3_bytes)
        return moved / (self.cache_bytes_per_s if fits else self.dram_bytes_per_s)

    def micro_kernel_cycles(self, rm: Knob, rn: Knob, tk: Knob, lanes: int) -> Knob:
        """Cycles of one RM x RN micro-tile over one TK slice of K (:func:`.host_cost.micro_kernel_cycles`)."""
        return host_cost.micro_kernel_cycles(self, rm, rn, tk, lanes)

    def lanes(self, op: Contraction) -> int:
        """Vector lanes of the accumulator's type."""
        return self.vector_bits // (8 * op.acc_bytes)

    def cycle_seconds(self, op: Contraction, lanes: int | None = None) -> float:
        """Seconds per cycle of one core, from its FMA rate (one FMA is 2 FLOP per lane), for vectors of
        ``lanes`` (default: :meth:`lanes`)."""
        per_cycle = 2 * (lanes or self.lanes(op)) * self.vector_fmas_per_cycle
        return per_cycle / (self.flops[op.input_type] / self.cores)


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
    # Two FMA pipes per core at ~3.6 GHz, each fma_bits wide; calibrate (python -m prism.calibrate) or
    # override where the machine differs.
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
        flops={"f32": gflops * 1e9, "f16": gflops * 1e9, "bf16": gflops * bf16_factor(machine) * 1e9,
               "f64": gflops * 0.5e9},
        dram_bytes_per_s=gbps * 1e9 * BANDWIDTH_MARGIN,
        cache_bytes_per_s=cache_gbps * 1e9 * BANDWIDTH_MARGIN,
        bf16_dot=bool(machine.bf16_dot), amx=bool(machine.amx),
    )


# A core's AMX unit peaks at 1024 bf16 FLOP per cycle (one 16x16x32 tdpbf16ps per 16 cycles), 16 times the 64 of
# two 512-bit f32 FMA pipes; tile loads and stores, the packing of B and the staging of ragged edges take a share
# of that, and a task's tiles wait on L2, so the rate assumed is half the peak: 8 times f32. The cost scales it down
# further by the share of a full tile that a schedule's tiles reach (host_space.amx_efficiency: 2/3 at best).
AMX_BF16_FACTOR = 8


def bf16_factor(machine: Machine) -> float:
    """bf16 products' rate over f32's: AMX_BF16_FACTOR on AMX tiles (prism.codegen.cpu.kernel_amx); 2 on AVX512-BF16
    dot products, two bf16 products per lane (prism.codegen.cpu.kernel_bf16); else 1, the inputs widened to f32 and
    multiplied at its rate."""
    if machine.amx:
        return AMX_BF16_FACTOR
    return 2 if machine.bf16_dot else 1
