"""prism-lower-gpu: tensor-level Linalg to NVIDIA GPU kernels, one PTX module and a launch manifest
(see :mod:`prism.codegen.gpu`).

Before::

    %f = linalg.fill ins(%z : f32) outs(%e : tensor<256x256xf32>) -> ...
    %r = linalg.matmul ins(%a, %b : tensor<256x256xf16>, tensor<256x256xf16>) outs(%f : tensor<256x256xf32>) -> ...

After: the module holds one ``gpu.binary`` whose PTX is the pass's artifact (``--emit=ptx``), one
``.entry`` per kernel, and the launch manifest (``ctx.artifacts["manifest"]``)::

    .visible .entry mm_k0_gemm(...) ... cp.async.bulk.tensor ... wgmma.mma_async
"""

from __future__ import annotations

from dataclasses import dataclass

from mlir import ir

from prism.codegen import gpu
from prism.codegen.gpu.ptx import PTX_FEATURES
from prism.infra.passbase import Pass, PassContext, option


@dataclass(frozen=True)
class LowerGpuPass(Pass):
    """Plan each function into kernels, write them, and lower them to one PTX module through NVVM."""

    NAME = "prism-lower-gpu"
    SUMMARY = "Lower tensor linalg to GPU kernels, one PTX module and a launch manifest (sm_80, sm_90a)"
    LOWERS = True
    STAGES = gpu.STAGE_NAMES

    chip: str = option("sm_90a", "the chip to generate PTX for", choices=tuple(sorted(PTX_FEATURES)))

    def run(self, module: ir.Module, ctx: PassContext) -> None:
        gpu.lower(module, ctx, self.chip)
