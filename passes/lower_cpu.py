"""prism-lower-cpu: lower tensor-level linalg programs to the LLVM dialect for the host.

Contractions carrying ``prism.roles`` / ``prism.choice`` (and plain
``linalg.matmul`` / ``linalg.batch_matmul`` without them, with default choice
values) get a data-tiling schedule written in the transform dialect:

1. pack: the op is rewritten over blocked operands, ``A -> [.. M/RM][K/KU][KU][RM]``,
   ``B -> [.. N/RN][K/KU][KU][RN]``, ``C -> [.. M/RM][N/RN][RM][RN]`` (``linalg.pack``
   pads ragged edges, so every micro-tile is full and static); packs and the
   final unpack are lowered to pad + transpose, each transpose runs as an
   scf.forall of register-sized vector tiles, and the unpack writes the result;
2. threads: ``scf.forall`` over ``TM x TN`` blocks of C (and batch), flattened
   into one dimension and run in parallel through the async runtime;
3. cache: a loop over ``TK`` slices of K, then loops over the RN-wide column
   panels and the RM-high row panels of the block;
4. registers: an innermost K loop whose body is an ``RM x RN x KU`` contraction,
   vectorized into KU rank-1 FMA updates; the C accumulator is hoisted out of
   the K loop so that it lives in registers.

With ``PACK = 0`` the same loop nest runs on the unpacked operands, with
masked vectors at ragged edges. Every other op takes the generic path:
bufferization, then loops.

Before::

    %r = linalg.matmul {prism.roles = ["m", "n", "k"],
                        prism.choice = {TM = 96, TN = 256, TK = 256, RM = 6, RN = 16, PACK = 1}}
           ins(%a, %b : tensor<?x1024xf32>, tensor<1024x64xf32>) outs(%c : tensor<?x64xf32>) ...

After::

    llvm.func @mm(...) attributes {llvm.emit_c_interface, prism.signature = (tensor<?x1024xf32>, ...) -> ...}
    llvm.func @_mlir_ciface_mm(...)  // plus async-runtime calls and a vectorized micro-kernel

Each public function keeps its tensor-level type in the ``prism.signature``
attribute (a ``TypeAttr``), which :mod:`prism.runtime` reads.
"""

from __future__ import annotations

from dataclasses import dataclass

from mlir import ir, passmanager
from mlir.dialects import arith, scf
from mlir.dialects.transform import interpreter

from prism.errors import PassFailed, UnsupportedOp
from prism.family import CHOICE_ATTR, ROLES_ATTR, analyze_contraction, map_dims
from prism.passbase import Pass, PassContext

SIGNATURE_ATTR = "prism.signature"
_WRITABLE_ATTR = "bufferization.writable"
_ID_ATTR = "prism.lower_id"
_ROLES = ("batch", "m", "n", "k")
_CONTRACTIONS = ("linalg.matmul", "linalg.batch_matmul", "linalg.generic")


