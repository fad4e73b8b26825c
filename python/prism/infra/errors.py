"""The one exception tree of Prism.

Every error a user can cause derives from :class:`PrismError`. The CLI turns
them into ``file:line:col: error: ...`` lines and exit code 1; the Python API
lets them propagate.
"""

from __future__ import annotations

import re

# A file location, alone or as the place an inlined op came from (``callsite(CALLEE at CALLER)``).
_FILE_LOCATION = re.compile(r'(?:loc\(|callsite\()"((?:[^"\\]|\\.)*)":(\d+):(\d+)')


def format_location(text: str) -> str:
    """``file:line:col`` for MLIR's ``loc("file":line:col)`` spelling (an inlined op's own, for a call site);
    other text unchanged."""
    match = _FILE_LOCATION.search(text)
    if match:
        return f"{match.group(1)}:{match.group(2)}:{match.group(3)}"
    return text


class PrismError(Exception):
    """Base of every error Prism raises on purpose.

    ``location`` is an MLIR location string such as ``"file.mlir":3:8`` when the
    error points at IR, and ``notes`` carry extra lines (failing IR, a repro
    command) shown after the message.
    """

    def __init__(self, message: str, *, location: str | None = None, notes: list[str] | None = None):
        super().__init__(message)
        self.message = message
        self.location = format_location(location) if location else location
        self.notes = list(notes or [])

    def prefix(self, name: str) -> None:
        """Start the message with ``name:`` (the pass that raised it), once."""
        if name and not self.message.startswith(f"{name}: "):
            self.message = f"{name}: {self.message}"
            self.args = (self.message,)


class ParseError(PrismError):
    """The input is not valid MLIR (syntax or verifier failure)."""


class PipelineError(PrismError):
    """The pass pipeline string names an unknown pass or option, or is malformed."""


class UnsupportedOp(PrismError):
    """An op that a pass must handle is outside what Prism supports."""


class EmptySearchSpace(PrismError):
    """Pruning removed every point of a family's space; names the constraint."""


class VerificationError(PrismError):
    """An optimized program could not be proven equal to its input."""


class PassFailed(PrismError):
    """A pass (Prism's or upstream) failed on valid input."""


class TargetError(PrismError):
    """The requested target is unknown or cannot run the program."""


class ShapeMismatch(PrismError):
    """The program's constant sizes contradict each other: an op takes two different extents for one loop."""


class AssertionFailed(PrismError):
    """A check the program makes at run time (``cf.assert``) failed on the values a host function was called
    with; the message is the check's own, the location its ``cf.assert``."""
