"""Attention on NVIDIA GPUs: flash attention for many query rows, split-KV flash decoding for one.

**Prefill** (``sq`` > 1 or dynamic) is one kernel. A block takes ``BQ``
query rows of one batch index, 16 per warp, and loops over the keys in
tiles of ``BK``. Each K and V tile is copied to shared memory with
``cp.async`` (two stages, so the next tile loads while this one is used;
rows past the end are zero-filled). ``S = Q K^T`` runs on the tensor cores
(``ldmatrix`` + ``mma.sync`` m16n8k16, f32 accumulators) from Q fragments
that stay in registers; an online softmax in registers keeps each row's
running max and sum, rescaling the output accumulator when the max grows;
``P`` is rounded to the inputs' type in registers, where its accumulator
layout is already the A operand of the second ``mma.sync`` with V (read by
``ldmatrix.trans``). O is divided by the row sums once, at the end. The
key tiles that no mask reaches (below the causal diagonal of the block's
first row, before the last partial tile) run in a loop without the mask.

**Decode** (``sq == 1``) is two kernels. The split kernel gives each warp one
of ``splits`` contiguous shares of the keys of one batch index; it runs the
same tile loop on a 16-row tile whose one real row is the query, and writes
the share's running max (base 2, scaled), its sum and its unnormalized
output to f32 temporaries. The combine kernel merges the shares of each
batch index into O.

Scores are kept as ``scale * log2(e) * q.k`` so that the softmax uses
``exp2``. A row that no key reaches (a causal row before the first key)
comes out zero. Shared-memory rows are padded by 16 bytes, which puts the
eight row addresses of an ``ldmatrix`` in distinct banks for any head size.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass

from prism.codegen.gpu.spec import AttentionSpec, AttentionTile, Dim, Kernel, Launch, Param, Tensor, numel_text
from prism.codegen.text import TextBuilder

LOG2E = math.log2(math.e)
WARP = 32
MMA_ROWS = 16  # query rows of one warp's tile: the M of mma.sync m16n8k16
PAD = 8  # elements added to each shared-memory row (16 bytes)
INPUT_TYPES = ("f16", "bf16")
OUTPUT_TYPES = ("f16", "bf16", "f32")
# Opt-in dynamic shared memory per block and SM count, by chip (A100 for sm_80, H100/H200 for sm_90).
CHIPS = {"sm_80": (163 * 1024, 108), "sm_90": (227 * 1024, 132), "sm_90a": (227 * 1024, 132)}
# Registers a thread has beyond its fragments and copy addresses (loop state, softmax temporaries), set so that
# no tile the estimate admits spills under ptxas for sm_80 or sm_90a (head sizes 64-256, every tile knob); and
# the most a thread may use: the flash kernels declare it (.maxnreg), since with their block size alone ptxas
# aims at three blocks per SM and spills.
REGISTER_OVERHEAD = 44
REGISTER_LIMIT = 255
# Decode blocks wanted per SM when the emitter chooses the split count: several, to hide the loads' latency.
DECODE_BLOCKS_PER_SM = 2
DECODE_SKV_GUESS = 4096  # the key count assumed when choosing splits for a dynamic one
WORKGROUP = "#gpu.address_space<workgroup>"



@dataclass(frozen=True)
class AttentionPlan:
    """What the emitter decides for a spec: which kernels, the key tile, the split count, shared memory per
    block and the registers per thread it expects."""

    decode: bool
    key_tile: int
    warps: int  # per block
    splits: int  # decode only; 0 for prefill
    shared_bytes: int
    registers: int


# -- the plan: pure functions of the spec --------------------------------------------------------------------------


def is_decode(spec: AttentionSpec) -> bool:
    """One static query row makes a decode; anything else a prefill."""
    return spec.sq == 1


def fragment_registers(d: int, dv: int, key_tile: int, copiers: int) -> int:
    """Registers per thread of a warp's 16-row tile: Q fragments (d/4), the O accumulator (dv/2), the
    scores of a key tile (key_tile/2) and P packed in pairs (key_tile/4); half a register per 16-byte
    chunk the thread copies of a K and a V tile (their addresses); plus the fixed overhead."""
    chunks = key_tile * (d + dv) // 8 // copiers
    return d // 4 + dv // 2 + key_tile // 2 + key_tile // 4 + chunks // 2 + REGISTER_OVERHEAD


def unit_elements(spec: AttentionSpec, rows: int, key_tile: int) -> int:
    """Shared-memory elements of one tile unit: the Q tile, and two stages of the K and V tiles."""
    q = rows * (spec.d + PAD)
    k = key_tile * (spec.d + PAD) if spec.k_layout == "nd" else spec.d * (key_tile + PAD)
    v = key_tile * (spec.dv + PAD)
    return q + 2 * k + 2 * v


def batch_count(spec: AttentionSpec) -> int:
    """The product of the static batch dimensions (a dynamic one counts as 1)."""
    return math.prod(b for b in spec.batch if isinstance(b, int))


def choose_splits(spec: AttentionSpec, chip: str, tile: AttentionTile) -> int:
    """Key shares per batch index of the split kernel: :func:`share_count` of its key tiles, a share per warp."""
    return share_count(spec, chip, tile.DECODE_BK, tile.DECODE_WARPS)


def share_count(spec: AttentionSpec, chip: str, key_tile: int, shares_per_block: int) -> int:
    """The spec's split count, else enough shares of ``key_tile``-key tiles for DECODE_BLOCKS_PER_SM blocks of
    ``shares_per_block`` shares on every SM, each share at least one key tile, the shares balanced (as many tiles
    each, the last one shorter)."""
    if spec.splits:
        return spec.splits
    sms = CHIPS[chip][1]
    wanted = max(1, -(-DECODE_BLOCKS_PER_SM * sms * shares_per_block // batch_count(spec)))
    skv = spec.skv if isinstance(spec.skv, int) else DECODE_SKV_GUESS
    tiles = max(1, -(-skv // key_tile))
    per_share = -(-tiles // min(wanted, tiles))
    return -(-tiles // per_share)



def plan_attention(spec: AttentionSpec, chip: str, tile: AttentionTile | None = None) -> AttentionPlan:
    """The plan for ``spec`` on ``chip`` (whether or not it fits: :func:`attention_problem` checks) with
    ``tile``, else the spec's, else the default :class:`AttentionTile`."""
    tile = kernel_tile(spec, tile)
    if is_decode(spec):
        units, rows, key_tile = tile.DECODE_WARPS, MMA_ROWS, tile.DECODE_BK
        splits = choose_splits(spec, chip, tile) if chip in CHIPS else max(spec.splits, 1)
        return AttentionPlan(True, key_tile, units, splits, 2 * units * unit_elements(spec, rows, key_tile),
                             fragment_registers(spec.d, spec.dv, key_tile, WARP))
    return AttentionPlan(False, tile.BK, tile.BQ // MMA_ROWS, 0, 2 * unit_elements(spec, tile.BQ, tile.BK),
                         fragment_registers(spec.d, spec.dv, tile.BK, 2 * tile.BQ))


