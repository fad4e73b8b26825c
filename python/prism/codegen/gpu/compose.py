"""Elementwise ops composed into the scalar function of the kernel that reads them.

A value computed by an elementwise ``linalg.generic`` that is not given a
buffer of its own (it is *inlined*) is recomputed where it is read: its
body runs on its own inputs, read at the reading point through its
indexing maps. A scalar function (:class:`~.spec.ScalarFn`) of a value is
the tree of those bodies down to its leaves:

- tensors read at a projection of the point (an :class:`~.spec.Operand`);
- a value the kernel itself holds (a GEMM's accumulator, a row
  reduction's result), given as a *special* operand;
- constants (a fill that has no buffer, a captured scalar).

Every leaf is read once per point, however often the tree uses it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from mlir import ir

from prism.codegen.gpu.body import captured_arguments, emit_body, owner
from prism.codegen.gpu.spec import Operand, ScalarFn, Tensor, convert
from prism.codegen.text import TextBuilder
from prism.infra.maps import map_dims


def elementwise(op: ir.Operation) -> bool:
    """A ``linalg.generic`` that is all parallel, writes its one result through an identity map, reads its
    inputs through projected permutations, and does not read its output."""
    if op.name != "linalg.generic" or len(op.results) != 1:
        return False
    iterators = [str(a) for a in ir.ArrayAttr(op.attributes["iterator_types"])]
    if any("parallel" not in it for it in iterators):
        return False
    maps = [ir.AffineMapAttr(a).value for a in ir.ArrayAttr(op.attributes["indexing_maps"])]
    if map_dims(maps[-1]) != list(range(len(iterators))):
        return False
    n_in = len(op.operands) - 1
    inputs = zip(list(op.operands)[:n_in], maps, strict=False)
    if any(isinstance(v.type, ir.ShapedType) and map_dims(m) is None for v, m in inputs):
        return False
    block = op.regions[0].blocks[0]
    return not list(block.arguments[n_in].uses)


def element_type(value: ir.Value) -> str:
    typ = value.type
    return str(ir.ShapedType(typ).element_type) if isinstance(typ, ir.ShapedType) else str(typ)


@dataclass(frozen=True)
class Special:
    """A leaf the kernel holds itself: its operand, and the type the kernel gives it."""

    operand: Operand
    dtype: str


@dataclass
class _Node:
    """One value of a scalar function's tree, fixed when the function is made."""

    kind: str  # "special", "constant", "scalar", "leaf" or "op"
    value: ir.Value
    dims: tuple[int, ...]
    children: list[_Node]
    captured: list[_Node] = field(default_factory=list)  # an op's body's reads of the function's arguments


