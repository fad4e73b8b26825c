"""A fuzzer of Prism's prover: random programs rewritten by the algebra's laws must be proven equal, and
perturbations of them refused with a counterexample.

Each pair starts from a program of the program fuzzer (``fuzz.generate``), among those of f32 with static
shapes that the algebra translates without opaque terms. Its terms (:func:`prism.algebra.terms.translate`)
are, for half the pairs, first enriched (:data:`ENRICHMENTS`: one or two values replaced by a softmax, a row
or column scaling, a division, a split and joined slice... of themselves, so that the laws find their
patterns; the enriched program, written by to_mlir, is then the original), then rewritten by a chain of one
to four instances of the laws of :mod:`prism.algebra.laws`, each applied at a random position (the table
:data:`ALL_REWRITES`: one entry per law and direction, written as a Python function on terms), and written
back as MLIR with the same signature (:func:`prism.algebra.to_mlir.function_text`).

- An **equal** pair (even index) is the program and its rewrite: :func:`prism.algebra.prove.prove_modules`
  must prove it, as prism-verify does (with the numeric check of
  :func:`prism.runtime.compare.describe_counterexample`).
- An **unequal** pair (odd index) is the program and a perturbation of its rewrite (:data:`PERTURBATIONS`:
  operands of a non-commutative op swapped, a reduction or broadcast axis changed, a constant changed, a term
  dropped, an argument replaced by another of its shape). A perturbation that agrees with the program on three
  random inputs is accidentally equal: it is discarded and counted, and another is tried. The prover must
  refuse the pair with a counterexample.

Outcomes: ``proved``, ``unproven`` (why the proof stopped: budget, saturated), ``unproven-counterexample``
(the rewrite was not equal: an unsound entry of the table), ``refused`` (with a counterexample),
``refused-without-counterexample``, ``accepted`` (an unequal pair proven: unsound), ``no-perturbation``,
``crash`` (an exception other than VerificationError from the prover), ``construction-crash`` (one from
building the pair), ``abort`` (the worker process died) and ``timeout``. Pairs run in worker processes, so an
abort is counted rather than fatal. The same seed gives the same pairs.

    python benchmarks/prover_fuzz.py --pairs 500 --seed 0 --jobs 1
    python benchmarks/prover_fuzz.py --pairs 20 --show 4      # print four pairs' rewrites and stop
    python benchmarks/prover_fuzz.py --seed 8 --only 12        # replay one pair
"""

from __future__ import annotations

import argparse
import json
import queue
import re
import subprocess
import sys
import threading
import time
import traceback
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

import fuzz  # noqa: E402  (the program fuzzer lives beside this file)

from prism.algebra.terms import A, Term  # noqa: E402
from prism.algebra.to_mlir import Shapes  # noqa: E402

TIMEOUT_SECONDS = 300  # per pair, in the worker
MAX_PERTURBATION_TRIES = 3
MAX_PROGRAM_DRAWS = 200
INTRODUCING_SHARE = 0.75  # how often a step draws among the laws that match a pattern, when one does
BAD = ("unproven-counterexample", "accepted", "crash", "construction-crash", "abort", "timeout")
Position = tuple[int, ...]  # a position in a term: the operand index at each level


# ----------------------------------------------------------------------------------------------- term helpers

POINTWISE_BINARY = ("add", "sub", "mul", "div", "maximum")
POINTWISE_UNARY = ("neg", "exp", "rsqrt", "sqrt")


def splat(value: float) -> Term:
    return A.splat(value)


def is_splat(term: Term, value: float | None = None) -> bool:
    return term.op == "splat" and (value is None or term.attrs[0] == value)


def positions(term: Term, path: Position = ()) -> list[tuple[Position, Term]]:
    """Every position of ``term`` as a tree (a shared subterm once per occurrence), outermost first."""
    found = [(path, term)]
    for index, arg in enumerate(term.args):
        found += positions(arg, (*path, index))
    return found


def replaced(term: Term, path: Position, new: Term) -> Term:
    """``term`` with the subterm at ``path`` replaced by ``new``."""
    if not path:
        return new
    args = list(term.args)
    args[path[0]] = replaced(args[path[0]], path[1:], new)
    return Term(term.op, tuple(args), term.attrs)


class IllShaped(Exception):
    """A term whose operands' shapes do not fit its operator."""


def check_shapes(term: Term, shapes: Shapes) -> tuple[int, ...] | None:
    """The shape of ``term`` after checking that every operator's operands fit it (None for a splat).

    Stricter than :class:`Shapes`, which trusts its input: pointwise operands must agree, a splat may only be
    a pointwise operand beside a tensor, products are of rank 2 or 3 (what to_mlir writes).
    """
    op, args, attrs = term.op, term.args, term.attrs
    if op in ("arg", "splat"):
        return shapes(term)
    operand = [check_shapes(arg, shapes) for arg in args]
    tensors = [s for s in operand if s is not None]
    if op in POINTWISE_BINARY or op in POINTWISE_UNARY:
        if not tensors or any(s != tensors[0] for s in tensors):
            raise IllShaped(f"{op} of shapes {operand}")
        return tensors[0]
    if len(tensors) != len(operand):
        raise IllShaped(f"{op} of a constant")
    a = operand[0]
    fits = {
        "matmul": lambda: len(a) in (2, 3) and len(operand[1]) == len(a) and a[:-2] == operand[1][:-2]
        and a[-1] == operand[1][-2],
        "transpose": lambda: len(a) >= 2,
        "reduce_sum": lambda: 0 <= attrs[0] < len(a),
        "reduce_max": lambda: 0 <= attrs[0] < len(a),
        "broadcast": lambda: 0 <= attrs[0] <= len(a) and attrs[1] >= 1,
        "concat": lambda: len(a) == len(operand[1]) and 0 <= attrs[0] < len(a)
        and all(x == y for i, (x, y) in enumerate(zip(a, operand[1], strict=True)) if i != attrs[0]),
        "slice_": lambda: 0 <= attrs[0] < len(a) and attrs[1] >= 0 and attrs[2] >= 1
        and attrs[1] + attrs[2] <= a[attrs[0]],
    }
    if op not in fits or not fits[op]():
        raise IllShaped(f"{op}{attrs} of shapes {operand}")
    return shapes(term)


@dataclass
class Context:
    """What a law instance may read: the shapes of terms, a random stream, the program's terms (for partners)."""

    shapes: Shapes
    rng: np.random.Generator
    pool: list[Term] = field(default_factory=list)
    checked: dict[Term, tuple[int, ...] | None] = field(default_factory=dict)

    def shape(self, term: Term) -> tuple[int, ...] | None:
        """The shape of ``term``; None for a splat and for an ill-shaped term."""
        if term not in self.checked:
            try:
                self.checked[term] = check_shapes(term, self.shapes)
            except (IllShaped, IndexError, TypeError):
                self.checked[term] = None
        return self.checked[term]

    def rank(self, term: Term) -> int:
        shape = self.shape(term)
        return -1 if shape is None else len(shape)

    def dim(self, term: Term, axis: int) -> int:
        shape = self.shape(term)
        return -1 if shape is None or not 0 <= axis < len(shape) else shape[axis]

    def partner(self, term: Term, axis: int) -> Term:
        """A term of the program that ``term`` can be concatenated with along ``axis`` (``term`` itself or another)."""
        shape = self.shape(term)
        fits = [t for t in self.pool if t != term and (s := self.shape(t)) is not None and len(s) == len(shape)
                and all(x == y for i, (x, y) in enumerate(zip(s, shape, strict=True)) if i != axis)]
        return fits[int(self.rng.integers(len(fits)))] if fits and self.rng.integers(2) else term

    def choice(self, options: list) -> object:
        return options[int(self.rng.integers(len(options)))]


