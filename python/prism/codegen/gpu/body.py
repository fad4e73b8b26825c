"""A Linalg op's scalar body as text a kernel can hold.

A ``linalg.generic`` body is rewritten op by op in MLIR's generic form,
with its block arguments replaced by the values a kernel loaded and
``linalg.index d`` by the kernel's index of loop ``d``. Constants captured
from the enclosing function are written again; a scalar argument of the
function that the body reads (:func:`captured_arguments`) is a value the
kernel loads from its buffer of one element. Any other captured value (a
value extracted from a tensor) is refused by :func:`body_problem`, as is a
body with regions of its own.
"""

from __future__ import annotations

from mlir import ir

from prism.codegen.text import TextBuilder


def owner(value) -> ir.Operation | ir.Block:
    """The op defining ``value`` (or using it, for an operand use) as an ``ir.Operation``, whose identity is
    stable across lookups; the block for a block argument."""
    found = value.owner
    return found if isinstance(found, ir.Block) else found.operation


def body_problem(op: ir.Operation) -> str | None:
    """Why ``op``'s body cannot be written into a kernel; None if it can."""
    block = op.regions[0].blocks[0]
    own = set()
    for arg in block.arguments:
        own.add(arg)
    for inner in block.operations:
        if len(inner.regions):
            return f"its body holds '{inner.name}', an op with regions"
        if inner.name == "tensor.extract":
            return "its body reads a tensor element by element (tensor.extract, a gather), which no GPU kernel takes"
        if inner.name == "arith.remf":
            return "its body takes a float remainder (arith.remf), which this MLIR's NVVM lowering cannot lower"
        for value in inner.operands:
            if value not in own and not _constant(value) and not _argument(value):
                return ("its body reads a value defined outside it that is neither a constant nor an argument of "
                        "the function")
        for result in inner.results:
            own.add(result)
    return None


def _argument(value: ir.Value) -> bool:
    """A scalar block argument from outside the body: the function's."""
    return isinstance(owner(value), ir.Block) and not isinstance(value.type, ir.ShapedType)


def captured_arguments(op: ir.Operation) -> list[ir.Value]:
    """The function's scalar arguments that ``op``'s body reads, in order of first use."""
    block = op.regions[0].blocks[0]
    own = set(block.arguments)
    found: list[ir.Value] = []
    for inner in block.operations:
        for value in inner.operands:
            if value not in own and _argument(value) and value not in found:
                found.append(value)
        own.update(inner.results)
    return found


def _constant(value: ir.Value) -> bool:
    return not isinstance(owner(value), ir.Block) and owner(value).name == "arith.constant" \
        and not isinstance(value.type, (ir.ShapedType,))


def generic_form(op: ir.Operation, operands: list[str], results: list[str]) -> str:
    """``op`` written in generic form with ``operands`` for its operands and ``results`` for its results."""
    attributes = ", ".join(f"{name} = {op.attributes[name]}" for name in sorted(_names(op)))
    operand_types = ", ".join(str(v.type) for v in op.operands)
    result_types = ", ".join(str(r.type) for r in op.results)
    lhs = f"{', '.join(results)} = " if results else ""
    attr_text = f" {{{attributes}}}" if attributes else ""
    return f'{lhs}"{op.name}"({", ".join(operands)}){attr_text} : ({operand_types}) -> ({result_types})'


def _names(op: ir.Operation) -> list[str]:
    return list(op.attributes)


def emit_body(tb: TextBuilder, op: ir.Operation, values: list[str], indices: list[str],
              captured: dict[ir.Value, str] | None = None) -> list[str]:
    """Write ``op``'s body with its block arguments bound to ``values`` (inputs, then outputs), ``linalg.index``
    to ``indices`` and the function's arguments it reads to ``captured``; the yielded values' names."""
    block = op.regions[0].blocks[0]
    names: dict[ir.Value, str] = dict(zip(block.arguments, values, strict=True))
    names.update(captured or {})
    for inner in block.operations:
        if inner.name == "linalg.yield":
            return [_name(tb, names, v) for v in inner.operands]
        if inner.name == "linalg.index":
            names[inner.results[0]] = indices[ir.IntegerAttr(inner.attributes["dim"]).value]
            continue
        operands = [_name(tb, names, v) for v in inner.operands]
        results = [tb.fresh("s") for _ in inner.results]
        tb.add(generic_form(inner, operands, results))
        names.update(zip(inner.results, results, strict=True))
    raise ValueError("a linalg body without linalg.yield")


def _name(tb: TextBuilder, names: dict[ir.Value, str], value: ir.Value) -> str:
    if value not in names:  # a captured constant: written again where it is used
        name = tb.fresh("k")
        tb.add(generic_form(owner(value), [], [name]))
        names[value] = name
    return names[value]
