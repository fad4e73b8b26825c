"""Shared fixtures: a seeded random generator whose seed each test prints."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

REPO = Path(__file__).resolve().parents[2]
# The tests describe the host by its defaults, whatever this machine's calibration says (and so do the CLI
# runs they start, which inherit this).
os.environ["PRISM_HOST_CONFIG"] = ""
# Several test processes share the cores: their pools' workers would all be pinned to the same CPUs, and their
# callers moved to the same first one (the timing tests, run alone, keep the placement).
if "PYTEST_XDIST_WORKER" in os.environ:
    os.environ.setdefault("PRISM_PIN_WORKERS", "0")
EXAMPLES = REPO / "examples"
# The FileCheck tests' machine: 2 cores, AVX2, a 32 KiB L1d, 512 KiB L2 and 32 MiB L3.
REFERENCE_HOST = REPO / "tests" / "filecheck" / "Inputs" / "host-avx2.json"
# The machine whose recorded rates (the zen5 family's) the tests of the cost model's picks on whole workloads
# assume: 2 Zen 5 cores, AVX-512 and AVX512-BF16, a 48 KiB L1d, 1 MiB L2 and 32 MiB L3. Which kernels win differs
# from core to core (benchmarks/cost_check.py checks each machine's picks); those tests pin this one.
TUNED_HOST = REPO / "tests" / "filecheck" / "Inputs" / "host-zen5.json"


@pytest.fixture
def describe_host(monkeypatch: pytest.MonkeyPatch) -> Iterator[Callable[..., Any]]:
    """``describe_host(description, config="")``: for the rest of the test the host target is the machine the
    description file names, with the calibration ``config`` ('' for none); returns the new host target."""
    from prism.targets.host import host_target
    from prism.targets.host_machine import DESCRIPTION_VARIABLE

    def describe(description: Path, config: Path | str = "") -> Any:
        monkeypatch.setenv(DESCRIPTION_VARIABLE, str(description))
        monkeypatch.setenv("PRISM_HOST_CONFIG", str(config))
        host_target.cache_clear()
        return host_target()

    yield describe
    host_target.cache_clear()  # before the environment is restored: the next call reads it again


@pytest.fixture
def reference_host(describe_host: Callable[..., Any]) -> None:
    """The host target is REFERENCE_HOST for the test, whatever machine runs it: for tests of a decision that
    depends on the vector width or the caches. (The others run on this machine's description.)"""
    describe_host(REFERENCE_HOST)


@pytest.fixture
def tuned_host(describe_host: Callable[..., Any]) -> None:
    """The host target is TUNED_HOST, with its family's recorded rates, for the test: for tests of the cost
    model's picks on whole workloads (f32 code compiled for it runs on any x86-64 host: LLVM splits its vectors
    where the machine's are narrower)."""
    describe_host(TUNED_HOST)


@pytest.fixture
def rng(request: pytest.FixtureRequest) -> np.random.Generator:
    """A fresh generator; the seed is printed so a failure can be replayed with PRISM_SEED."""
    seed = int(os.environ.get("PRISM_SEED", np.random.SeedSequence().entropy % 2**32))
    print(f"{request.node.name}: seed {seed} (replay with PRISM_SEED={seed})")
    return np.random.default_rng(seed)


def run_cli(*args: str, stdin: str | None = None,
            env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """Run prism-opt in a child process, so an abort would show as a signal, not kill pytest; ``env`` adds to
    this process's environment."""
    return subprocess.run([sys.executable, "-m", "prism.cli", *args], input=stdin, capture_output=True,
                          text=True, cwd=REPO, timeout=300, env={**os.environ, **(env or {})})


def lower_on_host(text: str, name: str, threads: int = 2, run: bool = True) -> tuple[str, Callable[..., Any] | None]:
    """The host lowering of ``text`` on ``threads`` workers: the IR after cpu-tile, and ``@name`` compiled (None
    with ``run=False``: lowered to LLVM alone, for code this machine may lack the units to run)."""
    from mlir import ir

    from prism.codegen.cpu import CpuLowering
    from prism.infra.ir import make_context
    from prism.infra.passbase import PassContext
    from prism.runtime.cpu import jit

    with make_context(), ir.Location.unknown():
        module = ir.Module.parse(text)
        stages = CpuLowering(threads, PassContext(), 256)
        stages.tile(module)
        tiled = str(module)
        for stage in stages.stages()[1:]:
            stage.run(module)
        return tiled, jit(module, name) if run else None


# Files whose tests share work that is expensive to set up (a module-scoped fixture, or a cache of compiles): under
# pytest-xdist each runs whole on one worker, so that work is done once, not once per worker that gets a test of it.
SHARED_SETUP = {"test_corpus.py", "test_decoder_block.py", "test_explore.py", "test_gpu_predict.py",
                "test_math_ops.py", "test_spellings.py"}


@pytest.hookimpl(optionalhook=True)  # a pytest-xdist hook: a run without it ignores this
def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    """For the default distribution (``-n`` alone: 'load'), a scheduler that hands out each file of SHARED_SETUP as
    one unit (they go first, the largest first) and every other test alone, to whichever worker is free; the
    other distributions as pytest-xdist makes them. (xdist_group marks cannot do this: pytest-xdist 3.8 groups by
    renaming node ids, which pytest 9 no longer allows.)"""
    if config.getvalue("dist") != "load":
        return None
    from xdist.scheduler import LoadScopeScheduling

    class SharedSetupScheduling(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            path = nodeid.split("::", 1)[0]
            return path if path.rsplit("/", 1)[-1] in SHARED_SETUP else nodeid

    return SharedSetupScheduling(config, log)


def fuzz_kinds(program: Any) -> set[str]:
    """What a program of the fuzzer (benchmarks/fuzz.py) exercises: each step it takes, how many, the first
    argument's rank and dynamic dimensions, the element types (f32, f16, or f16 with f32 products), several
    results, and the sizes it meets (1, odd, a power of two, 33 or more, 64). A fixed subset of seeds is chosen
    to keep every kind that a larger range of seeds has."""
    first = program.args[0]
    style = "mixed" if "arith.extf" in program.text else "f16" if any(a.dtype == "f16" for a in program.args) else "f32"
    kinds = {*program.steps, f"{len(program.steps)} steps", f"rank {len(first.shape)}", f"style {style}",
             f"{sum(d is None for d in first.shape)} dynamic"}
    dims = [d for arg in program.args for d in arg.shape if d is not None]
    sizes = {"size 1": 1 in dims, "odd size": any(d % 2 and d > 1 for d in dims),
             "power-of-two size": any(d > 1 and d & (d - 1) == 0 for d in dims),
             "size 33 or more": any(d >= 33 for d in dims), "size 64": 64 in dims,
             "several results": len(program.results) > 1}
    return kinds | {name for name, present in sizes.items() if present}