class Composer:
    """Scalar functions over one function's values (see the module docstring).

    ``inlined`` says whether a value's op is recomputed where read;
    ``tensor`` gives a leaf's buffer; ``constant`` a leaf's constant value
    (a fill without a buffer), or None. A function's tree is fixed when it
    is made: later changes to what is inlined do not change it.
    """

    def __init__(self, inlined: Callable[[ir.Value], bool], tensor: Callable[[ir.Value], Tensor],
                 constant: Callable[[ir.Value], float | None]):
        self.inlined = inlined
        self.tensor = tensor
        self.constant = constant

    def _tree(self, value: ir.Value, dims: tuple[int, ...], specials) -> _Node:
        if value in specials:
            return _Node("special", value, dims, [])
        if not isinstance(value.type, ir.ShapedType):
            # an argument of the function is read from its buffer of one element; anything else is a constant
            return _Node("leaf" if isinstance(owner(value), ir.Block) else "scalar", value, (), [])
        if self.constant(value) is not None:
            return _Node("constant", value, dims, [])
        if not self.inlined(value):
            return _Node("leaf", value, dims, [])
        op = owner(value)
        maps = [ir.AffineMapAttr(a).value for a in ir.ArrayAttr(op.attributes["indexing_maps"])]
        children = [self._tree(v, tuple(dims[j] for j in map_dims(m) or ()), specials)
                    for v, m in zip(list(op.operands)[:-1], maps, strict=False)]
        captured = [_Node("leaf", v, (), []) for v in captured_arguments(op)]
        return _Node("op", value, dims, children, captured)

    def leaves(self, value: ir.Value, dims: tuple[int, ...], specials: dict[ir.Value, Special]) -> list[ir.Value]:
        """The values read as tensors by ``value``'s tree (for readiness checks)."""
        found: list[ir.Value] = []

        def walk(node: _Node) -> None:
            if node.kind == "leaf" and isinstance(node.value.type, ir.ShapedType):
                found.append(node.value)
            for child in node.children:
                walk(child)
        walk(self._tree(value, dims, specials))
        return found

    def fn(self, value: ir.Value, dims: tuple[int, ...], specials: dict[ir.Value, Special] | None = None,
           dtype: str | None = None) -> ScalarFn:
        """``value`` at the point whose indices ``dims`` pick for each of its dimensions, as a ScalarFn giving
        ``dtype`` (``value``'s element type by default)."""
        specials = dict(specials or {})
        tree = self._tree(value, dims, specials)
        operands: list[Operand] = []
        keys: list[tuple] = []

        def collect(node: _Node) -> None:
            if node.kind == "leaf" and (node.value, node.dims) not in keys:
                keys.append((node.value, node.dims))
                operands.append(Operand("tensor", self.tensor(node.value), node.dims))
            for child in node.children + node.captured:
                collect(child)
        collect(tree)
        special_keys = list(specials)
        all_operands = tuple(operands) + tuple(specials[s].operand for s in special_keys)
        out_type = dtype or element_type(value)
        constants = {id(n): self.constant(n.value) for n in _nodes(tree) if n.kind == "constant"}

        def emit(tb: TextBuilder, values: list[str], indices: list[str]) -> str:
            env: dict = {key: values[i] for i, key in enumerate(keys)}
            for j, s in enumerate(special_keys):
                env[("special", s)] = convert(tb, values[len(keys) + j], specials[s].dtype, element_type(s))
            result = _emit(tb, tree, env, indices, constants)
            return convert(tb, result, element_type(value), out_type)
        return ScalarFn(all_operands, out_type, emit)


def _nodes(node: _Node) -> list[_Node]:
    out = [node]
    for child in node.children + node.captured:
        out += _nodes(child)
    return out


def _emit(tb: TextBuilder, node: _Node, env: dict, indices: list[str], constants: dict) -> str:
    value = node.value
    if node.kind == "special":
        return env[("special", value)]
    if node.kind == "constant":
        dtype = element_type(value)
        return tb.value(f"arith.constant {literal(constants[id(node)], dtype)} : {dtype}", "k")
    if node.kind == "scalar":  # a captured scalar constant
        return tb.value(f"arith.constant {owner(value).attributes['value']}", "k")
    if node.kind == "leaf":
        return env[(value, node.dims)]
    memo = ("op", value, node.dims)
    if memo in env:
        return env[memo]
    op = owner(value)
    inputs = [_emit(tb, child, env, indices, constants) for child in node.children]
    # the output's block argument, which an elementwise body does not read: a value of its type
    out_type = element_type(op.results[0])
    out_placeholder = tb.value(f"arith.constant {literal(0, out_type)} : {out_type}", "k")
    captured = {c.value: env[(c.value, c.dims)] for c in node.captured}
    result = emit_body(tb, op, inputs + [out_placeholder], [indices[d] for d in node.dims], captured)[0]
    env[memo] = result
    return result


def literal(value: float | int, dtype: str) -> str:
    """``value`` written as an MLIR constant of ``dtype`` (integers as integers, infinities and NaN as bits)."""
    if dtype.startswith("i"):
        return str(int(value))
    return _literal(value, dtype)


def _literal(value: float, dtype: str) -> str:
    if value != value:
        return "0x7FC00000" if dtype == "f32" else ("0x7E00" if dtype == "f16" else "0x7FC0")
    if value in (float("inf"), float("-inf")):
        bits = {"f32": ("0x7F800000", "0xFF800000"), "f16": ("0x7C00", "0xFC00"), "bf16": ("0x7F80", "0xFF80"),
                "f64": ("0x7FF0000000000000", "0xFFF0000000000000")}[dtype]
        return bits[0] if value > 0 else bits[1]
    return repr(float(value))
