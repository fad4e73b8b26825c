"""Bounded equality proofs between programs, in an egglog e-graph.

Both programs' result terms go into one e-graph with their arguments'
shapes; the laws of :mod:`prism.algebra` run until every pair of results is
in one e-class (proved), or the budget runs out. Associativity,
commutativity and distributivity grow e-graphs without limit, so every run
is bounded three ways: a back-off scheduler bans rules that match too
often, the e-graph's size is checked after each iteration, and so is the
wall clock. An exhausted budget is reported as such, never as a proof.

egglog gives Python no proof certificates; a :class:`Proof` records which
laws fired, with their match counts, as the evidence.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from egglog import EGraph, Ruleset, back_off, eq, run

from prism import algebra
from prism.terms import Program, to_egglog


@dataclass(frozen=True)
class Budget:
    """Limits of one proof attempt."""

    seconds: float = 5.0
    max_nodes: int = 100_000
    iterations: int = 40
    match_limit: int = 2_000  # per rule and iteration, before the back-off scheduler bans it


@dataclass(frozen=True)
class Proof:
    """The outcome of one attempt: proved or not, why it stopped, and what fired."""

    proved: bool
    stopped: str  # "proved", "saturated", "time", "e-graph size" or "iterations"
    laws: dict[str, int]  # law name -> matches, for the laws that fired
    nodes: int
    seconds: float
    unproven_results: tuple[int, ...] = ()


def _all_laws(names: tuple[str, ...] | None) -> Ruleset:
    chosen = [algebra.RULESETS[name] for name in (names or tuple(algebra.RULESETS))]
    combined = chosen[0]
    for ruleset in chosen[1:]:
        combined = combined | ruleset
    return combined


def prove(original: Program, candidate: Program, budget: Budget = Budget(),
          rulesets: tuple[str, ...] | None = None) -> Proof:
    """Try to prove that ``candidate`` computes the same results as ``original``, within ``budget``.

    The two must have the same arguments (checked by the caller). Only the
    named rulesets run (all of them by default), beside the shape rules.
    """
    began = time.perf_counter()
    egraph = EGraph()
    egraph.register(*original.shape_facts())
    goals, memo = [], {}
    for index, (left, right) in enumerate(zip(original.results, candidate.results, strict=True)):
        pair = (egraph.let(f"{side}{index}", to_egglog(term, memo)) for side, term in (("original", left),
                                                                                   ("candidate", right)))
        goals.append(eq(next(pair)).to(next(pair)))
    schedule = algebra.SHAPES.saturate() + run(_all_laws(rulesets), scheduler=back_off(match_limit=budget.match_limit))
    laws: dict[str, int] = {}
    stopped = "iterations"
    for _ in range(budget.iterations):
        if egraph.check_bool(*goals):
            stopped = "proved"
            break
        report = egraph.run(schedule)
        for decl, count in report.num_matches_per_rule.items():
            name = getattr(decl, "name", None)
            if count and name and not name.startswith("shape-"):
                laws[name] = laws.get(name, 0) + count
        if not report.updated:
            stopped = "proved" if egraph.check_bool(*goals) else "saturated"
            break
        if _size(egraph) > budget.max_nodes:
            stopped = "e-graph size"
            break
        if time.perf_counter() - began > budget.seconds:
            stopped = "time"
            break
    else:
        stopped = "proved" if egraph.check_bool(*goals) else "iterations"
    unproven = () if stopped == "proved" else tuple(i for i, g in enumerate(goals) if not egraph.check_bool(g))
    return Proof(stopped == "proved", stopped, dict(sorted(laws.items())), _size(egraph),
                 time.perf_counter() - began, unproven)


def _size(egraph: EGraph) -> int:
    return sum(size for _, size in egraph.all_function_sizes())
