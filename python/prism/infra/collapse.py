"""Loops that move together, as one loop: the one spelling of a product whose rows, columns or reduction run over
several loops.

A product of activations ``x[b, s, k]`` by a weight ``w[k, n]`` into ``y[b, s, n]`` has two row loops (M read
through ``b`` and ``s``); it computes what the product of the flattened activations computes, ``x[b*s, k] *
w[k, n] -> y[b*s, n]``. Prism's algebra, its search and its kernels read a product with one loop per role, so
:func:`collapse_loops` writes such a contraction over collapsed operands, its result expanded back::

    %y = linalg.generic {indexing_maps = [(b, s, n, k) -> (b, s, k), (b, s, n, k) -> (k, n),
                                          (b, s, n, k) -> (b, s, n)], ...} ins(%x, %w) outs(%init)

becomes::

    %x2 = tensor.collapse_shape %x [[0, 1], [2]] : tensor<2x8x256xf32> into tensor<16x256xf32>
    %y2 = linalg.generic {indexing_maps = [(r, n, k) -> (r, k), (r, n, k) -> (k, n), (r, n, k) -> (r, n)], ...}
            ins(%x2, %w) outs(%init2)                      // %init2: the init's fill, on a 16x512 tensor.empty
    %y = tensor.expand_shape %y2 [[0, 1], [2]] output_shape [2, 8, 512] : ... into tensor<2x8x512xf32>

Then every generic that reads an expanded result over the same loops (the SwiGLU gating, a residual add, the
next product) takes the expansion's groups too and is collapsed the same way, so that the collapse of its input
folds away and a chain of ops keeps one collapsed spelling, expanded only where a value leaves it.

A group of loops collapses where every operand that reads one of its loops reads all of them, adjacent and in
one order, and they iterate alike; a collapsed size is the product of the group's sizes, dynamic ones read from
the program, and an expansion is given every dynamic size of its result. Batch loops stay loops, and so does a
loop whose index the body reads (``linalg.index``) if it would join others. Ops are changed in place; a program
with nothing to collapse is left untouched.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

from mlir import ir
from mlir.dialects import arith, linalg, tensor

from prism.infra.maps import map_dims

Groups = list[list[int]]  # a partition of an op's loops, in the new loops' order; each group's loops in order


def collapse_loops(module: ir.Module) -> None:
    """Collapse, in every function of ``module``, the contractions whose roles run over several loops, the
    generics that read an expanded result over the same loops, and the generics whose result is collapsed
    (see the module docstring), until none is left."""
    while True:
        changed = False
        for op in _ops(module, "linalg.generic"):  # in program order: a producer before the ops that read it
            groups = _contraction_groups(op)
            if groups is None:
                groups = _expanded_input_groups(op)
            if groups is not None:
                _collapse(op, groups)
                changed = True
        for op in reversed(_ops(module, "tensor.collapse_shape")):  # the last first: a reader before its producer
            if _hoist(op):
                changed = True
        if not changed:
            return


def _ops(module: ir.Module, name: str) -> list[ir.Operation]:
    found: list[ir.Operation] = []

    def take(op: ir.Operation) -> ir.WalkResult:
        if op.name == name:
            found.append(op)
        return ir.WalkResult.ADVANCE

    module.operation.walk(take, ir.WalkOrder.PRE_ORDER)
    return found


def _hoist(collapse: ir.Operation) -> bool:
    """Collapse the generic whose result ``collapse`` collapses, by the loops of its groups, where it can be
    (:func:`_legal`): ``collapse`` then reads the generic's own result, and is erased; whether it was."""
    source = collapse.operands[0]
    producer = source.owner
    if isinstance(producer, ir.Block) or producer.name != "linalg.generic" or len(producer.results) != 1:
        return False
    producer = producer.operation
    operand_dims = _operand_dims(producer)
    if operand_dims is None:
        return False
    output = operand_dims[-1]
    joined = [[output[d] for d in group] for group in _reassociation_attr(collapse)]
    if any(loop is None for group in joined if len(group) > 1 for loop in group):
        return False
    loops = [[loop] for loop in range(len(ir.ArrayAttr(producer.attributes["iterator_types"])))
             if loop not in output]
    groups = _legal(producer, sorted([g for g in joined if g != [None]] + loops, key=min))
    if groups is None:
        return False
    _collapse(producer, groups)
    if collapse.results[0].type != producer.results[0].type:  # the groups made another shape: it reads that
        return True
    expansion = collapse.operands[0].owner.operation  # what _collapse made of the generic's result
    collapse.results[0].replace_all_uses_with(producer.results[0])
    collapse.erase()
    _erase_unused([expansion])
    return True


