"""The laws of the tensor algebra (:mod:`prism.algebra.ops`), as named egglog rules in rulesets.

Laws whose validity depends on sizes (slicing a concat) read the shapes
``rank(t)`` and ``dim(t, axis)`` as conditions; the ``SHAPES`` ruleset derives
them for every term from the arguments' shapes.

Every law is a named egglog rule, so that a proof can report the laws that
fired (egglog gives Python no proof certificates; the run report is the
evidence). The rulesets are grouped by the rewrite families of the design:
``LINEAR`` (distributivity, associativity, transposes), ``FUSION`` (GEMMs
sharing an operand through concat/slice, and slices moved inside elementwise
ops, broadcasts and reductions), ``SCALING`` (row and column scalings across
a matmul, reductions of broadcasts and of scalings), ``SOFTMAX``
(max-subtraction invariance, division after the matmul), ``ELEMENTWISE``
(commutativity and associativity of the pointwise ops, pointwise ops through
broadcasts, exact constant folding), ``NORMAL`` (the laws that make common
spellings of attention, RMSNorm and SwiGLU meet), ``CASTS`` (exact laws of
element type casts) and, for exploration only, ``SHARING``.

Element types are the function ``dtype(t)``, derived beside the shapes by
the ``SHAPES`` ruleset. A law that reassociates, distributes or moves a
scale changes how a floating-point result is rounded: it applies only to
terms computed in ``ARITHMETIC_TYPES`` (f32, f64), whose rounding the
numeric check bounds. Laws that only move data (slices, concats,
transposes, casts, products sharing an operand) or are exact in floating
point (pointwise ops through broadcasts, exact constant folding, a maximum
of a positive scaling) hold at every type, and no law moves arithmetic
across a cast.
"""

from __future__ import annotations

from egglog import Ruleset, f64, i64, relation, rule, ruleset, set_, union, vars_
from egglog import eq as _eq
from egglog import ne as _ne

from prism.algebra.ops import (
    BINARY,
    ELEMENT_CODES,
    UNARY,
    WIDENING,
    Tensor,
    add,
    broadcast,
    cast,
    concat,
    dim,
    div,
    dtype,
    exp,
    matmul,
    maximum,
    mul,
    neg,
    rank,
    reduce_max,
    reduce_sum,
    rsqrt,
    slice_,
    sqrt,
    sub,
    transpose,
    widens,
)

a, b, c, t, s, g, x = vars_("a b c t s g x", Tensor)
ax, n, m, r, i, off, size = vars_("ax n m r i off size", i64)
(k,) = vars_("k", f64)
e0, e1, e2 = vars_("e0 e1 e2", i64)  # element types, by their ELEMENT_CODES

# The element types in which arithmetic may be reassociated (see the module docstring).
ARITHMETIC_TYPES = ("f32", "f64")
reassociable = relation("reassociable", i64)
# The condition of a law that changes rounding: the matched term ``t`` computes in ARITHMETIC_TYPES. Every
# operator but a cast computes in its operands' type, so the whole matched pattern does.
IN_ARITHMETIC_TYPE = (_eq(e0).to(dtype(t)), reassociable(e0))


Law = tuple[str, object]  # a law's name and its egglog rule


def law(name: str, lhs: Tensor, rhs: Tensor, *conditions: object) -> list[Law]:
    """A named one-way rewrite ``lhs -> rhs`` under ``conditions`` (facts over shapes)."""
    return [(name, rule(_eq(t).to(lhs), *conditions, name=name).then(union(t).with_(rhs)))]


def laws(name: str, lhs: Tensor, rhs: Tensor, *conditions: object) -> list[Law]:
    """A named equation, as a rewrite each way (``name`` and ``name~``)."""
    return [*law(name, lhs, rhs, *conditions), *law(name + "~", rhs, lhs, *conditions)]


