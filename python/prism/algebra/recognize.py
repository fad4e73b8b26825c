"""Fused patterns recognized as queries over a saturated e-graph, in one canonical form.

The host's fused kernels match one spelling of their op chain. The laws of
:mod:`prism.algebra.laws` (the ``normal`` ruleset above all) put every
equivalent spelling of a pattern in the same e-classes as its canonical
spelling, so a query need only look for the canonical form: each match is
a choice of e-nodes (e-class -> :class:`~prism.algebra.egraph.Node`) that
spells it, which exploration pins, and which :mod:`prism.algebra.to_mlir`
writes as the chain the host's matcher takes.

Attention's canonical form (``r`` the rank, every reduction and broadcast
along the last axis ``r - 1``)::

    s = matmul(q, transpose(k))
    e = exp(mul(sub(s, broadcast(reduce_max(s), n)), splat c))     c > 0; or exp(sub(...)) for c = 1
    o = div(matmul(e, v), broadcast(reduce_sum(e), dv))

where ``s`` and ``e`` are read by the chain alone (twice each) and every
other intermediate once; the value size ``dv`` is a multiple of the
kernel's narrowest vector. to_mlir writes ``s`` as one contraction that
reads ``k`` through a transposed map (:func:`transposed_products`), which
is how the host's attention matcher takes K.

RMSNorm's row scale, canonical form (``x`` of rank ``r`` >= 2, the sum
along its last axis ``r - 1``; ``c`` and ``eps`` finite, ``c > 0``,
``eps >= 0``)::

    rsqrt(add(mul(reduce_sum(mul(x, x)), splat c), splat eps))

one value per row, every intermediate read once. Spellings by
``1/sqrt``, a division by ``sqrt``, a mean by division by ``d``, the
square root taken per element after a broadcast: the laws put each in
these classes. The host runs it as one row kernel (the sum of squares
in a sweep of each row, the rest as scalar ops per row, see
prism.codegen.cpu.rows), joined by the row maps that follow it; to_mlir
writes it first, as a reduction and a map over the rows, so that the
row ops of the normalization stay together.

SwiGLU's gating, canonical form (``g`` and ``u`` products of one shape,
``matmul`` or slices of one)::

    mul(div(g, add(splat 1, exp(neg(g)))), u)

``silu(g) * u`` in every operand order, silu as ``g * sigmoid(g)``,
``g * (1 / (1 + exp(0 - g)))`` or ``g / (exp(-g) + 1)``: the laws put
each in these classes. The host runs it as the epilogue of the products'
GEMM (a dual GEMM where both products read one left operand,
prism.codegen.cpu.epilogue), which is how exploration costs it; to_mlir
writes it as one generic in this order, the spelling that matcher takes.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from prism.algebra.egraph import Graph, Node
from prism.algebra.terms import Term

# The narrowest vectors of the host's attention kernel (prism.search.attention.MIN_LANES): a value size that
# is no multiple of it keeps the chain generic.
_MIN_LANES = 4
# Matches tried per pattern: each is a starting point of the descent.
MAX_MATCHES = 8

Shape = tuple[int, ...]


@dataclass(frozen=True)
class AttentionTerms:
    """One attention in a program of terms: its result, its operands, its scale and the terms it absorbs."""

    root: Term
    q: Term
    k: Term
    v: Term
    scale: float
    inner: frozenset[Term]  # every term of the chain but the root and its operands
    scores: Term  # the product ``q k^T``


def _scale(term: Term) -> tuple[Term, float] | None:
    """(the difference, c) of ``mul(d, splat c)`` with c > 0 finite, or of ``d`` itself (c = 1)."""
    if term.op == "mul" and term.args[1].op == "splat":
        c = term.args[1].attrs[0]
        return (term.args[0], c) if c > 0 and math.isfinite(c) else None
    return term, 1.0


def attention_terms(results: list[Term], uses: dict[Term, int],
                    shape: Callable[[Term], Shape | None], widened: bool = False) -> list[AttentionTerms]:
    """The attentions of canonical form (see the module docstring) among ``results``' subterms; ``uses``
    counts each subterm's uses (prism.algebra.to_mlir.use_counts). With ``widened``, also the chains that read
    narrower Q, K and V through casts to f32 (``cast(transpose(k))`` for K^T) and perhaps round P before its
    product (``cast(cast(e, narrow), f32)``), as a program of bf16 or f16 tensors writes attention in f32: their
    ``q``, ``k`` and ``v`` are then the narrow tensors, and the casts are inner terms."""
    found = []
    for term in uses:
        match = _attention_at(term, uses, shape, widened)
        if match is not None:
            found.append(match)
    return found


def _widening(term: Term) -> Term | None:
    """``x`` of ``cast(x, "f32")``; None for any other term."""
    return term.args[0] if term.op == "cast" and term.attrs == ("f32",) else None


def _attention_at(root: Term, uses: dict[Term, int], shape: Callable[[Term], Shape | None],
                  widened: bool = False) -> AttentionTerms | None:
    if root.op != "div" or root.args[0].op != "matmul" or root.args[1].op != "broadcast":
        return None
    product, spread = root.args
    out = shape(root)
    if out is None or len(out) < 2 or out[-1] % _MIN_LANES:
        return None
    last = len(out) - 1
    e, v = product.args
    casts: set[Term] = set()  # the widened chain's casts on its way
    if widened:
        if (rounded := _widening(e)) is not None and rounded.op == "cast":  # P rounded before P V
            casts |= {e, rounded}
            e = rounded.args[0]
        if (narrow := _widening(v)) is not None:
            casts.add(v)
            v = narrow
    sums = spread.args[0]
    if spread.attrs[0] != last or sums.op != "reduce_sum" or sums.attrs != (last,) or sums.args[0] != e:
        return None
    if e.op != "exp" or (scaled := _scale(e.args[0])) is None:
        return None
    difference, c = scaled
    if difference.op != "sub" or difference.args[1].op != "broadcast" or difference.args[1].attrs[0] != last:
        return None
    s, row = difference.args[0], difference.args[1].args[0]
    if row.op != "reduce_max" or row.attrs != (last,) or row.args[0] != s:
        return None
    if s.op != "matmul":
        return None
    q, k_read = s.args
    if widened:
        if (narrow := _widening(q)) is not None:
            casts.add(q)
            q = narrow
        if (transposed := _widening(k_read)) is not None:
            casts.add(k_read)
            k_read = transposed
    if k_read.op != "transpose":
        return None
    twice = {s, e}
    once = {product, spread, sums, difference, difference.args[1], row, k_read} | casts | (
        {e.args[0]} if e.args[0] is not difference else set())
    if any(uses.get(t) != 2 for t in twice) or any(uses.get(t) != 1 for t in once):
        return None
    return AttentionTerms(root, q, k_read.args[0], v, c, frozenset(twice | once), s)


@dataclass(frozen=True)
class RowScaleTerms:
    """One RMSNorm row scale in a program of terms: its result (the rsqrt), the rows ``x`` and the terms it
    absorbs."""

    root: Term
    x: Term
    inner: frozenset[Term]  # the sum of squares, the mean and the shifted mean


def row_scale_terms(results: list[Term], uses: dict[Term, int],
                    shape: Callable[[Term], Shape | None]) -> list[RowScaleTerms]:
    """The RMSNorm row scales of canonical form (see the module docstring) among ``results``' subterms, in the
    order of ``uses``."""
    found = []
    for term in uses:
        match = _row_scale_at(term, uses, shape)
        if match is not None:
            found.append(match)
    return found


def _row_scale_at(root: Term, uses: dict[Term, int], shape: Callable[[Term], Shape | None]) -> RowScaleTerms | None:
    if root.op != "rsqrt" or root.args[0].op != "add" or root.args[0].args[1].op != "splat":
        return None
    shifted = root.args[0]
    mean = shifted.args[0]
    if not _eps(shifted.args[1].attrs[0]) or mean.op != "mul" or not _mean_factor(_constant(mean.args[1])):
        return None
    sums = mean.args[0]
    if _constant(mean.args[1]) is None:
        return None
    if sums.op != "reduce_sum" or sums.args[0].op != "mul" or sums.args[0].args[0] != sums.args[0].args[1]:
        return None
    square = sums.args[0]
    rows = shape(square.args[0])
    if rows is None or len(rows) < 2 or sums.attrs != (len(rows) - 1,):
        return None
    inner = {shifted, mean, sums, square}
    if any(uses.get(t) != 1 for t in inner):
        return None
    return RowScaleTerms(root, square.args[0], frozenset(inner))


def _eps(value: float) -> bool:
    return math.isfinite(value) and value >= 0


def _mean_factor(value: float | None) -> bool:
    return value is not None and math.isfinite(value) and value > 0


_CONSTANT_OPS: dict[str, Callable[[float, float], float]] = {
    "mul": lambda a, b: a * b, "div": lambda a, b: a / b if b else math.nan}


def _constant(term: Term) -> float | None:
    """The value of a term of constants alone (a splat, or a product or quotient of such terms), else None:
    the laws write ``x / d`` as ``x * (1 / d)``."""
    if term.op == "splat":
        return term.attrs[0]
    if term.op in _CONSTANT_OPS:
        a, b = (_constant(arg) for arg in term.args)
        return None if a is None or b is None else _CONSTANT_OPS[term.op](a, b)
    return None


@dataclass(frozen=True)
class GatingTerms:
    """One SwiGLU gating in a program of terms: its result, the gate and up products, the terms it absorbs."""

    root: Term
    gate: Term
    up: Term
    inner: frozenset[Term]  # silu(g), its denominator, exp(-g) and -g


def gating_terms(results: list[Term], uses: dict[Term, int],
                 shape: Callable[[Term], Shape | None]) -> list[GatingTerms]:
    """The SwiGLU gatings of canonical form (see the module docstring) among ``results``' subterms."""
    found = []
    for term in uses:
        match = _gating_at(term, uses, shape)
        if match is not None:
            found.append(match)
    return found


