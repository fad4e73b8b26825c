"""Parallel loops as calls into the host's thread pool (see :mod:`.pool`).

Two steps, either side of the conversion to the LLVM dialect:

1. :func:`outline_parallel_loops`, on buffers: each outermost
   ``scf.parallel`` (one-dimensional, no reductions) moves into a private
   function over a range of its iterations, the *task*::

       func.func private @__prism_task_f_0(%begin: index, %end: index, <captured values>...) {
         scf.for %t = %begin to %end step %c1 { %i = lb + t * step; <the loop's body> }
       }

   and the loop becomes a call of the task's *launch* over every iteration,
   ``@__prism_task_f_0_launch(%c0, %trips, <captured values>...)``, a
   declaration for now, marked with the width (threads) to run on.
   Constants the body uses are cloned into the task, not passed, so the
   code generator still sees them.
2. :func:`define_launches`, on the LLVM dialect, where every captured value
   is a scalar, a pointer or a vector (memref descriptors are spread into
   their fields): each launch stores its arguments in a context record on
   its stack and calls ``prism_parallel_for`` with an *entry*,
   ``(ctx, begin, end)``, which loads them back and calls the task.
"""

from __future__ import annotations

from mlir import ir
from mlir.dialects import arith, func, scf

from prism.codegen.cpu import pool
from prism.infra.diagnostics import display_location
from prism.infra.errors import PassFailed
from prism.infra.ir import fresh_symbol, relocate, symbol_names

PREFIX = "__prism_task_"
WIDTH = "prism.parallel_width"  # on a launch declaration: the threads its loop may run on


def outline_parallel_loops(module: ir.Module, width: int) -> int:
    """Move every outermost ``scf.parallel`` into a task and call its launch (step 1 above); the count.

    Loops with reductions (results) or several dimensions stay where they
    are and run in order, as do all loops when ``width`` is 1.
    """
    if width <= 1:
        return 0
    count = 0
    taken = symbol_names(module)
    for function in [op.operation for op in module.body.operations if op.operation.name == "func.func"]:
        loops: list[ir.Operation] = []

        def visit(op: ir.Operation, loops: list[ir.Operation] = loops) -> ir.WalkResult:
            if op.name == "scf.parallel" and not len(op.results) and len(op.regions[0].blocks[0].arguments) == 1:
                loops.append(op)
                return ir.WalkResult.SKIP  # nested loops run inside their task, in order
            return ir.WalkResult.ADVANCE

        function.walk(visit, ir.WalkOrder.PRE_ORDER)
        name = ir.StringAttr(function.attributes["sym_name"]).value
        for index, loop in enumerate(loops):
            task = fresh_symbol(taken, f"{PREFIX}{name}_{index}", ("", "_launch", "_entry"))
            taken.update(task + suffix for suffix in ("", "_launch", "_entry"))
            _outline(function, loop, task, width)
            count += 1
    return count


def _inside(op: ir.Operation | ir.OpView, ancestor: ir.Operation) -> bool:
    """Whether ``op`` is ``ancestor`` or nested in it."""
    op = op.operation
    while op is not None:
        if op == ancestor:
            return True
        op = op.parent
    return False


def _defining_op(value: ir.Value) -> ir.Operation:
    owner = value.owner
    return owner.owner if isinstance(owner, ir.Block) else owner.operation


def _captured(loop: ir.Operation) -> list[ir.Value]:
    """The values defined outside ``loop`` that its body uses, its lower bound and step first."""
    lb, _, step = loop.operands
    seen: list[ir.Value] = [lb] if lb == step else [lb, step]

    def visit(op: ir.Operation) -> ir.WalkResult:
        for value in op.operands if op != loop else []:
            if value not in seen and not _inside(_defining_op(value), loop):
                seen.append(value)
        return ir.WalkResult.ADVANCE

    loop.walk(visit, ir.WalkOrder.PRE_ORDER)
    return seen


def _is_constant(value: ir.Value) -> bool:
    owner = value.owner
    return (not isinstance(owner, ir.Block) and owner.operation.name == "arith.constant")


def _outline(function: ir.Operation, loop: ir.Operation, name: str, width: int) -> None:
    lb, ub, step = loop.operands
    captured = _captured(loop)
    passed = [v for v in captured if not _is_constant(v)]
    index = ir.IndexType.get()
    signature = ([index, index, *(v.type for v in passed)], [])
    with loop.location:
        with ir.InsertionPoint(function):  # before it
            task = func.FuncOp(name, signature, visibility="private")
            launch = func.FuncOp(f"{name}_launch", signature, visibility="private")
        launch.operation.attributes[WIDTH] = ir.IntegerAttr.get(ir.IntegerType.get_signless(64), width)
        entry = task.add_entry_block()
        begin, end, *args = entry.arguments
        mapping = dict(zip(passed, args, strict=True))
        with ir.InsertionPoint(entry):
            for value in captured:
                if _is_constant(value):
                    mapping[value] = value.owner.operation.clone().results[0]
            one = arith.ConstantOp(index, 1).result
            trips = scf.ForOp(begin, end, one)
            func.ReturnOp([])
        body = loop.regions[0].blocks[0]
        with ir.InsertionPoint(trips.body):
            iv = arith.addi(mapping.get(lb, lb), arith.muli(trips.induction_variable, mapping.get(step, step)))
            terminator = scf.YieldOp([])
        for op in list(body.operations)[:-1]:  # all but the scf.reduce terminator
            op.move_before(terminator)
        body.arguments[0].replace_all_uses_with(iv)
        for value, replacement in mapping.items():
            for use in list(value.uses):
                if _inside(use.owner, task.operation):
                    use.owner.operands[use.operand_number] = replacement
        with ir.InsertionPoint(loop):
            zero = arith.ConstantOp(index, 0).result
            span = arith.subi(ub, lb)
            positive = arith.cmpi(arith.CmpIPredicate.sgt, span, zero)
            count = arith.select(positive, arith.ceildivsi(span, step), zero)
            func.CallOp([], ir.FlatSymbolRefAttr.get(f"{name}_launch"), [zero, count, *passed])
    loop.erase()


