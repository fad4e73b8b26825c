"""Search spaces of program families, as isl sets.

A family's space is a set of integer points, one per schedule. Each target
builds its spaces (``Target.space``) as pure functions of a
:class:`Contraction` (the op's semantics) and its hardware, from the pieces here.

Representation (one method, used everywhere):
- Every tile knob is a power of two and the set ranges over its log2
  exponent, written in lower case (``bm`` for the value ``BM = 2**bm``). A
  product of tiles is then a sum of exponents, so capacity constraints on a
  single footprint stay linear, hence exact and Presburger.
- A capacity bound on a *sum* of two footprints (``2**a + 2**b <= C``) is
  encoded exactly by :func:`pow2_sum_le` as a small union over ``a - b``.
- A space may also offer tiles of three times a power of two (a 6-row
  register block): a 0/1 *factor* variable multiplies the knobs it names by
  3, and the constraints that read those knobs are written for each of its
  two values (``pow2_sum_le`` takes a scale per term).
- Problem sizes enter as parameters ``LM, LN, LK, LB``: the ceiling of the
  log2 of each role's extent, and ``DM, DN, DK``: the exponent of the largest
  power of two dividing it. One domain then serves every shape, and
  instantiating a shape only fixes parameters.

Constraints come in named groups so that pruning can report the space after
each group and name the group that emptied it.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Iterable
from dataclasses import dataclass, field

import islpy as isl
import numpy as np

ROLES = ("batch", "m", "n", "k")
SHAPE_PARAMS = {"batch": "LB", "m": "LM", "n": "LN", "k": "LK"}
# The 2-adic valuation of each extent (log2 of the largest power of two that
# divides it): a power-of-two tile divides the extent iff its exponent is at
# most this.
DIVISOR_PARAMS = {"m": "DM", "n": "DN", "k": "DK"}


@dataclass(frozen=True)
class Contraction:
    """What the search needs to know about one contraction op.

    ``roles`` gives each loop dimension's role; ``operand_dims`` lists, per
    input operand, the loop dimensions its indexing map reads; ``extents``
    holds each loop's size (None when dynamic); ``elem_bytes`` the input
    element size per operand and ``acc_bytes`` the accumulator's;
    ``reads_init`` whether computing C reads its init (False for a fill of
    zero, which a kernel starts its accumulators at instead).
    """

    roles: tuple[str, ...]
    operand_dims: tuple[tuple[int, ...], ...]
    extents: tuple[int | None, ...]
    elem_bytes: tuple[int, ...]
    acc_bytes: int
    input_type: str  # "f32", "f16", "bf16" or "f64": picks the compute rate
    reads_init: bool = True

    def extent(self, role: str) -> int | None:
        """The product of the extents with ``role``; None if any is dynamic."""
        sizes = [e for r, e in zip(self.roles, self.extents, strict=True) if r == role]
        return None if None in sizes else math.prod(s for s in sizes if s is not None)

    def footprint_exponent(self, operand: int, tile_exponents: dict[str, str]) -> str:
        """The log2 of an input operand's tile footprint in bytes, as an isl expression.

        Derived from the indexing map: the tile of each role the operand
        reads, times the element size. A role's tile covers all of its loops
        together (``extent``: their product), so a role read through several
        loops (M as batch x heads x rows) counts once. Batch loops use tile 1.
        """
        terms = [tile_exponents[role] for role in self._roles_of(self.operand_dims[operand]) if role != "batch"]
        terms.append(str(int(math.log2(self.elem_bytes[operand]))))
        return " + ".join(terms)

    def output_footprint_exponent(self, tile_exponents: dict[str, str]) -> str:
        """The log2 of the accumulator tile's footprint in bytes: a contraction's output spans its M and N roles,
        each once however many loops it has."""
        terms = [tile_exponents[role] for role in self._roles_of(range(len(self.roles))) if role in ("m", "n")]
        return " + ".join([*terms, str(int(math.log2(self.acc_bytes)))])

    def _roles_of(self, dims: Iterable[int]) -> list[str]:
        """The distinct roles of loop dimensions ``dims``, in the order they first appear."""
        return list(dict.fromkeys(self.roles[d] for d in dims))


@dataclass(frozen=True)
class Space:
    """A family's space before pruning, and its constraint groups in order.

    ``knobs`` maps each exponent variable to the symbol it encodes (``bm`` →
    ``BM``); ``flags`` are 0/1 variables kept as values (``mma``);
    ``factors`` maps a 0/1 variable to the factor it applies, when 1, to the
    knobs it names (``{"m3": (3, ("tm", "rm"))}``: ``TM = 3**m3 * 2**tm``).
    A factor is not a symbol of its own: it shows only in the knobs' values.
    """

    kind: str
    knobs: dict[str, str]
    flags: dict[str, str]
    universe: str
    groups: tuple[tuple[str, str], ...]
    factors: dict[str, tuple[int, tuple[str, ...]]] = field(default_factory=dict)

    @property
    def variables(self) -> list[str]:
        """The set's dimensions, in order."""
        return [*self.knobs, *self.flags, *self.factors]

    @property
    def symbols(self) -> list[str]:
        """The user-facing parameter names, in set-dimension order."""
        return [*self.knobs.values(), *self.flags.values()]

    def wrap(self, constraint: str) -> str:
        """An isl set text over this space's dimensions and shape parameters."""
        params = ", ".join([*SHAPE_PARAMS.values(), *DIVISOR_PARAMS.values()])
        return f"[{params}] -> {{ [{', '.join(self.variables)}] : {constraint} }}"

    def universe_set(self) -> isl.Set:
        """The unconstrained box of knob values."""
        return parse_set(self.wrap(self.universe))

    def group_set(self, name: str) -> isl.Set:
        """The set of points satisfying constraint group ``name``."""
        return parse_set(self.wrap(dict(self.groups)[name]))

    def values_of(self, points: np.ndarray) -> dict[str, np.ndarray]:
        """Symbol values, one array per symbol, of points given in exponent form (one per row)."""
        values = {}
        for column, var in enumerate(self.variables):
            if var in self.knobs:
                values[self.knobs[var]] = np.left_shift(1, points[:, column])
            elif var in self.flags:
                values[self.flags[var]] = points[:, column]
        for column, var in enumerate(self.variables):
            if var in self.factors:
                factor, scaled = self.factors[var]
                for knob in scaled:
                    values[self.knobs[knob]] = values[self.knobs[knob]] * np.where(points[:, column] > 0, factor, 1)
        return values

    def value_of(self, point: tuple[int, ...]) -> dict[str, int]:
        """Symbol values of one point given in exponent form."""
        columns = self.values_of(np.asarray([point], dtype=np.int64))
        return {symbol: int(column[0]) for symbol, column in columns.items()}

    def point_of(self, values: dict[str, int]) -> tuple[int, ...]:
        """The point (exponent form) whose symbol values are ``values``: the inverse of :meth:`value_of`.

        Raises ValueError for values no point has (a knob neither a power of two nor, where a factor
        applies, that factor times one).
        """
        found: dict[str, int] = {}
        for var, (factor, scaled) in self.factors.items():
            multiples = {values[self.knobs[knob]] % factor == 0 for knob in scaled}
            if len(multiples) != 1:
                raise ValueError(f"{', '.join(self.knobs[k] for k in scaled)} take the factor {factor} together")
            found[var] = int(multiples.pop())
        for var, symbol in self.knobs.items():
            value = values[symbol]
            for factor_var, (factor, scaled) in self.factors.items():
                if var in scaled and found[factor_var]:
                    value //= factor
            if value < 1 or value & (value - 1):
                raise ValueError(f"{symbol} = {values[symbol]} is not a tile of this space")
            found[var] = value.bit_length() - 1
        for var, symbol in self.flags.items():
            found[var] = int(values[symbol])
        return tuple(found[var] for var in self.variables)


