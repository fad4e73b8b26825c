"""Search spaces of program families, as isl sets.

A family's space is a set of integer points, one per schedule. Builders are
pure functions of a :class:`Contraction` (the op's semantics) and a target.

Representation (one method, used everywhere):
- Every tile knob is a power of two and the set ranges over its log2
  exponent, written in lower case (``bm`` for the value ``BM = 2**bm``). A
  product of tiles is then a sum of exponents, so capacity constraints on a
  single footprint stay linear, hence exact and Presburger.
- A capacity bound on a *sum* of two footprints (``2**a + 2**b <= C``) is
  encoded exactly by :func:`pow2_sum_le` as a small union over ``a - b``.
- Problem sizes enter as parameters ``LM, LN, LK, LB``: the ceiling of the
  log2 of each role's extent, and ``DM, DN, DK``: the exponent of the largest
  power of two dividing it. One domain then serves every shape, and
  instantiating a shape only fixes parameters.

Constraints come in named groups so that pruning can report the space after
each group and name the group that emptied it.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import islpy as isl
import numpy as np

from prism.targets import GpuTarget, HostTarget

ROLES = ("batch", "m", "n", "k")
SHAPE_PARAMS = {"batch": "LB", "m": "LM", "n": "LN", "k": "LK"}
# The 2-adic valuation of each extent (log2 of the largest power of two that
# divides it): a power-of-two tile divides the extent iff its exponent is at
# most this.
DIVISOR_PARAMS = {"m": "DM", "n": "DN", "k": "DK"}
# The GPU lowering allocates shared memory statically, which CUDA caps at 48 KiB.
GPU_STATIC_SMEM_BYTES = 48 * 1024


@dataclass(frozen=True)
class Contraction:
    """What the search needs to know about one contraction op.

    ``roles`` gives each loop dimension's role; ``operand_dims`` lists, per
    input operand, the loop dimensions its indexing map reads; ``extents``
    holds each loop's size (None when dynamic); ``elem_bytes`` the input
    element size per operand and ``acc_bytes`` the accumulator's.
    """

    roles: tuple[str, ...]
    operand_dims: tuple[tuple[int, ...], ...]
    extents: tuple[int | None, ...]
    elem_bytes: tuple[int, ...]
    acc_bytes: int
    input_type: str  # "f32", "f16", "bf16" or "f64": picks the compute rate

    def extent(self, role: str) -> int | None:
        """The product of the extents with ``role``; None if any is dynamic."""
        sizes = [e for r, e in zip(self.roles, self.extents, strict=True) if r == role]
        return None if None in sizes else math.prod(s for s in sizes if s is not None)

    def footprint_exponent(self, operand: int, tile_exponents: dict[str, str]) -> str:
        """The log2 of an input operand's tile footprint in bytes, as an isl expression.

        Derived from the indexing map: the tile of each loop dimension the
        operand reads, times the element size. Batch loops use tile 1.
        """
        terms = [tile_exponents[self.roles[d]] for d in self.operand_dims[operand]
                 if self.roles[d] != "batch"]
        terms.append(str(int(math.log2(self.elem_bytes[operand]))))
        return " + ".join(terms)

    def output_footprint_exponent(self, tile_exponents: dict[str, str]) -> str:
        """The log2 of the accumulator tile's footprint in bytes: a contraction's output spans its M and N loops."""
        terms = [tile_exponents[role] for role in self.roles if role in ("m", "n")]
        return " + ".join([*terms, str(int(math.log2(self.acc_bytes)))])


@dataclass(frozen=True)
class Space:
    """A family's space before pruning, and its constraint groups in order.

    ``knobs`` maps each exponent variable to the symbol it encodes (``bm`` →
    ``BM``); ``flags`` are 0/1 variables kept as values (``mma``).
    """

    kind: str
    knobs: dict[str, str]
    flags: dict[str, str]
    universe: str
    groups: tuple[tuple[str, str], ...]

    @property
    def variables(self) -> list[str]:
        """The set's dimensions, in order."""
        return [*self.knobs, *self.flags]

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
        return isl.Set(self.wrap(self.universe))

    def group_set(self, name: str) -> isl.Set:
        """The set of points satisfying constraint group ``name``."""
        return isl.Set(self.wrap(dict(self.groups)[name]))

    def values_of(self, points: np.ndarray) -> dict[str, np.ndarray]:
        """Symbol values, one array per symbol, of points given in exponent form (one per row)."""
        values = {}
        for column, var in enumerate(self.variables):
            if var in self.knobs:
                values[self.knobs[var]] = np.left_shift(1, points[:, column])
            else:
                values[self.flags[var]] = points[:, column]
        return values

    def value_of(self, point: tuple[int, ...]) -> dict[str, int]:
        """Symbol values of one point given in exponent form."""
        columns = self.values_of(np.asarray([point], dtype=np.int64))
        return {symbol: int(column[0]) for symbol, column in columns.items()}


