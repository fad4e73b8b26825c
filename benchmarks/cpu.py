"""Prism's host (CPU) code against numpy, torch, torch.compile, torch's fused attention and IREE llvm-cpu, in one run.

Usage:

    .venv/bin/python benchmarks/cpu.py                      # every workload (long: run it on a quiet machine)
    .venv/bin/python benchmarks/cpu.py --quick              # small cases, few repeats: a smoke test (~2 min)
    .venv/bin/python benchmarks/cpu.py --only 'decode|swiglu-16x' --repeats 20
    .venv/bin/python benchmarks/cpu.py --list               # the workload names

Each workload (``benchmarks/cpu_workloads.py``: GEMMs, RMSNorm+linear,
SwiGLU, RMSNorm+MLP, QKV, LoRA, attention, causal and QK-norm attention,
row ops, all f32; and ``bf16-*`` rows, see below) is generated as MLIR
with its weights marked ``{prism.invariant}`` and run by every contender:

- ``prism``: ``prism.compile(text, target="host").jit(NAME)``, called with every argument;
- ``prism-bound``: ``compiled.bind(NAME, w=W, ...)``, called with the activations only;
- ``numpy``, ``torch`` (eager, no grad), ``torch.compile`` (default mode; compilation not timed);
- ``sdpa``, for attention workloads only: ``torch.nn.functional.scaled_dot_product_attention`` (``is_causal`` for
  causal ones), after any prologue in torch eager;
- ``iree`` and ``iree-dt``: the same MLIR through IREE's llvm-cpu backend, with default flags and with data
  tiling; weights are uploaded once as device arrays, activations passed as numpy arrays, results read back;
- ``iree-prism``: what Prism writes for IREE (``emit="iree"``: its choices as ``compilation_info``) through
  IREE with the default flags: not a baseline, it is compared with ``iree``.

The ``bf16-*`` rows (``--only bf16``) have bf16 arguments: a GEMM (f32
result), SwiGLU (bf16 result) and attention (f32 result), their products of
bf16 operands accumulated in f32. torch (eager, ``torch.compile``, ``sdpa``)
runs them on bf16 tensors in bf16, as a bf16 model does, and returns bf16
(``torch.matmul`` of bf16 tensors gives bf16: Prism's GEMM writes twice its
bytes, f32); numpy runs only the GEMM, in f32 on the same values (a
reference: numpy has no bf16 arithmetic); the IREE contenders are skipped.
A skipped contender is recorded with its reason. A bf16 result is right within
``BF16_TOLERANCE`` (2e-2) of the output's scale, not ``--tolerance``.

A contender that fails to build is recorded with its error and the run goes
on; Prism is first built in a child process, so that a build that hangs
(``--build-timeout``) or crashes is recorded too. Every result is compared
with a float64 numpy reference; a wrong one is marked ``wrong`` and is never
the best baseline. Contenders are timed in blocks of consecutive calls, each
block after a pause and untimed calls (``--warmup``), in alternating order
over the rounds: OpenBLAS's threads spin for about 0.1 s after a numpy call
and would slow whatever ran next. The figure is the median of all timed calls.

Writes ``cpu.json`` (everything), ``cpu.md`` (the table) and ``cpu.png``
(Prism's speedup over the best baseline) to ``--out``: ``benchmarks/results``
for a full run, ``out/cpu`` for ``--quick`` or ``--only``.
"""

from __future__ import annotations

import argparse
import datetime
import functools
import gc
import json
import math
import os
import re
import shlex
import statistics
import subprocess
import sys
import time
import traceback
import zlib
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import ml_dtypes
import numpy as np
from cpu_workloads import BF16_TOLERANCE, QUICK, NumpyOps, TorchOps, Workload, all_workloads
from environment import host_rates, machine, versions

import prism
from prism.calibrate import gemm_gflops
from prism.runtime.measure import fastest_seconds

RESULTS = Path(__file__).resolve().parent / "results"
PARTIAL_RESULTS = Path(__file__).resolve().parent.parent / "out" / "cpu"  # git ignores out/
PACKAGES = ("prism", "numpy", "torch", "iree-base-compiler", "iree-base-runtime", "xtc-mlir-python-bindings")
PRISM = ("prism", "prism-bound")
# IREE with Prism's configurations: compared with IREE's defaults, not with the baselines.
IREE_CONFIGURED = ("iree-prism",)
BASELINES = ("numpy", "torch", "torch.compile", "sdpa", "iree", "iree-dt")
IREE_FLAGS = {
    "iree": ["--iree-llvmcpu-target-cpu=host"],
    "iree-dt": ["--iree-llvmcpu-target-cpu=host", "--iree-opt-data-tiling"],
}
# The geomean rows: these layers of a model, at these row counts (decode to prefill).
GEOMEAN_FAMILIES = ("rmsnorm-linear", "lora", "qkv", "swiglu")
GEOMEAN_ROWS = (1, 16, 128)
# The fused geomean: the workloads that fusion is for, at every shape, as written.
FUSED_FAMILIES = ("swiglu", "rmsnorm-mlp", "rmsnorm-linear", "qk-norm-attention")
BANDWIDTH_ROWS = 16  # at most this many activation rows: the weights' bytes bound the time


