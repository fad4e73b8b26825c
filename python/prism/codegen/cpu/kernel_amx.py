"""The host's bf16 GEMM on AMX tiles: ``C[b, m, n] (+)= sum_k A[b, m, k] * B[b, k, n]``, A and B bf16, C f32
(batch optional), on cores with AMX (Intel Sapphire Rapids and later).

A core has eight tile registers of at most 16 rows of 64 bytes. ``tdpbf16ps`` (``amx.tile_mulf``) multiplies an
A tile of ``R`` rows x ``K_T`` bf16 by a B tile of ``K_T / 2`` rows of pairs (VNNI layout: each row holds two
consecutive k of 16 columns, interleaved) and adds the products into a C tile of ``R`` rows x 16 f32, each pair's
two products added to one f32 lane, as ``vdpbf16ps`` does (:mod:`.kernel_bf16`). The knobs (:class:`AmxPlan`):
the tile rows ``R`` (at most 16), the bytes of an A tile's row (at most 64: ``K_T`` = half of them), and the C
tiles of one block, ``TILES_M x TILES_N``, which with the ``TILES_M`` A tiles and ``TILES_N`` B tiles that feed them
must fit the eight tile registers (:func:`prism.targets.host_space.tiles_fit`).

1. Staging: A is copied into a buffer of whole tiles, zeros past M and past K (a tile load reads whole rows, so a
   ragged edge must read zeros, never past a buffer). Each tile's R rows of ``K_T`` k are contiguous, and a block's
   ``TILES_M`` tiles of one tile of K lie one after another, then those of the next: a block reads A in one run
   (with A read in place, K apart, a tile's rows would share one L1 set). B is packed into the pair panels of
   :func:`.kernel_bf16.pack_pairs`, 16 columns each, padded with zeros to whole tiles of K and interleaved by
   groups of ``TILES_N`` (:class:`.kernel_bf16.PairPanels`): a block reads B in one run as well. All of B is
   packed first, unless one task's rows cover a static M (a few tokens, or tasks of all rows: the space offers TM up
   to M): each element of B then serves one task, which packs each slice of its panels into its worker's buffer
   just before its bands take it, reading B row by row across the task's columns and prefetching
   ``PACK_AHEAD_ROWS`` rows ahead. C's tiles go straight to the result where M and N are static and whole blocks,
   else to a buffer of whole blocks. They start as zero tiles at K's first tile, or from the C operand copied in.
2. Tasks: ``TM x TN`` of C (whole blocks), shared among the workers as contiguous runs. A task walks K in slices
   of ``TK``; per slice, each band of ``R x TILES_M`` rows takes each group of ``TILES_N`` panels of the task in
   turn: it loads the block's C tiles, and per tile of K its A and B tiles, multiplies each pair into its C tile,
   and stores the C tiles after the slice. A band's slice of A stays in L1 over the task's columns, the task's
   slice of B in L2 over its bands. (The tiles stay within one block of straight-line code: the conversion to
   LLVM types no tile that crosses a branch, so C goes through memory once per slice, not once per tile of K.)
3. A staged C is copied out, masked past N.

Sums are in f32 throughout, over the same pairs as the AVX512-BF16 kernel.
"""

from __future__ import annotations

from dataclasses import dataclass

from mlir import ir

from prism.codegen.cpu.kernel import CACHE_LINE, dynamic_memref
from prism.codegen.cpu.kernel_bf16 import (
    BF16,
    F32,
    LANES,
    PairKernel,
    PairPanels,
    block_tasks,
    masked_read,
    pack_pairs,
    static_sizes,
)
from prism.infra.errors import UnsupportedOp
from prism.targets.host_space import TILE_REGISTERS, TILE_ROW_BYTES, TILE_ROWS, tiles_fit

