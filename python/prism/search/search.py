"""The search over one family: prune a space once, then select per shape.

Pruning intersects a family's domain with the constraint groups of its space,
timing each, and keeps the result *parametric* in the shape parameters: it
happens once per family, whatever the problem size. Selection takes the
points at one shape, bounds them all, and costs only those whose lower bound
can beat the best point found so far (branch and bound, vectorized over the
candidates). A :class:`ShapeTable` enumerates a dynamic family's points once
for every size, so that instantiating a new size runs no isl operation.
"""

from __future__ import annotations

import re
import threading
import time
from collections import defaultdict
from collections.abc import Callable
from dataclasses import dataclass

import islpy as isl
import numpy as np

from prism.infra.errors import EmptySearchSpace
from prism.search.model import SearchModel
from prism.search.space import (
    DIVISOR_PARAMS,
    SHAPE_PARAMS,
    Contraction,
    Space,
    count_points,
    fix_shape,
    parse_set,
    point_array,
    shape_exponents,
)

Point = tuple[int, ...]


@dataclass(frozen=True)
class FunnelStep:
    """One step of the funnel: how many points survive it and how long it took."""

    name: str
    size: int
    seconds: float | None = None


def prune(space: Space, contraction: Contraction, start: isl.Set,
          on_empty: Callable[[str, list[FunnelStep], str], None] | None) -> tuple[isl.Set, list[FunnelStep]]:
    """Intersect ``start`` with each constraint group; sizes are counted at the family's shape.

    ``on_empty(group, funnel, why)`` is called (and must raise) when a group
    leaves no point for the family's shape; ``why`` names the extents that
    the group's emptying constraints meet (see :func:`why_empty`). Without
    it, an empty domain is returned.

    The groups keep the shape symbolic, so the domains after each group depend
    only on the space and ``start``: they are computed once per process and
    shared by every family of that space, as are their sizes at a shape
    (isl's intersections and counts are most of a GPU family's compile time).
    A step's seconds are the time it took in this call. The key is the start's
    text: a start parsed afresh (as from a family's attribute) finds its pruning.
    """
    exponents = tuple(sorted(shape_exponents(contraction).items()))
    with _PRUNINGS_LOCK:
        key = (space.wrap(space.universe), space.groups, str(start))
        if key not in _PRUNINGS:
            _PRUNINGS[key] = _Pruning(space, start)
        pruning = _PRUNINGS[key]
        funnel = [FunnelStep("space", pruning.size(0, exponents), 0.0)]
        for index, (group, _) in enumerate(space.groups, start=1):
            began = time.perf_counter()
            size = pruning.size(index, exponents)
            funnel.append(FunnelStep(group, size, time.perf_counter() - began))
            if size == 0 and on_empty is not None:
                on_empty(group, funnel, why_empty(space, contraction, pruning.domain(index - 1), group))
        return pruning.domain(len(space.groups)), funnel


class _Pruning:
    """A start set cut by a space's groups in order: the domain after each number of groups, and its point count
    at each shape asked for.

    The domains are kept as text, each made from the last as a fresh set, and every caller gets a set of its own
    read from it (:func:`~prism.search.space.parse_set`: a copy of one parse per process): isl rewrites a set's
    constraints in place as it is used, so a set shared with earlier callers could print otherwise, and a pruned
    domain is written into the program.
    """

    def __init__(self, space: Space, start: isl.Set):
        self.space = space
        domain = isl.Set(str(start)).intersect(space.universe_set())
        self.texts = [str(domain)]
        for group, _ in space.groups:
            domain = domain.intersect(space.group_set(group)).coalesce()
            self.texts.append(str(domain))
        self.sizes: dict[tuple[int, tuple[tuple[str, int], ...]], int] = {}

    def domain(self, groups: int) -> isl.Set:
        """The start within the universe and the first ``groups`` constraint groups."""
        return parse_set(self.texts[groups])

    def size(self, groups: int, exponents: tuple[tuple[str, int], ...]) -> int:
        """The number of points of :meth:`domain` at the shape whose parameters are ``exponents``."""
        key = (groups, exponents)
        if key not in self.sizes:
            self.sizes[key] = _count(self.space, self.domain(groups), dict(exponents))
        return self.sizes[key]


# Prunings by the space's text and the start's, and the lock that makes each once.
_PRUNINGS: dict[tuple[str, tuple[tuple[str, str], ...], str], _Pruning] = {}
_PRUNINGS_LOCK = threading.RLock()


def _conjuncts(constraint: str) -> list[str]:
    """The parts of ``constraint`` joined by a top-level ``and``."""
    parts, depth, start = [], 0, 0
    for index, char in enumerate(constraint):
        depth += {"(": 1, ")": -1}.get(char, 0)
        if depth == 0 and constraint.startswith(" and ", index):
            parts.append(constraint[start:index].strip())
            start = index + len(" and ")
    return [*parts, constraint[start:].strip()]