def pow2_sum_le(a: str, b: str, bound: float, scale_a: int = 1, scale_b: int = 1) -> str:
    """Exact isl constraint for ``scale_a * 2**a + scale_b * 2**b <= bound`` over integers a, b.

    With d = a - b >= 0 the condition is
    ``a <= log2(bound / (scale_a + scale_b * 2**-d))``, whose floor changes
    for a handful of small d and is constant after; each run of equal floors
    is one piece, and the case b > a mirrors it.
    """
    if bound < scale_a + scale_b:
        return "false"

    def cap(big_scale: int, small_scale: int, d: int) -> int:
        return math.floor(math.log2(bound / (big_scale + small_scale * 2.0**-d)) + 1e-12)

    pieces = []
    horizon = 64  # 2**-64 no longer moves a floor of a double-precision log
    for big, small, big_scale, small_scale, start in ((a, b, scale_a, scale_b, 0), (b, a, scale_b, scale_a, 1)):
        d = start
        while d <= horizon:
            end = d
            while end < horizon and cap(big_scale, small_scale, end + 1) == cap(big_scale, small_scale, d):
                end += 1
            upper = "" if end == horizon else f" and ({big}) - ({small}) <= {end}"
            pieces.append(f"(({big}) - ({small}) >= {d}{upper} and {big} <= {cap(big_scale, small_scale, d)})")
            d = end + 1
    return "(" + " or ".join(pieces) + ")"


