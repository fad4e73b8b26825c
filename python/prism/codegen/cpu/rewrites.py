"""The host lowering's IR fix-ups and upstream pipelines, between the transform scripts.

Each function rewrites the module in place, through the Python API: no
printing and reparsing.
"""

from __future__ import annotations

from mlir import ir
from mlir.dialects import arith, scf

from prism.codegen.cpu.kernel import copy_text
from prism.codegen.cpu.text import inline_function
from prism.codegen.transform import ANY, Script
from prism.codegen.upstream import run_passes
from prism.infra import attrs
from prism.infra.errors import PassFailed, UnsupportedOp
from prism.infra.ir import iter_ops

_WRITABLE_ATTR = "bufferization.writable"


def vector_script() -> str:
    """On buffers: hoist C tiles that subset hoisting on tensors missed (the masked, unpacked path), then
    lower vectors to the 1-D form that convert-vector-to-llvm expects."""
    s = Script()
    found, funcs = s.match_ops(["func.func"]), s.fresh()
    s.add(f"{funcs} = transform.structured.hoist_redundant_vector_transfers {found} : ({ANY}) -> {ANY}")
    s.apply_patterns(funcs, [
        'transform.apply_patterns.vector.lower_contraction lowering_strategy = "outerproduct"',
        "transform.apply_patterns.vector.lower_masked_transfers",
        "transform.apply_patterns.vector.lower_masks",
        "transform.apply_patterns.vector.rank_reducing_subview_patterns",
        "transform.apply_patterns.canonicalization"])
    s.apply_patterns(funcs, [
        "transform.apply_patterns.vector.transfer_permutation_patterns",
        'transform.apply_patterns.vector.lower_multi_reduction lowering_strategy = "innerparallel"',
        'transform.apply_patterns.vector.split_transfer_full_partial split_transfer_strategy = "linalg-copy"',
        "transform.apply_patterns.vector.transfer_to_scf max_transfer_rank = 1 full_unroll = true",
        "transform.apply_patterns.vector.lower_transfer max_transfer_rank = 1",
        "transform.apply_patterns.vector.lower_shape_cast",
        'transform.apply_patterns.vector.lower_transpose lowering_strategy = "shuffle_1d"',
        "transform.apply_patterns.vector.lower_outerproduct",
        "transform.apply_patterns.vector.lower_broadcast",
        "transform.apply_patterns.canonicalization"])
    return s.text()


# Subset hoisting carries each C micro-tile through its K loop as a vector, i.e. in registers.
# Canonicalizing after it folds the identity C slices it leaves behind, which
# bufferization would otherwise copy once per block.
BUFFERIZE = ("builtin.module(canonicalize, cse, loop-invariant-subset-hoisting, canonicalize, cse, "
              "one-shot-bufferize{bufferize-function-boundaries "
              "function-boundary-type-conversion=identity-layout-map}, canonicalize, cse, loop-invariant-code-motion)")


# The program's own calls, inlined without canonicalizing (the unused private callees go with them): a tensor
# returned across a call would make deallocation pass ownership flags, i1 buffers the host cannot hold.
INLINE = 'builtin.module(inline{default-pipeline=""}, symbol-dce)'


def inline_calls(module: ir.Module) -> None:
    """Inline every ``func.call`` of the module (see INLINE); a module without calls is left as it is."""
    if any(op.name == "func.call" for op in iter_ops(module)):
        run_passes(module, INLINE, "inlining of calls")


# scf.forall becomes scf.parallel here, and each parallel loop is then made
# one-dimensional (see flatten_parallel_loops), the form the thread pool's tasks take (see .tasks).
FORALL_TO_PARALLEL = "builtin.module(func.func(scf-forall-to-parallel))"


# Deallocation of every buffer, and the generic path's loops: after these, the module holds every
# memory access that the conversion to LLVM will see.
DEALLOCATE = ("builtin.module(ownership-based-buffer-deallocation, canonicalize, buffer-deallocation-simplification, "
              "bufferization-lower-deallocations, convert-bufferization-to-memref, func.func(convert-linalg-to-loops))")


# Buffers and vectors to LLVM (parallel loops left in place run in order, as scf.for).
TO_LLVM = ("builtin.module("
           "func.func(convert-vector-to-scf{full-unroll=true}), "
           "expand-strided-metadata, lower-affine, convert-scf-to-cf, canonicalize, "
           "convert-vector-to-llvm, finalize-memref-to-llvm, convert-math-to-llvm, convert-arith-to-llvm, "
           "convert-index-to-llvm, convert-cf-to-llvm, convert-func-to-llvm, convert-ub-to-llvm, "
           "reconcile-unrealized-casts, canonicalize, cse)")