def why_empty(space: Space, contraction: Contraction, before: isl.Set, group: str) -> str:
    """Which constraints of ``group`` alone leave nothing of ``before`` at the family's shape, in words: for a
    divisibility constraint, the extent that no tile the other constraints allow divides."""
    exponents = shape_exponents(contraction)
    at_shape = fix_shape(space, before, exponents)
    points = point_array(at_shape)
    reasons = []
    for conjunct in _conjuncts(dict(space.groups)[group]):
        if fix_shape(space, before.intersect(isl.Set(space.wrap(conjunct))), exponents).is_empty():
            reasons.append(_describe(space, contraction, conjunct, points))
    return "; ".join(reasons)


def _describe(space: Space, contraction: Contraction, conjunct: str, points: np.ndarray) -> str:
    """``conjunct`` with the extents it reads; for a tile that must divide an extent, the tiles left to try."""
    words = set(re.findall(r"\w+", conjunct))
    extents = [f"{role.upper()} = {_extent_text(contraction, role)}" for role, param in SHAPE_PARAMS.items()
               if param in words or DIVISOR_PARAMS.get(role) in words]
    for role, param in DIVISOR_PARAMS.items():
        tiles = [var for var in space.knobs if var in words]
        if param in words and len(tiles) == 1 and len(points):
            symbol = space.knobs[tiles[0]]
            allowed = sorted({int(v) for v in space.values_of(points)[symbol]})
            listed = ", ".join(map(str, allowed[:6])) + (", ..." if len(allowed) > 6 else "")
            return (f"no {symbol} that the other constraints allow ({listed}) divides "
                    f"{role.upper()} = {_extent_text(contraction, role)}")
    return f"'{conjunct}' at {', '.join(extents)}" if extents else f"'{conjunct}'"


def _extent_text(op: Contraction, role: str) -> str:
    extent = op.extent(role) if role in op.roles else 1
    return "dynamic" if extent is None else str(extent)


def _count(space: Space, domain: isl.Set, exponents: dict[str, int]) -> int:
    return count_points(fix_shape(space, domain, exponents))


@dataclass(frozen=True)
class Selection:
    """The outcome of selecting among one shape's candidate points.

    ``points`` (exponent form, one per row) and ``predicted`` hold every
    costed point, cheapest first, ties in lexicographic order; ``candidates``
    is the number of points at this shape, of which ``len(points)`` survived
    the bound.
    """

    points: np.ndarray
    predicted: np.ndarray
    candidates: int

    @property
    def best(self) -> Point:
        """The cheapest costed point."""
        return tuple(int(x) for x in self.points[0])

    @property
    def ranked(self) -> list[tuple[float, Point]]:
        """Every costed point with its predicted seconds, cheapest first."""
        return [(float(t), tuple(p)) for t, p in zip(self.predicted.tolist(), self.points.tolist(), strict=True)]


# Points costed before the bound is applied: they set the incumbent that the
# bound is compared with.
PROBE = 32


def select(space: Space, contraction: Contraction, candidates: np.ndarray, target: SearchModel, assume: int,
           keep: int = 1) -> Selection:
    """The cheapest of ``candidates`` (exponent form, lexicographically sorted rows), by branch and bound.

    Every candidate gets a lower bound (vectorized); the PROBE points of
    lowest bound are costed, and the ``keep``-th best of them is the
    incumbent. Only the points whose bound does not exceed the incumbent are
    costed next: no other point can enter the ``keep`` best. Dynamic extents
    count as ``assume``.
    """
    if not len(candidates):
        raise EmptySearchSpace("no candidate schedule to select from")
    values = space.values_of(candidates)
    bounds = target.lower_bound(contraction, values, assume)
    order = np.lexsort((np.arange(len(candidates)), bounds))
    probe = order[:max(PROBE, keep)]
    incumbent = np.sort(_costs(space, contraction, candidates[probe], target, assume))[min(keep, len(probe)) - 1]
    survives = bounds <= incumbent
    survives[probe] = True
    costed = np.flatnonzero(survives)
    predicted = _costs(space, contraction, candidates[costed], target, assume)
    ranking = np.lexsort((costed, predicted))
    return Selection(candidates[costed[ranking]], predicted[ranking], len(candidates))


def _costs(space: Space, contraction: Contraction, points: np.ndarray, target: SearchModel, assume: int) -> np.ndarray:
    return np.asarray(target.seconds(contraction, space.values_of(points), assume), dtype=np.float64)


