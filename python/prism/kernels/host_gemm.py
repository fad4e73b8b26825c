"""The host's direct GEMM kernel (:mod:`prism.codegen.cpu.kernel`): which products it runs, and how it treats B.

Every function takes scalars or numpy arrays of knob values (broadcast against each other) and returns the same
shape: :mod:`prism.codegen.cpu.schedule` plans one kernel with integers, :mod:`prism.targets.host` costs every
candidate at once. An extent of None is dynamic (unknown until the call).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

Extent = int | np.ndarray

# The most a kernel's worker keeps of a column block's B panels (all of K, TN wide) to reuse them across row
# blocks; beyond it, each task copies its own.
REUSED_PANEL_BYTES = 4 << 20
# A task of one row panel reads B in place slice by slice, sweeping each slice's rows across its columns
# micro-tile after micro-tile: memory sees one stream per row of B in the slice (two per row in a dual GEMM),
# and the core's prefetchers follow up to this many (benchmarks/RESULTS.md, "Eight-row products from DRAM").
PREFETCH_STREAMS = 16
# The copy of B into panels runs in a phase of its own only where B fits this share of the L3 (pipelines_copy),
# and only on a machine whose pipelined copy, on a B the L3 holds, did not run faster than this share of the time
# of the copy in phase (copy_in_phase_bytes).
COPY_IN_PHASE_L3_SHARE = 4
PIPELINED_IN_CACHE_WIN = 0.95
# Products of at most this many rows of C, in one row panel, read B as such streams: each byte of B feeds few
# FMAs, so where B comes from DRAM the kernel's loads wait on it (the same entry).
STREAMING_ROWS = 8


def direct_layout(f32: bool, operand_roles: Sequence[Sequence[str]]) -> bool:
    """Whether the direct kernel runs a product whose A, B and C read loops of ``operand_roles`` (per operand,
    the role of each tensor dimension): ``f32`` (all three f32), laid out as A[b,m,k], B[b,k,n], C[b,m,n]
    with at most one batch loop."""
    if not f32 or len(operand_roles) != 3:
        return False
    prefix = ("batch",) if "batch" in operand_roles[2] else ()
    wanted = (("m", "k"), ("k", "n"), ("m", "n"))
    return all(tuple(roles) == prefix + want for roles, want in zip(operand_roles, wanted, strict=True))


def copies_panels(tm: Extent, rm: Extent, m: Extent | None, pack: Extent = 1) -> Extent:
    """Whether each task copies its slice of B into panels: where ``pack`` allows it and a register block has
    several rows, unless one row panel covers the task's rows (a static M, or a block of TM rows, within RM).
    With one row panel per task, each element of B is read once, so copying it would only add traffic; one-row
    blocks stream B in place."""
    several_panels = True if m is None else np.minimum(tm, m) > rm
    return (pack != 0) & several_panels & (rm > 1)


def panels_kept(k: Extent, tn: Extent, elem_bytes: int) -> Extent:
    """Whether a kernel's worker keeps a column block's panels (all of K, TN wide) across row blocks."""
    return k * tn * elem_bytes <= REUSED_PANEL_BYTES


def reuses_panels(copies: Extent, tm: Extent, tn: Extent, m: Extent | None, k: Extent | None,
                  elem_bytes: int) -> Extent:
    """Whether a worker keeps its column block's panels for all of K (:func:`panels_kept`), so that B is
    copied once per column block rather than once per task: where the panels are copied, and M holds several
    row blocks (a dynamic M may)."""
    if k is None:
        return _never(copies)
    several_row_blocks = True if m is None else m > tm
    return copies & several_row_blocks & panels_kept(k, tn, elem_bytes)


def splits_k(rm: Extent, m: Extent | None, n: Extent | None, batch: bool, workers: int) -> Extent:
    """Whether the workers split K rather than the blocks: a single row of C (decode) in one-row blocks, with
    no batch and a static N, streams whole rows of B, each worker one contiguous share of them, which keeps
    more of the memory bandwidth than splitting N (benchmarks/RESULTS.md, "Host code against every baseline",
    second pass)."""
    if m is None or n is None or batch or workers < 2:
        return _never(rm)
    return (rm == 1) & (m == 1)


def _never(like: Extent) -> Extent:
    """False, in the shape of ``like``."""
    return np.zeros(np.shape(like), dtype=bool) if np.ndim(like) else False


def stays_in_cache(size: Extent, l3_bytes: int) -> Extent:
    """Whether ``size`` bytes stay in the L3 between uses: within half of it (the rest is shared with what
    else runs). Beyond it, they stream from memory."""
    return size <= l3_bytes / 2


# A K no deeper than this copies B in a phase of its own (:func:`pipelines_copy`): 16 x 16 x 4096 ran 1.3x
# slower with an 8 x 32 block pipelined than copied in a phase, and 32 x 16 x 2048 1.4x; from a K of 64 on the
# pipelined copy was as fast or faster (benchmarks/RESULTS.md, "The pipelined copy over a shallow K").
SHALLOW_K = 32


def copy_in_phase_bytes(l3_bytes: int, pipelined_in_cache: float | None) -> int:
    """The largest B whose copy into panels runs in a phase of its own (:func:`pipelines_copy`):
    1/COPY_IN_PHASE_L3_SHARE of the L3; none where the pipelined copy, on a B the L3 holds, ran in under
    PIPELINED_IN_CACHE_WIN of the time of the copy in phase (``pipelined_in_cache``, that ratio as the machine's
    calibration or its family's recorded rates have it; None where it was never measured).

    Where B stays close in the L3 between calls, the copy in a phase of its
    own was cheaper than the pipelined copy's bookkeeping on a Zen 5 (4 MiB:
    benchmarks/RESULTS.md, "Host code against every baseline", fifth pass),
    and dearer on an Intel Xeon, whose cores wait on the L3 (16 x 1024 x
    1024 and 32 x 2048 x 2048 ran 1.1-1.3x faster pipelined: "The pipelined
    copy from the L3").
    """
    if pipelined_in_cache is not None and pipelined_in_cache < PIPELINED_IN_CACHE_WIN:
        return 0
    return l3_bytes // COPY_IN_PHASE_L3_SHARE


def pipelines_copy(copies: Extent, reuses: Extent, batch: bool, b_bytes: int | None, in_phase_bytes: int,
                   k: int | None = None) -> Extent:
    """Whether the copy of B into panels runs inside the micro-tiles of each K slice, prefetching the next one:
    where B is larger than ``in_phase_bytes`` (:func:`copy_in_phase_bytes`; or of unknown size), K is deeper
    than SHALLOW_K (or unknown), and each task copies its own panels of a product without a batch. A B of half
    the L3 comes in at its latency, which the copy in a phase of its own waits on (64 MiB of an L3 of 128: 16
    and 128 rows ran 1.05-1.25x and 1.00-1.08x faster pipelined: benchmarks/RESULTS.md, "Deep K slices for the
    square GEMMs"; and "Measurements behind rules in the code": the pipelined copy where B streams from memory).
    Over a K of a few rows (a LoRA's rank) the copy is a small part of the work, and the pipelined kernel ran
    slower (benchmarks/RESULTS.md, "The pipelined copy over a shallow K")."""
    if batch or (b_bytes is not None and b_bytes <= in_phase_bytes) or (k is not None and k <= SHALLOW_K):
        return _never(copies)
    pipelined = np.logical_and(copies, np.logical_not(reuses))
    return pipelined if np.ndim(pipelined) else bool(pipelined)


def serves_as_written(m: int | None, tm: int, rm: int, reuses: bool) -> bool:
    """Whether the kernel, reading B as given, beats the transform path (which packs B once for all blocks).

    It does when one block of rows covers M, so each task copies its B panels once, and when its workers keep
    a column block's panels across row blocks (:func:`reuses_panels`), so B is copied about once; the
    transform path also needs a register block of at least 2 rows (it folds unit dimensions). Otherwise each
    task copies its panels, while the transform path packs B once for all of them (benchmarks/RESULTS.md,
    "Host code against every baseline", first and third passes; and "Measurements behind rules in the code":
    when the direct kernel serves a product as written).
    """
    return m is None or m <= tm or rm < 2 or reuses


@dataclass(frozen=True)
class Tiles:
    """The kernel's blocks for one product, from a schedule's knobs: rows and columns of a task (TM x TN) and of
    the register block (RM x RN), whether K is split, and whether B's panels are copied and reused."""

    tm: int
    tn: int
    rm: int
    rn: int
    split_k: bool
    pack: bool
    reuse: bool


def _round_up(x: int, multiple: int) -> int:
    return -(-x // multiple) * multiple


def plan_tiles(knobs: dict[str, int], m: int | None, n: int | None, k: int | None, batch: bool, workers: int,
               lanes: int, b_bytes: int) -> Tiles:
    """The blocks the kernel runs for the knobs TM, TN, RM, RN and PACK (missing ones at their least): RN a
    whole number of vectors of ``lanes``, TM and TN whole register blocks, a split K taking every column in one
    block; ``b_bytes`` is the size of one element of B."""
    rn = max(_round_up(knobs.get("RN", lanes), lanes), lanes)
    rm = max(knobs.get("RM", 1), 1)
    tm, tn = _round_up(max(knobs.get("TM", rm), rm), rm), _round_up(max(knobs.get("TN", rn), rn), rn)
    split_k = bool(splits_k(rm, m, n, batch, workers))
    if split_k:
        tn = _round_up(n, rn)
    pack = bool(copies_panels(tm, rm, m, knobs.get("PACK", 1)))
    return Tiles(tm, tn, rm, rn, split_k, pack, bool(reuses_panels(pack, tm, tn, m, k, b_bytes)))


def streams_in_place(copies: Extent, rm: Extent, tm: Extent, tk: Extent, m: int | None) -> Extent:
    """Whether a task reads B in place as one stream per row of each K slice, each as long as the task is wide:
    a row panel of several rows that covers a static M of at most STREAMING_ROWS rows (so B is not copied), in
    slices of at most PREFETCH_STREAMS rows."""
    if m is None or not 1 < m <= STREAMING_ROWS:
        return _never(rm)
    streams = np.logical_not(copies) & (rm > 1) & (np.minimum(tm, m) >= m) & (tk <= PREFETCH_STREAMS)
    return streams if np.ndim(streams) else bool(streams)


def dual_slice_depth(tk: int, streams: bool) -> int:
    """The K slice of a dual GEMM whose plans (one per product) chose ``tk``: where B is read in place as
    streams (:func:`streams_in_place`), each slice reads two B's, so it keeps to half as many rows as the
    prefetchers follow."""
    return min(tk, PREFETCH_STREAMS // 2) if streams else tk
