"""Attention prefill on sm_90a in the manner of FlashAttention-3: TMA, an mbarrier ring and wgmma, one kernel.

A block takes ``64 * CONSUMERS`` query rows of one batch index (one grid
dimension over the batch indices, the query tiles of one batch index
adjacent so that they share K and V in L2, and no batch count over the
65535 of CUDA's grid y) and ``128 * (1 + CONSUMERS)`` threads in warpgroups:

- **The producer** (warpgroup 0) gives its registers away (``setmaxnreg``);
  one thread loads the Q tile once by TMA (its own mbarrier), then walks the
  key tiles: waits until a slot of the ``STAGES``-deep ring is empty,
  announces the slot's bytes on its *full* mbarrier and loads the tile's K
  and V by TMA. Phases follow :func:`~prism.codegen.gpu.hopper.ring_position`.
- **Each consumer** (warpgroups 1..CONSUMERS, 64 query rows each) takes
  registers, waits for Q, then per key tile: waits for the slot to be full,
  runs ``S = Q K^T`` as ``d / 16`` wgmma m64nBKk16 from shared memory (A = Q
  K-major; B = K, K-major for ``"nd"`` K ``[.., keys, d]``, MN-major read
  transposed for ``"dn"`` K ``[.., d, keys]``), the online softmax on the S
  accumulator in registers (:class:`~prism.codegen.gpu.attention._Flash`'s:
  base-2 scores times ``scale * log2 e``, row maxima and sums over the four
  lanes of a row, O rescaled when the maximum grows, masked keys at -inf),
  then ``O += P V`` as ``BK / 16`` wgmma m64n(dv)k16 with **A in
  registers**: the accumulator of S rounded to the inputs' type and packed
  in pairs is the register A fragment (the elements ``8 s .. 8 s + 7`` of
  the m64nBK accumulator are key step ``s``'s A registers,
  :func:`~prism.codegen.gpu.hopper.register_a_elements`); V ``[.., keys,
  dv]`` is an MN-major B. After the second product completes, lane 0 of
  each consumer warp arrives on the slot's *empty* barrier (count: the
  consumer warps), and the slot is refilled.

**Shared memory** (dynamic, 1024-byte aligned): the Q tile, then ``STAGES``
stages of a K tile and a V tile, each stored in chunks of 64 elements (128
bytes) along its contiguous dimension, as TMA's 128-byte swizzle writes them
and the wgmma descriptors read them
(:class:`~prism.codegen.gpu.gemm_sm90.TileOperand`). The tensor maps are
3-D (contiguous dimension, rows, flattened batch) so that a box never
crosses a batch index; TMA zero-fills rows past ``sq`` and keys past ``skv``.

**Masks.** Keys past ``skv`` (zero-filled, but their scores must be -inf)
and, with ``causal``, keys ``j > i + skv - sq``: the key tiles that hold no
masked key for the consumer's first row run in a loop without masks, the
rest with them. The producer loads the key tiles any row of the block
reaches. A row that no key reaches comes out zero.

**The output.** O is divided by the row sums once, at the end, and stored
from the fragment: each thread's two adjacent columns as one 2-element
store (rows of an even ``dv`` keep them aligned), rows past ``sq`` masked.

**What it takes** (:func:`sm90_attention_problem`): f16 or bf16 Q, K, V,
``d`` and ``dv`` of 64 or 128 (whole 128-byte swizzle rows, a wgmma N and a
TMA box), rows that TMA can read (16-byte multiples: ``"dn"`` K needs
``skv`` a multiple of 8; a dynamic one is checked at launch by
:attr:`Launch.when`), a prefill (decode stays on the split-KV kernels).
"""

from __future__ import annotations

from dataclasses import dataclass

