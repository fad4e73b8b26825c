"""The relations among a function's argument sizes that its program assumes, for the host runtime to check.

A Linalg op computes over one iteration space: each operand dimension that
an indexing map ties to a loop has that loop's extent. With dynamic sizes the
program states these equalities and nothing checks them, so a call with
arrays that break one (``?x7 @ 5x?``) reads and writes out of bounds. So does
a ``tensor.empty`` whose size is a negative scalar argument, a slice
(``tensor.extract_slice``, ``tensor.insert_slice``) past the end of the tensor
it slices, a negative pad, and a ``tensor.concat`` of pieces whose other
dimensions differ. Two constant
sizes that contradict each other (``tensor.empty(%c5)`` as the output of an op
over ``3x4`` inputs) are refused when the program is lowered, for either code
generator (:func:`check_constant_sizes`).

:func:`shape_rules` derives, for each function, the rules that the
sizes the runtime knows before a call must keep: the dims of its tensor
arguments, its integer arguments, and constants. It follows a size through
``tensor.dim``, ``tensor.empty``, ``tensor.cast``, slices and the outputs of
Linalg ops. A size it cannot follow (computed by arithmetic, or inside a loop) gives
no rule. Only the ops of the function's entry block give rules, since they run
on every call. The host code generator derives them from the program as it
receives it and puts them on the lowered function as ``prism.shape_rules``::

    prism.shape_rules = [["a0.1 == a1.0", "linalg.matmul", "mm.mlir:4:8"], ...]

each a relation, the op that needs it and the op's ``file:line:col``.
:class:`ShapeRules` reads them back and checks a call's arguments
(:mod:`prism.runtime.cpu`), which then fails with an ``ArgumentError`` at the
op, before any code runs.

A size is written ``aI.D`` (dim D of argument I), ``aI`` (integer argument
I) or a decimal constant; a relation is ``==`` or ``>=``, with a size on its
left and, on its right, a sum of sizes times constants (``a2 + 2*a1 + -1``,
where a slice ends).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple

from mlir import ir

from prism.infra import attrs
from prism.infra.diagnostics import display_location
from prism.infra.errors import ShapeMismatch
from prism.infra.ir import defined_functions


class Size(NamedTuple):
    """A size the runtime knows before a call: a constant (``index`` is its value), dim ``dim`` of tensor argument
    ``index``, or the integer argument ``index``."""

    kind: str  # "const", "dim" or "scalar"
    index: int
    dim: int = 0

    def __str__(self) -> str:
        if self.kind == "const":
            return str(self.index)
        return f"a{self.index}.{self.dim}" if self.kind == "dim" else f"a{self.index}"

    @staticmethod
    def parse(text: str) -> Size:
        if not text.startswith("a"):
            return Size("const", int(text))
        argument, _, dim = text[1:].partition(".")
        return Size("dim", int(argument), int(dim)) if dim else Size("scalar", int(argument))

    def describe(self) -> str:
        if self.kind == "dim":
            return f"dim {self.dim} of argument {self.index}"
        return f"argument {self.index}" if self.kind == "scalar" else str(self.index)

    def value(self, args: Sequence[Any]) -> int | None:
        """This size in a call on ``args`` (see :meth:`ShapeRules.broken`), or None where an argument is not of the
        kind it takes."""
        if self.kind == "const":
            return self.index
        if self.index >= len(args):
            return None
        arg = args[self.index]
        if self.kind == "dim":
            shape = getattr(arg, "shape", None)
            return int(shape[self.dim]) if shape is not None and self.dim < len(shape) else None
        arg = getattr(arg, "value", arg)
        try:
            return int(arg)
        except (TypeError, ValueError):
            return None


class Sum(NamedTuple):
    """A sum of sizes times constants, plus a constant: where a slice ends."""

    terms: tuple[tuple[int, Size], ...]
    constant: int = 0

    @staticmethod
    def of(terms: Sequence[tuple[int, Size]], constant: int = 0) -> Sum:
        """The sum, its constant sizes folded into its constant."""
        kept = tuple((c, size) for c, size in terms if size.kind != "const" and c != 0)
        return Sum(kept, constant + sum(c * size.index for c, size in terms if size.kind == "const"))

    def __str__(self) -> str:
        parts = [str(size) if c == 1 else f"{c}*{size}" for c, size in self.terms]
        return " + ".join(parts + ([str(self.constant)] if self.constant or not parts else []))

    @staticmethod
    def parse(text: str) -> Sum:
        terms, constant = [], 0
        for part in text.split(" + "):
            coefficient, _, atom = part.rpartition("*")
            if atom.startswith("a"):
                terms.append((int(coefficient or 1), Size.parse(atom)))
            else:
                constant += int(atom)
        return Sum(tuple(terms), constant)

    def describe(self) -> str:
        return " + ".join([(size.describe() if c == 1 else f"{c} * {size.describe()}") for c, size in self.terms]
                          + ([str(self.constant)] if self.constant or not self.terms else []))

    def value(self, args: Sequence[Any]) -> int | None:
        values = [size.value(args) for _, size in self.terms]
        if None in values:
            return None
        return self.constant + sum(c * v for (c, _), v in zip(self.terms, values, strict=True))


class _Sizes:
    """What each size of one function's entry block is, in terms the runtime knows before a call."""

    def __init__(self, func: ir.Operation):
        self.block = func.regions[0].blocks[0]
        self.arguments = {arg: i for i, arg in enumerate(self.block.arguments)}

    def dim(self, value: ir.Value, d: int) -> Size | None:
        """Dim ``d`` of the tensor ``value``, or None where it cannot be followed."""
        type_ = ir.RankedTensorType(value.type) if isinstance(value.type, ir.RankedTensorType) else None
        if type_ is None or d >= type_.rank:
            return None
        if not type_.is_dynamic_dim(d):
            return Size("const", type_.get_dim_size(d))
        if value in self.arguments:
            return Size("dim", self.arguments[value], d)
        owner = value.owner
        if isinstance(owner, ir.Block):
            return None
        op = owner.operation
        if op.parent is None or op.parent.name != "func.func":
            return None
        if op.name == "tensor.empty":
            dynamic = [i for i in range(type_.rank) if type_.is_dynamic_dim(i)]
            return self.scalar(op.operands[dynamic.index(d)])
        if op.name == "tensor.cast":
            return self.dim(op.operands[0], d)
        if op.name == "tensor.insert_slice":
            return self.dim(op.operands[1], d)
        if op.name == "tensor.extract_slice" and ir.RankedTensorType(op.operands[0].type).rank == type_.rank:
            return _slice_parts(op, self)[d][1]
        if op.name.startswith("linalg.") and "operandSegmentSizes" in op.attributes:
            inputs = list(ir.DenseI32ArrayAttr(op.attributes["operandSegmentSizes"]))[0]
            position = list(op.results).index(value)
            return self.dim(op.operands[inputs + position], d)
        return None

    def scalar(self, value: ir.Value) -> Size | None:
        """The integer ``value``, or None where it cannot be followed."""
        if value in self.arguments:
            return Size("scalar", self.arguments[value])
        owner = value.owner
        if isinstance(owner, ir.Block):
            return None
        op = owner.operation
        if op.name == "arith.constant" and isinstance(op.attributes["value"], ir.IntegerAttr):
            return Size("const", ir.IntegerAttr(op.attributes["value"]).value)
        if op.name == "arith.index_cast":
            return self.scalar(op.operands[0])
        if op.name == "tensor.dim":
            index = self.scalar(op.operands[1])
            return self.dim(op.operands[0], index.index) if index and index.kind == "const" else None
        return None


