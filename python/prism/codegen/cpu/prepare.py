"""Weights packed once: a host function whose invariant weights feed GEMM kernels becomes three.

An argument marked ``{prism.invariant}`` is the same on every call (a
weight). When it is the B operand of a GEMM kernel, packing it into the
kernel's ``[N/RN][K][RN]`` panels is work that one call can do for all. So a
function ``@f`` becomes:

- ``@f_prepare(weights...) -> packed...``: packs each such weight once;
- ``@f_apply(args..., packed...)``: a copy of the body whose kernels read
  the packed panels in place, each with its epilogue as in ``@f`` (every
  argument is still passed; the packed weights are extra);
- ``@f(args...)`` itself is unchanged, its kernels reading the weights as
  they are: a call that packs a whole weight only to use it once would be
  slower. It carries ``prism.prepare_args``, the indices of the arguments
  that ``@f_prepare`` takes, which :func:`prism.runtime.cpu.bind` reads
  to run the preparation once per set of weights.

Before::

    func.func @f(%x: tensor<16x4096xf32>, %w: tensor<4096x4096xf32> {prism.invariant}) -> tensor<16x4096xf32>

After::

    func.func @f_prepare(%w: tensor<4096x4096xf32>) -> tensor<256x4096x16xf32>
    func.func @f_apply(%x: ..., %w: ..., %w_packed: tensor<256x4096x16xf32>) -> tensor<16x4096xf32>
    func.func @f(%x: ..., %w: ... {prism.invariant}) -> ... attributes {prism.prepare_args = array<i64: 1>}

A function that prism-explore split already (it carries
``prism.prepare_args``) is left alone: its ``@f_apply``, whose prepared
arguments are invariant, is split here in turn, and ``bind`` follows
the chain. Where the names are taken otherwise, the weights are packed on
every call, with a remark.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from mlir import ir

from prism.codegen.cpu.epilogue import inline_with_epilogue, match_epilogue
from prism.codegen.cpu.kernel import KernelPlan, inline_kernel, pack_text, packed_type, prefetches_panels
from prism.codegen.cpu.schedule import CpuGemm
from prism.codegen.cpu.text import inline_function
from prism.infra import attrs
from prism.infra.diagnostics import describe_ops
from prism.infra.ir import relocate
from prism.infra.passbase import PassContext

_WRITABLE = "bufferization.writable"


@dataclass
class Planned:
    """A contraction and the kernel planned for it.

    ``written_path`` is False when the transform-dialect path serves it
    better (see :func:`~prism.codegen.cpu.schedule.kernel_serves_as_written`);
    its weight is then not prepared either.
    """

    gemm: CpuGemm
    plan: KernelPlan
    written_path: bool = True

    @property
    def op(self) -> ir.Operation:
        return self.gemm.op


def _name(op: ir.Operation) -> str:
    return ir.StringAttr(op.attributes["sym_name"]).value


def _arg_attrs(func: ir.Operation) -> list[dict[str, ir.Attribute]]:
    count = len(ir.FunctionType(ir.TypeAttr(func.attributes["function_type"]).value).inputs)
    old = list(ir.ArrayAttr(func.attributes["arg_attrs"])) if "arg_attrs" in func.attributes else []
    return [{n.name: n.attr for n in ir.DictAttr(old[i])} if i < len(old) else {} for i in range(count)]


def _weight_index(func: ir.Operation, planned: Planned) -> int | None:
    """The argument index of the kernel's B operand when it is an invariant, static 2-D f32 weight of ``func``."""
    b = planned.op.operands[1]
    # Where the transform path serves the function as written (several row blocks), it also beats the
    # kernel on packed weights: it packs A as well.
    if not planned.written_path or planned.plan.batch or not isinstance(b, ir.BlockArgument):
        return None
    # A streaming kernel reads B along whole rows of its columns already, faster than one panel at a time.
    if planned.plan.streams:
        return None
    if packed_type(planned.plan.b_type, planned.plan.rn) is None:
        return None
    if b.owner != func.regions[0].blocks[0]:
        return None
    return b.arg_number if attrs.INVARIANT in _arg_attrs(func)[b.arg_number] else None


