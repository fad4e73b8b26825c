"""What every target's roofline cost model shares.

A kernel's cost is the larger of compute time and memory time (plus a tenth
of the smaller: overlap is imperfect), where
- compute counts the padded work of every tile (remainders cost a full tile)
  at the unit's rate, in waves over the GPU's SMs or the host's cores;
- traffic counts each input re-read once per tile of the other output
  dimension (A once per N tile, B once per M tile) plus the output once.

Each target (:mod:`prism.targets`) builds its model and lower bound from
these pieces and writes the formula as text into the family's ``cost``
attribute, so that the IR carries its own contract.

Every function is written once for both scalars and numpy arrays: the knob
values map each symbol to an int or to an integer array (one entry per
point), and the cost comes back with the same shape. Selection costs a whole
candidate set in one call that way, in microseconds per family.
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from prism.search.space import Contraction

Knob = int | np.ndarray
KnobValues = Mapping[str, Knob]

# Compute and traffic never overlap perfectly. Charging a tenth of the smaller
# term also keeps the ranking informative when one term dominates every point:
# with a pure max, all memory-bound schedules tie and the tie-break, not the
# model, would pick among them.
OVERLAP_PENALTY = 0.1


def roofline(compute: Knob, memory: Knob) -> np.ndarray:
    """The time of a kernel that computes for ``compute`` and moves memory for ``memory`` seconds."""
    return np.maximum(compute, memory) + OVERLAP_PENALTY * np.minimum(compute, memory)


def ceil_div(a: Knob, b: Knob) -> Knob:
    """ceil(a / b) for non-negative integers, elementwise on arrays."""
    return -(-a // b)


def problem_sizes(op: Contraction, assumed: int) -> dict[str, int]:
    """The extent of each role (1 for a role the op lacks); dynamic extents count as ``assumed``."""
    sizes = {}
    for role in ("batch", "m", "n", "k"):
        value = op.extent(role) if role in op.roles else 1
        sizes[role] = assumed if value is None else value
    return sizes


def traffic_bytes(op: Contraction, tile_m: Knob, tile_n: Knob, sizes: dict[str, int]) -> Knob:
    """Bytes a tiled kernel moves: A once per N tile, B once per M tile, C once."""
    b, m, n, k = sizes["batch"], sizes["m"], sizes["n"], sizes["k"]
    a_bytes = b * m * k * op.elem_bytes[0]
    b_bytes = b * k * n * op.elem_bytes[1]
    c_bytes = b * m * n * op.acc_bytes
    return a_bytes * ceil_div(n, tile_n) + b_bytes * ceil_div(m, tile_m) + c_bytes
