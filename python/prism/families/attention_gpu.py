"""The attention family on NVIDIA GPUs: the schedule space of Prism's flash kernels and their roofline.

The kernels are :mod:`prism.codegen.gpu.attention`'s (mma.sync prefill,
split-KV decode) and, for a prefill or decode on sm_90a that TMA can read,
:mod:`prism.codegen.gpu.attention_sm90`'s (TMA + wgmma; a decode in its
split mode, with the split-KV combine kernel); their knobs are
:class:`~prism.codegen.gpu.spec.AttentionTile`'s and the decode split
count. A problem of one static query row is a decode, any other a prefill.
Knobs (exponents of two in the set; STAGES an integer):

- prefill on the mma.sync kernel: BQ (query rows of a block, 16 per warp)
  and BK (keys of a shared tile); the other knobs stay at the tile's
  defaults (SPLITS = 1, STAGES = 2, the kernel's double buffer);
- prefill on the wgmma kernel (sm_90a, where
  :func:`~prism.codegen.gpu.attention_sm90.sm90_spec_problem` takes the
  problem): BQ of 64 or 128 (one or two consumer warpgroups of 64 rows, a
  wgmma's M), BK of 64 or 128 and STAGES (the depth of the K and V rings);
- decode on the split-KV kernels: DECODE_BK (keys of a shared tile),
  DECODE_WARPS (warps of a block, each its own share of the keys) and SPLITS
  (the shares of one batch index); BQ, BK and STAGES stay at the tile's
  defaults;
- decode on the wgmma kernel's split mode (sm_90a, where
  :func:`~prism.codegen.gpu.attention_sm90.sm90_spec_problem` takes the
  problem): SPLITS (the shares of one batch index, a block each), BK of 64
  or 128 and STAGES; the kernel has one consumer warpgroup whatever BQ says
  and a block per share, so BQ, DECODE_BK and DECODE_WARPS stay at the
  tile's defaults (DECODE_WARPS = 2 pins no warps of this kernel).

Each knob ranges over the values the kernel takes. Constraints, the emitter's
own limits, read off its plan for every tile: ``registers`` (per thread,
within the chip's limit: :func:`~prism.codegen.gpu.attention.fragment_registers`
for the mma.sync kernels, the wgmma kernel's ``.maxnreg``), ``shared_memory``
(per block, within the chip's opt-in limit and, for the wgmma kernel, what
:func:`~prism.codegen.gpu.attention_sm90.sm90_attention_problem` takes) and
``shape`` (tiles no larger than their padded extents, the wgmma kernel's
smallest always allowed; for decode, each share at least one key tile and,
on the split-KV kernels, a block's warps no more than the shares).

The cost is a roofline over the SMs: both products' padded FLOPs at the
tensor-core rate, and Q, K, V and O moved once at DRAM bandwidth, each
slowed by the waves of blocks over the SMs (a last wave that fills few SMs,
or fewer blocks than SMs, leaves bandwidth and tensor cores idle). The
memory side also pays for latency: a block (a decode warp) waits about a
DRAM latency per key tiles in flight (KV_STAGES for the mma.sync kernels,
STAGES for the wgmma kernel), the blocks an SM holds at once (its shared
memory and registers, by the emitter's plan of the kernel that runs the
tile) waiting side by side; this is what makes a few long key loops slower
than many short ones. Decode adds its combine kernel: a launch, and the
shares' partial results (SPLITS x batch x (dv + 2) f32 values) written and
read. The wgmma decode runs batch x SPLITS blocks of a 64-row tile whose one
real row is the query: its padded FLOPs stay under the K and V stream's
time at bandwidth, which with the blocks' waves over the SMs and the
latency over STAGES tiles in flight makes its cost.
"""

from __future__ import annotations

import math
from dataclasses import replace
from typing import TYPE_CHECKING

import numpy as np

