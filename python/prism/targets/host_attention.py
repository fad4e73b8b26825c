"""The host's attention family: its schedule space and its cost, derived like the GEMM's.

The family is the online-softmax kernel of :mod:`prism.codegen.cpu.attention`.
Its knobs:
- BQ, the query rows of one task (a power of two, or three times one);
- BKV, the key rows of one step;
- RM x RN, the register block of both products (RM = 1 takes each score as a
  dot product over K's rows, and skips the transposition of K);
- KVS, the shares the keys are split into, each its own task, merged at the
  end (flash-decoding: for fewer query blocks than cores).

Constraints: the register block fits the vector registers as the GEMM's
does; RM rows of P and a BKV x RN panel of V (what one register block of
``P V`` reads) fit L1; a task's blocks of S, O and Q (BQ x (BKV + d + Dv)
floats) and the block of K and V one step reads (BKV x (d + Dv)) fit half
of L2 together; BQ
and BKV no larger than their padded extents, KVS no more than the key
blocks; RN a multiple of the kernel's lanes (the widest vector that
divides Dv: :func:`~prism.search.attention.attention_lanes`) that divides Dv.

The cost follows the kernel: per task and step of BKV keys, the scores
(RM x RN micro-tiles over d, or BQ x BKV dot products), the softmax of
each row (an exp polynomial per vector) and bringing the step's K and V into
L2; ``P V`` by micro-tiles over the
task's keys; all in rounds of tasks over the cores; the transposition of K and the merge of the
shares are phases of their own. Memory: K and V once per query block, Q and
the output once, and each share's partial output twice.

Q, K and V count at their own type's size (2 bytes for bf16 and f16, which
the kernel extends to f32 as it loads them), except K where the kernel reads
its f32 transposed copy (RM > 1); the scores, the output and the shares'
partial outputs are f32. The kernel computes in f32 whatever its operands'
type, so its cycles and its bound are at the f32 FMA rate. (On an AMX
machine, bf16 chains that round P take their products on tiles,
:mod:`prism.codegen.cpu.attention_amx`, about three times faster than
priced here; exploration, which keeps such a chain whole at these prices,
keeps it all the more at the tiles', and the tile kernel's time changes
little with BQ and BKV.)
"""

from __future__ import annotations

import dataclasses
import math
from typing import TYPE_CHECKING

import numpy as np

from prism.infra.ir import ELEMENT_BYTES
from prism.kernels import host_gemm
from prism.kernels.host_attention import AMX_BLOCK, step_tile_products, takes_tiles
from prism.search.attention import attention_lanes
from prism.search.cost import Knob, KnobValues, ceil_div, problem_sizes, roofline
from prism.search.space import Space, pow2_sum_le, shape_param_bounds

if TYPE_CHECKING:
    from prism.search.attention import Attention
    from prism.targets.host import HostTarget

COST_TEXT = ("transpose(K, if RM > 1) + merge(if KVS > 1) + max(ceil(tasks / cores) * factor(RM, RN) "
             "* (steps * (scores + softmax + BKV*(d*Kb + Dv*E)/8) + values + rows * Dv / lanes * 2) / clock + task), "
             "(B*ceil(Sq/BQ)*Skv*(d*Kb + Dv*E) + B*Sq*(d*E + Dv*4) + [2*B*Sq*KVS*Dv*4]) / bandwidth * cores/busy); "
             "E = bytes of Q, K and V's type, Kb = 4 if RM > 1 (K's f32 transposed copy) else E, "
             "factor(RM, RN) = the calibration's measured over modelled time of the block (1 where not timed), "
             "tasks = B*ceil(Sq/BQ)*KVS, "
             "steps = ceil(ceil(Skv/BKV)/KVS) (causal, one share: the mean over query blocks of their steps), "
             "keys = min(steps*BKV, Skv), rows = ceil(Sq/ceil(Sq/BQ)/RM)*RM, "
             "scores = rows/RM*BKV/RN*kernel_cycles(RM, RN, d) (RM > 1) or rows*BKV*(d/lanes/2 + 4), "
             "softmax = rows*(BKV/lanes*10 + 30), "
             "values = rows/RM*Dv/RN*(kernel_cycles(RM, RN, keys) + (steps - 1)*kernel_cycles(RM, RN, 0))")

