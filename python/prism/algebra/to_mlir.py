"""Terms back into MLIR: a function of Linalg ops on tensors that computes given terms.

The inverse of :mod:`prism.algebra.terms`, for programs with static shapes whose
tensors share one float element type (the caller checks it; terms carry no
element types): ``matmul`` becomes ``linalg.matmul`` (``batch_matmul``
at rank 3) into a zero-filled init, ``transpose`` a ``linalg.transpose``,
pointwise operators and broadcasts ``linalg.generic`` ops with
``arith``/``math`` bodies (splats become constants in the body, a broadcast
an input map that drops the new axis), ``reduce_sum``/``reduce_max``
reducing generics, ``concat`` ``tensor.concat`` and ``slice_``
``tensor.extract_slice``. A pointwise operand or broadcast with one use is
computed inside its consumer's generic (see :func:`fused_terms`), so a chain of
pointwise ops is one loop nest, as in hand-written Linalg.
Shared subterms are emitted once. Opaque terms stand for ops the algebra
cannot express and cannot be emitted.

Before (terms)::

    matmul(arg(0), concat(arg(1), arg(2), 1))

After::

    func.func @f(%arg0: tensor<16x64xf32>, %arg1: tensor<64x32xf32>, %arg2: tensor<64x32xf32>) -> tensor<16x64xf32> {
      %0 = tensor.concat dim(1) %arg1, %arg2 : (...) -> tensor<64x64xf32>
      ...
      %3 = linalg.matmul ins(%arg0, %0 : ...) outs(%2 : tensor<16x64xf32>) -> tensor<16x64xf32>
      return %3 : tensor<16x64xf32>
    }
"""

from __future__ import annotations

import math
import struct
from dataclasses import dataclass

from prism.algebra import recognize
from prism.algebra.terms import Term, argument_indices, renamed_arguments, subterms
from prism.infra.errors import UnsupportedOp

Shape = tuple[int, ...]

_BINARY_OPS = {"add": "arith.addf", "sub": "arith.subf", "mul": "arith.mulf", "div": "arith.divf",
               "maximum": "arith.maximumf"}
_UNARY_OPS = {"neg": "arith.negf", "exp": "math.exp", "rsqrt": "math.rsqrt", "sqrt": "math.sqrt"}
_REDUCE_OPS = {"reduce_sum": ("arith.addf", 0.0), "reduce_max": ("arith.maximumf", -math.inf)}
_LOOPS = "abcdefgh"
# Operators computed inside a consumer's generic when they have one use.
FUSIBLE = frozenset({*_BINARY_OPS, *_UNARY_OPS, "broadcast"})
# Operators applied element by element: a product's epilogue may be one.
POINTWISE = frozenset({*_BINARY_OPS, *_UNARY_OPS})


def use_counts(results: list[Term]) -> dict[Term, int]:
    """How often each subterm of ``results`` is used: by a result, or as an operand of another (shared) subterm."""
    counts: dict[Term, int] = {}
    for term in results:
        counts[term] = counts.get(term, 0) + 1
    for term in subterms(results):
        for arg in term.args:
            counts[arg] = counts.get(arg, 0) + 1
    return counts


def fused_terms(results: list[Term]) -> set[Term]:
    """The subterms of ``results`` that are computed inside their consumer's generic instead of materialized.

    Pointwise operators and broadcasts are pure, so computing one inside its
    consumer's loop is always legal; with exactly one use it never repeats
    work, and it saves writing and reading the intermediate tensor. So a
    pointwise operator or broadcast is fused when it has one use and that
    use is a generic (a pointwise operator, a broadcast or a reduction) that
    does not broadcast it: below a broadcast, only further broadcasts are
    fused, since a pointwise op there would be recomputed for every element
    of the new axis. Results are used by the function, so never fused.
    """
    uses = use_counts(results)
    fused: set[Term] = set()
    seen: set[Term] = set()
    stack: list[Term] = list(results)
    while stack:  # each materialized term, once
        term = stack.pop()
        if term in seen:
            continue
        seen.add(term)
        if term.op not in FUSIBLE and term.op not in _REDUCE_OPS:
            stack.extend(term.args)
            continue
        inside = [(arg, term.op == "broadcast") for arg in term.args]
        while inside:
            operand, below = inside.pop()
            if operand.op in FUSIBLE and uses[operand] == 1 and (operand.op == "broadcast" or not below):
                fused.add(operand)
                inside.extend((arg, below or operand.op == "broadcast") for arg in operand.args)
            else:
                stack.append(operand)
    return fused



