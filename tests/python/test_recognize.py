"""Recognition of fused patterns over the saturated e-graph (prism.algebra.recognize).

The normal laws make the common spellings of a pattern meet its canonical form; the query finds the canonical
form; to_mlir writes it as the chain the host's attention matcher takes.
"""

from __future__ import annotations

from prism.algebra import recognize, to_mlir
from prism.algebra.egraph import Budget, owned_egraph, prove, read_graph, saturate
from prism.algebra.terms import A, Program, to_egglog

Q, K, V = A.arg(0), A.arg(1), A.arg(2)
SHAPES = [(2, 6, 8), (2, 10, 8), (2, 10, 8)]


def canonical(scale: float = 0.5) -> object:
    s = A.matmul(Q, A.transpose(K))
    e = A.exp(A.mul(A.sub(s, A.broadcast(A.reduce_max(s, 2), 2, 10)), A.splat(scale)))
    return A.div(A.matmul(e, V), A.broadcast(A.reduce_sum(e, 2), 2, 8))


def scale_in_max(scale: float = 0.5) -> object:
    s = A.mul(A.matmul(Q, A.transpose(K)), A.splat(scale))
    e = A.exp(A.sub(s, A.broadcast(A.reduce_max(s, 2), 2, 10)))
    return A.div(A.matmul(e, V), A.broadcast(A.reduce_sum(e, 2), 2, 8))


def reciprocal_before_pv(scale: float = 0.5) -> object:
    s = A.matmul(Q, A.transpose(A.mul(K, A.splat(scale))))
    e = A.exp(A.sub(s, A.broadcast(A.reduce_max(s, 2), 2, 10)))
    r = A.div(A.splat(1.0), A.reduce_sum(e, 2))
    return A.matmul(A.mul(e, A.broadcast(r, 2, 10)), V)


def proved(left: object, right: object, shapes: list[tuple[int, ...]]) -> bool:
    return prove(Program("f", shapes, [left]), Program("f", shapes, [right]), Budget(seconds=10)).proved


def test_spellings_of_attention_meet_the_canonical_form() -> None:
    assert proved(scale_in_max(), canonical(), SHAPES)
    assert proved(reciprocal_before_pv(), canonical(), SHAPES)


def test_another_scale_does_not_meet() -> None:
    assert not proved(scale_in_max(0.5), canonical(0.25), SHAPES)


def test_reciprocal_product_meets_division_after_the_product() -> None:
    e, sums = A.exp(A.arg(0)), A.arg(1)
    left = A.matmul(A.mul(e, A.broadcast(A.div(A.splat(1.0), A.exp(sums)), 1, 5)), A.arg(2))
    right = A.div(A.matmul(e, A.arg(2)), A.broadcast(A.exp(sums), 1, 4))
    assert proved(left, right, [(6, 5), (6,), (5, 4)])
    assert not proved(left, A.mul(A.matmul(e, A.arg(2)), A.broadcast(A.exp(sums), 1, 4)), [(6, 5), (6,), (5, 4)])


def test_silu_spellings_meet() -> None:
    g = A.matmul(A.arg(0), A.arg(1))
    sigmoid = A.div(A.splat(1.0), A.add(A.splat(1.0), A.exp(A.sub(A.splat(0.0), g))))
    quotient = A.div(g, A.add(A.exp(A.neg(g)), A.splat(1.0)))
    assert proved(A.mul(g, sigmoid), quotient, [(4, 6), (6, 8)])
    assert not proved(A.mul(g, sigmoid), A.mul(g, quotient), [(4, 6), (6, 8)])


def test_rsqrt_meets_one_over_sqrt_product() -> None:
    x, r = A.arg(0), A.broadcast(A.add(A.reduce_sum(A.mul(A.arg(0), A.arg(0)), 1), A.splat(1e-6)), 1, 6)
    assert proved(A.mul(x, A.rsqrt(r)), A.mul(x, A.div(A.splat(1.0), A.sqrt(r))), [(4, 6)])
    assert not proved(A.mul(x, A.rsqrt(r)), A.mul(x, A.sqrt(r)), [(4, 6)])


def _graph(term: object, shapes: list[tuple[int, ...]]):
    with owned_egraph() as egraph:
        Program("f", shapes, [term]).register_shapes(egraph)
        egraph.let("result0", to_egglog(term, {}))
        saturate(egraph, Budget(seconds=10), ("linear", "elementwise", "scaling", "normal"))
        return read_graph(egraph)


def test_the_query_finds_the_canonical_form_of_another_spelling() -> None:
    graph = _graph(scale_in_max(), SHAPES)
    choices = recognize.attention_choices(graph)
    assert choices
    assert all(graph.lets["result0"] in choice and choice[graph.lets["result0"]].op == "div" for choice in choices)


