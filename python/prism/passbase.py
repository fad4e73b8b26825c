"""The base of every Prism pass, and the state a pipeline threads through them.

A pass is a small frozen dataclass whose fields are its options, so the same
parser serves ``prism-prune{target=h200}`` on the command line and
``PrunePass(target="h200")`` in Python.
"""

from __future__ import annotations

import dataclasses
import sys
from dataclasses import dataclass, field
from typing import Any, ClassVar

from mlir import ir

from prism.ir import display_location


@dataclass
class PassContext:
    """What passes share during one pipeline run.

    ``target`` is the default target name (a pass option overrides it);
    ``report`` collects per-family results for ``--emit=report``; ``remarks``
    collects ``(location, message)`` pairs that the driver prints on stderr.
    ``artifacts`` holds outputs that are not MLIR, e.g. PTX text by chip.
    """

    target: str = "host"
    report: dict[str, Any] = field(default_factory=dict)
    remarks: list[tuple[str, str]] = field(default_factory=list)
    artifacts: dict[str, Any] = field(default_factory=dict)
    verbose: bool = False

    def remark(self, location: ir.Location | str, message: str) -> None:
        """Record a remark that points at ``location``."""
        self.remarks.append((display_location(location), message))

    def progress(self, message: str) -> None:
        """Print a progress line on stderr when the run is verbose."""
        if self.verbose:
            print(f"prism: {message}", file=sys.stderr, flush=True)


@dataclass(frozen=True)
class Pass:
    """A Prism pass. Subclasses set NAME and SUMMARY and implement :meth:`run`.

    The dataclass fields are the pass options; their types (str, int, bool)
    drive option parsing.
    """

    NAME: ClassVar[str] = ""
    SUMMARY: ClassVar[str] = ""
    # True for passes that take the module to its final, target-specific form.
    LOWERS: ClassVar[bool] = False

    def run(self, module: ir.Module, ctx: PassContext) -> None:
        """Transform ``module`` in place."""
        raise NotImplementedError

    @classmethod
    def option_names(cls) -> list[str]:
        """The names of this pass's options, in declaration order."""
        return [f.name for f in dataclasses.fields(cls)]

    def spelling(self) -> str:
        """The pipeline-string spelling of this pass with its options."""
        opts = [f"{f.name}={getattr(self, f.name)}" for f in dataclasses.fields(self)
                if getattr(self, f.name) != f.default]
        return self.NAME + ("{" + " ".join(opts) + "}" if opts else "")