def _shape_problem(spec: AttentionSpec) -> str | None:
    batch = tuple(spec.batch)
    k_shape = (*batch, spec.skv, spec.d) if spec.k_layout == "nd" else (*batch, spec.d, spec.skv)
    for tensor, shape in ((spec.q, (*batch, spec.sq, spec.d)), (spec.k, k_shape),
                          (spec.v, (*batch, spec.skv, spec.dv)), (spec.o, (*batch, spec.sq, spec.dv))):
        if tuple(tensor.shape) != shape:
            return f"{tensor.name} has shape {tensor.shape}, the spec implies {shape}"
    return None


def kernel_tile(spec: AttentionSpec, tile: AttentionTile | None = None) -> AttentionTile:
    """The tile these kernels run: ``tile``, else the spec's (the search's choice), else the default."""
    return tile or spec.tile or AttentionTile()


def attention_problem(spec: AttentionSpec, chip: str, tile: AttentionTile | None = None) -> str | None:
    """Why ``spec`` cannot be emitted for ``chip`` with ``tile`` (as :func:`plan_attention` takes it), or None
    if it can."""
    problem = attention_spec_problem(spec, chip)
    if problem:
        return problem
    plan = plan_attention(spec, chip, tile)
    if plan.registers > REGISTER_LIMIT:
        return (f"d = {spec.d}, dv = {spec.dv} with a key tile of {plan.key_tile} need about {plan.registers} "
                f"registers per thread (over {REGISTER_LIMIT}): the Q fragments and O accumulator stay in "
                f"registers; use a smaller key tile or head size")
    if plan.shared_bytes > CHIPS[chip][0]:
        return (f"the tiles need {plan.shared_bytes} bytes of shared memory per block, over {chip}'s "
                f"{CHIPS[chip][0]}; use smaller query or key tiles")
    return None


def attention_spec_problem(spec: AttentionSpec, chip: str) -> str | None:
    """Why no tile lets ``spec`` be emitted for ``chip`` (its chip, types, head sizes, sizes and shapes), or
    None: the checks of :func:`attention_problem` that do not read the tile."""
    if chip not in CHIPS:
        return f"attention kernels are emitted for {', '.join(CHIPS)}, not {chip}"
    types = {spec.q.dtype, spec.k.dtype, spec.v.dtype}
    if len(types) != 1:
        return f"Q, K and V must share one element type, they have {sorted(types)}"
    dtype = types.pop()
    if dtype not in INPUT_TYPES:
        return (f"{dtype} attention is not emitted: both products run on mma.sync tensor cores, which take "
                f"{' or '.join(INPUT_TYPES)}; cast Q, K and V to one of them")
    if spec.o.dtype not in OUTPUT_TYPES:
        return f"O's element type {spec.o.dtype} is not one of {', '.join(OUTPUT_TYPES)}"
    for name, size in (("d", spec.d), ("dv", spec.dv)):
        if not isinstance(size, int) or size <= 0 or size % 16:
            return f"the head size {name} = {size} must be a static multiple of 16 (the mma.sync K and N steps)"
    if isinstance(spec.sq, int) and spec.sq < 1 or isinstance(spec.skv, int) and spec.skv < 1:
        return f"sq = {spec.sq} and skv = {spec.skv} must be at least 1"
    if is_decode(spec) and spec.splits < 0:
        return f"splits = {spec.splits} must be 0 (chosen) or positive"
    return _shape_problem(spec)


def attention_temporaries(spec: AttentionSpec, chip: str, tile: AttentionTile | None = None) -> list[Tensor]:
    """The f32 buffers the decode kernels pass between them (none for prefill): per batch index and share,
    the unnormalized output ``[batch..., splits, dv]``, the running max (base 2, scaled) and the sum
    ``[batch..., splits]``. The caller allocates them; no initialization is needed."""
    return decode_temporaries(spec, plan_attention(spec, chip, tile)) if is_decode(spec) else []


def emit_attention(spec: AttentionSpec, chip: str, tile: AttentionTile | None = None) -> list[Kernel]:
    """The kernels of ``spec`` for ``chip``: one for prefill; split and combine for decode."""
    problem = attention_problem(spec, chip, tile)
    if problem:
        raise ValueError(f"attention {spec.name}: {problem}")
    tile = kernel_tile(spec, tile)
    plan = plan_attention(spec, chip, tile)
    if plan.decode:
        return [_decode_kernel(spec, plan, tile), combine_kernel(spec, plan)]
    return [_prefill_kernel(spec, plan, tile)]


# -- kernel text ---------------------------------------------------------------------------------------------------


def _size_symbols(spec: AttentionSpec) -> list[str]:
    """The size symbols among the batch dimensions, sq and skv, in order of first appearance."""
    seen: list[str] = []
    for dim in (*spec.batch, spec.sq, spec.skv):
        if isinstance(dim, str) and dim not in seen:
            seen.append(dim)
    return seen


def _ssa(prefix: str, name: str) -> str:
    return f"%{prefix}_{re.sub(r'[^A-Za-z0-9_]', '_', name)}"