@dataclass
class Outcome:
    """What happened to one contender on one workload."""

    status: str = "ok"  # ok | wrong | failed | skipped (the contender does not run the workload: error says why)
    error: str | None = None
    traceback: str | None = None  # of a failure, for cpu.json
    build_seconds: float | None = None
    max_rel_error: float | None = None
    times_ms: list[float] = field(default_factory=list)

    @property
    def median_ms(self) -> float | None:
        """The median call, unless the contender failed."""
        return statistics.median(self.times_ms) if self.times_ms and self.status != "failed" else None


# ---- Contenders: each builds a function of no arguments that runs the workload once ------------------------------

Build = Callable[[Workload, dict[str, np.ndarray]], Callable[[], Any]]


@functools.lru_cache(maxsize=1)
def _prism_compile(workload: Workload) -> Any:
    """The compiled module (with the kernels in its report), or the error: both Prism contenders share one
    compilation, even a failed one."""
    try:
        return prism.compile(workload.mlir, target="host", emit="report")
    except prism.PrismError as error:
        return error


# Prism is built once in a child process first: a build that hangs or crashes there is recorded, not met here.
PRISM_CHILD = """import sys, prism
prism.compile(sys.stdin.read(), target="host").jit(sys.argv[1])
"""


class BuildAborted(RuntimeError):
    """Building Prism's code hung or crashed (in the child process)."""


