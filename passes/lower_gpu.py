"""Lower tensor-level linalg programs to NVIDIA GPU kernels and PTX.

The pass reads the tuning attributes that Prism puts on contractions,
builds a transform-dialect schedule from them, applies it, and runs the
upstream GPU pipeline down to PTX, all in-process.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from mlir import ir, passmanager
from mlir.dialects import gpu
from mlir.dialects.transform import interpreter

from prism.errors import PassFailed, TargetError, UnsupportedOp
from prism.family import CHOICE_ATTR, contraction_roles
from prism.passbase import Pass, PassContext

# The PTX feature each chip needs: without it sm_90 makes the NVPTX backend
# abort the process instead of failing.
_CHIP_FEATURES = {"sm_80": "+ptx70", "sm_90": "+ptx80", "sm_90a": "+ptx80"}

_TAG = "prism.gpu_op"
_FILL_TAG = "prism.gpu_fill"

_WARP = 32
_MAX_THREADS = 1024
# Static shared memory per block; more needs dynamic shared memory.
_MAX_SHARED_BYTES = 48 * 1024
# mma.sync m16n8k16: the warp tile must be a multiple of this.
_MMA_M, _MMA_N, _MMA_K = 16, 8, 16
# SIMT: the 32 lanes of a warp cover its warp tile as a 4 x 8 grid.
_LANES_M, _LANES_N = 4, 8
# Bytes one thread moves per vector copy (one 128-bit access).
_COPY_BYTES = 16

_CHOICE_KEYS = ("BM", "BN", "BK", "WM", "WN", "MMA", "STAGES")

# Named linalg ops whose iteration domain is their init's shape, all parallel.
_PARALLEL_NAMED = frozenset({
    "linalg.fill", "linalg.copy", "linalg.transpose", "linalg.broadcast",
    "linalg.map", "linalg.elementwise", "linalg.add", "linalg.sub",
    "linalg.mul", "linalg.div", "linalg.max", "linalg.min", "linalg.exp",
    "linalg.log", "linalg.abs", "linalg.negf", "linalg.sqrt", "linalg.rsqrt",
    "linalg.tanh", "linalg.erf", "linalg.square", "linalg.reciprocal",
    "linalg.floor", "linalg.ceil", "linalg.powf",
})
# Host-side ops that bufferize to allocations, views or copies and need no kernel.
_HOST_OPS = frozenset({"arith.constant", "tensor.empty", "func.return", "func.call",
                       "tensor.expand_shape", "tensor.collapse_shape", "tensor.extract_slice", "tensor.concat"})

@dataclass(frozen=True)
class Choice:
    """A contraction's mapping; see :class:`LowerGpuPass` for the constraints."""

    BM: int
    BN: int
    BK: int
    WM: int
    WN: int
    MMA: int
    STAGES: int = 1

    @property
    def threads(self) -> int:
        return (self.BM // self.WM) * (self.BN // self.WN) * _WARP


@dataclass
class _Contraction:
    """A contraction to map, and what the schedules need to know of it.

    ``op`` is valid only while planning: the tiling schedule replaces it, so
    everything read later (the operand maps as ``operand_dims``: the loop of
    each dimension of A, B and C) is copied out beforehand.
    """

    tag: int
    op: ir.Operation
    roles: list[str]
    sizes: list[int]
    elem_bytes: int
    choice: Choice
    operand_dims: list[list[int]]
    fill_tag: int | None = None


@dataclass
class _Parallel:
    tag: int
    op: ir.Operation
    sizes: list[int]
    # Per-dimension block tile and thread count; filled by _plan_parallel.
    block_tile: list[int] = field(default_factory=list)
    threads: list[int] = field(default_factory=list)


@dataclass(frozen=True)
class LowerGpuPass(Pass):
    """Lower linalg on tensors to GPU kernels and PTX for an NVIDIA chip.

    Every contraction becomes one kernel: a grid of BM x BN block tiles (one
    block per batch index too), a loop over K in steps of BK that copies the
    A and B tiles into shared memory with vector copies, and a grid of
    (BM/WM) x (BN/WN) warps. With MMA=1 each warp computes its
    WM x WN tile with ldmatrix + mma.sync.m16n8k16; with MMA=0 each thread
    computes a (WM/4) x (WN/8) tile with FMAs. Those C tiles stay in
    registers across the K loop and are stored once, after it; a fill of the
    result is fused into the kernel as their initial value. Other parallel
    ops get one kernel each.

    Before::

        %f = linalg.fill ins(%z : f32) outs(%e : tensor<256x256xf32>) -> ...
        %r = linalg.matmul {prism.choice = {BM = 64, BN = 64, BK = 32,
                             WM = 32, WN = 32, MMA = 1}}
               ins(%a, %b : tensor<256x256xf16>, tensor<256x256xf16>)
               outs(%f : tensor<256x256xf32>) -> tensor<256x256xf32>

    After: ``module`` holds host code in the LLVM dialect that calls
    ``gpu.launch_func`` on a ``gpu.binary`` and ``ctx.artifacts["ptx"]`` holds::

        {"mm_kernel": ".visible .entry mm_kernel(...) ... ldmatrix ... mma.sync"}

    ``ctx.artifacts["ptx"]`` is a dict from gpu.module name (one per kernel)
    to that module's PTX text, in module order; each value is a complete PTX
    file for ``ptxas``.

    Choice constraints (``prism.choice``; missing keys take defaults):
    M % BM == N % BN == K % BK == 0; BM % WM == BN % WN == 0;
    threads = (BM/WM)*(BN/WN)*32 <= 1024; shared bytes =
    (BM*BK + BK*BN) * sizeof(input element) <= 49152; MMA=1 needs f16
    inputs (not bf16: upstream has no bf16 path from vector to mma.sync) and
    WM % 16 == WN % 8 == BK % 16 == 0; MMA=0 needs
    WM % 4 == WN % 8 == 0; STAGES must be 1 (no software pipelining).
    """

    NAME = "prism-lower-gpu"
    SUMMARY = "Lower tensor linalg to GPU kernels and PTX for an NVIDIA chip (sm_80, sm_90, sm_90a)"
    LOWERS = True

    chip: str = "sm_90"

    def run(self, module: ir.Module, ctx: PassContext) -> None:
        features = _chip_features(self.chip)
        contractions, parallels = _plan(module)
        if not contractions and not parallels:
            raise UnsupportedOp("prism-lower-gpu: no linalg op to map to the GPU")
        ctx.progress(f"gpu: {len(contractions)} contraction(s), {len(parallels)} other kernel(s)")
        _apply_schedule(module, _tensor_schedule(contractions, parallels), "tiling")
        # Fusion leaves the original fills dead on tensors: they must go
        # before bufferization turns them into host-side writes.
        _run_pipeline(module, "builtin.module(canonicalize,cse,one-shot-bufferize{bufferize-function-boundaries "
                      "function-boundary-type-conversion=identity-layout-map},"
                      "canonicalize,cse,canonicalize)", "bufferization")
        _apply_schedule(module, _memref_schedule(contractions, parallels), "GPU mapping")
        _apply_schedule(module, _HOIST_ACCUMULATORS, "accumulator hoisting")
        _run_pipeline(module, "builtin.module(canonicalize,cse,convert-linalg-to-loops,"
                      "gpu-launch-sink-index-computations,gpu-kernel-outlining,symbol-dce)",
                      "kernel outlining")
        _convert_mma_kernels(module)
        _apply_schedule(module, _VECTOR_LOWERING, "vector lowering")
        _apply_schedule(module, _SHARED_TO_GLOBAL, "shared-memory globals")
        _align_shared_globals(module)
        _numeric_shared_space(module)
        _run_pipeline(module, f"builtin.module(gpu-lower-to-nvvm-pipeline{{cubin-chip={self.chip} "
                      f"cubin-features={features} cubin-format=isa}})", "NVVM lowering")
        _drop_timings(module)
        ctx.artifacts["ptx"] = _collect_ptx(module)


def _chip_features(chip: str) -> str:
    if chip not in _CHIP_FEATURES:
        raise TargetError(f"prism-lower-gpu: unknown chip '{chip}'; expected one of "
                          + ", ".join(sorted(_CHIP_FEATURES)))
    return _CHIP_FEATURES[chip]


# ----------------------------------------------------------------------------
# Planning: validate every op and decide its mapping before any upstream call,
# because upstream misuse aborts the process.
# ----------------------------------------------------------------------------

def _plan(module: ir.Module) -> tuple[list[_Contraction], list[_Parallel]]:
    ops = [op.operation for func in module.body.operations
           if func.operation.name == "func.func"
           for block in func.regions[0].blocks for op in block.operations]
    contractions: list[_Contraction] = []
    fused_fills: list[ir.Operation] = []
    for op in ops:
        if _is_contraction(op):
            plan = _plan_contraction(op, len(contractions))
            contractions.append(plan)
            fill = _fusable_fill(op)
            if fill is not None:
                fused_fills.append(fill)
                plan.fill_tag = plan.tag
                fill.attributes[_FILL_TAG] = _i64(plan.tag)
    parallels: list[_Parallel] = []
    for op in ops:
        if _is_contraction(op) or any(op == f for f in fused_fills):
            continue
        if op.name in _PARALLEL_NAMED or op.name == "linalg.generic":
            parallels.append(_plan_parallel(op, len(contractions) + len(parallels)))
        elif op.name not in _HOST_OPS:
            raise UnsupportedOp(f"prism-lower-gpu: cannot map '{op.name}' to the GPU",
                                location=str(op.location))
    for plan in [*contractions, *parallels]:
        plan.op.attributes[_TAG] = _i64(plan.tag)
    return contractions, parallels


def _i64(value: int) -> ir.IntegerAttr:
    return ir.IntegerAttr.get(ir.IntegerType.get_signless(64), value)


def _static_shape(op: ir.Operation) -> None:
    for value in [*op.operands, *op.results]:
        if isinstance(value.type, ir.ShapedType) and not ir.ShapedType(value.type).has_static_shape:
            raise UnsupportedOp(f"prism-lower-gpu: '{op.name}' has a dynamic shape "
                                f"({value.type}); the GPU path needs static shapes",
                                location=str(op.location))


def _maps(op: ir.Operation) -> list[ir.AffineMap]:
    return [ir.AffineMapAttr(a).value for a in ir.ArrayAttr(op.attributes["indexing_maps"])]


def _iterators(op: ir.Operation) -> list[str]:
    attr = ir.ArrayAttr(op.attributes["iterator_types"])
    return [str(a).split("<")[-1].rstrip(">") for a in attr]


def _is_contraction(op: ir.Operation) -> bool:
    return contraction_roles(op) is not None


def _plan_contraction(op: ir.Operation, tag: int) -> _Contraction:
    _static_shape(op)
    where = str(op.location)
    roles = contraction_roles(op) or []
    sizes = _domain_sizes(op, len(roles))
    if sorted(r for r in roles if r != "batch") != ["k", "m", "n"] or roles.count("batch") > 1:
        raise UnsupportedOp(f"prism-lower-gpu: contraction roles {roles} are not "
                            "[batch?, m, n, k] with one of each", location=where)
    in_types = [ir.ShapedType(v.type).element_type for v in op.operands[:2]]
    elem_bytes = _elem_bytes(in_types[0], where)
    choice = _choice(op, roles, sizes, in_types, where)
    operand_dims = [[ir.AffineDimExpr(e).position for e in amap.results] for amap in _maps(op)]
    plan = _Contraction(tag, op, roles, sizes, elem_bytes, choice, operand_dims)
    _check_choice(plan, in_types, where)
    return plan


def _domain_sizes(op: ir.Operation, rank: int) -> list[int]:
    """Static loop bounds: each dimension's size read off an operand using it."""
    sizes: list[int | None] = [None] * rank
    for value, amap in zip(op.operands, _maps(op), strict=True):
        shape = ir.ShapedType(value.type).shape if isinstance(value.type, ir.ShapedType) else []
        for pos, expr in enumerate(amap.results):
            if isinstance(expr, ir.AffineDimExpr):
                sizes[ir.AffineDimExpr(expr).position] = shape[pos]
    if any(s is None for s in sizes):
        raise UnsupportedOp("prism-lower-gpu: cannot infer the loop bounds of this op",
                            location=str(op.location))
    return [int(s) for s in sizes]


def _elem_bytes(elem: ir.Type, where: str) -> int:
    for cls, size in ((ir.F32Type, 4), (ir.F16Type, 2), (ir.BF16Type, 2)):
        if isinstance(elem, cls):
            return size
    raise UnsupportedOp(f"prism-lower-gpu: element type {elem} is not f32, f16 or bf16",
                        location=where)


def _choice(op: ir.Operation, roles: list[str], sizes: list[int],
            in_types: list[ir.Type], where: str) -> Choice:
    """The tuned choice with defaults for missing keys (a divisor of the size)."""
    given: dict[str, int] = {}
    if CHOICE_ATTR in op.attributes:
        for named in ir.DictAttr(op.attributes[CHOICE_ATTR]):
            if named.name not in _CHOICE_KEYS:
                raise UnsupportedOp(f"prism-lower-gpu: unknown prism.choice key '{named.name}'",
                                    location=where)
            given[named.name] = ir.IntegerAttr(named.attr).value
    size = dict(zip(roles, sizes, strict=True))
    f16 = all(isinstance(t, ir.F16Type) for t in in_types)
    mma = given.get("MMA", int(f16))
    values = {"MMA": mma, "STAGES": given.get("STAGES", 1)}
    values["BM"] = given.get("BM", _divisor(size["m"], 64))
    values["BN"] = given.get("BN", _divisor(size["n"], 64))
    values["BK"] = given.get("BK", _divisor(size["k"], 32 if mma else 16))
    values["WM"] = given.get("WM", _divisor(values["BM"], 32))
    values["WN"] = given.get("WN", _divisor(values["BN"], 32))
    return Choice(**values)


def _divisor(size: int, preferred: int) -> int:
    """The largest power of two <= preferred that divides size (at least 1)."""
    tile = preferred
    while tile > 1 and size % tile:
        tile //= 2
    return tile


def _check_choice(plan: _Contraction, in_types: list[ir.Type], where: str) -> None:
    c, size = plan.choice, dict(zip(plan.roles, plan.sizes, strict=True))
    problems = []
    for dim, tile in (("m", c.BM), ("n", c.BN), ("k", c.BK)):
        if tile <= 0 or size[dim] % tile:
            problems.append(f"{dim}={size[dim]} is not a multiple of its tile {tile}")
    if c.WM <= 0 or c.WN <= 0 or c.BM % max(c.WM, 1) or c.BN % max(c.WN, 1):
        problems.append(f"warp tile {c.WM}x{c.WN} does not divide block tile {c.BM}x{c.BN}")
    elif c.threads > _MAX_THREADS:
        problems.append(f"{c.threads} threads per block exceed {_MAX_THREADS}")
    smem = (c.BM * c.BK + c.BK * c.BN) * plan.elem_bytes
    if smem > _MAX_SHARED_BYTES:
        problems.append(f"shared memory {smem} B exceeds {_MAX_SHARED_BYTES} B")
    if c.MMA not in (0, 1):
        problems.append(f"MMA={c.MMA} is not 0 or 1")
    elif c.MMA:
        # convert-vector-to-gpu has no bf16 ldmatrix/mma.sync path (MLIR 22).
        if not all(isinstance(t, ir.F16Type) for t in in_types):
            problems.append("MMA=1 needs f16 inputs (bf16 and f32 use MMA=0)")
        if c.WM % _MMA_M or c.WN % _MMA_N or c.BK % _MMA_K:
            problems.append(f"MMA=1 needs WM%{_MMA_M}, WN%{_MMA_N}, BK%{_MMA_K} == 0")
    elif c.WM % _LANES_M or c.WN % _LANES_N:
        problems.append(f"MMA=0 needs WM%{_LANES_M} == WN%{_LANES_N} == 0")
    if c.STAGES != 1:
        problems.append(f"STAGES={c.STAGES}: only single-stage shared memory is supported")
    if problems:
        raise UnsupportedOp(f"prism-lower-gpu: cannot map contraction with {c}: "
                            + "; ".join(problems), location=where)


def _fusable_fill(op: ir.Operation) -> ir.Operation | None:
    init = op.operands[len(op.operands) - 1]
    owner = init.owner if isinstance(init, ir.OpResult) else None
    # A fill shared with other users must stay a kernel of its own.
    if owner is not None and owner.name == "linalg.fill" and len(list(init.uses)) == 1:
        return owner
    return None


def _plan_parallel(op: ir.Operation, tag: int) -> _Parallel:
    _static_shape(op)
    if op.name == "linalg.generic":
        if any(it != "parallel" for it in _iterators(op)):
            raise UnsupportedOp("prism-lower-gpu: only contractions and all-parallel "
                                "linalg.generic ops map to the GPU", location=str(op.location))
        sizes = _domain_sizes(op, len(_iterators(op)))
    else:
        sizes = list(ir.ShapedType(op.operands[len(op.operands) - 1].type).shape)
    if not sizes:
        raise UnsupportedOp(f"prism-lower-gpu: rank-0 '{op.name}' is not worth a kernel",
                            location=str(op.location))
    # One element per thread in blocks of 256 (4 x 64 over the two innermost
    # dimensions: 64 contiguous elements keep accesses coalesced).
    inner = [256] if len(sizes) == 1 else [4, 64]
    inner = [min(t, s) for t, s in zip(inner, sizes[-len(inner):], strict=True)]
    tiles = [1] * (len(sizes) - len(inner)) + inner
    threads = [0] * (len(sizes) - len(inner)) + inner
    return _Parallel(tag, op, sizes, tiles, threads)


# ----------------------------------------------------------------------------
# Transform schedules, as text: one section per kernel, ops found by tag.
# ----------------------------------------------------------------------------

_ANY = "!transform.any_op"


def _sequence(body: list[str]) -> str:
    lines = "\n".join("    " + line for line in body)
    return ("module attributes {transform.with_named_sequence} {\n"
            f"  transform.named_sequence @__transform_main(%root: {_ANY} {{transform.readonly}}) {{\n"
            f"{lines}\n    transform.yield\n  }}\n}}\n")


def _match(name: str, attr: str, tag: int) -> str:
    return (f"%{name} = transform.structured.match attributes {{{attr} = {tag} : i64}} "
            f"in %root : ({_ANY}) -> {_ANY}")


def _mapping(kind: str, rank: int) -> str:
    """Linear ids over ``rank`` forall dimensions, the last one fastest."""
    return ", ".join(f"#gpu.{kind}<linear_dim_{rank - 1 - d}>" for d in range(rank))


def _tile_forall(result: str, target: str, how: str, sizes: list[int], kind: str) -> str:
    rank = sum(1 for s in sizes if s)
    return (f"%{result}, %{result}_forall = transform.structured.tile_using_forall %{target} "
            f"{how} {sizes} (mapping = [{_mapping(kind, rank)}]) : ({_ANY}) -> ({_ANY}, {_ANY})")


def _tensor_schedule(contractions: list[_Contraction], parallels: list[_Parallel]) -> str:
    """Tile every kernel to blocks (and contractions along K) on tensors."""
    body = []
    for c in contractions:
        t, ch = c.tag, c.choice
        block = [{"batch": 1, "m": ch.BM, "n": ch.BN, "k": 0}[r] for r in c.roles]
        body += [_match(f"op{t}", _TAG, t),
                 _tile_forall(f"blk{t}", f"op{t}", "tile_sizes", block, "block")]
        if c.fill_tag is not None:
            body += [_match(f"fill{t}", _FILL_TAG, t),
                     f"transform.structured.fuse_into_containing_op %fill{t} into %blk{t}_forall "
                     f": ({_ANY}, {_ANY}) -> ({_ANY}, {_ANY})"]
        ksteps = [ch.BK if r == "k" else 0 for r in c.roles]
        body.append(f"%k{t}, %kloop{t} = transform.structured.tile_using_for %blk{t} "
                    f"tile_sizes {ksteps} : ({_ANY}) -> ({_ANY}, {_ANY})")
    for p in parallels:
        body += [_match(f"op{p.tag}", _TAG, p.tag),
                 _tile_forall(f"blk{p.tag}", f"op{p.tag}", "tile_sizes", p.block_tile, "block")]
    return _sequence(body)


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


def _operand_tile(c: _Contraction, operand: int) -> list[int]:
    ch = c.choice
    tile = {"batch": 1, "m": ch.BM, "n": ch.BN, "k": ch.BK}
    return [tile[c.roles[d]] for d in c.operand_dims[operand]]


def _distribute(name: str, target: str, shape: list[int], threads: int, elem_bytes: int) -> list[str]:
    counts = _spread(shape, threads, elem_bytes)
    return [_tile_forall(name, target, "num_threads", counts, "thread"),
            f"transform.structured.vectorize %{name} : {_ANY}"]


def _contraction_memref(c: _Contraction) -> list[str]:
    t, ch = c.tag, c.choice
    inner, kind = _inner_tile(c)
    body = [_match(f"op{t}", _TAG, t)]
    if c.fill_tag is not None:
        # The fill gets the contraction's own warp/thread tiling so that each
        # thread writes exactly the accumulator fragments it later reads: the
        # zeros can then be forwarded into registers (see _HOIST_ACCUMULATORS).
        out = [inner[c.roles[d]] for d in c.operand_dims[2]]
        body += [_match(f"fill{t}", _FILL_TAG, t),
                 _tile_forall(f"fillt{t}", f"fill{t}", "tile_sizes", out, kind),
                 f"transform.structured.vectorize %fillt{t} : {_ANY}"]
    body += [f"%prom{t} = transform.structured.promote %op{t} {{operands_to_promote = [0, 1], "
             f"use_alloca, memory_space = #gpu.address_space<workgroup>}} : ({_ANY}) -> {_ANY}",
             f"%blk{t} = transform.get_parent_op %prom{t} {{op_name = \"scf.forall\"}} "
             f": ({_ANY}) -> {_ANY}"]
    body += [_tile_forall(f"inner{t}", f"prom{t}", "tile_sizes", [inner[r] for r in c.roles], kind),
             f"transform.structured.vectorize %inner{t} {{create_named_contraction}} : {_ANY}",
             f"%copies{t} = transform.structured.match ops{{[\"linalg.copy\"]}} in %blk{t} "
             f": ({_ANY}) -> {_ANY}",
             f"%copya{t}, %copyb{t} = transform.split_handle %copies{t} : ({_ANY}) -> ({_ANY}, {_ANY})"]
    body += _distribute(f"cpa{t}", f"copya{t}", _operand_tile(c, 0), ch.threads, c.elem_bytes)
    body += _distribute(f"cpb{t}", f"copyb{t}", _operand_tile(c, 1), ch.threads, c.elem_bytes)
    patterns = _MMA_PATTERNS if ch.MMA else _SIMT_PATTERNS
    body += [f"transform.apply_patterns to %blk{t} {{ {patterns} }} : {_ANY}"]
    body += _launch(t, ch.threads)
    return body


def _inner_tile(c: _Contraction) -> tuple[dict[str, int], str]:
    """Per-role tile of one warp (MMA) or one thread (SIMT), and the mapping kind."""
    ch = c.choice
    if ch.MMA:
        return {"batch": 0, "m": ch.WM, "n": ch.WN, "k": 0}, "warp"
    return {"batch": 0, "m": ch.WM // _LANES_M, "n": ch.WN // _LANES_N, "k": 0}, "thread"


def _launch(tag: int, threads: int) -> list[str]:
    return [f"%grid{tag} = transform.gpu.map_forall_to_blocks %blk{tag} generate_gpu_launch "
            f": ({_ANY}) -> {_ANY}",
            f"transform.gpu.map_nested_forall_to_threads %grid{tag} "
            f"block_dims = [{threads}, 1, 1] "
            f": ({_ANY}) -> {_ANY}"]


def _parallel_memref(p: _Parallel) -> list[str]:
    t = p.tag
    return [_match(f"op{t}", _TAG, t),
            f"%blk{t} = transform.get_parent_op %op{t} {{op_name = \"scf.forall\"}} "
            f": ({_ANY}) -> {_ANY}",
            _tile_forall(f"thr{t}", f"op{t}", "num_threads", p.threads, "thread"),
            *_launch(t, math.prod(n for n in p.threads if n))]


# The warp tile becomes one vector.contract; splitting it into 16x8x16 pieces
# with the f16->f32 extension folded in lets convert-vector-to-gpu emit
# ldmatrix + mma.sync. Batch kernels carry a leading unit dimension to drop,
# in both paths: the accumulator hoisted out of the K loop must be 2-D, since
# the vector lowering below never finishes on a loop-carried 1xMxN vector.
_MMA_PATTERNS = ("transform.apply_patterns.vector.cast_away_vector_leading_one_dim "
                 "transform.apply_patterns.vector.fold_arith_extension "
                 "transform.apply_patterns.gpu.unroll_vectors_subgroup_mma [16, 8, 16] "
                 "transform.apply_patterns.canonicalization")
_SIMT_PATTERNS = ("transform.apply_patterns.vector.cast_away_vector_leading_one_dim "
                  "transform.apply_patterns.vector.lower_contraction "
                  "lowering_strategy = \"outerproduct\" "
                  "transform.apply_patterns.vector.lower_outerproduct "
                  "transform.apply_patterns.canonicalization")
# What is left of vector ops (copies, SIMT reads) goes down to 1-D, fully
# unrolled: the NVVM pipeline would otherwise stage n-D transfers through
# local buffers and leave casts that LLVM translation rejects.
_VECTOR_LOWERING = _sequence([
    f"%funcs = transform.structured.match ops{{[\"func.func\", \"gpu.func\"]}} in %root : ({_ANY}) -> {_ANY}",
    "transform.apply_patterns to %funcs { "
    "transform.apply_patterns.vector.cast_away_vector_leading_one_dim "
    "transform.apply_patterns.vector.transfer_permutation_patterns "
    "transform.apply_patterns.vector.lower_contraction lowering_strategy = \"outerproduct\" "
    "transform.apply_patterns.vector.lower_outerproduct "
    "transform.apply_patterns.vector.transfer_to_scf max_transfer_rank = 1 full_unroll = true "
    "transform.apply_patterns.vector.lower_transfer max_transfer_rank = 1 "
    "transform.apply_patterns.vector.lower_transpose "
    "transform.apply_patterns.vector.lower_broadcast "
    "transform.apply_patterns.vector.lower_shape_cast "
    "transform.apply_patterns.canonicalization } : " + _ANY])
# Keep each accumulator in registers across the K loop. Hoisting needs the C
# reads and writes on the buffer itself with identical index values, hence
# folding the subviews away and CSE first; it then turns each read/write pair
# into a loop-carried vector. Store-to-load forwarding replaces the reads now
# in front of the loop with the fill's zeros and drops the dead fill stores,
# so C is written once, after the loop.
_HOIST_ACCUMULATORS = _sequence([
    f"%funcs = transform.structured.match ops{{[\"func.func\"]}} in %root : ({_ANY}) -> {_ANY}",
    "transform.apply_patterns to %funcs { transform.apply_patterns.memref.fold_memref_alias_ops "
    "transform.apply_patterns.canonicalization } : " + _ANY,
    f"transform.apply_cse to %funcs : {_ANY}",
    f"%folded = transform.structured.match ops{{[\"func.func\"]}} in %root : ({_ANY}) -> {_ANY}",
    f"%hoisted = transform.structured.hoist_redundant_vector_transfers %folded : ({_ANY}) -> {_ANY}",
    f"transform.memref.erase_dead_alloc_and_stores %hoisted : ({_ANY}) -> ()"])
# Shared-memory allocas become globals of the kernel's gpu.module.
_SHARED_TO_GLOBAL = _sequence([
    f"%allocas = transform.structured.match ops{{[\"memref.alloca\"]}} in %root "
    f": ({_ANY}) -> !transform.op<\"memref.alloca\">",
    "%globals, %gets = transform.memref.alloca_to_global %allocas "
    f": (!transform.op<\"memref.alloca\">) -> ({_ANY}, {_ANY})"])


def _memref_schedule(contractions: list[_Contraction], parallels: list[_Parallel]) -> str:
    body = []
    for c in contractions:
        body += _contraction_memref(c)
    for p in parallels:
        body += _parallel_memref(p)
    return _sequence(body)


# ----------------------------------------------------------------------------
# Running upstream pieces with their diagnostics turned into PassFailed.
# ----------------------------------------------------------------------------

_NOTE_LINES = 40  # diagnostics may dump whole kernels; keep the head


def _clip(text: str) -> str:
    lines = text.splitlines()
    return "\n".join(lines[:_NOTE_LINES] + (["  ..."] if len(lines) > _NOTE_LINES else []))


def _failure(stage: str, err: Exception) -> PassFailed:
    """PassFailed carrying the MLIR diagnostics; the interpreter reports them
    in a ValueError's text, pass managers as an MLIRError's list."""
    if not isinstance(err, ir.MLIRError):
        return PassFailed(f"prism-lower-gpu: {stage} failed", notes=[_clip(str(err))])
    notes = []
    for diag in err.error_diagnostics:
        notes.append(_clip(f"{diag.location}: {diag.message}"))
        notes += [_clip(f"  note: {n.location}: {n.message}") for n in diag.notes]
    return PassFailed(f"prism-lower-gpu: {stage} failed: {err.message}", notes=notes)


def _apply_schedule(module: ir.Module, text: str, stage: str) -> None:
    schedule = ir.Module.parse(text, context=module.context)
    entry = schedule.body.operations[0]
    try:
        interpreter.apply_named_sequence(module.operation, entry, schedule)
    except (ir.MLIRError, ValueError) as err:
        raise _failure(stage, err) from None


def _run_pipeline(module: ir.Module, pipeline: str, stage: str) -> None:
    try:
        passmanager.PassManager.parse(pipeline, context=module.context).run(module.operation)
    except ir.MLIRError as err:
        raise _failure(stage, err) from None


def _convert_mma_kernels(module: ir.Module) -> None:
    """Turn the 16x8x16 contractions into ldmatrix + mma.sync, kernel by kernel.

    SIMT contractions are lowered already, so kernels that still hold a
    vector.contract are the MMA ones; the conversion runs on those alone
    because it also tries to convert unrelated scalar code and fails there.
    A contraction left afterwards has an operand layout it cannot map.
    """
    kernels: list[ir.Operation] = []

    def visit(op: ir.Operation) -> ir.WalkResult:
        if op.name == "gpu.func" and "vector.contract" in str(op):
            kernels.append(op)
        return ir.WalkResult.ADVANCE
    module.operation.walk(visit)
    for kernel in kernels:
        pm = passmanager.PassManager.parse("gpu.func(convert-vector-to-gpu{use-nvgpu=true},"
                                           "canonicalize,cse)", context=module.context)
        try:
            pm.run(kernel)
        except ir.MLIRError as err:
            raise _failure("mma.sync conversion", err) from None
        if "vector.contract" in str(kernel):
            raise PassFailed("prism-lower-gpu: a tensor-core (MMA=1) tile did not lower to "
                             "mma.sync; its operand layout is not supported")


def _align_shared_globals(module: ir.Module) -> None:
    """16-byte alignment lets the 128-bit shared-memory accesses of vector
    copies and ldmatrix be legal."""
    def visit(op: ir.Operation) -> ir.WalkResult:
        if op.name == "memref.global":
            op.attributes["alignment"] = _i64(16)
        return ir.WalkResult.ADVANCE
    module.operation.walk(visit)


def _numeric_shared_space(module: ir.Module) -> None:
    """Rewrite ``#gpu.address_space<workgroup>`` as NVPTX's address space 3.

    The NVVM pipeline lowers vector loads and stores with a type converter
    that knows no GPU memory-space attributes, so vector copies into shared
    memory would be left unconverted; a numeric space needs no mapping.
    Printing and reparsing is the one public way to rewrite every type.
    """
    text = module.operation.get_asm(print_generic_op_form=True)
    text = text.replace("#gpu.address_space<workgroup>", "3")
    fresh = ir.Module.parse(text, context=module.context)
    for op in list(module.body.operations):
        op.operation.erase()
    for op in list(fresh.body.operations):
        op.operation.detach_from_parent()
        module.body.append(op)
    for name in list(fresh.operation.attributes):
        module.operation.attributes[name] = fresh.operation.attributes[name]


def _drop_timings(module: ir.Module) -> None:
    """Remove the serializer's wall-clock properties from every gpu.object.

    The NVVM serializer records how long each step took (``...TimeInMs``);
    keeping them would make the output differ from run to run.
    """
    for op in module.body.operations:
        if op.operation.name != "gpu.binary":
            continue
        objects = []
        for attr in ir.ArrayAttr(op.attributes["objects"]):
            obj = gpu.ObjectAttr(attr)
            kept = {} if obj.properties is None else {
                named.name: named.attr for named in obj.properties if not named.name.endswith("TimeInMs")}
            objects.append(gpu.ObjectAttr.get(obj.target, obj.format, obj.object, ir.DictAttr.get(kept),
                                              obj.kernels))
        op.attributes["objects"] = ir.ArrayAttr.get(objects)


def _collect_ptx(module: ir.Module) -> dict[str, str]:
    """PTX text by gpu.module name, in module order (each is one PTX file)."""
    ptx: dict[str, str] = {}
    for op in module.body.operations:
        if op.operation.name != "gpu.binary":
            continue
        name = ir.StringAttr(op.attributes["sym_name"]).value
        for obj in ir.ArrayAttr(op.attributes["objects"]):
            text = gpu.ObjectAttr(obj).object
            ptx[name] = (text.decode() if isinstance(text, bytes) else str(text)).rstrip("\0")
    if not ptx:
        raise PassFailed("prism-lower-gpu: the pipeline produced no gpu.binary")
    return ptx
