"""Row kernels (reductions along the innermost dimensions, fused with the elementwise ops around them) and
elementwise kernels, as ``gpu.func`` text.

**A row kernel** (:func:`emit_rows`) gives each row (a point of ``spec.rows``)
to one warp when the row is short, or to one block of several warps
otherwise (:func:`row_plans` is the rule). The row's columns are cut into
chunks of ``vector`` consecutive columns; thread ``t`` of the row's
``threads`` takes chunks ``t, t + threads, ...``. The reductions run in
stages (a stage holds consecutive reductions that read none of each other):
each lane combines its chunks' values in f32, a butterfly of
``gpu.shuffle xor`` combines the warp's lanes, and in a block, lane 0 of
each warp leaves its warp's value in shared memory, where every warp reads
all of them back and combines them again, so that every thread holds the
row's result. The outputs come last: per element in one more sweep, or
once per row by the row's first thread.

When a thread's chunks fit in a register budget (under a static bound on
the columns), the kernel is unrolled over them: the column operands that
more than one sweep reads are loaded once, into registers, before the first
sweep, and the others where their sweep needs them; otherwise each sweep is
a loop that loads what it reads again (from L2 then).

**An elementwise kernel** (:func:`emit_pointwise`) gives each thread one chunk
of ``vector`` consecutive elements of the output, over a one-dimensional grid
with the tail masked.

**Vector accesses.** A chunk holds ``vector`` columns when the innermost
dimension is a multiple of it, so a chunk never crosses that dimension:
every other index is the same across it. A static dimension is known to be
one; a row kernel tests a size symbol in the kernel and runs the rows by
scalar chunks where it is not (an elementwise kernel takes scalars then).
A tensor whose last dimension is indexed by the innermost one and is a
multiple of ``vector`` is then read and written as one 16-byte-aligned
vector (its chunk starts are multiples of ``vector`` elements); a tensor
that does not depend on the innermost index is read once per chunk; any
other access is one scalar per element.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

from prism.codegen.gpu.spec import (
    ELEMENT_BYTES,
    Dim,
    Kernel,
    Launch,
    Operand,
    Param,
    RowOutput,
    RowSpec,
    ScalarFn,
    Tensor,
    convert,
    load_element,
    numel_text,
    store_element,
)
from prism.codegen.text import TextBuilder

WARP = 32
SHORT_ROW = 1024  # columns a single warp takes; longer rows take a block
ROWS_PER_BLOCK = 4  # warps, hence rows, per block of a warp-per-row kernel
COLUMNS_PER_THREAD = 8  # a block has about columns / this threads (a power of two, 64 to 1024)
DYNAMIC_BLOCK_THREADS = 512  # threads per row of a block-per-row kernel when the columns are dynamic
CACHE_REGISTERS = 64  # 32-bit registers a thread may spend holding its chunks of the row's operands
POINTWISE_THREADS = 256
VECTOR_BYTES = 16
FLOATS = ("f16", "bf16", "f32", "f64")
COMBINE = {"add": "arith.addf", "mul": "arith.mulf", "max": "arith.maximumf", "min": "arith.minimumf"}

Key = tuple[str, tuple[int, ...]]  # an operand's access: its tensor's name and the iteration indices it reads


# -- the launch rule ----------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class RowPlan:
    """How one row kernel covers the rows: ``threads`` per row (32: a warp, more: a block), ``rows_per_block``,
    chunks of ``vector`` columns, ``cached`` chunks per thread held in registers (0: each sweep reloads),
    launched where ``when`` holds. Where the innermost column dimension is a size symbol, ``vector`` holds only
    where it is a multiple of it: the kernel tests that, and runs other rows by ``fallback``."""

    suffix: str
    threads: int
    rows_per_block: int
    vector: int
    cached: int
    when: str | None
    fallback: RowPlan | None = None


def row_plans(spec: RowSpec) -> list[RowPlan]:
    """The kernels of ``spec``: one where the columns are static; with dynamic columns, a warp-per-row kernel
    for rows of at most SHORT_ROW columns and a block-per-row kernel for the longer ones (which reloads)."""
    vector = row_vector(spec)
    columns = _static_product(spec.cols)
    if columns is not None:
        if columns <= SHORT_ROW:
            threads, rows_per_block = WARP, ROWS_PER_BLOCK
        else:
            threads, rows_per_block = min(1024, max(64, _next_pow2(-(-columns // COLUMNS_PER_THREAD)))), 1
        return [RowPlan("", threads, rows_per_block, vector, _cached(spec, vector, columns, threads), None)]
    total = numel_text(spec.cols)
    plans = []
    for suffix, threads, rows_per_block, when, bound in (
            ("_warp", WARP, ROWS_PER_BLOCK, f"{total} <= {SHORT_ROW}", SHORT_ROW),
            ("_block", DYNAMIC_BLOCK_THREADS, 1, f"{total} > {SHORT_ROW}", None)):
        scalar = RowPlan(suffix, threads, rows_per_block, 1, _cached(spec, 1, bound, threads), when)
        checked = vector > 1 and not isinstance(spec.cols[-1], int)
        plans.append(RowPlan(suffix, threads, rows_per_block, vector, _cached(spec, vector, bound, threads), when,
                             scalar if checked else None))
    return plans


def _cached(spec: RowSpec, vector: int, columns: int | None, threads: int) -> int:
    """Chunks per thread held in registers: all of a row of at most ``columns`` (None: no bound), where they
    fit in CACHE_REGISTERS; else 0."""
    if columns is None:
        return 0
    chunks = -(-(columns // vector) // threads)
    return chunks if chunks * _cache_registers_per_chunk(spec, vector) <= CACHE_REGISTERS else 0


def row_vector(spec: RowSpec) -> int:
    """Columns per chunk: 16 bytes of the narrowest column tensor, halved until it divides the innermost
    column dimension (where that is a size symbol, the whole 16 bytes, tested in the kernel)."""
    tensors = [op.tensor for op in _column_operands(spec).values()]
    tensors += [out.tensor for out in spec.outputs if not out.per_row]
    inner = spec.cols[-1] if spec.cols else 1
    return _vector_width(tensors, inner)


def _vector_width(tensors: list[Tensor], inner: Dim) -> int:
    tensors = [t for t in tensors if t.dtype != "i1"]
    if not tensors:
        return 1
    vector = VECTOR_BYTES // min(ELEMENT_BYTES[t.dtype] for t in tensors)
    while isinstance(inner, int) and vector > 1 and inner % vector:
        vector //= 2
    return vector


def _cache_registers_per_chunk(spec: RowSpec, vector: int) -> int:
    return sum(-(-vector * ELEMENT_BYTES[op.tensor.dtype] // 4) for op in _reused_operands(spec).values())


def _static_product(dims: tuple[Dim, ...]) -> int | None:
    product = 1
    for d in dims:
        if not isinstance(d, int):
            return None
        product *= d
    return product


def _next_pow2(n: int) -> int:
    return 1 << max(0, n - 1).bit_length()


# -- operands of a row spec ---------------------------------------------------------------------------------------


def _functions(spec: RowSpec) -> list[ScalarFn]:
    return [r.value for r in spec.reductions] + [o.value for o in spec.outputs]


def _is_result(spec: RowSpec, op: Operand) -> bool:
    """Whether ``op`` reads a reduction's result (a shape-() f32 tensor named after it)."""
    return (op.kind == "tensor" and op.tensor is not None and op.tensor.shape == ()
            and op.tensor.name in {r.name for r in spec.reductions})


