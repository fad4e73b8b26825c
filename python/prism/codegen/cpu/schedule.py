"""Planning the host lowering: which contractions get the GEMM schedule, with which knobs, as transform scripts.

A contraction carrying ``prism.roles`` / ``prism.choice`` (or a plain
``linalg.matmul`` / ``linalg.batch_matmul`` without them, with default knob
values) is packed, tiled and vectorized (see :mod:`prism.codegen.cpu`); every
other op takes the generic path: bufferization, then loops.
"""

from __future__ import annotations

from dataclasses import dataclass

from mlir import ir

from prism.codegen.cpu.kernel import KernelPlan
from prism.codegen.transform import ANY, Script
from prism.infra import attrs
from prism.infra.errors import UnsupportedOp
from prism.infra.ir import filled_constant
from prism.infra.maps import map_dims
from prism.infra.passbase import PassContext
from prism.kernels import host_gemm
from prism.search.family import analyze_contraction

_ROLES = ("batch", "m", "n", "k")
_CONTRACTIONS = ("linalg.matmul", "linalg.batch_matmul", "linalg.generic")
_ROLE_ORDER = {"batch": 0, "m": 1, "n": 1, "k": 2}
_GENERIC = '!transform.op<"linalg.generic">'


@dataclass(frozen=True)
class CpuSchedule:
    """The host code generator's knobs for one contraction, with their defaults.

    Cache tiles TM x TN (one parallel block) and TK (a K slice), register
    block RM x RN (one micro-tile), PACK (pack operands into panels), and KU,
    the K depth of one micro-kernel step: the packed K tile, unrolled into
    KU rank-1 updates.
    """

    TM: int = 96
    TN: int = 256
    TK: int = 256
    RM: int = 6
    RN: int = 16
    PACK: int = 1
    KU: int = 4

    @staticmethod
    def from_attr(attr: ir.Attribute | None, loc: str) -> CpuSchedule:
        """Read a ``prism.choice`` dictionary; missing keys keep their defaults."""
        if attr is None:
            return CpuSchedule()
        if not isinstance(attr, ir.DictAttr):
            raise UnsupportedOp(f"{attrs.CHOICE} must be a dictionary, got {attr}", location=loc)
        values: dict[str, int] = {}
        for key in CpuSchedule.__dataclass_fields__:
            if key in attr:
                value = attr[key]
                if not isinstance(value, ir.IntegerAttr) or value.value < 0:
                    raise UnsupportedOp(f"{attrs.CHOICE}.{key} must be a non-negative integer", location=loc)
                values[key] = value.value
        return CpuSchedule(**values).normalized()

    def normalized(self) -> CpuSchedule:
        """Clamp to usable values: register blocks at least 1, cache tiles multiples of them."""
        rm, rn = max(self.RM, 1), max(self.RN, 1)
        return CpuSchedule(
            TM=_round_up(max(self.TM, rm), rm),
            TN=_round_up(max(self.TN, rn), rn),
            TK=max(self.TK, 1),
            RM=rm,
            RN=rn,
            PACK=1 if self.PACK else 0,
            KU=max(self.KU, 1),
        )


def _round_up(x: int, m: int) -> int:
    return (x + m - 1) // m * m


@dataclass(frozen=True)
class CpuGemm:
    """A contraction to schedule: its roles per loop, the operand maps as dim positions, and its knobs."""

    op: ir.Operation
    roles: tuple[str, ...]
    maps: tuple[tuple[int, ...], ...]  # per operand (A, B, C): loop dim of each tensor dim
    schedule: CpuSchedule


def _read_roles(op: ir.Operation, loc: str) -> tuple[str, ...]:
    attr = op.attributes[attrs.ROLES]
    if not isinstance(attr, ir.ArrayAttr) or not all(isinstance(r, ir.StringAttr) for r in attr):
        raise UnsupportedOp(f"{attrs.ROLES} must be an array of strings", location=loc)
    roles = tuple(ir.StringAttr(r).value for r in attr)
    if any(r not in _ROLES for r in roles):
        raise UnsupportedOp(f"{attrs.ROLES} entries must be one of {_ROLES}, got {list(roles)}", location=loc)
    return roles