Apply = Callable[[Term, Context], "Term | None"]


@dataclass(frozen=True)
class Rewrite:
    """One law of :mod:`prism.algebra.laws` (``law``, its name there), in one direction, as a function on terms.

    ``apply(term, context)`` is the instance rooted at ``term``, or None where the law does not match or its
    conditions fail.
    """

    law: str
    direction: str  # "->" as written in laws.py, "<-" the other way
    apply: Apply
    introduces: bool = False  # applies to (nearly) any term: drawn less often, so that it does not crowd the others

    @property
    def name(self) -> str:
        return f"{self.law} {self.direction}"


# ----------------------------------------------------------------------------------------- the law instances


def _is(term: Term, op: str, *ops_: str) -> bool:
    return term.op == op and all(arg.op == want for arg, want in zip(term.args, ops_, strict=False) if want)


def commutative(op: str) -> Apply:
    return lambda t, cx: Term(op, (t.args[1], t.args[0])) if t.op == op else None


def associate_right(op: str) -> Apply:
    """(a op b) op c -> a op (b op c)."""
    def apply(t: Term, cx: Context) -> Term | None:
        if t.op != op or t.args[0].op != op:
            return None
        (a, b), c = t.args[0].args, t.args[1]
        return Term(op, (a, Term(op, (b, c))))
    return apply


def associate_left(op: str) -> Apply:
    """a op (b op c) -> (a op b) op c."""
    def apply(t: Term, cx: Context) -> Term | None:
        if t.op != op or t.args[1].op != op:
            return None
        a, (b, c) = t.args[0], t.args[1].args
        return Term(op, (Term(op, (a, b)), c))
    return apply


def distribute_right(t: Term, cx: Context) -> Term | None:
    """matmul(a, add(b, c)) -> add(matmul(a, b), matmul(a, c))."""
    if not _is(t, "matmul", "", "add"):
        return None
    a, (b, c) = t.args[0], t.args[1].args
    return A.add(A.matmul(a, b), A.matmul(a, c))


def factor_right(t: Term, cx: Context) -> Term | None:
    if not _is(t, "add", "matmul", "matmul") or t.args[0].args[0] != t.args[1].args[0]:
        return None
    return A.matmul(t.args[0].args[0], A.add(t.args[0].args[1], t.args[1].args[1]))


def distribute_left(t: Term, cx: Context) -> Term | None:
    """matmul(add(a, b), c) -> add(matmul(a, c), matmul(b, c))."""
    if not _is(t, "matmul", "add"):
        return None
    (a, b), c = t.args[0].args, t.args[1]
    return A.add(A.matmul(a, c), A.matmul(b, c))


def factor_left(t: Term, cx: Context) -> Term | None:
    if not _is(t, "add", "matmul", "matmul") or t.args[0].args[1] != t.args[1].args[1]:
        return None
    return A.matmul(A.add(t.args[0].args[0], t.args[1].args[0]), t.args[0].args[1])


def transpose_twice(t: Term, cx: Context) -> Term | None:
    """a -> transpose(transpose(a)), for a of rank 2 or more."""
    return A.transpose(A.transpose(t)) if cx.rank(t) >= 2 else None


def untranspose_twice(t: Term, cx: Context) -> Term | None:
    return t.args[0].args[0] if _is(t, "transpose", "transpose") else None


def transpose_of_matmul(t: Term, cx: Context) -> Term | None:
    if not _is(t, "transpose", "matmul"):
        return None
    a, b = t.args[0].args
    return A.matmul(A.transpose(b), A.transpose(a))


def matmul_of_transposes(t: Term, cx: Context) -> Term | None:
    if not _is(t, "matmul", "transpose", "transpose"):
        return None
    return A.transpose(A.matmul(t.args[1].args[0], t.args[0].args[0]))


def transpose_of_add(t: Term, cx: Context) -> Term | None:
    if not _is(t, "transpose", "add"):
        return None
    a, b = t.args[0].args
    return A.add(A.transpose(a), A.transpose(b))


def add_of_transposes(t: Term, cx: Context) -> Term | None:
    if not _is(t, "add", "transpose", "transpose"):
        return None
    return A.transpose(A.add(t.args[0].args[0], t.args[1].args[0]))


def sub_to_add_neg(t: Term, cx: Context) -> Term | None:
    return A.add(t.args[0], A.neg(t.args[1])) if t.op == "sub" else None


def add_neg_to_sub(t: Term, cx: Context) -> Term | None:
    return A.sub(t.args[0], t.args[1].args[0]) if _is(t, "add", "", "neg") else None


def with_identity(op: str, value: float) -> Apply:
    """a -> a op splat(value), for a tensor a (the identity element introduced)."""
    return lambda t, cx: Term(op, (t, splat(value))) if t.op != "splat" else None


def without_identity(op: str, value: float) -> Apply:
    return lambda t, cx: t.args[0] if t.op == op and is_splat(t.args[1], value) else None


def rsqrt_to_reciprocal(t: Term, cx: Context) -> Term | None:
    return A.div(splat(1.0), A.sqrt(t.args[0])) if t.op == "rsqrt" else None


def reciprocal_to_rsqrt(t: Term, cx: Context) -> Term | None:
    return A.rsqrt(t.args[1].args[0]) if _is(t, "div", "splat", "sqrt") and is_splat(t.args[0], 1.0) else None


def div_to_reciprocal(t: Term, cx: Context) -> Term | None:
    return A.mul(t.args[0], A.div(splat(1.0), t.args[1])) if t.op == "div" else None


def reciprocal_to_div(t: Term, cx: Context) -> Term | None:
    if not _is(t, "mul", "", "div") or not is_splat(t.args[1].args[0], 1.0):
        return None
    return A.div(t.args[0], t.args[1].args[1])


def slice_of_matmul(side: str) -> Apply:
    """slice_(matmul(a, b), ax, off, size) -> matmul(a, slice_(b, ...)) (b's columns) or matmul(slice_(a, ...), b)
    (a's rows)."""
    def apply(t: Term, cx: Context) -> Term | None:
        if not _is(t, "slice_", "matmul"):
            return None
        (a, b), (axis, offset, size) = t.args[0].args, t.attrs
        if side == "columns" and cx.rank(b) == axis + 1:
            return A.matmul(a, A.slice_(b, axis, offset, size))
        if side == "rows" and cx.rank(a) == axis + 2:
            return A.matmul(A.slice_(a, axis, offset, size), b)
        return None
    return apply


