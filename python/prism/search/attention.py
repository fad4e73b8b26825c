"""Attention in Linalg: ``softmax(c * Q K^T) V`` recognized from its ops, and the problem it poses.

Recognized on tensors, in the forms that users, prism-explore and
linalg.softmax's decomposition leave (the batch dimensions ``..`` may be
any number, shared by every operand, in the same order)::

    s   = sum_k q[.., i, k] * k[.., j, k]     (init 0)
    m   = max_j s[.., i, j]                   (init -inf)
    p   = exp((s - m) * c)                    (c > 0, a constant)
    l   = sum_j p[.., i, j]                   (init 0)
    o   = sum_j p[.., i, j] * v[.., j, e]     (init 0)
    out = o / l

where each intermediate feeds only the chain's next ops, every tensor is
f32, and the head dimensions (k and e) are static. With ``widened`` (see
:func:`match_attention`), Q, K and V may be of one narrower type (bf16,
f16) that the products' bodies extend to f32 (``arith.extf``) while the
chain computes in f32; then, in the ``(P V) / l`` form, P may be rounded to a
narrower type before P V, by an elementwise generic ``arith.truncf`` that the
second product extends back (``o = sum_j ext(trunc(p))[.., i, j] * v[.., j, e]``,
l still the sum of the unrounded p). Also recognized: the
division before the second product, ``o = sum_j (p / l)[.., i, j] * v[.., j, e]``;
scores scaled by an op of their own (``s * c'`` before the maximum; the
scales multiply); ``exp(s - m)`` (c = 1); a maximum from the lowest f32 or
(under maxnum) from NaN; ``linalg.softmax`` over the last dimension in place
of the maximum, exp, sum and division; named ``linalg.matmul`` /
``batch_matmul`` for the products; and a causal mask on the scores (before
or after their scaling), an elementwise generic that keeps ``s[.., i, j]``
where ``j <= i + o`` (o >= 0, a constant) and puts -inf elsewhere, its
condition an ``arith.cmpi`` of ``linalg.index`` values (see :func:`_causal`).

prism-lift makes each chain one family (:class:`Attention` is what the
search knows of it); the host's code generator replaces it by one kernel
(:mod:`prism.codegen.cpu.attention`).
"""

from __future__ import annotations

import math
from contextvars import ContextVar
from dataclasses import dataclass

from mlir import ir

from prism.infra.ir import filled_constant
from prism.infra.maps import map_dims

F32 = "f32"
# The element types a chain may have (all its tensors one of them): f32 by default; the GPU's kernels also take
# f16 and bf16 chains (see match_attention's ``types``).
_TYPES: ContextVar[tuple[str, ...]] = ContextVar("attention_types", default=(F32,))
# Whether K may be given transposed ([.., d, keys]); the host's kernel reads it as [.., keys, d].
_TRANSPOSED_K: ContextVar[bool] = ContextVar("attention_transposed_k", default=False)
# The narrower types that Q, K and V (and a rounded P) may have in an f32 chain whose products extend them
# (see match_attention's ``widened``); none by default.
_WIDENED: ContextVar[tuple[str, ...]] = ContextVar("attention_widened", default=())
# The narrower float types an f32 chain may widen from.
NARROW_TYPES = ("bf16", "f16")
# The narrowest vectors the attention kernel takes: 4 f32 lanes (128 bits, which every x86-64 and Arm core has).
MIN_LANES = 4


def attention_lanes(value_dim: int, lanes: int) -> int | None:
    """The f32 lanes of the attention kernel's vectors for rows of ``value_dim`` values on a machine whose
    vectors hold ``lanes``: the widest that divides ``value_dim``, from ``lanes`` down to MIN_LANES (on
    AVX-512, a value size of 24 takes vectors of 8); None when none does (the chain then stays generic)."""
    width = lanes
    while width >= MIN_LANES and value_dim % width:
        width //= 2
    return width if width >= MIN_LANES else None


