"""The host GEMM core: a BLIS-style kernel that Prism writes itself, in scf, vector and memref.

A contraction ``C[b, m, n] (+)= sum_k A[b, m, k] * B[b, k, n]`` over f32
(batch optional) becomes a call of a private function holding this loop nest:

1. tasks: ``scf.parallel`` over ``batch x ceil(M/TM) x ceil(N/TN)`` blocks of C,
   which the thread pool (:mod:`.pool`) shares among every core;
2. K slices: a loop over ``TK``-deep slices of K;
3. B panel: with ``PACK = 1`` the task first copies its ``TK x TN`` slice of B
   into a buffer of ``RN``-wide panels, ``[TN/RN][TK][RN]``, zero-padded at
   the right edge, reading PACK_DEPTH rows side by side, each one contiguous
   run of TN (benchmarks/RESULTS.md, "Measurements behind rules in the code":
   the copy into panels reads whole rows), so the micro-kernel reads one
   contiguous panel that stays in L1 while the row panels of A stream past it.
   With several row blocks (``reuse_panels``) a worker takes its tasks column
   block by column block and keeps the panels of every K slice,
   ``[K/TK][TN/RN][TK][RN]``, copying them only when its column block changes,
   so B is copied about once rather than once per row block (as the transform
   path packs B once for all blocks). Where B exceeds what the machine copies
   in a phase of its own (a share of the L3, or nothing where its pipelined
   copy won even from the L3: :func:`prism.kernels.host_gemm.pipelines_copy`),
   without a batch and with panels not kept, the copy is ``pipelined``: the
   micro-tiles of each K slice copy the next slice (or the worker's next
   task's first) into a second buffer, the rows of a few panels every 8 k
   steps, prefetching what they will copy 4 KiB ahead, so that B streams
   while the micro-kernel computes rather than in a phase of its own.
   With ``PACK = 0`` the micro-kernel reads B where it is, row by row: right
   when a task has a single row panel (small M, decode), where each element of
   B is read once and copying it would only add traffic; each micro-tile then
   prefetches its columns of B two K slices further down (the runs of a slice
   are too short for the hardware prefetchers). A ``prepacked`` B (a
   weight packed once, in ``@f_prepare``) is read in place as
   ``[N/RN][K][RN]`` panels. Where one row block covers all of M, each panel
   comes from memory once per call, and each panel's first micro-tile
   prefetches the next panel's row at its k (:func:`prefetches_panels`), so
   that memory is read while the micro-kernel computes rather than in bursts
   at each panel's start;
4. micro-kernel: ``RM x RN`` accumulators in vector registers, updated by
   ``RM`` broadcasts of A and ``RN/lanes`` vector loads of B per k, then
   added to C. Rows past the block's end repeat its last row (the same
   values, stored twice), so every micro-tile is full; columns past N are
   masked.

A is read in place (a micro-tile's RM rows are RM sequential streams), and
C is written once per K slice, so no phase runs before or after the kernel.
With an ``epilogue`` (:mod:`.epilogue`), the last K slice stores the
epilogue's value of each accumulator vector instead, reading its other
inputs per row, per column or per element; a streaming kernel (below) takes
one pass over its tile of C for it once K is summed, or applies it as the
workers' partial sums are added. A ``dual`` GEMM computes two products of
the same A (SwiGLU's gate and up) in one kernel for an epilogue that reads
both: each micro-tile holds RN/2 columns of each, its panels interleave the
two B's, and a second buffer keeps the second product's partial sums.

With a one-row block (``RM = 1``, decode), step 4 changes order: the task's
tile of C starts at its init, and then takes STREAM_DEPTH rows of B at a
time, which stay in L1 while each row of the tile is updated from them, a
vector of C loaded, taking one FMA per row of B, and stored back. B is then read along whole
rows of the task's columns, STREAM_DEPTH sequential streams per core, where
the register-blocked order would read RN-wide pieces of K rows, which
keeps fewer loads in flight (benchmarks/RESULTS.md, "Host code against
every baseline", second pass). Each vector of C sums its STREAM_DEPTH
products in two chains of FMAs (half the latency of one). For a single
row of C (``split_k``) the workers take shares of K rather than of the
columns, each streaming one contiguous share of B into its own row of
partial sums, which a last parallel loop adds to C's init.

Example, for a 128x4096x4096 matmul with ``TM = 128, TN = 256, TK = 256,
RM = 4, RN = 16, PACK = 1`` the op becomes::

    %r = func.call @__prism_gemm_0(%a, %b, %c)
        : (tensor<128x4096xf32>, tensor<4096x4096xf32>, tensor<128x4096xf32>) -> tensor<128x4096xf32>
"""

from __future__ import annotations

import functools
from contextlib import nullcontext
from dataclasses import dataclass

from mlir import ir

from prism.codegen.cpu.text import F32, MlirText, inline_function
from prism.kernels import host_gemm

# Rows of B that a streaming kernel (KernelPlan.streams) reads together: that many sequential streams per
# core, which is what keeps enough loads in flight to reach the memory bandwidth (4, 8 and 16 measured:
# benchmarks/RESULTS.md, "Measurements behind rules in the code": rows of B a streaming kernel reads together).
STREAM_DEPTH = 8
# Bytes of one cache line: a prefetch brings in one.
CACHE_LINE = 64
# A pipelined copy (KernelPlan.pipelined) prefetches the B it will copy this many bytes ahead: without a
# prefetch the copy's loads wait for memory (1 to 16 KiB measured: benchmarks/RESULTS.md, "Measurements behind
# rules in the code": the pipelined copy's prefetch distance).
COPY_AHEAD_BYTES = 4096
# A micro-tile of a pipelined copy takes one unit of the copy per this many k steps at most (its k loop is
# unrolled that many times); a unit is the rows of as many panels as keep the copy spread over the whole slice
# (two for 4 micro-tiles down a row block, four for 2): a unit every other k step makes its bookkeeping cost
# more than the overlap saves (benchmarks/RESULTS.md, "Host code against every baseline", fifth pass).
COPY_EVERY_MAX = 8
# Rows of B that the copy into panels reads side by side (KernelPlan.pack): that many streams keep the loads
# in flight where one row at a time restarts the prefetcher at every row; 16 rows spill registers
# (benchmarks/RESULTS.md, "Host code against every baseline", fourth pass: the copy into panels).
PACK_DEPTH = 8
# Where a row panel of a few rows reads B in place (KernelPlan.sweeps_b), each row of a K slice is a run of TN
# elements, too short for the hardware prefetchers to follow from one slice to the next: each micro-tile
# prefetches its columns this many K slices further down, and at least this many rows (4 to 64 rows measured:
# benchmarks/RESULTS.md, "Eight-row products on the Xeon: B prefetched two slices ahead").
SWEEP_AHEAD_SLICES = 2
SWEEP_AHEAD_ROWS = 16
KERNEL_NAME = "gemm"  # the name of a kernel while it is text; it is always inlined

# The operand kinds of an epilogue: the C tile's own value, or an input read per row (indexed by the batch
# and the row), per column (by the column alone) or per element (batch, row, column).
EPILOGUE_KINDS = ("row", "column", "element")
# The scalar ops an elementwise program (an epilogue, a row kernel's op) may hold, each with the same name on
# vectors.
ELEMENTWISE_OPS = ("arith.addf", "arith.subf", "arith.mulf", "arith.divf", "arith.maximumf", "arith.minimumf",
                   "arith.maxnumf", "arith.minnumf", "arith.negf", "math.exp", "math.sqrt", "math.rsqrt", "math.erf",
                   "math.tanh")