def _check_operand(op: Operand) -> None:
    if op.kind != "tensor" or op.tensor is None:
        raise ValueError(f"a row or elementwise kernel reads tensors only, not '{op.kind}' operands")
    if len(op.dims) != op.tensor.rank:
        raise ValueError(f"operand '{op.tensor.name}' of rank {op.tensor.rank} is read with {len(op.dims)} indices")


def _operands(fns: list[ScalarFn], spec: RowSpec | None = None) -> dict[Key, Operand]:
    """The tensor operands of ``fns`` (reduction results left out), each access once."""
    found: dict[Key, Operand] = {}
    for fn in fns:
        for op in fn.operands:
            if spec is not None and _is_result(spec, op):
                continue
            _check_operand(op)
            found.setdefault((op.tensor.name, op.dims), op)
    return found


def _column_operands(spec: RowSpec) -> dict[Key, Operand]:
    """The operands that depend on a column index."""
    rows = len(spec.rows)
    return {k: op for k, op in _operands(_functions(spec), spec).items() if any(d >= rows for d in op.dims)}


def _row_operands(spec: RowSpec) -> dict[Key, Operand]:
    """The operands that depend on the row alone (read once per row)."""
    rows = len(spec.rows)
    return {k: op for k, op in _operands(_functions(spec), spec).items() if all(d < rows for d in op.dims)}


