"""Bounded equality proofs between programs, in an egglog e-graph.

Both programs' result terms go into one e-graph with their arguments'
shapes; the laws of :mod:`prism.algebra.laws` run until every pair of results is
in one e-class (proved), or the budget runs out. Associativity,
commutativity and distributivity grow e-graphs without limit, so every run
is bounded three ways: a back-off scheduler bans rules that match too
often, the e-graph's size is checked after each iteration, and so is the
wall clock. An exhausted budget is reported as such, never as a proof.

A proof first replays exploration: the original alone is explored as
prism-explore explores it, and the candidate is looked up in that e-graph.
A rewrite that exploration found is there by construction, however large
the program; a proof seeded with both programs may not reach it in time.

egglog gives Python no proof certificates; a :class:`Proof` records which
laws fired, with their match counts, as the evidence.
"""

from __future__ import annotations

import dataclasses
import functools
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

from egglog import EGraph, Ruleset, back_off, eq, ruleset, run
from egglog import egraph_state as _egglog_state
from egglog.declarations import CallDecl, PartialCallDecl, TypedExprDecl

from prism.algebra import laws as algebra_laws
from prism.algebra.budget import EXPLORATION, Budget
from prism.algebra.ops import ELEMENT_NAMES, Tensor, TensorList
from prism.algebra.terms import Program, to_egglog


@dataclass(frozen=True)
class Proof:
    """The outcome of one attempt: proved or not, why it stopped, and what fired."""

    proved: bool
    stopped: str  # "proved", "saturated", "time", "e-graph size" or "iterations"
    laws: dict[str, int]  # law name -> matches, for the laws that fired
    nodes: int
    seconds: float
    unproven_results: tuple[int, ...] = ()


@functools.cache
def _all_laws(names: tuple[str, ...] | None) -> Ruleset:
    """One ruleset of the laws of the rulesets ``names`` (all by default), in their order.

    One flat ruleset, made once: egglog re-derives a combination of rulesets
    (``a | b | ...``) from its parts on every run, merging their
    declarations again each time, a fifth of a proof's time.
    """
    chosen = names or tuple(algebra_laws.RULESETS)
    rules = [algebra_laws.LAW_RULES[law] for name in chosen for law in algebra_laws.LAW_NAMES[name]]
    return ruleset(*rules, name="laws of " + ", ".join(chosen))


def prove(original: Program, candidate: Program, budget: Budget | None = None,
          rulesets: tuple[str, ...] | None = None) -> Proof:
    """Try to prove that ``candidate`` computes the same results as ``original``, within ``budget`` (the
    default Budget without one).

    The two must have the same arguments (checked by the caller) and the same boundary reshapes
    (:class:`~prism.algebra.terms.Views`; a proof of programs with others fails). Only the
    named rulesets run (all of them by default), beside the shape rules.
    Two attempts are made (:func:`_replayed`, then both programs in one
    e-graph), within one ``budget.seconds`` together; the proof's time and
    laws cover both. The clock is read between rounds of the laws, so a
    proof ends at the first round that ends past its time.
    """
    budget = budget or Budget()
    began = time.perf_counter()
    if original.views != candidate.views:  # arg(i) and the results would mean different tensors on each side
        return Proof(False, "boundary reshapes differ", {}, 0, time.perf_counter() - began)
    if list(original.results) == list(candidate.results):  # the same terms: no law to apply
        return Proof(True, "proved", {}, 0, time.perf_counter() - began)
    deadline = began + budget.seconds
    replayed = _replayed(original, candidate, budget, rulesets, deadline)
    if replayed.proved:
        return replayed
    budget = dataclasses.replace(budget, seconds=max(deadline - time.perf_counter(), 0.0))
    with owned_egraph() as egraph:
        original.register_shapes(egraph)
        goals, memo = [], {}
        for index, (left, right) in enumerate(zip(original.results, candidate.results, strict=True)):
            pair = (egraph.let(f"{side}{index}", to_egglog(term, memo)) for side, term in (("original", left),
                                                                                       ("candidate", right)))
            goals.append(eq(next(pair)).to(next(pair)))
        stopped, laws = saturate(egraph, budget, rulesets, lambda: egraph.check_bool(*goals))
        unproven = () if stopped == "proved" else tuple(i for i, g in enumerate(goals) if not egraph.check_bool(g))
        nodes = _size(egraph)
    return Proof(stopped == "proved", stopped, laws, nodes, time.perf_counter() - began, unproven)


