"""Prism: a symbolic superoptimizer for tensor programs, built on MLIR.

Entry points: :func:`compile`, :func:`verify` and :func:`shape_tables` in
Python, and the ``prism-opt`` command.
"""

from prism import families  # registers the families Prism ships  # noqa: F401
from prism.api import CompiledModule, compile, shape_tables, verify
from prism.infra.errors import (
    AssertionFailed,
    EmptySearchSpace,
    ParseError,
    PassFailed,
    PipelineError,
    PrismError,
    ShapeMismatch,
    TargetError,
    UnsupportedOp,
    VerificationError,
)

__all__ = [
    "AssertionFailed",
    "CompiledModule",
    "EmptySearchSpace",
    "ParseError",
    "PassFailed",
    "PipelineError",
    "PrismError",
    "ShapeMismatch",
    "TargetError",
    "UnsupportedOp",
    "VerificationError",
    "compile",
    "shape_tables",
    "verify",
]
