"""The host lowering's IR fix-ups and upstream pipelines, between the transform scripts.

Each function rewrites the module in place, through the Python API: no
printing and reparsing.
"""

from __future__ import annotations

import math

from mlir import ir
from mlir.dialects import arith, scf
from mlir.dialects import math as math_ops

from prism.codegen.checks import reserved_name_message
from prism.codegen.cpu.kernel import copy_text
from prism.codegen.cpu.text import inline_function
from prism.codegen.transform import ANY, Script
from prism.codegen.upstream import run_passes
from prism.infra import attrs
from prism.infra.errors import UnsupportedOp
from prism.infra.ir import defined_functions, iter_ops

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


def split_shared_inits(module: ir.Module) -> None:
    """Give each op after the first that writes into one ``tensor.empty`` an allocation of its own
    (``bufferization.alloc_tensor``, which CSE does not merge back).

    A kernel reads its inputs as buffers, and CSE merges two kernels' reads of one tensor into the first one's:
    bufferization then takes the tensor as last read there, and an op between the two kernels could write its
    result in place into the buffer the second kernel still reads, when both write into one shared empty
    tensor (a broadcast read by two kernels, overwritten by a transpose between them). An empty tensor per op
    leaves nothing to write over.
    """
    functions = [op.operation for op in module.body.operations if op.operation.name == "func.func"]
    for function in functions:
        if not function.regions[0].blocks:
            continue
        block = function.regions[0].blocks[0]
        for empty in [op.operation for op in block.operations if op.operation.name == "tensor.empty"]:
            _split_uses(empty, block)


def _split_uses(empty: ir.Operation, block: ir.Block) -> None:
    """Every op of ``block`` after the first that writes into ``empty`` gets an alloc_tensor of its own (kernels'
    own empty tensors, nested in their loops, are theirs to reuse)."""
    result = empty.results[0]
    uses = [(use.owner, use.operand_number) for use in result.uses if use.owner.operation.parent == block.owner]
    for owner, index in uses[1:]:
        with ir.InsertionPoint(owner), owner.location:
            fresh = ir.Operation.create(
                "bufferization.alloc_tensor", results=[result.type], operands=list(empty.operands),
                attributes={"operandSegmentSizes": ir.DenseI32ArrayAttr.get([len(empty.operands), 0, 0])})
        owner.operands[index] = fresh.results[0]


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


# Buffers and vectors to LLVM (parallel loops left in place run in order, as scf.for). Every math op has a
# way down: math on f16 and bf16 is computed in f32; ipowi becomes a generated function; clampf, isinf,
# isnormal, expm1 and log1p are rewritten first (expand_math); the ops with an LLVM intrinsic take it; the
# rest (erf, erfc, cbrt, acosh, asinh, atanh) become libm calls. x86vector ops (the bf16 dot products of
# .kernel_bf16) and amx ops (the tiles of .kernel_amx) take their intrinsics. The row and epilogue kernels
# write exp, erf and tanh on vectors as polynomials (see .text), so no vector of them reaches a call per lane.
TO_LLVM = ("builtin.module("
           "func.func(convert-vector-to-scf{full-unroll=true}), math-extend-to-supported-types, "
           "convert-math-to-funcs, expand-strided-metadata, lower-affine, convert-scf-to-cf, canonicalize, "
           "convert-vector-to-llvm{enable-x86vector enable-amx}, finalize-memref-to-llvm, convert-math-to-llvm, "
           "convert-math-to-libm, convert-arith-to-llvm, convert-index-to-llvm, convert-cf-to-llvm, "
           "convert-func-to-llvm, convert-ub-to-llvm, reconcile-unrealized-casts, canonicalize, cse)")

# The smallest normal number of each float type, by name.
_SMALLEST_NORMAL = {"f16": 2.0 ** -14, "bf16": 2.0 ** -126, "f32": 2.0 ** -126, "f64": 2.0 ** -1022}
_PRED = arith.CmpFPredicate


