"""Attention on sm_90a in the manner of FlashAttention-3: TMA, an mbarrier ring and wgmma; one kernel for a
prefill, a split mode of it and the split-KV combine kernel for a decode.

**The tile** is the spec's :class:`~prism.codegen.gpu.spec.AttentionTile`
(the search's choice; else :func:`default_tile`): ``BQ`` (64 or 128) gives
``CONSUMERS = BQ / 64`` consumer warpgroups, ``BK`` (64 or 128) the keys
of a tile and ``STAGES`` the depth of the K and V rings; two consumers
always take turns (``PINGPONG``). The other knobs are the other kernels'.

A block takes ``64 * CONSUMERS`` query rows of one batch index (one grid
dimension over the batch indices, the query tiles of one batch index
adjacent so that they share K and V in L2, and no batch count over the
65535 of CUDA's grid y) and ``128 * (1 + CONSUMERS)`` threads in warpgroups:

- **The producer** (warpgroup 0) gives its registers away (``setmaxnreg``);
  one thread loads the Q tile once by TMA (its own mbarrier), then walks the
  key tiles, filling two ``STAGES``-deep rings, one of K tiles and one of V
  tiles: for each it waits until the slot is empty, announces the slot's
  bytes on its *full* mbarrier and loads the tile. Phases follow
  :func:`~prism.codegen.gpu.hopper.ring_position`. K and V have rings of
  their own because a consumer frees a K tile one softmax before the V tile
  of the same keys.
- **Each consumer** (warpgroups 1..CONSUMERS, 64 query rows each) takes
  registers and waits for Q. ``S = Q K^T`` is ``d / 16`` wgmma m64nBKk16
  from shared memory (A = Q, K-major; B = K, K-major for ``"nd"`` K
  ``[.., keys, d]``, MN-major read transposed for ``"dn"`` K ``[.., d,
  keys]``). ``O += P V`` is ``BK / 16`` wgmma m64n(dv)k16 with **A in
  registers**: S's accumulator after the softmax, rounded to the inputs'
  type and packed in pairs, is the register A fragment (elements ``8 s ..
  8 s + 7`` of the m64nBK accumulator are key step ``s``'s four words,
  :func:`~prism.codegen.gpu.hopper.register_a_elements`); V ``[.., keys,
  dv]`` is an MN-major B. The softmax is the online one of
  :mod:`~prism.codegen.gpu.attention` in registers: base-2 scores times
  ``scale * log2 e``, row maxima and sums over the four lanes of a row, O
  rescaled by ``alpha = exp2(m_old - m_new)``, masked keys at -inf.
- **The schedule** is FA3's intra-warpgroup overlap. Tile 0: S, softmax,
  P. Tile ``j >= 1``: issue ``S_j`` and then ``O += P_{j-1} V_{j-1}`` as two
  wgmma groups; wait for the first (``wait_group 1``), free K_j's slot, run
  the softmax of ``S_j`` while the second runs, pack ``P_j``; wait for it
  (``wait_group 0``), free V_{j-1}'s slot, rescale O by ``alpha_j``. After
  the last tile, its ``P V``. A slot is freed by lane 0 of each consumer
  warp (the empty barriers count the consumer warps). Accumulators and P's
  words pass through empty inline asm (:func:`~prism.codegen.gpu.hopper.fence_registers`)
  after each wait and before each ``wgmma.fence``, so that LLVM cannot move
  their reads and writes across them.
- **Two consumers take turns** (``PINGPONG``, FA3's inter-warpgroup
  schedule): a consumer issues its wgmmas between a ``bar.sync`` on its own
  named barrier (1 or 2, of both warpgroups' 256 threads) and a
  ``bar.arrive`` on the other's, so that one's softmax runs while the
  other's products do; the second consumer gives the first its first turn.
  Both run the same key tiles, hence as many turns.

**Shared memory** (dynamic, 1024-byte aligned): the Q tile, the ``STAGES``
K tiles, the ``STAGES`` V tiles, each stored in chunks of 64 elements (128
bytes) along its contiguous dimension, as TMA's 128-byte swizzle writes them
and the wgmma descriptors read them
(:class:`~prism.codegen.gpu.hopper.TileOperand`). The tensor maps are
3-D (contiguous dimension, rows, flattened batch) so that a box never
crosses a batch index; TMA zero-fills rows past ``sq`` and keys past ``skv``.

**Masks.** Keys past ``skv`` (zero-filled, but their scores must be -inf)
and, with ``causal``, keys ``j > i + skv - sq``: tile 0 is masked, then
the key tiles that hold no masked key for the consumer's first row run in a
loop without masks, the rest in a loop with them. The producer loads the key tiles any row of the block
reaches. A row that no key reaches comes out zero.

**The output.** O is divided by the row sums once, at the end, and stored
from the fragment: each thread's two adjacent columns as one 2-element
store (rows of an even ``dv`` keep them aligned), rows past ``sq`` masked.

**Decode** (one query row) runs the same pipeline in a split mode: the
grid is ``splits`` blocks per batch index (:func:`sm90_splits`: the spec's
count, else balanced as the split-KV kernel's), each with one consumer
whatever ``BQ`` says, over one contiguous share of the keys, whole key tiles
as :mod:`~prism.codegen.gpu.attention`'s split kernel shares them
(``ceil(ceil(skv / BK) / splits)`` tiles each). The query is row 0 of the
64-row Q tile (TMA zero-fills the rest, whose results are dropped: the
padding costs FLOPs a memory-bound decode has to spare). Instead of O the
block writes its share's partial state of row 0 to the split kernel's
temporaries at the entries it would (``batch * splits + share``): the
running max in the same base-2 scaled form, the sum and the unnormalized O
row; a share past the keys writes -inf, 0 and zeros. The split kernel's
combine kernel merges them into O unchanged.

**What it takes** (:func:`sm90_attention_problem`): a tile as above whose
shared memory fits, f16 or bf16 Q, K, V,
``d`` and ``dv`` of 64 or 128 (whole 128-byte swizzle rows, a wgmma N and a
TMA box), rows that TMA can read (16-byte multiples: ``"dn"`` K needs
``skv`` a multiple of 8; a dynamic one is checked at launch by
:attr:`Launch.when`: a decode's split mode then shares its temporaries and
combine kernel with the split-KV kernel of the same share count, which takes
the other sizes).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from prism.codegen.gpu import hopper
from prism.codegen.gpu.attention import (
    AttentionPlan,
    Flash,
    attention_problem,
    attention_spec_problem,
    causal_limit,
    combine_kernel,
    decode_temporaries,
    is_decode,
    needs_key_mask,
    share_count,
    store_rows,
    whole_tiles,
)
from prism.codegen.gpu.hopper import (
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
    AttentionSpec,
    AttentionTile,
    Kernel,
    Launch,
    Param,
    Tensor,
    numel_text,
)
from prism.infra.errors import UnsupportedOp

HEAD_SIZES = (64, 128)
INPUT_TYPES = ("f16", "bf16")
WARPS_PER_GROUP = WARPGROUP // 32
# setmaxnreg: the producer only issues TMA and keeps the fewest registers allowed; each consumer holds the S and O
# accumulators and P's words at once (d = 128 needs all of 232 with two consumers taking turns), so it takes the
# rest of the SM's 64K registers (24 x 128 + 2 x 240 x 128 = 64512).
PRODUCER_REGISTERS = 24
CONSUMER_REGISTERS = 240


QUERY_TILES = (WGMMA_M, 2 * WGMMA_M)  # BQ: one or two consumer warpgroups
KEY_TILES = (64, 128)  # BK: whole swizzle rows, a TMA box, a wgmma N


@dataclass(frozen=True)
class _Tile:
    """The kernel's view of an :class:`AttentionTile`: consumer warpgroups (``BQ / 64``, 64 query rows each),
    keys per tile (``BK``), ring depth (``STAGES``), and whether two consumers take turns issuing their wgmmas
    (FA3's inter-warpgroup schedule: always with two)."""

    CONSUMERS: int
    BK: int
    STAGES: int

    @property
    def PINGPONG(self) -> bool:
        return self.CONSUMERS == 2

    @classmethod
    def of(cls, tile: AttentionTile, decode: bool = False) -> _Tile:
        """A decode's one query row takes one consumer whatever ``BQ`` says."""
        return cls(CONSUMERS=1 if decode else tile.BQ // WGMMA_M, BK=tile.BK, STAGES=tile.STAGES)


def default_tile(spec: AttentionSpec) -> AttentionTile:
    """Prefill: two consumers and 128-key tiles; a third stage where the head sizes leave room for it. Decode:
    one consumer and 64-key tiles four stages deep (a key stream wants tiles in flight more than long ones)."""
    if is_decode(spec):
        return AttentionTile(BQ=WGMMA_M, BK=64, STAGES=4)
    stages = 3 if max(spec.d, spec.dv) <= 64 else 2
    return AttentionTile(BQ=2 * WGMMA_M, BK=128, STAGES=stages)


def sm90_tile(spec: AttentionSpec, tile: AttentionTile | None = None) -> AttentionTile:
    """The tile the kernel runs: ``tile``, else the spec's (the search's choice), else :func:`default_tile`."""
    return tile or spec.tile or default_tile(spec)


@dataclass(frozen=True)
class Sm90AttentionPlan:
    """The kernel's shape: the Q tile and one stage's K and V tiles as TMA writes them and wgmma reads them."""

    spec: AttentionSpec
    tile: _Tile
    q: TileOperand  # rows: the block's query rows; K: d; at byte 0
    k: TileOperand  # rows (N): the tile's keys; K: d; its ring's first stage at byte ``k.offset``
    v: TileOperand  # rows (N): dv; K: the tile's keys; its ring's first stage at byte ``v.offset``
    splits: int = 0  # decode: the key shares of a batch index, a block each; 0 for prefill

    @property
    def decode(self) -> bool:
        return self.splits > 0

    @property
    def rows(self) -> int:
        return WGMMA_M * self.tile.CONSUMERS

    @property
    def threads(self) -> int:
        return WARPGROUP * (1 + self.tile.CONSUMERS)

    @property
    def shared_bytes(self) -> int:
        return self.q.bytes + self.tile.STAGES * (self.k.bytes + self.v.bytes)

    @property
    def max_registers(self) -> int:
        """``.maxnreg``: the block's registers at entry cover what setmaxnreg moves (a multiple of 8)."""
        consumers = self.tile.CONSUMERS
        need = PRODUCER_REGISTERS + consumers * CONSUMER_REGISTERS
        return -(-need // (8 * (1 + consumers))) * 8


def plan_sm90_attention(spec: AttentionSpec, tile: AttentionTile | None = None) -> Sm90AttentionPlan:
    """The plan of ``spec`` with the tile of :func:`sm90_tile` (whether or not it fits:
    :func:`sm90_attention_problem` checks)."""
    tile = _Tile.of(sm90_tile(spec, tile), is_decode(spec))
    batched = bool(spec.batch)
    q = TileOperand(spec.q, WGMMA_M * tile.CONSUMERS, True, batched, spec.d, spec.sq, 0, spec.d)
    if spec.k_layout == "nd":
        k = TileOperand(spec.k, tile.BK, True, batched, spec.d, spec.skv, q.bytes, spec.d)
    else:
        k = TileOperand(spec.k, tile.BK, False, batched, spec.skv, spec.d, q.bytes, spec.d)
    v = TileOperand(spec.v, spec.dv, False, batched, spec.dv, spec.skv, q.bytes + tile.STAGES * k.bytes, tile.BK)
    splits = sm90_splits(spec, tile.BK) if is_decode(spec) else 0
    return Sm90AttentionPlan(spec, tile, q, k, v, splits)


def sm90_splits(spec: AttentionSpec, key_tile: int) -> int:
    """A decode's key shares per batch index, a block each: the spec's count, else as
    :func:`~prism.codegen.gpu.attention.share_count` balances ``key_tile``-key tiles over the H200's SMs."""
    return share_count(spec, "sm_90a", key_tile, 1)


def split_plan(plan: Sm90AttentionPlan) -> AttentionPlan:
    """The split-KV plan whose temporaries and combine kernel match the decode's shares."""
    return AttentionPlan(True, plan.tile.BK, 1, plan.splits, plan.shared_bytes, plan.max_registers)


def sm90_temporaries(spec: AttentionSpec, tile: AttentionTile | None = None) -> list[Tensor]:
    """A decode's f32 partials: the split-KV kernels' own (:func:`~prism.codegen.gpu.attention.attention_temporaries`)
    for the shares of :func:`sm90_splits`; none for a prefill."""
    if not is_decode(spec):
        return []
    return decode_temporaries(spec, split_plan(plan_sm90_attention(spec, tile)))


# -- what the kernel refuses -----------------------------------------------------------------------------------------


def sm90_attention_problem(spec: AttentionSpec, tile: AttentionTile | None = None) -> str | None:
    """Why ``spec`` cannot take the sm_90a TMA/wgmma prefill kernel with the tile of :func:`sm90_tile`; None if
    it can. (The checks of :func:`~prism.codegen.gpu.attention.attention_spec_problem` come first: shapes, sizes,
    output type.)"""
    return sm90_spec_problem(spec) or _tile_problem(spec, sm90_tile(spec, tile))


def sm90_spec_problem(spec: AttentionSpec) -> str | None:
    """Why no tile lets ``spec`` take the wgmma kernel (types, head sizes, K's rows), or None."""
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
    if is_decode(spec) and spec.splits < 0:
        return f"splits = {spec.splits} must be 0 (chosen) or positive"
    return None


def _tile_problem(spec: AttentionSpec, tile: AttentionTile) -> str | None:
    if tile.BQ not in QUERY_TILES and not is_decode(spec):
        return f"BQ={tile.BQ}: the kernel takes {QUERY_TILES} query rows (one or two consumer warpgroups of 64)"
    if tile.BK not in KEY_TILES:
        return f"BK={tile.BK}: key tiles are {KEY_TILES} keys (whole swizzle rows, a TMA box, a wgmma N)"
    if tile.STAGES < 2:
        return f"STAGES={tile.STAGES}: the ring needs at least 2 stages"
    plan = plan_sm90_attention(spec, tile)
    if plan.shared_bytes + SHARED_RESERVED > SHARED_LIMIT:
        return f"{plan.shared_bytes} bytes of shared memory exceed {SHARED_LIMIT - SHARED_RESERVED}"
    return None


def takes_sm90(spec: AttentionSpec, chip: str) -> bool:
    """Whether ``spec`` runs on the wgmma kernel (a decode on its split mode) on ``chip``: sm_90a, and a spec it
    takes with its tile (a tile it refuses, chosen for the mma.sync kernel, runs there)."""
    return chip == "sm_90a" and attention_spec_problem(spec, chip) is None and sm90_attention_problem(spec) is None


def kernels_problem(spec: AttentionSpec, chip: str) -> str | None:
    """Why no attention kernel takes ``spec`` with its tile on ``chip``: None where the wgmma kernel runs it
    alone; where its rows' alignment is known only at launch, the mma.sync kernel's refusal of the same tile for
    the rest (a wgmma tile, at most 128 x 128 with head sizes of 128, always fits it on sm_90a); elsewhere the
    mma.sync and split-KV kernels'."""
    if takes_sm90(spec, chip) and launch_condition(spec) is None:
        return None
    return attention_problem(spec, chip)


def launch_condition(spec: AttentionSpec) -> str | None:
    """Where a dynamic contiguous dimension must keep rows a multiple of 16 bytes: ``"dn"`` K's key count."""
    if spec.k_layout == "dn" and isinstance(spec.skv, str):
        per_row = TMA_ROW_ALIGN // ELEMENT_BYTES[spec.k.dtype]
        return f"{spec.skv} // {per_row} * {per_row} == {spec.skv}"
    return None


# -- the kernel ------------------------------------------------------------------------------------------------------


def emit_sm90_attention(spec: AttentionSpec, tile: AttentionTile | None = None) -> list[Kernel]:
    """The warp-specialized TMA/wgmma prefill kernel of ``spec``, or for a decode its split mode and the
    split-KV combine kernel, both with the temporaries; raises UnsupportedOp where
    :func:`sm90_attention_problem` refuses it."""
    problem = sm90_attention_problem(spec, tile)
    if problem is not None:
        raise UnsupportedOp(f"attention '{spec.name}' cannot take the sm_90a wgmma kernel: {problem}")
    plan = plan_sm90_attention(spec, tile)
    writer = _Writer(plan)
    text = writer.kernel()
    batch = numel_text(tuple(spec.batch))
    if plan.decode:  # a block per share of each batch index, then the split-KV kernels' combine
        temporaries = tuple(sm90_temporaries(spec, tile))
        launch = Launch((f"{plan.splits} * {batch}", "1", "1"), (plan.threads, 1, 1), plan.shared_bytes,
                        writer.params(), when=launch_condition(spec))
        split = Kernel(writer.name, text, launch, max_registers=plan.max_registers, temporaries=temporaries)
        combine = combine_kernel(spec, split_plan(plan))
        return [split, replace(combine, temporaries=temporaries)]
    grid = (f"{_cdiv(spec.sq, plan.rows)} * {batch}", "1", "1")
    launch = Launch(grid, (plan.threads, 1, 1), plan.shared_bytes, writer.params(), when=launch_condition(spec))
    return [Kernel(writer.name, text, launch, max_registers=plan.max_registers)]


def _cdiv(size: int | str, tile: int) -> str:
    return str(-(-size // tile)) if isinstance(size, int) else f"cdiv({size}, {tile})"


class _Writer(Flash):
    """The kernel's text: the setup, the producer's branch and the consumers'. :class:`Flash` gives the scores'
    scale and masks, the reductions over a row's four lanes, P's packing and O's store; the products, the
    pipeline and the softmax's split around them are here."""

    def __init__(self, plan: Sm90AttentionPlan) -> None:
        spec = plan.spec
        outputs = [("o", spec.o)]
        if plan.decode:
            outputs = list(zip(("po", "pm", "pl"), decode_temporaries(spec, split_plan(plan)), strict=True))
        super().__init__(spec, outputs, plan.threads, 0, plan.tile.BK, needs_key_mask(spec, plan.tile.BK))
        self.plan = plan
        self.name = f"{spec.name}_{'decode' if plan.decode else 'prefill'}_sm90"
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
        if plan.decode:
            self.decode_ids()
        else:
            q_tiles = self.op("ceildivui", self.dim(spec.sq), plan.rows)
            self.q0 = self.op("muli", self.op("remui", self.bid, q_tiles), plan.rows)
            self.bz = self.op("divui", self.bid, q_tiles)  # the flattened batch index
        self.smem = t.value(f"gpu.dynamic_shared_memory : memref<?xi8, {SHARED}>", "smem")
        self.maps = [t.value(f"builtin.unrealized_conversion_cast %map{i} : !llvm.ptr to {op.descriptor_type()}",
                             "tmap") for i, op in enumerate(self.operands)]
        stages = plan.tile.STAGES
        self.full = [hopper.Barriers.create(t, stages, f"full{x}") for x in "kv"]
        self.empty = [hopper.Barriers.create(t, stages, f"empty{x}") for x in "kv"]
        self.q_ready = hopper.Barriers.create(t, 1, "qready")
        with t.if_(self.cmp("eq", self.tid, t.const(0))):
            for full, empty in zip(self.full, self.empty, strict=True):
                full.init(t, 1)
                empty.init(t, WARPS_PER_GROUP * plan.tile.CONSUMERS)
            self.q_ready.init(t, 1)
            for m, op in zip(self.maps, self.operands, strict=True):
                t.add(f"nvgpu.tma.prefetch.descriptor {m} : {op.descriptor_type()}")
        t.add("nvvm.fence.mbarrier.init")
        t.add("gpu.barrier")
        sq, skv = self.dim(spec.sq), self.dim(spec.skv)
        if plan.decode:
            self.key_range(skv)
            return
        self.key0, self.limit = t.const(0), skv
        if spec.causal:  # the block's last row reaches key q0 + rows - 1 + skv - sq
            reach = self.op("addi", self.op("subi", skv, sq), self.op("addi", self.q0, plan.rows))
            self.limit = self.op("minsi", skv, self.op("maxsi", reach, 0))
        self.trips = self.op("ceildivui", self.limit, plan.tile.BK)

    def decode_ids(self) -> None:
        """A decode block's batch index (``bz``) and key share: block ``bz * splits + share``; the one query
        row at row 0."""
        splits = self.plan.splits
        self.bz, self.share = self.op("divui", self.bid, splits), self.op("remui", self.bid, splits)
        self.q0 = self.t.const(0)

    def key_range(self, skv: str) -> None:
        """A decode block's keys, as the split-KV kernel shares them: ``ceil(ceil(skv / BK) / splits)`` whole
        key tiles a share from key ``share * that * BK`` (``key0``) to ``limit`` (the share's end or skv), in
        ``trips`` tiles (none for a share past the keys). A causal mask hides no key from the last query row."""
        bk = self.plan.tile.BK
        span = self.op("muli", self.op("ceildivui", self.op("ceildivui", skv, bk), self.plan.splits), bk)
        self.key0 = self.op("muli", self.share, span)
        self.limit = self.op("minsi", self.op("addi", self.key0, span), skv)
        self.trips = self.op("ceildivui", self.op("maxsi", self.op("subi", self.limit, self.key0), 0), bk)

    def batch_index(self) -> str | None:
        return self.bz if self.spec.batch else None

    # -- the producer ------------------------------------------------------------------------------------------------

    def producer(self) -> None:
        """One thread loads Q, then fills the K and V rings, K of a tile before its V."""
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
                key0 = self.op("addi", self.key0, self.op("muli", it, plan.tile.BK))
                for x, (op, k0, mn0) in enumerate(((plan.k, zero, key0), (plan.v, key0, zero))):
                    self.empty[x].wait(t, slot, parity)
                    self.full[x].expect_bytes(t, slot, op.bytes)
                    at = self.op("addi", self.op("muli", slot, op.bytes), op.offset)
                    hopper.tma_load(t, self.smem, self.maps[1 + x], op, self.full[x], slot, at, k0, mn0,
                                    self.batch_index())

    # -- the consumers -----------------------------------------------------------------------------------------------

    def consumer(self) -> None:
        """Take registers, wait for Q; the first key tile's scores and softmax, then the key tiles that follow
        (mask-free ones first), each overlapping its scores' softmax with the previous tile's P V; the last
        tile's P V; O stored."""
        t, spec, plan = self.t, self.spec, self.plan
        t.add(f"nvvm.setmaxregister increase {CONSUMER_REGISTERS}")
        part = self.op("subi", self.wg, 1)
        first_row = self.op("addi", self.q0, self.op("muli", part, WGMMA_M))
        rows = [self.op("addi", self.op("addi", first_row, self.op("muli", self.warp, 16)),
                        self.op("addi", self.group, 8 * r)) for r in range(2)]
        causal = spec.causal and not plan.decode
        self.limits = tuple(self.to_i32(causal_limit(self, row, self.limit) if causal else self.limit)
                            for row in rows)
        first_limit = causal_limit(self, first_row, self.limit) if causal else self.limit
        q_base = hopper.shared_descriptor(t, self.smem, self.op("muli", part, WGMMA_M * ROW_BYTES), plan.q)
        self.q_descs = [hopper.descriptor_at(t, q_base, plan.q.tile_offset(0, s)) for s in range(spec.d // WGMMA_K)]
        self.bases = [hopper.shared_descriptor(t, self.smem, t.const(op.offset), op) for op in (plan.k, plan.v)]
        self.q_ready.wait(t, t.const(0), t.value("arith.constant false", "p"))
        self.turns = self.turn_barriers(part)
        state = self.first_tile()
        start = t.const(1)
        parts = [(start, self.trips, self.mask)]
        if self.mask:
            reach = self.op("subi", first_limit, self.key0)
            whole = self.op("maxui", whole_tiles(self, reach, self.trips, plan.tile.BK), start)
            parts = [(start, whole, False), (whole, self.trips, True)]
        for lo, hi, masked in parts:
            state = self.key_loop(lo, hi, masked, state)
        out = self.last_product(state)
        if plan.decode:
            self.store_partials(out)
            return
        o_base = self.op("muli", self.op("muli", self.bz, self.dim(spec.sq)), spec.dv)
        store_rows(self, out, rows, self.dim(spec.sq), o_base)

    def store_partials(self, state: list[str]) -> None:
        """The share's partial state of the query row (accumulator row 0: warp 0's lanes of group 0) where
        the split-KV kernel writes it, entry ``batch * splits + share``: the unnormalized O row (each lane's
        column pairs ``8 j + 2 * (lane % 4)``), the running max (base 2, scaled) and the sum over the row's
        four lanes. A share without keys writes -inf, 0 and zeros, which the combine kernel weighs by 0."""
        t, spec = self.t, self.spec
        total = self.quad_reduce(state[2], "addf")
        row = self.op("addi", self.op("muli", self.bz, self.plan.splits), self.share)
        with t.if_(self.cmp("eq", self.warp, t.const(0))), t.if_(self.cmp("eq", self.group, t.const(0))):
            start = self.op("addi", self.op("muli", row, spec.dv), self.op("muli", self.quad, 2))
            for j in range(spec.dv // 8):
                self.store_pair("po", self.op("addi", start, 8 * j), state[4 + 4 * j], state[5 + 4 * j])
            with t.if_(self.cmp("eq", self.quad, t.const(0))):
                for role, value in (("pm", state[0]), ("pl", total)):
                    ssa, tensor = self.tensors[role]
                    t.add(f"memref.store {value}, {ssa}[{row}] : {tensor.memref}")

    @property
    def state_types(self) -> list[str]:
        """The carried state: row maxima (2), row sums (2, the lane's share), O (dv / 2), the previous tile's P
        as register A words (BK / 4)."""
        return ["f32"] * (4 + self.spec.dv // 2) + ["i32"] * (self.plan.tile.BK // 4)

    def split(self, state: list[str]) -> tuple[list[str], list[str], list[str], list[str]]:
        dv = self.spec.dv
        return state[:2], state[2:4], state[4:4 + dv // 2], state[4 + dv // 2:]

    def first_tile(self) -> list[str]:
        """Tile 0 (masked: it may hold masked keys) where the block has keys; else the empty state."""
        t = self.t
        zero_word = t.value("arith.constant 0 : i32", "w")
        empty = [self.ninf] * 2 + [self.zero] * (2 + self.spec.dv // 2) + [zero_word] * (self.plan.tile.BK // 4)
        with t.if_(self.cmp("ugt", self.trips, t.const(0)), self.state_types, "first") as state:
            t.yield_(self.tile_step(t.const(0), True, empty, previous=False), self.state_types)
        with t.else_():
            t.yield_(empty, self.state_types)
        return state

    def key_loop(self, lo: str, hi: str, masked: bool, state: list[str]) -> list[str]:
        """Key tiles ``lo`` to ``hi`` (``lo`` >= 1), each with the previous tile's P V."""
        t = self.t
        with t.for_carried(lo, hi, t.const(1), state, self.state_types, ("it", "st", "fin")) as loop:
            t.yield_(self.tile_step(loop.iv, masked, loop.args, previous=True), self.state_types)
        return loop.results

    def tile_step(self, it: str, masked: bool, state: list[str], previous: bool) -> list[str]:
        """Key tile ``it``: issue its scores S = Q K^T (and, with ``previous``, the previous tile's O += P V
        behind them); once S is done, free K's slot and run the softmax while P V runs; once P V is done, free
        V's slot and rescale O. Returns the new state, P packed for the next step."""
        t, plan = self.t, self.plan
        m, sums, o, words = self.split(state)
        slot, parity = hopper.ring_position(t, it, plan.tile.STAGES, producer=False)
        self.full[0].wait(t, slot, parity)
        k_desc = self.stage_descriptor(0, slot)
        if previous:
            v_slot, v_desc = self.wait_values(self.op("subi", it, 1))
            o, words = hopper.fence_registers(t, o, "f32"), hopper.fence_registers(t, words, "i32")
        self.take_turn()
        hopper.fence(t)
        s_acc = self.issue_scores(k_desc)
        if previous:
            o_acc = self.issue_values_times_p(words, v_desc, o)
        self.pass_turn()
        hopper.wait(t, 1 if previous else 0)
        scores = hopper.fence_registers(t, self.elements(s_acc, plan.tile.BK), "f32")
        self.release(self.empty[0], slot)
        x = [scores[4 * j:4 * j + 4] for j in range(plan.tile.BK // 8)]
        key0 = self.op("addi", self.key0, self.op("muli", it, plan.tile.BK))
        x = self.scale_and_mask(x, key0, self.limits if masked else None)
        m_new, alpha, l_new = self.online_softmax(x, m, sums)
        words = self.p_words(x)
        if previous:
            hopper.wait(t, 0)
            o = hopper.fence_registers(t, self.elements(o_acc, self.spec.dv), "f32")
            self.release(self.empty[1], v_slot)
        o = [self.f("mulf", v, alpha[i % 4 // 2]) for i, v in enumerate(o)]
        return m_new + l_new + o + words

    def last_product(self, state: list[str]) -> list[str]:
        """The last tile's O += P V where the block has keys; the state for the store (maxima, sums, O)."""
        t = self.t
        m, sums, o, words = self.split(state)
        with t.if_(self.cmp("ugt", self.trips, t.const(0)), ["f32"] * len(o), "last") as out:
            v_slot, v_desc = self.wait_values(self.op("subi", self.trips, 1))
            pinned = hopper.fence_registers(t, o, "f32")
            words = hopper.fence_registers(t, words, "i32")
            self.take_turn()
            hopper.fence(t)
            acc = self.issue_values_times_p(words, v_desc, pinned)
            self.pass_turn()
            hopper.wait(t, 0)
            result = hopper.fence_registers(t, self.elements(acc, self.spec.dv), "f32")
            self.release(self.empty[1], v_slot)
            t.yield_(result, ["f32"] * len(o))
        with t.else_():
            t.yield_(o, ["f32"] * len(o))
        return m + sums + out

    # -- pieces ------------------------------------------------------------------------------------------------------

    def stage_descriptor(self, which: int, slot: str) -> str:
        """The descriptor of K's (0) or V's (1) tile in ring slot ``slot``."""
        op = (self.plan.k, self.plan.v)[which]
        stage = self.t.value(f"arith.index_cast {self.op('muli', slot, op.bytes >> 4)} : index to i64", "d")
        return hopper.descriptor_at(self.t, self.bases[which], stage)

    def wait_values(self, it: str) -> tuple[str, str]:
        """Wait for tile ``it``'s V; its slot and descriptor."""
        slot, parity = hopper.ring_position(self.t, it, self.plan.tile.STAGES, producer=False)
        self.full[1].wait(self.t, slot, parity)
        return slot, self.stage_descriptor(1, slot)

    def turn_barriers(self, part: str) -> tuple[str, str, str] | None:
        """With two consumers taking turns: the named barriers (ids 1 and 2, 0 being the CTA's) of this
        consumer's turn and of the other's, and their thread count (both warpgroups). The second consumer gives
        the first its first turn."""
        t = self.t
        if not (self.plan.tile.PINGPONG and self.plan.tile.CONSUMERS == 2):
            return None
        mine = t.value(f"arith.index_cast {self.op('addi', part, 1)} : index to i32", "bar")
        other = t.value(f"arith.index_cast {self.op('subi', t.const(2), part)} : index to i32", "bar")
        threads = t.value(f"arith.constant {2 * WARPGROUP} : i32", "n")
        with t.if_(self.cmp("eq", part, t.const(1))):
            t.add(f"nvvm.barrier.arrive id = {other} number_of_threads = {threads}")
        return mine, other, threads

    def take_turn(self) -> None:
        """Wait until the other consumer has issued its wgmmas (bar.sync on this consumer's barrier)."""
        if self.turns:
            mine, _, threads = self.turns
            self.t.add(f"nvvm.barrier id = {mine} number_of_threads = {threads}")

    def pass_turn(self) -> None:
        """Let the other consumer issue its wgmmas (bar.arrive on its barrier)."""
        if self.turns:
            _, other, threads = self.turns
            self.t.add(f"nvvm.barrier.arrive id = {other} number_of_threads = {threads}")

    def release(self, barriers: hopper.Barriers, slot: str) -> None:
        """Lane 0 of each consumer warp frees the slot (its wgmmas have read it)."""
        with self.t.if_(self.cmp("eq", self.lane, self.t.const(0))):
            barriers.arrive(self.t, slot)

    def p_words(self, p: list[list[str]]) -> list[str]:
        """P (tiles of 4) rounded to the inputs' type and packed in pairs: the register A words of the key
        steps of O += P V, four per step (:func:`~prism.codegen.gpu.hopper.register_a_elements`)."""
        flat = [v for tile in p for v in tile]
        return [self.pack(flat[lo], flat[hi]) for s in range(self.plan.tile.BK // WGMMA_K)
                for lo, hi in hopper.register_a_elements(s)]

    def issue_scores(self, k_desc: str) -> str:
        """S = Q K^T of the warpgroup's 64 rows and the tile's keys: d / 16 wgmmas from shared memory, one
        group, committed; the accumulator struct (m16n8 order: element 4j + e at row e / 2, column
        8j + 2 * (lane % 4) + e % 2)."""
        t, plan = self.t, self.plan
        acc = t.value(f"llvm.mlir.undef : {hopper.accumulator_type(plan.tile.BK)}", "undef")
        for s, a in enumerate(self.q_descs):
            b = hopper.descriptor_at(t, k_desc, plan.k.tile_offset(0, s))
            acc = hopper.wgmma_shared(t, a, b, acc, plan.tile.BK, self.et, True, plan.k.k_major, accumulate=s > 0)
        hopper.commit(t)
        return acc

    def issue_values_times_p(self, words: list[str], v_desc: str, o: list[str]) -> str:
        """O += P V: BK / 16 wgmmas with P's words as register A (four per key step) and V read through its
        descriptor, one group, committed; the accumulator struct."""
        t, plan = self.t, self.plan
        acc = o
        for s in range(plan.tile.BK // WGMMA_K):
            b = hopper.descriptor_at(t, v_desc, plan.v.tile_offset(0, s))
            struct = hopper.wgmma_register_a(t, words[4 * s:4 * s + 4], b, acc, self.et, plan.v.k_major)
            acc = self.elements(struct, self.spec.dv) if s + 1 < plan.tile.BK // WGMMA_K else acc
        hopper.commit(t)
        return struct

    def elements(self, acc: str, n: int) -> list[str]:
        acc_type = hopper.accumulator_type(n)
        return [self.t.value(f"llvm.extractvalue {acc}[{i}] : {acc_type}", "s") for i in range(n // 2)]

    def online_softmax(self, x: list[list[str]], m: list[str], sums: list[str]) -> tuple[list[str], list[str],
                                                                                           list[str]]:
        """The online softmax of a tile's masked base-2 scores ``x`` (as in :class:`Flash`): per accumulator
        row, the new maximum, the factor ``alpha`` that rescales what came before, and the new sum; ``x``
        becomes P in place."""
        m_new, alpha, l_new = [], [], []
        for r in range(2):
            row = [tile[e] for tile in x for e in (2 * r, 2 * r + 1)]
            m_new.append(self.f("maxnumf", m[r], self.quad_reduce(self._fold(row, "maxnumf"), "maxnumf")))
            empty = self.t.value(f"arith.cmpf oeq, {m_new[r]}, {self.ninf} : f32", "p")
            ref = self.select(empty, self.zero, m_new[r], "f32")  # no key yet: keep exp2 away from inf - inf
            alpha.append(self.exp2(self.f("subf", m[r], ref)))
            for tile in x:
                for e in (2 * r, 2 * r + 1):
                    tile[e] = self.exp2(self.f("subf", tile[e], ref))
            total = self._fold([tile[e] for tile in x for e in (2 * r, 2 * r + 1)], "addf")
            l_new.append(self.f("addf", self.f("mulf", sums[r], alpha[r]), total))
        return m_new, alpha, l_new
