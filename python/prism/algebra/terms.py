"""Translation of a ``func.func`` of Linalg ops on tensors into terms of :mod:`prism.algebra.ops`.

Each SSA value becomes a term over the function's arguments. Supported:
- ``linalg.matmul``, ``linalg.batch_matmul`` and every contraction with one M,
  one N and one K loop (transposed operands become ``transpose``);
- ``linalg.transpose`` of the last two axes, ``linalg.broadcast``, ``linalg.fill`` with a constant,
  ``tensor.empty`` as an init that is overwritten;
- ``linalg.generic`` whose body is ``arith``/``math`` arithmetic: inputs
  read through projected permutations become broadcasts (and transposes),
  and a body that folds its output with ``addf`` or ``maximumf`` (``maxnumf``,
  which ignores the NaN that starts linalg.softmax's maximum) over reduction
  loops becomes ``reduce_sum`` or ``reduce_max``. A unit axis read at the
  constant 0 (a statistic kept as ``tensor<..x1xf32>``) is dropped from an
  input (a ``reduce_sum`` over its one element, or the broadcast that
  inserted it taken away) and inserted into the output (``broadcast(t, axis,
  1)``);
- named elementwise ops (``linalg.add``, ``linalg.mul``, ...); the passes
  see them, and the other named ops that are not contractions, as generics
  (:func:`prism.infra.ir.normalize_program`); an arithmetic op of two
  constants is one constant when its float32 result is exact;
- ``tensor.concat`` and static, unit-stride ``tensor.extract_slice``;
- ``func.call`` of a function defined in the module (translated inline);
- reshapes at the function's boundary (:class:`View`): an argument read only through one
  ``tensor.collapse_shape`` is an argument of the collapsed shape, and a result that a
  ``tensor.expand_shape`` makes only to be returned is its source, so that a product whose rows run
  over several loops (collapsed by :func:`prism.infra.collapse.collapse_loops`) is a plain product;
- ``arith.extf`` and ``arith.truncf`` (in generics' bodies) as ``cast``; a
  contraction whose inputs are narrower than its output (f16 products
  accumulated in f32) as the product of its inputs cast to the output's type,
  as Linalg defines it.

Any other op becomes an opaque term, keyed by its name, attributes and
regions: equal only to the same op on equal operands, so it is compared and
never rewritten. Prism's own annotations (``prism.*`` attributes) do not
change a value and are left out of the keys.
"""

from __future__ import annotations

import math
import struct
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from types import SimpleNamespace

from egglog import EGraph
from mlir import ir

from prism.algebra import ops
from prism.infra.ir import element_name
from prism.infra.maps import map_dims
from prism.search.family import analyze_contraction
from prism.search.space import Contraction


@dataclass(frozen=True, eq=False)
class Term:
    """A term of the algebra as plain Python data: an operator, its operands and its integer/float/string attributes.

    ``op`` names a constructor of :mod:`prism.algebra.ops` (``arg``, ``splat``,
    ``opaque``, ``matmul``, ``add``, ``reduce_sum``, ``slice_``...). Terms
    compare structurally; :func:`to_egglog` builds the e-graph term, and
    prism.algebra.to_mlir turns terms back into MLIR.
    """

    op: str
    args: tuple[Term, ...] = ()
    attrs: tuple[int | float | str, ...] = ()
    # Terms are hashed often (as keys of every map over subterms) and are deep: each keeps its hash, so that
    # hashing one costs one tuple hash of its operands' kept hashes, not a walk of the whole term.
    _hash: int = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "_hash", hash((self.op, self.args, self.attrs)))

    def __hash__(self) -> int:
        return self._hash

    def __eq__(self, other: object) -> bool:
        if self is other:
            return True
        if not isinstance(other, Term) or self._hash != other._hash:
            return False
        return self.op == other.op and self.attrs == other.attrs and self.args == other.args


def _builder(name: str, arity: int) -> Callable[..., Term]:
    def build(*operands: object) -> Term:
        return Term(name, tuple(operands[:arity]), tuple(operands[arity:]))  # type: ignore[arg-type]
    return build


# The constructors, with the signatures of prism.algebra.ops': A.matmul(a, b), A.slice_(a, axis, offset, size).
A = SimpleNamespace(
    arg=lambda index: Term("arg", (), (index,)),
    splat=lambda value: Term("splat", (), (float(value),)),
    opaque=lambda key, operands: Term("opaque", tuple(operands), (key,)),
    cast=lambda operand, element: Term("cast", (operand,), (element,)),
    **{name: _builder(name, 1) for name in (*ops.UNARY, "transpose", "reduce_sum", "reduce_max", "broadcast",
                                            "slice_")},
    **{name: _builder(name, 2) for name in (*ops.BINARY, "matmul", "concat")},
)
ZERO = A.splat(0.0)
NEGATIVE_INFINITY = A.splat(float("-inf"))


