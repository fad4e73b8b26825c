"""Running upstream MLIR from a code generator: transform scripts and pass pipelines.

Both report failure through the one diagnostics converter
(:mod:`prism.infra.diagnostics`), as a ``PassFailed`` that names the stage.
The transform interpreter reports its diagnostics in a ``ValueError``'s
text rather than as an ``MLIRError``; those are kept as notes, with the
script's own locations removed (:func:`prism.infra.ir.apply_script`).
"""

from __future__ import annotations

from mlir import ir, passmanager

from prism.infra.diagnostics import prism_error_from
from prism.infra.errors import PassFailed
from prism.infra.ir import apply_script

__all__ = ["apply_script", "run_passes"]  # apply_script lives with the normalization that also needs it


def run_passes(module: ir.Module | ir.Operation, pipeline: str, stage: str) -> None:
    """Run the upstream pass ``pipeline`` (anchored as its text says) on ``module``."""
    op = module.operation if isinstance(module, ir.Module) else module
    try:
        passmanager.PassManager.parse(pipeline, context=op.context).run(op)
    except ir.MLIRError as error:
        raise prism_error_from(error, PassFailed, prefix=f"{stage} failed: ") from None