def candidates_at(space: Space, contraction: Contraction, domain: isl.Set, assume: int) -> np.ndarray:
    """The points of ``domain`` at the family's shape, dynamic extents counting as ``assume``.

    Raises EmptySearchSpace, naming the shape parameters, when there are none.
    """
    exponents = shape_exponents(contraction, assume)
    found = point_array(fix_shape(space, domain, exponents))
    if not len(found):
        shape = ", ".join(f"{k}={v}" for k, v in exponents.items())
        raise EmptySearchSpace(f"no schedule of the pruned domain fits the shape ({shape}); the shape "
                               "parameters are log2 of each extent (L*) and of its largest power-of-two divisor (D*)")
    return found


@dataclass(frozen=True)
class ShapeTable:
    """A pruned domain's candidates for every size of its dynamic extents, enumerated once.

    A family with a dynamic extent is pruned once, for all its sizes. The
    table then enumerates the pruned domain once more, with the shape
    parameters of the dynamic extents turned into set dimensions, and files
    the points by those parameters' values (``LM``, ``DM`` for a dynamic M;
    only the parameters the domain involves). Instantiating a size is then a
    dictionary lookup and one vectorized :func:`select`: no isl operation
    runs. Parameters of static extents are fixed at build time.
    """

    space: Space
    contraction: Contraction
    target: SearchModel
    keys: tuple[str, ...]
    rows: dict[tuple[int, ...], np.ndarray]

    @staticmethod
    def build(space: Space, contraction: Contraction, domain: isl.Set, target: SearchModel,
              max_extent: int = 8192) -> ShapeTable:
        """The table of ``domain`` (pruned for ``target``) for dynamic extents from 1 to ``max_extent``."""
        dynamic = {p for role, p in [*SHAPE_PARAMS.items(), *DIVISOR_PARAMS.items()]
                   if role in contraction.roles and contraction.extent(role) is None}
        static = {p: v for p, v in shape_exponents(contraction).items() if p not in dynamic}
        fixed = fix_shape(space, domain, static)
        keys = _constraining_params(space, fixed, dynamic)
        # A parameter the domain does not depend on may take any value.
        fixed = fix_shape(space, fixed, {p: 0 for p in dynamic if p not in keys})
        for position, key in enumerate(keys):
            index = fixed.find_dim_by_name(isl.dim_type.param, key)
            fixed = fixed.move_dims(isl.dim_type.set, position, isl.dim_type.param, index, 1)
        limit = max(0, (max_extent - 1).bit_length())
        bounds = [f"0 <= {key} <= {limit}" for key in keys]
        bounds += [f"{DIVISOR_PARAMS[role]} <= {SHAPE_PARAMS[role]}" for role in DIVISOR_PARAMS
                   if {DIVISOR_PARAMS[role], SHAPE_PARAMS[role]} <= set(keys)]
        names = ", ".join([*keys, *space.variables])
        params = ", ".join(fixed.get_var_names(isl.dim_type.param))
        ranges = isl.Set(f"[{params}] -> {{ [{names}] : {' and '.join(bounds) or 'true'} }}")
        found = point_array(fixed.intersect(ranges))
        rows: dict[tuple[int, ...], list[np.ndarray]] = defaultdict(list)
        for row in found:
            rows[tuple(int(x) for x in row[:len(keys)])].append(row[len(keys):])
        return ShapeTable(space, contraction, target, keys, {key: np.array(group) for key, group in rows.items()})

    def candidates(self, extent: int) -> np.ndarray:
        """The candidate points when every dynamic extent is ``extent`` (empty if none fits)."""
        return self.rows.get(tuple(self._key(extent).values()), np.empty((0, len(self.space.variables)), np.int64))

    def _key(self, extent: int) -> dict[str, int]:
        exponents = shape_exponents(self.contraction, extent)
        return {key: exponents[key] for key in self.keys}

    def instantiate(self, extent: int) -> dict[str, int]:
        """The chosen symbol values when every dynamic extent is ``extent``.

        Raises EmptySearchSpace when no schedule of the domain fits that size.
        """
        candidates = self.candidates(extent)
        if not len(candidates):
            raise EmptySearchSpace(f"no schedule of the pruned domain fits a dynamic extent of {extent} "
                                   f"(shape parameters {self._key(extent)})")
        selection = select(self.space, self.contraction, candidates, self.target, extent)
        return self.space.value_of(selection.best)


def _constraining_params(space: Space, domain: isl.Set, names: set[str]) -> tuple[str, ...]:
    """The parameters among ``names`` that constrain ``domain`` beyond the universe's bounds on them."""
    relevant = domain.gist_params(space.universe_set().params())
    return tuple(p for p in domain.get_var_names(isl.dim_type.param) if p in names and relevant.involves_dims(
        isl.dim_type.param, relevant.find_dim_by_name(isl.dim_type.param, p), 1))
