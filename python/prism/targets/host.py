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
from collections.abc import Mapping
from dataclasses import dataclass, field
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
from prism.targets.host_calibration import FAMILY_RATES, KERNELS, Calibration, config_path, parse_step_key
from prism.targets.host_machine import Machine, described_machine

# Vector FMA units per core, on every x86 core Prism targets.
FMA_PIPES = 2
# The largest register block a calibration table holds: 16 rows of 4 vectors.
MAX_REGISTER_ROWS, MAX_REGISTER_VECTORS = 16, 4


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
    # Seconds per step of K of the micro-kernel shapes measured on this machine (.host_calibration.step_key)
    step_seconds: Mapping[str, float] = field(default_factory=dict)
    rates: str = "configured defaults"  # where the rates come from: "calibrated", "zen5 defaults", ...
    # The attention kernel's measured time over its modelled compute, per register block ("4x64"), and at decode
    # (one query per head) per one-row block ("1x64")
    attention_factors: Mapping[str, float] = field(default_factory=dict)
    decode_attention_factors: Mapping[str, float] = field(default_factory=dict)
    # The direct kernel's rate streaming B from DRAM at decode, where it was measured (else dram_bytes_per_s)
    stream_bytes_per_s: float | None = None
    amx: bool = False  # AMX tiles with bf16 products (prism.codegen.cpu.kernel_amx)
    # The pipelined copy's measured time over that of its fastest slice depth, per TK ("128")
    pipelined_factors: Mapping[str, float] = field(default_factory=dict)
    # The pipelined copy's measured time over the copy in a phase of its own, on a B the L3 holds (None: not measured)
    pipelined_in_cache: float | None = None

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

    @property
    def copy_in_phase_bytes(self) -> int:
        """The largest B that the direct kernel copies into panels in a phase of its own, not pipelined
        (:func:`prism.kernels.host_gemm.copy_in_phase_bytes`)."""
        return host_gemm.copy_in_phase_bytes(self.l3_bytes, self.pipelined_in_cache)

    def lowering(self, copy_in_phase_bytes: int | None = None) -> str:
        """prism-lower-cpu on every core; with the largest B copied into panels in a phase of its own where
        ``copy_in_phase_bytes`` is given (else the pass takes :attr:`copy_in_phase_bytes`)."""
        option = "" if copy_in_phase_bytes is None else f" copy_in_phase_bytes={copy_in_phase_bytes}"
        return f"prism-lower-cpu{{threads={self.cores}{option}}}"

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

    def sweep_bytes(self, op: Problem, assumed: int = 1024) -> int:
        """Twice the L3 where the cost prices ``op``'s inputs streaming from memory (a measured call must not find
        them where the last call left them), else 0: see :mod:`prism.runtime.measure`."""
        if family_of(op) is None:
            cold = host_cost.streams_from_memory(self, op, assumed)
        else:
            model = family_model(op, self.name)
            cold = model.from_memory is not None and model.from_memory(self, op, assumed)
        return 2 * self.l3_bytes if cold else 0

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

    def micro_kernel_cycles(self, rm: Knob, rn: Knob, tk: Knob, lanes: int, kernel: str | None = None) -> Knob:
        """Cycles of one RM x RN micro-tile over one TK slice of K (:func:`.host_cost.micro_kernel_cycles`)."""
        return host_cost.micro_kernel_cycles(self, rm, rn, tk, lanes, kernel)

    @functools.cached_property
    def _step_tables(self) -> dict[str, np.ndarray]:
        """Per kernel, the measured seconds per step by [RM, RN / f32 lanes], NaN where nothing was measured."""
        lanes = self.vector_bits // 32
        tables = {kernel: np.full((MAX_REGISTER_ROWS + 1, MAX_REGISTER_VECTORS + 1), np.nan) for kernel in KERNELS}
        for key, seconds in self.step_seconds.items():
            kernel, rm, rn = parse_step_key(key)
            if rn % lanes == 0 and rm <= MAX_REGISTER_ROWS and rn // lanes <= MAX_REGISTER_VECTORS:
                tables[kernel][rm, rn // lanes] = seconds
        return tables

    def attention_factor(self, rm: Knob, rn: Knob, decode: bool = False) -> Knob:
        """How much slower than modelled the attention kernel ran with an RM x RN register block where the
        calibration timed it (1 where it did not); ``decode``: at one query per head, where it timed that."""
        factors = {**self.attention_factors, **(self.decode_attention_factors if decode else {})}
        if not factors:
            return np.ones(np.broadcast(rm, rn).shape)
        table = {tuple(map(int, key.split("x"))): factor for key, factor in factors.items()}
        lookup = np.vectorize(lambda r, n: table.get((int(r), int(n)), 1.0), otypes=[float])
        return lookup(rm, rn)

    def pipelined_factor(self, tk: Knob) -> Knob:
        """How much slower than at its fastest slice depth the pipelined copy ran at depth ``tk``, from the
        calibration's nearest depth (in powers of two); 1 where nothing was measured."""
        if not self.pipelined_factors:
            return np.ones(np.shape(tk))
        depths = np.array(sorted(int(key) for key in self.pipelined_factors))
        factors = np.array([self.pipelined_factors[str(depth)] for depth in depths])
        nearest = np.abs(np.log2(np.asarray(tk, dtype=np.float64))[..., None] - np.log2(depths)).argmin(axis=-1)
        return factors[nearest]

    def vector_fma_cycles(self, lanes: int) -> float:
        """The fewest cycles per full-width vector FMA of any micro-kernel: the issue rate, or a measured step
        that beats it (a calibration's FMA rate is a library's, which Prism's own kernels may outrun). A lower
        bound on the cost must take this one."""
        floor = 1 / self.vector_fmas_per_cycle
        for kernel, table in self._step_tables.items():
            rows, vectors = np.nonzero(~np.isnan(table))
            if len(rows) and lanes == self.vector_bits // 32:
                per_fma = self.measured_step_cycles(kernel, rows, vectors * lanes, lanes) / (rows * vectors)
                floor = min(floor, float(per_fma.min()))
        return floor

    def measured_step_cycles(self, kernel: str, rm: Knob, rn: Knob, lanes: int) -> np.ndarray:
        """Cycles (of :meth:`cycle_seconds`' clock) per step of K of an RM x RN micro-tile of ``kernel`` as
        measured on this machine; NaN for a shape, kernel or vector type (other than f32) not measured."""
        shape = np.broadcast(rm, rn).shape
        if not self.step_seconds or lanes != self.vector_bits // 32:
            return np.full(shape, np.nan)
        rows, vectors = np.asarray(rm, dtype=np.int64), np.asarray(rn, dtype=np.int64) // lanes
        inside = (rows <= MAX_REGISTER_ROWS) & (vectors <= MAX_REGISTER_VECTORS)
        seconds = self._step_tables[kernel][np.where(inside, rows, 0), np.where(inside, vectors, 0)]
        cycle = 2 * lanes * self.vector_fmas_per_cycle / (self.flops["f32"] / self.cores)
        return np.broadcast_to(np.where(inside, seconds / cycle, np.nan), shape)

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
    :func:`config_path`), else from those recorded for the machine's core
    family (:data:`~.host_calibration.FAMILY_RATES`), else from configured
    defaults; the environment variables PRISM_HOST_GFLOPS, PRISM_HOST_GBPS
    and PRISM_HOST_FMA_BITS override them all. Nothing is timed here, so
    outputs stay a function of the input and the configuration.
    """
    machine = described_machine()
    rates, source = configured_rates(machine), "configured defaults"
    path = config_path()
    calibration = Calibration.read(path, machine) if path else None
    if calibration is not None:
        rates, source = calibration, "calibrated"
    elif machine.core in FAMILY_RATES:
        rates, source = FAMILY_RATES[machine.core].over(rates), f"{machine.core} defaults"
    return target_for(machine, rates, source)


def configured_rates(machine: Machine) -> Calibration:
    """The rates taken where nothing was measured: two FMA pipes per core at ~3.6 GHz, each fma_bits wide;
    20 GB/s from DRAM; 32 bytes per cycle per core from L3."""
    fma_bits = int(os.environ.get("PRISM_HOST_FMA_BITS", machine.fma_bits))
    return Calibration(machine=machine.machine, cores=machine.cores,
                       gflops=machine.cores * FMA_PIPES * 2 * (fma_bits // 32) * 3.6,
                       dram_gbps=20.0, cache_gbps=machine.cores * 32 * 3.6)


def target_for(machine: Machine, rates: Calibration, source: str = "calibrated") -> HostTarget:
    """The host target of ``machine`` at ``rates`` (``source`` says where they come from), with the
    environment's overrides (see :func:`host_target`)."""
    gflops = float(os.environ.get("PRISM_HOST_GFLOPS", rates.gflops))
    gbps = float(os.environ.get("PRISM_HOST_GBPS", rates.dram_gbps))
    return HostTarget(
        name="host", cores=machine.cores,
        l1d_bytes=machine.l1d_bytes, l1d_ways=machine.l1d_ways, l2_bytes=machine.l2_bytes,
        l3_bytes=min(machine.l3_bytes, rates.l3_bytes or machine.l3_bytes),
        vector_bits=machine.vector_bits, vector_registers=32 if machine.vector_bits == 512 else 16,
        fma_pipes=FMA_PIPES, fma_bits=int(os.environ.get("PRISM_HOST_FMA_BITS", machine.fma_bits)),
        flops={"f32": gflops * 1e9, "f16": gflops * 1e9, "bf16": gflops * bf16_factor(machine) * 1e9,
               "f64": gflops * 0.5e9},
        dram_bytes_per_s=gbps * 1e9 * BANDWIDTH_MARGIN,
        cache_bytes_per_s=rates.cache_gbps * 1e9 * BANDWIDTH_MARGIN,
        bf16_dot=bool(machine.bf16_dot), amx=bool(machine.amx),
        # Measured rates apply to the machine they were measured on, at its measured FMA rate and bandwidth.
        step_seconds={} if "PRISM_HOST_GFLOPS" in os.environ else rates.steps,
        attention_factors={} if "PRISM_HOST_GFLOPS" in os.environ else rates.attention,
        decode_attention_factors={} if "PRISM_HOST_GFLOPS" in os.environ else rates.decode_attention,
        pipelined_factors={} if "PRISM_HOST_GBPS" in os.environ else rates.pipelined,
        pipelined_in_cache=None if "PRISM_HOST_GBPS" in os.environ else rates.pipelined_in_cache,
        rates=source,
        stream_bytes_per_s=None if rates.stream_gbps is None or "PRISM_HOST_GBPS" in os.environ
        else rates.stream_gbps * 1e9 * BANDWIDTH_MARGIN,
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