def pow2_sum_le(a: str, b: str, bound: float) -> str:
    """Exact isl constraint for ``2**a + 2**b <= bound`` over integers a, b.

    With d = a - b >= 0 the condition is ``a <= log2(bound / (1 + 2**-d))``,
    whose floor changes for a handful of small d and is constant after; each
    run of equal floors is one piece, and the case b > a mirrors it.
    """
    if bound < 2:
        return "false"

    def cap(d: int) -> int:
        return math.floor(math.log2(bound / (1 + 2.0**-d)) + 1e-12)

    pieces = []
    horizon = 64  # 2**-64 no longer moves a floor of a double-precision log
    for big, small in ((a, b), (b, a)):
        start = 0 if big == a else 1
        d = start
        while d <= horizon:
            end = d
            while end < horizon and cap(end + 1) == cap(d):
                end += 1
            upper = "" if end == horizon else f" and ({big}) - ({small}) <= {end}"
            pieces.append(f"(({big}) - ({small}) >= {d}{upper} and {big} <= {cap(d)})")
            d = end + 1
    return "(" + " or ".join(pieces) + ")"


def _shape_fit(var: str, role: str, floor: int) -> str:
    """A tile no larger than its padded extent, but never forced below ``floor``."""
    return f"({var} <= {floor} or {var} <= {SHAPE_PARAMS[role]})"


def _shape_param_bounds() -> str:
    return " and ".join(f"0 <= {p} <= 40" for p in [*SHAPE_PARAMS.values(), *DIVISOR_PARAMS.values()])


