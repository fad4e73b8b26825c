"""Running upstream MLIR from a code generator: transform scripts and pass pipelines.

Both report failure through the one diagnostics converter
(:mod:`prism.infra.diagnostics`), as a ``PassFailed`` that names the stage.
The transform interpreter reports its diagnostics in a ``ValueError``'s
text rather than as an ``MLIRError``; those are kept as notes, with the
script's own locations removed.
"""

from __future__ import annotations

import re

from mlir import ir, passmanager
from mlir.dialects.transform import interpreter

from prism.infra.diagnostics import NOTE_LINES, SCRIPT_LOCATION, prism_error_from
from prism.infra.errors import PassFailed

_SCRIPT_LOC = re.compile(rf'(Diagnostic message at )?loc\("{re.escape(SCRIPT_LOCATION)}"\)(: )?')


def apply_script(module: ir.Module, text: str, stage: str) -> None:
    """Apply the transform script ``text`` (its ``@__transform_main``) to ``module``."""
    script = ir.Module.parse(text, context=module.context)
    try:
        interpreter.apply_named_sequence(module.operation, script.body.operations[0], script)
    except ir.MLIRError as error:
        raise prism_error_from(error, PassFailed, prefix=f"{stage} failed: ") from None
    except ValueError as error:
        lines = _interpreter_lines(str(error))
        raise PassFailed(f"{stage} failed: {lines[-1] if lines else 'no diagnostic'}", notes=lines[:-1]) from None


def run_passes(module: ir.Module | ir.Operation, pipeline: str, stage: str) -> None:
    """Run the upstream pass ``pipeline`` (anchored as its text says) on ``module``."""
    op = module.operation if isinstance(module, ir.Module) else module
    try:
        passmanager.PassManager.parse(pipeline, context=op.context).run(op)
    except ir.MLIRError as error:
        raise prism_error_from(error, PassFailed, prefix=f"{stage} failed: ") from None


def _interpreter_lines(text: str) -> list[str]:
    """The interpreter's diagnostics, the script's own locations and its generic first line removed."""
    lines = [line for line in _SCRIPT_LOC.sub("", text).strip().splitlines()
             if line.strip() and line.strip() != "Failed to apply named transform sequence."]
    return lines[:NOTE_LINES] + (["  ..."] if len(lines) > NOTE_LINES else [])