def shaped(*terms: Tensor) -> list[object]:
    """The conditions that each of ``terms`` has a known rank: a tensor, not a constant (which has no shape).

    A law that moves a broadcast, a slice or a reduction onto an operand
    requires it, so that no law writes a broadcast, slice or reduction of a
    constant: a term without a shape, which neither the shape rules nor the
    emission of MLIR can size.
    """
    return [_eq(rank(term)).to(rank(term)) for term in terms]


# The names of each ruleset's laws, in declaration order, and each law's rule by name.
LAW_NAMES: dict[str, list[str]] = {}
LAW_RULES: dict[str, object] = {}


def _ruleset(name: str, *entries: Law) -> Ruleset:
    LAW_NAMES[name] = [law_name for law_name, _ in entries]
    LAW_RULES.update(entries)
    return ruleset(*(rule_ for _, rule_ in entries), name=name)


def _shape_rules() -> list[object]:
    rules: list[object] = []

    def same_shape(result: Tensor, source: Tensor, name: str) -> None:
        rules.append(rule(_eq(t).to(result), _eq(r).to(rank(source)), name=f"{name}-rank").then(set_(rank(t)).to(r)))
        rules.append(rule(_eq(t).to(result), _eq(n).to(dim(source, i)), name=f"{name}-dim")
                     .then(set_(dim(t, i)).to(n)))

    for name, unary in UNARY.items():
        same_shape(unary(a), a, f"shape-{name}")
    for name, binary in BINARY.items():  # both operands have the result's shape, but for a constant, which has none
        same_shape(binary(a, b), a, f"shape-{name}")
        same_shape(binary(a, b), b, f"shape-{name}-second")
    same_shape(cast(a, e1), a, "shape-cast")
    rules += [
        # [..., m, k] x [..., k, n] -> [..., m, n]: batch axes and rows from A, columns from B.
        rule(_eq(t).to(matmul(a, b)), _eq(r).to(rank(a)), name="shape-matmul-rank").then(set_(rank(t)).to(r)),
        rule(_eq(t).to(matmul(a, b)), _eq(r).to(rank(a)), _eq(n).to(dim(a, i)), i < r - 1, name="shape-matmul-rows")
        .then(set_(dim(t, i)).to(n)),
        rule(_eq(t).to(matmul(a, b)), _eq(r).to(rank(b)), _eq(n).to(dim(b, r - 1)), name="shape-matmul-cols")
        .then(set_(dim(t, r - 1)).to(n)),
        rule(_eq(t).to(transpose(a)), _eq(r).to(rank(a)), name="shape-transpose-rank").then(set_(rank(t)).to(r)),
        rule(_eq(t).to(transpose(a)), _eq(r).to(rank(a)), _eq(n).to(dim(a, i)), i < r - 2,
             name="shape-transpose-batch").then(set_(dim(t, i)).to(n)),
        rule(_eq(t).to(transpose(a)), _eq(r).to(rank(a)), _eq(n).to(dim(a, r - 1)), _eq(m).to(dim(a, r - 2)),
             name="shape-transpose-swap").then(set_(dim(t, r - 2)).to(n), set_(dim(t, r - 1)).to(m)),
    ]
    for name, reduce in (("sum", reduce_sum), ("max", reduce_max)):
        rules += [
            rule(_eq(t).to(reduce(a, ax)), _eq(r).to(rank(a)), name=f"shape-reduce-{name}")
            .then(set_(rank(t)).to(r - 1)),
            rule(_eq(t).to(reduce(a, ax)), _eq(n).to(dim(a, i)), i < ax, name=f"shape-reduce-{name}-before")
            .then(set_(dim(t, i)).to(n)),
            rule(_eq(t).to(reduce(a, ax)), _eq(n).to(dim(a, i)), i > ax, name=f"shape-reduce-{name}-after")
            .then(set_(dim(t, i - 1)).to(n)),
        ]
    rules += [
        rule(_eq(t).to(broadcast(a, ax, size)), _eq(r).to(rank(a)), name="shape-broadcast")
        .then(set_(rank(t)).to(r + 1), set_(dim(t, ax)).to(size)),
        rule(_eq(t).to(broadcast(a, ax, size)), _eq(n).to(dim(a, i)), i < ax, name="shape-broadcast-before")
        .then(set_(dim(t, i)).to(n)),
        rule(_eq(t).to(broadcast(a, ax, size)), _eq(n).to(dim(a, i)), i >= ax, name="shape-broadcast-after")
        .then(set_(dim(t, i + 1)).to(n)),
        rule(_eq(t).to(concat(a, b, ax)), _eq(r).to(rank(a)), _eq(n).to(dim(a, ax)), _eq(m).to(dim(b, ax)),
             name="shape-concat").then(set_(rank(t)).to(r), set_(dim(t, ax)).to(n + m)),
        rule(_eq(t).to(concat(a, b, ax)), _eq(n).to(dim(a, i)), i != ax, name="shape-concat-other")
        .then(set_(dim(t, i)).to(n)),
        rule(_eq(t).to(slice_(a, ax, off, size)), _eq(r).to(rank(a)), name="shape-slice")
        .then(set_(rank(t)).to(r), set_(dim(t, ax)).to(size)),
        rule(_eq(t).to(slice_(a, ax, off, size)), _eq(n).to(dim(a, i)), i != ax, name="shape-slice-other")
        .then(set_(dim(t, i)).to(n)),
    ]
    return rules