def shape_fit(var: str, role: str, floor: int, scale_log2: str = "0") -> str:
    """A tile exponent ``var`` no larger than its role's padded extent, but never forced below ``floor``.

    ``scale_log2`` is an upper bound on the log2 of a factor the tile carries
    besides ``2**var`` (``2 * m3`` for a factor of 3 when ``m3 = 1``: an
    exact bound, since the extent's exponent is an integer).
    """
    return f"({var} <= {floor} or {var} + {scale_log2} <= {SHAPE_PARAMS[role]})"


def shape_param_bounds() -> str:
    """The range of every shape parameter, as an isl constraint (part of each space's universe)."""
    return " and ".join(f"0 <= {p} <= 40" for p in [*SHAPE_PARAMS.values(), *DIVISOR_PARAMS.values()])


def _two_adic(value: int) -> int:
    return (value & -value).bit_length() - 1


def shape_exponents(op: Contraction, assumed: int = 1024) -> dict[str, int]:
    """Values of the shape parameters at the family's shape; a dynamic extent counts as ``assumed``."""
    values = {}
    for role, param in SHAPE_PARAMS.items():
        extent = op.extent(role) if role in op.roles else 1
        extent = assumed if extent is None else extent
        values[param] = math.ceil(math.log2(max(1, extent)))
        if role in DIVISOR_PARAMS:
            values[DIVISOR_PARAMS[role]] = _two_adic(extent)
    return values


# Sets parsed from text, by their text, and the lock under which each is parsed and copied (isl counts
# references without atomics).
_PARSED: dict[str, isl.Set] = {}
_PARSED_LOCK = threading.Lock()


def parse_set(text: str) -> isl.Set:
    """``isl.Set(text)``, parsed once per process (isl reads a pruned domain's text at about 3 us a character).

    Each caller gets a copy of its own, down to its basic sets, which prints as the parse does: isl may rewrite
    a set's constraints in place as it is used, and a domain's text is written into the program, so no caller
    may see another's set. Raises isl.Error for a text that is not a set (nothing is kept)."""
    with _PARSED_LOCK:
        parsed = _PARSED.get(text)
        if parsed is None:
            parsed = _PARSED[text] = isl.Set(text)
        return _detached(parsed)


def _detached(domain: isl.Set) -> isl.Set:
    """A copy of ``domain`` that shares nothing with it: renaming its tuple makes isl copy the set and each of
    its basic sets (a shared one is copied before it is changed); the name is then put back."""
    named = domain.get_tuple_name() if domain.has_tuple_name() else None
    renamed = domain.copy().set_tuple_name("prism_detached" if named != "prism_detached" else "prism_copy")
    return renamed.set_tuple_name(named) if named is not None else renamed.reset_tuple_id()


def fix_shape(space: Space, domain: isl.Set, exponents: dict[str, int]) -> isl.Set:
    """``domain`` with its shape parameters fixed to ``exponents``."""
    for param, value in exponents.items():
        index = domain.find_dim_by_name(isl.dim_type.param, param)
        if index >= 0:
            domain = domain.fix_val(isl.dim_type.param, index, value)
    return domain


def point_array(domain: isl.Set) -> np.ndarray:
    """All points of a parameter-free (or parameter-fixed) set, one per row, in lexicographic order."""
    domain = _without_fixed_params(domain)
    n = domain.dim(isl.dim_type.set)
    pieces = _Piece.of(domain)
    try:
        found = None if pieces is None else [piece.points() for piece in pieces]
    except _TooLarge:
        found = None
    if found is None:
        return _isl_point_array(domain)
    if len(found) == 1:
        return found[0]
    return _sorted_rows(np.concatenate(found)) if found else np.zeros((0, n), dtype=np.int64)