def _product(term: Term) -> bool:
    return term.op == "matmul" or (term.op == "slice_" and term.args[0].op == "matmul")


def _gating_at(root: Term, uses: dict[Term, int], shape: Callable[[Term], Shape | None]) -> GatingTerms | None:
    if root.op != "mul" or root.args[0].op != "div":
        return None
    silu, up = root.args
    gate, den = silu.args
    if den.op != "add" or den.args[0].op != "splat" or den.args[0].attrs[0] != 1.0 or den.args[1].op != "exp":
        return None
    negated = den.args[1].args[0]
    if negated.op != "neg" or negated.args[0] != gate or not _product(gate) or not _product(up):
        return None
    if shape(gate) is None or shape(gate) != shape(up):
        return None
    inner = {silu, den, den.args[1], negated}
    if any(uses.get(t) != 1 for t in inner) or uses.get(gate) != 2:
        return None
    return GatingTerms(root, gate, up, frozenset(inner))


def transposed_products(results: list[Term], uses: dict[Term, int],
                        shape: Callable[[Term], Shape | None]) -> frozenset[Term]:
    """The products that to_mlir writes as one contraction reading their transposed right operand through
    its map: the scores of each recognized attention."""
    return frozenset(match.scores for match in attention_terms(results, uses, shape, widened=True))