def _dtype_rules() -> list[object]:
    """``dtype(t)``: every operator computes in its tensor operands' type, a cast in its own."""
    facts = [*(widens(ELEMENT_CODES[narrow], ELEMENT_CODES[wide]) for narrow, wide in WIDENING),
             *(reassociable(ELEMENT_CODES[element]) for element in ARITHMETIC_TYPES)]
    rules: list[object] = [rule(name="dtype-facts").then(*facts)]

    def same_type(result: Tensor, source: Tensor, name: str) -> None:
        rules.append(rule(_eq(t).to(result), _eq(e0).to(dtype(source)), name=name).then(set_(dtype(t)).to(e0)))

    for name, unary in UNARY.items():
        same_type(unary(a), a, f"dtype-{name}")
    for name, binary in BINARY.items():  # one operand may be a splat, which has no type of its own
        same_type(binary(a, b), a, f"dtype-{name}")
        same_type(binary(a, b), b, f"dtype-{name}-second")
    same_type(matmul(a, b), a, "dtype-matmul")
    same_type(matmul(a, b), b, "dtype-matmul-second")
    same_type(transpose(a), a, "dtype-transpose")
    same_type(reduce_sum(a, ax), a, "dtype-reduce-sum")
    same_type(reduce_max(a, ax), a, "dtype-reduce-max")
    same_type(broadcast(a, ax, size), a, "dtype-broadcast")
    same_type(slice_(a, ax, off, size), a, "dtype-slice")
    same_type(concat(a, b, ax), a, "dtype-concat")
    same_type(concat(a, b, ax), b, "dtype-concat-second")
    rules.append(rule(_eq(t).to(cast(a, e1)), name="dtype-cast").then(set_(dtype(t)).to(e1)))
    return rules


SHAPES: Ruleset = ruleset(*_shape_rules(), *_dtype_rules(), name="shapes")

LINEAR: Ruleset = _ruleset(
    "linear",
    # Both addends must be tensors: a constant added to one would become a product or a transpose of a constant,
    # which has no shape to size it by (see shaped).
    *laws("matmul-distributes-over-add-right", matmul(a, add(b, c)), add(matmul(a, b), matmul(a, c)),
          *shaped(b, c), *IN_ARITHMETIC_TYPE),
    *laws("matmul-distributes-over-add-left", matmul(add(a, b), c), add(matmul(a, c), matmul(b, c)),
          *shaped(a, b), *IN_ARITHMETIC_TYPE),
    *laws("matmul-associative", matmul(matmul(a, b), c), matmul(a, matmul(b, c)), *IN_ARITHMETIC_TYPE),
    *law("transpose-involution", transpose(transpose(a)), a),
    *laws("transpose-of-matmul", transpose(matmul(a, b)), matmul(transpose(b), transpose(a))),
    *laws("transpose-of-add", transpose(add(a, b)), add(transpose(a), transpose(b)), *shaped(a, b)),
)


