"""A function's tensors as the GPU sees them: named buffers, and shapes over size symbols.

Every tensor value of a function gets a buffer (:class:`~.spec.Tensor`):
its arguments are ``arg_0``, ``arg_1``, ...; its results ``result_0``, ...;
the values in between ``tmp_0``, ``tmp_1``, ... (temporaries the launcher
allocates). Every buffer and size name holds an underscore, which the
SSA names a kernel's builder makes never do, so a kernel may name its
parameters after them. A reshape (``tensor.expand_shape``, ``collapse_shape``,
``cast``) is a view: the same buffer under another shape, since every
buffer is row-major and contiguous.

A dynamic dimension is a size symbol: ``size_0``, ``size_1``, ... for the
arguments' dynamic dimensions (read by the launcher from the argument's
shape), and one more symbol for each distinct expression of them that a
tensor's shape needs (``size_2 = size_0 * 4``), found by following the index
values that ``tensor.empty``, ``tensor.dim``, reshapes and ``arith`` ops
compute. A size that cannot be followed is refused at its op.
"""

from __future__ import annotations

import ast
from dataclasses import dataclass, field

from mlir import ir

from prism.codegen.gpu.body import owner
from prism.codegen.gpu.spec import Dim, Tensor
from prism.infra.errors import UnsupportedOp
from prism.infra.ir import element_name

_INDEX_OPS = {"arith.addi": "+", "arith.subi": "-", "arith.muli": "*", "arith.divui": "//", "arith.divsi": "//",
              "arith.floordivsi": "//"}


@dataclass
class Sizes:
    """The size symbols of one function: where each comes from (an argument's dimension, or an expression of
    other symbols)."""

    sources: dict[str, dict] = field(default_factory=dict)
    _by_expr: dict[str, str] = field(default_factory=dict)

    def argument(self, buffer: str, dim: int | None) -> str:
        """The symbol of dimension ``dim`` of input ``buffer``, or with ``dim`` None of the input itself (an
        ``index`` argument)."""
        name = f"size_{len(self.sources)}"
        self.sources[name] = {"input": buffer} if dim is None else {"input": buffer, "dim": dim}
        self._by_expr[f"{buffer}.{dim}"] = name
        return name

    def expression(self, expr: str) -> Dim:
        """The symbol for ``expr`` (an expression over symbols), made once per value (:func:`canonical`); an int if
        ``expr`` is a constant."""
        expr = canonical(expr)
        try:
            return int(expr)
        except ValueError:
            pass
        if expr in self.sources:
            return expr
        if expr not in self._by_expr:
            name = f"size_{len(self.sources)}"
            self.sources[name] = {"expr": expr}
            self._by_expr[expr] = name
        return self._by_expr[expr]


def canonical(expr: str) -> str:
    """``expr`` written one way for one value: each product's factors flattened, its constants multiplied and the
    rest in order. A collapse's size, the product of its group, and a ``tensor.empty``'s, the same product of
    dimensions computed by ``arith.muli``, are then one symbol."""
    return ast.unparse(_Products().visit(ast.parse(expr, mode="eval")).body)


class _Products(ast.NodeTransformer):
    def visit_BinOp(self, node: ast.BinOp) -> ast.AST:
        node = self.generic_visit(node)
        if not isinstance(node.op, ast.Mult):
            return node
        factors, constant, pending = [], 1, [node]
        while pending:
            term = pending.pop()
            if isinstance(term, ast.BinOp) and isinstance(term.op, ast.Mult):
                pending += [term.left, term.right]
            elif isinstance(term, ast.Constant) and isinstance(term.value, int):
                constant *= term.value
            else:
                factors.append(term)
        factors.sort(key=ast.unparse)
        if constant != 1 or not factors:
            factors.append(ast.Constant(constant))
        product = factors[0]
        for factor in factors[1:]:
            product = ast.BinOp(product, ast.Mult(), factor)
        return product


