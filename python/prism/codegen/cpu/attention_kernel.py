"""Attention on the host: ``softmax(c * Q K^T) V`` in one pass over K and V, never storing the scores.

The chains of :mod:`prism.search.attention` (as ``cpu-tile`` sees them, after
``linalg.softmax`` is decomposed) whose value rows are whole vectors become
one kernel (chosen and planned by :mod:`.attention`) with FlashAttention's online softmax (Dao et al., 2022). Per
task, a block of BQ query rows of one head walks its share of K and V in
blocks of BKV rows, keeping a running row maximum ``m``, a running row sum
``l`` and an unnormalized output block ``O``:

1. ``S = Q_blk K_blk^T`` (BQ x BKV) by RM x RN register blocks; K is
   transposed once per call into ``[batch][d][kv]`` (zero past the end), so
   that the micro-kernel reads BKV-wide rows, as the GEMM kernel reads B.
   One-row blocks (RM = 1: a few query rows, decode) take each score as a dot
   product over K's rows where they lie instead;
2. per row: ``m' = max(m, max_j S)``, ``P = exp((S - m') c)`` (a vector
   polynomial; columns past the end of K are -inf, so they weigh 0),
   ``alpha = exp((m - m') c)``, ``l = alpha l + sum_j P``;
3. ``O = alpha O + P V_blk`` by RM x RN register blocks, V read in place;

and at the end ``out = O / l``. The scores exist only as one BQ x BKV block
per worker, in L2; nothing of size S x S is allocated. The result equals
the chain's in exact arithmetic for any row maximum: ``m`` cancels in
``o / l``.

Under a causal mask (key j kept for query i when ``j <= i + o``), a block of
query rows stops at its last row's last key, and the scores past each row's
last key in a block are -inf; a row with no key yet in its share keeps
``m = -inf`` and takes its exponents from 0, so that its weights are 0.

Tasks are ``batch x ceil(Sq / BQ) x KVS``, shared among the workers like the
GEMM kernel's (:mod:`.kernel`): contiguous shares, per-worker scratch. Rows
of a ragged last query block repeat its last row (computed, never stored).
With KVS > 1 (flash-decoding: fewer query blocks than cores), each task
takes one of KVS consecutive shares of the key blocks and leaves its
``m``, ``l`` and ``O`` in a buffer; a second parallel phase merges the
shares of each row: with ``M = max_s m_s`` and ``w_s = exp((m_s - M) c)``,
``out = sum_s w_s O_s / sum_s w_s l_s``.

Q, K and V may be bf16 or f16 in a chain that computes in f32 (the
products extend them, :func:`~prism.search.attention.match_attention`'s
``widened``): the kernel reads them in their type and extends each value
to f32 as it loads it (K into its f32 transposed copy, a task's block of Q
into a per-worker f32 block where register blocks read it), and the rest
is the f32 kernel's. Where the chain rounds P before P V (``arith.truncf``), the
kernel rounds each weight the same way (to nearest, ties to even) and
extends it back before P V, while ``l`` sums the unrounded weights, as the
chain's does. The weights it rounds are relative to the running maximum,
not the row's final one: ``round(p a) / a`` for the rescaling ``a`` that
the later ``alpha`` factors apply, which is within the rounding's own
relative error of ``round(p)``, and equal to it where one block of keys
holds the row. The weights are never subnormal (the exponential gives 0
below f32's smallest normal number), so a conversion that flushes subnormal
inputs rounds them as ``arith.truncf`` does. Where P is rounded, the
exponential's polynomial is only as accurate as the rounding needs (degree 4
for bf16, 5 for f16: :func:`~prism.codegen.cpu.text.exp2_degree`), two FMAs
or one fewer on the softmax's every vector; l and alpha take the same
weights, so a weight's error falls on the numerator and the denominator of
the output alike.

The schedule (BQ, BKV, RM, RN, KVS) is the attention family's choice, which
prism-instantiate leaves on the scores' product (``prism.attention``);
without one, :func:`.attention.plan_attention` picks fixed tiles.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from mlir import ir

from prism.codegen.cpu.kernel import dynamic_memref
from prism.codegen.cpu.kernel_bf16 import masked_read
from prism.codegen.cpu.text import F32, MlirText, exp2_degree, f32_literal

# Significand bits (the implicit one counted) of the types P may be rounded to.
SIGNIFICAND_BITS = {"bf16": 8, "f16": 11}


@dataclass(frozen=True)
class AttentionPlan:
    """Everything the text of one attention kernel depends on."""

    q_type: str
    k_type: str
    v_type: str
    out_type: str
    scale: float  # c, in exp((s - m) * c)
    bq: int  # query rows per task (a multiple of rm)
    bkv: int  # key/value rows per step (a multiple of rn)
    rm: int  # rows of a register block
    rn: int  # columns of a register block (a multiple of lanes)
    splits: int  # shares of the key blocks, merged at the end (KVS)
    causal: int | None  # a causal mask's offset: key j is kept for query i when j <= i + causal
    lanes: int
    workers: int
    p_type: str | None = None  # the type each weight of P is rounded to before P V; None: not rounded
    scalef: bool = False  # exponentials scaled by AVX-512's vscalefps (vectors of 16 on an AVX-512 host)
    amx: bool = False  # products on AMX tiles (:mod:`.attention_amx`): BQ and BKV multiples of AMX_BLOCK

    @property
    def direct_scores(self) -> bool:
        """Scores as dot products over K's rows where it lies (one-row blocks: a few query rows, decode):
        a query row reads each key once, so transposing K would only add a pass over it."""
        return self.rm == 1

    @property
    def batch_rank(self) -> int:
        return ir.RankedTensorType.parse(self.q_type).rank - 2

    @property
    def head_dim(self) -> int:
        return ir.RankedTensorType.parse(self.q_type).shape[-1]

    @property
    def value_dim(self) -> int:
        return ir.RankedTensorType.parse(self.v_type).shape[-1]


class AttentionWriter:
    """Writes the text of one attention kernel as a private ``func.func @attention(q, k, v)``, on tensors at its
    boundary (:meth:`text`). Its phases are methods that a kernel for other units overrides
    (:mod:`.attention_amx`)."""

    def __init__(self, plan: AttentionPlan):
        self.plan, self.t = plan, MlirText()
        self.rank = plan.batch_rank + 2
        self.dyn = dynamic_memref(self.rank, F32)
        self.vec = f"vector<{plan.lanes}x{F32}>"
        # Each operand's element type, and its buffer's type.
        self.elements = {name: str(ir.ShapedType(ir.RankedTensorType.parse(typ)).element_type)
                         for name, typ in (("q", plan.q_type), ("k", plan.k_type), ("v", plan.v_type))}
        self.dyns = {name: dynamic_memref(self.rank, element) for name, element in self.elements.items()}
        w, bq, bkv, dv = plan.workers, plan.bq, plan.bkv, plan.value_dim
        self.s_type = f"memref<{w}x{bq}x{bkv}x{F32}>"
        self.o_type = f"memref<{w}x{bq}x{dv}x{F32}>"
        self.row_type = f"memref<{w}x{bq}x{F32}>"
        self.kt_type = f"memref<?x?x{plan.head_dim}x{plan.bkv}x{F32}>"
        # A narrower Q's block, extended once per task, where register blocks read its elements many times over.
        self.staged_q = self.elements["q"] != F32 and not plan.direct_scores
        self.qblk_type = f"memref<{w}x{bq}x{plan.head_dim}x{F32}>"
        # Each share's m, l (per row) and O, by [share][flat batch][row]: with several shares of the keys.
        self.kept_row_type = f"memref<{plan.splits}x?x?x{F32}>"
        self.kept_o_type = f"memref<{plan.splits}x?x?x{dv}x{F32}>"

    def text(self) -> str:
        p, t = self.plan, self.t
        with t.region(f"func.func private @attention(%q: {p.q_type}, %k: {p.k_type}, %v: {p.v_type}) "
                      f"-> {p.out_type}"):
            self.c0, self.c1 = t.const(0), t.const(1)
            self.q, self.k, self.v = (t.buffer(f"%{name}", typ, self.dyns[name])
                                      for name, typ in (("q", p.q_type), ("k", p.k_type), ("v", p.v_type)))
            nb = p.batch_rank
            self.batch = [t.value(f"memref.dim {self.q}, {t.const(d)} : {self.dyns['q']}", "nb") for d in range(nb)]
            flat = self.c1
            for size in self.batch:
                flat = t.value(f"arith.muli {flat}, {size} : index", "nb")
            self.flat = flat
            self.sq = t.value(f"memref.dim {self.q}, {t.const(nb)} : {self.dyns['q']}", "sq")
            self.skv = t.value(f"memref.dim {self.k}, {t.const(nb)} : {self.dyns['k']}", "skv")
            kv_blocks = t.value(f"arith.ceildivui {self.skv}, {t.const(p.bkv)} : index", "nkb")
            self._prepare_keys(kv_blocks)
            self._allocate()
            self._tasks()
            t.add(f"return {t.tensor_of(self.out, self.dyn, p.out_type)} : {p.out_type}")
        return t.function_text()

    def _prepare_keys(self, kv_blocks: str) -> None:
        """What the kernel reads K and V from: K^T (f32, :meth:`_transpose_k`), or K where it lies for one-row
        blocks."""
        if not self.plan.direct_scores:
            self.kt = self.t.alloc(self.kt_type, [self.flat, kv_blocks], "kt")
            self._transpose_k(kv_blocks)

    def _allocate(self) -> None:
        """The output, each worker's scratch (S, O, m, l, alpha) and, with several shares of the keys, what each
        share leaves for the merge."""
        p, t = self.plan, self.t
        self.out = t.alloc(self.dyn, [*self.batch, self.sq, t.const(p.value_dim)], "out")
        self.s = t.alloc(self.s_type, hint="sblk")
        self.o = t.alloc(self.o_type, hint="oblk")
        self.m, self.l, self.alpha = (t.alloc(self.row_type, hint=name) for name in ("mrow", "lrow", "alpha"))
        if self.staged_q:
            self.qblk = t.alloc(self.qblk_type, hint="qblk")
        if p.splits > 1:
            self.kept_m, self.kept_l = (t.alloc(self.kept_row_type, [self.flat, self.sq], name)
                                        for name in ("kmrow", "klrow"))
            self.kept_o = t.alloc(self.kept_o_type, [self.flat, self.sq], "ko")

    # -- helpers ---------------------------------------------------------------------------------------------

    def _f(self, value: float) -> str:
        return self.t.value(f"arith.constant {f32_literal(value)} : {F32}", "cf")

    def _splat(self, value: float) -> str:
        return self.t.splat(value, self.plan.lanes)

    def _load(self, name: str, indices: list[str], hint: str) -> str:
        """One element of operand ``name`` (``q``, ``k`` or ``v``) at ``indices``, as f32 (extended where the
        operand is narrower)."""
        t, element = self.t, self.elements[name]
        buffer = getattr(self, name)
        x = t.value(f"memref.load {buffer}[{', '.join(indices)}] : {self.dyns[name]}", hint)
        return x if element == F32 else t.value(f"arith.extf {x} : {element} to {F32}", hint)

    def _load_vector(self, name: str, indices: list[str], hint: str) -> str:
        """A vector of the kernel's lanes of operand ``name`` from ``indices`` on, as f32 (extended where the
        operand is narrower)."""
        t, element, lanes = self.t, self.elements[name], self.plan.lanes
        buffer = getattr(self, name)
        x = t.value(f"vector.load {buffer}[{', '.join(indices)}] : {self.dyns[name]}, vector<{lanes}x{element}>",
                    hint)
        return x if element == F32 else t.value(f"arith.extf {x} : vector<{lanes}x{element}> to {self.vec}", hint)

    def _rounded(self, weights: str) -> str:
        """``weights`` (a vector) rounded to the plan's P type and extended back, as the chain rounds P before
        P V; ``weights`` itself where it does not."""
        p, t = self.plan, self.t
        if p.p_type is None:
            return weights
        narrow = f"vector<{p.lanes}x{p.p_type}>"
        return t.value(f"arith.extf {t.value(f'arith.truncf {weights} : {self.vec} to {narrow}', 'pr')} : {narrow} "
                       f"to {self.vec}", "pr")

    def _batch_of(self, flat: str) -> list[str]:
        """The batch indices of a flat batch index (the last dimension fastest)."""
        t, indices, rest = self.t, [], flat
        for size in reversed(self.batch):
            indices.append(t.value(f"arith.remui {rest}, {size} : index", "bi"))
            rest = t.value(f"arith.divui {rest}, {size} : index", "bq")
        return indices[::-1]



    def exp2(self, x: str) -> str:
        """2**x of a vector of values <= 0 (or NaN): every argument here is a score minus a running maximum,
        times a positive scale and log2(e). Where P is rounded before P V, the polynomial is as accurate as that
        rounding needs (:func:`~.text.exp2_degree`), for the weights, l and alpha alike."""
        p = self.plan
        bits = None if p.p_type is None else SIGNIFICAND_BITS[p.p_type]
        return self.t.exp2_nonpositive(x, p.lanes, scalef=p.scalef, degree=exp2_degree(bits))

    def _tree(self, combine, values: list[str]) -> str:
        """``combine(a, b)`` over ``values`` as a balanced tree: independent chains for the out-of-order core."""
        while len(values) > 1:
            odd = values[-1:] if len(values) % 2 else []
            values = [combine(a, b, self.vec) for a, b in zip(values[0::2], values[1::2], strict=False)] + odd
        return values[0]

    def _add(self, a: str, b: str, typ: str) -> str:
        """``a + b`` of two vectors of type ``typ``."""
        return self.t.value(f"arith.addf {a}, {b} : {typ}", "sum")

    def _max(self, a: str, b: str, typ: str) -> str:
        """The larger of ``a`` and ``b`` (vectors of type ``typ``), ``b`` where either is NaN: the compare-and-select
        that one ``vmaxps`` computes (``arith.maxnumf`` and ``arith.maximumf`` take three instructions on x86 to
        treat NaN otherwise). A NaN score still makes its row NaN, through its exponential."""
        t = self.t
        above = t.value(f"arith.cmpf ogt, {a}, {b} : {typ}", "gt")
        return t.value(f"arith.select {above}, {a}, {b} : {typ.replace(F32, 'i1')}, {typ}", "mx")

    def _across(self, combine, x: str) -> str:
        """``combine`` across the lanes of the vector ``x``, halving it each step (a tree: the reductions of
        ``vector.reduction`` on f32 run lane after lane, to keep the order of a sequential sum)."""
        t, lanes = self.t, self.plan.lanes
        while lanes > 1:
            lanes //= 2
            typ = f"vector<{2 * lanes}x{F32}>"
            low, high = (t.value(f"vector.extract_strided_slice {x} {{offsets = [{offset}], sizes = [{lanes}], "
                                 f"strides = [1]}} : {typ} to vector<{lanes}x{F32}>", "half") for offset in (0, lanes))
            x = combine(low, high, f"vector<{lanes}x{F32}>")
        return t.value(f"vector.extract {x}[0] : {F32} from vector<1x{F32}>", "all")

    # -- phases ----------------------------------------------------------------------------------------------

    def _transpose_k(self, kv_blocks: str) -> None:
        """K^T into ``kt[flat batch][d][j]``, zero for j past the end, one parallel task per BKV rows of a head:
        squares of lanes x lanes, each lanes keys' rows read as vectors (masked past the head size, zeros past
        the last key), transposed in registers (:meth:`_transposed`) and stored as rows of K^T."""
        p, t = self.plan, self.t
        lanes = p.lanes
        total = t.value(f"arith.muli {self.flat}, {kv_blocks} : index", "kt_tasks")
        last = t.value(f"arith.subi {self.skv}, {self.c1} : index", "kl")
        with t.share(total, p.workers) as (_, begin, end), t.for_(begin, end, self.c1, "kt") as task:
            fb = t.value(f"arith.divui {task}, {kv_blocks} : index", "fb")
            kb = t.value(f"arith.remui {task}, {kv_blocks} : index", "kb")
            j0 = t.value(f"arith.muli {kb}, {t.const(p.bkv)} : index", "j0")
            batch = self._batch_of(fb)
            with t.for_(self.c0, t.const(p.bkv), t.const(lanes), "jj") as jj:
                for d0 in range(0, p.head_dim, lanes):
                    width = min(lanes, p.head_dim - d0)
                    rows = []
                    for i in range(lanes):
                        j = t.value(f"arith.addi {jj}, {t.const(i)} : index", "j")
                        j = t.value(f"arith.addi {j0}, {j} : index", "j")
                        inside = t.value(f"arith.cmpi ult, {j}, {self.skv} : index", "in")
                        limit = t.value(f"arith.select {inside}, {t.const(width)}, {self.c0} : index", "lim")
                        mask = t.value(f"vector.create_mask {limit} : vector<{lanes}xi1>", "mask")
                        j = t.value(f"arith.minui {j}, {last} : index", "j")  # an address inside K
                        rows.append(self._masked_vector("k", [*batch, j, t.const(d0)], mask))
                    for e, column in enumerate(self._transposed(rows)[:width]):
                        t.add(f"vector.store {column}, {self.kt}[{fb}, {kb}, {t.const(d0 + e)}, {jj}] : "
                              f"{self.kt_type}, {self.vec}")

    def _masked_vector(self, name: str, indices: list[str], mask: str) -> str:
        """A vector of the kernel's lanes of operand ``name`` from ``indices`` on, zero where ``mask`` is off
        (nothing read there), as f32."""
        t, element, lanes = self.t, self.elements[name], self.plan.lanes
        x = masked_read(t, getattr(self, name), self.dyns[name], ", ".join(indices), mask, lanes, element)
        return x if element == F32 else t.value(f"arith.extf {x} : vector<{lanes}x{element}> to {self.vec}", "x")

    def _transposed(self, rows: list[str]) -> list[str]:
        """The columns of the square of ``rows`` (as many vectors as lanes): log2(lanes) rounds of two-vector
        shuffles, each round h swapping the off-diagonal h x h blocks of every 2h x 2h block."""
        t, lanes = self.t, self.plan.lanes
        h = 1
        while h < lanes:
            swapped = list(rows)
            for i in range(lanes):
                if i & h:
                    continue
                low = [j if not j & h else lanes + j - h for j in range(lanes)]
                high = [j + h if not j & h else lanes + j for j in range(lanes)]
                for target, mask in ((i, low), (i + h, high)):
                    swapped[target] = t.value(f"vector.shuffle {rows[i]}, {rows[i + h]} "
                                              f"[{', '.join(map(str, mask))}] : {self.vec}, {self.vec}", "tr")
            rows, h = swapped, 2 * h
        return rows

    def _tasks(self) -> None:
        p, t = self.plan, self.t
        bq = t.const(p.bq)
        q_blocks = t.value(f"arith.ceildivui {self.sq}, {bq} : index", "nqb")
        # Task = (flat batch, query block, share of the keys), the share fastest.
        blocks = t.value(f"arith.muli {self.flat}, {q_blocks} : index", "nblk")
        total = t.value(f"arith.muli {blocks}, {t.const(p.splits)} : index", "tasks")
        with t.share(total, p.workers) as (self.w, begin, end), t.for_(begin, end, self.c1, "task") as task:
            self.split = t.value(f"arith.remui {task}, {t.const(p.splits)} : index", "ks")
            block = t.value(f"arith.divui {task}, {t.const(p.splits)} : index", "blk")
            self.fb = t.value(f"arith.divui {block}, {q_blocks} : index", "fb")
            self.bi = self._batch_of(self.fb)
            i0 = t.value(f"arith.muli {t.value(f'arith.remui {block}, {q_blocks} : index')}, {bq} : index", "i0")
            i1 = t.value(f"arith.minui {t.value(f'arith.addi {i0}, {bq} : index')}, {self.sq} : index", "i1")
            self.i0 = i0
            self.last = t.value(f"arith.subi {i1}, {self.c1} : index", "last")
            first, stop = self._key_share(i1)
            self._start()
            self._stage_q()
            with t.for_(first, stop, t.const(p.bkv), "j0") as self.j0:
                self.kb = t.value(f"arith.divui {self.j0}, {t.const(p.bkv)} : index", "kb")
                self.nkv = t.value(f"arith.minui {t.value(f'arith.subi {self.skv}, {self.j0} : index')}, "
                                   f"{t.const(p.bkv)} : index", "nkv")
                self._scores()
                self._softmax()
                self._values()
            self._finish(i1)
        if p.splits > 1:
            self._merge()

    def _key_share(self, i1: str) -> tuple[str, str]:
        """This task's keys: ceil(key blocks / KVS) blocks from its share's first (none past the end; under a
        causal mask, none past the block's last row plus the offset)."""
        p, t = self.plan, self.t
        bkv = t.const(p.bkv)
        kv_blocks = t.value(f"arith.ceildivui {self.skv}, {bkv} : index", "nkb")
        share = t.value(f"arith.ceildivui {kv_blocks}, {t.const(p.splits)} : index", "kshare")
        chunk = t.value(f"arith.muli {share}, {bkv} : index", "kchunk")
        first = t.value(f"arith.minui {t.value(f'arith.muli {self.split}, {chunk} : index')}, {self.skv} : index",
                        "kfirst")
        stop = t.value(f"arith.minui {t.value(f'arith.addi {first}, {chunk} : index')}, {self.skv} : index", "kend")
        if p.causal is not None:
            stop = t.value(f"arith.minui {stop}, {t.value(f'arith.addi {i1}, {t.const(p.causal)} : index')} : index",
                           "kend")
        return first, stop

    def _row(self, local: str) -> str:
        """The query row of local row ``local``: rows past the block's end repeat its last row."""
        t = self.t
        return t.value(f"arith.minui {t.value(f'arith.addi {self.i0}, {local} : index')}, {self.last} : index", "g")

    def _start(self) -> None:
        p, t = self.plan, self.t
        with t.for_(self.c0, t.const(p.bq), self.c1, "r") as r:
            t.add(f"memref.store {self._f(-math.inf)}, {self.m}[{self.w}, {r}] : {self.row_type}")
            t.add(f"memref.store {self._f(0.0)}, {self.l}[{self.w}, {r}] : {self.row_type}")
            zero = self._splat(0.0)
            for e in range(0, p.value_dim, p.lanes):
                t.add(f"vector.store {zero}, {self.o}[{self.w}, {r}, {t.const(e)}] : {self.o_type}, {self.vec}")

    def _stage_q(self) -> None:
        """The task's block of Q (rows past the block's end repeating its last), extended to f32 into the worker's
        ``qblk``: the register blocks of the scores then read each element as an f32 broadcast, every step. (Q
        read where it lies, unless it is narrower.)"""
        p, t = self.plan, self.t
        if not self.staged_q:
            return
        whole = p.head_dim - p.head_dim % p.lanes
        with t.for_(self.c0, t.const(p.bq), self.c1, "r") as r:
            row = self._row(r)
            for d in range(0, whole, p.lanes):
                x = self._load_vector("q", [*self.bi, row, t.const(d)], "qv")
                t.add(f"vector.store {x}, {self.qblk}[{self.w}, {r}, {t.const(d)}] : {self.qblk_type}, {self.vec}")
            for d in range(whole, p.head_dim):  # a head size that is not a multiple of lanes
                x = self._load("q", [*self.bi, row, t.const(d)], "qs")
                t.add(f"memref.store {x}, {self.qblk}[{self.w}, {r}, {t.const(d)}] : {self.qblk_type}")

    def _block_product(self, rows: list[str], load_a, load_b, steps: str, init: list[str]) -> list[str]:
        """RM x RN accumulators: ``acc[r][v] += a(r, step) * b(step)[v]`` over ``steps``."""
        p, t = self.plan, self.t
        nv = p.rn // p.lanes
        with t.for_carried(self.c0, steps, self.c1, init, self.vec, ("kk", "acc", "out")) as loop:
            b = load_b(loop.iv)
            updated = []
            for r, row in enumerate(rows):
                broadcast = t.value(f"vector.broadcast {load_a(row, loop.iv)} : {F32} to {self.vec}", "bc")
                for v in range(nv):
                    updated.append(t.value(f"vector.fma {broadcast}, {b[v]}, {loop.args[r * nv + v]} : {self.vec}",
                                           "f"))
            t.yield_(updated, [self.vec] * len(updated))
        return loop.results

    def _scores_direct(self) -> None:
        """S = Q_blk K_blk^T row by row, each score a dot product of a query row and a key row (vectors along
        the head dimension, summed across at the end)."""
        p, t = self.plan, self.t
        with t.for_(self.c0, t.const(p.bq), self.c1, "r") as r:
            row = self._row(r)
            offsets = [t.const(d) for d in range(0, p.head_dim - p.head_dim % p.lanes, p.lanes)]
            query = [self._load_vector("q", [*self.bi, row, o], "qv") for o in offsets]
            with t.for_(self.c0, self.nkv, self.c1, "kc") as c:
                j = t.value(f"arith.addi {self.j0}, {c} : index", "j")
                total = None
                for o, x in zip(offsets, query, strict=True):
                    key = self._load_vector("k", [*self.bi, j, o], "kv")
                    total = (t.value(f"arith.mulf {x}, {key} : {self.vec}", "dp") if total is None
                             else t.value(f"vector.fma {x}, {key}, {total} : {self.vec}", "dp"))
                score = self._across(self._add, total) if total is not None else self._f(0.0)
                for d in range(len(offsets) * p.lanes, p.head_dim):  # a head size that is not a multiple of lanes
                    index = t.const(d)
                    x = self._load("q", [*self.bi, row, index], "qs")
                    y = self._load("k", [*self.bi, j, index], "ks")
                    score = t.value(f"math.fma {x}, {y}, {score} : {F32}", "sc")
                t.add(f"memref.store {score}, {self.s}[{self.w}, {r}, {c}] : {self.s_type}")

    def _scores(self) -> None:
        """S = Q_blk K_blk^T, in RM x RN blocks over the head dimension."""
        p, t = self.plan, self.t
        if p.direct_scores:
            self._scores_direct()
            return
        nv = p.rn // p.lanes
        with t.for_(self.c0, t.const(p.bq), t.const(p.rm), "r0") as r0:
            locals_ = [r0] + [t.value(f"arith.addi {r0}, {t.const(r)} : index", "lr") for r in range(1, p.rm)]
            rows = locals_ if self.staged_q else [self._row(local) for local in locals_]
            with t.for_(self.c0, t.const(p.bkv), t.const(p.rn), "col") as c0:
                columns = [c0] + [t.value(f"arith.addi {c0}, {t.const(v * p.lanes)} : index", "jc")
                                  for v in range(1, nv)]
                zero = self._splat(0.0)

                def load_q(row: str, d: str) -> str:
                    if self.staged_q:  # row: the local row
                        return t.value(f"memref.load {self.qblk}[{self.w}, {row}, {d}] : {self.qblk_type}", "qs")
                    return self._load("q", [*self.bi, row, d], "qs")

                def load_kt(d: str) -> list[str]:
                    return [t.value(f"vector.load {self.kt}[{self.fb}, {self.kb}, {d}, {col}] : {self.kt_type}, "
                                    f"{self.vec}", "kt") for col in columns]

                acc = self._block_product(rows, load_q, load_kt, t.const(p.head_dim), [zero] * (p.rm * nv))
                for r, local in enumerate(locals_):
                    for v in range(nv):
                        col = t.value(f"arith.addi {c0}, {t.const(v * p.lanes)} : index", "sc") if v else c0
                        t.add(f"vector.store {acc[r * nv + v]}, {self.s}[{self.w}, {local}, {col}] : {self.s_type}, "
                              f"{self.vec}")

    def _softmax(self) -> None:
        """Per row of S: the new running maximum, P = exp((S - m') c) in place of S, l and alpha."""
        p, t, vec = self.plan, self.t, self.vec
        with t.for_(self.c0, t.const(p.bq), self.c1, "r") as r:
            # Columns past the end of K (or, with a causal mask, past the row's last key) weigh nothing.
            kept = self.nkv
            if p.causal is not None:
                end = t.value(f"arith.addi {self._row(r)}, {t.const(p.causal + 1)} : index", "kend")
                kept = t.value(f"arith.minui {t.value(f'arith.maxui {end}, {self.j0} : index')}, "
                               f"{t.value(f'arith.addi {self.j0}, {self.nkv} : index')} : index", "kend")
                kept = t.value(f"arith.subi {kept}, {self.j0} : index", "kept")
            with t.for_(kept, t.const(p.bkv), self.c1, "tail") as tail:
                t.add(f"memref.store {self._f(-math.inf)}, {self.s}[{self.w}, {r}, {tail}] : {self.s_type}")
            offsets = [t.const(c) for c in range(0, p.bkv, p.lanes)]
            scores = [t.value(f"vector.load {self.s}[{self.w}, {r}, {o}] : {self.s_type}, {vec}", "sv")
                      for o in offsets]
            top = self._across(self._max, self._tree(self._max, scores))
            old = t.value(f"memref.load {self.m}[{self.w}, {r}] : {self.row_type}", "mo")
            new = self._max(top, old, F32)
            # A row with no key yet (a causal mask's, in a later share of the keys) keeps m = -inf: exponents are then
            # taken from 0, so that its weights and alpha are 0 rather than NaN.
            empty = t.value(f"arith.cmpf oeq, {new}, {self._f(-math.inf)} : {F32}", "none")
            shift = t.value(f"arith.select {empty}, {self._f(0.0)}, {new} : {F32}", "ms")
            # In base 2: exp((s - m) c) = 2**(s c log2(e) - m c log2(e)), one FMA per vector before the exponential.
            rate = self.plan.scale * math.log2(math.e)
            gap = t.value(f"arith.mulf {t.value(f'arith.subf {old}, {shift} : {F32}')}, {self._f(rate)} : {F32}", "gap")
            # Once a row's maximum settles, most blocks leave it: alpha is then exp(0) = 1, without the polynomial.
            settled = t.value(f"arith.cmpf oeq, {gap}, {self._f(0.0)} : {F32}", "same")
            with t.if_(settled, [F32], "al") as (alpha,):
                t.yield_([self._f(1.0)], [F32])
            with t.else_():
                spread = t.value(f"vector.broadcast {gap} : {F32} to {vec}", "gap")
                t.yield_([t.value(f"vector.extract {self.exp2(spread)}[0] : {F32} from {vec}", "al")], [F32])
            offset = t.value(f"vector.broadcast {t.value(f'arith.mulf {shift}, {self._f(-rate)} : {F32}')} : {F32} "
                             f"to {vec}", "mv")
            rate_vec = self._splat(rate)
            weights = []
            for o, x in zip(offsets, scores, strict=True):
                weights.append(self.exp2(t.value(f"vector.fma {x}, {rate_vec}, {offset} : {vec}", "z")))
                self._store_weights(weights[-1], r, o)
            row_sum = self._across(self._add, self._tree(self._add, weights))
            before = t.value(f"memref.load {self.l}[{self.w}, {r}] : {self.row_type}", "lo")
            after = t.value(f"arith.addf {t.value(f'arith.mulf {before}, {alpha} : {F32}')}, {row_sum} : {F32}", "ln")
            t.add(f"memref.store {after}, {self.l}[{self.w}, {r}] : {self.row_type}")
            t.add(f"memref.store {new}, {self.m}[{self.w}, {r}] : {self.row_type}")
            t.add(f"memref.store {alpha}, {self.alpha}[{self.w}, {r}] : {self.row_type}")

    def _store_weights(self, weights: str, r: str, column: str) -> None:
        """A vector of row ``r``'s weights from ``column`` on, where P V reads them: in place of the scores, rounded
        where the chain rounds P (l sums them unrounded)."""
        p, t = self.plan, self.t
        t.add(f"vector.store {self._rounded(weights)}, {self.s}[{self.w}, {r}, {column}] : {self.s_type}, "
              f"vector<{p.lanes}x{F32}>")

    def _values(self) -> None:
        """O = alpha O + P V_blk, in RM x RN blocks over the block's rows of V."""
        p, t = self.plan, self.t
        nv = p.rn // p.lanes
        with t.for_(self.c0, t.const(p.bq), t.const(p.rm), "r0") as r0:
            locals_ = [r0] + [t.value(f"arith.addi {r0}, {t.const(r)} : index", "lr") for r in range(1, p.rm)]
            with t.for_(self.c0, t.const(p.value_dim), t.const(p.rn), "e0") as e0:
                columns = [e0] + [t.value(f"arith.addi {e0}, {t.const(v * p.lanes)} : index", "ec")
                                  for v in range(1, nv)]
                init = []
                for local in locals_:
                    alpha = t.value(f"memref.load {self.alpha}[{self.w}, {local}] : {self.row_type}", "al")
                    alpha = t.value(f"vector.broadcast {alpha} : {F32} to {self.vec}", "av")
                    for col in columns:
                        acc = t.value(f"vector.load {self.o}[{self.w}, {local}, {col}] : {self.o_type}, {self.vec}",
                                      "ov")
                        init.append(t.value(f"arith.mulf {acc}, {alpha} : {self.vec}", "ov"))

                def load_p(local: str, c: str) -> str:
                    return t.value(f"memref.load {self.s}[{self.w}, {local}, {c}] : {self.s_type}", "ps")

                def load_v(c: str) -> list[str]:
                    j = t.value(f"arith.addi {self.j0}, {c} : index", "j")
                    return [self._load_vector("v", [*self.bi, j, col], "vv") for col in columns]

                acc = self._block_product(locals_, load_p, load_v, self.nkv, init)
                for r, local in enumerate(locals_):
                    for v, col in enumerate(columns):
                        t.add(f"vector.store {acc[r * nv + v]}, {self.o}[{self.w}, {local}, {col}] : {self.o_type}, "
                              f"{self.vec}")

    def _finish(self, i1: str) -> None:
        """For the block's rows: out = O / l; with several shares of the keys, this share's m, l and O instead,
        into the buffers that :meth:`_merge` reads."""
        p, t = self.plan, self.t
        count = t.value(f"arith.subi {i1}, {self.i0} : index", "rows")
        with t.for_(self.c0, count, self.c1, "r") as r:
            row = t.value(f"arith.addi {self.i0}, {r} : index", "g")
            shared = p.splits > 1
            if shared:
                for kept, scratch in ((self.kept_m, self.m), (self.kept_l, self.l)):
                    value = t.value(f"memref.load {scratch}[{self.w}, {r}] : {self.row_type}", "x")
                    t.add(f"memref.store {value}, {kept}[{self.split}, {self.fb}, {row}] : {self.kept_row_type}")
            else:
                total = t.value(f"memref.load {self.l}[{self.w}, {r}] : {self.row_type}", "l")
                total = t.value(f"vector.broadcast {total} : {F32} to {self.vec}", "lv")
            for e in range(0, p.value_dim, p.lanes):
                x = t.value(f"vector.load {self.o}[{self.w}, {r}, {t.const(e)}] : {self.o_type}, {self.vec}", "ov")
                if shared:
                    t.add(f"vector.store {x}, {self.kept_o}[{self.split}, {self.fb}, {row}, {t.const(e)}] : "
                          f"{self.kept_o_type}, {self.vec}")
                else:
                    y = t.value(f"arith.divf {x}, {total} : {self.vec}", "y")
                    t.add(f"vector.store {y}, {self.out}[{', '.join([*self.bi, row, t.const(e)])}] : {self.dyn}, "
                          f"{self.vec}")

    def _merge(self) -> None:
        """out = sum_s w_s O_s / sum_s w_s l_s with w_s = exp((m_s - M) c), M = max_s m_s, row by row."""
        p, t, vec = self.plan, self.t, self.vec
        rows = t.value(f"arith.muli {self.flat}, {self.sq} : index", "mrows")
        with t.share(rows, p.workers) as (_, begin, end), t.for_(begin, end, self.c1, "g") as g:
            fb = t.value(f"arith.divui {g}, {self.sq} : index", "fb")
            row = t.value(f"arith.remui {g}, {self.sq} : index", "i")
            where = [t.const(s) for s in range(p.splits)]
            maxima = [t.value(f"memref.load {self.kept_m}[{s}, {fb}, {row}] : {self.kept_row_type}", "ms")
                      for s in where]
            top = maxima[0]
            for m in maxima[1:]:
                top = t.value(f"arith.maximumf {top}, {m} : {F32}", "mx")
            rate = self._f(p.scale * math.log2(math.e))
            weights = []
            for m in maxima:
                gap = t.value(f"arith.mulf {t.value(f'arith.subf {m}, {top} : {F32}')}, {rate} : {F32}", "gap")
                weights.append(self.exp2(t.value(f"vector.broadcast {gap} : {F32} to {vec}", "gap")))
            total = None
            for s, w in zip(where, weights, strict=True):
                share = t.value(f"memref.load {self.kept_l}[{s}, {fb}, {row}] : {self.kept_row_type}", "ls")
                share = t.value(f"arith.mulf {w}, {t.value(f'vector.broadcast {share} : {F32} to {vec}')} : {vec}")
                total = share if total is None else t.value(f"arith.addf {total}, {share} : {vec}", "lt")
            batch = self._batch_of(fb)
            for e in range(0, p.value_dim, p.lanes):
                column, acc = t.const(e), None
                for s, w in zip(where, weights, strict=True):
                    x = t.value(f"vector.load {self.kept_o}[{s}, {fb}, {row}, {column}] : {self.kept_o_type}, "
                                f"{vec}", "os")
                    acc = (t.value(f"arith.mulf {w}, {x} : {vec}", "oa") if acc is None
                           else t.value(f"vector.fma {w}, {x}, {acc} : {vec}", "oa"))
                y = t.value(f"arith.divf {acc}, {total} : {vec}", "y")
                t.add(f"vector.store {y}, {self.out}[{', '.join([*batch, row, column])}] : {self.dyn}, {vec}")
