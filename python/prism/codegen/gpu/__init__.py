"""The NVIDIA GPU code generator: tensor-level Linalg to one PTX module and a launch manifest, in named stages.

Each public function is planned into kernels (:mod:`.plan`): GEMMs with
their fills and epilogues (dual GEMMs included), attention, row kernels for
reductions with the elementwise ops around them, elementwise kernels, and a
kernel for any other Linalg op (:mod:`.generic`). Every kernel is written
by Prism itself as nvgpu/NVVM-level MLIR:

- GEMMs on sm_90a: TMA loads into swizzled shared memory, an mbarrier
  pipeline and ``wgmma`` in a warp-specialized block (:mod:`.gemm_sm90`)
  where TMA can read the operands; elsewhere, and on sm_80, multi-stage
  ``cp.async`` with ``ldmatrix`` and ``mma.sync`` (:mod:`.gemm`);
- attention as flash attention, and split-KV flash decoding for one query
  row (:mod:`.attention`); rows with warp shuffles (:mod:`.rows`).

Every kernel of a compilation goes into one ``gpu.module``, hence one PTX
module (``ctx.artifacts["ptx"]``), and its launches into the manifest
(``ctx.artifacts["manifest"]``, :mod:`.manifest`). A function that cannot
run on the GPU is left out with a remark naming its op and why; the others
still compile.

The stages, each printable with ``--print-ir-after=NAME``:

- ``gpu-plan``: the program normalized (calls inlined, named ops as
  generics), each op tagged ``prism.kernel`` with the kernel that computes it;
- ``gpu-kernels``: the module of every kernel, as nvgpu/NVVM-level MLIR;
- ``gpu-nvvm``: NVVM and PTX.
"""

from __future__ import annotations

from mlir import ir

from prism.codegen.checks import check_module
from prism.codegen.gpu import manifest as manifests
from prism.codegen.gpu.kernels import emit_step
from prism.codegen.gpu.plan import FunctionPlan, plan_function
from prism.codegen.gpu.ptx import MODULE_NAME, PTX_FEATURES, module_text, to_ptx
from prism.codegen.gpu.spec import Kernel
from prism.codegen.shapes import check_constant_sizes
from prism.codegen.stages import Lowering, run_stages
from prism.codegen.upstream import run_passes
from prism.infra.diagnostics import display_location
from prism.infra.errors import PipelineError, UnsupportedOp
from prism.infra.ir import generalize_named, iter_ops, normalize_program
from prism.infra.passbase import PassContext
from prism.search.families import registered_families

KERNEL_ATTR = "prism.kernel"
_NORMALIZE = "builtin.module(inline{default-pipeline=canonicalize},symbol-dce,canonicalize,cse)"
# Linalg ops the planner reads as they are: fills stay fills (an accumulator's start), the rest become generics;
# relayouts (pack, unpack) have no generic form and no GPU kernel: the planner refuses them at their op.
_KEPT_NAMED = frozenset({"linalg.generic", "linalg.fill", "linalg.yield", "linalg.index", "linalg.pack",
                         "linalg.unpack"})