@dataclass(frozen=True)
class Epilogue:
    """An elementwise function of C's element and of other inputs, applied as C is stored for the last time.

    ``inputs`` holds each extra input's (kind, tensor type); ``ops`` the body, in order, as
    (op name, operands), an operand being ``("c",)``, ``("input", i)``, ``("value", j)`` (the result of op
    j) or ``("constant", x)``; the last op's result is stored.
    """

    inputs: tuple[tuple[str, str], ...]
    ops: tuple[tuple[str, tuple[tuple, ...]], ...]


@dataclass(frozen=True)
class KernelPlan:
    """Everything the text of one GEMM kernel depends on."""

    name: str
    batch: bool  # operands carry a leading batch dimension
    a_type: str  # tensor types at the call, as text
    b_type: str
    c_type: str
    zero_init: bool  # C starts at zero (its init is a fill of 0.0): the first K slice does not read it
    tm: int
    tn: int
    tk: int
    rm: int
    rn: int
    lanes: int  # f32 lanes of one vector register
    pack: bool  # copy B panels per task (else read B in place)
    workers: int  # threads the tasks are shared among
    prepacked: bool = False  # B arrives packed as [ceil(N/RN)][K][RN] (batch first when batched)
    # Prepacked only: a panel's first micro-tile prefetches the next panel's row at its k (see prefetches_panels).
    prefetch_panels: bool = False
    split_k: bool = False  # streaming only: workers take shares of K, not of the tasks, and their sums are added
    # With pack: tasks run column block by column block, and a worker keeps the panels of all of K for its
    # column block, copying them only when its column block changes (needs a static K).
    reuse_panels: bool = False
    # With pack (not reuse_panels, no batch): the copy of each K slice runs inside the micro-tiles of the slice
    # before, into a second panel buffer (see _Kernel._pipeline).
    pipelined: bool = False
    # An elementwise consumer run on each C tile as the last K slice stores it (see Epilogue).
    epilogue: Epilogue | None = None
    # A dual GEMM: the type of a second B, of B's shape, whose product with the same A the epilogue reads as
    # ("c2",) (SwiGLU's gate and up). A micro-tile then holds RN/2 columns of each product, and a second
    # buffer keeps the second product's partial sums between K slices.
    dual: str | None = None

    @property
    def width(self) -> int:
        """The columns of C that one micro-tile covers."""
        return self.rn // 2 if self.dual else self.rn

    @property
    def streams(self) -> bool:
        """B read in place by one-row micro-tiles: each row of C is updated from STREAM_DEPTH rows of B at a
        time, whole rows of the task's columns, so B is read in runs of TN elements rather than RN."""
        return not self.pack and not self.prepacked and self.rm == 1

    @property
    def sweeps_b(self) -> bool:
        """B read in place by one row panel of a few rows, in slices shallow enough for the prefetchers to
        follow each of their rows (:func:`prism.kernels.host_gemm.streams_in_place`)."""
        return not self.prepacked and bool(host_gemm.streams_in_place(self.pack, self.rm, self.tm, self.tk,
                                                                      _dim(self.c_type, -2)))


def dynamic_memref(rank: int, element: str = F32) -> str:
    """The memref type of ``rank`` dynamic dimensions of ``element``."""
    return f"memref<{'x'.join('?' * rank)}x{element}>"


def _dim(tensor_type: str, index: int) -> int | None:
    """Dimension ``index`` of a ranked tensor type written as text (``tensor<16x?xf32>``), None if dynamic."""
    size = tensor_type[tensor_type.index("<") + 1:].split("x")[:-1][index]
    return None if size == "?" else int(size)


@dataclass(frozen=True)
class _Tasks:
    """A worker's loop over its tasks: the flat task index, the loop's bounds, the row and column blocks of C
    (``mt``, ``nt``) and, with a batch, the blocks per batch."""

    flat: str
    first: str
    last: str
    mt: str
    nt: str
    per_batch: str | None