def float_literal(value: float, element: str) -> str:
    """``value`` as an MLIR float literal of type ``element`` (hex bits for infinities and NaN)."""
    if math.isfinite(value):
        return f"{value:.17e}"
    if element == "f64":
        return "0x" + struct.pack(">d", value).hex().upper()
    if element == "f32":
        return "0x" + struct.pack(">f", value).hex().upper()
    return "0x" + struct.pack(">e", value).hex().upper()


def tensor_type(shape: Shape, element: str) -> str:
    """The MLIR spelling of a ranked tensor type."""
    return f"tensor<{'x'.join(map(str, shape))}{'x' if shape else ''}{element}>"


def function_text(name: str, arg_shapes: list[Shape], results: list[Term], element: str,
                  location: str = "") -> str:
    """The text of ``func.func @name`` over tensors of ``element`` computing ``results``.

    ``location``, an MLIR location (``loc("f.mlir":3:1)``), is given to every
    op, so that diagnostics about the emitted code point at its source.
    """
    return _Writer(arg_shapes, element, f" {location}" if location else "").function(name, results)


class Shapes:
    """The static shape of every term over arguments of ``arg_shapes``; None for a splat (it takes its use's)."""

    def __init__(self, arg_shapes: list[Shape | None]):
        self.arg_shapes = arg_shapes
        self.known: dict[Term, Shape | None] = {}

    def __call__(self, term: Term) -> Shape | None:
        if term not in self.known:
            self.known[term] = self._infer(term)
        return self.known[term]

    def _infer(self, term: Term) -> Shape | None:
        op, args, attrs = term.op, term.args, term.attrs
        if op == "arg":
            shape = self.arg_shapes[attrs[0]]
            if shape is None or None in shape:
                raise UnsupportedOp(f"argument {attrs[0]} has no static shape; emission needs them")
            return shape
        if op == "splat":
            return None
        if op == "opaque":
            raise UnsupportedOp(f"an opaque term cannot be emitted ({str(attrs[0])[:80]})")
        if op == "matmul":
            a, b = self(args[0]), self(args[1])
            return (*a[:-1], b[-1])
        if op == "transpose":
            a = self(args[0])
            return (*a[:-2], a[-1], a[-2])
        if op in _REDUCE_OPS:
            a = self(args[0])
            return a[:attrs[0]] + a[attrs[0] + 1:]
        if op == "broadcast":
            a = self(args[0])
            return a[:attrs[0]] + (attrs[1],) + a[attrs[0]:]
        if op == "concat":
            a, b = self(args[0]), self(args[1])
            return a[:attrs[0]] + (a[attrs[0]] + b[attrs[0]],) + a[attrs[0] + 1:]
        if op == "slice_":
            a = self(args[0])
            return a[:attrs[0]] + (attrs[2],) + a[attrs[0] + 1:]
        operand_shapes = [self(a) for a in args]  # pointwise: the shape of a non-splat operand
        return next((s for s in operand_shapes if s is not None), None)