def _sweeps(spec: RowSpec) -> list[list[ScalarFn]]:
    """The functions each sweep over the row applies: one sweep per stage, then one for the per-element outputs."""
    sweeps = [[spec.reductions[i].value for i in stage] for stage in _stages(spec)]
    outputs = [o.value for o in spec.outputs if not o.per_row]
    return sweeps + [outputs] if outputs else sweeps


def _reused_operands(spec: RowSpec) -> dict[Key, Operand]:
    """The column operands that more than one sweep reads: those a thread keeps in registers when it can."""
    reads = [_operands(fns, spec) for fns in _sweeps(spec)]
    return {k: op for k, op in _column_operands(spec).items() if sum(k in r for r in reads) > 1}


def _stages(spec: RowSpec) -> list[list[int]]:
    """The reductions in stages: each joins the current stage unless it reads a reduction of it."""
    stages: list[list[int]] = []
    for i, red in enumerate(spec.reductions):
        reads = {op.tensor.name for op in red.value.operands if _is_result(spec, op)}
        if stages and not reads & {spec.reductions[j].name for j in stages[-1]}:
            stages[-1].append(i)
        else:
            stages.append([i])
    return stages


# -- scalar values --------------------------------------------------------------------------------------------------


def f32_constant(t: TextBuilder, value: float) -> str:
    """An f32 constant, written exactly (hexadecimal bits: infinities included)."""
    bits = struct.unpack("<I", struct.pack("<f", value))[0]
    return t.value(f"arith.constant 0x{bits:08X} : f32", "f")


def zero(t: TextBuilder, dtype: str) -> str:
    """The zero of ``dtype``."""
    return t.value(f"arith.constant {'0.0' if dtype in FLOATS else '0'} : {dtype}", "z")


cast = convert  # the conversion every GPU kernel writes (spec.convert)


def i32(t: TextBuilder, n: int) -> str:
    """An i32 constant."""
    return t.value(f"arith.constant {n} : i32", "k")


def butterfly(t: TextBuilder, value: str, combine: str, width: int) -> str:
    """``value`` combined over each aligned group of ``width`` lanes (a power of two), every lane getting it."""
    span = i32(t, WARP)
    offset = width // 2
    while offset:
        other = t.fresh("sh")
        t.add(f"{other}:2 = gpu.shuffle xor {value}, {i32(t, offset)}, {span} : f32")
        value = t.value(f"{COMBINE[combine]} {value}, {other}#0 : f32", "red")
        offset //= 2
    return value


# -- a kernel's frame: parameters, sizes, indexing, accesses ------------------------------------------------------


class Frame:
    """One kernel being written: its tensor and size parameters, and the accesses through them.

    ``extents`` are the iteration space's dimensions; ``known`` maps the
    indices of an access whose tensor has exactly the extents at them to its
    linear index at the current chunk's start (the row-major shortcuts).
    """

    def __init__(self, name: str, tensors: list[Tensor], extents: tuple[Dim, ...]) -> None:
        self.t = TextBuilder()
        self.name = name
        self.extents = extents
        self.tensors: dict[str, Tensor] = {}
        for tensor in tensors:
            self.tensors.setdefault(tensor.name, tensor)
        symbols: list[str] = []
        for d in list(extents) + [d for tensor in self.tensors.values() for d in tensor.shape]:
            if isinstance(d, str) and d not in symbols:
                symbols.append(d)
        self.args = {name: f"%arg{i}" for i, name in enumerate(self.tensors)}
        self.sizes = {s: f"%size{i}" for i, s in enumerate(symbols)}
        self.known: dict[tuple[int, ...], str] = {}
        self.multiples: dict[str, int] = {}  # size symbols known (tested) to be multiples of a vector width

    def header(self, block: int, workgroup: str = "") -> str:
        """The ``gpu.func`` line: tensors, then size symbols, then shared memory."""
        args = [f"{self.args[n]}: {tensor.memref}" for n, tensor in self.tensors.items()]
        args += [f"{v}: index" for v in self.sizes.values()]
        shared = f" workgroup({workgroup})" if workgroup else ""
        return (f"gpu.func @{self.name}({', '.join(args)}){shared} kernel "
                f"attributes {{known_block_size = array<i32: {block}, 1, 1>}}")

    def params(self) -> tuple[Param, ...]:
        """The launch's parameters, in the header's order."""
        return (tuple(Param("tensor", n) for n in self.tensors) + tuple(Param("size", s) for s in self.sizes))

    def dim(self, d: Dim) -> str:
        """A dimension as an index value."""
        return self.t.const(d) if isinstance(d, int) else self.sizes[d]

    def product(self, dims: tuple[Dim, ...]) -> str:
        """The product of ``dims`` as an index value."""
        static = _static_product(dims)
        if static is not None:
            return self.t.const(static)
        value = self.dim(dims[0])
        for d in dims[1:]:
            value = self.t.value(f"arith.muli {value}, {self.dim(d)} : index", "n")
        return value

    def decompose(self, linear: str, dims: tuple[Dim, ...]) -> list[str]:
        """The row-major indices of ``linear`` over ``dims`` (the outermost not wrapped)."""
        indices: list[str] = []
        for pos in range(len(dims) - 1, 0, -1):
            size = self.dim(dims[pos])
            indices.insert(0, self.t.value(f"arith.remui {linear}, {size} : index", "ix"))
            linear = self.t.value(f"arith.divui {linear}, {size} : index", "q")
        return [linear] + indices if dims else []

    def linear(self, op: Operand, index: list[str]) -> str:
        """The linear index of ``op``'s tensor at the point ``index`` (size-1 dimensions broadcast)."""
        shape = op.tensor.shape
        if not shape:
            return self.t.const(0)
        if op.dims in self.known and shape == tuple(self.extents[d] for d in op.dims):
            return self.known[op.dims]
        value = None
        for size, d in zip(shape, op.dims, strict=True):
            if size == 1:
                continue
            term = index[d]
            if value is not None:
                scaled = self.t.value(f"arith.muli {value}, {self.dim(size)} : index", "lin")
                term = self.t.value(f"arith.addi {scaled}, {term} : index", "lin")
            value = term
        return value if value is not None else self.t.const(0)

    def load(self, tensor: Tensor, linear: str) -> str:
        """One element of ``tensor``."""
        return load_element(self.t, tensor, self.args[tensor.name], linear)

    def store(self, value: str, tensor: Tensor, linear: str) -> None:
        """Store one element of ``tensor``."""
        store_element(self.t, value, tensor, self.args[tensor.name], linear)