def subterms(terms: Iterable[Term]) -> list[Term]:
    """Every distinct subterm of ``terms`` (themselves included), each once, in depth-first order."""
    found: dict[Term, None] = {}
    stack = list(reversed(list(terms)))
    while stack:
        term = stack.pop()
        if term not in found:
            found[term] = None
            stack.extend(reversed(term.args))
    return list(found)


def argument_indices(terms: Iterable[Term]) -> set[int]:
    """The indices of the arguments that ``terms`` read."""
    return {term.attrs[0] for term in subterms(terms) if term.op == "arg"}


def renamed_arguments(term: Term, mapping: dict[int, int], memo: dict[Term, Term] | None = None) -> Term:
    """``term`` with each argument index in ``mapping`` replaced by its value (others kept); a subterm that
    reads no renamed argument is kept as the same object, and a shared one is renamed once."""
    memo = {} if memo is None else memo
    if term not in memo:
        if term.op == "arg":
            index = term.attrs[0]
            memo[term] = A.arg(mapping[index]) if mapping.get(index, index) != index else term
        elif not term.args:
            memo[term] = term
        else:
            args = tuple(renamed_arguments(arg, mapping, memo) for arg in term.args)
            same = all(new is old for new, old in zip(args, term.args, strict=True))
            memo[term] = term if same else Term(term.op, args, term.attrs)
    return memo[term]


def to_egglog(term: Term, memo: dict[Term, ops.Tensor] | None = None) -> ops.Tensor:
    """The egglog term of ``term`` (shared subterms are built once)."""
    memo = {} if memo is None else memo
    if term in memo:
        return memo[term]
    if term.op == "arg":
        built = ops.Tensor.arg(term.attrs[0])
    elif term.op == "splat":
        built = ops.Tensor.splat(term.attrs[0])
    elif term.op == "opaque":
        operands = ops.TensorList.nil()
        for operand in reversed(term.args):
            operands = ops.TensorList.cons(to_egglog(operand, memo), operands)
        built = ops.Tensor.opaque(term.attrs[0], operands)
    elif term.op == "cast":
        built = ops.cast(to_egglog(term.args[0], memo), ops.ELEMENT_CODES[str(term.attrs[0])])
    else:
        constructor = getattr(ops, term.op)
        built = constructor(*(to_egglog(a, memo) for a in term.args), *term.attrs)
    memo[term] = built
    return built

_BINARY = {"arith.addf": A.add, "arith.subf": A.sub, "arith.mulf": A.mul, "arith.divf": A.div,
           "arith.maximumf": A.maximum, "arith.maxnumf": A.maximum}
_UNARY = {"arith.negf": A.neg, "math.exp": A.exp, "math.rsqrt": A.rsqrt, "math.sqrt": A.sqrt}
_NAMED_BINARY = {"linalg.add": A.add, "linalg.sub": A.sub, "linalg.mul": A.mul, "linalg.div": A.div,
                 "linalg.max": A.maximum}
_NAMED_UNARY = {"linalg.exp": A.exp, "linalg.negf": A.neg, "linalg.rsqrt": A.rsqrt, "linalg.sqrt": A.sqrt}
_REDUCERS = {"arith.addf": A.reduce_sum, "arith.maximumf": A.reduce_max, "arith.maxnumf": A.reduce_max}
_MAX_CALL_DEPTH = 8


@dataclass(frozen=True)
class View:
    """A tensor of static ``shape`` seen through a reshape at a function's boundary: collapsed by
    ``reassociation`` (per collapsed axis, the axes of ``shape`` it joins) as an argument is read, or expanded
    from the collapsed tensor into ``shape`` as a result is returned."""

    reassociation: tuple[tuple[int, ...], ...]
    shape: tuple[int, ...]

    def collapsed_shape(self) -> tuple[int, ...]:
        return tuple(math.prod(self.shape[d] for d in group) for group in self.reassociation)


@dataclass(frozen=True)
class Views:
    """The boundary reshapes of a function (:class:`View`, None for a tensor seen as it is), per argument and per
    result. Terms over ``arg(i)`` mean the collapsed argument; two programs compare only under equal views."""

    args: tuple[View | None, ...]
    results: tuple[View | None, ...]

    def __bool__(self) -> bool:
        return any(v is not None for v in (*self.args, *self.results))