class _Writer:
    """One kernel's text: its parameters, index arithmetic, shared-memory tiles, mma.sync fragments and the
    online softmax of a 16-row warp tile, written through a TextBuilder."""

    def __init__(self, spec: AttentionSpec, tensors: list[tuple[str, Tensor]], threads: int,
                 shared_elements: int = 0) -> None:
        self.spec, self.t, self.threads = spec, TextBuilder(), threads
        self.et = spec.q.dtype
        self.tensors = {role: (_ssa("t", role), tensor) for role, tensor in tensors}
        self.symbols = {name: _ssa("s", name) for name in _size_symbols(spec)}
        self.shared_type = f"memref<{max(shared_elements, 1)}x{self.et}, {WORKGROUP}>"
        self.shared_elements = shared_elements

    def params(self) -> tuple[Param, ...]:
        return (*(Param("tensor", tensor.name) for _, tensor in self.tensors.values()),
                *(Param("size", name) for name in self.symbols))

    def header(self, name: str) -> str:
        args = [f"{ssa}: {tensor.memref}" for ssa, tensor in self.tensors.values()]
        args += [f"{ssa}: index" for ssa in self.symbols.values()]
        return (f"gpu.func @{name}({', '.join(args)}) kernel attributes "
                f"{{known_block_size = array<i32: {self.threads}, 1, 1>}}")

    def prologue(self) -> None:
        """Constants every kernel uses, the thread's coordinates and the shared-memory view."""
        t = self.t
        self.zero = t.value("arith.constant 0.0 : f32", "zero")
        self.ninf = t.value("arith.constant 0xFF800000 : f32", "ninf")
        self.one = t.value("arith.constant 1.0 : f32", "one")
        self.i32 = {n: t.value(f"arith.constant {n} : i32", "k") for n in (1, 2, WARP)}
        self.tid = t.value("gpu.thread_id x", "tid")
        self.bid = t.value("gpu.block_id x", "bid")
        self.lane = self.op("remui", self.tid, t.const(WARP))
        self.warp = self.op("divui", self.tid, t.const(WARP))
        self.group = self.op("divui", self.lane, t.const(4))  # the accumulator row of the lane (and + 8)
        self.quad = self.op("remui", self.lane, t.const(4))  # its column pair
        if self.shared_elements:
            raw = t.value(f"gpu.dynamic_shared_memory : memref<?xi8, {WORKGROUP}>", "smem")
            self.shared = t.value(f"memref.view {raw}[{t.const(0)}][] : memref<?xi8, {WORKGROUP}> to "
                                  f"{self.shared_type}", "sh")

    # -- scalars ---------------------------------------------------------------------------------------------------

    def dim(self, dim: Dim) -> str:
        return self.t.const(dim) if isinstance(dim, int) else self.symbols[dim]

    def op(self, name: str, a: str, b: str | int, typ: str = "index") -> str:
        if isinstance(b, int):
            b = self.t.const(b) if typ == "index" else self.t.value(f"arith.constant {b} : {typ}", "k")
        return self.t.value(f"arith.{name} {a}, {b} : {typ}", "x")

    def cmp(self, pred: str, a: str, b: str | int, typ: str = "index") -> str:
        if isinstance(b, int):
            b = self.t.const(b) if typ == "index" else self.t.value(f"arith.constant {b} : {typ}", "k")
        return self.t.value(f"arith.cmpi {pred}, {a}, {b} : {typ}", "p")

    def select(self, cond: str, a: str, b: str, typ: str = "index") -> str:
        return self.t.value(f"arith.select {cond}, {a}, {b} : {typ}", "x")

    def f(self, name: str, a: str, b: str) -> str:
        return self.t.value(f"arith.{name} {a}, {b} : f32", "f")

    def exp2(self, x: str) -> str:
        return self.t.value(f"math.exp2 {x} : f32", "e")

    def to_i32(self, x: str) -> str:
        return self.t.value(f"arith.index_cast {x} : index to i32", "w")

    def batch_total(self) -> str:
        total = self.t.const(1)
        for dim in self.spec.batch:
            total = self.op("muli", total, self.dim(dim))
        return total

    def quad_reduce(self, value: str, combine: str) -> str:
        """``combine`` of ``value`` over the four lanes that hold one accumulator row."""
        for offset in (1, 2):
            name = self.t.fresh("sh")
            self.t.add(f"{name}:2 = gpu.shuffle xor {value}, {self.i32[offset]}, {self.i32[WARP]} : f32")
            value = self.f(combine, value, f"{name}#0")
        return value

    # -- copies to shared memory -----------------------------------------------------------------------------------

    def copy_tile(self, role: str, base: str, stride: str, rows: int, cols: int, dest: str, dest_stride: int,
                  valid_rows: str | None, valid_cols: str | None, width: int, tid: str, workers: int) -> list[str]:
        """Copy a ``rows x cols`` tile from the tensor ``role`` at ``base`` (row stride ``stride``) to shared
        memory at ``dest`` (row stride ``dest_stride``) with cp.async of ``width`` elements, zero-filling the
        rows from ``valid_rows`` and the columns from ``valid_cols`` on; ``workers`` threads share the chunks.
        Returns the copies' tokens.

        A thread keeps one column and steps by whole rows, so that each of its chunks is addressed as its
        first plus a constant; threads past the last whole row of a round, and rows past the tile in the
        last round, repeat a chunk (the same bytes to the same place)."""
        per_row = cols // width
        if per_row > workers:
            return [self._copy_chunk(role, *self._chunk_at(self.op("addi", tid, i * workers), base, stride, dest,
                                                           dest_stride, rows, per_row, width),
                                     valid_rows, valid_cols, width)
                    for i in range(-(-rows * per_row // workers))]
        used = workers // per_row * per_row
        lane = tid if used == workers else self.op("remui", tid, used)
        per_round = used // per_row
        row0 = self.op("divui", lane, per_row)
        col = self.op("muli", self.op("remui", lane, per_row), width)
        first_at = self.op("addi", self.op("addi", base, self.op("muli", row0, stride)), col)
        first_to = self.op("addi", self.op("addi", dest, self.op("muli", row0, dest_stride)), col)
        tokens = []
        for i in range(-(-rows // per_round)):
            step = i * per_round
            if step + per_round <= rows:
                row = self.op("addi", row0, step)
                at, to = self.op("addi", first_at, self.op("muli", stride, step)), self.op("addi", first_to,
                                                                                          step * dest_stride)
            else:
                row = self.op("minui", self.op("addi", row0, step), rows - 1)
                at = self.op("addi", self.op("addi", base, self.op("muli", row, stride)), col)
                to = self.op("addi", self.op("addi", dest, self.op("muli", row, dest_stride)), col)
            tokens.append(self._copy_chunk(role, row, col, at, to, valid_rows, valid_cols, width))
        return tokens

    def _chunk_at(self, chunk: str, base: str, stride: str, dest: str, dest_stride: int, rows: int,
                  per_row: int, width: int) -> tuple[str, str, str, str]:
        """Row, column, source and destination of chunk number ``chunk`` (the last one past the tile)."""
        chunk = self.op("minui", chunk, rows * per_row - 1)
        row = self.op("divui", chunk, per_row)
        col = self.op("muli", self.op("remui", chunk, per_row), width)
        at = self.op("addi", self.op("addi", base, self.op("muli", row, stride)), col)
        return row, col, at, self.op("addi", self.op("addi", dest, self.op("muli", row, dest_stride)), col)

    def _copy_chunk(self, role: str, row: str, col: str, at: str, to: str, valid_rows: str | None,
                    valid_cols: str | None, width: int) -> str:
        """One cp.async of ``width`` elements, zero-filled past the valid rows and columns."""
        t, (src, tensor) = self.t, self.tensors[role]
        count = self._valid_count(row, col, valid_rows, valid_cols, width)
        extra = "" if count is None else f", {count}"
        if count is not None:  # an empty chunk reads nothing, from the tensor's first element all the same
            at = self.select(self.cmp("sgt", count, 0), at, t.const(0))
        bypass = " {bypassL1}" if width * 2 == 16 else ""
        return t.value(f"nvgpu.device_async_copy {src}[{at}], {self.shared}[{to}], {width}{extra}{bypass} : "
                       f"{tensor.memref} to {self.shared_type}", "cp")

    def _valid_count(self, row: str, col: str, valid_rows: str | None, valid_cols: str | None,
                     width: int) -> str | None:
        """Elements of a chunk inside the tensor: ``width``, fewer at the column edge, 0 past the row edge."""
        count = None
        if valid_cols is not None:
            left = self.op("subi", valid_cols, col)
            count = self.op("maxsi", self.op("minsi", left, width), 0)
        if valid_rows is not None:
            inside = self.cmp("slt", row, valid_rows)
            count = self.select(inside, count or self.t.const(width), self.t.const(0))
        return count

    def copy_tile_scalar(self, role: str, base: str, stride: str, rows: int, cols: int, dest: str,
                         dest_stride: int, valid_cols: str, tid: str, workers: int) -> None:
        """The element-wise form of :meth:`copy_tile` (columns masked), for rows whose global addresses are
        not aligned to any cp.async width."""
        t, (src, tensor) = self.t, self.tensors[role]
        with t.for_(tid, t.const(rows * cols), t.const(workers), "e") as i:
            row, col = self.op("divui", i, cols), self.op("remui", i, cols)
            inside = self.cmp("slt", col, valid_cols)
            at = self.op("addi", self.op("addi", base, self.op("muli", row, stride)), col)
            with t.if_(inside, [self.et]) as (value,):
                t.yield_([t.value(f"memref.load {src}[{at}] : {tensor.memref}", "ld")], [self.et])
            with t.else_():
                t.yield_([t.value(f"arith.constant 0.0 : {self.et}", "z")], [self.et])
            to = self.op("addi", dest, self.op("addi", self.op("muli", row, dest_stride), col))
            t.add(f"memref.store {value}, {self.shared}[{to}] : {self.shared_type}")

    # -- tensor-core fragments -------------------------------------------------------------------------------------

    def ldmatrix(self, index: str, transpose: bool) -> list[str]:
        """Four 8x8 matrices from shared memory at the lane's ``index``, as four operand registers."""
        t, vt = self.t, f"vector<4x2x{self.et}>"
        m = t.value(f"nvgpu.ldmatrix {self.shared}[{index}] {{numTiles = 4 : i32, transpose = "
                    f"{'true' if transpose else 'false'}}} : {self.shared_type} -> {vt}", "lm")
        return [self.register(t.value(f"vector.extract {m}[{i}] : vector<2x{self.et}> from {vt}", "pr"))
                for i in range(4)]

    @property
    def register_type(self) -> str:
        """An operand register of nvvm.mma.sync: f16 pairs as vectors, bf16 pairs packed in i32 (the form
        its bf16 variant takes)."""
        return "i32" if self.et == "bf16" else f"vector<2x{self.et}>"

    def register(self, pair: str) -> str:
        """A ``vector<2xT>`` pair as an mma.sync operand register."""
        if self.register_type != "i32":
            return pair
        word = self.t.value(f"vector.bitcast {pair} : vector<2x{self.et}> to vector<1xi32>", "pw")
        return self.t.value(f"vector.extract {word}[0] : i32 from vector<1xi32>", "r")

    def mma(self, a: list[str], b: list[str], c: list[str]) -> list[str]:
        """``c + a b`` for one m16n8k16 tile: a row-major, b column-major, c and the result f32."""
        t, st = self.t, "!llvm.struct<(f32, f32, f32, f32)>"
        d = t.value(f"nvvm.mma.sync A[{', '.join(a)}] B[{', '.join(b)}] C[{', '.join(c)}] "
                    f"{{layoutA = #nvvm.mma_layout<row>, layoutB = #nvvm.mma_layout<col>, "
                    f"multiplicandAPtxType = #nvvm.mma_type<{self.et}>, "
                    f"multiplicandBPtxType = #nvvm.mma_type<{self.et}>, "
                    f"shape = #nvvm.shape<m = 16, n = 8, k = 16>}} : "
                    f"({self.register_type}, {self.register_type}, f32) -> {st}", "mma")
        return [t.value(f"llvm.extractvalue {d}[{i}] : {st}", "acc") for i in range(4)]

    def pack(self, x: str, y: str) -> str:
        """Two f32 rounded to the input type, as one operand register (x in the low half)."""
        t = self.t
        lo, hi = (t.value(f"arith.truncf {v} : f32 to {self.et}", "h") for v in (x, y))
        return self.register(t.value(f"vector.from_elements {lo}, {hi} : vector<2x{self.et}>", "pp"))

    def lane_offset(self, stride: int, transpose: bool) -> str:
        """The lane's element offset in an ldmatrix.x4 of a 16x16 block at row stride ``stride``. Without
        ``transpose`` (A from row-major Q, B from K stored key by key) the matrices are rows 0-7/8-15 then
        columns 0-7/8-15 for A, and for B columns 0-7/8-15 of rows 0-7, then of rows 8-15; with
        ``transpose`` (B from V or K stored dimension by dimension) rows 0-7/8-15 of columns 0-7, then of
        columns 8-15. Either way registers 0-1 and 2-3 are the B operands of two adjacent n-tiles."""
        lane = self.lane
        low = self.op("remui", lane, 8)
        second = self.op("remui", self.op("divui", lane, 8), 2)
        half = self.op("divui", lane, 16)
        row, col = (self.op("addi", low, self.op("muli", second, 8)), half) if transpose else \
            (self.op("addi", low, self.op("muli", half, 8)), second)
        return self.op("addi", self.op("muli", row, stride), self.op("muli", col, 8))

    def a_lane_offset(self, stride: int) -> str:
        """The lane's offset in an ldmatrix.x4 of a 16x16 A block: row lane % 16, column (lane / 16) * 8."""
        row = self.op("remui", self.lane, 16)
        return self.op("addi", self.op("muli", row, stride), self.op("muli", self.op("divui", self.lane, 16), 8))


@dataclass(frozen=True)
class _WarpTiles:
    """What one warp's flash loop reads: its shared-memory unit (Q tile, then two K and two V stages), the
    Q tile's rows, the global bases, the keys it runs over and who copies the tiles."""

    unit: str  # element offset of the unit in shared memory
    q_rows: int  # rows of the unit's Q tile (all warps sharing the unit)
    warp_row: str  # the warp's first row in the Q tile
    q_base: str  # global index of the Q tile's first row
    q_valid: str  # rows of the Q tile inside Q
    k_base: str  # global index of this batch index's K
    v_base: str
    key_start: str
    key_limit: str  # keys from here on are not read
    trips: str  # key tiles
    full_trips: str | None  # the first tiles, which hold no masked key (None: mask them all, one loop)
    row_limits: tuple[str, str]  # i32: per accumulator row (lane row, + 8), the first masked key
    copier: str  # the thread's index among the copying threads
    copiers: int


class Flash(_Writer):
    """The flash loop of a 16-row warp tile over key tiles, shared by the prefill and the decode kernels."""

    def __init__(self, spec: AttentionSpec, tensors: list[tuple[str, Tensor]], threads: int,
                 shared_elements: int, key_tile: int, mask: bool) -> None:
        super().__init__(spec, tensors, threads, shared_elements)
        self.bk, self.mask = key_tile, mask
        self.dn = spec.k_layout == "dn"
        self.q_stride, self.v_stride = spec.d + PAD, spec.dv + PAD
        self.k_stride = key_tile + PAD if self.dn else spec.d + PAD
        self.q_size = 0  # set per unit by flash(): the Q tile's elements
        self.k_stage = spec.d * self.k_stride if self.dn else key_tile * self.k_stride
        self.v_stage = key_tile * self.v_stride

    def dn_width(self) -> int:
        """The cp.async width (elements) for K stored [d, kv]: the widest that divides skv (its rows start
        there), 0 when none does or skv is dynamic (then the copy is element-wise)."""
        skv = self.spec.skv
        return next((w for w in (8, 4, 2) if isinstance(skv, int) and skv % w == 0), 0)

    def group_and_wait(self, tokens: list[str], pending: int) -> None:
        group = self.t.value(f"nvgpu.device_async_create_group {', '.join(tokens)}", "grp")
        self.t.add(f"nvgpu.device_async_wait {group} {{numGroups = {pending} : i32}}")

    def copy_kv(self, w: _WarpTiles, key0: str, stage: str) -> list[str]:
        """Start the copies of the K and V tiles of the keys from ``key0`` into ``stage``; their tokens."""
        spec, t = self.spec, self.t
        d, dv = spec.d, spec.dv
        valid = self.op("subi", w.key_limit, key0)
        k_dest = self.op("addi", w.unit, self.op("addi", self.op("muli", stage, self.k_stage), self.q_size))
        v_dest = self.op("addi", w.unit, self.op("addi", self.op("muli", stage, self.v_stage),
                                                 self.q_size + 2 * self.k_stage))
        tokens: list[str] = []
        if not self.dn:
            tokens += self.copy_tile("k", self.op("addi", w.k_base, self.op("muli", key0, d)), t.const(d), self.bk,
                                     d, k_dest, self.k_stride, valid, None, 8, w.copier, w.copiers)
        elif self.dn_width():
            tokens += self.copy_tile("k", self.op("addi", w.k_base, key0), self.dim(spec.skv), d, self.bk, k_dest,
                                     self.k_stride, None, valid, self.dn_width(), w.copier, w.copiers)
        else:
            self.copy_tile_scalar("k", self.op("addi", w.k_base, key0), self.dim(spec.skv), d, self.bk, k_dest,
                                  self.k_stride, valid, w.copier, w.copiers)
        tokens += self.copy_tile("v", self.op("addi", w.v_base, self.op("muli", key0, dv)), t.const(dv), self.bk,
                                 dv, v_dest, self.v_stride, valid, None, 8, w.copier, w.copiers)
        return tokens

    def flash(self, w: _WarpTiles) -> list[str]:
        """Run the warp's tile loop; the final state: row maxima (2), row sums (2, this lane's share), then
        the O accumulator (dv / 8 tiles of 4)."""
        spec, t = self.spec, self.t
        self.q_size = w.q_rows * self.q_stride
        q_tokens = self.copy_tile("q", w.q_base, t.const(spec.d), w.q_rows, spec.d, w.unit, self.q_stride,
                                  w.q_valid, None, 8, w.copier, w.copiers)
        t.value(f"nvgpu.device_async_create_group {', '.join(q_tokens)}", "grp")
        self.group_and_wait(self.copy_kv(w, w.key_start, t.const(0)), 1)
        t.add("gpu.barrier")
        q_at = self.op("addi", self.op("addi", w.unit, self.op("muli", w.warp_row, self.q_stride)),
                       self.a_lane_offset(self.q_stride))
        q_frags = [self.ldmatrix(self.op("addi", q_at, 16 * kk), False) for kk in range(spec.d // 16)]
        k_lane = self.op("addi", w.unit, self.lane_offset(self.k_stride, self.dn))
        v_lane = self.op("addi", w.unit, self.lane_offset(self.v_stride, True))
        state = [self.ninf] * 2 + [self.zero] * (2 + spec.dv // 2)
        # Tiles before the first one that may hold a masked key run without the mask, where asked.
        parts = [(t.const(0), w.trips, self.mask)]
        if self.mask and w.full_trips is not None:
            parts = [(t.const(0), w.full_trips, False), (w.full_trips, w.trips, True)]
        for lo, hi, masked in parts:
            state = self.tile_loop(w, lo, hi, (q_frags, k_lane, v_lane), state, masked)
        return state

    def tile_loop(self, w: _WarpTiles, lo: str, hi: str, lanes: tuple, state: list[str], masked: bool) -> list[str]:
        """Key tiles ``lo`` to ``hi``: prefetch the next tile into the other stage, wait for this one, attend
        to it; ``lanes`` are the Q fragments and the lane's K and V offsets."""
        t = self.t
        q_frags, k_lane, v_lane = lanes
        with t.for_carried(lo, hi, t.const(1), state, "f32", ("it", "st", "fin")) as loop:
            following = self.op("addi", loop.iv, 1)
            next_key = self.op("addi", w.key_start, self.op("muli", following, self.bk))
            self.group_and_wait(self.copy_kv(w, next_key, self.op("remui", following, 2)), 1)
            t.add("gpu.barrier")
            stage = self.op("remui", loop.iv, 2)
            k_at = self.op("addi", k_lane, self.op("addi", self.op("muli", stage, self.k_stage), self.q_size))
            v_at = self.op("addi", v_lane, self.op("addi", self.op("muli", stage, self.v_stage),
                                                   self.q_size + 2 * self.k_stage))
            key0 = self.op("addi", w.key_start, self.op("muli", loop.iv, self.bk))
            state = self.attend(q_frags, k_at, v_at, key0, w.row_limits if masked else None, loop.args)
            t.add("gpu.barrier")
            t.yield_(state, ["f32"] * len(state))
        return loop.results

    def scores(self, q_frags: list[list[str]], k_at: str) -> list[list[str]]:
        """S = Q K^T of the warp's 16 rows and the tile's keys, as bk / 8 accumulator tiles of 4."""
        s = [[self.zero] * 4 for _ in range(self.bk // 8)]
        for kk, a in enumerate(q_frags):
            for jp in range(self.bk // 16):
                at = kk * 16 * self.k_stride + jp * 16 if self.dn else jp * 16 * self.k_stride + kk * 16
                b = self.ldmatrix(self.op("addi", k_at, at), self.dn)
                s[2 * jp] = self.mma(a, b[:2], s[2 * jp])
                s[2 * jp + 1] = self.mma(a, b[2:], s[2 * jp + 1])
        return s

    def scale_and_mask(self, s: list[list[str]], key0: str, row_limits: tuple[str, str] | None) -> list[list[str]]:
        """The scores in base 2 (times scale * log2 e), -inf where the key is masked: the lane's key of
        element e of tile j is key0 + 2 * (lane % 4) + 8 j + e % 2."""
        factor = self.t.value(f"arith.constant {self.spec.scale * LOG2E:.9e} : f32", "scale")
        x = [[self.f("mulf", v, factor) for v in tile] for tile in s]
        if row_limits is None:
            return x
        first = self.to_i32(self.op("addi", key0, self.op("muli", self.quad, 2)))
        room = [self.op("subi", limit, first, "i32") for limit in row_limits]
        for j, tile in enumerate(x):
            for e in range(4):
                inside = self.cmp("sgt", room[e // 2], 8 * j + e % 2, "i32")
                tile[e] = self.select(inside, tile[e], self.ninf, "f32")
        return x

    def attend(self, q_frags: list[list[str]], k_at: str, v_at: str, key0: str,
               row_limits: tuple[str, str] | None, state: list[str]) -> list[str]:
        """One key tile of the online softmax: the new state from the old (keys masked by ``row_limits``,
        per accumulator row the first masked key, or not at all)."""
        x = self.scale_and_mask(self.scores(q_frags, k_at), key0, row_limits)
        m_new, alpha, sums = [], [], []
        for r in range(2):
            row = [tile[e] for tile in x for e in (2 * r, 2 * r + 1)]
            top = self.quad_reduce(self._fold(row, "maxnumf"), "maxnumf")
            m_new.append(self.f("maxnumf", state[r], top))
            empty = self.t.value(f"arith.cmpf oeq, {m_new[r]}, {self.ninf} : f32", "p")
            ref = self.select(empty, self.zero, m_new[r], "f32")  # no key yet: keep exp2 away from inf - inf
            alpha.append(self.exp2(self.f("subf", state[r], ref)))
            for tile in x:
                for e in (2 * r, 2 * r + 1):
                    tile[e] = self.exp2(self.f("subf", tile[e], ref))
            sums.append(self._fold([tile[e] for tile in x for e in (2 * r, 2 * r + 1)], "addf"))
        sums = [self.f("addf", self.f("mulf", state[2 + r], alpha[r]), sums[r]) for r in range(2)]
        o = state[4:]
        o = [[self.f("mulf", o[4 * j + e], alpha[e // 2]) for e in range(4)] for j in range(len(o) // 4)]
        return m_new + sums + [v for tile in self.values_times_p(x, v_at, o) for v in tile]

    def _fold(self, values: list[str], combine: str) -> str:
        while len(values) > 1:
            values = [self.f(combine, values[i], values[i + 1]) if i + 1 < len(values) else values[i]
                      for i in range(0, len(values), 2)]
        return values[0]

    def values_times_p(self, p: list[list[str]], v_at: str, o: list[list[str]]) -> list[list[str]]:
        """O += P V: the score tiles 2t and 2t + 1, rounded and paired, are the A operand of key step t."""
        for step in range(self.bk // 16):
            lo, hi = p[2 * step], p[2 * step + 1]
            a = [self.pack(lo[0], lo[1]), self.pack(lo[2], lo[3]), self.pack(hi[0], hi[1]), self.pack(hi[2], hi[3])]
            for jp in range(self.spec.dv // 16):
                b = self.ldmatrix(self.op("addi", v_at, step * 16 * self.v_stride + jp * 16), True)
                o[2 * jp] = self.mma(a, b[:2], o[2 * jp])
                o[2 * jp + 1] = self.mma(a, b[2:], o[2 * jp + 1])
        return o

    def row_sums(self, state: list[str]) -> list[str]:
        """The reciprocal of each accumulator row's total sum, 0 for a row no key reached."""
        out = []
        for r in range(2):
            total = self.quad_reduce(state[2 + r], "addf")
            positive = self.t.value(f"arith.cmpf ogt, {total}, {self.zero} : f32", "p")
            out.append(self.select(positive, self.f("divf", self.one, total), self.zero, "f32"))
        return out

    def store_pair(self, role: str, index: str, x: str, y: str) -> None:
        """Store two adjacent values, cast to the tensor's type, at ``index`` (an even element offset)."""
        ssa, tensor = self.tensors[role]
        dt = tensor.dtype
        if dt != "f32":
            x, y = (self.t.value(f"arith.truncf {v} : f32 to {dt}", "h") for v in (x, y))
        pair = self.t.value(f"vector.from_elements {x}, {y} : vector<2x{dt}>", "pv")
        align = 8 if dt == "f32" else 4
        self.t.add(f"vector.store {pair}, {ssa}[{index}] {{alignment = {align}}} : {tensor.memref}, vector<2x{dt}>")


def needs_key_mask(spec: AttentionSpec, key_tile: int) -> bool:
    """Scores need masking under a causal mask, or when the last key tile may run past the keys."""
    return spec.causal or not (isinstance(spec.skv, int) and spec.skv % key_tile == 0)


def _prefill_kernel(spec: AttentionSpec, plan: AttentionPlan, tile: AttentionTile) -> Kernel:
    """The flash-attention kernel: a block per (batch index, BQ query rows), 16 rows per warp."""
    threads = plan.warps * WARP
    w = Flash(spec, [("q", spec.q), ("k", spec.k), ("v", spec.v), ("o", spec.o)], threads,
               unit_elements(spec, tile.BQ, tile.BK), tile.BK, needs_key_mask(spec, tile.BK))
    name = f"{spec.name}_prefill"
    t = w.t
    with t.region(w.header(name)):
        w.prologue()
        sq, skv = w.dim(spec.sq), w.dim(spec.skv)
        q_tiles = w.op("ceildivui", sq, tile.BQ)
        batch, q0 = w.op("divui", w.bid, q_tiles), w.op("muli", w.op("remui", w.bid, q_tiles), tile.BQ)
        limit = skv
        if spec.causal:  # the block's last row reaches key q0 + BQ - 1 + skv - sq
            reach = w.op("addi", w.op("subi", skv, sq), w.op("addi", q0, tile.BQ))
            limit = w.op("minsi", skv, w.op("maxsi", reach, 0))
        rows = [w.op("addi", w.op("addi", q0, w.op("muli", w.warp, MMA_ROWS)), w.op("addi", w.group, 8 * r))
                for r in range(2)]
        limits = tuple(w.to_i32(causal_limit(w, row, limit) if spec.causal else limit) for row in rows)
        first_limit = causal_limit(w, q0, limit) if spec.causal else limit  # the block's first row's
        trips = w.op("ceildivui", limit, tile.BK)
        tiles = _WarpTiles(
            unit=t.const(0), q_rows=tile.BQ, warp_row=w.op("muli", w.warp, MMA_ROWS),
            q_base=w.op("muli", w.op("addi", w.op("muli", batch, sq), q0), spec.d),
            q_valid=w.op("subi", sq, q0), k_base=w.op("muli", w.op("muli", batch, skv), spec.d),
            v_base=w.op("muli", w.op("muli", batch, skv), spec.dv), key_start=t.const(0), key_limit=limit,
            trips=trips, full_trips=whole_tiles(w, first_limit, trips, tile.BK), row_limits=limits,
            copier=w.tid, copiers=threads)
        state = w.flash(tiles)
        store_rows(w, state, rows, sq, w.op("muli", w.op("muli", batch, sq), spec.dv))
        t.add("gpu.return")
    grid = (f"cdiv({spec.sq}, {tile.BQ}) * {numel_text(tuple(spec.batch))}", "1", "1")
    return Kernel(name, t.function_text(), Launch(grid, (threads, 1, 1), plan.shared_bytes, w.params()),
                  max_registers=REGISTER_LIMIT)


def whole_tiles(w: Flash, limit: str, trips: str, key_tile: int) -> str:
    """The key tiles that end by ``limit`` (at most ``trips``): no key of theirs is masked."""
    return w.op("minui", w.op("divui", w.op("maxsi", limit, 0), key_tile), trips)


def causal_limit(w: Flash, row: str, limit: str) -> str:
    """The first key that query ``row`` may not see: row + skv - sq + 1, at most ``limit``."""
    diagonal = w.op("subi", w.dim(w.spec.skv), w.dim(w.spec.sq))
    return w.op("minsi", limit, w.op("addi", w.op("addi", row, diagonal), 1))


def store_rows(w: Flash, state: list[str], rows: list[str], sq: str, o_base: str) -> None:
    """O = accumulator / row sum, stored for the lane's two rows that are below sq."""
    t, dv = w.t, w.spec.dv
    inverse = w.row_sums(state)
    column = w.op("muli", w.quad, 2)
    for r in range(2):
        with t.if_(w.cmp("slt", rows[r], sq)):
            start = w.op("addi", w.op("addi", o_base, w.op("muli", rows[r], dv)), column)
            for j in range(dv // 8):
                values = [w.f("mulf", state[4 + 4 * j + 2 * r + e], inverse[r]) for e in range(2)]
                w.store_pair("o", w.op("addi", start, 8 * j), *values)


def _decode_kernel(spec: AttentionSpec, plan: AttentionPlan, tile: AttentionTile) -> Kernel:
    """The split kernel: each warp runs the flash loop over one key share of one batch index (its 16-row
    tile holds the query in row 0) and writes the share's max, sum and unnormalized output."""
    partial_o, partial_m, partial_l = decode_temporaries(spec, plan)
    threads, splits = plan.warps * WARP, plan.splits
    unit = unit_elements(spec, MMA_ROWS, plan.key_tile)
    w = Flash(spec, [("q", spec.q), ("k", spec.k), ("v", spec.v), ("po", partial_o), ("pm", partial_m),
                      ("pl", partial_l)], threads, plan.warps * unit, plan.key_tile, True)
    name, t = f"{spec.name}_decode", w.t
    blocks = -(-splits // plan.warps)  # per batch index
    with t.region(w.header(name)):
        w.prologue()
        skv = w.dim(spec.skv)
        batch = w.op("divui", w.bid, blocks)
        share = w.op("addi", w.op("muli", w.op("remui", w.bid, blocks), plan.warps), w.warp)
        per_share = w.op("ceildivui", w.op("ceildivui", skv, plan.key_tile), splits)  # key tiles
        start = w.op("muli", share, w.op("muli", per_share, plan.key_tile))
        real = w.cmp("slt", share, t.const(splits))
        end = w.op("minsi", w.op("addi", start, w.op("muli", per_share, plan.key_tile)), skv)
        limit = w.select(real, end, start)  # a warp past the last share reads nothing
        limits = (w.to_i32(limit),) * 2
        tiles = _WarpTiles(
            unit=w.op("muli", w.warp, unit), q_rows=MMA_ROWS, warp_row=t.const(0),
            q_base=w.op("muli", batch, spec.d), q_valid=t.const(1),
            k_base=w.op("muli", w.op("muli", batch, skv), spec.d),
            v_base=w.op("muli", w.op("muli", batch, skv), spec.dv), key_start=start, key_limit=limit,
            trips=per_share, full_trips=None, row_limits=limits, copier=w.lane, copiers=WARP)
        state = w.flash(tiles)
        total = w.quad_reduce(state[2], "addf")
        row = w.op("addi", w.op("muli", batch, splits), share)
        with t.if_(real):
            with t.if_(w.cmp("eq", w.group, t.const(0))):
                start_o = w.op("addi", w.op("muli", row, spec.dv), w.op("muli", w.quad, 2))
                for j in range(spec.dv // 8):
                    w.store_pair("po", w.op("addi", start_o, 8 * j), state[4 + 4 * j], state[5 + 4 * j])
                with t.if_(w.cmp("eq", w.quad, t.const(0))):
                    for role, value in (("pm", state[0]), ("pl", total)):
                        ssa, tensor = w.tensors[role]
                        t.add(f"memref.store {value}, {ssa}[{row}] : {tensor.memref}")
        t.add("gpu.return")
    grid = (f"{blocks} * {numel_text(tuple(spec.batch))}", "1", "1")
    return Kernel(name, t.function_text(), Launch(grid, (threads, 1, 1), plan.shared_bytes, w.params()),
                  max_registers=REGISTER_LIMIT)


def decode_temporaries(spec: AttentionSpec, plan: AttentionPlan) -> list[Tensor]:
    """The decode temporaries (see :func:`attention_temporaries`)."""
    return [Tensor(f"{spec.name}_partial_o", "f32", (*spec.batch, plan.splits, spec.dv)),
            Tensor(f"{spec.name}_partial_m", "f32", (*spec.batch, plan.splits)),
            Tensor(f"{spec.name}_partial_l", "f32", (*spec.batch, plan.splits))]


def combine_kernel(spec: AttentionSpec, plan: AttentionPlan) -> Kernel:
    """The combine kernel: a block per batch index, a thread per output column; the shares' outputs
    weighted by exp2(max_s - max) and divided by the weighted sum of their sums."""
    partial_o, partial_m, partial_l = decode_temporaries(spec, plan)
    threads = min(128, -(-spec.dv // WARP) * WARP)
    w = _Writer(spec, [("po", partial_o), ("pm", partial_m), ("pl", partial_l), ("o", spec.o)], threads)
    name, t, splits = f"{spec.name}_combine", w.t, plan.splits
    with t.region(w.header(name)):
        w.prologue()
        first = w.op("muli", w.bid, splits)
        with t.for_carried(t.const(0), t.const(splits), t.const(1), [w.ninf], "f32", ("s", "mx", "top")) as loop:
            t.yield_([w.f("maxnumf", loop.args[0], _load(w, "pm", w.op("addi", first, loop.iv)))], ["f32"])
        empty = t.value(f"arith.cmpf oeq, {loop.results[0]}, {w.ninf} : f32", "p")
        top = w.select(empty, w.zero, loop.results[0], "f32")
        for i in range(-(-spec.dv // threads)):
            column = w.op("addi", w.tid, i * threads)
            with t.if_(w.cmp("slt", column, t.const(spec.dv))):
                _combine_column(w, first, top, column)
        t.add("gpu.return")
    grid = (numel_text(tuple(spec.batch)), "1", "1")
    return Kernel(name, t.function_text(), Launch(grid, (threads, 1, 1), 0, w.params()))


def _load(w: _Writer, role: str, index: str) -> str:
    ssa, tensor = w.tensors[role]
    return w.t.value(f"memref.load {ssa}[{index}] : {tensor.memref}", "ld")


def _combine_column(w: _Writer, first: str, top: str, column: str) -> None:
    """O[batch, 0, column] from the shares' partial outputs."""
    t, dv = w.t, w.spec.dv
    count = t.const(w.tensors["pm"][1].shape[-1])
    with t.for_carried(t.const(0), count, t.const(1), [w.zero, w.zero], "f32", ("s", "sum", "acc")) as loop:
        row = w.op("addi", first, loop.iv)
        weight = w.exp2(w.f("subf", _load(w, "pm", row), top))
        total = w.f("addf", loop.args[0], w.f("mulf", weight, _load(w, "pl", row)))
        value = _load(w, "po", w.op("addi", w.op("muli", row, dv), column))
        t.yield_([total, w.f("addf", loop.args[1], w.f("mulf", weight, value))], ["f32", "f32"])
    positive = t.value(f"arith.cmpf ogt, {loop.results[0]}, {w.zero} : f32", "p")
    out = w.select(positive, w.f("divf", loop.results[1], loop.results[0]), w.zero, "f32")
    ssa, tensor = w.tensors["o"]
    if tensor.dtype != "f32":
        out = t.value(f"arith.truncf {out} : f32 to {tensor.dtype}", "h")
    t.add(f"memref.store {out}, {ssa}[{w.op('addi', w.op('muli', w.bid, dv), column)}] : {tensor.memref}")
