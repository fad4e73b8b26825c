"""Prism's Python API: ``prism.compile``, ``prism.verify`` and ``prism.shape_tables``.

``compile`` runs the same pass objects as ``prism-opt`` and returns a
:class:`CompiledModule` holding the optimized MLIR, the PTX (GPU targets), the
report, and for the host a way to call the functions on numpy arrays.
``verify`` proves two programs equal, or finds where they differ.
``shape_tables`` prunes each family once for every size of its dynamic
extents and returns tables that choose a schedule per size in microseconds.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from mlir import ir

from prism.algebra.budget import Budget
from prism.driver import Compilation, check_emit, check_targets, ptx_text, steps_for
from prism.infra.errors import PrismError, TargetError
from prism.infra.ir import SourceChunk, argument_names, make_context, parse_chunk, read_source_file, read_text
from prism.runtime.cpu import ArgumentError, BoundFunction, compile_engine, describe_signature
from prism.runtime.cpu import bind as bind_module
from prism.runtime.cpu import jit as jit_module
from prism.search.family import body_func, families, family_domain, family_name, family_space, payload_problem
from prism.search.search import ShapeTable
from prism.targets import IreeTarget, LoweringTarget, get_target

if TYPE_CHECKING:
    import numpy as np

    from prism.algebra.prove import FunctionProof

Source = str | bytes | Path | ir.Module


@dataclass
class CompiledModule:
    """The result of :func:`compile`.

    Attributes:
        mlir: the optimized module as MLIR text (tensor level, annotated linalg).
        target: the target name it was optimized for.
        report: the search report (target, families with funnel and choice; with ``emit="report"`` for the
            host, ``kernels``: per function, each kernel the code generator makes and the ops it runs).
        ptx: for NVIDIA targets with ``emit="ptx"``, the one PTX module by its name (None otherwise).
        manifest: with ``ptx``, the launch manifest (see ``docs/gpu.md``): per function, its kernels in launch
            order with their grids, blocks, shared memory and parameters, its buffers and size symbols.
        iree: with ``emit="iree"``, the module as IREE input: each tuned contraction with IREE's
            ``compilation_info`` (see :mod:`prism.codegen.iree`); with ``emit="iree-spec"``, an IREE tuning
            spec that gives the same contractions the same configurations; else None.
    """

    mlir: str
    target: str
    report: dict[str, Any]
    ptx: dict[str, str] | None = None
    manifest: dict[str, Any] | None = None
    iree: str | None = None
    source: str = "<compiled>"
    _located: str = field(default="", repr=False)  # ``mlir`` with the source's locations, for jit()'s errors
    _jitted: dict[str | None, Callable[..., Any]] = field(default_factory=dict, repr=False)
    _compiled: tuple[ir.Module, Any] | None = field(default=None, repr=False)  # see _runtime()
    _arg_names: dict[str, list[str]] = field(default_factory=dict, repr=False)  # as the source spells them

    @property
    def ptx_text(self) -> str:
        """The PTX module, a complete file for ``ptxas`` or ``cuModuleLoadData``."""
        if self.ptx is None:
            raise TargetError("no PTX was produced: compile with a GPU target and emit='ptx'")
        return ptx_text(self.ptx)

    def tiled(self, name: str | None = None) -> Callable[..., tuple[np.ndarray, ...]]:
        """For a GPU target, a callable running function ``name`` (or the only one) as its *tiled program* on
        the host: the kernels Prism plans for the GPU, with their tiles, masked edges, fusions and online
        softmax, short of mapping threads. It takes numpy arrays and returns the tuple of results.

        This checks the GPU kernels' arithmetic without a GPU; it does not replace running them on one.
        """
        from prism.runtime.gpu_check import run_planned

        chosen = get_target(self.target)
        if getattr(chosen, "artifact", None) != "ptx":
            raise TargetError(f"tiled() runs the GPU's tiled program; target '{self.target}' is not a GPU Prism "
                              "lowers for")
        functions = re.findall(r"func\.func @([\w$.]+)", self.mlir)
        if name is None:
            if len(functions) != 1:
                raise PrismError(f"the module has functions {', '.join(functions)}: name one")
            name = functions[0]
        return lambda *arrays: run_planned(self.mlir, chosen.chip, name, arrays)

    def jit(self, name: str | None = None) -> Callable[..., Any]:
        """A Python callable running function ``name`` (or the only one) on the host.

        The callable takes numpy arrays, one per tensor argument, and returns a
        numpy array, or a tuple of them when the function has several results.
        """
        if name not in self._jitted:
            module, engine = self._runtime()
            self._jitted[name] = jit_module(module, name, engine=engine)
        return self._jitted[name]

    def iree_function(self, name: str, flags: Sequence[str] = ()) -> Callable[..., Any]:
        """Function ``name`` of :attr:`iree` compiled by IREE (``iree-compile`` for the target's IREE backend and
        machine, then ``flags``) and loaded in IREE's runtime: a callable over numpy arrays (on this host).

        Needs ``iree-base-compiler`` and ``iree-base-runtime`` (the test and
        bench extras); raises TargetError without them, or when IREE refuses
        the module.
        """
        if self.iree is None:
            raise TargetError("no IREE module was produced: compile with emit='iree'")
        from prism.codegen import iree  # loaded only when asked

        chip = get_target(self.target)
        if not isinstance(chip, IreeTarget):
            raise TargetError(f"Prism writes no IREE configuration for target '{self.target}'")
        return iree.load(iree.compile_vmfb(self.iree, chip.iree_backend, [*chip.iree_flags, *flags]), name)

    def bind(self, name: str, **arrays: Any) -> BoundFunction:
        """Fix some arguments of function ``name`` once (weights), and return a callable over the others.

        Arguments are named as the source names them (``%w`` is ``w``), or
        ``argN`` by position. The callable takes the remaining arguments in
        their order in the signature: ``compiled.bind("f", w=W)(x)`` is
        ``compiled.jit("f")(x, W)``.

        When the function's invariant weights (``{prism.invariant}``) feed its
        GEMMs, they are packed here, once, and every call reads the packed
        copy. Bound arrays are used without a copy, so they must not change
        while the callable is in use: each call compares a sampled
        fingerprint of every bound array with the one taken here and raises
        ``StaleBinding`` (an ``ArgumentError``) if it differs. To change a
        weight, bind again. A change that touches none of the sampled
        elements (64 evenly spaced runs of 16 per array) goes unseen.

        Raises:
            ArgumentError: an unknown argument name, or an array of the wrong shape or dtype.
            TargetError: as :meth:`jit`.
        """
        if not isinstance(name, str):
            raise ArgumentError(f"bind() needs the function's name, not {name!r}")
        module, engine = self._runtime()
        signature = describe_signature(module, name)
        names = self._arg_names.get(name, [])
        names = names if len(names) == len(signature.inputs) else [f"arg{i}" for i in range(len(signature.inputs))]
        bound: dict[int, Any] = {}
        for key, value in arrays.items():
            if key in names:
                bound[names.index(key)] = value
            elif key.startswith("arg") and key[3:].isdigit() and int(key[3:]) < len(names):
                bound[int(key[3:])] = value
            else:
                raise ArgumentError(f"@{name} has no argument '{key}'; its arguments are {', '.join(names)}")
        return bind_module(module, name, bound, names, engine=engine)

    def _runtime(self) -> tuple[ir.Module, Any]:
        """The module lowered for this machine and its compiled code, made at the first jit() or bind() and
        shared by all of them."""
        if self._compiled is None:
            module = self._lowered()
            self._compiled = (module, compile_engine(module, self.source))
        return self._compiled

    def _lowered(self) -> ir.Module:
        """The optimized module lowered for this machine (a fresh copy each time)."""
        target = get_target(self.target)
        if not (isinstance(target, LoweringTarget) and target.runs_here):
            raise TargetError(f"jit() and bind() run code on this machine; compile with target='host', "
                              f"not '{self.target}'")
        compilation = Compilation(_parse_text(self._located or self.mlir, self.source), self.target)
        compilation.lower()
        return compilation.module


def _parse_text(text: str, filename: str) -> ir.Module:
    return parse_chunk(SourceChunk(text, filename), make_context())


def _read(source: Source) -> tuple[str, str]:
    """The MLIR text of ``source`` and the name its locations are shown under.

    A string without a newline or a brace is a path: MLIR text that defines
    anything has braces.
    """
    if isinstance(source, ir.Module):
        return str(source), "<module>"
    if isinstance(source, bytes):
        return read_text(source, "<bytes>"), "<bytes>"
    if isinstance(source, Path) or (isinstance(source, str) and source.strip() and not any(c in source for c in "\n{")):
        return read_source_file(source), str(source)
    if isinstance(source, str):
        return source, "<string>"
    raise PrismError(f"source must be MLIR text, a path or an mlir.ir.Module, not {type(source).__name__}")


def _load(source: Source) -> tuple[ir.Module, str]:
    """Parse ``source`` into a fresh context (the caller's module is never touched); also its name."""
    text, name = _read(source)
    return _parse_text(text, name), name


def verify(original: Source, candidate: Source, budget_seconds: float = 5.0, trials: int = 3) -> list[FunctionProof]:
    """Prove every public function of ``candidate`` equal to the one of the same name in ``original``.

    The proof runs in an egglog e-graph bounded by ``budget_seconds`` (both of its attempts together, the
    clock read between rounds of the laws); when
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
    if budget_seconds <= 0 or trials < 0:
        raise PrismError(f"budget_seconds must be positive and trials non-negative, got {budget_seconds} and {trials}")
    (before, _), (after, _) = _load(original), _load(candidate)
    from prism.algebra.prove import prove_modules  # loads egglog: only proofs pay for it
    from prism.runtime.compare import describe_counterexample

    return prove_modules(before, after, Budget(seconds=budget_seconds), trials,
                         find_counterexample=describe_counterexample)


def shape_tables(source: Source, target: str = "host", max_extent: int = 8192) -> dict[str, ShapeTable]:
    """Lift and prune every family of ``source`` once, for every size of its dynamic extents.

    Returns each family's :class:`~prism.search.search.ShapeTable` by family name.
    ``table.instantiate(m)`` then chooses the schedule for a dynamic extent of
    ``m`` (1 <= m <= ``max_extent``) in well under a millisecond, without
    any further isl work; static families get a table of one entry.

    Raises:
        PrismError: as :func:`compile`; EmptySearchSpace from ``instantiate``
            when no schedule fits a size.
    """
    if not isinstance(max_extent, int) or max_extent < 1:
        raise PrismError(f"max_extent must be a positive integer, got {max_extent!r}")
    module, _ = _load(source)
    compilation = Compilation(module, target)
    compilation.run(steps_for("prism-lift,prism-prune", "mlir"))
    chip = get_target(target)
    tables = {}
    for family in families(compilation.module):
        contraction = payload_problem(body_func(family))
        space = family_space(chip, contraction, family)
        domain = family_domain(family, space)
        tables[family_name(family)] = ShapeTable.build(space, contraction, domain, chip, max_extent)
    return tables


def compile(source: Source, target: str = "host", emit: str | None = None, pipeline: str | None = None,
            verbose: bool = False) -> CompiledModule:
    """Optimize ``source`` for ``target`` and return the results.

    Args:
        source: MLIR text, a path to a ``.mlir`` file, or an ``mlir.ir.Module``
            (copied, never modified).
        target: ``"h200"``, ``"h100"``, ``"a100"``, ``"mi300x"`` (searched here, compiled by IREE: emit
            ``"iree"`` or ``"iree-spec"``) or ``"host"``.
        emit: ``"mlir"`` or ``"report"`` stop after the search (``.ptx`` is
            None; ``"report"`` first lowers a copy, and raises the lowering's
            error for a module that cannot be built); ``"ptx"`` also lowers
            to PTX and needs an NVIDIA target;
            ``"iree"`` also writes ``.iree``, the module as IREE input, and
            ``"iree-spec"`` an IREE tuning spec there instead. The
            default is ``"ptx"`` for GPU targets and ``"mlir"`` for the host,
            whose code is built on demand by :meth:`CompiledModule.jit`.
        pipeline: a pass pipeline string; ``prism-optimize`` by default.
        verbose: print search progress on stderr.

    Raises:
        PrismError: a subclass naming what is wrong with the input or options.
    """
    if not isinstance(pipeline, str | None):
        raise PrismError(f"pipeline must be a pass pipeline string, not {type(pipeline).__name__}")
    chosen = get_target(target)
    emit = emit or ("ptx" if isinstance(chosen, LoweringTarget) and chosen.artifact == "ptx" else "mlir")
    if emit not in ("mlir", "report", "ptx", "iree", "iree-spec"):
        raise TargetError(f"emit must be 'mlir', 'report', 'ptx', 'iree' or 'iree-spec', not '{emit}'")
    check_emit(emit, target)
    steps = steps_for(pipeline, "report")
    check_targets(steps, target, emit)
    module, name = _load(source)
    compilation = Compilation(module, target)
    compilation.ctx.verbose = verbose
    compilation.run(steps)
    optimized = str(compilation.module)
    located = compilation.module.operation.get_asm(enable_debug_info=True)
    ptx = iree = manifest = None
    if emit == "report":
        compilation.report_kernels()
    if emit in ("iree", "iree-spec"):
        iree = compilation.emit(emit)
    if emit == "ptx":
        compilation.lower()
        ptx = dict(compilation.ctx.artifacts["ptx"])
        manifest = compilation.ctx.artifacts["manifest"]
    return CompiledModule(mlir=optimized, target=target, report=compilation.ctx.report, ptx=ptx, manifest=manifest,
                          iree=iree, source=name,
                          _located=located, _arg_names=argument_names(_read(source)[0]))