def matmul_of_slice(side: str) -> Apply:
    def apply(t: Term, cx: Context) -> Term | None:
        if t.op != "matmul":
            return None
        a, b = t.args
        if side == "columns" and b.op == "slice_" and cx.rank(b) == b.attrs[0] + 1:
            return A.slice_(A.matmul(a, b.args[0]), *b.attrs)
        if side == "rows" and a.op == "slice_" and cx.rank(a) == a.attrs[0] + 2:
            return A.slice_(A.matmul(a.args[0], b), *a.attrs)
        return None
    return apply


def slice_inside_first(t: Term, cx: Context) -> Term | None:
    """slice_(concat(a, b, ax), ax, off, size) -> slice_(a, ax, off, size) when the slice lies inside a."""
    if not _is(t, "slice_", "concat") or t.args[0].attrs[0] != t.attrs[0]:
        return None
    a, (axis, offset, size) = t.args[0].args[0], t.attrs
    return A.slice_(a, axis, offset, size) if offset + size <= cx.dim(a, axis) else None


def slice_inside_second(t: Term, cx: Context) -> Term | None:
    """slice_(concat(a, b, ax), ax, off, size) -> slice_(b, ax, off - dim(a, ax), size) when it lies inside b."""
    if not _is(t, "slice_", "concat") or t.args[0].attrs[0] != t.attrs[0]:
        return None
    (a, b), (axis, offset, size) = t.args[0].args, t.attrs
    n = cx.dim(a, axis)
    return A.slice_(b, axis, offset - n, size) if offset >= n else None


def first_of_concat(t: Term, cx: Context) -> Term | None:
    """slice_(a, ax, off, size) -> slice_(concat(a, b, ax), ax, off, size), with b a term of the program."""
    if t.op != "slice_":
        return None
    return A.slice_(A.concat(t.args[0], cx.partner(t.args[0], t.attrs[0]), t.attrs[0]), *t.attrs)


def second_of_concat(t: Term, cx: Context) -> Term | None:
    """slice_(b, ax, off, size) -> slice_(concat(a, b, ax), ax, off + dim(a, ax), size)."""
    if t.op != "slice_":
        return None
    axis, offset, size = t.attrs
    a = cx.partner(t.args[0], axis)
    return A.slice_(A.concat(a, t.args[0], axis), axis, offset + cx.dim(a, axis), size)


def slice_whole(t: Term, cx: Context) -> Term | None:
    """a -> slice_(a, ax, 0, dim(a, ax)), along a random axis."""
    if cx.rank(t) < 1:
        return None
    axis = int(cx.rng.integers(cx.rank(t)))
    return A.slice_(t, axis, 0, cx.dim(t, axis))


def unslice_whole(t: Term, cx: Context) -> Term | None:
    if t.op != "slice_" or t.attrs[1] != 0 or cx.dim(t.args[0], t.attrs[0]) != t.attrs[2]:
        return None
    return t.args[0]


def merge_slices(t: Term, cx: Context) -> Term | None:
    if not _is(t, "slice_", "slice_") or t.args[0].attrs[0] != t.attrs[0]:
        return None
    return A.slice_(t.args[0].args[0], t.attrs[0], t.args[0].attrs[1] + t.attrs[1], t.attrs[2])


def split_slice(t: Term, cx: Context) -> Term | None:
    """slice_(a, ax, o, size) -> slice_(slice_(a, ax, off, n), ax, o - off, size) for a random outer slice."""
    if t.op != "slice_":
        return None
    axis, offset, size = t.attrs
    outer = int(cx.rng.integers(offset + 1))
    inner = offset - outer
    n = int(cx.rng.integers(inner + size, cx.dim(t.args[0], axis) - outer + 1))
    return A.slice_(A.slice_(t.args[0], axis, outer, n), axis, inner, size)


def concat_of_products(t: Term, cx: Context) -> Term | None:
    """concat(matmul(x, a), matmul(x, b), ax) -> matmul(x, concat(a, b, ax)), ax the last axis."""
    if not _is(t, "concat", "matmul", "matmul") or t.args[0].args[0] != t.args[1].args[0]:
        return None
    (x, a), b, axis = t.args[0].args, t.args[1].args[1], t.attrs[0]
    return A.matmul(x, A.concat(a, b, axis)) if cx.rank(a) == axis + 1 else None


def product_of_concat(t: Term, cx: Context) -> Term | None:
    if not _is(t, "matmul", "", "concat"):
        return None
    x, ((a, b), (axis,)) = t.args[0], (t.args[1].args, t.args[1].attrs)
    return A.concat(A.matmul(x, a), A.matmul(x, b), axis) if cx.rank(a) == axis + 1 else None


def scaled_operand(t: Term, cx: Context, op: str = "mul", side: int = 0) -> tuple[Term, Term, int, int] | None:
    """For matmul(op(a, broadcast(s, ax, size)), b) (side 0) or matmul(a, op(b, broadcast(...))) (side 1): the
    scaled operand a (or b), the scale s, ax and size."""
    if t.op != "matmul" or t.args[side].op != op or t.args[side].args[1].op != "broadcast":
        return None
    scaled, scale = t.args[side].args
    return scaled, scale.args[0], scale.attrs[0], scale.attrs[1]


def row_scaling_out(op: str) -> Apply:
    """matmul(op(a, broadcast(s, ax, size)), b) -> op(matmul(a, b), broadcast(s, ax, n)), ax a's last axis."""
    def apply(t: Term, cx: Context) -> Term | None:
        found = scaled_operand(t, cx, op)
        if found is None:
            return None
        a, s, axis, size = found
        b = t.args[1]
        if cx.rank(a) != axis + 1 or size != cx.dim(a, axis):
            return None
        return Term(op, (A.matmul(a, b), A.broadcast(s, axis, cx.dim(b, axis))))
    return apply


def row_scaling_in(op: str) -> Apply:
    def apply(t: Term, cx: Context) -> Term | None:
        if not _is(t, op, "matmul", "broadcast"):
            return None
        (a, b), (s, (axis, n)) = t.args[0].args, (t.args[1].args[0], t.args[1].attrs)
        if cx.rank(a) != axis + 1 or n != cx.dim(b, axis):
            return None
        return A.matmul(Term(op, (a, A.broadcast(s, axis, cx.dim(a, axis)))), b)
    return apply


def column_scaling_into_b(t: Term, cx: Context) -> Term | None:
    """matmul(mul(a, broadcast(g, ax, size)), b) -> matmul(a, mul(b, broadcast(g, ax + 1, n))), ax = rank(a) - 2."""
    found = scaled_operand(t, cx)
    if found is None:
        return None
    a, g, axis, size = found
    b = t.args[1]
    if cx.rank(a) != axis + 2 or size != cx.dim(a, axis):
        return None
    return A.matmul(a, A.mul(b, A.broadcast(g, axis + 1, cx.dim(b, axis + 1))))


def column_scaling_out_of_b(t: Term, cx: Context) -> Term | None:
    found = scaled_operand(t, cx, side=1)
    if found is None:
        return None
    b, g, axis, n = found
    a = t.args[0]
    if axis < 1 or cx.rank(a) != axis + 1 or n != cx.dim(b, axis):
        return None
    return A.matmul(A.mul(a, A.broadcast(g, axis - 1, cx.dim(a, axis - 1))), b)


