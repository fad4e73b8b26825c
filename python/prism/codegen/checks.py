"""What both code generators require of their input, checked before any upstream pass can trip over it.

Upstream passes meet unsupported input with messages about their own
internals (or, in assertion builds, an abort), so the shape of the module
and its element types are checked here first, and refused at the op.
"""

from __future__ import annotations

from mlir import ir

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
RUNTIME_SYMBOLS = ("malloc", "free", "aligned_alloc", "memrefCopy")
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


def _check_symbols(module: ir.Module) -> None:
    """Refuse a function named like a runtime function (RUNTIME_SYMBOLS) or like another's C interface."""
    names = symbol_names(module)
    for top in module.body.operations:
        op = top.operation
        if "sym_name" not in op.attributes:
            continue
        name = ir.StringAttr(op.attributes["sym_name"]).value
        if name in RUNTIME_SYMBOLS and len(op.regions) and len(op.regions[0].blocks):
            raise UnsupportedOp(f"@{name}: the lowered program calls the C library's {name}, so no function of the "
                                f"program may be named so; rename it", location=str(op.location))
        if name.startswith(C_INTERFACE_PREFIX) and name.removeprefix(C_INTERFACE_PREFIX) in names:
            raise UnsupportedOp(f"@{name} is the name of @{name.removeprefix(C_INTERFACE_PREFIX)}'s C interface, "
                                "which the lowering writes; rename it", location=str(op.location))
