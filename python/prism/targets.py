"""The machines Prism optimizes for, with the source of every number.

GPU figures come from the vendors' datasheets and CUDA programming guide
(compute-capability tables), except where a line says "measured": those were
read on an H200 SXM in October and November 2026 (PyTorch device
properties, a device-to-device copy, an 8192^3 bf16 matmul). Effective bandwidths carry a
safety margin because a roofline that assumes peak bandwidth prunes too much.

The ``host`` target is read from the machine Prism runs on (``/proc/cpuinfo``
and sysfs cache descriptions); its FMA rate and bandwidth are configured
defaults for the Zen 4 class of machine the project is developed on (an FMA
ceiling of 230 GFLOP/s f32 measured on 2 cores; two 256-bit FMA pipes per
core), and can be overridden with environment variables ``PRISM_HOST_GFLOPS``,
``PRISM_HOST_GBPS`` and ``PRISM_HOST_FMA_BITS`` (512 for cores with full-width
AVX-512 FMA units).
"""

from __future__ import annotations

import functools
import os
import re
from dataclasses import dataclass, field
from pathlib import Path

from prism.errors import TargetError

# Keeping 80% of a copy bandwidth as the effective figure leaves room for
# access patterns that are less friendly than a straight copy.
BANDWIDTH_MARGIN = 0.8


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
    mma_shape: tuple[int, int, int] = (16, 8, 16)  # m, n, k of mma.sync for 16-bit inputs

    @property
    def is_gpu(self) -> bool:
        """True: kernels run on the device."""
        return True


@dataclass(frozen=True)
class HostTarget:
    """The CPU Prism runs on. Sizes in bytes, rates in FLOP/s and bytes/s."""

    name: str
    cores: int
    l1d_bytes: int
    l2_bytes: int
    l3_bytes: int
    vector_bits: int  # widest SIMD register: 512 with AVX-512F, 256 with AVX2
    vector_registers: int
    fma_pipes: int  # vector FMA units per core
    fma_bits: int  # width of one FMA unit; a wider vector FMA occupies several
    flops: dict[str, float]
    dram_bytes_per_s: float
    cache_bytes_per_s: float  # streaming from L3 into the cores, all cores together

    @property
    def is_gpu(self) -> bool:
        """False: kernels run on the host CPU."""
        return False

    @property
    def vector_fmas_per_cycle(self) -> float:
        """Full-width vector FMAs one core issues per cycle (1 for 512-bit vectors on two 256-bit pipes)."""
        return self.fma_pipes * self.fma_bits / self.vector_bits


Target = GpuTarget | HostTarget

_TERA = 1e12

# H100 SXM5 and H200 share the GH100 die: 132 SMs, 227 KiB of shared memory per
# block (228 KiB per SM), 64 Ki registers per SM, 255 per thread.
_HOPPER = dict(
    chip="sm_90", sm_count=132, smem_per_block=227 * 1024, smem_per_sm=228 * 1024,
    regs_per_thread=255, regs_per_sm=65536, max_threads_per_block=1024,
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
                      max_threads_per_block=1024, l2_bytes=40 * 1024**2,
                      dram_bytes_per_s=2.039e12 * BANDWIDTH_MARGIN,
                      flops={"f16": 312 * _TERA, "bf16": 312 * _TERA, "f32": 19.5 * _TERA}),
}

TARGET_NAMES = (*GPU_TARGETS, "host")


def _cpu_flags() -> set[str]:
    try:
        text = Path("/proc/cpuinfo").read_text()
    except OSError:
        return set()
    match = re.search(r"^flags\s*:\s*(.*)$", text, re.MULTILINE)
    return set(match.group(1).split()) if match else set()


def _cache_size(level: int, kind: str, default: int) -> int:
    """Size of cpu0's cache at ``level`` of ``kind`` (Data/Unified), from sysfs."""
    for index in sorted(Path("/sys/devices/system/cpu/cpu0/cache").glob("index*")):
        try:
            if int((index / "level").read_text()) != level or (index / "type").read_text().strip() != kind:
                continue
            size = (index / "size").read_text().strip()
        except (OSError, ValueError):
            continue
        scale = {"K": 1024, "M": 1024**2}.get(size[-1], 1)
        return int(size.rstrip("KM")) * scale
    return default


@functools.cache
def host_target() -> HostTarget:
    """Describe the machine this process runs on."""
    flags = _cpu_flags()
    vector_bits = 512 if "avx512f" in flags else 256 if "avx2" in flags else 128
    cores = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)
    # Two 256-bit FMA pipes per core at ~3.6 GHz: Zen 4 runs a 512-bit FMA on
    # both pipes at once, so AVX-512 doubles the lanes but not the rate.
    # 230 GFLOP/s f32 measured on 2 cores. Override where it differs.
    fma_pipes, fma_bits = 2, int(os.environ.get("PRISM_HOST_FMA_BITS", min(vector_bits, 256)))
    default_gflops = cores * fma_pipes * 2 * (fma_bits // 32) * 3.6
    gflops = float(os.environ.get("PRISM_HOST_GFLOPS", default_gflops))
    gbps = float(os.environ.get("PRISM_HOST_GBPS", 20.0))
    return HostTarget(
        name="host", cores=cores,
        l1d_bytes=_cache_size(1, "Data", 32 * 1024),
        l2_bytes=_cache_size(2, "Unified", 1024 * 1024),
        l3_bytes=_cache_size(3, "Unified", 32 * 1024**2),
        vector_bits=vector_bits, vector_registers=32 if vector_bits == 512 else 16,
        fma_pipes=fma_pipes, fma_bits=fma_bits,
        flops={"f32": gflops * 1e9, "f16": gflops * 1e9, "f64": gflops * 0.5e9},
        dram_bytes_per_s=gbps * 1e9 * BANDWIDTH_MARGIN,
        # 32 bytes per cycle per core from L3 at ~3.6 GHz, a configured figure.
        cache_bytes_per_s=cores * 32 * 3.6e9 * BANDWIDTH_MARGIN,
    )


def get_target(name: str) -> Target:
    """The target called ``name``; raises TargetError listing the valid names."""
    if name == "host":
        return host_target()
    if name in GPU_TARGETS:
        return GPU_TARGETS[name]
    raise TargetError(f"unknown target '{name}'; expected one of: {', '.join(TARGET_NAMES)}")