def b_column_scaling_out(t: Term, cx: Context) -> Term | None:
    """matmul(a, mul(b, broadcast(g, ax, size))) -> mul(matmul(a, b), broadcast(g, ax, m)), ax = rank(b) - 2."""
    found = scaled_operand(t, cx, side=1)
    if found is None:
        return None
    b, g, axis, size = found
    a = t.args[0]
    if cx.rank(b) != axis + 2 or size != cx.dim(b, axis):
        return None
    return A.mul(A.matmul(a, b), A.broadcast(g, axis, cx.dim(a, axis)))


def b_column_scaling_in(t: Term, cx: Context) -> Term | None:
    if not _is(t, "mul", "matmul", "broadcast"):
        return None
    (a, b), (g, (axis, m)) = t.args[0].args, (t.args[1].args[0], t.args[1].attrs)
    if cx.rank(b) != axis + 2 or m != cx.dim(a, axis):
        return None
    return A.matmul(a, A.mul(b, A.broadcast(g, axis, cx.dim(b, axis))))


def scalar_out(t: Term, cx: Context) -> Term | None:
    """matmul(mul(a, splat k), b) -> mul(matmul(a, b), splat k)."""
    if not _is(t, "matmul", "mul") or not is_splat(t.args[0].args[1]):
        return None
    (a, k), b = t.args[0].args, t.args[1]
    return A.mul(A.matmul(a, b), k)


def scalar_in(t: Term, cx: Context) -> Term | None:
    if not _is(t, "mul", "matmul", "splat"):
        return None
    (a, b), k = t.args[0].args, t.args[1]
    return A.matmul(A.mul(a, k), b)


def exp_of_difference(t: Term, cx: Context) -> Term | None:
    return A.div(A.exp(t.args[0].args[0]), A.exp(t.args[0].args[1])) if _is(t, "exp", "sub") else None


def quotient_of_exps(t: Term, cx: Context) -> Term | None:
    return A.exp(A.sub(t.args[0].args[0], t.args[1].args[0])) if _is(t, "div", "exp", "exp") else None


def exp_of_broadcast(t: Term, cx: Context) -> Term | None:
    return A.broadcast(A.exp(t.args[0].args[0]), *t.args[0].attrs) if _is(t, "exp", "broadcast") else None


def broadcast_of_exp(t: Term, cx: Context) -> Term | None:
    return A.exp(A.broadcast(t.args[0].args[0], *t.attrs)) if _is(t, "broadcast", "exp") else None


def sum_of_division(t: Term, cx: Context) -> Term | None:
    """reduce_sum(div(a, broadcast(s, ax, size)), ax) -> div(reduce_sum(a, ax), s), size = dim(a, ax)."""
    if not _is(t, "reduce_sum", "div") or t.args[0].args[1].op != "broadcast":
        return None
    a, scale = t.args[0].args
    axis = t.attrs[0]
    if scale.attrs[0] != axis or scale.attrs[1] != cx.dim(a, axis):
        return None
    return A.div(A.reduce_sum(a, axis), scale.args[0])


def division_of_sum(t: Term, cx: Context) -> Term | None:
    if not _is(t, "div", "reduce_sum"):
        return None
    a, axis = t.args[0].args[0], t.args[0].attrs[0]
    return A.reduce_sum(A.div(a, A.broadcast(t.args[1], axis, cx.dim(a, axis))), axis)


def broadcast_of_division(t: Term, cx: Context) -> Term | None:
    if not _is(t, "broadcast", "div"):
        return None
    a, b = t.args[0].args
    return A.div(A.broadcast(a, *t.attrs), A.broadcast(b, *t.attrs))


def division_of_broadcasts(t: Term, cx: Context) -> Term | None:
    if not _is(t, "div", "broadcast", "broadcast") or t.args[0].attrs != t.args[1].attrs:
        return None
    return A.broadcast(A.div(t.args[0].args[0], t.args[1].args[0]), *t.args[0].attrs)


def cancel_division(t: Term, cx: Context) -> Term | None:
    """div(div(a, c), div(b, c)) -> div(a, b)."""
    if not _is(t, "div", "div", "div") or t.args[0].args[1] != t.args[1].args[1]:
        return None
    return A.div(t.args[0].args[0], t.args[1].args[0])


def divide_both(t: Term, cx: Context) -> Term | None:
    """div(a, b) -> div(div(a, c), div(b, c)), c a nonzero constant."""
    if t.op != "div":
        return None
    c = splat(float(cx.choice([2.0, 0.5, 3.0, -1.5])))
    return A.div(A.div(t.args[0], c), A.div(t.args[1], c))


def _both(law: str, forward: Apply, backward: Apply, introduces: bool = False) -> list[Rewrite]:
    """The two directions of ``law``; ``introduces``: the backward one applies to any term."""
    return [Rewrite(law, "->", forward), Rewrite(law, "<-", backward, introduces)]


# One entry per law and direction; an entry whose law is not in prism.algebra.laws is left out (ALL_REWRITES
# keeps it). Add a law by adding its entries here.
ALL_REWRITES: list[Rewrite] = [
    *_both("matmul-distributes-over-add-right", distribute_right, factor_right),
    *_both("matmul-distributes-over-add-left", distribute_left, factor_left),
    *_both("matmul-associative", associate_right("matmul"), associate_left("matmul")),
    *_both("transpose-involution", untranspose_twice, transpose_twice, introduces=True),
    *_both("transpose-of-matmul", transpose_of_matmul, matmul_of_transposes),
    *_both("transpose-of-add", transpose_of_add, add_of_transposes),
    Rewrite("add-commutative", "->", commutative("add")),
    *_both("add-associative", associate_right("add"), associate_left("add")),
    Rewrite("mul-commutative", "->", commutative("mul")),
    *_both("mul-associative", associate_right("mul"), associate_left("mul")),
    *_both("sub-is-add-of-negation", sub_to_add_neg, add_neg_to_sub),
    *_both("add-zero", without_identity("add", 0.0), with_identity("add", 0.0), introduces=True),
    *_both("mul-one", without_identity("mul", 1.0), with_identity("mul", 1.0), introduces=True),
    *_both("rsqrt-is-reciprocal-sqrt", rsqrt_to_reciprocal, reciprocal_to_rsqrt),
    *_both("div-is-mul-by-reciprocal", div_to_reciprocal, reciprocal_to_div),
    *_both("slice-columns-of-matmul", slice_of_matmul("columns"), matmul_of_slice("columns")),
    *_both("slice-rows-of-matmul", slice_of_matmul("rows"), matmul_of_slice("rows")),
    *_both("slice-inside-first-of-concat", slice_inside_first, first_of_concat),
    *_both("slice-inside-second-of-concat", slice_inside_second, second_of_concat),
    *_both("slice-whole", unslice_whole, slice_whole, introduces=True),
    *_both("slice-of-slice", merge_slices, split_slice),
    *_both("concat-of-matmuls-sharing-a", concat_of_products, product_of_concat),
    *_both("row-scaling-commutes-with-matmul", row_scaling_out("mul"), row_scaling_in("mul")),
    *_both("column-scaling-moves-into-b", column_scaling_into_b, column_scaling_out_of_b),
    *_both("b-column-scaling-commutes-with-matmul", b_column_scaling_out, b_column_scaling_in),
    *_both("scalar-commutes-with-matmul", scalar_out, scalar_in),
    *_both("row-division-commutes-with-matmul", row_scaling_out("div"), row_scaling_in("div")),
    *_both("exp-of-difference", exp_of_difference, quotient_of_exps),
    *_both("exp-of-broadcast", exp_of_broadcast, broadcast_of_exp),
    *_both("sum-of-a-broadcast-division", sum_of_division, division_of_sum),
    *_both("broadcast-of-division", broadcast_of_division, division_of_broadcasts),
    *_both("division-cancels", cancel_division, divide_both),
]


