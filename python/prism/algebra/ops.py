"""The terms of the tensor algebra Prism proves programs equal in: egglog declarations that carry shapes.

Terms (``Tensor``) denote tensor values:
- ``Tensor.arg(i)``: the i-th argument of the function; ``Tensor.splat(c)``: the
  scalar ``c`` at every position of whatever shape its use has;
  ``Tensor.opaque(key, operands)``: an op the algebra cannot express, equal only
  to itself on equal operands (compared, never rewritten);
- ``matmul(a, b)``: contraction of a's last axis with b's second-to-last, over
  leading batch axes; ``transpose(a)`` swaps the last two axes;
- elementwise ``add``, ``sub``, ``mul``, ``div``, ``maximum`` (same shapes),
  ``neg``, ``exp``, ``rsqrt``, ``sqrt``;
- ``reduce_sum(a, axis)``, ``reduce_max(a, axis)`` drop ``axis``;
  ``broadcast(a, axis, size)`` inserts a new ``axis`` of ``size``;
- ``concat(a, b, axis)`` and ``slice_(a, axis, offset, size)``;
- ``cast(a, element)``: ``a`` rounded to the element type ``element``
  ("f16", "bf16", "f32" or "f64", by its number in ``ELEMENT_CODES``), the
  one operator that changes a type.

Shapes are the functions ``rank(t)`` and ``dim(t, axis)``: set on arguments
when a program is translated, and derived for every other term by the
shape rules of :mod:`prism.algebra.laws`. Element types are the function
``dtype(t)``, set and derived the same way: every operator but ``cast``
computes in its operands' type; a splat has no type of its own.
"""

from __future__ import annotations

from egglog import Expr, StringLike, f64Like, function, i64, i64Like, relation, set_


class TensorList(Expr):
    """The operands of an opaque op, in order."""

    @classmethod
    def nil(cls) -> TensorList: ...

    @classmethod
    def cons(cls, head: Tensor, tail: TensorList) -> TensorList: ...


class Tensor(Expr):
    """A tensor value (see the module docstring)."""

    @classmethod
    def arg(cls, index: i64Like) -> Tensor: ...

    @classmethod
    def splat(cls, value: f64Like) -> Tensor: ...

    @classmethod
    def opaque(cls, key: StringLike, operands: TensorList) -> Tensor: ...


@function
def matmul(a: Tensor, b: Tensor) -> Tensor: ...


@function
def transpose(a: Tensor) -> Tensor: ...


@function
def add(a: Tensor, b: Tensor) -> Tensor: ...


@function
def sub(a: Tensor, b: Tensor) -> Tensor: ...


@function
def mul(a: Tensor, b: Tensor) -> Tensor: ...


@function
def div(a: Tensor, b: Tensor) -> Tensor: ...


@function
def maximum(a: Tensor, b: Tensor) -> Tensor: ...


@function
def neg(a: Tensor) -> Tensor: ...


@function
def exp(a: Tensor) -> Tensor: ...


@function
def rsqrt(a: Tensor) -> Tensor: ...


@function
def sqrt(a: Tensor) -> Tensor: ...


@function
def reduce_sum(a: Tensor, axis: i64Like) -> Tensor: ...


@function
def reduce_max(a: Tensor, axis: i64Like) -> Tensor: ...


@function
def broadcast(a: Tensor, axis: i64Like, size: i64Like) -> Tensor: ...


@function
def concat(a: Tensor, b: Tensor, axis: i64Like) -> Tensor: ...


@function
def slice_(a: Tensor, axis: i64Like, offset: i64Like, size: i64Like) -> Tensor: ...


@function
def cast(a: Tensor, element: i64Like) -> Tensor: ...


@function(merge=lambda old, new: old)
def rank(t: Tensor) -> i64: ...


@function(merge=lambda old, new: old)
def dim(t: Tensor, axis: i64Like) -> i64: ...


@function(merge=lambda old, new: old)
def dtype(t: Tensor) -> i64: ...


# Element types by number in the e-graph (terms and snapshots name them): a law compares them as integers.
ELEMENT_CODES = {"f16": 1, "bf16": 2, "f32": 3, "f64": 4}
ELEMENT_NAMES = {code: name for name, code in ELEMENT_CODES.items()}

# ``widens(narrow, wide)``: every value of ``narrow`` is a value of ``wide``, so a cast from one to the other is
# exact. Its facts are WIDENING (f16 and bf16 are not nested: each has values the other lacks).
widens = relation("widens", i64, i64)
WIDENING = (("f16", "f32"), ("f16", "f64"), ("bf16", "f32"), ("bf16", "f64"), ("f32", "f64"))


def set_dtype(tensor: Tensor, element: str) -> object:
    """The fact that ``tensor``'s elements are of type ``element``."""
    return set_(dtype(tensor)).to(ELEMENT_CODES[element])


def set_rank(tensor: Tensor, value: int) -> object:
    """The fact that ``tensor`` has ``value`` axes."""
    return set_(rank(tensor)).to(value)


def set_dim(tensor: Tensor, axis: int, value: int) -> object:
    """The fact that ``tensor`` has ``value`` elements along ``axis``."""
    return set_(dim(tensor, axis)).to(value)


UNARY = {"neg": neg, "exp": exp, "rsqrt": rsqrt, "sqrt": sqrt}
BINARY = {"add": add, "sub": sub, "mul": mul, "div": div, "maximum": maximum}


__all__ = ["BINARY", "ELEMENT_CODES", "ELEMENT_NAMES", "UNARY", "WIDENING", "Tensor", "TensorList", "add",
           "broadcast", "cast", "concat", "dim", "div", "dtype", "exp", "matmul", "maximum", "mul", "neg", "rank",
           "reduce_max", "reduce_sum", "rsqrt", "set_dim", "set_dtype", "set_rank", "slice_", "sqrt", "sub",
           "transpose", "widens"]