# Rounds of the laws a replayed proof gives the candidate once it is in the original's e-graph: to_mlir may write
# a form that reads back a step away from the e-nodes exploration chose (one nesting of broadcasts for another).
_CLOSING_ROUNDS = 2


def _replayed(original: Program, candidate: Program, budget: Budget,
              rulesets: tuple[str, ...] | None, deadline: float) -> Proof:
    """The proof by replaying exploration: the original alone, explored as prism-explore explores a function
    (the rulesets of ``EXPLORING`` among ``rulesets``, under the exploration budget, no larger than ``budget``),
    then the candidate added, with a few closing rounds, all before ``deadline`` (``time.perf_counter()``).

    A form that exploration extracted is in that e-graph by construction, in
    the e-class of the original's result; a proof seeded with both programs
    grows around both, and for a whole decoder block it does not close
    within a proof's budget where this one closes in a second. The laws
    are the same sound laws, so a proof found this way is a proof.
    """
    chosen = tuple(name for name in algebra_laws.EXPLORING if rulesets is None or name in rulesets)
    began = time.perf_counter()
    explored = Budget(min(EXPLORATION.seconds, deadline - began), min(EXPLORATION.max_nodes, budget.max_nodes),
                      min(EXPLORATION.iterations, budget.iterations), EXPLORATION.match_limit)
    with owned_egraph() as egraph:
        original.register_shapes(egraph)
        memo: dict = {}
        lefts = [egraph.let(f"original{i}", to_egglog(term, memo)) for i, term in enumerate(original.results)]
        _, laws = saturate(egraph, explored, chosen)
        rights = [egraph.let(f"candidate{i}", to_egglog(term, memo)) for i, term in enumerate(candidate.results)]
        goals = [eq(left).to(right) for left, right in zip(lefts, rights, strict=True)]
        # The closing rounds match at exploration's rate: the candidate is a step or two from the explored
        # e-nodes, and the explored e-graph is large enough that a round at the full rate can run far past the
        # time budget, which is only checked between rounds.
        closing = Budget(max(deadline - time.perf_counter(), 0.0), budget.max_nodes, _CLOSING_ROUNDS,
                         explored.match_limit)
        stopped, more = saturate(egraph, closing, chosen, lambda: egraph.check_bool(*goals))
        for law, count in more.items():
            laws[law] = laws.get(law, 0) + count
        unproven = () if stopped == "proved" else tuple(i for i, g in enumerate(goals) if not egraph.check_bool(g))
        nodes = _size(egraph)
    return Proof(stopped == "proved", stopped, dict(sorted(laws.items())), nodes, time.perf_counter() - began,
                 unproven)


def _repeated_subterms(typed_expr: TypedExprDecl) -> list[TypedExprDecl]:
    """The subterms met more than once in a walk of ``typed_expr``, in the order of a depth-first walk.

    egglog binds each subterm with several parents to a name of its own
    before it adds an expression, and finds them by popping a Python set, in
    an order that changes from one process to the next (the declarations'
    hashes vary). The names and the order in which terms enter the e-graph
    then vary, and so does what a bounded run of the laws reaches: the same
    program explored into other programs in other processes. This walk finds
    the same subterms in the same order every time; egglog 13's conversion
    (pinned) calls it in place of its own.
    """
    seen: set[TypedExprDecl] = set()
    repeated: list[TypedExprDecl] = []
    stack = [typed_expr]
    while stack:
        current = stack.pop()
        if current in seen:
            repeated.append(current)
            continue
        seen.add(current)
        expr = current.expr
        args = expr.args if isinstance(expr, CallDecl) else expr.call.args if isinstance(expr, PartialCallDecl) else ()
        stack.extend(reversed(args))
    return repeated