# Ops whose result is their operand's buffer under another shape.
VIEWS = ("tensor.expand_shape", "tensor.collapse_shape", "tensor.cast")


class Buffers:
    """The buffers and shapes of one function's tensor values."""

    def __init__(self, func: ir.Operation):
        self.sizes = Sizes()
        self.tensors: dict[ir.Value, Tensor] = {}
        self.temporaries: list[Tensor] = []
        self.inputs: list[Tensor] = []
        block = func.regions[0].blocks[0]
        self.index_arguments: dict[ir.Value, str] = {}
        for i, arg in enumerate(block.arguments):
            if str(arg.type) == "index":  # a size given as an argument: a size symbol
                self.index_arguments[arg] = self.sizes.argument(f"arg_{i}", None)
                self.inputs.append(Tensor(f"arg_{i}", "index", ()))
                continue
            if _scalar_type(arg.type):  # a scalar argument: a buffer of one element
                tensor = Tensor(f"arg_{i}", str(arg.type), ())
                self.tensors[arg] = tensor
                self.inputs.append(tensor)
                continue
            if not isinstance(arg.type, ir.RankedTensorType):
                raise UnsupportedOp(f"argument {i} of @{_name(func)} is {arg.type}: GPU functions take ranked tensors "
                                    f"and scalars of {', '.join(_SCALARS)}", location=str(func.location))
            shape = tuple(self.sizes.argument(f"arg_{i}", d) if ir.ShapedType.is_dynamic_size(n) else n
                          for d, n in enumerate(arg.type.shape))
            tensor = Tensor(f"arg_{i}", _dtype(arg.type, func), shape)
            self.tensors[arg] = tensor
            self.inputs.append(tensor)

    # -- shapes ---------------------------------------------------------------------------------------------------

    def shape(self, value: ir.Value) -> tuple[Dim, ...]:
        """``value``'s shape, a size symbol for each dynamic dimension."""
        if value in self.tensors:
            return self.tensors[value].shape
        typ = ir.RankedTensorType(value.type)
        static = list(typ.shape)
        if not any(ir.ShapedType.is_dynamic_size(n) for n in static):
            return tuple(static)
        op = owner(value)
        if isinstance(op, ir.Operation) and (op.name.startswith("linalg.") or op.name == "tensor.cast"):
            # the shape of what the op's result is made from: its output operand's, the cast's source's
            source = op.operands[0] if op.name == "tensor.cast" else _destination(op, value)
            return tuple(n if not ir.ShapedType.is_dynamic_size(n) else d
                         for n, d in zip(static, self.shape(source), strict=True))
        dynamic = self._dynamic_dims(value)
        out, k = [], 0
        for n in static:
            if ir.ShapedType.is_dynamic_size(n):
                out.append(dynamic[k])
                k += 1
            else:
                out.append(n)
        return tuple(out)

    def _dynamic_dims(self, value: ir.Value) -> list[Dim]:
        """The dynamic dimensions of ``value`` (a result of an op), in order."""
        op = owner(value)
        name = op.name
        if name in ("tensor.empty", "bufferization.alloc_tensor"):
            return [self.index(v, op) for v in op.operands]
        if name == "tensor.expand_shape":
            return [self.index(v, op) for v in list(op.operands)[1:]]
        if name == "tensor.collapse_shape":
            return self._collapsed(op)
        raise UnsupportedOp(f"'{name}' has no GPU kernel, and the sizes of its dynamic result cannot be followed",
                            location=str(op.location))

    def _collapsed(self, op: ir.Operation) -> list[Dim]:
        source = self.shape(op.operands[0])
        groups = [[ir.IntegerAttr(i).value for i in ir.ArrayAttr(g)]
                  for g in ir.ArrayAttr(op.attributes["reassociation"])]
        result = ir.RankedTensorType(op.results[0].type).shape
        dims = []
        for n, group in zip(result, groups, strict=True):
            if ir.ShapedType.is_dynamic_size(n):
                dims.append(self.sizes.expression(" * ".join(f"({source[g]})" for g in group)))
        return dims

    def index(self, value: ir.Value, user: ir.Operation) -> Dim:
        """The size an ``index`` value holds, as a constant or a symbol."""
        return self.sizes.expression(self._index_expr(value, user))

    def _index_expr(self, value: ir.Value, user: ir.Operation) -> str:
        if value in self.index_arguments:
            return self.index_arguments[value]
        if isinstance(owner(value), ir.Block):
            raise UnsupportedOp("a size that is a block argument cannot be followed on the GPU",
                                location=str(user.location))
        op = owner(value)
        if op.name in ("arith.constant",):
            return str(ir.IntegerAttr(op.attributes["value"]).value)
        if op.name == "tensor.dim":
            const = op.operands[1].owner
            if isinstance(const, ir.Block) or const.name != "arith.constant":
                raise UnsupportedOp("tensor.dim with a dynamic dimension index", location=str(op.location))
            return str(self.shape(op.operands[0])[ir.IntegerAttr(const.attributes["value"]).value])
        if op.name in _INDEX_OPS:
            a, b = (self._index_expr(v, op) for v in op.operands)
            return f"({a} {_INDEX_OPS[op.name]} {b})"
        if op.name == "arith.ceildivui" or op.name == "arith.ceildivsi":
            a, b = (self._index_expr(v, op) for v in op.operands)
            return f"cdiv({a}, {b})"
        raise UnsupportedOp(f"a size computed by '{op.name}' cannot be followed on the GPU", location=str(op.location))

    # -- buffers --------------------------------------------------------------------------------------------------

    def tensor(self, value: ir.Value) -> Tensor:
        """The buffer holding ``value``: a reshape's source's buffer under its shape (:meth:`view`), else a
        temporary, made at its first mention. (A family's kernel claims its operands before the walk reaches the
        reshapes that make them.)"""
        if value not in self.tensors:
            op = owner(value)
            if not isinstance(op, ir.Block) and op.name in VIEWS:
                self.view(value, op.operands[0])
                return self.tensors[value]
            tensor = Tensor(f"tmp_{len(self.temporaries)}", _dtype(value.type, owner(value)), self.shape(value))
            self.tensors[value] = tensor
            self.temporaries.append(tensor)
        return self.tensors[value]

    def view(self, result: ir.Value, source: ir.Value) -> None:
        """``result`` is ``source``'s buffer under ``result``'s shape."""
        self.tensors[result] = Tensor(self.tensor(source).name, _dtype(result.type, owner(result)), self.shape(result))

    def bind(self, value: ir.Value, tensor: Tensor) -> None:
        """``value`` lives in ``tensor`` (a result's buffer)."""
        if value in self.tensors and self.tensors[value] in self.temporaries:
            self.temporaries.remove(self.tensors[value])
        self.tensors[value] = tensor


_SCALARS = ("f16", "bf16", "f32", "f64", "i1", "i8", "i16", "i32", "i64")


def _scalar_type(typ: ir.Type) -> bool:
    return str(typ) in _SCALARS


def _destination(op: ir.Operation, value: ir.Value) -> ir.Value:
    """The operand a Linalg op writes ``value`` into (its init): the last operand of the result's type."""
    return next(v for v in reversed(list(op.operands)) if v.type == value.type)


def _dynamic_of(shape: tuple[Dim, ...]) -> list[Dim]:
    return [d for d in shape if isinstance(d, str)]


def _dtype(typ: ir.Type, where) -> str:
    name = element_name(typ)
    element = str(ir.ShapedType(typ).element_type)
    if name is None and element not in ("i1", "i8", "i16", "i32", "i64"):
        raise UnsupportedOp(f"element type {element} has no GPU kernels", location=str(where.location))
    return name or element


def _name(func: ir.Operation) -> str:
    return ir.StringAttr(func.attributes["sym_name"]).value