from prism.codegen.gpu.attention import MMA_ROWS, attention_spec_problem, plan_attention
from prism.codegen.gpu.attention_sm90 import (
    KEY_TILES,
    QUERY_TILES,
    kernels_problem,
    plan_sm90_attention,
    sm90_attention_problem,
    sm90_spec_problem,
    takes_sm90,
)
from prism.codegen.gpu.gemm_sm90 import WGMMA_M
from prism.codegen.gpu.spec import AttentionSpec, AttentionTile, Tensor
from prism.infra.ir import ELEMENT_BYTES
from prism.search.attention import Attention
from prism.search.cost import Knob, KnobValues, ceil_div, problem_sizes, roofline
from prism.search.space import Space, shape_fit, shape_param_bounds
from prism.targets.nvidia import LAUNCH_SECONDS, LOAD_LATENCY_SECONDS

if TYPE_CHECKING:
    from prism.targets.base import Target

COST_TEXT = ("roofline(padded_flops / rate * spread, roofline(bytes / bandwidth * spread, "
             "ceil(ceil(blocks / SMs) / resident) * steps * latency / stages)) + launch "
             "[decode: + launch + SPLITS*B*(Dv + 2)*4 / bandwidth * ceil(B / SMs) * SMs / B]; "
             "spread = ceil(blocks / SMs) * SMs / blocks, steps = ceil(keys/BK) (decode: key tiles of a share), "
             "stages = STAGES on the sm_90a wgmma kernel, else 2; "
             "prefill: blocks = B*ceil(Sq/BQ), padded_flops = blocks * 2*BQ*ceil(keys/BK)*BK*(d + Dv) "
             "(keys: Skv, or with a causal mask the middle block's), bytes = 2*B*(Sq*(d + Dv) + Skv*(d + Dv)); "
             "decode: blocks = B*ceil(SPLITS/DECODE_WARPS), padded_flops = blocks * DECODE_WARPS * "
             "2*16*ceil(ceil(Skv/DECODE_BK)/SPLITS)*DECODE_BK*(d + Dv), "
             "bytes = 2*B*(d + Skv*(d + Dv)) + SPLITS*B*(Dv + 2)*4; "
             "sm_90a wgmma decode: blocks = B*SPLITS, padded_flops = blocks * 2*64*ceil(ceil(Skv/BK)/SPLITS)*BK*"
             "(d + Dv), steps = ceil(ceil(Skv/BK)/SPLITS), stages = STAGES")

# The knobs, by exponent variable, and the tile field each sets; STAGES is an integer (a flag of the space).
KNOBS = {"bq": "BQ", "bk": "BK", "dbk": "DECODE_BK", "dw": "DECODE_WARPS", "ks": "SPLITS"}
FLAGS = {"st": "STAGES"}
# The keys of a choice: every symbol of the space.
CHOICE_KEYS = (*KNOBS.values(), *FLAGS.values())
# The most key shares of a decode: 2**MAX_SPLITS_LOG2 (each share is also at least one key tile).
MAX_SPLITS_LOG2 = 12
GPU_ATTENTION_TYPES = ("f16", "bf16")
# The stages of K and V tiles the mma.sync kernels keep in flight (cp.async double buffering:
# :func:`prism.codegen.gpu.attention.unit_elements`); each hides the load latency (LOAD_LATENCY_SECONDS, the
# target's estimate, as for GEMMs).
KV_STAGES = 2


def tile_values(field: str) -> list[int]:
    """The values that :class:`AttentionTile` takes for ``field``, as its own check says: powers of two, or for
    STAGES integers."""
    found = []
    for value in range(1, 10) if field in FLAGS.values() else [2**e for e in range(10)]:
        try:
            AttentionTile(**{field: value})
        except ValueError:
            continue
        found.append(value)
    return found


def every_tile() -> list[AttentionTile]:
    """Every tile of the knobs' values."""
    fields = [field for field in CHOICE_KEYS if field != "SPLITS"]
    return [AttentionTile(**dict(zip(fields, values, strict=True)))
            for values in _product([tile_values(field) for field in fields])]


def some_tile_fits(spec: AttentionSpec, chip: str) -> bool:
    """Whether the emitter takes ``spec`` with some tile (a chain none fits is refused for what it is)."""
    return any(kernels_problem(replace(spec, tile=tile), chip) is None for tile in every_tile())


