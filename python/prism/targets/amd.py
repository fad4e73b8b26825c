"""AMD Instinct GPUs: the same block/warp/matrix-core family as NVIDIA's, for IREE's ROCm backend.

Prism searches these chips like the NVIDIA ones (:func:`~prism.targets.nvidia.gemm_space`
and the roofline of :class:`~prism.targets.nvidia.GpuModel`, with the
chip's numbers), but it does not lower for them itself: its LLVM has no
AMDGPU backend. What it produces is IREE's input (``--emit=iree``, or a
tuning spec with ``--emit=iree-spec``), whose ``compilation_info`` carries
Prism's tiles to IREE's ROCm code generation; ``--emit=ptx`` and
``--emit=llvm`` are refused before anything runs.

Figures are the MI300X datasheet's (AMD, 2023) and the CDNA3 instruction set
guide's; none was measured. Effective bandwidths carry the same margin as the
NVIDIA targets'.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from prism.targets.base import BANDWIDTH_MARGIN
from prism.targets.nvidia import GpuModel

# IREE's matrix-core intrinsics of the chip, with the m16 n16 k16 shape the space's MMA flag stands for.
CDNA3_INTRINSICS = {("f16", "f32"): "MFMA_F32_16x16x16_F16", ("bf16", "f32"): "MFMA_F32_16x16x16_BF16"}

_TERA = 1e12


@dataclass(frozen=True)
class AmdGpuTarget(GpuModel):
    """An AMD GPU, configured through IREE (see the module docstring). ``sm_count`` counts compute units,
    ``warp_size`` is the wavefront."""

    mma_types: tuple[str, ...] = ("f16", "bf16")
    iree_intrinsics: dict[tuple[str, str], str] = field(default_factory=lambda: dict(CDNA3_INTRINSICS))
    iree_all_intrinsics: tuple[str, ...] = tuple(CDNA3_INTRINSICS.values())

    iree_backend = "rocm"
    iree_device = None  # the flags name the chip

    @property
    def iree_flags(self) -> tuple[str, ...]:
        """IREE's ROCm target for this chip."""
        return (f"--iree-rocm-target={self.chip}",)


AMD_TARGETS: dict[str, AmdGpuTarget] = {
    # MI300X (CDNA3, gfx942): 304 compute units of 4 SIMDs; 64 KiB of LDS per CU, the most a workgroup may
    # take; 512 vector registers a lane (VGPRs and AGPRs), 128 Ki per CU; 256 MiB of Infinity Cache before
    # 5.3 TB/s of HBM3; dense matrix f16/bf16 1307.4 TFLOP/s, f32 163.4.
    "mi300x": AmdGpuTarget(name="mi300x", chip="gfx942", sm_count=304, smem_per_block=64 * 1024,
                           smem_per_sm=64 * 1024, regs_per_thread=512, regs_per_sm=4 * 512 * 64,
                           max_threads_per_block=1024, l2_bytes=256 * 1024**2,
                           dram_bytes_per_s=5.3e12 * BANDWIDTH_MARGIN,
                           flops={"f16": 1307.4 * _TERA, "bf16": 1307.4 * _TERA, "f32": 163.4 * _TERA},
                           mma_shape=(16, 16, 16), warp_size=64, shared_cap=64 * 1024),
}
