"""Row kernels: elementwise ops and reductions over the last axis, fused row by row, vectorized and threaded.

On the generic path every linalg op is a scalar loop nest of its own, over
memory, on one core. The ops around the contractions of an LLM layer are
nearly all *row ops*: a ``linalg.generic`` over f32 tensors, with one
result, whose

- loops are all parallel (a *map*), or all parallel but the last, which is a
  reduction (a *reduce*); the output map is the identity on the parallel loops;
- inputs are read whole (the identity map), per row (every loop but the last)
  or per column (the last loop alone);
- body is an elementwise program (ELEMENTWISE_OPS and f32 constants); a
  reduce's yields ``combine(acc, e)``, ``combine`` one of COMBINERS and
  ``acc`` its output, read nowhere else.

Row ops over the same rows that follow one another in a function form a
*group*, and a map over the rows themselves (rank one less: RMSNorm's
``rsqrt(mean + eps)``) joins the group as a *scalar* op. A group becomes one
kernel: the workers take shares of the rows, and each row is computed in
*sweeps* along its columns, one vector at a time. A reduce's result is known
after its sweep, so an op that reads it runs in a later sweep, with the
scalar ops in between; a map read in a later sweep is kept in a scratch row
(per worker, so it stays in L1 for rows of a few thousand). Reductions keep
REDUCTION_CHAINS vector accumulators (independent chains for the FMA and add
latency) and reduce them once per row. What the rest of the function reads
is written out; everything else lives in registers or in the scratch row.

Example, RMSNorm (``fill``, the sum of squares, ``rsqrt``, ``x * r * g``)
becomes one kernel of two sweeps per row: the sum of squares, then the
scalar ``rsqrt``, then the normalized row stored. Softmax (max, exp, sum,
division) becomes three: the maximum; ``p = exp(x - m)``, kept in the
scratch row, and its sum in the same sweep; ``p / l``.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from dataclasses import dataclass, field

from mlir import ir

from prism.codegen.cpu.epilogue import Program, elementwise_program
from prism.codegen.cpu.text import F32, MlirText, erase_unused_inits, f32_literal, inline_body
from prism.infra import attrs
from prism.infra.diagnostics import describe_ops
from prism.infra.ir import filled_constant
from prism.infra.maps import map_dims

# The ops a reduce may combine with, each with its vector.reduction kind and neutral element.
COMBINERS = {
    "arith.addf": ("add", 0.0), "arith.mulf": ("mul", 1.0),
    "arith.maximumf": ("maximumf", -math.inf), "arith.maxnumf": ("maxnumf", -math.inf),
    "arith.minimumf": ("minimumf", math.inf), "arith.minnumf": ("minnumf", math.inf),
}
# Vector accumulators per reduce in a sweep: the columns are taken this many vectors at a time.
REDUCTION_CHAINS = 4
# Elements of the domain per worker, at least, where the sizes are static.
MIN_WORK = 1 << 14


@dataclass
class RowOp:
    """One row op: ``inputs`` are (how each is read: "full", "row" or "column", value); ``program`` computes
    ``result`` (a reference, see :class:`~prism.codegen.cpu.kernel.Epilogue`) from them and from the f32
    values ``captures`` from outside its body; a reduce combines it into its output with ``combiner``.
    ``domain`` is the tensor type of its loops (the full rows)."""

    op: ir.Operation
    inputs: list[tuple[str, ir.Value]]
    program: Program
    result: tuple
    combiner: str | None
    domain: ir.RankedTensorType
    captures: list[ir.Value]

    @property
    def reduces(self) -> bool:
        return self.combiner is not None

    @property
    def init(self) -> ir.Value:
        """A reduce's init (its output operand)."""
        return self.op.operands[len(self.inputs)]