# -- chunks: ``vector`` consecutive points along the innermost index ----------------------------------------------


def access_kind(tensor: Tensor, dims: tuple[int, ...], inner: int, vector: int,
                multiples: dict[str, int]) -> str:
    """How a chunk reads or writes ``tensor``: ``"vector"`` (one aligned vector: its last dimension is a
    multiple of ``vector``, statically or by ``multiples``), ``"once"`` (it does not depend on the innermost
    index), ``"contiguous"`` (consecutive scalars) or ``"gather"``."""
    varying = [pos for pos, d in enumerate(dims) if d == inner and tensor.shape[pos] != 1]
    if not varying:
        return "once"
    if varying == [tensor.rank - 1]:
        last = tensor.shape[-1]
        multiple = last if isinstance(last, int) else multiples.get(last, 1)
        # an i1 vector is bit-packed in LLVM where the buffer holds a byte per element
        aligned = vector > 1 and multiple % vector == 0 and tensor.dtype != "i1"
        return "vector" if aligned else "contiguous"
    return "gather"


def shifted(frame: Frame, index: list[str], axis: int, step: int) -> list[str]:
    """``index`` moved ``step`` along ``axis``."""
    if step == 0:
        return index
    moved = frame.t.value(f"arith.addi {index[axis]}, {frame.t.const(step)} : index", "ix")
    return index[:axis] + [moved] + index[axis + 1:]


def vector_type(tensor: Tensor, vector: int) -> str:
    return f"vector<{vector}x{tensor.dtype}>"


def alignment(tensor: Tensor, vector: int) -> int:
    """The bytes a vector access of ``tensor`` at a multiple of ``vector`` elements is aligned to."""
    return min(VECTOR_BYTES, vector * ELEMENT_BYTES[tensor.dtype])


def load_chunk(frame: Frame, op: Operand, index: list[str], vector: int) -> list[str]:
    """The ``vector`` elements of ``op`` at a chunk starting at ``index``, as scalars."""
    t, inner = frame.t, len(frame.extents) - 1
    kind = access_kind(op.tensor, op.dims, inner, vector, frame.multiples) if vector > 1 else "once"
    if kind == "once":
        return [frame.load(op.tensor, frame.linear(op, index))] * vector
    if kind == "gather":
        return [frame.load(op.tensor, frame.linear(op, shifted(frame, index, inner, e))) for e in range(vector)]
    start = frame.linear(op, index)
    if kind == "contiguous":
        return [frame.load(op.tensor, _plus(t, start, e)) for e in range(vector)]
    vtype = vector_type(op.tensor, vector)
    loaded = t.value(f"vector.load {frame.args[op.tensor.name]}[{start}] "
                     f"{{alignment = {alignment(op.tensor, vector)}}} : {op.tensor.memref}, {vtype}", "vl")
    return [t.value(f"vector.extract {loaded}[{e}] : {op.tensor.dtype} from {vtype}", "el") for e in range(vector)]