# ---------------------------------------------------------------------------------------------------------------
# Queries over the e-graph


def _nodes(graph: Graph, cls: int, op: str) -> Iterator[Node]:
    return (node for node in graph.classes.get(cls, ()) if node.op == op)


def _splat_value(graph: Graph, cls: int) -> float | None:
    return next((node.attrs[0] for node in _nodes(graph, cls, "splat")), None)


def _matches(graph: Graph, op: str,
             spell: Callable[[Graph, int, Node], Iterator[dict[int, Node]]]) -> list[dict[int, Node]]:
    """The choices ``spell`` finds from each e-node ``op`` of each e-class, in e-class order, at most
    MAX_MATCHES."""
    found: list[dict[int, Node]] = []
    for cls in sorted(graph.classes):
        for root in _nodes(graph, cls, op):
            for choice in spell(graph, cls, root):
                found.append(choice)
                if len(found) >= MAX_MATCHES:
                    return found
    return found


def attention_choices(graph: Graph) -> list[dict[int, Node]]:
    """Choices of e-nodes that spell an attention in canonical form (at most MAX_MATCHES), in a deterministic
    order: the e-classes of its chain, each with the e-node of the canonical spelling. Its operands' e-classes
    are left to extraction."""
    return _matches(graph, "div", _attention_from)


