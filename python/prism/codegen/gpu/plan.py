"""Planning the GPU lowering: validate every op and decide its mapping before any upstream call.

Upstream misuse aborts the process (the MLIR wheels are built with
assertions), so everything the schedules assume is checked here first, and
an op that cannot be mapped is an error at its location.

Choice constraints (``prism.choice``; missing keys take defaults):
M % BM == N % BN == K % BK == 0; BM % WM == BN % WN == 0;
threads = (BM/WM)*(BN/WN)*32 <= 1024; shared bytes =
(BM*BK + BK*BN) * sizeof(input element) <= 49152; MMA=1 needs f16
inputs (not bf16: upstream has no bf16 path from vector to mma.sync) and
WM % 16 == WN % 8 == BK % 16 == 0; MMA=0 needs
WM % 4 == WN % 8 == 0; STAGES must be 1 (no software pipelining).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from mlir import ir

from prism.infra import attrs
from prism.infra.errors import UnsupportedOp
from prism.infra.ir import ELEMENT_BYTES, element_name
from prism.search.family import contraction_roles, why_not_lifted
from prism.targets.nvidia import MAX_GRID, MAX_THREADS_PER_BLOCK, MMA_SHAPE, STATIC_SHARED_BYTES, WARP_SIZE

_MMA_M, _MMA_N, _MMA_K = MMA_SHAPE
# SIMT: the 32 lanes of a warp cover its warp tile as a 4 x 8 grid.
LANES_M, LANES_N = 4, 8
# Thread-id linearization maps at most this many dimensions of a forall to blocks or threads.
MAX_MAPPED_DIMS = 3
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
HOST_OPS = frozenset({"arith.constant", "tensor.empty", "func.return", "func.call",
                       "tensor.expand_shape", "tensor.collapse_shape", "tensor.extract_slice", "tensor.concat",
                       "tensor.dim", "tensor.reshape", "tensor.from_elements"})

@dataclass(frozen=True)
class GpuSchedule:
    """The GPU code generator's knobs for one contraction (constraints in the module docstring)."""

    BM: int
    BN: int
    BK: int
    WM: int
    WN: int
    MMA: int
    STAGES: int = 1

    @property
    def threads(self) -> int:
        """Threads per block: a warp per WM x WN warp tile."""
        return (self.BM // self.WM) * (self.BN // self.WN) * WARP_SIZE


@dataclass
class GpuGemm:
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
    schedule: GpuSchedule
    operand_dims: list[list[int]]
    fill_tag: int | None = None

    def operand_tile(self, operand: int) -> list[int]:
        """The block's tile of input ``operand`` (0: A, 1: B)."""
        ch = self.schedule
        tile = {"batch": 1, "m": ch.BM, "n": ch.BN, "k": ch.BK}
        return [tile[self.roles[d]] for d in self.operand_dims[operand]]

    @property
    def promoted(self) -> list[int]:
        """The inputs whose block tile is a view of a larger operand, which shared-memory promotion can copy."""
        size = dict(zip(self.roles, self.sizes, strict=True))
        return [operand for operand in (0, 1)
                if any(t < size[self.roles[d]] for t, d in zip(self.operand_tile(operand), self.operand_dims[operand],
                                                                strict=True))]


@dataclass
class GpuParallel:
    """A parallel op that gets a kernel of its own: one element per thread."""

    tag: int
    op: ir.Operation
    sizes: list[int]
    # Per-dimension block tile and thread count; filled by _plan_parallel.
    block_tile: list[int] = field(default_factory=list)
    threads: list[int] = field(default_factory=list)


def plan(module: ir.Module) -> tuple[list[GpuGemm], list[GpuParallel]]:
    """Every contraction and every other parallel op of ``module``'s functions, tagged for the schedules.

    Raises UnsupportedOp, at the op, for anything that has no GPU mapping.
    """
    ops: list[ir.Operation] = []
    for top in module.body.operations:
        if top.operation.name != "func.func":
            raise UnsupportedOp(f"'{top.operation.name}' at the top level of the module cannot be lowered; "
                                "put every function directly in the module", location=str(top.operation.location))
        ops += [op.operation for block in top.regions[0].blocks for op in block.operations]
    ops = [op for op in ops if not _forward_empty(op)]
    contractions: list[GpuGemm] = []
    fused_fills: list[ir.Operation] = []
    for op in ops:
        if _is_contraction(op):
            gemm = _plan_contraction(op, len(contractions))
            contractions.append(gemm)
            fill = _fusable_fill(op)
            if fill is not None:
                fused_fills.append(fill)
                gemm.fill_tag = gemm.tag
                fill.attributes[attrs.GPU_FILL_TAG] = _i64(gemm.tag)
    parallels: list[GpuParallel] = []
    for op in ops:
        if any(isinstance(v.type, ir.MemRefType) for v in op.operands):
            raise UnsupportedOp(f"'{op.name}' works on buffers; Prism lowers Linalg on tensors",
                                location=str(op.location))
        if _is_contraction(op) or any(op == f for f in fused_fills):
            continue
        if op.name in _PARALLEL_NAMED or op.name == "linalg.generic":
            parallels.append(_plan_parallel(op, len(contractions) + len(parallels)))
        elif op.name not in HOST_OPS:
            raise UnsupportedOp(f"cannot map '{op.name}' to the GPU{_why_not(op)}", location=str(op.location))
    for kernel in [*contractions, *parallels]:
        kernel.op.attributes[attrs.GPU_KERNEL_TAG] = _i64(kernel.tag)
    return contractions, parallels


def _forward_empty(op: ir.Operation) -> bool:
    """Replace a Linalg op whose iteration space is empty by its init (it computes nothing); True if it was."""
    if not op.name.startswith("linalg.") or not op.results:
        return False
    shaped = [v.type for v in op.operands if isinstance(v.type, ir.RankedTensorType)]
    if not any(0 in ir.RankedTensorType(t).shape for t in shaped):
        return False
    inits = list(op.operands)[len(op.operands) - len(op.results):]
    for result, init in zip(op.results, inits, strict=True):
        result.replace_all_uses_with(init)
    op.erase()
    return True


def _i64(value: int) -> ir.IntegerAttr:
    return ir.IntegerAttr.get(ir.IntegerType.get_signless(64), value)


def _static_shape(op: ir.Operation) -> None:
    for value in [*op.operands, *op.results]:
        if isinstance(value.type, ir.ShapedType) and not ir.ShapedType(value.type).has_static_shape:
            raise UnsupportedOp(f"'{op.name}' has a dynamic shape "
                                f"({value.type}); the GPU path needs static shapes",
                                location=str(op.location))


def _maps(op: ir.Operation) -> list[ir.AffineMap]:
    return [ir.AffineMapAttr(a).value for a in ir.ArrayAttr(op.attributes["indexing_maps"])]


def _iterators(op: ir.Operation) -> list[str]:
    attr = ir.ArrayAttr(op.attributes["iterator_types"])
    return [str(a).split("<")[-1].rstrip(">") for a in attr]


def _why_not(op: ir.Operation) -> str:
    """For a Linalg contraction the GPU has no kernel for, why (its element types, its maps), as a clause."""
    reason = why_not_lifted(op) if op.name.startswith("linalg.") else "not a contraction"
    return "" if reason == "not a contraction" else f", which runs only the products Prism tunes: {reason}"


def _is_contraction(op: ir.Operation) -> bool:
    return contraction_roles(op) is not None


def _plan_contraction(op: ir.Operation, tag: int) -> GpuGemm:
    _static_shape(op)
    where = str(op.location)
    roles = contraction_roles(op) or []
    sizes = _domain_sizes(op, len(roles))
    if sorted(r for r in roles if r != "batch") != ["k", "m", "n"] or roles.count("batch") > 1:
        raise UnsupportedOp(f"contraction roles {roles} are not "
                            "[batch?, m, n, k] with one of each", location=where)
    in_types = [ir.ShapedType(v.type).element_type for v in op.operands[:2]]
    elem_bytes = _elem_bytes(in_types[0], where)
    choice = _choice(op, roles, sizes, in_types, where)
    operand_dims = [[ir.AffineDimExpr(e).position for e in amap.results] for amap in _maps(op)]
    plan = GpuGemm(tag, op, roles, sizes, elem_bytes, choice, operand_dims)
    _check_choice(plan, in_types, where)
    if not choice.MMA and op.name == "linalg.generic":
        # Found by the fuzzer: a generic vectorizes to a multi-reduction, not a contract, and the SIMT vector
        # lowering then runs out of memory or crashes on some thread tiles.
        raise UnsupportedOp("a contraction written as linalg.generic maps to the GPU only on tensor cores (MMA=1); "
                            "write it as linalg.matmul (with indexing_maps for a transposed operand)",
                            location=where)
    tiles = {"batch": 1, "m": choice.BM, "n": choice.BN, "k": 0}
    check_grid([(size, tiles[role]) for role, size in zip(roles, sizes, strict=True)], where)
    return plan


def check_grid(extents: list[tuple[int, int]], where: str) -> None:
    """Refuse a grid larger than CUDA allows: ``extents`` are (size, tile) per loop, 0 for an untiled loop.

    The block forall maps its last dimension to x, the one before to y, then z.
    """
    counts = [-(-size // tile) for size, tile in extents if tile]
    for axis, (count, limit) in enumerate(zip(reversed(counts), MAX_GRID, strict=False)):
        if count > limit:
            raise UnsupportedOp(f"the kernel needs {count} blocks along grid axis {'xyz'[axis]}, more than the "
                                f"{limit} CUDA allows; split the problem or choose larger tiles", location=where)


def _domain_sizes(op: ir.Operation, rank: int) -> list[int]:
    """Static loop bounds: each dimension's size read off an operand using it."""
    sizes: list[int | None] = [None] * rank
    for value, amap in zip(op.operands, _maps(op), strict=True):
        shape = ir.ShapedType(value.type).shape if isinstance(value.type, ir.ShapedType) else []
        for pos, expr in enumerate(amap.results):
            if isinstance(expr, ir.AffineDimExpr):
                sizes[ir.AffineDimExpr(expr).position] = shape[pos]
    if any(s is None for s in sizes):
        raise UnsupportedOp("cannot infer the loop bounds of this op",
                            location=str(op.location))
    return [int(s) for s in sizes]


def _elem_bytes(elem: ir.Type, where: str) -> int:
    name = element_name(elem)
    if name not in ("f32", "f16", "bf16"):
        raise UnsupportedOp(f"element type {elem} is not f32, f16 or bf16", location=where)
    return ELEMENT_BYTES[name]


def _choice(op: ir.Operation, roles: list[str], sizes: list[int],
            in_types: list[ir.Type], where: str) -> GpuSchedule:
    """The tuned choice with defaults for missing keys (a divisor of the size)."""
    given: dict[str, int] = {}
    if attrs.CHOICE in op.attributes:
        for named in ir.DictAttr(op.attributes[attrs.CHOICE]):
            if named.name not in _CHOICE_KEYS:
                raise UnsupportedOp(f"unknown prism.choice key '{named.name}'",
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
    return GpuSchedule(**values)


def _divisor(size: int, preferred: int) -> int:
    """The largest power of two <= preferred that divides size (at least 1)."""
    tile = preferred
    while tile > 1 and size % tile:
        tile //= 2
    return tile


def _check_choice(plan: GpuGemm, in_types: list[ir.Type], where: str) -> None:
    c, size = plan.schedule, dict(zip(plan.roles, plan.sizes, strict=True))
    problems = []
    for dim, tile in (("m", c.BM), ("n", c.BN), ("k", c.BK)):
        if tile <= 0 or size[dim] % tile:
            problems.append(f"{dim}={size[dim]} is not a multiple of its tile {tile}")
    if c.WM <= 0 or c.WN <= 0 or c.BM % max(c.WM, 1) or c.BN % max(c.WN, 1):
        problems.append(f"warp tile {c.WM}x{c.WN} does not divide block tile {c.BM}x{c.BN}")
    elif c.threads > MAX_THREADS_PER_BLOCK:
        problems.append(f"{c.threads} threads per block exceed {MAX_THREADS_PER_BLOCK}")
    smem = (c.BM * c.BK + c.BK * c.BN) * plan.elem_bytes
    if smem > STATIC_SHARED_BYTES:
        problems.append(f"shared memory {smem} B exceeds {STATIC_SHARED_BYTES} B")
    if c.MMA not in (0, 1):
        problems.append(f"MMA={c.MMA} is not 0 or 1")
    elif c.MMA:
        # convert-vector-to-gpu has no bf16 ldmatrix/mma.sync path (MLIR 22).
        if not all(isinstance(t, ir.F16Type) for t in in_types):
            problems.append("MMA=1 needs f16 inputs (bf16 and f32 use MMA=0)")
        if c.WM % _MMA_M or c.WN % _MMA_N or c.BK % _MMA_K:
            problems.append(f"MMA=1 needs WM%{_MMA_M}, WN%{_MMA_N}, BK%{_MMA_K} == 0")
    elif c.WM % LANES_M or c.WN % LANES_N:
        problems.append(f"MMA=0 needs WM%{LANES_M} == WN%{LANES_N} == 0")
    whole = [name for operand, name in ((0, "A"), (1, "B")) if operand not in plan.promoted]
    if whole:
        problems.append(f"the block tile covers {' and '.join(whole)} whole, and shared-memory promotion copies "
                        "views of larger operands only (choose BK < K, or block tiles smaller than M and N)")
    if c.STAGES != 1:
        problems.append(f"STAGES={c.STAGES}: only single-stage shared memory is supported")
    if problems:
        raise UnsupportedOp(f"cannot map contraction with {c}: "
                            + "; ".join(problems), location=where)


def _fusable_fill(op: ir.Operation) -> ir.Operation | None:
    init = op.operands[len(op.operands) - 1]
    owner = init.owner if isinstance(init, ir.OpResult) else None
    # A fill shared with other users must stay a kernel of its own.
    if owner is not None and owner.name == "linalg.fill" and len(list(init.uses)) == 1:
        return owner
    return None


def _plan_parallel(op: ir.Operation, tag: int) -> GpuParallel:
    _static_shape(op)
    if op.name == "linalg.generic":
        if any(it != "parallel" for it in _iterators(op)):
            raise UnsupportedOp("only contractions and all-parallel "
                                "linalg.generic ops map to the GPU", location=str(op.location))
        sizes = _domain_sizes(op, len(_iterators(op)))
    else:
        sizes = list(ir.ShapedType(op.operands[len(op.operands) - 1].type).shape)
    if not sizes:
        raise UnsupportedOp(f"rank-0 '{op.name}' is not worth a kernel",
                            location=str(op.location))
    # One element per thread in blocks of 256 (4 x 64 over the two innermost
    # dimensions: 64 contiguous elements keep accesses coalesced). One more
    # dimension is spread over blocks; a block loops over any further ones,
    # since ids are linearized over at most MAX_MAPPED_DIMS dimensions.
    inner = [256] if len(sizes) == 1 else [4, 64]
    inner = [min(t, s) for t, s in zip(inner, sizes[-len(inner):], strict=True)]
    outer = len(sizes) - len(inner)
    spread = min(outer, MAX_MAPPED_DIMS - len(inner))
    tiles = [0] * (outer - spread) + [1] * spread + inner
    threads = [0] * outer + inner
    check_grid(list(zip(sizes, tiles, strict=True)), str(op.location))
    return GpuParallel(tag, op, sizes, tiles, threads)


