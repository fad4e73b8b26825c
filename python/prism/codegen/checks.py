"""What both code generators require of their input, checked before any upstream pass can trip over it.

Upstream passes meet unsupported input with messages about their own
internals (or, in assertion builds, an abort), so the shape of the module
and its element types are checked here first, and refused at the op.
"""

from __future__ import annotations

from mlir import ir

from prism.infra.errors import UnsupportedOp
from prism.infra.ir import iter_ops


def _scalar_ok(type_: ir.Type) -> bool:
    return isinstance(type_, (ir.IntegerType, ir.IndexType, ir.FloatType))


def _element_ok(type_: ir.Type) -> bool:
    if isinstance(type_, ir.ShapedType):
        return _scalar_ok(ir.ShapedType(type_).element_type)
    return _scalar_ok(type_) or not isinstance(type_, ir.ComplexType)


def check_module(module: ir.Module) -> None:
    """Refuse nested modules and element types other than integers, indices and floats, at the op."""
    for top in module.body.operations:
        if top.operation.name == "builtin.module":
            raise UnsupportedOp("nested modules are not supported; put every function directly in the top module",
                                location=str(top.operation.location))
    for op in iter_ops(module):
        for value in [*op.operands, *op.results]:
            if not _element_ok(value.type):
                raise UnsupportedOp(f"'{op.name}' computes on {value.type}, whose element type Prism cannot lower "
                                    "(integers, indices and floats only)", location=str(op.location))
