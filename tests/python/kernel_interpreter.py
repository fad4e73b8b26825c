"""A reference interpreter of Prism's GPU kernels, one thread block at a time, for numeric tests without a GPU.

All threads of a block run in lock step: every SSA value is a numpy array
with the thread as its first axis, ``scf.if`` runs both branches under
masks, ``scf.for`` bounds must be the same for every active thread. The
warp-collective ops follow the PTX ISA's fragment layouts, independently of
any emitter: ``ldmatrix`` (``.x1/.x2/.x4``, ``.trans``) gathers the rows
whose addresses lanes ``8i .. 8i + 7`` give, ``mma.sync`` m16n8k16
rebuilds A, B and C from the lanes' registers. ``cp.async`` copies at once
reading its source when issued and writing its destination only when a
``cp.async.wait_group`` lets its group complete (the src-size operand
zero-fills the rest), so a wait that is too short reads stale data. The
lock step hides races between warps otherwise: this checks the arithmetic
of indices, fragments, masks and cp.async groups, not the placement of
barriers. A load or store of an active thread outside its buffer raises
IndexError.

Blocks run one at a time in grid order (x fastest), so that the last of a
split-K tile's blocks to count its share is well defined. Only the ops
Prism's kernels use are known; any other raises
NotImplementedError with its name.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
from mlir import ir

FLOATS = {"f16": np.float16, "f32": np.float32, "f64": np.float64, "bf16": np.float32}
BYTES = {"f16": 2, "bf16": 2, "f32": 4, "f64": 8, "i32": 4}
INTS = {"index": np.int64, "i64": np.int64, "i32": np.int32, "i16": np.int16, "i8": np.int8, "i1": np.bool_}


def bf16_round(x: np.ndarray) -> np.ndarray:
    """f32 values rounded to the nearest bf16 (ties to even), kept as f32."""
    bits = np.asarray(x, np.float32).view(np.uint32).astype(np.uint64)
    bits = (bits + 0x7FFF + ((bits >> 16) & 1)) & 0xFFFF0000
    return bits.astype(np.uint32).view(np.float32)


def element_type(type_text: str) -> str:
    """The element type of a scalar, vector or memref type's text."""
    if "<" not in type_text:
        return type_text
    inner = type_text.split("<", 1)[1].rsplit(">", 1)[0]
    return inner.split(",")[0].split("x")[-1].strip()


def cast_to(values: np.ndarray, elt: str) -> np.ndarray:
    """``values`` as element type ``elt`` (bf16 kept as rounded f32)."""
    if elt == "bf16":
        return bf16_round(values)
    return np.asarray(values).astype(FLOATS.get(elt) or INTS[elt])


@dataclass
class Op:
    """One op, translated from the bindings once: its name, operand and result keys, attributes, blocks."""

    name: str
    operands: list[int]
    results: list[int]
    types: list[str]
    attrs: dict[str, object]
    blocks: list[tuple[list[int], list[Op]]] = field(default_factory=list)


def translate(block: ir.Block, keys: dict) -> tuple[list[int], list[Op]]:
    def key(value: ir.Value) -> int:
        return keys.setdefault(value, len(keys))

    ops = []
    for op in block.operations:
        op = op.operation
        attrs = {name: op.attributes[name] for name in op.attributes}
        blocks = [translate(b, keys) for region in op.regions for b in region.blocks]
        ops.append(Op(op.name, [key(v) for v in op.operands], [key(r) for r in op.results],
                      [str(r.type) for r in op.results], attrs, blocks))
    return [key(a) for a in block.arguments], ops


