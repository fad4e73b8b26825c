"""Epilogues: an elementwise consumer of a GEMM, run on each C tile as the kernel stores it.

A GEMM that takes the kernel (:mod:`.kernel`) fuses the one op that reads
its result when that op is a ``linalg.generic`` with:

- parallel loops only, as many as C has dimensions, and an identity output map;
- C among its inputs, read element for element (an identity map);
- other f32 inputs read per row (batch and row: a row scale), per column
  (the column alone: a bias) or per element (a residual);
- a body of ELEMENTWISE_OPS on those inputs and f32 constants, that does not
  read its output.

Example: RMSNorm's row scale after the matmul, ``y = (x W) * r[i]``, runs
as the kernel stores the last K slice of each tile, rather than as a loop
nest that reads and writes the whole of C again.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from mlir import ir

from prism.codegen.cpu.kernel import ELEMENTWISE_OPS, Epilogue, KernelPlan, inline_kernel
from prism.codegen.cpu.text import F32
from prism.infra.maps import map_dims


@dataclass(frozen=True)
class EpilogueMatch:
    """The consumer fused, what the kernel computes of it, and the values its inputs are."""

    op: ir.Operation
    epilogue: Epilogue
    inputs: tuple[ir.Value, ...]


def match_epilogue(gemm: ir.Operation) -> EpilogueMatch | None:
    """The epilogue of ``gemm`` (see the module docstring), or None."""
    users = [use.owner.operation for use in gemm.results[0].uses]
    if len(users) != 1 or users[0].name != "linalg.generic":
        return None
    op = users[0]
    c_type = ir.RankedTensorType(gemm.results[0].type)
    rank = c_type.rank
    if len(op.results) != 1 or op.results[0].type != gemm.results[0].type:
        return None
    iterators = [str(it) for it in ir.ArrayAttr(op.attributes["iterator_types"])]
    maps = [map_dims(ir.AffineMapAttr(a).value) for a in ir.ArrayAttr(op.attributes["indexing_maps"])]
    whole = list(range(rank))
    if len(iterators) != rank or any("parallel" not in it for it in iterators) or maps[-1] != whole:
        return None
    n_inputs = len(op.operands) - 1
    block = op.regions[0].blocks[0]
    args = list(block.arguments)
    if len(list(args[n_inputs].uses)):
        return None  # the body reads its output
    refs: dict[ir.Value, tuple] = {}
    inputs: list[tuple[str, str]] = []
    values: list[ir.Value] = []
    for i, (value, dims) in enumerate(zip(op.operands[:n_inputs], maps[:n_inputs], strict=True)):
        if value == gemm.results[0]:
            if dims != whole or ("c",) in refs.values():
                return None
            refs[args[i]] = ("c",)
            continue
        kind = {tuple(whole): "element", tuple(whole[:-1]): "row", (rank - 1,): "column"}.get(tuple(dims or ()))
        if kind is None or not isinstance(value.type, ir.RankedTensorType) \
                or str(ir.RankedTensorType(value.type).element_type) != F32:
            return None
        refs[args[i]] = ("input", len(inputs))
        inputs.append((kind, str(value.type)))
        values.append(value)
    if ("c",) not in refs.values():
        return None
    body = [o.operation for o in block.operations]
    terminator = body.pop()
    ops = elementwise_program(body, refs)
    if ops is None or len(terminator.operands) != 1 or not ops \
            or refs.get(terminator.operands[0]) != ("value", len(ops) - 1):
        return None
    return EpilogueMatch(op, Epilogue(tuple(inputs), tuple(ops)), tuple(values))


Program = list[tuple[str, tuple[tuple, ...]]]


def inline_with_epilogue(gemm: ir.Operation, plan: KernelPlan, operands: list[ir.Value],
                         match: EpilogueMatch) -> None:
    """Replace ``gemm`` (A, B and C are ``operands``) and its consumer by one kernel of ``plan`` that runs the
    consumer as its epilogue. The kernel takes the consumer's place, which the consumer's inputs dominate."""
    inline_kernel(match.op, replace(plan, epilogue=match.epilogue), [*operands, *match.inputs])
    gemm.erase()


def as_dual(match: EpilogueMatch, index: int) -> EpilogueMatch:
    """``match`` with its input ``index`` read as a dual GEMM's second product, ``("c2",)``: the input is the
    result of a GEMM with the same A, which the kernel computes alongside (see ``KernelPlan.dual``)."""

    def ref(r: tuple) -> tuple:
        if r[0] != "input":
            return r
        return ("c2",) if r[1] == index else ("input", r[1] - (r[1] > index))

    ops = tuple((name, tuple(ref(r) for r in refs)) for name, refs in match.epilogue.ops)
    inputs = tuple(x for i, x in enumerate(match.epilogue.inputs) if i != index)
    return EpilogueMatch(match.op, Epilogue(inputs, ops), tuple(v for i, v in enumerate(match.inputs) if i != index))


def elementwise_program(body: list[ir.Operation], refs: dict[ir.Value, tuple],
                        captures: list[ir.Value] | None = None) -> Program | None:
    """The ops of a linalg body (without its yield) as an elementwise program (see :class:`Epilogue`), or None.

    ``refs`` maps the block arguments the program may read to their references; it gains an entry per
    value defined. Only ELEMENTWISE_OPS on f32, with no attribute but fastmath flags (which only relax
    and are dropped), and f32 constants, inside the body or captured from outside, are accepted. With
    ``captures``, other f32 values from outside the op are accepted too: each is appended to it once and
    read as ``("scalar", i)``.
    """
    ops: Program = []
    for inner in body:
        if inner.name == "arith.constant":
            constant = _f32_constant(inner)
            if constant is None:
                return None
            refs[inner.results[0]] = ("constant", constant)
            continue
        if inner.name not in ELEMENTWISE_OPS or len(inner.results) != 1 or str(inner.results[0].type) != F32:
            return None
        if not all(name == "fastmath" for name in inner.attributes):
            return None
        operands = []
        for operand in inner.operands:
            ref = refs.get(operand)
            if ref is None:
                ref = _captured(operand)
            if ref is None and captures is not None and str(operand.type) == F32:
                if operand not in captures:
                    captures.append(operand)
                ref = ("scalar", captures.index(operand))
            if ref is None:
                return None
            operands.append(ref)
        refs[inner.results[0]] = ("value", len(ops))
        ops.append((inner.name, tuple(operands)))
    return ops


def _f32_constant(op: ir.Operation) -> float | None:
    attr = op.attributes["value"]
    if not isinstance(attr, ir.FloatAttr) or str(attr.type) != F32:
        return None
    return ir.FloatAttr(attr).value


def _captured(value: ir.Value) -> tuple | None:
    """A value defined outside the body: only an f32 constant."""
    if isinstance(value.owner, ir.Block) or value.owner.operation.name != "arith.constant":
        return None
    constant = _f32_constant(value.owner.operation)
    return None if constant is None else ("constant", constant)