@dataclass(frozen=True)
class Attention:
    """What the search needs to know about one attention: its sizes (None where dynamic).

    Its loops take the roles of a contraction's, so that shapes enter its
    space as a GEMM's do (``LB``, ``LM``, ``LN``, ``LK``): the heads are the
    batch, the query rows ``m``, the key rows ``n`` and the head dimension ``k``.
    """

    batch: int | None  # the product of the batch dimensions
    queries: int | None
    keys: int | None
    head_dim: int
    value_dim: int
    causal: int | None = None  # a causal mask's offset: key j is kept for query i when j <= i + causal
    input_type: str = "f32"  # its operands' element type (it accumulates in f32)
    k_transposed: bool = False  # K given as [.., d, keys]
    widened: bool = False  # Q, K and V narrower than the chain, which computes in f32 (see match_attention)
    p_type: str | None = None  # the type P is rounded to before P V (with ``widened``); None: not rounded

    roles = ("batch", "m", "n", "k")
    kind = "attention"
    acc_bytes = 4

    def extent(self, role: str) -> int | None:
        """The extent of ``role`` (see the class docstring); None if dynamic."""
        return {"batch": self.batch, "m": self.queries, "n": self.keys, "k": self.head_dim}[role]


@dataclass(frozen=True)
class AttentionMatch:
    """The ops of one attention, and what the kernel needs from them."""

    ops: tuple[ir.Operation, ...]  # the scores' product first, the result's op last
    q: ir.Value
    k: ir.Value
    v: ir.Value
    scale: float  # c, in exp((s - m) * c)
    causal: int | None = None  # with a causal mask: key j is kept for query i when j <= i + causal
    k_transposed: bool = False  # K given as [.., d, keys]
    p_type: str | None = None  # the type P is rounded to before P V; None: not rounded

    @property
    def widened(self) -> bool:
        """Whether Q, K and V are narrower than the chain, which computes in f32 (its result's type)."""
        return element_type(self.q) != element_type(self.ops[-1].results[0])

    @property
    def problem(self) -> Attention:
        """Its sizes, for the search."""
        q, k, v = (ir.RankedTensorType(value.type).shape for value in (self.q, self.k, self.v))
        dynamic = ir.ShapedType.is_dynamic_size
        batch = None if any(dynamic(n) for n in q[:-2]) else math.prod(q[:-2])
        keys = k[-1 if self.k_transposed else -2]
        return Attention(batch, None if dynamic(q[-2]) else q[-2], None if dynamic(keys) else keys, q[-1], v[-1],
                         self.causal, element_type(self.q), self.k_transposed, self.widened, self.p_type)


def element_type(value: ir.Value) -> str | None:
    """The element type of a ranked tensor ``value``, as text; None for any other value."""
    return str(ir.ShapedType(value.type).element_type) if isinstance(value.type, ir.RankedTensorType) else None


# Named contractions whose indexing maps the matcher reads like a generic's (their bodies are mulf, addf).
_NAMED_CONTRACTIONS = ("linalg.matmul", "linalg.batch_matmul")


def _generic(value: ir.Value, inputs: int, named: bool = False, narrow_inputs: bool = False) \
        -> ir.Operation | None:
    """The linalg.generic (or, with ``named``, named contraction) producing ``value`` with ``inputs`` inputs and
    one result, all tensors of one of the chain's types; with ``narrow_inputs`` (a product's), inputs of f32
    results may also be of a type the chain widens from. Else None."""
    if isinstance(value.owner, ir.Block):
        return None
    op = value.owner.operation
    kinds = ("linalg.generic", *_NAMED_CONTRACTIONS) if named else ("linalg.generic",)
    if op.name not in kinds or len(op.results) != 1 or len(op.operands) != inputs + 1:
        return None
    if "indexing_maps" not in op.attributes:
        return None
    result = element_type(op.results[0])
    if result not in _TYPES.get() or element_type(op.operands[-1]) != result:
        return None
    allowed = {result, *(_WIDENED.get() if narrow_inputs and result == F32 else ())}
    if not all(element_type(v) in allowed for v in op.operands[:-1]):
        return None
    return op