def is_decode(op: Attention) -> bool:
    """One static query row: the split-KV decode kernels; anything else the prefill kernel."""
    return op.queries == 1


def problem_spec(op: Attention) -> AttentionSpec:
    """An attention spec of ``op``'s shape (dynamic sizes as symbols), for the emitter's own checks."""
    dtype = op.input_type
    batch = (op.batch if op.batch is not None else "b",)
    sq = op.queries if op.queries is not None else "sq"
    skv = op.keys if op.keys is not None else "skv"
    transposed = op.k_transposed
    k_shape = (*batch, op.head_dim, skv) if transposed else (*batch, skv, op.head_dim)
    return AttentionSpec(name="attention", q=Tensor("q", dtype, (*batch, sq, op.head_dim)),
                         k=Tensor("k", dtype, k_shape), v=Tensor("v", dtype, (*batch, skv, op.value_dim)),
                         o=Tensor("o", dtype, (*batch, sq, op.value_dim)), batch=batch, sq=sq, skv=skv,
                         d=op.head_dim, dv=op.value_dim, scale=1.0, k_layout="dn" if transposed else "nd",
                         causal=op.causal is not None)


def attention_tile(values: dict[str, int]) -> AttentionTile:
    """The tile of a point's symbol values."""
    return AttentionTile(BQ=values["BQ"], BK=values["BK"], DECODE_BK=values["DECODE_BK"],
                         DECODE_WARPS=values["DECODE_WARPS"], STAGES=values["STAGES"])


def _log2(value: int) -> int:
    return int(math.log2(value))


def _range(var: str, field: str) -> str:
    values = tile_values(field)
    return f"{_log2(min(values))} <= {var} <= {_log2(max(values))}"


def _fixed(var: str, field: str) -> str:
    return f"{var} = {_log2(getattr(AttentionTile(), field))}"


def _union(pieces: list[str]) -> str:
    return "(" + (" or ".join(pieces) or "false") + ")"


def _fits(spec: AttentionSpec, target: Target, tiles: list[tuple[dict[str, int], AttentionTile]]
          ) -> tuple[str, str]:
    """The registers and shared-memory groups: the union of the tiles (each given as its exponent equalities)
    whose plan stays within the chip's registers per thread, and within its opt-in shared memory per block."""
    registers, shared = [], []
    for exponents, tile in tiles:
        plan = plan_attention(spec, target.chip, tile)
        point = "(" + " and ".join(f"{var} = {value}" for var, value in exponents.items()) + ")"
        if plan.registers <= target.regs_per_thread:
            registers.append(point)
        if plan.shared_bytes <= target.smem_per_block:
            shared.append(point)
    return _union(registers), _union(shared)


def _fits_sm90(spec: AttentionSpec, target: Target, tiles: list[tuple[dict[str, int], AttentionTile]]
               ) -> tuple[str, str]:
    """The registers and shared-memory groups of the wgmma kernel: the tiles whose registers at entry
    (``.maxnreg``) are within the chip's per thread, and those whose rings and Q tile the kernel takes in shared
    memory (:func:`~prism.codegen.gpu.attention_sm90.sm90_attention_problem`), within the chip's opt-in limit."""
    registers, shared = [], []
    for exponents, tile in tiles:
        plan = plan_sm90_attention(spec, tile)
        point = "(" + " and ".join(f"{var} = {value}" for var, value in exponents.items()) + ")"
        if plan.max_registers <= target.regs_per_thread:
            registers.append(point)
        if sm90_attention_problem(spec, tile) is None and plan.shared_bytes <= target.smem_per_block:
            shared.append(point)
    return _union(registers), _union(shared)


def _exponent_range(var: str, values: tuple[int, ...]) -> str:
    return f"{_log2(min(values))} <= {var} <= {_log2(max(values))}"


def runs_sm90(spec: AttentionSpec, chip: str) -> bool:
    """Whether ``spec`` (a prefill, or a decode in the kernel's split mode) takes the wgmma kernel on ``chip`` for
    the tiles that kernel takes."""
    return chip == "sm_90a" and attention_spec_problem(spec, chip) is None and sm90_spec_problem(spec) is None