if not callable(getattr(_egglog_state, "_exprs_multiple_parents", None)):
    raise ImportError("egglog's conversion of expressions is not the pinned one (egglog 13.2): reinstall the "
                      "project's pinned dependencies")
_egglog_state._exprs_multiple_parents = _repeated_subterms  # noqa: SLF001  (see _repeated_subterms)


@contextmanager
def owned_egraph() -> Iterator[EGraph]:
    """An e-graph whose engine is dropped on leaving, in the thread that made it.

    egglog's engine may only be dropped by the thread that created it, and
    egglog's Python objects hold it in reference cycles, which Python's cycle
    collector frees in whichever thread it happens to run: from a second
    thread that is an error message on stderr. Dropping the engine here
    (egglog 13 keeps it in its states' ``egraph`` attribute) leaves only plain
    Python objects to the collector.
    """
    egraph = EGraph()
    try:
        yield egraph
    finally:
        for state in (egraph._state, *egraph._state_stack):  # noqa: SLF001  (see the docstring)
            state.egraph = None


def saturate(egraph: EGraph, budget: Budget, rulesets: tuple[str, ...] | None = None,
             goal: Callable[[], bool] | None = None) -> tuple[str, dict[str, int]]:
    """Run the shape rules and the named laws on ``egraph`` until ``goal()`` holds or ``budget`` runs out.

    Returns why it stopped ("proved", "saturated", "time", "e-graph size" or
    "iterations"; "proved" only when a goal was given and holds) and the
    laws that fired, with their match counts.
    """
    began = time.perf_counter()
    holds = goal or (lambda: False)
    laws_run = run(_all_laws(rulesets), scheduler=back_off(match_limit=budget.match_limit))
    schedule = algebra_laws.SHAPES.saturate() + laws_run
    laws: dict[str, int] = {}
    stopped = "iterations"
    for _ in range(budget.iterations):
        if holds():
            stopped = "proved"
            break
        report = egraph.run(schedule)
        for decl, count in report.num_matches_per_rule.items():
            name = getattr(decl, "name", None)
            if count and name and not name.startswith(("shape-", "dtype-")):
                laws[name] = laws.get(name, 0) + count
        if not report.updated:
            stopped = "proved" if holds() else "saturated"
            break
        if _size(egraph) > budget.max_nodes:
            stopped = "e-graph size"
            break
        if time.perf_counter() - began > budget.seconds:
            stopped = "time"
            break
    else:
        stopped = "proved" if holds() else "iterations"
    if goal is None and stopped != "saturated":  # exploration reads shapes: derive those of the last new terms
        egraph.run(algebra_laws.SHAPES.saturate())
    return stopped, dict(sorted(laws.items()))


@dataclass(frozen=True)
class Node:
    """One e-node: a constructor of :mod:`prism.algebra.ops` (named as in :class:`prism.algebra.terms.Term`),
    the e-classes of its tensor operands and its other arguments."""

    op: str
    children: tuple[int, ...]
    attrs: tuple[int | float | str, ...]


@dataclass
class Graph:
    """A snapshot of an e-graph's tensor e-classes, numbered densely in a deterministic order.

    ``classes`` maps each e-class to its e-nodes; ``shapes`` holds the shape
    of each e-class whose rank and sizes are all known; ``lets`` maps each
    name bound with ``EGraph.let`` to its e-class; ``elements`` the element
    type of each e-class whose type is known.
    """

    classes: dict[int, list[Node]]
    shapes: dict[int, tuple[int, ...]]
    lets: dict[str, int]
    elements: dict[int, str] = field(default_factory=dict)
    index: dict[Node, int] = field(init=False, repr=False)  # each e-node's e-class

    def __post_init__(self) -> None:
        self.index = {node: cls for cls, nodes in self.classes.items() for node in nodes}

    def find(self, op: str, children: tuple[int, ...], attrs: tuple[int | float | str, ...]) -> int | None:
        """The e-class holding the e-node ``op(children, attrs)``, if any."""
        return self.index.get(Node(op, children, attrs))