def _maps(op: ir.Operation) -> list[list[int] | None]:
    return [map_dims(ir.AffineMapAttr(a).value) for a in ir.ArrayAttr(op.attributes["indexing_maps"])]


def _reductions(op: ir.Operation) -> list[int]:
    return [d for d, it in enumerate(ir.ArrayAttr(op.attributes["iterator_types"])) if "reduction" in str(it)]


def _body(op: ir.Operation) -> tuple[list[ir.Operation], ir.Value, list[ir.Value]]:
    """The body's ops (without the yield), the yielded value, and the block arguments."""
    block = op.regions[0].blocks[0]
    ops = [o.operation for o in block.operations]
    terminator = ops.pop()
    if len(terminator.operands) != 1:
        return [], terminator, list(block.arguments)
    return ops, terminator.operands[0], list(block.arguments)


def _produced(value: ir.Value, name: str) -> ir.Operation | None:
    owner = value.owner
    if isinstance(owner, ir.Block):
        return None
    return owner.operation if owner.operation.name == name else None


def _constant(value: ir.Value) -> float | None:
    op = _produced(value, "arith.constant")
    if op is None or not isinstance(op.attributes["value"], ir.FloatAttr):
        return None
    return ir.FloatAttr(op.attributes["value"]).value


def _binary(body: list[ir.Operation], yielded: ir.Value, names: tuple[str, ...], a: ir.Value,
            b: ir.Value) -> bool:
    """The body is one commutative op (of ``names``) on ``a`` and ``b``."""
    if len(body) != 1 or body[0].name not in names or yielded != body[0].results[0]:
        return False
    x, y = body[0].operands
    return (x == a and y == b) or (x == b and y == a)


def _contraction(op: ir.Operation) -> tuple[list[int], int, int, int] | None:
    """(batch, row, column, reduced) loops of ``out[.., r, c] += x[.., r, red] * y[.., ?, ?]`` with a zero init."""
    maps = _maps(op)
    if len(op.operands) != 3 or len(maps) != 3 or None in maps or filled_constant(op.operands[2]) != 0.0:
        return None
    loops = ir.AffineMapAttr(ir.ArrayAttr(op.attributes["indexing_maps"])[0]).value.n_dims
    reduced = [d for d in range(loops) if d not in maps[2]]
    if len(reduced) != 1 or ("iterator_types" in op.attributes and _reductions(op) != reduced):
        return None
    ops, yielded, args = _body(op)
    widened = _widened_arguments(ops, args)
    if widened is None:
        return None
    ops = ops[len(ops) - 2:]
    if len(ops) != 2 or ops[0].name != "arith.mulf" or ops[1].name != "arith.addf":
        return None
    product = ops[0]
    x, y = product.operands
    if not ((x == widened[0] and y == widened[1]) or (x == widened[1] and y == widened[0])):
        return None
    if not _binary(ops[1:], yielded, ("arith.addf",), args[2], product.results[0]):
        return None
    out = maps[2]
    if len(out) < 2 or reduced[0] in out:
        return None
    return out[:-2], out[-2], out[-1], reduced[0]