def define_launches(module: ir.Module) -> None:
    """Give each launch declaration its body, and its entry (step 2 above), in the LLVM dialect."""
    functions = {_symbol(op): op for op in (op.operation for op in module.body.operations) if op.name == "llvm.func"}
    declarations = [op for op in functions.values() if WIDTH in op.attributes]
    if not declarations:
        return
    entries = [name for name, op in functions.items() if pool.is_entry(op)]
    entry = entries[0] if entries else fresh_symbol(symbol_names(module), pool.ENTRY)
    parts = [] if entries else [pool.declaration(entry)]
    tasks = [_symbol(op).removesuffix("_launch") for op in declarations]
    for task, declaration in zip(tasks, declarations, strict=True):
        types = [str(a.type) for a in functions[task].regions[0].blocks[0].arguments]
        parts.append(_launch_text(task, types, ir.IntegerAttr(declaration.attributes[WIDTH]).value, entry))
    with module.context, ir.Location.unknown():
        try:
            parsed = ir.Module.parse("\n".join(parts))
        except ir.MLIRError as error:  # Prism's own text: say which tasks, at the op they came from
            messages = [d.message for d in error.error_diagnostics] or [str(error)]
            raise PassFailed(f"the thread-pool tasks {', '.join('@' + t for t in tasks)} do not parse: "
                             f"{messages[0]}", location=display_location(declarations[0].location)) from None
    where = {_symbol(op): op.location for op in declarations}
    for op in parsed.body.operations:  # each task's text at the loop it runs
        task = _symbol(op.operation).removesuffix("_launch").removesuffix("_entry")
        relocate(op.operation, where.get(f"{task}_launch", declarations[0].location))
    for declaration in declarations:
        declaration.erase()
    for op in list(parsed.body.operations):
        if _symbol(op.operation) not in tasks:  # a task's declaration is there only so that the text parses
            module.body.append(op.operation)


def _symbol(op: ir.Operation) -> str:
    return ir.StringAttr(op.attributes["sym_name"]).value


def _launch_text(task: str, types: list[str], width: int, entry: str) -> str:
    """The task's declaration (for parsing), its entry and its launch, which calls the pool's ``entry``, as
    LLVM-dialect text."""
    if types[:2] != ["i64", "i64"]:
        raise PassFailed(f"@{task} does not start with its range (i64, i64) after lowering: {types}")
    fields = types[2:]
    record = f"!llvm.struct<(i64{''.join(', ' + t for t in fields)})>"
    signature = ", ".join(types)
    loads, stores = [], []
    for i, t in enumerate(["i64", *fields]):
        loads += [f"    %p{i} = llvm.getelementptr %ctx[0, {i}] : (!llvm.ptr) -> !llvm.ptr, {record}",
                  f"    %a{i} = llvm.load %p{i} : !llvm.ptr -> {t}"]
        stores += [f"    %p{i} = llvm.getelementptr %ctx[0, {i}] : (!llvm.ptr) -> !llvm.ptr, {record}",
                   f"    llvm.store %a{i}, %p{i} : {t}, !llvm.ptr"]
    args = ", ".join(f"%a{i}" for i in range(1, len(fields) + 1))
    params = ", ".join(f"%a{i}: {t}" for i, t in enumerate(fields, start=1))
    return "\n".join([
        f"llvm.func @{task}({signature})",
        f"llvm.func internal @{task}_entry(%ctx: !llvm.ptr, %begin: i64, %end: i64) {{",
        *loads,
        "    %lo = llvm.add %a0, %begin : i64",
        "    %hi = llvm.add %a0, %end : i64",
        f"    llvm.call @{task}(%lo, %hi{', ' if args else ''}{args}) : ({signature}) -> ()",
        "    llvm.return",
        "}",
        f"llvm.func internal @{task}_launch(%a0: i64, %end: i64{', ' if params else ''}{params}) {{",
        "    %one = llvm.mlir.constant(1 : i64) : i64",
        f"    %ctx = llvm.alloca %one x {record} : (i64) -> !llvm.ptr",
        *stores,
        "    %n = llvm.sub %end, %a0 : i64",
        f"    %fn = llvm.mlir.addressof @{task}_entry : !llvm.ptr",
        f"    %width = llvm.mlir.constant({width} : i64) : i64",
        f"    llvm.call @{entry}(%fn, %ctx, %n, %width) : (!llvm.ptr, !llvm.ptr, i64, i64) -> ()",
        "    llvm.return",
        "}",
    ])
