"""Every law of prism.algebra: a proof of a true identity, and a failed proof of a false variant.

Each case is written once, over a namespace of operators, and built twice:
with egglog terms for the proof, and with numpy for a check that the
identity is true and the variant false on random inputs, so that a case can
neither pass through an unsound law nor test a variant that happens to hold.
"""

from __future__ import annotations

import os
import random
from collections.abc import Callable
from types import SimpleNamespace

import numpy as np
import pytest

from prism.algebra import laws, terms
from prism.algebra.egraph import Budget, prove
from prism.algebra.terms import Program

TERMS = terms.A


def rounded(a: np.ndarray, element: str) -> np.ndarray:
    """``a`` rounded to ``element`` (to nearest, ties to even), held in float64."""
    if element == "bf16":  # the upper half of an f32, rounded on the lower half
        bits = a.astype(np.float32).view(np.uint32).astype(np.uint64)
        bits = (bits + 0x7FFF + ((bits >> 16) & 1)) & 0xFFFF0000
        return bits.astype(np.uint32).view(np.float32).astype(np.float64)
    return a.astype({"f16": np.float16, "f32": np.float32, "f64": np.float64}[element]).astype(np.float64)


def numpy_namespace(args: list[np.ndarray]) -> SimpleNamespace:
    """The same operators on arrays."""
    return SimpleNamespace(cast=rounded,
        arg=lambda i: args[i], splat=lambda v: v, matmul=np.matmul, transpose=lambda a: np.swapaxes(a, -1, -2),
        add=np.add, sub=np.subtract, mul=np.multiply, maximum=np.maximum, div=np.divide, neg=np.negative, exp=np.exp,
        rsqrt=lambda a: 1 / np.sqrt(a), sqrt=np.sqrt, reduce_sum=lambda a, axis: a.sum(axis=axis),
        reduce_max=lambda a, axis: a.max(axis=axis),
        broadcast=lambda a, axis, size: np.repeat(np.expand_dims(a, axis), size, axis=axis),
        concat=lambda a, b, axis: np.concatenate([a, b], axis=axis),
        slice_=lambda a, axis, offset, size: np.take(a, range(offset, offset + size), axis=axis))


Build = Callable[[SimpleNamespace], object]
X, Y, Z = (lambda o: o.arg(0)), (lambda o: o.arg(1)), (lambda o: o.arg(2))