def _widened_arguments(ops: list[ir.Operation], args: list[ir.Value]) -> tuple[ir.Value, ir.Value] | None:
    """A product body's two factors: each input argument as it is where its type is the accumulator's, else its
    ``arith.extf`` to the accumulator's type, the body's leading ops (one per such argument, in any order); None
    when the leading ops are not exactly those extensions."""
    accumulator = args[2].type
    factors, extensions = [], [o for o in ops if o.name == "arith.extf"]
    if ops[:len(extensions)] != extensions:
        return None
    for arg in args[:2]:
        if arg.type == accumulator:
            factors.append(arg)
            continue
        found = [e for e in extensions if e.operands[0] == arg and e.results[0].type == accumulator]
        if len(found) != 1:
            return None
        factors.append(found[0].results[0])
    widened = sum(factor != arg for factor, arg in zip(factors, args, strict=False))
    return (factors[0], factors[1]) if len(extensions) == widened else None


def _rounding(value: ir.Value) -> tuple[ir.Operation, str] | None:
    """(the op, the type) of an elementwise generic ``arith.truncf`` of one f32 input to a type the chain widens
    from, producing ``value``; else None."""
    if isinstance(value.owner, ir.Block):
        return None
    op = value.owner.operation
    narrow = element_type(op.results[0]) if op.name == "linalg.generic" and len(op.results) == 1 else None
    if narrow not in _WIDENED.get() or len(op.operands) != 2 or element_type(op.operands[0]) != F32:
        return None
    maps = _maps(op)
    whole = list(range(len(ir.ArrayAttr(op.attributes["iterator_types"]))))
    if maps != [whole, whole] or _reductions(op):
        return None
    ops, yielded, args = _body(op)
    # arith.truncf rounds to nearest, ties to even, unless it names another rounding mode.
    if len(ops) != 1 or ops[0].name != "arith.truncf" or ops[0].operands[0] != args[0] \
            or yielded != ops[0].results[0] or "roundingmode" in ops[0].attributes:
        return None
    return op, narrow


def _row_reduction(op: ir.Operation, names: tuple[str, ...], init: float) -> bool:
    """``out[.., i] = fold_j x[.., i, j]`` over the last loop, from ``init`` (NaN matches NaN)."""
    maps = _maps(op)
    loops = len(ir.ArrayAttr(op.attributes["iterator_types"]))
    if maps != [list(range(loops)), list(range(loops - 1))] or _reductions(op) != [loops - 1]:
        return False
    start = filled_constant(op.operands[1])
    if start is None or not (start == init or (math.isnan(start) and math.isnan(init))):
        return False
    ops, yielded, args = _body(op)
    return _binary(ops, yielded, names, args[0], args[1])


def _row_broadcast(op: ir.Operation) -> bool:
    """Elementwise over all loops, its second input indexed by all but the last."""
    maps = _maps(op)
    loops = len(ir.ArrayAttr(op.attributes["iterator_types"]))
    whole = list(range(loops))
    return maps == [whole, whole[:-1], whole] and not _reductions(op)


def _exp_scale(op: ir.Operation) -> float | None:
    """c, for a body ``exp((x - row) * c)`` with c a positive constant; else None."""
    ops, yielded, args = _body(op)
    ops = [o for o in ops if o.name != "arith.constant"]
    if [o.name for o in ops] == ["arith.subf", "math.exp"]:  # exp(x - row): c = 1
        sub, exp = ops
        if sub.operands[0] != args[0] or sub.operands[1] != args[1]:
            return None
        return 1.0 if exp.operands[0] == sub.results[0] and yielded == exp.results[0] else None
    if len(ops) != 3 or [o.name for o in ops] != ["arith.subf", "arith.mulf", "math.exp"]:
        return None
    sub, mul, exp = ops
    if sub.operands[0] != args[0] or sub.operands[1] != args[1]:
        return None
    factors = list(mul.operands)
    if not any(f == sub.results[0] for f in factors):
        return None
    others = [f for f in factors if f != sub.results[0]]
    scale = _constant(others[0]) if len(others) == 1 else None
    if scale is None or not scale > 0 or not math.isfinite(scale):
        return None
    if exp.operands[0] != mul.results[0] or yielded != exp.results[0]:
        return None
    return scale


