"""The laws of elementwise ops through broadcasts, reductions of broadcasts and scalings, slices inside ops and
exact constant folding: each proves a true instance and refuses a false one (wrong axis, constant or operand),
and together they prove RMSNorm's row scale recomputed in a GEMM's epilogue from the broadcast row sums."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pytest
from egglog import eq, ruleset, run
from mlir import ir
from test_algebra import Build, X, Y

import prism
from prism.algebra import laws, ops, terms
from prism.algebra.budget import Budget
from prism.algebra.egraph import Proof, owned_egraph, prove
from prism.algebra.prove import prove_modules
from prism.algebra.terms import Program, translate
from prism.infra.ir import make_context


def numpy_namespace(args: list[np.ndarray]) -> SimpleNamespace:
    """The operators on arrays; a constant (a Python float) fits every shape, broadcast or sliced."""
    def broadcast(a: object, axis: int, size: int) -> object:
        return a if np.ndim(a) == 0 else np.repeat(np.expand_dims(a, axis), size, axis=axis)

    def slice_(a: object, axis: int, offset: int, size: int) -> object:
        return a if np.ndim(a) == 0 else np.take(a, range(offset, offset + size), axis=axis)

    return SimpleNamespace(
        arg=lambda i: args[i], splat=lambda v: v, add=np.add, sub=np.subtract, mul=np.multiply, div=np.divide,
        maximum=np.maximum, neg=np.negative, exp=np.exp, rsqrt=lambda a: 1 / np.sqrt(a), sqrt=np.sqrt,
        reduce_sum=lambda a, axis: a.sum(axis=axis), reduce_max=lambda a, axis: a.max(axis=axis),
        broadcast=broadcast, slice_=slice_)


Case = tuple[list[tuple[int, ...]], Build, Build, Build]  # shapes, left side, a true right side, a false one


def positive(o: SimpleNamespace) -> object:
    """A positive operand (the domain of sqrt and rsqrt, a divisor that is never zero)."""
    return o.exp(Y(o))


def _unary_cases() -> dict[str, Case]:
    cases: dict[str, Case] = {}
    for name in ops.UNARY:
        cases[f"{name}-of-broadcast"] = (
            [(3,), (3,)], lambda o, f=name: getattr(o, f)(o.broadcast(positive(o), 1, 3)),
            lambda o, f=name: o.broadcast(getattr(o, f)(positive(o)), 1, 3),
            lambda o, f=name: o.broadcast(getattr(o, f)(positive(o)), 0, 3))  # wrong axis
        cases[f"slice-of-{name}"] = (
            [(4, 6), (4, 6)], lambda o, f=name: o.slice_(getattr(o, f)(positive(o)), 1, 2, 3),
            lambda o, f=name: getattr(o, f)(o.slice_(positive(o), 1, 2, 3)),
            lambda o, f=name: getattr(o, f)(o.slice_(positive(o), 1, 3, 3)))  # wrong offset
    return cases


def _binary_cases() -> dict[str, Case]:
    cases: dict[str, Case] = {}
    for name in ops.BINARY:
        def g(o: SimpleNamespace, p: object, q: object, f: str = name) -> object:
            return getattr(o, f)(p, q)
        cases[f"{name}-of-broadcasts"] = (
            [(3,), (3,)], lambda o, g=g: g(o, o.broadcast(X(o), 1, 3), o.broadcast(positive(o), 1, 3)),
            lambda o, g=g: o.broadcast(g(o, X(o), positive(o)), 1, 3),
            lambda o, g=g: o.broadcast(g(o, X(o), positive(o)), 0, 3))  # wrong axis
        cases[f"{name}-of-broadcast-and-constant"] = (
            [(3,)], lambda o, g=g: g(o, o.broadcast(X(o), 1, 3), o.splat(2.0)),
            lambda o, g=g: o.broadcast(g(o, X(o), o.splat(2.0)), 1, 3),
            lambda o, g=g: o.broadcast(g(o, X(o), o.splat(3.0)), 1, 3))  # wrong constant
        cases[f"{name}-of-constant-and-broadcast"] = (  # -1 is below every positive operand of maximum
            [(3,), (3,)], lambda o, g=g: g(o, o.splat(-1.0), o.broadcast(positive(o), 1, 3)),
            lambda o, g=g: o.broadcast(g(o, o.splat(-1.0), positive(o)), 1, 3),
            lambda o, g=g: o.broadcast(g(o, o.splat(-1.0), positive(o)), 0, 3))  # wrong axis
        cases[f"slice-of-{name}"] = (
            [(4, 6), (4, 6)], lambda o, g=g: o.slice_(g(o, X(o), positive(o)), 1, 2, 3),
            lambda o, g=g: g(o, o.slice_(X(o), 1, 2, 3), o.slice_(positive(o), 1, 2, 3)),
            lambda o, g=g: g(o, o.slice_(X(o), 1, 2, 3), o.slice_(positive(o), 1, 3, 3)))  # wrong offset
        cases[f"slice-of-{name}-with-constant"] = (
            [(4, 6)], lambda o, g=g: o.slice_(g(o, X(o), o.splat(2.0)), 1, 2, 3),
            lambda o, g=g: g(o, o.slice_(X(o), 1, 2, 3), o.splat(2.0)),
            lambda o, g=g: g(o, o.slice_(X(o), 1, 2, 3), o.splat(3.0)))  # wrong constant
        cases[f"slice-of-{name}-of-constant"] = (
            [(4, 6), (4, 6)], lambda o, g=g: o.slice_(g(o, o.splat(-1.0), positive(o)), 1, 2, 3),
            lambda o, g=g: g(o, o.splat(-1.0), o.slice_(positive(o), 1, 2, 3)),
            lambda o, g=g: g(o, o.splat(-1.0), o.slice_(positive(o), 1, 3, 3)))  # wrong offset
    return cases


# Each op of two constants, with an exact result and with the result zero: (p, q, exact p op q, p and q for zero).
CONSTANTS = {"add": (1.5, 2.25, 3.75, (1.5, -1.5)), "sub": (1.5, 2.25, -0.75, (1.5, 1.5)),
             "mul": (1.5, 2.25, 3.375, (0.0, 2.25)), "div": (2.25, 1.5, 1.5, (0.0, 2.25))}


def _constant_cases() -> dict[str, Case]:
    cases: dict[str, Case] = {}
    for name, (p, q, value, (zp, zq)) in CONSTANTS.items():
        cases[f"{name}-of-constants"] = (
            [(4, 3)], lambda o, f=name, p=p, q=q: o.add(X(o), getattr(o, f)(o.splat(p), o.splat(q))),
            lambda o, v=value: o.add(X(o), o.splat(v)), lambda o, v=value: o.add(X(o), o.splat(v + 1.0)))
        cases[f"{name}-of-constants-to-zero"] = (
            [(4, 3)], lambda o, f=name, p=zp, q=zq: o.mul(X(o), getattr(o, f)(o.splat(p), o.splat(q))),
            lambda o: o.mul(X(o), o.splat(0.0)), lambda o: o.mul(X(o), o.splat(1.0)))
    return cases


def _reduction_cases() -> dict[str, Case]:
    cases: dict[str, Case] = {
        "sum-of-broadcast-along-it": ([(4,)], lambda o: o.reduce_sum(o.broadcast(X(o), 1, 3), 1),
                                      lambda o: o.mul(X(o), o.splat(3.0)), lambda o: o.mul(X(o), o.splat(4.0))),
        "max-of-broadcast-along-it": ([(3,)], lambda o: o.reduce_max(o.broadcast(X(o), 1, 3), 1), X,
                                      lambda o: o.reduce_max(o.broadcast(X(o), 0, 3), 1)),
        "sum-of-constant-scaling": ([(4, 3)], lambda o: o.reduce_sum(o.mul(X(o), o.splat(2.0)), 1),
                                    lambda o: o.mul(o.reduce_sum(X(o), 1), o.splat(2.0)),
                                    lambda o: o.mul(o.reduce_sum(X(o), 1), o.splat(3.0))),
        "sum-of-broadcast-scaling": ([(3, 3), (3,)], lambda o: o.reduce_sum(o.mul(X(o), o.broadcast(Y(o), 1, 3)), 1),
                                     lambda o: o.mul(o.reduce_sum(X(o), 1), Y(o)),
                                     lambda o: o.mul(o.reduce_sum(X(o), 0), Y(o))),
        "max-of-positive-scaling": ([(3, 3)], lambda o: o.reduce_max(o.mul(X(o), o.splat(2.0)), 1),
                                    lambda o: o.mul(o.reduce_max(X(o), 1), o.splat(2.0)),
                                    lambda o: o.mul(o.reduce_max(X(o), 1), o.splat(3.0))),  # wrong constant
    }
    for name in ("sum", "max"):
        def reduce(o: SimpleNamespace, a: object, axis: int, f: str = f"reduce_{name}") -> object:
            return getattr(o, f)(a, axis)
        cases[f"{name}-of-broadcast-before-it"] = (
            [(3, 3)], lambda o, r=reduce: r(o, o.broadcast(X(o), 2, 3), 0),
            lambda o, r=reduce: o.broadcast(r(o, X(o), 0), 1, 3),
            lambda o, r=reduce: o.broadcast(r(o, X(o), 0), 0, 3))  # wrong axis
        cases[f"{name}-of-broadcast-after-it"] = (
            [(3, 3)], lambda o, r=reduce: r(o, o.broadcast(X(o), 0, 3), 2),
            lambda o, r=reduce: o.broadcast(r(o, X(o), 1), 0, 3),
            lambda o, r=reduce: o.broadcast(r(o, X(o), 1), 1, 3))  # wrong axis
        cases[f"slice-of-{name}-before-its-axis"] = (
            [(6, 4)], lambda o, r=reduce: o.slice_(r(o, X(o), 1), 0, 1, 3),
            lambda o, r=reduce: r(o, o.slice_(X(o), 0, 1, 3), 1),
            lambda o, r=reduce: r(o, o.slice_(X(o), 0, 2, 3), 1))  # wrong offset
        cases[f"slice-of-{name}-after-its-axis"] = (
            [(4, 6)], lambda o, r=reduce: o.slice_(r(o, X(o), 0), 0, 1, 3),
            lambda o, r=reduce: r(o, o.slice_(X(o), 1, 1, 3), 0),
            lambda o, r=reduce: r(o, o.slice_(X(o), 1, 2, 3), 0))  # wrong offset
    return cases


CASES: dict[str, Case] = {
    **_unary_cases(), **_binary_cases(), **_constant_cases(), **_reduction_cases(),
    "slice-of-broadcast-along-it": ([(3,)], lambda o: o.slice_(o.broadcast(X(o), 1, 6), 1, 2, 3),
                                    lambda o: o.broadcast(X(o), 1, 3), lambda o: o.broadcast(X(o), 0, 3)),
    "slice-of-broadcast-before-it": ([(6, 4)], lambda o: o.slice_(o.broadcast(X(o), 2, 3), 0, 1, 3),
                                     lambda o: o.broadcast(o.slice_(X(o), 0, 1, 3), 2, 3),
                                     lambda o: o.broadcast(o.slice_(X(o), 0, 2, 3), 2, 3)),
    # X (3,) to [4, 3, 2] with either nesting; the false side broadcasts the other argument.
    "broadcasts-commute": ([(3,), (3,)], lambda o: o.broadcast(o.broadcast(X(o), 1, 2), 0, 4),
                           lambda o: o.broadcast(o.broadcast(X(o), 0, 4), 2, 2),
                           lambda o: o.broadcast(o.broadcast(Y(o), 0, 4), 2, 2)),
    "slice-of-broadcast-after-it": ([(4, 6)], lambda o: o.slice_(o.broadcast(X(o), 0, 3), 2, 1, 3),
                                    lambda o: o.broadcast(o.slice_(X(o), 1, 1, 3), 0, 3),
                                    lambda o: o.broadcast(o.slice_(X(o), 1, 2, 3), 0, 3)),
}

def attempt(shapes: list[tuple[int, ...]], left: Build, right: Build) -> Proof:
    program = Program("f", list(shapes), [left(terms.A)])
    return prove(program, Program("f", list(shapes), [right(terms.A)]), Budget(seconds=3))


def numerically_equal(shapes: list[tuple[int, ...]], left: Build, right: Build, rng: np.random.Generator) -> bool:
    o = numpy_namespace([rng.standard_normal(shape) for shape in shapes])
    return bool(np.allclose(left(o), right(o), rtol=1e-9, atol=1e-9))


@pytest.mark.parametrize("law", sorted(CASES))
def test_law_proves_a_true_identity(law: str, rng: np.random.Generator) -> None:
    shapes, left, true_right, _ = CASES[law]
    assert numerically_equal(shapes, left, true_right, rng), "the case itself must be an identity"
    proof = attempt(shapes, left, true_right)
    assert proof.proved
    assert law in {name.rstrip("~") for name in proof.laws}, "the case must need its law"


@pytest.mark.parametrize("law", sorted(CASES))
def test_law_does_not_prove_a_false_variant(law: str, rng: np.random.Generator) -> None:
    shapes, left, _, false_right = CASES[law]
    assert not numerically_equal(shapes, left, false_right, rng), "the variant must really differ"
    assert not attempt(shapes, left, false_right).proved


def test_inexact_constants_are_not_folded() -> None:
    """0.1 + 0.2 in float32 is not a float32: the law leaves the sum of constants an op (the program rounds it)."""
    p, q = float(np.float32(0.1)), float(np.float32(0.2))
    assert float(np.float32(p + q)) != p + q
    shapes = [(4, 3)]
    assert not attempt(shapes, lambda o: o.add(X(o), o.add(o.splat(p), o.splat(q))),
                       lambda o: o.add(X(o), o.splat(p + q))).proved


def test_a_maximum_does_not_commute_with_a_negative_scaling() -> None:
    shapes = [(4, 3)]
    assert not attempt(shapes, lambda o: o.reduce_max(o.mul(X(o), o.splat(-2.0)), 1),
                       lambda o: o.mul(o.reduce_max(X(o), 1), o.splat(-2.0))).proved


def _constant_op(op: str, p: float, q: float) -> object:
    text = f"""