def _loop_sizes(op: ir.Operation, sizes: _Sizes) -> dict[int, list[Size]]:
    """Per loop of the Linalg op ``op``: the sizes of the operand dims its indexing maps read as that loop alone."""
    by_loop: dict[int, list[Size]] = {}
    maps = [ir.AffineMapAttr(a).value for a in ir.ArrayAttr(op.attributes["indexing_maps"])]
    for value, affine_map in zip(op.operands, maps, strict=False):
        for d, expr in enumerate(affine_map.results):
            if isinstance(expr, ir.AffineDimExpr) and (size := sizes.dim(value, d)) is not None:
                by_loop.setdefault(expr.position, []).append(size)
    return by_loop


_SLICE_OPS = {"tensor.extract_slice": 1, "tensor.insert_slice": 2}  # by op: the operands before its offsets


def _slice_parts(op: ir.Operation, sizes: _Sizes) -> list[tuple[Size | None, Size | None, int | None]]:
    """Per dim of the sliced tensor, the slice's offset, size and stride (a stride only where it is constant)."""
    dynamic = iter(list(op.operands)[_SLICE_OPS[op.name]:])
    parts = []
    for name in ("static_offsets", "static_sizes", "static_strides"):
        parts.append([sizes.scalar(next(dynamic)) if ir.ShapedType.is_dynamic_size(v) else Size("const", v)
                      for v in ir.DenseI64ArrayAttr(op.attributes[name])])
    return [(offset, size, stride.index if stride and stride.kind == "const" else None)
            for offset, size, stride in zip(*parts, strict=True)]


