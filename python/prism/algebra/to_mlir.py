"""Terms back into MLIR: a function of Linalg ops on tensors that computes given terms.

The inverse of :mod:`prism.algebra.terms`, for programs with static shapes
over float tensors. Each term is written in its own element type (the
arguments' types, changed only by casts): ``matmul`` becomes ``linalg.matmul``
(``batch_matmul`` at rank 3, reading an operand that is a transpose used nowhere
else through its maps; a contraction generic at higher ranks) into a zero-filled init, reading the narrower
tensors under its operands' casts directly where both are widened from one
type (Linalg converts each input element to the accumulator's type), ``cast``
a generic whose body is ``arith.extf`` or ``arith.truncf``, ``transpose`` a ``linalg.transpose``,
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
from collections.abc import Callable
from dataclasses import dataclass

from prism.algebra import recognize
from prism.algebra.terms import Term, View, Views, argument_indices, element_of, renamed_arguments, subterms
from prism.infra.errors import UnsupportedOp
from prism.infra.ir import ELEMENT_BYTES

Shape = tuple[int, ...]

_BINARY_OPS = {"add": "arith.addf", "sub": "arith.subf", "mul": "arith.mulf", "div": "arith.divf",
               "maximum": "arith.maximumf"}
_UNARY_OPS = {"neg": "arith.negf", "exp": "math.exp", "rsqrt": "math.rsqrt", "sqrt": "math.sqrt"}
_REDUCE_OPS = {"reduce_sum": ("arith.addf", 0.0), "reduce_max": ("arith.maximumf", -math.inf)}
_LOOPS = "abcdefgh"
# Operators computed inside a consumer's generic when they have one use.
FUSIBLE = frozenset({*_BINARY_OPS, *_UNARY_OPS, "broadcast", "cast"})
# Operators applied element by element: a product's epilogue may be one.
POINTWISE = frozenset({*_BINARY_OPS, *_UNARY_OPS, "cast"})


class Elements:
    """The element type of every term over arguments of ``arg_elements`` (see terms.element_of)."""

    def __init__(self, arg_elements: list[str | None]):
        self.arg_elements = arg_elements
        self.known: dict[Term, str | None] = {}

    def __call__(self, term: Term) -> str | None:
        return element_of(term, self.arg_elements, self.known)

    def bytes(self, term: Term) -> int:
        """The size of one element of ``term`` (f32's for a term of no type of its own)."""
        return ELEMENT_BYTES[self(term) or "f32"]


def product_reads(term: Term, elements: Elements) -> tuple[Term, Term]:
    """The tensors a product ``term`` reads: its operands, or the narrower tensors under them when both are
    casts from one type to the product's (the product converts their elements as it reads them)."""
    a, b = term.args
    if a.op == b.op == "cast" and elements(a.args[0]) == elements(b.args[0]) is not None:
        return a.args[0], b.args[0]
    return a, b


def absorbed_casts(results: list[Term], elements: Elements, uses: dict[Term, int] | None = None) -> set[Term]:
    """The casts that no tensor holds: every use of them is a product that reads the tensor under them.
    ``uses``: :func:`use_counts` of ``results``, where the caller has it."""
    uses = use_counts(results) if uses is None else uses
    absorbed: dict[Term, int] = {}
    for term in subterms(results):
        if term.op == "matmul" and product_reads(term, elements) != term.args:
            for operand in term.args:
                absorbed[operand] = absorbed.get(operand, 0) + 1
    return {cast for cast, count in absorbed.items() if count == uses[cast]}


def use_counts(results: list[Term]) -> dict[Term, int]:
    """How often each subterm of ``results`` is used: by a result, or as an operand of another (shared) subterm."""
    counts: dict[Term, int] = {}
    for term in results:
        counts[term] = counts.get(term, 0) + 1
    for term in subterms(results):
        for arg in term.args:
            counts[arg] = counts.get(arg, 0) + 1
    return counts


def fused_terms(results: list[Term], shape: Callable[[Term], Shape | None],
                uses: dict[Term, int] | None = None) -> set[Term]:
    """The subterms of ``results`` that are computed inside their consumer's generic instead of materialized.

    Pointwise operators and broadcasts are pure, so computing one inside its
    consumer's loop is always legal; with exactly one use it never repeats
    work, and it saves writing and reading the intermediate tensor. So a
    pointwise operator or broadcast is fused when it has one use and that
    use is a generic (a pointwise operator, a broadcast or a reduction) that
    does not broadcast it: below a broadcast, only further broadcasts are
    fused, since a pointwise op there would be recomputed for every element
    of the new axis. Results are used by the function, so never fused; nor is
    an attention's normalization (the root of a canonical attention,
    :func:`prism.algebra.recognize.attention_terms`): the host's attention
    kernel computes it, and takes the chain only with it. ``uses``: :func:`use_counts` of ``results``, where
    the caller has it.
    """
    uses = use_counts(results) if uses is None else uses
    kept = {match.root for match in recognize.attention_terms(results, uses, shape, widened=True)}
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
            if (operand.op in FUSIBLE and uses[operand] == 1 and (operand.op == "broadcast" or not below)
                    and operand not in kept):
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


def function_text(name: str, arg_shapes: list[Shape], results: list[Term], element: str | list[str],
                  location: str = "", views: Views | None = None) -> str:
    """The text of ``func.func @name`` computing ``results`` over arguments of ``element`` (one type for every
    argument, or one per argument).

    ``location``, an MLIR location (``loc("f.mlir":3:1)``), is given to every
    op, so that diagnostics about the emitted code point at its source.
    ``views`` are the function's boundary reshapes (:class:`~prism.algebra.terms.Views`): a viewed argument
    has its outer shape in the signature and is collapsed to ``arg_shapes``' as the body begins, a viewed
    result is expanded to its outer shape as it is returned.
    """
    elements = [element] * len(arg_shapes) if isinstance(element, str) else list(element)
    return _Writer(arg_shapes, elements, f" {location}" if location else "", views).function(name, results)


def _groups(view: View) -> str:
    return "[" + ", ".join("[" + ", ".join(map(str, group)) + "]" for group in view.reassociation) + "]"


# The ops whose result's shape is made from their operands' shapes (not taken from one of them as a pointwise
# op's is): an operand that is a constant, which has no shape, leaves theirs unknown.
_STRUCTURAL = frozenset({"matmul", "transpose", *_REDUCE_OPS, "broadcast", "concat", "slice_"})


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
        if op in _STRUCTURAL and any(self(arg) is None for arg in args):
            raise UnsupportedOp(f"a {op} of a constant has no shape to size it by")
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
        if op == "cast":
            return self(args[0])
        operand_shapes = [self(a) for a in args]  # pointwise: the shape of a non-splat operand
        return next((s for s in operand_shapes if s is not None), None)


class _Writer:
    def __init__(self, arg_shapes: list[Shape], arg_elements: list[str], location: str = "",
                 views: Views | None = None):
        self.arg_shapes = arg_shapes
        self.views = views
        self.arg_elements = arg_elements
        self.location = location
        self.lines: list[str] = []
        self.names: dict[tuple[Term, Shape | None, str | None], str] = {}
        self.shape = Shapes(arg_shapes)
        self.elements = Elements(list(arg_elements))
        self.count = 0
        self.fused: set[Term] = set()
        self.transposed: frozenset[Term] = frozenset()
        self.uses: dict[Term, int] = {}

    def element(self, term: Term, default: str = "f32") -> str:
        """The element type ``term`` is written in (``default`` for a term of no type of its own)."""
        return self.elements(term) or default

    def type(self, shape: Shape, element: str) -> str:
        return tensor_type(shape, element)

    def term_type(self, term: Term) -> str:
        return tensor_type(self.shape(term), self.element(term))

    def fresh(self) -> str:
        self.count += 1
        return f"%v{self.count}"

    def emit(self, line: str) -> str:
        name = self.fresh()
        self.lines.append(f"  {name} = {line}{self.location}")
        return name

    def function(self, name: str, results: list[Term]) -> str:
        self.uses = use_counts(results)
        self.fused = fused_terms(results, self.shape, self.uses)
        self.transposed = recognize.transposed_products(results, self.uses, self.shape)
        shapes = [self.shape(term) for term in results]
        if any(shape is None for shape in shapes):
            raise UnsupportedOp("a result is a bare constant, whose shape the terms do not fix")
        arg_views = self.views.args if self.views else (None,) * len(self.arg_shapes)
        result_views = self.views.results if self.views else (None,) * len(results)
        args = []
        for i, (shape, element, view) in enumerate(zip(self.arg_shapes, self.arg_elements, arg_views, strict=True)):
            if view is None:
                args.append(f"%arg{i}: {self.type(shape, element)}")
                continue
            outer = self.type(view.shape, element)
            args.append(f"%outer{i}: {outer}")
            self.lines.append(f"  %arg{i} = tensor.collapse_shape %outer{i} {_groups(view)} : {outer} into "
                              f"{self.type(shape, element)}{self.location}")
        # RMSNorm's row scales first: the row maps that read them then follow them, one group of row ops.
        for scale in recognize.row_scale_terms(results, self.uses, self.shape):
            self.value(scale.root)
        values = [self.value(term) for term in results]
        types = [self.term_type(term) for term in results]
        for j, view in enumerate(result_views):
            if view is not None:
                outer = self.type(view.shape, self.element(results[j]))
                values[j] = self.emit(f"tensor.expand_shape {values[j]} {_groups(view)} output_shape "
                                      f"[{', '.join(map(str, view.shape))}] : {types[j]} into {outer}")
                types[j] = outer
        args = ", ".join(args)
        signature = types[0] if len(types) == 1 else f"({', '.join(types)})"
        body = "\n".join(self.lines)
        return (f"func.func @{name}({args}) -> {signature} {{\n{body}\n"
                f"  return {', '.join(values)} : {', '.join(types)}{self.location}\n}}{self.location}\n")

    def value(self, term: Term, context: Shape | None = None, element: str = "f32") -> str:
        """The SSA name holding ``term`` (a splat is filled to ``context``, in ``element``)."""
        key = (term, context, element) if term.op == "splat" else (term, None, None)
        if key not in self.names:
            self.names[key] = self._emit(term, context, element)
        return self.names[key]

    def _filled(self, shape: Shape, value: float, element: str) -> str:
        constant = self.emit(f"arith.constant {float_literal(value, element)} : {element}")
        empty = self.emit(f"tensor.empty() : {self.type(shape, element)}")
        return self.emit(f"linalg.fill ins({constant} : {element}) outs({empty} : {self.type(shape, element)}) "
                         f"-> {self.type(shape, element)}")

    def _emit(self, term: Term, context: Shape | None, element: str) -> str:
        op, args, attrs = term.op, term.args, term.attrs
        if op == "arg":
            return f"%arg{attrs[0]}"
        if op == "splat":
            if context is None:
                raise UnsupportedOp("a constant is used where no shape fixes it")
            return self._filled(context, attrs[0], element)
        shape = self.shape(term)
        out = self.term_type(term)
        if op == "matmul":
            return self._product(term, shape)
        if op == "transpose":
            rank = len(shape)
            perm = [*range(rank - 2), rank - 1, rank - 2]
            empty = self.emit(f"tensor.empty() : {out}")
            return self.emit(f"linalg.transpose ins({self.value(args[0])} : {self.term_type(args[0])}) "
                             f"outs({empty} : {out}) permutation = {perm}")
        if op == "concat":
            a, b = (self.value(x) for x in args)
            return self.emit(f"tensor.concat dim({attrs[0]}) {a}, {b} : ({self.term_type(args[0])}, "
                             f"{self.term_type(args[1])}) -> {out}")
        if op == "slice_":
            source = self.shape(args[0])
            offsets = [attrs[1] if d == attrs[0] else 0 for d in range(len(source))]
            return self.emit(f"tensor.extract_slice {self.value(args[0])}{offsets} {list(shape)} "
                             f"{[1] * len(shape)} : {self.term_type(args[0])} to {out}")
        if op in _REDUCE_OPS:
            return self._reduce(term, shape)
        accumulated = self._accumulation(term)
        if accumulated is not None:
            total, start = accumulated
            return self._reduce(total, shape, self.value(start))
        return self._pointwise(term, shape)

    def _accumulation(self, term: Term) -> tuple[Term, Term] | None:
        """(the sum, the start) of ``add(start, sum)`` (either order) where the sum is read there alone and the
        start is a materialized tensor of its shape and type: written as the sum accumulated into the start, one
        loop nest where a sum into zeros and an addition are two (a residual added to the heads' sum)."""
        if term.op != "add":
            return None
        for total, start in (term.args, reversed(term.args)):
            if (total.op == "reduce_sum" and self.uses.get(total) == 1 and start.op != "splat"
                    and start not in self.fused and self.shape(start) == self.shape(term)
                    and self.element(start) == self.element(total) == self.element(term)):
                return total, start
        return None

    def _product(self, term: Term, shape: Shape) -> str:
        """A product into a zero-filled init of its own type, reading the tensors of :func:`product_reads`:
        ``linalg.matmul``, ``linalg.batch_matmul`` at rank 3, a contraction generic at higher ranks. A batched
        operand that is a transpose used nowhere else is read through the product's maps instead (the inverse
        of how a contraction's maps translate); an attention's scores (recognize.transposed_products) are one
        contraction generic reading K so, as the host's attention kernel takes them."""
        element = self.element(term)
        reads = list(product_reads(term, self.elements))
        direct = reads if len(shape) == 2 else [
            x.args[0] if x.op == "transpose" and (self.uses.get(x) == 1 or (i == 1 and term in self.transposed))
            else x for i, x in enumerate(reads)]
        swapped = [x is not y for x, y in zip(direct, reads, strict=True)]
        if len(shape) > 3 or term in self.transposed:
            return self._contraction(direct, swapped, shape, element)
        a, b = (self.value(x, self.shape(x), element) for x in direct)
        types = ", ".join(self.type(self.shape(x), self.element(x, element)) for x in direct)
        init = self._filled(shape, 0.0, element)
        out = self.type(shape, element)
        if len(shape) == 2:
            return self.emit(f"linalg.matmul ins({a}, {b} : {types}) outs({init} : {out}) -> {out}")
        maps = ""
        if any(swapped):
            lhs = "(b, k, m)" if swapped[0] else "(b, m, k)"
            rhs = "(b, n, k)" if swapped[1] else "(b, k, n)"
            maps = (f" indexing_maps = [affine_map<(b, m, n, k) -> {lhs}>, affine_map<(b, m, n, k) -> {rhs}>, "
                    "affine_map<(b, m, n, k) -> (b, m, n)>]")
        return self.emit(f"linalg.batch_matmul{maps} ins({a}, {b} : {types}) outs({init} : {out}) -> {out}")

    def _contraction(self, operands: list[Term], transposed: list[bool], shape: Shape, element: str) -> str:
        """The product of ``operands`` (each read with its last two axes swapped where ``transposed`` says) as
        one contraction generic over every batch axis, accumulated in ``element`` (narrower inputs extended as
        read)."""
        rank = len(shape)
        batch, row, col, red = list(range(rank - 2)), rank - 2, rank - 1, rank
        dims = [[row, red], [red, col]]
        inputs = [(self.value(x, self.shape(x), element), self.shape(x),
                   [*batch, *(reversed(d) if swap else d)], self.element(x, element))
                  for x, d, swap in zip(operands, dims, transposed, strict=True)]
        body, read = [], []
        for index, (_, _, _, source) in enumerate(inputs):
            if source == element:
                read.append(f"%in{index}")
            else:
                body.append(f"%r{len(body)} = arith.extf %in{index} : {source} to {element}")
                read.append(f"%r{len(body) - 1}")
        body += [f"%r{len(body)} = arith.mulf {read[0]}, {read[1]} : {element}",
                 f"%r{len(body) + 1} = arith.addf %out, %r{len(body)} : {element}"]
        init = self._filled(shape, 0.0, element)
        return self._generic(inputs, shape, element, ["parallel"] * rank + ["reduction"], [*batch, row, col], init,
                             body, f"%r{len(body) - 1}")

    def _generic(self, inputs: list[tuple[str, Shape, list[int], str]], shape: Shape, element: str,
                 iterators: list[str], out_dims: list[int], init: str, body: list[str], result: str) -> str:
        """A linalg.generic over ``len(iterators)`` loops; ``inputs`` are (value, shape, loops it reads, element
        type); it yields ``result``, a tensor of ``shape`` and ``element``."""
        loops = _LOOPS[:len(iterators)]

        def amap(dims: list[int]) -> str:
            return f"affine_map<({', '.join(loops)}) -> ({', '.join(loops[d] for d in dims)})>"

        maps = ", ".join([*(amap(dims) for _, _, dims, _ in inputs), amap(out_dims)])
        types = ", ".join(self.type(s, e) for _, s, _, e in inputs)
        ins = f"ins({', '.join(v for v, _, _, _ in inputs)} : {types}) " if inputs else ""
        block_args = ", ".join([*(f"%in{i}: {e}" for i, (_, _, _, e) in enumerate(inputs)), f"%out: {element}"])
        kinds = ", ".join(f'"{kind}"' for kind in iterators)
        text = (f"linalg.generic {{indexing_maps = [{maps}], iterator_types = [{kinds}]}}\n"
                f"      {ins}outs({init} : {self.type(shape, element)}) {{\n"
                f"    ^bb0({block_args}):\n"
                + "".join(f"      {line}{self.location}\n" for line in body)
                + f"      linalg.yield {result} : {element}{self.location}\n    }} -> {self.type(shape, element)}")
        return self.emit(text)

    def _scalar(self, term: Term, dims: list[int], inputs: list[tuple[str, Shape, list[int], str]],
                body: list[str], element: str, fuse: bool = False) -> str:
        """The body value of ``term`` at the loops ``dims`` (one per axis of ``term``), of type ``element``
        where ``term`` has none of its own (a splat).

        Splats become constants; ``term`` itself (when ``fuse``) and every
        operand of :func:`fused_terms` are computed in the body; anything
        else is materialized and read as an input.
        """
        element = self.element(term, element)
        if term.op == "splat":
            body.append(f"%c{len(body)} = arith.constant {float_literal(term.attrs[0], element)} : {element}")
            return f"%c{len(body) - 1}"
        if fuse or term in self.fused:
            if term.op == "broadcast":
                (source,), (axis, _) = term.args, term.attrs
                return self._scalar(source, dims[:axis] + dims[axis + 1:], inputs, body, element)
            if term.op == "cast":
                return self._cast(term, dims, inputs, body)
            operands = [self._scalar(arg, dims, inputs, body, element) for arg in term.args]
            op_name = _BINARY_OPS.get(term.op) or _UNARY_OPS[term.op]
            body.append(f"%r{len(body)} = {op_name} {', '.join(operands)} : {element}")
            return f"%r{len(body) - 1}"
        read = (self.value(term), self.shape(term), dims, element)
        if read not in inputs:
            inputs.append(read)
        return f"%in{inputs.index(read)}"

    def _cast(self, term: Term, dims: list[int], inputs: list[tuple[str, Shape, list[int], str]],
              body: list[str]) -> str:
        """The body value of a cast: ``arith.extf`` to a wider type, ``arith.truncf`` to a narrower one."""
        (source,), target = term.args, str(term.attrs[0])
        element = self.element(source, target)
        value = self._scalar(source, dims, inputs, body, element)
        if element == target:
            return value
        if ELEMENT_BYTES[target] > ELEMENT_BYTES[element]:
            conversion = "arith.extf"
        elif ELEMENT_BYTES[target] < ELEMENT_BYTES[element]:
            conversion = "arith.truncf"
        else:
            raise UnsupportedOp(f"no single conversion from {element} to {target}")
        body.append(f"%r{len(body)} = {conversion} {value} : {element} to {target}")
        return f"%r{len(body) - 1}"

    def _pointwise(self, term: Term, shape: Shape) -> str:
        """A pointwise term or a broadcast, with its single-use pointwise operands fused into one generic."""
        if term.op not in FUSIBLE:
            raise UnsupportedOp(f"no MLIR form for '{term.op}'")
        element = self.element(term)
        inputs: list[tuple[str, Shape, list[int], str]] = []
        body: list[str] = []
        dims = list(range(len(shape)))
        result = self._scalar(term, dims, inputs, body, element, fuse=True)
        init = self.emit(f"tensor.empty() : {self.type(shape, element)}")
        return self._generic(inputs, shape, element, ["parallel"] * len(shape), dims, init, body, result)

    def _reduce(self, term: Term, shape: Shape, start: str | None = None) -> str:
        """A reduction, reading its operand through the same fusion as :meth:`_pointwise`, into ``start`` (the SSA
        name of a tensor of its shape to accumulate into) or from the reduction's neutral value.

        Every loop of a generic must be read by some operand; the output does
        not read the reduced one, so when the fused operands do not either
        (a reduction along an axis that a fused broadcast made), the operand
        is materialized and read whole.
        """
        (arg,), (axis,) = term.args, term.attrs
        element = self.element(term)
        source = self.shape(arg)
        combine, neutral = _REDUCE_OPS[term.op]
        init = start or self._filled(shape, neutral, element)
        iterators = ["reduction" if d == axis else "parallel" for d in range(len(source))]
        out_dims = [d for d in range(len(source)) if d != axis]
        inputs: list[tuple[str, Shape, list[int], str]] = []
        body: list[str] = []
        value = self._scalar(arg, list(range(len(source))), inputs, body, element)
        if not any(axis in dims for _, _, dims, _ in inputs):
            inputs, body = [(self.value(arg), source, list(range(len(source))), self.element(arg, element))], []
            value = "%in0"
        body.append(f"%r{len(body)} = {combine} %out, {value} : {element}")
        return self._generic(inputs, shape, element, iterators, out_dims, init, body, f"%r{len(body) - 1}")


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
                    element: str | list[str], location: str, views: Views | None = None) -> Parts:
    """The texts of @name_prepare (computing ``prepared`` from the arguments) and @name_apply (computing
    ``results`` from the arguments and the prepared values, numbered after them); every op at ``location``.
    ``element`` is the arguments' element type, or each one's; ``views`` the function's boundary reshapes,
    which each part keeps for the arguments it takes (the prepared values pass between them as computed)."""
    arity = len(shapes)
    elements = [element] * arity if isinstance(element, str) else list(element)
    prepared_shapes = [Shapes(list(shapes))(term) for term in prepared]
    typed = Elements(list(elements))
    prepared_elements = [typed(term) or "f32" for term in prepared]
    prepare_args = sorted(argument_indices(prepared))
    apply_args = sorted(i for i in argument_indices(results) if i < arity)
    arg_views = views.args if views else (None,) * arity
    prepare_views = Views(tuple(arg_views[i] for i in prepare_args), (None,) * len(prepared))
    prepare = function_text(f"{name}_prepare", [shapes[i] for i in prepare_args],
                            [renamed_arguments(t, {a: k for k, a in enumerate(prepare_args)}) for t in prepared],
                            [elements[i] for i in prepare_args], location, prepare_views)
    into_apply = {a: k for k, a in enumerate(apply_args)}
    into_apply.update({arity + j: len(apply_args) + j for j in range(len(prepared))})
    apply_views = Views((*(arg_views[i] for i in apply_args), *(None for _ in prepared)),
                        views.results if views else (None,) * len(results))
    apply = function_text(f"{name}_apply", [shapes[i] for i in apply_args] + prepared_shapes,
                          [renamed_arguments(t, into_apply) for t in results],
                          [elements[i] for i in apply_args] + prepared_elements, location, apply_views)
    return Parts(prepare, apply, tuple(prepare_args), (*apply_args, *(-(j + 1) for j in range(len(prepared)))))