def attention_space(op: Attention, target: Target) -> Space | None:
    """The schedule space of ``op`` on ``target`` (see the module docstring); None where the kernels do not take
    the chain (operands other than f16 or bf16, a causal mask off the last key, head sizes they refuse): its
    parts are then lifted as they are."""
    if op.input_type not in GPU_ATTENTION_TYPES:
        return None
    if op.causal is not None and (op.queries is None or op.keys is None or op.causal != op.keys - op.queries):
        return None
    spec = problem_spec(op)
    if not some_tile_fits(spec, target.chip):
        return None
    fixed_stages = f"st = {AttentionTile().STAGES}"
    if is_decode(op) and runs_sm90(spec, target.chip):
        universe, shape, registers, shared = _sm90_decode_space(spec, target)
    elif is_decode(op):
        knobs = [("dbk", "DECODE_BK"), ("dw", "DECODE_WARPS")]
        universe = (f"{_fixed('bq', 'BQ')} and {_fixed('bk', 'BK')} and {_range('dbk', 'DECODE_BK')} and "
                    f"{_range('dw', 'DECODE_WARPS')} and 0 <= ks <= {MAX_SPLITS_LOG2} and {fixed_stages}")
        shape = f"{shape_fit('dbk', 'n', 4)} and (ks = 0 or ks + dbk <= LN) and dw <= ks"
        registers, shared = _fits(spec, target, _tiles(knobs))
    elif runs_sm90(spec, target.chip):
        stages = tile_values("STAGES")
        universe = (f"{_exponent_range('bq', QUERY_TILES)} and {_exponent_range('bk', KEY_TILES)} and "
                    f"{_fixed('dbk', 'DECODE_BK')} and {_fixed('dw', 'DECODE_WARPS')} and ks = 0 and "
                    f"{min(stages)} <= st <= {max(stages)}")
        floor = _log2(min(QUERY_TILES))
        shape = f"{shape_fit('bq', 'm', floor)} and {shape_fit('bk', 'n', _log2(min(KEY_TILES)))}"
        tiles = [({"bq": _log2(bq), "bk": _log2(bk), "st": st}, AttentionTile(BQ=bq, BK=bk, STAGES=st))
                 for bq, bk, st in _product([list(QUERY_TILES), list(KEY_TILES), stages])]
        registers, shared = _fits_sm90(spec, target, tiles)
    else:
        knobs = [("bq", "BQ"), ("bk", "BK")]
        universe = (f"{_range('bq', 'BQ')} and {_range('bk', 'BK')} and {_fixed('dbk', 'DECODE_BK')} and "
                    f"{_fixed('dw', 'DECODE_WARPS')} and ks = 0 and {fixed_stages}")
        shape = f"{shape_fit('bq', 'm', 4)} and {shape_fit('bk', 'n', 4)}"
        registers, shared = _fits(spec, target, _tiles(knobs))
    groups = (("registers", registers), ("shared_memory", shared), ("shape", shape))
    return Space(kind="attention", knobs=dict(KNOBS), flags=dict(FLAGS),
                 universe=f"{shape_param_bounds()} and {universe}", groups=groups)


def _sm90_decode_space(spec: AttentionSpec, target: Target) -> tuple[str, str, str, str]:
    """The wgmma decode's universe (SPLITS, BK of 64 or 128, STAGES; BQ, DECODE_BK and DECODE_WARPS at the
    tile's defaults, which the kernel does not read), shape (each share at least one key tile, the smallest key
    tile always allowed) and its registers and shared-memory groups (the kernel's own limits)."""
    stages = tile_values("STAGES")
    universe = (f"{_fixed('bq', 'BQ')} and {_exponent_range('bk', KEY_TILES)} and {_fixed('dbk', 'DECODE_BK')} "
                f"and {_fixed('dw', 'DECODE_WARPS')} and 0 <= ks <= {MAX_SPLITS_LOG2} and "
                f"{min(stages)} <= st <= {max(stages)}")
    shape = f"{shape_fit('bk', 'n', _log2(min(KEY_TILES)))} and (ks = 0 or ks + bk <= LN)"
    tiles = [({"bk": _log2(bk), "st": st}, AttentionTile(BK=bk, STAGES=st))
             for bk, st in _product([list(KEY_TILES), stages])]
    registers, shared = _fits_sm90(spec, target, tiles)
    return universe, shape, registers, shared


