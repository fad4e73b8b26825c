"""Reading and writing ``prism.family`` ops and the contractions inside them."""

from __future__ import annotations

from collections.abc import Iterator

import islpy as isl
from mlir import ir
from mlir.dialects import linalg

from prism.infra import attrs
from prism.infra.diagnostics import display_location
from prism.infra.errors import PassFailed
from prism.infra.ir import ELEMENT_BYTES, element_name
from prism.search.space import Contraction, Space


def map_dims(affine_map: ir.AffineMap) -> list[int] | None:
    """Loop dimension read by each result of a projected-permutation map."""
    dims = []
    for expr in affine_map.results:
        if not isinstance(expr, ir.AffineDimExpr):
            return None
        dims.append(expr.position)
    return dims


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
    if not all(isinstance(v.type, ir.RankedTensorType) for v in op.operands):
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
    )


def why_not_lifted(op: ir.Operation) -> str:
    """Why :func:`analyze_contraction` gives None for ``op``, in words."""
    if not op.name.startswith("linalg.") or "indexing_maps" not in op.attributes or not linalg.isa_contraction_op(op):
        return "not a contraction"
    if not all(isinstance(v.type, ir.RankedTensorType) for v in op.operands):
        return "a contraction on buffers (Prism tunes Linalg on tensors)"
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


def kind_of(contraction: Contraction) -> str:
    """The family kind: ``gemm`` or ``batch_gemm``."""
    return "batch_gemm" if "batch" in contraction.roles else "gemm"




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


def payload_contraction(body: ir.Operation) -> tuple[ir.Operation, Contraction]:
    """The contraction op inside a family body and its analysis."""
    for op in body.regions[0].blocks[0].operations:
        found = analyze_contraction(op.operation)
        if found is not None:
            return op.operation, found
    raise ValueError("family body holds no contraction")


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
        domain = isl.Set(text)
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