def known_laws() -> set[str]:
    """The names of the laws of prism.algebra.laws (a reverse rule ``name~`` counted as ``name``)."""
    from prism.algebra.laws import LAW_NAMES

    return {name.rstrip("~") for names in LAW_NAMES.values() for name in names}


def rewrites() -> list[Rewrite]:
    """The entries of ALL_REWRITES whose law exists in prism.algebra.laws."""
    known = known_laws()
    return [entry for entry in ALL_REWRITES if entry.law in known]


# ------------------------------------------------------------------------------------------- the perturbations


def swap_operands(t: Term, cx: Context) -> Term | None:
    """sub, div or matmul with its operands swapped (a matmul only where the shapes still fit)."""
    if t.op not in ("sub", "div", "matmul") or t.args[0] == t.args[1]:
        return None
    return Term(t.op, (t.args[1], t.args[0]), t.attrs)


def change_axis(t: Term, cx: Context) -> Term | None:
    """A reduction or broadcast along another axis (kept only where the shapes stay the same)."""
    if t.op not in ("reduce_sum", "reduce_max", "broadcast"):
        return None
    rank = cx.rank(t.args[0]) + (1 if t.op == "broadcast" else 0)
    others = [axis for axis in range(rank) if axis != t.attrs[0]]
    return Term(t.op, t.args, (cx.choice(others), *t.attrs[1:])) if others else None


def change_constant(t: Term, cx: Context) -> Term | None:
    if t.op != "splat":
        return None
    value = t.attrs[0]
    return splat(float(cx.choice([value + 1.0, 2.0 * value + 0.5, -value - 0.75])) if abs(value) < 1e30 else 0.0)


def drop_term(t: Term, cx: Context) -> Term | None:
    """a op b -> a (or b), for a binary pointwise op."""
    if t.op not in POINTWISE_BINARY:
        return None
    kept = t.args[int(cx.rng.integers(2))]
    return kept if kept.op != "splat" else None


def replace_argument(t: Term, cx: Context) -> Term | None:
    """An argument replaced by another of its shape."""
    if t.op != "arg":
        return None
    others = [i for i, shape in enumerate(cx.shapes.arg_shapes) if i != t.attrs[0] and shape == cx.shape(t)]
    return A.arg(cx.choice(others)) if others else None


def change_offset(t: Term, cx: Context) -> Term | None:
    """A slice that starts elsewhere along its axis."""
    if t.op != "slice_":
        return None
    axis, offset, size = t.attrs
    others = [o for o in range(cx.dim(t.args[0], axis) - size + 1) if o != offset]
    return A.slice_(t.args[0], axis, cx.choice(others), size) if others else None


def negate(t: Term, cx: Context) -> Term | None:
    """x -> neg(x), for a value that is not an argument (a whole program negated is too easy to spot)."""
    return A.neg(t) if t.op not in ("splat", "arg", "neg") else None


def transpose_square(t: Term, cx: Context) -> Term | None:
    """x -> transpose(x), for a value whose last two axes have one size."""
    shape = cx.shape(t)
    return A.transpose(t) if shape is not None and len(shape) >= 2 and shape[-1] == shape[-2] > 1 else None


# Terms carry no casts (f32 programs): there is no cast to change.
PERTURBATIONS: dict[str, Apply] = {
    "swap-operands": swap_operands, "change-axis": change_axis, "change-constant": change_constant,
    "drop-term": drop_term, "replace-argument": replace_argument, "change-offset": change_offset,
    "negate": negate, "transpose-square": transpose_square,
}


# ------------------------------------------------------------------------------------- enriching a program
# The program fuzzer's programs are products, elementwise chains and row reductions: few of them hold a row
# scaling, a softmax, a slice or a division, which most laws match. An enrichment replaces a value x of the
# program by one of these forms built from x itself (bounded values: divisors are at least 1 or exponentials,
# exponents have their maximum subtracted), so that the rewrites have patterns to start from.


def _last_axis(x: Term, cx: Context) -> tuple[int, int]:
    shape = cx.shape(x)
    return len(shape) - 1, shape[-1]


def row_scaled(x: Term, cx: Context) -> Term | None:
    """x * broadcast(reduce_sum(x, last), last): each row scaled by its sum."""
    if cx.rank(x) < 1:
        return None
    axis, n = _last_axis(x, cx)
    return A.mul(x, A.broadcast(A.reduce_sum(x, axis), axis, n))


def row_divided(x: Term, cx: Context) -> Term | None:
    """x / broadcast(exp(reduce_max(x, last)), last)."""
    if cx.rank(x) < 1:
        return None
    axis, n = _last_axis(x, cx)
    return A.div(x, A.broadcast(A.exp(A.reduce_max(x, axis)), axis, n))


def column_scaled(x: Term, cx: Context) -> Term | None:
    """x * broadcast(reduce_sum(x, rows), rows): each column scaled by its sum."""
    if cx.rank(x) < 2:
        return None
    axis = cx.rank(x) - 2
    return A.mul(x, A.broadcast(A.reduce_sum(x, axis), axis, cx.dim(x, axis)))


def softmax(x: Term, cx: Context) -> Term | None:
    """The softmax of x along its last axis, its maximum subtracted first."""
    if cx.rank(x) < 1:
        return None
    axis, n = _last_axis(x, cx)
    e = A.exp(A.sub(x, A.broadcast(A.reduce_max(x, axis), axis, n)))
    return A.div(e, A.broadcast(A.reduce_sum(e, axis), axis, n))


def scaled(x: Term, cx: Context) -> Term | None:
    return A.mul(x, splat(float(cx.choice([0.5, 2.0, -1.5])))) if x.op != "splat" else None


def split_and_joined(x: Term, cx: Context) -> Term | None:
    """concat(slice_(x, ax, 0, k), slice_(x, ax, k, n - k), ax) along a random axis of size 2 or more."""
    axes = [axis for axis in range(max(cx.rank(x), 0)) if cx.dim(x, axis) >= 2]
    if not axes:
        return None
    axis = int(cx.choice(axes))
    n = cx.dim(x, axis)
    k = int(cx.rng.integers(1, n))
    return A.concat(A.slice_(x, axis, 0, k), A.slice_(x, axis, k, n - k), axis)


