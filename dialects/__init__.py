"""The sGraph dialect, declared once in ``prism.irdl.mlir``, and its loader."""

from __future__ import annotations

from pathlib import Path

from mlir import ir
from mlir.dialects import irdl

from prism.infra.attrs import FAMILY_OP

IRDL_PATH = Path(__file__).with_name("prism.irdl.mlir")


def load_prism_dialect(context: ir.Context) -> None:
    """Register the sGraph dialect in ``context``, exactly once.

    Loading an IRDL dialect twice into one context aborts the process, so this
    checks the registry first and is safe to call any number of times.
    """
    if context.is_registered_operation(FAMILY_OP):
        return
    with context:
        irdl.load_dialects(ir.Module.parse(IRDL_PATH.read_text()))