# law: (argument shapes, left side, a true right side, a false right side)
CASES: dict[str, tuple[list[tuple[int, ...]], Build, Build, Build]] = {
    "matmul-distributes-over-add-right": (
        [(6, 5), (5, 4), (5, 4)], lambda o: o.matmul(X(o), o.add(Y(o), Z(o))),
        lambda o: o.add(o.matmul(X(o), Z(o)), o.matmul(X(o), Y(o))),
        lambda o: o.add(o.matmul(X(o), Y(o)), o.matmul(X(o), Y(o)))),
    "matmul-distributes-over-add-left": (
        [(6, 5), (6, 5), (5, 4)], lambda o: o.matmul(o.add(X(o), Y(o)), Z(o)),
        lambda o: o.add(o.matmul(X(o), Z(o)), o.matmul(Y(o), Z(o))),
        lambda o: o.add(o.matmul(X(o), Z(o)), o.matmul(X(o), Z(o)))),
    "matmul-associative": (
        [(5, 5), (5, 5), (5, 5)], lambda o: o.matmul(o.matmul(X(o), Y(o)), Z(o)),
        lambda o: o.matmul(X(o), o.matmul(Y(o), Z(o))), lambda o: o.matmul(o.matmul(Y(o), X(o)), Z(o))),
    "transpose-involution": (
        [(5, 5)], lambda o: o.transpose(o.transpose(X(o))), X, lambda o: o.transpose(X(o))),
    "transpose-of-matmul": (
        [(5, 5), (5, 5)], lambda o: o.transpose(o.matmul(X(o), Y(o))),
        lambda o: o.matmul(o.transpose(Y(o)), o.transpose(X(o))),
        lambda o: o.matmul(o.transpose(X(o)), o.transpose(Y(o)))),
    "transpose-of-add": (
        [(5, 5), (5, 5)], lambda o: o.transpose(o.add(X(o), Y(o))),
        lambda o: o.add(o.transpose(X(o)), o.transpose(Y(o))), lambda o: o.add(o.transpose(X(o)), Y(o))),
    "add-commutative": ([(4, 3), (4, 3)], lambda o: o.add(X(o), Y(o)), lambda o: o.add(Y(o), X(o)),
                        lambda o: o.add(X(o), X(o))),
    "add-associative": ([(4, 3)] * 3, lambda o: o.add(o.add(X(o), Y(o)), Z(o)),
                        lambda o: o.add(X(o), o.add(Z(o), Y(o))), lambda o: o.add(o.add(X(o), Y(o)), Y(o))),
    "mul-commutative": ([(4, 3), (4, 3)], lambda o: o.mul(X(o), Y(o)), lambda o: o.mul(Y(o), X(o)),
                        lambda o: o.mul(Y(o), Y(o))),
    "mul-associative": ([(4, 3)] * 3, lambda o: o.mul(o.mul(X(o), Y(o)), Z(o)),
                        lambda o: o.mul(Y(o), o.mul(X(o), Z(o))), lambda o: o.mul(o.add(X(o), Y(o)), Z(o))),
    "sub-is-add-of-negation": ([(4, 3), (4, 3)], lambda o: o.sub(X(o), Y(o)), lambda o: o.add(o.neg(Y(o)), X(o)),
                               lambda o: o.add(o.neg(X(o)), Y(o))),
    "add-zero": ([(4, 3)], lambda o: o.add(X(o), o.splat(0.0)), X, lambda o: o.add(X(o), o.splat(1.0))),
    "mul-one": ([(4, 3)], lambda o: o.mul(o.splat(1.0), X(o)), X, lambda o: o.mul(X(o), o.splat(2.0))),
    "rsqrt-is-reciprocal-sqrt": ([(4, 3)], lambda o: o.rsqrt(o.exp(X(o))),
                                 lambda o: o.div(o.splat(1.0), o.sqrt(o.exp(X(o)))),
                                 lambda o: o.div(o.splat(1.0), o.exp(X(o)))),
    "div-is-mul-by-reciprocal": ([(4, 3), (4, 3)], lambda o: o.div(X(o), o.exp(Y(o))),
                                 lambda o: o.mul(X(o), o.div(o.splat(1.0), o.exp(Y(o)))),
                                 lambda o: o.mul(o.exp(Y(o)), o.div(o.splat(1.0), X(o)))),
    "slice-columns-of-matmul": ([(6, 5), (5, 8)], lambda o: o.slice_(o.matmul(X(o), Y(o)), 1, 2, 3),
                                lambda o: o.matmul(X(o), o.slice_(Y(o), 1, 2, 3)),
                                lambda o: o.matmul(X(o), o.slice_(Y(o), 1, 3, 3))),
    "slice-rows-of-matmul": ([(6, 5), (5, 8)], lambda o: o.slice_(o.matmul(X(o), Y(o)), 0, 2, 3),
                             lambda o: o.matmul(o.slice_(X(o), 0, 2, 3), Y(o)),
                             lambda o: o.matmul(o.slice_(X(o), 0, 0, 3), Y(o))),
    "slice-inside-first-of-concat": ([(4, 5), (4, 3)], lambda o: o.slice_(o.concat(X(o), Y(o), 1), 1, 1, 2),
                                     lambda o: o.slice_(X(o), 1, 1, 2), lambda o: o.slice_(Y(o), 1, 1, 2)),
    "slice-inside-second-of-concat": ([(4, 5), (4, 3)], lambda o: o.slice_(o.concat(X(o), Y(o), 1), 1, 6, 2),
                                      lambda o: o.slice_(Y(o), 1, 1, 2), lambda o: o.slice_(Y(o), 1, 0, 2)),
    "slice-whole": ([(4, 5), (4, 5)], lambda o: o.slice_(o.add(X(o), Y(o)), 1, 0, 5), lambda o: o.add(Y(o), X(o)),
                    lambda o: o.slice_(o.concat(X(o), Y(o), 1), 1, 5, 5)),
    "slice-of-slice": ([(4, 9)], lambda o: o.slice_(o.slice_(X(o), 1, 2, 6), 1, 3, 2),
                       lambda o: o.slice_(X(o), 1, 5, 2), lambda o: o.slice_(X(o), 1, 3, 2)),
    "concat-of-matmuls-sharing-a": ([(6, 5), (5, 3), (5, 4)],
                                    lambda o: o.concat(o.matmul(X(o), Y(o)), o.matmul(X(o), Z(o)), 1),
                                    lambda o: o.matmul(X(o), o.concat(Y(o), Z(o), 1)),
                                    lambda o: o.matmul(X(o), o.concat(Y(o), o.add(Z(o), Z(o)), 1))),
    "row-scaling-commutes-with-matmul": (
        [(6, 5), (6,), (5, 4)], lambda o: o.matmul(o.mul(X(o), o.broadcast(Y(o), 1, 5)), Z(o)),
        lambda o: o.mul(o.matmul(X(o), Z(o)), o.broadcast(Y(o), 1, 4)),
        lambda o: o.mul(o.matmul(X(o), Z(o)), o.broadcast(o.exp(Y(o)), 1, 4))),
    "column-scaling-moves-into-b": (
        [(6, 5), (5,), (5, 4)], lambda o: o.matmul(o.mul(X(o), o.broadcast(Y(o), 0, 6)), Z(o)),
        lambda o: o.matmul(X(o), o.mul(Z(o), o.broadcast(Y(o), 1, 4))), lambda o: o.matmul(X(o), Z(o))),
    "b-column-scaling-commutes-with-matmul": (
        [(6, 5), (4,), (5, 4)], lambda o: o.matmul(X(o), o.mul(Z(o), o.broadcast(Y(o), 0, 5))),
        lambda o: o.mul(o.matmul(X(o), Z(o)), o.broadcast(Y(o), 0, 6)),
        lambda o: o.mul(o.matmul(X(o), Z(o)), o.broadcast(o.neg(Y(o)), 0, 6))),
    "scalar-commutes-with-matmul": (
        [(6, 5), (5, 4)], lambda o: o.matmul(o.mul(X(o), o.splat(2.0)), Y(o)),
        lambda o: o.mul(o.matmul(X(o), Y(o)), o.splat(2.0)), lambda o: o.mul(o.matmul(X(o), Y(o)), o.splat(3.0))),
    "row-division-commutes-with-matmul": (
        [(6, 5), (6,), (5, 4)], lambda o: o.matmul(o.div(X(o), o.broadcast(o.exp(Y(o)), 1, 5)), Z(o)),
        lambda o: o.div(o.matmul(X(o), Z(o)), o.broadcast(o.exp(Y(o)), 1, 4)),
        lambda o: o.mul(o.matmul(X(o), Z(o)), o.broadcast(o.exp(Y(o)), 1, 4))),
    "exp-of-difference": ([(4, 3), (4, 3)], lambda o: o.exp(o.sub(X(o), Y(o))),
                          lambda o: o.div(o.exp(X(o)), o.exp(Y(o))), lambda o: o.div(o.exp(Y(o)), o.exp(X(o)))),
    "sum-of-a-broadcast-division": (
        [(4, 3), (4,)], lambda o: o.reduce_sum(o.div(X(o), o.broadcast(o.exp(Y(o)), 1, 3)), 1),
        lambda o: o.div(o.reduce_sum(X(o), 1), o.exp(Y(o))), lambda o: o.reduce_sum(X(o), 1)),
    "division-cancels": ([(4, 3)] * 3, lambda o: o.div(o.div(X(o), o.exp(Z(o))), o.div(o.exp(Y(o)), o.exp(Z(o)))),
                         lambda o: o.div(X(o), o.exp(Y(o))), lambda o: o.div(X(o), o.exp(Z(o)))),
    "scalar-distributes-over-sub": (
        [(4, 3), (4, 3)], lambda o: o.mul(o.sub(X(o), Y(o)), o.splat(3.0)),
        lambda o: o.sub(o.mul(X(o), o.splat(3.0)), o.mul(Y(o), o.splat(3.0))),
        lambda o: o.sub(o.mul(X(o), o.splat(3.0)), Y(o))),
    "zero-minus-is-negation": ([(4, 3)], lambda o: o.sub(o.splat(0.0), X(o)), lambda o: o.neg(X(o)),
                               lambda o: o.sub(X(o), o.splat(0.0))),
    "scalar-of-b-commutes-with-matmul": (
        [(6, 5), (5, 4)], lambda o: o.matmul(X(o), o.mul(Y(o), o.splat(0.25))),
        lambda o: o.mul(o.matmul(X(o), Y(o)), o.splat(0.25)),
        lambda o: o.mul(o.matmul(X(o), Y(o)), o.splat(0.5))),
    "scalar-commutes-with-transpose": (
        [(6, 5)], lambda o: o.transpose(o.mul(X(o), o.splat(2.0))),
        lambda o: o.mul(o.transpose(X(o)), o.splat(2.0)), lambda o: o.mul(o.transpose(X(o)), o.splat(0.5))),
    "max-from-lowest": (
        [(4, 6)], lambda o: o.maximum(o.splat(laws.LOWEST_F32), o.reduce_max(X(o), 1)),
        lambda o: o.reduce_max(X(o), 1), lambda o: o.maximum(o.splat(5.0), o.reduce_max(X(o), 1))),
    "max-from-negative-infinity": (
        [(4, 6)], lambda o: o.maximum(o.splat(float("-inf")), o.reduce_max(X(o), 1)),
        lambda o: o.reduce_max(X(o), 1), lambda o: o.maximum(o.splat(5.0), o.reduce_max(X(o), 1))),
    # Casts, over f32 arguments.
    "cast-to-own-type": ([(4, 3)], lambda o: o.cast(X(o), "f32"), X, lambda o: o.cast(X(o), "f16")),
    "cast-after-exact-cast": ([(4, 3)], lambda o: o.cast(o.cast(X(o), "f64"), "f16"), lambda o: o.cast(X(o), "f16"),
                              lambda o: o.cast(o.cast(X(o), "bf16"), "f16")),
    "cast-commutes-with-broadcast": ([(4,)], lambda o: o.cast(o.broadcast(X(o), 1, 3), "f16"),
                                     lambda o: o.broadcast(o.cast(X(o), "f16"), 1, 3),
                                     lambda o: o.broadcast(X(o), 1, 3)),
    "cast-commutes-with-slice": ([(4, 6)], lambda o: o.cast(o.slice_(X(o), 1, 2, 3), "f16"),
                                 lambda o: o.slice_(o.cast(X(o), "f16"), 1, 2, 3),
                                 lambda o: o.slice_(o.cast(X(o), "f16"), 1, 1, 3)),
    "cast-commutes-with-concat": ([(4, 3), (4, 2)], lambda o: o.cast(o.concat(X(o), Y(o), 1), "bf16"),
                                  lambda o: o.concat(o.cast(X(o), "bf16"), o.cast(Y(o), "bf16"), 1),
                                  lambda o: o.concat(o.cast(X(o), "bf16"), o.cast(Y(o), "f16"), 1)),
    "cast-commutes-with-transpose": ([(4, 3)], lambda o: o.cast(o.transpose(X(o)), "f16"),
                                     lambda o: o.transpose(o.cast(X(o), "f16")),
                                     lambda o: o.transpose(o.cast(X(o), "bf16"))),
}