def _scaled(op: ir.Operation) -> float | None:
    """c, for an elementwise generic ``x * c`` (one input, c a positive finite constant); else None."""
    maps = _maps(op)
    if len(op.operands) != 2 or maps[0] != maps[1] or sorted(maps[0] or [None]) != list(range(len(maps[0] or []))) \
            or _reductions(op):
        return None
    ops, yielded, args = _body(op)
    ops = [o for o in ops if o.name != "arith.constant"]
    if len(ops) != 1 or ops[0].name != "arith.mulf" or yielded != ops[0].results[0]:
        return None
    factors = [f for f in ops[0].operands if f != args[0]]
    scale = _constant(factors[0]) if len(factors) == 1 else None
    return scale if scale is not None and scale > 0 and math.isfinite(scale) else None


def _index_term(value: ir.Value) -> tuple[int, int] | None:
    """(loop, c) for ``linalg.index loop + c`` (c a constant, also as ``- c``, or 0); else None."""
    index = _produced(value, "linalg.index")
    if index is not None:
        return ir.IntegerAttr(index.attributes["dim"]).value, 0
    op = _produced(value, "arith.addi") or _produced(value, "arith.subi")
    if op is None:
        return None
    for position, (term, other) in enumerate(((op.operands[0], op.operands[1]), (op.operands[1], op.operands[0]))):
        index, constant = _produced(term, "linalg.index"), _produced(other, "arith.constant")
        if index is None or constant is None or not isinstance(constant.attributes["value"], ir.IntegerAttr):
            continue
        if op.name == "arith.subi" and position:
            return None  # c - index
        c = ir.IntegerAttr(constant.attributes["value"]).value
        return ir.IntegerAttr(index.attributes["dim"]).value, -c if op.name == "arith.subi" else c
    return None


# cmpi predicates as (keep when true: j - i <= bound + shift, with the key on the left); the right-hand forms
# follow by swapping sides.
_KEEP = {"sle": 0, "ule": 0, "slt": -1, "ult": -1}
_DROP = {"sgt": 0, "ugt": 0, "sge": -1, "uge": -1}
_SWAPPED = {"sge": "sle", "uge": "ule", "sgt": "slt", "ugt": "ult", "sle": "sge", "ule": "uge", "slt": "sgt",
            "ult": "ugt"}
_PREDICATES = ("eq", "ne", "slt", "sle", "sgt", "sge", "ult", "ule", "ugt", "uge")


def _causal(op: ir.Operation) -> int | None:
    """The offset ``o`` of a causal mask, ``x[.., i, j]`` where ``j <= i + o`` and -inf elsewhere (o >= 0, so that
    every row keeps a key); else None.

    The mask is an elementwise generic over all loops with one input, whose
    body compares ``linalg.index`` of the last two loops (plus constants)
    with ``arith.cmpi`` and selects the input or a constant no greater than
    -1e30 (-inf, the lowest f32: its exp is 0 next to any kept score).
    """
    maps = _maps(op)
    loops = len(ir.ArrayAttr(op.attributes["iterator_types"]))
    if len(op.operands) != 2 or maps != [list(range(loops))] * 2 or _reductions(op) or loops < 2:
        return None
    ops, yielded, args = _body(op)
    select = _produced(yielded, "arith.select")
    if select is None:
        return None
    condition, kept, dropped = select.operands
    compare = _produced(condition, "arith.cmpi")
    if compare is None:
        return None
    flip = kept != args[0]
    if flip:
        kept, dropped = dropped, kept
    low = _constant(dropped)
    if kept != args[0] or low is None or not low <= -1e30:
        return None
    predicate = _PREDICATES[ir.IntegerAttr(compare.attributes["predicate"]).value]
    left, right = _index_term(compare.operands[0]), _index_term(compare.operands[1])
    if left is None or right is None or (predicate.startswith("u") and min(left[1], right[1]) < 0):
        return None  # an index minus a constant may wrap around in an unsigned comparison
    if (left[0], right[0]) == (loops - 2, loops - 1):  # the query on the left: swap sides
        left, right, predicate = right, left, _SWAPPED.get(predicate, predicate)
    if (left[0], right[0]) != (loops - 1, loops - 2):
        return None
    table = _DROP if flip else _KEEP
    if predicate not in table:
        return None
    # j + a <= i + b (+ shift)  <=>  j <= i + (b - a + shift)
    offset = right[1] - left[1] + table[predicate]
    return offset if offset >= 0 else None


