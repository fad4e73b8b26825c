"""Prism's Python API: ``prism.compile``, ``prism.verify`` and ``prism.shape_tables``.

``compile`` runs the same pass objects as ``prism-opt`` and returns a
:class:`CompiledModule` holding the optimized MLIR, the PTX (GPU targets), the
report, and for the host a way to call the functions on numpy arrays.
``verify`` proves two programs equal, or finds where they differ.
``shape_tables`` prunes each family once for every size of its dynamic
extents and returns tables that choose a schedule per size in microseconds.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from mlir import ir

from prism.driver import Compilation, ptx_text, stages_for
from prism.egraph import Budget
from prism.errors import PrismError, TargetError
from prism.family import body_func, families, family_domain, family_name, payload_contraction
from prism.ir import SourceChunk, make_context, parse_chunk
from prism.search import ShapeTable
from prism.space import family_space
from prism.targets import get_target
from prism.verify import FunctionProof, verify_modules

Source = str | Path | ir.Module


@dataclass
class CompiledModule:
    """The result of :func:`compile`.

    Attributes:
        mlir: the optimized module as MLIR text (tensor level, annotated linalg).
        target: the target name it was optimized for.
        report: the search report (target, families with funnel and choice).
        ptx: PTX text per GPU module for GPU targets (None for the host).
    """

    mlir: str
    target: str
    report: dict[str, Any]
    ptx: dict[str, str] | None = None
    _jitted: dict[str | None, Callable[..., Any]] = field(default_factory=dict, repr=False)

    @property
    def ptx_text(self) -> str:
        """All PTX modules as one text, each headed by a ``// ----- gpu.module`` comment."""
        if self.ptx is None:
            raise TargetError("no PTX was produced: compile with a GPU target and emit='ptx'")
        return ptx_text(self.ptx)

    def jit(self, name: str | None = None) -> Callable[..., Any]:
        """A Python callable running function ``name`` (or the only one) on the host.

        The callable takes numpy arrays, one per tensor argument, and returns a
        numpy array, or a tuple of them when the function has several results.
        """
        if get_target(self.target).is_gpu:
            raise TargetError(f"jit() runs host code; compile with target='host', not '{self.target}'")
        if name not in self._jitted:
            from prism.runtime import jit as jit_module

            compilation = Compilation(_parse_text(self.mlir, "<compiled>"), self.target)
            compilation.lower()
            self._jitted[name] = jit_module(compilation.module, name)
        return self._jitted[name]


def _parse_text(text: str, filename: str) -> ir.Module:
    return parse_chunk(SourceChunk(text, filename), make_context())


def _load(source: Source) -> ir.Module:
    """Parse ``source`` into a fresh context; the caller's module is never touched."""
    if isinstance(source, ir.Module):
        return _parse_text(str(source), "<module>")
    if isinstance(source, Path) or ("\n" not in source and "{" not in source and source.endswith(".mlir")):
        path = Path(source)
        try:
            return _parse_text(path.read_text(), str(path))
        except OSError as error:
            raise PrismError(f"cannot read input file '{path}': {error.strerror}", location=str(path)) from None
    return _parse_text(source, "<string>")


def verify(original: Source, candidate: Source, budget_seconds: float = 5.0, trials: int = 3) -> list[FunctionProof]:
    """Prove every public function of ``candidate`` equal to the one of the same name in ``original``.

    The proof runs in an egglog e-graph bounded by ``budget_seconds``; when
    it fails, both functions run on ``trials`` sets of random inputs on the
    host to look for a counterexample.

    Returns:
        One proof per function, with the laws that fired.

    Raises:
        VerificationError: a function is missing, has another type, or could
            not be proven; the message names it, why the proof stopped, the
            laws applied and any counterexample.
        PrismError: as :func:`compile`, for a source that cannot be read.
    """
    return verify_modules(_load(original), _load(candidate), Budget(seconds=budget_seconds), trials)


def shape_tables(source: Source, target: str = "host", max_extent: int = 8192) -> dict[str, ShapeTable]:
    """Lift and prune every family of ``source`` once, for every size of its dynamic extents.

    Returns each family's :class:`~prism.search.ShapeTable` by family name.
    ``table.instantiate(m)`` then chooses the schedule for a dynamic extent of
    ``m`` (1 <= m <= ``max_extent``) in well under a millisecond, without
    any further isl work; static families get a table of one entry.

    Raises:
        PrismError: as :func:`compile`; EmptySearchSpace from ``instantiate``
            when no schedule fits a size.
    """
    compilation = Compilation(_load(source), target)
    compilation.run(stages_for("prism-lift,prism-prune", "mlir"))
    chip = get_target(target)
    tables = {}
    for family in families(compilation.module):
        _, contraction = payload_contraction(body_func(family))
        space = family_space(contraction, chip)
        domain = family_domain(family, space)
        tables[family_name(family)] = ShapeTable.build(space, contraction, domain, chip, max_extent)
    return tables


def compile(source: Source, target: str = "host", emit: str | None = None, pipeline: str | None = None,
            verbose: bool = False) -> CompiledModule:
    """Optimize ``source`` for ``target`` and return the results.

    Args:
        source: MLIR text, a path to a ``.mlir`` file, or an ``mlir.ir.Module``
            (copied, never modified).
        target: ``"h200"``, ``"h100"``, ``"a100"`` or ``"host"``.
        emit: ``"mlir"`` or ``"report"`` stop after the search (``.ptx`` is
            None); ``"ptx"`` also lowers to PTX and needs a GPU target. The
            default is ``"ptx"`` for GPU targets and ``"mlir"`` for the host,
            whose code is built on demand by :meth:`CompiledModule.jit`.
        pipeline: a pass pipeline string; ``prism-optimize`` by default.
        verbose: print search progress on stderr.

    Raises:
        PrismError: a subclass naming what is wrong with the input or options.
    """
    is_gpu = get_target(target).is_gpu
    emit = emit or ("ptx" if is_gpu else "mlir")
    if emit not in ("mlir", "report", "ptx"):
        raise TargetError(f"emit must be 'mlir', 'report' or 'ptx', not '{emit}'")
    if emit == "ptx" and not is_gpu:
        raise TargetError(f"emit='ptx' needs a GPU target, not '{target}'")
    compilation = Compilation(_load(source), target)
    compilation.ctx.verbose = verbose
    compilation.run(stages_for(pipeline, "report"))
    optimized = str(compilation.module)
    ptx = None
    if emit == "ptx":
        compilation.lower()
        ptx = dict(compilation.ctx.artifacts["ptx"])
    return CompiledModule(mlir=optimized, target=target, report=compilation.ctx.report, ptx=ptx)