def find_gemm(op: ir.Operation, ctx: PassContext) -> CpuGemm | None:
    """The schedulable contraction ``op`` is, or None when it takes the generic path.

    The roles come from linalg's own contraction analysis (shared with
    prism-lift); a ``prism.roles`` attribute must agree with them.
    """
    if op.name not in _CONTRACTIONS:
        return None
    if op.parent.name != "func.func":
        ctx.remark(op.location, "a contraction inside a loop or region takes the generic path")
        return None
    tuned = attrs.ROLES in op.attributes
    if not tuned and op.name == "linalg.generic":
        return None  # an untuned generic may be anything; the generic path is always right
    loc = str(op.location)
    analysis = analyze_contraction(op)
    if analysis is None:
        if tuned:
            ctx.remark(loc, "not a contraction with projected-permutation maps; using the generic path")
        return None
    if 0 in analysis.extents:
        return None  # an empty product: the generic path writes the (empty or zero) result
    roles = _read_roles(op, loc) if tuned else analysis.roles
    if len(roles) != len(analysis.roles):
        raise UnsupportedOp(f"{attrs.ROLES} has {len(roles)} entries for {len(analysis.roles)} loops", location=loc)
    if roles != analysis.roles or [roles.count(r) for r in ("m", "n", "k")] != [1, 1, 1]:
        ctx.remark(loc, f"roles {list(roles)} do not fit the operand maps; using the generic path")
        return None
    maps = tuple(tuple(map_dims(ir.AffineMapAttr(m).value)) for m in ir.ArrayAttr(op.attributes["indexing_maps"]))
    schedule = CpuSchedule.from_attr(op.attributes[attrs.CHOICE] if attrs.CHOICE in op.attributes else None, loc)
    return CpuGemm(op, roles, maps, schedule)


def collect_gemms(module: ir.Module, ctx: PassContext) -> list[CpuGemm]:
    """Every contraction of ``module`` that gets the GEMM schedule, in walk order."""
    candidates: list[ir.Operation] = []

    def visit(op: ir.Operation) -> ir.WalkResult:
        if op.name in _CONTRACTIONS:
            candidates.append(op)
        return ir.WalkResult.ADVANCE

    # Exceptions raised inside a walk callback lose their type, so inspect afterwards.
    module.operation.walk(visit)
    found = (find_gemm(op, ctx) for op in candidates)
    return [c for c in found if c is not None]


def _outer_perm(dims: tuple[int, ...], roles: tuple[str, ...]) -> list[int]:
    """Order of a packed operand's outer dims: batch, then m or n, then k (so K runs innermost)."""
    return sorted(range(len(dims)), key=lambda i: _ROLE_ORDER[roles[dims[i]]])


def _inner_perm(dims: tuple[int, ...], roles: tuple[str, ...]) -> list[int]:
    """Order of a packed operand's tile dims: k first, then m before n.

    ``transform.structured.pack`` lays tile dims out in loop order; a
    ``[KU][RM]`` A tile and ``[KU][RN]`` B tile let the micro-kernel read one
    contiguous column of A and row of B per k, and a ``[RM][RN]`` C tile is
    one vector per row.
    """
    order = {"k": 0, "m": 1, "n": 2}
    tiled = sorted(d for d in dims if roles[d] != "batch")
    return sorted(range(len(tiled)), key=lambda i: order[roles[tiled[i]]])


