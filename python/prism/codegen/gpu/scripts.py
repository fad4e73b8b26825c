"""The GPU lowering's transform scripts: one section per kernel, its ops found by their tags."""

from __future__ import annotations

import math

from prism.codegen.gpu.plan import LANES_M, LANES_N, GpuGemm, GpuParallel
from prism.codegen.transform import ANY, Script
from prism.infra import attrs
from prism.targets.nvidia import MMA_SHAPE

# Bytes one thread moves per vector copy (one 128-bit access).
_COPY_BYTES = 16

# The warp tile becomes one vector.contract; splitting it into 16x8x16 pieces
# with the f16->f32 extension folded in lets convert-vector-to-gpu emit
# ldmatrix + mma.sync. Batch kernels carry a leading unit dimension to drop,
# in both paths: the accumulator hoisted out of the K loop must be 2-D, since
# the vector lowering below never finishes on a loop-carried 1xMxN vector.
_MMA_PATTERNS = ["transform.apply_patterns.vector.cast_away_vector_leading_one_dim",
                 "transform.apply_patterns.vector.fold_arith_extension",
                 f"transform.apply_patterns.gpu.unroll_vectors_subgroup_mma {list(MMA_SHAPE)}",
                 "transform.apply_patterns.canonicalization"]
_SIMT_PATTERNS = ["transform.apply_patterns.vector.cast_away_vector_leading_one_dim",
                  'transform.apply_patterns.vector.lower_contraction lowering_strategy = "outerproduct"',
                  "transform.apply_patterns.vector.lower_outerproduct",
                  "transform.apply_patterns.canonicalization"]


def tensor_script(contractions: list[GpuGemm], parallels: list[GpuParallel]) -> str:
    """Tile every kernel to blocks (and contractions along K) on tensors; fuse each contraction's fill."""
    s = Script()
    for c in contractions:
        ch = c.schedule
        block = [{"batch": 1, "m": ch.BM, "n": ch.BN, "k": 0}[r] for r in c.roles]
        tiled, forall = s.tile_forall(s.match_tag(attrs.GPU_KERNEL_TAG, c.tag), block, kind="block")
        if c.fill_tag is not None:
            fill = s.match_tag(attrs.GPU_FILL_TAG, c.tag)
            s.add(f"transform.structured.fuse_into_containing_op {fill} into {forall} "
                  f": ({ANY}, {ANY}) -> ({ANY}, {ANY})")
        s.tile_for(tiled, [ch.BK if r == "k" else 0 for r in c.roles])
    for p in parallels:
        s.tile_forall(s.match_tag(attrs.GPU_KERNEL_TAG, p.tag), p.block_tile, kind="block")
    return s.text()


def memref_script(contractions: list[GpuGemm], parallels: list[GpuParallel]) -> str:
    """On buffers: promote operand tiles to shared memory, map warps and threads, and make the launches."""
    s = Script()
    for c in contractions:
        _contraction_memref(s, c)
    for p in parallels:
        op = s.match_tag(attrs.GPU_KERNEL_TAG, p.tag)
        block = _parent_forall(s, op)
        s.tile_forall(op, p.threads, threads=True, kind="thread")
        _launch(s, block, math.prod(n for n in p.threads if n))
    return s.text()


def _parent_forall(s: Script, op: str) -> str:
    block = s.fresh()
    s.add(f'{block} = transform.get_parent_op {op} {{op_name = "scf.forall"}} : ({ANY}) -> {ANY}')
    return block


def _spread(shape: list[int], threads: int, elem_bytes: int) -> list[int]:
    """Threads per dimension for a copy of ``shape``: 16-byte vectors along
    the innermost dimension first so that neighbouring threads touch
    neighbouring addresses; every count divides its dimension."""
    vec = _COPY_BYTES // elem_bytes
    if shape[-1] % vec:
        vec = 1
    counts = [0] * len(shape)
    left = threads
    for d in reversed(range(len(shape))):
        units = shape[d] // vec if d == len(shape) - 1 else shape[d]
        counts[d] = math.gcd(units, left)
        left //= counts[d]
    return counts