# egglog names a sort after the class that declares it.
_TENSOR = f"{Tensor.__module__}.Tensor"
_LIST = f"{TensorList.__module__}.TensorList"


def read_graph(egraph: EGraph) -> Graph:
    """The tensor e-classes of ``egraph`` (call after a run: the rows are then canonical).

    egglog 13 has no public way to enumerate e-nodes, so this reads the
    frozen tables through the bindings (``EGraph._egraph.freeze``, pinned
    with the package version); a test checks the reading against terms whose
    e-classes are known.
    """
    raw = egraph._egraph  # noqa: SLF001  (see the docstring)
    names = egraph._state.egg_fn_to_callable_refs  # noqa: SLF001
    frozen = raw.freeze()
    ids: dict[object, int] = {}

    def cls(value: object) -> int:
        return ids.setdefault(value, len(ids))

    def primitive(sort: str, value: object) -> int | float | str:
        return {"i64": raw.value_to_i64, "f64": raw.value_to_f64, "String": raw.value_to_string}[sort](value)

    lists: dict[object, tuple[object, object] | None] = {}
    rows: list[tuple[str, list[str], list[object], object]] = []
    ranks: dict[int, int] = {}
    dims: dict[int, dict[int, int]] = {}
    types: dict[int, str] = {}
    lets: dict[str, int] = {}
    for egg_name in sorted(frozen.functions):
        function = frozen.functions[egg_name]
        if function.is_let_binding:
            if function.output_sort == _TENSOR and not egg_name.startswith("$__expr_"):
                lets[egg_name.lstrip("$")] = cls(function.rows[0].output)
            continue
        refs = names.get(egg_name)
        if not refs:
            continue
        (ref,) = refs
        op = getattr(ref, "method_name", None) or ref.ident.name
        sorts = list(function.input_sorts)
        for row in function.rows:
            if row.subsumed:
                continue
            if op == "rank":
                ranks[cls(row.inputs[0])] = raw.value_to_i64(row.output)
            elif op == "dtype":
                types[cls(row.inputs[0])] = ELEMENT_NAMES[raw.value_to_i64(row.output)]
            elif op == "dim":
                dims.setdefault(cls(row.inputs[0]), {})[raw.value_to_i64(row.inputs[1])] = raw.value_to_i64(row.output)
            elif function.output_sort == _LIST:
                lists[row.output] = (row.inputs[0], row.inputs[1]) if op == "cons" else None
            elif function.output_sort == _TENSOR:
                rows.append((op, sorts, list(row.inputs), row.output))

    def elements(value: object) -> list[object]:
        found = []
        while lists.get(value) is not None:
            head, value = lists[value]
            found.append(head)
        return found

    classes: dict[int, list[Node]] = {}
    for op, sorts, inputs, output in rows:
        children, attrs = [], []
        for sort, value in zip(sorts, inputs, strict=True):
            if sort == _TENSOR:
                children.append(cls(value))
            elif sort == _LIST:
                children += [cls(v) for v in elements(value)]
            else:
                attrs.append(primitive(sort, value))
        if op == "cast":  # its element type by name, as in terms
            attrs = [ELEMENT_NAMES[int(attrs[0])]]
        classes.setdefault(cls(output), []).append(Node(op, tuple(children), tuple(attrs)))
    shapes = {c: tuple(dims[c][axis] for axis in range(rank)) for c, rank in ranks.items()
              if all(axis in dims.get(c, {}) for axis in range(rank))}
    return Graph(classes, shapes, lets, types)


def _size(egraph: EGraph) -> int:
    return sum(size for _, size in egraph.all_function_sizes())