@dataclass
class Buffer:
    """A memref: a flat numpy array (bf16 as rounded f32) and its element type.

    A shared-memory buffer also records, per element, the barrier epoch and
    thread of its last write (PENDING while a cp.async may still write it)
    and of its reads in the current epoch (MANY for several threads;
    COLLECTIVE for ldmatrix, whose rows reach other lanes): a read of
    another thread's write, or a write over another thread's read, with no
    barrier between them raises RaceError.
    """

    data: np.ndarray
    elt: str
    shared: bool = False
    offset: int = 0  # bytes from the start of the (aligned) allocation

    def __post_init__(self) -> None:
        if self.shared:
            n = self.data.shape[0]
            self.w_epoch, self.w_thread = np.full(n, -1, np.int64), np.full(n, -1, np.int64)
            self.r_epoch, self.r_thread = np.full(n, -1, np.int64), np.full(n, -1, np.int64)


def check_alignment(buffer: Buffer, index: np.ndarray, mask: np.ndarray, alignment: int, what: str) -> None:
    """Raise MisalignedError where an active thread's address of element ``index`` is not ``alignment``-aligned."""
    address = buffer.offset + index * BYTES.get(buffer.elt, buffer.data.itemsize)
    bad = mask & (address % alignment != 0)
    if bad.any():
        raise MisalignedError(f"{what}: thread {int(np.argmax(bad))} at byte {int(address[bad][0])}, "
                              f"not {alignment}-byte aligned")


class MisalignedError(AssertionError):
    """An access wider than its element at an address not aligned to its width (a fault on the device)."""


class RaceError(AssertionError):
    """Threads of a block touch the same shared element with no barrier between a write and another access."""


PENDING, MANY, COLLECTIVE = 1 << 62, -2, -3


def track_reads(block: Block, buffer: Buffer, index: np.ndarray, threads: np.ndarray) -> None:
    """Check and record reads of shared ``index`` by ``threads`` (one each) in the current epoch."""
    if not buffer.shared or not index.size:
        return
    epoch = block.epoch
    written = buffer.w_epoch[index]
    stale = (written == PENDING) | ((written == epoch) & (buffer.w_thread[index] != threads))
    if stale.any():
        raise RaceError(f"thread {int(threads[stale][0])} reads element {int(index[stale][0])} that another thread "
                        f"wrote (or a cp.async may still write) since the last barrier")
    order = np.lexsort((threads, index))
    idx, th = index[order], threads[order]
    unique, first = np.unique(idx, return_index=True)
    last = np.r_[first[1:] - 1, idx.size - 1]
    readers = np.where(th[first] == th[last], th[first], MANY)
    before = (buffer.r_epoch[unique] == epoch) & (buffer.r_thread[unique] != readers)
    buffer.r_thread[unique] = np.where(before, MANY, readers)
    buffer.r_epoch[unique] = epoch


def track_writes(block: Block, buffer: Buffer, index: np.ndarray, threads: np.ndarray, pending: bool) -> None:
    """Check and record writes of shared ``index`` by ``threads``; ``pending``: by a cp.async not yet complete."""
    if not buffer.shared or not index.size:
        return
    read = (buffer.r_epoch[index] == block.epoch) & (buffer.r_thread[index] != threads)
    if read.any():
        raise RaceError(f"thread {int(threads[read][0])} writes element {int(index[read][0])} that another thread "
                        f"read since the last barrier")
    buffer.w_epoch[index] = PENDING if pending else block.epoch
    buffer.w_thread[index] = threads


class Block:
    """One thread block of a kernel, run in lock step."""

    def __init__(self, threads: int, block_id: tuple[int, int, int], shared_bytes: int) -> None:
        self.threads, self.block_id = threads, block_id
        self.shared = np.zeros(shared_bytes, np.uint8)
        self.views: list[tuple[int, int]] = []  # byte offset and size of each view of the shared memory
        self.env: dict[int, object] = {}
        self.epoch = 0  # barriers passed
        self.copies: list[tuple] = []  # issued, not yet committed: buffer, elements, threads, values
        self.groups: list[list[tuple]] = []  # committed, not yet complete

    def run(self, body: list[Op], mask: np.ndarray) -> list:
        for op in body:
            if op.name in ("scf.yield", "gpu.return"):
                return [self.env[k] for k in op.operands]
            handler = HANDLERS.get(op.name)
            if handler is None:
                raise NotImplementedError(f"the interpreter does not know {op.name}")
            results = handler(self, op, [self.env.get(k) for k in op.operands], mask)
            for k, v in zip(op.results, results if isinstance(results, list) else [results], strict=False):
                self.env[k] = v
        return []

    def uniform(self, value: np.ndarray, mask: np.ndarray) -> int:
        active = np.asarray(value)[mask]
        if active.size and not (active == active[0]).all():
            raise ValueError("a loop bound differs between threads")
        return int(active[0]) if active.size else 0