def _retranspose(s: Script, packed: str, index: int, c: CpuGemm) -> str:
    """Permute the pack of operand ``index`` (or the unpack of the result) into micro-kernel order."""
    dims = c.maps[index]
    outer, inner = _outer_perm(dims, c.roles), _inner_perm(dims, c.roles)
    perms = "".join(f" {name} = {perm}" for name, perm in (("outer_perm", outer), ("inner_perm", inner))
                    if perm != sorted(perm))
    if not perms:
        return packed
    kind = "linalg.pack" if index < 2 else "linalg.unpack"
    get = (f"transform.get_producer_of_operand {packed}[{index}]" if index < 2
           else f"transform.get_consumers_of_result {packed}[0]")
    handle, new_packed = s.fresh(), s.fresh()
    s.add(f"{handle} = {get} : ({_GENERIC}) -> (!transform.op<\"{kind}\">)")
    s.add(f"{new_packed}, {s.fresh()}, {s.fresh()} = transform.structured.pack_transpose {handle} "
          f"with_compute_op({packed}){perms} : (!transform.op<\"{kind}\">, {_GENERIC})"
          f" -> ({_GENERIC}, !transform.op<\"linalg.pack\">, !transform.op<\"linalg.unpack\">)")
    return new_packed


def _schedule_packed(s: Script, op: str, c: CpuGemm) -> None:
    """Pack, tile and vectorize one contraction (see :mod:`prism.codegen.cpu`)."""
    ch, roles = c.schedule, c.roles
    sizes = {"batch": 0, "m": ch.RM, "n": ch.RN, "k": ch.KU}
    packed = s.fresh()
    s.add(f"{packed} = transform.structured.pack {op} packed_sizes = {[sizes[r] for r in roles]} "
          f": ({ANY}) -> ({_GENERIC})")
    for index in range(3):
        packed = _retranspose(s, packed, index, c)
    generic = s.fresh()
    s.add(f"{generic} = transform.cast {packed} : {_GENERIC} to {ANY}")
    inner = [0, 0, 0]  # the m, n, k tile dims, which pack appends after the original loops
    block = {"batch": 1, "m": ch.TM // ch.RM, "n": ch.TN // ch.RN}
    k_loop = _tile_nest(s, generic, roles, inner, block, max(ch.TK // ch.KU, 1), {"m": 1, "n": 1}, {"k": 1})
    # The micro-op now has unit outer dims; dropping them leaves a plain
    # (RM, RN, KU) contraction that specializes to linalg.matmul, whose
    # vectorization yields vector.contract (and, later, rank-1 FMA updates).
    s.apply_patterns(k_loop, ["transform.apply_patterns.linalg.fold_unit_extent_dims_via_slices",
                              "transform.apply_patterns.canonicalization"])
    micro, named = s.match_ops(["linalg.generic"], within=k_loop), s.fresh()
    s.add(f"{named} = transform.structured.specialize {micro} : ({ANY}) -> {ANY}")
    s.vectorize(named, named_contraction=True)


def _schedule_unpacked(s: Script, op: str, c: CpuGemm) -> None:
    """Tile and vectorize one contraction in place, with masked vectors at ragged edges."""
    ch, roles = c.schedule, c.roles
    block = {"batch": 1, "m": ch.TM, "n": ch.TN}
    micro = _tile_nest(s, op, roles, [], block, ch.TK, {"m": ch.RM, "n": ch.RN}, {"k": ch.KU}, inner_op=True)
    s.vectorize(micro, [{"batch": 1, "m": ch.RM, "n": ch.RN, "k": ch.KU}[r] for r in roles], named_contraction=True)


def _tile_nest(s: Script, op: str, roles: tuple[str, ...], inner: list[int], block: dict[str, int],
               tk: int, reg: dict[str, int], micro: dict[str, int], inner_op: bool = False) -> str:
    """threads -> K slices -> n panels -> m panels -> K loop around the micro-op.

    Returns the handle of the innermost K loop, or of the micro-op itself when ``inner_op``.
    """
    def per_role(table: dict[str, int]) -> list[int]:
        return [table.get(r, 0) for r in roles] + inner

    op, _ = s.tile_forall(op, per_role(block))
    op, _ = s.tile_for(op, per_role({"k": tk}))
    # n panels outside m panels: the B panel (TK x RN) stays in L1 across the m panels.
    order = list(range(len(roles) + len(inner)))
    m, n = roles.index("m"), roles.index("n")
    order[m], order[n] = order[n], order[m]
    op, _ = s.tile_for(op, per_role(reg), interchange=order if m < n else None)
    op, (k_loop,) = s.tile_for(op, per_role(micro))
    return op if inner_op else k_loop


def _payload_cleanup(s: Script) -> None:
    """Fold what tiling left, then lower packs and unpacks to pad + transpose (and back)."""
    funcs = s.match_ops(["func.func"])
    s.apply_patterns(funcs, ["transform.apply_patterns.tensor.fold_into_pack_and_unpack",
                             "transform.apply_patterns.tensor.fold_tensor_subset_ops_into_vector_transfers",
                             "transform.apply_patterns.canonicalization"])
    s.add(f"transform.apply_cse to {funcs} : {ANY}")
    packs, unpacks = s.fresh(), s.fresh()
    s.add(f'{packs} = transform.structured.match ops{{["linalg.pack"]}} in %root '
          f': ({ANY}) -> !transform.op<"linalg.pack">')
    s.add(f'transform.structured.lower_pack {packs} : (!transform.op<"linalg.pack">) -> (!transform.op<"tensor.pad">, '
          '!transform.op<"tensor.expand_shape">, !transform.op<"linalg.transpose">)')
    s.add(f'{unpacks} = transform.structured.match ops{{["linalg.unpack"]}} in %root '
          f': ({ANY}) -> !transform.op<"linalg.unpack">')
    s.add(f'transform.structured.lower_unpack {unpacks} : (!transform.op<"linalg.unpack">) -> '
          '(!transform.op<"tensor.empty">, !transform.op<"linalg.transpose">, '
          '!transform.op<"tensor.collapse_shape">, !transform.op<"tensor.extract_slice">)')


def gemm_script(gemms: list[CpuGemm]) -> str:
    """The transform script that schedules ``gemms`` (found by their tag: their index)."""
    s = Script()
    for index, c in enumerate(gemms):
        op = s.match_tag(attrs.CPU_CONTRACTION_TAG, index)
        (_schedule_packed if c.schedule.PACK else _schedule_unpacked)(s, op, c)
    _payload_cleanup(s)
    return s.text()


_MAX_TRANSPOSE_TILE = 256  # elements in one vectorized transpose tile: a few registers


def _transpose_tile(op: ir.Operation) -> list[int] | None:
    """Tile sizes that leave a small static 2-D (or 1-D) transpose per tile, or None.

    The packs and unpacks lower to transposes whose innermost input and output
    dims are inner tiles (RM, RN, KU), so a tile of just those two dims is a
    register-sized transpose (or a contiguous copy when they coincide).
    """
    out = ir.RankedTensorType(op.results[0].type)
    perm = list(ir.DenseI64ArrayAttr(op.attributes["permutation"]))
    keep = {out.rank - 1, perm.index(out.rank - 1)}
    if any(out.is_dynamic_dim(d) for d in keep):
        return None
    sizes = [out.get_dim_size(d) if d in keep else 1 for d in range(out.rank)]
    if any(sizes[d] == 1 for d in keep):
        return None  # a copy along one dimension: loops do it, and the f16 vector patterns never settle on it
    volume = 1
    for d in keep:
        volume *= sizes[d]
    return sizes if 0 < volume <= _MAX_TRANSPOSE_TILE and len(keep) < out.rank else None


def tag_transposes(module: ir.Module) -> list[list[int]]:
    """Tag the pack and unpack transposes that can be vectorized; returns their tile sizes."""
    tiles: list[list[int]] = []

    def visit(op: ir.Operation) -> ir.WalkResult:
        if op.name == "linalg.transpose":
            sizes = _transpose_tile(op)
            if sizes is not None:
                op.attributes[attrs.CPU_TRANSPOSE_TAG] = ir.IntegerAttr.get(ir.IntegerType.get_signless(64),
                                                                            len(tiles))
                tiles.append(sizes)
        return ir.WalkResult.ADVANCE

    module.operation.walk(visit)
    return tiles


def transpose_script(tiles: list[list[int]]) -> str:
    """The script that runs each tagged transpose as parallel, vectorized register tiles.

    The outermost dim becomes an scf.forall, so the thread pool may share it among threads.
    """
    s = Script()
    for index, sizes in enumerate(tiles):
        op = s.match_tag(attrs.CPU_TRANSPOSE_TAG, index)
        if sizes[0] == 1:
            op, _ = s.tile_forall(op, [1] + [0] * (len(sizes) - 1))
        op, _ = s.tile_for(op, sizes)
        s.vectorize(op)
    return s.text()


def starts_at_zero(op: ir.Operation) -> bool:
    """Whether the contraction's init (its last operand) is a fill of 0.0."""
    return filled_constant(op.operands[len(op.operands) - 1]) == 0.0


def kernel_plan(c: CpuGemm, name: str, lanes: int, workers: int, copy_in_phase_bytes: int) -> KernelPlan | None:
    """The direct kernel (see :mod:`.kernel`) for ``c``, or None when it takes the transform path.

    The kernel covers f32 contractions laid out as ``A[b, m, k]``,
    ``B[b, k, n]`` and ``C[b, m, n]`` (batch optional): the layout of
    ``linalg.matmul``, ``linalg.batch_matmul`` and the row-major products
    that prism-explore writes. Its decisions are :mod:`prism.kernels.host_gemm`'s; B's copy into panels runs
    in a phase of its own up to ``copy_in_phase_bytes`` of B (:func:`~prism.kernels.host_gemm.pipelines_copy`).
    """
    types = [ir.RankedTensorType(v.type) for v in c.op.operands]
    f32 = len(types) == 3 and all(str(t.element_type) == "f32" for t in types)
    if not host_gemm.direct_layout(f32, [[c.roles[d] for d in dims] for dims in c.maps]):
        return None
    batch = "batch" in c.roles
    ch = c.schedule
    m, n, k = (_static(t, t.rank - back) for t, back in ((types[2], 2), (types[2], 1), (types[0], 1)))
    tiles = host_gemm.plan_tiles({"TM": ch.TM, "TN": ch.TN, "RM": ch.RM, "RN": ch.RN, "PACK": ch.PACK}, m, n, k,
                                 batch, workers, lanes, 4)
    tm, tn, rm, rn, split_k, pack, reuse = (tiles.tm, tiles.tn, tiles.rm, tiles.rn, tiles.split_k, tiles.pack,
                                             tiles.reuse)
    b_bytes = 4 * k * n if k is not None and n is not None else None
    pipelined = host_gemm.pipelines_copy(pack, reuse, batch, b_bytes, copy_in_phase_bytes, k)
    return KernelPlan(name=name, batch=batch, a_type=str(types[0]), b_type=str(types[1]), c_type=str(types[2]),
                      zero_init=starts_at_zero(c.op), tm=tm, tn=tn, tk=max(ch.TK, 1), rm=rm, rn=rn, lanes=lanes,
                      pack=pack, workers=workers, split_k=split_k, reuse_panels=reuse, pipelined=pipelined)


def _static(t: ir.RankedTensorType, dim: int) -> int | None:
    """The size of dimension ``dim`` of ``t``; None when dynamic."""
    size = t.get_dim_size(dim)
    return None if ir.ShapedType.is_dynamic_size(size) else size


def kernel_serves_as_written(c: CpuGemm, plan: KernelPlan) -> bool:
    """Whether the kernel, reading B as given, beats the transform path for ``c``
    (:func:`prism.kernels.host_gemm.serves_as_written`). A prepacked B (a weight bound once) is read in place
    by the kernel whatever M is."""
    c_type = ir.RankedTensorType(c.op.operands[2].type)
    return host_gemm.serves_as_written(_static(c_type, c_type.rank - 2), plan.tm, plan.rm, plan.reuse_panels)