def store_chunk(frame: Frame, values: list[str], tensor: Tensor, index: list[str]) -> None:
    """Store a chunk of ``tensor`` (shaped as the iteration space) starting at ``index``."""
    t, vector = frame.t, len(values)
    op = Operand("tensor", tensor, tuple(range(tensor.rank)))
    start = frame.linear(op, index)
    if vector > 1 and access_kind(tensor, op.dims, tensor.rank - 1, vector, frame.multiples) == "vector":
        vtype = vector_type(tensor, vector)
        packed = t.value(f"vector.from_elements {', '.join(values)} : {vtype}", "vs")
        t.add(f"vector.store {packed}, {frame.args[tensor.name]}[{start}] "
              f"{{alignment = {alignment(tensor, vector)}}} : {tensor.memref}, {vtype}")
        return
    for e, value in enumerate(values):
        frame.store(value, tensor, _plus(t, start, e))


def _plus(t: TextBuilder, value: str, n: int) -> str:
    return value if n == 0 else t.value(f"arith.addi {value}, {t.const(n)} : index", "lin")


def apply(frame: Frame, fn: ScalarFn, values: dict[Key, str], index: list[str], results: dict[str, str]) -> str:
    """``fn`` at one point: its operands from ``values`` (by access) or ``results`` (by reduction name)."""
    args = []
    for op in fn.operands:
        if op.tensor is not None and op.tensor.shape == () and op.tensor.name in results:
            args.append(results[op.tensor.name])
        else:
            args.append(values[(op.tensor.name, op.dims)])
    return fn.emit(frame.t, args, index)


# -- the row kernel -----------------------------------------------------------------------------------------------


@dataclass
class Chunk:
    """One chunk of a row: its first point's indices, its operands' values (``vector`` scalars per access),
    whether it lies in the row (None: always), and its accesses' linear-index shortcuts (:class:`Frame`)."""

    index: list[str]
    values: dict[Key, list[str]]
    valid: str | None
    known: dict[tuple[int, ...], str]


