"""The tiled program of a function's GPU kernels: what they compute, written as one host function.

Each spec is written as its kernels compute it after tiling, fusion and
masking, before threads are mapped: the grid is an ``scf.forall`` (one
iteration per thread block), a block's work is scalar loops over its tile
with every ragged edge clipped to the tensor (``min(tile, extent - start)``),
and the arithmetic is the kernel's: products of f16/bf16/f32 inputs
accumulated in f32, a GEMM's K slices of ``BK`` in order, split-K partial
tiles summed before the epilogue, attention's online softmax over key tiles
of :data:`ATTENTION_TILE` with P cast to V's type before the second product,
split-key decode's partial softmax states combined at the end. Run on the
host (see :mod:`prism.runtime.gpu_check`), it checks the GPU lowering's
numbers without a GPU.

The function takes one flat ``memref<?xT>`` per tensor the specs name
(inputs, outputs and temporaries between kernels, in order of first
appearance) and one ``index`` per size symbol (sorted by name); split-K and
split-key workspaces are allocated inside it. Example, for one GEMM::

    fn = tiled_function([GemmSpec(name="mm", a=A, b=B, c=C, m="m", n=64, k=32)])
    fn.tensors  # (A, B, C)
    fn.sizes    # ("m",)
    fn.text     # func.func @tiled(%tensor0: memref<?xf16>, ..., %size0: index) ...
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager, nullcontext
from dataclasses import dataclass

from prism.codegen.gpu.spec import (
    AttentionSpec,
    Dim,
    GemmSpec,
    GenericSpec,
    PointwiseSpec,
    Reduction,
    RowOutput,
    RowSpec,
    ScalarFn,
    Tensor,
    convert,
    load_element,
    store_element,
)
from prism.codegen.text import TextBuilder

Spec = GemmSpec | RowSpec | AttentionSpec | PointwiseSpec | GenericSpec

# Queries and keys per attention tile, as the attention kernels tile them.
ATTENTION_TILE = 64
# Key shares of a decode step when its spec leaves the choice to the emitter.
DEFAULT_SPLITS = 4

_FLOAT_BITS = {"f16": 16, "bf16": 16, "f32": 32, "f64": 64}
_F32_INF = "0x7F800000"
_F32_NEG_INF = "0xFF800000"
_F32_NAN = "0x7FC00000"
_COMBINE = {"add": "arith.addf", "max": "arith.maximumf", "min": "arith.minimumf", "mul": "arith.mulf"}


@dataclass(frozen=True)
class TiledFunction:
    """A host function running the tiled programs of specs in order: its text (a ``func.func`` with the C
    interface), its tensor parameters and then its size-symbol parameters, in order."""

    name: str
    text: str
    tensors: tuple[Tensor, ...]
    sizes: tuple[str, ...]


@dataclass(frozen=True)
class _Tile:
    """One GEMM tile of a grid point: its batch indices, first row and column, clipped extents, and its K
    share (split-K's partial tiles)."""

    batch: list[str]
    m0: str
    rows: str
    n0: str
    cols: str
    share: str | None = None


@dataclass(frozen=True)
class _SoftmaxState:
    """Buffers of the online softmax of a query tile, per query row: running max, running sum, unnormalized
    O; and one row of a key tile's scores and of its probabilities (as V's type holds them, in f32)."""

    maxima: str
    sums: str
    acc: str
    scores: str
    probs: str


# -- what the specs name ------------------------------------------------------------------------------------------


def _fn_tensors(fn: ScalarFn | None, skip: set[str]) -> list[Tensor]:
    if fn is None:
        return []
    return [op.tensor for op in fn.operands if op.kind == "tensor" and op.tensor and op.tensor.name not in skip]


def spec_tensors(spec: Spec) -> list[Tensor]:
    """The tensors a spec reads or writes (a row reduction's result, named like a tensor, is not one)."""
    if isinstance(spec, GemmSpec):
        found = [spec.a, spec.b, spec.b2, spec.init, spec.c, *_fn_tensors(spec.epilogue, set())]
    elif isinstance(spec, RowSpec):
        names = {r.name for r in spec.reductions}
        found = [t for r in spec.reductions for t in _fn_tensors(r.value, names)]
        found += [t for o in spec.outputs for t in [*_fn_tensors(o.value, names), o.tensor]]
    elif isinstance(spec, AttentionSpec):
        found = [spec.q, spec.k, spec.v, spec.o]
    elif isinstance(spec, PointwiseSpec):
        found = [*_fn_tensors(spec.value, set()), spec.out]
    else:
        found = [*spec.inputs, *[i for i in spec.inits if isinstance(i, Tensor)], *spec.outputs]
    return [t for t in found if t is not None]


def _spec_dims(spec: Spec) -> list[Dim]:
    if isinstance(spec, GemmSpec):
        return [spec.m, spec.n, spec.k, *spec.batch]
    if isinstance(spec, RowSpec):
        return [*spec.rows, *spec.cols]
    if isinstance(spec, AttentionSpec):
        return [*spec.batch, spec.sq, spec.skv]
    if isinstance(spec, GenericSpec):
        return list(spec.loops)
    return []


def function_parameters(specs: Sequence[Spec]) -> tuple[tuple[Tensor, ...], tuple[str, ...]]:
    """The tensors the specs name, in order of first appearance (one per name: a name with two different
    tensors is a ValueError), and the size symbols of their shapes and loops, sorted."""
    tensors: dict[str, Tensor] = {}
    symbols: set[str] = set()
    for spec in specs:
        for tensor in spec_tensors(spec):
            if tensors.setdefault(tensor.name, tensor) != tensor:
                raise ValueError(f"spec {spec.name}: tensor {tensor.name} is {tensor}, elsewhere "
                                 f"{tensors[tensor.name]}")
            symbols.update(d for d in tensor.shape if isinstance(d, str))
        symbols.update(d for d in _spec_dims(spec) if isinstance(d, str))
    return tuple(tensors.values()), tuple(sorted(symbols))


def tiled_function(specs: Sequence[Spec], name: str = "tiled",
                   program: type[TiledProgram] | None = None) -> TiledFunction:
    """The host function running the tiled program of each of ``specs`` in order (``program``: the writer,
    :class:`TiledProgram` by default)."""
    tensors, sizes = function_parameters(specs)
    builder = TextBuilder()
    params = [f"%tensor{i}: {t.memref}" for i, t in enumerate(tensors)]
    params += [f"%size{i}: index" for i in range(len(sizes))]
    writer = (program or TiledProgram)(builder, {t.name: (t, f"%tensor{i}") for i, t in enumerate(tensors)},
                                       {s: f"%size{i}" for i, s in enumerate(sizes)})
    with builder.region(f"func.func @{name}({', '.join(params)}) attributes {{llvm.emit_c_interface}}"):
        for spec in specs:
            writer.write(spec)
        builder.add("return")
    return TiledFunction(name, builder.function_text(), tensors, sizes)


# -- affine maps --------------------------------------------------------------------------------------------------


def split_affine_map(text: str) -> list[str]:
    """The single-result maps of an affine map's results, in order: ``affine_map<(d0, d1) -> (d1, 0)>`` gives
    ``affine_map<(d0, d1) -> (d1)>`` and ``affine_map<(d0, d1) -> (0)>``."""
    match = re.fullmatch(r"\s*affine_map<\s*(\([^)]*\))\s*->\s*\((.*)\)\s*>\s*", text, re.S)
    if match is None:
        raise ValueError(f"not an affine map over dimensions alone: {text}")
    dims, body = match.groups()
    results, depth, start = [], 0, 0
    for i, ch in enumerate(body):
        depth += {"(": 1, ")": -1}.get(ch, 0)
        if ch == "," and depth == 0:
            results.append(body[start:i])
            start = i + 1
    results.append(body[start:])
    return [f"affine_map<{dims} -> ({r.strip()})>" for r in results if r.strip()]


# -- the writer ---------------------------------------------------------------------------------------------------


class TiledProgram:
    """Writes each spec's tiled program into a function under construction.

    ``buffers`` maps a tensor's name to the tensor and its SSA buffer,
    ``sizes`` a size symbol to its SSA index. A subclass may change one
    step (:meth:`rescale_factor`, say) to write a program that is wrong on
    purpose.
    """

    def __init__(self, builder: TextBuilder, buffers: dict[str, tuple[Tensor, str]], sizes: dict[str, str]):
        self.b = builder
        self.buffers = dict(buffers)
        self.sizes = sizes
        self.scratch_types: dict[str, str] = {}
        self.scratch_stack: list[list[str]] = []  # the scratch buffers of each open grid point

    def write(self, spec: Spec) -> None:
        """Append the tiled program of ``spec``."""
        writers: dict[type, Callable[[Spec], None]] = {
            GemmSpec: self.gemm, RowSpec: self.rows, AttentionSpec: self.attention,
            PointwiseSpec: self.pointwise, GenericSpec: self.generic}
        writers[type(spec)](spec)

    # -- index arithmetic and memory --------------------------------------------------------------------------

    def dim(self, d: Dim) -> str:
        """A dimension as an ``index`` value."""
        return self.b.const(d) if isinstance(d, int) else self.sizes[d]

    def op(self, name: str, *args: str, typ: str = "index") -> str:
        """``name args : typ`` (a binary op on ``index`` by default)."""
        return self.b.value(f"{name} {', '.join(args)} : {typ}")

    def cdiv(self, a: str, b: str) -> str:
        """``ceil(a / b)`` of indices."""
        return self.op("arith.ceildivsi", a, b)

    def clip(self, tile: int, extent: str, start: str) -> str:
        """``min(tile, extent - start)``: a tile's extent at a ragged edge."""
        return self.op("arith.minsi", self.b.const(tile), self.op("arith.subi", extent, start))

    def linear(self, tensor: Tensor, indices: Sequence[str]) -> str:
        """The row-major linear index of ``indices`` in ``tensor``."""
        if len(indices) != tensor.rank:
            raise ValueError(f"{tensor.name} has rank {tensor.rank}, indexed by {len(indices)} indices")
        if not indices:
            return self.b.const(0)
        at = indices[0]
        for d, i in zip(tensor.shape[1:], indices[1:], strict=True):
            at = self.op("arith.addi", self.op("arith.muli", at, self.dim(d)), i)
        return at

    def load(self, tensor: Tensor, indices: Sequence[str]) -> str:
        """The element of ``tensor`` at ``indices``."""
        buffer = self.buffers[tensor.name][1]
        return load_element(self.b, tensor, buffer, self.linear(tensor, indices), "v")

    def store(self, value: str, tensor: Tensor, indices: Sequence[str]) -> None:
        """Store ``value`` (of the tensor's type) at ``indices``."""
        buffer = self.buffers[tensor.name][1]
        store_element(self.b, value, tensor, buffer, self.linear(tensor, indices))

    def workspace(self, name: str, shape: tuple[Dim, ...], dtype: str = "f32") -> Tensor:
        """A fresh buffer of ``shape``, allocated here, that :meth:`load` and :meth:`store` reach by ``name``."""
        tensor = Tensor(name, dtype, shape)
        total = self.b.const(1)
        for d in shape:
            total = self.op("arith.muli", total, self.dim(d))
        self.buffers[name] = (tensor, self.b.alloc(tensor.memref, [total], "ws"))
        return tensor

    def free(self, tensor: Tensor) -> None:
        """Free a :meth:`workspace`."""
        self.b.add(f"memref.dealloc {self.buffers.pop(tensor.name)[1]} : {tensor.memref}")

    def scratch(self, shape: Sequence[int], hint: str = "s") -> str:
        """A block-local f32 buffer of the static ``shape`` (a tile, a row of state), freed at the end of the
        grid point. (A stack allocation would grow the stack by one buffer per point: the grid's loop is not an
        allocation scope, and an ``memref.alloca_scope`` around a point cannot hold the blocks its loops lower
        to.)"""
        typ = f"memref<{'x'.join(str(n) for n in shape)}xf32>"
        name = self.b.alloc(typ, hint=hint)
        self.scratch_types[name] = typ
        self.scratch_stack[-1].append(name)
        return name

    def get(self, buffer: str, *indices: str) -> str:
        """An element of a :meth:`scratch` buffer."""
        return self.b.value(f"memref.load {buffer}[{', '.join(indices)}] : {self.scratch_types[buffer]}")

    def put(self, value: str, buffer: str, *indices: str) -> None:
        """Store into a :meth:`scratch` buffer."""
        self.b.add(f"memref.store {value}, {buffer}[{', '.join(indices)}] : {self.scratch_types[buffer]}")

    # -- scalars ------------------------------------------------------------------------------------------------

    def const(self, value: float, dtype: str = "f32") -> str:
        """A scalar constant of ``dtype`` (an infinity or NaN through its f32 bits)."""
        if dtype not in _FLOAT_BITS:
            return self.b.value(f"arith.constant {int(value)} : {dtype}")
        if math.isfinite(value):
            return self.b.value(f"arith.constant {value:.17e} : {dtype}")
        bits = _F32_NAN if math.isnan(value) else _F32_INF if value > 0 else _F32_NEG_INF
        return self.convert(self.b.value(f"arith.constant {bits} : f32"), "f32", dtype)

    def convert(self, value: str, src: str, dst: str) -> str:
        """``value`` of type ``src`` as ``dst``, as the kernels convert it (:func:`~.spec.convert`)."""
        return convert(self.b, value, src, dst)

    def f32(self, value: str, dtype: str) -> str:
        """``value`` of ``dtype`` as f32."""
        return self.convert(value, dtype, "f32")

    def operands(self, fn: ScalarFn, point: Sequence[str], known: dict[str, str]) -> list[str]:
        """The values of ``fn``'s operands at ``point``: accumulators and row results from ``known`` (by kind,
        by name), tensors loaded at their dims."""
        values = []
        for operand in fn.operands:
            if operand.kind != "tensor":
                values.append(known[operand.kind])
            elif operand.tensor.name in known:
                values.append(known[operand.tensor.name])
            else:
                values.append(self.load(operand.tensor, [point[d] for d in operand.dims]))
        return values

    def exp(self, x: str) -> str:
        """``exp(x)`` of an f32."""
        return self.b.value(f"math.exp {x} : f32")

    def add(self, x: str, y: str) -> str:
        """``x + y`` of f32s."""
        return self.op("arith.addf", x, y, typ="f32")

    def mul(self, x: str, y: str) -> str:
        """``x * y`` of f32s."""
        return self.op("arith.mulf", x, y, typ="f32")

    def lead(self, batch: Sequence[str], tensor: Tensor, inner: int = 2) -> list[str]:
        """The batch indices of ``tensor``, whose last ``inner`` dimensions are not batch ones: the trailing
        ones (a tensor with fewer batch dimensions is broadcast over the leading ones)."""
        count = tensor.rank - inner
        if count < 0 or count > len(batch):
            raise ValueError(f"{tensor.name} of shape {tensor.shape} does not fit {len(batch)} batch dimensions")
        return list(batch[len(batch) - count:])

    # -- loops --------------------------------------------------------------------------------------------------

    @contextmanager
    def grid(self, extents: Sequence[str], hint: str = "g") -> Iterator[list[str]]:
        """An ``scf.forall`` over ``extents`` (the kernel's grid; none: one point); the :meth:`scratch` buffers
        of a point are freed at its end."""
        ivs = [self.b.fresh(hint) for _ in extents]
        self.scratch_stack.append([])
        with self.b.region(f"scf.forall ({', '.join(ivs)}) in ({', '.join(extents)})") if ivs else nullcontext():
            yield ivs
            for buffer in self.scratch_stack.pop():
                self.b.add(f"memref.dealloc {buffer} : {self.scratch_types[buffer]}")

    def fold(self, extents: Sequence[str], inits: Sequence[str], types: Sequence[str],
             body: Callable[[list[str], list[str]], list[str]]) -> list[str]:
        """Nested ``scf.for`` over ``[0, extent)``, outermost first, carrying ``inits`` of ``types``:
        ``body(indices, running values)`` gives the next values; returns the final ones."""
        if not extents:
            return list(body([], list(inits)))
        zero, one = self.b.const(0), self.b.const(1)
        if not inits:
            with self.b.for_(zero, extents[0], one) as iv:
                self.fold(extents[1:], [], [], lambda ivs, _: body([iv, *ivs], []))
            return []
        iv, args, out = self.b.fresh("i"), [self.b.fresh("acc") for _ in inits], self.b.fresh("out")
        pairs = ", ".join(f"{a} = {i}" for a, i in zip(args, inits, strict=True))
        with self.b.region(f"{out}:{len(args)} = scf.for {iv} = {zero} to {extents[0]} step {one} "
                           f"iter_args({pairs}) -> ({', '.join(types)})"):
            values = self.fold(extents[1:], args, types, lambda ivs, running: body([iv, *ivs], running))
            self.b.yield_(values, types)
        return [f"{out}#{i}" for i in range(len(args))]

    def reduce(self, extent: str, init: str, step: Callable[[str, str], str]) -> str:
        """One f32 value folded over ``[0, extent)``: ``step(index, running)`` gives the next."""
        return self.fold([extent], [init], ["f32"], lambda ivs, run: [step(ivs[0], run[0])])[0]

    def loops(self, extents: Sequence[str], body: Callable[[list[str]], None]) -> None:
        """Nested ``scf.for`` over ``[0, extent)``: ``body(indices)``."""
        def run(ivs: list[str], _: list[str]) -> list[str]:
            body(ivs)
            return []
        self.fold(extents, [], [], run)

    # -- GEMM ---------------------------------------------------------------------------------------------------

    def gemm(self, spec: GemmSpec) -> None:
        """C tile by tile: the accumulator from its init, K slice by slice, then the epilogue and the store;
        with SPLITK > 1, partial tiles of K shares into a workspace, then summed in share order."""
        if spec.tile.SPLITK > 1:
            self.split_gemm(spec)
            return
        with self.gemm_grid(spec) as tile:
            accs = self.start_tile(spec, tile)
            self.accumulate(spec, tile, accs, self.b.const(0), self.dim(spec.k))
            self.finish_tile(spec, tile, accs)

    def split_gemm(self, spec: GemmSpec) -> None:
        """Split-K: one grid point per tile and K share writes its partial tile(s) (from zero); a second grid
        starts each tile from its init, adds the partials in share order, and finishes it."""
        split = spec.tile.SPLITK
        parts = [self.workspace(f"{spec.name}.part{j}", (split, *spec.batch, spec.m, spec.n))
                 for j in range(len(self.products(spec)))]
        with self.gemm_grid(spec, split) as tile:
            begin, end = self.k_share(spec, tile.share)
            accs = [self.scratch((spec.tile.BM, spec.tile.BN), "acc") for _ in parts]
            self.fill_tile(tile, accs, lambda _i, _j: self.const(0.0))
            self.accumulate(spec, tile, accs, begin, end)

            def keep(i: str, j: str) -> None:
                point = [tile.share, *tile.batch, *self.tile_point(tile, i, j)]
                for acc, part in zip(accs, parts, strict=True):
                    self.store(self.get(acc, i, j), part, point)
            self.tile_loops(tile, keep)
        with self.gemm_grid(spec) as tile:
            accs = self.start_tile(spec, tile)
            self.sum_partials(tile, accs, parts, split)
            self.finish_tile(spec, tile, accs)
        for part in parts:
            self.free(part)

    def k_share(self, spec: GemmSpec, share: str) -> tuple[str, str]:
        """The K range of a share: whole slices of BK, ``cdiv(cdiv(K, SPLITK), BK)`` of them per share, the
        last shares shorter or empty."""
        k, bk = self.dim(spec.k), self.b.const(spec.tile.BK)
        size = self.op("arith.muli", self.cdiv(self.cdiv(k, self.b.const(spec.tile.SPLITK)), bk), bk)
        begin = self.op("arith.minsi", self.op("arith.muli", share, size), k)
        return begin, self.op("arith.minsi", self.op("arith.addi", begin, size), k)

    @staticmethod
    def products(spec: GemmSpec) -> list[Tensor]:
        """The B operands: one, or two for a dual GEMM."""
        return [spec.b] if spec.b2 is None else [spec.b, spec.b2]

    @contextmanager
    def gemm_grid(self, spec: GemmSpec, split: int = 1) -> Iterator[_Tile]:
        """The GEMM grid (batch..., M tiles, N tiles, and K shares with ``split``), each point's tile clipped
        to C."""
        t = spec.tile
        extents = [self.dim(d) for d in spec.batch]
        extents += [self.cdiv(self.dim(spec.m), self.b.const(t.BM)), self.cdiv(self.dim(spec.n), self.b.const(t.BN))]
        if split > 1:
            extents.append(self.b.const(split))
        with self.grid(extents, "tile") as ivs:
            nb = len(spec.batch)
            m0 = self.op("arith.muli", ivs[nb], self.b.const(t.BM))
            n0 = self.op("arith.muli", ivs[nb + 1], self.b.const(t.BN))
            yield _Tile(ivs[:nb], m0, self.clip(t.BM, self.dim(spec.m), m0), n0,
                        self.clip(t.BN, self.dim(spec.n), n0), ivs[nb + 2] if split > 1 else None)

    def tile_point(self, tile: _Tile, i: str, j: str) -> list[str]:
        """The C indices (m, n) of a tile's element (i, j)."""
        return [self.op("arith.addi", tile.m0, i), self.op("arith.addi", tile.n0, j)]

    def tile_loops(self, tile: _Tile, body: Callable[[str, str], None]) -> None:
        """Loops over the tile's elements within C (the masked edges)."""
        self.loops([tile.rows, tile.cols], lambda ivs: body(ivs[0], ivs[1]))

    def fill_tile(self, tile: _Tile, accs: list[str], value: Callable[[str, str], str]) -> None:
        """Store ``value(i, j)`` at each element of the tile in each of ``accs``."""
        def body(i: str, j: str) -> None:
            for acc in accs:
                self.put(value(i, j), acc, i, j)
        self.tile_loops(tile, body)

    def start_tile(self, spec: GemmSpec, tile: _Tile) -> list[str]:
        """The f32 accumulator tile(s), started: from the init tensor or init_value; a dual GEMM's second
        from zero."""
        accs = [self.scratch((spec.tile.BM, spec.tile.BN), "acc") for _ in self.products(spec)]

        def first(i: str, j: str) -> str:
            if spec.init is not None:
                return self.f32(self.load(spec.init, [*tile.batch, *self.tile_point(tile, i, j)]), spec.init.dtype)
            return self.const(spec.init_value)
        self.fill_tile(tile, accs[:1], first)
        self.fill_tile(tile, accs[1:], lambda _i, _j: self.const(0.0))
        return accs

    def gemm_operand(self, tensor: Tensor, layout: str, batch: list[str], row: str, k: str) -> str:
        """An input element as f32: A at (row=m, k) or B at (row=n, k), in its ``layout``."""
        inner = [row, k] if layout in ("mk", "nk") else [k, row]
        return self.f32(self.load(tensor, [*self.lead(batch, tensor), *inner]), tensor.dtype)

    def accumulate(self, spec: GemmSpec, tile: _Tile, accs: list[str], begin: str, end: str) -> None:
        """Add the products over K in ``[begin, end)``, one slice of BK at a time (the last one ragged)."""
        with self.b.for_(begin, end, self.b.const(spec.tile.BK), "k0") as k0:
            depth = self.clip(spec.tile.BK, end, k0)

            def element(i: str, j: str) -> None:
                m, n = self.tile_point(tile, i, j)
                for acc, b in zip(accs, self.products(spec), strict=True):
                    def product(kk: str, run: str, b: Tensor = b) -> str:
                        k = self.op("arith.addi", k0, kk)
                        x = self.gemm_operand(spec.a, spec.a_layout, tile.batch, m, k)
                        return self.add(run, self.mul(x, self.gemm_operand(b, spec.b_layout, tile.batch, n, k)))
                    self.put(self.reduce(depth, self.get(acc, i, j), product), acc, i, j)
            self.tile_loops(tile, element)

    def sum_partials(self, tile: _Tile, accs: list[str], parts: list[Tensor], split: int) -> None:
        """Add each K share's partial tile, in share order."""
        def body(i: str, j: str) -> None:
            point = self.tile_point(tile, i, j)
            for acc, part in zip(accs, parts, strict=True):
                total = self.get(acc, i, j)
                for s in range(split):
                    total = self.add(total, self.load(part, [self.b.const(s), *tile.batch, *point]))
                self.put(total, acc, i, j)
        self.tile_loops(tile, body)

    def finish_tile(self, spec: GemmSpec, tile: _Tile, accs: list[str]) -> None:
        """The epilogue at each element of the tile (point: batch..., m, n), cast to C's type and stored."""
        def body(i: str, j: str) -> None:
            point = [*tile.batch, *self.tile_point(tile, i, j)]
            known = dict(zip(["acc", "acc2"], [self.get(acc, i, j) for acc in accs], strict=False))
            value, dtype = known["acc"], "f32"
            if spec.epilogue is not None:
                value = spec.epilogue.emit(self.b, self.operands(spec.epilogue, point, known), point)
                dtype = spec.epilogue.dtype
            self.store(self.convert(value, dtype, spec.c.dtype), spec.c, point)
        self.tile_loops(tile, body)

    # -- rows ---------------------------------------------------------------------------------------------------

    def rows(self, spec: RowSpec) -> None:
        """Per row: each reduction in order (f32, from its init), later values reading earlier results; then
        the outputs, over the row or once per row."""
        with self.grid([self.dim(d) for d in spec.rows], "row") as row:
            results: dict[str, str] = {}
            cols = [self.dim(d) for d in spec.cols]
            for reduction in spec.reductions:
                def step(ivs: list[str], run: list[str], reduction: Reduction = reduction) -> list[str]:
                    fn, point = reduction.value, [*row, *ivs]
                    value = self.f32(fn.emit(self.b, self.operands(fn, point, results), point), fn.dtype)
                    return [self.op(_COMBINE[reduction.combine], run[0], value, typ="f32")]
                results[reduction.name] = self.fold(cols, [self.const(reduction.init)], ["f32"], step)[0]
            for output in spec.outputs:
                def put(ivs: list[str], output: RowOutput = output) -> None:
                    fn, point = output.value, [*row, *ivs]
                    value = fn.emit(self.b, self.operands(fn, point, results), point)
                    self.store(self.convert(value, fn.dtype, output.tensor.dtype), output.tensor, point)
                self.loops([] if output.per_row else cols, put)

    # -- pointwise and generic ----------------------------------------------------------------------------------

    def pointwise(self, spec: PointwiseSpec) -> None:
        """``out[p] = value(p)`` at every point of out."""
        with self.grid([self.dim(d) for d in spec.out.shape], "p") as point:
            value = spec.value.emit(self.b, self.operands(spec.value, point, {}), point)
            self.store(self.convert(value, spec.value.dtype, spec.out.dtype), spec.out, point)

    def at_map(self, affine_map: str, ivs: Sequence[str]) -> list[str]:
        """The indices an affine map gives at the loop indices ``ivs``."""
        return [self.b.value(f"affine.apply {m}({', '.join(ivs)})") for m in split_affine_map(affine_map)]

    def generic(self, spec: GenericSpec) -> None:
        """The parallel loops as the grid; in each point the outputs from their inits, the reduction loops
        folding the body over them, and the stores."""
        parallel = [i for i, it in enumerate(spec.iterators) if it == "parallel"]
        reduction = [i for i, it in enumerate(spec.iterators) if it != "parallel"]
        types = [t.dtype for t in spec.outputs]
        with self.grid([self.dim(spec.loops[i]) for i in parallel], "p") as outer:
            def ivs_of(inner: Sequence[str]) -> list[str]:
                at = dict(zip(parallel, outer, strict=True)) | dict(zip(reduction, inner, strict=True))
                return [at[i] for i in range(len(spec.loops))]
            fixed = ivs_of([self.b.const(0)] * len(reduction))  # output maps read the parallel loops alone
            places = [self.at_map(m, fixed) for m in spec.output_maps]
            starts = [self.generic_start(t, init, at) for t, init, at in zip(spec.outputs, spec.inits, places,
                                                                             strict=True)]

            def step(inner: list[str], running: list[str]) -> list[str]:
                ivs = ivs_of(inner)
                values = [self.load(t, self.at_map(m, ivs)) for t, m in zip(spec.inputs, spec.input_maps,
                                                                             strict=True)]
                return spec.body(self.b, values, running, ivs)
            finals = self.fold([self.dim(spec.loops[i]) for i in reduction], starts, types, step)
            for tensor, at, value in zip(spec.outputs, places, finals, strict=True):
                self.store(value, tensor, at)

    def generic_start(self, tensor: Tensor, init: float | Tensor | None, indices: list[str]) -> str:
        """An output's value before the reduction: a constant, an init tensor's element, or its own."""
        if isinstance(init, Tensor):
            return self.convert(self.load(init, indices), init.dtype, tensor.dtype)
        if init is None:
            return self.load(tensor, indices)
        return self.const(init, tensor.dtype)

    # -- attention ----------------------------------------------------------------------------------------------

    def attention(self, spec: AttentionSpec) -> None:
        """Prefill: each query tile runs the online softmax over the key tiles it sees, then divides by the
        running sum once. Decode (one query): see :meth:`decode`."""
        if spec.sq == 1:
            self.decode(spec)
            return
        tile = self.b.const(ATTENTION_TILE)
        extents = [self.dim(d) for d in spec.batch] + [self.cdiv(self.dim(spec.sq), tile)]
        with self.grid(extents, "qt") as ivs:
            batch, q0 = ivs[:-1], self.op("arith.muli", ivs[-1], tile)
            queries = self.clip(ATTENTION_TILE, self.dim(spec.sq), q0)
            state = self.softmax_state(spec, ATTENTION_TILE)
            self.loops([queries], lambda i: self.reset_state(spec, state, i[0]))
            end = self.key_end(spec, q0, queries)
            with self.b.for_(self.b.const(0), end, tile, "k0") as k0:
                keys = self.clip(ATTENTION_TILE, end, k0)
                self.loops([queries], lambda i: self.attend(spec, state, batch, i[0],
                                                            self.op("arith.addi", q0, i[0]), k0, keys))
            self.loops([queries], lambda i: self.write_row(spec, state, batch, i[0],
                                                           self.op("arith.addi", q0, i[0])))

    def key_end(self, spec: AttentionSpec, q0: str, queries: str) -> str:
        """Where a query tile's keys end: all of them, or under the causal mask after the last key its last
        query sees (key tiles past it are skipped)."""
        skv = self.dim(spec.skv)
        if not spec.causal:
            return skv
        offset = self.op("arith.subi", skv, self.dim(spec.sq))
        last = self.op("arith.addi", self.op("arith.addi", q0, queries), offset)
        return self.op("arith.minsi", skv, self.op("arith.maxsi", last, self.b.const(0)))

    def softmax_state(self, spec: AttentionSpec, queries: int) -> _SoftmaxState:
        """The online softmax's buffers for ``queries`` query rows."""
        maxima, sums = self.scratch((queries,), "max"), self.scratch((queries,), "sum")
        return _SoftmaxState(maxima, sums, self.scratch((queries, spec.dv), "o"), self.scratch((ATTENTION_TILE,), "s"),
                             self.scratch((ATTENTION_TILE,), "p"))

    def reset_state(self, spec: AttentionSpec, state: _SoftmaxState, r: str) -> None:
        """Row ``r`` of the state before any key: max -inf, sum and O zero."""
        self.put(self.const(-math.inf), state.maxima, r)
        zero = self.const(0.0)
        self.put(zero, state.sums, r)
        self.loops([self.b.const(spec.dv)], lambda c: self.put(zero, state.acc, r, c[0]))

    def safe_max(self, m: str) -> str:
        """The max to subtract: ``m``, or 0 while the row has seen no key (-inf), so that exp gives 0, not NaN."""
        empty = self.b.value(f"arith.cmpf oeq, {m}, {self.const(-math.inf)} : f32")
        return self.b.value(f"arith.select {empty}, {self.const(0.0)}, {m} : f32")

    def rescale_factor(self, m_old: str, m_new: str) -> str:
        """What the running sum and O are multiplied by when the running max goes from ``m_old`` to ``m_new``:
        ``exp(m_old - m_new)``."""
        return self.exp(self.op("arith.subf", m_old, self.safe_max(m_new), typ="f32"))

    def key_element(self, spec: AttentionSpec, batch: list[str], key: str, d: str) -> str:
        """K at (key, d) as f32, in its layout."""
        inner = [key, d] if spec.k_layout == "nd" else [d, key]
        return self.f32(self.load(spec.k, [*self.lead(batch, spec.k), *inner]), spec.k.dtype)

    def score(self, spec: AttentionSpec, batch: list[str], query: str, key: str) -> str:
        """``scale * q . k`` in f32, -inf where the causal mask hides the key."""
        def term(d: str, run: str) -> str:
            q = self.f32(self.load(spec.q, [*self.lead(batch, spec.q), query, d]), spec.q.dtype)
            return self.add(run, self.mul(q, self.key_element(spec, batch, key, d)))
        s = self.mul(self.reduce(self.b.const(spec.d), self.const(0.0), term), self.const(spec.scale))
        if not spec.causal:
            return s
        seen = self.op("arith.addi", query, self.op("arith.subi", self.dim(spec.skv), self.dim(spec.sq)))
        hidden = self.b.value(f"arith.cmpi sgt, {key}, {seen} : index")
        return self.b.value(f"arith.select {hidden}, {self.const(-math.inf)}, {s} : f32")

    def attend(self, spec: AttentionSpec, state: _SoftmaxState, batch: list[str], r: str, query: str, k0: str,
               keys: str) -> None:
        """One query row against one key tile (``keys`` keys from ``k0``): scores and their max, the new running
        max, P = exp(s - max) (summed in f32, cast to V's type for P V), sum and O rescaled and added to."""
        def scores(j: str, run: str) -> str:
            s = self.score(spec, batch, query, self.op("arith.addi", k0, j))
            self.put(s, state.scores, j)
            return self.op("arith.maximumf", run, s, typ="f32")
        m_old = self.get(state.maxima, r)
        m_new = self.op("arith.maximumf", m_old, self.reduce(keys, self.const(-math.inf), scores), typ="f32")
        alpha, base = self.rescale_factor(m_old, m_new), self.safe_max(m_new)

        def probability(j: str, run: str) -> str:
            p = self.exp(self.op("arith.subf", self.get(state.scores, j), base, typ="f32"))
            self.put(self.f32(self.convert(p, "f32", spec.v.dtype), spec.v.dtype), state.probs, j)
            return self.add(run, p)
        total = self.reduce(keys, self.const(0.0), probability)
        self.put(self.add(self.mul(self.get(state.sums, r), alpha), total), state.sums, r)
        self.put(m_new, state.maxima, r)

        def column(c: str) -> None:
            def term(j: str, run: str) -> str:
                v = self.load(spec.v, [*self.lead(batch, spec.v), self.op("arith.addi", k0, j), c])
                return self.add(run, self.mul(self.get(state.probs, j), self.f32(v, spec.v.dtype)))
            self.put(self.reduce(keys, self.mul(self.get(state.acc, r, c), alpha), term), state.acc, r, c)
        self.loops([self.b.const(spec.dv)], lambda c: column(c[0]))

    def write_row(self, spec: AttentionSpec, state: _SoftmaxState, batch: list[str], r: str, query: str) -> None:
        """O's row ``query``: the state's row ``r`` divided by its sum, cast and stored."""
        total = self.get(state.sums, r)

        def column(c: str) -> None:
            value = self.op("arith.divf", self.get(state.acc, r, c), total, typ="f32")
            self.store(self.convert(value, "f32", spec.o.dtype), spec.o, [*self.lead(batch, spec.o), query, c])
        self.loops([self.b.const(spec.dv)], lambda c: column(c[0]))

    def decode(self, spec: AttentionSpec) -> None:
        """One query per batch index: the keys split into ``splits`` shares (``cdiv(skv, splits)`` keys each,
        the last ones shorter or empty), each share's online softmax state (max, sum, unnormalized O) written
        to workspaces; then per batch index the shares combined, each weighted by exp(its max - the max)."""
        splits = spec.splits or DEFAULT_SPLITS
        parts = [self.workspace(f"{spec.name}.{what}", (*spec.batch, splits, *extra))
                 for what, extra in (("m", ()), ("l", ()), ("o", (spec.dv,)))]
        skv, tile = self.dim(spec.skv), self.b.const(ATTENTION_TILE)
        size = self.cdiv(skv, self.b.const(splits))
        with self.grid([*(self.dim(d) for d in spec.batch), self.b.const(splits)], "share") as ivs:
            batch, share, first = ivs[:-1], ivs[-1], self.b.const(0)
            begin = self.op("arith.minsi", self.op("arith.muli", share, size), skv)
            end = self.op("arith.minsi", self.op("arith.addi", begin, size), skv)
            state = self.softmax_state(spec, 1)
            self.reset_state(spec, state, first)
            with self.b.for_(begin, end, tile, "k0") as k0:
                self.attend(spec, state, batch, first, first, k0, self.clip(ATTENTION_TILE, end, k0))
            self.store(self.get(state.maxima, first), parts[0], [*batch, share])
            self.store(self.get(state.sums, first), parts[1], [*batch, share])
            self.loops([self.b.const(spec.dv)], lambda c: self.store(self.get(state.acc, first, c[0]), parts[2],
                                                                     [*batch, share, c[0]]))
        with self.grid([self.dim(d) for d in spec.batch], "b") as batch:
            self.combine_shares(spec, batch, splits, parts)
        for part in parts:
            self.free(part)

    def combine_shares(self, spec: AttentionSpec, batch: list[str], splits: int, parts: list[Tensor]) -> None:
        """O of one batch index from its shares' states: ``sum_s O_s w_s / sum_s l_s w_s`` with
        ``w_s = exp(m_s - max_s m_s)``."""
        count = self.b.const(splits)
        top = self.safe_max(self.reduce(count, self.const(-math.inf), lambda s, run: self.op(
            "arith.maximumf", run, self.load(parts[0], [*batch, s]), typ="f32")))

        def weight(s: str) -> str:
            return self.exp(self.op("arith.subf", self.load(parts[0], [*batch, s]), top, typ="f32"))
        total = self.reduce(count, self.const(0.0), lambda s, run: self.add(
            run, self.mul(self.load(parts[1], [*batch, s]), weight(s))))

        def column(c: str) -> None:
            value = self.reduce(count, self.const(0.0), lambda s, run: self.add(
                run, self.mul(self.load(parts[2], [*batch, s, c]), weight(s))))
            value = self.op("arith.divf", value, total, typ="f32")
            self.store(self.convert(value, "f32", spec.o.dtype), spec.o,
                       [*self.lead(batch, spec.o), self.b.const(0), c])
        self.loops([self.b.const(spec.dv)], lambda c: column(c[0]))