def _through_broadcasts() -> list[Law]:
    """Every elementwise op commutes with broadcasting: applied to broadcast operands, it is the broadcast of
    the op applied before, both ways. A constant fits every shape, so it stays an operand on either side.

    The operands broadcast must be tensors (:func:`shaped`), and there is deliberately no law that a broadcast
    constant is the constant: a constant has no shape, so its e-class would gather broadcasts of every size,
    and a law that reads a size off a broadcast (the sum of a broadcast along its own axis) could then equate
    sums over different sizes.
    """
    entries: list[Law] = []
    for name, unary in UNARY.items():
        entries += laws(f"{name}-of-broadcast", unary(broadcast(a, ax, size)), broadcast(unary(a), ax, size),
                        *shaped(a))
    for name, binary in BINARY.items():
        entries += laws(f"{name}-of-broadcasts", binary(broadcast(a, ax, size), broadcast(b, ax, size)),
                        broadcast(binary(a, b), ax, size), *shaped(a, b))
        entries += laws(f"{name}-of-broadcast-and-constant", binary(broadcast(a, ax, size), Tensor.splat(k)),
                        broadcast(binary(a, Tensor.splat(k)), ax, size), *shaped(a))
        entries += laws(f"{name}-of-constant-and-broadcast", binary(Tensor.splat(k), broadcast(a, ax, size)),
                        broadcast(binary(Tensor.splat(k), a), ax, size), *shaped(a))
    return entries


def _broadcasts_commute() -> list[Law]:
    """Two broadcasts commute, each renumbered past the other: a new axis ``r`` inserted after one at ``ax``
    (``r <= ax``) is the same tensor as the one at ``r`` inserted first and the one at ``ax + 1`` after it. The
    two laws are each other's inverse, so every nesting of a tensor's broadcasts meets in one e-class (a
    generic that adds several axes reads back as one nesting, whatever nesting wrote it)."""
    return [
        *law("broadcasts-commute", broadcast(broadcast(a, ax, n), r, m), broadcast(broadcast(a, r, m), ax + 1, n),
             r <= ax, *shaped(a)),
        *law("broadcasts-commute~", broadcast(broadcast(a, r, m), ax, n), broadcast(broadcast(a, ax - 1, n), r, m),
             ax > r, *shaped(a)),
    ]


# Veltkamp's splitter for a 24-bit significand: ``S*v - (S*v - v)`` is v rounded to float32's precision.
_SPLITTER = float(2**29 + 1)
# Folded constants stay well inside float32's normal range, where that rounding is the only one.
_FOLD_RANGE = (2.0**-200, 2.0**200)  # bounds of v*v


def _float32_exact(value: object) -> list[object]:
    """The conditions that the float64 ``value`` is a normal float32 (a nonzero one; zero is folded apart)."""
    split = f64(_SPLITTER) * value
    return [_eq(split - (split - value)).to(value), value * value >= f64(_FOLD_RANGE[0]),
            value * value <= f64(_FOLD_RANGE[1])]


def _folded_constants() -> list[Law]:
    """An arithmetic op of two constants is one constant when the float64 result is a float32 (so exact: a sum,
    difference or product of two float32 values is exact in float64, and a quotient whose float64 rounding is a
    float32 is that float32). A zero result is exact for a sum or difference (only an exact cancellation
    gives zero) and for a product or quotient of zero (not an underflow). Translation folds the same way (see
    prism.algebra.terms)."""
    entries: list[Law] = []
    p, q, v = vars_("p q v", f64)
    for name, binary, compute, zero in (("add", add, lambda: p + q, []), ("sub", sub, lambda: p - q, []),
                                        ("mul", mul, lambda: p * q, [_eq(p).to(f64(0.0))]),
                                        ("div", div, lambda: p / q, [_eq(p).to(f64(0.0))])):
        lhs = binary(Tensor.splat(p), Tensor.splat(q))
        entries += law(f"{name}-of-constants", lhs, Tensor.splat(v), _eq(v).to(compute()), *_float32_exact(v))
        entries += law(f"{name}-of-constants-to-zero", lhs, Tensor.splat(0.0), _eq(compute()).to(f64(0.0)),
                       *zero)
    return entries