def prepare_weights(module: ir.Module, planned: list[Planned], ctx: PassContext,
                    lanes: int) -> list[tuple[str, list[str]]]:
    """Split every public function whose invariant weights feed kernels (see the module docstring).

    Inlines the kernels of the @f_apply copies; those of ``planned`` themselves are left to the caller.
    Returns each kernel inlined, as its kind and its function and op (:func:`describe_ops`).
    """
    inlined: list[tuple[str, list[str]]] = []
    symbols = {_name(op.operation) for op in module.body.operations if "sym_name" in op.operation.attributes}
    funcs = [op.operation for op in module.body.operations if op.operation.name == "func.func"
             and len(op.operation.regions[0].blocks) and "sym_visibility" not in op.operation.attributes]
    for func in funcs:
        mine = [(p, _weight_index(func, p)) for p in planned if _name(p.op.parent) == _name(func)]
        hoisted = [(p, index) for p, index in mine if index is not None]
        if not hoisted or not ir.FunctionType(ir.TypeAttr(func.attributes["function_type"]).value).results:
            continue
        name = _name(func)
        if attrs.PREPARE_ARGS in func.attributes:
            continue  # split by prism-explore, whose @f_apply is split here in turn
        if f"{name}_prepare" in symbols or f"{name}_apply" in symbols:
            ctx.remark(func.location, f"@{name}'s weights are packed on every call: @{name}_prepare or "
                                      f"@{name}_apply already exists")
            continue
        if _tagged(func, attrs.CPU_CONTRACTION_TAG):
            continue  # their tags would be copied too; such functions keep packing per call
        inlined += _split(module, func, [p for p, _ in mine], dict((id(p), index) for p, index in hoisted), lanes)
    return inlined


_PREPARED_TAG = "prism.prepared_id"  # marks the hoisted contractions while @f is copied


def _tagged(func: ir.Operation, tag: str) -> list[ir.Operation]:
    """The ops inside ``func`` that carry attribute ``tag``, in walk order."""
    found: list[ir.Operation] = []

    def visit(op: ir.Operation) -> ir.WalkResult:
        if tag in op.attributes:
            found.append(op)
        return ir.WalkResult.ADVANCE

    func.walk(visit)
    return found