def _slice_rules(op: ir.Operation, sizes: _Sizes) -> list[str]:
    """A slice's offsets and sizes given as arguments are not negative, and it ends within the tensor it slices:
    its last index, ``offset + (size - 1) * stride``, is under the tensor's extent (a rule that also holds for
    an empty slice)."""
    sliced = op.operands[_SLICE_OPS[op.name] - 1]
    rules = []
    for d, (offset, size, stride) in enumerate(_slice_parts(op, sizes)):
        rules += [f"{part} >= 0" for part in (offset, size) if part is not None and part.kind == "scalar"]
        extent = sizes.dim(sliced, d)
        if offset is None or size is None or stride is None or stride < 1 or extent is None:
            continue
        end = Sum.of([(1, offset), (stride, size)], 1 - stride)
        if end.terms or extent.kind != "const":
            rules.append(f"{extent} >= {end}")
    return rules


def _one_extent(op: str) -> str:
    return "the extent of one loop" if op.startswith("linalg.") else "one extent"


def _function_rules(func: ir.Operation) -> list[tuple[str, str, str]]:
    sizes = _Sizes(func)
    rules: list[tuple[str, str, str]] = []
    seen: set[str] = set()

    def add(relation: str, op: ir.Operation) -> None:
        if relation not in seen:
            seen.add(relation)
            rules.append((relation, op.name, display_location(op.location)))

    def equal(known: list[Size | None], op: ir.Operation) -> None:
        """``op`` takes the ``known`` sizes (None: one not followed) as one extent."""
        known = [size for size in known if size is not None]
        constants = sorted({size.index for size in known if size.kind == "const"})
        if len(constants) > 1:
            raise ShapeMismatch(f"'{op.name}' takes {constants[0]} and {constants[1]} as {_one_extent(op.name)}; "
                                "they must be equal", location=str(op.location))
        # The first size that is not a constant stands for the others; each must equal it.
        first = next((size for size in known if size.kind != "const"), None)
        for other in known:
            if first is not None and other != first:
                add(f"{first} == {other}", op)

    def not_negative(values: list[ir.Value], op: ir.Operation) -> None:
        """``op`` takes ``values`` as sizes: each given as an argument must not be negative."""
        for value in values:
            size = sizes.scalar(value)
            if size is not None and size.kind == "scalar":
                add(f"{size} >= 0", op)

    for op in sizes.block.operations:
        op = op.operation
        if op.name == "tensor.empty":
            not_negative(list(op.operands), op)
        elif op.name == "tensor.pad":
            not_negative(list(op.operands)[1:], op)  # the dynamic low and high pads
        elif op.name in _SLICE_OPS:
            for rule in _slice_rules(op, sizes):
                add(rule, op)
        elif op.name == "tensor.concat":
            axis = ir.IntegerAttr(op.attributes["dim"]).value
            for d in range(ir.RankedTensorType(op.results[0].type).rank):
                if d != axis:
                    equal([sizes.dim(v, d) for v in [*op.operands, op.results[0]]], op)
        elif op.name.startswith("linalg.") and "indexing_maps" in op.attributes:
            for loop in sorted(found := _loop_sizes(op, sizes)):
                equal(found[loop], op)
    return rules