def prism_hazard(workload: Workload, timeout: float) -> BuildAborted | None:
    """Why building Prism's code in this process would hang or crash it; None if the child process built it."""
    command = [sys.executable, "-c", PRISM_CHILD, workload.func]
    try:
        child = subprocess.run(command, input=workload.mlir.encode(), capture_output=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return BuildAborted(f"prism.compile and jit took over {timeout:g} s (--build-timeout)")
    if child.returncode < 0:
        tail = child.stderr.decode(errors="replace").strip().splitlines()[-5:]
        return BuildAborted(f"prism.compile and jit died of signal {-child.returncode}: " + "\n".join(tail))
    return None  # built, or refused with an error that the build here will raise again


def _prism_compiled(workload: Workload) -> Any:
    found = _prism_compile(workload)
    if isinstance(found, prism.PrismError):
        raise found
    return found


def build_prism(workload: Workload, inputs: dict[str, np.ndarray]) -> Callable[[], Any]:
    """Prism as written: every argument on every call."""
    f = _prism_compiled(workload).jit(workload.func)
    arrays = [inputs[a.name] for a in workload.args]
    return lambda: f(*arrays)


def build_prism_bound(workload: Workload, inputs: dict[str, np.ndarray]) -> Callable[[], Any]:
    """Prism with the weights bound once: the activations on every call."""
    bound = _prism_compiled(workload).bind(workload.func, **{a.name: inputs[a.name] for a in workload.weights})
    activations = [inputs[a.name] for a in workload.activations]
    return lambda: bound(*activations)


def build_numpy(workload: Workload, inputs: dict[str, np.ndarray]) -> Callable[[], Any]:
    """numpy in float32, as a user writes it (bf16 arguments converted to f32 once, before the timing)."""
    arrays = [np.asarray(inputs[a.name], np.float32) for a in workload.args]
    return lambda: workload.compute(NumpyOps, *arrays)


def torch_tensor(array: np.ndarray) -> Any:
    """A torch tensor of ``array``'s values in torch's own memory, as a torch user's tensors are: bf16
    (``ml_dtypes.bfloat16``) arrays as torch.bfloat16. (numpy's buffers are 16-byte aligned, torch's 64: oneDNN's
    bf16 products ran 1.7x slower on numpy's memory, benchmarks/RESULTS.md, "bf16 on AMX tiles".)"""
    import torch

    if array.dtype == ml_dtypes.bfloat16:
        return torch.from_numpy(array.view(np.int16)).view(torch.bfloat16).clone()
    return torch.from_numpy(array).clone()


def _torch_build(compile_it: bool) -> Build:
    """torch eager on the numpy arrays' memory, or ``torch.compile`` of the same function."""

    def build(workload: Workload, inputs: dict[str, np.ndarray]) -> Callable[[], Any]:
        import torch

        fn = functools.partial(workload.compute, TorchOps)
        if compile_it:
            torch.compiler.reset()  # otherwise dynamo's per-function cache of shapes fills up and falls back to eager
            fn = torch.compile(fn)
        tensors = [torch_tensor(inputs[a.name]) for a in workload.args]
        for _ in range(3 if compile_it else 0):  # compile and settle before the timing starts
            fn(*tensors)
        return lambda: fn(*tensors)

    return build


def build_sdpa(workload: Workload, inputs: dict[str, np.ndarray]) -> Callable[[], Any]:
    """torch's fused attention (``scaled_dot_product_attention``, its default scale 1/sqrt(d)) on the workload's
    q, k and v, whatever prologue made them done by torch eager."""
    import torch.nn.functional as F  # noqa: N812

    tensors = [torch_tensor(inputs[a.name]) for a in workload.args]

    def call() -> tuple[Any]:
        q, k, v = workload.attention(TorchOps, *tensors)
        return (F.scaled_dot_product_attention(q, k, v, is_causal=workload.causal),)

    return call


# Contenders that only some workloads have: the others leave them out.
APPLIES: dict[str, Callable[[Workload], bool]] = {"sdpa": lambda workload: workload.attention is not None}


def skipped(name: str, workload: Workload) -> str | None:
    """Why contender ``name`` does not run ``workload`` (recorded as skipped), or None if it does."""
    if workload.dtype != "bf16":
        return None
    if name == "numpy" and workload.family != "bf16-gemm":
        return "numpy has no bf16 arithmetic (ml_dtypes' bfloat16 has no BLAS); its f32 reference runs on the GEMM only"
    if name.startswith("iree"):
        return "bf16 rows compare Prism with torch's bf16; IREE on bf16 arguments is not measured"
    return None

# iree.compiler's own MLIR bindings cannot be loaded beside Prism's (nanobind symbols clash), so it compiles in a
# child process; compile_str itself runs the iree-compile tool anyway.
IREE_COMPILE = """import sys, iree.compiler
text = sys.stdin.read()
sys.stdout.buffer.write(iree.compiler.compile_str(text, target_backends=["llvm-cpu"], extra_args=sys.argv[1:]))
"""


class IreeCompileError(RuntimeError):
    """iree-compile refused a workload."""


def iree_compile(text: str, flags: Sequence[str]) -> bytes:
    """The vmfb of ``text`` for llvm-cpu."""
    child = subprocess.run([sys.executable, "-c", IREE_COMPILE, *flags], input=text.encode(), capture_output=True)
    if child.returncode:
        lines = child.stderr.decode(errors="replace").strip().splitlines()
        raise IreeCompileError("\n".join(line for line in lines if "error:" in line) or "\n".join(lines[-20:]))
    return child.stdout


@functools.cache
def shared_iree_config() -> Any:
    """One IREE device (local-task) for every IREE contender, as a program has: each device has its own
    workers, and those of one contender's device, still spinning, slowed the next contender by up to 3x
    (LoRA 16x1024, 2026-12-02)."""
    import iree.runtime as rt

    return rt.Config("local-task")


def _iree_build(flags: Sequence[str], configured: bool = False) -> Build:
    """IREE llvm-cpu on the local-task driver: weights uploaded once, activations passed, results read back.
    ``configured``: the module Prism writes for IREE (``emit="iree"``: its choices as compilation_info)."""

    def build(workload: Workload, inputs: dict[str, np.ndarray]) -> Callable[[], Any]:
        import iree.runtime as rt

        text = prism.compile(workload.mlir, target="host", emit="iree").iree if configured else workload.mlir
        vmfb = iree_compile(text, flags)
        config = shared_iree_config()
        context = rt.SystemContext(config=config)
        context.add_vm_module(rt.VmModule.copy_buffer(context.instance, vmfb))
        fn = context.modules.module[workload.func]
        args = [rt.asdevicearray(config.device, inputs[a.name]) if a.invariant else inputs[a.name]
                for a in workload.args]

        def call() -> tuple[np.ndarray, ...]:
            results = fn(*args)
            return tuple(r.to_host() for r in (results if isinstance(results, tuple) else (results,)))

        return call

    return build


CONTENDERS: dict[str, Build] = {
    "prism": build_prism,
    "prism-bound": build_prism_bound,
    "numpy": build_numpy,
    "torch": _torch_build(compile_it=False),
    "torch.compile": _torch_build(compile_it=True),
    "sdpa": build_sdpa,
    **{name: _iree_build(flags) for name, flags in IREE_FLAGS.items()},
    "iree-prism": _iree_build(IREE_FLAGS["iree"], configured=True),
}


# ---- Measuring ----------------------------------------------------------------------------------------------------

def as_arrays(result: Any) -> tuple[np.ndarray, ...]:
    """A contender's outputs as a tuple of numpy arrays (torch tensors are viewed, not copied)."""
    items = result if isinstance(result, tuple | list) else (result,)
    # torch has no numpy type for bf16: such a tensor is checked as f32 (exactly its values).
    items = [item.float() if str(getattr(item, "dtype", "")) == "torch.bfloat16" else item for item in items]
    return tuple(np.asarray(item.numpy() if hasattr(item, "numpy") else item) for item in items)


def relative_error(got: tuple[np.ndarray, ...], want: tuple[np.ndarray, ...]) -> float:
    """The largest ``max|got - want| / max|want|`` over the outputs; inf on a shape mismatch."""
    if len(got) != len(want) or any(g.shape != w.shape for g, w in zip(got, want, strict=True)):
        return math.inf
    got = tuple(g.astype(np.float64) if g.dtype == ml_dtypes.bfloat16 else g for g in got)
    errors = [np.max(np.abs(g - w)) / max(np.max(np.abs(w)), 1e-30) for g, w in zip(got, want, strict=True)]
    return float(np.max(errors))  # np.max, unlike max, lets a NaN through


def describe(error: BaseException) -> str:
    """``Type: message``."""
    return f"{type(error).__name__}: {error}".strip()


def build_all(workload: Workload, inputs: dict[str, np.ndarray], reference: tuple[np.ndarray, ...],
              names: Sequence[str], tolerance: float, build_timeout: float,
              ) -> tuple[dict[str, Outcome], dict[str, Callable[[], Any]]]:
    """Build and check every contender; the callables of those that built."""
    outcomes, calls = {}, {}
    _prism_compile.cache_clear()
    hazard = prism_hazard(workload, build_timeout) if build_timeout and set(PRISM) & set(names) else None
    for name in names:
        if not APPLIES.get(name, lambda _: True)(workload):
            continue
        outcome = outcomes[name] = Outcome()
        reason = skipped(name, workload)
        if reason:
            outcome.status, outcome.error = "skipped", reason
            progress(f"{workload.name}: {name} skipped: {reason}")
            continue
        start = time.perf_counter()
        try:
            if hazard and name in PRISM:
                raise hazard
            call = CONTENDERS[name](workload, inputs)
            outcome.build_seconds = round(time.perf_counter() - start, 3)
            rel_error = relative_error(as_arrays(call()), reference)
        except Exception as error:  # a contender that cannot run is a result, not a crash
            outcome.status, outcome.error, outcome.traceback = "failed", describe(error), traceback.format_exc()
            progress(f"{workload.name}: {name} failed: {outcome.error.splitlines()[0][:300]}")
            continue
        if math.isfinite(rel_error):
            outcome.max_rel_error = rel_error
        else:
            outcome.error = "outputs of the wrong shapes" if rel_error == math.inf else "NaN or inf in the outputs"
        if not rel_error <= tolerance:
            outcome.status = "wrong"
        calls[name] = call
        progress(f"{workload.name}: {name} built in {outcome.build_seconds:.1f} s, "
                 f"rel. error {rel_error:.1e} ({outcome.status})")
    _prism_compile.cache_clear()
    return outcomes, calls


def time_blocks(calls: dict[str, Callable[[], Any]], repeats: int, rounds: int, pause: float,
                warmup: float) -> dict[str, list[float]]:
    """Milliseconds per call: ``rounds`` blocks per contender, alternating the order, ``repeats`` calls in all.

    Before each block, untimed calls for ``warmup`` seconds (one at least): they bring the operands back into the
    caches after the other contenders, and the machine back to speed after the pause.
    """
    per_block = max(1, math.ceil(repeats / rounds))
    times: dict[str, list[float]] = {name: [] for name in calls}
    order = list(calls)
    for round_index in range(rounds):
        for name in order if round_index % 2 == 0 else reversed(order):
            time.sleep(pause)
            start = time.perf_counter()
            calls[name]()
            while time.perf_counter() - start < warmup:
                calls[name]()
            for _ in range(per_block):
                start = time.perf_counter()
                calls[name]()
                times[name].append((time.perf_counter() - start) * 1e3)
    return times


def read_gbps(size_bytes: int, repeats: int) -> float:
    """GB/s of reading ``size_bytes`` once on every core (a max-reduction of a slice per thread; the fastest pass)."""
    cores = len(os.sched_getaffinity(0))
    slices = np.array_split(np.ones(max(cores, size_bytes // 4), np.float32), cores)
    with ThreadPoolExecutor(cores) as pool:
        seconds = fastest_seconds(lambda: list(pool.map(np.max, slices)), repeats)
    return size_bytes / seconds / 1e9


def progress(message: str) -> None:
    """A progress line on stderr."""
    print(f"[cpu.py {time.strftime('%H:%M:%S')}] {message}", file=sys.stderr, flush=True)


# ---- One workload ----------------------------------------------------------------------------------------------

def run_workload(workload: Workload, args: argparse.Namespace, names: Sequence[str]) -> dict[str, Any]:
    """Build, check and time every contender on ``workload``; its record for cpu.json."""
    rng = np.random.default_rng([args.seed, zlib.crc32(workload.name.encode())])
    inputs = workload.inputs(rng)
    reference = tuple(np.asarray(r) for r in workload.compute(NumpyOps, *(inputs[a.name].astype(np.float64)
                                                                          for a in workload.args)))
    tolerance = args.tolerance if workload.tolerance is None else workload.tolerance
    outcomes, calls = build_all(workload, inputs, reference, names, tolerance, args.build_timeout)
    del reference
    gc.collect()
    for name, times in time_blocks(calls, args.repeats, args.rounds, args.pause, args.warmup).items():
        outcomes[name].times_ms = [round(t, 4) for t in times]
        progress(f"{workload.name}: {name} {statistics.median(times):.3f} ms ({outcomes[name].status})")
    record: dict[str, Any] = {
        "name": workload.name, "family": workload.family, "func": workload.func, "rows": workload.rows,
        "flops": workload.flops, "dtype": workload.dtype, "tolerance": tolerance,
        "bytes": workload.nbytes, "weights": [a.name for a in workload.weights],
        "contenders": {name: {**asdict(o), "median_ms": o.median_ms} for name, o in outcomes.items()},
    }
    compiled = _prism_compile(workload)
    if not isinstance(compiled, prism.PrismError):
        # The kernels the host code runs, per function: as written, and each prepared or applied part.
        record["kernels"] = {f["function"]: f["count"] for f in compiled.report.get("kernels", [])}
    ok = {name: o.median_ms for name, o in outcomes.items() if o.status == "ok"}
    best = min((name for name in BASELINES if name in ok), key=ok.__getitem__, default=None)
    record["best_baseline"] = best
    record["best_baseline_ms"] = ok.get(best)
    for name in PRISM:
        record[f"{name}_speedup"] = ok[best] / ok[name] if best and name in ok else None
    if workload.rows <= BANDWIDTH_ROWS or workload.memory_bound:
        record["read_gbps"] = read_gbps(workload.nbytes, args.bandwidth_repeats)
        for name in PRISM:
            record[f"{name}_gbps"] = workload.nbytes / ok[name] / 1e6 if name in ok else None
    del calls, inputs
    gc.collect()
    return record


# ---- Reports ---------------------------------------------------------------------------------------------------

def geomean(values: Sequence[float]) -> float | None:
    """The geometric mean, or None of nothing."""
    return math.exp(statistics.fmean(math.log(v) for v in values)) if values else None


def geomeans(records: Sequence[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    """Prism's geomean speedup over the best baseline on the model-layer workloads, as written and bound."""
    chosen = [r for r in records if r["family"] in GEOMEAN_FAMILIES and r["rows"] in GEOMEAN_ROWS]
    result = {}
    for name in PRISM:
        speedups = [r[f"{name}_speedup"] for r in chosen if r[f"{name}_speedup"]]
        result[name] = {"geomean_speedup": geomean(speedups), "workloads": len(speedups), "of": len(chosen),
                        "families": list(GEOMEAN_FAMILIES), "rows": list(GEOMEAN_ROWS)}
    return result


def fused_geomean(records: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """Prism's geomean speedup, as written, over the fused workloads (FUSED_FAMILIES) at every shape."""
    chosen = [r for r in records if r["family"] in FUSED_FAMILIES]
    speedups = [r["prism_speedup"] for r in chosen if r["prism_speedup"]]
    return {"geomean_speedup": geomean(speedups), "workloads": len(speedups), "of": len(chosen),
            "families": list(FUSED_FAMILIES)}


def _ms(value: float | None) -> str:
    return "" if value is None else f"{value:.3f}" if value < 10 else f"{value:.1f}"


def _cell(contender: dict[str, Any]) -> str:
    if contender["status"] in ("failed", "skipped"):
        return contender["status"]
    return _ms(contender["median_ms"]) + (" (wrong)" if contender["status"] == "wrong" else "")


def _speedup(value: float | None) -> str:
    return "" if value is None else f"{value:.2f}×"


def markdown(report: dict[str, Any]) -> str:
    """cpu.md: header, one row per workload, the geomean rows and the errors."""
    meta = report["meta"]
    others = [n for n in (*BASELINES, *IREE_CONFIGURED) if n in meta["contenders"]]
    lines = [
        "# Prism on the host CPU, against every baseline in one run",
        "",
        f"- date: {meta['date']}; machine: {meta['machine']}; load average at the start "
        f"{', '.join(map(str, meta['load_average']))}",
        f"- Prism's cost model: {meta.get('host_rates', 'not recorded')}",
        f"- versions: {meta['versions']}; torch threads {meta['torch_threads']}",
        f"- command: `{meta['command']}`",
        f"- peaks, same run: numpy sgemm {meta['sgemm_gflops']:.1f} GFLOP/s (n = {meta['sgemm_n']}); "
        f"read {meta['decode_read_gbps']:.1f} GB/s streaming a {meta['decode_weight_mib']} MiB buffer "
        "(the decode weight) on every core",
        f"- IREE flags: default `{' '.join(IREE_FLAGS['iree'])}`; data tiling `{' '.join(IREE_FLAGS['iree-dt'])}`",
        f"- method: {meta['method']}",
        "",
        "Times are in ms (median); speedup = best baseline / Prism. GB/s (rows ≤ 16, and row ops alone): bytes of "
        "every argument / Prism's time, written / bound, next to the read bandwidth for a buffer of that size.",
        "",
        "Kernels: how many the host code of the function as written runs (`--emit=report`).",
        "",
        "| workload | best baseline | ms | Prism | speedup | Prism bound | speedup | "
        + " | ".join(others) + " | GB/s (written / bound) | read GB/s | kernels |",
        "|" + " --- |" * (10 + len(others)),
    ]
    for r in report["workloads"]:
        c = r["contenders"]
        gbps = " / ".join(f"{r[f'{n}_gbps']:.1f}" if r.get(f"{n}_gbps") else "–" for n in PRISM)
        lines.append(" | ".join([
            f"| {r['name']}", r["best_baseline"] or "none", _ms(r["best_baseline_ms"]),
            _cell(c["prism"]) if "prism" in c else "", _speedup(r["prism_speedup"]),
            _cell(c["prism-bound"]) if "prism-bound" in c else "", _speedup(r["prism-bound_speedup"]),
            *(_cell(c[n]) if n in c else "–" for n in others),
            gbps if "read_gbps" in r else "", f"{r['read_gbps']:.1f}" if "read_gbps" in r else "",
            str(r.get("kernels", {}).get(f"@{r['func']}", "")) if "func" in r else "",
        ]) + " |")
    for column, (name, g) in zip((4, 6), report["geomeans"].items(), strict=True):
        cells = [""] * (10 + len(others))
        cells[0] = (f"**geomean, {'bound' if name == 'prism-bound' else 'as written'}** "
                    f"({', '.join(GEOMEAN_FAMILIES)}; n ∈ {{{', '.join(map(str, GEOMEAN_ROWS))}}}; "
                    f"{g['workloads']} of {g['of']} workloads)")
        cells[column] = f"**{_speedup(g['geomean_speedup'])}**" if g["geomean_speedup"] else "n/a"
        lines.append("| " + " | ".join(cells) + " |")
    fused = report.get("fused_geomean")
    if fused and fused["of"]:
        cells = [""] * (10 + len(others))
        cells[0] = (f"**geomean, fused workloads as written** ({', '.join(FUSED_FAMILIES)}; "
                    f"{fused['workloads']} of {fused['of']} workloads)")
        cells[4] = f"**{_speedup(fused['geomean_speedup'])}**" if fused["geomean_speedup"] else "n/a"
        lines.append("| " + " | ".join(cells) + " |")
    ratios = [r["contenders"]["iree"]["median_ms"] / r["contenders"]["iree-prism"]["median_ms"]
              for r in report["workloads"] if all(r["contenders"].get(n, {}).get("status") == "ok"
                                                  for n in ("iree", "iree-prism"))]
    if ratios:
        lines += ["", f"IREE with Prism's configurations (`iree-prism`) against IREE's defaults (`iree`): "
                  f"geomean {_speedup(geomean(ratios))} over {len(ratios)} workloads, from {_speedup(min(ratios))} "
                  f"to {_speedup(max(ratios))}."]
    failures = [(r["name"], n, c["error"]) for r in report["workloads"] for n, c in r["contenders"].items()
                if c["status"] == "failed"]
    if failures:
        lines += ["", "## Failures", ""]
        lines += [f"- {w}, {n}: `{error.splitlines()[0][:400]}`" for w, n, error in failures]
    skips = sorted({(n, c["error"]) for r in report["workloads"] for n, c in r["contenders"].items()
                    if c["status"] == "skipped"})
    if skips:
        lines += ["", "## Skipped", ""]
        lines += [f"- {n}: {reason}" for n, reason in skips]
    return "\n".join(lines) + "\n"


def chart(report: dict[str, Any], path: Path) -> None:
    """cpu.png: Prism's speedup over the best baseline per workload, as written and bound (log scale)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import matplotlib.ticker

    records = report["workloads"]
    fig, ax = plt.subplots(figsize=(9, 1.5 + 0.32 * len(records)))
    y = np.arange(len(records))
    for offset, name, label in ((-0.2, "prism", "as written"), (0.2, "prism-bound", "bound")):
        values = np.array([r[f"{name}_speedup"] or np.nan for r in records])
        # Bars grow from 1.0 (parity) to the speedup, left for slower, right for faster.
        ax.barh(y + offset, values - 1, left=1, height=0.4, label=label)
        for row, value in zip(y + offset, values, strict=True):
            right = not value < 1  # NaN (failed, or no baseline) is labelled at 1.0
            ax.annotate(f"{value:.2f}" if np.isfinite(value) else "n/a", (value if np.isfinite(value) else 1, row),
                        xytext=(3 if right else -3, 0), textcoords="offset points", ha="left" if right else "right",
                        va="center", fontsize=7)
    ax.axvline(1.0, color="black", linewidth=1)
    ax.set_xscale("log")
    ax.margins(x=0.15)
    ax.xaxis.set_major_locator(matplotlib.ticker.LogLocator(subs=(1, 2, 5)))
    ax.xaxis.set_major_formatter(matplotlib.ticker.FuncFormatter(lambda value, _: f"{value:g}×"))
    ax.xaxis.set_minor_formatter(matplotlib.ticker.NullFormatter())
    ax.set_yticks(y, [f"{r['name']} (vs {r['best_baseline'] or 'none'})" for r in records])
    ax.invert_yaxis()
    ax.set_xlabel("Prism's speedup over the best baseline (its time / Prism's time; log scale)")
    meta = report["meta"]
    dtypes = ", ".join(sorted({r.get("dtype", "f32") for r in records}, key=["f32", "bf16"].index))
    ax.set_title(f"Prism on {meta['machine']}, {meta['date'].replace('T', ' ')}; {dtypes}, host code", fontsize=10)
    ax.legend(loc="best")
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def write_outputs(report: dict[str, Any], out: Path, with_chart: bool) -> None:
    """cpu.json and cpu.md (after every workload, so that a long run leaves its results so far), and cpu.png."""
    out.mkdir(parents=True, exist_ok=True)
    report["geomeans"] = geomeans(report["workloads"])
    report["fused_geomean"] = fused_geomean(report["workloads"])
    (out / "cpu.json").write_text(json.dumps(report, indent=1, allow_nan=False) + "\n")
    (out / "cpu.md").write_text(markdown(report))
    if with_chart:
        chart(report, out / "cpu.png")


# ---- Main ------------------------------------------------------------------------------------------------------

def command_line() -> str:
    """This run's command, to paste into a shell."""
    python = os.path.relpath(sys.executable) if sys.executable.startswith(os.getcwd()) else sys.executable
    return shlex.join([python, *sys.argv])


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    """The options, with the defaults that depend on --quick and --only filled in."""
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog="workload names: gemm-512, decode-4096, gemm-m16-4096, rmsnorm-linear-8x1024, swiglu-16x4096,\n"
               "  rmsnorm-mlp-1x4096, qkv-128x4096, lora-1x4096, attention-2x8x1x1024x128, ... (see --list)")
    parser.add_argument("--only", metavar="REGEX", help="run the workloads whose name this matches (re.search)")
    parser.add_argument("--quick", action="store_true",
                        help=f"a smoke test: {', '.join(QUICK)}; 4 timed calls each; small peak measures")
    parser.add_argument("--list", action="store_true", help="print the selected workload names and exit")
    parser.add_argument("--contenders", metavar="REGEX", default=".",
                        help=f"run only the contenders this matches, of: {', '.join(CONTENDERS)}")
    parser.add_argument("--repeats", type=int, help="timed calls per contender (default 24; 4 with --quick)")
    # Many short blocks rather than a few long ones: on a shared machine a slow spell that takes one block of a
    # few moves the median. Decode-4096 (1.2-1.8 ms a call, 2026-12-03), as written and bound: 4 blocks of 3
    # calls gave 0.98x and 1.32x numpy in one run, 20 blocks in one process 1.14x and 1.13x; with 2 blocks, one
    # block had run at 2.1-2.2 ms and the other at 1.5-1.7 ms.
    parser.add_argument("--rounds", type=int, help="blocks per contender, in alternating order (8; 2 with --quick)")
    parser.add_argument("--pause", type=float, default=0.2, help="seconds of sleep before each block (0.2)")
    # After the pause the first calls run slow and speed up over ~10 ms (decode-4096, 2026-12-03: 1.9-2.5 ms, then
    # 1.2-1.7 ms by the fifth call, numpy and Prism alike); one untimed call left the timed ones on that slope.
    parser.add_argument("--warmup", type=float, default=0.05,
                        help="seconds of untimed calls after each pause, one call at least (0.05)")
    parser.add_argument("--tolerance", type=float, default=1e-3,
                        help="a result is wrong when max|out - ref| > this x max|ref| (1e-3)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the random inputs (0)")
    parser.add_argument("--build-timeout", type=float,
                        help="seconds Prism may take to compile and jit a workload, tried first in a child process, "
                             "so that a hang or crash is recorded instead of stopping the run (900; 120 with --quick; "
                             "0: build in this process only)")
    parser.add_argument("--out", type=Path, help="output folder (benchmarks/results; with --quick or --only out/cpu "
                        "in the repository, so that a partial run never replaces the recorded results)")
    args = parser.parse_args(argv)
    if args.repeats is None:
        args.repeats = 4 if args.quick else 24
    if args.rounds is None:
        args.rounds = 2 if args.quick else 8
    args.out = args.out or (PARTIAL_RESULTS if args.quick or args.only else RESULTS)
    args.bandwidth_repeats = 3 if args.quick else 10
    if args.build_timeout is None:
        args.build_timeout = 120 if args.quick else 900
    if args.rounds < 1 or args.repeats < 1:
        parser.error("--rounds and --repeats must be positive")
    if args.pause < 0 or args.warmup < 0:
        parser.error("--pause and --warmup must not be negative")
    return args


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point."""
    args = parse_args(argv)
    workloads = [w for w in all_workloads() if (not args.quick or w.name in QUICK)
                 and (args.only is None or re.search(args.only, w.name))]
    names = [n for n in CONTENDERS if re.search(args.contenders, n)]
    if args.list:
        print("\n".join(w.name for w in workloads))
        return 0
    if not workloads or not names:
        print("cpu.py: error: no workload or no contender selected (see --list)", file=sys.stderr)
        return 1
    import torch

    torch.set_grad_enabled(False)
    sgemm_n, decode_bytes = (512 if args.quick else 2048), 4096 * 4096 * 4
    progress(f"measuring the peaks: numpy sgemm n = {sgemm_n}, reading {decode_bytes >> 20} MiB")
    meta = {
        "date": datetime.datetime.now().isoformat(timespec="seconds"), "machine": machine(),
        "load_average": [round(load, 2) for load in os.getloadavg()],  # other work on the machine skews every figure
        "versions": versions(*PACKAGES), "torch_threads": torch.get_num_threads(), "command": command_line(),
        "host_rates": host_rates(),
        "contenders": names, "iree_flags": IREE_FLAGS, "tolerance": args.tolerance, "seed": args.seed,
        "repeats": args.repeats, "rounds": args.rounds, "pause_s": args.pause, "warmup_s": args.warmup,
        "sgemm_n": sgemm_n, "sgemm_gflops": gemm_gflops(sgemm_n, args.bandwidth_repeats),
        "decode_weight_mib": decode_bytes >> 20, "decode_read_gbps": read_gbps(decode_bytes, args.bandwidth_repeats),
        "method": f"median of {args.repeats} calls per contender in {args.rounds} blocks (alternating order, "
                  f"{args.pause} s pause, then untimed calls for {args.warmup} s, one at least, before each); "
                  f"results within {args.tolerance:g} × max|reference| (bf16 rows: {BF16_TOLERANCE:g}) of a "
                  "float64 numpy reference on the same values; read GB/s: "
                  "a max-reduction over a buffer of the workload's bytes on every core, fastest pass",
    }
    report: dict[str, Any] = {"meta": meta, "workloads": []}
    for index, workload in enumerate(workloads, 1):
        progress(f"[{index}/{len(workloads)}] {workload.name}: {workload.nbytes / 2**20:.1f} MiB of arguments, "
                 f"{workload.flops / 1e9:.2f} GFLOP")
        report["workloads"].append(run_workload(workload, args, names))
        write_outputs(report, args.out, with_chart=False)
    write_outputs(report, args.out, with_chart=True)
    print(markdown(report))
    progress(f"wrote {args.out / 'cpu.json'}, {args.out / 'cpu.md'} and {args.out / 'cpu.png'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