class _Writer:
    def __init__(self, arg_shapes: list[Shape], element: str, location: str = ""):
        self.arg_shapes = arg_shapes
        self.location = location
        self.element = element
        self.lines: list[str] = []
        self.names: dict[tuple[Term, Shape | None], str] = {}
        self.shape = Shapes(arg_shapes)
        self.count = 0
        self.fused: set[Term] = set()
        self.transposed: frozenset[Term] = frozenset()

    def type(self, shape: Shape) -> str:
        return tensor_type(shape, self.element)

    def fresh(self) -> str:
        self.count += 1
        return f"%v{self.count}"

    def emit(self, line: str) -> str:
        name = self.fresh()
        self.lines.append(f"  {name} = {line}{self.location}")
        return name

    def function(self, name: str, results: list[Term]) -> str:
        self.fused = fused_terms(results)
        self.transposed = recognize.transposed_products(results, use_counts(results), self.shape)
        shapes = [self.shape(term) for term in results]
        if any(shape is None for shape in shapes):
            raise UnsupportedOp("a result is a bare constant, whose shape the terms do not fix")
        # RMSNorm's row scales first: the row maps that read them then follow them, one group of row ops.
        for scale in recognize.row_scale_terms(results, use_counts(results), self.shape):
            self.value(scale.root)
        values = [self.value(term) for term in results]
        args = ", ".join(f"%arg{i}: {self.type(s)}" for i, s in enumerate(self.arg_shapes))
        types = [self.type(s) for s in shapes]
        signature = types[0] if len(types) == 1 else f"({', '.join(types)})"
        body = "\n".join(self.lines)
        return (f"func.func @{name}({args}) -> {signature} {{\n{body}\n"
                f"  return {', '.join(values)} : {', '.join(types)}{self.location}\n}}{self.location}\n")

    def value(self, term: Term, context: Shape | None = None) -> str:
        """The SSA name holding ``term`` (a splat is filled to ``context``)."""
        key = (term, context if term.op == "splat" else None)
        if key not in self.names:
            self.names[key] = self._emit(term, context)
        return self.names[key]

    def _filled(self, shape: Shape, value: float) -> str:
        constant = self.emit(f"arith.constant {float_literal(value, self.element)} : {self.element}")
        empty = self.emit(f"tensor.empty() : {self.type(shape)}")
        return self.emit(f"linalg.fill ins({constant} : {self.element}) outs({empty} : {self.type(shape)}) "
                         f"-> {self.type(shape)}")

    def _emit(self, term: Term, context: Shape | None) -> str:
        op, args, attrs = term.op, term.args, term.attrs
        if op == "arg":
            return f"%arg{attrs[0]}"
        if op == "splat":
            if context is None:
                raise UnsupportedOp("a constant is used where no shape fixes it")
            return self._filled(context, attrs[0])
        shape = self.shape(term)
        out = self.type(shape)
        if op == "matmul" and term in self.transposed:
            return self._contraction_of_transposed(term, shape)
        if op == "matmul":
            a, b = (self.value(x) for x in args)
            named = "linalg.batch_matmul" if len(shape) == 3 else "linalg.matmul"
            init = self._filled(shape, 0.0)
            return self.emit(f"{named} ins({a}, {b} : {self.type(self.shape(args[0]))}, "
                             f"{self.type(self.shape(args[1]))}) outs({init} : {out}) -> {out}")
        if op == "transpose":
            rank = len(shape)
            perm = [*range(rank - 2), rank - 1, rank - 2]
            empty = self.emit(f"tensor.empty() : {out}")
            return self.emit(f"linalg.transpose ins({self.value(args[0])} : {self.type(self.shape(args[0]))}) "
                             f"outs({empty} : {out}) permutation = {perm}")
        if op == "concat":
            a, b = (self.value(x) for x in args)
            return self.emit(f"tensor.concat dim({attrs[0]}) {a}, {b} : ({self.type(self.shape(args[0]))}, "
                             f"{self.type(self.shape(args[1]))}) -> {out}")
        if op == "slice_":
            source = self.shape(args[0])
            offsets = [attrs[1] if d == attrs[0] else 0 for d in range(len(source))]
            return self.emit(f"tensor.extract_slice {self.value(args[0])}{offsets} {list(shape)} "
                             f"{[1] * len(shape)} : {self.type(source)} to {out}")
        if op in _REDUCE_OPS:
            return self._reduce(term, shape)
        return self._pointwise(term, shape)

    def _generic(self, inputs: list[tuple[str, Shape, list[int]]], shape: Shape, iterators: list[str],
                 out_dims: list[int], init: str, body: list[str], result: str) -> str:
        """A linalg.generic over ``len(iterators)`` loops; ``inputs`` are (value, shape, loops it reads)."""
        loops = _LOOPS[:len(iterators)]

        def amap(dims: list[int]) -> str:
            return f"affine_map<({', '.join(loops)}) -> ({', '.join(loops[d] for d in dims)})>"

        maps = ", ".join([*(amap(dims) for _, _, dims in inputs), amap(out_dims)])
        ins = f"ins({', '.join(v for v, _, _ in inputs)} : {', '.join(self.type(s) for _, s, _ in inputs)}) " \
            if inputs else ""
        block_args = ", ".join([*(f"%in{i}: {self.element}" for i in range(len(inputs))), f"%out: {self.element}"])
        kinds = ", ".join(f'"{kind}"' for kind in iterators)
        text = (f"linalg.generic {{indexing_maps = [{maps}], iterator_types = [{kinds}]}}\n"
                f"      {ins}outs({init} : {self.type(shape)}) {{\n"
                f"    ^bb0({block_args}):\n"
                + "".join(f"      {line}\n" for line in body)
                + f"      linalg.yield {result} : {self.element}\n    }} -> {self.type(shape)}")
        return self.emit(text)

    def _scalar(self, term: Term, dims: list[int], inputs: list[tuple[str, Shape, list[int]]], body: list[str],
                fuse: bool = False) -> str:
        """The body value of ``term`` at the loops ``dims`` (one per axis of ``term``).

        Splats become constants; ``term`` itself (when ``fuse``) and every
        operand of :func:`fused_terms` are computed in the body; anything
        else is materialized and read as an input.
        """
        if term.op == "splat":
            body.append(f"%c{len(body)} = arith.constant {float_literal(term.attrs[0], self.element)} : "
                        f"{self.element}")
            return f"%c{len(body) - 1}"
        if fuse or term in self.fused:
            if term.op == "broadcast":
                (source,), (axis, _) = term.args, term.attrs
                return self._scalar(source, dims[:axis] + dims[axis + 1:], inputs, body)
            operands = [self._scalar(arg, dims, inputs, body) for arg in term.args]
            op_name = _BINARY_OPS.get(term.op) or _UNARY_OPS[term.op]
            body.append(f"%r{len(body)} = {op_name} {', '.join(operands)} : {self.element}")
            return f"%r{len(body) - 1}"
        read = (self.value(term), self.shape(term), dims)
        if read not in inputs:
            inputs.append(read)
        return f"%in{inputs.index(read)}"

    def _contraction_of_transposed(self, term: Term, shape: Shape) -> str:
        """``matmul(a, transpose(b))`` as one contraction reading ``b`` through a transposed map (the scores of an
        attention, as the host's attention kernel takes them)."""
        a, b = self.value(term.args[0]), self.value(term.args[1].args[0])
        rank = len(shape)
        batch, row, col, red = list(range(rank - 2)), rank - 2, rank - 1, rank
        inputs = [(a, self.shape(term.args[0]), [*batch, row, red]), (b, self.shape(term.args[1].args[0]),
                                                                        [*batch, col, red])]
        init = self._filled(shape, 0.0)
        body = ["%r0 = arith.mulf %in0, %in1 : " + self.element, "%r1 = arith.addf %out, %r0 : " + self.element]
        return self._generic(inputs, shape, ["parallel"] * rank + ["reduction"], [*batch, row, col], init, body,
                             "%r1")

    def _pointwise(self, term: Term, shape: Shape) -> str:
        """A pointwise term or a broadcast, with its single-use pointwise operands fused into one generic."""
        if term.op not in FUSIBLE:
            raise UnsupportedOp(f"no MLIR form for '{term.op}'")
        inputs: list[tuple[str, Shape, list[int]]] = []
        body: list[str] = []
        dims = list(range(len(shape)))
        result = self._scalar(term, dims, inputs, body, fuse=True)
        init = self.emit(f"tensor.empty() : {self.type(shape)}")
        return self._generic(inputs, shape, ["parallel"] * len(shape), dims, init, body, result)

    def _reduce(self, term: Term, shape: Shape) -> str:
        """A reduction, reading its operand through the same fusion as :meth:`_pointwise`."""
        (arg,), (axis,) = term.args, term.attrs
        source = self.shape(arg)
        combine, neutral = _REDUCE_OPS[term.op]
        init = self._filled(shape, neutral)
        iterators = ["reduction" if d == axis else "parallel" for d in range(len(source))]
        out_dims = [d for d in range(len(source)) if d != axis]
        inputs: list[tuple[str, Shape, list[int]]] = []
        body: list[str] = []
        value = self._scalar(arg, list(range(len(source))), inputs, body)
        body.append(f"%r{len(body)} = {combine} %out, {value} : {self.element}")
        return self._generic(inputs, shape, iterators, out_dims, init, body, f"%r{len(body) - 1}")


