"""The host's thread pool in this process: its LLVM-dialect module (:mod:`prism.codegen.cpu.pool`) compiled
once, its workers started, and the address of ``prism_parallel_for`` that each compiled module is given."""

from __future__ import annotations

import ctypes
import functools
import os

from mlir import ir
from mlir.execution_engine import ExecutionEngine

from prism.codegen.cpu.pool import ENTRY, runtime_text

__all__ = ["ENTRY", "parallel_for_address"]


@functools.cache
def parallel_for_address() -> int:
    """The address of ``prism_parallel_for`` in this process, its workers started on first use.

    The pool has one worker fewer than the cores this process may run on
    (the caller is the last participant). The engine is never destroyed.
    """
    with ir.Context(), ir.Location.unknown():
        module = ir.Module.parse(runtime_text())
        engine = ExecutionEngine(module, opt_level=3)
    engine.initialize()
    _KEEP.append(engine)
    workers = ctypes.c_int64(max(len(os.sched_getaffinity(0)) - 1, 0))
    _call_packed(engine, "prism_pool_start", ctypes.addressof(workers))
    entry = ctypes.c_void_p()
    _call_packed(engine, "prism_pool_entry", ctypes.addressof(entry))
    assert entry.value, "prism_pool_entry returned no address"
    return entry.value


def _call_packed(engine: ExecutionEngine, name: str, *pointers: int) -> None:
    """Call ``name`` through the engine's packed wrapper: an array of pointers to each argument, then to
    the result."""
    packed = (ctypes.c_void_p * len(pointers))(*pointers)
    ctypes.CFUNCTYPE(None, ctypes.c_void_p)(engine.raw_lookup(name))(packed)


_KEEP: list[ExecutionEngine] = []