def test_no_attention_without_a_row_maximum() -> None:
    s = A.matmul(Q, A.transpose(K))
    e = A.exp(s)
    term = A.div(A.matmul(e, V), A.broadcast(A.reduce_sum(e, 2), 2, 8))
    assert recognize.attention_choices(_graph(term, SHAPES)) == []


def test_to_mlir_writes_the_scores_reading_k_transposed() -> None:
    text = to_mlir.function_text("f", SHAPES, [canonical()], "f32")
    assert "linalg.transpose" not in text
    assert "affine_map<(a, b, c, d) -> (a, c, d)>" in text


X, GAMMA, W = A.arg(0), A.arg(1), A.arg(2)
RMS_SHAPES = [(4, 8), (8,), (8, 6)]


def row_scale_by_division(eps: float = 1e-5) -> object:
    """1 / sqrt(sum(x*x) / d + eps), one value per row."""
    mean = A.div(A.reduce_sum(A.mul(X, X), 1), A.splat(8.0))
    return A.div(A.splat(1.0), A.sqrt(A.add(mean, A.splat(eps))))


def rmsnorm(scale: object) -> object:
    return A.matmul(A.mul(A.mul(X, A.broadcast(scale, 1, 8)), A.broadcast(GAMMA, 0, 4)), W)


def test_the_query_finds_the_row_scale_of_another_spelling() -> None:
    graph = _graph(rmsnorm(row_scale_by_division()), RMS_SHAPES)
    choices = recognize.row_scale_choices(graph)
    assert choices
    assert all(any(node.op == "rsqrt" for node in choice.values()) for choice in choices)
    assert any(any(node.op == "reduce_sum" and node.attrs == (1,) for node in choice.values()) for choice in choices)


def test_no_row_scale_without_a_sum_of_squares() -> None:
    mean = A.div(A.reduce_sum(A.mul(X, A.exp(X)), 1), A.splat(8.0))
    scale = A.div(A.splat(1.0), A.sqrt(A.add(mean, A.splat(1e-5))))
    assert recognize.row_scale_choices(_graph(rmsnorm(scale), RMS_SHAPES)) == []


def test_row_scale_terms_take_the_mean_as_a_quotient_of_constants() -> None:
    scale = A.rsqrt(A.add(A.mul(A.reduce_sum(A.mul(X, X), 1), A.div(A.splat(1.0), A.splat(8.0))), A.splat(1e-5)))
    results = [rmsnorm(scale)]
    found = recognize.row_scale_terms(results, to_mlir.use_counts(results), to_mlir.Shapes(RMS_SHAPES))
    assert [match.root for match in found] == [scale]
    negative = A.rsqrt(A.add(A.mul(A.reduce_sum(A.mul(X, X), 1), A.splat(-0.125)), A.splat(1e-5)))
    results = [rmsnorm(negative)]
    assert recognize.row_scale_terms(results, to_mlir.use_counts(results), to_mlir.Shapes(RMS_SHAPES)) == []


def test_to_mlir_writes_the_row_scale_before_the_product() -> None:
    scale = A.rsqrt(A.add(A.mul(A.reduce_sum(A.mul(X, X), 1), A.splat(0.125)), A.splat(1e-5)))
    text = to_mlir.function_text("f", RMS_SHAPES, [A.mul(A.matmul(A.mul(X, A.broadcast(GAMMA, 0, 4)), W),
                                                          A.broadcast(scale, 1, 6))], "f32")
    assert text.index("math.rsqrt") < text.index("linalg.matmul")


G, U = A.matmul(A.arg(0), A.arg(1)), A.matmul(A.arg(0), A.arg(2))
GATE_SHAPES = [(4, 6), (6, 8), (6, 8)]


def test_the_query_finds_the_gating_of_another_spelling() -> None:
    sigmoid = A.div(A.splat(1.0), A.add(A.splat(1.0), A.exp(A.sub(A.splat(0.0), G))))
    graph = _graph(A.mul(U, A.mul(G, sigmoid)), GATE_SHAPES)
    choices = recognize.gating_choices(graph)
    assert choices
    root = graph.lets["result0"]
    assert any(root in choice and choice[root].op == "mul" for choice in choices)


def test_no_gating_of_a_gate_that_is_no_product() -> None:
    g = A.add(A.arg(0), A.arg(0))
    silu = A.div(g, A.add(A.splat(1.0), A.exp(A.neg(g))))
    assert recognize.gating_choices(_graph(A.mul(silu, A.add(A.arg(1), A.arg(1))), [(4, 8), (4, 8)])) == []