def _attention_from(graph: Graph, cls: int, root: Node) -> Iterator[dict[int, Node]]:
    out = graph.shapes.get(cls)
    if out is None or len(out) < 2 or out[-1] % _MIN_LANES:
        return
    last = len(out) - 1
    o_cls, b_cls = root.children
    for spread in _nodes(graph, b_cls, "broadcast"):
        if spread.attrs[0] != last:
            continue
        (l_cls,) = spread.children
        for product in _nodes(graph, o_cls, "matmul"):
            e_cls, _ = product.children
            for sums in _nodes(graph, l_cls, "reduce_sum"):
                if sums.children != (e_cls,) or sums.attrs != (last,):
                    continue
                chain = {cls: root, b_cls: spread, o_cls: product, l_cls: sums}
                for rest in _exponent(graph, e_cls, last):
                    if not set(rest) & set(chain):
                        yield {**chain, **rest}


def _exponent(graph: Graph, e_cls: int, last: int) -> Iterator[dict[int, Node]]:
    """The canonical spellings of ``exp((s - max(s)) c)`` in e-class ``e_cls``."""
    for exp in _nodes(graph, e_cls, "exp"):
        (x_cls,) = exp.children
        scalings = [(node, node.children[0]) for node in _nodes(graph, x_cls, "mul")
                    if (c := _splat_value(graph, node.children[1])) is not None and c > 0 and math.isfinite(c)]
        for scaling, d_cls in [*scalings, (None, x_cls)]:
            for difference in _nodes(graph, d_cls, "sub"):
                s_cls, bm_cls = difference.children
                for rest in _shifted_scores(graph, s_cls, bm_cls, last):
                    chain = {e_cls: exp, d_cls: difference, **rest}
                    if scaling is not None:
                        c_cls = scaling.children[1]
                        chain.update({x_cls: scaling, c_cls: next(_nodes(graph, c_cls, "splat"))})
                    if len(chain) == len(rest) + 2 + 2 * (scaling is not None):  # no e-class twice
                        yield chain


def _shifted_scores(graph: Graph, s_cls: int, bm_cls: int, last: int) -> Iterator[dict[int, Node]]:
    """``s = matmul(q, transpose(k))`` in ``s_cls`` and ``broadcast(reduce_max(s))`` in ``bm_cls``."""
    for spread in _nodes(graph, bm_cls, "broadcast"):
        (m_cls,) = spread.children
        if spread.attrs[0] != last:
            continue
        for row in _nodes(graph, m_cls, "reduce_max"):
            if row.children != (s_cls,) or row.attrs != (last,):
                continue
            for scores in _nodes(graph, s_cls, "matmul"):
                q_cls, t_cls = scores.children
                for transpose in _nodes(graph, t_cls, "transpose"):
                    chain = {bm_cls: spread, m_cls: row, s_cls: scores, t_cls: transpose}
                    if len(chain) == 4 and q_cls not in chain and transpose.children[0] not in chain:
                        yield chain


def row_scale_choices(graph: Graph) -> list[dict[int, Node]]:
    """Choices of e-nodes that spell an RMSNorm row scale in canonical form (at most MAX_MATCHES), in a
    deterministic order: the e-classes of its chain, each with the e-node of the canonical spelling, the rows
    ``x`` left to extraction."""
    return _matches(graph, "rsqrt", _row_scale_from)