def match_row_op(op: ir.Operation) -> RowOp | None:
    """The row op ``op`` is (see the module docstring), or None."""
    if op.name != "linalg.generic" or len(op.results) != 1 or attrs.CPU_CONTRACTION_TAG in op.attributes:
        return None
    if not all(isinstance(v.type, ir.RankedTensorType) and str(ir.RankedTensorType(v.type).element_type) == F32
               for v in [*op.operands, *op.results]):
        return None
    iterators = ["reduction" if "reduction" in str(it) else "parallel"
                 for it in ir.ArrayAttr(op.attributes["iterator_types"])]
    rank = len(iterators)
    if rank < 1 or "reduction" in iterators[:-1]:
        return None
    reduces = iterators[-1] == "reduction"
    maps = [map_dims(ir.AffineMapAttr(a).value) for a in ir.ArrayAttr(op.attributes["indexing_maps"])]
    whole = list(range(rank))
    if maps[-1] != (whole[:-1] if reduces else whole):
        return None
    n_inputs = len(op.operands) - 1
    block = op.regions[0].blocks[0]
    args = list(block.arguments)
    refs: dict[ir.Value, tuple] = {}
    inputs: list[tuple[str, ir.Value]] = []
    domain = None if reduces else ir.RankedTensorType(op.results[0].type)
    for i, (value, dims) in enumerate(zip(op.operands[:n_inputs], maps[:n_inputs], strict=True)):
        # Checked in this order: for one loop, the whole input is also its column.
        how = next((h for h, d in (("full", whole), ("row", whole[:-1]), ("column", [rank - 1])) if dims == d), None)
        if how is None:
            return None
        if how == "full" and domain is None:
            domain = ir.RankedTensorType(value.type)
        refs[args[i]] = ("input", len(inputs))
        inputs.append((how, value))
    if domain is None:
        return None  # a reduce that reads no whole input: nothing gives its columns
    body = [o.operation for o in block.operations]
    terminator = body.pop()
    if len(terminator.operands) != 1:
        return None
    yielded = terminator.operands[0]
    acc = args[n_inputs]
    combiner = None
    if reduces:
        # The last op combines the accumulator with the element's value, and is the only reader of it.
        if not body or yielded != body[-1].results[0] or body[-1].name not in COMBINERS \
                or len(list(acc.uses)) != 1 or acc not in list(body[-1].operands):
            return None
        combine = body.pop()
        if not all(name == "fastmath" for name in combine.attributes):
            return None
        combiner = combine.name
        yielded = next(v for v in combine.operands if v != acc)
    elif len(list(acc.uses)):
        return None  # a map that reads its output
    captures: list[ir.Value] = []
    program = elementwise_program(body, refs, captures)
    if program is None or yielded not in refs:
        return None
    return RowOp(op, inputs, program, refs[yielded], combiner, domain, captures)


@dataclass
class _Member:
    """A row op in its group: ``role`` is "map", "reduce" or "scalar"; ``sweep`` the sweep a map or reduce
    runs in, or for a scalar op the first sweep that may read it."""

    row_op: RowOp
    role: str
    sweep: int = 0


@dataclass
class _Group:
    domain: ir.RankedTensorType
    members: list[_Member] = field(default_factory=list)

    @property
    def row_type(self) -> str:
        shape = ["?" if ir.ShapedType.is_dynamic_size(s) else str(s) for s in self.domain.shape[:-1]]
        return f"tensor<{'x'.join(shape)}x{F32}>"

    def produced(self, value: ir.Value) -> int | None:
        """The index of the member whose result ``value`` is, or None."""
        return next((i for i, m in enumerate(self.members) if m.row_op.op.results[0] == value), None)

    def admits(self, row_op: RowOp) -> str | None:
        """The role ``row_op`` would take in the group, or None if it starts another."""
        read = [v for m in self.members for how, v in m.row_op.inputs if how == "full"]
        connected = any(self.produced(v) is not None for v in row_op.op.operands) or any(
            how == "full" and v in read for how, v in row_op.inputs)
        if not (connected or self.domain.has_static_shape):
            return None  # dynamic sizes: only ops that share a value are known to share the rows
        if any(how == "column" and self.produced(v) is not None for how, v in row_op.inputs):
            return None  # a row value of the group read per column: it needs every row first
        if str(row_op.domain) == self.row_type and not row_op.reduces \
                and all(how == "full" for how, _ in row_op.inputs):
            return "scalar"
        if row_op.domain == self.domain:
            return "reduce" if row_op.reduces else "map"
        return None