# Cycles of one score as a dot product (one-row blocks), beyond its loads: the reduction across the lanes and
# the store.
DOT_CYCLES = 4
# Cycles of one vector of the softmax (the subtraction, scale and exp polynomial, the store and the sum),
# and of each row's own work per step (its maximum, alpha, l).
SOFTMAX_VECTOR_CYCLES = 10
SOFTMAX_ROW_CYCLES = 30
# Bytes per cycle a core brings into L2 as a step starts on a block of K and V, not overlapped with the
# products. Without this term, tasks of a few query rows cost as little as tasks of many, which run nearly
# twice as fast (benchmarks/RESULTS.md, "Attention as a searched family").
L2_FILL_BYTES_PER_CYCLE = 8
# Cycles per element of the transposition of K (squares of vectors transposed in registers, bound by
# reading K and writing its copy: about 1.2 measured at 2 x 8 x 1024 x 128).
TRANSPOSE_CYCLES = 1
# Cycles of one tile product of the kernel on AMX tiles, with its share of the tile loads and stores: about twice
# tdpbf16ps's 16 (benchmarks/RESULTS.md, "Attention on AMX tiles").
AMX_PRODUCT_CYCLES = 32
# Cycles per element of K and V packed into that kernel's pair panels.
PACK_CYCLES = 1
# The bytes of the kernel's own buffers' elements (the scores, O, K's transposed copy, the output): f32.
F32_BYTES = 4
# The most shares of the keys, and query rows of a task (before the factor of 3): 2**4 and 2**8.
MAX_SPLIT_LOG2, MAX_QUERY_LOG2 = 4, 8
MAX_KEY_LOG2 = 9


def attention_vector_lanes(target: HostTarget, op: Attention) -> int:
    """The lanes of the kernel's vectors: the widest vector of f32 that divides Dv
    (:func:`~prism.search.attention.attention_lanes`), else the target's."""
    lanes = target.vector_bits // (8 * op.acc_bytes)
    return attention_lanes(op.value_dim, lanes) or lanes


def _valuation(n: int) -> int:
    return (n & -n).bit_length() - 1