class GpuLowering(Lowering):
    """One lowering of one module for ``chip``, as named stages."""

    def __init__(self, chip: str, ctx: PassContext):
        if chip not in PTX_FEATURES:
            raise PipelineError(f"unknown chip '{chip}'; expected one of {', '.join(sorted(PTX_FEATURES))}")
        self.chip = chip
        self.ctx = ctx
        self.plans: list[FunctionPlan] = []
        self.kernels: dict[str, list[Kernel]] = {}

    def plan(self, module: ir.Module) -> None:
        """Normalize, then plan every public function (see :mod:`.plan`); tag each op with its kernel."""
        check_module(module)
        normalize_program(module)
        check_constant_sizes(module)
        run_passes(module, _NORMALIZE, "normalization for the GPU")
        _generalize(module)
        families = [(f.kind, f.kernels["gpu"]) for f in registered_families() if "gpu" in f.kernels]
        failures: list[tuple[ir.Operation, UnsupportedOp]] = []
        for func in _functions(module):
            try:
                plan = plan_function(func, families, self.chip)
            except UnsupportedOp as error:
                failures.append((func, error))
                continue
            self.plans.append(plan)
            _tag(plan)
            self.ctx.progress(f"gpu-plan: @{plan.name}: {len(plan.steps)} kernel(s)")
        if failures and not self.plans:
            raise failures[0][1]
        for func, error in failures:  # the module still compiles: each function left out is a remark
            self.ctx.remark(func.location, f"@{_name(func)} stays off the GPU: {error.message}"
                            + (f" (at {error.location})" if error.location else ""))
        # as the host's report lists them: per function, each kernel's kind and the ops it runs, and its
        # predicted microseconds on the target
        self.ctx.report["kernels"] = [
            {"function": f"@{p.name}", "count": len(p.steps),
             "kernels": [{"kind": step.kind, "kernel": step.spec.name,
                          "ops": [f"{op.name} at {display_location(op.location)}" for op in step.ops],
                          **self._predicted(step)}
                         for step in p.steps]} for p in self.plans]

    def _predicted(self, step) -> dict[str, float]:
        """``predicted_us``: the step's kernels' predicted microseconds on the compilation's target (the first
        NVIDIA target of this chip if it names none), dynamic sizes counting as 1024; nothing for a chip no
        target has."""
        from prism.codegen.gpu.cost import predict_seconds
        from prism.targets.nvidia import GPU_TARGETS
        target = GPU_TARGETS.get(self.ctx.target)
        if target is None or target.chip != self.chip:
            target = next((t for t in GPU_TARGETS.values() if t.chip == self.chip), None)
        if target is None:
            return {}
        return {"predicted_us": round(predict_seconds(step.spec, target) * 1e6, 3)}

    def emit(self, module: ir.Module) -> None:
        """Write every kernel; the module becomes their one gpu.module."""
        failures: list[tuple[str, UnsupportedOp]] = []
        for plan in list(self.plans):
            try:
                self.kernels[plan.name] = [k for step in plan.steps for k in self._emit_step(step)]
            except UnsupportedOp as error:
                failures.append((plan.name, error))
                self.plans.remove(plan)
                continue
            self.ctx.progress(f"gpu-kernels: @{plan.name}: {len(self.kernels[plan.name])} kernel(s) written")
        if failures and not self.plans:
            raise failures[0][1]
        for name, error in failures:
            self.ctx.remark(error.location or "", f"@{name} stays off the GPU: {error.message}")
        every = [k for ks in self.kernels.values() for k in ks]
        fresh = ir.Module.parse(module_text(every), context=module.context)
        for op in list(module.body.operations):
            op.operation.erase()
        for op in list(fresh.body.operations):
            module.body.append(op.operation.clone())
        module.operation.attributes["gpu.container_module"] = ir.UnitAttr.get(module.context)

    def _emit_step(self, step) -> list[Kernel]:
        """The step's kernels; a refusal without a location is located at the step's first op."""
        try:
            return emit_step(step, self.chip, self._remark_at(step))
        except UnsupportedOp as error:
            if error.location or not step.ops:
                raise
            raise UnsupportedOp(error.message, location=str(step.ops[0].location)) from None

    def _remark_at(self, step):
        """A remark at the step's first op (or the module, for a step of no op of its own)."""
        location = step.ops[0].location if step.ops else ""
        return lambda message: self.ctx.remark(location, f"{step.spec.name}: {message}")

    def nvvm(self, module: ir.Module) -> None:
        """NVVM to PTX (``ctx.artifacts["ptx"]``), and the launch manifest (``ctx.artifacts["manifest"]``)."""
        every = [k for ks in self.kernels.values() for k in ks]
        ptx = to_ptx(module, self.chip, every)
        self.ctx.artifacts["ptx"] = {MODULE_NAME: ptx}
        self.ctx.artifacts["manifest"] = manifests.manifest(self.chip, self.plans, self.kernels)

    # name, summary, method
    STAGES = (
        ("gpu-plan", "ops grouped into kernels", plan),
        ("gpu-kernels", "every kernel as nvgpu/NVVM-level MLIR in one gpu.module", emit),
        ("gpu-nvvm", "NVVM, one PTX module and the launch manifest", nvvm),
    )


def _generalize(module: ir.Module) -> None:
    """Every named Linalg op but fills as a generic (aggregate ops are already their parts:
    :func:`~prism.infra.ir.normalize_program`)."""
    generalize_named(module, sorted({op.name for op in iter_ops(module) if op.name.startswith("linalg.")}
                                    - _KEPT_NAMED))


def _functions(module: ir.Module) -> list[ir.Operation]:
    out = []
    for op in module.body.operations:
        op = op.operation
        if op.name == "func.func" and len(op.regions[0].blocks) and "sym_visibility" not in op.attributes:
            out.append(op)
    return out


def _tag(plan: FunctionPlan) -> None:
    for step in plan.steps:
        for op in step.ops:
            op.attributes[KERNEL_ATTR] = ir.StringAttr.get(step.spec.name)


def _name(func: ir.Operation) -> str:
    return ir.StringAttr(func.attributes["sym_name"]).value


def lower(module: ir.Module, ctx: PassContext, chip: str) -> None:
    """Lower ``module`` for ``chip``: its PTX and manifest go into ``ctx.artifacts``."""
    run_stages(GpuLowering(chip, ctx).stages(), module, ctx)


STAGE_NAMES = GpuLowering.stage_names()

__all__ = ["KERNEL_ATTR", "STAGE_NAMES", "GpuLowering", "lower"]