class RowKernel:
    """Writes one row kernel of ``spec`` by ``plan``."""

    def __init__(self, spec: RowSpec, plan: RowPlan) -> None:
        self.spec, self.plan = spec, plan
        tensors = [op.tensor for op in _operands(_functions(spec), spec).values()]
        self.frame = Frame(spec.name + plan.suffix, [o.tensor for o in spec.outputs] + tensors,
                           spec.rows + spec.cols)
        self.t = self.frame.t
        self.nrows = len(spec.rows)
        self.results: dict[str, str] = {}

    def kernel(self) -> Kernel:
        """The kernel and its launch."""
        plan, spec = self.plan, self.spec
        block = plan.threads * plan.rows_per_block
        shared = f"%red: memref<{WARP * len(spec.reductions)}xf32, #gpu.address_space<workgroup>>"
        with self.t.region(self.frame.header(block, shared if plan.threads > WARP and spec.reductions else "")):
            self.body()
            self.t.add("gpu.return")
        rows = numel_text(spec.rows)
        grid = rows if plan.rows_per_block == 1 else f"cdiv({rows}, {plan.rows_per_block})"
        launch = Launch((grid, "1", "1"), (block, 1, 1), 0, self.frame.params(), plan.when)
        return Kernel(self.frame.name, self.t.function_text(), launch)

    def body(self) -> None:
        """Thread and row ids, then the row (guarded where a block holds several rows)."""
        t = self.t
        tid = t.value("gpu.thread_id x", "tid")
        self.lane = t.value(f"arith.remui {tid}, {t.const(WARP)} : index", "lane")
        self.warp = t.value(f"arith.divui {tid}, {t.const(WARP)} : index", "warp")
        bid = t.value("gpu.block_id x", "bid")
        if self.plan.rows_per_block == 1:
            self.thread = tid
            self.aligned_or_not(bid)
            return
        self.thread = self.lane
        first = t.value(f"arith.muli {bid}, {t.const(self.plan.rows_per_block)} : index", "row")
        row = t.value(f"arith.addi {first}, {self.warp} : index", "row")
        inside = t.value(f"arith.cmpi ult, {row}, {self.frame.product(self.spec.rows)} : index", "in")
        with t.if_(inside):
            self.aligned_or_not(row)

    def aligned_or_not(self, row: str) -> None:
        """The row by the plan, or, with a fallback, by the plan where the innermost column dimension is a
        multiple of its vector width and by the fallback elsewhere (a branch uniform over the block)."""
        plan, t = self.plan, self.t
        if plan.fallback is None:
            self.row(row)
            return
        inner = self.spec.cols[-1]
        rest = t.value(f"arith.remui {self.frame.dim(inner)}, {t.const(plan.vector)} : index", "rest")
        with t.if_(t.value(f"arith.cmpi eq, {rest}, {t.const(0)} : index", "whole")):
            self.frame.multiples = {inner: plan.vector}
            self.row(row)
        with t.else_():
            self.frame.multiples, self.plan = {}, plan.fallback
            self.row(row)
        self.plan = plan

    def row(self, row: str) -> None:
        """One row: its row-level operands, the cached chunks, the reductions by stage, the outputs."""
        t, frame = self.t, self.frame
        self.results = {}
        self.columns = frame.product(self.spec.cols)
        self.chunks = t.value(f"arith.divui {self.columns}, {t.const(self.plan.vector)} : index", "nq")
        self.row_index = frame.decompose(row, self.spec.rows)
        self.row_id = row
        frame.known = {tuple(range(self.nrows)): row}
        self.row_start = t.value(f"arith.muli {row}, {self.columns} : index", "base")
        self.row_values = {k: frame.load(op.tensor, frame.linear(op, self.row_index))
                           for k, op in _row_operands(self.spec).items()}
        self.slots = [self.cached_chunk(k) for k in range(self.plan.cached)]
        self.cache = [self.load(slot, list(_reused_operands(self.spec))) for slot in self.slots]
        for stage in _stages(self.spec):
            self.reduce(stage)
        self.write_elements()
        self.write_per_row()

    def cached_chunk(self, k: int) -> tuple[str, str | None]:
        """The chunk number of a thread's ``k``-th cached chunk and whether it lies in the row (None: always)."""
        t, plan = self.t, self.plan
        q = _plus(t, self.thread, k * plan.threads)
        columns = _static_product(self.spec.cols)
        if columns is not None and (k + 1) * plan.threads <= columns // plan.vector:
            return q, None
        return q, t.value(f"arith.cmpi ult, {q}, {self.chunks} : index", "ok")

    def load(self, chunk: tuple[str, str | None], keys: list[Key]) -> Chunk:
        """The chunk's indices, and the values of its column operands ``keys``, masked by validity."""
        t, frame, plan = self.t, self.frame, self.plan
        q, valid = chunk
        column = t.value(f"arith.muli {q}, {t.const(plan.vector)} : index", "col")
        index = self.row_index + frame.decompose(column, self.spec.cols)
        full = t.value(f"arith.addi {self.row_start}, {column} : index", "lin")
        frame.known = {tuple(range(self.nrows)): self.row_id, tuple(range(self.nrows, len(frame.extents))): column,
                       tuple(range(len(frame.extents))): full}
        operands = _column_operands(self.spec)
        if valid is None or not keys:
            return Chunk(index, {k: load_chunk(frame, operands[k], index, plan.vector) for k in keys}, None,
                         frame.known)
        types = [operands[k].tensor.dtype for k in keys for _ in range(plan.vector)]
        with t.if_(valid, types) as loaded:
            flat = [v for k in keys for v in load_chunk(frame, operands[k], index, plan.vector)]
            t.yield_(flat, types)
        with t.else_():
            t.yield_([zero(t, ty) for ty in types], types)
        values = {k: loaded[i * plan.vector:(i + 1) * plan.vector] for i, k in enumerate(keys)}
        return Chunk(index, values, valid, frame.known)

    def sweep(self, keys: list[Key], accumulators: list[str], body) -> list[str]:
        """Run ``body(chunk, accumulators) -> accumulators`` over the thread's chunks: the cached ones (loading
        the ``keys`` not held), or a loop that loads ``keys``."""
        if self.plan.cached:
            for slot, chunk in zip(self.slots, self.cache, strict=True):
                extra = [k for k in keys if k not in chunk.values]
                if extra:
                    chunk = Chunk(chunk.index, {**chunk.values, **self.load(slot, extra).values}, chunk.valid,
                                  chunk.known)
                self.frame.known = chunk.known
                accumulators = body(chunk, accumulators)
            return accumulators
        t, step = self.t, self.t.const(self.plan.threads)
        if not accumulators:
            with t.for_(self.thread, self.chunks, step) as q:
                body(self.load((q, None), keys), [])
            return []
        with t.for_carried(self.thread, self.chunks, step, accumulators, "f32") as loop:
            t.yield_(body(self.load((loop.iv, None), keys), loop.args), ["f32"] * len(accumulators))
        return loop.results

    def point(self, chunk: Chunk, e: int) -> tuple[dict[Key, str], list[str]]:
        """The operand values and the indices of the chunk's ``e``-th point."""
        values = dict(self.row_values)
        values.update({k: v[e] for k, v in chunk.values.items()})
        return values, shifted(self.frame, chunk.index, len(self.frame.extents) - 1, e)

    def reduce(self, stage: list[int]) -> None:
        """One stage of reductions: each thread's share, then the warp's, then the block's."""
        t, reductions = self.t, [self.spec.reductions[i] for i in stage]
        keys = [k for k in _column_operands(self.spec) if k in _operands([r.value for r in reductions], self.spec)]

        def body(chunk: Chunk, accumulators: list[str]) -> list[str]:
            out = list(accumulators)
            for e in range(self.plan.vector):
                values, index = self.point(chunk, e)
                for i, red in enumerate(reductions):
                    value = cast(t, apply(self.frame, red.value, values, index, self.results), red.value.dtype, "f32")
                    out[i] = t.value(f"{COMBINE[red.combine]} {out[i]}, {value} : f32", "acc")
            if chunk.valid is not None:
                out = [t.value(f"arith.select {chunk.valid}, {o}, {a} : f32", "acc")
                       for o, a in zip(out, accumulators, strict=True)]
            return out

        partial = self.sweep(keys, [f32_constant(t, r.init) for r in reductions], body)
        totals = [butterfly(t, p, r.combine, WARP) for p, r in zip(partial, reductions, strict=True)]
        if self.plan.threads > WARP:
            totals = self.across_warps(stage, totals)
        self.results.update({r.name: v for r, v in zip(reductions, totals, strict=True)})

    def across_warps(self, stage: list[int], totals: list[str]) -> list[str]:
        """Combine the warps' values through shared memory: slot ``WARP * i`` holds reduction ``i``'s."""
        t, warps = self.t, self.plan.threads // WARP
        space = f"memref<{WARP * len(self.spec.reductions)}xf32, #gpu.address_space<workgroup>>"
        first = t.value(f"arith.cmpi eq, {self.lane}, {t.const(0)} : index", "first")
        with t.if_(first):
            for i, total in zip(stage, totals, strict=True):
                t.add(f"memref.store {total}, %red[{_plus(t, self.warp, WARP * i)}] : {space}")
        t.add("gpu.barrier")
        mine = t.value(f"arith.remui {self.lane}, {t.const(warps)} : index", "slot")
        out = []
        for i in stage:
            value = t.value(f"memref.load %red[{_plus(t, mine, WARP * i)}] : {space}", "part")
            out.append(butterfly(t, value, self.spec.reductions[i].combine, warps))
        return out

    def write_elements(self) -> None:
        """The per-element outputs, in one more sweep."""
        outputs = [o for o in self.spec.outputs if not o.per_row]
        if not outputs:
            return
        keys = [k for k in _column_operands(self.spec) if k in _operands([o.value for o in outputs], self.spec)]

        def body(chunk: Chunk, accumulators: list[str]) -> list[str]:
            if chunk.valid is None:
                self.store(chunk, outputs)
            else:
                with self.t.if_(chunk.valid):
                    self.store(chunk, outputs)
            return accumulators

        self.sweep(keys, [], body)

    def store(self, chunk: Chunk, outputs: list[RowOutput]) -> None:
        """The chunk's elements of each output."""
        for out in outputs:
            values = []
            for e in range(self.plan.vector):
                operands, index = self.point(chunk, e)
                value = apply(self.frame, out.value, operands, index, self.results)
                values.append(cast(self.t, value, out.value.dtype, out.tensor.dtype))
            store_chunk(self.frame, values, out.tensor, chunk.index)

    def write_per_row(self) -> None:
        """The per-row outputs, by the row's first thread."""
        t, outputs = self.t, [o for o in self.spec.outputs if o.per_row]
        if not outputs:
            return
        first = t.value(f"arith.cmpi eq, {self.thread}, {t.const(0)} : index", "first")
        self.frame.known = {tuple(range(self.nrows)): self.row_id}
        with t.if_(first):
            for out in outputs:
                value = apply(self.frame, out.value, self.row_values, self.row_index, self.results)
                value = cast(t, value, out.value.dtype, out.tensor.dtype)
                op = Operand("tensor", out.tensor, tuple(range(self.nrows)))
                self.frame.store(value, out.tensor, self.frame.linear(op, self.row_index))