def gpu_gemm_space(op: Contraction, target: GpuTarget, stages: int = 1) -> Space:
    """Block tile (BM, BN, BK), warp tile (WM, WN) and tensor-core use (MMA) for a GPU."""
    tiles = {"m": "bm", "n": "bn", "k": "bk"}
    # The lowering reaches mma.sync for f16 only: upstream's vector-to-mma
    # conversion does not take bf16 operands.
    mma_ok = op.input_type == "f16"
    universe = (f"{_shape_param_bounds()} and 4 <= bm <= 8 and 4 <= bn <= 8 and 3 <= bk <= 6"
                f" and 3 <= wm <= bm and 3 <= wn <= bn and 0 <= mma <= {1 if mma_ok else 0}")
    a_bytes = op.footprint_exponent(0, tiles)
    b_bytes = op.footprint_exponent(1, tiles)
    max_threads_log2 = int(math.log2(target.max_threads_per_block))
    # f32 accumulators per thread: a warp's WM x WN tile over 32 lanes; keep
    # half the register file for addresses, fragments and pipelining.
    acc_regs_log2 = int(math.log2(target.regs_per_thread // 2))
    mm, mn, mk = target.mma_shape
    groups = (
        ("threads", f"(bm - wm) + (bn - wn) + 5 <= {max_threads_log2} and (bm - wm) + (bn - wn) >= 1"),
        ("registers", f"wm + wn - 5 <= {acc_regs_log2}"),
        ("shared_memory", pow2_sum_le(a_bytes, b_bytes, min(target.smem_per_block, GPU_STATIC_SMEM_BYTES) / stages)),
        ("tensor_core", f"mma = 0 or (wm >= {int(math.log2(mm))} and wn >= {int(math.log2(mn))}"
                        f" and bk >= {int(math.log2(mk))})"),
        ("shape", " and ".join([_shape_fit("bm", "m", 4), _shape_fit("bn", "n", 4), _shape_fit("bk", "k", 3)])),
        # The GPU kernels have no remainder handling: tiles divide the problem.
        ("divisibility", "bm <= DM and bn <= DN and bk <= DK"),
    )
    return Space(kind="gemm", knobs={"bm": "BM", "bn": "BN", "bk": "BK", "wm": "WM", "wn": "WN"},
                 flags={"mma": "MMA"}, universe=universe, groups=groups)


def cpu_gemm_space(op: Contraction, target: HostTarget) -> Space:
    """Cache tiles (TM, TN, TK) and register block (RM, RN) for the host CPU."""
    lanes_log2 = int(math.log2(target.vector_bits // (8 * op.acc_bytes)))
    # RM >= 2: the lowering folds unit dimensions of the micro-kernel, and a
    # single-row block would degenerate into a matrix-vector product.
    universe = (f"{_shape_param_bounds()} and 1 <= rm <= 4 and {lanes_log2} <= rn <= {lanes_log2 + 2}"
                f" and rm <= tm <= 9 and rn <= tn <= 10 and 4 <= tk <= 10")
    footprint = op.footprint_exponent
    reg_tiles = {"m": "rm", "n": "rn", "k": "tk"}
    cache_tiles = {"m": "tm", "n": "tn", "k": "tk"}
    # Accumulators (RM x RN/lanes vectors) plus one row of B and one broadcast
    # register must fit the vector register file.
    acc = f"rm + rn - {lanes_log2}"
    b_row = f"rn - {lanes_log2}"
    groups = (
        ("registers", pow2_sum_le(acc, b_row, target.vector_registers - 1)),
        # The loop order decides what each level must hold (see
        # prism-lower-cpu): a B panel (TK x RN) is reused by every RM-high
        # row panel of the block, so it must stay in L1 beside the A panel
        # streaming through; the A slice (TM x TK) is reused by every
        # column panel and the C block (TM x TN) by every K slice, so both
        # must stay in L2, of which half is left to the B stream.
        ("l1", pow2_sum_le(footprint(0, reg_tiles), footprint(1, reg_tiles), target.l1d_bytes)),
        ("l2", pow2_sum_le(footprint(0, cache_tiles), op.output_footprint_exponent(cache_tiles),
                           target.l2_bytes / 2)),
        ("shape", " and ".join([_shape_fit("tm", "m", 1), _shape_fit("tn", "n", lanes_log2),
                                _shape_fit("tk", "k", 4)])),
    )
    return Space(kind="gemm", knobs={"tm": "TM", "tn": "TN", "tk": "TK", "rm": "RM", "rn": "RN"},
                 flags={}, universe=universe, groups=groups)


def family_space(op: Contraction, target: GpuTarget | HostTarget) -> Space:
    """The space of ``op`` on ``target``."""
    if isinstance(target, GpuTarget):
        return gpu_gemm_space(op, target)
    return cpu_gemm_space(op, target)


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


def fix_shape(space: Space, domain: isl.Set, exponents: dict[str, int]) -> isl.Set:
    """``domain`` with its shape parameters fixed to ``exponents``."""
    for param, value in exponents.items():
        index = domain.find_dim_by_name(isl.dim_type.param, param)
        if index >= 0:
            domain = domain.fix_val(isl.dim_type.param, index, value)
    return domain


def point_array(domain: isl.Set) -> np.ndarray:
    """All points of a parameter-free (or parameter-fixed) set, one per row, in lexicographic order."""
    found: list[list[int]] = []
    n = domain.dim(isl.dim_type.set)

    def take(point: isl.Point) -> None:
        found.append([point.get_coordinate_val(isl.dim_type.set, i).to_python() for i in range(n)])

    domain.foreach_point(take)
    array = np.array(found, dtype=np.int64).reshape(len(found), n)
    return array[np.lexsort(array.T[::-1])] if len(array) else array


def points(domain: isl.Set) -> list[tuple[int, ...]]:
    """All points of a parameter-free (or parameter-fixed) set, sorted."""
    return [tuple(row) for row in point_array(domain).tolist()]