def _contraction_memref(s: Script, c: GpuGemm) -> None:
    ch = c.schedule
    inner, kind = _inner_tile(c)
    op = s.match_tag(attrs.GPU_KERNEL_TAG, c.tag)
    if c.fill_tag is not None:
        # The fill gets the contraction's own warp/thread tiling so that each
        # thread writes exactly the accumulator fragments it later reads: the
        # zeros can then be forwarded into registers (see hoist_script).
        fill = s.match_tag(attrs.GPU_FILL_TAG, c.tag)
        tiled_fill, _ = s.tile_forall(fill, [inner[c.roles[d]] for d in c.operand_dims[2]], kind=kind)
        s.vectorize(tiled_fill)
    promoted = s.fresh()
    s.add(f"{promoted} = transform.structured.promote {op} {{operands_to_promote = [0, 1], use_alloca, "
          f"memory_space = #gpu.address_space<workgroup>}} : ({ANY}) -> {ANY}")
    block = _parent_forall(s, promoted)
    tiled, _ = s.tile_forall(promoted, [inner[r] for r in c.roles], kind=kind)
    s.vectorize(tiled, named_contraction=True)
    copies = [s.fresh(), s.fresh()]
    s.add(f"{', '.join(copies)} = transform.split_handle {s.match_ops(['linalg.copy'], within=block)} "
          f": ({ANY}) -> ({ANY}, {ANY})")
    for operand, copy in enumerate(copies):
        counts = _spread(c.operand_tile(operand), ch.threads, c.elem_bytes)
        distributed, _ = s.tile_forall(copy, counts, threads=True, kind="thread")
        s.vectorize(distributed)
    s.apply_patterns(block, _MMA_PATTERNS if ch.MMA else _SIMT_PATTERNS)
    _launch(s, block, ch.threads)


def _inner_tile(c: GpuGemm) -> tuple[dict[str, int], str]:
    """Per-role tile of one warp (MMA) or one thread (SIMT), and the mapping kind."""
    ch = c.schedule
    if ch.MMA:
        return {"batch": 0, "m": ch.WM, "n": ch.WN, "k": 0}, "warp"
    return {"batch": 0, "m": ch.WM // LANES_M, "n": ch.WN // LANES_N, "k": 0}, "thread"


def _launch(s: Script, block: str, threads: int) -> None:
    grid = s.fresh()
    s.add(f"{grid} = transform.gpu.map_forall_to_blocks {block} generate_gpu_launch : ({ANY}) -> {ANY}")
    s.add(f"transform.gpu.map_nested_forall_to_threads {grid} block_dims = [{threads}, 1, 1] : ({ANY}) -> {ANY}")


def vector_lowering_script() -> str:
    """What is left of vector ops (copies, SIMT reads) down to 1-D, fully unrolled.

    The NVVM pipeline would otherwise stage n-D transfers through local
    buffers and leave casts that LLVM translation rejects.
    """
    s = Script()
    s.apply_patterns(s.match_ops(["func.func", "gpu.func"]), [
        "transform.apply_patterns.vector.cast_away_vector_leading_one_dim",
        "transform.apply_patterns.vector.transfer_permutation_patterns",
        'transform.apply_patterns.vector.lower_contraction lowering_strategy = "outerproduct"',
        "transform.apply_patterns.vector.lower_outerproduct",
        "transform.apply_patterns.vector.transfer_to_scf max_transfer_rank = 1 full_unroll = true",
        "transform.apply_patterns.vector.lower_transfer max_transfer_rank = 1",
        "transform.apply_patterns.vector.lower_transpose",
        "transform.apply_patterns.vector.lower_broadcast",
        "transform.apply_patterns.vector.lower_shape_cast",
        "transform.apply_patterns.canonicalization"])
    return s.text()


def hoist_script() -> str:
    """Keep each accumulator in registers across the K loop.

    Hoisting needs the C reads and writes on the buffer itself with identical
    index values, hence folding the subviews away and CSE first; it then
    turns each read/write pair into a loop-carried vector. Store-to-load
    forwarding replaces the reads now in front of the loop with the fill's
    zeros and drops the dead fill stores, so C is written once, after the loop.
    """
    s = Script()
    funcs = s.match_ops(["func.func"])
    s.apply_patterns(funcs, ["transform.apply_patterns.memref.fold_memref_alias_ops",
                             "transform.apply_patterns.canonicalization"])
    s.add(f"transform.apply_cse to {funcs} : {ANY}")
    folded, hoisted = s.match_ops(["func.func"]), s.fresh()
    s.add(f"{hoisted} = transform.structured.hoist_redundant_vector_transfers {folded} : ({ANY}) -> {ANY}")
    s.add(f"transform.memref.erase_dead_alloc_and_stores {hoisted} : ({ANY}) -> ()")
    return s.text()


def shared_to_global_script() -> str:
    """Shared-memory allocas become globals of the kernel's gpu.module."""
    s = Script()
    allocas, found, gets = s.fresh(), s.fresh(), s.fresh()
    s.add(f'{allocas} = transform.structured.match ops{{["memref.alloca"]}} in %root '
          f': ({ANY}) -> !transform.op<"memref.alloca">')
    s.add(f'{found}, {gets} = transform.memref.alloca_to_global {allocas} '
          f': (!transform.op<"memref.alloca">) -> ({ANY}, {ANY})')
    return s.text()
