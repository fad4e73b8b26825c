"""The program's run-time checks (``cf.assert``) as calls the host runtime answers with an error, not an abort.

MLIR lowers ``cf.assert`` to LLVM as a message and a call of ``abort()``,
which would end the process that called the compiled function (torch-mlir
checks every gathered index this way). Before the conversion to LLVM, each
check becomes a branch taken when it fails::

    cf.assert %ok, "index must be smaller than dim size"

    %true = arith.constant true
    %failed = arith.xori %ok, %true : i1
    scf.if %failed {
      %c0 = arith.constant 0 : i64
      func.call @prism_assert_failed(%c0) : (i64) -> ()
    }

with the check's index in the module's table. The function is declared in
the module with that table as ``prism.assertions``: per check, in order,
its message and the ``file:line:col`` of its ``cf.assert``. A program that
has a symbol of that name calls ``prism_assert_failed_1`` (the first name it
leaves free) instead; the table marks the declaration either way. The JIT
links the declaration to the runtime's ``prism_assert_failed``
(:func:`runtime_text`), which keeps the first index it is given, one atomic
compare-and-swap per failed check on any thread; :mod:`prism.runtime.checks`
clears that record before a call, and :mod:`prism.runtime.cpu` raises the
check it names after it.

The program runs on after a failed check: the checks are the program's
guards, so what follows one may read out of bounds (a gathered index past
its dimension reads past the array), and a wild index may crash the process
as it would in a program without the check; the call's results are
discarded.
"""

from __future__ import annotations

from mlir import ir
from mlir.dialects import arith, func, scf

from prism.infra.diagnostics import display_location
from prism.infra.ir import fresh_symbol, iter_ops, symbol_names

ENTRY = "prism_assert_failed"
TABLE = "prism.assertions"  # on the declaration: one {message, location} per check, by index


def route_assertions(module: ir.Module) -> int:
    """Replace each ``cf.assert`` of ``module`` by a call of the declared entry when it fails (see above); the
    number of checks. A module without checks is left as it is."""
    checks = [op for op in iter_ops(module) if op.name == "cf.assert"]
    if not checks:
        return 0
    name = fresh_symbol(symbol_names(module), ENTRY)
    i1, i64 = ir.IntegerType.get_signless(1), ir.IntegerType.get_signless(64)
    table = []
    for index, check in enumerate(checks):
        table.append(ir.DictAttr.get({"message": check.attributes["msg"],
                                      "location": ir.StringAttr.get(display_location(check.location))}))
        with ir.InsertionPoint(check), check.location:
            failed = arith.xori(check.operands[0], arith.ConstantOp(i1, 1).result)
            branch = scf.IfOp(failed)
            with ir.InsertionPoint(branch.then_block):
                func.CallOp([], ir.FlatSymbolRefAttr.get(name), [arith.ConstantOp(i64, index).result])
                scf.YieldOp([])
        check.erase()
    with ir.InsertionPoint(module.body), module.operation.location:
        declaration = func.FuncOp(name, ([i64], []), visibility="private")
    declaration.operation.attributes[TABLE] = ir.ArrayAttr.get(table)
    return len(checks)


def is_entry(op: ir.Operation) -> bool:
    """Whether the ``llvm.func`` ``op`` declares the entry that failed checks call (it carries the table)."""
    return TABLE in op.attributes


def table(op: ir.Operation) -> list[tuple[str, str]]:
    """The checks of the entry's declaration ``op``, by index: (message, ``file:line:col``)."""
    entries = [ir.DictAttr(entry) for entry in ir.ArrayAttr(op.attributes[TABLE])]
    return [(ir.StringAttr(e["message"]).value, ir.StringAttr(e["location"]).value) for e in entries]


def runtime_text() -> str:
    """The runtime that failed checks call, as an LLVM-dialect module: ``prism_assert_failed(i64 index)`` keeps
    ``index`` in the record unless the record holds one already (it is -1 when clear), and
    ``prism_assert_record()`` returns the record's address."""
    return _RUNTIME


_RUNTIME = f"""
module {{
  llvm.mlir.global internal @record(-1 : i64) {{alignment = 8 : i64}} : i64
  llvm.func @{ENTRY}(%index: i64) {{
    %record = llvm.mlir.addressof @record : !llvm.ptr
    %clear = llvm.mlir.constant(-1 : i64) : i64
    %kept = llvm.cmpxchg %record, %clear, %index seq_cst seq_cst : !llvm.ptr, i64
    llvm.return
  }}
  llvm.func @prism_assert_record() -> !llvm.ptr {{
    %record = llvm.mlir.addressof @record : !llvm.ptr
    llvm.return %record : !llvm.ptr
  }}
  llvm.func @prism_assert_entry() -> !llvm.ptr {{
    %entry = llvm.mlir.addressof @{ENTRY} : !llvm.ptr
    llvm.return %entry : !llvm.ptr
  }}
}}
"""
