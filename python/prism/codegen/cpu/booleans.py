"""Tensors of booleans held in bytes on the host.

MLIR's conversion of memref loads and stores to LLVM asserts on elements
narrower than a byte, so the host cannot hold an ``i1`` buffer. Programs
from frontends compute masks as ``i1`` tensors all the time (a comparison
generic feeding a ``select``, ``where``, ``masked_fill``), so before
bufferization each function's ``i1`` tensors become ``i8`` tensors holding
0 or 1: generics truncate what they read back to ``i1`` and extend what
they yield, fills extend their value, extracts truncate theirs. A numpy
``bool`` array has the same bytes, so the runtime passes and returns them
as they are. A function with an ``i1`` tensor anywhere else (a loop, a
call, a constant, another op) is left as it is, and its buffers are refused
later with a located error.
"""

from __future__ import annotations

from mlir import ir
from mlir.dialects import arith

# Ops whose i1 tensor operands and results only change type (their bodies, if any, are fixed below).
_RETYPED = frozenset({"tensor.empty", "tensor.expand_shape", "tensor.collapse_shape", "tensor.extract_slice",
                      "tensor.insert_slice", "tensor.cast", "tensor.dim", "tensor.extract", "linalg.generic",
                      "linalg.fill", "func.return"})


def _is_bool_tensor(t: ir.Type) -> bool:
    if not isinstance(t, ir.RankedTensorType):
        return False
    element = ir.RankedTensorType(t).element_type
    return isinstance(element, ir.IntegerType) and ir.IntegerType(element).width == 1


def _as_bytes(t: ir.Type) -> ir.Type:
    tensor = ir.RankedTensorType(t)
    return ir.RankedTensorType.get(tensor.shape, ir.IntegerType.get_signless(8), tensor.encoding)


def _body_ops(func: ir.Operation) -> list[ir.Operation]:
    return [op.operation for op in func.regions[0].blocks[0].operations]


def _nested(op: ir.Operation) -> list[ir.Operation]:
    """The ops nested in ``op``'s regions, in pre-order."""
    found: list[ir.Operation] = []

    def visit(inner: ir.Operation) -> ir.WalkResult:
        found.append(inner)
        return ir.WalkResult.ADVANCE

    for region in op.regions:
        for block in region:
            for child in block:
                child.operation.walk(visit, ir.WalkOrder.PRE_ORDER)
    return found


def _nested_bool_tensors(op: ir.Operation, allowed: frozenset[str] = frozenset()) -> bool:
    """Whether an op nested in ``op``'s regions, other than the ``allowed`` ones, has an i1 tensor operand or
    result."""
    return any(inner.name not in allowed and any(_is_bool_tensor(v.type) for v in [*inner.operands, *inner.results])
               for inner in _nested(op))


def _widenable(func: ir.Operation) -> bool:
    """Whether every i1 tensor of ``func`` sits on ops this module rewrites (and there is one)."""
    ops = _body_ops(func)
    if len(func.regions[0].blocks) != 1 or any(op.name == "func.call" for op in ops):
        return False
    touched = any(_is_bool_tensor(a.type) for a in func.regions[0].blocks[0].arguments)
    for op in ops:
        if any(_is_bool_tensor(v.type) for v in [*op.operands, *op.results]):
            touched = True
            if op.name not in _RETYPED:
                return False
        # A generic's body may read a captured i1 tensor with tensor.extract (fixed like any other extract).
        if _nested_bool_tensors(op, frozenset({"tensor.extract"} if op.name == "linalg.generic" else ())):
            return False
    return touched


def _fix_generic(op: ir.Operation) -> None:
    """Read i8 operands back as i1 and yield i1 values as i8, where the types now differ."""
    block = op.regions[0].blocks[0]
    i1 = ir.IntegerType.get_signless(1)
    i8 = ir.IntegerType.get_signless(8)
    for operand, arg in zip(op.operands, block.arguments, strict=True):
        if arg.type == i1 and ir.RankedTensorType(operand.type).element_type == i8:
            _held_in_i8(arg, ir.InsertionPoint.at_block_begin(block), op.location)
    terminator = list(block.operations)[-1].operation
    for index, result in enumerate(op.results):
        if terminator.operands[index].type == i1 and ir.RankedTensorType(result.type).element_type == i8:
            with ir.InsertionPoint(terminator), op.location:
                terminator.operands[index] = arith.ExtUIOp(i8, terminator.operands[index]).result


def _held_in_i8(value: ir.Value, where: ir.InsertionPoint, location: ir.Location) -> None:
    """Make the i1 ``value`` an i8 one, its users reading it truncated back to i1 (made at ``where``)."""
    uses = [(use.owner, use.operand_number) for use in value.uses]
    value.set_type(ir.IntegerType.get_signless(8))
    with where, location:
        narrow = arith.TruncIOp(ir.IntegerType.get_signless(1), value)
    for owner, number in uses:
        owner.operands[number] = narrow.result


def _fix_scalars(op: ir.Operation) -> None:
    """A fill's i1 value is extended; an extract's i1 result comes from an i8 one, truncated."""
    i1 = ir.IntegerType.get_signless(1)
    i8 = ir.IntegerType.get_signless(8)
    if op.name == "linalg.fill" and op.operands[0].type == i1:
        with ir.InsertionPoint(op), op.location:
            op.operands[0] = arith.ExtUIOp(i8, op.operands[0]).result
    elif op.name == "tensor.extract" and op.results[0].type == i1 and \
            ir.RankedTensorType(op.operands[0].type).element_type == i8:
        _held_in_i8(op.results[0], ir.InsertionPoint.after(op), op.location)


def widen_booleans(module: ir.Module) -> None:
    """Hold the i1 tensors of each function of ``module`` in i8 (see the module docstring)."""
    for op in module.body.operations:
        func = op.operation
        if func.name != "func.func" or not func.regions[0].blocks or not _widenable(func):
            continue
        for arg in func.regions[0].blocks[0].arguments:
            if _is_bool_tensor(arg.type):
                arg.set_type(_as_bytes(arg.type))
        for inner in _body_ops(func):
            for result in inner.results:
                if _is_bool_tensor(result.type):
                    result.set_type(_as_bytes(result.type))
            if inner.name == "linalg.generic":
                _fix_generic(inner)
                for nested in _nested(inner):
                    _fix_scalars(nested)
            else:
                _fix_scalars(inner)
        ftype = ir.FunctionType(ir.TypeAttr(func.attributes["function_type"]).value)
        returned = [v.type for v in _body_ops(func)[-1].operands]
        inputs = [a.type for a in func.regions[0].blocks[0].arguments]
        if returned != list(ftype.results) or inputs != list(ftype.inputs):
            func.attributes["function_type"] = ir.TypeAttr.get(ir.FunctionType.get(inputs, returned))
