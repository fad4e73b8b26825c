"""prism-lower-gpu: tensor-level Linalg to NVIDIA GPU kernels and PTX (see :mod:`prism.codegen.gpu`).

Before::

    %f = linalg.fill ins(%z : f32) outs(%e : tensor<256x256xf32>) -> ...
    %r = linalg.matmul {prism.choice = {BM = 64, BN = 64, BK = 32, WM = 32, WN = 32, MMA = 1}}
           ins(%a, %b : tensor<256x256xf16>, tensor<256x256xf16>) outs(%f : tensor<256x256xf32>) -> ...

After: host code in the LLVM dialect that launches a ``gpu.binary``, whose
PTX is the pass's artifact (``--emit=ptx``)::

    // ----- gpu.module @mm_kernel
    .visible .entry mm_kernel(...) ... ldmatrix ... mma.sync
"""

from __future__ import annotations

from dataclasses import dataclass

from mlir import ir

from prism.codegen import gpu
from prism.infra.passbase import Pass, PassContext, option
from prism.targets.nvidia import PTX_FEATURES


@dataclass(frozen=True)
class LowerGpuPass(Pass):
    """Map each contraction and parallel op to a kernel, and lower to PTX through NVVM."""

    NAME = "prism-lower-gpu"
    SUMMARY = "Lower tensor linalg to GPU kernels and PTX for an NVIDIA chip (sm_80, sm_90, sm_90a)"
    LOWERS = True
    STAGES = gpu.STAGE_NAMES

    chip: str = option("sm_90", "the chip to generate PTX for", choices=tuple(sorted(PTX_FEATURES)))

    def run(self, module: ir.Module, ctx: PassContext) -> None:
        gpu.lower(module, ctx, self.chip)