ELEMENTWISE: Ruleset = _ruleset(
    "elementwise",
    *law("add-commutative", add(a, b), add(b, a)),
    *laws("add-associative", add(add(a, b), c), add(a, add(b, c)), *IN_ARITHMETIC_TYPE),
    *law("mul-commutative", mul(a, b), mul(b, a)),
    *laws("mul-associative", mul(mul(a, b), c), mul(a, mul(b, c)), *IN_ARITHMETIC_TYPE),
    *laws("sub-is-add-of-negation", sub(a, b), add(a, neg(b))),
    *law("add-zero", add(a, Tensor.splat(0.0)), a),
    *law("mul-one", mul(a, Tensor.splat(1.0)), a),
    *laws("rsqrt-is-reciprocal-sqrt", rsqrt(a), div(Tensor.splat(1.0), sqrt(a)), *IN_ARITHMETIC_TYPE),
    *laws("div-is-mul-by-reciprocal", div(a, b), mul(a, div(Tensor.splat(1.0), b)), *IN_ARITHMETIC_TYPE),
    *_through_broadcasts(),
    *_broadcasts_commute(),
    *_folded_constants(),
)


def _slices_of_pointwise() -> list[Law]:
    """A slice of an elementwise op is the op on slices of its operands, a constant operand kept as it is (it
    fits every shape; only tensors are sliced, see :func:`shaped`); back, the operands must agree along the
    sliced axis."""
    entries: list[Law] = []
    for name, unary in UNARY.items():
        entries += laws(f"slice-of-{name}", slice_(unary(a), ax, off, size), unary(slice_(a, ax, off, size)),
                        *shaped(a))
    for name, binary in BINARY.items():
        entries += law(f"slice-of-{name}", slice_(binary(a, b), ax, off, size),
                       binary(slice_(a, ax, off, size), slice_(b, ax, off, size)), *shaped(a, b))
        entries += law(f"slice-of-{name}~", binary(slice_(a, ax, off, size), slice_(b, ax, off, size)),
                       slice_(binary(a, b), ax, off, size), _eq(dim(a, ax)).to(dim(b, ax)))
        entries += laws(f"slice-of-{name}-with-constant", slice_(binary(a, Tensor.splat(k)), ax, off, size),
                        binary(slice_(a, ax, off, size), Tensor.splat(k)), *shaped(a))
        entries += laws(f"slice-of-{name}-of-constant", slice_(binary(Tensor.splat(k), a), ax, off, size),
                        binary(Tensor.splat(k), slice_(a, ax, off, size)), *shaped(a))
    return entries


def _slices_of_broadcasts_and_reductions() -> list[Law]:
    """Slicing commutes with a broadcast along another axis (renumbered past it) and cuts a broadcast along its
    own axis short; it commutes with a reduction along another axis (renumbered past the reduced one)."""
    entries: list[Law] = [
        *law("slice-of-broadcast-along-it", slice_(broadcast(a, ax, n), ax, off, size), broadcast(a, ax, size),
             *shaped(a)),
        *laws("slice-of-broadcast-before-it", slice_(broadcast(a, ax, n), r, off, size),
              broadcast(slice_(a, r, off, size), ax, n), r < ax, *shaped(a)),
        *law("slice-of-broadcast-after-it", slice_(broadcast(a, ax, n), r, off, size),
             broadcast(slice_(a, r - 1, off, size), ax, n), r > ax, *shaped(a)),
        *law("slice-of-broadcast-after-it~", broadcast(slice_(a, r, off, size), ax, n),
             slice_(broadcast(a, ax, n), r + 1, off, size), r >= ax, *shaped(a)),
    ]
    for name, reduce in (("sum", reduce_sum), ("max", reduce_max)):
        entries += [
            *laws(f"slice-of-{name}-before-its-axis", slice_(reduce(a, r), ax, off, size),
                  reduce(slice_(a, ax, off, size), r), ax < r, *shaped(a)),
            *law(f"slice-of-{name}-after-its-axis", slice_(reduce(a, r), ax, off, size),
                 reduce(slice_(a, ax + 1, off, size), r), ax >= r, *shaped(a)),
            *law(f"slice-of-{name}-after-its-axis~", reduce(slice_(a, ax, off, size), r),
                 slice_(reduce(a, r), ax - 1, off, size), ax > r, *shaped(a)),
        ]
    return entries