@pytest.fixture
def rng() -> np.random.Generator:
    seed = int(os.environ.get("PRISM_TEST_SEED", random.randrange(2**31)))
    print(f"seed = {seed}")
    return np.random.default_rng(seed)


def attempt(shapes: list[tuple[int, ...]], left: Build, right: Build) -> bool:
    program = Program("f", list(shapes), [left(TERMS)])
    return prove(program, Program("f", list(shapes), [right(TERMS)]), Budget(seconds=3)).proved


def numerically_equal(shapes: list[tuple[int, ...]], left: Build, right: Build, rng: np.random.Generator) -> bool:
    ops = numpy_namespace([rounded(rng.standard_normal(shape), "f32") for shape in shapes])  # f32 arguments
    return bool(np.allclose(left(ops), right(ops), rtol=1e-9, atol=1e-9))


def test_every_law_has_a_case() -> None:
    """Here, or among the laws through broadcasts, reductions, slices and constants of test_laws."""
    from test_laws import CASES as MORE_CASES

    declared = {name.rstrip("~") for ruleset, names in laws.LAW_NAMES.items()
                if ruleset in laws.RULESETS for name in names}
    assert declared == set(CASES) | set(MORE_CASES)
    assert not set(CASES) & set(MORE_CASES)


@pytest.mark.parametrize("law", sorted(CASES))
def test_law_proves_a_true_identity(law: str, rng: np.random.Generator) -> None:
    shapes, left, true_right, _ = CASES[law]
    assert numerically_equal(shapes, left, true_right, rng), "the case itself must be an identity"
    assert attempt(shapes, left, true_right)


