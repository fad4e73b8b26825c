"""The Hopper GEMM kernel: TMA loads, mbarrier rings and wgmma, warp-specialized.

One CTA computes a ``BM x BN`` tile of C for one batch index. Its first
warpgroup is the producer: after ``setmaxnreg`` gives its registers away,
one thread walks K in steps of ``BK``, waits until a slot of the
``STAGES``-deep ring is empty, announces the slot's bytes on the slot's
*full* mbarrier (``expect_tx``) and issues the TMA loads of A's and B's
tiles into it. The other one or two warpgroups are consumers, each owning a
``WM x WN`` part of the tile: they wait for a slot to be full, run
``wgmma.mma_async`` m64nWNk16 on it (A and B read from shared memory through
64-bit descriptors), keep one wgmma group in flight, and free the slot
before it (one arrive per warpgroup on its *empty* mbarrier). Phases are
tracked from the iteration number: round ``it // STAGES`` waits for parity
``round & 1`` on a full barrier and ``(round & 1) ^ 1`` on an empty one (a
fresh barrier counts its previous phase as complete).

**Shared tiles.** A tile is stored in chunks of 64 elements (128 bytes, the
128-byte swizzle's row) along its contiguous dimension, as TMA's 128-byte
swizzle writes them and wgmma's 128-byte-swizzle descriptors read them: a
K-major operand (A ``"mk"``, B ``"nk"``) as ``BK / 64`` chunks of
``rows x 64``, an MN-major one (A ``"km"``, B ``"kn"``) as ``rows / 64``
chunks of ``BK x 64``, read transposed by wgmma. TMA zero-fills boxes past
the tensor's edges, so ragged M, N and K need no masks on loads; the
epilogue masks C.

**Epilogue.** Straight from the wgmma fragment: element ``i`` of a warp's
m64nN fragment is row ``16 * warp + lane / 4 + 8 * (i % 4 / 2)``, column
``8 * (i / 4) + 2 * (lane % 4) + i % 2``. Each element is masked, the
epilogue function applied, cast and stored; two adjacent columns go in one
store where C's rows have an even length. The accumulator starts at zero,
``init_value`` or the ``init`` tensor (masked loads into the fragment); a
dual GEMM's second accumulator starts at zero.

**Split-K** (SPLITK > 1) follows the mma.sync kernel's scheme (see
:mod:`prism.codegen.gpu.gemm`: shares of whole BK steps on grid z, f32
partials and per-tile counters in temporaries, the last block summing the
partials in share order, the same memory-ordering rule). Here only the
consumer warpgroups hold accumulators, so only they take part: they store
the partials, fence, and meet at named barrier 1 (the consumers' threads
alone), then the first consumer thread counts the share; the producer
warpgroup, done once it has issued its share's loads, never waits there.
The last block's consumers start from ``init`` or ``init_value``, add the
partials in share order and run the epilogue.

**Tile order.** A block's tile is grid x's N tile and y's M tile, z the
batch index times SPLITK plus the share; with GROUP_M > 1, the linear index
``y * N tiles + x`` is taken in groups of GROUP_M rows of tiles
(:func:`~prism.codegen.gpu.gemm.tile_order`), so that the blocks running
together share A's and B's tiles in L2.

**Persistent** (PERSISTENT = 1): the grid is at most the blocks the chip
holds at once (:func:`resident_blocks`; grid x ``min(tiles, blocks)``),
and each block walks the linear tiles ``x, x + grid x, ...`` (tiles
counted over batch x SPLITK x M tiles x N tiles, in that nesting). The
producer and the consumers walk the same tiles; the ring's iteration count
goes on from one tile to the next, so slots and parities continue. After a
tile's last K step the consumers wait for their wgmmas and free its slot
before the epilogue: the producer meanwhile loads the next tile's first
steps. Split-K's last-block reduction runs per tile as above (the counter
of the tile's M and N index).

**Launch.** Dynamic shared memory above 48 KiB needs the launcher's opt-in;
each tensor map parameter is the device address of a map encoded as its
:class:`~prism.codegen.gpu.spec.TensorMap` says. The kernel declares
``.maxnreg`` (:attr:`Kernel.max_registers`) so that ``setmaxnreg`` acts.
A dynamic contiguous dimension of A or B must keep rows a multiple of 16
bytes: :attr:`Launch.when` says so, and the launcher picks another kernel
where it does not hold.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from prism.codegen.gpu import hopper
from prism.codegen.gpu.gemm import FLAG_BYTES, MAX_SPLITK, emit_tile_order, splitk_temporaries
from prism.codegen.gpu.hopper import (
    BOX_LIMIT,
    CHUNK,
    ROW_BYTES,
    SHARED,
    SHARED_LIMIT,
    SHARED_RESERVED,
    TMA_ROW_ALIGN,
    WARPGROUP,
    WGMMA_K,
    WGMMA_M,
    TileOperand,
)
from prism.codegen.gpu.spec import (
    ELEMENT_BYTES,
    FLOAT_BITS,
    Dim,
    GemmSpec,
    Kernel,
    Launch,
    Operand,
    Param,
    Tensor,
    convert,
    numel_text,
)
from prism.codegen.text import TextBuilder
from prism.infra.errors import UnsupportedOp
from prism.targets.nvidia_registers import CONSUMER_REGISTERS, PRODUCER_REGISTERS, wgmma_max_registers

INPUT_TYPES = ("f16", "bf16")
# Registers a consumer's wgmma takes besides its accumulators (its descriptors, addresses and loop state).
WGMMA_OVERHEAD = 26
ACC_REGISTER_LIMIT = 128  # f32 accumulator registers per consumer thread, leaving room for addresses
SYSTEM_SHARED = 1024  # shared memory the CUDA runtime keeps per resident block


# -- the plan: what the kernel's shape follows from --------------------------------------------------------------


@dataclass(frozen=True)
class _Plan:
    spec: GemmSpec
    operands: tuple[TileOperand, ...]  # A, B[, B2]
    warpgroups_m: int
    warpgroups_n: int

    @property
    def consumers(self) -> int:
        return self.warpgroups_m * self.warpgroups_n

    @property
    def threads(self) -> int:
        return WARPGROUP * (1 + self.consumers)

    @property
    def stage_bytes(self) -> int:
        return sum(op.bytes for op in self.operands)

    @property
    def shared_bytes(self) -> int:
        return self.spec.tile.STAGES * self.stage_bytes

    @property
    def launch_shared_bytes(self) -> int:
        """The ring, and for split-K the block's count after it."""
        return self.shared_bytes + (FLAG_BYTES if self.spec.tile.SPLITK > 1 else 0)

    @property
    def max_registers(self) -> int:
        """``.maxnreg``: the block's registers at entry cover what setmaxnreg moves (a multiple of 8)."""
        return wgmma_max_registers(self.consumers)

    @property
    def accumulators(self) -> int:
        return 2 if self.spec.b2 is not None else 1