def _divides_rows(op: ir.Operation) -> bool:
    """``x[.., i, j] / row[.., i]``, elementwise."""
    if not _row_broadcast(op):
        return False
    ops, yielded, args = _body(op)
    return len(ops) == 1 and ops[0].name == "arith.divf" and yielded == ops[0].results[0] \
        and ops[0].operands[0] == args[0] and ops[0].operands[1] == args[1]


# The row maximum may start from -inf, from the lowest finite f32, or, with maxnum, from NaN (which maxnum
# ignores: linalg.softmax's decomposition): for finite scores all give the same maximum.
_MAXIMA = ("arith.maximumf", "arith.maxnumf")
_MAX_INITS = ((_MAXIMA, -math.inf), (_MAXIMA, -3.4028234663852886e38), (("arith.maxnumf",), math.nan))


def _softmax(product: ir.Operation) -> ir.Operation | None:
    """The ``linalg.softmax`` over the last dimension (of f32 tensors) whose result ``product`` reads first."""
    op = _produced(product.operands[0], "linalg.softmax")
    if op is None or len(op.results) != 1:
        return None
    if not all(isinstance(v.type, ir.RankedTensorType) and str(ir.ShapedType(v.type).element_type) == F32
               for v in [*op.operands, *op.results]):
        return None
    dimension = op.attributes["dimension"]
    rank = ir.RankedTensorType(op.operands[0].type).rank
    return op if isinstance(dimension, ir.IntegerAttr) and ir.IntegerAttr(dimension).value == rank - 1 else None


def _normalization(last: ir.Operation) \
        -> tuple[list[ir.Operation], ir.Operation, ir.Value, float, str | None] | None:
    """The ops from the scores to the result ``last``: (those ops in order; the second product among them; the
    value they normalize; c; the type P is rounded to before P V, or None).

    P may be rounded only in the ``(P V) / l`` form, where the rounded values are
    the unnormalized ones that the kernel holds; a rounding of ``P / l`` is not
    recognized."""
    if last.name == "linalg.generic" and _divides_rows(last):  # (P V) / l
        product = _generic(last.operands[0], 2, named=True, narrow_inputs=True)
        sums = _generic(last.operands[1], 1)
        if product is None or sums is None:
            return None
        weights = _generic(sums.operands[0], 2)
        rounding = _rounding(product.operands[0])
        rounded = [rounding[0]] if rounding is not None else []
        read = rounding[0].operands[0] if rounding is not None else product.operands[0]
        if weights is None or read != weights.results[0]:
            return None
        tail, p_type = [*rounded, product, last], rounding[1] if rounding is not None else None
    else:
        product, p_type = _generic(last.results[0], 2, named=True, narrow_inputs=True), None
        if product is None:
            return None
        softmax = _softmax(product)
        if softmax is not None:  # linalg.softmax(x) V
            return [softmax, product], product, softmax.operands[0], 1.0, None
        normalized = _generic(product.operands[0], 2)  # (P / l) V
        if normalized is None or not _divides_rows(normalized):
            return None
        sums, weights = _generic(normalized.operands[1], 1), _generic(normalized.operands[0], 2)
        if sums is None or weights is None or sums.operands[0] != weights.results[0]:
            return None
        tail = [normalized, product]
    if not _row_reduction(sums, ("arith.addf",), 0.0) or not _row_broadcast(weights):
        return None
    scale = _exp_scale(weights)
    top = _generic(weights.operands[1], 1)
    x = weights.operands[0]
    if scale is None or top is None or top.operands[0] != x:
        return None
    if not any(_row_reduction(top, names, init) for names, init in _MAX_INITS):
        return None
    return [top, weights, sums, *tail], product, x, scale, p_type