def _check_rows(spec: RowSpec) -> None:
    """Refuse what the kernel cannot read: non-tensor operands, indices beyond the row's, a reduction reading
    itself or a later one, a per-row output reading a column-indexed operand, outputs of the wrong shape."""
    extents = spec.rows + spec.cols
    for i, red in enumerate(spec.reductions):
        later = {r.name for r in spec.reductions[i:]}
        if any(_is_result(spec, op) and op.tensor.name in later for op in red.value.operands):
            raise ValueError(f"reduction '{red.name}' reads itself or a later reduction")
    for fn in _functions(spec):
        for op in fn.operands:
            if not _is_result(spec, op):
                _check_operand(op)
                if any(d >= len(extents) for d in op.dims):
                    raise ValueError(f"operand '{op.tensor.name}' reads an index beyond the row's {len(extents)}")
    for out in spec.outputs:
        want = spec.rows if out.per_row else extents
        if out.tensor.shape != want:
            raise ValueError(f"output '{out.tensor.name}' has shape {out.tensor.shape}, expected {want}")
        if out.per_row and any(op.dims and max(op.dims) >= len(spec.rows)
                               for op in out.value.operands if not _is_result(spec, op)):
            raise ValueError(f"per-row output '{out.tensor.name}' reads a column-indexed operand")


