"""Reading and writing ``prism.family`` ops and what they compute: a contraction, or the chain of a registered
family (:mod:`prism.search.families`)."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING

import islpy as isl
from mlir import ir
from mlir.dialects import func, linalg

from prism.infra import attrs
from prism.infra.diagnostics import display_location
from prism.infra.errors import PassFailed
from prism.infra.ir import ELEMENT_BYTES, element_name, filled_constant
from prism.infra.maps import map_dims
from prism.search.families import FamilyProblem, family_named, family_of
from prism.search.space import Contraction, Space, parse_set

if TYPE_CHECKING:
    from prism.search.model import SearchModel

# What a family computes.
Problem = Contraction | FamilyProblem


def analyze_contraction(op: ir.Operation) -> Contraction | None:
    """The :class:`Contraction` of a liftable linalg op, or None.

    Liftable: a linalg contraction (per linalg's own interface) with two
    inputs, one output, tensor semantics, projected-permutation indexing maps,
    and element types Prism can compute in.
    """
    if not op.name.startswith("linalg.") or "indexing_maps" not in op.attributes:
        return None
    if not linalg.isa_contraction_op(op) or len(op.results) != 1 or len(op.operands) != 3:
        return None
    if not all(isinstance(v.type, ir.RankedTensorType) for v in op.operands) or not multiplies_and_adds(op):
        return None
    dims = linalg.infer_contraction_dimensions(op)
    maps = [ir.AffineMapAttr(a).value for a in ir.ArrayAttr(op.attributes["indexing_maps"])]
    operand_dims = [map_dims(m) for m in maps]
    if dims is None or any(d is None for d in operand_dims):
        return None
    n_loops = maps[0].n_dims
    roles = ["?"] * n_loops
    for role, group in (("batch", dims.batch), ("m", dims.m), ("n", dims.n), ("k", dims.k)):
        for d in group:
            roles[d] = role
    if "?" in roles or not {"m", "n", "k"} <= set(roles):
        return None
    extents: list[int | None] = [None] * n_loops
    for value, loops in zip(op.operands, operand_dims, strict=True):
        shape = value.type.shape
        for position, loop in enumerate(loops):
            if not ir.ShapedType.is_dynamic_size(shape[position]):
                extents[loop] = shape[position]
    types = [element_name(v.type) for v in op.operands]
    if None in types or 0 in extents:
        return None
    return Contraction(
        roles=tuple(roles),
        operand_dims=tuple(tuple(d) for d in operand_dims[:2]),
        extents=tuple(extents),
        elem_bytes=(ELEMENT_BYTES[types[0]], ELEMENT_BYTES[types[1]]),
        acc_bytes=ELEMENT_BYTES[types[2]],
        input_type=types[0] if types[0] == types[1] else "f32",
        reads_init=filled_constant(op.operands[2]) != 0.0,
    )


# Linalg's named contractions that Prism does not lift, by op: what each is, and what to write instead.
_UNLIFTED_CONTRACTIONS = {
    **dict.fromkeys(("linalg.matvec", "linalg.vecmat", "linalg.batch_matvec", "linalg.batch_vecmat", "linalg.dot"), (
        "a matrix-vector product, a contraction Prism does not lift (it has no M or no N loop)",
        "to have it tuned, write it as linalg.matmul (linalg.batch_matmul) with a unit dimension, e.g. the "
        "vector as a tensor<Kx1xf32>")),
    **dict.fromkeys(("linalg.mmt4d", "linalg.batch_mmt4d"), (
        "a product of packed operands, a contraction Prism does not lift",
        "to have it tuned, write the product unpacked, as linalg.matmul: Prism chooses its own packing")),
    **dict.fromkeys(("linalg.quantized_matmul", "linalg.quantized_batch_matmul"), (
        "a quantized product (with zero points), a contraction Prism does not lift",
        "to have it tuned, subtract the zero points in a linalg.generic that widens the operands to a float "
        "type, then write linalg.matmul")),
}


# The unary ops a product's body may apply to its inputs or results: conversions, which the product of the
# converted inputs describes. Linalg's own test of a contraction takes any unary chain (a negation too).
_CONVERSIONS = frozenset({"arith.extf", "arith.truncf", "arith.extsi", "arith.extui", "arith.trunci",
                          "arith.sitofp", "arith.uitofp"})


def multiplies_and_adds(op: ir.Operation) -> bool:
    """Whether the body of the contraction ``op`` is one multiply and one add, with conversions only: linalg's
    contraction test also takes ``acc + a * -b``, which is not ``A @ B``."""
    body = [o.operation.name for o in op.regions[0].blocks[0].operations]
    core = [name for name in body[:-1] if name not in _CONVERSIONS]
    return core in (["arith.mulf", "arith.addf"], ["arith.muli", "arith.addi"])


def why_not_lifted(op: ir.Operation) -> str:
    """Why :func:`analyze_contraction` gives None for ``op``, in words."""
    if op.name in _UNLIFTED_CONTRACTIONS:
        what, instead = _UNLIFTED_CONTRACTIONS[op.name]
        return f"{what}; {instead}"
    if not op.name.startswith("linalg.") or "indexing_maps" not in op.attributes or not linalg.isa_contraction_op(op):
        return "not a contraction"
    if not all(isinstance(v.type, ir.RankedTensorType) for v in op.operands):
        return "a contraction on buffers (Prism tunes Linalg on tensors)"
    if not multiplies_and_adds(op):
        return "its body does more than multiply its inputs and add (it is not a plain product)"
    types = sorted({str(ir.ShapedType(v.type).element_type) for v in op.operands if element_name(v.type) is None})
    if types:
        return f"its element types ({', '.join(types)}) are not ones Prism tunes ({', '.join(ELEMENT_BYTES)})"
    if any(0 in ir.RankedTensorType(v.type).shape for v in op.operands):
        return "an empty dimension leaves nothing to compute"
    return "not a contraction with one M, N and K loop and projected-permutation maps"


def contraction_roles(op: ir.Operation) -> list[str] | None:
    """Each loop's role in a contraction: ``prism.roles`` if set, else inferred; None if not one."""
    if attrs.ROLES in op.attributes:
        return [ir.StringAttr(a).value for a in ir.ArrayAttr(op.attributes[attrs.ROLES])]
    contraction = analyze_contraction(op)
    return list(contraction.roles) if contraction else None


def kind_of(problem: Problem) -> str:
    """The family kind: a registered family's (``attention``), else ``gemm`` or ``batch_gemm``."""
    family = family_of(problem)
    if family is not None:
        return family.kind
    return "batch_gemm" if "batch" in problem.roles else "gemm"


def outline_family(module: ir.Module, ops: Sequence[ir.Operation], name: str, family: dict[str, ir.Attribute],
                   copied: tuple[str, ...] = ()) -> None:
    """Move ``ops`` (of one block, each after its operands among them; the last one's result the only one read
    elsewhere) into a private payload function ``name`` headed by a ``prism.family`` with the attributes
    ``family``, and call it.

    The values they read from outside become the function's arguments, but
    for those made by ops named in ``copied`` (with what these read) and for
    constants their bodies capture: such ops are copied into the function
    (the recognizers read them there), and erased outside once unused.
    """
    last = ops[-1]
    inner = {result for op in ops for result in op.results}
    operands: list[ir.Value] = []
    copies: list[ir.Operation] = []  # each after the copies it reads

    def take(value: ir.Value, names: tuple[str, ...]) -> None:
        if value in inner or value in operands:
            return
        if isinstance(value.owner, ir.Block) or value.owner.operation.name not in names:
            operands.append(value)
            return
        producer = value.owner.operation
        for operand in producer.operands:
            take(operand, names)
        copies.append(producer)
        inner.update(producer.results)

    for op in ops:
        for value in op.operands:
            take(value, copied)
    for value in _captures(ops):
        take(value, ("arith.constant", *copied))
    result_types = [r.type for r in last.results]
    with last.context, last.location:
        with ir.InsertionPoint(module.body):
            body = func.FuncOp(name, ([v.type for v in operands], result_types), visibility="private")
            body.attributes[attrs.FAMILY_BODY] = ir.UnitAttr.get()
            block = body.add_entry_block()
        mapping = dict(zip(operands, block.arguments, strict=True))
        with ir.InsertionPoint(block):
            ir.Operation.create(attrs.FAMILY_OP, attributes=family)
            for op in [*copies, *ops]:
                clone = op.clone()
                remap_operands(clone, mapping)
                mapping.update(zip(op.results, clone.results, strict=True))
            func.ReturnOp([mapping[r] for r in last.results])
        with ir.InsertionPoint(last):
            call = func.CallOp(result_types, ir.FlatSymbolRefAttr.get(name), operands)
    for old, new in zip(last.results, call.results, strict=True):
        old.replace_all_uses_with(new)
    for op in reversed(ops):
        op.erase()
    for op in reversed(copies):
        if all(next(iter(result.uses), None) is None for result in op.results):
            op.erase()


def _captures(ops: Sequence[ir.Operation]) -> list[ir.Value]:
    """Values that ops nested in ``ops`` read from the block ``ops`` are in (or its function's arguments)."""
    parent = ops[0].parent
    found: list[ir.Value] = []

    def visit(op: ir.Operation) -> ir.WalkResult:
        for value in op.operands:
            owner = value.owner
            outer = owner.owner == parent if isinstance(owner, ir.Block) else owner.operation.parent == parent
            if outer and value not in found:
                found.append(value)
        return ir.WalkResult.ADVANCE

    for op in ops:
        for region in op.regions:
            for inner_block in region.blocks:
                for inner in inner_block.operations:
                    inner.operation.walk(visit, ir.WalkOrder.PRE_ORDER)
    return found


def remap_operands(op: ir.Operation, mapping: dict[ir.Value, ir.Value]) -> None:
    """Replace every operand of ``op`` and of the ops nested in it (values their bodies capture) that
    ``mapping`` names."""
    def visit(inner: ir.Operation) -> ir.WalkResult:
        for index, value in enumerate(inner.operands):
            if value in mapping:
                inner.operands[index] = mapping[value]
        return ir.WalkResult.ADVANCE

    op.walk(visit, ir.WalkOrder.PRE_ORDER)


def annotate_payload(ops: Sequence[ir.Operation], kind: str, choice: ir.Attribute) -> None:
    """Attach a family's ``choice`` to its payload ``ops`` (in order), where the lowerings read it.

    A contraction gets its roles and the choice (``prism.roles``,
    ``prism.choice``); a registered family's chain, which ends at the last of
    ``ops``, gets its choice attribute on its first op (``prism.attention`` on
    an attention's scores' product).
    """
    family = family_named(kind)
    if family is not None:
        match = family.match(ops[-1])
        if match is None:
            raise PassFailed(_not_computed(kind), location=display_location(ops[-1].location))
        match.ops[0].attributes[family.choice_attribute] = choice
        return
    for op in ops:
        contraction = analyze_contraction(op)
        if contraction is not None:
            op.attributes[attrs.ROLES] = ir.ArrayAttr.get([ir.StringAttr.get(r) for r in contraction.roles])
            op.attributes[attrs.CHOICE] = choice


def _not_computed(kind: str) -> str:
    """The error for a family body that does not hold its kind's chain."""
    article = "an" if kind[:1] in "aeiou" else "a"
    return f"{article} {kind} family's body does not compute {article} {kind}"


def family_bodies(module: ir.Module) -> Iterator[ir.Operation]:
    """Every payload function that prism-lift outlined, in module order."""
    for op in module.body.operations:
        if op.operation.name == "func.func" and attrs.FAMILY_BODY in op.attributes:
            yield op.operation


def families(module: ir.Module) -> Iterator[ir.Operation]:
    """Every prism.family op in ``module``, in order."""
    for body in family_bodies(module):
        for op in body.regions[0].blocks[0].operations:
            if op.operation.name == attrs.FAMILY_OP:
                yield op.operation


def body_func(family: ir.Operation) -> ir.Operation:
    """The payload function that ``family`` heads."""
    return family.parent


def payload_problem(body: ir.Operation) -> Problem:
    """What a family body computes: its registered family's chain, or its contraction.

    Raises PassFailed when the body does not hold what its kind says.
    """
    ops = [op.operation for op in body.regions[0].blocks[0].operations]
    kind = ir.StringAttr(ops[0].attributes["kind"]).value if ops and ops[0].name == attrs.FAMILY_OP else ""
    where = display_location(body.location)
    family = family_named(kind)
    if family is not None:
        returned = ops[-1].operands
        match = None if len(returned) != 1 or isinstance(returned[0].owner, ir.Block) else family.match(
            returned[0].owner.operation)
        if match is None:
            raise PassFailed(_not_computed(kind), location=where)
        return match.problem
    for op in ops:
        found = analyze_contraction(op)
        if found is not None:
            return found
    raise PassFailed("a family's body holds no contraction", location=where)


def family_space(target: SearchModel, problem: Problem, family: ir.Operation) -> Space:
    """``target``'s space for ``family``, which computes ``problem``; PassFailed when the target has none."""
    space = target.space(problem)
    if space is None:
        raise PassFailed(f"target '{target.name}' has no schedule for the {kind_of(problem)} family "
                         f"'{family_name(family)}'", location=display_location(family.location))
    return space


def family_name(family: ir.Operation) -> str:
    """A family's name: the symbol of its payload function."""
    return ir.StringAttr(body_func(family).attributes["sym_name"]).value


def int_dict(attr: ir.Attribute) -> dict[str, int]:
    """A DictionaryAttr of integers as a Python dict."""
    d = ir.DictAttr(attr)
    return {d[i].name: ir.IntegerAttr(d[i].attr).value for i in range(len(d))}


def make_int_dict(values: dict[str, int]) -> ir.DictAttr:
    """A DictionaryAttr of i64 from a Python dict (keys kept in MLIR's sorted order)."""
    i64 = ir.IntegerType.get_signless(64)
    return ir.DictAttr.get({k: ir.IntegerAttr.get(i64, v) for k, v in values.items()})


def family_domain(family: ir.Operation, space: Space) -> isl.Set:
    """A family's ``domain`` attribute as an isl set over ``space``'s variables.

    The text is the family's contract and may have been written by hand, so
    it is checked: it must parse and range over exactly the space's variables
    and shape parameters.
    """
    text = ir.StringAttr(family.attributes["domain"]).value
    where = display_location(family.location)
    try:
        domain = parse_set(text)
    except isl.Error:
        raise PassFailed(f"family '{family_name(family)}' has a domain that is not an isl set: '{text}'",
                         location=where) from None
    expected = space.universe_set()
    names = [domain.get_dim_name(isl.dim_type.set, i) for i in range(domain.dim(isl.dim_type.set))]
    if names != space.variables or domain.dim(isl.dim_type.param) > expected.dim(isl.dim_type.param):
        raise PassFailed(f"family '{family_name(family)}' has a domain over [{', '.join(map(str, names))}]; "
                         f"expected [{', '.join(space.variables)}] for this target",
                         location=where)
    return domain.align_params(expected.get_space())
