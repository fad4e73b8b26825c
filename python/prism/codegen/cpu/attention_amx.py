"""Attention's products on AMX tiles: the online-softmax kernel of :mod:`.attention_kernel` with ``S = Q K^T``
and ``O += P V`` as ``tdpbf16ps`` (``amx.tile_mulf``), for chains of bf16 Q, K and V that round P to bf16 before
P V (a bf16 model's attention as frontends write it: products of bf16 operands into f32).

The tiles are those of :mod:`.kernel_amx`: an A tile of 16 rows x 32 bf16, a B tile of 16 rows of pairs (two
consecutive k of 16 columns, interleaved), a C tile of 16 rows x 16 f32. Blocks of C are 2 x 2 tiles (32 rows
of 32 columns: four C tiles, two A and two B take the eight tile registers), so BQ and BKV are multiples of
AMX_BLOCK.

- K, once per call, into pair panels of 16 keys (the B of ``Q K^T``: each pair of the head dimension, of 16
  keys), per block of BKV keys, zeros past the last key and past the head size up to whole tiles;
- V, once per call, into pair panels of 16 values (the B of ``P V``: each pair of keys, of 16 values), per block
  of BKV keys, zeros past the last key;
- per task, its BQ rows of Q into whole A tiles (zeros past the head size; rows past the block's end repeat
  its last, as in the f32 kernel);
- per block of keys: the scores block ``S`` (f32, the worker's) from zero tiles; the softmax of
  :mod:`.attention_kernel` on it, which writes each weight rounded to bf16 (as the chain rounds P) into the
  worker's P (the A of ``P V``); ``O``'s rows scaled by ``alpha`` with vectors, then ``O += P V`` through its C
  tiles.

Columns of a ragged last block of keys weigh 0 (the softmax sets their scores to -inf), and K's and V's panels
hold zeros there, so that no product reads past an operand. Sums are in f32, each pair's two products added to
one lane, as in :mod:`.kernel_amx`.
"""

from __future__ import annotations

from mlir import ir

from prism.codegen.cpu.attention_kernel import AttentionPlan, AttentionWriter
from prism.codegen.cpu.kernel_bf16 import BF16, masked_read
from prism.codegen.cpu.text import F32
from prism.kernels import host_attention
from prism.kernels.host_attention import AMX_BLOCK, TILE, TILE_K
from prism.search.attention import AttentionMatch


def takes_tiles(match: AttentionMatch) -> bool:
    """Whether the chain's products run on AMX tiles (:func:`prism.kernels.host_attention.takes_tiles`, Q, K and
    V all bf16)."""
    operands = {str(ir.ShapedType(x.type).element_type) for x in (match.q, match.k, match.v)}
    return operands == {BF16} and host_attention.takes_tiles(match.problem)