@pytest.mark.parametrize("law", sorted(CASES))
def test_law_does_not_prove_a_false_variant(law: str, rng: np.random.Generator) -> None:
    shapes, left, _, false_right = CASES[law]
    assert not numerically_equal(shapes, left, false_right, rng), "the variant must really differ"
    assert not attempt(shapes, left, false_right)


def softmax(o: SimpleNamespace, x: object, shift: bool) -> object:
    """Row softmax of a 4 x 6 matrix, with or without subtracting the row maximum first."""
    if shift:
        x = o.sub(x, o.broadcast(o.reduce_max(x, 1), 1, 6))
    numerator = o.exp(x)
    return o.div(numerator, o.broadcast(o.reduce_sum(numerator, 1), 1, 6))


COMPOSITE: dict[str, tuple[list[tuple[int, ...]], Build, Build]] = {
    "softmax is invariant under max-subtraction": ([(4, 6)], lambda o: softmax(o, X(o), True),
                                                    lambda o: softmax(o, X(o), False)),
    "attention divides after the matmul": (
        [(4, 6), (6, 3)], lambda o: o.matmul(softmax(o, X(o), False), Y(o)),
        lambda o: o.div(o.matmul(o.exp(X(o)), Y(o)), o.broadcast(o.reduce_sum(o.exp(X(o)), 1), 1, 3))),
    "LoRA folds into one GEMM": (
        [(6, 5), (5, 4), (5, 2), (2, 4)],
        lambda o: o.add(o.matmul(X(o), Y(o)), o.matmul(o.matmul(X(o), Z(o)), o.arg(3))),
        lambda o: o.matmul(X(o), o.add(Y(o), o.matmul(Z(o), o.arg(3))))),
    "RMSNorm scale moves after the matmul, gamma into the weights": (
        [(6, 5), (6,), (5,), (5, 4)],
        lambda o: o.matmul(o.mul(o.mul(X(o), o.broadcast(Y(o), 1, 5)), o.broadcast(Z(o), 0, 6)), o.arg(3)),
        lambda o: o.mul(o.matmul(X(o), o.mul(o.arg(3), o.broadcast(Z(o), 1, 4))), o.broadcast(Y(o), 1, 4))),
}