def count_points(domain: isl.Set) -> int:
    """The number of points of a parameter-free (or parameter-fixed) set."""
    domain = _without_fixed_params(domain)
    pieces = _Piece.of(domain)
    if pieces is not None:
        try:
            return sum(piece.count() for piece in pieces)
        except _TooLarge:
            pass
    return domain.count_val().to_python()


# A scan holds at most this many coordinates at a time (8 bytes each); a larger set is left to isl's own scan,
# which holds one point at a time.
_SCAN_LIMIT = 1 << 25


class _TooLarge(Exception):
    """A set with more points than a scan holds."""


@dataclass(frozen=True)
class _Piece:
    """One basic set of a parameter-free set, as numpy scans it: each dimension's bounds, and its equalities and
    inequalities as rows of integer coefficients (one per dimension, then the constant; ``row . (x, 1)`` is
    zero, or at least zero)."""

    bounds: tuple[tuple[int, int], ...]
    equalities: np.ndarray
    inequalities: np.ndarray

    @staticmethod
    def of(domain: isl.Set) -> list[_Piece] | None:
        """The basic sets of ``domain`` made disjoint (isl's ``make_disjoint``), or None where numpy cannot scan
        them: a parameter left free, an existential variable, or a dimension unbounded."""
        if domain.dim(isl.dim_type.param) or domain.dim(isl.dim_type.div):
            return None
        n = domain.dim(isl.dim_type.set)
        pieces = []
        for basic in domain.make_disjoint().get_basic_sets():
            if basic.dim(isl.dim_type.div):
                return None
            if basic.is_empty():
                continue
            whole = isl.Set.from_basic_set(basic)
            bounds = []
            for i in range(n):
                low, high = whole.dim_min_val(i), whole.dim_max_val(i)
                if not (low.is_int() and high.is_int()):
                    return None
                bounds.append((low.get_num_si(), high.get_num_si()))
            rows = [_matrix_rows(matrix(isl.dim_type.set, isl.dim_type.div, isl.dim_type.param, isl.dim_type.cst))
                    for matrix in (basic.equalities_matrix, basic.inequalities_matrix)]
            pieces.append(_Piece(tuple(bounds), *rows))
        return pieces

    def count(self) -> int:
        """How many points: the product of the counts of its independent groups of dimensions (those that no
        constraint reads together), each scanned alone."""
        return math.prod(self._restricted(dims)._scan(count=True) for dims in self._independent_dimensions())

    def points(self) -> np.ndarray:
        """Its points, one per row, in lexicographic order."""
        return self._scan(count=False)

    def _independent_dimensions(self) -> list[list[int]]:
        """The dimensions in groups that no constraint joins, each group in order."""
        n = len(self.bounds)
        group = list(range(n))

        def root(i: int) -> int:
            while group[i] != i:
                i = group[i]
            return i

        for row in (*self.equalities, *self.inequalities):
            read = np.flatnonzero(row[:n])
            for j in read[1:]:
                group[root(int(j))] = root(int(read[0]))
        joined: dict[int, list[int]] = {}
        for i in range(n):
            joined.setdefault(root(i), []).append(i)
        return list(joined.values())

    def _restricted(self, dims: list[int]) -> _Piece:
        """The piece over ``dims`` alone, with the constraints that read only them."""
        n, columns = len(self.bounds), [*dims, len(self.bounds)]
        others = [i for i in range(n) if i not in dims]

        def rows(matrix: np.ndarray) -> np.ndarray:
            return matrix[~matrix[:, others].any(axis=1)][:, columns]

        return _Piece(tuple(self.bounds[i] for i in dims), rows(self.equalities), rows(self.inequalities))

    def _scan(self, count: bool) -> np.ndarray | int:
        """The points (or, with ``count``, how many there are), dimension by dimension.

        Each point of the prefix gets the range that the constraints whose last dimension is the next one
        allow it there (bounding it from below or above, or fixing it), so no point outside the piece is ever
        made, and the last dimension is only counted where ``count`` asks. Raises _TooLarge where a prefix
        would hold more than ``_SCAN_LIMIT`` coordinates."""
        n = len(self.bounds)
        last = {kind: _last_dimension(rows, n) for kind, rows in (("eq", self.equalities), ("ge", self.inequalities))}
        prefix = np.zeros((1, 0), dtype=np.int64)
        for i, (low, high) in enumerate(self.bounds):
            lower = np.full(len(prefix), low, dtype=np.int64)
            upper = np.full(len(prefix), high, dtype=np.int64)
            for kind, rows in (("eq", self.equalities), ("ge", self.inequalities)):
                for row in rows[last[kind] == i]:
                    # row[i] * x + rest == 0 (or >= 0), rest from the prefix's coordinates and the constant.
                    a, rest = int(row[i]), prefix @ row[:i] + row[n]
                    if a == 0:  # a constraint on no dimension (kept with the first): true or false throughout
                        upper = np.where((rest == 0) if kind == "eq" else (rest >= 0), upper, lower - 1)
                    elif kind == "eq":
                        value = -rest // a
                        lower = np.where(rest % a == 0, np.maximum(lower, value), upper + 1)
                        upper = np.minimum(upper, value)
                    elif a > 0:
                        lower = np.maximum(lower, -(rest // a))
                    else:
                        upper = np.minimum(upper, rest // -a)
            lengths = np.maximum(upper - lower + 1, 0)
            if count and i == n - 1:
                return int(lengths.sum())
            total = int(lengths.sum())
            if total * (i + 1) > _SCAN_LIMIT:
                raise _TooLarge
            # Prefix row p's values run from lower[p] for lengths[p] positions, the rows one after another.
            values = np.repeat(lower - np.cumsum(lengths) + lengths, lengths) + np.arange(total, dtype=np.int64)
            grown = np.empty((total, i + 1), dtype=np.int64)
            grown[:, :i] = np.repeat(prefix, lengths, axis=0)
            grown[:, i] = values
            prefix = grown
        return len(prefix) if count else prefix


def _matrix_rows(matrix: isl.Mat) -> np.ndarray:
    """The rows of an isl constraint matrix, as int64."""
    rows, cols = matrix.rows(), matrix.cols()
    values = [[matrix.get_element_val(r, c).get_num_si() for c in range(cols)] for r in range(rows)]
    return np.array(values, dtype=np.int64).reshape(rows, cols)


def _last_dimension(rows: np.ndarray, n: int) -> np.ndarray:
    """The last of the ``n`` dimensions each row reads (0 for a row that reads none)."""
    reads = rows[:, :n] != 0
    return np.where(reads.any(axis=1), n - 1 - np.argmax(reads[:, ::-1], axis=1), 0) if n else np.zeros(len(rows), int)


def _sorted_rows(array: np.ndarray) -> np.ndarray:
    """The rows of ``array`` in lexicographic order."""
    return array[np.lexsort(array.T[::-1])] if len(array) and array.shape[1] else array


def _isl_point_array(domain: isl.Set) -> np.ndarray:
    """``point_array`` through isl's own scan, one point at a time."""
    found: list[list[int]] = []
    n, dims = domain.dim(isl.dim_type.set), isl.dim_type.set

    def take(point: isl.Point) -> None:
        # get_num_si: one call per coordinate (Val.to_python prints the value and parses it); an int64 array
        # holds no larger value anyway.
        found.append([point.get_coordinate_val(dims, i).get_num_si() for i in range(n)])

    domain.foreach_point(take)
    return _sorted_rows(np.array(found, dtype=np.int64).reshape(len(found), n))


def _without_fixed_params(domain: isl.Set) -> isl.Set:
    """``domain`` less its parameters where each is fixed (its points are the same): isl scans a set without
    parameters about twice as fast."""
    params = domain.dim(isl.dim_type.param)
    if params and not any(domain.plain_get_val_if_fixed(isl.dim_type.param, i).is_nan() for i in range(params)):
        return domain.project_out(isl.dim_type.param, 0, params)
    return domain


def points(domain: isl.Set) -> list[tuple[int, ...]]:
    """All points of a parameter-free (or parameter-fixed) set, sorted."""
    return [tuple(row) for row in point_array(domain).tolist()]
