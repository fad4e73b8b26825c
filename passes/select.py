"""prism-select: pick one schedule per family by the roofline cost model.

Before::

    "prism.family"(...) {domain = "...", symbols = ["TM", "TN", "TK", "RM", "RN"], cost = "", ...}

After::

    "prism.family"(...) {domain = "...", cost = "max(rounds * 2*TM*TN*K / ...)",
                         choice = {RM = 4 : i64, RN = 16 : i64, TK = 256 : i64, ...}, ...}

The points of the pruned domain (shape parameters fixed to the family's
extents; a dynamic extent counts as ``assume`` elements) are costed with
branch and bound (see prism.search); the cheapest wins, ties going to the
lexicographically smallest point so the choice is deterministic. With ``measure=K`` (host only) the K best-predicted
points are compiled and timed on this machine and the fastest wins: the
choice then depends on the measurement. Each timed call finds its inputs
where the cost model assumes them: where it prices them streaming from
memory, the caches are swept before the call (``MeasuredTarget.sweep_bytes``).

The family's report entry records the pick (``choice``, ``predicted_seconds``
and, when measured, ``measured_seconds``). With ``measure=K`` it also lists
every timed point under ``candidates``, in predicted order (cheapest first,
ties lexicographic, as costed), each as ``{"choice": {...},
"predicted_seconds": p, "measured_seconds": m}``: the first is the model's
own pick, the fastest measured one is the ``choice``. ``benchmarks/cost_check.py``
reads them to compare the model with the machine.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from mlir import ir

from prism.infra.diagnostics import display_location
from prism.infra.errors import EmptySearchSpace, TargetError
from prism.infra.passbase import Pass, PassContext, option
from prism.runtime.measure import measure_seconds
from prism.search.family import (
    body_func,
    families,
    family_domain,
    family_name,
    family_space,
    int_dict,
    make_int_dict,
    payload_problem,
)
from prism.search.search import FunnelStep, Selection, candidates_at, select
from prism.search.space import Space
from prism.targets import LoweringTarget, MeasuredTarget, get_target, target_option


@dataclass(frozen=True)
class SelectPass(Pass):
    """Choose the cheapest schedule of each family's domain."""

    NAME = "prism-select"
    SUMMARY = "Pick each family's cheapest schedule under the roofline cost model"

    target: str = target_option()
    assume: int = option(1024, "the size assumed for every dynamic extent", minimum=1, maximum=2**40)
    measure: int = option(0, "time the K best-predicted schedules on this machine and keep the fastest (host only)",
                          minimum=0, maximum=64)

    def run(self, module: ir.Module, ctx: PassContext) -> None:
        target = get_target(self.target or ctx.target)
        if self.measure and not (isinstance(target, LoweringTarget) and target.runs_here):
            raise TargetError(f"measure={self.measure} runs candidates on this machine; "
                              f"it needs target=host, not '{target.name}'")
        for family in families(module):
            contraction = payload_problem(body_func(family))
            space = family_space(target, contraction, family)
            began = time.perf_counter()
            try:
                candidates = candidates_at(space, contraction, family_domain(family, space), self.assume)
                selection = select(space, contraction, candidates, target, self.assume, keep=max(self.measure, 1))
            except EmptySearchSpace as error:
                raise EmptySearchSpace(f"family '{family_name(family)}': {error.message}",
                                       location=display_location(family.location)) from None
            searched = time.perf_counter() - began
            began = time.perf_counter()
            sweep = target.sweep_bytes(contraction, self.assume) \
                if self.measure and isinstance(target, MeasuredTarget) else 0
            measured = self._measure(family, space, selection, target, sweep, ctx)
            best = min(measured, key=measured.get) if measured else selection.best
            family.attributes["choice"] = make_int_dict(space.value_of(best))
            family.attributes["cost"] = ir.StringAttr.get(target.cost_text(contraction))
            funnel = [*_pruning_stages(family, space, ctx),
                      FunnelStep("bound", len(selection.points), searched),
                      FunnelStep("instantiated", max(len(measured), 1))]
            if measured:
                funnel.append(FunnelStep("measured", len(measured), time.perf_counter() - began))
            predicted = {point: seconds for seconds, point in selection.ranked}
            entry = _report_entry(family, space, funnel, best, predicted, measured)
            ctx.report["families"].append(entry)
            ctx.progress(f"{entry['name']}: {entry['choice']} "
                         f"({entry['predicted_seconds']:.3e} s predicted)")

    def _measure(self, family: ir.Operation, space: Space, selection: Selection, target: LoweringTarget,
                 sweep_bytes: int, ctx: PassContext) -> dict[tuple[int, ...], float]:
        """Seconds measured for the ``measure`` best-predicted points (none when measure=0), each call after a
        sweep over ``sweep_bytes`` (the target's: its inputs where the cost model assumes them)."""
        measured = {}
        for rank, (_, point) in enumerate(selection.ranked[:self.measure]):
            ctx.progress(f"{family_name(family)}: measuring {rank + 1}/{self.measure}")
            measured[point] = measure_seconds(body_func(family), space.value_of(point), target.lowering(), self.assume,
                                              sweep_bytes=sweep_bytes)
        return measured


def _report_entry(family: ir.Operation, space: Space, funnel: list[FunnelStep], best: tuple[int, ...],
                  predicted: dict[tuple[int, ...], float], measured: dict[tuple[int, ...], float]) -> dict:
    """The family's entry in the ``--emit=report`` JSON."""
    return {
        "name": family_name(family),
        "kind": ir.StringAttr(family.attributes["kind"]).value,
        "symbols": space.symbols,
        "funnel": [{"stage": s.name, "size": s.size, "seconds": s.seconds} for s in funnel],
        "choice": space.value_of(best),
        "predicted_seconds": predicted[best],
        **({"measured_seconds": measured[best]} if measured else {}),
        **({"candidates": _candidates(space, predicted, measured)} if measured else {}),
    }


def _candidates(space: Space, predicted: dict[tuple[int, ...], float],
                measured: dict[tuple[int, ...], float]) -> list[dict]:
    """Every measured point with its predicted and measured seconds, cheapest predicted first, ties in
    lexicographic order of the points (as :func:`prism.search.search.select` ranks them)."""
    return [{"choice": space.value_of(point), "predicted_seconds": predicted[point],
             "measured_seconds": measured[point]}
            for point in sorted(measured, key=lambda point: (predicted[point], point))]


def _pruning_stages(family: ir.Operation, space: Space, ctx: PassContext) -> list[FunnelStep]:
    """The pruning funnel: timed if prism-prune ran in this pipeline, else read from ``stats``."""
    timed = ctx.artifacts.get("funnels", {}).get(family_name(family))
    if timed is not None:
        return timed
    stats = int_dict(family.attributes["stats"])
    return [FunnelStep(name, stats[name]) for name in ("space", *(g for g, _ in space.groups)) if name in stats]