@pytest.mark.parametrize("identity", sorted(COMPOSITE))
def test_composite_identities(identity: str, rng: np.random.Generator) -> None:
    shapes, left, right = COMPOSITE[identity]
    assert numerically_equal(shapes, left, right, rng)
    assert attempt(shapes, left, right)


def test_exhausted_budget_is_reported_not_proved() -> None:
    """Distributing and re-associating a long sum of products grows the e-graph past a tiny node budget."""
    shapes = [(3, 3)] * 6
    o, args = terms.A, [terms.A.arg(i) for i in range(6)]
    left = o.matmul(o.add(o.add(args[0], args[1]), args[2]), o.add(o.add(args[3], args[4]), args[5]))
    right = o.matmul(o.add(args[2], o.add(args[1], args[0])), o.add(args[5], o.add(args[4], args[3])))
    proof = prove(Program("f", shapes, [left]), Program("f", shapes, [o.transpose(o.transpose(right))]),
                  Budget(seconds=5, max_nodes=40))
    assert not proof.proved and proof.stopped == "e-graph size"


def test_both_attempts_of_a_proof_share_its_time(monkeypatch: pytest.MonkeyPatch) -> None:
    """A proof's replay and its second attempt run within one budget: each round of saturation is given what is
    left of it, never the whole budget again."""
    import time

    from prism.algebra import egraph

    given: list[tuple[float, float]] = []  # (when, seconds) of each saturation
    real = egraph.saturate

    def saturate(graph, budget, *args, **kwargs):  # noqa: ANN001, ANN202
        given.append((time.perf_counter(), budget.seconds))
        return real(graph, budget, *args, **kwargs)

    monkeypatch.setattr(egraph, "saturate", saturate)
    shapes = [(3, 3)] * 4
    o, args = terms.A, [terms.A.arg(i) for i in range(4)]
    left = o.matmul(o.add(args[0], args[1]), o.add(args[2], args[3]))
    wrong = o.matmul(o.add(args[0], args[1]), o.add(args[2], args[2]))  # not equal: never proved
    began, seconds = time.perf_counter(), 2.0
    proof = prove(Program("f", shapes, [left]), Program("f", shapes, [wrong]), Budget(seconds=seconds))
    assert not proof.proved
    assert len(given) == 3  # the replay's exploration and closing rounds, then both programs together
    for when, left_seconds in given:
        assert left_seconds <= seconds - (when - began) + 0.05