def _reductions_of_broadcasts() -> list[Law]:
    """Summing a broadcast along its own axis multiplies by its size (a static one, of a tensor with a shape:
    never a constant's, see :func:`_through_broadcasts`); its maximum there is the value broadcast. A reduction
    along another axis commutes with the broadcast, each renumbered past the other."""
    entries: list[Law] = [
        *law("sum-of-broadcast-along-it", reduce_sum(broadcast(a, ax, n), ax), mul(a, Tensor.splat(f64.from_i64(n))),
             n >= 0, *shaped(a), *IN_ARITHMETIC_TYPE),
        *law("max-of-broadcast-along-it", reduce_max(broadcast(a, ax, n), ax), a, n >= 1, *shaped(a)),
    ]
    for name, reduce in (("sum", reduce_sum), ("max", reduce_max)):
        entries += [
            *law(f"{name}-of-broadcast-before-it", reduce(broadcast(a, ax, n), r),
                 broadcast(reduce(a, r), ax - 1, n), r < ax, *shaped(a)),
            *law(f"{name}-of-broadcast-before-it~", broadcast(reduce(a, r), m, n),
                 reduce(broadcast(a, m + 1, n), r), r <= m, *shaped(a)),
            *law(f"{name}-of-broadcast-after-it", reduce(broadcast(a, ax, n), r),
                 broadcast(reduce(a, r - 1), ax, n), r > ax, *shaped(a)),
            *law(f"{name}-of-broadcast-after-it~", broadcast(reduce(a, r), ax, n),
                 reduce(broadcast(a, ax, n), r + 1), r >= ax, *shaped(a)),
        ]
    return entries


def _reductions_of_scalings() -> list[Law]:
    """A sum of a scaling is the scaling of the sum, when the scale is constant along the summed axis; so is a
    maximum, for a positive constant scale."""
    return [
        *laws("sum-of-constant-scaling", reduce_sum(mul(a, Tensor.splat(k)), ax),
              mul(reduce_sum(a, ax), Tensor.splat(k)), *shaped(a), *IN_ARITHMETIC_TYPE),
        *laws("sum-of-broadcast-scaling", reduce_sum(mul(a, broadcast(s, ax, n)), ax), mul(reduce_sum(a, ax), s),
              _eq(n).to(dim(a, ax)), *shaped(s), *IN_ARITHMETIC_TYPE),
        *laws("max-of-positive-scaling", reduce_max(mul(a, Tensor.splat(k)), ax),
              mul(reduce_max(a, ax), Tensor.splat(k)), k > f64(0.0), *shaped(a)),
    ]


FUSION: Ruleset = _ruleset(
    "fusion",
    # Slicing a product's columns slices B's columns; its rows, A's rows.
    *laws("slice-columns-of-matmul", slice_(matmul(a, b), ax, off, size), matmul(a, slice_(b, ax, off, size)),
          _eq(rank(b)).to(ax + 1)),
    *laws("slice-rows-of-matmul", slice_(matmul(a, b), ax, off, size), matmul(slice_(a, ax, off, size), b),
          _eq(rank(a)).to(ax + 2)),
    *law("slice-inside-first-of-concat", slice_(concat(a, b, ax), ax, off, size), slice_(a, ax, off, size),
        _eq(n).to(dim(a, ax)), off + size <= n),
    *law("slice-inside-second-of-concat", slice_(concat(a, b, ax), ax, off, size), slice_(b, ax, off - n, size),
        _eq(n).to(dim(a, ax)), off >= n),
    *law("slice-whole", slice_(a, ax, 0, size), a, _eq(dim(a, ax)).to(size)),
    *law("slice-of-slice", slice_(slice_(a, ax, off, n), ax, i, size), slice_(a, ax, off + i, size)),
    *laws("concat-of-matmuls-sharing-a", concat(matmul(x, a), matmul(x, b), ax), matmul(x, concat(a, b, ax)),
          _eq(rank(a)).to(ax + 1)),
    *_slices_of_pointwise(),
    *_slices_of_broadcasts_and_reductions(),
)

