"""The host's thread pool in this process: its LLVM-dialect module (:mod:`prism.codegen.cpu.pool`) compiled
once, its workers started, and the address of ``prism_parallel_for`` that each compiled module is given."""

from __future__ import annotations

import ctypes
import functools
import os

from mlir import ir
from mlir.execution_engine import ExecutionEngine

from prism.codegen.cpu.pool import ENTRY, runtime_text

__all__ = ["ENTRY", "PIN_VARIABLE", "parallel_for_address", "pool_cpus"]

# Set to 0, the pool's threads are left to the scheduler rather than placed (for several processes sharing the
# cores).
PIN_VARIABLE = "PRISM_PIN_WORKERS"


def pool_cpus() -> list[int]:
    """The CPU left to callers, then the CPU each worker is pinned to: the CPUs this process may run on, in
    order, one each (``-1`` for all where PIN_VARIABLE is ``0``: every thread left to the scheduler).

    Left to the scheduler, a worker woken by a call lands on the caller's
    CPU, and the two then share it while the other CPUs idle: an
    8 x 1024 x 1024 product on two cores ran in 110 us against 60
    (benchmarks/RESULTS.md, "The pool's threads placed"). A caller that
    shares a loop from a worker's CPU is moved to the first CPU.
    """
    cpus = sorted(os.sched_getaffinity(0))
    if os.environ.get(PIN_VARIABLE, "1") == "0":
        return [-1] * len(cpus)
    return cpus


@functools.cache
def parallel_for_address() -> int:
    """The address of ``prism_parallel_for`` in this process, its workers started on first use.

    The pool has one worker fewer than the cores this process may run on
    (the caller is the last participant), each pinned to a CPU of its own
    (:func:`pool_cpus`). The engine is never destroyed.
    """
    with ir.Context(), ir.Location.unknown():
        module = ir.Module.parse(runtime_text())
        engine = ExecutionEngine(module, opt_level=3)
    engine.initialize()
    _KEEP.append(engine)
    cpus = pool_cpus()
    workers = ctypes.c_int64(max(len(cpus) - 1, 0))
    table = (ctypes.c_int64 * len(cpus))(*cpus)
    where = ctypes.c_void_p(ctypes.addressof(table))
    _call_packed(engine, "prism_pool_start", ctypes.addressof(workers), ctypes.addressof(where))
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