def match_attention(op: ir.Operation, types: tuple[str, ...] = (F32,), transposed_k: bool = False,
                    widened: tuple[str, ...] = ()) -> AttentionMatch | None:
    """The attention chain ending at ``op``, or None; see the module docstring. ``types``: the element types
    the chain may have (all its tensors one of them); ``transposed_k``: K may be given as [.., d, keys];
    ``widened``: the narrower types Q, K and V (one of them for all three) and a rounded P may have in an f32
    chain whose products extend them to f32.

    Three forms are recognized: ``(P V) / l`` (the division last, as prism-explore leaves it), ``(P / l) V``
    (as linalg.softmax decomposes) and ``softmax(x) V``; the scores may be scaled before the row maximum by an
    elementwise ``x * c`` (the scales multiply).
    """
    if op.name not in ("linalg.generic", *_NAMED_CONTRACTIONS) or len(op.results) != 1:
        return None
    tokens = _TYPES.set(types), _TRANSPOSED_K.set(transposed_k), _WIDENED.set(widened)
    try:
        return _match(op)
    finally:
        _TYPES.reset(tokens[0])
        _TRANSPOSED_K.reset(tokens[1])
        _WIDENED.reset(tokens[2])


def _match(op: ir.Operation) -> AttentionMatch | None:
    found = _normalization(op)
    if found is None:
        return None
    normalization, product, x, scale, p_type = found
    # Between the scores and the normalization: a scaling and a causal mask, at most one of each, in either order.
    between: list[ir.Operation] = []
    offset, scaled = None, False
    while (op_x := _generic(x, 1)) is not None:
        factor = None if scaled else _scaled(op_x)
        if factor is not None:
            scale, scaled = scale * factor, True
        elif offset is None and (found_offset := _causal(op_x)) is not None:
            offset = found_offset
        else:
            break
        between.insert(0, op_x)
        x = op_x.operands[0]
    scores = _generic(x, 2, named=True, narrow_inputs=True)
    if scores is None:
        return None
    found = _contraction(scores), _contraction(product)
    if found[0] is None or found[1] is None:
        return None
    batch, i, j, red = found[0]
    maps_s = _maps(scores)
    k_transposed = maps_s[1] == [*batch, red, j] and _TRANSPOSED_K.get()
    if maps_s[0] != [*batch, i, red] or (maps_s[1] != [*batch, j, red] and not k_transposed):
        return None
    # o[.., i, e] = sum_j p[.., i, j] v[.., j, e]
    batch_o, i_o, e_o, j_o = found[1]
    maps_o = _maps(product)
    if maps_o[0] != [*batch_o, i_o, j_o] or maps_o[1] != [*batch_o, j_o, e_o] or len(batch_o) != len(batch):
        return None
    q, k, v = scores.operands[0], scores.operands[1], product.operands[1]
    if len({element_type(value) for value in (q, k, v)}) != 1:
        return None  # Q, K and V of one type
    shapes = [ir.RankedTensorType(value.type).shape for value in (q, k, v)]
    if any(ir.ShapedType.is_dynamic_size(shape[-2 if value is k and k_transposed else -1])
           for value, shape in zip((q, k, v), shapes, strict=False)):
        return None
    chain = [scores, *between, *normalization]
    # Every intermediate is read by the chain alone (it disappears with it).
    for o in chain[:-1]:
        if not all(any(use.owner == c for c in chain) for use in o.results[0].uses):
            return None
    return AttentionMatch(tuple(chain), q, k, v, scale, offset, k_transposed, p_type)