SCALING: Ruleset = _ruleset(
    "scaling",
    # diag(s) A B = diag(s) (A B): a row scaling of A scales the product's rows.
    *laws("row-scaling-commutes-with-matmul",
          matmul(mul(a, broadcast(s, ax, size)), b), mul(matmul(a, b), broadcast(s, ax, n)),
          _eq(rank(a)).to(ax + 1), _eq(size).to(dim(a, ax)), _eq(n).to(dim(b, ax)), *IN_ARITHMETIC_TYPE),
    # A diag(g) B = A (diag(g) B): a column scaling of A is a row scaling of B.
    *laws("column-scaling-moves-into-b",
          matmul(mul(a, broadcast(g, ax, size)), b), matmul(a, mul(b, broadcast(g, ax + 1, n))),
          _eq(rank(a)).to(ax + 2), _eq(size).to(dim(a, ax)), _eq(n).to(dim(b, ax + 1)), *IN_ARITHMETIC_TYPE),
    # A (B diag(g)) = (A B) diag(g).
    *laws("b-column-scaling-commutes-with-matmul",
          matmul(a, mul(b, broadcast(g, ax, size))), mul(matmul(a, b), broadcast(g, ax, m)),
          _eq(rank(b)).to(ax + 2), _eq(size).to(dim(b, ax)), _eq(m).to(dim(a, ax)), *IN_ARITHMETIC_TYPE),
    *laws("scalar-commutes-with-matmul", matmul(mul(a, Tensor.splat(k)), b), mul(matmul(a, b), Tensor.splat(k)),
          *IN_ARITHMETIC_TYPE),
    # A row division is a row scaling by the reciprocal, so it moves after the matmul too.
    *laws("row-division-commutes-with-matmul",
          matmul(div(a, broadcast(s, ax, size)), b), div(matmul(a, b), broadcast(s, ax, n)),
          _eq(rank(a)).to(ax + 1), _eq(size).to(dim(a, ax)), _eq(n).to(dim(b, ax)), *IN_ARITHMETIC_TYPE),
    *_reductions_of_broadcasts(),
    *_reductions_of_scalings(),
)

SOFTMAX: Ruleset = _ruleset(
    "softmax",
    *laws("exp-of-difference", exp(sub(a, b)), div(exp(a), exp(b)), *IN_ARITHMETIC_TYPE),
    *laws("sum-of-a-broadcast-division", reduce_sum(div(a, broadcast(s, ax, size)), ax),
          div(reduce_sum(a, ax), s), _eq(size).to(dim(a, ax)), *IN_ARITHMETIC_TYPE),
    *law("division-cancels", div(div(a, c), div(b, c)), div(a, b), *IN_ARITHMETIC_TYPE),
)

CASTS: Ruleset = _ruleset(
    "casts",
    *law("cast-to-own-type", cast(a, e1), a, _eq(dtype(a)).to(e1)),
    # An exact first cast keeps a's value, so only the second one rounds: f16 -> f32 -> f16 is the identity, but
    # f32 -> f16 -> f32 is not (the first cast rounds).
    *law("cast-after-exact-cast", cast(cast(a, e1), e2), cast(a, e2), _eq(e0).to(dtype(a)), widens(e0, e1)),
    *laws("cast-commutes-with-broadcast", cast(broadcast(a, ax, size), e1), broadcast(cast(a, e1), ax, size)),
    *laws("cast-commutes-with-slice", cast(slice_(a, ax, off, size), e1), slice_(cast(a, e1), ax, off, size)),
    *laws("cast-commutes-with-concat", cast(concat(a, b, ax), e1), concat(cast(a, e1), cast(b, e1), ax)),
    *laws("cast-commutes-with-transpose", cast(transpose(a), e1), transpose(cast(a, e1))),
)

