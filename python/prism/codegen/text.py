"""A builder of MLIR text whose regions are ``with`` blocks: the common ground of the code generators.

A kernel is written line by line with fresh SSA names; a region opens with
its op's header and closes when its ``with`` block ends, so the nesting of
the text is the nesting of the Python code. Helpers name the idioms that
kernels repeat: loops (:meth:`TextBuilder.for_`, :meth:`TextBuilder.for_carried`,
:meth:`TextBuilder.parallel`), branches (:meth:`TextBuilder.if_`,
:meth:`TextBuilder.else_`), a worker's share of a range
(:meth:`TextBuilder.share`), the end of a range's whole vectors
(:meth:`TextBuilder.whole_end`) and an aligned allocation
(:meth:`TextBuilder.alloc`).

Example::

    t = TextBuilder()
    with t.region("func.func @zero(%m: memref<?xf32>, %n: index)"):
        zero = t.value("arith.constant 0.0 : f32", "z")
        with t.share("%n", workers=4) as (_, begin, end), t.for_(begin, end, t.const(1), "i") as i:
            t.add(f"memref.store {zero}, %m[{i}] : memref<?xf32>")
        t.add("return")
    print(t.function_text())

writes ``func.func @zero(...) {``, the index constants, and an
``scf.parallel`` over the 4 workers holding each one's ``scf.for``, every
region closed and indented by its depth.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass

# Bytes an allocation is aligned to: a cache line, and a whole vector register of any width in use.
ALIGNMENT = 64


def aligned_alloc(memref_type: str, sizes: Sequence[str] = ()) -> str:
    """The ``memref.alloc`` of ``memref_type`` (with ``sizes`` for its dynamic dimensions), ALIGNMENT-aligned."""
    return f"memref.alloc({', '.join(sizes)}) {{alignment = {ALIGNMENT} : i64}} : {memref_type}"


@dataclass(frozen=True)
class CarriedLoop:
    """An ``scf.for`` that carries values: its induction variable, its iteration arguments (the carried
    values inside the body) and its results (the values after the loop)."""

    iv: str
    args: list[str]
    results: list[str]


class TextBuilder:
    """Lines of MLIR with fresh SSA names, regions opened and closed by ``with`` blocks.

    A region that raises closes all the same: the builder is then at the depth
    it had before the region opened.
    """

    def __init__(self) -> None:
        self.lines: list[str] = []
        self.constants: set[int] = set()  # index constants, defined once at the function's entry
        self._count = 0
        self.depth = 0
        self._branch_closed: int | None = None  # the line closing an scf.if that an else_ may follow

    def fresh(self, hint: str = "v") -> str:
        """A new SSA name from ``hint`` (never ``c``, whose names are the index constants'). A hint that ends in
        a digit is kept apart from the count (``r2`` at 83 is ``%r2_83``, never ``%r283``, which is ``r`` at
        283)."""
        if hint == "c":
            raise ValueError("the hint 'c' would make names like those of index constants (%c16)")
        self._count += 1
        return f"%{hint}_{self._count}" if hint[-1:].isdigit() else f"%{hint}{self._count}"

    def add(self, line: str) -> None:
        """Append one line at the current depth."""
        self.lines.append("  " * self.depth + line)

    def value(self, expr: str, hint: str = "v") -> str:
        """Append ``%name = expr`` and return the fresh name."""
        name = self.fresh(hint)
        self.add(f"{name} = {expr}")
        return name

    def const(self, n: int) -> str:
        """The index constant ``n`` (defined at the function's entry by :meth:`function_text`)."""
        self.constants.add(n)
        return f"%c{n}"

    def text(self) -> str:
        """The lines written."""
        return "\n".join(self.lines)

    def function_text(self) -> str:
        """The lines written, the first a function's header, with the index constants defined after it."""
        constants = [f"  %c{n} = arith.constant {n} : index" for n in sorted(self.constants)]
        return "\n".join(self.lines[:1] + constants + self.lines[1:])

    # -- regions -------------------------------------------------------------------------------------------------

    @contextmanager
    def region(self, header: str, tail: str = "") -> Iterator[None]:
        """A region of the op written as ``header``: ``header {``, the block's lines indented, and ``}`` followed
        by ``tail`` (what the op's syntax puts after its region: a type, a location)."""
        self.add(header + " {")
        with self._body(branch=False, tail=tail):
            yield

    @contextmanager
    def _body(self, branch: bool, tail: str = "") -> Iterator[None]:
        self.depth += 1
        self._branch_closed = None
        done = False
        try:
            yield
            done = True
        finally:
            self.depth -= 1
            self.add("}" + tail)
            self._branch_closed = len(self.lines) - 1 if done and branch else None

    @contextmanager
    def if_(self, cond: str, types: Sequence[str] = (), hint: str = "r") -> Iterator[list[str]]:
        """``scf.if cond``, yielding its result names (``%r:n`` for ``types``; none without); an :meth:`else_`
        block may follow directly."""
        results: list[str] = []
        header = f"scf.if {cond}"
        if types:
            name = self.fresh(hint)
            header = f"{name}:{len(types)} = {header} -> ({', '.join(types)})"
            results = [f"{name}#{i}" for i in range(len(types))]
        self.add(header + " {")
        with self._body(branch=True):
            yield results

    @contextmanager
    def else_(self) -> Iterator[None]:
        """The else region of the :meth:`if_` block that has just closed."""
        if self._branch_closed is None or self._branch_closed != len(self.lines) - 1:
            raise ValueError("an else block must directly follow an if block")
        self.lines[-1] = "  " * self.depth + "} else {"
        with self._body(branch=False):
            yield

    def yield_(self, values: Sequence[str], types: Sequence[str]) -> None:
        """``scf.yield values : types``."""
        self.add(f"scf.yield {', '.join(values)} : {', '.join(types)}")

    @contextmanager
    def for_(self, lo: str, hi: str, step: str, hint: str = "i") -> Iterator[str]:
        """``scf.for`` from ``lo`` to ``hi`` by ``step``, yielding the induction variable."""
        iv = self.fresh(hint)
        with self.region(f"scf.for {iv} = {lo} to {hi} step {step}"):
            yield iv

    @contextmanager
    def for_carried(self, lo: str, hi: str, step: str, init: Sequence[str], typ: str | Sequence[str],
                    hints: tuple[str, str, str] = ("i", "acc", "out")) -> Iterator[CarriedLoop]:
        """``scf.for`` carrying ``init`` (each of type ``typ``, or of its own type where ``typ`` lists one
        per value); ``hints`` name its induction variable, the carried values and the results. The body ends
        with :meth:`yield_`."""
        iv, args, out = self.fresh(hints[0]), [self.fresh(hints[1]) for _ in init], self.fresh(hints[2])
        pairs = ", ".join(f"{a} = {i}" for a, i in zip(args, init, strict=True))
        types = [typ] * len(args) if isinstance(typ, str) else list(typ)
        header = (f"{out}:{len(args)} = scf.for {iv} = {lo} to {hi} step {step} iter_args({pairs}) "
                  f"-> ({', '.join(types)})")
        with self.region(header):
            yield CarriedLoop(iv, args, [f"{out}#{i}" for i in range(len(args))])

    @contextmanager
    def parallel(self, lo: str, hi: str, step: str, hint: str = "w") -> Iterator[str]:
        """A one-dimensional ``scf.parallel``, yielding its induction variable."""
        iv = self.fresh(hint)
        with self.region(f"scf.parallel ({iv}) = ({lo}) to ({hi}) step ({step})"):
            yield iv

    @contextmanager
    def share(self, total: str, workers: int, multiple: str | None = None) -> Iterator[tuple[str, str, str]]:
        """One parallel iteration per worker, each over a contiguous share of ``[0, total)``: yields the
        worker and its share's bounds ``(worker, begin, end)``, the last shares shorter or empty. With
        ``multiple``, every share but the last is a multiple of it (whole vectors of columns)."""
        count = self.const(workers)
        if multiple is None:
            size = self.value(f"arith.ceildivui {total}, {count} : index", "share")
        else:
            step = self.value(f"arith.muli {count}, {multiple} : index")
            size = self.value(f"arith.muli {self.value(f'arith.ceildivui {total}, {step} : index')}, {multiple} "
                              ": index", "share")
        with self.parallel(self.const(0), count, self.const(1)) as worker:
            begin = self.value(f"arith.muli {worker}, {size} : index", "first")
            if multiple is not None:  # rounded up, the shares may cover more than the range
                begin = self.value(f"arith.minui {begin}, {total} : index", "first")
            end = self.value(f"arith.minui {self.value(f'arith.addi {begin}, {size} : index')}, {total} : index",
                             "end")
            yield worker, begin, end

    # -- values --------------------------------------------------------------------------------------------------

    def alloc(self, memref_type: str, sizes: Sequence[str] = (), hint: str = "m") -> str:
        """A fresh ALIGNMENT-aligned buffer of ``memref_type`` (``sizes`` for its dynamic dimensions)."""
        return self.value(aligned_alloc(memref_type, sizes), hint)

    def whole_end(self, hi: str, step: str, lo: str | None = None, hint: str = "v") -> str:
        """Where the whole steps of ``step`` from ``lo`` (0 by default) toward ``hi`` end: the bound of a loop
        over whole vectors, whose rest (less than one step) is taken under a mask."""
        if lo is None:
            return self.value(f"arith.muli {self.value(f'arith.divui {hi}, {step} : index')}, {step} : index", hint)
        whole = self.whole_end(self.value(f"arith.subi {hi}, {lo} : index"), step)
        return self.value(f"arith.addi {lo}, {whole} : index", hint)