@dataclass
class Program:
    """One function as terms: its arguments' shapes, its results, and the ops kept opaque (with their locations).

    ``arg_shapes`` has one entry per argument: a tuple of sizes (None where
    dynamic) for a ranked tensor, None for anything else: the collapsed shape
    of an argument read through a boundary reshape (``views``). ``arg_elements``
    gives each argument's element type ("f16", "bf16", "f32", "f64"; None
    for anything else); a program built without them is over f32.
    """

    name: str
    arg_shapes: list[tuple[int | None, ...] | None]
    results: list[Term]
    opaque: list[tuple[str, ir.Location | None]] = field(default_factory=list)  # what, and where
    nests: int | None = None  # the loop nests (Linalg ops but fills) the function is written in, when translated
    arg_elements: list[str | None] | None = None
    views: Views | None = None  # the boundary reshapes, where the function has any

    def elements(self) -> list[str | None]:
        """Each argument's element type (f32 for every tensor of a program built without them)."""
        if self.arg_elements is not None:
            return list(self.arg_elements)
        return [None if shape is None else "f32" for shape in self.arg_shapes]

    def register_shapes(self, egraph: EGraph) -> None:
        """Add the rank and static sizes of every tensor argument to ``egraph`` (a function may have none)."""
        facts = self.shape_facts()
        if facts:
            egraph.register(*facts)

    def shape_facts(self) -> list[object]:
        """The rank, static sizes and element type of every tensor argument, as egglog actions."""
        facts = []
        for index, (shape, element) in enumerate(zip(self.arg_shapes, self.elements(), strict=True)):
            if shape is None:
                continue
            arg = ops.Tensor.arg(index)
            facts.append(ops.set_rank(arg, len(shape)))
            if element is not None:
                facts.append(ops.set_dtype(arg, element))
            facts += [ops.set_dim(arg, axis, size) for axis, size in enumerate(shape) if size is not None]
        return facts


def _shape_of(type_: ir.Type) -> tuple[int | None, ...] | None:
    if not isinstance(type_, ir.RankedTensorType):
        return None
    return tuple(None if type_.is_dynamic_dim(d) else type_.get_dim_size(d) for d in range(type_.rank))


def translate(func: ir.Operation, views: bool = True) -> Program:
    """The terms of ``func``'s results (see the module docstring); with ``views`` False, a boundary reshape is an
    opaque op like any other."""
    block = func.regions[0].blocks[0]
    elements = [element_name(arg.type) if isinstance(arg.type, ir.RankedTensorType) else None
                for arg in block.arguments]
    translator = _Translator(func.parent, elements)
    values: dict[ir.Value, Term] = {arg: A.arg(i) for i, arg in enumerate(block.arguments)}
    seen = boundary_views(block) if views else None
    if seen:
        translator.views, translator.view_block = seen, block
    results = translator.block(block, values, depth=0)
    name = ir.StringAttr(func.attributes["sym_name"]).value
    # The opaque ops the results depend on come first: they, not a constant beside them, are what the
    # algebra cannot express.
    keys = [term.attrs[0] for term in subterms(results) if term.op == "opaque"]
    used = [translator.opaque_keys[key] for key in keys if key in translator.opaque_keys]
    opaque = list(dict.fromkeys([*used, *translator.opaque]))
    shapes = [_shape_of(arg.type) if seen is None or seen.args[i] is None else seen.args[i].collapsed_shape()
              for i, arg in enumerate(block.arguments)]
    return Program(name, shapes, results, opaque, loop_nests(func), elements, seen or None)


def _reassociation(op: ir.Operation) -> tuple[tuple[int, ...], ...]:
    groups = ir.ArrayAttr(op.attributes["reassociation"])
    return tuple(tuple(ir.IntegerAttr(d).value for d in group) for group in groups)


def _static(type_: ir.Type) -> bool:
    return isinstance(type_, ir.RankedTensorType) and type_.has_static_shape


def boundary_views(block: ir.Block) -> Views:
    """The boundary reshapes of a function's body ``block`` (see :class:`Views`): an argument of static shape
    whose every use is a ``tensor.collapse_shape`` by one reassociation, and a returned value that a
    ``tensor.expand_shape`` of static shapes makes for the return alone."""
    args: list[View | None] = []
    for arg in block.arguments:
        users = [use.owner for use in arg.uses]
        groups = {_reassociation(u.operation) for u in users if u.operation.name == "tensor.collapse_shape"}
        whole = users and len(groups) == 1 and all(u.operation.name == "tensor.collapse_shape"
                                                    and _static(u.operation.results[0].type) for u in users)
        args.append(View(groups.pop(), tuple(ir.RankedTensorType(arg.type).shape))
                    if whole and _static(arg.type) else None)
    terminator = list(block.operations)[-1].operation
    results: list[View | None] = []
    for value in terminator.operands if terminator.name == "func.return" else []:
        owner = value.owner
        expanded = not isinstance(owner, ir.Block) and owner.name == "tensor.expand_shape" \
            and _static(value.type) and _static(owner.operation.operands[0].type) \
            and all(use.owner.operation == terminator for use in value.uses)
        results.append(View(_reassociation(owner.operation), tuple(ir.RankedTensorType(value.type).shape))
                       if expanded else None)
    return Views(tuple(args), tuple(results))


