"""The host's attention kernel on AMX tiles (:mod:`prism.codegen.cpu.attention_amx`): its tile geometry and the
tile products of one step, for its code generator and its cost (:mod:`prism.targets.host_attention`)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from prism.search.cost import Knob, ceil_div

if TYPE_CHECKING:
    from prism.search.attention import Attention

# Rows (and columns) of a block of C tiles: 2 x 2 tiles. BQ and BKV are multiples of it.
AMX_BLOCK = 32
# Rows of a tile, f32 columns of a C tile (and pairs of rows of a B tile).
TILE = 16
# bf16 columns of an A tile.
TILE_K = 32


def takes_tiles(op: Attention) -> bool:
    """Whether the chain's products run on AMX tiles (on a host that has them): bf16 operands widened to f32, P
    rounded to bf16 before P V (the tiles multiply bf16), value rows of whole C tiles, and at least a tile's
    query rows (fewer, decode, read each key once: the f32 kernel's dot products)."""
    return (op.input_type == "bf16" and op.widened and op.p_type == "bf16" and not op.k_transposed
            and op.value_dim % TILE == 0 and (op.queries is None or op.queries >= TILE))


def step_tile_products(head_dim: int, value_dim: int, rows: Knob, bkv: Knob) -> Knob:
    """Tile products of one step of ``bkv`` keys for ``rows`` query rows: the scores' (rows x keys C tiles, over
    the head dimension's tiles of 32, zeros past it) and P V's (rows x values C tiles, over the step's tiles of
    32 keys)."""
    return ceil_div(rows, TILE) * (ceil_div(bkv, TILE) * ceil_div(head_dim, TILE_K)
                                   + ceil_div(value_dim, TILE) * ceil_div(bkv, TILE_K))