def fuse_rows(module: ir.Module, lanes: int, workers: int) -> list[list[str]]:
    """Replace every group of row ops in ``module``'s functions by a row kernel.

    Returns, per group, its function and ops as text (:func:`describe_ops`), read before they go.
    """
    found: list[list[str]] = []
    for func in module.body.operations:
        if func.operation.name != "func.func" or not func.regions[0].blocks:
            continue
        for group in _groups(func.regions[0].blocks[0]):
            kernel = _RowKernel(group, lanes, workers)
            if not kernel.outputs:  # nothing reads the group's results: its ops are dead, and go
                kernel.replace()
            elif kernel.sizes_known():
                found.append(describe_ops(func.operation, [m.row_op.op for m in group.members]))
                kernel.replace()
    return found


def _groups(block: ir.Block) -> Iterator[_Group]:
    """The groups of ``block``, each as it ends; the caller may replace it before the scan goes on."""
    current: _Group | None = None
    for op in list(block.operations):
        op = op.operation
        row_op = match_row_op(op)
        role = current.admits(row_op) if current is not None and row_op is not None else None
        if role is not None:
            current.members.append(_Member(row_op, role))
            continue
        if current is not None and (row_op is not None or _reads(op, current)):
            _assign_sweeps(current)
            yield current
            current = None
            row_op = match_row_op(op)  # the values it read from the group may have been replaced
        if row_op is not None and row_op.domain.rank >= 2:
            current = _Group(row_op.domain, [_Member(row_op, "reduce" if row_op.reduces else "map")])
    if current is not None:
        _assign_sweeps(current)
        yield current


def _reads(op: ir.Operation, group: _Group) -> bool:
    """``op``, or an op nested in it, reads a result of ``group``."""
    found = False

    def visit(inner: ir.Operation) -> ir.WalkResult:
        nonlocal found
        found = any(group.produced(v) is not None for v in inner.operands)
        return ir.WalkResult.INTERRUPT if found else ir.WalkResult.ADVANCE

    op.walk(visit)
    return found


def _assign_sweeps(group: _Group) -> None:
    """A map or reduce runs in the first sweep after every reduce it reads, and with the maps it reads; a
    scalar op is ready for the sweep after the reduces it reads."""
    for member in group.members:
        sweep = 0
        values = [v for _, v in member.row_op.inputs]
        if member.role == "reduce":
            values.append(member.row_op.init)
        for value in values:
            j = group.produced(value)
            if j is None:
                continue
            source = group.members[j]
            sweep = max(sweep, source.sweep + 1 if source.role == "reduce" else source.sweep)
        member.sweep = sweep