def _splat(value: float, like: ir.Value) -> ir.Value:
    """The float ``value`` as a constant of ``like``'s type (a float or a vector of floats)."""
    if isinstance(like.type, ir.VectorType):
        element = ir.VectorType(like.type).element_type
        return arith.ConstantOp(like.type, ir.DenseElementsAttr.get_splat(like.type, ir.FloatAttr.get(element, value))
                                ).result
    return arith.ConstantOp(like.type, ir.FloatAttr.get(like.type, value)).result


def _clampf(x: ir.Value, lo: ir.Value, hi: ir.Value) -> ir.Value:
    """``min(max(x, lo), hi)``."""
    return arith.minimumf(arith.maximumf(x, lo), hi)


def _isinf(x: ir.Value) -> ir.Value:
    return arith.cmpf(_PRED.OEQ, math_ops.absf(x), _splat(math.inf, x))


def _isnormal(x: ir.Value) -> ir.Value:
    element = ir.VectorType(x.type).element_type if isinstance(x.type, ir.VectorType) else x.type
    magnitude = math_ops.absf(x)
    return arith.andi(arith.cmpf(_PRED.OGE, magnitude, _splat(_SMALLEST_NORMAL[str(element)], x)),
                      arith.cmpf(_PRED.OLT, magnitude, _splat(math.inf, x)))


def _expm1(x: ir.Value) -> ir.Value:
    """Kahan's ``exp(x) - 1``: ``(u - 1) * x / log(u)`` with ``u = exp(x)``, which cancels the rounding of u
    (x itself where u rounds to 1; -1 where u - 1 does; u where it is infinite)."""
    u = math_ops.exp(x)
    um1 = arith.subf(u, _splat(1.0, x))
    scaled = arith.divf(arith.mulf(um1, x), math_ops.log(u))
    result = arith.select(arith.cmpf(_PRED.OEQ, u, _splat(math.inf, x)), u, scaled)
    result = arith.select(arith.cmpf(_PRED.OEQ, um1, _splat(-1.0, x)), um1, result)
    return arith.select(arith.cmpf(_PRED.OEQ, u, _splat(1.0, x)), x, result)


def _log1p(x: ir.Value) -> ir.Value:
    """Kahan's ``log(1 + x)``: ``log(u) * x / (u - 1)`` with ``u = 1 + x``, which cancels the rounding of u (x
    itself where u rounds to 1; log(u) where u is infinite)."""
    u = arith.addf(x, _splat(1.0, x))
    log_u = math_ops.log(u)
    scaled = arith.divf(arith.mulf(log_u, x), arith.subf(u, _splat(1.0, x)))
    result = arith.select(arith.cmpf(_PRED.OEQ, u, _splat(math.inf, x)), log_u, scaled)
    return arith.select(arith.cmpf(_PRED.OEQ, u, _splat(1.0, x)), x, result)


# The math ops that convert-math-to-llvm leaves (clampf, isinf, isnormal) or lowers imprecisely (expm1 as
# exp(x) - 1, log1p as log(1 + x)), each as other ops.
_EXPANSIONS = {"math.clampf": _clampf, "math.isinf": _isinf, "math.isnormal": _isnormal, "math.expm1": _expm1,
               "math.log1p": _log1p}


def expand_math(module: ir.Module) -> None:
    """Rewrite the ops of ``_EXPANSIONS`` (scalars and vectors) as ops that lower to LLVM precisely; Kahan's
    formulas on f16 and bf16 are computed in f32."""
    for op in [op for op in iter_ops(module) if op.name in _EXPANSIONS]:
        with ir.InsertionPoint(op), op.location:
            typ = op.results[0].type
            element = ir.VectorType(typ).element_type if isinstance(typ, ir.VectorType) else typ
            if op.name in ("math.expm1", "math.log1p") and str(element) in ("f16", "bf16"):
                f32 = ir.F32Type.get()
                wide = ir.VectorType.get(ir.VectorType(typ).shape, f32) if isinstance(typ, ir.VectorType) else f32
                result = arith.truncf(typ, _EXPANSIONS[op.name](arith.extf(wide, op.operands[0])))
            else:
                result = _EXPANSIONS[op.name](*op.operands)
        op.results[0].replace_all_uses_with(result)
        op.erase()


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