def _reads(affine_map: ir.AffineMap) -> list[int | None] | None:
    """The loop each result of ``affine_map`` reads, None for a constant 0 (a unit axis: a statistic kept as
    ``tensor<..x1xf32>``); None unless every result is one or the other."""
    dims = map_dims(affine_map)
    if dims is not None:
        return list(dims)
    reads: list[int | None] = []
    for expr in affine_map.results:
        if isinstance(expr, ir.AffineDimExpr):
            reads.append(expr.position)
        elif isinstance(expr, ir.AffineConstantExpr) and expr.value == 0:
            reads.append(None)
        else:
            return None
    return reads


def _operand_dims(op: ir.Operation) -> list[list[int | None]] | None:
    """Per operand, the loop each of its dimensions reads (None: a unit axis read at 0); None unless every map
    reads loops or such axes."""
    maps = [_reads(ir.AffineMapAttr(m).value) for m in ir.ArrayAttr(op.attributes["indexing_maps"])]
    return None if any(dims is None for dims in maps) else maps  # type: ignore[return-value]


def _reassociation(dims: Sequence[int | None], groups: Groups) -> list[list[int]] | None:
    """The collapse of an operand that reads the loops ``dims``: per collapsed dimension, its dimensions (a unit
    axis alone). None where the operand reads a group in part, out of its order or not adjacent."""
    group_of = _group_of(groups)
    result: list[list[int]] = []
    position = 0
    while position < len(dims):
        loop = dims[position]
        if loop is None:
            result.append([position])
            position += 1
            continue
        group = groups[group_of[loop]]
        if list(dims[position:position + len(group)]) != group:
            return None
        result.append(list(range(position, position + len(group))))
        position += len(group)
    return result


def _legal(op: ir.Operation, groups: Groups) -> Groups | None:
    """``groups`` where ``op`` can be collapsed by them and one of them joins loops, else None: every operand
    reads each group whole and in order, each group's loops iterate alike, and the body reads no joined loop's
    index."""
    operand_dims = _operand_dims(op)
    if operand_dims is None or len(op.results) != 1 or all(len(group) == 1 for group in groups):
        return None
    if any(dims and not isinstance(value.type, ir.RankedTensorType)
           for value, dims in zip(op.operands, operand_dims, strict=True)):
        return None
    iterators = [str(it) for it in ir.ArrayAttr(op.attributes["iterator_types"])]
    for group in groups:
        if len({iterators[loop] for loop in group}) != 1:
            return None
    if any(_reassociation(dims, groups) is None for dims in operand_dims):
        return None
    if any(len(groups[_group_of(groups)[d]]) > 1 for d in _indexed_loops(op)):
        return None  # the body reads a joined loop's index, which one collapsed loop no longer gives
    return groups


def _group_of(groups: Groups) -> dict[int, int]:
    return {loop: g for g, group in enumerate(groups) for loop in group}


def _index_ops(op: ir.Operation) -> list[ir.Operation]:
    """The ``linalg.index`` ops of ``op``'s body."""
    return [inner.operation for inner in op.regions[0].blocks[0].operations if inner.operation.name == "linalg.index"]


def _indexed_loops(op: ir.Operation) -> set[int]:
    return {ir.IntegerAttr(index.attributes["dim"]).value for index in _index_ops(op)}


def _contraction_groups(op: ir.Operation) -> Groups | None:
    """The groups of a contraction whose M, N or K runs over several loops: each role's loops in the
    order its output (for K: its left operand) reads them; None where it has no such role or they cannot be
    collapsed (see :func:`_legal`)."""
    if not linalg.isa_contraction_op(op) or len(op.operands) != 3:
        return None
    found = linalg.infer_contraction_dimensions(op)
    operand_dims = _operand_dims(op)
    if found is None or operand_dims is None:
        return None
    output, lhs = operand_dims[2], operand_dims[0]
    # M and N loops are the output's, K loops the left operand's: each role in the order they read it. Batch
    # loops stay loops: every kernel runs them as independent products (attention's heads among them).
    roles = [sorted(found.m, key=output.index), sorted(found.n, key=output.index), sorted(found.k, key=lhs.index)]
    if sum(map(len, roles)) + len(found.batch) != len(ir.ArrayAttr(op.attributes["iterator_types"])):
        return None
    everything = [[loop] for loop in found.batch] + [[loop] for role in roles for loop in role]
    # Each role's loops join where they can on their own (an operand's reading of one group does not depend on
    # another's), the others stay loops.
    groups: Groups = [[loop] for loop in found.batch]
    for role in filter(None, roles):
        alone = [group for group in everything if group[0] not in role]
        groups += [role] if _legal(op, sorted([role, *alone], key=min)) else [[loop] for loop in role]
    return _legal(op, sorted(groups, key=min))