def operand_layout(spec: GemmSpec) -> tuple[TileOperand, ...]:
    """A, B (and B2) as the kernel stores them in shared memory: one stage's chunks, offsets and descriptors."""
    return _plan(spec).operands


def _operand(spec: GemmSpec, tensor: Tensor, role: str, offset: int) -> TileOperand:
    t = spec.tile
    layout = spec.a_layout if role == "a" else spec.b_layout
    rows = t.BM if role == "a" else t.BN
    k_major = layout in ("mk", "nk")
    inner, outer = tensor.shape[-1], tensor.shape[-2]
    return TileOperand(tensor, rows, k_major, tensor.rank > 2, inner, outer, offset, t.BK)


def _plan(spec: GemmSpec) -> _Plan:
    a = _operand(spec, spec.a, "a", 0)
    b = _operand(spec, spec.b, "b", a.bytes)
    operands = (a, b)
    if spec.b2 is not None:
        operands += (_operand(spec, spec.b2, "b", a.bytes + b.bytes),)
    t = spec.tile
    return _Plan(spec, operands, t.BM // t.WM, t.BN // t.WN)


# -- what the kernel refuses -------------------------------------------------------------------------------------


def tma_problem(spec: GemmSpec) -> str | None:
    """Why ``spec`` cannot take the TMA/wgmma kernel; None if it can.

    Inputs are f16 or bf16 (one type), layouts A ``mk``/``km`` and B
    ``kn``/``nk``, statically known row strides a multiple of 16 bytes
    (dynamic ones are checked at launch by :attr:`Launch.when`), and the
    tile within the limits of TMA boxes, wgmma shapes, registers and shared
    memory.
    """
    problem = _type_problem(spec) or _shape_problem(spec) or _tile_problem(spec)
    if problem is None:
        problem = wgmma_problem(spec)
    return problem


def wgmma_problem(spec: GemmSpec) -> str | None:
    """Why ptxas cannot assemble the wgmma kernel of ``spec`` (its tile as given), or None: a consumer's
    ``wgmma`` needs its accumulators (WM*WN/128) and WGMMA_OVERHEAD more registers within the kernel's
    ``.maxnreg`` (136 with one consumer, 168 with two), which ptxas allots every thread."""
    plan = _plan(spec)
    need = spec.tile.WM * spec.tile.WN // WARPGROUP * plan.accumulators + WGMMA_OVERHEAD
    if need > plan.max_registers:
        return (f"a consumer's wgmma needs {need} registers, over the kernel's .maxnreg {plan.max_registers} "
                f"({plan.consumers} consumer warpgroup{'s' if plan.consumers > 1 else ''})")
    return None


def _type_problem(spec: GemmSpec) -> str | None:
    inputs = _inputs(spec)
    for tensor in inputs:
        if tensor.dtype not in INPUT_TYPES:
            return f"input '{tensor.name}' is {tensor.dtype}; the wgmma kernel takes {' or '.join(INPUT_TYPES)}"
    if len({tensor.dtype for tensor in inputs}) != 1:
        return "the inputs' element types differ"
    if spec.a_layout not in ("mk", "km") or spec.b_layout not in ("kn", "nk"):
        return f"layouts A '{spec.a_layout}' and B '{spec.b_layout}' are not supported"
    out = spec.epilogue.dtype if spec.epilogue is not None else "f32"
    for dtype in (spec.c.dtype, out):
        if dtype not in FLOAT_BITS:
            return f"the result type {dtype} is not a float type"
    return None


def _inputs(spec: GemmSpec) -> list[Tensor]:
    return [spec.a, spec.b] + ([spec.b2] if spec.b2 is not None else [])


def _shape_problem(spec: GemmSpec) -> str | None:
    batch = len(spec.batch)
    for tensor in _inputs(spec):
        if tensor.rank not in (2, batch + 2):
            return f"'{tensor.name}' has rank {tensor.rank}; expected 2 or {batch + 2}"
        inner = tensor.shape[-1]
        if isinstance(inner, int) and inner * ELEMENT_BYTES[tensor.dtype] % TMA_ROW_ALIGN:
            return (f"a row of '{tensor.name}' ({inner} x {tensor.dtype}) is not a multiple of {TMA_ROW_ALIGN} "
                    "bytes, which a TMA tensor map needs")
    if spec.c.rank != batch + 2:
        return f"the result has rank {spec.c.rank}; expected {batch + 2}"
    return None


def _tile_problem(spec: GemmSpec) -> str | None:
    t = spec.tile
    if not 1 <= t.SPLITK <= MAX_SPLITK:
        return f"SPLITK={t.SPLITK}: K splits into 1 to {MAX_SPLITK} shares"
    for name, size, unit in (("BM", t.BM, WGMMA_M), ("BN", t.BN, CHUNK), ("BK", t.BK, CHUNK),
                             ("WM", t.WM, WGMMA_M), ("WN", t.WN, CHUNK)):
        if size <= 0 or size % unit or size > BOX_LIMIT:
            return f"{name}={size} is not a multiple of {unit} up to {BOX_LIMIT} (TMA box and wgmma shapes)"
    if t.BM % t.WM or t.BN % t.WN or (t.BM // t.WM) * (t.BN // t.WN) not in (1, 2):
        return f"a {t.BM}x{t.BN} tile in {t.WM}x{t.WN} parts is not one or two consumer warpgroups"
    if t.STAGES < 2:
        return f"STAGES={t.STAGES}: the ring needs at least 2 stages"
    plan = _plan(spec)
    registers = plan.accumulators * t.WM * t.WN // WARPGROUP
    if registers > ACC_REGISTER_LIMIT:
        return f"{registers} accumulator registers per thread exceed {ACC_REGISTER_LIMIT}"
    if plan.launch_shared_bytes + SHARED_RESERVED > SHARED_LIMIT:
        return f"{plan.launch_shared_bytes} bytes of shared memory exceed {SHARED_LIMIT - SHARED_RESERVED}"
    return None


def _row_conditions(spec: GemmSpec) -> str | None:
    """The launch condition for dynamic contiguous dimensions: rows a multiple of 16 bytes."""
    conditions = []
    for tensor in _inputs(spec):
        inner = tensor.shape[-1]
        per_row = TMA_ROW_ALIGN // ELEMENT_BYTES[tensor.dtype]
        cond = f"{inner} // {per_row} * {per_row} == {inner}"
        if isinstance(inner, str) and cond not in conditions:
            conditions.append(cond)
    return " and ".join(conditions) or None


# -- the kernel --------------------------------------------------------------------------------------------------


def emit_gemm_sm90(spec: GemmSpec) -> list[Kernel]:
    """The warp-specialized TMA/wgmma kernel of ``spec`` for sm_90a; raises UnsupportedOp where
    :func:`tma_problem` refuses it."""
    problem = tma_problem(spec)
    if problem is not None:
        raise UnsupportedOp(f"GEMM '{spec.name}' cannot take the sm_90a wgmma kernel: {problem}")
    plan = _plan(spec)
    params = _params(plan)
    t = spec.tile
    batch = numel_text(spec.batch)
    if t.SPLITK > 1:
        batch = str(t.SPLITK) if batch == "1" else f"{batch} * {t.SPLITK}"
    grid = (_cdiv(spec.n, t.BN), _cdiv(spec.m, t.BM), batch)
    if t.PERSISTENT:
        grid = (persistent_grid(grid, resident_blocks(plan)), "1", "1")
    launch = Launch(grid, (plan.threads, 1, 1), plan.launch_shared_bytes, params, when=_row_conditions(spec))
    text = _Writer(plan, params).kernel()
    temporaries = splitk_temporaries(spec) if t.SPLITK > 1 else ()
    return [Kernel(spec.name, text, launch, max_registers=plan.max_registers, temporaries=temporaries)]


def resident_blocks(plan: _Plan) -> int:
    """The blocks of the kernel that every sm_90a chip holds at once: its fewest SMs times the blocks an SM
    holds by shared memory and by registers (at least one)."""
    from prism.targets.nvidia import GPU_TARGETS
    chips = [c for c in GPU_TARGETS.values() if c.chip == "sm_90a"]
    shared = plan.launch_shared_bytes + SHARED_RESERVED + SYSTEM_SHARED
    per_sm = min(min(c.smem_per_sm // shared, c.regs_per_sm // (plan.threads * plan.max_registers)) for c in chips)
    return max(1, per_sm) * min(c.sm_count for c in chips)


def persistent_grid(grid: tuple[str, str, str], blocks: int) -> str:
    """A persistent kernel's grid x: the output tiles (the product of the one-block-a-tile grid), at most
    ``blocks``; folded to an integer where the sizes are static."""
    if all(g.isdigit() for g in grid):
        return str(min(int(grid[0]) * int(grid[1]) * int(grid[2]), blocks))
    tiles = " * ".join(g for g in grid if g != "1") or "1"
    return f"min({tiles}, {blocks})"


def _cdiv(size: Dim, tile: int) -> str:
    return str(-(-size // tile)) if isinstance(size, int) else f"cdiv({size}, {tile})"


def _params(plan: _Plan) -> tuple[Param, ...]:
    """Tensor maps (A, B[, B2]), then C, the init tensor and the epilogue's tensors, then the size symbols."""
    spec = plan.spec
    maps = tuple(Param("tensormap", op.tensor.name, op.tensormap(spec.batch)) for op in plan.operands)
    tensors: list[Tensor] = []
    for tensor in [spec.c, spec.init] + _epilogue_tensors(spec) + _temporaries(spec):
        if tensor is not None and tensor.name not in [t.name for t in tensors]:
            tensors.append(tensor)
    symbols: list[str] = []
    dims = [spec.m, spec.n, spec.k, *spec.batch]
    for tensor in [op.tensor for op in plan.operands] + tensors:
        dims += list(tensor.shape)
    for d in dims:  # a temporary's extent may be an expression of them (split-K's counters): not a symbol
        if isinstance(d, str) and d.isidentifier() and d not in symbols:
            symbols.append(d)
    return (maps + tuple(Param("tensor", t.name) for t in tensors)
            + tuple(Param("size", s) for s in symbols))


def _temporaries(spec: GemmSpec) -> list[Tensor]:
    """Split-K's partials and counters (kernel parameters after the epilogue's tensors); none unsplit."""
    return list(splitk_temporaries(spec)) if spec.tile.SPLITK > 1 else []


def _epilogue_tensors(spec: GemmSpec) -> list[Tensor]:
    if spec.epilogue is None:
        return []
    return [op.tensor for op in spec.epilogue.operands if op.kind == "tensor" and op.tensor is not None]




def _ssa(prefix: str, name: str) -> str:
    return "%" + prefix + re.sub(r"[^A-Za-z0-9_]", "_", name)


class _Writer:
    """Writes the kernel's text: the common setup, then the producer's and the consumers' branches."""

    def __init__(self, plan: _Plan, params: tuple[Param, ...]) -> None:
        self.plan, self.spec, self.params = plan, plan.spec, params
        self.t = TextBuilder()
        self.acc_type = hopper.accumulator_type(plan.spec.tile.WN)
        self.maps: list[str] = []  # the operands' typed tensor maps

    # -- values ---------------------------------------------------------------------------------------------------

    def dim(self, d: Dim) -> str:
        """A dimension as an index value."""
        return self.t.const(d) if isinstance(d, int) else _ssa("s_", d)

    def op(self, expr: str, hint: str = "v") -> str:
        return self.t.value(expr, hint)

    def index(self, kind: str, a: str, b: str, hint: str = "v") -> str:
        return hopper.index_op(self.t, kind, a, b, hint)

    # -- the kernel -----------------------------------------------------------------------------------------------

    def kernel(self) -> str:
        t = self.t
        with t.region(f"gpu.func @{self.spec.name}({self.signature()}) kernel"):
            self.setup()
            producer = t.value(f"arith.cmpi eq, {self.wg}, {t.const(0)} : index", "producer")
            with t.if_(producer):
                self.producer()
            with t.else_():
                self.consumer()
            t.add("gpu.return")
        return t.function_text()

    def signature(self) -> str:
        args = []
        for p in self.params:
            if p.kind == "tensormap":
                args.append(f"{_ssa('map', str(len(args)))}: !llvm.ptr")
            elif p.kind == "tensor":
                args.append(f"{_ssa('t_', p.name)}: {self.tensor(p.name).memref}")
            else:
                args.append(f"{_ssa('s_', p.name)}: index")
        return ", ".join(args)

    def tensor(self, name: str) -> Tensor:
        spec = self.spec
        for tensor in [spec.c, spec.init] + _epilogue_tensors(spec) + _temporaries(spec):
            if tensor is not None and tensor.name == name:
                return tensor
        raise KeyError(name)

    def setup(self) -> None:
        """Ids and tile origins; the typed tensor maps; the mbarrier rings, initialized by one thread and
        fenced, then a CTA barrier so that no warp touches them before."""
        t, plan = self.t, self.plan
        self.tid = t.value("gpu.thread_id x", "tid")
        self.wg = self.index("divui", self.tid, t.const(WARPGROUP), "wg")
        self.leader = t.value(f"arith.cmpi eq, {self.index('remui', self.tid, t.const(WARPGROUP))}, "
                              f"{t.const(0)} : index", "leader")
        self.shared = t.value(f"gpu.dynamic_shared_memory : memref<?xi8, {SHARED}>", "smem")
        for i, op in enumerate(plan.operands):
            self.maps.append(t.value(f"builtin.unrealized_conversion_cast {_ssa('map', str(i))} : !llvm.ptr to "
                                     f"{op.descriptor_type()}", "tmap"))
        self.full = hopper.Barriers.create(t, self.spec.tile.STAGES, "full")
        self.empty = hopper.Barriers.create(t, self.spec.tile.STAGES, "empty")
        with t.if_(t.value(f"arith.cmpi eq, {self.tid}, {t.const(0)} : index", "first")):
            self.full.init(t, 1)
            self.empty.init(t, plan.consumers)
            for m, op in zip(self.maps, plan.operands, strict=True):
                t.add(f"nvgpu.tma.prefetch.descriptor {m} : {op.descriptor_type()}")
        t.add("nvvm.fence.mbarrier.init")
        t.add("gpu.barrier")
        self.k_steps = t.value(f"arith.ceildivui {self.dim(self.spec.k)}, {t.const(self.spec.tile.BK)} : index",
                               "steps")
        tile = self.spec.tile
        self.tiles_m = self.index("ceildivui", self.dim(self.spec.m), t.const(tile.BM), "tilesm")
        self.tiles_n = self.index("ceildivui", self.dim(self.spec.n), t.const(tile.BN), "tilesn")
        if not tile.PERSISTENT:
            self.block_tile()

    def block_tile(self) -> None:
        """The tile of a block of the one-block-a-tile grid: x the N tile, y the M tile (or with GROUP_M > 1 the
        grouped order's tile of ``y * N tiles + x``), z the batch index times SPLITK plus the share."""
        t = self.t
        bx, by = t.value("gpu.block_id x", "bx"), t.value("gpu.block_id y", "by")
        tile_m, tile_n = by, bx
        if self.spec.tile.GROUP_M > 1:
            linear = self.index("addi", self.index("muli", by, self.tiles_n), bx)
            tile_m, tile_n = emit_tile_order(t, linear, self.tiles_m, self.tiles_n, self.spec.tile.GROUP_M)
        self.tile_origin(t.value("gpu.block_id z", "bz"), tile_m, tile_n)

    def linear_tile(self, linear: str) -> None:
        """The tile of a persistent block's linear tile index: batch index and share outermost (``z``, as the
        one-block-a-tile grid's), then the M and N tiles in the grouped order."""
        per_z = self.index("muli", self.tiles_m, self.tiles_n, "perz")
        within = self.index("remui", linear, per_z)
        tile_m, tile_n = emit_tile_order(self.t, within, self.tiles_m, self.tiles_n, self.spec.tile.GROUP_M)
        self.tile_origin(self.index("divui", linear, per_z, "z"), tile_m, tile_n)

    def tile_origin(self, z: str, tile_m: str, tile_n: str) -> None:
        """The tile's origin in C, its batch index and (split-K) share, and its K steps: all of K, or the
        share's ``cdiv(cdiv(K, SPLITK), BK)`` steps from its first (the last shares shorter or empty)."""
        t, tile = self.t, self.spec.tile
        self.tile_m, self.tile_n = tile_m, tile_n
        self.n0 = self.index("muli", tile_n, t.const(tile.BN), "n0")
        self.m0 = self.index("muli", tile_m, t.const(tile.BM), "m0")
        self.bz, self.steps = z, self.k_steps
        if tile.SPLITK == 1:
            return
        self.share = self.index("remui", z, t.const(tile.SPLITK), "share")
        self.bz = self.index("divui", z, t.const(tile.SPLITK), "bz")
        per = t.value(f"arith.ceildivui {self.dim(self.spec.k)}, {t.const(tile.SPLITK)} : index", "per")
        per = t.value(f"arith.ceildivui {per}, {t.const(tile.BK)} : index", "per")
        self.first = self.index("minui", self.index("muli", self.share, per), self.k_steps, "first")
        last = self.index("minui", self.index("addi", self.first, per), self.k_steps, "last")
        self.steps = self.index("subi", last, self.first, "steps")

    def over_tiles(self, body: Callable[[str | None], None]) -> None:
        """``body`` on the block's tile, or (persistent) on each of its tiles ``x + i * grid x`` in turn with
        the ring's iteration count at the tile's start (the count goes on across tiles, so that the slots and
        parities continue)."""
        t = self.t
        if not self.spec.tile.PERSISTENT:
            body(None)
            return
        total = self.index("muli", self.index("muli", self.tiles_m, self.tiles_n), t.const(self.spec.tile.SPLITK))
        for d in self.spec.batch:
            total = self.index("muli", total, self.dim(d))
        first, blocks = t.value("gpu.block_id x", "bx"), t.value("gpu.grid_dim x", "gx")
        with t.for_carried(first, total, blocks, [t.const(0)], "index", ("tile", "base", "bases")) as loop:
            self.linear_tile(loop.iv)
            body(loop.args[0])
            t.yield_([self.index("addi", loop.args[0], self.steps, "base")], ["index"])

    # -- the producer ---------------------------------------------------------------------------------------------

    def producer(self) -> None:
        """One thread fills the ring: wait for an empty slot, expect its bytes, load every chunk."""
        t = self.t
        t.add(f"nvvm.setmaxregister decrease {PRODUCER_REGISTERS}")
        with t.if_(self.leader):
            self.over_tiles(self.produce)

    def produce(self, base: str | None) -> None:
        """The loads of one tile's K steps, ring iterations from ``base`` (0 where None)."""
        t = self.t
        with t.for_(t.const(0), self.steps, t.const(1), "it") as j:
            it = j if base is None else self.index("addi", base, j, "it")
            slot, parity = hopper.ring_position(t, it, self.spec.tile.STAGES, producer=True)
            self.empty.wait(t, slot, parity)
            self.full.expect_bytes(t, slot, self.plan.stage_bytes)
            step = self.index("addi", it, self.first) if self.spec.tile.SPLITK > 1 else it
            k0 = self.index("muli", step, t.const(self.spec.tile.BK), "k0")
            stage = self.index("muli", slot, t.const(self.plan.stage_bytes), "stage")
            for role, (m, op) in enumerate(zip(self.maps, self.plan.operands, strict=True)):
                tile_at = self.index("addi", stage, t.const(op.offset))
                hopper.tma_load(t, self.shared, m, op, self.full, slot, tile_at, k0, self.m0 if role == 0 else self.n0,
                                self.bz)

    # -- the consumers --------------------------------------------------------------------------------------------

    def consumer(self) -> None:
        """Take registers, start the accumulators, run the K loop on the ring, then the epilogue."""
        t, plan, tile = self.t, self.plan, self.spec.tile
        t.add(f"nvvm.setmaxregister increase {CONSUMER_REGISTERS}")
        part = self.index("subi", self.wg, t.const(1), "part")
        part_m = self.index("divui", part, t.const(plan.warpgroups_n))
        part_n = self.index("remui", part, t.const(plan.warpgroups_n))
        offsets = (self.index("muli", part_m, t.const(tile.WM)), self.index("muli", part_n, t.const(tile.WN)))
        bases = [self.descriptor_base(op, part_m if role == 0 else part_n, tile.WM if role == 0 else tile.WN)
                 for role, op in enumerate(plan.operands)]
        self.over_tiles(lambda base: self.consume(base, offsets, bases))

    def consume(self, base: str | None, offsets: tuple[str, str], bases: list[str]) -> None:
        """One tile: the accumulators' start, the K loop on the ring (iterations from ``base``, 0 where None),
        then (persistent) the last slot freed before the epilogue, so that the producer loads the next tile's
        steps meanwhile."""
        t, split = self.t, self.spec.tile.SPLITK > 1
        self.positions(*offsets)
        init = self.initial_accumulators(zero=split)
        with t.for_carried(t.const(0), self.steps, t.const(1), init, self.acc_type, ("it", "acc", "accs")) as loop:
            it = loop.iv if base is None else self.index("addi", base, loop.iv, "it")
            self.step(it, loop.iv, loop.args, bases)
        hopper.wait(t, 0)
        if base is not None:
            started = t.value(f"arith.cmpi ugt, {self.steps}, {t.const(0)} : index", "started")
            with t.if_(t.value(f"arith.andi {started}, {self.leader} : i1", "release")):
                last = self.index("subi", self.index("addi", base, self.steps), t.const(1))
                self.empty.arrive(t, self.index("remui", last, t.const(self.spec.tile.STAGES), "freed"))
        if split:
            self.split_epilogue(loop.results)
        else:
            self.epilogue(loop.results)

    def descriptor_base(self, op: TileOperand, part: str, extent: int) -> str:
        """The wgmma descriptor of a consumer's part of ``op``'s tile in stage 0, at K step 0."""
        t = self.t
        per_part = extent * ROW_BYTES if op.k_major else extent // CHUNK * op.chunk_bytes
        at = self.index("addi", t.const(op.offset), self.index("muli", part, t.const(per_part)))
        return hopper.shared_descriptor(t, self.shared, at, op)

    def step(self, it: str, kt: str, accs: list[str], bases: list[str]) -> None:
        """K step ``kt`` of the tile, ring iteration ``it``: wait for the slot, issue its wgmmas, keep one group in
        flight, free the slot before (from the tile's second step)."""
        t, plan, tile = self.t, self.plan, self.spec.tile
        slot, parity = hopper.ring_position(t, it, tile.STAGES, producer=False)
        self.full.wait(t, slot, parity)
        stage = self.index("muli", slot, t.const(plan.stage_bytes >> 4))
        stage = t.value(f"arith.index_cast {stage} : index to i64", "d")
        descriptors = [hopper.descriptor_at(t, base, stage) for base in bases]
        hopper.fence(t)
        accs = list(accs)
        blocks = tile.WM // WGMMA_M
        a_op, b_op = plan.operands[0], plan.operands[1]
        for kstep in range(tile.BK // WGMMA_K):
            for mb in range(blocks):
                a = hopper.descriptor_at(t, descriptors[0], a_op.tile_offset(mb * WGMMA_M, kstep))
                for j, op in enumerate(plan.operands[1:]):
                    b = hopper.descriptor_at(t, descriptors[1 + j], op.tile_offset(0, kstep))
                    accs[j * blocks + mb] = hopper.wgmma_shared(t, a, b, accs[j * blocks + mb], tile.WN,
                                                                self.spec.a.dtype, a_op.k_major, b_op.k_major)
        hopper.commit(t)
        hopper.wait(t, 1)
        started = t.value(f"arith.cmpi ugt, {kt}, {t.const(0)} : index", "started")
        with t.if_(t.value(f"arith.andi {started}, {self.leader} : i1", "release")):
            before = self.index("addi", it, t.const(tile.STAGES - 1))
            before = self.index("remui", before, t.const(tile.STAGES), "freed")
            self.empty.arrive(t, before)
        t.yield_(accs, [self.acc_type] * len(accs))

    # -- the fragment: where each accumulator element lies ------------------------------------------------------------

    def positions(self, wm0: str, wn0: str) -> None:
        """The thread's first row and column of C in its warpgroup's fragment."""
        t = self.t
        lane = self.index("remui", self.tid, t.const(32), "lane")
        warp = self.index("remui", self.index("divui", self.tid, t.const(32)), t.const(4), "warp")
        row = self.index("addi", self.index("muli", warp, t.const(16)), self.index("divui", lane, t.const(4)))
        self.m_first = self.index("addi", self.index("addi", self.m0, wm0), row, "mfirst")
        col = self.index("muli", self.index("remui", lane, t.const(4)), t.const(2))
        self.n_first = self.index("addi", self.index("addi", self.n0, wn0), col, "nfirst")

    def fragment(self) -> list[tuple[int, int, tuple[str, str, str], str, list[tuple[str, str]]]]:
        """Per pair of accumulator elements ``(block, i)`` and ``i + 1`` (adjacent columns of one row): the row
        (index, in bounds, C's row start), the whole pair's mask where the pair is stored as one vector (else
        None), and each element's column and mask. Rows and columns are written once each."""
        t, spec = self.t, self.spec
        m, n = self.dim(spec.m), self.dim(spec.n)
        rows: dict[int, tuple[str, str, str]] = {}
        cols: dict[int, tuple[str, str]] = {}
        out = []
        for mb, i, dr, dc in fragment_pairs(spec.tile):
            if dr not in rows:
                row = self.index("addi", self.m_first, t.const(dr), "row")
                ok = t.value(f"arith.cmpi ult, {row}, {m} : index", "rowok")
                start = self.index("muli", self.index("addi", self.index("muli", self.bz, m), row), n, "crow")
                rows[dr] = (row, ok, start)
            for d in (dc, dc + 1) if not self.paired else (dc,):
                if d not in cols:
                    col = self.index("addi", self.n_first, t.const(d), "col")
                    col_ok = t.value(f"arith.cmpi ult, {col}, {n} : index", "colok")
                    cols[d] = (col, t.value(f"arith.andi {rows[dr][1]}, {col_ok} : i1", "ok"))
            if self.paired:  # N even: the pair's first column in bounds means both are
                col, ok = cols[dc]
                one = self.index("addi", col, t.const(1), "col")
                out.append((mb, i, rows[dr], ok, [(col, ok), (one, ok)]))
            else:
                out.append((mb, i, rows[dr], None, [cols[dc], cols[dc + 1]]))
        return out

    @property
    def paired(self) -> bool:
        """Whether C's row length is even (static, or B's ``kn`` rows kept to multiples of 16 bytes), so that
        each pair of adjacent columns lies at an even, 2-element-aligned place."""
        n = self.spec.n
        return (isinstance(n, int) and n % 2 == 0) or self.spec.b_layout == "kn"

    def initial_accumulators(self, zero: bool = False) -> list[str]:
        """The first accumulator from ``init`` (masked loads) or ``init_value``; a dual's second from zero;
        with ``zero``, all from zero (a split-K share's partial)."""
        t, spec = self.t, self.spec
        zero_struct = t.value(f"llvm.mlir.zero : {self.acc_type}", "zero")
        blocks = spec.tile.WM // WGMMA_M
        if zero:
            return [zero_struct] * (blocks * self.plan.accumulators)
        zero = zero_struct
        if spec.init is None and spec.init_value == 0.0:
            first = [zero] * blocks
        elif spec.init is None:
            value = t.value(f"arith.constant {float(spec.init_value)!r} : f32", "init")
            first = [self.fill(zero, [value] * (spec.tile.WN // 2)) for _ in range(blocks)]
        else:
            first = self.loaded_accumulators(zero, blocks)
        return first + [zero] * (blocks * (self.plan.accumulators - 1))

    def fill(self, struct: str, values: list[str]) -> str:
        for i, value in enumerate(values):
            struct = self.t.value(f"llvm.insertvalue {value}, {struct}[{i}] : {self.acc_type}", "acc")
        return struct

    def loaded_accumulators(self, zero: str, blocks: int) -> list[str]:
        """Accumulators read from ``init`` at each element's place (zero outside C)."""
        t, init = self.t, self.spec.init
        assert init is not None
        values: list[list[str]] = [[] for _ in range(blocks)]
        fzero = t.value("arith.constant 0.0 : f32", "f")
        for mb, _, (_, _, start), _, elements in self.fragment():
            for col, ok in elements:
                with t.if_(ok, ["f32"], "init") as (value,):
                    loaded = t.value(f"memref.load {_ssa('t_', init.name)}[{self.index('addi', start, col)}] : "
                                     f"{init.memref}", "x")
                    t.yield_([convert(t, loaded, init.dtype, "f32")], ["f32"])
                with t.else_():
                    t.yield_([fzero], ["f32"])
                values[mb].append(value)
        return [self.fill(zero, v) for v in values]

    # -- the epilogue ---------------------------------------------------------------------------------------------

    def epilogue(self, accs: list[str]) -> None:
        """Each element in bounds: the epilogue function of the accumulators (and its tensors), cast and stored;
        pairs of adjacent columns as one 2-element store where C's rows keep them aligned."""
        t, spec = self.t, self.spec
        c, dtype = _ssa("t_", spec.c.name), spec.c.dtype
        vector = f"vector<2x{dtype}>"
        batch = self.batch_indices()
        for mb, i, (row, _, start), pair_ok, elements in self.fragment():
            if pair_ok is not None:
                with t.if_(pair_ok):
                    values = [self.result(accs, mb, i + e, batch + [row, col]) for e, (col, _) in enumerate(elements)]
                    pair = t.value(f"vector.from_elements {values[0]}, {values[1]} : {vector}", "pair")
                    at = self.index("addi", start, elements[0][0])
                    t.add(f"vector.store {pair}, {c}[{at}] {{alignment = {2 * ELEMENT_BYTES[dtype]}}} : "
                          f"{spec.c.memref}, {vector}")
                continue
            for e, (col, ok) in enumerate(elements):
                with t.if_(ok):
                    value = self.result(accs, mb, i + e, batch + [row, col])
                    t.add(f"memref.store {value}, {c}[{self.index('addi', start, col)}] : {spec.c.memref}")

    def result(self, accs: list[str], mb: int, i: int, point: list[str]) -> str:
        """C's value at ``point``, accumulator element ``i`` of block ``mb``: the epilogue's, cast to C's type."""
        t, spec = self.t, self.spec
        blocks = spec.tile.WM // WGMMA_M
        acc = [t.value(f"llvm.extractvalue {accs[j * blocks + mb]}[{i}] : {self.acc_type}", "a")
               for j in range(self.plan.accumulators)]
        value, dtype = acc[0], "f32"
        if spec.epilogue is not None:
            operands = [self.operand_value(op, acc, point) for op in spec.epilogue.operands]
            value, dtype = spec.epilogue.emit(t, operands, point), spec.epilogue.dtype
        return convert(t, value, dtype, spec.c.dtype)

    def batch_indices(self) -> list[str]:
        """The batch dimensions' indices, from the flattened block index z (outermost first)."""
        rest, out = self.bz, []
        for d in reversed(self.spec.batch):
            size = self.dim(d)
            out.append(self.index("remui", rest, size, "b"))
            rest = self.index("divui", rest, size)
        return out[::-1]

    def operand_value(self, op: Operand, acc: list[str], point: list[str]) -> str:
        """An epilogue operand at ``point``: an accumulator, or a tensor loaded at its dimensions' indices."""
        if op.kind == "acc":
            return acc[0]
        if op.kind == "acc2":
            return acc[1]
        tensor = op.tensor
        assert tensor is not None
        index = self.t.const(0)
        for size, d in zip(tensor.shape, op.dims, strict=True):
            index = self.index("addi", self.index("muli", index, self.dim(size)), point[d])
        return self.t.value(f"memref.load {_ssa('t_', tensor.name)}[{index}] : {tensor.memref}", "e")

    # -- split-K --------------------------------------------------------------------------------------------------

    def split_epilogue(self, accs: list[str]) -> None:
        """Store the share's partial and count it; the tile's last block sums the partials in share order onto
        the accumulators' start, runs the epilogue and resets the tile's counter."""
        t, spec = self.t, self.spec
        partials, counters = (_ssa("t_", x.name) for x in splitk_temporaries(spec))
        self.pitch = self.index("muli", self.index("ceildivui", self.dim(spec.n), t.const(spec.tile.BN)),
                                t.const(spec.tile.BN), "pitch")
        size = self.index("muli", self.dim(spec.m), self.pitch)
        for d in spec.batch:
            size = self.index("muli", size, self.dim(d))
        self.slab_size = size
        self.first_consumer = t.value(f"arith.cmpi eq, {self.tid}, {t.const(WARPGROUP)} : index", "firstc")
        self.store_partials(accs, partials)
        last, tile = self.count_share(counters)
        with t.if_(last):
            t.add('llvm.fence syncscope("device") acq_rel')
            self.epilogue(self.sum_partials(partials))
            with t.if_(self.first_consumer):
                zero = t.value("arith.constant 0 : i32", "zero")
                t.add(f"memref.store {zero}, {counters}[{tile}] : memref<?xi32>")

    def slab(self, product: int, share: str) -> str:
        """The partials' offset of (product, share): slab ``product * SPLITK + share``."""
        t = self.t
        slab = self.index("addi", share, t.const(product * self.spec.tile.SPLITK))
        return self.index("muli", slab, self.slab_size, "slab")

    def partial_place(self, row: str, col: str) -> str:
        """The offset of (``row``, ``col``) of the block's batch index within a slab (rows of ``pitch``)."""
        start = self.index("addi", self.index("muli", self.bz, self.dim(self.spec.m)), row)
        return self.index("addi", self.index("muli", start, self.pitch), col)

    def pairs(self) -> list[tuple[int, int, str, str, str]]:
        """Each pair of adjacent fragment elements ``(block, i)``, ``i + 1``: its row, whether the row is in C,
        and its first column (even: the pair is 8-byte aligned in the padded rows)."""
        t, spec = self.t, self.spec
        m = self.dim(spec.m)
        rows: dict[int, tuple[str, str]] = {}
        out = []
        for mb, i, dr, dc in fragment_pairs(spec.tile):
            if dr not in rows:
                row = self.index("addi", self.m_first, t.const(dr), "row")
                rows[dr] = (row, t.value(f"arith.cmpi ult, {row}, {m} : index", "rowok"))
            out.append((mb, i, *rows[dr], self.index("addi", self.n_first, t.const(dc), "col")))
        return out

    def store_partials(self, accs: list[str], partials: str) -> None:
        """Each fragment pair of a row inside C into its slab in one 8-byte store (the partials' rows reach the
        last N tile's end, so that columns need no mask)."""
        t, blocks = self.t, self.spec.tile.WM // WGMMA_M
        bases = [self.slab(j, self.share) for j in range(self.plan.accumulators)]
        for mb, i, row, row_ok, col in self.pairs():
            with t.if_(row_ok):
                place = self.partial_place(row, col)
                for j, base in enumerate(bases):
                    acc = accs[j * blocks + mb]
                    values = [t.value(f"llvm.extractvalue {acc}[{i + e}] : {self.acc_type}", "a") for e in range(2)]
                    pair = t.value(f"vector.from_elements {values[0]}, {values[1]} : vector<2xf32>", "pair")
                    t.add(f"vector.store {pair}, {partials}[{self.index('addi', base, place)}] {{alignment = 8}} : "
                          "memref<?xf32>, vector<2xf32>")

    def count_share(self, counters: str) -> tuple[str, str]:
        """Fence, the consumers' barrier, the first consumer thread's count of the tile's shares, barrier:
        whether this block is the tile's last (an i1), and the tile's counter index."""
        t, spec = self.t, self.spec
        t.add('llvm.fence syncscope("device") acq_rel')
        self.consumer_barrier()
        flag = t.value(f"memref.view {self.shared}[{t.const(self.plan.shared_bytes)}][] : memref<?xi8, {SHARED}> "
                       f"to memref<1xi32, {SHARED}>", "flag")
        tile = self.index("addi", self.index("muli", self.bz, self.tiles_m), self.tile_m)
        tile = self.index("addi", self.index("muli", tile, self.tiles_n), self.tile_n, "tile")
        with t.if_(self.first_consumer):
            one = t.value("arith.constant 1 : i32", "one")
            old = t.value(f"memref.atomic_rmw addi {one}, {counters}[{tile}] : (i32, memref<?xi32>) -> i32", "old")
            t.add(f"memref.store {old}, {flag}[{t.const(0)}] : memref<1xi32, {SHARED}>")
        self.consumer_barrier()
        seen = t.value(f"memref.load {flag}[{t.const(0)}] : memref<1xi32, {SHARED}>", "seen")
        last = t.value(f"arith.constant {spec.tile.SPLITK - 1} : i32", "k")
        return t.value(f"arith.cmpi eq, {seen}, {last} : i32", "last"), tile

    def consumer_barrier(self) -> None:
        """Named barrier 1 over the consumer warpgroups' threads (the producer does not take part)."""
        t = self.t
        one = t.value("arith.constant 1 : i32", "bar")
        count = t.value(f"arith.constant {WARPGROUP * self.plan.consumers} : i32", "n")
        t.add(f"nvvm.barrier id = {one} number_of_threads = {count}")

    def sum_partials(self, partials: str) -> list[str]:
        """The accumulators from their start (``init`` or ``init_value``) plus every share's partial, in share
        order. Rows are clamped into C and columns lie within the padded rows, so every load is in bounds; the
        values outside C are never stored."""
        t, spec = self.t, self.spec
        blocks = spec.tile.WM // WGMMA_M
        last_row = self.index("subi", self.dim(spec.m), t.const(1))
        places = [(mb, i, self.partial_place(self.index("minui", row, last_row), col))
                  for mb, i, row, _, col in self.pairs()]
        init = self.initial_accumulators()
        with t.for_carried(t.const(0), t.const(spec.tile.SPLITK), t.const(1), init, self.acc_type,
                           ("s", "p", "ps")) as loop:
            accs = list(loop.args)
            for j in range(self.plan.accumulators):
                base = self.slab(j, loop.iv)
                for mb, i, place in places:
                    pair = t.value(f"vector.load {partials}[{self.index('addi', base, place)}] {{alignment = 8}} : "
                                   "memref<?xf32>, vector<2xf32>", "pp")
                    for e in range(2):
                        value = t.value(f"vector.extract {pair}[{e}] : f32 from vector<2xf32>", "e")
                        acc = accs[j * blocks + mb]
                        old = t.value(f"llvm.extractvalue {acc}[{i + e}] : {self.acc_type}", "a")
                        new = t.value(f"arith.addf {old}, {value} : f32", "a")
                        accs[j * blocks + mb] = t.value(f"llvm.insertvalue {new}, {acc}[{i + e}] : {self.acc_type}",
                                                        "acc")
            t.yield_(accs, [self.acc_type] * len(accs))
        return loop.results


def fragment_pairs(tile) -> Iterator[tuple[int, int, int, int]]:
    """Each pair of adjacent accumulator elements ``i``, ``i + 1`` of a consumer's fragment, per m64 block
    ``mb``: ``(mb, i, row, column)`` of the pair's first element in the consumer's ``WM x WN`` tile, in the order
    the epilogue and the split-K partials walk them."""
    for mb in range(tile.WM // WGMMA_M):
        for i in range(0, tile.WN // 2, 2):
            dr, dc = fragment_offset(i)
            yield mb, i, dr + mb * WGMMA_M, dc


def fragment_offset(i: int) -> tuple[int, int]:
    """Where element ``i`` of an m64nN wgmma f32 fragment lies from its thread's first row and column (row
    ``16 * warp + lane / 4``, column ``2 * (lane % 4)`` of the warpgroup's 64 x N block)."""
    return 8 * (i % 4 // 2), 8 * (i // 4) + i % 2