def _check(buffer: Buffer, index: np.ndarray, mask: np.ndarray, what: str) -> np.ndarray:
    bad = mask & ((index < 0) | (index >= buffer.data.shape[0]))
    if bad.any():
        raise IndexError(f"{what}: thread {int(np.argmax(bad))} at {int(index[bad][0])} of {buffer.data.shape[0]}")
    return np.where(mask, index, 0)


def _arith(fn: Callable) -> Callable:
    def handler(block: Block, op: Op, args: list, mask: np.ndarray) -> np.ndarray:
        return cast_to(fn(*args), element_type(op.types[0]))
    return handler


def _constant(block: Block, op: Op, args: list, mask: np.ndarray) -> np.ndarray:
    attr, typ = op.attrs["value"], op.types[0]
    elt = element_type(typ)
    if isinstance(attr, ir.DenseElementsAttr):
        shape = [int(s) for s in typ.split("<", 1)[1].rsplit("x", 1)[0].split("x")]
        splat = attr.get_splat_value()
        value = float(splat.value) if elt in FLOATS else int(splat.value)
        return cast_to(np.full([block.threads, *shape], value), elt)
    value = attr.value
    return cast_to(np.full(block.threads, value), elt)


PREDICATES = {0: np.equal, 1: np.not_equal, 2: np.less, 3: np.less_equal, 4: np.greater, 5: np.greater_equal,
              6: np.less, 7: np.less_equal, 8: np.greater, 9: np.greater_equal}


def _cmpi(block: Block, op: Op, args: list, mask: np.ndarray) -> np.ndarray:
    predicate = op.attrs["predicate"].value
    a, b = args
    if predicate >= 6:  # unsigned: indices are never negative in these kernels but for wrapped subtractions
        a, b = a.astype(np.uint64), b.astype(np.uint64)
    return PREDICATES[predicate](a, b)


def _cmpf(block: Block, op: Op, args: list, mask: np.ndarray) -> np.ndarray:
    names = {1: np.equal, 2: np.greater, 3: np.greater_equal, 4: np.less, 5: np.less_equal, 6: np.not_equal,
             8: np.equal, 9: np.greater, 10: np.greater_equal, 11: np.less, 12: np.less_equal, 13: np.not_equal}
    return names[op.attrs["predicate"].value](*args)


def _unsigned(fn: Callable) -> Callable:
    def apply(a: np.ndarray, b: np.ndarray) -> np.ndarray:
        return fn(a.astype(np.uint64), b.astype(np.uint64)).astype(np.int64)
    return apply