def _tiles(knobs: list[tuple[str, str]]) -> list[tuple[dict[str, int], AttentionTile]]:
    """Every combination of the ``knobs`` (variable, field) values: its exponent equalities and its tile."""
    tiles = []
    for combination in _product([tile_values(field) for _, field in knobs]):
        fields = {field: value for (_, field), value in zip(knobs, combination, strict=True)}
        tiles.append(({var: _log2(value) for (var, _), value in zip(knobs, combination, strict=True)},
                      AttentionTile(**fields)))
    return tiles


def _product(ranges: list[list[int]]) -> list[tuple[int, ...]]:
    out: list[tuple[int, ...]] = [()]
    for values in ranges:
        out = [(*head, value) for head in out for value in values]
    return out


def _spread(target: Target, blocks: Knob) -> Knob:
    """How much slower ``blocks`` equal blocks run than the same work spread evenly over every SM: whole waves
    of blocks over the SMs, the last one as long as a full one."""
    return ceil_div(blocks, target.sm_count) * target.sm_count / blocks


def _element_bytes(op: Attention) -> int:
    return ELEMENT_BYTES[op.input_type]


def _prefill(target: Target, op: Attention, values: KnobValues, s: dict[str, int]) -> np.ndarray:
    bq, bk = values["BQ"], values["BK"]
    blocks = s["batch"] * ceil_div(s["m"], bq)
    keys = s["n"]
    if op.causal is not None:  # the keys of the middle block of query rows: up to its last row, plus the offset
        keys = np.minimum(s["n"], np.ceil(op.causal + (s["m"] + bq) / 2).astype(np.int64))
    steps = ceil_div(keys, bk)
    flops = blocks * 2 * bq * (steps * bk) * (s["k"] + op.value_dim)
    spread = _spread(target, blocks)
    compute = flops / target.flops[op.input_type] * spread
    memory = roofline(_traffic(op, s) / target.dram_bytes_per_s * spread, _latency(target, op, values, blocks, steps))
    return roofline(compute, memory) + LAUNCH_SECONDS


def _decode(target: Target, op: Attention, values: KnobValues, s: dict[str, int]) -> np.ndarray:
    if runs_sm90(problem_spec(op), target.chip):
        # a block per share, its one consumer's 64-row wgmma tile holding the query in row 0
        splits, key_tile, warps, rows = values["SPLITS"], values["BK"], 1, WGMMA_M
    else:  # every warp runs a 16-row tensor-core tile whose one real row is the query
        splits, warps, key_tile, rows = values["SPLITS"], values["DECODE_WARPS"], values["DECODE_BK"], MMA_ROWS
    per_share = ceil_div(ceil_div(s["n"], key_tile), splits)  # key tiles of a share
    blocks = s["batch"] * ceil_div(splits, warps)
    flops = blocks * warps * 2 * rows * per_share * key_tile * (s["k"] + op.value_dim)
    partials = _partial_bytes(op, s, splits)
    spread = _spread(target, blocks)
    compute = flops / target.flops[op.input_type] * spread
    memory = roofline((_traffic(op, s) + partials) / target.dram_bytes_per_s * spread,
                      _latency(target, op, values, blocks, per_share))
    combine = LAUNCH_SECONDS + partials / target.dram_bytes_per_s * _spread(target, s["batch"])
    return roofline(compute, memory) + LAUNCH_SECONDS + combine


def _latency(target: Target, op: Attention, values: KnobValues, blocks: Knob, steps: Knob) -> Knob:
    """The time of the busiest SM where its loads wait on memory: a block (a warp, for decode) loads a key
    tile per step while it works on the ones before, so each step costs a DRAM latency over the stages of K and
    V tiles in flight (KV_STAGES for the mma.sync kernels, STAGES for the wgmma kernel's rings); the blocks an
    SM holds at once (by its shared memory and registers, per the emitter's plan) run side by side, the others
    after them."""
    resident, stages = _residency(target, op, values)
    rounds = ceil_div(ceil_div(blocks, target.sm_count), resident)
    return rounds * steps * LOAD_LATENCY_SECONDS / stages