def emit_rows(spec: RowSpec, chip: str) -> list[Kernel]:
    """The row kernels of ``spec`` (one, or a short-row and a long-row one, by :func:`row_plans`); the same
    text serves every chip from sm_80 on."""
    del chip  # warp shuffles, shared memory and 16-byte accesses are alike on every supported chip
    _check_rows(spec)
    return [RowKernel(spec, plan).kernel() for plan in row_plans(spec)]


# -- the elementwise kernel ---------------------------------------------------------------------------------------


def pointwise_vector(out: Tensor, value: ScalarFn) -> int:
    """Elements per thread of :func:`emit_pointwise`: 16 bytes of the narrowest tensor touched, halved until it
    divides the innermost dimension (1 where that is dynamic)."""
    inner = out.shape[-1] if out.shape else 1
    tensors = [out] + [op.tensor for op in _operands([value]).values()]
    return _vector_width(tensors, inner) if isinstance(inner, int) else 1


def emit_pointwise(name: str, out: Tensor, value: ScalarFn, chip: str) -> list[Kernel]:
    """An elementwise kernel: ``out`` at every point is ``value`` there; each thread writes one chunk of
    :func:`pointwise_vector` consecutive elements, POINTWISE_THREADS threads a block, the last block masked."""
    del chip  # the same text serves every chip from sm_80 on
    operands = _operands([value])
    if any(d >= out.rank for op in operands.values() for d in op.dims):
        raise ValueError(f"an operand of '{name}' reads an index beyond the output's {out.rank}")
    vector = pointwise_vector(out, value)
    frame = Frame(name, [out] + [op.tensor for op in operands.values()], out.shape)
    t = frame.t
    with t.region(frame.header(POINTWISE_THREADS)):
        bid, tid = t.value("gpu.block_id x", "bid"), t.value("gpu.thread_id x", "tid")
        first = t.value(f"arith.muli {bid}, {t.const(POINTWISE_THREADS)} : index", "g")
        q = t.value(f"arith.addi {first}, {tid} : index", "g")
        chunks = t.value(f"arith.divui {frame.product(out.shape)}, {t.const(vector)} : index", "nq")
        with t.if_(t.value(f"arith.cmpi ult, {q}, {chunks} : index", "in")):
            start = t.value(f"arith.muli {q}, {t.const(vector)} : index", "lin")
            frame.known[tuple(range(out.rank))] = start
            index = frame.decompose(start, out.shape)
            loaded = {k: load_chunk(frame, op, index, vector) for k, op in operands.items()}
            results = []
            for e in range(vector):
                point = shifted(frame, index, out.rank - 1, e) if out.rank else index
                result = apply(frame, value, {k: v[e] for k, v in loaded.items()}, point, {})
                results.append(cast(t, result, value.dtype, out.dtype))
            store_chunk(frame, results, out, index)
        t.add("gpu.return")
    grid = f"cdiv({numel_text(out.shape)} // {vector}, {POINTWISE_THREADS})"
    launch = Launch((grid, "1", "1"), (POINTWISE_THREADS, 1, 1), 0, frame.params())
    return [Kernel(name, t.function_text(), launch)]
