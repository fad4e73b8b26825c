"""The laws of elementwise ops through broadcasts, reductions of broadcasts and scalings, slices inside ops and
exact constant folding: each proves a true instance and refuses a false one (wrong axis, constant or operand),
and together they prove RMSNorm's row scale recomputed in a GEMM's epilogue from the broadcast row sums."""

from __future__ import annotations

from collections.abc import Callable
from types import SimpleNamespace

import numpy as np
import pytest
from mlir import ir
from test_algebra import X, Y, Build

import prism
from prism.algebra import ops, terms
from prism.algebra.budget import Budget
from prism.algebra.egraph import Proof, prove
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
        cases[f"{name}-of-constant-and-broadcast"] = (
            [(3,), (3,)], lambda o, g=g: g(o, o.splat(2.0), o.broadcast(positive(o), 1, 3)),
            lambda o, g=g: o.broadcast(g(o, o.splat(2.0), positive(o)), 1, 3),
            lambda o, g=g: o.broadcast(g(o, o.splat(2.0), X(o)), 1, 3))  # wrong operand
        cases[f"slice-of-{name}"] = (
            [(4, 6), (4, 6)], lambda o, g=g: o.slice_(g(o, X(o), positive(o)), 1, 2, 3),
            lambda o, g=g: g(o, o.slice_(X(o), 1, 2, 3), o.slice_(positive(o), 1, 2, 3)),
            lambda o, g=g: g(o, o.slice_(X(o), 1, 2, 3), o.slice_(positive(o), 1, 3, 3)))  # wrong offset
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
                                    lambda o: o.mul(o.reduce_max(X(o), 0), o.splat(2.0))),  # wrong axis
    }
    for name in ("sum", "max"):
        def reduce(o: SimpleNamespace, a: object, axis: int, f: str = f"reduce_{name}") -> object:
            return getattr(o, f)(a, axis)
        cases[f"{name}-of-broadcast-before-it"] = (
            [(3, 3)], lambda o, r=reduce: r(o, o.broadcast(X(o), 2, 3), 0),
            lambda o, r=reduce: o.broadcast(r(o, X(o), 0), 1, 3),
            lambda o, r=reduce: o.broadcast(r(o, X(o), 1), 1, 3))  # wrong axis
        cases[f"{name}-of-broadcast-after-it"] = (
            [(3, 3)], lambda o, r=reduce: r(o, o.broadcast(X(o), 0, 3), 2),
            lambda o, r=reduce: o.broadcast(r(o, X(o), 1), 0, 3),
            lambda o, r=reduce: o.broadcast(r(o, X(o), 0), 0, 3))  # wrong axis
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
    "broadcast-of-constant": ([(3, 3)], lambda o: o.add(X(o), o.broadcast(o.splat(2.0), 1, 3)),
                              lambda o: o.add(X(o), o.splat(2.0)), lambda o: o.add(X(o), o.splat(3.0))),
    "slice-of-constant": ([(4, 6)], lambda o: o.slice_(o.add(X(o), o.splat(2.0)), 1, 2, 3),
                          lambda o: o.add(o.slice_(X(o), 1, 2, 3), o.splat(2.0)),
                          lambda o: o.add(o.slice_(X(o), 1, 2, 3), o.splat(3.0))),
    "slice-of-broadcast-along-it": ([(3,)], lambda o: o.slice_(o.broadcast(X(o), 1, 6), 1, 2, 3),
                                    lambda o: o.broadcast(X(o), 1, 3), lambda o: o.broadcast(X(o), 0, 3)),
    "slice-of-broadcast-before-it": ([(6, 4)], lambda o: o.slice_(o.broadcast(X(o), 2, 3), 0, 1, 3),
                                     lambda o: o.broadcast(o.slice_(X(o), 0, 1, 3), 2, 3),
                                     lambda o: o.broadcast(o.slice_(X(o), 0, 2, 3), 2, 3)),
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