def normalized(x: Term, cx: Context) -> Term | None:
    """x * rsqrt(exp(x) + 1), or x / (exp(x) + 1): a divisor of at least 1, whatever a later enrichment does to
    the x inside it (x * x + 1 would go negative when one of its x's is replaced)."""
    if x.op == "splat":
        return None
    divisor = A.add(A.exp(x), splat(1.0))
    return A.mul(x, A.rsqrt(divisor)) if cx.rng.integers(2) else A.div(x, divisor)


def plus_scaled(x: Term, cx: Context) -> Term | None:
    """x + x * k: a sum, for the distributivity laws to find under a product."""
    return A.add(x, A.mul(x, splat(float(cx.choice([0.5, -0.25]))))) if x.op != "splat" else None


def centered(x: Term, cx: Context) -> Term | None:
    """x - broadcast(reduce_sum(x, last) / reduce_sum(exp(x), last), last): a broadcast of a division."""
    if cx.rank(x) < 1:
        return None
    axis, n = _last_axis(x, cx)
    return A.sub(x, A.broadcast(A.div(A.reduce_sum(x, axis), A.reduce_sum(A.exp(x), axis)), axis, n))


ENRICHMENTS: dict[str, Apply] = {
    "row-scaled": row_scaled, "row-divided": row_divided, "column-scaled": column_scaled, "softmax": softmax,
    "scaled": scaled, "split-and-joined": split_and_joined, "normalized": normalized, "plus-scaled": plus_scaled,
    "centered": centered,
}
ENRICHED_SHARE = 0.5  # of the programs
PRODUCT_SHARE = 0.5  # of the enrichments, made at a product or one of its operands (where most laws match)


def _at_product(result: Term, path: Position) -> bool:
    """Whether the subterm of ``result`` at ``path`` is a matmul or an operand of one."""
    term, parent = result, None
    for step in path:
        term, parent = term.args[step], term
    return term.op == "matmul" or (parent is not None and parent.op == "matmul")


def enriched(source: Source, rng: np.random.Generator) -> Source:
    """``source`` with one or two of its values replaced by ENRICHMENTS' forms, half the time (else itself).

    The enriched program is written by to_mlir, as the original of the pair.
    """
    if rng.random() >= ENRICHED_SHARE:
        return source
    cx = Context(Shapes(source.arg_shapes), rng)
    results, names = list(source.results), []
    for _ in range(int(rng.integers(1, 3))):
        name = str(cx.choice(sorted(ENRICHMENTS)))
        found = instances(results, ENRICHMENTS[name], cx)
        near = [f for f in found if _at_product(results[f[0]], f[1])]
        found = near if near and rng.random() < PRODUCT_SHARE else found
        if not found:
            continue
        index, path, new = found[int(rng.integers(len(found)))]
        results[index] = replaced(results[index], path, new)
        names.append(name)
    if not names:
        return source
    return Source(source.seed, candidate_text(source, results), source.name, source.arg_shapes, results, names)


# ------------------------------------------------------------------------------------------- building a pair


def instances(results: list[Term], apply: Apply, cx: Context) -> list[tuple[int, Position, Term]]:
    """Every well-shaped instance of ``apply`` in ``results``: (result index, position, replacement)."""
    found = []
    for index, result in enumerate(results):
        for path, term in positions(result):
            new = apply(term, cx)
            if new is not None and new != term and cx.shape(new) == cx.shape(term):
                found.append((index, path, new))
    return found


def rewrite_step(results: list[Term], table: list[Rewrite], cx: Context) -> tuple[list[Term], str] | None:
    """One law instance at a random position: a law is drawn among those that apply somewhere, then a position."""
    applicable = [(entry, found) for entry in table if (found := instances(results, entry.apply, cx))]
    if not applicable:
        return None
    matching = [item for item in applicable if not item[0].introduces]
    if matching and cx.rng.random() < INTRODUCING_SHARE:
        applicable = matching
    entry, found = applicable[int(cx.rng.integers(len(applicable)))]
    index, path, new = found[int(cx.rng.integers(len(found)))]
    results = list(results)
    results[index] = replaced(results[index], path, new)
    return results, entry.name


def perturb(results: list[Term], cx: Context) -> tuple[list[Term], str] | None:
    """One random perturbation of ``results`` (a kind drawn among those that apply somewhere, then a position)."""
    applicable = [(name, found) for name, apply in PERTURBATIONS.items() if (found := instances(results, apply, cx))]
    if not applicable:
        return None
    name, found = applicable[int(cx.rng.integers(len(applicable)))]
    index, path, new = found[int(cx.rng.integers(len(found)))]
    results = list(results)
    results[index] = replaced(results[index], path, new)
    return results, name


def eligible(program: fuzz.Program) -> bool:
    """Whether the fuzzer's program is f32 with static shapes."""
    return all(a.dtype == "f32" and None not in a.shape for a in program.args)


@dataclass
class Source:
    """A program of the program fuzzer, as terms."""

    seed: int
    text: str
    name: str
    arg_shapes: list[tuple[int, ...]]
    results: list[Term]
    enrichments: list[str] = field(default_factory=list)


def translated(seed: int) -> Source | None:
    """The program of ``seed`` as terms, if it is eligible and translates without opaque terms."""
    from mlir import ir

    from prism.algebra.prove import public_functions
    from prism.algebra.terms import translate
    from prism.infra.ir import make_context, normalize_elementwise

    program = fuzz.generate(seed)
    if not eligible(program):
        return None
    context = make_context()
    module = ir.Module.parse(program.text, context)
    with context:
        normalize_elementwise(module)
    terms = translate(public_functions(module)[program.name])
    if terms.opaque:
        return None
    return Source(seed, program.text, program.name, [tuple(s) for s in terms.arg_shapes], terms.results)


def draw_source(rng: np.random.Generator) -> Source:
    """The first eligible program among seeds drawn from ``rng``."""
    for _ in range(MAX_PROGRAM_DRAWS):
        source = translated(int(rng.integers(2**31)))
        if source is not None:
            return source
    raise RuntimeError(f"no eligible program in {MAX_PROGRAM_DRAWS} draws")


@dataclass
class Pair:
    """Two programs that must be proven equal (``equal``) or refused with a counterexample."""

    index: int
    equal: bool
    source: Source
    laws: list[str]
    candidate: list[Term]
    perturbation: str = ""
    text: str = ""  # the candidate's MLIR

    def written(self) -> Pair:
        """The pair with its candidate written as MLIR, checked to parse (a failure is the construction's)."""
        self.text = candidate_text(self.source, self.candidate)
        parsed(self.text)
        return self

    def describe(self) -> str:
        what = "equal" if self.equal else f"unequal ({self.perturbation})"
        return f"pair {self.index} ({what}): program seed {self.source.seed}, laws {', '.join(self.laws) or 'none'}"


def pair_rng(seed: int, index: int) -> np.random.Generator:
    return np.random.default_rng([seed, index])


def rewritten(source: Source, rng: np.random.Generator, table: list[Rewrite]) -> tuple[list[Term], list[str]]:
    """``source``'s results rewritten by a chain of one to four law instances (fewer where none applies)."""
    cx = Context(Shapes(source.arg_shapes), rng)
    results, laws = list(source.results), []
    for _ in range(int(rng.integers(1, 5))):
        cx.pool = sorted({t for r in results for _, t in positions(r) if t.op != "splat"}, key=repr)
        step = rewrite_step(results, table, cx)
        if step is None:
            break
        results, law = step
        laws.append(law)
    return results, laws