@dataclass(frozen=True)
class Choice:
    """The schedule parameters of one contraction (see the module docstring).

    ``KU`` (an extension of the choice contract) is the K depth of one
    micro-kernel step: the packed K tile, unrolled into KU rank-1 updates.
    """

    TM: int = 96
    TN: int = 256
    TK: int = 256
    RM: int = 6
    RN: int = 16
    PACK: int = 1
    KU: int = 4

    @staticmethod
    def from_attr(attr: ir.Attribute | None, loc: str) -> Choice:
        """Read a ``prism.choice`` dictionary; missing keys keep their defaults."""
        if attr is None:
            return Choice()
        if not isinstance(attr, ir.DictAttr):
            raise UnsupportedOp(f"{CHOICE_ATTR} must be a dictionary, got {attr}", location=loc)
        values: dict[str, int] = {}
        for key in Choice.__dataclass_fields__:
            if key in attr:
                value = attr[key]
                if not isinstance(value, ir.IntegerAttr) or value.value < 0:
                    raise UnsupportedOp(f"{CHOICE_ATTR}.{key} must be a non-negative integer", location=loc)
                values[key] = value.value
        return Choice(**values).normalized()

    def normalized(self) -> Choice:
        """Clamp to usable values: register blocks at least 1, cache tiles multiples of them."""
        rm, rn = max(self.RM, 1), max(self.RN, 1)
        return Choice(
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
class Contraction:
    """A contraction to schedule: its roles per loop and the operand maps as dim positions."""

    op: ir.Operation
    roles: tuple[str, ...]
    maps: tuple[tuple[int, ...], ...]  # per operand (A, B, C): loop dim of each tensor dim
    choice: Choice


def _read_roles(op: ir.Operation, loc: str) -> tuple[str, ...]:
    attr = op.attributes[ROLES_ATTR]
    if not isinstance(attr, ir.ArrayAttr) or not all(isinstance(r, ir.StringAttr) for r in attr):
        raise UnsupportedOp(f"{ROLES_ATTR} must be an array of strings", location=loc)
    roles = tuple(ir.StringAttr(r).value for r in attr)
    if any(r not in _ROLES for r in roles):
        raise UnsupportedOp(f"{ROLES_ATTR} entries must be one of {_ROLES}, got {list(roles)}", location=loc)
    return roles


def find_contraction(op: ir.Operation, ctx: PassContext) -> Contraction | None:
    """The schedulable contraction ``op`` is, or None when it takes the generic path.

    The roles come from linalg's own contraction analysis (shared with
    prism-lift); a ``prism.roles`` attribute must agree with them.
    """
    if op.name not in _CONTRACTIONS:
        return None
    tuned = ROLES_ATTR in op.attributes
    if not tuned and op.name == "linalg.generic":
        return None  # an untuned generic may be anything; the generic path is always right
    loc = str(op.location)
    analysis = analyze_contraction(op)
    if analysis is None:
        if tuned:
            ctx.remark(loc, "not a contraction with projected-permutation maps; using the generic path")
        return None
    roles = _read_roles(op, loc) if tuned else analysis.roles
    if len(roles) != len(analysis.roles):
        raise UnsupportedOp(f"{ROLES_ATTR} has {len(roles)} entries for {len(analysis.roles)} loops", location=loc)
    if roles != analysis.roles or [roles.count(r) for r in ("m", "n", "k")] != [1, 1, 1]:
        ctx.remark(loc, f"roles {list(roles)} do not fit the operand maps; using the generic path")
        return None
    maps = tuple(tuple(map_dims(ir.AffineMapAttr(m).value)) for m in ir.ArrayAttr(op.attributes["indexing_maps"]))
    choice = Choice.from_attr(op.attributes[CHOICE_ATTR] if CHOICE_ATTR in op.attributes else None, loc)
    return Contraction(op, roles, maps, choice)


_ROLE_ORDER = {"batch": 0, "m": 1, "n": 1, "k": 2}


class _Script:
    """Builds the text of one transform named sequence, handle by handle."""

    def __init__(self) -> None:
        self.lines: list[str] = []
        self._count = 0

    def fresh(self) -> str:
        self._count += 1
        return f"%h{self._count}"

    def emit(self, line: str) -> None:
        self.lines.append("    " + line)

    def tile_for(self, op: str, sizes: list[int], interchange: list[int] | None = None) -> tuple[str, list[str]]:
        """Tile with scf.for loops; returns the tiled op and the loops, outermost first."""
        tiled, loops = self.fresh(), [self.fresh() for s in sizes if s]
        extra = f" interchange = {interchange}" if interchange else ""
        types = ", ".join(["!transform.any_op"] * (1 + len(loops)))
        self.emit(f"{', '.join([tiled, *loops])} = transform.structured.tile_using_for {op} "
                  f"tile_sizes {sizes}{extra} : (!transform.any_op) -> ({types})")
        return tiled, loops

    def tile_forall(self, op: str, sizes: list[int]) -> str:
        tiled, loop = self.fresh(), self.fresh()
        self.emit(f"{tiled}, {loop} = transform.structured.tile_using_forall {op} tile_sizes {sizes} "
                  f": (!transform.any_op) -> (!transform.any_op, !transform.any_op)")
        return tiled

    def text(self) -> str:
        body = "\n".join(self.lines)
        return ("module attributes {transform.with_named_sequence} {\n"
                "  transform.named_sequence @__transform_main(%root: !transform.any_op {transform.readonly}) {\n"
                f"{body}\n    transform.yield\n  }}\n}}\n")


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


def _retranspose(s: _Script, packed: str, index: int, c: Contraction) -> str:
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
    s.emit(f"{handle} = {get} : (!transform.op<\"linalg.generic\">) -> (!transform.op<\"{kind}\">)")
    s.emit(f"{new_packed}, {s.fresh()}, {s.fresh()} = transform.structured.pack_transpose {handle} "
           f"with_compute_op({packed}){perms} : (!transform.op<\"{kind}\">, !transform.op<\"linalg.generic\">)"
           f" -> (!transform.op<\"linalg.generic\">, !transform.op<\"linalg.pack\">, !transform.op<\"linalg.unpack\">)")
    return new_packed


def _schedule_packed(s: _Script, op: str, c: Contraction) -> None:
    """Pack, tile and vectorize one contraction (see the module docstring)."""
    ch, roles = c.choice, c.roles
    sizes = {"batch": 0, "m": ch.RM, "n": ch.RN, "k": ch.KU}
    packed = s.fresh()
    s.emit(f"{packed} = transform.structured.pack {op} packed_sizes = {[sizes[r] for r in roles]} "
           f": (!transform.any_op) -> (!transform.op<\"linalg.generic\">)")
    for index in range(3):
        packed = _retranspose(s, packed, index, c)
    generic = s.fresh()
    s.emit(f"{generic} = transform.cast {packed} : !transform.op<\"linalg.generic\"> to !transform.any_op")
    inner = [0, 0, 0]  # the m, n, k tile dims, which pack appends after the original loops
    block = {"batch": 1, "m": ch.TM // ch.RM, "n": ch.TN // ch.RN}
    k_loop = _tile_nest(s, generic, roles, inner, block, max(ch.TK // ch.KU, 1), {"m": 1, "n": 1}, {"k": 1})
    # The micro-op now has unit outer dims; dropping them leaves a plain
    # (RM, RN, KU) contraction that specializes to linalg.matmul, whose
    # vectorization yields vector.contract (and, later, rank-1 FMA updates).
    s.emit(f"transform.apply_patterns to {k_loop} {{\n"
           f"      transform.apply_patterns.linalg.fold_unit_extent_dims_via_slices\n"
           f"      transform.apply_patterns.canonicalization\n    }} : !transform.any_op")
    micro, named = s.fresh(), s.fresh()
    s.emit(f"{micro} = transform.structured.match ops{{[\"linalg.generic\"]}} in {k_loop} "
           f": (!transform.any_op) -> !transform.any_op")
    s.emit(f"{named} = transform.structured.specialize {micro} : (!transform.any_op) -> !transform.any_op")
    s.emit(f"transform.structured.vectorize {named} {{create_named_contraction}} : !transform.any_op")


def _schedule_unpacked(s: _Script, op: str, c: Contraction) -> None:
    """Tile and vectorize one contraction in place, with masked vectors at ragged edges."""
    ch, roles = c.choice, c.roles
    block = {"batch": 1, "m": ch.TM, "n": ch.TN}
    micro = _tile_nest(s, op, roles, [], block, ch.TK, {"m": ch.RM, "n": ch.RN}, {"k": ch.KU}, inner_op=True)
    vector = [{"batch": 1, "m": ch.RM, "n": ch.RN, "k": ch.KU}[r] for r in roles]
    s.emit(f"transform.structured.vectorize {micro} vector_sizes {vector} {{create_named_contraction}} "
           f": !transform.any_op")


def _tile_nest(s: _Script, op: str, roles: tuple[str, ...], inner: list[int], block: dict[str, int],
               tk: int, reg: dict[str, int], micro: dict[str, int], inner_op: bool = False) -> str:
    """threads -> K slices -> n panels -> m panels -> K loop around the micro-op.

    Returns the handle of the innermost K loop, or of the micro-op itself when ``inner_op``.
    """
    def per_role(table: dict[str, int]) -> list[int]:
        return [table.get(r, 0) for r in roles] + inner

    op = s.tile_forall(op, per_role(block))
    op, _ = s.tile_for(op, per_role({"k": tk}))
    # n panels outside m panels: the B panel (TK x RN) stays in L1 across the m panels.
    order = list(range(len(roles) + len(inner)))
    m, n = roles.index("m"), roles.index("n")
    order[m], order[n] = order[n], order[m]
    op, _ = s.tile_for(op, per_role(reg), interchange=order if m < n else None)
    op, (k_loop,) = s.tile_for(op, per_role(micro))
    return op if inner_op else k_loop


_PAYLOAD_CLEANUP = """\
    %funcs = transform.structured.match ops{["func.func"]} in %root : (!transform.any_op) -> !transform.any_op
    transform.apply_patterns to %funcs {
      transform.apply_patterns.tensor.fold_into_pack_and_unpack
      transform.apply_patterns.tensor.fold_tensor_subset_ops_into_vector_transfers
      transform.apply_patterns.canonicalization
    } : !transform.any_op
    transform.apply_cse to %funcs : !transform.any_op
    %packs = transform.structured.match ops{["linalg.pack"]} in %root
        : (!transform.any_op) -> !transform.op<"linalg.pack">
    transform.structured.lower_pack %packs : (!transform.op<"linalg.pack">)
        -> (!transform.op<"tensor.pad">, !transform.op<"tensor.expand_shape">, !transform.op<"linalg.transpose">)
    %unpacks = transform.structured.match ops{["linalg.unpack"]} in %root
        : (!transform.any_op) -> !transform.op<"linalg.unpack">
    transform.structured.lower_unpack %unpacks : (!transform.op<"linalg.unpack">)
        -> (!transform.op<"tensor.empty">, !transform.op<"linalg.transpose">,
            !transform.op<"tensor.collapse_shape">, !transform.op<"tensor.extract_slice">)"""

# Runs on buffers: hoist C tiles that subset hoisting on tensors missed (the
# masked, unpacked path), then lower vectors to the 1-D form that
# convert-vector-to-llvm expects.
_VECTOR_SCRIPT = """\
module attributes {transform.with_named_sequence} {
  transform.named_sequence @__transform_main(%root: !transform.any_op {transform.readonly}) {
    %all = transform.structured.match ops{["func.func"]} in %root : (!transform.any_op) -> !transform.any_op
    %funcs = transform.structured.hoist_redundant_vector_transfers %all : (!transform.any_op) -> !transform.any_op
    transform.apply_patterns to %funcs {
      transform.apply_patterns.vector.lower_contraction lowering_strategy = "outerproduct"
      transform.apply_patterns.vector.lower_masked_transfers
      transform.apply_patterns.vector.lower_masks
      transform.apply_patterns.vector.rank_reducing_subview_patterns
      transform.apply_patterns.canonicalization
    } : !transform.any_op
    transform.apply_patterns to %funcs {
      transform.apply_patterns.vector.transfer_permutation_patterns
      transform.apply_patterns.vector.lower_multi_reduction lowering_strategy = "innerparallel"
      transform.apply_patterns.vector.split_transfer_full_partial split_transfer_strategy = "linalg-copy"
      transform.apply_patterns.vector.transfer_to_scf max_transfer_rank = 1 full_unroll = true
      transform.apply_patterns.vector.lower_transfer max_transfer_rank = 1
      transform.apply_patterns.vector.lower_shape_cast
      transform.apply_patterns.vector.lower_transpose lowering_strategy = "shuffle_1d"
      transform.apply_patterns.vector.lower_outerproduct
      transform.apply_patterns.vector.lower_broadcast
      transform.apply_patterns.canonicalization
    } : !transform.any_op
    transform.yield
  }
}
"""

# Subset hoisting carries each C micro-tile through its K loop as a vector, i.e. in registers.
# Canonicalizing after it folds the identity C slices it leaves behind, which
# bufferization would otherwise copy once per block.
_BUFFERIZE = ("builtin.module(canonicalize, cse, loop-invariant-subset-hoisting, canonicalize, cse, "
              "one-shot-bufferize{bufferize-function-boundaries "
              "function-boundary-type-conversion=identity-layout-map}, canonicalize, cse, loop-invariant-code-motion)")


# scf.forall becomes scf.parallel here, and each parallel loop is then made
# one-dimensional (see _flatten_parallel_loops) before async-parallel-for runs.
_FORALL_TO_PARALLEL = "builtin.module(func.func(scf-forall-to-parallel))"


def _to_llvm_pipeline(threads: int) -> str:
    """Buffers and vectors to LLVM; scf.parallel becomes async-runtime tasks on ``threads`` workers.

    One iteration of a parallel loop is a whole ``TM x TN`` block (or a slab of
    a pack), so ``min-task-size=1`` lets async-parallel-for share even a few
    dozen of them among the workers; with its default of 1000 they would all
    run as one task.
    """
    return ("builtin.module("
            "ownership-based-buffer-deallocation, canonicalize, buffer-deallocation-simplification, "
            "bufferization-lower-deallocations, convert-bufferization-to-memref, "
            "func.func(convert-linalg-to-loops), "
            f"async-parallel-for{{num-workers={threads} async-dispatch=false min-task-size=1}}, "
            "async-to-async-runtime, async-runtime-ref-counting, async-runtime-ref-counting-opt, "
            "convert-async-to-llvm, "
            "func.func(convert-vector-to-scf{full-unroll=true}), "
            "expand-strided-metadata, lower-affine, convert-scf-to-cf, canonicalize, "
            "convert-vector-to-llvm, finalize-memref-to-llvm, convert-math-to-llvm, convert-arith-to-llvm, "
            "convert-index-to-llvm, convert-cf-to-llvm, convert-func-to-llvm, convert-ub-to-llvm, "
            "reconcile-unrealized-casts, canonicalize, cse)")


def _flatten_parallel_loops(module: ir.Module) -> None:
    """Rewrite every multi-dimensional ``scf.parallel`` as a one-dimensional one.

    async-parallel-for runs some blocks of a multi-dimensional loop more than
    once: when the inner trip counts are static it rounds the block size up to
    a multiple of them but keeps the block count of the unrounded size, and
    the surplus blocks wrap around to the start of the outer dimension. The
    contraction blocks accumulate into C, so a block run twice adds its
    product twice (and races with its first run). A flat loop avoids that
    path; the row-major order keeps neighbouring blocks in one task.
    """
    loops: list[ir.Operation] = []

    def visit(op: ir.Operation) -> ir.WalkResult:
        if op.name == "scf.parallel" and len(op.regions[0].blocks[0].arguments) > 1 and not op.results:
            loops.append(op)
        return ir.WalkResult.ADVANCE

    module.operation.walk(visit)
    for op in loops:
        _flatten(op)


def _flatten(op: ir.Operation) -> None:
    """Replace ``scf.parallel`` ``op`` (no reductions) by a loop over its linearized iteration space."""
    body = op.regions[0].blocks[0]
    rank = len(body.arguments)
    lbs, ubs, steps = (list(op.operands[i * rank:(i + 1) * rank]) for i in range(3))
    index = ir.IndexType.get()
    with ir.InsertionPoint(op), op.location:
        zero, one = (arith.ConstantOp(index, v).result for v in (0, 1))
        counts = [arith.ceildivsi(arith.subi(ub, lb), step) for lb, ub, step in zip(lbs, ubs, steps, strict=True)]
        total = counts[0]
        for count in counts[1:]:
            total = arith.muli(total, count)
        flat = scf.ParallelOp([], [zero], [total], [one], [])
        block = flat.regions[0].blocks.append(index)
    with ir.InsertionPoint(block), op.location:
        coords = _delinearize(block.arguments[0], counts)
        for arg, lb, step, coord in zip(body.arguments, lbs, steps, coords, strict=True):
            arg.replace_all_uses_with(arith.addi(lb, arith.muli(coord, step)))
    anchor = block.operations[len(block.operations) - 1]
    for inner in list(body.operations):  # the old body, scf.reduce terminator included
        inner.move_after(anchor)
        anchor = inner
    op.erase()


def _delinearize(flat: ir.Value, counts: list[ir.Value]) -> list[ir.Value]:
    """Row-major coordinates of ``flat`` in a space of trip ``counts`` (innermost last)."""
    coords: list[ir.Value] = []
    for count in reversed(counts[1:]):
        coords.append(arith.remui(flat, count))
        flat = arith.divui(flat, count)
    coords.append(flat)
    return coords[::-1]


def _erase_self_copies(module: ir.Module) -> None:
    """Drop ``memref.copy %x, %x`` left by in-place slices; they would pin C in memory."""
    copies: list[ir.Operation] = []

    def visit(op: ir.Operation) -> ir.WalkResult:
        if op.name == "memref.copy" and op.operands[0] == op.operands[1]:
            copies.append(op)
        return ir.WalkResult.ADVANCE

    module.operation.walk(visit)
    for op in copies:
        op.erase()


def _forward_copies_into_empty(module: ir.Module) -> None:
    """Replace ``linalg.copy`` into a ``tensor.empty`` by its source (the unpack leaves one).

    On tensors such a copy is the identity; bufferization would otherwise
    materialize it as one more full-size buffer and pass over the result.
    """
    copies: list[ir.Operation] = []

    def visit(op: ir.Operation) -> ir.WalkResult:
        if op.name == "linalg.copy" and len(op.results) == 1 and op.operands[0].type == op.results[0].type:
            init = op.operands[1].owner
            if isinstance(init, ir.OpView) and init.operation.name == "tensor.empty":
                copies.append(op)
        return ir.WalkResult.ADVANCE

    module.operation.walk(visit)
    for op in copies:
        op.results[0].replace_all_uses_with(op.operands[0])
        op.erase()


def _functions(module: ir.Module) -> list[ir.Operation]:
    return [op.operation for op in module.body.operations
            if op.operation.name == "func.func" and len(op.operation.regions[0].blocks) > 0]


def _record_signatures(module: ir.Module) -> None:
    """Keep each defined function's tensor-level type, ask for its C interface, and make its tensors read-only.

    Tensors are values, so a function never changes its arguments; marking
    them non-writable makes bufferization copy before any in-place update
    instead of writing into the caller's buffer (which the runtime passes
    without a copy).
    """
    for func in _functions(module):
        func.attributes[SIGNATURE_ATTR] = func.attributes["function_type"]
        func.attributes["llvm.emit_c_interface"] = ir.UnitAttr.get()
        inputs = ir.FunctionType(ir.TypeAttr(func.attributes["function_type"]).value).inputs
        old = list(ir.ArrayAttr(func.attributes["arg_attrs"])) if "arg_attrs" in func.attributes else []
        attrs = []
        for index, type_ in enumerate(inputs):
            entries = {n.name: n.attr for n in ir.DictAttr(old[index])} if index < len(old) else {}
            if isinstance(type_, ir.RankedTensorType):
                entries[_WRITABLE_ATTR] = ir.BoolAttr.get(False)
            attrs.append(ir.DictAttr.get(entries))
        func.attributes["arg_attrs"] = ir.ArrayAttr.get(attrs)


def _collect(module: ir.Module, ctx: PassContext) -> list[Contraction]:
    candidates: list[ir.Operation] = []

    def visit(op: ir.Operation) -> ir.WalkResult:
        if op.name in _CONTRACTIONS:
            candidates.append(op)
        return ir.WalkResult.ADVANCE

    # Exceptions raised inside a walk callback lose their type, so inspect afterwards.
    module.operation.walk(visit)
    found = (find_contraction(op, ctx) for op in candidates)
    return [c for c in found if c is not None]


def schedule_text(contractions: list[Contraction]) -> str:
    """The transform script that schedules ``contractions`` (tagged with their index)."""
    s = _Script()
    for index, c in enumerate(contractions):
        op = s.fresh()
        s.emit(f"{op} = transform.structured.match attributes{{{_ID_ATTR} = {index} : i64}} in %root "
               f": (!transform.any_op) -> !transform.any_op")
        (_schedule_packed if c.choice.PACK else _schedule_unpacked)(s, op, c)
    s.lines.append(_PAYLOAD_CLEANUP)
    return s.text()


_TRANSPOSE_ATTR = "prism.transpose_id"
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
    volume = 1
    for d in keep:
        volume *= sizes[d]
    return sizes if volume <= _MAX_TRANSPOSE_TILE and len(keep) < out.rank else None


def _tag_transposes(module: ir.Module) -> list[list[int]]:
    """Tag the pack and unpack transposes that can be vectorized; returns their tile sizes."""
    tiles: list[list[int]] = []

    def visit(op: ir.Operation) -> ir.WalkResult:
        if op.name == "linalg.transpose":
            sizes = _transpose_tile(op)
            if sizes is not None:
                op.attributes[_TRANSPOSE_ATTR] = ir.IntegerAttr.get(ir.IntegerType.get_signless(64), len(tiles))
                tiles.append(sizes)
        return ir.WalkResult.ADVANCE

    module.operation.walk(visit)
    return tiles


def transpose_text(tiles: list[list[int]]) -> str:
    """The script that runs each tagged transpose as parallel, vectorized register tiles.

    The outermost dim becomes an scf.forall, so the async runtime may share it among threads.
    """
    s = _Script()
    for index, sizes in enumerate(tiles):
        op = s.fresh()
        s.emit(f"{op} = transform.structured.match attributes{{{_TRANSPOSE_ATTR} = {index} : i64}} in %root "
               f": (!transform.any_op) -> !transform.any_op")
        if sizes[0] == 1:
            op = s.tile_forall(op, [1] + [0] * (len(sizes) - 1))
        op, _ = s.tile_for(op, sizes)
        s.emit(f"transform.structured.vectorize {op} : !transform.any_op")
    return s.text()


def _apply_script(module: ir.Module, text: str, stage: str) -> None:
    try:
        script = ir.Module.parse(text, module.context)
        interpreter.apply_named_sequence(module.operation, script.body.operations[0], script)
    except (ir.MLIRError, ValueError) as e:  # the interpreter reports failure as ValueError
        raise PassFailed(f"prism-lower-cpu: {stage} failed: {e}") from None


def _run_pipeline(module: ir.Module, pipeline: str, stage: str) -> None:
    try:
        passmanager.PassManager.parse(pipeline, module.context).run(module.operation)
    except ir.MLIRError as e:
        raise PassFailed(f"prism-lower-cpu: {stage} failed: {e}", notes=[pipeline]) from None


@dataclass(frozen=True)
class LowerCpuPass(Pass):
    """Lower tensor-level linalg to the LLVM dialect for the host CPU, ready for ExecutionEngine.

    Contractions get the pack / tile / register-block / vectorize schedule of
    the module docstring; everything else lowers through loops.

    Before::

        func.func @mm(%a: tensor<?x64xf32>, %b: tensor<64x32xf32>) -> tensor<?x32xf32> {
          ... linalg.matmul {prism.roles = ["m", "n", "k"], prism.choice = {RM = 6, RN = 16}} ...
        }

    After::

        llvm.func @mm(...) attributes {llvm.emit_c_interface, prism.signature = (tensor<?x64xf32>,
                      tensor<64x32xf32>) -> tensor<?x32xf32>} { ... vector<16xf32> fma ... }
    """

    NAME = "prism-lower-cpu"
    SUMMARY = "Pack, tile, register-block and vectorize for the host CPU, then lower to LLVM"
    LOWERS = True

    threads: int = 2

    def run(self, module: ir.Module, ctx: PassContext) -> None:
        if self.threads < 1:
            raise PassFailed(f"{self.NAME}: threads must be at least 1, got {self.threads}")
        _record_signatures(module)
        contractions = _collect(module, ctx)
        for index, c in enumerate(contractions):
            c.op.attributes[_ID_ATTR] = ir.IntegerAttr.get(ir.IntegerType.get_signless(64), index)
            ctx.progress(f"{self.NAME}: {c.op.name} at {c.op.location}: {c.choice}")
        _apply_script(module, schedule_text(contractions), "tiling and vectorization")
        _forward_copies_into_empty(module)
        tiles = _tag_transposes(module)
        if tiles:
            _apply_script(module, transpose_text(tiles), "pack vectorization")
        _run_pipeline(module, _BUFFERIZE, "bufferization")
        _erase_self_copies(module)
        _apply_script(module, _VECTOR_SCRIPT, "vector lowering")
        _run_pipeline(module, _FORALL_TO_PARALLEL, "conversion to parallel loops")
        _flatten_parallel_loops(module)
        _run_pipeline(module, _to_llvm_pipeline(self.threads), "conversion to LLVM")
        _check_lowered(module)


def _check_lowered(module: ir.Module) -> None:
    """Fail here, with names, rather than later inside the JIT on a half-lowered module."""
    leftovers: set[str] = set()

    def visit(op: ir.Operation) -> ir.WalkResult:
        if not op.name.startswith("llvm.") and op.name != "builtin.module":
            leftovers.add(op.name)
        return ir.WalkResult.ADVANCE

    module.operation.walk(visit)
    if leftovers:
        raise PassFailed(f"prism-lower-cpu: ops left after lowering to LLVM: {sorted(leftovers)}")