from prism.codegen.gpu import hopper
from prism.codegen.gpu.attention import (
    _causal_limit,
    _Flash,
    _needs_key_mask,
    _store_rows,
    _whole_tiles,
    is_decode,
)
from prism.codegen.gpu.gemm_sm90 import (
    CONSUMER_REGISTERS,
    PRODUCER_REGISTERS,
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
from prism.codegen.gpu.spec import ELEMENT_BYTES, AttentionSpec, Kernel, Launch, Param, numel_text
from prism.infra.errors import UnsupportedOp

HEAD_SIZES = (64, 128)
INPUT_TYPES = ("f16", "bf16")
WARPS_PER_GROUP = WARPGROUP // 32


@dataclass(frozen=True)
class Sm90AttentionTile:
    """The kernel's knobs: consumer warpgroups (64 query rows each), keys per tile, ring depth."""

    CONSUMERS: int = 2
    BK: int = 128
    STAGES: int = 2


def default_tile(spec: AttentionSpec) -> Sm90AttentionTile:
    """Two consumers and 128-key tiles; a third stage where the head sizes leave room for it."""
    stages = 3 if max(spec.d, spec.dv) <= 64 else 2
    return Sm90AttentionTile(CONSUMERS=2, BK=128, STAGES=stages)


@dataclass(frozen=True)
class Sm90AttentionPlan:
    """The kernel's shape: the Q tile and one stage's K and V tiles as TMA writes them and wgmma reads them."""

    spec: AttentionSpec
    tile: Sm90AttentionTile
    q: TileOperand  # rows: the block's query rows; K: d
    k: TileOperand  # rows (N): the tile's keys; K: d
    v: TileOperand  # rows (N): dv; K: the tile's keys

    @property
    def rows(self) -> int:
        return WGMMA_M * self.tile.CONSUMERS

    @property
    def threads(self) -> int:
        return WARPGROUP * (1 + self.tile.CONSUMERS)

    @property
    def stage_bytes(self) -> int:
        return self.k.bytes + self.v.bytes

    @property
    def shared_bytes(self) -> int:
        return self.q.bytes + self.tile.STAGES * self.stage_bytes

    @property
    def max_registers(self) -> int:
        """``.maxnreg``: the block's registers at entry cover what setmaxnreg moves (a multiple of 8)."""
        consumers = self.tile.CONSUMERS
        need = PRODUCER_REGISTERS + consumers * CONSUMER_REGISTERS
        return -(-need // (8 * (1 + consumers))) * 8


def plan_sm90_attention(spec: AttentionSpec, tile: Sm90AttentionTile | None = None) -> Sm90AttentionPlan:
    """The plan of ``spec`` (whether or not it fits: :func:`sm90_attention_problem` checks)."""
    tile = tile or default_tile(spec)
    batched = bool(spec.batch)
    q = TileOperand(spec.q, WGMMA_M * tile.CONSUMERS, True, batched, spec.d, spec.sq, 0, spec.d)
    if spec.k_layout == "nd":
        k = TileOperand(spec.k, tile.BK, True, batched, spec.d, spec.skv, 0, spec.d)
    else:
        k = TileOperand(spec.k, tile.BK, False, batched, spec.skv, spec.d, 0, spec.d)
    v = TileOperand(spec.v, spec.dv, False, batched, spec.dv, spec.skv, k.bytes, tile.BK)
    return Sm90AttentionPlan(spec, tile, q, k, v)


# -- what the kernel refuses -----------------------------------------------------------------------------------------


def sm90_attention_problem(spec: AttentionSpec, tile: Sm90AttentionTile | None = None) -> str | None:
    """Why ``spec`` cannot take the sm_90a TMA/wgmma prefill kernel; None if it can. (The checks of
    :func:`~prism.codegen.gpu.attention.attention_problem` come first: shapes, sizes, output type.)"""
    if is_decode(spec):
        return "one query row is a decode, which runs on the split-KV kernels"
    types = {spec.q.dtype, spec.k.dtype, spec.v.dtype}
    if len(types) != 1 or not types <= set(INPUT_TYPES):
        return f"Q, K and V are {sorted(types)}; the wgmma kernel takes one of {' or '.join(INPUT_TYPES)}"
    for name, size in (("d", spec.d), ("dv", spec.dv)):
        if size not in HEAD_SIZES:
            return (f"the head size {name} = {size} is not one of {HEAD_SIZES}: the kernel's tiles are whole "
                    "128-byte swizzle rows of 64 elements, and its registers hold the S and O accumulators")
    if spec.k_layout not in ("nd", "dn"):
        return f"K's layout '{spec.k_layout}' is not 'nd' or 'dn'"
    per_row = TMA_ROW_ALIGN // ELEMENT_BYTES[spec.k.dtype]
    if spec.k_layout == "dn" and isinstance(spec.skv, int) and spec.skv % per_row:
        return (f"K stored [d, keys] has rows of {spec.skv} keys, not a multiple of {per_row} ({TMA_ROW_ALIGN} "
                "bytes), which a TMA tensor map needs")
    return _tile_problem(spec, tile or default_tile(spec))


def _tile_problem(spec: AttentionSpec, tile: Sm90AttentionTile) -> str | None:
    if tile.CONSUMERS not in (1, 2):
        return f"CONSUMERS={tile.CONSUMERS}: the kernel takes one or two consumer warpgroups"
    if tile.BK not in (64, 128):
        return f"BK={tile.BK}: key tiles are 64 or 128 keys (whole swizzle rows, a TMA box, a wgmma N)"
    if tile.STAGES < 2:
        return f"STAGES={tile.STAGES}: the ring needs at least 2 stages"
    plan = plan_sm90_attention(spec, tile)
    if plan.shared_bytes + SHARED_RESERVED > SHARED_LIMIT:
        return f"{plan.shared_bytes} bytes of shared memory exceed {SHARED_LIMIT - SHARED_RESERVED}"
    return None


def launch_condition(spec: AttentionSpec) -> str | None:
    """Where a dynamic contiguous dimension must keep rows a multiple of 16 bytes: ``"dn"`` K's key count."""
    if spec.k_layout == "dn" and isinstance(spec.skv, str):
        per_row = TMA_ROW_ALIGN // ELEMENT_BYTES[spec.k.dtype]
        return f"{spec.skv} // {per_row} * {per_row} == {spec.skv}"
    return None


# -- the kernel ------------------------------------------------------------------------------------------------------


def emit_sm90_attention(spec: AttentionSpec, tile: Sm90AttentionTile | None = None) -> list[Kernel]:
    """The warp-specialized TMA/wgmma prefill kernel of ``spec``; raises UnsupportedOp where
    :func:`sm90_attention_problem` refuses it."""
    problem = sm90_attention_problem(spec, tile)
    if problem is not None:
        raise UnsupportedOp(f"attention '{spec.name}' cannot take the sm_90a wgmma kernel: {problem}")
    plan = plan_sm90_attention(spec, tile)
    writer = _Writer(plan)
    text = writer.kernel()
    grid = (f"{_cdiv(spec.sq, plan.rows)} * {numel_text(tuple(spec.batch))}", "1", "1")
    launch = Launch(grid, (plan.threads, 1, 1), plan.shared_bytes, writer.params(), when=launch_condition(spec))
    return [Kernel(writer.name, text, launch, max_registers=plan.max_registers)]


def _cdiv(size: int | str, tile: int) -> str:
    return str(-(-size // tile)) if isinstance(size, int) else f"cdiv({size}, {tile})"


class _Writer(_Flash):
    """The kernel's text: the setup, the producer's branch and the consumers'; the softmax of a key tile is
    :class:`_Flash`'s, its two products here on wgmma."""

    def __init__(self, plan: Sm90AttentionPlan) -> None:
        spec = plan.spec
        super().__init__(spec, [("o", spec.o)], plan.threads, 0, plan.tile.BK, _needs_key_mask(spec, plan.tile.BK))
        self.plan = plan
        self.name = f"{spec.name}_prefill_sm90"
        self.operands = (plan.q, plan.k, plan.v)

    @property
    def register_type(self) -> str:
        """P's pairs are wgmma A registers: 32-bit words for f16 and bf16 alike."""
        return "i32"

    def params(self) -> tuple[Param, ...]:
        maps = tuple(Param("tensormap", op.tensor.name, op.tensormap(tuple(self.spec.batch)))
                     for op in self.operands)
        return maps + super().params()

    def header(self, name: str) -> str:
        args = [f"%map{i}: !llvm.ptr" for i in range(len(self.operands))]
        args += [f"{ssa}: {tensor.memref}" for ssa, tensor in self.tensors.values()]
        args += [f"{ssa}: index" for ssa in self.symbols.values()]
        return (f"gpu.func @{name}({', '.join(args)}) kernel attributes "
                f"{{known_block_size = array<i32: {self.threads}, 1, 1>}}")

    def kernel(self) -> str:
        t = self.t
        with t.region(self.header(self.name)):
            self.setup()
            with t.if_(self.cmp("eq", self.wg, t.const(0))):
                self.producer()
            with t.else_():
                self.consumer()
            t.add("gpu.return")
        return t.function_text()

    # -- setup -------------------------------------------------------------------------------------------------------

    def setup(self) -> None:
        """Ids, the tensor maps, the barriers (initialized by one thread, fenced, then a CTA barrier), the
        block's key limit and its key tiles."""
        t, spec, plan = self.t, self.spec, self.plan
        self.prologue()
        self.warp = self.op("remui", self.warp, WARPS_PER_GROUP)  # the warp in its warpgroup
        self.wg = self.op("divui", self.tid, WARPGROUP)
        q_tiles = self.op("ceildivui", self.dim(spec.sq), plan.rows)
        self.q0 = self.op("muli", self.op("remui", self.bid, q_tiles), plan.rows)
        self.bz = self.op("divui", self.bid, q_tiles)  # the flattened batch index
        self.smem = t.value(f"gpu.dynamic_shared_memory : memref<?xi8, {SHARED}>", "smem")
        self.maps = [t.value(f"builtin.unrealized_conversion_cast %map{i} : !llvm.ptr to {op.descriptor_type()}",
                             "tmap") for i, op in enumerate(self.operands)]
        self.full = hopper.create_barriers(t, plan.tile.STAGES, "full")
        self.empty = hopper.create_barriers(t, plan.tile.STAGES, "empty")
        self.q_ready = hopper.create_barriers(t, 1, "qready")
        with t.if_(self.cmp("eq", self.tid, t.const(0))):
            self.full.init(t, 1)
            self.empty.init(t, WARPS_PER_GROUP * plan.tile.CONSUMERS)
            self.q_ready.init(t, 1)
            for m, op in zip(self.maps, self.operands, strict=True):
                t.add(f"nvgpu.tma.prefetch.descriptor {m} : {op.descriptor_type()}")
        t.add("nvvm.fence.mbarrier.init")
        t.add("gpu.barrier")
        sq, skv = self.dim(spec.sq), self.dim(spec.skv)
        self.limit = skv
        if spec.causal:  # the block's last row reaches key q0 + rows - 1 + skv - sq
            reach = self.op("addi", self.op("subi", skv, sq), self.op("addi", self.q0, plan.rows))
            self.limit = self.op("minsi", skv, self.op("maxsi", reach, 0))
        self.trips = self.op("ceildivui", self.limit, plan.tile.BK)

    def batch_index(self) -> str | None:
        return self.bz if self.spec.batch else None

    # -- the producer ------------------------------------------------------------------------------------------------

    def producer(self) -> None:
        """One thread loads Q, then fills the ring with K and V tiles."""
        t, plan = self.t, self.plan
        t.add(f"nvvm.setmaxregister decrease {PRODUCER_REGISTERS}")
        leader = self.cmp("eq", self.op("remui", self.tid, WARPGROUP), t.const(0))
        with t.if_(leader):
            zero = t.const(0)
            self.q_ready.expect_bytes(t, zero, plan.q.bytes)
            hopper.tma_load(t, self.smem, self.maps[0], plan.q, self.q_ready, zero, zero, zero, self.q0,
                            self.batch_index())
            with t.for_(zero, self.trips, t.const(1), "it") as it:
                slot, parity = hopper.ring_position(t, it, plan.tile.STAGES, producer=True)
                self.empty.wait(t, slot, parity)
                self.full.expect_bytes(t, slot, plan.stage_bytes)
                stage = self.op("addi", self.op("muli", slot, plan.stage_bytes), plan.q.bytes)
                key0 = self.op("muli", it, plan.tile.BK)
                for op, tmap, k0, mn0 in ((plan.k, self.maps[1], zero, key0), (plan.v, self.maps[2], key0, zero)):
                    hopper.tma_load(t, self.smem, tmap, op, self.full, slot, self.op("addi", stage, op.offset), k0,
                                    mn0, self.batch_index())

    # -- the consumers -----------------------------------------------------------------------------------------------

    def consumer(self) -> None:
        """Take registers, wait for Q, run the key tiles (mask-free ones first), store O."""
        t, spec, plan = self.t, self.spec, self.plan
        t.add(f"nvvm.setmaxregister increase {CONSUMER_REGISTERS}")
        part = self.op("subi", self.wg, 1)
        first_row = self.op("addi", self.q0, self.op("muli", part, WGMMA_M))
        rows = [self.op("addi", self.op("addi", first_row, self.op("muli", self.warp, 16)),
                        self.op("addi", self.group, 8 * r)) for r in range(2)]
        limits = tuple(self.to_i32(_causal_limit(self, row, self.limit) if spec.causal else self.limit)
                       for row in rows)
        first_limit = _causal_limit(self, first_row, self.limit) if spec.causal else self.limit
        q_at = self.op("muli", part, WGMMA_M * ROW_BYTES)
        q_base = hopper.shared_descriptor(t, self.smem, q_at, plan.q)
        q_descs = [hopper.descriptor_at(t, q_base, plan.q.tile_offset(0, s)) for s in range(spec.d // WGMMA_K)]
        self.k_base = hopper.shared_descriptor(t, self.smem, t.const(plan.q.bytes + plan.k.offset), plan.k)
        self.v_base = hopper.shared_descriptor(t, self.smem, t.const(plan.q.bytes + plan.v.offset), plan.v)
        self.q_ready.wait(t, t.const(0), t.value("arith.constant false", "p"))
        state = [self.ninf] * 2 + [self.zero] * (2 + spec.dv // 2)
        parts = [(t.const(0), self.trips, self.mask)]
        if self.mask:
            whole = _whole_tiles(self, first_limit, self.trips, plan.tile.BK)
            parts = [(t.const(0), whole, False), (whole, self.trips, True)]
        for lo, hi, masked in parts:
            state = self.key_loop(lo, hi, q_descs, limits if masked else None, state)
        o_base = self.op("muli", self.op("muli", self.bz, self.dim(spec.sq)), spec.dv)
        _store_rows(self, state, rows, self.dim(spec.sq), o_base)

    def key_loop(self, lo: str, hi: str, q_descs: list[str], limits: tuple[str, str] | None,
                 state: list[str]) -> list[str]:
        """Key tiles ``lo`` to ``hi``: wait for the slot, attend to it, free it."""
        t, plan = self.t, self.plan
        with t.for_carried(lo, hi, t.const(1), state, "f32", ("it", "st", "fin")) as loop:
            slot, parity = hopper.ring_position(t, loop.iv, plan.tile.STAGES, producer=False)
            self.full.wait(t, slot, parity)
            stage = t.value(f"arith.index_cast {self.op('muli', slot, plan.stage_bytes >> 4)} : index to i64", "d")
            k_desc, v_desc = (hopper.descriptor_at(t, base, stage) for base in (self.k_base, self.v_base))
            key0 = self.op("muli", loop.iv, plan.tile.BK)
            new = self.attend(q_descs, k_desc, v_desc, key0, limits, loop.args)
            with t.if_(self.cmp("eq", self.lane, t.const(0))):
                self.empty.arrive(t, slot)
            t.yield_(new, ["f32"] * len(new))
        return loop.results

    def scores(self, q_descs: list[str], k_desc: str) -> list[list[str]]:
        """S = Q K^T of the warpgroup's 64 rows and the tile's keys: d / 16 wgmmas from shared memory; the
        thread's elements as tiles of 4 (m16n8 order: element 4j + e at row e / 2, column 8j + e % 2)."""
        t, plan = self.t, self.plan
        bk = plan.tile.BK
        acc = t.value(f"llvm.mlir.undef : {hopper.accumulator_type(bk)}", "undef")
        hopper.fence(t)
        for s, a in enumerate(q_descs):
            b = hopper.descriptor_at(t, k_desc, plan.k.tile_offset(0, s))
            acc = hopper.wgmma_shared(t, a, b, acc, bk, self.et, True, plan.k.k_major, accumulate=s > 0)
        hopper.commit_and_wait(t)
        values = self.elements(acc, bk)
        return [values[4 * j:4 * j + 4] for j in range(bk // 8)]

    def elements(self, acc: str, n: int) -> list[str]:
        acc_type = hopper.accumulator_type(n)
        return [self.t.value(f"llvm.extractvalue {acc}[{i}] : {acc_type}", "s") for i in range(n // 2)]

    def values_times_p(self, p: list[list[str]], v_desc: str, o: list[list[str]]) -> list[list[str]]:
        """O += P V: P's elements rounded and paired into the register A fragments of BK / 16 wgmmas with V
        read through descriptors."""
        t, plan, dv = self.t, self.plan, self.spec.dv
        flat = [x for tile in p for x in tile]
        registers = [[self.pack(flat[lo], flat[hi]) for lo, hi in hopper.register_a_elements(s)]
                     for s in range(plan.tile.BK // WGMMA_K)]
        acc = [x for tile in o for x in tile]
        hopper.fence(t)
        for s, a in enumerate(registers):
            b = hopper.descriptor_at(t, v_desc, plan.v.tile_offset(0, s))
            acc = self.elements(hopper.wgmma_register_a(t, a, b, acc, self.et, plan.v.k_major), dv)
        hopper.commit_and_wait(t)
        return [acc[4 * j:4 * j + 4] for j in range(dv // 8)]