def candidate_text(source: Source, results: list[Term]) -> str:
    from prism.algebra.to_mlir import function_text

    return function_text(source.name, source.arg_shapes, results, "f32")


def parsed(text: str) -> object:
    from mlir import ir

    from prism.infra.ir import make_context

    return ir.Module.parse(text, make_context())


def numerically_equal(source: Source, text: str, trials: int = 3) -> bool:
    """Whether ``text`` agrees with ``source`` on ``trials`` random inputs (both compiled by the host JIT)."""
    from prism.runtime.compare import find_counterexample

    return find_counterexample(parsed(source.text), parsed(text), source.name, trials) is None


def build_pair(seed: int, index: int, table: list[Rewrite] | None = None,
               notes: dict | None = None) -> tuple[Pair | None, int]:
    """Pair ``index`` of ``seed``, and how many perturbations were discarded as accidentally equal.

    Even indices are equal pairs, odd ones unequal: None when no perturbation that differs was found.
    ``notes`` receives the program's seed, its enrichments and the laws as they are drawn (so that a
    failure on the way can say them).
    """
    notes = {} if notes is None else notes
    rng = pair_rng(seed, index)
    source = enriched(draw_source(rng), rng)
    notes.update(program_seed=source.seed, enrichments=source.enrichments)
    results, laws = rewritten(source, rng, rewrites() if table is None else table)
    notes["laws"] = laws
    pair = Pair(index, index % 2 == 0, source, laws, results)
    if pair.equal:
        return pair.written(), 0
    cx = Context(Shapes(source.arg_shapes), rng)
    discarded = 0
    for _ in range(MAX_PERTURBATION_TRIES):
        changed = perturb(results, cx)
        if changed is None:
            break
        if numerically_equal(source, candidate_text(source, changed[0])):
            discarded += 1
            continue
        pair.candidate, pair.perturbation = changed
        return pair.written(), discarded
    return None, discarded


def stopped_reason(message: str) -> str:
    """Why a proof stopped, read off a VerificationError's message."""
    found = re.search(r"unproven \((.+?) after", message)
    return found.group(1) if found else message.split(";")[0][:100]


def verdict(pair: Pair, budget_seconds: float) -> tuple[str, str]:
    """The prover's answer on ``pair``, as prism-verify gives it: (outcome, detail)."""
    from prism.algebra.budget import Budget
    from prism.algebra.prove import prove_modules
    from prism.infra.errors import VerificationError
    from prism.runtime.compare import describe_counterexample

    original, candidate = parsed(pair.source.text), parsed(pair.text)
    try:
        proofs = prove_modules(original, candidate, Budget(seconds=budget_seconds), 3,
                               find_counterexample=describe_counterexample)
    except VerificationError as error:
        message = error.message
        unsound = "one of the laws applied is unsound" in message
        if pair.equal:
            if unsound:
                return "accepted", message
            return ("unproven-counterexample" if "counterexample:" in message else "unproven"), message
        if unsound:
            return "accepted", message
        return ("refused" if "counterexample:" in message else "refused-without-counterexample"), message
    laws = sorted({law for proof in proofs for law in proof.proof.laws})
    return ("proved" if pair.equal else "accepted"), ", ".join(laws)


def check_pair(seed: int, index: int, budget_seconds: float = 5.0, table: list[Rewrite] | None = None) -> dict:
    """The outcome of pair ``index`` of ``seed``; an exception other than VerificationError is a crash."""
    began = time.perf_counter()
    outcome: dict = {"index": index, "kind": "equal" if index % 2 == 0 else "unequal"}
    try:
        pair, outcome["discarded"] = build_pair(seed, index, table, outcome)
    except Exception as error:  # noqa: BLE001  (the fuzzer's job is to find these)
        outcome.update(outcome="construction-crash", detail=f"{type(error).__name__}: {error}"[:300],
                       traceback=traceback.format_exc())
        return outcome | {"seconds": time.perf_counter() - began}
    if pair is None:
        return outcome | {"outcome": "no-perturbation", "detail": "", "seconds": time.perf_counter() - began}
    outcome.update(program_seed=pair.source.seed, enrichments=pair.source.enrichments, laws=pair.laws,
                   perturbation=pair.perturbation, identical=pair.candidate == pair.source.results)
    try:
        outcome["outcome"], outcome["detail"] = verdict(pair, budget_seconds)
    except Exception as error:  # noqa: BLE001
        outcome.update(outcome="crash", detail=f"{type(error).__name__}: {error}"[:300],
                       traceback=traceback.format_exc())
    if outcome["outcome"] == "unproven":
        outcome["stopped"] = stopped_reason(outcome["detail"])
    return outcome | {"seconds": time.perf_counter() - began}


# ----------------------------------------------------------------------------------------------- running


def _worker() -> int:
    """Answer one JSON request per line: {"seed": s, "index": i, "budget": seconds} -> the outcome."""
    for line in sys.stdin:
        request = json.loads(line)
        print(json.dumps(check_pair(request["seed"], request["index"], request["budget"])), flush=True)
    return 0


