"""prism-prune: restrict each family's domain to the schedules the target can run.

Before::

    "prism.family"(...) {domain = "[LB, LM, LN, LK] -> { [bm, bn, bk, wm, wn, mma] : 4 <= bm <= 8 ... }",
                         stats = {space = 2016 : i64}, ...}

After::

    "prism.family"(...) {domain = "[LB, LM, LN, LK] -> { [bm, ...] : ... bm - wm + bn - wn <= 5 ... }",
                         stats = {space = 2016, threads = 1100, registers = 1050,
                                  shared_memory = 960, tensor_core = 960, shape = 320}, ...}

Pruning starts from the family's current domain (as prism-lift wrote it, or
as narrowed by hand or by an earlier pass), so a domain can only shrink.
Constraint groups (threads, registers, shared memory, tensor-core shapes,
cache capacities, problem shape) are intersected one by one, so ``stats``
records the funnel. A group that empties the space is an error that names it.
"""

from __future__ import annotations

from dataclasses import dataclass

from mlir import ir

from prism.infra.diagnostics import display_location
from prism.infra.errors import EmptySearchSpace
from prism.infra.passbase import Pass, PassContext
from prism.search.family import (
    body_func,
    families,
    family_domain,
    family_name,
    family_space,
    make_int_dict,
    payload_problem,
)
from prism.search.search import FunnelStep, prune
from prism.targets import get_target, target_option


@dataclass(frozen=True)
class PrunePass(Pass):
    """Intersect each family's domain with the target's constraints."""

    NAME = "prism-prune"
    SUMMARY = "Cut each family's parameter domain to what the target can run (islpy)"

    target: str = target_option()

    def run(self, module: ir.Module, ctx: PassContext) -> None:
        target = get_target(self.target or ctx.target)
        for family in families(module):
            contraction = payload_problem(body_func(family))
            space = family_space(target, contraction, family)
            name = family_name(family)

            def empty(group: str, funnel: list[FunnelStep], why: str, name: str = name,
                      family: ir.Operation = family) -> None:
                sizes = {stage.name: stage.size for stage in funnel}
                raise EmptySearchSpace(
                    f"constraint '{group}' on target '{target.name}' removed every schedule of "
                    f"family '{name}'{': ' + why if why else ''}; funnel: {sizes}",
                    location=display_location(family.location))

            domain, funnel = prune(space, contraction, family_domain(family, space), empty)
            ctx.progress(f"{name}: " + ", ".join(f"{s.name} {s.size}" for s in funnel))
            ctx.artifacts.setdefault("funnels", {})[name] = funnel
            family.attributes["domain"] = ir.StringAttr.get(str(domain))
            family.attributes["stats"] = make_int_dict({stage.name: stage.size for stage in funnel})
