"""What ``prism-opt`` and ``prism.compile`` share: one compilation of one module.

A compilation parses (or takes) a module, runs a pipeline of passes on it and
produces the requested artifact: MLIR text, PTX, the LLVM-dialect module, or
the JSON report.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

from mlir import ir

from prism.errors import TargetError
from prism.passbase import PassContext
from prism.passes import LowerCpuPass, LowerGpuPass
from prism.passes.verify import ORIGINAL
from prism.pipeline import Stage, parse_pipeline, run_pipeline
from prism.targets import get_target

EMIT_KINDS = ("mlir", "ptx", "llvm", "report")
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

    def run(self, stages: list[Stage]) -> None:
        """Run ``stages`` on the module."""
        run_pipeline(self.module, stages, self.ctx)

    def lower(self) -> None:
        """Lower to the target's final form: PTX for a GPU, LLVM dialect for the host."""
        if "lowered" in self.ctx.artifacts:
            return
        target = get_target(self.target)
        self.run([LowerGpuPass(chip=target.chip) if target.is_gpu else LowerCpuPass(threads=target.cores)])

    def report_json(self) -> str:
        """The report as deterministic JSON text."""
        return json.dumps(self.ctx.report, indent=2, sort_keys=True) + "\n"

    def emit(self, kind: str) -> str:
        """Produce the artifact ``kind`` (one of EMIT_KINDS) as text."""
        if kind == "mlir":
            return str(self.module)
        if kind == "report":
            return self.report_json()
        if kind == "ptx":
            if not get_target(self.target).is_gpu:
                raise TargetError(f"--emit=ptx needs a GPU target, not '{self.target}'")
            self.lower()
            return ptx_text(self.ctx.artifacts["ptx"])
        if kind == "llvm":
            self.lower()
            return str(self.module)
        raise TargetError(f"unknown emit kind '{kind}'; expected one of: {', '.join(EMIT_KINDS)}")


def ptx_text(ptx: dict[str, str]) -> str:
    """One PTX text per GPU module, each headed by a comment naming it.

    PTX files cannot be concatenated into one valid file, so the headers mark
    where to split them for ptxas.
    """
    return "".join(f"// ----- gpu.module @{name}\n{text}" for name, text in ptx.items())


def default_pipeline(emit: str) -> str:
    """The pipeline run when none is given: none for plain MLIR, optimize otherwise."""
    return "" if emit == "mlir" else DEFAULT_PIPELINE


def stages_for(pipeline: str | None, emit: str) -> list[Stage]:
    """Parse ``pipeline``, or the default one for ``emit``."""
    text = default_pipeline(emit) if pipeline is None else pipeline
    return parse_pipeline(text) if text.strip() else []
