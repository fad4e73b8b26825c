"""The runtime of the program's run-time checks in this process (:mod:`prism.codegen.cpu.assertions`): compiled
once, the address of its ``prism_assert_failed`` that each compiled module with checks is given, and its record of
the first failed check, which calls of such modules clear and read one at a time."""

from __future__ import annotations

import ctypes
import functools
import threading
from collections.abc import Callable

from mlir import ir
from mlir.execution_engine import ExecutionEngine

from prism.codegen.cpu.assertions import runtime_text

# Calls of modules with checks, one at a time in this process: the record is the process's.
_CALLS = threading.Lock()


@functools.cache
def _runtime() -> tuple[int, ctypes.c_int64]:
    """The address of ``prism_assert_failed`` and the record, as a ctypes integer over its memory. The engine is
    never destroyed."""
    with ir.Context(), ir.Location.unknown():
        module = ir.Module.parse(runtime_text())
        engine = ExecutionEngine(module, opt_level=3)
    engine.initialize()
    _KEEP.append(engine)
    entry, record = ctypes.c_void_p(), ctypes.c_void_p()
    for name, result in (("prism_assert_entry", entry), ("prism_assert_record", record)):
        packed = (ctypes.c_void_p * 1)(ctypes.addressof(result))  # the packed wrapper's arguments: the result
        ctypes.CFUNCTYPE(None, ctypes.c_void_p)(engine.raw_lookup(name))(packed)
    assert entry.value and record.value, "the checks' runtime returned no address"
    return entry.value, ctypes.c_int64.from_address(record.value)


def failed_address() -> int:
    """The address of ``prism_assert_failed`` in this process."""
    return _runtime()[0]


def run_checked(entry: Callable[[int], None], words: int) -> int | None:
    """Call ``entry(words)``, a function of a module with checks; the index of the first check that failed in the
    call (first to reach the record, on any thread), or None."""
    record = _runtime()[1]
    with _CALLS:
        record.value = -1
        entry(words)
        first = record.value
    return None if first < 0 else first


_KEEP: list[ExecutionEngine] = []