@dataclass(frozen=True)
class Parts:
    """A function split into @name_prepare (values computed once) and @name_apply (the per-call work).

    ``prepare_args`` are the indices of the function's arguments that
    @name_prepare takes; ``apply_args`` say where each argument of @name_apply
    comes from: i >= 0 is the function's argument i, -(j + 1) is
    @name_prepare's result j (the ``prism.prepare_args`` and
    ``prism.apply_args`` attributes).
    """

    prepare: str
    apply: str
    prepare_args: tuple[int, ...]
    apply_args: tuple[int, ...]


def split_functions(name: str, shapes: list[tuple[int, ...]], prepared: tuple[Term, ...], results: tuple[Term, ...],
                    element: str, location: str) -> Parts:
    """The texts of @name_prepare (computing ``prepared`` from the arguments) and @name_apply (computing
    ``results`` from the arguments and the prepared values, numbered after them); every op at ``location``."""
    arity = len(shapes)
    prepared_shapes = [Shapes(list(shapes))(term) for term in prepared]
    prepare_args = sorted(argument_indices(prepared))
    apply_args = sorted(i for i in argument_indices(results) if i < arity)
    prepare = function_text(f"{name}_prepare", [shapes[i] for i in prepare_args],
                            [renamed_arguments(t, {a: k for k, a in enumerate(prepare_args)}) for t in prepared],
                            element, location)
    into_apply = {a: k for k, a in enumerate(apply_args)}
    into_apply.update({arity + j: len(apply_args) + j for j in range(len(prepared))})
    apply = function_text(f"{name}_apply", [shapes[i] for i in apply_args] + prepared_shapes,
                          [renamed_arguments(t, into_apply) for t in results], element, location)
    return Parts(prepare, apply, tuple(prepare_args), (*apply_args, *(-(j + 1) for j in range(len(prepared)))))