# The math ops that lowered code computes by calling libm (through LLVM's intrinsics or convert-math-to-libm),
# under their own names: ``sinf`` for f32 (f16 and bf16 are computed in f32), ``sin`` for f64.
_LIBM = ("acos", "acosh", "asin", "asinh", "atan", "atan2", "atanh", "cbrt", "ceil", "cos", "cosh", "erf", "erfc",
         "exp", "exp2", "expm1", "floor", "fma", "log", "log10", "log1p", "log2", "pow", "round", "roundeven", "sin",
         "sinh", "sqrt", "tan", "tanh", "trunc")


def _libm_functions_called(module: ir.Module) -> set[str]:
    """The libm functions that the lowering of ``module``'s math ops to LLVM will call (the runtime's own,
    malloc and the like, are refused for every program: :data:`prism.codegen.checks.RUNTIME_SYMBOLS`)."""
    called: set[str] = set()
    for op in iter_ops(module):
        base = "pow" if op.name == "math.powf" else op.name.removeprefix("math.")
        if op.name.startswith("math.") and base in _LIBM and op.results:
            typ = op.results[0].type
            element = ir.ShapedType(typ).element_type if isinstance(typ, ir.ShapedType) else typ
            called.add(base if str(element) == "f64" else base + "f")
    return called


def check_c_names(module: ir.Module) -> None:
    """Refuse, at the function, a function of the program defined under the name of a libm function that the
    lowered code calls: the JIT would link it in that function's place (a call of sinf with a tensor's
    descriptor crashes the process)."""
    called = _libm_functions_called(module)
    for func in defined_functions(module):
        name = ir.StringAttr(func.attributes["sym_name"]).value
        if name in called:
            raise UnsupportedOp(reserved_name_message(name), location=str(func.location))


def record_signatures(module: ir.Module) -> None:
    """Keep each defined function's tensor-level type, ask for its C interface, and make its tensors read-only.

    Tensors are values, so a function never changes its arguments; marking
    them non-writable makes bufferization copy before any in-place update
    instead of writing into the caller's buffer (which the runtime passes
    without a copy).
    """
    for func in defined_functions(module):
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
    """Fail here, at the first op left, rather than later inside the JIT on a half-lowered module.

    The error is located at the program's op the leftover came from; an op of a kernel Prism wrote carries
    no such location, and is shown at its function.
    """
    leftovers = [op for op in iter_ops(module) if not op.name.startswith("llvm.") and op.name != "builtin.module"]
    if not leftovers:
        return
    # A cast the conversions left stands for an op they could not convert: name that op.
    first = next((op for op in leftovers if op.name != "builtin.unrealized_conversion_cast"), leftovers[0])
    names = sorted({op.name for op in leftovers})
    function = _enclosing_function(first)
    if function is None or not _generated(first.location):
        raise UnsupportedOp(f"'{first.name}' has no lowering to LLVM on the host (ops left: {names})",
                            location=str(first.location))
    name = ir.StringAttr(function.attributes["sym_name"]).value
    raise UnsupportedOp(f"'{first.name}' in a kernel Prism wrote for @{name} has no lowering to LLVM on the host "
                        f"(ops left: {names})", location=str(function.location))


def _generated(location: ir.Location) -> bool:
    """``location`` is not in the program: unknown, or in the text of a kernel Prism wrote (MLIR's ``-``)."""
    text = str(location)
    return text == "loc(unknown)" or text.startswith('loc("-":')


def _enclosing_function(op: ir.Operation) -> ir.Operation | None:
    """The ``llvm.func`` or ``func.func`` that holds ``op``, or None."""
    while op.name not in ("llvm.func", "func.func"):
        parent = op.parent
        if parent is None:
            return None
        op = parent.operation
    return op