func.func @f() -> f32 {{
  %p = arith.constant {p:.9e} : f32
  %q = arith.constant {q:.9e} : f32
  %r = arith.{op} %p, %q : f32
  return %r : f32
}}"""
    module = ir.Module.parse(text, make_context())
    return translate(module.body.operations[0].operation).results[0]


@pytest.mark.parametrize(("op", "p", "q", "folded"), [
    ("addf", 1.5, 2.25, 3.75), ("subf", 1.5, 2.25, -0.75), ("mulf", 1.5, 2.25, 3.375), ("divf", 2.25, 1.5, 1.5),
    ("maximumf", 1.5, 2.25, 2.25), ("divf", 1.0, 3.0, None), ("addf", 0.1, 0.2, None), ("divf", 1.0, 0.0, None),
    ("mulf", 3.0e38, 3.0e38, None)])
def test_translation_folds_only_exact_constants(op: str, p: float, q: float, folded: float | None) -> None:
    term = _constant_op(op, p, q)
    if folded is None:
        assert term.op != "splat"
    else:
        assert term == terms.A.splat(folded)


# RMSNorm before a GEMM: y = (x * broadcast(rsqrt(sum(x*x) / d + eps))) * gamma, then y @ W.
RMSNORM_SIGNATURE = """
#rows = affine_map<(i, j) -> (i, j)>
#row = affine_map<(i, j) -> (i)>
#col = affine_map<(i, j) -> (j)>
#vec = affine_map<(i) -> (i)>
func.func @rmsnorm_matmul(%x: tensor<8x32xf32>, %gamma: tensor<32xf32>, %w: tensor<32x32xf32>) -> tensor<8x32xf32> {
  %zero = arith.constant 0.0 : f32
  %d = arith.constant 32.0 : f32
  %inv_d = arith.constant 3.125e-02 : f32
  %eps = arith.constant 1.0e-06 : f32
  %row_empty = tensor.empty() : tensor<8xf32>
  %row_zero = linalg.fill ins(%zero : f32) outs(%row_empty : tensor<8xf32>) -> tensor<8xf32>
  %e = tensor.empty() : tensor<8x32xf32>
  %out_zero = linalg.fill ins(%zero : f32) outs(%e : tensor<8x32xf32>) -> tensor<8x32xf32>
"""


def row_sums(square: bool = True) -> str:
    """%sum_sq: the row sums of x*x (of x, without ``square``)."""
    term = "%sq = arith.mulf %v, %v : f32\n    %sum = arith.addf %acc, %sq : f32" if square else \
        "%sum = arith.addf %acc, %v : f32"
    return f"""  %sum_sq = linalg.generic {{indexing_maps = [#rows, #row], iterator_types = ["parallel", "reduction"]}}
      ins(%x : tensor<8x32xf32>) outs(%row_zero : tensor<8xf32>) {{
  ^bb0(%v: f32, %acc: f32):
    {term}
    linalg.yield %sum : f32
  }} -> tensor<8xf32>
"""


RMSNORM = RMSNORM_SIGNATURE + row_sums() + """
  %scale = linalg.generic {indexing_maps = [#vec, #vec], iterator_types = ["parallel"]}
      ins(%sum_sq : tensor<8xf32>) outs(%row_empty : tensor<8xf32>) {
  ^bb0(%s: f32, %out: f32):
    %mean = arith.mulf %s, %inv_d : f32
    %shifted = arith.addf %mean, %eps : f32
    %r = math.rsqrt %shifted : f32
    linalg.yield %r : f32
  } -> tensor<8xf32>
  %y = linalg.generic {indexing_maps = [#rows, #row, #col, #rows], iterator_types = ["parallel", "parallel"]}
      ins(%x, %scale, %gamma : tensor<8x32xf32>, tensor<8xf32>, tensor<32xf32>) outs(%e : tensor<8x32xf32>) {
  ^bb0(%v: f32, %s: f32, %g: f32, %o: f32):
    %n = arith.mulf %v, %s : f32
    %scaled = arith.mulf %n, %g : f32
    linalg.yield %scaled : f32
  } -> tensor<8x32xf32>
  %out = linalg.matmul ins(%y, %w : tensor<8x32xf32>, tensor<32x32xf32>) outs(%out_zero : tensor<8x32xf32>)
      -> tensor<8x32xf32>
  return %out : tensor<8x32xf32>
}
"""


def scaled_product(gamma_map: str = "#row") -> str:
    """%product = x @ (W with its rows scaled by gamma; its columns with ``gamma_map="#col"``)."""
    return f"""  %wg = linalg.generic {{indexing_maps = [#rows, {gamma_map}, #rows],
                       iterator_types = ["parallel", "parallel"]}}
      ins(%w, %gamma : tensor<32x32xf32>, tensor<32xf32>) outs(%e_w : tensor<32x32xf32>) {{
  ^bb0(%v: f32, %g: f32, %o: f32):
    %p = arith.mulf %v, %g : f32
    linalg.yield %p : f32
  }} -> tensor<32x32xf32>
  %product = linalg.matmul ins(%x, %wg : tensor<8x32xf32>, tensor<32x32xf32>) outs(%out_zero : tensor<8x32xf32>)
      -> tensor<8x32xf32>
"""


def epilogue_reading_row_sums(mean: str) -> str:
    """Style 1: one generic reads the row sums through a broadcasting map and computes the scale per element."""
    return f"""  %out = linalg.generic {{indexing_maps = [#rows, #row, #rows],
                        iterator_types = ["parallel", "parallel"]}}
      ins(%product, %sum_sq : tensor<8x32xf32>, tensor<8xf32>) outs(%e : tensor<8x32xf32>) {{
  ^bb0(%p: f32, %s: f32, %o: f32):
    {mean}
    %shifted = arith.addf %mean, %eps : f32
    %r = math.rsqrt %shifted : f32
    %v = arith.mulf %p, %r : f32
    linalg.yield %v : f32
  }} -> tensor<8x32xf32>
  return %out : tensor<8x32xf32>
}}
"""


def epilogue_of_broadcast_sums(twice: bool = False) -> str:
    """Style 2: linalg.broadcast makes the row sums a matrix, and named ops on whole tensors finish the scale."""
    sums = "%bsum"
    text = """  %bsum = linalg.broadcast ins(%sum_sq : tensor<8xf32>) outs(%e : tensor<8x32xf32>) dimensions = [1]
  %d_t = linalg.fill ins(%d : f32) outs(%e : tensor<8x32xf32>) -> tensor<8x32xf32>
  %eps_t = linalg.fill ins(%eps : f32) outs(%e : tensor<8x32xf32>) -> tensor<8x32xf32>
"""
    if twice:
        sums = "%once"
        text += """  %once = linalg.div ins(%bsum, %d_t : tensor<8x32xf32>, tensor<8x32xf32>)
      outs(%e : tensor<8x32xf32>) -> tensor<8x32xf32>
"""
    return text + f"""  %mean = linalg.div ins({sums}, %d_t : tensor<8x32xf32>, tensor<8x32xf32>)
      outs(%e : tensor<8x32xf32>) -> tensor<8x32xf32>
  %shifted = linalg.add ins(%mean, %eps_t : tensor<8x32xf32>, tensor<8x32xf32>) outs(%e : tensor<8x32xf32>)
      -> tensor<8x32xf32>
  %r = linalg.rsqrt ins(%shifted : tensor<8x32xf32>) outs(%e : tensor<8x32xf32>) -> tensor<8x32xf32>
  %out = linalg.mul ins(%product, %r : tensor<8x32xf32>, tensor<8x32xf32>) outs(%e : tensor<8x32xf32>)
      -> tensor<8x32xf32>
  return %out : tensor<8x32xf32>
}}
"""


def candidate(style: int, square: bool = True, gamma_map: str = "#row", twice: bool = False) -> str:
    """The RMSNorm GEMM with gamma folded into W and the row scale computed in the epilogue from the broadcast
    row sums, in ``style`` 1 or 2; the other arguments make it wrong (sums of x, gamma on W's columns, a mean
    divided by d twice)."""
    head = RMSNORM_SIGNATURE + "  %e_w = tensor.empty() : tensor<32x32xf32>\n" + row_sums(square) + \
        scaled_product(gamma_map)
    if style == 1:
        mean = "%m0 = arith.divf %s, %d : f32\n    %mean = arith.divf %m0, %d : f32" if twice else \
            "%mean = arith.divf %s, %d : f32"
        return head + epilogue_reading_row_sums(mean)
    return head + epilogue_of_broadcast_sums(twice)


def parse(text: str) -> ir.Module:
    return ir.Module.parse(text, make_context())


@pytest.mark.parametrize("style", [1, 2])
def test_rmsnorm_scale_recomputed_in_the_epilogue_from_broadcast_row_sums(style: int) -> None:
    (proof,) = prove_modules(parse(RMSNORM), parse(candidate(style)))
    assert proof.proof.proved
    used = {name.rstrip("~") for name in proof.proof.laws}
    assert {"rsqrt-of-broadcast", "row-scaling-commutes-with-matmul", "column-scaling-moves-into-b"} <= used
    (checked,) = prism.verify(RMSNORM, candidate(style))  # with the numeric check of a proof that needed laws
    assert checked.proof.proved


WRONG_RMSNORM = {"sums of x, not x*x": {"square": False}, "gamma on the columns of W": {"gamma_map": "#col"},
                 "mean divided by d twice": {"twice": True}}


@pytest.mark.parametrize("style", [1, 2])
@pytest.mark.parametrize("wrong", sorted(WRONG_RMSNORM))
def test_a_wrong_rmsnorm_epilogue_is_refused_with_a_counterexample(style: int, wrong: str) -> None:
    text = candidate(style, **WRONG_RMSNORM[wrong])
    with pytest.raises(prism.VerificationError, match="no numeric check was run"):
        prove_modules(parse(RMSNORM), parse(text))
    with pytest.raises(prism.VerificationError, match=r"could not prove @rmsnorm_matmul .*counterexample: result"):
        prism.verify(RMSNORM, text)


def test_a_sum_along_a_broadcast_of_dynamic_size_is_not_a_multiple() -> None:
    """A dynamic size is -1 in a term: summing over it is no product by -1 (nor by any constant)."""
    shapes = [(4,)]
    assert not attempt(shapes, lambda o: o.reduce_sum(o.broadcast(X(o), 1, -1), 1),
                       lambda o: o.mul(X(o), o.splat(-1.0))).proved



def rewritten_by(law: str, shapes: list[tuple[int, ...]], start: Build, goal: Build) -> bool:
    """Whether the one rule ``law`` (with the shape rules) rewrites ``start`` into ``goal``."""
    program = Program("f", list(shapes), [])
    with owned_egraph() as egraph:
        program.register_shapes(egraph)
        left, right = (egraph.let(name, terms.to_egglog(build(terms.A))) for name, build in (("start", start),
                                                                                               ("goal", goal)))
        for _ in range(3):
            egraph.run(laws.SHAPES.saturate() + run(ruleset(laws.LAW_RULES[law])))
        return egraph.check_bool(eq(left).to(right))


@pytest.mark.parametrize("law", sorted(CASES))
def test_each_rule_rewrites_alone(law: str) -> None:
    """A law's rule alone turns the left side into the right; an equation's reverse rule alone, the right side
    into the left."""
    shapes, left, right, _ = CASES[law]
    assert rewritten_by(law, shapes, left, right)
    if f"{law}~" in laws.LAW_RULES:
        assert rewritten_by(f"{law}~", shapes, right, left)
