"""The NVIDIA GPU code generator: tensor-level Linalg to kernels and PTX, in named stages.

Every contraction becomes one kernel: a grid of BM x BN block tiles (one
block per batch index too), a loop over K in steps of BK that copies the A
and B tiles into shared memory with vector copies, and a grid of
(BM/WM) x (BN/WN) warps. With MMA=1 each warp computes its WM x WN tile with
ldmatrix + mma.sync.m16n8k16; with MMA=0 each thread computes a
(WM/4) x (WN/8) tile with FMAs. Those C tiles stay in registers across the K
loop and are stored once, after it; a fill of the result is fused into the
kernel as their initial value. Other parallel ops get one kernel each.
Concatenations, slices and calls stay on the host. The constraints on a
choice are in :mod:`.plan`.

Before::

    %f = linalg.fill ins(%z : f32) outs(%e : tensor<256x256xf32>) -> ...
    %r = linalg.matmul {prism.choice = {BM = 64, BN = 64, BK = 32,
                         WM = 32, WN = 32, MMA = 1}}
           ins(%a, %b : tensor<256x256xf16>, tensor<256x256xf16>)
           outs(%f : tensor<256x256xf32>) -> tensor<256x256xf32>

After: the module holds host code in the LLVM dialect that calls
``gpu.launch_func`` on a ``gpu.binary``, and ``ctx.artifacts["ptx"]`` maps
each gpu.module's name (one per kernel, in module order) to its PTX text, a
complete file for ``ptxas``::

    {"mm_kernel": ".visible .entry mm_kernel(...) ... ldmatrix ... mma.sync"}

The stages, each printable with ``--print-ir-after=NAME``:

- ``gpu-tile``: each kernel tiled to blocks (contractions also along K) on tensors, fills fused;
- ``gpu-bufferize``: one-shot bufferization;
- ``gpu-map``: operand tiles promoted to shared memory, warps and threads mapped, launches made;
- ``gpu-hoist``: accumulators held in registers across the K loop;
- ``gpu-outline``: kernels outlined into gpu.modules;
- ``gpu-mma``: tensor-core tiles to ldmatrix + mma.sync;
- ``gpu-vector``: the remaining vector ops to 1-D;
- ``gpu-shared``: shared memory as aligned globals in NVPTX's address space 3;
- ``gpu-nvvm``: the NVVM pipeline down to PTX, collected into ``ctx.artifacts["ptx"]``.
"""

from __future__ import annotations

from mlir import ir

from prism.codegen.checks import check_expansions, check_module, reshape_dynamic_expansions
from prism.codegen.gpu import rewrites, scripts
from prism.codegen.gpu.plan import GpuGemm, GpuParallel, GpuSchedule, plan
from prism.codegen.stages import Lowering, run_stages
from prism.codegen.upstream import apply_script, run_passes
from prism.infra.errors import PipelineError
from prism.infra.ir import normalize_elementwise
from prism.infra.passbase import PassContext
from prism.targets.nvidia import PTX_FEATURES

# Fusion leaves the original fills dead on tensors: they must go before
# bufferization turns them into host-side writes.
_BUFFERIZE = ("builtin.module(canonicalize,cse,one-shot-bufferize{bufferize-function-boundaries "
              "function-boundary-type-conversion=identity-layout-map},canonicalize,cse,canonicalize)")
_OUTLINE = ("builtin.module(canonicalize,cse,convert-linalg-to-loops,gpu-launch-sink-index-computations,"
            "gpu-kernel-outlining,symbol-dce)")


class GpuLowering(Lowering):
    """One lowering of one module for ``chip``, as named stages."""

    def __init__(self, chip: str, ctx: PassContext):
        if chip not in PTX_FEATURES:
            raise PipelineError(f"unknown chip '{chip}'; expected one of {', '.join(sorted(PTX_FEATURES))}")
        self.chip = chip
        self.ctx = ctx
        self.contractions: list[GpuGemm] = []
        self.parallels: list[GpuParallel] = []

    def tile(self, module: ir.Module) -> None:
        """Plan every kernel (see :mod:`.plan`), then tile it to blocks."""
        check_module(module)
        normalize_elementwise(module)
        reshape_dynamic_expansions(module)
        self.contractions, self.parallels = plan(module)
        if not self.contractions and not self.parallels:
            self.ctx.remark(module.operation.location, "no op to run on the GPU: the module lowers to host code only")
        self.ctx.progress(f"gpu-tile: {len(self.contractions)} contraction(s), {len(self.parallels)} other kernel(s)")
        apply_script(module, scripts.tensor_script(self.contractions, self.parallels), "tiling")

    def bufferize(self, module: ir.Module) -> None:
        """One-shot bufferization of the whole module."""
        run_passes(module, _BUFFERIZE, "bufferization")

    def map(self, module: ir.Module) -> None:
        """Shared-memory promotion, warp and thread mapping, and the launches."""
        apply_script(module, scripts.memref_script(self.contractions, self.parallels), "GPU mapping")

    def hoist(self, module: ir.Module) -> None:
        """Accumulators become loop-carried vectors (registers) across the K loop."""
        apply_script(module, scripts.hoist_script(), "accumulator hoisting")

    def outline(self, module: ir.Module) -> None:
        """Each launch's body becomes a kernel in a gpu.module of its own."""
        run_passes(module, _OUTLINE, "kernel outlining")

    def mma(self, module: ir.Module) -> None:
        """ldmatrix + mma.sync for the tensor-core kernels."""
        rewrites.convert_mma_kernels(module)

    def vectorize(self, module: ir.Module) -> None:
        """The remaining vector ops to 1-D."""
        apply_script(module, scripts.vector_lowering_script(), "vector lowering")

    def shared(self, module: ir.Module) -> None:
        """Shared memory as 16-byte aligned globals in address space 3."""
        apply_script(module, scripts.shared_to_global_script(), "shared-memory globals")
        rewrites.align_shared_globals(module)
        rewrites.numeric_shared_space(module)

    def nvvm(self, module: ir.Module) -> None:
        """The NVVM pipeline down to PTX, kept in ``ctx.artifacts["ptx"]``."""
        check_expansions(module)
        run_passes(module, f"builtin.module(gpu-lower-to-nvvm-pipeline{{cubin-chip={self.chip} "
                   f"cubin-features={PTX_FEATURES[self.chip]} cubin-format=isa}})", "NVVM lowering")
        rewrites.drop_timings(module)
        self.ctx.artifacts["ptx"] = rewrites.collect_ptx(module)

    # name, summary, method
    STAGES = (
        ("gpu-tile", "tile kernels to blocks on tensors", tile),
        ("gpu-bufferize", "tensors to buffers", bufferize),
        ("gpu-map", "shared memory, warps, threads and launches", map),
        ("gpu-hoist", "accumulators in registers across K", hoist),
        ("gpu-outline", "kernels into gpu.modules", outline),
        ("gpu-mma", "tensor-core tiles to mma.sync", mma),
        ("gpu-vector", "vector ops to 1-D", vectorize),
        ("gpu-shared", "shared memory as aligned globals", shared),
        ("gpu-nvvm", "NVVM and PTX", nvvm),
    )


def lower(module: ir.Module, ctx: PassContext, chip: str) -> None:
    """Lower ``module`` in place to host LLVM launching kernels; their PTX goes into ``ctx.artifacts["ptx"]``."""
    run_stages(GpuLowering(chip, ctx).stages(), module, ctx)


STAGE_NAMES = GpuLowering.stage_names()

__all__ = ["STAGE_NAMES", "GpuLowering", "GpuSchedule", "lower"]
