"""What ``prism-opt`` and ``prism.compile`` share: one compilation of one module.

A compilation parses (or takes) a module, runs a pipeline of passes on it and
produces the requested artifact: MLIR text, PTX, the LLVM-dialect module,
the JSON report, or for IREE: MLIR with its ``compilation_info``, or a
tuning spec. Which lowering a target needs is the target's answer
(``Target.lowering``); nothing here asks what kind of target it is.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

from mlir import ir

from prism.infra.errors import PipelineError, PrismError, TargetError
from prism.infra.passbase import Pass, PassContext
from prism.infra.pipeline import Step, parse_pipeline, run_pipeline
from prism.passes.verify import ORIGINAL
from prism.search.family import families
from prism.targets import IreeTarget, LoweringTarget, get_target

EMIT_KINDS = ("mlir", "ptx", "manifest", "llvm", "report", "iree", "iree-spec")
DEFAULT_PIPELINE = "prism-optimize"


@dataclass
class Compilation:
    """The state and results of compiling one module."""

    module: ir.Module
    target: str
    ctx: PassContext = field(init=False)

    def __post_init__(self) -> None:
        get_target(self.target)
        self.ctx = PassContext(target=self.target)
        self.ctx.report.update(target=self.target, families=[])
        self.ctx.artifacts[ORIGINAL] = str(self.module)  # what prism-verify proves the output equal to

    def run(self, steps: list[Step]) -> None:
        """Run ``steps`` on the module."""
        run_pipeline(self.module, steps, self.ctx)

    def lower(self) -> None:
        """Lower to the target's artifact (PTX for a GPU, the LLVM dialect for the host), once."""
        if "lowered" not in self.ctx.artifacts:
            target = get_target(self.target)
            if not isinstance(target, LoweringTarget):
                raise TargetError(f"Prism does not lower for target '{self.target}' itself")
            self.run(parse_pipeline(target.lowering()))

    def report_kernels(self) -> None:
        """Add the kernels the target's code generator makes of the module, where its lowering says (the host's
        does: :meth:`Pass.kernels`).

        A report describes what will be built, so the module is first lowered
        as ``--emit=llvm`` or ``--emit=ptx`` would (on a copy, see
        :meth:`check_lowering`): where that fails, its error is raised
        instead of a report.
        """
        target = get_target(self.target)
        if "kernels" in self.ctx.report or not isinstance(target, LoweringTarget):
            return
        lowered = self.check_lowering()
        if lowered is not None and "kernels" in lowered.report:
            self.ctx.report["kernels"] = lowered.report["kernels"]
            return
        try:
            for step in parse_pipeline(target.lowering()):
                found = step.kernels(self.module) if isinstance(step, Pass) else None
                if found is not None:
                    self.ctx.report["kernels"] = found
                    return
        except PrismError as error:
            self.ctx.report["kernels_error"] = str(error)

    def check_lowering(self) -> PassContext | None:
        """Lower a copy of the module to the target's artifact, raising the lowering's PrismError (located at the
        user's op) if it cannot be built; the context of that lowering (its report holds the kernels made).

        Nothing is checked (None) for a target that Prism does not lower, a
        module already lowered, or one whose families a partial pipeline left
        uninstantiated (it is not what will be built: its report is the
        search's alone).
        """
        target = get_target(self.target)
        if not isinstance(target, LoweringTarget) or "lowered" in self.ctx.artifacts \
                or next(families(self.module), None):
            return None
        copy = ir.Module.parse(self.module.operation.get_asm(enable_debug_info=True), context=self.module.context)
        ctx = PassContext(target=self.target)
        run_pipeline(copy, parse_pipeline(target.lowering()), ctx)
        return ctx

    def report_json(self) -> str:
        """The report as deterministic JSON text."""
        return json.dumps(self.ctx.report, indent=2, sort_keys=True) + "\n"

    def emit(self, kind: str) -> str:
        """Produce the artifact ``kind`` (one of EMIT_KINDS) as text."""
        check_emit(kind, self.target)
        if kind == "mlir":
            return str(self.module)
        if kind == "report":
            self.report_kernels()
            return self.report_json()
        if kind in ("iree", "iree-spec"):
            from prism.codegen import iree  # loaded only when asked

            write = iree.iree_text if kind == "iree" else iree.iree_spec_text
            return write(self.module, get_target(self.target), self.ctx)
        self.lower()
        if kind == "manifest":
            return json.dumps(self.ctx.artifacts["manifest"], indent=1) + "\n"
        return ptx_text(self.ctx.artifacts["ptx"]) if kind == "ptx" else str(self.module)


def check_emit(kind: str, target: str) -> None:
    """Refuse an artifact the target does not produce, before anything runs."""
    if kind not in EMIT_KINDS:
        raise TargetError(f"unknown emit kind '{kind}'; expected one of: {', '.join(EMIT_KINDS)}")
    chosen = get_target(target)
    if kind in ("ptx", "manifest", "llvm") and not isinstance(chosen, LoweringTarget):
        raise TargetError(f"--emit={kind}: Prism does not lower for target '{target}' itself; --emit=iree writes "
                          "IREE's input with Prism's configurations")
    if kind in ("ptx", "manifest") and chosen.artifact != "ptx":
        raise TargetError(f"--emit={kind} needs a target that lowers to PTX; target '{target}' lowers to "
                          f"{chosen.artifact}")
    if kind in ("iree", "iree-spec") and not isinstance(chosen, IreeTarget):
        raise TargetError(f"--emit={kind}: Prism writes no IREE configuration for target '{target}' yet; "
                          "use --target=host (IREE's llvm-cpu)")


def check_targets(steps: list[Step], target: str, emit: str) -> None:
    """Refuse a pass whose ``target`` option contradicts ``target`` when the output depends on it."""
    if emit == "mlir":
        return
    for step in steps:
        chosen = getattr(step, "target", "") if isinstance(step, Pass) else ""
        if chosen and chosen != target:
            raise PipelineError(f"{step.NAME} has target={chosen} but the output is for --target={target}; "
                                f"set --target={chosen}, or drop the pass option")


def ptx_text(ptx: dict[str, str]) -> str:
    """The compilation's PTX: one module holding every kernel, a complete file for ptxas."""
    return "".join(ptx.values())


def default_pipeline(emit: str) -> str:
    """The pipeline run when none is given: none for plain MLIR, optimize otherwise."""
    return "" if emit == "mlir" else DEFAULT_PIPELINE


def steps_for(pipeline: str | None, emit: str) -> list[Step]:
    """Parse ``pipeline``, or the default one for ``emit``."""
    text = default_pipeline(emit) if pipeline is None else pipeline
    return parse_pipeline(text) if text.strip() else []