# The lowest finite f32: a row maximum started from it equals one started from -inf on f32 values.
LOWEST_F32 = -3.4028234663852886e38

NORMAL: Ruleset = _ruleset(
    "normal",
    *laws("scalar-distributes-over-sub", mul(sub(a, b), Tensor.splat(k)),
          sub(mul(a, Tensor.splat(k)), mul(b, Tensor.splat(k))), *IN_ARITHMETIC_TYPE),
    *laws("zero-minus-is-negation", sub(Tensor.splat(0.0), a), neg(a)),
    # A (c B) = c (A B); (c A)^T = c A^T.
    *laws("scalar-of-b-commutes-with-matmul", matmul(a, mul(b, Tensor.splat(k))), mul(matmul(a, b), Tensor.splat(k)),
          *IN_ARITHMETIC_TYPE),
    *laws("scalar-commutes-with-transpose", transpose(mul(a, Tensor.splat(k))), mul(transpose(a), Tensor.splat(k))),
    # A maximum started from the lowest float (or -inf) is the plain maximum of finite f32 values.
    *law("max-from-lowest", maximum(Tensor.splat(LOWEST_F32), reduce_max(a, ax)), reduce_max(a, ax)),
    *law("max-from-negative-infinity", maximum(Tensor.splat(float("-inf")), reduce_max(a, ax)), reduce_max(a, ax)),
)

# The rewrite families, by name; SHAPES runs beside every one of them.
RULESETS: dict[str, Ruleset] = {
    "linear": LINEAR, "elementwise": ELEMENTWISE, "fusion": FUSION, "scaling": SCALING, "softmax": SOFTMAX,
    "normal": NORMAL, "casts": CASTS,
}


def _shared_operand_fusion() -> Law:
    """Two products of one A become column slices of the product of A with B1 and B2 side by side.

    Unlike every other law this one matches two terms at once and creates a
    term neither side contains (the fused product), so it generates the
    fusion instead of recognizing it. Proofs never need it (the fusion laws
    recognize a fused form they are shown); exploration does.
    """
    name = "fuse-products-sharing-a"
    fused = matmul(x, concat(a, b, r - 1))
    return (name, rule(_eq(t).to(matmul(x, a)), _eq(s).to(matmul(x, b)), _ne(a).to(b), _eq(r).to(rank(a)),
                       _eq(n).to(dim(a, r - 1)), _eq(m).to(dim(b, r - 1)), name=name)
            .then(union(t).with_(slice_(fused, r - 1, 0, n)), union(s).with_(slice_(fused, r - 1, n, m))))


# Laws that only exploration runs: they create new terms rather than relate given ones.
SHARING: Ruleset = _ruleset("sharing", _shared_operand_fusion())
EXPLORATION_RULESETS: dict[str, Ruleset] = {"sharing": SHARING}


# The rulesets exploration runs: every family but SOFTMAX (exact in the reals, its laws would let extraction drop
# the max-subtraction that keeps exp finite, see prism.algebra.explore), and SHARING.
EXPLORING = ("linear", "elementwise", "fusion", "scaling", "normal", "casts", "sharing")


def named_ruleset(name: str) -> Ruleset:
    """The ruleset called ``name``, among RULESETS and EXPLORATION_RULESETS."""
    return RULESETS.get(name) or EXPLORATION_RULESETS[name]


__all__ = ["ARITHMETIC_TYPES", "CASTS", "ELEMENTWISE", "EXPLORATION_RULESETS", "EXPLORING", "FUSION", "LAW_NAMES",
           "LAW_RULES", "LINEAR", "LOWEST_F32", "NORMAL", "RULESETS", "SCALING", "SHAPES", "SHARING", "SOFTMAX",
           "named_ruleset"]