def _ceildiv(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return -(-a // np.where(b == 0, 1, b))


def _thread_id(block: Block, op: Op, args: list, mask: np.ndarray) -> np.ndarray:
    return np.arange(block.threads, dtype=np.int64)


def _block_id(block: Block, op: Op, args: list, mask: np.ndarray) -> np.ndarray:
    axis = "xyz".index(str(op.attrs["dimension"]).split()[-1].strip(">"))
    return np.full(block.threads, block.block_id[axis], np.int64)


def _view(block: Block, op: Op, args: list, mask: np.ndarray) -> Buffer:
    offset = block.uniform(args[1], mask)
    elt = element_type(op.types[0])
    count = int(op.types[0].split("<", 1)[1].split("x")[0])
    buffer = Buffer(np.zeros(count, FLOATS.get(elt) or INTS[elt]), elt, shared=True, offset=offset)
    size = count * BYTES[elt]
    for other_offset, other_size in block.views:
        if offset < other_offset + other_size and other_offset < offset + size:
            raise ValueError("overlapping views of the shared memory")
    block.views.append((offset, size))
    if offset + size > block.shared.size:
        raise IndexError("a view past the dynamic shared memory")
    return buffer


def _load(block: Block, op: Op, args: list, mask: np.ndarray) -> np.ndarray:
    buffer, index = args[0], args[1]
    index = _check(buffer, index, mask, "memref.load")
    track_reads(block, buffer, index[mask], np.flatnonzero(mask))
    return buffer.data[index]


def _store(block: Block, op: Op, args: list, mask: np.ndarray) -> None:
    value, buffer, index = args
    index = _check(buffer, index, mask, "memref.store")
    track_writes(block, buffer, index[mask], np.flatnonzero(mask), False)
    buffer.data[index[mask]] = value[mask]


def _vector_load(block: Block, op: Op, args: list, mask: np.ndarray) -> np.ndarray:
    buffer, index = args
    width = int(op.types[0].split("<")[1].split("x")[0])
    idx = np.stack([_check(buffer, index + i, mask, "vector.load") for i in range(width)], axis=1)
    if "alignment" in op.attrs:
        check_alignment(buffer, index, mask, op.attrs["alignment"].value, "vector.load")
    track_reads(block, buffer, idx[mask].reshape(-1), np.repeat(np.flatnonzero(mask), width))
    return buffer.data[idx]


def _vector_store(block: Block, op: Op, args: list, mask: np.ndarray) -> None:
    value, buffer, index = args
    if "alignment" in op.attrs:
        check_alignment(buffer, index, mask, op.attrs["alignment"].value, "vector.store")
    for i in range(value.shape[1]):
        idx = _check(buffer, index + i, mask, "vector.store")
        track_writes(block, buffer, idx[mask], np.flatnonzero(mask), False)
        buffer.data[idx[mask]] = value[mask, i]


def _extract(block: Block, op: Op, args: list, mask: np.ndarray) -> np.ndarray:
    value = args[0]
    for p in op.attrs["static_position"]:
        value = value[:, p]
    return value


def _from_elements(block: Block, op: Op, args: list, mask: np.ndarray) -> np.ndarray:
    return np.stack(args, axis=1)


def _bitcast(block: Block, op: Op, args: list, mask: np.ndarray) -> object:
    """Only the packing of two 16-bit values into one i32 for mma.sync: kept as the pair."""
    if element_type(op.types[0]) != "i32":
        raise NotImplementedError(f"vector.bitcast to {op.types[0]}")
    return ("pair", args[0])


def _extract_packed(block: Block, op: Op, args: list, mask: np.ndarray) -> np.ndarray:
    if isinstance(args[0], tuple):
        return args[0][1]
    return _extract(block, op, args, mask)


def _if(block: Block, op: Op, args: list, mask: np.ndarray) -> list:
    cond = args[0].astype(bool)
    then = block.run(op.blocks[0][1], mask & cond)
    other = block.run(op.blocks[1][1], mask & ~cond) if len(op.blocks) > 1 else []
    return [np.where(cond.reshape(-1, *([1] * (t.ndim - 1))), t, e) for t, e in zip(then, other, strict=True)]


def _for(block: Block, op: Op, args: list, mask: np.ndarray) -> list:
    carried = list(args[3:])
    if not mask.any():  # a loop under a branch no thread takes
        return carried
    lo, hi, step = (block.uniform(a, mask) for a in args[:3])
    iv, *names = op.blocks[0][0]
    for i in range(lo, hi, step):
        block.env[iv] = np.full(block.threads, i, np.int64)
        for name, value in zip(names, carried, strict=True):
            block.env[name] = value
        carried = block.run(op.blocks[0][1], mask)
    return carried


def _async_copy(block: Block, op: Op, args: list, mask: np.ndarray) -> None:
    dst, dst_index, src, src_index = args[:4]
    count = op.attrs["dstElements"].value
    source_count = args[4] if len(args) > 4 else np.full(block.threads, count)
    size = count * BYTES[dst.elt]
    check_alignment(src, src_index, mask, size, "cp.async source")
    check_alignment(dst, dst_index, mask, size, "cp.async destination")
    for e in range(count):
        reads = mask & (e < source_count)
        index = _check(src, src_index + e, reads, "cp.async source")
        target = _check(dst, dst_index + e, mask, "cp.async destination")
        track_writes(block, dst, target[mask], np.flatnonzero(mask), True)
        block.copies.append((dst, target[mask], np.flatnonzero(mask), np.where(reads, src.data[index], 0)[mask]))


def _commit(block: Block, op: Op, args: list, mask: np.ndarray) -> list:
    block.groups.append(block.copies)
    block.copies = []
    return [None] * len(op.results)


def _wait(block: Block, op: Op, args: list, mask: np.ndarray) -> None:
    """Complete every committed group but the newest ``n``: their writes land now."""
    keep = op.attrs["n"].value
    done, block.groups = block.groups[: len(block.groups) - keep], block.groups[len(block.groups) - keep:]
    for group in done:
        for dst, target, threads, values in group:
            dst.data[target] = values
            dst.w_epoch[target], dst.w_thread[target] = block.epoch, threads


def _ldmatrix(block: Block, op: Op, args: list, mask: np.ndarray) -> np.ndarray:
    """Each warp's ``numTiles`` 8x8 matrices, from the rows whose addresses lanes ``8i .. 8i + 7`` give, in the
    fragment layout: lane ``l`` holds elements ``2 (l % 4)`` and the next of row ``l / 4``. All rows are checked
    and their reads recorded at once; where any row is out of bounds or misaligned, row by row (the first bad row
    raises, as the hardware's rows are read in order)."""
    buffer, index = args
    tiles, transpose = op.attrs["numTiles"].value, bool(op.attrs["transpose"].value)
    if block.threads % 32:
        return _ldmatrix_by_rows(block, buffer, index, tiles, transpose)
    warps = block.threads // 32
    starts = np.asarray(index, np.int64).reshape(warps, 32)[:, : 8 * tiles].reshape(warps, tiles, 8)
    rows = starts[..., None] + np.arange(8)  # warp, tile, row, element
    address = buffer.offset + starts * BYTES.get(buffer.elt, buffer.data.itemsize)
    if ((rows < 0) | (rows >= buffer.data.shape[0])).any() or (address % 16 != 0).any():
        return _ldmatrix_by_rows(block, buffer, index, tiles, transpose)
    track_reads(block, buffer, rows.reshape(-1), np.full(rows.size, COLLECTIVE))
    matrices = buffer.data[rows]
    if transpose:
        matrices = matrices.swapaxes(-1, -2)
    return matrices.reshape(warps, tiles, 32, 2).transpose(0, 2, 1, 3).reshape(block.threads, tiles, 2)


def _ldmatrix_by_rows(block: Block, buffer: Buffer, index: np.ndarray, tiles: int, transpose: bool) -> np.ndarray:
    """``_ldmatrix`` one row at a time: each row's bounds, alignment and reads checked before the next."""
    out = np.zeros((block.threads, tiles, 2), buffer.data.dtype)
    for w in range(0, block.threads, 32):
        for i in range(tiles):
            rows = []
            for r in range(8):
                row = _check(buffer, np.arange(8) + int(index[w + 8 * i + r]), np.ones(8, bool), "ldmatrix")
                check_alignment(buffer, row[:1], np.ones(1, bool), 16, "ldmatrix row")
                track_reads(block, buffer, row, np.full(8, COLLECTIVE))
                rows.append(buffer.data[row])
            matrix = np.stack(rows).T if transpose else np.stack(rows)
            for lane in range(32):
                out[w + lane, i] = matrix[lane // 4, 2 * (lane % 4): 2 * (lane % 4) + 2]
    return out


def _mma(block: Block, op: Op, args: list, mask: np.ndarray) -> list:
    """m16n8k16 per warp: lane ``l`` (group ``g = l / 4``, ``t = l % 4``) holds A's elements ``(g, 2t + j)``,
    ``(g + 8, ..)``, ``(g, 2t + 8 + j)``, ``(g + 8, 2t + 8 + j)`` in its four registers, B's ``(2t + j, g)`` and
    ``(2t + 8 + j, g)`` in two, and C's and D's ``(g, 2t + j)`` and ``(g + 8, 2t + j)`` in four: so each register
    of a warp's 32 lanes, read in lane order, is an 8x8 block of its matrix row by row (B's transposed)."""
    a, b, c = args[:4], args[4:6], args[6:10]
    d = [np.zeros(block.threads, np.float32) for _ in range(4)]
    for w in range(0, block.threads, 32):
        lanes = slice(w, w + 32)
        am, bm, cm = np.zeros((16, 16)), np.zeros((16, 8)), np.zeros((16, 8))
        am[:8, :8], am[8:, :8] = (np.asarray(r)[lanes].reshape(8, 8) for r in a[:2])
        am[:8, 8:], am[8:, 8:] = (np.asarray(r)[lanes].reshape(8, 8) for r in a[2:])
        bm[:8], bm[8:] = (np.asarray(r)[lanes].reshape(8, 8).T for r in b)
        cm[:8] = np.stack([np.asarray(c[0])[lanes], np.asarray(c[1])[lanes]], axis=1).reshape(8, 8)
        cm[8:] = np.stack([np.asarray(c[2])[lanes], np.asarray(c[3])[lanes]], axis=1).reshape(8, 8)
        dm = (am @ bm + cm).astype(np.float32)
        top, bottom = dm[:8].reshape(32, 2), dm[8:].reshape(32, 2)
        d[0][lanes], d[1][lanes], d[2][lanes], d[3][lanes] = top[:, 0], top[:, 1], bottom[:, 0], bottom[:, 1]
    return [tuple(d)]


def _extractvalue(block: Block, op: Op, args: list, mask: np.ndarray) -> np.ndarray:
    return args[0][list(op.attrs["position"])[0]]


def _select(block: Block, op: Op, args: list, mask: np.ndarray) -> np.ndarray:
    cond, a, b = args
    return np.where(cond.reshape(-1, *([1] * (np.ndim(a) - 1))), a, b)


def _barrier(block: Block, op: Op, args: list, mask: np.ndarray) -> None:
    block.epoch += 1


def _atomic_rmw(block: Block, op: Op, args: list, mask: np.ndarray) -> np.ndarray:
    """``memref.atomic_rmw`` (addi, addf) on a global buffer: the active threads in order of their ids, each
    reading the value the one before left; the value each read."""
    kind = ir.IntegerAttr(op.attrs["kind"]).value  # arith::AtomicRMWKind: addf = 0, addi = 1
    if kind not in (0, 1):
        raise NotImplementedError(f"memref.atomic_rmw of kind {kind}")
    value, buffer, index = args
    if buffer.shared:
        raise NotImplementedError("memref.atomic_rmw on shared memory")
    index = _check(buffer, index, mask, "memref.atomic_rmw")
    old = np.zeros(block.threads, buffer.data.dtype)
    for thread in np.flatnonzero(mask):
        old[thread] = buffer.data[index[thread]]
        buffer.data[index[thread]] = old[thread] + value[thread]
    return old


def _nothing(block: Block, op: Op, args: list, mask: np.ndarray) -> list:
    return [None] * len(op.results)


def _shared(block: Block, op: Op, args: list, mask: np.ndarray) -> None:
    return None


HANDLERS: dict[str, Callable] = {
    "arith.constant": _constant, "arith.addi": _arith(np.add), "arith.subi": _arith(np.subtract),
    "arith.muli": _arith(np.multiply), "arith.divui": _arith(_unsigned(np.floor_divide)),
    "arith.remui": _arith(_unsigned(np.remainder)), "arith.ceildivui": _arith(_ceildiv),
    "arith.minui": _arith(_unsigned(np.minimum)), "arith.maxui": _arith(_unsigned(np.maximum)),
    "arith.xori": _arith(np.bitwise_xor), "arith.andi": _arith(np.bitwise_and), "arith.ori": _arith(np.bitwise_or),
    "arith.shrui": _arith(np.right_shift), "arith.shli": _arith(np.left_shift), "arith.cmpi": _cmpi,
    "arith.cmpf": _cmpf, "arith.select": _select,
    "arith.addf": _arith(np.add), "arith.subf": _arith(np.subtract), "arith.mulf": _arith(np.multiply),
    "arith.divf": _arith(np.divide), "arith.negf": _arith(np.negative), "arith.maximumf": _arith(np.maximum),
    "arith.minimumf": _arith(np.minimum), "arith.extf": _arith(lambda x: x), "arith.truncf": _arith(lambda x: x),
    "arith.index_cast": _arith(lambda x: x),
    "math.exp": _arith(lambda x: np.exp(x.astype(np.float64))), "math.fma": _arith(lambda a, b, c: a * b + c),
    "math.tanh": _arith(lambda x: np.tanh(x.astype(np.float64))),
    "gpu.thread_id": _thread_id, "gpu.block_id": _block_id, "gpu.barrier": _barrier,
    "gpu.dynamic_shared_memory": _shared, "memref.view": _view, "memref.load": _load, "memref.store": _store,
    "vector.load": _vector_load, "vector.store": _vector_store, "vector.extract": _extract_packed,
    "vector.from_elements": _from_elements, "vector.bitcast": _bitcast, "scf.if": _if, "scf.for": _for,
    "nvgpu.device_async_copy": _async_copy, "nvgpu.device_async_create_group": _commit,
    "nvvm.cp.async.commit.group": _commit, "nvvm.cp.async.wait.group": _wait,
    "nvgpu.ldmatrix": _ldmatrix, "nvvm.mma.sync": _mma, "llvm.extractvalue": _extractvalue,
    # Blocks run one after another, so a block sees every store of those before it: a fence has nothing to do.
    "memref.atomic_rmw": _atomic_rmw, "llvm.fence": _nothing,
}


def run_kernel(text: str, grid: tuple[int, int, int], threads: int, shared_bytes: int,
               args: list[np.ndarray | int], dtypes: list[str | None], seed: int | None = None) -> None:
    """Run the ``gpu.func`` in ``text`` over ``grid`` with ``args`` in parameter order (numpy arrays for
    tensors, written in place; ints for size symbols). ``dtypes`` gives each tensor's element type (None for
    sizes); bf16 tensors are f32 arrays holding bf16 values. Blocks run in grid order, or with ``seed`` in
    an order shuffled by it."""
    with ir.Context() as ctx:
        ctx.allow_unregistered_dialects = False
        module = ir.Module.parse("module attributes {gpu.container_module} {\n gpu.module @m {\n" + text + "\n}\n}")
        func = module.body.operations[0].regions[0].blocks[0].operations[0]
        keys: dict = {}
        params, body = translate(func.regions[0].blocks[0], keys)
    buffers = [Buffer(a, d) if d is not None else np.full(threads, a, np.int64)
               for a, d in zip(args, dtypes, strict=True)]
    order = [(x, y, z) for z in range(grid[2]) for y in range(grid[1]) for x in range(grid[0])]
    if seed is not None:
        order = [order[i] for i in np.random.default_rng(seed).permutation(len(order))]
    for block_id in order:
        block = Block(threads, block_id, shared_bytes)
        block.env.update(zip(params, buffers, strict=True))
        block.run(body, np.ones(threads, bool))