def loop_nests(func: ir.Operation) -> int:
    """The Linalg ops of ``func``'s body but fills: the loop nests it is written in."""
    return sum(1 for op in func.regions[0].blocks[0].operations
               if op.operation.name.startswith("linalg.") and op.operation.name != "linalg.fill")


def _static_sizes(value: ir.Value) -> list[int]:
    type_ = ir.RankedTensorType(value.type)
    return [-1 if type_.is_dynamic_dim(d) else type_.get_dim_size(d) for d in range(type_.rank)]


def _element(value: ir.Value) -> str | None:
    type_ = value.type
    return str(type_.element_type) if isinstance(type_, ir.ShapedType) else None


def element_of(term: Term, arg_elements: list[str | None], known: dict[Term, str | None] | None = None) -> str | None:
    """The element type ``term`` computes in: a cast's own, an argument's, else its tensor operands' (None for a
    splat, which takes its use's, and for an opaque term)."""
    known = {} if known is None else known
    if term in known:
        return known[term]
    stack = [term]
    while stack:  # operands first, without recursion: terms may be deep
        top = stack[-1]
        pending = [arg for arg in top.args if arg not in known]
        if pending and top.op not in ("cast", "opaque"):
            stack.extend(pending)
            continue
        stack.pop()
        if top.op == "cast":
            known[top] = str(top.attrs[0])
        elif top.op == "arg":
            index = top.attrs[0]
            known[top] = arg_elements[index] if index < len(arg_elements) else None
        elif top.op in ("splat", "opaque"):
            known[top] = None
        else:
            known[top] = next((known[arg] for arg in top.args if known[arg] is not None), None)
    return known[term]


def _typed(term: Term, output: str | None, arg_elements: list[str | None], known: dict[Term, str | None]) -> Term:
    """``term``, marked with its element type ``output`` when the op's terms do not compute in it.

    Casts carry element types through the algebra, so an op's term normally
    computes in its result's type already. Where it does not (an op whose
    conversion the translation does not spell as casts), the mark keeps a
    product accumulated in f32 apart from one accumulated in f16: an opaque
    wrapper, equal only to the same conversion of an equal term.
    """
    computed = element_of(term, arg_elements, known)
    if output is None or computed is None or computed == output:
        return term
    return A.opaque(f"computed in {output} from {computed}", [term])


def _splat(value: float) -> Term:
    """The constant ``value`` everywhere; zero is the one ZERO term, so that inits can be recognized."""
    return ZERO if value == 0.0 else A.splat(value)


_ARITHMETIC: dict[str, Callable[[float, float], float]] = {
    "add": lambda x, y: x + y, "sub": lambda x, y: x - y, "mul": lambda x, y: x * y,
    "div": lambda x, y: x / y if y else math.nan, "maximum": max}


def _folded(term: Term) -> Term:
    """``term``, or one constant when it is an arithmetic op of two constants whose float32 result is exact.

    Exact: the float64 result equals its float32 rounding. A sum, difference,
    product or maximum of two float32 values is exact in float64, and a
    quotient whose float64 rounding is a float32 is exactly that float32, so
    the folded constant is the real value the op computes; an inexact result
    stays an op, as the program rounds it. The laws ``*-of-constants`` of
    prism.algebra.laws fold the same way.
    """
    if term.op not in _ARITHMETIC or any(arg.op != "splat" for arg in term.args):
        return term
    value = _ARITHMETIC[term.op](term.args[0].attrs[0], term.args[1].attrs[0])
    if not math.isfinite(value):
        return term
    try:
        rounded = struct.unpack("f", struct.pack("f", value))[0]
    except OverflowError:
        return term
    return _splat(value) if rounded == value else term


def _float_constant(op: ir.Operation) -> float | None:
    if op.name == "arith.constant" and isinstance(op.attributes["value"], ir.FloatAttr):
        return ir.FloatAttr(op.attributes["value"]).value
    return None


def _unit_reads(op: ir.Operation, operand: ir.Value, affine_map: ir.AffineMap) -> list[int | None] | None:
    """The loop each axis of ``operand`` is read at, None for a unit axis read at the constant 0; None when the
    map has other results (or a constant 0 on an axis that is not of size 1)."""
    reads: list[int | None] = []
    for axis, expr in enumerate(affine_map.results):
        if isinstance(expr, ir.AffineDimExpr):
            reads.append(expr.position)
        elif isinstance(expr, ir.AffineConstantExpr) and expr.value == 0 and _unit_axis(operand, axis):
            reads.append(None)
        else:
            return None
    return reads


