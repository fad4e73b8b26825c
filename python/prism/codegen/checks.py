"""What both code generators require of their input, checked before any upstream pass can trip over it.

Upstream passes meet unsupported input with messages about their own
internals (or, in assertion builds, an abort), so the shape of the module
and its element types are checked here first, and refused at the op. One
form they cannot take is rewritten instead: an expansion that gives one
group of dimensions several dynamic sizes (:func:`reshape_dynamic_expansions`);
what remains of it after bufferization is refused (:func:`check_expansions`).
"""

from __future__ import annotations

from mlir import ir
from mlir.dialects import arith, tensor

from prism.infra.errors import UnsupportedOp
from prism.infra.ir import iter_ops, symbol_names


def _scalar_ok(type_: ir.Type) -> bool:
    return isinstance(type_, (ir.IntegerType, ir.IndexType, ir.FloatType))


def _element_ok(type_: ir.Type) -> bool:
    if isinstance(type_, ir.ShapedType):
        return _scalar_ok(ir.ShapedType(type_).element_type)
    return _scalar_ok(type_) or not isinstance(type_, ir.ComplexType)


# The C library's and MLIR's runtime functions that a lowered module calls, and the prefix of the C interface
# MLIR gives each function @f (@_mlir_ciface_f): names the program cannot define. (The names Prism itself
# writes, tasks and the thread pool's entry, are chosen around the program's.)
RUNTIME_SYMBOLS = ("malloc", "free", "aligned_alloc", "memcpy", "memrefCopy")
C_INTERFACE_PREFIX = "_mlir_ciface_"


def check_module(module: ir.Module) -> None:
    """Refuse nested modules, symbols that the lowered module's runtime owns, and element types other than
    integers, indices and floats, at the op."""
    for top in module.body.operations:
        if top.operation.name == "builtin.module":
            raise UnsupportedOp("nested modules are not supported; put every function directly in the top module",
                                location=str(top.operation.location))
    _check_symbols(module)
    for op in iter_ops(module):
        for value in [*op.operands, *op.results]:
            if not _element_ok(value.type):
                raise UnsupportedOp(f"'{op.name}' computes on {value.type}, whose element type Prism cannot lower "
                                    "(integers, indices and floats only)", location=str(op.location))


def _crowded_group(op: ir.Operation) -> list[int] | None:
    """The first reassociation group of the expand_shape ``op`` with two dynamic sizes or more, or None."""
    shape = ir.ShapedType(op.results[0].type).shape
    for group in ir.ArrayAttr(op.attributes["reassociation"]):
        dims = [ir.IntegerAttr(d).value for d in ir.ArrayAttr(group)]
        if sum(ir.ShapedType.is_dynamic_size(shape[d]) for d in dims) > 1:
            return dims
    return None


def reshape_dynamic_expansions(module: ir.Module) -> None:
    """Rewrite each ``tensor.expand_shape`` that gives a group of dimensions two dynamic sizes or more as a
    ``tensor.reshape`` to its output shape.

    The lowering of memref views to LLVM (expand-strided-metadata) takes at
    most one dynamic size per group, and aborts on more; a reshape of a
    contiguous buffer takes any sizes.
    """
    found = [op for op in iter_ops(module) if op.name == "tensor.expand_shape" and _crowded_group(op) is not None]
    index = ir.IndexType.get()
    for op in found:
        result = ir.RankedTensorType(op.results[0].type)
        dynamic = iter(op.operands[1:])
        with ir.InsertionPoint(op), op.location:
            sizes = [next(dynamic) if ir.ShapedType.is_dynamic_size(s) else arith.ConstantOp(index, s).result
                     for s in result.shape]
            shape = tensor.FromElementsOp(ir.RankedTensorType.get([len(sizes)], index), sizes).result
            reshaped = tensor.ReshapeOp(result, op.operands[0], shape).result
        op.results[0].replace_all_uses_with(reshaped)
        op.erase()


def check_expansions(module: ir.Module) -> None:
    """Refuse, at the op, a ``memref.expand_shape`` that gives a group of dimensions two dynamic sizes or more:
    the lowering to LLVM would abort on it."""
    for op in iter_ops(module):
        if op.name == "memref.expand_shape" and (dims := _crowded_group(op)) is not None:
            raise UnsupportedOp(f"'memref.expand_shape' gives dimensions {dims} of {op.results[0].type} more than one "
                                "dynamic size, which the lowering to LLVM cannot take; expand tensors instead, or "
                                "leave one size of each group dynamic", location=str(op.location))


def reserved_name_message(name: str) -> str:
    """Why a function of the program may not be called ``name``, a C function that lowered code calls."""
    return f"@{name}: the lowered program calls the C library's {name}, so no function of the program may be " \
        "named so; rename it"


def _check_symbols(module: ir.Module) -> None:
    """Refuse a function of the program named like a runtime function (RUNTIME_SYMBOLS) or like another's C
    interface. Only ``func.func`` ops are the program's: a module lowered before holds the ``llvm.func`` C
    interfaces that its lowering wrote."""
    names = symbol_names(module)
    for top in module.body.operations:
        op = top.operation
        if op.name != "func.func":
            continue
        name = ir.StringAttr(op.attributes["sym_name"]).value
        if name in RUNTIME_SYMBOLS and len(op.regions) and len(op.regions[0].blocks):
            raise UnsupportedOp(reserved_name_message(name), location=str(op.location))
        if name.startswith(C_INTERFACE_PREFIX) and name.removeprefix(C_INTERFACE_PREFIX) in names:
            raise UnsupportedOp(f"@{name} is the name of @{name.removeprefix(C_INTERFACE_PREFIX)}'s C interface, "
                                "which the lowering writes; rename it", location=str(op.location))
