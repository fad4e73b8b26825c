"""The base of every Prism pass, its options, and the state a pipeline threads through the passes.

A pass is a small frozen dataclass whose fields are its options, so the same
parser serves ``prism-prune{target=h200}`` on the command line and
``PrunePass(target="h200")`` in Python. Each option is declared with
:func:`option`: a default, one line of help, and its valid values, which are
checked when the pass is built, whichever way it is built.
"""

from __future__ import annotations

import dataclasses
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, ClassVar

from mlir import ir

from prism.infra.diagnostics import display_location
from prism.infra.errors import PipelineError


def option(default: Any, help: str, *, minimum: int | None = None, maximum: int | None = None,
           choices: tuple[str, ...] | None = None, check: Callable[[Any], str] | None = None) -> Any:
    """A pass option: its default, its help line, and its range (ints), its choices (strings) or a
    ``check`` that returns why a value is invalid ('' when it is valid)."""
    return field(default=default, metadata={"help": help, "minimum": minimum, "maximum": maximum,
                                            "choices": choices, "check": check})


@dataclass
class PassContext:
    """What passes share during one pipeline run.

    ``target`` is the default target name (a pass option overrides it);
    ``current`` the pass that is running, whose name starts its remarks;
    ``report`` collects per-family results for ``--emit=report``; ``remarks``
    collects ``(location, message)`` pairs that the driver prints on stderr,
    each at most once. ``artifacts`` holds outputs that are not MLIR, e.g.
    PTX text by kernel. ``observer``, when set, sees the IR after every pass
    and every code-generator stage (``--print-ir-after``).
    """

    target: str = "host"
    report: dict[str, Any] = field(default_factory=dict)
    remarks: list[tuple[str, str]] = field(default_factory=list)
    artifacts: dict[str, Any] = field(default_factory=dict)
    verbose: bool = False
    observer: Callable[[str, ir.Module], None] | None = None
    current: str = ""  # the pass running now, which names itself in remarks and progress

    def remark(self, location: ir.Location | str, message: str) -> None:
        """Record a remark that points at ``location`` (a repeated remark is recorded once)."""
        entry = (display_location(location), self._named(message))
        if entry not in self.remarks:
            self.remarks.append(entry)

    def progress(self, message: str) -> None:
        """Print a progress line on stderr when the run is verbose."""
        if self.verbose:
            print(f"prism: {self._named(message)}", file=sys.stderr, flush=True)

    def _named(self, message: str) -> str:
        return f"{self.current}: {message}" if self.current else message

    def after(self, name: str, module: ir.Module) -> None:
        """Offer the IR after the pass or code-generator stage ``name`` to the observer."""
        if self.observer is not None:
            self.observer(name, module)


@dataclass(frozen=True)
class Pass:
    """A Prism pass. Subclasses set NAME and SUMMARY, declare options with :func:`option`, and implement :meth:`run`.

    The dataclass fields are the pass options; their types (str, int, bool)
    drive option parsing, and their metadata their validation.
    """

    NAME: ClassVar[str] = ""
    SUMMARY: ClassVar[str] = ""
    # True for passes that take the module to its final, target-specific form.
    LOWERS: ClassVar[bool] = False
    # The names of the code-generator stages the pass runs, for --print-ir-after.
    STAGES: ClassVar[tuple[str, ...]] = ()

    def __post_init__(self) -> None:
        for f in dataclasses.fields(self):
            problem = _check_option(f, getattr(self, f.name))
            if problem:
                raise PipelineError(f"{self.NAME}: option '{f.name}' {problem}")

    def run(self, module: ir.Module, ctx: PassContext) -> None:
        """Transform ``module`` in place."""
        raise NotImplementedError

    def kernels(self, module: ir.Module) -> list[dict] | None:
        """Per function, the kernels this lowering pass would make of ``module`` and the ops each runs, for the
        report (``module`` is unchanged); None for a pass that does not say."""
        return None

    @classmethod
    def option_names(cls) -> list[str]:
        """The names of this pass's options, in declaration order."""
        return [f.name for f in dataclasses.fields(cls)]

    @classmethod
    def option_help(cls) -> list[str]:
        """One line per option: its name, type, valid values, default and help."""
        lines = []
        for f in dataclasses.fields(cls):
            meta = f.metadata
            values = _valid_values(meta)
            lines.append(f"{f.name}=<{f.type}>{' in ' + values if values else ''} (default {f.default!r}): "
                         f"{meta.get('help', '')}")
        return lines

    def spelling(self) -> str:
        """The pipeline-string spelling of this pass with its options."""
        opts = [f"{f.name}={getattr(self, f.name)}" for f in dataclasses.fields(self)
                if getattr(self, f.name) != f.default]
        return self.NAME + ("{" + " ".join(opts) + "}" if opts else "")


def _valid_values(meta: Any) -> str:
    if meta.get("choices"):
        return "{" + ", ".join(meta["choices"]) + "}"
    low, high = meta.get("minimum"), meta.get("maximum")
    if low is None and high is None:
        return ""
    return f"[{'-inf' if low is None else low}, {'inf' if high is None else high}]"


def _check_option(f: dataclasses.Field, value: Any) -> str:
    """Why ``value`` is not valid for option ``f``, or ''."""
    meta = f.metadata
    expected = {"int": int, "bool": bool, "str": str}.get(f.type if isinstance(f.type, str) else f.type.__name__)
    if expected is not None and (not isinstance(value, expected) or (expected is int and isinstance(value, bool))):
        return f"expects {expected.__name__}, got {value!r}"
    choices = meta.get("choices")
    if choices and value not in choices:
        return f"must be one of {_valid_values(meta)}, got {value!r}"
    low, high = meta.get("minimum"), meta.get("maximum")
    if (low is not None and value < low) or (high is not None and value > high):
        return f"must be in {_valid_values(meta)}, got {value}"
    return meta["check"](value) if meta.get("check") else ""