def attention_space(op: Attention, target: HostTarget) -> Space | None:
    """The schedule space of ``op`` on ``target`` (see the module docstring); None when the kernel cannot run it
    (a value size that is not a whole number of vectors)."""
    lanes = attention_lanes(op.value_dim, target.vector_bits // 32)
    if lanes is None:
        return None
    lanes_log2 = int(math.log2(lanes))
    rn_max = min(lanes_log2 + 2, _valuation(op.value_dim))
    half_l2 = target.l2_bytes / 2
    universe = (f"{shape_param_bounds()} and 0 <= rm <= 3 and 0 <= m3 <= q3 <= 1 and rm + 2 * m3 <= 3"
                f" and rm <= bq <= {MAX_QUERY_LOG2} and {lanes_log2} <= rn <= {rn_max} and rn <= bkv <= {MAX_KEY_LOG2}"
                f" and 0 <= ks <= {MAX_SPLIT_LOG2}")

    def by_factor(factor: str, constraint) -> str:
        return f"(({factor} = 0 and {constraint(1)}) or ({factor} = 1 and {constraint(3)}))"

    groups = (
        ("registers", by_factor("m3", lambda f: pow2_sum_le(f"rm + rn - {lanes_log2}", f"rn - {lanes_log2}",
                                                            target.vector_registers - 1, scale_a=f))),
        # P V reads RM rows of P and a BKV x RN panel of V, for each RM x RN block: both stay in L1.
        ("l1", by_factor("m3", lambda f: pow2_sum_le("bkv + rn + 2", "bkv + rm + 2", target.l1d_bytes, scale_b=f))),
        ("l2", _l2_fit(op, half_l2)),
        # 3 * 2**bq <= 2**LM exactly when bq + 2 <= LM.
        ("shape", "bq + 2 * q3 <= LM and (bkv <= rn or bkv <= LN) and (ks = 0 or ks + bkv <= LN)"),
    )
    return Space(kind="attention", knobs={"bq": "BQ", "bkv": "BKV", "rm": "RM", "rn": "RN", "ks": "KVS"},
                 flags={}, universe=universe, groups=groups, factors={"q3": (3, ("bq",)), "m3": (3, ("rm",))})


def _element_bytes(op: Attention) -> int:
    """Bytes of one element of Q, K and V."""
    return ELEMENT_BYTES[op.input_type]


def _l2_fit(op: Attention, capacity: float) -> str:
    """A task's blocks, BQ x BKV scores and BQ x (d + Dv) of Q (in f32: a narrower Q's block is extended) and O,
    with the step's BKV x (d + Dv) of K (or its f32 transposed copy) and V, within ``capacity``: exactly, as the
    union over BQ of the BKV that fit (the sum is monotone)."""
    size = _element_bytes(op)
    query_row = (op.head_dim + op.value_dim) * F32_BYTES  # a row of Q's block, and one of O
    key_row = op.head_dim * F32_BYTES + op.value_dim * size  # a row of K^T's copy (or of K, no larger), one of V
    pieces = []
    for q3 in (0, 1):
        for bq in range(MAX_QUERY_LOG2 + 1):
            rows = 3**q3 * 2**bq
            fits = [bkv for bkv in range(MAX_KEY_LOG2 + 1)
                    if F32_BYTES * rows * 2**bkv + rows * query_row + 2**bkv * key_row <= capacity]
            if fits:
                pieces.append(f"(q3 = {q3} and bq = {bq} and bkv <= {max(fits)})")
    return "(" + (" or ".join(pieces) or "false") + ")"


def _shape(op: Attention, values: KnobValues, assumed: int, tiles: bool = False) -> dict[str, Knob]:
    """Sizes, and the kernel's tiles as its plan makes them: query rows evened out over the blocks, a block of
    keys no longer than the keys; on AMX tiles (``tiles``), both in whole blocks of C tiles."""
    s = problem_sizes(op, assumed)
    rm, rn = values["RM"], values["RN"]
    if tiles:  # blocks of whole C tiles: the register block does not apply
        rm = rn = np.full(np.shape(values["BQ"]), AMX_BLOCK)
    blocks = ceil_div(s["m"], values["BQ"])
    rows = ceil_div(ceil_div(s["m"], blocks), rm) * rm
    # The keys a block of query rows reads: all, or under a causal mask those up to its last row (plus the
    # offset), on average up to the middle block's.
    keys = s["n"] if op.causal is None else np.minimum(s["n"], op.causal + (s["m"] + rows) / 2)
    return {**s, "dv": op.value_dim, "blocks": blocks, "rows": rows, "keys": keys,
            "bkv": np.minimum(ceil_div(values["BKV"], rn) * rn, ceil_div(s["n"], rn) * rn),
            "tasks": s["batch"] * blocks * values["KVS"]}


def _traffic(op: Attention, s: dict[str, Knob], splits: Knob, rm: Knob, least: bool = False) -> Knob:
    """Bytes moved: K (its f32 transposed copy where RM > 1) and V, the keys read, once per query block, Q and
    the output once, each share's f32 output written and read. ``least``: K in its own type and a causal
    mask's keys read once, what any tiling reads at least."""
    size = _element_bytes(op)
    rows = s["batch"] * s["m"]
    kept = np.where(splits > 1, 2 * rows * splits * s["dv"] * F32_BYTES, 0)
    keys = s["blocks"] * s["keys"]
    key_bytes = np.where(rm > 1, F32_BYTES, size)
    if least:
        key_bytes = size
        if op.causal is not None:
            keys = np.minimum(s["n"], op.causal + s["m"])
    return (s["batch"] * keys * (s["k"] * key_bytes + s["dv"] * size) + rows * (s["k"] * size + s["dv"] * F32_BYTES)
            + kept)


def streams_from_memory(target: HostTarget, op: Attention, assumed: int = 1024) -> bool:
    """Whether the cost reads K and V at DRAM's bandwidth (:func:`_bandwidth`)."""
    return not _in_cache(target, op, {**problem_sizes(op, assumed), "dv": op.value_dim})


def _in_cache(target: HostTarget, op: Attention, s: dict[str, Knob]) -> bool:
    """Whether K and V fit half of the L3."""
    working_set = _element_bytes(op) * s["batch"] * s["n"] * (s["k"] + s["dv"])
    return bool(host_gemm.stays_in_cache(working_set, target.l3_bytes))


def _bandwidth(target: HostTarget, op: Attention, s: dict[str, Knob]) -> float:
    """L3's when K and V fit half of it (:func:`_in_cache`), else DRAM's."""
    return target.cache_bytes_per_s if _in_cache(target, op, s) else target.dram_bytes_per_s


def attention_seconds(target: HostTarget, op: Attention, values: KnobValues, assumed: int) -> np.ndarray:
    """Predicted seconds of ``op`` scheduled by ``values`` (see the module docstring)."""
    tiles = on_tiles(target, op)
    s = _shape(op, values, assumed, tiles)
    rm, rn, splits = values["RM"], values["RN"], values["KVS"]
    lanes, rows, bkv, d, dv = attention_vector_lanes(target, op), s["rows"], s["bkv"], s["k"], s["dv"]
    if tiles:
        return _tile_seconds(target, op, s, splits, lanes)
    micro = target.micro_kernel_cycles
    dot = np.maximum(ceil_div(d, lanes) / 2, ceil_div(d, lanes) / target.vector_fmas_per_cycle) + DOT_CYCLES
    scores = np.where(rm == 1, rows * bkv * dot, rows / rm * ceil_div(bkv, rn) * micro(rm, rn, d, lanes))
    softmax = rows * (ceil_div(bkv, lanes) * SOFTMAX_VECTOR_CYCLES + SOFTMAX_ROW_CYCLES)
    steps = _steps(op, s, bkv, splits)
    # P V runs over the keys there are; the scores and softmax over whole blocks of BKV.
    keys = np.minimum(steps * bkv, s["keys"])
    products = rows / rm * (dv / rn) * (micro(rm, rn, keys, lanes) + (steps - 1) * micro(rm, rn, 0, lanes))
    # Each step brings its block of K and V into L2, between the products that read it.
    size = _element_bytes(op)
    fill = bkv * (d * np.where(rm > 1, F32_BYTES, size) + dv * size) / L2_FILL_BYTES_PER_CYCLE
    task = steps * (scores + softmax + fill) + products + rows * dv / lanes * 2
    clock = target.cycle_seconds(_in_f32(op), lanes)
    # A calibration times the kernel at each register block; the task's cycles take that block's factor.
    factor = target.attention_factor(rm, rn, decode=s["m"] == 1)
    compute = ceil_div(s["tasks"], target.cores) * (task * clock * factor + target.block_overhead_seconds)
    transpose = np.where(rm > 1, s["batch"] * ceil_div(s["n"], bkv) * bkv * d * TRANSPOSE_CYCLES * clock
                         / target.cores + target.block_overhead_seconds, 0)
    merge = np.where(splits > 1, s["batch"] * s["m"] * splits * (dv / lanes * 2 + SOFTMAX_VECTOR_CYCLES) * clock
                     / target.cores + target.block_overhead_seconds, 0)
    busy = np.minimum(s["tasks"], target.cores)
    memory = _traffic(op, s, splits, rm) / _bandwidth(target, op, s) * target.cores / busy
    return transpose + merge + roofline(compute, memory)


def on_tiles(target: HostTarget, op: Attention) -> bool:
    """Whether the kernel takes ``op``'s products on AMX tiles (:mod:`prism.codegen.cpu.attention_amx`)."""
    return bool(target.amx) and takes_tiles(op)


def _tile_seconds(target: HostTarget, op: Attention, s: dict[str, Knob], splits: Knob, lanes: int) -> np.ndarray:
    """:func:`attention_seconds` of the kernel on AMX tiles: per task and step, its tile products
    (:func:`~prism.kernels.host_attention.step_tile_products`, AMX_PRODUCT_CYCLES each) and the softmax of its
    rows; K and V packed into pair panels once per call; the merge and the memory as the f32 kernel's (K read
    in its own type)."""
    rows, bkv, dv = s["rows"], s["bkv"], s["dv"]
    steps = _steps(op, s, bkv, splits)
    softmax = rows * (ceil_div(bkv, lanes) * SOFTMAX_VECTOR_CYCLES + SOFTMAX_ROW_CYCLES)
    products = step_tile_products(op.head_dim, op.value_dim, rows, bkv) * AMX_PRODUCT_CYCLES
    task = steps * (products + softmax) + rows * dv / lanes * 2
    clock = target.cycle_seconds(_in_f32(op), lanes)
    compute = ceil_div(s["tasks"], target.cores) * (task * clock + target.block_overhead_seconds)
    pack = (s["batch"] * ceil_div(s["n"], bkv) * bkv * (s["k"] + dv) * PACK_CYCLES * clock / target.cores
            + target.block_overhead_seconds)
    merge = np.where(splits > 1, s["batch"] * s["m"] * splits * (dv / lanes * 2 + SOFTMAX_VECTOR_CYCLES) * clock
                     / target.cores + target.block_overhead_seconds, 0)
    busy = np.minimum(s["tasks"], target.cores)
    memory = _traffic(op, s, splits, np.ones_like(splits)) / _bandwidth(target, op, s) * target.cores / busy
    return pack + merge + roofline(compute, memory)


def _steps(op: Attention, s: dict[str, Knob], bkv: Knob, splits: Knob) -> Knob:
    """Steps of BKV keys per task: over the keys, split into ``splits`` shares.

    Under a causal mask, query block b reads keys up to its last row,
    offset + (b + 1) * rows, in whole blocks of BKV: the mean over the blocks
    of ceil(keys_b / BKV). Those keys step by ``rows``, so over whole periods
    their remainders modulo BKV run through offset + j * g, g = gcd(rows,
    BKV), and the mean is keys / BKV + ((BKV - g) / 2 + (-offset mod g)) /
    BKV. The ceiling of the mean, rather than this, would charge 128-key
    steps over 512 causal rows in blocks of 128 a fifth more work than 64-key
    steps (3 steps where the blocks take 1, 2, 3 and 4), where both compute
    the same scores (benchmarks/RESULTS.md, "Causal attention: the steps of
    each query block").
    """
    if op.causal is None:
        return ceil_div(ceil_div(s["keys"], bkv), splits)
    g = np.gcd(np.asarray(s["rows"]).astype(np.int64), np.asarray(bkv).astype(np.int64))
    mean = (s["keys"] + (bkv - g) / 2 + (-op.causal) % g) / bkv
    return np.where(splits > 1, ceil_div(np.ceil(mean), splits), mean)


def attention_lower_bound(target: HostTarget, op: Attention, values: KnobValues, assumed: int) -> np.ndarray:
    """Below :func:`attention_seconds`: both products' unpadded work at the f32 FMA peak of every core, and the
    traffic with every core busy."""
    s = _shape(op, values, assumed)
    work = 2 * s["batch"] * _pairs(op, s["m"], s["n"]) * (s["k"] + s["dv"])
    # The fastest register block's calibrated factor, where one is under 1, lowers the bound with it; on AMX
    # tiles, the products at the tiles' rate.
    fastest = min([1.0, *target.attention_factors.values(), *target.decode_attention_factors.values()])
    rate = target.flops[op.input_type if on_tiles(target, op) else _in_f32(op).input_type]
    compute = np.full(np.shape(values["BQ"]), work / rate * fastest)
    return roofline(compute, _traffic(op, s, values["KVS"], values["RM"], least=True) / _bandwidth(target, op, s))


def _in_f32(op: Attention) -> Attention:
    """``op`` as the kernel computes it: in f32, whatever its operands' type."""
    return dataclasses.replace(op, input_type="f32")


def _pairs(op: Attention, queries: int, keys: int) -> int:
    """The (query, key) pairs that weigh: all, or under a causal mask, key j for query i when j <= i + offset."""
    if op.causal is None:
        return queries * keys
    full = min(max(keys - op.causal, 0), queries)  # rows i < full keep i + offset + 1 keys, the others all
    return full * (full - 1) // 2 + full * (op.causal + 1) + (queries - full) * keys