def _residency(target: Target, op: Attention, values: KnobValues) -> tuple[np.ndarray, np.ndarray]:
    """For each point: the blocks an SM holds at once (as many as its shared memory and registers take, at
    least one, from the plan of the kernel that runs the point's tile) and the stages of key tiles in flight."""
    spec = problem_spec(op)
    fields = ("BQ", "BK", "DECODE_BK", "DECODE_WARPS", "STAGES")
    shape = np.shape(values["BQ"])
    columns = [np.broadcast_to(np.asarray(values.get(key, AttentionTile().STAGES)), shape).ravel().tolist()
               for key in fields]
    found: dict[tuple[int, ...], tuple[int, int]] = {}
    resident = np.empty(len(columns[0]), dtype=np.int64)
    stages = np.empty(len(columns[0]), dtype=np.int64)
    for index, key in enumerate(zip(*columns, strict=True)):
        if key not in found:
            found[key] = _block_residency(target, replace(spec, tile=AttentionTile(*key)))
        resident[index], stages[index] = found[key]
    return resident.reshape(shape), stages.reshape(shape)


def _block_residency(target: Target, spec: AttentionSpec) -> tuple[int, int]:
    """Blocks of ``spec`` (with its tile) an SM holds at once, and the key tiles each keeps in flight."""
    if takes_sm90(spec, target.chip):
        plan = plan_sm90_attention(spec)
        threads, registers, shared, stages = plan.threads, plan.max_registers, plan.shared_bytes, plan.tile.STAGES
    else:
        mma = plan_attention(spec, target.chip)
        threads, registers, shared = mma.warps * target.warp_size, mma.registers, mma.shared_bytes
        stages = KV_STAGES
    resident = max(1, min(target.smem_per_sm // max(shared, 1), target.regs_per_sm // (threads * registers)))
    return resident, stages


def _traffic(op: Attention, s: dict[str, int]) -> int:
    """Bytes of Q, K, V and O, each moved once."""
    rows_and_keys = s["m"] * (s["k"] + op.value_dim) + s["n"] * (s["k"] + op.value_dim)
    return _element_bytes(op) * s["batch"] * rows_and_keys


def _partial_bytes(op: Attention, s: dict[str, int], splits: Knob) -> Knob:
    """The f32 partial results of the decode's shares (output, max and sum of each): written once, read once."""
    return splits * s["batch"] * (op.value_dim + 2) * 4


def attention_seconds(target: Target, op: Attention, values: KnobValues, assumed: int) -> np.ndarray:
    """Predicted seconds of ``op`` scheduled by ``values`` (see the module docstring)."""
    s = problem_sizes(op, assumed)
    return _decode(target, op, values, s) if is_decode(op) else _prefill(target, op, values, s)


def attention_lower_bound(target: Target, op: Attention, values: KnobValues, assumed: int) -> np.ndarray:
    """Below :func:`attention_seconds`: the unpadded products at the tensor-core rate of every SM and Q, K, V, O
    moved once, with the launches."""
    s = problem_sizes(op, assumed)
    work = 2 * s["batch"] * _pairs(op, s["m"], s["n"]) * (s["k"] + op.value_dim)
    compute = np.full(np.shape(values["BQ"]), work / target.flops[op.input_type])
    launches = 2 if is_decode(op) else 1
    return roofline(compute, _traffic(op, s) / target.dram_bytes_per_s) + launches * LAUNCH_SECONDS


def _pairs(op: Attention, queries: int, keys: int) -> int:
    """The (query, key) pairs a mask keeps: all, or key j for query i when j <= i + offset."""
    if op.causal is None:
        return queries * keys
    return int(np.minimum(keys, np.maximum(0, np.arange(queries) + op.causal + 1)).sum())
