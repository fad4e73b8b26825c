"""The GEMM kernel in the Ampere form: a ``cp.async`` pipeline into shared memory, then ``mma.sync`` or FMAs.

A block computes a BM x BN tile of C for one batch index (grid x over the
N tiles, y over the M tiles, z over the batch); its warps each own a
WM x WN part of that tile. With GROUP_M > 1 the block's linear index
within its batch index, ``y * N tiles + x``, is mapped to a tile in
groups of GROUP_M rows of tiles (:func:`tile_order`), so that the blocks
running together share A's and B's tiles in L2. K is walked in BK steps through a ring of
STAGES shared-memory slots: while the block computes on slot ``kt``, the
copies of tile ``kt + STAGES - 1`` are in flight.

- **Copies.** Each operand's tile is stored in shared memory as it lies in
  global memory (rows of the tile's outer dimension, its inner dimension
  contiguous) and copied in 16-byte chunks, every thread taking its share.
  Each chunk is one ``cp.async.cg`` (bypassing L1) where the row stride is
  a multiple of 16 bytes, else two or four narrower ``cp.async.ca`` (8 or
  4 bytes) where it is a multiple of those; a copy that reaches past the
  tensor's edge reads fewer source bytes (or none) and the rest is zero,
  which is how ragged M, N and K are masked. Only 16-bit elements with an
  odd stride are loaded element by element under masks: into registers
  before the math and stored to the ring after it (hiding the loads behind
  the math) where registers allow, stored before it otherwise. A stride
  given by a size symbol gets two kernels, each launched under the
  condition that selects it: 16-byte copies, or the width any stride
  allows.
- **f16 and bf16** run on tensor cores: ``ldmatrix`` (transposed for the
  ``km`` and ``kn`` tiles, which lie with M or N contiguous) feeds
  ``mma.sync`` m16n8k16 with f32 accumulators. Rows of the tile are
  XOR-swizzled in 16-byte chunks, so the 8 rows an ``ldmatrix`` reads at
  once fall in 8 different bank groups.
- **f32** runs on FMAs (no tf32, which rounds differently): a lane owns a
  (WM / 4) x (WN / 8) tile of C, its rows 4 apart and its columns 8 apart,
  and the tile rows are padded by 16 bytes instead of swizzled.
- **The epilogue** works on registers: the accumulator (started at
  ``init_value``, plus ``init`` where C has an initial tensor), the dual
  GEMM's second accumulator (started at zero), the epilogue's tensors read
  at the point, then the cast to C's type and a masked store (pairs of
  columns in one store where C's rows allow).

**Split-K** (SPLITK > 1, for skinny GEMMs whose M x N tiles leave SMs idle):
grid z also walks the SPLITK shares of K (z = batch index * SPLITK +
share). A share is ``cdiv(cdiv(K, SPLITK), BK)`` whole BK steps, the last
shares shorter or empty (an empty share's partial is zero), as the host
tiled model has it. Each block computes its share's f32 partial tile from
zero and stores its rows inside C (pairs of columns in one 8-byte store)
into the workspace temporary ``[products * SPLITK, batch..., M, cdiv(N,
BN) * BN]`` (product ``p``, share ``s`` at slab ``p * SPLITK + s``; rows
padded to whole N tiles, so that columns need neither masks nor clamps and
the last block's addresses are a row's start plus constants). The block that
then adds one to its tile's counter (an i32 temporary, one per output
tile) and sees SPLITK - 1 is last: it sums the SPLITK partials in share
order 0, 1, ... onto ``init_value`` (a fixed order, so the result's bits do
not depend on which block is last), runs the epilogue as the unsplit
kernel does, and resets the counter to zero for the next launch (the
launcher zeroes temporaries once, before the function's first kernel).

*Memory ordering.* Every thread stores its partial, then fences
(``fence.acq_rel.gpu``), then the block meets at a CTA barrier; only then
does thread 0 add to the counter (a relaxed ``atom.global.add``), so every
partial of the block is ordered before its count. The last block meets at
a barrier after reading the count (broadcast through shared memory) and
every thread fences again before loading the partials, which then
observes all the other blocks' stores (the fence-fence synchronization of
the PTX memory model, cumulative through the barriers).
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass

from prism.codegen.gpu.spec import (
    ELEMENT_BYTES,
    Dim,
    GemmSpec,
    GemmTile,
    Kernel,
    Launch,
    Param,
    Tensor,
    convert,
    dim_text,
)
from prism.codegen.text import TextBuilder
from prism.infra.errors import UnsupportedOp
from prism.targets.nvidia_registers import (
    ALLOT_EPILOGUE,
    MAX_REGISTERS,
    MMA_SHAPE,
    gemm_allotment,
    hoisted_fragments,
    register_cap,
)

MMA_M, MMA_N, MMA_K = MMA_SHAPE
# Dynamic shared memory a block may opt in to, per chip.
SHARED_LIMIT = {"sm_80": 163 * 1024, "sm_90": 227 * 1024, "sm_90a": 227 * 1024}
MAX_THREADS = 1024
# f32 accumulators a thread may hold (both products of a dual GEMM together): beyond, ptxas spills.
MAX_ACCUMULATORS = 128
CHUNK_BYTES = 16  # one cp.async, one ldmatrix row
# Registers for the accumulators and the element-loaded chunks held across the math: beyond, the chunks are
# stored to shared memory before it.
HELD_REGISTERS = 144
MAX_SPLITK = 64  # shares of K; grid z holds batch * SPLITK blocks
# Accumulators a thread may hold with SPLITK > 1 (tensor cores, FMAs): beyond, the last block's sum spills.
SPLIT_ACCUMULATORS = {True: 64, False: 32}
FLAG_BYTES = 16  # shared memory after the ring for a split-K block's count (kept 16-byte aligned)
SIMT_PAD_BYTES = 16  # padding after each row of an f32 tile: rows 4 apart fall in different banks
WS = "#gpu.address_space<workgroup>"
TENSOR_CORE_TYPES = ("f16", "bf16")


# -- the tiles in shared memory -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class StoredTile:
    """One operand's tile in a shared-memory slot: ``rows`` x ``cols`` elements as laid out in global memory."""

    rows: int
    cols: int
    vec: int  # elements per 16-byte chunk
    pad: int  # elements after each row (f32); 0 where the XOR swizzle spreads the banks

    @property
    def row_len(self) -> int:
        return self.cols + self.pad

    @property
    def elems(self) -> int:
        return self.rows * self.row_len

    @property
    def chunks_per_row(self) -> int:
        return self.cols // self.vec

    @property
    def swizzle(self) -> tuple[int, int] | None:
        """``(shift, mask)``: chunk ``c`` of row ``r`` lies at ``c ^ ((r >> shift) & mask)``; None: unswizzled.

        Eight consecutive rows then cover the 8 bank groups of 16 bytes: with
        8 or more chunks a row, by ``r % 8``; with fewer, rows sharing 128
        bytes differ by their place in it, the rest by the XOR.
        """
        chunks = self.chunks_per_row
        if self.pad or chunks == 1:
            return None
        if chunks >= 8:
            return 0, 7
        return int(math.log2(8 // chunks)), chunks - 1


def operand_tiles(tile: GemmTile, dtype: str, a_layout: str, b_layout: str) -> tuple[StoredTile, StoredTile]:
    """The stored tiles of A and of B (a dual GEMM's B2 is stored as B)."""
    vec = CHUNK_BYTES // ELEMENT_BYTES[dtype]
    pad = 0 if dtype in TENSOR_CORE_TYPES else SIMT_PAD_BYTES // ELEMENT_BYTES[dtype]
    a = (tile.BM, tile.BK) if a_layout == "mk" else (tile.BK, tile.BM)
    b = (tile.BN, tile.BK) if b_layout == "nk" else (tile.BK, tile.BN)
    return StoredTile(*a, vec, pad), StoredTile(*b, vec, pad)


def gemm_shared_bytes(tile: GemmTile, dtype: str, *, a_layout: str = "mk", b_layout: str = "kn",
                      dual: bool = False) -> int:
    """Dynamic shared memory of the kernel: STAGES slots of the A and B tiles (and B2's for a dual GEMM)."""
    a, b = operand_tiles(tile, dtype, a_layout, b_layout)
    ring = tile.STAGES * (a.elems + b.elems * (2 if dual else 1)) * ELEMENT_BYTES[dtype]
    return ring + (FLAG_BYTES if tile.SPLITK > 1 else 0)


def _cdiv_dim(size: Dim, tile: int) -> Dim:
    return -(-size // tile) if isinstance(size, int) else f"cdiv({size}, {tile})"


def padded_n(spec: GemmSpec) -> Dim:
    """N rounded up to whole N tiles: the length of a row of split-K partials."""
    t = spec.tile
    return -(-spec.n // t.BN) * t.BN if isinstance(spec.n, int) else f"cdiv({spec.n}, {t.BN}) * {t.BN}"


def splitk_temporaries(spec: GemmSpec) -> tuple[Tensor, Tensor]:
    """A split-K kernel's temporaries: the f32 partials ``[products * SPLITK, batch..., M, cdiv(N, BN) * BN]``
    (rows padded to whole N tiles, so that a tile's columns need no mask) and the i32
    counters, one per output tile ``[batch..., cdiv(M, BM), cdiv(N, BN)]``. Named after the tile, so that the
    kernels of one GEMM taking the same tile share them (they run under exclusive launch conditions)."""
    t = spec.tile
    products = 2 if spec.b2 is not None else 1
    stem = f"{spec.name}_splitk{t.SPLITK}_{t.BM}x{t.BN}"
    partials = Tensor(f"{stem}_partials", "f32", (products * t.SPLITK, *spec.batch, spec.m, padded_n(spec)))
    counters = Tensor(f"{stem}_counters", "i32", (*spec.batch, _cdiv_dim(spec.m, t.BM), _cdiv_dim(spec.n, t.BN)))
    return partials, counters


def _power_of_two(n: int) -> bool:
    return n > 0 and n & (n - 1) == 0


def _knob_problem(tile: GemmTile, dtype: str, dual: bool) -> str | None:
    """Why the knobs themselves cannot make a kernel of ``dtype``, or None."""
    if not all(_power_of_two(v) for v in (tile.BM, tile.BN, tile.BK)):
        return f"BM={tile.BM}, BN={tile.BN} and BK={tile.BK} must be powers of two"
    if tile.BM % tile.WM or tile.BN % tile.WN:
        return f"the warp tile {tile.WM}x{tile.WN} must divide the block tile {tile.BM}x{tile.BN}"
    mma = dtype in TENSOR_CORE_TYPES
    wm, wn, bk = (MMA_M, 2 * MMA_N, MMA_K) if mma else (4, 8, CHUNK_BYTES // 4)
    if tile.WM % wm or tile.WN % wn:
        return f"{dtype} needs WM a multiple of {wm} and WN of {wn}, not {tile.WM}x{tile.WN}"
    if tile.BK % bk:
        return f"{dtype} needs BK a multiple of {bk}, not {tile.BK}"
    threads = (tile.BM // tile.WM) * (tile.BN // tile.WN) * 32
    if threads > MAX_THREADS:
        return f"{threads} threads a block (BM/WM * BN/WN warps) exceed {MAX_THREADS}"
    accumulators = tile.WM * tile.WN // 32 * (2 if dual else 1)
    if accumulators > MAX_ACCUMULATORS:
        return (f"a {tile.WM}x{tile.WN} warp tile holds {accumulators} f32 accumulators a thread"
                f"{' (dual GEMM)' if dual else ''}, over {MAX_ACCUMULATORS}: registers would spill")
    if not 2 <= tile.STAGES <= 8:
        return f"STAGES={tile.STAGES}: the pipeline needs 2 to 8 stages"
    if not 1 <= tile.SPLITK <= MAX_SPLITK:
        return f"SPLITK={tile.SPLITK}: K splits into 1 to {MAX_SPLITK} shares"
    if tile.GROUP_M < 1:
        return f"GROUP_M={tile.GROUP_M}: tiles are grouped in 1 or more rows"
    limit = SPLIT_ACCUMULATORS[mma]
    if tile.SPLITK > 1 and accumulators > limit:
        return (f"SPLITK={tile.SPLITK} with {accumulators} f32 accumulators a thread: the last block's sum of the "
                f"partials needs registers besides them, so a split tile holds at most {limit}")
    return None


def gemm_tile_problem(spec: GemmSpec, chip: str) -> str | None:
    """Why ``spec.tile`` cannot make a kernel for ``spec`` on ``chip``; None if it can."""
    if chip not in SHARED_LIMIT:
        return f"unknown chip '{chip}'; expected one of {', '.join(sorted(SHARED_LIMIT))}"
    dtype = spec.a.dtype
    if dtype not in ("f16", "bf16", "f32"):
        return f"inputs of type {dtype}: the GEMM takes f16, bf16 or f32"
    others = [t.dtype for t in (spec.b, spec.b2) if t is not None]
    if any(d != dtype for d in others):
        return f"A is {dtype} but B is {', '.join(others)}: the inputs must share one type"
    problem = _knob_problem(spec.tile, dtype, spec.b2 is not None)
    if problem:
        return problem
    shared = gemm_shared_bytes(spec.tile, dtype, a_layout=spec.a_layout, b_layout=spec.b_layout,
                               dual=spec.b2 is not None)
    if shared > SHARED_LIMIT[chip]:
        return (f"{shared} bytes of shared memory (STAGES * (A tile + B tile{' * 2' if spec.b2 else ''})) "
                f"exceed {chip}'s {SHARED_LIMIT[chip]}")
    return None


def tile_order(linear: int, tiles_m: int, tiles_n: int, group_m: int) -> tuple[int, int]:
    """The (M tile, N tile) of linear tile ``linear`` of a ``tiles_m x tiles_n`` grid of output tiles, in groups
    of ``group_m`` rows of tiles: a group's tiles walk down its rows first, then along N (the last group has
    the rows that are left); ``group_m = 1`` is row by row. Every tile is taken once."""
    in_group = group_m * tiles_n
    first = linear // in_group * group_m
    rows = min(tiles_m - first, group_m)
    within = linear % in_group
    return first + within % rows, within // rows


def emit_tile_order(t: TextBuilder, linear: str, tiles_m: str, tiles_n: str, group_m: int) -> tuple[str, str]:
    """:func:`tile_order` as index arithmetic in the kernel: the (M tile, N tile) values of ``linear``."""
    def op(kind: str, a: str, b: str, hint: str = "v") -> str:
        return t.value(f"arith.{kind} {a}, {b} : index", hint)

    if group_m == 1:
        return op("divui", linear, tiles_n, "tm"), op("remui", linear, tiles_n, "tn")
    in_group = op("muli", t.const(group_m), tiles_n)
    first = op("muli", op("divui", linear, in_group), t.const(group_m), "first")
    rows = op("minui", op("subi", tiles_m, first), t.const(group_m), "rows")
    within = op("remui", linear, in_group)
    return op("addi", first, op("remui", within, rows), "tm"), op("divui", within, rows, "tn")


# -- the kernels and their launches -----------------------------------------------------------------------------------


def emit_gemm(spec: GemmSpec, chip: str) -> list[Kernel]:
    """The kernels of ``spec`` for ``chip``: one, or two where a size symbol decides whether rows are 16-byte
    aligned (each launched under its condition). Raises UnsupportedOp where the tile cannot be used."""
    problem = gemm_tile_problem(spec, chip)
    if problem:
        raise UnsupportedOp(f"GEMM '{spec.name}': {problem}")
    widths = _copy_widths(spec)
    static = {name: w for name, w in widths.items() if isinstance(w, int)}
    dynamic = {name: w for name, w in widths.items() if isinstance(w, str)}
    if not dynamic:
        return [_kernel(spec, chip, spec.name, static, None)]
    test = " and ".join(sorted(set(dynamic.values())))
    fallback = {name: _fallback_width(name, spec) for name in dynamic}
    fast = _kernel(spec, chip, spec.name, static | {name: WIDEST[name] for name in dynamic}, test)
    slow = _kernel(spec, chip, f"{spec.name}_unaligned", static | fallback, f"not ({test})")
    return [fast, slow]


# The widest access per operand in bytes: 16-byte copies of A and B rows, two-element stores of C (counted in
# elements). 0 stands for element-wise loads.
WIDEST = {"a": CHUNK_BYTES, "b": CHUNK_BYTES, "c": 2}


def _copy_width(stride: int, elem_bytes: int) -> int:
    """The widest cp.async (16, 8 or 4 bytes) that rows of ``stride`` elements keep aligned; 0 where only
    element loads do (2-byte elements, odd stride)."""
    return next((w for w in (16, 8, 4) if stride * elem_bytes % w == 0), 0)


def _fallback_width(name: str, spec: GemmSpec) -> int:
    """The access width that holds whatever a size symbol's value: 4-byte copies of 4-byte elements, element
    loads of narrower ones; single-element C stores."""
    if name == "c":
        return 1
    return 4 if ELEMENT_BYTES[spec.a.dtype] == 4 else 0


def _copy_widths(spec: GemmSpec) -> dict[str, int | str]:
    """Per access ("a", "b", "c"): its width (see WIDEST), or, where a size symbol sets its row stride, the
    condition under which the widest holds."""
    elem = ELEMENT_BYTES[spec.a.dtype]
    strides = {"a": spec.k if spec.a_layout == "mk" else spec.m, "b": spec.n if spec.b_layout == "kn" else spec.k,
               "c": spec.n}
    found: dict[str, int | str] = {}
    for name, stride in strides.items():
        multiple = 2 if name == "c" else CHUNK_BYTES // elem
        if isinstance(stride, str):
            found[name] = f"{stride} // {multiple} * {multiple} == {stride}"
        elif name == "c":
            found[name] = 2 if stride % 2 == 0 else 1
        else:
            found[name] = _copy_width(stride, elem)
    return found


def _tensors(spec: GemmSpec) -> list[Tensor]:
    """The kernel's tensor parameters in order, each once: A, B, B2, C's initial tensor, the epilogue's, C."""
    found: list[Tensor] = []
    epilogue = [op.tensor for op in spec.epilogue.operands if op.tensor is not None] if spec.epilogue else []
    for tensor in [spec.a, spec.b, spec.b2, spec.init, *epilogue, spec.c]:
        if tensor is not None and all(t.name != tensor.name for t in found):
            found.append(tensor)
    return found


def _symbols(spec: GemmSpec, tensors: Sequence[Tensor]) -> list[str]:
    """The size symbols the kernel reads, in order of first use."""
    dims: list[Dim] = [spec.m, spec.n, spec.k, *spec.batch] + [d for t in tensors for d in t.shape]
    found: list[str] = []
    for d in dims:  # a temporary's extent may be an expression of them (split-K's counters): not a symbol
        if isinstance(d, str) and d.isidentifier() and d not in found:
            found.append(d)
    return found


def _kernel(spec: GemmSpec, chip: str, name: str, widths: dict[str, int], when: str | None) -> Kernel:
    tensors = _tensors(spec)
    symbols = _symbols(spec, tensors)
    split = spec.tile.SPLITK
    temporaries = splitk_temporaries(spec) if split > 1 else ()
    tensors += list(temporaries)
    writer = GemmWriter(spec, name, widths, tensors, symbols)
    text = writer.write()
    batch = " * ".join(f"({dim_text(d)})" for d in spec.batch) or "1"
    if split > 1:
        batch = str(split) if batch == "1" else f"{batch} * {split}"
    grid = (f"cdiv({dim_text(spec.n)}, {spec.tile.BN})", f"cdiv({dim_text(spec.m)}, {spec.tile.BM})", batch)
    params = tuple(Param("tensor", t.name) for t in tensors) + tuple(Param("size", s) for s in symbols)
    shared = gemm_shared_bytes(spec.tile, spec.a.dtype, a_layout=spec.a_layout, b_layout=spec.b_layout,
                               dual=spec.b2 is not None)
    registers = gemm_tile_allotment(spec, (widths["a"] == 0, widths["b"] == 0))
    return Kernel(name, text, Launch(grid, (writer.threads, 1, 1), shared, params, when),
                  max_registers=registers, temporaries=tuple(temporaries))


# -- the registers it declares -----------------------------------------------------------------------------------------


# Registers a grouped tile order (GROUP_M > 1) adds: its group, row and column arithmetic, held across the K loop
# (a batched 32 x 128 tile of 16 x 64 warps spilled 40 bytes without them).
ALLOT_GROUPED = 8


def gemm_tile_allotment(spec: GemmSpec, loaded: tuple[bool, bool] = (False, False), capped: bool = True) -> int:
    """The ``.maxnreg`` the kernel of ``spec`` declares: :func:`~prism.targets.nvidia_registers.gemm_allotment` of
    its tile (its type picks the kernel; ``loaded``: whether A and B are loaded element by element), ALLOT_EPILOGUE
    more with a fused epilogue or an initial C tensor, ALLOT_GROUPED more for a grouped tile order, and with A
    m-major and B n-major, the hoisted fragments once more (ptxas double-buffers them there)."""
    t = spec.tile
    held = held_registers(spec, loaded)
    need = int(gemm_allotment(t.BM, t.BN, t.BK, t.WM, t.WN, t.SPLITK, spec.a.dtype in TENSOR_CORE_TYPES,
                              2 if spec.b2 is not None else 1, held, capped=False))
    if need < MAX_REGISTERS:  # (the cap of element loads in a split kernel takes it all)
        need += ALLOT_EPILOGUE if spec.epilogue is not None or spec.init is not None else 0
        need += _transposed_b_fragments(spec) if spec.b_layout == "nk" and spec.a_layout == "mk" else 0
        need += ALLOT_GROUPED if t.GROUP_M > 1 else 0
    threads = t.BM // t.WM * (t.BN // t.WN) * 32
    return min(need, int(register_cap(threads))) if capped else need


def _transposed_b_fragments(spec: GemmSpec) -> int:
    """The hoisted fragments as the allotment counts them (tensor cores; FMA: none), rounded to 8."""
    t = spec.tile
    if spec.a.dtype not in TENSOR_CORE_TYPES:
        return 0
    products = 2 if spec.b2 is not None else 1
    return (int(hoisted_fragments(t.WM, t.WN, t.BK, products)) + 7) // 8 * 8


def held_registers(spec: GemmSpec, loaded: tuple[bool, bool]) -> int:
    """Registers of a thread's element-loaded chunks (4 a 16-byte chunk): held across the math where the
    kernel's ``hold_loads`` decides so, else loaded together by the unrolled copy loop before their stores."""
    t = spec.tile
    a, b = operand_tiles(t, spec.a.dtype, spec.a_layout, spec.b_layout)
    threads = t.BM // t.WM * (t.BN // t.WN) * 32
    products = 2 if spec.b2 is not None else 1
    held = 0
    for stored, is_loaded, count in ((a, loaded[0], 1), (b, loaded[1], products)):
        if is_loaded:
            held += count * -(-stored.rows * stored.chunks_per_row // threads) * CHUNK_BYTES // 4
    return held


# -- the kernel text --------------------------------------------------------------------------------------------------


@dataclass
class _Operand:
    """One input's tile: where it comes from in global memory and where it goes in shared memory."""

    tensor: str  # the SSA name of its memref parameter
    stored: StoredTile
    row_dim: str  # the GEMM dimension ("m", "n", "k") along the stored tile's rows, and along its columns
    col_dim: str
    rows: str  # SSA extents of those dimensions
    cols: str
    width: int  # bytes a cp.async copies (16, 8, 4); 0: element loads
    ring: str = ""  # the SSA name of its shared-memory ring (STAGES slots)
    batch_base: str = ""  # the element offset of the block's batch index


class GemmWriter:
    """Writes one kernel of a GEMM spec (see the module's docstring for the scheme)."""

    def __init__(self, spec: GemmSpec, name: str, widths: dict[str, int], tensors: Sequence[Tensor],
                 symbols: Sequence[str]) -> None:
        self.spec, self.name, self.tile, self.widths = spec, name, spec.tile, widths
        self.tensors, self.symbols = tensors, symbols
        self.dtype = spec.a.dtype
        self.mma = self.dtype in TENSOR_CORE_TYPES
        self.warps_n = self.tile.BN // self.tile.WN
        self.threads = (self.tile.BM // self.tile.WM) * self.warps_n * 32
        self.t = TextBuilder()
        self.ssa = {t.name: f"%t{i}" for i, t in enumerate(tensors)}
        self.lanes: dict[str, tuple[str, str]] = {}  # per ring: this lane's ldmatrix row offset and chunk

    # -- index arithmetic ---------------------------------------------------------------------------------------

    def dim(self, d: Dim) -> str:
        """A dimension as an index value."""
        return self.t.const(d) if isinstance(d, int) else f"%sz_{re.sub(r'[^A-Za-z0-9_]', '_', d)}"

    def op(self, name: str, a: str, b: str | int, hint: str = "x") -> str:
        """``arith.<name> a, b : index`` (an int ``b`` is an index constant)."""
        b = self.t.const(b) if isinstance(b, int) else b
        return self.t.value(f"arith.{name} {a}, {b} : index", hint)

    def cmp(self, pred: str, a: str, b: str | int) -> str:
        b = self.t.const(b) if isinstance(b, int) else b
        return self.t.value(f"arith.cmpi {pred}, {a}, {b} : index", "p")

    def both(self, p: str, q: str) -> str:
        return self.t.value(f"arith.andi {p}, {q} : i1", "p")

    def select(self, p: str, a: str, b: str, typ: str = "index") -> str:
        return self.t.value(f"arith.select {p}, {a}, {b} : {typ}", "s")

    def linear(self, indices: Sequence[str], shape: Sequence[Dim]) -> str:
        """The row-major offset of ``indices`` in ``shape``."""
        offset = self.t.const(0)
        for i, (index, d) in enumerate(zip(indices, shape, strict=True)):
            offset = self.op("addi", self.op("muli", offset, self.dim(d)) if i else offset, index)
        return offset

    # -- the kernel -----------------------------------------------------------------------------------------------

    def write(self) -> str:
        """The ``gpu.func`` text."""
        t = self.t
        args = [f"{self.ssa[x.name]}: {x.memref}" for x in self.tensors] + [f"{self.dim(s)}: index"
                                                                                for s in self.symbols]
        header = (f"gpu.func @{self.name}({', '.join(args)}) kernel attributes "
                  f"{{known_block_size = array<i32: {self.threads}, 1, 1>}}")
        with t.region(header):
            self.setup()
            accs = self.mainloop()
            if self.tile.SPLITK > 1:
                self.split_epilogue(accs)
            else:
                self.epilogue(accs)
            t.add("gpu.return")
        return t.function_text()

    def setup(self) -> None:
        """Thread, warp and block coordinates; the batch index; the operands and their rings."""
        t, tile, spec = self.t, self.tile, self.spec
        self.tid = t.value("gpu.thread_id x", "tid")
        self.lane = self.op("remui", self.tid, 32, "lane")
        warp = self.op("divui", self.tid, 32, "warp")
        self.warp_m = self.op("muli", self.op("divui", warp, self.warps_n), tile.WM, "wm")
        self.warp_n = self.op("muli", self.op("remui", warp, self.warps_n), tile.WN, "wn")
        self.tile_m, self.tile_n = self.tile_indices()
        self.m0 = self.op("muli", self.tile_m, tile.BM, "m0")
        self.n0 = self.op("muli", self.tile_n, tile.BN, "n0")
        self.z = t.value("gpu.block_id z", "bz")
        if tile.SPLITK > 1:  # z = batch index * SPLITK + share
            self.share = self.op("remui", self.z, tile.SPLITK, "share")
            self.z = self.op("divui", self.z, tile.SPLITK, "bz")
        self.batch = self.batch_indices(self.z)
        self.sizes = {"m": self.dim(spec.m), "n": self.dim(spec.n), "k": self.dim(spec.k)}
        self.operands = self.make_operands()
        self.c_rows = self.op("muli", self.z, self.sizes["m"], "crow")  # C's first row of the batch index
        if self.mma:  # defined here, before the loops that use them
            for op in self.operands:
                self.lane_geometry(op)

    def tile_indices(self) -> tuple[str, str]:
        """The block's (M tile, N tile): grid y and x, or with GROUP_M > 1 the grouped order's tile of the linear
        index ``y * N tiles + x``."""
        t, tile = self.t, self.tile
        by, bx = t.value("gpu.block_id y", "by"), t.value("gpu.block_id x", "bx")
        if tile.GROUP_M == 1:
            return by, bx
        tiles_m = self.op("ceildivui", self.dim(self.spec.m), tile.BM)
        tiles_n = self.op("ceildivui", self.dim(self.spec.n), tile.BN)
        return emit_tile_order(t, self.op("addi", self.op("muli", by, tiles_n), bx), tiles_m, tiles_n, tile.GROUP_M)

    def batch_indices(self, z: str) -> list[str]:
        """The batch indices of grid index ``z``, outermost first."""
        found: list[str] = []
        for d in reversed(self.spec.batch):
            found.insert(0, self.op("remui", z, self.dim(d), "b"))
            z = self.op("divui", z, self.dim(d))
        return found

    def make_operands(self) -> list[_Operand]:
        """A, B (and B2): their stored tiles, extents, batch offsets and rings in the dynamic shared memory."""
        spec, t = self.spec, self.t
        a_tile, b_tile = operand_tiles(self.tile, self.dtype, spec.a_layout, spec.b_layout)
        a_dims = ("m", "k") if spec.a_layout == "mk" else ("k", "m")
        b_dims = ("n", "k") if spec.b_layout == "nk" else ("k", "n")
        made = [(spec.a, a_tile, a_dims, self.widths["a"])] + [
            (b, b_tile, b_dims, self.widths["b"]) for b in (spec.b, spec.b2) if b is not None]
        dyn = self.smem = t.value(f"gpu.dynamic_shared_memory : memref<?xi8, {WS}>", "smem")
        operands, offset = [], 0
        elem = ELEMENT_BYTES[self.dtype]
        for tensor, stored, (rd, cd), width in made:
            op = _Operand(self.ssa[tensor.name], stored, rd, cd, self.sizes[rd], self.sizes[cd], width)
            ring_type = f"memref<{self.tile.STAGES * stored.elems}x{self.dtype}, {WS}>"
            op.ring = t.value(f"memref.view {dyn}[{t.const(offset)}][] : memref<?xi8, {WS}> to {ring_type}", "ring")
            op.batch_base = self.op("muli", self.z, self.op("muli", op.rows, op.cols), "base")
            operands.append(op)
            offset += self.tile.STAGES * stored.elems * elem
        self.ring_bytes = offset
        return operands

    # -- the pipeline -------------------------------------------------------------------------------------------

    def mainloop(self) -> list[str]:
        """The prologue's STAGES - 1 tiles, then per K tile: wait for it, start the copies of the tile STAGES - 1
        ahead into the slot freed by the last step, compute. Returns the accumulators after the loop."""
        t, stages = self.t, self.tile.STAGES
        if self.tile.SPLITK > 1:
            ktiles = self.share_steps()
        else:
            ktiles = self.op("ceildivui", self.sizes["k"], self.tile.BK, "ktiles")
        for s in range(stages - 1):
            self.start_tile(t.const(s), t.const(s), hold=False)
        init, typ = self.initial_accumulators()
        with t.for_carried(t.const(0), ktiles, t.const(1), init, typ, ("kt", "acc", "accs")) as loop:
            t.add(f"nvvm.cp.async.wait.group {stages - 2}")
            t.add("gpu.barrier")
            ahead = self.op("addi", loop.iv, stages - 1)
            slot = self.op("remui", ahead, stages, "slot")
            pending = self.start_tile(ahead, slot, hold=self.hold_loads())
            base = self.op("remui", loop.iv, stages, "slot")
            accs = self.compute_mma(loop.args, base) if self.mma else self.compute_fma(loop.args, base)
            self.finish_tile(pending)
            t.yield_(accs, [typ] * len(accs))
        t.add("nvvm.cp.async.wait.group 0")
        return loop.results

    def initial_accumulators(self, start: float | None = None) -> tuple[list[str], str]:
        """The accumulators' start (``start``, by default ``init_value``, for the first product, zero for a
        dual's second) and type. A split-K share starts from zero."""
        count = self.tile.WM * self.tile.WN // 32
        typ = "vector<4xf32>" if self.mma else "f32"
        count = count // 4 if self.mma else count
        if start is None:
            start = 0.0 if self.tile.SPLITK > 1 else self.spec.init_value
        values = []
        for value in (start, 0.0)[: 2 if self.spec.b2 is not None else 1]:
            literal = f"dense<{float(value):.9e}>" if self.mma else f"{float(value):.9e}"
            values += [self.t.value(f"arith.constant {literal} : {typ}", "zero")] * count
        return values, typ

    def start_tile(self, k_tile: str, slot: str, hold: bool) -> list[tuple[_Operand, list[tuple[str, str]]]]:
        """Start copying K tile ``k_tile`` of every operand into ``slot``: cp.async where rows allow (one group),
        element loads for the others. With ``hold``, the loaded chunks are returned, to be stored by
        :meth:`finish_tile` after the math; without, each is stored as soon as loaded. A loop over each
        thread's copies keeps one copy's addresses live at a time."""
        t, pending = self.t, []
        for op in self.operands:
            count = self.copies_per_thread(op.stored)
            if op.width or not hold:
                with t.for_(t.const(0), t.const(count), t.const(1), "cp") as i:
                    src, dst, n = self.chunk(op, k_tile, slot, i)
                    if op.width:
                        self.async_copies(op, src, dst, n)
                    else:
                        self.finish_tile([(op, [(dst, self.load_chunk(op, src, n))])])
            else:
                chunks = [self.chunk(op, k_tile, slot, i) for i in range(count)]
                pending.append((op, [(dst, self.load_chunk(op, src, n)) for src, dst, n in chunks]))
        t.add("nvvm.cp.async.commit.group")
        return pending

    def finish_tile(self, pending: list[tuple[_Operand, list[tuple[str, str]]]]) -> None:
        """Store the element-loaded chunks into their slot (16-byte aligned stores into shared memory)."""
        for op, chunks in pending:
            for dst, value in chunks:
                self.t.add(f"vector.store {value}, {op.ring}[{dst}] {{alignment = {CHUNK_BYTES}}} : "
                           f"{self.ring_type(op)}, vector<{op.stored.vec}x{self.dtype}>")

    def hold_loads(self) -> bool:
        """Whether the element loads of the next tile stay in registers while the block computes (hiding their
        latency): only while they and the accumulators fit in HELD_REGISTERS."""
        held = sum(self.copies_per_thread(op.stored) * CHUNK_BYTES // 4 for op in self.operands if not op.width)
        accumulators = self.tile.WM * self.tile.WN // 32 * (len(self.operands) - 1)
        return held + accumulators <= HELD_REGISTERS

    def copies_per_thread(self, stored: StoredTile) -> int:
        return -(-stored.rows * stored.chunks_per_row // self.threads)

    def ring_type(self, op: _Operand) -> str:
        return f"memref<{self.tile.STAGES * op.stored.elems}x{self.dtype}, {WS}>"

    def chunk(self, op: _Operand, k_tile: str, slot: str, i: int | str) -> tuple[str, str, str]:
        """Copy ``i`` of this thread: the source's element offset (0 where nothing is read), the destination's
        offset in the ring and the count of elements in range (0 to vec)."""
        stored, per_row = op.stored, op.stored.chunks_per_row
        step = i * self.threads if isinstance(i, int) else self.op("muli", i, self.threads)
        q = self.op("addi", self.tid, step, "q")
        total = stored.rows * per_row
        if self.copies_per_thread(stored) * self.threads > total:  # threads past the tile copy its last chunk again
            q = self.op("minui", q, total - 1, "q")
        row, col = self.op("divui", q, per_row, "r"), self.op("remui", q, per_row, "ch")
        if self.tile.SPLITK > 1:  # the share's steps, from its first
            k_tile = self.op("addi", k_tile, self.k_first)
        origin = {"m": self.m0, "n": self.n0, "k": self.op("muli", k_tile, self.tile.BK)}
        grow = self.op("addi", origin[op.row_dim], row, "gr")
        gcol = self.op("addi", origin[op.col_dim], self.op("muli", col, stored.vec), "gc")
        rows, cols = self.read_extent(op.row_dim, op.rows), self.read_extent(op.col_dim, op.cols)
        inside = self.both(self.cmp("ult", grow, rows), self.cmp("ult", gcol, cols))
        left = self.op("minui", self.op("subi", cols, gcol), stored.vec)
        count = self.select(inside, left, self.t.const(0))
        src = self.op("addi", op.batch_base, self.op("addi", self.op("muli", grow, op.cols), gcol))
        src = self.select(inside, src, self.t.const(0))
        dst = self.op("addi", self.op("muli", slot, stored.elems), self.stored_offset(stored, row, col))
        return src, dst, count

    def read_extent(self, dim: str, extent: str) -> str:
        """How far the copies read along ``dim``: the tensor's extent, or for K in a split-K share its end."""
        return self.k_end if dim == "k" and self.tile.SPLITK > 1 else extent

    def stored_offset(self, stored: StoredTile, row: str, chunk: str) -> str:
        """The element offset of ``chunk`` of ``row`` in a slot, swizzled (see :attr:`StoredTile.swizzle`)."""
        if stored.swizzle is not None:
            shift, mask = stored.swizzle
            chunk = self.op("xori", chunk, self.op("andi", self.op("shrui", row, shift), mask))
        return self.op("addi", self.op("muli", row, stored.row_len), self.op("muli", chunk, stored.vec))

    def async_copies(self, op: _Operand, src: str, dst: str, count: str) -> None:
        """A chunk as cp.async copies of ``op.width`` bytes (16 bypassing L1), each reading its part of the
        ``count`` elements in range and zero-filling the rest (committed as a group by the caller)."""
        t, per_copy = self.t, op.width // ELEMENT_BYTES[self.dtype]
        for first in range(0, op.stored.vec, per_copy):
            part, at, to = count, src, dst
            if first:
                inside = self.cmp("ugt", count, first)
                part = self.select(inside, self.op("subi", count, first), t.const(0))
                at, to = self.select(inside, self.op("addi", src, first), t.const(0)), self.op("addi", dst, first)
            if per_copy < op.stored.vec:
                part = self.op("minui", part, per_copy)
            cache = " {bypassL1}" if op.width == CHUNK_BYTES else ""
            t.value(f"nvgpu.device_async_copy {op.tensor}[{at}], {op.ring}[{to}], {per_copy}, {part}{cache} "
                    f": memref<?x{self.dtype}> to {self.ring_type(op)}", "tok")

    def load_chunk(self, op: _Operand, src: str, count: str) -> str:
        """A chunk's ``vec`` elements loaded one by one, those from ``count`` on zero: a vector."""
        t, zero = self.t, self.t.value(f"arith.constant 0.0 : {self.dtype}", "z")
        values = []
        for e in range(op.stored.vec):
            with t.if_(self.cmp("ult", t.const(e), count), [self.dtype], "e") as (value,):
                t.yield_([t.value(f"memref.load {op.tensor}[{self.op('addi', src, e)}] : memref<?x{self.dtype}>",
                                  "ld")], [self.dtype])
            with t.else_():
                t.yield_([zero], [self.dtype])
            values.append(value)
        return t.value(f"vector.from_elements {', '.join(values)} : vector<{op.stored.vec}x{self.dtype}>", "chunk")

    # -- tensor cores -------------------------------------------------------------------------------------------

    def compute_mma(self, accs: list[str], slot: str) -> list[str]:
        """BK / 16 steps of the warp's (WM / 16) x (WN / 8) m16n8k16 products on one slot."""
        accs = list(accs)
        tiles_m, tiles_n = self.tile.WM // MMA_M, self.tile.WN // MMA_N
        per_product = tiles_m * tiles_n
        for ks in range(self.tile.BK // MMA_K):
            a = [self.ldmatrix(self.operands[0], slot, ks, mi) for mi in range(tiles_m)]
            for p, op in enumerate(self.operands[1:]):
                b = [reg for nj in range(tiles_n // 2) for reg in self.b_pairs(op, slot, ks, nj)]
                for mi in range(tiles_m):
                    for ni in range(tiles_n):
                        index = p * per_product + mi * tiles_n + ni
                        accs[index] = self.mma_sync(a[mi], b[ni], accs[index])
        return accs

    def lane_geometry(self, op: _Operand) -> tuple[str, str]:
        """This lane's ``ldmatrix`` row (as an element offset in the slot) and chunk (XORed with its row's
        swizzle), for a 16x16 piece of ``op`` at the slot's origin.

        Lane ``l`` addresses row ``l % 8`` of 8x8 matrix ``l / 8``; the four
        matrices are A's (m 0-7, k 0-7), (m 8-15, k 0-7), (m 0-7, k 8-15),
        (m 8-15, k 8-15), and B's (n 0-7, k 0-7), (n 0-7, k 8-15),
        (n 8-15, k 0-7), (n 8-15, k 8-15), so that the four registers are
        the mma operands in order. Transposed tiles (A km, B kn) lie k-major.
        """
        if op.ring in self.lanes:
            return self.lanes[op.ring]
        low = self.op("remui", self.lane, 8)
        quad, half = self.op("divui", self.lane, 16), self.op("remui", self.op("divui", self.lane, 8), 2)
        if op is self.operands[0] and op.row_dim == "m":
            row, chunk = self.op("remui", self.lane, 16), quad
        elif op is self.operands[0] or op.row_dim == "n":
            row, chunk = self.op("addi", low, self.op("muli", quad, 8)), half
        else:
            row, chunk = self.op("addi", low, self.op("muli", half, 8)), quad
        if op.stored.swizzle is not None:
            shift, mask = op.stored.swizzle
            chunk = self.op("xori", chunk, self.op("andi", self.op("shrui", low, shift), mask))
        self.lanes[op.ring] = (self.op("muli", row, op.stored.row_len), chunk)
        return self.lanes[op.ring]

    def fragment_address(self, op: _Operand, slot: str, row0: str | int, chunk0: str | int) -> str:
        """The element offset this lane passes to ldmatrix for the 16x16 piece at (``row0``, chunk ``chunk0``)
        of the slot; ``chunk0`` is even, so the lane's chunk (0 or 1) and the swizzle XOR into it."""
        row_off, lane_chunk = self.lane_geometry(op)
        chunk0 = self.t.const(chunk0) if isinstance(chunk0, int) else chunk0
        chunk = self.op("xori", chunk0, lane_chunk)
        row0 = self.t.const(row0) if isinstance(row0, int) else row0
        offset = self.op("addi", self.op("muli", row0, op.stored.row_len), row_off)
        offset = self.op("addi", offset, self.op("muli", chunk, op.stored.vec))
        return self.op("addi", self.op("muli", slot, op.stored.elems), offset)

    def ldsm(self, op: _Operand, address: str, transpose: bool) -> list[str]:
        """One ldmatrix.x4: four registers of two elements, as mma operands (bf16 pairs packed in i32)."""
        t, elt = self.t, self.dtype
        attrs = f"{{numTiles = 4 : i32, transpose = {str(transpose).lower()}}}"
        frag = t.value(f"nvgpu.ldmatrix {op.ring}[{address}] {attrs} : {self.ring_type(op)} -> vector<4x2x{elt}>",
                       "frag")
        regs = []
        for i in range(4):
            reg = t.value(f"vector.extract {frag}[{i}] : vector<2x{elt}> from vector<4x2x{elt}>", "reg")
            if elt == "bf16":
                packed = t.value(f"vector.bitcast {reg} : vector<2xbf16> to vector<1xi32>", "reg")
                reg = t.value(f"vector.extract {packed}[0] : i32 from vector<1xi32>", "reg")
            regs.append(reg)
        return regs

    def ldmatrix(self, op: _Operand, slot: str, ks: int, mi: int) -> list[str]:
        """A's fragment for m tile ``mi`` of the warp, k step ``ks``."""
        if op.row_dim == "m":
            row0 = self.op("addi", self.warp_m, mi * MMA_M)
            return self.ldsm(op, self.fragment_address(op, slot, row0, 2 * ks), False)
        chunk0 = self.op("divui", self.op("addi", self.warp_m, mi * MMA_M), op.stored.vec)
        return self.ldsm(op, self.fragment_address(op, slot, ks * MMA_K, chunk0), True)

    def b_pairs(self, op: _Operand, slot: str, ks: int, nj: int) -> list[list[str]]:
        """B's fragments of n tiles ``2 nj`` and ``2 nj + 1``, k step ``ks``: two pairs of registers."""
        if op.row_dim == "n":
            row0 = self.op("addi", self.warp_n, nj * 2 * MMA_N)
            regs = self.ldsm(op, self.fragment_address(op, slot, row0, 2 * ks), False)
        else:
            chunk0 = self.op("divui", self.op("addi", self.warp_n, nj * 2 * MMA_N), op.stored.vec)
            regs = self.ldsm(op, self.fragment_address(op, slot, ks * MMA_K, chunk0), True)
        return [regs[:2], regs[2:]]

    def mma_sync(self, a: list[str], b: list[str], acc: str) -> str:
        """``acc + a * b`` by one m16n8k16 mma.sync (f32 accumulators): a vector<4xf32>."""
        t = self.t
        c = [t.value(f"vector.extract {acc}[{i}] : f32 from vector<4xf32>", "ci") for i in range(4)]
        reg = "i32" if self.dtype == "bf16" else f"vector<2x{self.dtype}>"
        out = t.value(
            f"nvvm.mma.sync A[{', '.join(a)}] B[{', '.join(b)}] C[{', '.join(c)}] "
            f"{{layoutA = #nvvm.mma_layout<row>, layoutB = #nvvm.mma_layout<col>, "
            f"multiplicandAPtxType = #nvvm.mma_type<{self.dtype}>, "
            f"multiplicandBPtxType = #nvvm.mma_type<{self.dtype}>, "
            f"shape = #nvvm.shape<m = 16, n = 8, k = 16>}} : ({reg}, {reg}, f32) -> !llvm.struct<(f32, f32, f32, f32)>",
            "mma")
        d = [t.value(f"llvm.extractvalue {out}[{i}] : !llvm.struct<(f32, f32, f32, f32)>", "d") for i in range(4)]
        return t.value(f"vector.from_elements {', '.join(d)} : vector<4xf32>", "acc")

    # -- FMAs (f32) -----------------------------------------------------------------------------------------------

    def compute_fma(self, accs: list[str], slot: str) -> list[str]:
        """BK steps of the lane's (WM / 4) x (WN / 8) outer products on one slot."""
        t = self.t
        with t.for_carried(t.const(0), t.const(self.tile.BK), t.const(1), accs, "f32", ("kk", "a", "as")) as loop:
            tm, tn = self.tile.WM // 4, self.tile.WN // 8
            rows = [self.fma_value(self.operands[0], slot, loop.iv, self.lane_row(i)) for i in range(tm)]
            out = list(loop.args)
            for p, op in enumerate(self.operands[1:]):
                cols = [self.fma_value(op, slot, loop.iv, self.lane_col(j)) for j in range(tn)]
                for i in range(tm):
                    for j in range(tn):
                        index = p * tm * tn + i * tn + j
                        out[index] = t.value(f"math.fma {rows[i]}, {cols[j]}, {out[index]} : f32", "a")
            t.yield_(out, ["f32"] * len(out))
        return loop.results

    def lane_row(self, i: int) -> str:
        """Row ``i`` of this lane's tile within the block tile: 4 lanes down a column, rows 4 apart."""
        return self.op("addi", self.warp_m, self.op("addi", self.op("divui", self.lane, 8), 4 * i))

    def lane_col(self, j: int) -> str:
        """Column ``j`` of this lane's tile within the block tile: 8 lanes along a row, columns 8 apart."""
        return self.op("addi", self.warp_n, self.op("addi", self.op("remui", self.lane, 8), 8 * j))

    def fma_value(self, op: _Operand, slot: str, k: str, other: str) -> str:
        """The element of ``op``'s slot at k ``k`` and row or column ``other`` of the block tile."""
        row, col = (other, k) if op.col_dim == "k" else (k, other)
        index = self.op("addi", self.op("muli", row, op.stored.row_len), col)
        index = self.op("addi", self.op("muli", slot, op.stored.elems), index)
        return self.t.value(f"memref.load {op.ring}[{index}] : {self.ring_type(op)}", "ld")

    # -- the epilogue -------------------------------------------------------------------------------------------

    def epilogue(self, accs: list[str]) -> None:
        """Each of the thread's elements of C: its value, cast and stored under the M and N masks."""
        per_product = self.tile.WM * self.tile.WN // 32 // (4 if self.mma else 1)
        second = accs[per_product:] if self.spec.b2 is not None else None
        if self.mma:
            self.epilogue_mma(accs[:per_product], second)
        else:
            self.epilogue_fma(accs[:per_product], second)

    def epilogue_mma(self, accs: list[str], second: list[str] | None) -> None:
        """Accumulator ``i`` of tile (mi, ni) holds row ``lane / 4 + 8 (i / 2)``, column ``2 (lane % 4) + i % 2``:
        each pair of columns is stored at once."""
        t, tiles_n = self.t, self.tile.WN // MMA_N
        group = self.op("divui", self.lane, 4)
        pair = self.op("muli", self.op("remui", self.lane, 4), 2)
        for index, acc in enumerate(accs):
            mi, ni = divmod(index, tiles_n)
            col = self.op("addi", self.n0, self.op("addi", self.warp_n, self.op("addi", pair, ni * MMA_N)), "col")
            for half in range(2):
                row = self.op("addi", self.m0, self.op("addi", self.warp_m,
                                                       self.op("addi", group, mi * MMA_M + 8 * half)), "row")
                values = []
                for j in range(2):
                    col_j = self.op("addi", col, j)
                    extract = [t.value(f"vector.extract {v}[{2 * half + j}] : f32 from vector<4xf32>", "e")
                               for v in (acc, second[index] if second else None) if v is not None]
                    values.append(self.element(row, col_j, extract))
                self.store_pair(row, col, values)

    def epilogue_fma(self, accs: list[str], second: list[str] | None) -> None:
        """Accumulator (i, j) holds the lane's row ``i`` and column ``j``: one store each, coalesced by lanes. The
        epilogue's loads stay under the mask, so that they are not all hoisted next to the 128 accumulators."""
        tn = self.tile.WN // 8
        for index, acc in enumerate(accs):
            i, j = divmod(index, tn)
            row = self.op("addi", self.m0, self.lane_row(i), "row")
            col = self.op("addi", self.n0, self.lane_col(j), "col")
            with self.t.if_(self.both(self.cmp("ult", row, self.sizes["m"]), self.cmp("ult", col, self.sizes["n"]))):
                self.store(row, col, self.element(row, col, [acc] + ([second[index]] if second else [])), 1)

    def element(self, row: str, col: str, accs: list[str]) -> str:
        """C's value at (``row``, ``col``) from the accumulators, in C's type. Indices are clamped into C, so
        the loads of an element that is not stored stay in bounds."""
        spec, t = self.spec, self.t
        row = self.op("minui", row, self.op("subi", self.sizes["m"], 1))
        col = self.op("minui", col, self.op("subi", self.sizes["n"], 1))
        point = [*self.batch, row, col]
        acc = accs[0]
        if spec.init is not None:
            start = self.load_at(spec.init, point, tuple(range(len(point))))
            acc = t.value(f"arith.addf {acc}, {convert(t, start, spec.init.dtype, 'f32')} : f32", "acc")
        if spec.epilogue is None:
            return convert(t, acc, "f32", spec.c.dtype)
        values = []
        for operand in spec.epilogue.operands:
            if operand.kind == "acc":
                values.append(acc)
            elif operand.kind == "acc2":
                values.append(accs[1])
            else:
                values.append(self.load_at(operand.tensor, point, operand.dims))
        result = spec.epilogue.emit(t, values, point)
        return convert(t, result, spec.epilogue.dtype, spec.c.dtype)

    def load_at(self, tensor: Tensor, point: Sequence[str], dims: Sequence[int]) -> str:
        """``tensor``'s element at the point's indices ``dims``."""
        offset = self.linear([point[d] for d in dims], tensor.shape)
        return self.t.value(f"memref.load {self.ssa[tensor.name]}[{offset}] : {tensor.memref}", "ld")

    def store(self, row: str, col: str, value: str, width: int) -> None:
        c = self.spec.c
        offset = self.op("addi", self.op("muli", self.op("addi", self.c_rows, row), self.sizes["n"]), col)
        if width == 1:
            self.t.add(f"memref.store {value}, {self.ssa[c.name]}[{offset}] : {c.memref}")
        else:
            self.t.add(f"vector.store {value}, {self.ssa[c.name]}[{offset}] "
                       f"{{alignment = {width * ELEMENT_BYTES[c.dtype]}}} : {c.memref}, vector<{width}x{c.dtype}>")

    def store_pair(self, row: str, col: str, values: list[str]) -> None:
        """Columns ``col`` and ``col + 1`` of ``row``: one two-element store where both are inside C and its
        rows keep pairs aligned, otherwise each under its own mask."""
        t, c = self.t, self.spec.c
        row_in = self.cmp("ult", row, self.sizes["m"])
        col_in = [self.cmp("ult", col, self.sizes["n"]), self.cmp("ult", self.op("addi", col, 1), self.sizes["n"])]
        if self.widths["c"] == 2:
            with t.if_(self.both(row_in, col_in[1])):
                self.store(row, col, t.value(f"vector.from_elements {', '.join(values)} : vector<2x{c.dtype}>",
                                             "pair"), 2)
            with t.else_(), t.if_(self.both(row_in, col_in[0])):
                self.store(row, col, values[0], 1)
            return
        for j in range(2):
            with t.if_(self.both(row_in, col_in[j])):
                self.store(row, self.op("addi", col, j), values[j], 1)

    # -- split-K --------------------------------------------------------------------------------------------------

    def share_steps(self) -> str:
        """This block's share of K (see the module docstring): sets its first BK step and the end of K its
        copies read; the count of its steps."""
        bk = self.tile.BK
        ktiles = self.op("ceildivui", self.sizes["k"], bk, "ktiles")
        per = self.op("ceildivui", self.op("ceildivui", self.sizes["k"], self.tile.SPLITK), bk, "per")
        self.k_first = self.op("minui", self.op("muli", self.share, per), ktiles, "kfirst")
        last = self.op("minui", self.op("addi", self.k_first, per), ktiles, "klast")
        self.k_end = self.op("minui", self.op("muli", last, bk), self.sizes["k"], "kend")
        return self.op("subi", last, self.k_first, "steps")

    def held_runs(self, count: int) -> list[tuple[int, list[int], str, str]]:
        """The runs of adjacent columns of C the thread holds in ``count`` accumulators: (accumulator, its
        vector positions, [] for a scalar one; row and first column in C)."""
        runs = []
        per_product = self.tile.WM * self.tile.WN // 32 // (4 if self.mma else 1)
        group = self.op("divui", self.lane, 4)
        pair = self.op("muli", self.op("remui", self.lane, 4), 2)
        for index in range(count):
            local = index % per_product
            if not self.mma:
                i, j = divmod(local, self.tile.WN // 8)
                runs.append((index, [], self.op("addi", self.m0, self.lane_row(i), "row"),
                             self.op("addi", self.n0, self.lane_col(j), "col")))
                continue
            mi, ni = divmod(local, self.tile.WN // MMA_N)
            col = self.op("addi", self.n0, self.op("addi", self.warp_n, self.op("addi", pair, ni * MMA_N)), "col")
            for half in range(2):
                row = self.op("addi", self.m0, self.op("addi", self.warp_m,
                                                       self.op("addi", group, mi * MMA_M + 8 * half)), "row")
                runs.append((index, [2 * half, 2 * half + 1], row, col))
        return runs

    def partial_base(self, index: int, share: str) -> str:
        """The partials' offset of slab (product of accumulator ``index``, ``share``) plus C's batch rows."""
        per_product = self.tile.WM * self.tile.WN // 32 // (4 if self.mma else 1)
        slab = self.op("addi", share, index // per_product * self.tile.SPLITK)
        return self.op("addi", self.op("muli", slab, self.slab_size), self.op("muli", self.c_rows, self.row_pitch))

    def split_epilogue(self, accs: list[str]) -> None:
        """Store this share's partial, count it; the tile's last block sums the partials in share order,
        runs the epilogue and resets the counter."""
        t = self.t
        self.row_pitch = self.op("muli", self.op("ceildivui", self.sizes["n"], self.tile.BN), self.tile.BN, "pitch")
        size = self.op("muli", self.sizes["m"], self.row_pitch)
        for d in self.spec.batch:
            size = self.op("muli", size, self.dim(d))
        self.slab_size = size
        runs = self.held_runs(len(accs))
        self.store_partials(accs, runs)
        last, counter = self.count_share()
        with t.if_(last):
            t.add('llvm.fence syncscope("device") acq_rel')
            self.epilogue(self.sum_partials(len(accs), runs))
            with t.if_(self.cmp("eq", self.tid, 0)):
                zero = t.value("arith.constant 0 : i32", "zero")
                t.add(f"memref.store {zero}, {self.ssa[self.workspace[1].name]}[{counter}] : memref<?xi32>")

    @property
    def workspace(self) -> tuple[Tensor, Tensor]:
        return self.tensors[-2], self.tensors[-1]

    def store_partials(self, accs: list[str], runs: list[tuple[int, list[int], str, str]]) -> None:
        """Each held value of a row inside C into the partials, whose rows reach the last N tile's end (so that
        columns need no mask); a pair of columns in one 8-byte store."""
        t, ws = self.t, self.ssa[self.workspace[0].name]
        for index, lanes, row, col in runs:
            values = [t.value(f"vector.extract {accs[index]}[{j}] : f32 from vector<4xf32>", "e")
                      for j in lanes] or [accs[index]]
            at = self.op("addi", self.partial_base(index, self.share),
                         self.op("addi", self.op("muli", row, self.row_pitch), col))
            with t.if_(self.cmp("ult", row, self.sizes["m"])):
                if len(values) == 2:
                    pair = t.value(f"vector.from_elements {values[0]}, {values[1]} : vector<2xf32>", "pair")
                    t.add(f"vector.store {pair}, {ws}[{at}] {{alignment = 8}} : memref<?xf32>, vector<2xf32>")
                else:
                    t.add(f"memref.store {values[0]}, {ws}[{at}] : memref<?xf32>")

    def count_share(self) -> tuple[str, str]:
        """Fence, barrier, thread 0's count of the tile's shares, barrier: whether this block is the last (an
        i1), and the tile's counter index."""
        t, counters = self.t, self.ssa[self.workspace[1].name]
        t.add('llvm.fence syncscope("device") acq_rel')
        t.add("gpu.barrier")
        flag = t.value(f"memref.view {self.smem}[{t.const(self.ring_bytes)}][] : memref<?xi8, {WS}> to "
                       f"memref<1xi32, {WS}>", "flag")
        tiles_m = self.op("ceildivui", self.sizes["m"], self.tile.BM)
        tiles_n = self.op("ceildivui", self.sizes["n"], self.tile.BN)
        tile = self.op("addi", self.op("muli", self.z, tiles_m), self.tile_m)
        tile = self.op("addi", self.op("muli", tile, tiles_n), self.tile_n, "tile")
        with t.if_(self.cmp("eq", self.tid, 0)):
            one = t.value("arith.constant 1 : i32", "one")
            old = t.value(f"memref.atomic_rmw addi {one}, {counters}[{tile}] : (i32, memref<?xi32>) -> i32", "old")
            t.add(f"memref.store {old}, {flag}[{t.const(0)}] : memref<1xi32, {WS}>")
        t.add("gpu.barrier")
        seen = t.value(f"memref.load {flag}[{t.const(0)}] : memref<1xi32, {WS}>", "seen")
        last = t.value(f"arith.constant {self.tile.SPLITK - 1} : i32", "k")
        return t.value(f"arith.cmpi eq, {seen}, {last} : i32", "last"), tile

    def sum_partials(self, count: int, runs: list[tuple[int, list[int], str, str]]) -> list[str]:
        """The accumulators from ``init_value`` (a dual's second from zero) plus every share's partial in
        share order. Rows are clamped into C and columns lie within the padded rows, so every load is in
        bounds; the values outside C are never stored."""
        t, ws = self.t, self.ssa[self.workspace[0].name]
        last_row = self.op("subi", self.sizes["m"], 1)
        places = [self.op("addi", self.op("muli", self.op("minui", row, last_row), self.row_pitch), col)
                  for _, _, row, col in runs]
        init, typ = self.initial_accumulators(self.spec.init_value)
        with t.for_carried(t.const(0), t.const(self.tile.SPLITK), t.const(1), init, typ, ("s", "p", "ps")) as loop:
            lanes_of: dict[int, dict[int, str]] = {i: {} for i in range(count)}
            for (index, lanes, _, _), place in zip(runs, places, strict=True):
                at = self.op("addi", self.partial_base(index, loop.iv), place)
                if lanes:
                    pair = t.value(f"vector.load {ws}[{at}] {{alignment = 8}} : memref<?xf32>, vector<2xf32>", "pp")
                    for j, lane in enumerate(lanes):
                        lanes_of[index][lane] = t.value(f"vector.extract {pair}[{j}] : f32 from vector<2xf32>", "e")
                else:
                    lanes_of[index][0] = t.value(f"memref.load {ws}[{at}] : memref<?xf32>", "e")
            t.yield_([self.add_partial(loop.args[i], lanes_of[i]) for i in range(count)], [typ] * count)
        return loop.results

    def add_partial(self, acc: str, values: dict[int, str]) -> str:
        """``acc`` (a vector<4xf32> or an f32) plus the loaded values at its positions."""
        t = self.t
        if not self.mma:
            return t.value(f"arith.addf {acc}, {values[0]} : f32", "p")
        sums = [t.value(f"arith.addf {t.value(f'vector.extract {acc}[{j}] : f32 from vector<4xf32>', 'e')}, "
                        f"{values[j]} : f32", "p") for j in range(4)]
        return t.value(f"vector.from_elements {', '.join(sums)} : vector<4xf32>", "acc")