class _Kernel:
    """Writes the text of one kernel (see :func:`kernel_text`)."""

    def __init__(self, plan: KernelPlan):
        self.plan, self.t = plan, MlirText()
        self.rank = 3 if plan.batch else 2
        self.vec = f"vector<{plan.lanes}x{F32}>"
        self.dyn = dynamic_memref(self.rank)
        self.b_dyn = dynamic_memref(self.rank + 1 if plan.prepacked else self.rank)
        # Each worker's panels: [slices][TN/RN][TK][RN], with one slice of K unless kept across tasks.
        slices = -(-ir.RankedTensorType.parse(plan.a_type).shape[-1] // plan.tk) if plan.reuse_panels else 1
        if plan.pipelined:  # the slice being read, and the next one being copied
            slices = 2
            rows = _dim(plan.c_type, -2)
            tiles = -(-min(rows or plan.tm, plan.tm) // plan.rm)  # micro-tiles down a row block
            self.unit_panels = max(1, COPY_EVERY_MAX // tiles)
            while (plan.tn // plan.width) % self.unit_panels:
                self.unit_panels //= 2
            self.copy_every = max(1, min(COPY_EVERY_MAX, self.unit_panels * tiles))
        self.panel_type = f"memref<{plan.workers}x{slices}x{plan.tn // plan.width}x{plan.tk}x{plan.rn}x{F32}>"

    def text(self) -> str:
        p, t = self.plan, self.t
        extra = f", %b2: {p.dual}" if p.dual else ""
        extra += "".join(f", %x{i}: {typ}" for i, (_, typ) in enumerate(p.epilogue.inputs)) if p.epilogue else ""
        with t.region(f"func.func private @{p.name}(%a: {p.a_type}, %b: {p.b_type}, %c: {p.c_type}{extra}) "
                      f"-> {p.c_type}"):
            self.c0, self.c1 = t.const(0), t.const(1)
            dims = [t.const(i) for i in range(self.rank)]
            # Sizes come from C (M, N) and A (K): a prepacked B's panels are padded.
            sizes = [t.value(f"tensor.dim %c, {dims[i]} : {p.c_type}", "s") for i in range(self.rank)]
            self.m, self.n = sizes[-2], sizes[-1]
            self.k = t.value(f"tensor.dim %a, {dims[-1]} : {p.a_type}", "K")
            self.last_k = t.value(f"arith.subi {self.k}, {self.c1} : index", "lastk") if p.sweeps_b else None
            self.a = t.buffer("%a", p.a_type, self.dyn)
            self.b = t.buffer("%b", p.b_type, self.b_dyn)
            self.b2 = t.buffer("%b2", p.dual, self.b_dyn) if p.dual else None
            self.c_in = None if p.zero_init else t.buffer("%c", p.c_type, self.dyn)
            self.extras = [t.buffer(f"%x{i}", typ, dynamic_memref(ir.RankedTensorType.parse(typ).rank))
                           for i, (_, typ) in enumerate(p.epilogue.inputs)] if p.epilogue else []
            self.c = t.alloc(self.dyn, sizes, "C")
            self.c2 = t.alloc(self.dyn, sizes, "C") if p.dual else None
            self._tasks(sizes[0] if p.batch else None)
            t.add(f"return {t.tensor_of(self.c, self.dyn, p.c_type)} : {p.c_type}")
        return t.function_text()

    def _tasks(self, batches: str | None) -> None:
        """The parallel loop over blocks of C, one iteration per worker, each running a contiguous share of the
        tasks with its own B panel buffer (or, with K split, a share of K for every task)."""
        p, t = self.plan, self.t
        self.rm, self.width = t.const(p.rm), t.const(p.width)
        mt = t.value(f"arith.ceildivui {self.m}, {t.const(p.tm)} : index", "mt")
        nt = t.value(f"arith.ceildivui {self.n}, {t.const(p.tn)} : index", "nt")
        per_batch = t.value(f"arith.muli {mt}, {nt} : index", "blocks")
        tasks = t.value(f"arith.muli {per_batch}, {batches} : index", "tasks") if batches else per_batch
        self.split = p.streams and p.split_k and not p.batch
        if p.pack:
            self.panels = t.alloc(self.panel_type, hint="panels")
        if self.split:
            self.partials, self.partials2 = (t.alloc(self._partials_type(), [self.m, self.n], "part")
                                             if product == 0 or p.dual else None for product in (0, 1))
        # Each worker's share: of K (every task) when K is split, else of the tasks (all of K).
        with t.share(self.k if self.split else tasks, p.workers) as (self.worker, begin, end):
            first, last = (self.c0, tasks) if self.split else (begin, end)
            k_range = (begin, end) if self.split else (self.c0, self.k)
            with t.for_(first, last, self.c1, "task") as flat:
                self._task(_Tasks(flat, first, last, mt, nt, per_batch if batches else None), k_range)
        if self.split:
            self._add_partials()

    def _task(self, tasks: _Tasks, k_range: tuple[str, str]) -> None:
        """One task: a block of C (of one batch), its K slices from ``k_range``."""
        p, t = self.plan, self.t
        task = tasks.flat
        if tasks.per_batch:
            self.bi = [t.value(f"arith.divui {task}, {tasks.per_batch} : index", "bi")]
            task = t.value(f"arith.remui {task}, {tasks.per_batch} : index", "t")
        else:
            self.bi = []
        if p.reuse_panels:  # column-major: a worker's consecutive tasks share their column block
            ti = t.value(f"arith.remui {task}, {tasks.mt} : index", "ti")
            tj = t.value(f"arith.divui {task}, {tasks.mt} : index", "tj")
            starts = t.value(f"arith.cmpi eq, {tasks.flat}, {tasks.first} : index")
            top = t.value(f"arith.cmpi eq, {ti}, {self.c0} : index")
            self.fresh = t.value(f"arith.ori {starts}, {top} : i1", "fresh")
        else:
            ti = t.value(f"arith.divui {task}, {tasks.nt} : index", "ti")
            tj = t.value(f"arith.remui {task}, {tasks.nt} : index", "tj")
        tm, tn = t.const(p.tm), t.const(p.tn)
        i0 = t.value(f"arith.muli {ti}, {tm} : index", "i0")
        i1 = t.value(f"arith.minui {t.value(f'arith.addi {i0}, {tm} : index')}, {self.m} : index", "i1")
        self.last_row = t.value(f"arith.subi {i1}, {self.c1} : index", "last")
        self.j0 = t.value(f"arith.muli {tj}, {tn} : index", "j0")
        j1 = t.value(f"arith.minui {t.value(f'arith.addi {self.j0}, {tn} : index')}, {self.n} : index", "j1")
        if p.streams:
            self._stream_init(i0, i1, j1)
        k_first, k_last = k_range
        with t.for_(k_first, k_last, t.const(p.tk), "p0") as self.p0:
            p1 = t.value(f"arith.minui {t.value(f'arith.addi {self.p0}, {t.const(p.tk)} : index')}, {k_last} : index",
                         "p1")
            self.kc = t.value(f"arith.subi {p1}, {self.p0} : index", "kc")
            if p.streams:
                self._stream(i0, i1, j1)
            else:
                self._slice(tasks, i0, i1, j1, (p1, k_last))
        if p.streams and p.epilogue and not self.split:
            self._stream_epilogue(i0, i1, j1)

    def _slice(self, tasks: _Tasks, i0: str, i1: str, j1: str, ends: tuple[str, str]) -> None:
        """One K slice of a task's block (``ends``: where the slice and K end), by micro-tiles, with B's panels
        copied first (or, pipelined, by the micro-tiles of the slice before)."""
        p, t = self.plan, self.t
        self.first = t.value(f"arith.cmpi eq, {self.p0}, {self.c0} : index", "first")
        if p.epilogue:
            self.last_slice = t.value(f"arith.cmpi eq, {ends[0]}, {ends[1]} : index", "lastk")
        if p.pipelined:
            self._pipeline(tasks, i0, i1, j1)
        elif p.pack:
            self.slice = t.value(f"arith.divui {self.p0}, {t.const(p.tk)} : index", "slice")
            with t.if_(self.fresh) if p.reuse_panels else nullcontext():
                self._pack(j1)
        with t.for_(self.j0, j1, self.width, "jr") as jr:
            full = t.value(f"arith.cmpi ule, {t.value(f'arith.addi {jr}, {self.width} : index')}, {self.n} : index",
                           "full")
            with t.for_(i0, i1, self.rm, "ir") as ir_:
                rows = [t.value(f"arith.minui {t.value(f'arith.addi {ir_}, {t.const(r)} : index')}, "
                                f"{self.last_row} : index", "row") for r in range(p.rm)]
                if p.pipelined:  # this micro-tile's first unit of the copy: tiles are numbered down, then across
                    down = t.value(f"arith.divui {t.value(f'arith.subi {ir_}, {i0} : index')}, {self.rm} : index")
                    across = t.value(f"arith.divui {t.value(f'arith.subi {jr}, {self.j0} : index')}, "
                                     f"{self.width} : index")
                    tile = t.value(f"arith.addi {t.value(f'arith.muli {across}, {self.tiles_down} : index')}, "
                                   f"{down} : index")
                    self.first_unit = t.value(f"arith.muli {tile}, {self.units_per_tile} : index", "u0")
                if p.prefetch_panels:  # the panel's first micro-tile, full, prefetches the next panel
                    leading = t.value(f"arith.cmpi eq, {ir_}, {i0} : index", "lead")
                    with t.if_(t.value(f"arith.andi {full}, {leading} : i1", "ahead")):
                        self._micro_tile(rows, jr, in_bounds=True, prefetch=True)
                    with t.else_():
                        self._full_or_edge(rows, jr, full)
                else:
                    self._full_or_edge(rows, jr, full)
        if p.pipelined:  # units the micro-tiles had no k steps left for (a short slice before a long one)
            copied = t.value(f"arith.muli {t.value(f'arith.muli {self.tiles_across}, {self.tiles_down} : index')}, "
                             f"{self.units_per_tile} : index")
            with t.for_(copied, self.units, self.c1, "u") as unit:
                self._copy_unit(unit, prefetch=False)

    def _pipeline(self, tasks: _Tasks, i0: str, i1: str, j1: str) -> None:
        """The pipelined copy's bookkeeping for the current K slice (see :attr:`KernelPlan.pipelined`).

        The worker's slices alternate between the two panel buffers; its very
        first slice is copied here, in a phase of its own. The next slice is
        the task's next K slice, or the first of the worker's next task (whose
        columns may differ). It is copied in units of one row of U panels
        (U x RN floats of one row of B), numbered across the panels first, so
        that the units read B's rows in order: unit ``u`` is row
        ``u // (NP / U)`` of the U panels from ``u % (NP / U) * U``, with
        NP = TN / RN panels (fewer at N's edge: missing panels are skipped).
        """
        p, t = self.plan, self.t
        tk = t.const(p.tk)
        slices = t.value(f"arith.ceildivui {self.k}, {tk} : index", "ns")
        tasks_done = t.value(f"arith.subi {tasks.flat}, {tasks.first} : index")
        done = t.value(f"arith.muli {tasks_done}, {slices} : index")
        done = t.value(f"arith.addi {done}, {t.value(f'arith.divui {self.p0}, {tk} : index')} : index", "sl")
        self.slice = t.value(f"arith.remui {done}, {t.const(2)} : index", "slot")
        self.next_slot = t.value(f"arith.subi {self.c1}, {self.slice} : index", "slot")
        with t.if_(t.value(f"arith.cmpi eq, {done}, {self.c0} : index")):
            self._pack(j1)
        # The next slice: this task's next K slice, else the worker's next task's first (its column block).
        following = t.value(f"arith.addi {self.p0}, {tk} : index", "kn")
        within = t.value(f"arith.cmpi ult, {following}, {self.k} : index")
        task = t.value(f"arith.addi {tasks.flat}, {self.c1} : index")
        another = t.value(f"arith.cmpi ult, {task}, {tasks.last} : index")
        j0 = t.value(f"arith.muli {t.value(f'arith.remui {task}, {tasks.nt} : index')}, {t.const(p.tn)} : index")
        self.copy_row = t.value(f"arith.select {within}, {following}, {self.c0} : index", "kr")
        self.copy_col = t.value(f"arith.select {within}, {self.j0}, {j0} : index", "kc")
        end = t.value(f"arith.addi {self.copy_col}, {t.const(p.tn)} : index")
        end = t.value(f"arith.minui {end}, {self.n} : index")
        self.copy_panels = t.value(f"arith.ceildivui {t.value(f'arith.subi {end}, {self.copy_col} : index')}, "
                                   f"{self.width} : index", "np")
        rows = t.value(f"arith.minui {t.value(f'arith.subi {self.k}, {self.copy_row} : index')}, {tk} : index")
        units = t.value(f"arith.muli {rows}, {t.const(p.tn // p.width // self.unit_panels)} : index")
        self.units = t.value(f"arith.select {t.value(f'arith.ori {within}, {another} : i1')}, {units}, {self.c0} "
                             f": index", "units")
        # Each micro-tile of this slice copies one unit every copy_every k steps.
        self.tiles_down = t.value(f"arith.ceildivui {t.value(f'arith.subi {i1}, {i0} : index')}, {self.rm} : index")
        self.tiles_across = t.value(f"arith.ceildivui {t.value(f'arith.subi {j1}, {self.j0} : index')}, "
                                    f"{self.width} : index")
        self.units_per_tile = t.value(f"arith.divui {self.kc}, {t.const(self.copy_every)} : index", "upt")

    def _copy_unit(self, unit: str, prefetch: bool) -> None:
        """Copy unit ``unit`` of the next slice into the other panel buffer (see :meth:`_pipeline`), and
        prefetch the one COPY_AHEAD_BYTES further on."""
        p, t = self.plan, self.t
        count = self.unit_panels
        per_row = t.const(p.tn // p.width // count)
        with t.if_(t.value(f"arith.cmpi ult, {unit}, {self.units} : index")):
            last_col = t.value(f"arith.subi {self.n}, {self.c1} : index")
            if prefetch:
                self._prefetch_unit(unit, per_row, last_col)
            kk = t.value(f"arith.divui {unit}, {per_row} : index", "r")
            row = t.value(f"arith.addi {self.copy_row}, {kk} : index", "kg")
            first = t.value(f"arith.muli {t.value(f'arith.remui {unit}, {per_row} : index')}, {t.const(count)} "
                            f": index", "q")
            # Every panel of the unit inside N (all but a ragged last column block's): no checks per panel.
            inside = t.value(f"arith.cmpi ule, {t.value(f'arith.addi {first}, {t.const(count)} : index')}, "
                             f"{self.copy_panels} : index")
            end = t.value(f"arith.muli {t.value(f'arith.addi {first}, {t.const(count)} : index')}, {self.width} "
                          f": index")
            end = t.value(f"arith.addi {self.copy_col}, {end} : index")
            inside = t.value(f"arith.andi {inside}, {t.value(f'arith.cmpi ule, {end}, {self.n} : index')} : i1")
            with t.if_(inside):
                for j in range(count):
                    self._copy_panel_row(kk, row, *self._unit_panel(first, j), in_bounds=True)
            with t.else_():
                for j in range(count):
                    panel, col0 = self._unit_panel(first, j)
                    with t.if_(t.value(f"arith.cmpi ult, {panel}, {self.copy_panels} : index")):
                        full = t.value(f"arith.cmpi ule, {t.value(f'arith.addi {col0}, {self.width} : index')}, "
                                       f"{self.n} : index")
                        with t.if_(full):
                            self._copy_panel_row(kk, row, panel, col0, in_bounds=True)
                        with t.else_():
                            self._copy_panel_row(kk, row, panel, col0, in_bounds=False)

    def _prefetch_unit(self, unit: str, per_row: str, last_col: str) -> None:
        """Prefetch the unit of the copy COPY_AHEAD_BYTES past ``unit``, a cache line at a time (clamped to B)."""
        p, t = self.plan, self.t
        count = self.unit_panels
        # A unit holds count * width columns of B (and as many of the second B in a dual GEMM): each B's stream is
        # prefetched COPY_AHEAD_BYTES ahead.
        ahead = t.value(f"arith.addi {unit}, {t.const(max(1, COPY_AHEAD_BYTES // (count * p.width * 4)))} : index")
        row = t.value(f"arith.addi {self.copy_row}, {t.value(f'arith.divui {ahead}, {per_row} : index')} : index")
        row = t.value(f"arith.minui {row}, {t.value(f'arith.subi {self.k}, {self.c1} : index')} : index")
        col = t.value(f"arith.muli {t.value(f'arith.remui {ahead}, {per_row} : index')}, "
                      f"{t.const(count * p.width)} : index")
        col = t.value(f"arith.addi {self.copy_col}, {col} : index")
        for source in (self.b, self.b2) if p.dual else (self.b,):
            for offset in range(0, count * p.width * 4, CACHE_LINE):
                at = t.value(f"arith.addi {col}, {t.const(offset // 4)} : index") if offset else col
                at = t.value(f"arith.minui {at}, {last_col} : index")
                t.add(f"memref.prefetch {source}[{row}, {at}], read, locality<3>, data : {self.b_dyn}")

    def _unit_panel(self, first: str, j: int) -> tuple[str, str]:
        """Panel ``first + j`` of the next slice, and its first column of B."""
        t = self.t
        panel = t.value(f"arith.addi {first}, {t.const(j)} : index", "q") if j else first
        return panel, t.value(f"arith.addi {self.copy_col}, {t.value(f'arith.muli {panel}, {self.width} : index')} "
                              f": index")

    def _copy_panel_row(self, kk: str, row: str, panel: str, col0: str, in_bounds: bool) -> None:
        """Row ``kk`` of the next slice's panel ``panel`` (from column ``col0``): B's row ``row``, into the other
        panel buffer."""
        p, t = self.plan, self.t
        for v, col in enumerate(self._columns(col0)):
            x = self._read(self._second(v, self.b, self.b2), self.b_dyn, [row, col], in_bounds)
            t.add(f"vector.store {x}, {self.panels}[{self.worker}, {self.next_slot}, {panel}, {kk}, "
                  f"{t.const(v * p.lanes)}] : {self.panel_type}, {self.vec}")

    def _vectors(self, j1: str, body) -> None:
        """``body(columns, in_bounds)`` over the task's columns: RN/lanes vectors at a time (independent
        chains for the out-of-order core), then one vector at a time, then the masked rest at N's edge."""
        t, p = self.t, self.plan
        start = self.j0
        for step in dict.fromkeys((p.rn, p.lanes)):
            size = t.const(step)
            end = t.whole_end(j1, size, lo=start, hint="jw")
            with t.for_(start, end, size, "col") as col:
                body(self._consecutive(col, step // p.lanes), True)
            start = end
        with t.if_(t.value(f"arith.cmpi ult, {start}, {j1} : index")):
            body([start], False)

    def _partials_type(self) -> str:
        return f"memref<{self.plan.workers}x?x?x{F32}>"

    def _products(self) -> tuple[int, ...]:
        """The products a kernel computes: 0, and 1 for a dual GEMM's second."""
        return (0, 1) if self.plan.dual else (0,)

    def _c_at(self, row: str, col: str, product: int = 0) -> tuple[str, str, list[str]]:
        """Where a streaming kernel accumulates C[row, col] (of a dual GEMM's ``product``): C, or this worker's
        partial sums when K is split."""
        if self.split:
            return (self.partials2 if product else self.partials), self._partials_type(), [self.worker, row, col]
        return (self.c2 if product else self.c), self.dyn, [*self.bi, row, col]

    def _add_partials(self) -> None:
        """C = its init + the workers' partial sums, columns shared among the workers."""
        t, p = self.t, self.plan
        with t.share(self.n, p.workers, t.const(p.lanes)) as (_, self.j0, j1), \
                t.for_(self.c0, self.m, self.c1, "row") as row:

            def add(columns: list[str], in_bounds: bool) -> None:
                for col in columns:
                    totals = []
                    for product in self._products():
                        partials = self.partials2 if product else self.partials
                        total = (self._zero_vec() if self.c_in is None or product
                                 else self._read(self.c_in, self.dyn, [row, col], in_bounds))
                        for w in range(p.workers):
                            part = self._read(partials, self._partials_type(), [t.const(w), row, col], in_bounds)
                            total = t.value(f"arith.addf {total}, {part} : {self.vec}", "sum")
                        totals.append(total)
                    value = (self._epilogue(totals[0], totals[1] if p.dual else None, row, col, in_bounds)
                             if p.epilogue else totals[0])
                    self._write(value, self.c, [row, col], in_bounds)

            self._vectors(j1, add)

    def _stream_init(self, i0: str, i1: str, j1: str) -> None:
        """Set the task's tile of C to its init (zeros, or the init operand); the K slices then accumulate."""
        t = self.t
        with t.for_(i0, i1, self.c1, "row") as row:

            def start(columns: list[str], in_bounds: bool) -> None:
                for col in columns:
                    for product in self._products():
                        target, target_type, at = self._c_at(row, col, product)
                        value = (self._zero_vec() if self.c_in is None or self.split or product
                                 else self._read(self.c_in, self.dyn, at, in_bounds))
                        self._write(value, target, at, in_bounds, target_type)

            self._vectors(j1, start)

    def _stream(self, i0: str, i1: str, j1: str) -> None:
        """The task's tile of C, updated from STREAM_DEPTH rows of B at a time (then one at a time for the
        rest of the K slice): for each row of the tile, a vector of C is loaded, takes one FMA per row of B,
        and is stored. B streams along whole rows of the task's columns, read from memory once: its
        STREAM_DEPTH rows stay in L1 while every row of the tile takes them (the other order, rows of C
        outside, reads them again from L2 or further for each row: benchmarks/RESULTS.md, "Host code against
        every baseline", third pass).
        """
        t = self.t
        depth = t.const(STREAM_DEPTH)
        main = t.whole_end(self.kc, depth, hint="kw")
        for start, end, step, count in ((self.c0, main, depth, STREAM_DEPTH), (main, self.kc, self.c1, 1)):
            with t.for_(start, end, step, "kk") as kk:
                first = t.value(f"arith.addi {self.p0}, {kk} : index", "kg")
                ks = [first] + [t.value(f"arith.addi {first}, {t.const(u)} : index", "kg") for u in range(1, count)]
                with t.for_(i0, i1, self.c1, "row") as row:
                    scalars = [t.value(f"memref.load {self.a}[{', '.join([*self.bi, row, k])}] : {self.dyn}", "s")
                               for k in ks]
                    broadcasts = [t.value(f"vector.broadcast {x} : {F32} to {self.vec}", "bc") for x in scalars]
                    self._vectors(j1, functools.partial(self._stream_update, row, ks, broadcasts))

    def _stream_update(self, row: str, ks: list[str], broadcasts: list[str], columns: list[str],
                       in_bounds: bool) -> None:
        """Row ``row`` of the tile at ``columns`` takes the rows ``ks`` of B (A's elements ``broadcasts``)."""
        t = self.t
        # Two chains of FMAs per vector (even and odd rows of B), summed at the end: half the latency of one
        # chain, so that the loads of the next columns overlap it. A dual GEMM's second product takes the same
        # columns of its own B.
        targets = [(product, col) for product in self._products() for col in columns]
        chains: list[list[str | None]] = [
            [self._read(*self._c_at(row, col, product), in_bounds) for product, col in targets],
            [None] * len(targets)]
        for u, (k, broadcast) in enumerate(zip(ks, broadcasts, strict=True)):
            acc = chains[u % 2]
            for v, (product, col) in enumerate(targets):
                b = self._read(self.b2 if product else self.b, self.b_dyn, [*self.bi, k, col], in_bounds)
                acc[v] = (t.value(f"arith.mulf {broadcast}, {b} : {self.vec}", "f") if acc[v] is None
                          else t.value(f"vector.fma {broadcast}, {b}, {acc[v]} : {self.vec}", "f"))
        for even, odd, (product, col) in zip(*chains, targets, strict=True):
            total = even if odd is None else t.value(f"arith.addf {even}, {odd} : {self.vec}", "f")
            target, target_type, at = self._c_at(row, col, product)
            self._write(total, target, at, in_bounds, target_type)

    def _stream_epilogue(self, i0: str, i1: str, j1: str) -> None:
        """The epilogue over the task's tile of C, once its K slices are summed (a streaming kernel's tile is
        updated in memory, row by row, so the epilogue takes a pass of its own over the tile, which is in
        L1 or L2)."""
        t = self.t
        with t.for_(i0, i1, self.c1, "row") as row:

            def finish(columns: list[str], in_bounds: bool) -> None:
                for col in columns:
                    at = [*self.bi, row, col]
                    second = self._read(self.c2, self.dyn, at, in_bounds) if self.plan.dual else None
                    value = self._epilogue(self._read(self.c, self.dyn, at, in_bounds), second, row, col, in_bounds)
                    self._write(value, self.c, at, in_bounds)

            self._vectors(j1, finish)

    def _panel_slice(self) -> str:
        """The panels' slice index of the current K slice."""
        return self.slice if self.plan.reuse_panels or self.plan.pipelined else self.c0

    def _columns(self, base: str) -> list[str]:
        """The column of each of the RN/lanes vectors of a micro-tile from ``base`` (of a dual GEMM's: each
        half's the same)."""
        return self._consecutive(base, self.plan.width // self.plan.lanes) * (self.plan.rn // self.plan.width)

    def _consecutive(self, base: str, count: int) -> list[str]:
        """The columns of ``count`` consecutive vectors from ``base``."""
        lanes = self.plan.lanes
        return [base if v == 0 else self.t.value(f"arith.addi {base}, {self.t.const(v * lanes)} : index", "col")
                for v in range(count)]

    def _second(self, v: int, first: str, second: str | None) -> str:
        """Of a dual GEMM's two buffers, the one vector ``v`` of a micro-tile belongs to."""
        return second if second is not None and v >= self.plan.width // self.plan.lanes else first

    def _mask(self, memref: str, memref_type: str, indices: list[str]) -> str:
        """The lanes of a vector at ``indices`` that lie inside the memref's last dimension."""
        last = len(indices) - 1
        extent = self.t.value(f"memref.dim {memref}, {self.t.const(last)} : {memref_type}")
        left = self.t.value(f"arith.subi {extent}, {indices[last]} : index")
        return self.t.value(f"vector.create_mask {left} : vector<{self.plan.lanes}xi1>", "mask")

    def _read(self, memref: str, memref_type: str, indices: list[str], in_bounds: bool) -> str:
        """A vector from ``memref`` at ``indices``; lanes past the last dimension read zero unless ``in_bounds``."""
        where = ", ".join(indices)
        if in_bounds:
            return self.t.value(f"vector.load {memref}[{where}] : {memref_type}, {self.vec}", "x")
        mask = self._mask(memref, memref_type, indices)
        return self.t.value(f"vector.maskedload {memref}[{where}], {mask}, {self._zero_vec()} : {memref_type}, "
                            f"vector<{self.plan.lanes}xi1>, {self.vec} into {self.vec}", "x")

    def _write(self, value: str, memref: str, indices: list[str], in_bounds: bool,
               memref_type: str | None = None) -> None:
        """Store ``value`` at ``indices``; lanes past the last dimension are dropped unless ``in_bounds``."""
        where, memref_type = ", ".join(indices), memref_type or self.dyn
        if in_bounds:
            self.t.add(f"vector.store {value}, {memref}[{where}] : {memref_type}, {self.vec}")
        else:
            mask = self._mask(memref, memref_type, indices)
            self.t.add(f"vector.maskedstore {memref}[{where}], {mask}, {value} : {memref_type}, "
                       f"vector<{self.plan.lanes}xi1>, {self.vec}")

    def _zero_vec(self) -> str:
        return self.t.value(f"arith.constant dense<0.0> : {self.vec}", "zv")

    def _pack(self, j1: str) -> None:
        """Copy the task's TK x TN slice of B into RN-wide panels (zeros past N), PACK_DEPTH rows at a
        time: each row of the slice is read as one contiguous run, so the copy reads PACK_DEPTH runs side
        by side, and its stores fill consecutive rows of each panel."""
        t = self.t
        width = t.value(f"arith.subi {j1}, {self.j0} : index")
        count = t.value(f"arith.ceildivui {width}, {self.width} : index", "np")
        depth = t.const(PACK_DEPTH)
        groups = t.whole_end(self.kc, depth, hint="kw")
        with t.for_(self.c0, groups, depth, "kk") as kk:
            self._pack_rows(count, [kk] + [t.value(f"arith.addi {kk}, {t.const(r)} : index", "kk")
                                           for r in range(1, PACK_DEPTH)])
        with t.for_(groups, self.kc, self.c1, "kk") as kk:
            self._pack_rows(count, [kk])

    def _pack_rows(self, count: str, rows: list[str]) -> None:
        """Copy rows ``rows`` of the K slice into the panels, panel by panel across all of them."""
        t = self.t
        kgs = [t.value(f"arith.addi {self.p0}, {kk} : index", "kg") for kk in rows]
        with t.for_(self.c0, count, self.c1, "jp") as jp:
            col0 = t.value(f"arith.addi {self.j0}, {t.value(f'arith.muli {jp}, {self.width} : index')} : index",
                           "col")
            full = t.value(f"arith.cmpi ule, {t.value(f'arith.addi {col0}, {self.width} : index')}, {self.n} "
                           ": index")
            with t.if_(full):
                self._pack_stores(rows, kgs, jp, col0, in_bounds=True)
            with t.else_():
                self._pack_stores(rows, kgs, jp, col0, in_bounds=False)

    def _pack_stores(self, rows: list[str], kgs: list[str], jp: str, col0: str, in_bounds: bool) -> None:
        """Rows ``rows`` (of B: ``kgs``) of panel ``jp``, from B's column ``col0``."""
        t, lanes = self.t, self.plan.lanes
        offsets = [t.const(v * lanes) for v in range(self.plan.rn // lanes)]
        for kk, kg in zip(rows, kgs, strict=True):
            for v, (col, offset) in enumerate(zip(self._columns(col0), offsets, strict=True)):
                x = self._read(self._second(v, self.b, self.b2), self.b_dyn, [*self.bi, kg, col], in_bounds)
                t.add(f"vector.store {x}, {self.panels}[{self.worker}, {self._panel_slice()}, {jp}, {kk}, "
                      f"{offset}] : {self.panel_type}, {self.vec}")

    def _full_or_edge(self, rows: list[str], jr: str, full: str) -> None:
        """The micro-tile at ``rows`` and column ``jr``: in bounds where ``full``, else masked at N's edge."""
        with self.t.if_(full):
            self._micro_tile(rows, jr, in_bounds=True)
        with self.t.else_():
            self._micro_tile(rows, jr, in_bounds=False)

    def _micro_tile(self, rows: list[str], jr: str, in_bounds: bool, prefetch: bool = False) -> None:
        """RM x RN accumulators over the K slice, then added into C; with ``prefetch`` (a prepacked B's panel's
        first micro-tile), prefetching the next panel's rows of the slice as it goes."""
        p, t = self.plan, self.t
        columns = self._columns(jr)
        starts = self._tile_start(rows, columns, in_bounds)
        self.next_panel = None
        if prefetch:
            panels = t.value(f"memref.dim {self.b}, {t.const(len(self.bi))} : {self.b_dyn}", "np")
            following = t.value(f"arith.addi {t.value(f'arith.divui {jr}, {self.width} : index', 'jp')}, {self.c1} "
                                f": index", "jp")
            self.next_panel = t.value(f"arith.minui {following}, {t.value(f'arith.subi {panels}, {self.c1} : index')} "
                                      f": index", "jp")
        if p.pipelined:  # copy_every k steps per loop step, with one unit of the copy; then the rest of K
            step = self.copy_every
            whole = t.value(f"arith.muli {self.units_per_tile}, {t.const(step)} : index", "kw")
            starts = self._k_loop(rows, jr, columns, in_bounds, starts, self.c0, whole, step)
            out = self._k_loop(rows, jr, columns, in_bounds, starts, whole, self.kc, 1)
        else:
            out = self._k_loop(rows, jr, columns, in_bounds, starts, self.c0, self.kc, 1)
        if p.epilogue:
            with t.if_(self.last_slice):
                self._store_epilogue(rows, columns, out, in_bounds)
            with t.else_():
                self._store_tile(rows, columns, out, in_bounds)
        else:
            self._store_tile(rows, columns, out, in_bounds)

    def _tile_start(self, rows: list[str], columns: list[str], in_bounds: bool) -> list[str]:
        """The accumulators' values before the K slice: the first K slice starts from C's init (zeros, or the
        init operand); later ones from C."""
        p, t = self.plan, self.t
        types = [self.vec] * (p.rm * p.rn // p.lanes)
        with t.if_(self.first, types, "init") as starts:
            if self.c_in is None:
                t.yield_([self._zero_vec()] * len(types), types)
            else:
                t.yield_([self._read(self.c_in, self.dyn, [*self.bi, row, col], in_bounds)
                          for row in rows for col in columns], types)
        with t.else_():
            t.yield_([self._read(self._second(v, self.c, self.c2), self.dyn, [*self.bi, row, col], in_bounds)
                      for row in rows for v, col in enumerate(columns)], types)
        return starts

    def _store_tile(self, rows: list[str], columns: list[str], out: list[str], in_bounds: bool) -> None:
        """The accumulators ``out`` into C (a dual GEMM's second product into its own buffer)."""
        nv = self.plan.rn // self.plan.lanes
        for r, row in enumerate(rows):
            for v, col in enumerate(columns):
                self._write(out[r * nv + v], self._second(v, self.c, self.c2), [*self.bi, row, col], in_bounds)

    def _store_epilogue(self, rows: list[str], columns: list[str], out: list[str], in_bounds: bool) -> None:
        """The epilogue's value of the accumulators ``out`` into C; a dual GEMM's takes each vector of the
        first product with its partner of the second."""
        p = self.plan
        nv, half = p.rn // p.lanes, p.width // p.lanes
        for r, row in enumerate(rows):
            for v, col in enumerate(columns[:half] if p.dual else columns):
                second = out[r * nv + v + half] if p.dual else None
                value = self._epilogue(out[r * nv + v], second, row, col, in_bounds)
                self._write(value, self.c, [*self.bi, row, col], in_bounds)

    def _k_loop(self, rows: list[str], jr: str, columns: list[str], in_bounds: bool, init: list[str], begin: str,
                end: str, step: int) -> list[str]:
        """The accumulators ``init`` updated over k in [begin, end), ``step`` k at a time (unrolled); with a
        step above 1, each loop step also copies one unit of the pipelined copy, the micro-tile's next."""
        p, t = self.plan, self.t
        nv = p.rn // p.lanes
        with t.for_carried(begin, end, t.const(step), init, self.vec, ("kk", "acc", "out")) as loop:
            kk, acc = loop.iv, loop.args
            if step > 1:
                unit = t.value(f"arith.addi {self.first_unit}, {t.value(f'arith.divui {kk}, {t.const(step)} : index')} "
                               f": index", "u")
                self._copy_unit(unit, prefetch=True)
            for sub in range(step):
                k = t.value(f"arith.addi {kk}, {t.const(sub)} : index", "kk") if sub else kk
                kg = t.value(f"arith.addi {self.p0}, {k} : index", "kg")
                b_vectors = self._b_row(k, kg, jr, columns, in_bounds)
                if p.sweeps_b and in_bounds:
                    self._prefetch_sweep(kg, columns)
                if self.next_panel:  # a prepacked B: the next panel's row k, a cache line at a time
                    for offset in range(0, p.rn * 4, CACHE_LINE):
                        where = ", ".join([*self.bi, self.next_panel, kg, t.const(offset // 4)])
                        t.add(f"memref.prefetch {self.b}[{where}], read, locality<3>, data : {self.b_dyn}")
                updated = []
                for r, row in enumerate(rows):
                    scalar = t.value(f"memref.load {self.a}[{', '.join([*self.bi, row, kg])}] : {self.dyn}", "s")
                    broadcast = t.value(f"vector.broadcast {scalar} : {F32} to {self.vec}", "bc")
                    for v in range(nv):
                        updated.append(t.value(f"vector.fma {broadcast}, {b_vectors[v]}, {acc[r * nv + v]} "
                                               f": {self.vec}", "f"))
                acc = updated
            t.yield_(acc, [self.vec] * len(acc))
        return loop.results

    def _prefetch_sweep(self, kg: str, columns: list[str]) -> None:
        """For B read in place by a few rows (:attr:`KernelPlan.sweeps_b`): prefetch the cache lines of this
        micro-tile's columns (of both B's in a dual GEMM) SWEEP_AHEAD_SLICES K slices further down, at least
        SWEEP_AHEAD_ROWS rows, clamped to B's last row."""
        p, t = self.plan, self.t
        rows = max(SWEEP_AHEAD_ROWS, SWEEP_AHEAD_SLICES * p.tk)
        ahead = t.value(f"arith.addi {kg}, {t.const(rows)} : index", "ka")
        ahead = t.value(f"arith.minui {ahead}, {self.last_k} : index", "ka")
        per_product = p.width // p.lanes
        for v, col in enumerate(columns):
            if (v % per_product) * p.lanes * 4 % CACHE_LINE == 0:  # one prefetch per cache line
                t.add(f"memref.prefetch {self._second(v, self.b, self.b2)}[{', '.join([*self.bi, ahead, col])}], "
                      f"read, locality<3>, data : {self.b_dyn}")

    def _epilogue(self, c: str, c2: str | None, row: str, col: str, in_bounds: bool) -> str:
        """The epilogue's value for the vector ``c`` of C (and ``c2`` of a dual GEMM's second product) at
        ``row`` and columns from ``col``."""
        t, epilogue = self.t, self.plan.epilogue
        inputs = []
        for (kind, typ), buffer in zip(epilogue.inputs, self.extras, strict=True):
            memref_type = dynamic_memref(ir.RankedTensorType.parse(typ).rank)
            if kind == "row":
                scalar = t.value(f"memref.load {buffer}[{', '.join([*self.bi, row])}] : {memref_type}", "xr")
                inputs.append(t.value(f"vector.broadcast {scalar} : {F32} to {self.vec}", "xv"))
            else:
                where = [col] if kind == "column" else [*self.bi, row, col]
                inputs.append(self._read(buffer, memref_type, where, in_bounds))
        products = {"c": c, "c2": c2}
        return t.program(epilogue.ops, lambda ref: products[ref[0]] if ref[0] in products else inputs[ref[1]],
                         self.vec)

    def _b_row(self, kk: str, kg: str, jr: str, columns: list[str], in_bounds: bool) -> list[str]:
        """The RN-wide row of B at k, as RN/lanes vectors."""
        p, t = self.plan, self.t
        offsets = [t.const(v * p.lanes) for v in range(p.rn // p.lanes)]
        if p.pack:
            jp = t.value(f"arith.divui {t.value(f'arith.subi {jr}, {self.j0} : index')}, {self.width} : index", "jp")
            return [t.value(f"vector.load {self.panels}[{self.worker}, {self._panel_slice()}, {jp}, {kk}, {o}] "
                            f": {self.panel_type}, {self.vec}", "y") for o in offsets]
        if p.prepacked:
            jp = t.value(f"arith.divui {jr}, {self.width} : index", "jp")
            return [t.value(f"vector.load {self.b}[{', '.join([*self.bi, jp, kg, o])}] : {self.b_dyn}, {self.vec}",
                            "y") for o in offsets]
        return [self._read(self._second(v, self.b, self.b2), self.b_dyn, [*self.bi, kg, col], in_bounds)
                for v, col in enumerate(columns)]


def prefetches_panels(plan: KernelPlan) -> bool:
    """Whether the micro-tiles of ``plan`` with B prepacked should prefetch the next panel: where one row
    block covers all of M (static).

    Each panel then streams from memory once per call, and without help the
    memory is busy only while a panel's first micro-tile runs (each panel's
    slice is a run of its own, K x RN floats from the last). That micro-tile
    alone prefetches: the others find the panel in the cache, and a prefetch
    in each of 22 micro-tiles down 128 rows made the product 1.1x slower
    than none (benchmarks/RESULTS.md, "Prepacked panels prefetched once").
    With several row blocks, panels are read again from the caches, and
    prefetching them costs more than it saves (benchmarks/RESULTS.md, "Host
    code against every baseline", fifth pass: the prefetch on bound weights;
    and "Measurements behind rules in the code": the prefetch of prepacked
    panels).
    """
    rows = _dim(plan.c_type, -2)
    return rows is not None and rows <= plan.tm


def kernel_text(plan: KernelPlan) -> str:
    """The private ``func.func`` computing the GEMM of ``plan``, on tensors at its boundary."""
    return _Kernel(plan).text()


def inline_kernel(op: ir.Operation, plan: KernelPlan, operands: list[ir.Value] | None = None) -> None:
    """Replace the contraction ``op`` by the body of the kernel of ``plan``, in place.

    ``operands`` (A, B, C) default to the op's own; a prepacked plan takes the packed weight as B.
    The kernel is parsed as a function and then inlined: a call would hand
    its result buffer across a function boundary, where ownership-based
    deallocation tracks it with i1 buffers that the host lowering refuses.
    """
    inline_function(op, kernel_text(plan), operands or list(op.operands))


def packed_type(b_type: str, rn: int) -> str | None:
    """The type of a 2-D f32 weight ``tensor<KxNxf32>`` packed into RN-wide panels, or None if not static 2-D."""
    tensor = ir.RankedTensorType.parse(b_type)
    if tensor.rank != 2 or not tensor.has_static_shape or str(tensor.element_type) != F32:
        return None
    k, n = tensor.shape
    return f"tensor<{-(-n // rn)}x{k}x{rn}x{F32}>"


def pack_text(name: str, b_type: str, rn: int, lanes: int) -> str:
    """A function packing a static ``KxN`` weight into ``[ceil(N/RN)][K][RN]`` panels, zeros past N.

    It runs once per weight (in ``@f_prepare``), so the kernels that read it
    (``KernelPlan.prepacked``) stream each panel as one contiguous run.
    """
    packed = packed_type(b_type, rn)
    assert packed is not None, b_type
    panels, k, _ = ir.RankedTensorType.parse(packed).shape
    n = ir.RankedTensorType.parse(b_type).shape[1]
    vec, mask_type, memref = f"vector<{lanes}x{F32}>", f"vector<{lanes}xi1>", packed.replace("tensor<", "memref<")
    source = b_type.replace("tensor<", "memref<")
    t = MlirText()
    with t.region(f"func.func private @{name}(%b: {b_type}) -> {packed}"):
        c0, c1 = t.const(0), t.const(1)
        rows, cols, count, width = (t.value(f"arith.constant {value} : index", hint)
                                    for value, hint in ((k, "k"), (n, "n"), (panels, "panels"), (rn, "rn")))
        zero = t.value(f"arith.constant dense<0.0> : {vec}", "zv")
        src = t.value(f"bufferization.to_buffer %b read_only : {b_type} to {source}", "src")
        out = t.alloc(memref, hint="out")
        with t.parallel(c0, count, c1, "jp") as jp:
            base = t.value(f"arith.muli {jp}, {width} : index", "base")
            with t.for_(c0, rows, c1, "kk") as kk:
                for v in range(rn // lanes):
                    offset = t.value(f"arith.constant {v * lanes} : index", "o")
                    col = t.value(f"arith.addi {base}, {offset} : index", "col")
                    mask = t.value(f"vector.create_mask {t.value(f'arith.subi {cols}, {col} : index', 'left')} "
                                   f": {mask_type}", "mask")
                    x = t.value(f"vector.maskedload {src}[{kk}, {col}], {mask}, {zero} : {source}, {mask_type}, "
                                f"{vec} into {vec}", "x")
                    t.add(f"vector.store {x}, {out}[{jp}, {kk}, {offset}] : {memref}, {vec}")
        t.add(f"return {t.value(f'bufferization.to_tensor {out} restrict : {memref} to {packed}', 'r')} : {packed}")
    return t.function_text()


def copy_text(source: str, target: str, lanes: int) -> str:
    """A function copying one rank-2 memref into another of the same shape, rows in parallel, by vectors.

    For the copies that bufferization leaves (a concatenation's parts, a
    returned slice): as ``memref.copy`` they would become an element-by-element
    call into the runtime whenever either side is strided.
    """
    element = ir.MemRefType.parse(source).element_type
    vec, mask_type = f"vector<{lanes}x{element}>", f"vector<{lanes}xi1>"
    t = MlirText()
    with t.region(f"func.func private @copy(%src: {source}, %dst: {target})"):
        c0, c1 = t.const(0), t.const(1)
        step = t.value(f"arith.constant {lanes} : index", "lanes")
        zero = t.value(f"arith.constant dense<{'0.0' if isinstance(element, ir.FloatType) else '0'}> : {vec}", "zero")
        rows = t.value(f"memref.dim %src, {c0} : {source}", "rows")
        cols = t.value(f"memref.dim %src, {c1} : {source}", "cols")
        full = t.whole_end(cols, step, hint="full")
        mask = t.value(f"vector.create_mask {t.value(f'arith.subi {cols}, {full} : index', 'left')} : {mask_type}",
                       "mask")
        with t.parallel(c0, rows, c1, "i") as i:
            with t.for_(c0, full, step, "j") as j:
                t.add(f"vector.store {t.value(f'vector.load %src[{i}, {j}] : {source}, {vec}', 'x')}, %dst[{i}, {j}] "
                      f": {target}, {vec}")
            rest = t.value(f"vector.maskedload %src[{i}, {full}], {mask}, {zero} : {source}, {mask_type}, {vec} "
                           f"into {vec}", "x")
            t.add(f"vector.maskedstore %dst[{i}, {full}], {mask}, {rest} : {target}, {mask_type}, {vec}")
        t.add("return")
    return t.function_text()