def check_constant_sizes(module: ir.Module) -> None:
    """Raise ShapeMismatch, at the op, where two constant sizes of ``module`` that one loop takes differ (an
    empty tensor of a constant size that an op's other operands contradict)."""
    for func in defined_functions(module):
        _function_rules(func)


def shape_rules(module: ir.Module) -> dict[str, ir.Attribute]:
    """The ``prism.shape_rules`` of each defined function of ``module`` that has rules (see above), by name; raise
    ShapeMismatch as :func:`check_constant_sizes` does."""
    found = {}
    for func in defined_functions(module):
        rules = _function_rules(func)
        if rules:
            found[ir.StringAttr(func.attributes["sym_name"]).value] = ir.ArrayAttr.get(
                [ir.ArrayAttr.get([ir.StringAttr.get(part) for part in rule]) for rule in rules])
    return found


def attach_shape_rules(module: ir.Module, rules: dict[str, ir.Attribute]) -> None:
    """Put each function's rules from :func:`shape_rules` on the function of that name in ``module``."""
    for func in defined_functions(module):
        name = ir.StringAttr(func.attributes["sym_name"]).value
        if name in rules:
            func.attributes[attrs.SHAPE_RULES] = rules[name]


@dataclass(frozen=True)
class ShapeRule:
    """``left relation right``, which ``op`` at ``location`` (``file:line:col``) needs."""

    left: Size
    relation: str
    right: Sum
    op: str
    location: str


@dataclass(frozen=True)
class ShapeRules:
    """The shape rules of one function (read from its ``prism.shape_rules``), checked on a call's arguments."""

    rules: tuple[ShapeRule, ...] = ()

    @staticmethod
    def of(func: ir.Operation) -> ShapeRules:
        """The rules recorded on ``func`` (none when it has no ``prism.shape_rules``)."""
        if attrs.SHAPE_RULES not in func.attributes:
            return ShapeRules()
        rules = []
        for entry in ir.ArrayAttr(func.attributes[attrs.SHAPE_RULES]):
            relation, op, location = (ir.StringAttr(part).value for part in ir.ArrayAttr(entry))
            left, how, right = relation.split(" ", 2)
            rules.append(ShapeRule(Size.parse(left), how, Sum.parse(right), op, location))
        return ShapeRules(tuple(rules))

    def __bool__(self) -> bool:
        return bool(self.rules)

    def broken(self, args: Sequence[Any]) -> tuple[str, str] | None:
        """The message and location of the first rule that ``args`` break, or None.

        ``args`` holds, per argument, an array (its ``shape`` is read) or a scalar (``int()`` of it, or of its
        ``value`` for a ctypes scalar). A rule over an argument that is neither is skipped: the runtime's checks
        of each argument's type and rank report it."""
        for rule in self.rules:
            left, right = rule.left.value(args), rule.right.value(args)
            if left is None or right is None:
                continue
            if left == right if rule.relation == "==" else left >= right:
                continue
            if rule.relation == "==":
                right_text = rule.right.describe() + ("" if not rule.right.terms else f" ({right})")
                message = (f"'{rule.op}' takes {rule.left.describe()} ({left}) and {right_text} as "
                           f"{_one_extent(rule.op)}; they must be equal")
            elif not rule.right.terms:
                message = f"'{rule.op}' takes {rule.left.describe()} ({left}), which must be at least {right}"
            else:
                message = (f"'{rule.op}' ends its slice at {rule.right.describe()} ({right}) along "
                           f"{rule.left.describe()}, which is {left}")
            return message, rule.location
        return None