def _expanded_input_groups(op: ir.Operation) -> Groups | None:
    """The groups that the first input read whole through an expansion gives ``op`` (the expansion's groups of
    dimensions, as loops), the other loops alone; None where there is none or ``op`` cannot be collapsed."""
    operand_dims = _operand_dims(op)
    if operand_dims is None:
        return None
    loops = len(ir.ArrayAttr(op.attributes["iterator_types"]))
    for value, dims in zip(op.operands, operand_dims, strict=True):
        owner = value.owner
        if isinstance(owner, ir.Block) or owner.name != "tensor.expand_shape" or dims != list(range(loops)):
            continue
        joined = [[dims[d] for d in group] for group in _reassociation_attr(owner.operation)]
        return _legal(op, sorted(joined, key=min))
    return None


def _reassociation_attr(op: ir.Operation) -> list[list[int]]:
    """A collapse_shape's or expand_shape's reassociation."""
    return [[ir.IntegerAttr(d).value for d in group] for group in ir.ArrayAttr(op.attributes["reassociation"])]


def _collapse(op: ir.Operation, groups: Groups) -> None:
    """Rewrite ``op`` in place over collapsed operands, loop ``i`` the ``i``-th group, its result expanded back to
    its type for every op that reads it."""
    operand_dims = _operand_dims(op)
    assert operand_dims is not None
    group_of = _group_of(groups)
    iterators = list(ir.ArrayAttr(op.attributes["iterator_types"]))
    result = op.results[0]
    old_type = ir.RankedTensorType(result.type)
    init = op.operands[len(op.operands) - 1]
    replaced: list[ir.Operation] = []
    with ir.InsertionPoint(op), op.location:
        sizes = _dynamic_sizes(init)
        maps = []
        for i, (value, dims) in enumerate(zip(op.operands, operand_dims, strict=True)):
            reassociation = _reassociation(dims, groups)
            assert reassociation is not None
            if any(len(group) > 1 for group in reassociation):
                producer = None if isinstance(value.owner, ir.Block) else value.owner.operation
                # An op may read one value twice (an elementwise op's input is its init): one producer to erase.
                if producer is not None and all(producer != other for other in replaced):
                    replaced.append(producer)
                op.operands[i] = _collapsed(value, reassociation, op)
            reads = [dims[group[0]] for group in reassociation]
            maps.append(ir.AffineMapAttr.get(ir.AffineMap.get(len(groups), 0, [
                ir.AffineConstantExpr.get(0) if loop is None else ir.AffineDimExpr.get(group_of[loop])
                for loop in reads])))
    for index in _index_ops(op):  # a loop alone in its group, renumbered
        loop = ir.IntegerAttr(index.attributes["dim"]).value
        index.attributes["dim"] = ir.IntegerAttr.get(ir.IntegerType.get_signless(64), group_of[loop])
    op.attributes["indexing_maps"] = ir.ArrayAttr.get(maps)
    op.attributes["iterator_types"] = ir.ArrayAttr.get([iterators[group[0]] for group in groups])
    reassociation = _reassociation(operand_dims[-1], groups)
    assert reassociation is not None
    result.set_type(op.operands[len(op.operands) - 1].type)
    with ir.InsertionPoint.after(op), op.location:
        expanded = tensor.expand_shape(old_type, result, _reassociation_value(reassociation), sizes,
                                       ir.DenseI64ArrayAttr.get(list(old_type.shape)))
    result.replace_all_uses_except(expanded, expanded.owner.operation)
    _erase_unused(replaced)


def _dynamic_sizes(init: ir.Value) -> list[ir.Value]:
    """The dynamic sizes of ``init`` (an op's init, of its result's shape), at the insertion point: an empty
    tensor's own, through the fill of one, else read with ``tensor.dim``."""
    owner = init.owner
    while not isinstance(owner, ir.Block) and owner.name == "linalg.fill":
        owner = owner.operation.operands[1].owner
    if not isinstance(owner, ir.Block) and owner.name == "tensor.empty":
        return list(owner.operation.operands)
    shape = ir.RankedTensorType(init.type).shape
    return [tensor.dim(init, _index(d)) for d, size in enumerate(shape) if ir.ShapedType.is_dynamic_size(size)]


