"""prism-select: pick one schedule per family by the roofline cost model.

Before::

    "prism.family"(...) {domain = "...", symbols = ["TM", "TN", "TK", "RM", "RN"], cost = "", ...}

After::

    "prism.family"(...) {domain = "...", cost = "max(rounds * 2*TM*TN*K / ...)",
                         choice = {RM = 4 : i64, RN = 16 : i64, TK = 256 : i64, ...}, ...}

Every point of the pruned domain (shape parameters fixed to the family's
extents; a dynamic extent counts as ``assume`` elements) is costed; the
cheapest wins, ties going to the lexicographically smallest point so the
result is deterministic. With ``measure=K`` (host only) the K best-predicted
points are compiled and timed on this machine and the fastest wins: the
choice then depends on the measurement. The pick is recorded in the report.
"""

from __future__ import annotations

from dataclasses import dataclass

from mlir import ir

from prism.cost import cost_text, predicted_seconds
from prism.errors import TargetError
from prism.family import (
    body_func,
    families,
    family_domain,
    family_name,
    int_dict,
    make_int_dict,
    payload_contraction,
)
from prism.measure import measure_seconds
from prism.passbase import Pass, PassContext
from prism.space import Space, family_space, fix_shape, points, shape_exponents
from prism.targets import Target, get_target


@dataclass(frozen=True)
class SelectPass(Pass):
    """Choose the cheapest schedule of each family's domain."""

    NAME = "prism-select"
    SUMMARY = "Pick each family's cheapest schedule under the roofline cost model"

    target: str = ""
    assume: int = 1024
    measure: int = 0

    def run(self, module: ir.Module, ctx: PassContext) -> None:
        target = get_target(self.target or ctx.target)
        if self.measure and target.is_gpu:
            raise TargetError(f"{self.NAME}: measure={self.measure} runs candidates on this machine; "
                              f"it needs target=host, not '{target.name}'")
        for family in families(module):
            _, contraction = payload_contraction(body_func(family))
            space = family_space(contraction, target)
            domain = family_domain(family, space)
            candidates = points(fix_shape(space, domain, shape_exponents(contraction, self.assume)))
            scored = sorted((predicted_seconds(contraction, space.value_of(p), target, self.assume), p)
                            for p in candidates)
            best = scored[0][1]
            measured = self._measure(family, space, scored, target, ctx)
            if measured:
                best = min(measured, key=measured.get)
            predicted = {point: seconds for seconds, point in scored}
            choice = space.value_of(best)
            with family.context:
                family.attributes["choice"] = make_int_dict(choice)
                family.attributes["cost"] = ir.StringAttr.get(cost_text(target))
            stats = int_dict(family.attributes["stats"])
            stages = ["space", *(group for group, _ in space.groups)]
            funnel = {stage: stats[stage] for stage in stages if stage in stats}
            funnel["costed"] = len(scored)
            if measured:
                funnel["measured"] = len(measured)
            ctx.report.setdefault("families", []).append({
                "name": family_name(family),
                "kind": ir.StringAttr(family.attributes["kind"]).value,
                "symbols": space.symbols,
                "funnel": [{"stage": stage, "size": size} for stage, size in funnel.items()],
                "choice": choice,
                "predicted_seconds": predicted[best],
                **({"measured_seconds": measured[best]} if measured else {}),
            })
            ctx.progress(f"{self.NAME}: {family_name(family)}: {choice} ({predicted[best]:.3e} s predicted)")

    def _measure(self, family: ir.Operation, space: Space, scored: list[tuple[float, tuple[int, ...]]],
                 target: Target, ctx: PassContext) -> dict[tuple[int, ...], float]:
        """Seconds measured for the ``measure`` best-predicted points (none when measure=0)."""
        measured = {}
        for rank, (_, point) in enumerate(scored[:self.measure]):
            ctx.progress(f"{self.NAME}: {family_name(family)}: measuring {rank + 1}/{self.measure}")
            measured[point] = measure_seconds(body_func(family), space.value_of(point), target.cores, self.assume)
        return measured