def _split(module: ir.Module, func: ir.Operation, planned: list[Planned], weights: dict[int, int],
           lanes: int) -> list[tuple[str, list[str]]]:
    """Add @f_apply (a copy of ``func`` whose kernels read packed weights) and @f_prepare; mark ``func``.

    ``planned`` are the kernels of ``func``; ``weights`` maps (by ``id``) those whose B is a weight to its index.
    Returns the kernels of @f_apply, as :func:`prepare_weights` does.
    """
    inlined: list[tuple[str, list[str]]] = []
    hoisted = [(p, weights[id(p)]) for p in planned if id(p) in weights]
    name = _name(func)
    ftype = ir.FunctionType(ir.TypeAttr(func.attributes["function_type"]).value)
    arg_attrs = _arg_attrs(func)
    packs = sorted({(index, p.plan.rn) for p, index in hoisted})  # one packed copy per weight and panel width
    packed_types = [packed_type(str(ftype.inputs[index]), rn) for index, rn in packs]
    i64 = ir.IntegerType.get_signless(64)
    with func.location:
        for k, p in enumerate(planned):
            p.op.attributes[_PREPARED_TAG] = ir.IntegerAttr.get(i64, k)
        apply = func.clone()
        module.body.append(apply)
        for p in planned:
            del p.op.attributes[_PREPARED_TAG]
        copies = {ir.IntegerAttr(op.attributes[_PREPARED_TAG]).value: op for op in _tagged(apply, _PREPARED_TAG)}
        block = apply.regions[0].blocks[0]
        packed_args = [block.add_argument(ir.Type.parse(t), func.location) for t in packed_types]
        apply.attributes["sym_name"] = ir.StringAttr.get(f"{name}_apply")
        for k, p in enumerate(planned):
            copy = copies[k]
            inlined.append(("gemm" if id(p) not in weights else "gemm (prepared weight)", describe_ops(apply, [copy])))
            if id(p) not in weights:
                inline_kernel(copy, p.plan)
                continue
            arg = packed_args[packs.index((weights[id(p)], p.plan.rn))]
            plan = replace(p.plan, prepacked=True, pack=False, pipelined=False, b_type=str(arg.type),
                           prefetch_panels=prefetches_panels(p.plan))
            fused = match_epilogue(copy)
            if fused is None:
                inline_kernel(copy, plan, [copy.operands[0], arg, copy.operands[2]])
                continue
            # As in @f: the kernel replaces the one elementwise consumer, which runs as its epilogue.
            kind, described = inlined.pop()
            inlined.append((kind + " + epilogue", described + describe_ops(apply, [fused.op])[1:]))
            inline_with_epilogue(copy, plan, [copy.operands[0], arg, copy.operands[2]], fused)
        apply_type = ir.FunctionType.get([*ftype.inputs, *(a.type for a in packed_args)], list(ftype.results))
        apply.attributes["function_type"] = ir.TypeAttr.get(apply_type)
        apply.attributes[attrs.SIGNATURE] = ir.TypeAttr.get(apply_type)
        apply.attributes["arg_attrs"] = ir.ArrayAttr.get(
            [ir.DictAttr.get({k: v for k, v in a.items() if k != attrs.INVARIANT}) for a in arg_attrs]
            + [ir.DictAttr.get({_WRITABLE: ir.BoolAttr.get(False)}) for _ in packed_args])
        func.attributes[attrs.PREPARE_ARGS] = ir.DenseI64ArrayAttr.get([index for index, _ in packs])
        func.attributes[attrs.APPLY_ARGS] = ir.DenseI64ArrayAttr.get(
            list(range(len(ftype.inputs))) + [-(k + 1) for k in range(len(packs))])
        parsed = ir.Module.parse(_prepare_text(name, ftype, packs, packed_types))
        relocate(parsed.operation, func.location)
        prepare = next(op.operation for op in parsed.body.operations if "sym_visibility" not in op.operation.attributes)
        prepare.detach_from_parent()
        module.body.append(prepare)
        _inline_packs(prepare, [str(ftype.inputs[i]) for i, _ in packs], [rn for _, rn in packs], lanes)
    return inlined


def _inline_packs(prepare: ir.Operation, types: list[str], widths: list[int], lanes: int) -> None:
    """Replace @f_prepare's calls of the pack declarations by the packing loops themselves."""
    calls = [op.operation for op in prepare.regions[0].blocks[0].operations if op.operation.name == "func.call"]
    for call, b_type, rn in zip(calls, types, widths, strict=True):
        inline_function(call, pack_text("pack", b_type, rn, lanes), [call.operands[0]])


def _prepare_text(name: str, ftype: ir.FunctionType, packs: list[tuple[int, int]], packed_types: list[str]) -> str:
    """@f_prepare, calling one pack declaration per weight (inlined afterwards), and those declarations."""
    inputs = [str(t) for t in ftype.inputs]
    iface = "llvm.emit_c_interface"
    weights = [index for index, _ in packs]
    prepare_type = f"({', '.join(inputs[i] for i in weights)}) -> ({', '.join(packed_types)})"
    lines = [f"func.func private @pack{k}({inputs[index]}) -> {t}" for k, ((index, _), t)
             in enumerate(zip(packs, packed_types, strict=True))]
    args = ", ".join(f"%w{k}: {inputs[i]} {{{_WRITABLE} = false}}" for k, i in enumerate(weights))
    lines.append(f"func.func @{name}_prepare({args}) -> ({', '.join(packed_types)}) attributes "
                 f"{{{iface}, {attrs.SIGNATURE} = {prepare_type}}} {{")
    for k in range(len(packs)):
        lines.append(f"  %p{k} = func.call @pack{k}(%w{k}) : ({inputs[weights[k]]}) -> {packed_types[k]}")
    lines.append(f"  return {', '.join(f'%p{k}' for k in range(len(packs)))} : {', '.join(packed_types)}")
    lines.append("}")
    return "\n".join(lines)