def _row_scale_from(graph: Graph, cls: int, root: Node) -> Iterator[dict[int, Node]]:
    (a_cls,) = root.children
    for shifted in _nodes(graph, a_cls, "add"):
        m_cls, e_cls = shifted.children
        if (eps := _splat_value(graph, e_cls)) is None or not _eps(eps):
            continue
        for mean in _nodes(graph, m_cls, "mul"):
            s_cls, c_cls = mean.children
            c, spelled = _constant_choice(graph, c_cls, 2)
            if not _mean_factor(c):
                continue
            for sums in _nodes(graph, s_cls, "reduce_sum"):
                (q_cls,) = sums.children
                for square in _nodes(graph, q_cls, "mul"):
                    x_cls = square.children[0]
                    rows = graph.shapes.get(x_cls)
                    if square.children[1] != x_cls or rows is None or len(rows) < 2 \
                            or sums.attrs != (len(rows) - 1,):
                        continue
                    chain = {cls: root, a_cls: shifted, m_cls: mean, s_cls: sums, q_cls: square}
                    if len(chain) == 5 and x_cls not in chain and not ({e_cls, *spelled} & set(chain)):
                        yield {**chain, **spelled, e_cls: next(_nodes(graph, e_cls, "splat"))}


def _constant_choice(graph: Graph, cls: int, depth: int) -> tuple[float | None, dict[int, Node]]:
    """The value of e-class ``cls`` spelled by constants alone (a splat, or within ``depth`` products or
    quotients of such e-classes), and the e-nodes that spell it; (None, {}) when there is none."""
    splat = next(_nodes(graph, cls, "splat"), None)
    if splat is not None:
        return splat.attrs[0], {cls: splat}
    if depth == 0:
        return None, {}
    for op, apply in _CONSTANT_OPS.items():
        for node in _nodes(graph, cls, op):
            if cls in node.children:
                continue
            (a, left), (b, right) = (_constant_choice(graph, c, depth - 1) for c in node.children)
            if a is not None and b is not None:
                return apply(a, b), {**left, **right, cls: node}
    return None, {}


def gating_choices(graph: Graph) -> list[dict[int, Node]]:
    """Choices of e-nodes that spell a SwiGLU gating in canonical form (at most MAX_MATCHES), in a
    deterministic order: the e-classes of its chain, each with its canonical e-node, the gate and up products
    left to extraction."""
    return _matches(graph, "mul", _gating_from)


def _product_class(graph: Graph, cls: int) -> bool:
    return any(node.op == "matmul" or (node.op == "slice_" and any(
        n.op == "matmul" for n in graph.classes.get(node.children[0], ()))) for node in graph.classes.get(cls, ()))


def _gating_from(graph: Graph, cls: int, root: Node) -> Iterator[dict[int, Node]]:
    s_cls, u_cls = root.children
    shape = graph.shapes.get(cls)
    if shape is None or graph.shapes.get(u_cls) != shape or not _product_class(graph, u_cls):
        return
    for silu in _nodes(graph, s_cls, "div"):
        g_cls, d_cls = silu.children
        if graph.shapes.get(g_cls) != shape or not _product_class(graph, g_cls):
            continue
        for den in _nodes(graph, d_cls, "add"):
            one_cls, e_cls = den.children
            if _splat_value(graph, one_cls) != 1.0:
                continue
            for exp in _nodes(graph, e_cls, "exp"):
                (n_cls,) = exp.children
                for negated in _nodes(graph, n_cls, "neg"):
                    chain = {cls: root, s_cls: silu, d_cls: den, e_cls: exp, n_cls: negated}
                    if negated.children == (g_cls,) and len(chain) == 5 and not {g_cls, u_cls, one_cls} & set(chain):
                        yield {**chain, one_cls: next(_nodes(graph, one_cls, "splat"))}


__all__ = ["MAX_MATCHES", "AttentionTerms", "GatingTerms", "RowScaleTerms", "attention_choices", "attention_terms",
           "gating_choices", "gating_terms", "row_scale_choices", "row_scale_terms", "transposed_products"]