def check_byte_elements(module: ir.Module) -> None:
    """Refuse buffers of sub-byte integers (i1, i4), which this MLIR's memref-to-LLVM conversion aborts on.

    Boolean tensors of the program, and the ownership flags that deallocating
    buffers returned from loops needs, are both such buffers.
    """
    for op in iter_ops(module):
        for value in [*op.operands, *op.results]:
            element = ir.MemRefType(value.type).element_type if isinstance(value.type, ir.MemRefType) else None
            if isinstance(element, ir.IntegerType) and element.width < 8:
                raise UnsupportedOp(f"'{op.name}' stores {value.type}: the host lowering has no buffers of "
                                    f"{element} (tensors of booleans or other sub-byte integers, or buffers "
                                    f"returned from loops); hold such values in i8 tensors instead (arith.extui "
                                    f"or arith.extsi to i8, arith.trunci back to {element} inside the generic)",
                                    location=str(op.location))


def flatten_parallel_loops(module: ir.Module) -> None:
    """Rewrite every multi-dimensional ``scf.parallel`` as a one-dimensional one.

    The thread pool runs one-dimensional loops (see :mod:`.tasks`); chunks of
    the flat loop, in row-major order, keep neighbouring blocks on one thread.
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


def erase_self_copies(module: ir.Module) -> None:
    """Drop ``memref.copy %x, %x`` left by in-place slices; they would pin C in memory."""
    copies: list[ir.Operation] = []

    def visit(op: ir.Operation) -> ir.WalkResult:
        if op.name == "memref.copy" and op.operands[0] == op.operands[1]:
            copies.append(op)
        return ir.WalkResult.ADVANCE

    module.operation.walk(visit)
    for op in copies:
        op.erase()


def vectorize_copies(module: ir.Module, vector_bytes: int) -> None:
    """Replace each rank-2 ``memref.copy`` with unit inner strides by parallel vector loops (see ``copy_text``)."""
    copies: list[ir.Operation] = []

    def visit(op: ir.Operation) -> ir.WalkResult:
        if op.name == "memref.copy" and all(_copyable(v.type) for v in op.operands):
            copies.append(op)
        return ir.WalkResult.ADVANCE

    module.operation.walk(visit)
    for op in copies:
        source, target = (str(v.type) for v in op.operands)
        element = ir.MemRefType(op.operands[0].type).element_type
        lanes = max(vector_bytes * 8 // element.width, 1)
        inline_function(op, copy_text(source, target, lanes), list(op.operands))


def _copyable(t: ir.Type) -> bool:
    """A rank-2 memref of 8- to 64-bit numbers whose rows are contiguous."""
    if not isinstance(t, ir.MemRefType) or t.rank != 2:
        return False
    element = t.element_type
    if not isinstance(element, ir.FloatType | ir.IntegerType) or element.width not in (8, 16, 32, 64):
        return False
    strides, _ = t.get_strides_and_offset()
    return strides[-1] == 1


def forward_copies_into_empty(module: ir.Module) -> None:
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


def record_signatures(module: ir.Module) -> None:
    """Keep each defined function's tensor-level type, ask for its C interface, and make its tensors read-only.

    Tensors are values, so a function never changes its arguments; marking
    them non-writable makes bufferization copy before any in-place update
    instead of writing into the caller's buffer (which the runtime passes
    without a copy).
    """
    for func in _functions(module):
        func.attributes[attrs.SIGNATURE] = func.attributes["function_type"]
        func.attributes["llvm.emit_c_interface"] = ir.UnitAttr.get()
        inputs = ir.FunctionType(ir.TypeAttr(func.attributes["function_type"]).value).inputs
        old = list(ir.ArrayAttr(func.attributes["arg_attrs"])) if "arg_attrs" in func.attributes else []
        arg_attrs = []
        for index, type_ in enumerate(inputs):
            entries = {n.name: n.attr for n in ir.DictAttr(old[index])} if index < len(old) else {}
            if isinstance(type_, ir.RankedTensorType):
                entries[_WRITABLE_ATTR] = ir.BoolAttr.get(False)
            arg_attrs.append(ir.DictAttr.get(entries))
        func.attributes["arg_attrs"] = ir.ArrayAttr.get(arg_attrs)


def check_lowered(module: ir.Module) -> None:
    """Fail here, with names, rather than later inside the JIT on a half-lowered module."""
    leftovers: set[str] = set()

    def visit(op: ir.Operation) -> ir.WalkResult:
        if not op.name.startswith("llvm.") and op.name != "builtin.module":
            leftovers.add(op.name)
        return ir.WalkResult.ADVANCE

    module.operation.walk(visit)
    if leftovers:
        raise PassFailed(f"ops left after lowering to LLVM: {sorted(leftovers)}")
