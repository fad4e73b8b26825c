"""The search over one family: prune a space once, then select per shape.

Pruning intersects a family's domain with the constraint groups of its space,
timing each, and keeps the result *parametric* in the shape parameters: it
happens once per family, whatever the problem size. Selection fixes the shape
parameters, costs the remaining points and keeps the best, with branch and
bound: points are grouped by the knobs a lower bound depends on, groups are
visited cheapest bound first, and a group whose bound cannot beat the best
``keep`` points found so far is skipped whole.
"""

from __future__ import annotations

import time
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass

import islpy as isl

from prism.cost import BOUND_KNOBS, lower_bound_seconds, predicted_seconds
from prism.errors import EmptySearchSpace
from prism.space import Contraction, Space, fix_shape, points, shape_exponents
from prism.targets import Target

Point = tuple[int, ...]


@dataclass(frozen=True)
class Stage:
    """One step of the funnel: how many points survive it and how long it took."""

    name: str
    size: int
    seconds: float | None = None


def prune(space: Space, contraction: Contraction, start: isl.Set,
          on_empty: Callable[[str, list[Stage]], None]) -> tuple[isl.Set, list[Stage]]:
    """Intersect ``start`` with each constraint group; sizes are counted at the family's shape.

    ``on_empty(group, funnel)`` is called (and must raise) when a group
    leaves no point for the family's shape.
    """
    exponents = shape_exponents(contraction)
    domain = start.intersect(space.universe_set())
    funnel = [Stage("space", _count(space, domain, exponents), 0.0)]
    for group, _ in space.groups:
        began = time.perf_counter()
        domain = domain.intersect(space.group_set(group)).coalesce()
        size = _count(space, domain, exponents)
        funnel.append(Stage(group, size, time.perf_counter() - began))
        if size == 0:
            on_empty(group, funnel)
    return domain, funnel


def _count(space: Space, domain: isl.Set, exponents: dict[str, int]) -> int:
    return fix_shape(space, domain, exponents).count_val().to_python()


@dataclass(frozen=True)
class Selection:
    """The outcome of selecting in a pruned domain for one shape.

    ``ranked`` holds every costed point, cheapest first; ``candidates`` is the
    number of points of the domain at this shape, of which ``len(ranked)``
    survived the bound.
    """

    ranked: list[tuple[float, Point]]
    candidates: int
    seconds: float

    @property
    def best(self) -> Point:
        """The cheapest costed point."""
        return self.ranked[0][1]


def select(space: Space, contraction: Contraction, domain: isl.Set, target: Target, assume: int,
           keep: int = 1) -> Selection:
    """Cost the points of ``domain`` at the family's shape with branch and bound.

    Dynamic extents count as ``assume``. At least the ``keep`` cheapest points
    are guaranteed to be among those costed (for measuring the top few).
    """
    began = time.perf_counter()
    exponents = shape_exponents(contraction, assume)
    candidates = points(fix_shape(space, domain, exponents))
    if not candidates:
        shape = ", ".join(f"{k}={v}" for k, v in exponents.items())
        raise EmptySearchSpace(f"no schedule of the pruned domain fits the shape ({shape}); the shape "
                               "parameters are log2 of each extent (L*) and of its largest power-of-two divisor (D*)")
    groups = _bounded_groups(space, contraction, candidates, target, assume)
    costed: list[tuple[float, Point]] = []
    for bound, group in groups:
        if len(costed) >= keep and bound >= sorted(costed)[keep - 1][0]:
            break  # groups come in bound order: no later group can do better either
        costed += [(predicted_seconds(contraction, space.value_of(p), target, assume), p) for p in group]
    return Selection(sorted(costed), len(candidates), time.perf_counter() - began)


def _bounded_groups(space: Space, contraction: Contraction, candidates: list[Point], target: Target,
                    assume: int) -> list[tuple[float, list[Point]]]:
    """Candidates grouped by the knobs the lower bound reads, cheapest bound first."""
    knobs = BOUND_KNOBS["gpu" if target.is_gpu else "host"]
    groups: dict[tuple[int, ...], list[Point]] = defaultdict(list)
    for point in candidates:
        values = space.value_of(point)
        groups[tuple(values[k] for k in knobs)].append(point)
    bounded = [(lower_bound_seconds(contraction, dict(zip(knobs, key, strict=True)), target, assume), group)
               for key, group in groups.items()]
    return sorted(bounded, key=lambda item: (item[0], item[1][0]))
