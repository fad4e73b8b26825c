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

from prism.errors import EmptySearchSpace
from prism.family import body_func, families, family_domain, family_name, payload_contraction
from prism.ir import display_location
from prism.passbase import Pass, PassContext
from prism.space import family_space, fix_shape, shape_exponents
from prism.targets import get_target


@dataclass(frozen=True)
class PrunePass(Pass):
    """Intersect each family's domain with the target's constraints."""

    NAME = "prism-prune"
    SUMMARY = "Cut each family's parameter domain to what the target can run (islpy)"

    target: str = ""

    def run(self, module: ir.Module, ctx: PassContext) -> None:
        target = get_target(self.target or ctx.target)
        for family in families(module):
            _, contraction = payload_contraction(body_func(family))
            space = family_space(contraction, target)
            exponents = shape_exponents(contraction)
            domain = family_domain(family, space).intersect(space.universe_set())
            stats = {"space": fix_shape(space, domain, exponents).count_val().to_python()}
            for group, _ in space.groups:
                domain = domain.intersect(space.group_set(group)).coalesce()
                stats[group] = fix_shape(space, domain, exponents).count_val().to_python()
                if stats[group] == 0:
                    raise EmptySearchSpace(
                        f"{self.NAME}: constraint '{group}' on target '{target.name}' removed every "
                        f"schedule of family '{family_name(family)}'; funnel: {stats}",
                        location=display_location(family.location))
            ctx.progress(f"{self.NAME}: {family_name(family)}: {stats}")
            i64 = ir.IntegerType.get_signless(64)
            with family.context:
                family.attributes["domain"] = ir.StringAttr.get(str(domain))
                family.attributes["stats"] = ir.DictAttr.get(
                    {k: ir.IntegerAttr.get(i64, v) for k, v in stats.items()})