class Worker:
    """A child process that checks pairs one at a time, restarted when it dies or stops answering."""

    def __init__(self) -> None:
        self.process: subprocess.Popen | None = None

    def check(self, seed: int, index: int, budget: float) -> dict:
        if self.process is None or self.process.poll() is not None:
            self.process = subprocess.Popen([sys.executable, __file__, "--worker"], stdin=subprocess.PIPE,
                                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        assert self.process.stdin and self.process.stdout
        self.process.stdin.write(json.dumps({"seed": seed, "index": index, "budget": budget}) + "\n")
        self.process.stdin.flush()
        line = fuzz._read_line(self.process, TIMEOUT_SECONDS)  # noqa: SLF001  (one reader for both fuzzers)
        kind = "equal" if index % 2 == 0 else "unequal"
        if line is None:
            self.process.kill()
            self.process.wait()
            self.process = None
            return {"index": index, "kind": kind, "outcome": "timeout", "detail": f"no answer in {TIMEOUT_SECONDS} s"}
        if not line:
            code = self.process.wait()
            self.process = None
            return {"index": index, "kind": kind, "outcome": "abort", "detail": f"worker exited with {code}"}
        return json.loads(line)

    def close(self) -> None:
        if self.process is not None:
            self.process.stdin.close()
            self.process.wait()


def run_pairs(seed: int, indices: list[int], jobs: int, budget: float,
              progress: Callable[[dict], None] = lambda outcome: None) -> list[dict]:
    """The outcome of every pair, checked by ``jobs`` worker processes; in index order."""
    todo: queue.Queue[int] = queue.Queue()
    for index in indices:
        todo.put(index)
    outcomes: list[dict] = []
    lock = threading.Lock()

    def serve() -> None:
        worker = Worker()
        try:
            while True:
                try:
                    index = todo.get_nowait()
                except queue.Empty:
                    return
                outcome = worker.check(seed, index, budget)
                with lock:
                    outcomes.append(outcome)
                    progress(outcome)
        finally:
            worker.close()

    threads = [threading.Thread(target=serve) for _ in range(max(1, jobs))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return sorted(outcomes, key=lambda o: o["index"])


# ----------------------------------------------------------------------------------------------- the report


def summarize(outcomes: list[dict]) -> dict:
    """Counts: equal pairs proven, unequal pairs refused with a counterexample, crashes, per law and perturbation."""
    equal = [o for o in outcomes if o["kind"] == "equal"]
    unequal = [o for o in outcomes if o["kind"] == "unequal"]
    per_law: dict[str, Counter] = {}
    for o in equal:
        for law in set(o.get("laws", [])):
            per_law.setdefault(law, Counter())[o["outcome"]] += 1
    per_perturbation: dict[str, Counter] = {}
    for o in unequal:
        if o.get("perturbation"):
            per_perturbation.setdefault(o["perturbation"], Counter())[o["outcome"]] += 1
    return {
        "equal": dict(Counter(o["outcome"] for o in equal)), "unequal": dict(Counter(o["outcome"] for o in unequal)),
        "equal_pairs": len(equal), "unequal_pairs": len(unequal),
        "proved": sum(o["outcome"] == "proved" for o in equal),
        "identical": sum(bool(o.get("identical")) for o in equal),
        "enriched": sum(bool(o.get("enrichments")) for o in outcomes),
        "refused_with_counterexample": sum(o["outcome"] == "refused" for o in unequal),
        "discarded_as_equal": sum(o.get("discarded", 0) for o in unequal),
        "stopped": dict(Counter(o["stopped"] for o in equal if "stopped" in o)),
        "per_law": {law: dict(counts) for law, counts in sorted(per_law.items())},
        "per_perturbation": {name: dict(counts) for name, counts in sorted(per_perturbation.items())},
        "seconds": sum(o.get("seconds", 0.0) for o in outcomes),
    }


def _fraction(part: int, whole: int) -> str:
    return f"{part}/{whole} ({100 * part / whole:.1f}%)" if whole else "0/0"


def describe(outcome: dict) -> str:
    """Which pair an outcome is, with what reproduces it: index, program seed, laws, perturbation."""
    perturbed = f", perturbed by {outcome['perturbation']}" if outcome.get("perturbation") else ""
    enrichments = f", enriched by {', '.join(outcome['enrichments'])}" if outcome.get("enrichments") else ""
    return (f"pair {outcome['index']} ({outcome['kind']}, program seed {outcome.get('program_seed', '?')}"
            f"{enrichments}, laws {', '.join(outcome.get('laws', [])) or '-'}{perturbed})")


def report(seed: int, outcomes: list[dict], wall: float) -> list[str]:
    """The summary as Markdown: the two fractions, outcomes by kind, per law, per perturbation, then failures."""
    s = summarize(outcomes)
    lines = [f"{len(outcomes)} pairs, seed {seed}, {wall:.0f} s wall, {s['seconds']:.0f} s in pairs", "",
             f"- equal pairs proven: {_fraction(s['proved'], s['equal_pairs'])} ({s['identical']} of them rewritten "
             f"back to the program itself); {s['enriched']} of the {len(outcomes)} pairs from enriched programs",
             f"- unequal pairs refused with a counterexample: "
             f"{_fraction(s['refused_with_counterexample'], s['unequal_pairs'])}",
             f"- perturbations discarded as numerically equal: {s['discarded_as_equal']}",
             f"- crashes: {sum(o['outcome'] in ('crash', 'abort', 'timeout') for o in outcomes)} in the prover, "
             f"{sum(o['outcome'] == 'construction-crash' for o in outcomes)} in building pairs", "",
             "| kind | outcome | pairs |", "| --- | --- | --- |"]
    lines += [f"| {kind} | {name} | {count} |" for kind in ("equal", "unequal")
              for name, count in sorted(s[kind].items(), key=lambda item: -item[1])]
    if s["stopped"]:
        lines += ["", "Unproven equal pairs by why the proof stopped: "
                  + ", ".join(f"{why} {count}" for why, count in sorted(s["stopped"].items()))]
    lines += ["", "| law (direction) | equal pairs | proved |", "| --- | --- | --- |"]
    lines += [f"| {law} | {sum(c.values())} | {c.get('proved', 0)} |" for law, c in s["per_law"].items()]
    unused = sorted({entry.name for entry in rewrites()} - set(s["per_law"]))
    if unused:
        lines += ["", "Law entries never applied: " + ", ".join(unused)]
    lines += ["", "| perturbation | unequal pairs | refused with a counterexample |", "| --- | --- | --- |"]
    lines += [f"| {name} | {sum(c.values())} | {c.get('refused', 0)} |" for name, c in s["per_perturbation"].items()]
    failures = [o for o in outcomes if o["outcome"] not in ("proved", "refused", "no-perturbation")]
    if failures:
        lines += ["", "Failures:", ""]
        lines += [f"- {describe(o)}: {o['outcome']}{' (' + o['stopped'] + ')' if 'stopped' in o else ''}: "
                  f"{o['detail'][:300]}" for o in failures]
    return lines


def show(seed: int, count: int) -> None:
    """Print the first ``count`` pairs' programs and rewrites (no proofs, no perturbations)."""
    for index in range(count):
        rng = pair_rng(seed, index)
        source = enriched(draw_source(rng), rng)
        results, laws = rewritten(source, rng, rewrites())
        print(f"// pair {index}: program seed {source.seed}, enriched: {', '.join(source.enrichments) or '-'}, "
              f"laws: {', '.join(laws)}")
        print(source.text)
        print(candidate_text(source, results))


def main() -> int:
    """Entry point."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pairs", type=int, default=500, help="pairs, equal and unequal alternately")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--jobs", type=int, default=1, help="worker processes")
    parser.add_argument("--budget", type=float, default=5.0, help="seconds per proof (prism-verify's default)")
    parser.add_argument("--json", action="store_true", help="print the outcomes and summary as JSON")
    parser.add_argument("--show", type=int, default=0, help="print the first N pairs' rewrites and stop")
    parser.add_argument("--only", type=int, action="append", help="run only pair INDEX (repeatable): a replay")
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        return _worker()
    if args.show:
        show(args.seed, args.show)
        return 0
    began = time.perf_counter()
    done: list[dict] = []

    def progress(outcome: dict) -> None:
        done.append(outcome)
        print(f"[{len(done)}/{len(indices)}] pair {outcome['index']} ({outcome['kind']}): {outcome['outcome']} "
              f"{outcome.get('seconds', 0):.1f} s", file=sys.stderr, flush=True)

    indices = args.only or list(range(args.pairs))
    outcomes = run_pairs(args.seed, indices, args.jobs, args.budget, progress)
    wall = time.perf_counter() - began
    if args.json:
        print(json.dumps({"seed": args.seed, "pairs": args.pairs, "wall_seconds": wall,
                          "summary": summarize(outcomes), "outcomes": outcomes}, indent=1))
    else:
        print("\n".join(report(args.seed, outcomes, wall)))
    return 1 if any(o["outcome"] in BAD for o in outcomes) else 0


if __name__ == "__main__":
    sys.exit(main())