def _unit_axis(value: ir.Value, axis: int) -> bool:
    type_ = value.type
    return isinstance(type_, ir.RankedTensorType) and not type_.is_dynamic_dim(axis) and type_.get_dim_size(axis) == 1


def _drop_unit(term: Term, axis: int) -> Term:
    """``term`` without its unit ``axis``: the sum over that one element (a unit axis inserted by a broadcast is
    simply taken away again; a splat has every shape)."""
    if term.op == "splat":
        return term
    if term.op == "broadcast" and term.attrs == (axis, 1):
        return term.args[0]
    return A.reduce_sum(term, axis)


def _without_units(term: Term, reads: list[int | None]) -> Term:
    """``term`` with the unit axes that ``reads`` reads at the constant 0 dropped."""
    for axis in reversed(range(len(reads))):
        if reads[axis] is None:
            term = _drop_unit(term, axis)
    return term


def _with_units(term: Term, reads: list[int | None]) -> Term:
    """``term`` with a unit axis inserted where ``reads`` writes at the constant 0."""
    for axis, loop in enumerate(reads):
        if loop is None:
            term = A.broadcast(term, axis, 1)
    return term


class _Translator:
    """Walks blocks and builds terms; remembers the ops it had to keep opaque."""

    def __init__(self, symbols: ir.Operation | None, arg_elements: list[str | None] | None = None):
        self.arg_elements = arg_elements or []
        self.elements: dict[Term, str | None] = {}  # each term's element type, as far as computed
        self.functions: dict[str, ir.Operation] = {}
        if symbols is not None and symbols.name == "builtin.module":
            for op in symbols.regions[0].blocks[0].operations:
                if op.operation.name == "func.func" and len(op.operation.regions[0].blocks):
                    self.functions[ir.StringAttr(op.operation.attributes["sym_name"]).value] = op.operation
        self.opaque: list[tuple[str, ir.Location | None]] = []
        self.opaque_keys: dict[str, tuple[str, ir.Location | None]] = {}  # the op behind each opaque key
        self.handlers = self._handlers()
        self.views: Views | None = None  # the function's boundary reshapes, read as what they view
        self.view_block: ir.Block | None = None  # the function's body, whose arguments the views collapse

    def block(self, block: ir.Block, values: dict[ir.Value, Term], depth: int) -> list[Term]:
        """Translate ``block``'s ops in order; returns the terms its terminator yields."""
        for op in block.operations:
            op = op.operation
            if op.name in ("func.return", "linalg.yield"):
                return [self.term(values, v) for v in op.operands]
            for index, term in enumerate(self.op(op, values, depth)):
                values[op.results[index]] = term
        raise ValueError("block without a terminator")

    def term(self, values: dict[ir.Value, Term], value: ir.Value) -> Term:
        if value not in values:  # defined outside what is being translated (a region's capture)
            owner = value.owner
            constant = _float_constant(owner.operation) if isinstance(owner, ir.OpView) else None
            return _splat(constant) if constant is not None else self._opaque_value(value)
        return values[value]

    def _opaque_value(self, value: ir.Value) -> Term:
        """A value defined where translation does not reach, keyed by what defines it, not by its SSA name.

        SSA names are local to a printout: two programs may give one name to
        different values, so the key is the defining op (or the block, for a
        block argument) and the result position.
        """
        owner = value.owner
        if isinstance(owner, ir.Block):
            where = f"argument {ir.BlockArgument(value).arg_number} of {owner}"
            self.opaque.append((f"captured value {value.get_name()}", None))
        else:
            where = f"result {ir.OpResult(value).result_number} of {owner}"
            self.opaque.append((f"captured value {value.get_name()}", owner.location))
        return A.opaque(f"captured: {where}", ())

    def op(self, op: ir.Operation, values: dict[ir.Value, Term], depth: int) -> list[Term]:
        """The terms of ``op``'s results."""
        if depth == 0 and self.views and op.name in ("tensor.collapse_shape", "tensor.expand_shape"):
            viewed = self._viewed(op, values)
            if viewed is not None:
                return [viewed]
        found = None
        analysis = analyze_contraction(op) if op.name.startswith("linalg.") else None
        if analysis is not None:
            found = self.contraction(op, analysis, values)
        handler = self.handlers.get(op.name)
        if found is None and handler is not None:
            found = handler(op, values, depth)
        if found is None:
            return self.opaque_op(op, values)
        return [_typed(term, _element(result), self.arg_elements, self.elements)
                for term, result in zip(found, op.results, strict=True)]

    def _handlers(self) -> dict[str, Callable[[ir.Operation, dict[ir.Value, Term], int], list[Term] | None]]:
        return {
            "arith.constant": lambda op, values, depth: self.constant(op),
            "tensor.empty": lambda op, values, depth: [self.uninitialized(op)],
            "linalg.fill": lambda op, values, depth: self.fill(op, values),
            "linalg.transpose": lambda op, values, depth: self.transpose(op, values),
            "linalg.broadcast": lambda op, values, depth: self.broadcast(op, values),
            "linalg.generic": lambda op, values, depth: self.generic(op, values),
            "tensor.concat": lambda op, values, depth: self.concat(op, values),
            "tensor.extract_slice": lambda op, values, depth: self.extract_slice(op, values),
            "func.call": self.call,
            "arith.extf": lambda op, values, depth: self.cast(op, values),
            "arith.truncf": lambda op, values, depth: self.cast(op, values),
            **{name: (lambda op, values, depth, f=f: [_folded(f(self.term(values, op.operands[0]),
                                                                self.term(values, op.operands[1])))])
               for name, f in {**_BINARY, **_NAMED_BINARY}.items()},
            **{name: (lambda op, values, depth, f=f: [f(self.term(values, op.operands[0]))])
               for name, f in {**_UNARY, **_NAMED_UNARY}.items()},
        }

    def cast(self, op: ir.Operation, values: dict[ir.Value, Term]) -> list[Term] | None:
        """A scalar ``extf``/``truncf`` (in a generic's body) between float types of the algebra."""
        element = element_name(op.results[0].type)
        if element is None or element_name(op.operands[0].type) is None or isinstance(op.results[0].type,
                                                                                       ir.ShapedType):
            return None
        return [A.cast(self.term(values, op.operands[0]), element)]

    def constant(self, op: ir.Operation) -> list[Term] | None:
        value = _float_constant(op)
        return None if value is None else [_splat(value)]

    def fill(self, op: ir.Operation, values: dict[ir.Value, Term]) -> list[Term] | None:
        owner = op.operands[0].owner
        value = _float_constant(owner.operation) if isinstance(owner, ir.OpView) else None
        return None if value is None else [_splat(value)]

    def uninitialized(self, op: ir.Operation) -> Term:
        """An empty tensor: its contents are undefined, so it equals nothing but itself."""
        return A.opaque(f"uninitialized {op.results[0].type}", ())

    def transpose(self, op: ir.Operation, values: dict[ir.Value, Term]) -> list[Term] | None:
        perm = list(ir.DenseI64ArrayAttr(op.attributes["permutation"]))
        rank = len(perm)
        if rank < 2 or perm != [*range(rank - 2), rank - 1, rank - 2]:
            return None
        return [A.transpose(self.term(values, op.operands[0]))]

    def broadcast(self, op: ir.Operation, values: dict[ir.Value, Term]) -> list[Term]:
        """``linalg.broadcast``: one broadcast per added dimension, in increasing order."""
        sizes = _static_sizes(op.results[0])
        term = self.term(values, op.operands[0])
        for axis in sorted(ir.DenseI64ArrayAttr(op.attributes["dimensions"])):
            term = A.broadcast(term, axis, sizes[axis])
        return [term]

    def contraction(self, op: ir.Operation, analysis: Contraction,
                    values: dict[ir.Value, Term]) -> list[Term] | None:
        """``init + A @ B`` with A as [batch.., m, k] and B as [batch.., k, n], transposing where the maps say.

        The batch loops are those of the output, in its order; an operand that reads only some of them (one
        activation against per-head weights) is broadcast along the others.
        """
        roles = analysis.roles
        if sorted(r for r in roles if r != "batch") != ["k", "m", "n"]:
            return None
        maps = [map_dims(ir.AffineMapAttr(m).value) for m in ir.ArrayAttr(op.attributes["indexing_maps"])]
        orders = [[f"batch{d}" if roles[d] == "batch" else roles[d] for d in dims] for dims in maps]
        batch = [name for name in orders[2] if name.startswith("batch")]
        extents = {f"batch{d}": -1 if size is None else size
                   for d, size in enumerate(analysis.extents) if roles[d] == "batch"}
        lhs = self._oriented(self.term(values, op.operands[0]), orders[0], [*batch, "m", "k"], extents)
        rhs = self._oriented(self.term(values, op.operands[1]), orders[1], [*batch, "k", "n"], extents)
        if lhs is None or rhs is None or orders[2] not in ([*batch, "m", "n"], [*batch, "n", "m"]):
            return None
        # Cast after orienting: a transposed f16 operand is the transpose of the f16 tensor, widened as read.
        lhs, rhs = (self._accumulated(op, term, v) for term, v in zip((lhs, rhs), op.operands[:2], strict=True))
        if lhs is None or rhs is None:
            return None
        product = A.matmul(lhs, rhs)
        if orders[2] != [*batch, "m", "n"]:
            product = A.transpose(product)
        init = self.term(values, op.operands[2])
        return [product if init == ZERO else A.add(init, product)]

    def _accumulated(self, op: ir.Operation, term: Term, operand: ir.Value) -> Term | None:
        """A contraction's input as its product reads it: cast to the accumulator's type where narrower (Linalg
        converts each input element before the multiply). None for a generic whose body multiplies in
        another type, which the product form would not describe."""
        accumulator, element = element_name(op.results[0].type), element_name(operand.type)
        if accumulator is None or element is None or element == accumulator:
            return term
        if op.name == "linalg.generic":
            body = op.regions[0].blocks[0]
            if any(inner.operation.name == "arith.mulf" and element_name(inner.operation.results[0].type)
                   != accumulator for inner in body.operations):
                return None
        return A.cast(term, accumulator)

    @staticmethod
    def _oriented(term: Term, order: list[str], wanted: list[str], extents: dict[str, int]) -> Term | None:
        """``term``, read in ``order``, as a tensor in ``wanted`` order: its last two axes swapped, and the batch
        axes it lacks broadcast (``extents`` gives their sizes, -1 where dynamic)."""
        missing = [name for name in wanted[:-2] if name not in order]
        if [name for name in order if name.startswith("batch")] != [n for n in wanted[:-2] if n not in missing]:
            return None
        for axis, name in enumerate(wanted[:-2]):
            if name in missing:
                term = A.broadcast(term, axis, extents[name])
        order = [*wanted[:-2], *order[len(wanted) - 2 - len(missing):]]
        if order == wanted:
            return term
        if order == [*wanted[:-2], wanted[-1], wanted[-2]]:
            return A.transpose(term)
        return None

    def generic(self, op: ir.Operation, values: dict[ir.Value, Term]) -> list[Term] | None:
        """An elementwise, broadcasting or reducing generic (see the module docstring)."""
        reads = [_unit_reads(op, operand, ir.AffineMapAttr(m).value)
                 for operand, m in zip(op.operands, ir.ArrayAttr(op.attributes["indexing_maps"]), strict=True)]
        iterators = [str(it) for it in ir.ArrayAttr(op.attributes["iterator_types"])]
        n_inputs = len(op.operands) - len(op.results)
        if len(op.results) != 1 or any(r is None for r in reads):
            return None
        maps = [[d for d in r if d is not None] for r in reads]
        out_dims = maps[-1]
        reduced = [d for d, it in enumerate(iterators) if "reduction" in it]
        if sorted(out_dims) != out_dims or set(out_dims) | set(reduced) != set(range(len(iterators))):
            return None
        extents = self._loop_extents(op, reads)
        body = op.regions[0].blocks[0]
        inner: dict[ir.Value, Term] = dict(values)
        for arg, operand, read in zip(body.arguments[:n_inputs], op.operands[:n_inputs], reads[:n_inputs],
                                      strict=True):
            lifted = self._lift(_without_units(self.term(values, operand), read), [d for d in read if d is not None],
                                extents)
            if lifted is None:
                return None
            inner[arg] = lifted
        init = _without_units(self.term(values, op.operands[n_inputs]), reads[-1])
        out_arg = body.arguments[n_inputs]
        if not reduced:
            inner[out_arg] = init
            found = self.block(body, inner, depth=0)
        else:
            found = self._reduction(body, inner, out_arg, init, reduced)
        return None if found is None else [_with_units(term, reads[-1]) for term in found]

    def _reduction(self, body: ir.Block, inner: dict[ir.Value, Term], out_arg: ir.Value, init: Term,
                   reduced: list[int]) -> list[Term] | None:
        """``combine(init, reduce(expr))`` for a body that yields ``combine(out, expr)``."""
        yielded = body.operations[len(body.operations) - 1].operands[0]
        combine = yielded.owner
        if not isinstance(combine, ir.OpView) or combine.operation.name not in _REDUCERS:
            return None
        others = [v for v in combine.operation.operands if v != out_arg]
        if len(others) != 1 or len(combine.operation.operands) != 2:
            return None
        marker = A.opaque("reduction-output", ())
        inner[out_arg] = marker
        for inner_op in body.operations:
            inner_op = inner_op.operation
            if inner_op == combine.operation or inner_op.name == "linalg.yield":
                continue
            if out_arg in list(inner_op.operands):
                return None  # the output is read other than by the fold
            for index, term in enumerate(self.op(inner_op, inner, 0)):
                inner[inner_op.results[index]] = term
        reduced_term = self.term(inner, others[0])
        reducer = _REDUCERS[combine.operation.name]
        for axis in sorted(reduced, reverse=True):
            reduced_term = reducer(reduced_term, axis)
        neutral = init == (ZERO if reducer is A.reduce_sum else NEGATIVE_INFINITY) or (
            combine.operation.name == "arith.maxnumf" and init.op == "splat" and math.isnan(init.attrs[0]))
        fold = _BINARY[combine.operation.name]
        return [reduced_term if neutral else fold(init, reduced_term)]

    @staticmethod
    def _loop_extents(op: ir.Operation, reads: list[list[int | None]]) -> list[int]:
        extents = [-1] * len(ir.ArrayAttr(op.attributes["iterator_types"]))
        for operand, read in zip(op.operands, reads, strict=True):
            if not isinstance(operand.type, ir.RankedTensorType):
                continue
            for size, loop in zip(_static_sizes(operand), read, strict=True):
                if size >= 0 and loop is not None:
                    extents[loop] = size
        return extents

    @staticmethod
    def _lift(term: Term, dims: list[int], extents: list[int]) -> Term | None:
        """``term``, read through a map onto loops ``dims``, broadcast to every loop."""
        if not dims and term.op == "splat":  # a constant already fits every shape
            return term
        if sorted(dims) != dims:
            if len(dims) >= 2 and dims[:-2] + [dims[-1], dims[-2]] == sorted(dims):
                term, dims = A.transpose(term), sorted(dims)
            else:
                return None
        for loop in range(len(extents)):
            if loop not in dims:
                term = A.broadcast(term, loop, extents[loop])
        return term

    def concat(self, op: ir.Operation, values: dict[ir.Value, Term]) -> list[Term]:
        axis = ir.IntegerAttr(op.attributes["dim"]).value
        terms = [self.term(values, v) for v in op.operands]
        result = terms[0]
        for term in terms[1:]:
            result = A.concat(result, term, axis)
        return [result]

    def extract_slice(self, op: ir.Operation, values: dict[ir.Value, Term]) -> list[Term] | None:
        offsets = list(ir.DenseI64ArrayAttr(op.attributes["static_offsets"]))
        sizes = list(ir.DenseI64ArrayAttr(op.attributes["static_sizes"]))
        strides = list(ir.DenseI64ArrayAttr(op.attributes["static_strides"]))
        source_sizes = _static_sizes(op.operands[0])
        if len(op.operands) > 1 or any(s != 1 for s in strides) or len(_static_sizes(op.results[0])) != len(sizes):
            return None  # dynamic offsets or sizes, strides or rank reduction
        term = self.term(values, op.operands[0])
        for axis, (offset, size, full) in enumerate(zip(offsets, sizes, source_sizes, strict=True)):
            if offset != 0 or size != full:
                term = A.slice_(term, axis, offset, size)
        return [term]

    def call(self, op: ir.Operation, values: dict[ir.Value, Term], depth: int) -> list[Term] | None:
        callee = self.functions.get(ir.FlatSymbolRefAttr(op.attributes["callee"]).value)
        if callee is None or depth >= _MAX_CALL_DEPTH:
            return None
        block = callee.regions[0].blocks[0]
        inner = {arg: self.term(values, v) for arg, v in zip(block.arguments, op.operands, strict=True)}
        return self.block(block, inner, depth + 1)

    def _viewed(self, op: ir.Operation, values: dict[ir.Value, Term]) -> Term | None:
        """A boundary reshape's term: the argument it collapses, or the value it expands to be returned."""
        assert self.views is not None
        source = op.operands[0]
        if op.name == "tensor.collapse_shape":
            viewed = source.owner == self.view_block and self.views.args[ir.BlockArgument(source).arg_number]
            return values[source] if viewed else None
        returned = {use.owner.operation.name for use in op.results[0].uses} == {"func.return"}
        viewed = returned and _static(op.results[0].type) and _static(source.type)
        return self.term(values, source) if viewed else None

    def opaque_op(self, op: ir.Operation, values: dict[ir.Value, Term]) -> list[Term]:
        """Terms that stand for ``op``'s results and equal only the same op on equal operands."""
        named = [op.attributes[i] for i in range(len(op.attributes))]
        attributes = {n.name: str(n.attr) for n in named if not n.name.startswith("prism.")}
        regions = "".join(str(region.blocks[0]) for region in op.regions if len(region.blocks))
        key = f"{op.name} {sorted(attributes.items())} {regions}"
        operands = [self.term(values, value) for value in op.operands]
        self.opaque.append((op.name, op.location))
        self.opaque_keys.update({f"{key} #{index}": (op.name, op.location) for index in range(len(op.results))})
        return [A.opaque(f"{key} #{index}", operands) for index in range(len(op.results))]