class _RowKernel:
    """The text of one group's kernel, and its replacement of the group."""

    def __init__(self, group: _Group, lanes: int, workers: int):
        self.group, self.lanes = group, lanes
        self.members = group.members
        self.rank = group.domain.rank
        rows = math.prod(group.domain.shape[:-1]) if group.domain.has_static_shape else None
        # Each worker gets MIN_WORK elements at least: a task launch costs more than a smaller share.
        self.workers = max(1, min(workers, -(-rows * group.domain.shape[-1] // MIN_WORK))) if rows is not None \
            else workers
        ops = [m.row_op.op for m in self.members]
        # What the rest of the program reads: each such member's result is written out.
        self.outputs = [i for i, m in enumerate(self.members)
                        if any(use.owner.operation not in ops for use in m.row_op.op.results[0].uses)]
        # Maps read in a later sweep than their own: kept in a scratch row unless written out anyway.
        later = {j for m in self.members for _, v in m.row_op.inputs
                 if (j := group.produced(v)) is not None and self.members[j].role == "map"
                 and self.members[j].sweep < m.sweep}
        self.scratch = sorted(later - set(self.outputs))
        # The arguments: every value read from outside the group, with how it is read.
        self.args: list[tuple[str, ir.Value]] = []
        for m in self.members:
            reads = [("row" if m.role == "scalar" else how, v) for how, v in m.row_op.inputs]
            if m.role == "reduce" and filled_constant(m.row_op.init) is None:
                reads.append(("row", m.row_op.init))
            reads += [("scalar", v) for v in m.row_op.captures]
            for how, v in reads:
                if group.produced(v) is None and not any(v == w and how == h for h, w in self.args):
                    self.args.append((how, v))
        self.size_source = next((v for how, v in self.args if how == "full"), None)
        if self.size_source is None:
            first_map = next((m.row_op for m in self.members if m.role == "map"), None)
            if first_map is not None and first_map.domain == ir.RankedTensorType(first_map.op.operands[-1].type):
                self.size_source = first_map.op.operands[-1]
                self.args.append(("full", self.size_source))

    def sizes_known(self) -> bool:
        return self.group.domain.has_static_shape or self.size_source is not None

    def replace(self) -> None:
        """Replace the group by its kernel (a group whose results nothing reads is erased)."""
        ops = [m.row_op.op for m in self.members]
        feeding = [v.owner.operation for op in ops for v in op.operands if not isinstance(v.owner, ir.Block)]
        if self.outputs:
            returned = inline_body(ops[-1], self.text(), [v for _, v in self.args])
            for i, value in zip(self.outputs, returned, strict=True):
                self.members[i].row_op.op.results[0].replace_all_uses_with(value)
        for op in reversed(ops):
            op.erase()
        erase_unused_inits(feeding)

    # ---- the text ---------------------------------------------------------------------------------------------

    def text(self) -> str:
        t = self.t = MlirText()
        self.vec = f"vector<{self.lanes}x{F32}>"
        self.mask_type = f"vector<{self.lanes}xi1>"
        # Each output keeps its op's result type (which may be more static than the domain read from an input).
        out_types = [str(self.members[i].row_op.op.results[0].type) for i in self.outputs]
        params = ", ".join(f"%x{k}: {v.type}" for k, (_, v) in enumerate(self.args))
        with t.region(f"func.func private @rows({params}) -> ({', '.join(out_types)})"):
            self.c0, self.c1 = t.const(0), t.const(1)
            sizes = self._sizes()
            self.rows = sizes[0]
            for size in sizes[1:-1]:
                self.rows = t.value(f"arith.muli {self.rows}, {size} : index", "rows")
            self.cols = sizes[-1]
            self.buffers = [f"%x{k}" if how == "scalar" else self._buffer(k, how, str(v.type))
                            for k, (how, v) in enumerate(self.args)]
            self.splats = {k: t.value(f"vector.broadcast %x{k} : {F32} to {self.vec}", "bc")
                           for k, (how, _) in enumerate(self.args) if how == "scalar"}
            wholes, out_buffers = self._allocate(sizes)
            self._rows_loop(out_buffers)
            results = [self._result(whole, typ) for whole, typ in zip(wholes, out_types, strict=True)]
            t.add(f"return {', '.join(results)} : {', '.join(out_types)}")
        return t.function_text()

    def _allocate(self, sizes: list[str]) -> tuple[list[str], list[str]]:
        """The outputs' buffers at their own rank and their row views (both in order), and the scratch rows (in
        ``self.stored``)."""
        t = self.t
        full = _dynamic("memref", 2)
        self.stored: dict[int, tuple[str, str]] = {}  # member -> (buffer, "out" or "scratch")
        out_buffers, wholes = [], []
        for i in self.outputs:
            is_full = self.members[i].role == "map"
            whole, buffer = self._output(sizes if is_full else sizes[:-1], 2 if is_full else 1)
            wholes.append(whole)
            out_buffers.append(buffer)
            if is_full:
                self.stored[i] = (buffer, "out")
        for i in self.scratch:
            self.stored[i] = (t.alloc(full, [t.const(self.workers), self.cols], "scr"), "scratch")
        return wholes, out_buffers

    def _sizes(self) -> list[str]:
        """Every dimension of the domain, as index values."""
        t = self.t
        if self.group.domain.has_static_shape:
            return [t.const(s) for s in self.group.domain.shape]
        k = self._arg("full", self.size_source)
        source_type = str(self.size_source.type)
        return [t.const(s) if not ir.ShapedType.is_dynamic_size(s)
                else t.value(f"tensor.dim %x{k}, {t.const(d)} : {source_type}", "s")
                for d, s in enumerate(self.group.domain.shape)]

    def _buffer(self, k: int, how: str, tensor: str) -> str:
        """Argument ``k`` as a buffer: 2-D (rows x columns) when read whole, else 1-D.

        The dimensions are joined on the tensor, where bufferization copies a view whose rows do not follow
        one another (a slice of a padded product) into a buffer that holds them contiguously; a buffer taken
        as it is and then collapsed would be read as if they did.
        """
        t = self.t
        rank = ir.RankedTensorType.parse(tensor).rank
        flat = 2 if how == "full" else 1
        if rank == flat:
            return t.buffer(f"%x{k}", tensor, _dynamic("memref", rank))
        loose = t.value(f"tensor.cast %x{k} : {tensor} to {_dynamic('tensor', rank)}", "arg")
        joined = t.value(f"tensor.collapse_shape {loose} {_flattening(rank, flat)} : {_dynamic('tensor', rank)} "
                         f"into {_dynamic('tensor', flat)}", "flat")
        return t.buffer(joined, _dynamic("tensor", flat), _dynamic("memref", flat))

    def _output(self, sizes: list[str], flat: int) -> tuple[str, str]:
        """An output buffer of ``sizes``, and its view as rows x columns (``flat`` = 2) or rows (1).

        The buffer has the output's own rank and the kernel writes through a collapsed view: the tensor
        returned then needs no expand_shape, which the lowering to LLVM cannot take with two dynamic sizes in
        one group.
        """
        t, rank = self.t, len(sizes)
        whole = t.alloc(_dynamic("memref", rank), sizes, "o")
        if rank == flat:
            return whole, whole
        return whole, t.value(f"memref.collapse_shape {whole} {_flattening(rank, flat)} : "
                              f"{_dynamic('memref', rank)} into {_dynamic('memref', flat)}", "o")

    def _result(self, buffer: str, typ: str) -> str:
        """An output buffer (of the output's rank) as a tensor of the op's type."""
        rank = ir.RankedTensorType.parse(typ).rank
        value = self.t.value(f"bufferization.to_tensor {buffer} restrict : {_dynamic('memref', rank)} to "
                             f"{_dynamic('tensor', rank)}", "r")
        return self.t.value(f"tensor.cast {value} : {_dynamic('tensor', rank)} to {typ}", "r")

    def _rows_loop(self, out_buffers: list[str]) -> None:
        t = self.t
        with t.share(self.rows, self.workers) as (self.worker, first, last), \
                t.for_(first, last, self.c1, "row") as self.row:
            self.scalars: dict[int, str] = {}  # member (reduce or scalar) -> its value for this row
            self.arg_scalars: dict[int, str] = {}  # row argument -> its value for this row
            sweeps = max((m.sweep for m in self.members if m.role != "scalar"), default=-1) + 1
            for sweep in range(sweeps + 1):
                for i, m in enumerate(self.members):
                    if m.role == "scalar" and i not in self.scalars and m.sweep <= sweep:
                        self.scalars[i] = t.program(m.row_op.program, lambda ref, m=m: self._scalar(m, ref), F32) \
                            if m.row_op.program else self._scalar(m, m.row_op.result)
                if sweep < sweeps:
                    self._sweep([i for i, m in enumerate(self.members) if m.role != "scalar" and m.sweep == sweep])
            for i, buffer in zip(self.outputs, out_buffers, strict=True):
                if self.members[i].role != "map":
                    t.add(f"memref.store {self.scalars[i]}, {buffer}[{self.row}] : memref<?xf32>")

    def _row_value(self, value: ir.Value) -> str:
        """A value read per row (an argument or a reduce or scalar member) as this row's f32."""
        j = self.group.produced(value)
        if j is not None:
            return self.scalars[j]
        k = self._arg("row", value)
        if k not in self.arg_scalars:
            self.arg_scalars[k] = self.t.value(f"memref.load {self.buffers[k]}[{self.row}] : memref<?xf32>", "xr")
        return self.arg_scalars[k]

    def _scalar(self, member: _Member, ref: tuple) -> str:
        if ref[0] == "constant":
            return self.t.value(f"arith.constant {f32_literal(ref[1])} : {F32}", "xc")
        if ref[0] == "scalar":
            return self.buffers[self._arg("scalar", member.row_op.captures[ref[1]])]
        return self._row_value(member.row_op.inputs[ref[1]][1])

    def _arg(self, how: str, value: ir.Value) -> int:
        """The index of the argument ``value``, read ``how``."""
        return next(k for k, (h, v) in enumerate(self.args) if v == value and h == how)

    def _sweep(self, indices: list[int]) -> None:
        """One pass along the row's columns computing the members ``indices``."""
        t = self.t
        reduces = [i for i in indices if self.members[i].role == "reduce"]
        # Row values read in the sweep, broadcast once per row.
        self.broadcasts: dict[ir.Value, str] = {}
        for i in indices:
            for how, value in self.members[i].row_op.inputs:
                if how == "row" or (self.group.produced(value) is not None
                                    and self.members[self.group.produced(value)].role != "map"):
                    self._broadcast(value)
        neutral = {i: t.value(f"arith.constant dense<{f32_literal(COMBINERS[self.members[i].row_op.combiner][1])}>"
                              f" : {self.vec}", "nz") for i in reduces}
        chains = REDUCTION_CHAINS if reduces else 1
        step = chains * self.lanes
        whole = t.whole_end(self.cols, t.const(step), hint="cw")
        accs = self._loop(indices, self.c0, whole, chains, [[neutral[i] for i in reduces] for _ in range(chains)])
        vectors = whole
        if chains > 1:
            vectors = t.whole_end(self.cols, t.const(self.lanes), hint="cv")
            accs[0] = self._loop(indices, whole, vectors, 1, [accs[0]])[0]
        accs[0] = self._tail(indices, vectors, accs[0], [neutral[i] for i in reduces])
        for r, i in enumerate(reduces):
            combiner = self.members[i].row_op.combiner
            total = accs[0][r]
            for chain in accs[1:]:
                total = t.value(f"{combiner} {total}, {chain[r]} : {self.vec}", "acc")
            kind = COMBINERS[combiner][0]
            init = self._init(self.members[i])
            self.scalars[i] = t.value(f"vector.reduction <{kind}>, {total}, {init} : {self.vec} into {F32}", "red")

    def _broadcast(self, value: ir.Value) -> None:
        if value not in self.broadcasts:
            self.broadcasts[value] = self.t.value(f"vector.broadcast {self._row_value(value)} : {F32} to {self.vec}",
                                                  "bc")

    def _init(self, member: _Member) -> str:
        filled = filled_constant(member.row_op.init)
        if filled is not None:
            return self.t.value(f"arith.constant {f32_literal(filled)} : {F32}", "xc")
        return self._row_value(member.row_op.init)

    def _loop(self, indices: list[int], start: str, end: str, chains: int, accs: list[list[str]]) -> list[list[str]]:
        """Columns ``start`` to ``end``, ``chains`` whole vectors at a time, each chain with its accumulators."""
        t = self.t
        step = t.const(chains * self.lanes)
        if not sum(len(a) for a in accs):
            with t.for_(start, end, step, "col") as col:
                for chain in range(chains):
                    self._columns(indices, self._offset(col, chain), None, [])
            return accs
        per = len(accs[0])
        with t.for_carried(start, end, step, [v for chain in accs for v in chain], self.vec,
                           ("col", "a", "acc")) as loop:
            names = [loop.args[chain * per:(chain + 1) * per] for chain in range(chains)]
            updated = [self._columns(indices, self._offset(loop.iv, chain), None, names[chain])
                       for chain in range(chains)]
            t.yield_([v for chain in updated for v in chain], [self.vec] * len(loop.args))
        return [loop.results[chain * per:(chain + 1) * per] for chain in range(chains)]

    def _offset(self, col: str, chain: int) -> str:
        return col if chain == 0 else self.t.value(f"arith.addi {col}, {self.t.const(chain * self.lanes)} : index",
                                                   "col")

    def _tail(self, indices: list[int], start: str, accs: list[str], neutral: list[str]) -> list[str]:
        """The columns past the last whole vector, under a mask."""
        t = self.t
        ragged = t.value(f"arith.cmpi ult, {start}, {self.cols} : index", "ragged")
        mask = t.value(f"vector.create_mask {t.value(f'arith.subi {self.cols}, {start} : index')} : "
                       f"{self.mask_type}", "mask")
        if not accs:
            with t.if_(ragged):
                self._columns(indices, start, mask, [])
            return accs
        types = [self.vec] * len(accs)
        with t.if_(ragged, types, "acc") as out:
            t.yield_(self._columns(indices, start, (mask, neutral), accs), types)
        with t.else_():
            t.yield_(accs, types)
        return out

    def _columns(self, indices: list[int], col: str, masked, accs: list[str]) -> list[str]:
        """Every member of ``indices`` at the vector of columns from ``col`` (``masked``: the tail's mask, or
        with reduces (mask, neutral vectors)); returns the reduces' accumulators updated."""
        t = self.t
        mask = masked[0] if isinstance(masked, tuple) else masked
        vectors: dict[int, str] = {}
        updated: list[str] = []
        for i in indices:
            member = self.members[i]

            def operand(ref: tuple, member: _Member = member) -> str:
                if ref[0] == "scalar":
                    return self.splats[self._arg("scalar", member.row_op.captures[ref[1]])]
                how, value = member.row_op.inputs[ref[1]]
                j = self.group.produced(value)
                if j is not None and self.members[j].role == "map":
                    if j in vectors:
                        return vectors[j]
                    buffer, kind = self.stored[j]
                    return self._load(buffer, [self.worker if kind == "scratch" else self.row, col], mask, 2)
                if how == "row" or j is not None:
                    return self.broadcasts[value]
                k = self._arg(how, value)
                where = [self.row, col] if how == "full" else [col]
                return self._load(self.buffers[k], where, mask, len(where))

            if member.row_op.result[0] == "constant":
                value = t.value(f"arith.constant dense<{f32_literal(member.row_op.result[1])}> : {self.vec}", "xc")
            elif member.row_op.program:
                value = t.program(member.row_op.program, operand, self.vec)
            else:
                value = operand(member.row_op.result)
            if member.role == "map":
                vectors[i] = value
                if i in self.stored:
                    buffer, kind = self.stored[i]
                    self._store(value, buffer, [self.worker if kind == "scratch" else self.row, col], mask)
                continue
            r = len(updated)
            if isinstance(masked, tuple):
                value = t.value(f"arith.select {mask}, {value}, {masked[1][r]} : {self.mask_type}, {self.vec}", "e")
            updated.append(t.value(f"{member.row_op.combiner} {accs[r]}, {value} : {self.vec}", "acc"))
        return updated

    def _load(self, buffer: str, where: list[str], mask: str | None, rank: int) -> str:
        memref = f"memref<{'x'.join('?' * rank)}x{F32}>"
        at = ", ".join(where)
        if mask is None:
            return self.t.value(f"vector.load {buffer}[{at}] : {memref}, {self.vec}", "x")
        zero = self.t.value(f"arith.constant dense<0.0> : {self.vec}", "zv")
        return self.t.value(f"vector.maskedload {buffer}[{at}], {mask}, {zero} : {memref}, {self.mask_type}, "
                            f"{self.vec} into {self.vec}", "x")

    def _store(self, value: str, buffer: str, where: list[str], mask: str | None) -> None:
        at = ", ".join(where)
        if mask is None:
            self.t.add(f"vector.store {value}, {buffer}[{at}] : memref<?x?xf32>, {self.vec}")
        else:
            self.t.add(f"vector.maskedstore {buffer}[{at}], {mask}, {value} : memref<?x?xf32>, {self.mask_type}, "
                       f"{self.vec}")


def _dynamic(kind: str, rank: int) -> str:
    """The f32 tensor or memref type of ``rank`` dynamic dimensions."""
    return f"{kind}<{'x'.join('?' * rank)}x{F32}>"


def _flattening(rank: int, flat: int) -> list[list[int]]:
    """The reassociation that flattens ``rank`` dimensions into rows x columns (``flat`` = 2) or rows (1)."""
    return [list(range(rank - 1)), [rank - 1]] if flat == 2 else [list(range(rank))]
