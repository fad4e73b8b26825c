"""Attention on the host: ``softmax(c * Q K^T) V`` in one pass over K and V, never storing the scores.

Recognized at ``cpu-tile`` from its six ops on tensors, in the form that
prism-lift and prism-explore leave (the batch dimensions ``..`` may be any
number, shared by every operand, in the same order)::

    s   = sum_k q[.., i, k] * k[.., j, k]     (init 0)
    m   = max_j s[.., i, j]                   (init -inf)
    p   = exp((s - m) * c)                    (c > 0, a constant)
    l   = sum_j p[.., i, j]                   (init 0)
    o   = sum_j p[.., i, j] * v[.., j, e]     (init 0)
    out = o / l

where each intermediate feeds only the chain's next ops, every tensor is
f32, and the head dimensions (k and e) are static, e a multiple of the
vector width. Also recognized: the division before the second product,
``o = sum_j (p / l)[.., i, j] * v[.., j, e]``, scores scaled by an op of
their own (``s * c'`` before the maximum; the scales multiply), ``exp(s - m)``
(c = 1), a maximum from the lowest f32 or (under maxnum) from NaN, and named
``linalg.matmul``/``batch_matmul`` for the products: the forms
``linalg.softmax`` decomposes into at ``cpu-tile``. The six ops become one kernel with FlashAttention's online
softmax (Dao et al., 2022): per task, a block of BQ query rows of one head
walks K and V in blocks of BKV rows, keeping a running row maximum ``m``,
a running row sum ``l`` and an unnormalized output block ``O``:

1. ``S = Q_blk K_blk^T`` (BQ x BKV) by RM x RN register blocks; K is
   transposed once per call into ``[batch][d][kv]`` (zero past the end), so
   that the micro-kernel reads BKV-wide rows, as the GEMM kernel reads B;
2. per row: ``m' = max(m, max_j S)``, ``P = exp((S - m') c)`` (a vector
   polynomial; columns past the end of K are -inf, so they weigh 0),
   ``alpha = exp((m - m') c)``, ``l = alpha l + sum_j P``;
3. ``O = alpha O + P V_blk`` by RM x RN register blocks, V read in place;

and at the end ``out = O / l``. The scores exist only as one BQ x BKV block
per worker, in L2; nothing of size S x S is allocated. The result equals
the six ops' in exact arithmetic for any row maximum: ``m`` cancels in
``o / l``.

Tasks are ``batch x ceil(Sq / BQ)``, shared among the workers like the GEMM
kernel's (:mod:`.kernel`): contiguous shares, per-worker scratch. Rows of a
ragged last query block repeat its last row (computed, never stored).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from mlir import ir

from prism.codegen.cpu.text import F32, MlirText, erase_unused_inits, f32_literal, filled_constant, inline_function
from prism.infra.diagnostics import describe_ops
from prism.infra.passbase import PassContext
from prism.search.family import map_dims

# Query rows per task (about) and key rows per step. Measured on the 2-core Zen 3 (16 heads, d = 64, in
# alternation): S = 512, BQ x BKV = 48 x 64 14.7 ms, 48 x 128 13.4, 96 x 128 12.9, 96 x 256 14.3, 192 x 128
# 12.9; S = 2048, 48 x 64 211 ms, 48 x 128 185, 96 x 128 175.
QUERY_ROWS, KEY_ROWS = 96, 128


@dataclass(frozen=True)
class AttentionPlan:
    """Everything the text of one attention kernel depends on."""

    q_type: str
    k_type: str
    v_type: str
    out_type: str
    scale: float  # c, in exp((s - m) * c)
    bq: int  # query rows per task (a multiple of rm)
    bkv: int  # key/value rows per step (a multiple of rn)
    rm: int  # rows of a register block
    rn: int  # columns of a register block (a multiple of lanes)
    lanes: int
    workers: int

    @property
    def direct_scores(self) -> bool:
        """Scores as dot products over K's rows where it lies (one-row blocks: a few query rows, decode):
        a query row reads each key once, so transposing K would only add a pass over it."""
        return self.rm == 1

    @property
    def batch_rank(self) -> int:
        return ir.RankedTensorType.parse(self.q_type).rank - 2

    @property
    def head_dim(self) -> int:
        return ir.RankedTensorType.parse(self.q_type).shape[-1]

    @property
    def value_dim(self) -> int:
        return ir.RankedTensorType.parse(self.v_type).shape[-1]


@dataclass(frozen=True)
class AttentionMatch:
    """The six ops of one attention, and what the kernel needs from them."""

    ops: tuple[ir.Operation, ...]  # s, m, p, l, o, out: in the order they are defined
    q: ir.Value
    k: ir.Value
    v: ir.Value
    scale: float


def plan_attention(match: AttentionMatch, lanes: int, workers: int) -> AttentionPlan:
    """Tiles for one attention: 6 x 2-vector register blocks, about QUERY_ROWS query rows and KEY_ROWS key
    rows per block (fewer when short); one-row blocks (and wider ones) for fewer than 6 query rows.

    A block of S (BQ x BKV) and one of O (BQ x Dv) stay in L2 beside a
    BKV-row slice of K^T and of V, which stream through L1.
    """
    q_type = ir.RankedTensorType(match.q.type)
    sq = q_type.shape[-2]
    rows = None if ir.ShapedType.is_dynamic_size(sq) else sq
    rm = 6 if rows is None or rows >= 6 else 1
    # About QUERY_ROWS rows per block, evened out over the blocks so that the last one is not mostly repeats.
    blocks = 1 if rows is None else -(-rows // QUERY_ROWS)
    bq = QUERY_ROWS if rows is None else -(-rows // (blocks * rm)) * rm
    value_dim = ir.RankedTensorType(match.v.type).shape[-1]
    # One-row blocks keep only RN/lanes accumulators: wider ones read each row of V in fewer passes.
    widths = (4 * lanes, 2 * lanes, lanes) if rm == 1 else (2 * lanes, lanes)
    rn = next(w for w in widths if value_dim % w == 0)
    kv = ir.RankedTensorType(match.k.type).shape[-2]
    bkv = KEY_ROWS if ir.ShapedType.is_dynamic_size(kv) else min(KEY_ROWS, -(-kv // rn) * rn)
    bkv = max(rn, bkv - bkv % rn)
    out_type = str(match.ops[-1].results[0].type)
    return AttentionPlan(str(match.q.type), str(match.k.type), str(match.v.type), out_type, match.scale,
                         bq, bkv, rm, rn, lanes, workers)


def fuse_attention(module: ir.Module, lanes: int, workers: int, ctx: PassContext) -> list[list[str]]:
    """Replace every attention chain in ``module`` by the online-softmax kernel.

    Returns, per chain replaced, its function and ops as text (:func:`describe_ops`), read before they go.
    """
    found: list[list[str]] = []
    for func in module.body.operations:
        if func.operation.name != "func.func" or not func.regions[0].blocks:
            continue
        for block in func.regions[0].blocks:
            for op in list(block.operations):
                match = match_attention(op.operation)
                if match is None or ir.RankedTensorType(match.v.type).shape[-1] % lanes:
                    continue  # not attention, or rows of V that are not whole vectors: the generic path
                plan = plan_attention(match, lanes, workers)
                ctx.progress(f"cpu-tile: attention at {op.operation.location}: BQ={plan.bq}, BKV={plan.bkv}, "
                             f"{plan.rm}x{plan.rn} blocks")
                found.append(describe_ops(func.operation, match.ops))
                last = match.ops[-1]
                feeding = [operand.owner.operation for chained in match.ops for operand in chained.operands
                           if not isinstance(operand.owner, ir.Block)]
                inline_function(last, attention_text(plan), [match.q, match.k, match.v])
                for dead in reversed(match.ops[:-1]):
                    dead.erase()
                erase_unused_inits(feeding)
    return found


# ---------------------------------------------------------------------------------------------------------------
# Recognition


# Named contractions whose indexing maps the matcher reads like a generic's (their bodies are mulf, addf).
_NAMED_CONTRACTIONS = ("linalg.matmul", "linalg.batch_matmul")


def _generic(value: ir.Value, inputs: int, named: bool = False) -> ir.Operation | None:
    """The linalg.generic (or, with ``named``, named contraction) producing ``value`` with ``inputs`` inputs and
    one result, all f32 tensors; else None."""
    if isinstance(value.owner, ir.Block):
        return None
    op = value.owner.operation
    kinds = ("linalg.generic", *_NAMED_CONTRACTIONS) if named else ("linalg.generic",)
    if op.name not in kinds or len(op.results) != 1 or len(op.operands) != inputs + 1:
        return None
    if "indexing_maps" not in op.attributes:
        return None
    if not all(isinstance(v.type, ir.RankedTensorType) and str(ir.ShapedType(v.type).element_type) == F32
               for v in [*op.operands, *op.results]):
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
    if None in maps or filled_constant(op.operands[2]) != 0.0:
        return None
    loops = ir.AffineMapAttr(ir.ArrayAttr(op.attributes["indexing_maps"])[0]).value.n_dims
    reduced = [d for d in range(loops) if d not in maps[2]]
    if len(reduced) != 1 or ("iterator_types" in op.attributes and _reductions(op) != reduced):
        return None
    ops, yielded, args = _body(op)
    if len(ops) != 2 or ops[0].name != "arith.mulf" or ops[1].name != "arith.addf":
        return None
    product = ops[0]
    x, y = product.operands
    if not ((x == args[0] and y == args[1]) or (x == args[1] and y == args[0])):
        return None
    if not _binary(ops[1:], yielded, ("arith.addf",), args[2], product.results[0]):
        return None
    out = maps[2]
    if len(out) < 2 or reduced[0] in out:
        return None
    return out[:-2], out[-2], out[-1], reduced[0]


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


def match_attention(op: ir.Operation) -> AttentionMatch | None:
    """The attention chain ending at ``op``, or None; see the module docstring.

    Two orders are recognized: ``(P V) / l`` (the division last, as prism-explore leaves it) and ``(P / l) V``
    (as linalg.softmax decomposes); the scores may be scaled before the row maximum by an elementwise
    ``x * c`` (the scales multiply).
    """
    if op.name not in ("linalg.generic", *_NAMED_CONTRACTIONS) or len(op.results) != 1:
        return None
    last = op
    if last.name == "linalg.generic" and _divides_rows(last):  # (P V) / l
        product, sums = _generic(last.operands[0], 2, named=True), _generic(last.operands[1], 1)
        if product is None or sums is None:
            return None
        weights = _generic(sums.operands[0], 2)
        if weights is None or product.operands[0] != weights.results[0]:
            return None
        normalized = None
    else:  # (P / l) V
        product = last
        normalized = _generic(product.operands[0], 2)
        if normalized is None or not _divides_rows(normalized):
            return None
        sums, weights = _generic(normalized.operands[1], 1), _generic(normalized.operands[0], 2)
        if sums is None or weights is None or sums.operands[0] != weights.results[0]:
            return None
    if not _row_reduction(sums, ("arith.addf",), 0.0) or not _row_broadcast(weights):
        return None
    scale = _exp_scale(weights)
    producer = weights.operands[0]
    scaling = _generic(producer, 1)
    factor = _scaled(scaling) if scaling is not None else None
    scores = _generic(scaling.operands[0] if factor is not None else producer, 2, named=True)
    top = _generic(weights.operands[1], 1)
    if scale is None or scores is None or top is None:
        return None
    x = scaling if factor is not None else scores  # what the row maximum and exp read
    if top.operands[0] != x.results[0]:
        return None
    if not any(_row_reduction(top, names, init) for names, init in _MAX_INITS):
        return None
    scale *= factor if factor is not None else 1.0
    found = _contraction(scores), _contraction(product)
    if found[0] is None or found[1] is None:
        return None
    batch, i, j, red = found[0]
    maps_s = _maps(scores)
    if maps_s[0] != [*batch, i, red] or maps_s[1] != [*batch, j, red]:
        return None
    # o[.., i, e] = sum_j p[.., i, j] v[.., j, e]
    batch_o, i_o, e_o, j_o = found[1]
    maps_o = _maps(product)
    if maps_o[0] != [*batch_o, i_o, j_o] or maps_o[1] != [*batch_o, j_o, e_o] or len(batch_o) != len(batch):
        return None
    q, k, v = scores.operands[0], scores.operands[1], product.operands[1]
    shapes = [ir.RankedTensorType(value.type).shape for value in (q, k, v)]
    if any(ir.ShapedType.is_dynamic_size(shape[-1]) for shape in shapes):
        return None
    chain = [scores, *([scaling] if factor is not None else []), top, weights, sums]
    chain += [product, last] if normalized is None else [normalized, product]
    # Every intermediate is read by the chain alone (it disappears with it).
    for o in chain[:-1]:
        if not all(any(use.owner == c for c in chain) for use in o.results[0].uses):
            return None
    return AttentionMatch(tuple(chain), q, k, v, scale)


# ---------------------------------------------------------------------------------------------------------------
# The kernel


class _Attention:
    """Writes the text of one attention kernel (see :func:`attention_text`)."""

    def __init__(self, plan: AttentionPlan):
        self.plan, self.t = plan, MlirText()
        self.rank = plan.batch_rank + 2
        self.dyn = f"memref<{'x'.join('?' * self.rank)}x{F32}>"
        self.vec = f"vector<{plan.lanes}x{F32}>"
        w, bq, bkv, dv = plan.workers, plan.bq, plan.bkv, plan.value_dim
        self.s_type = f"memref<{w}x{bq}x{bkv}x{F32}>"
        self.o_type = f"memref<{w}x{bq}x{dv}x{F32}>"
        self.row_type = f"memref<{w}x{bq}x{F32}>"
        self.kt_type = f"memref<?x?x{plan.head_dim}x{plan.bkv}x{F32}>"

    def text(self) -> str:
        p, t = self.plan, self.t
        self.t.open(f"func.func private @attention(%q: {p.q_type}, %k: {p.k_type}, %v: {p.v_type}) -> {p.out_type}")
        self.c0, self.c1 = t.const(0), t.const(1)
        self.q, self.k, self.v = (self.t.buffer(arg, typ, self.dyn) for arg, typ in (("%q", p.q_type), ("%k", p.k_type),
                                                                           ("%v", p.v_type)))
        nb = p.batch_rank
        self.batch = [t.value(f"memref.dim {self.q}, {t.const(d)} : {self.dyn}", "nb") for d in range(nb)]
        flat = self.c1
        for size in self.batch:
            flat = t.value(f"arith.muli {flat}, {size} : index", "nb")
        self.flat = flat
        self.sq = t.value(f"memref.dim {self.q}, {t.const(nb)} : {self.dyn}", "sq")
        self.skv = t.value(f"memref.dim {self.k}, {t.const(nb)} : {self.dyn}", "skv")
        bkv = t.const(p.bkv)
        kv_blocks = t.value(f"arith.ceildivui {self.skv}, {bkv} : index", "nkb")
        if not p.direct_scores:
            self.kt = t.value(f"memref.alloc({flat}, {kv_blocks}) {{alignment = 64 : i64}} : {self.kt_type}", "kt")
            self._transpose_k(kv_blocks)
        sizes = [*self.batch, self.sq, t.const(p.value_dim)]
        self.out = t.value(f"memref.alloc({', '.join(sizes)}) {{alignment = 64 : i64}} : {self.dyn}", "out")
        self.s = t.value(f"memref.alloc() {{alignment = 64 : i64}} : {self.s_type}", "sblk")
        self.o = t.value(f"memref.alloc() {{alignment = 64 : i64}} : {self.o_type}", "oblk")
        self.m, self.l, self.alpha = (t.value(f"memref.alloc() {{alignment = 64 : i64}} : {self.row_type}", name)
                                      for name in ("mrow", "lrow", "alpha"))
        self._tasks()
        t.add(f"return {t.tensor_of(self.out, self.dyn, p.out_type)} : {p.out_type}")
        self.t.close()
        return t.function_text()

    # -- helpers ---------------------------------------------------------------------------------------------

    def _f(self, value: float) -> str:
        return self.t.value(f"arith.constant {f32_literal(value)} : {F32}", "cf")

    def _splat(self, value: float) -> str:
        return self.t.splat(value, self.plan.lanes)

    def _batch_of(self, flat: str) -> list[str]:
        """The batch indices of a flat batch index (the last dimension fastest)."""
        t, indices, rest = self.t, [], flat
        for size in reversed(self.batch):
            indices.append(t.value(f"arith.remui {rest}, {size} : index", "bi"))
            rest = t.value(f"arith.divui {rest}, {size} : index", "bq")
        return indices[::-1]

    def _shares(self, total: str) -> tuple[str, str, str]:
        """One parallel iteration per worker over a contiguous share of ``total``: (worker, begin, end)."""
        t = self.t
        workers = t.const(self.plan.workers)
        share = t.value(f"arith.ceildivui {total}, {workers} : index", "share")
        worker = t.fresh("w")
        self.t.open(f"scf.parallel ({worker}) = ({self.c0}) to ({workers}) step ({self.c1})")
        begin = t.value(f"arith.muli {worker}, {share} : index", "first")
        end = t.value(f"arith.minui {t.value(f'arith.addi {begin}, {share} : index')}, {total} : index", "end")
        return worker, begin, end

    def exp(self, x: str) -> str:
        """exp of a vector of values <= 0 (or NaN): every argument here is a score minus a running maximum,
        times a positive scale."""
        return self.t.exp(x, self.plan.lanes, nonpositive=True)

    # -- phases ----------------------------------------------------------------------------------------------

    def _transpose_k(self, kv_blocks: str) -> None:
        """K^T into ``kt[flat batch][d][j]``, zero for j past the end, one parallel task per BKV rows of a head."""
        p, t = self.plan, self.t
        total = t.value(f"arith.muli {self.flat}, {kv_blocks} : index", "kt_tasks")
        worker, begin, end = self._shares(total)
        del worker
        task = t.fresh("kt")
        self.t.open(f"scf.for {task} = {begin} to {end} step {self.c1}")
        fb = t.value(f"arith.divui {task}, {kv_blocks} : index", "fb")
        kb = t.value(f"arith.remui {task}, {kv_blocks} : index", "kb")
        j0 = t.value(f"arith.muli {kb}, {t.const(p.bkv)} : index", "j0")
        batch = self._batch_of(fb)
        d = t.fresh("d")
        self.t.open(f"scf.for {d} = {self.c0} to {t.const(p.head_dim)} step {self.c1}")
        jj = t.fresh("jj")
        self.t.open(f"scf.for {jj} = {self.c0} to {t.const(p.bkv)} step {self.c1}")
        j = t.value(f"arith.addi {j0}, {jj} : index", "j")
        inside = t.value(f"arith.cmpi ult, {j}, {self.skv} : index")
        value = t.fresh("kv")
        t.add(f"{value} = scf.if {inside} -> ({F32}) {{")
        t.depth += 1
        where = ", ".join([*batch, j, d])
        t.add(f"scf.yield {t.value(f'memref.load {self.k}[{where}] : {self.dyn}', 'x')} : {F32}")
        self.t.close("} else {")
        t.depth += 1
        t.add(f"scf.yield {self._f(0.0)} : {F32}")
        self.t.close()
        t.add(f"memref.store {value}, {self.kt}[{fb}, {kb}, {d}, {jj}] : {self.kt_type}")
        for _ in range(4):  # jj, d, the worker's task loop, the parallel loop
            self.t.close()

    def _tasks(self) -> None:
        p, t = self.plan, self.t
        bq = t.const(p.bq)
        q_blocks = t.value(f"arith.ceildivui {self.sq}, {bq} : index", "nqb")
        total = t.value(f"arith.muli {self.flat}, {q_blocks} : index", "tasks")
        self.w, begin, end = self._shares(total)
        task = t.fresh("task")
        self.t.open(f"scf.for {task} = {begin} to {end} step {self.c1}")
        self.fb = t.value(f"arith.divui {task}, {q_blocks} : index", "fb")
        self.bi = self._batch_of(self.fb)
        i0 = t.value(f"arith.muli {t.value(f'arith.remui {task}, {q_blocks} : index')}, {bq} : index", "i0")
        i1 = t.value(f"arith.minui {t.value(f'arith.addi {i0}, {bq} : index')}, {self.sq} : index", "i1")
        self.i0 = i0
        self.last = t.value(f"arith.subi {i1}, {self.c1} : index", "last")
        self._start()
        j0 = t.fresh("j0")
        self.t.open(f"scf.for {j0} = {self.c0} to {self.skv} step {t.const(p.bkv)}")
        self.j0 = j0
        self.kb = t.value(f"arith.divui {j0}, {t.const(p.bkv)} : index", "kb")
        self.nkv = t.value(f"arith.minui {t.value(f'arith.subi {self.skv}, {j0} : index')}, {t.const(p.bkv)} : index",
                           "nkv")
        self._scores()
        self._softmax()
        self._values()
        self.t.close()
        self._finish(i1)
        self.t.close()
        self.t.close()

    def _row(self, local: str) -> str:
        """The query row of local row ``local``: rows past the block's end repeat its last row."""
        t = self.t
        return t.value(f"arith.minui {t.value(f'arith.addi {self.i0}, {local} : index')}, {self.last} : index", "g")

    def _start(self) -> None:
        p, t = self.plan, self.t
        r = t.fresh("r")
        self.t.open(f"scf.for {r} = {self.c0} to {t.const(p.bq)} step {self.c1}")
        t.add(f"memref.store {self._f(-math.inf)}, {self.m}[{self.w}, {r}] : {self.row_type}")
        t.add(f"memref.store {self._f(0.0)}, {self.l}[{self.w}, {r}] : {self.row_type}")
        zero = self._splat(0.0)
        for e in range(0, p.value_dim, p.lanes):
            t.add(f"vector.store {zero}, {self.o}[{self.w}, {r}, {t.const(e)}] : {self.o_type}, {self.vec}")
        self.t.close()

    def _block_product(self, rows: list[str], load_a, load_b, steps: str, init: list[str]) -> list[str]:
        """RM x RN accumulators: ``acc[r][v] += a(r, step) * b(step)[v]`` over ``steps``."""
        p, t = self.plan, self.t
        nv = p.rn // p.lanes
        types = ", ".join([self.vec] * (len(rows) * nv))
        step, acc, out = t.fresh("kk"), [t.fresh("acc") for _ in range(len(rows) * nv)], t.fresh("out")
        iter_args = ", ".join(f"{a} = {i}" for a, i in zip(acc, init, strict=True))
        t.add(f"{out}:{len(acc)} = scf.for {step} = {self.c0} to {steps} step {self.c1} "
              f"iter_args({iter_args}) -> ({types}) {{")
        t.depth += 1
        b = load_b(step)
        updated = []
        for r, row in enumerate(rows):
            broadcast = t.value(f"vector.broadcast {load_a(row, step)} : {F32} to {self.vec}", "bc")
            for v in range(nv):
                updated.append(t.value(f"vector.fma {broadcast}, {b[v]}, {acc[r * nv + v]} : {self.vec}", "f"))
        t.add(f"scf.yield {', '.join(updated)} : {types}")
        self.t.close()
        return [f"{out}#{i}" for i in range(len(acc))]

    def _scores_direct(self) -> None:
        """S = Q_blk K_blk^T row by row, each score a dot product of a query row and a key row (vectors along
        the head dimension, summed across at the end)."""
        p, t = self.plan, self.t
        r, c = t.fresh("r"), t.fresh("kc")
        self.t.open(f"scf.for {r} = {self.c0} to {t.const(p.bq)} step {self.c1}")
        row = self._row(r)
        offsets = [t.const(d) for d in range(0, p.head_dim - p.head_dim % p.lanes, p.lanes)]
        query = [t.value(f"vector.load {self.q}[{', '.join([*self.bi, row, o])}] : {self.dyn}, {self.vec}", "qv")
                 for o in offsets]
        self.t.open(f"scf.for {c} = {self.c0} to {self.nkv} step {self.c1}")
        j = t.value(f"arith.addi {self.j0}, {c} : index", "j")
        total = None
        for o, x in zip(offsets, query, strict=True):
            key = t.value(f"vector.load {self.k}[{', '.join([*self.bi, j, o])}] : {self.dyn}, {self.vec}", "kv")
            total = (t.value(f"arith.mulf {x}, {key} : {self.vec}", "dp") if total is None
                     else t.value(f"vector.fma {x}, {key}, {total} : {self.vec}", "dp"))
        score = (t.value(f"vector.reduction <add>, {total} : {self.vec} into {F32}", "sc") if total is not None
                 else self._f(0.0))
        for d in range(len(offsets) * p.lanes, p.head_dim):  # a head size that is not a multiple of the lanes
            index = t.const(d)
            x = t.value(f"memref.load {self.q}[{', '.join([*self.bi, row, index])}] : {self.dyn}", "qs")
            y = t.value(f"memref.load {self.k}[{', '.join([*self.bi, j, index])}] : {self.dyn}", "ks")
            score = t.value(f"math.fma {x}, {y}, {score} : {F32}", "sc")
        t.add(f"memref.store {score}, {self.s}[{self.w}, {r}, {c}] : {self.s_type}")
        self.t.close()
        self.t.close()

    def _scores(self) -> None:
        """S = Q_blk K_blk^T, in RM x RN blocks over the head dimension."""
        p, t = self.plan, self.t
        if p.direct_scores:
            self._scores_direct()
            return
        nv = p.rn // p.lanes
        r0, c0 = t.fresh("r0"), t.fresh("col")
        self.t.open(f"scf.for {r0} = {self.c0} to {t.const(p.bq)} step {t.const(p.rm)}")
        locals_ = [r0] + [t.value(f"arith.addi {r0}, {t.const(r)} : index", "lr") for r in range(1, p.rm)]
        rows = [self._row(local) for local in locals_]
        self.t.open(f"scf.for {c0} = {self.c0} to {t.const(p.bkv)} step {t.const(p.rn)}")
        columns = [c0] + [t.value(f"arith.addi {c0}, {t.const(v * p.lanes)} : index", "jc") for v in range(1, nv)]
        zero = self._splat(0.0)

        def load_q(row: str, d: str) -> str:
            return t.value(f"memref.load {self.q}[{', '.join([*self.bi, row, d])}] : {self.dyn}", "qs")

        def load_kt(d: str) -> list[str]:
            return [t.value(f"vector.load {self.kt}[{self.fb}, {self.kb}, {d}, {col}] : {self.kt_type}, {self.vec}",
                            "kt") for col in columns]

        acc = self._block_product(rows, load_q, load_kt, t.const(p.head_dim), [zero] * (p.rm * nv))
        for r, local in enumerate(locals_):
            for v in range(nv):
                col = t.value(f"arith.addi {c0}, {t.const(v * p.lanes)} : index", "sc") if v else c0
                t.add(f"vector.store {acc[r * nv + v]}, {self.s}[{self.w}, {local}, {col}] : {self.s_type}, "
                      f"{self.vec}")
        self.t.close()
        self.t.close()

    def _softmax(self) -> None:
        """Per row of S: the new running maximum, P = exp((S - m') c) in place of S, l and alpha."""
        p, t, vec = self.plan, self.t, self.vec
        r = t.fresh("r")
        self.t.open(f"scf.for {r} = {self.c0} to {t.const(p.bq)} step {self.c1}")
        # Columns past the end of K weigh nothing.
        tail = t.fresh("tail")
        self.t.open(f"scf.for {tail} = {self.nkv} to {t.const(p.bkv)} step {self.c1}")
        t.add(f"memref.store {self._f(-math.inf)}, {self.s}[{self.w}, {r}, {tail}] : {self.s_type}")
        self.t.close()
        offsets = [t.const(c) for c in range(0, p.bkv, p.lanes)]
        scores = [t.value(f"vector.load {self.s}[{self.w}, {r}, {o}] : {self.s_type}, {vec}", "sv") for o in offsets]
        # maxnum ignores NaN (one instruction fewer than maximum's NaN propagation); a NaN score still makes
        # its row NaN, through exp.
        top = scores[0]
        for x in scores[1:]:
            top = t.value(f"arith.maxnumf {top}, {x} : {vec}", "mx")
        top = t.value(f"vector.reduction <maxnumf>, {top} : {vec} into {F32}", "mx")
        old = t.value(f"memref.load {self.m}[{self.w}, {r}] : {self.row_type}", "mo")
        new = t.value(f"arith.maximumf {old}, {top} : {F32}", "mn")
        new_vec = t.value(f"vector.broadcast {new} : {F32} to {vec}", "mv")
        old_vec = t.value(f"vector.broadcast {old} : {F32} to {vec}", "mo")
        scale_vec = self._splat(p.scale)
        gap = t.value(f"arith.mulf {t.value(f'arith.subf {old_vec}, {new_vec} : {vec}')}, {scale_vec} : {vec}", "gap")
        alpha = t.value(f"vector.extract {self.exp(gap)}[0] : {F32} from {vec}", "al")
        total = None
        for o, x in zip(offsets, scores, strict=True):
            shifted = t.value(f"arith.mulf {t.value(f'arith.subf {x}, {new_vec} : {vec}')}, {scale_vec} : {vec}", "z")
            weight = self.exp(shifted)
            t.add(f"vector.store {weight}, {self.s}[{self.w}, {r}, {o}] : {self.s_type}, {vec}")
            total = weight if total is None else t.value(f"arith.addf {total}, {weight} : {vec}", "sum")
        row_sum = t.value(f"vector.reduction <add>, {total} : {vec} into {F32}", "rs")
        before = t.value(f"memref.load {self.l}[{self.w}, {r}] : {self.row_type}", "lo")
        after = t.value(f"arith.addf {t.value(f'arith.mulf {before}, {alpha} : {F32}')}, {row_sum} : {F32}", "ln")
        t.add(f"memref.store {after}, {self.l}[{self.w}, {r}] : {self.row_type}")
        t.add(f"memref.store {new}, {self.m}[{self.w}, {r}] : {self.row_type}")
        t.add(f"memref.store {alpha}, {self.alpha}[{self.w}, {r}] : {self.row_type}")
        self.t.close()

    def _values(self) -> None:
        """O = alpha O + P V_blk, in RM x RN blocks over the block's rows of V."""
        p, t = self.plan, self.t
        nv = p.rn // p.lanes
        r0, e0 = t.fresh("r0"), t.fresh("e0")
        self.t.open(f"scf.for {r0} = {self.c0} to {t.const(p.bq)} step {t.const(p.rm)}")
        locals_ = [r0] + [t.value(f"arith.addi {r0}, {t.const(r)} : index", "lr") for r in range(1, p.rm)]
        self.t.open(f"scf.for {e0} = {self.c0} to {t.const(p.value_dim)} step {t.const(p.rn)}")
        columns = [e0] + [t.value(f"arith.addi {e0}, {t.const(v * p.lanes)} : index", "ec") for v in range(1, nv)]
        init = []
        for local in locals_:
            alpha = t.value(f"memref.load {self.alpha}[{self.w}, {local}] : {self.row_type}", "al")
            alpha = t.value(f"vector.broadcast {alpha} : {F32} to {self.vec}", "av")
            for col in columns:
                acc = t.value(f"vector.load {self.o}[{self.w}, {local}, {col}] : {self.o_type}, {self.vec}", "ov")
                init.append(t.value(f"arith.mulf {acc}, {alpha} : {self.vec}", "ov"))

        def load_p(local: str, c: str) -> str:
            return t.value(f"memref.load {self.s}[{self.w}, {local}, {c}] : {self.s_type}", "ps")

        def load_v(c: str) -> list[str]:
            j = t.value(f"arith.addi {self.j0}, {c} : index", "j")
            return [t.value(f"vector.load {self.v}[{', '.join([*self.bi, j, col])}] : {self.dyn}, {self.vec}", "vv")
                    for col in columns]

        acc = self._block_product(locals_, load_p, load_v, self.nkv, init)
        for r, local in enumerate(locals_):
            for v, col in enumerate(columns):
                t.add(f"vector.store {acc[r * nv + v]}, {self.o}[{self.w}, {local}, {col}] : {self.o_type}, "
                      f"{self.vec}")
        self.t.close()
        self.t.close()

    def _finish(self, i1: str) -> None:
        """out = O / l for the block's rows."""
        p, t = self.plan, self.t
        count = t.value(f"arith.subi {i1}, {self.i0} : index", "rows")
        r = t.fresh("r")
        self.t.open(f"scf.for {r} = {self.c0} to {count} step {self.c1}")
        row = t.value(f"arith.addi {self.i0}, {r} : index", "g")
        total = t.value(f"memref.load {self.l}[{self.w}, {r}] : {self.row_type}", "l")
        total = t.value(f"vector.broadcast {total} : {F32} to {self.vec}", "lv")
        for e in range(0, p.value_dim, p.lanes):
            x = t.value(f"vector.load {self.o}[{self.w}, {r}, {t.const(e)}] : {self.o_type}, {self.vec}", "ov")
            y = t.value(f"arith.divf {x}, {total} : {self.vec}", "y")
            t.add(f"vector.store {y}, {self.out}[{', '.join([*self.bi, row, t.const(e)])}] : {self.dyn}, {self.vec}")
        self.t.close()


def attention_text(plan: AttentionPlan) -> str:
    """The private ``func.func @attention(q, k, v)`` of ``plan``, on tensors at its boundary."""
    return _Attention(plan).text()