def _index(value: int) -> ir.Value:
    return arith.constant(ir.IndexType.get(), value)


def _reassociation_value(reassociation: list[list[int]]) -> ir.ArrayAttr:
    i64 = ir.IntegerType.get_signless(64)
    return ir.ArrayAttr.get([ir.ArrayAttr.get([ir.IntegerAttr.get(i64, d) for d in group])
                             for group in reassociation])


def _collapsed_type(type_: ir.RankedTensorType, reassociation: list[list[int]]) -> ir.RankedTensorType:
    shape = list(type_.shape)
    sizes = [ir.ShapedType.get_dynamic_size() if any(ir.ShapedType.is_dynamic_size(shape[d]) for d in group)
             else math.prod(shape[d] for d in group) for group in reassociation]
    return ir.RankedTensorType.get(sizes, type_.element_type, type_.encoding)


def _collapsed(value: ir.Value, reassociation: list[list[int]], reader: ir.Operation) -> ir.Value:
    """``value`` collapsed by ``reassociation``, at the insertion point: the source of an expansion by the same
    groups as it is; an empty tensor (or its fill) made at the collapsed shape, so that an init stays a fill that
    kernels recognize; else a ``tensor.collapse_shape``."""
    type_ = ir.RankedTensorType(value.type)
    wanted = _collapsed_type(type_, reassociation)
    owner = value.owner
    if not isinstance(owner, ir.Block):
        if owner.name == "tensor.expand_shape" and _reassociation_attr(owner.operation) == reassociation \
                and owner.operation.operands[0].type == wanted:
            return owner.operation.operands[0]
        if owner.name == "tensor.empty":
            return _empty(owner.operation, type_, wanted, reassociation)
        if owner.name == "linalg.fill" and len(owner.operation.operands) == 2:
            scalar, target = owner.operation.operands
            return linalg.fill(scalar, outs=[_collapsed(target, reassociation, reader)])
    for use in value.uses:  # one collapse of a value for every reader after it (a dual GEMM's one A)
        other = use.owner.operation
        if other.name == "tensor.collapse_shape" and _reassociation_attr(other) == reassociation \
                and other.block == reader.block and other.is_before_in_block(reader):
            return other.results[0]
    # Right after the value is defined where the reader's block defines it, so that every later reader shares it.
    owner = value.owner
    if isinstance(owner, ir.Block):
        where = ir.InsertionPoint.at_block_begin(owner) if owner == reader.block else ir.InsertionPoint(reader)
    else:
        where = ir.InsertionPoint.after(owner.operation) if owner.operation.block == reader.block \
            else ir.InsertionPoint(reader)
    with where:
        return tensor.collapse_shape(wanted, value, _reassociation_value(reassociation))


def _empty(op: ir.Operation, type_: ir.RankedTensorType, wanted: ir.RankedTensorType,
           reassociation: list[list[int]]) -> ir.Value:
    """A ``tensor.empty`` of ``wanted``, the collapse of the empty tensor ``op`` makes: each dynamic size the
    product of its group's dynamic sizes (``op``'s own operands) and static ones."""
    shape = list(type_.shape)
    dynamic = iter(op.operands)
    sizes = {d: next(dynamic) for d, s in enumerate(shape) if ir.ShapedType.is_dynamic_size(s)}
    mixed: list[int | ir.Value] = []
    for group in reassociation:
        unknown = [sizes[d] for d in group if d in sizes]
        static = math.prod(shape[d] for d in group if d not in sizes)
        if not unknown:
            mixed.append(static)
            continue
        size = unknown[0]
        for other in unknown[1:]:
            size = arith.muli(size, other)
        mixed.append(size if static == 1 else arith.muli(size, _index(static)))
    return tensor.empty(mixed, wanted.element_type, encoding=wanted.encoding)


def _erase_unused(ops: list[ir.Operation]) -> None:
    """Erase those of ``ops`` (each once in the list) that made an init or an expansion nothing reads any more,
    then their producers of the same kinds."""
    pending = list(ops)
    while pending:
        op = pending.pop()
        if op.name not in ("tensor.empty", "linalg.fill", "tensor.expand_shape", "tensor.dim", "arith.constant"):
            continue
        if any(len(list(r.uses)) for r in op.results):
            continue
        producers = [v.owner.operation for v in op.operands if not isinstance(v.owner, ir.Block)]
        op.erase()
        pending.extend(p for p in producers if all(p != q for q in pending))