class AmxAttention(AttentionWriter):
    """The attention kernel of ``plan`` (``plan.amx``) with its products on AMX tiles."""

    def __init__(self, plan: AttentionPlan):
        super().__init__(plan)
        w, bq, bkv = plan.workers, plan.bq, plan.bkv
        self.head_tiles = -(-plan.head_dim // TILE_K)  # tiles of the head dimension (zeros past it)
        self.head_pairs = self.head_tiles * TILE  # pairs of the head dimension in a panel of K
        self.key_panels = bkv // TILE  # panels of K in a block of keys
        self.value_panels = plan.value_dim // TILE  # panels of V in a block of keys
        self.panel_dyn = f"memref<?x{2 * TILE}x{BF16}>"  # rows of a panel: a pair of 16 columns
        # The task's query tiles: [worker][head tile][row], each row TILE_K bf16.
        self.q_tiles_type = f"memref<{w * self.head_tiles * bq}x{TILE_K}x{BF16}>"
        self.weights_type = f"memref<{w * bq}x{bkv}x{BF16}>"
        self.s_rows_type = f"memref<{w * bq}x{bkv}x{F32}>"
        self.o_rows_type = f"memref<{w * bq}x{plan.value_dim}x{F32}>"
        self.a_tile = f"!amx.tile<{TILE}x{TILE_K}x{BF16}>"
        self.b_tile = f"!amx.tile<{TILE}x{2 * TILE}x{BF16}>"
        self.c_tile = f"!amx.tile<{TILE}x{TILE}x{F32}>"

    # -- once per call -----------------------------------------------------------------------------------------

    def _prepare_keys(self, kv_blocks: str) -> None:
        """K's and V's pair panels, every block of keys of every head, shared among the workers."""
        p, t = self.plan, self.t
        self.kv_blocks = kv_blocks
        blocks = t.value(f"arith.muli {self.flat}, {kv_blocks} : index", "kvb")
        self.k_panels = t.alloc(self.panel_dyn, [t.value(
            f"arith.muli {blocks}, {t.const(self.key_panels * self.head_pairs)} : index", "kpr")], "kp")
        self.v_panels = t.alloc(self.panel_dyn, [t.value(
            f"arith.muli {blocks}, {t.const(self.value_panels * p.bkv // 2)} : index", "vpr")], "vp")
        with t.share(blocks, p.workers) as (_, begin, end), t.for_(begin, end, self.c1, "kvt") as block:
            batch = self._batch_of(t.value(f"arith.divui {block}, {kv_blocks} : index", "fb"))
            j0 = t.value(f"arith.muli {t.value(f'arith.remui {block}, {kv_blocks} : index')}, {t.const(p.bkv)} "
                         ": index", "j0")
            self._pack_k(block, batch, j0)
            self._pack_v(block, batch, j0)

    def _key_row(self, j: str) -> tuple[str, str]:
        """Key ``j`` clamped to K's last (an address that stays inside the operand), and whether it is a key."""
        t = self.t
        inside = t.value(f"arith.cmpi ult, {j}, {self.skv} : index", "in")
        return t.value(f"arith.minui {j}, {t.value(f'arith.subi {self.skv}, {self.c1} : index')} : index", "j"), inside

    def _pack_k(self, block: str, batch: list[str], j0: str) -> None:
        """The block's keys into panels of 16: the panel's row ``kp`` holds the pair ``2 kp, 2 kp + 1`` of the
        head dimension of each of its 16 keys (zeros past the head size and past the last key)."""
        p, t = self.plan, self.t
        width = self.head_tiles * TILE_K
        first = t.value(f"arith.muli {block}, {t.const(self.key_panels * self.head_pairs)} : index", "kr")
        with t.for_(self.c0, t.const(p.bkv), self.c1, "jj") as jj:
            j, inside = self._key_row(t.value(f"arith.addi {j0}, {jj} : index", "j"))
            limit = t.value(f"arith.select {inside}, {t.const(p.head_dim)}, {self.c0} : index", "lim")
            mask = t.value(f"vector.create_mask {limit} : vector<{width}xi1>", "mask")
            key = masked_read(t, self.k, self.dyns["k"], ", ".join([*batch, j, self.c0]), mask, width, BF16)
            panel = t.value(f"arith.divui {jj}, {t.const(TILE)} : index", "kpn")
            row0 = t.value(f"arith.addi {first}, {t.value(f'arith.muli {panel}, {t.const(self.head_pairs)} : index')}"
                           " : index", "kr")
            column = t.value(f"arith.muli {t.value(f'arith.remui {jj}, {t.const(TILE)} : index')}, {t.const(2)} "
                             ": index", "kc")
            for pair in range(self.head_pairs):
                two = t.value(f"vector.extract_strided_slice {key} {{offsets = [{2 * pair}], sizes = [2], "
                              f"strides = [1]}} : vector<{width}x{BF16}> to vector<2x{BF16}>", "kw")
                row = t.value(f"arith.addi {row0}, {t.const(pair)} : index", "kr")
                t.add(f"vector.store {two}, {self.k_panels}[{row}, {column}] : {self.panel_dyn}, vector<2x{BF16}>")

    def _pack_v(self, block: str, batch: list[str], j0: str) -> None:
        """The block's rows of V into panels of 16 values: the panel's row ``jp`` holds keys ``2 jp, 2 jp + 1``
        of its 16 values, interleaved (zeros past the last key)."""
        p, t = self.plan, self.t
        dv, rows = p.value_dim, p.bkv // 2
        first = t.value(f"arith.muli {block}, {t.const(self.value_panels * rows)} : index", "vr")
        with t.for_(self.c0, t.const(rows), self.c1, "jp") as jp:
            halves = []
            for step in range(2):
                jj = t.value(f"arith.addi {t.value(f'arith.muli {jp}, {t.const(2)} : index')}, {t.const(step)} "
                             ": index", "jj")
                j, inside = self._key_row(t.value(f"arith.addi {j0}, {jj} : index", "j"))
                limit = t.value(f"arith.select {inside}, {t.const(dv)}, {self.c0} : index", "lim")
                mask = t.value(f"vector.create_mask {limit} : vector<{dv}xi1>", "mask")
                halves.append(masked_read(t, self.v, self.dyns["v"], ", ".join([*batch, j, self.c0]), mask, dv,
                                          BF16))
            pairs = t.value(f"vector.interleave {halves[0]}, {halves[1]} : vector<{dv}x{BF16}> -> "
                            f"vector<{2 * dv}x{BF16}>", "vpr")
            for panel in range(self.value_panels):
                part = t.value(f"vector.extract_strided_slice {pairs} {{offsets = [{2 * TILE * panel}], sizes = "
                               f"[{2 * TILE}], strides = [1]}} : vector<{2 * dv}x{BF16}> to vector<{2 * TILE}x{BF16}>",
                               "vw")
                row = t.value(f"arith.addi {first}, {t.value(f'arith.addi {jp}, {t.const(panel * rows)} : index')} "
                              ": index", "vr")
                t.add(f"vector.store {part}, {self.v_panels}[{row}, {self.c0}] : {self.panel_dyn}, "
                      f"vector<{2 * TILE}x{BF16}>")

    def _allocate(self) -> None:
        """The f32 kernel's scratch, with each worker's query tiles and its weights in bf16, and 2-D views of
        the worker's S and O, where tiles are loaded and stored."""
        super()._allocate()
        t = self.t
        self.q_tiles = t.alloc(self.q_tiles_type, hint="qt")
        self.weights = t.alloc(self.weights_type, hint="pw")
        self.s_rows = t.value(f"memref.collapse_shape {self.s} [[0, 1], [2]] : {self.s_type} into {self.s_rows_type}",
                              "sr")
        self.o_rows = t.value(f"memref.collapse_shape {self.o} [[0, 1], [2]] : {self.o_type} into {self.o_rows_type}",
                              "or")

    # -- per task ----------------------------------------------------------------------------------------------

    def _stage_q(self) -> None:
        """The task's BQ rows of Q into whole A tiles, one run of BQ rows per tile of the head dimension (zeros
        past the head size; rows past the block's end repeat its last)."""
        p, t = self.plan, self.t
        width = self.head_tiles * TILE_K
        mask = t.value(f"vector.create_mask {t.const(p.head_dim)} : vector<{width}xi1>", "mask")
        with t.for_(self.c0, t.const(p.bq), self.c1, "r") as r:
            row = masked_read(t, self.q, self.dyns["q"], ", ".join([*self.bi, self._row(r), self.c0]), mask, width,
                              BF16)
            for tile in range(self.head_tiles):
                part = t.value(f"vector.extract_strided_slice {row} {{offsets = [{TILE_K * tile}], sizes = [{TILE_K}], "
                               f"strides = [1]}} : vector<{width}x{BF16}> to vector<{TILE_K}x{BF16}>", "qw")
                at = t.value(f"arith.addi {self._q_tile_row(tile)}, {r} : index", "qr")
                t.add(f"vector.store {part}, {self.q_tiles}[{at}, {self.c0}] : {self.q_tiles_type}, "
                      f"vector<{TILE_K}x{BF16}>")

    def _q_tile_row(self, tile: int) -> str:
        """The first row of the worker's query tiles of tile ``tile`` of the head dimension."""
        t = self.t
        first = t.value(f"arith.muli {self.w}, {t.const(self.head_tiles)} : index", "qt")
        first = t.value(f"arith.addi {first}, {t.const(tile)} : index", "qt")
        return t.value(f"arith.muli {first}, {t.const(self.plan.bq)} : index", "qt")

    def _block_row(self, r0: str) -> str:
        """The row of the worker's S, P and O views of the block's local row ``r0``."""
        t = self.t
        return t.value(f"arith.addi {t.value(f'arith.muli {self.w}, {t.const(self.plan.bq)} : index')}, {r0} : index",
                       "wr")

    def _block_index(self) -> str:
        """The index of this block of keys among all (K's and V's panels are per block)."""
        t = self.t
        return t.value(f"arith.addi {t.value(f'arith.muli {self.fb}, {self.kv_blocks} : index')}, {self.kb} : index",
                       "kvb")

    def _products(self, steps: list[tuple[list[str], list[str]]], a_buffer: str, a_type: str, b_buffer: str,
                  b_type: str, c_at: list[list[str]], c_buffer: str, c_type: str, zero: bool) -> None:
        """C tiles at ``c_at`` (rows x columns of "row, col" indices into ``c_buffer``) plus, over ``steps`` (per
        step: the "row, col" indices of each row's A tile, of each column's B tile), the products of A and B
        tiles; the C tiles start at zero (``zero``) or from ``c_buffer``, and go back there. (Straight-line
        code: no tile crosses a branch.)"""
        t = self.t
        if zero:
            accs = [[t.value(f"amx.tile_zero : {self.c_tile}", "ct") for _ in row] for row in c_at]
        else:
            accs = [[t.value(f"amx.tile_load {c_buffer}[{at}] : {c_type} into {self.c_tile}", "ct") for at in row]
                    for row in c_at]
        for a_at, b_at in steps:
            a = [t.value(f"amx.tile_load {a_buffer}[{at}] : {a_type} into {self.a_tile}", "at") for at in a_at]
            b = [t.value(f"amx.tile_load {b_buffer}[{at}] : {b_type} into {self.b_tile}", "bt") for at in b_at]
            accs = [[t.value(f"amx.tile_mulf {a[i]}, {b[j]}, {acc} : {self.a_tile}, {self.b_tile}, {self.c_tile}",
                             "ct") for j, acc in enumerate(row)] for i, row in enumerate(accs)]
        for row_at, row in zip(c_at, accs, strict=True):
            for at, acc in zip(row_at, row, strict=True):
                t.add(f"amx.tile_store {c_buffer}[{at}], {acc} : {c_type}, {self.c_tile}")

    def _scores(self) -> None:
        """S = Q_blk K_blk^T in blocks of 2 x 2 C tiles from zero, over the tiles of the head dimension."""
        p, t = self.plan, self.t
        panels0 = t.value(f"arith.muli {self._block_index()}, {t.const(self.key_panels * self.head_pairs)} : index",
                          "kr")
        q_rows = [self._q_tile_row(tile) for tile in range(self.head_tiles)]
        with t.for_(self.c0, t.const(p.bq), t.const(AMX_BLOCK), "r0") as r0, \
                t.for_(self.c0, t.const(p.bkv), t.const(AMX_BLOCK), "c0") as c0:
            rows = [t.value(f"arith.addi {r0}, {t.const(TILE * i)} : index", "tr") for i in range(2)]
            cols = [t.value(f"arith.addi {c0}, {t.const(TILE * j)} : index", "tc") for j in range(2)]
            panels = []
            for col in cols:
                panel = t.value(f"arith.divui {col}, {t.const(TILE)} : index", "kpn")
                panel = t.value(f"arith.muli {panel}, {t.const(self.head_pairs)} : index", "kr")
                panels.append(t.value(f"arith.addi {panels0}, {panel} : index", "kr"))
            steps = []
            for tile in range(self.head_tiles):
                a_at = [f"{t.value(f'arith.addi {q_rows[tile]}, {row} : index', 'qr')}, {self.c0}" for row in rows]
                b_at = [f"{t.value(f'arith.addi {panel}, {t.const(tile * TILE)} : index', 'kr')}, {self.c0}"
                        for panel in panels]
                steps.append((a_at, b_at))
            c_at = [[f"{self._block_row(row)}, {col}" for col in cols] for row in rows]
            self._products(steps, self.q_tiles, self.q_tiles_type, self.k_panels, self.panel_dyn, c_at, self.s_rows,
                           self.s_rows_type, zero=True)

    def _store_weights(self, weights: str, r: str, column: str) -> None:
        """The weights rounded to bf16 (as the chain rounds P) into the worker's P, the A of P V."""
        p, t = self.plan, self.t
        narrow = t.value(f"arith.truncf {weights} : vector<{p.lanes}x{F32}> to vector<{p.lanes}x{BF16}>", "pb")
        t.add(f"vector.store {narrow}, {self.weights}[{self._block_row(r)}, {column}] : {self.weights_type}, "
              f"vector<{p.lanes}x{BF16}>")

    def _values(self) -> None:
        """O = alpha O (vectors, row by row; a row whose alpha is 1 as it is), then O += P V_blk
        (:meth:`_value_products`)."""
        p, t = self.plan, self.t
        vec = f"vector<{p.lanes}x{F32}>"
        with t.for_(self.c0, t.const(p.bq), self.c1, "r") as r:
            alpha = t.value(f"memref.load {self.alpha}[{self.w}, {r}] : {self.row_type}", "al")
            rescaled = t.value(f"arith.cmpf une, {alpha}, {self._f(1.0)} : {F32}", "scale")
            alpha = t.value(f"vector.broadcast {alpha} : {F32} to {vec}", "av")
            with t.if_(rescaled):  # a row whose maximum stayed keeps its O
                self._rescale_row(r, alpha)
        self._value_products()

    def _rescale_row(self, r: str, alpha: str) -> None:
        """Row ``r`` of the worker's O times ``alpha`` (a vector)."""
        p, t = self.plan, self.t
        vec = f"vector<{p.lanes}x{F32}>"
        for e in range(0, p.value_dim, p.lanes):
            at = f"{self.w}, {r}, {t.const(e)}"
            o = t.value(f"vector.load {self.o}[{at}] : {self.o_type}, {vec}", "ov")
            t.add(f"vector.store {t.value(f'arith.mulf {o}, {alpha} : {vec}', 'ov')}, {self.o}[{at}] : "
                  f"{self.o_type}, {vec}")

    def _value_products(self) -> None:
        """O += P V_blk in blocks of 2 x 2 C tiles (a last odd panel of V alone) over the block's tiles of keys."""
        p, t = self.plan, self.t
        rows_per_panel = p.bkv // 2
        panels0 = t.value(f"arith.muli {self._block_index()}, {t.const(self.value_panels * rows_per_panel)} : index",
                          "vr")
        groups = [list(range(j, min(j + 2, self.value_panels))) for j in range(0, self.value_panels, 2)]
        with t.for_(self.c0, t.const(p.bq), t.const(AMX_BLOCK), "r0") as r0:
            rows = [self._block_row(t.value(f"arith.addi {r0}, {t.const(TILE * i)} : index", "tr")) for i in range(2)]
            for group in groups:
                steps = []
                for tile in range(p.bkv // TILE_K):
                    a_at = [f"{row}, {t.const(tile * TILE_K)}" for row in rows]
                    b_at = [f"{t.const(panel * rows_per_panel + tile * TILE)}" for panel in group]
                    b_at = [f"{t.value(f'arith.addi {panels0}, {at} : index', 'vr')}, {self.c0}" for at in b_at]
                    steps.append((a_at, b_at))
                c_at = [[f"{row}, {t.const(panel * TILE)}" for panel in group] for row in rows]
                self._products(steps, self.weights, self.weights_type, self.v_panels, self.panel_dyn, c_at, self.o_rows,
                               self.o_rows_type, zero=False)
