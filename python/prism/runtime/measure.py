"""Measure schedules of a family on this machine: compile its payload with a choice and time it.

Measurement is the last stage of the funnel (``prism-select{measure=K}``): it
runs only on the few points the cost model ranks best. Inputs are random;
every dynamic dimension takes the same size, ``assume``, which keeps the
operands of a contraction consistent with each other. The candidates of one
payload read the same arrays: where an operand streams from memory, two
arrays of the same size can read at rates 1.5x apart (their pages lie
differently), which would outweigh the schedules' difference
(benchmarks/RESULTS.md, "Measurements behind rules in the code": one input
array for every candidate).

A call is timed where the cost model assumes its inputs lie: where the target
says they stream from memory (``MeasuredTarget.sweep_bytes``: in the whole
program, other work passes through the caches between two calls), every timed
call follows a sweep that writes over ``sweep_bytes`` (twice the L3), so that
it does not find them in the cache the last call left them in.
"""

from __future__ import annotations

import functools
import time
from collections.abc import Callable

import numpy as np
from mlir import ir

from prism.infra.passbase import PassContext
from prism.infra.pipeline import parse_pipeline, run_pipeline
from prism.runtime.cpu import describe_signature, jit
from prism.search.family import annotate_payload, make_int_dict

CANDIDATE = "prism_candidate"
REPEATS = 5  # timed calls of a candidate, after a warm-up: the fastest counts


def _candidate_module(body: ir.Operation, choice: dict[str, int]) -> ir.Module:
    """A module holding only ``body`` as public @prism_candidate, its contraction annotated with ``choice``."""
    module = ir.Module.create()
    clone = body.clone()
    module.body.append(clone)
    clone.attributes["sym_name"] = ir.StringAttr.get(CANDIDATE)
    del clone.attributes["sym_visibility"]
    block = clone.regions[0].blocks[0]
    header = block.operations[0]  # the prism.family: the candidate is plain payload
    kind = ir.StringAttr(header.attributes["kind"]).value
    header.erase()
    payload = [op.operation for op in block.operations][:-1]  # without the return
    annotate_payload(payload, kind, make_int_dict(choice))
    return module


def _random_inputs(module: ir.Module, assume: int, seed: int) -> tuple[np.ndarray, ...]:
    """The candidate's inputs: the same arrays for every candidate of one payload (of the last few payloads).

    An integer scalar argument is a size the body reads (an attention's
    body sizes its inits so): it takes ``assume``, as dynamic dimensions do.
    """
    signature = describe_signature(module, CANDIDATE)
    specs = tuple((None if spec.shape is None else tuple(assume if d is None else d for d in spec.shape),
                   np.dtype(spec.dtype)) for spec in signature.inputs)
    return _drawn(specs, assume, seed)


@functools.lru_cache(maxsize=4)
def _drawn(specs: tuple[tuple[tuple[int, ...] | None, np.dtype], ...], assume: int,
           seed: int) -> tuple[np.ndarray, ...]:
    rng = np.random.default_rng(seed)
    return tuple(np.asarray(assume, dtype) if shape is None and dtype.kind in "iu"
                 else rng.standard_normal(shape or ()).astype(dtype) for shape, dtype in specs)


def fastest_seconds(run: Callable[[], object], repeats: int, sweep_bytes: int = 0) -> float:
    """Seconds of the fastest of ``repeats`` calls of ``run`` after one warm-up call, each after writing over
    ``sweep_bytes`` (untimed; none by default) to evict what the last call left in the caches.

    The fastest call, because interference from other work on the machine
    only ever adds time.
    """
    sweep = np.zeros(sweep_bytes, dtype=np.uint8) if sweep_bytes else None
    run()
    times = []
    for _ in range(repeats):
        if sweep is not None:
            sweep += 1
        start = time.perf_counter()
        run()
        times.append(time.perf_counter() - start)
    return min(times)


def compile_candidate(body: ir.Operation, choice: dict[str, int], lowering: str, assume: int = 1024,
                      seed: int = 0) -> Callable[[], object]:
    """A call of the payload ``body`` scheduled by ``choice`` and lowered by the pipeline ``lowering`` (a
    target's, for a target whose code runs here), on random inputs drawn once."""
    module = _candidate_module(body, choice)
    run_pipeline(module, parse_pipeline(lowering), PassContext())
    run = jit(module, CANDIDATE)
    inputs = _random_inputs(module, assume, seed)
    return lambda: run(*inputs)


def measure_seconds(body: ir.Operation, choice: dict[str, int], lowering: str, assume: int = 1024,
                    repeats: int = REPEATS, sweep_bytes: int = 0) -> float:
    """Seconds of the fastest of ``repeats`` calls of the payload ``body`` scheduled by ``choice`` and lowered
    by the pipeline ``lowering`` (a target's, for a target whose code runs here), after a warm-up; each call
    after a sweep over ``sweep_bytes`` where that is not 0 (see the module docstring)."""
    return fastest_seconds(compile_candidate(body, choice, lowering, assume), repeats, sweep_bytes)
