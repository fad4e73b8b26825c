"""The host's bf16 GEMM on AVX512-BF16 dot products: ``C[b, m, n] (+)= sum_k A[b, m, k] * B[b, k, n]``, A and B
bf16, C f32 (batch optional).

``vdpbf16ps`` (``x86vector.avx512.dot``) multiplies 32 bf16 pairs and adds each pair's two products to one of
16 f32 lanes: ``acc[j] += a[2j] b[2j] + a[2j+1] b[2j+1]``. A GEMM takes two steps of K per instruction, twice
the multiply-adds of an f32 FMA, from half the bytes:

1. B is packed once per call into panels of 16 columns, ``[b][ceil(N/16)][ceil(K/2)][32]``: each 32-element row
   of a panel is two consecutive k of its 16 columns, interleaved (k, k+1 of column 0, then of column 1, ...),
   zeros past N and past an odd K. The panels are shared among the workers. Where one block of rows covers M
   (a static M of at most TM rows: a few tokens), each task reads its columns of B once, and a copy would only
   add traffic: the micro-kernel then reads two rows of B in place and interleaves them in registers. A few
   rows take tiles that stream B as the f32 kernel does (:func:`plan_for`).
2. Tasks: blocks of ``TM x TN`` of C (per batch), shared among the workers as contiguous runs. A task walks K
   in slices of ``TKP`` pairs; in each slice, for each group of ``NV`` panels (``16 NV`` columns), for each
   ``RM`` rows, a micro-kernel keeps ``RM x NV`` accumulator vectors in registers: per pair of k, each row's
   two A values are read as one 32-bit word, broadcast to every lane, and dotted with each panel's row. The
   ``NV`` panels' slice (``NV x TKP x 64`` bytes) stays in L1 while the task's rows stream past it.
3. C is written once per slice (read back at the next); rows past the block's end repeat its last row (the
   same values stored twice), columns past N are masked.

Sums are in f32 throughout: each dot adds two exact bf16 products (a bf16 product is exact in f32) to the
accumulator, as an f32 FMA chain over the same pairs would, up to the order of the two additions.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from mlir import ir

from prism.codegen.cpu.kernel import CACHE_LINE, SWEEP_AHEAD_ROWS, SWEEP_AHEAD_SLICES, dynamic_memref
from prism.codegen.cpu.text import MlirText
from prism.kernels import host_gemm
from prism.targets import host_space

LANES = 16  # f32 lanes of a 512-bit vector; one panel's columns
F32, BF16 = "f32", "bf16"


@dataclass(frozen=True)
class Bf16Plan:
    """One bf16 GEMM: its private function's name, its tensor types (as text), whether C starts at zero
    (else at the C operand), its blocks and the workers that share its tasks."""

    name: str
    a_type: str
    b_type: str
    c_type: str
    zero_init: bool
    workers: int
    tm: int = 96  # rows of a task (a multiple of RM)
    tn: int = 256  # columns of a task (a multiple of 16 NV)
    tkp: int = 128  # pairs of k per slice
    rm: int = 6  # rows of a micro-tile
    nv: int = 4  # panels (16 columns each) of a micro-tile

    @property
    def packs(self) -> bool:
        """Whether B is packed: unless one block of rows covers M (a static M within TM), where each task
        reads its columns of B once, so that a copy would only add traffic; B's rows are then interleaved in
        registers as they are read."""
        m = static_sizes(self.c_type)[-2]
        return m is None or m > self.tm

    @property
    def batch(self) -> bool:
        return self.c_type.count("x") == 3  # tensor<BxMxNxf32>


def static_sizes(tensor_type: str) -> list[int | None]:
    """The sizes of a ranked tensor type written as text (``tensor<[B x] M x N x f32>``), None where dynamic."""
    return [int(d) if d.isdigit() else None for d in tensor_type.removeprefix("tensor<").split("x")[:-1]]


# A product of at most this many rows (a few tokens; at least two) reads B in place as streams (:func:`plan_for`).
STREAMED_ROWS = host_space.FEW_BF16_ROWS
# A streaming micro-tile's accumulators: RM x NV vectors.
STREAMED_ACCUMULATORS = 16


def plan_for(name: str, a_type: str, b_type: str, c_type: str, zero_init: bool, workers: int) -> Bf16Plan:
    """The plan of a product of these tensor types (as text).

    A static M of 2 to STREAMED_ROWS rows and a static N take one block of rows, and read B in place the way
    the f32 kernel streams it (:func:`prism.kernels.host_gemm.streams_in_place`): slices of
    PREFETCH_STREAMS rows of B (half as many pairs), so that the prefetchers follow every row, and tasks as
    wide as two per worker allow, so that each row is read in long runs; micro-tiles of up to 8 rows by
    STREAMED_ACCUMULATORS / RM panels (benchmarks/RESULTS.md, "bf16 products of a few rows"). Other products
    take the defaults of :class:`Bf16Plan`.
    """
    plan = Bf16Plan(name, a_type, b_type, c_type, zero_init, workers)
    *batch, m, n = static_sizes(c_type)
    if m is None or n is None or None in batch or not 1 < m <= STREAMED_ROWS:
        return plan
    rm = min(8, m)
    nv = STREAMED_ACCUMULATORS // rm
    group = LANES * nv
    column_blocks = -(-2 * workers // (batch[0] if batch else 1))
    tn = -(-n // column_blocks)
    return dataclasses.replace(plan, tm=-(-m // rm) * rm, tn=-(-tn // group) * group, rm=rm, nv=nv,
                               tkp=host_gemm.PREFETCH_STREAMS // 2)


def takes(a_type: ir.Type, b_type: ir.Type, c_type: ir.Type, operand_roles: list[list[str]]) -> bool:
    """Whether the kernel runs a product of operands of these types, each reading loops of ``operand_roles``:
    bf16 A and B, f32 C, laid out as A[b,m,k], B[b,k,n] and C[b,m,n] with at most one batch loop."""
    elements = [str(ir.RankedTensorType(t).element_type) for t in (a_type, b_type, c_type)]
    if elements != [BF16, BF16, F32] or len(operand_roles) != 3:
        return False
    prefix = ["batch"] if "batch" in operand_roles[2] else []
    wanted = (["m", "k"], ["k", "n"], ["m", "n"])
    return all(list(roles) == prefix + want for roles, want in zip(operand_roles, wanted, strict=True))


@dataclass(frozen=True)
class PairPanels:
    """B (``b``, of the memref type ``b_dyn``) and the buffer of its interleaved pair panels (``panels``, of
    ``p_dyn``: ``[batch x panels][pairs][32]``); ``batch``: whether both have a leading batch dimension."""

    b: str
    b_dyn: str
    panels: str
    p_dyn: str
    batch: bool
    # Panels interleaved by groups of ``group`` (1: none): a group's tiles of ``tile_pairs`` pairs each lie one
    # after another, panel by panel, then those of the next tile of pairs (the AMX kernel's B tiles, read in runs).
    group: int = 1
    tile_pairs: int = 1

    def at(self, t: MlirText, panel: str, pair: str) -> str:
        """The indices into ``panels`` of pair ``pair`` of panel ``panel`` (the panel's row of 32 starts there)."""
        if self.group == 1:
            return f"{panel}, {pair}, {t.const(0)}"
        group = t.value(f"arith.divui {panel}, {t.const(self.group)} : index", "pg")
        within = t.value(f"arith.remui {panel}, {t.const(self.group)} : index", "pj")
        return f"{group}, {self.row(t, within, pair)}, {t.const(0)}"

    def row(self, t: MlirText, within: str, pair: str) -> str:
        """The row, in its group, of pair ``pair`` of the group's panel ``within``."""
        tile = t.value(f"arith.divui {pair}, {t.const(self.tile_pairs)} : index", "pt")
        row = t.value(f"arith.addi {t.value(f'arith.muli {tile}, {t.const(self.group)} : index')}, {within} "
                      ": index", "pr")
        return t.value(f"arith.addi {t.value(f'arith.muli {row}, {t.const(self.tile_pairs)} : index')}, "
                       f"{t.value(f'arith.remui {pair}, {t.const(self.tile_pairs)} : index')} : index", "pr")


@contextmanager
def block_tasks(t: MlirText, mt: str, nt: str, batches: str, workers: int) -> Iterator[tuple[str, str, str, str]]:
    """A loop over the tasks of a grid of ``batches`` x ``mt`` x ``nt`` blocks (batch, row block, column
    block, the last fastest), shared among ``workers``; yields each task's worker, batch, row block and column
    block."""
    per_batch = t.value(f"arith.muli {mt}, {nt} : index", "blocks")
    tasks = t.value(f"arith.muli {per_batch}, {batches} : index", "tasks")
    with t.share(tasks, workers) as (worker, begin, end), t.for_(begin, end, t.const(1), "task") as task:
        bi = t.value(f"arith.divui {task}, {per_batch} : index", "bi")
        local = t.value(f"arith.remui {task}, {per_batch} : index", "tl")
        yield worker, bi, t.value(f"arith.divui {local}, {nt} : index", "ti"), \
            t.value(f"arith.remui {local}, {nt} : index", "tj")


# Pairs of B packed per pass over the panels (:func:`pack_pairs`): the rows of B that a pass reads (twice as many)
# stay within the TLB and L1 while it writes a run of each panel.
PACKED_PAIRS = 16


def pack_pairs(t: MlirText, buffers: PairPanels, rows: str, np: str, n: str, k: str, kp: str, workers: int) -> None:
    """Fill pairs ``[0, kp)`` of the ``rows`` panels (``np`` per batch) of 16 columns each with B's pairs of k
    interleaved (k, k+1 of column 0, then of column 1, ...), zeros past ``n`` columns and past an odd ``k``; the
    panels shared among ``workers``. Each panel's row of 32 is one row of a VNNI tile of B.

    A worker packs PACKED_PAIRS pairs of each of its panels in turn: B is read row by row (a row of B spans
    pages of a few KiB), not down a panel's column, which would take a new page and cache line every row."""
    half = f"vector<{LANES}x{BF16}>"
    interleave = ", ".join(f"{j}, {j + LANES}" for j in range(LANES))
    last_k = t.value(f"arith.subi {k}, {t.const(1)} : index", "kl")
    none = t.value(f"arith.constant dense<false> : vector<{LANES}xi1>", "off")

    def at(bi: str, *indices: str) -> str:
        return ", ".join([*([bi] if buffers.batch else []), *indices])

    with t.share(rows, workers) as (_, begin, end), \
            t.for_(t.const(0), kp, t.const(PACKED_PAIRS), "kb") as kb:
        block_end = t.value(f"arith.minui {t.value(f'arith.addi {kb}, {t.const(PACKED_PAIRS)} : index')}, {kp} "
                            ": index", "ke")
        with t.for_(begin, end, t.const(1), "panel") as panel:
            bi = t.value(f"arith.divui {panel}, {np} : index", "bi")
            col = t.value(f"arith.muli {t.value(f'arith.remui {panel}, {np} : index')}, {t.const(LANES)} : index",
                          "col")
            columns = t.value(f"vector.create_mask {t.value(f'arith.subi {n}, {col} : index')} "
                              f": vector<{LANES}xi1>", "mask")
            with t.for_(kb, block_end, t.const(1), "kp") as pair:
                k0 = t.value(f"arith.muli {pair}, {t.const(2)} : index", "k0")
                k1 = t.value(f"arith.addi {k0}, {t.const(1)} : index", "k1")
                first = masked_read(t, buffers.b, buffers.b_dyn, at(bi, k0, col), columns, LANES, BF16)
                # Past an odd K the second row reads nothing (its address clamped to K's last row).
                inside = t.value(f"arith.cmpi ult, {k1}, {k} : index", "odd")
                second_mask = t.value(f"arith.select {inside}, {columns}, {none} : vector<{LANES}xi1>", "mask")
                second_row = t.value(f"arith.minui {k1}, {last_k} : index", "k1")
                second = masked_read(t, buffers.b, buffers.b_dyn, at(bi, second_row, col), second_mask, LANES, BF16)
                pairs = t.value(f"vector.shuffle {first}, {second} [{interleave}] : {half}, {half}", "pr")
                t.add(f"vector.store {pairs}, {buffers.panels}[{buffers.at(t, panel, pair)}] : {buffers.p_dyn}, "
                      f"vector<{2 * LANES}x{BF16}>")


def masked_read(t: MlirText, buffer: str, memref: str, at: str, mask: str, lanes: int, element: str) -> str:
    """A vector of ``lanes`` from ``buffer`` at ``at``, zero where ``mask`` is off (nothing read there)."""
    vec = f"vector<{lanes}x{element}>"
    zero = t.value(f"arith.constant dense<0.0> : {vec}", "z")
    return t.value(f"vector.maskedload {buffer}[{at}], {mask}, {zero} : {memref}, vector<{lanes}xi1>, {vec} "
                   f"into {vec}", "x")


def kernel_text(plan: Bf16Plan) -> str:
    """The kernel of ``plan`` as a private function ``@name(%a, %b, %c) -> C``."""
    return _Kernel(plan).text()


class PairKernel:
    """What the bf16 kernels share: a product C (f32) = A B of bf16 operands, batched or not, B packed into
    pair panels (``p_dyn``)."""

    def __init__(self, plan: Bf16Plan | Any):
        self.plan, self.t = plan, MlirText()
        self.rank = 3 if plan.batch else 2
        self.a_dyn, self.b_dyn = dynamic_memref(self.rank, BF16), dynamic_memref(self.rank, BF16)
        self.c_dyn = dynamic_memref(self.rank, F32)
        self.p_dyn = f"memref<?x?x{2 * LANES}x{BF16}>"  # [batch x panels][pairs][32]

    def _operands(self) -> list[str]:
        """In the kernel's function: C's sizes (returned), the batches, M, N and K, and A, B and C's initial
        values (where C does not start at zero) as buffers."""
        p, t = self.plan, self.t
        dims = [t.const(i) for i in range(self.rank)]
        sizes = [t.value(f"tensor.dim %c, {dims[i]} : {p.c_type}", "s") for i in range(self.rank)]
        self.batches = sizes[0] if p.batch else t.const(1)
        self.m, self.n = sizes[-2], sizes[-1]
        self.k = t.value(f"tensor.dim %a, {dims[-1]} : {p.a_type}", "K")
        self.a = t.buffer("%a", p.a_type, self.a_dyn)
        self.b = t.buffer("%b", p.b_type, self.b_dyn)
        self.c_in = None if p.zero_init else t.buffer("%c", p.c_type, self.c_dyn)
        return sizes


class _Kernel(PairKernel):
    def __init__(self, plan: Bf16Plan):
        assert plan.tm % plan.rm == 0 and plan.tn % (LANES * plan.nv) == 0, plan
        super().__init__(plan)
        self.vec, self.pair_vec = f"vector<{LANES}x{F32}>", f"vector<{2 * LANES}x{BF16}>"

    def text(self) -> str:
        p, t = self.plan, self.t
        with t.region(f"func.func private @{p.name}(%a: {p.a_type}, %b: {p.b_type}, %c: {p.c_type}) -> {p.c_type}"):
            sizes = self._operands()
            self.c = t.alloc(self.c_dyn, sizes, "C")
            self.kp = t.value(f"arith.ceildivui {self.k}, {t.const(2)} : index", "KP")
            # Panels per batch, rounded up to whole groups of NV: a micro-tile reads NV panels, zeros past N.
            group = t.const(LANES * p.nv)
            self.np = t.value(f"arith.muli {t.value(f'arith.ceildivui {self.n}, {group} : index')}, "
                              f"{t.const(p.nv)} : index", "NP")
            if p.packs:
                rows = t.value(f"arith.muli {self.batches}, {self.np} : index", "panels")
                self.panels = t.alloc(self.p_dyn, [rows, self.kp], "P")
                self._pack(rows)
            self._tasks()
            t.add(f"return {t.tensor_of(self.c, self.c_dyn, p.c_type)} : {p.c_type}")
        return t.function_text()

    def _at(self, bi: str | None, *indices: str) -> str:
        return ", ".join([*([bi] if self.plan.batch and bi else []), *indices])

    def _pack(self, rows: str) -> None:
        """B into interleaved pair panels, the panels shared among the workers."""
        pack_pairs(self.t, PairPanels(self.b, self.b_dyn, self.panels, self.p_dyn, self.plan.batch),
                   rows, self.np, self.n, self.k, self.kp, self.plan.workers)

    def _tasks(self) -> None:
        p, t = self.plan, self.t
        mt = t.value(f"arith.ceildivui {self.m}, {t.const(p.tm)} : index", "mt")
        nt = t.value(f"arith.ceildivui {self.n}, {t.const(p.tn)} : index", "nt")
        with block_tasks(t, mt, nt, self.batches, p.workers) as (_, bi, ti, tj):
            i0 = t.value(f"arith.muli {ti}, {t.const(p.tm)} : index", "i0")
            i1 = t.value(f"arith.minui {t.value(f'arith.addi {i0}, {t.const(p.tm)} : index')}, {self.m} : index",
                         "i1")
            last = t.value(f"arith.subi {i1}, {t.const(1)} : index", "last")
            j0 = t.value(f"arith.muli {tj}, {t.const(p.tn)} : index", "j0")
            j1 = t.value(f"arith.minui {t.value(f'arith.addi {j0}, {t.const(p.tn)} : index')}, {self.n} : index",
                         "j1")
            with t.for_(t.const(0), self.kp, t.const(p.tkp), "s0") as s0:
                s1 = t.value(f"arith.minui {t.value(f'arith.addi {s0}, {t.const(p.tkp)} : index')}, {self.kp} "
                             ": index", "s1")
                with t.for_(j0, j1, t.const(LANES * p.nv), "jc") as jc, \
                        t.for_(i0, i1, t.const(p.rm), "ir") as ir_:
                    rows = [t.value(f"arith.minui {t.value(f'arith.addi {ir_}, {t.const(r)} : index')}, {last} "
                                    ": index", "row") for r in range(p.rm)]
                    self._micro_tile(bi, rows, jc, s0, s1)

    def _micro_tile(self, bi: str, rows: list[str], jc: str, s0: str, s1: str) -> None:
        """RM x NV accumulators over the pairs [s0, s1) of K, from C (or the init) and back into C."""
        p, t = self.plan, self.t
        cols = [t.value(f"arith.addi {jc}, {t.const(LANES * v)} : index", "col") for v in range(p.nv)]
        panel0 = t.value(f"arith.addi {t.value(f'arith.muli {bi}, {self.np} : index')}, "
                         f"{t.value(f'arith.divui {jc}, {t.const(LANES)} : index')} : index", "pn")
        panels = [t.value(f"arith.addi {panel0}, {t.const(v)} : index", "pn") for v in range(p.nv)]
        self.masks = self._column_masks(cols)
        if not p.packs:
            panels = cols
        starts = self._starts(bi, rows, cols, s0)
        # Whole pairs in place; the pair of an odd K's last k reads its missing half as zero.
        whole = t.value(f"arith.minui {s1}, {t.value(f'arith.divui {self.k}, {t.const(2)} : index')} : index", "sw")
        with t.for_carried(s0, whole, t.const(1), starts, self.vec, ("kp", "acc", "acc")) as loop:
            t.yield_(self._step(bi, rows, panels, loop.iv, loop.args, tail=False), [self.vec] * len(starts))
        sums = loop.results
        tail = t.value(f"arith.cmpi ult, {whole}, {s1} : index", "tail")
        with t.if_(tail, [self.vec] * len(sums), "acc") as finished:
            t.yield_(self._step(bi, rows, panels, whole, sums, tail=True), [self.vec] * len(sums))
        with t.else_():
            t.yield_(sums, [self.vec] * len(sums))
        for r, row in enumerate(rows):
            for v, col in enumerate(cols):
                t.add(f"vector.maskedstore {self.c}[{self._at(bi, row, col)}], {self.masks[v]}, "
                      f"{finished[r * p.nv + v]} "
                      f": {self.c_dyn}, vector<{LANES}xi1>, {self.vec}")

    def _starts(self, bi: str, rows: list[str], cols: list[str], s0: str) -> list[str]:
        """The accumulators' values before the slice at ``s0``: C's partial sums after the first slice, the init
        (zero, or the C operand) at it."""
        p, t = self.plan, self.t
        first = t.value(f"arith.cmpi eq, {s0}, {t.const(0)} : index", "first")
        count = p.rm * p.nv
        with t.if_(first, [self.vec] * count, "start") as starts:
            if p.zero_init:
                zero = t.value(f"arith.constant dense<0.0> : {self.vec}", "z")
                t.yield_([zero] * count, [self.vec] * count)
            else:
                t.yield_(self._read_c(self.c_in, bi, rows, cols), [self.vec] * count)
        with t.else_():
            t.yield_(self._read_c(self.c, bi, rows, cols), [self.vec] * count)
        return starts

    def _read_c(self, buffer: str, bi: str, rows: list[str], cols: list[str]) -> list[str]:
        return [self._masked_read(buffer, self.c_dyn, self._at(bi, row, col), self.masks[v], LANES, F32)
                for row in rows for v, col in enumerate(cols)]

    def _pair_of_rows(self, bi: str, k0: str, col: str, mask: str, tail: bool) -> str:
        """Rows k0 and k0 + 1 of B at 16 columns from ``col``, interleaved as a packed panel's row (the second
        zero in the tail pair of an odd K, whose row k0 + 1 does not exist)."""
        t, half = self.t, f"vector<{LANES}x{BF16}>"
        first = self._masked_read(self.b, self.b_dyn, self._at(bi, k0, col), mask, LANES, BF16)
        if tail:
            second = t.value(f"arith.constant dense<0.0> : {half}", "z")
        else:
            k1 = t.value(f"arith.addi {k0}, {t.const(1)} : index", "k1")
            second = self._masked_read(self.b, self.b_dyn, self._at(bi, k1, col), mask, LANES, BF16)
        return t.value(f"vector.interleave {first}, {second} : {half} -> {self.pair_vec}", "bv")

    def _prefetch_rows(self, bi: str, k0: str, cols: list[str]) -> None:
        """B read in place: prefetch the cache lines of this micro-tile's columns in the two rows that the step
        SWEEP_AHEAD_SLICES slices further down reads (at least SWEEP_AHEAD_ROWS rows ahead), clamped to B's last
        row. A slice's rows are short runs that the hardware prefetchers do not follow (as the f32 kernel's sweep,
        :meth:`prism.codegen.cpu.kernel._Kernel._prefetch_sweep`)."""
        t = self.t
        ahead = max(SWEEP_AHEAD_ROWS, SWEEP_AHEAD_SLICES * 2 * self.plan.tkp)
        last = t.value(f"arith.subi {self.k}, {t.const(1)} : index", "kl")
        for step in range(2):
            row = t.value(f"arith.minui {t.value(f'arith.addi {k0}, {t.const(ahead + step)} : index')}, {last} "
                          ": index", "ka")
            for v, col in enumerate(cols):
                if v * LANES * 2 % CACHE_LINE == 0:  # one prefetch per cache line
                    t.add(f"memref.prefetch {self.b}[{self._at(bi, row, col)}], read, locality<3>, data "
                          f": {self.b_dyn}")

    def _column_masks(self, cols: list[str]) -> list[str]:
        """Per vector of columns starting at ``cols``, the lanes inside N."""
        return [self.t.value(f"vector.create_mask {self.t.value(f'arith.subi {self.n}, {col} : index')} "
                             f": vector<{LANES}xi1>", "mask") for col in cols]

    def _masked_read(self, buffer: str, memref: str, at: str, mask: str, lanes: int, element: str) -> str:
        return masked_read(self.t, buffer, memref, at, mask, lanes, element)

    def _step(self, bi: str, rows: list[str], panels: list[str], kp: str, accs: list[str], tail: bool) -> list[str]:
        """One pair of k: every row's pair of A broadcast and dotted with every panel's row."""
        p, t = self.plan, self.t
        k0 = t.value(f"arith.muli {kp}, {t.const(2)} : index", "k")
        pair, words = f"vector<2x{BF16}>", f"vector<{LANES}xi32>"
        if p.packs:
            b = [t.value(f"vector.load {self.panels}[{panel}, {kp}, {t.const(0)}] : {self.p_dyn}, {self.pair_vec}",
                         "bv") for panel in panels]
        else:  # ``panels`` are the columns: two rows of B, interleaved
            if not tail:
                self._prefetch_rows(bi, k0, panels)
            b = [self._pair_of_rows(bi, k0, col, self.masks[v], tail) for v, col in enumerate(panels)]
        out = []
        for r, row in enumerate(rows):
            if tail:  # the last k is the pair's first; its second reads zero
                left = t.value(f"vector.create_mask {t.value(f'arith.subi {self.k}, {k0} : index')} : vector<2xi1>")
                read = self._masked_read(self.a, self.a_dyn, self._at(bi, row, k0), left, 2, BF16)
            else:
                read = t.value(f"vector.load {self.a}[{self._at(bi, row, k0)}] : {self.a_dyn}, {pair}", "ap")
            word = t.value(f"vector.bitcast {read} : {pair} to vector<1xi32>", "aw")
            spread = t.value(f"vector.broadcast {t.value(f'vector.extract {word}[0] : i32 from vector<1xi32>')} "
                             f": i32 to {words}", "ab")
            a = t.value(f"vector.bitcast {spread} : {words} to {self.pair_vec}", "ab")
            out += [t.value(f"x86vector.avx512.dot {accs[r * p.nv + v]}, {a}, {b[v]} : {self.pair_vec} -> {self.vec}",
                            "acc") for v in range(p.nv)]
        return out