# The most tiles of K in a slice: its straight-line code (twice where C starts at zero) grows with them.
SLICE_TILES = 32
# The most bytes of B that a task packing its own B packs per slice (in L2).
IN_TASK_SLICE_BYTES = 512 * 1024
# How far down B a task packing its own B prefetches the columns it reads: a slice's rows are runs of the task's
# width, which the hardware prefetchers take up late (benchmarks/RESULTS.md, "bf16 on AMX tiles").
PACK_AHEAD_ROWS = 8
# The knobs of ``prism.choice`` that the kernel reads, with the plan's fields they set.
CHOICE_KNOBS = {"AR": "rows", "AB": "row_bytes", "AM": "tiles_m", "AN": "tiles_n", "TM": "tm", "TN": "tn",
                "TK": "tk"}


@dataclass(frozen=True)
class AmxPlan:
    """One bf16 GEMM on AMX tiles: its private function's name, its tensor types (as text), whether C starts at
    zero (else at the C operand), the workers that share its tasks, and its tiles (see the module's docstring)."""

    name: str
    a_type: str
    b_type: str
    c_type: str
    zero_init: bool
    workers: int
    rows: int = TILE_ROWS  # rows of an A and a C tile
    row_bytes: int = TILE_ROW_BYTES  # bytes of an A tile's row: row_bytes / 2 k per tile of K
    tiles_m: int = 2  # C tiles down a block
    tiles_n: int = 2  # C tiles across a block
    tm: int = 256  # rows of a task (rounded down to whole blocks, one block at least)
    tn: int = 256  # columns of a task (likewise)
    tk: int = 512  # k of a slice: what a band's C tiles take in per round trip through memory (whole tiles of K)

    def __post_init__(self) -> None:
        if min(self.tm, self.tn, self.tk) < 1:
            raise UnsupportedOp(f"AMX tasks of {self.tm} x {self.tn} x {self.tk} (TM x TN x TK) must be positive")
        if not tiles_fit(self.rows, self.row_bytes, self.tiles_m, self.tiles_n):
            raise UnsupportedOp(f"AMX tiles of {self.rows} rows x {self.row_bytes} bytes in blocks of "
                                f"{self.tiles_m} x {self.tiles_n} C tiles do not fit the {TILE_REGISTERS} tile "
                                f"registers of {TILE_ROWS} rows x {TILE_ROW_BYTES} bytes (rows 1 to {TILE_ROWS}, "
                                f"bytes a multiple of 4 up to {TILE_ROW_BYTES}, C, A and B tiles at most "
                                f"{TILE_REGISTERS})")

    @property
    def batch(self) -> bool:
        return self.c_type.count("x") == 3  # tensor<BxMxNxf32>


def choice_values(choice: ir.Attribute | None, loc: str) -> dict[str, int]:
    """The plan's tile fields that a ``prism.choice`` dictionary sets (:data:`CHOICE_KNOBS`); the others keep
    their defaults."""
    if not isinstance(choice, ir.DictAttr):
        return {}
    values: dict[str, int] = {}
    for key, field in CHOICE_KNOBS.items():
        if key in choice:
            value = choice[key]
            if not isinstance(value, ir.IntegerAttr) or value.value < 1:
                raise UnsupportedOp(f"prism.choice.{key} must be a positive integer", location=loc)
            values[field] = value.value
    return values


def kernel_text(plan: AmxPlan) -> str:
    """The kernel of ``plan`` as a private function ``@name(%a, %b, %c) -> C``."""
    return _Kernel(plan).text()


class _Kernel(PairKernel):
    def __init__(self, plan: AmxPlan):
        super().__init__(plan)
        self.kt, self.pt = plan.row_bytes // 2, plan.row_bytes // 4  # k, and pairs of k, per tile of K
        self.block_rows = plan.rows * plan.tiles_m
        self.task_rows = max(1, plan.tm // self.block_rows) * self.block_rows
        self.task_panels = max(1, plan.tn // (LANES * plan.tiles_n)) * plan.tiles_n
        self.slice_tiles = min(max(1, plan.tk // self.kt), SLICE_TILES)  # tiles of K per slice
        self.a_stage_dyn, self.c_stage_dyn = dynamic_memref(2, BF16), dynamic_memref(2, F32)
        self.a_tile = f"!amx.tile<{plan.rows}x{self.kt}x{BF16}>"
        self.b_tile = f"!amx.tile<{self.pt}x{2 * LANES}x{BF16}>"
        self.c_tile = f"!amx.tile<{plan.rows}x{LANES}x{F32}>"
        m, n = static_sizes(plan.c_type)[-2:]
        # C's tiles go straight to the result where its rows and columns are whole blocks.
        self.direct = m is not None and n is not None and m % self.block_rows == 0 \
            and n % (LANES * plan.tiles_n) == 0
        # Where one task's rows cover M (a static M of a few rows), each element of B serves one task alone: the
        # task packs each slice of its panels just before its blocks take it, into its worker's buffer (in L2),
        # rather than all of B into panels in memory first.
        self.in_task = m is not None and m <= self.task_rows
        if self.in_task:  # the slice of B that a task packs stays within IN_TASK_SLICE_BYTES
            tile_bytes = self.task_panels * LANES * self.kt * 2
            self.slice_tiles = max(1, min(self.slice_tiles, IN_TASK_SLICE_BYTES // tile_bytes))

    def text(self) -> str:
        p, t = self.plan, self.t
        with t.region(f"func.func private @{p.name}(%a: {p.a_type}, %b: {p.b_type}, %c: {p.c_type}) -> {p.c_type}"):
            sizes = self._operands()
            self._padded_sizes()
            self.k_pairs = t.value(f"arith.divui {self.k}, {t.const(2)} : index", "KW")  # pairs of two k inside K
            self.last_k = t.value(f"arith.subi {self.k}, {t.const(1)} : index", "kl")
            tiles = t.value(f"arith.muli {self.stage_rows}, {self.kts} : index", "tiles")
            self.a_stage = t.alloc(self.a_stage_dyn, [tiles, t.const(self.kt)], "As")
            self._stage_a()
            if self.in_task:  # a slice of the task's panels per worker
                self.panels = t.alloc(self.p_dyn, [t.const(p.workers * self.task_panels // p.tiles_n),
                                                   t.const(self.slice_tiles * p.tiles_n * self.pt)], "P")
            else:
                panels = t.value(f"arith.muli {self.batches}, {self.np} : index", "panels")
                self.panels = t.alloc(self.p_dyn, [
                    t.value(f"arith.divui {panels}, {t.const(p.tiles_n)} : index", "pg"),
                    t.value(f"arith.muli {self.kpp}, {t.const(p.tiles_n)} : index", "pr")], "P")
            self.packed = PairPanels(self.b, self.b_dyn, self.panels, self.p_dyn, p.batch, group=p.tiles_n,
                                     tile_pairs=self.pt)
            if not self.in_task:
                pack_pairs(t, self.packed, panels, self.np, self.n, self.k,
                           t.value(f"arith.ceildivui {self.k}, {t.const(2)} : index", "KP"), p.workers)
                self._zero_pair_tail(panels)
            c = t.alloc(self.c_dyn, sizes, "C")
            if self.direct:
                self.npad = self.n
                self.c_stage = c if not p.batch else \
                    t.value(f"memref.collapse_shape {c} [[0, 1], [2]] : {self.c_dyn} into {self.c_stage_dyn}", "Cs")
            else:
                self.npad = t.value(f"arith.muli {self.np}, {t.const(LANES)} : index", "Np")
                self.c_stage = t.alloc(self.c_stage_dyn, [self.stage_rows, self.npad], "Cs")
            if not p.zero_init:
                self._stage_c()
            self._tasks()
            if not self.direct:
                self._unstage_c(c)
            t.add(f"return {t.tensor_of(c, self.c_dyn, p.c_type)} : {p.c_type}")
        return t.function_text()

    def _padded_sizes(self) -> None:
        """M, N and K padded to whole blocks and tiles: rows per batch ``mp``, panels per batch ``np``, tiles of K
        ``kts`` (``kpad`` k, ``kpp`` pairs)."""
        p, t = self.plan, self.t
        block = t.const(self.block_rows)
        self.mp = t.value(f"arith.muli {t.value(f'arith.ceildivui {self.m}, {block} : index')}, {block} : index",
                          "Mp")
        self.stage_rows = t.value(f"arith.muli {self.batches}, {self.mp} : index", "rows")
        group = t.const(LANES * p.tiles_n)
        self.np = t.value(f"arith.muli {t.value(f'arith.ceildivui {self.n}, {group} : index')}, "
                          f"{t.const(p.tiles_n)} : index", "NP")
        self.kts = t.value(f"arith.ceildivui {self.k}, {t.const(self.kt)} : index", "KT")
        self.kpad = t.value(f"arith.muli {self.kts}, {t.const(self.kt)} : index", "Kp")
        self.kpp = t.value(f"arith.muli {self.kts}, {t.const(self.pt)} : index", "KPp")

    def _at(self, bi: str, *indices: str) -> str:
        return ", ".join([*([bi] if self.plan.batch else []), *indices])

    def _staged_row(self, r: str, rows: str) -> tuple[str, str, str]:
        """Of staged row ``r`` (``rows`` per batch): its batch, its row within the batch, and whether that row
        holds data (is below M); the row within the batch is clamped to M's last, so that no address points past
        the operand (a read there is masked off)."""
        t = self.t
        bi = t.value(f"arith.divui {r}, {rows} : index", "bi")
        i = t.value(f"arith.remui {r}, {rows} : index", "i")
        inside = t.value(f"arith.cmpi ult, {i}, {self.m} : index", "in")
        clamped = t.value(f"arith.minui {i}, {t.value(f'arith.subi {self.m}, {t.const(1)} : index')} : index", "i")
        return bi, clamped, inside

    def _a_tile_row(self, r0: str, kk: str) -> str:
        """The staging buffer's first row of the A tile of staged rows ``[r0, r0 + R)`` (``r0`` a multiple of R)
        and tile ``kk`` of K. A block's TILES_M tiles of one tile of K lie one after another, then those of the
        next tile of K: a block reads A in one run."""
        t, p = self.t, self.plan
        block = t.value(f"arith.divui {r0}, {t.const(self.block_rows)} : index", "blk")
        within = t.value(f"arith.divui {t.value(f'arith.remui {r0}, {t.const(self.block_rows)} : index')}, "
                         f"{t.const(p.rows)} : index", "in")
        tile = t.value(f"arith.addi {t.value(f'arith.muli {block}, {self.kts} : index')}, {kk} : index", "tile")
        tile = t.value(f"arith.addi {t.value(f'arith.muli {tile}, {t.const(p.tiles_m)} : index')}, {within} : index",
                       "tile")
        return t.value(f"arith.muli {tile}, {t.const(p.rows)} : index", "ar")

    def _stage_a(self) -> None:
        """A into whole tiles, each contiguous (R rows of ``K_T`` k, see :meth:`_a_tile_row`), zeros past M and
        past K."""
        t, lanes, rows = self.t, self.kt, self.plan.rows
        with t.share(self.stage_rows, self.plan.workers) as (_, begin, end), \
                t.for_(begin, end, t.const(1), "r") as r:
            bi, i, inside = self._staged_row(r, self.mp)
            limit = t.value(f"arith.select {inside}, {self.k}, {t.const(0)} : index", "lim")
            band_row = t.value(f"arith.remui {r}, {t.const(rows)} : index", "br")
            band = t.value(f"arith.subi {r}, {band_row} : index", "band")
            with t.for_(t.const(0), self.kts, t.const(1), "kk") as kk:
                col = t.value(f"arith.muli {kk}, {t.const(lanes)} : index", "col")
                mask = t.value(f"vector.create_mask {t.value(f'arith.subi {limit}, {col} : index')} "
                               f": vector<{lanes}xi1>", "mask")
                row = masked_read(t, self.a, self.a_dyn, self._at(bi, i, col), mask, lanes, BF16)
                at = t.value(f"arith.addi {self._a_tile_row(band, kk)}, {band_row} : index", "at")
                t.add(f"vector.store {row}, {self.a_stage}[{at}, {t.const(0)}] : {self.a_stage_dyn}, "
                      f"vector<{lanes}x{BF16}>")

    def _zero_pair_tail(self, panels: str) -> None:
        """Zeros in each panel's pairs past K's last, up to whole tiles of K (:func:`pack_pairs` fills the rest)."""
        t = self.t
        first = t.value(f"arith.ceildivui {self.k}, {t.const(2)} : index", "KP")
        pair_vec = f"vector<{2 * LANES}x{BF16}>"
        zeros = t.value(f"arith.constant dense<0.0> : {pair_vec}", "z")
        with t.share(panels, self.plan.workers) as (_, begin, end), t.for_(begin, end, t.const(1), "pn") as pn, \
                t.for_(first, self.kpp, t.const(1), "kp") as kp:
            t.add(f"vector.store {zeros}, {self.panels}[{self.packed.at(t, pn, kp)}] : {self.p_dyn}, {pair_vec}")

    def _stage_c(self) -> None:
        """The C operand into C's tiles (the staging buffer or the result), zeros past its edges."""
        p, t = self.plan, self.t
        vec = f"vector<{LANES}x{F32}>"
        with t.share(self.stage_rows, p.workers) as (_, begin, end), t.for_(begin, end, t.const(1), "r") as r:
            bi, i, inside = self._staged_row(r, self.mp)
            limit = t.value(f"arith.select {inside}, {self.n}, {t.const(0)} : index", "lim")
            with t.for_(t.const(0), self.npad, t.const(LANES), "col") as col:
                mask = t.value(f"vector.create_mask {t.value(f'arith.subi {limit}, {col} : index')} "
                               f": vector<{LANES}xi1>", "mask")
                start = masked_read(t, self.c_in, self.c_dyn, self._at(bi, i, col), mask, LANES, F32)
                t.add(f"vector.store {start}, {self.c_stage}[{r}, {col}] : {self.c_stage_dyn}, {vec}")

    def _tasks(self) -> None:
        """Tasks of TM x TN of C shared among the workers. A task walks K in slices of TK; per slice, its bands of
        R x TILES_M rows, and per band its groups of TILES_N panels: the band's A slice stays in L1 while the
        task's B slice streams from L2. A task that packs B itself packs its slice of every group first, into its
        worker's buffer (in L2), then takes the bands in the same order."""
        p, t = self.plan, self.t
        mt = t.value(f"arith.ceildivui {self.mp}, {t.const(self.task_rows)} : index", "mt")
        nt = t.value(f"arith.ceildivui {self.np}, {t.const(self.task_panels)} : index", "nt")
        slice_tiles = t.const(self.slice_tiles)
        with block_tasks(t, mt, nt, self.batches, p.workers) as (worker, bi, ti, tj):
            rows0 = t.value(f"arith.muli {bi}, {self.mp} : index", "rb")
            r_begin = t.value(f"arith.addi {rows0}, {t.value(f'arith.muli {ti}, {t.const(self.task_rows)} : index')}"
                              " : index", "r0")
            r_end = t.value(f"arith.minui {t.value(f'arith.addi {r_begin}, {t.const(self.task_rows)} : index')}, "
                            f"{t.value(f'arith.addi {rows0}, {self.mp} : index')} : index", "r1")
            panels0 = t.value(f"arith.muli {bi}, {self.np} : index", "pb")
            q_local = t.value(f"arith.muli {tj}, {t.const(self.task_panels)} : index", "q0")
            q_end = t.value(f"arith.minui {t.value(f'arith.addi {q_local}, {t.const(self.task_panels)} : index')}, "
                            f"{self.np} : index", "q1")
            with t.for_(t.const(0), self.kts, slice_tiles, "s0") as s0:
                s1 = t.value(f"arith.minui {t.value(f'arith.addi {s0}, {slice_tiles} : index')}, {self.kts} : index",
                             "s1")
                full = t.value(f"arith.cmpi eq, {t.value(f'arith.subi {s1}, {s0} : index')}, {slice_tiles} : index",
                               "full")
                if self.in_task:  # the task's panels in its worker's buffer, from this slice's first tile of K
                    self._pack_slice(worker, bi, q_local, q_end, s0, s1)
                    first = t.value(f"arith.subi {t.value(f'arith.muli {worker}, {t.const(self.task_panels)} : index')}"
                                    f", {q_local} : index", "wp")
                    base = s0
                else:  # all of B's panels, packed first
                    first, base = panels0, t.const(0)
                with t.for_(r_begin, r_end, t.const(self.block_rows), "rr") as r0, \
                        t.for_(q_local, q_end, t.const(p.tiles_n), "qq") as q:
                    panels = [t.value(f"arith.addi {first}, {t.value(f'arith.addi {q}, {t.const(j)} : index')} "
                                      ": index", "tp") for j in range(p.tiles_n)]
                    self._block(r0, q, panels, s0, s1, full, base=base)

    def _pack_slice(self, worker: str, bi: str, q_begin: str, q_end: str, s0: str, s1: str) -> None:
        """Tiles ``[s0, s1)`` of K of the task's panels ``[q_begin, q_end)`` (of batch ``bi``) into the worker's
        buffer, as :func:`.kernel_bf16.pack_pairs` packs them (zeros past N and past K): row by row across the
        task's columns, so that B is read in runs as long as the task is wide. Pairs of two rows inside K and
        groups of panels inside N read whole vectors; the last group of a task at N's edge and the pairs at K's
        end read under masks."""
        p, t = self.plan, self.t
        first = t.value(f"arith.muli {s0}, {t.const(self.pt)} : index", "p0")
        last = t.value(f"arith.muli {s1}, {t.const(self.pt)} : index", "p1")
        whole_pairs = t.value(f"arith.maxui {first}, {t.value(f'arith.minui {last}, {self.k_pairs} : index')} : index",
                              "pw")
        groups = t.value(f"arith.divui {t.value(f'arith.subi {q_end}, {q_begin} : index')}, {t.const(p.tiles_n)} "
                         ": index", "gn")
        col0 = t.value(f"arith.muli {q_begin}, {t.const(LANES)} : index", "c0")
        inside_n = t.value(f"arith.divui {t.value(f'arith.subi {self.n}, {col0} : index')}, "
                           f"{t.const(LANES * p.tiles_n)} : index", "gw")
        whole_groups = t.value(f"arith.minui {groups}, {inside_n} : index", "gw")
        group0 = t.value(f"arith.muli {worker}, {t.const(self.task_panels // p.tiles_n)} : index", "g0")
        for lo, hi, rows_inside in ((first, whole_pairs, True), (whole_pairs, last, False)):
            with t.for_(lo, hi, t.const(1), "pair") as pair:
                local = t.value(f"arith.subi {pair}, {first} : index", "pl")
                rows = []
                for step in range(2):
                    k = t.value(f"arith.addi {t.value(f'arith.muli {pair}, {t.const(2)} : index')}, "
                                f"{t.const(step)} : index", "k")
                    inside = None if rows_inside else t.value(f"arith.cmpi ult, {k}, {self.k} : index", "in")
                    rows.append((k if rows_inside else t.value(f"arith.minui {k}, {self.last_k} : index", "k"),
                                 inside))
                # The rows of the worker's buffer that this pair takes in each panel of a group.
                targets = [self.packed.row(t, t.const(j), local) for j in range(p.tiles_n)]
                unmasked_end = whole_groups if rows_inside else t.const(0)
                with t.for_(t.const(0), unmasked_end, t.const(1), "g") as g:
                    self._pack_group(bi, rows, g, col0, group0, targets, masked=False)
                with t.for_(unmasked_end, groups, t.const(1), "g") as g:
                    self._pack_group(bi, rows, g, col0, group0, targets, masked=True)

    def _pack_group(self, bi: str, rows: list[tuple[str, str | None]], g: str, col0: str, group0: str,
                    targets: list[str], masked: bool) -> None:
        """Group ``g`` of the task's panels (columns from ``col0``) of B's two ``rows`` (each with whether it is
        inside K, None where it is) into buffer group ``group0 + g``, each panel's pair at its row of
        ``targets``: two panels (a cache line of a row) per read, whole, or masked past N and K."""
        p, t = self.plan, self.t
        col = t.value(f"arith.addi {col0}, {t.value(f'arith.muli {g}, {t.const(LANES * p.tiles_n)} : index')} "
                      ": index", "col")
        group = t.value(f"arith.addi {group0}, {g} : index", "bg")
        if not masked:  # the same columns PACK_AHEAD_ROWS rows down, clamped to K's last row
            for row, _ in rows:
                ahead = t.value(f"arith.minui {t.value(f'arith.addi {row}, {t.const(PACK_AHEAD_ROWS)} : index')}, "
                                f"{self.last_k} : index", "ka")
                for offset in range(0, LANES * p.tiles_n * 2, CACHE_LINE):
                    at = t.value(f"arith.addi {col}, {t.const(offset // 2)} : index", "pc")
                    t.add(f"memref.prefetch {self.b}[{self._at(bi, ahead, at)}], read, locality<3>, data "
                          f": {self.b_dyn}")
        for j0 in range(0, p.tiles_n, 2):
            count = min(2, p.tiles_n - j0)
            lanes = LANES * count
            vec = f"vector<{lanes}x{BF16}>"
            at = t.value(f"arith.addi {col}, {t.const(LANES * j0)} : index", "col")
            halves = []
            for row, inside in rows:
                if not masked:
                    halves.append(t.value(f"vector.load {self.b}[{self._at(bi, row, at)}] : {self.b_dyn}, {vec}", "x"))
                    continue
                columns = t.value(f"vector.create_mask {t.value(f'arith.subi {self.n}, {at} : index')} "
                                  f": vector<{lanes}xi1>", "mask")
                if inside is not None:
                    none = t.value(f"arith.constant dense<false> : vector<{lanes}xi1>", "off")
                    columns = t.value(f"arith.select {inside}, {columns}, {none} : vector<{lanes}xi1>", "mask")
                halves.append(masked_read(t, self.b, self.b_dyn, self._at(bi, row, at), columns, lanes, BF16))
            pairs = t.value(f"vector.interleave {halves[0]}, {halves[1]} : {vec} -> vector<{2 * lanes}x{BF16}>", "pr")
            for i in range(count):
                part = pairs if count == 1 else t.value(
                    f"vector.extract_strided_slice {pairs} {{offsets = [{2 * LANES * i}], sizes = [{2 * LANES}], "
                    f"strides = [1]}} : vector<{2 * lanes}x{BF16}> to vector<{2 * LANES}x{BF16}>", "pr")
                t.add(f"vector.store {part}, {self.panels}[{group}, {targets[j0 + i]}, {t.const(0)}] : {self.p_dyn}, "
                      f"vector<{2 * LANES}x{BF16}>")

    def _block(self, r0: str, q: str, panels: list[str], s0: str, s1: str, full: str, base: str) -> None:
        """The block of C tiles at band ``r0`` and panel ``q`` over the tiles ``[s0, s1)`` of K: a whole slice in
        straight-line code, a ragged one a tile of K at a time. ``panels`` index the packed panels, whose tile of K
        ``kk`` is their tile ``kk - base``."""
        p, t = self.plan, self.t
        rows = [t.value(f"arith.addi {r0}, {t.const(p.rows * i)} : index", "tr") for i in range(p.tiles_m)]
        c0 = t.value(f"arith.muli {q}, {t.const(LANES)} : index", "c0")
        cols = [t.value(f"arith.addi {c0}, {t.const(LANES * j)} : index", "tc") for j in range(p.tiles_n)]
        with t.if_(full):
            self._started(rows, cols, panels, s0, self.slice_tiles, base)
        with t.else_(), t.for_(s0, s1, t.const(1), "kr") as kr:
            self._started(rows, cols, panels, kr, 1, base)

    def _started(self, rows: list[str], cols: list[str], panels: list[str], first: str, count: int,
                 base: str) -> None:
        """:meth:`_group`, its C tiles starting at zero where C does and ``first`` is K's first tile."""
        t = self.t
        if not self.plan.zero_init:
            self._group(rows, cols, panels, first, count, base, zero=False)
            return
        with t.if_(t.value(f"arith.cmpi eq, {first}, {t.const(0)} : index", "k0")):
            self._group(rows, cols, panels, first, count, base, zero=True)
        with t.else_():
            self._group(rows, cols, panels, first, count, base, zero=False)

    def _group(self, rows: list[str], cols: list[str], panels: list[str], first: str, count: int, base: str,
               zero: bool) -> None:
        """Tiles ``[first, first + count)`` of K into the block's C tiles, which start at zero (``zero``) or are
        loaded before, and are stored after. (The tiles stay within one block of straight-line code: the conversion
        to LLVM types no tile that crosses a branch.)"""
        t = self.t
        if zero:
            accs = [t.value(f"amx.tile_zero : {self.c_tile}", "ct") for _ in rows for _ in cols]
        else:
            accs = [t.value(f"amx.tile_load {self.c_stage}[{row}, {col}] : {self.c_stage_dyn} into {self.c_tile}",
                            "ct") for row in rows for col in cols]
        for step in range(count):
            kk = t.value(f"arith.addi {first}, {t.const(step)} : index", "kk")
            pair = t.value(f"arith.muli {t.value(f'arith.subi {kk}, {base} : index')}, {t.const(self.pt)} : index",
                           "kp")
            a = [t.value(f"amx.tile_load {self.a_stage}[{self._a_tile_row(row, kk)}, {t.const(0)}] : "
                         f"{self.a_stage_dyn} into {self.a_tile}", "at") for row in rows]
            b = [t.value(f"amx.tile_load {self.panels}[{self.packed.at(t, panel, pair)}] : {self.p_dyn} "
                         f"into {self.b_tile}", "bt") for panel in panels]
            accs = [t.value(f"amx.tile_mulf {a[i]}, {b[j]}, {accs[i * len(cols) + j]} : {self.a_tile}, "
                            f"{self.b_tile}, {self.c_tile}", "ct") for i in range(len(rows)) for j in range(len(cols))]
        for (row, col), acc in zip([(row, col) for row in rows for col in cols], accs, strict=True):
            t.add(f"amx.tile_store {self.c_stage}[{row}, {col}], {acc} : {self.c_stage_dyn}, {self.c_tile}")

    def _unstage_c(self, c: str) -> None:
        """C out of its staging buffer, masked past N."""
        t, vec = self.t, f"vector<{LANES}x{F32}>"
        rows = t.value(f"arith.muli {self.batches}, {self.m} : index", "rows")
        with t.share(rows, self.plan.workers) as (_, begin, end), t.for_(begin, end, t.const(1), "r") as r:
            bi = t.value(f"arith.divui {r}, {self.m} : index", "bi")
            i = t.value(f"arith.remui {r}, {self.m} : index", "i")
            staged = t.value(f"arith.addi {t.value(f'arith.muli {bi}, {self.mp} : index')}, {i} : index", "sr")
            with t.for_(t.const(0), self.n, t.const(LANES), "col") as col:
                row = t.value(f"vector.load {self.c_stage}[{staged}, {col}] : {self.c_stage_dyn}, {vec}", "cv")
                mask = t.value(f"vector.create_mask {t.value(f'arith.subi {self.n}, {col} : index')} "
                               f": vector<{LANES}xi1>", "mask")
                t.add(f"vector.maskedstore {c}[{self._at(bi, i, col)}], {mask}, {row} : {self.c_dyn}, "
                      f"vector<{LANES}xi1>, {vec}")
