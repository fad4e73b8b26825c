"""bf16 products into f32 on the host's AVX512-BF16 dot products (prism.codegen.cpu.kernel_bf16): against float64
numpy on the same bf16 values, over odd shapes, a batch and an init that is not zero; and the choice of path by
the machine's flags. Where this machine has no AVX512-BF16, the kernel is checked as IR and LLVM
(tests/filecheck/codegen/cpu-stages-bf16.mlir) and never run."""

from __future__ import annotations

import re
from pathlib import Path

import ml_dtypes
import numpy as np
import pytest

import prism
from conftest import REFERENCE_HOST
from prism.codegen.cpu.kernel import SWEEP_AHEAD_ROWS, SWEEP_AHEAD_SLICES
from prism.codegen.cpu.kernel_bf16 import STREAMED_ACCUMULATORS, Bf16Plan, kernel_text, plan_for
from prism.kernels.host_gemm import PREFETCH_STREAMS
from prism.targets.host_machine import Machine

INPUTS = Path(__file__).resolve().parents[1] / "filecheck" / "Inputs"
RUNS_HERE = bool(Machine.here().bf16_dot)
# A machine with AVX512-BF16 and no AMX: on this one the runs below take the dot products, whatever else it has.
WITHOUT_AMX = INPUTS / "host-avx512-bf16.json"


def product(m: int, k: int, n: int, batch: int | None = None, accumulate: bool = False) -> str:
    """@mm: A (m x k) times B (k x n), bf16, into f32 (from zero, or onto the argument C)."""
    lead = f"{batch}x" if batch else ""
    a, b, c = (f"tensor<{lead}{m}x{k}xbf16>", f"tensor<{lead}{k}x{n}xbf16>", f"tensor<{lead}{m}x{n}xf32>")
    op = "linalg.batch_matmul" if batch else "linalg.matmul"
    start = ["%init = linalg.fill ins(%zero : f32) outs(%e : " + c + ") -> " + c] if not accumulate else []
    init = "%c" if accumulate else "%init"
    extra = f", %c: {c}" if accumulate else ""
    return "\n".join([
        f"func.func @mm(%a: {a}, %b: {b}{extra}) -> {c} {{",
        "  %zero = arith.constant 0.0 : f32",
        f"  %e = tensor.empty() : {c}",
        *[f"  {line}" for line in start],
        f"  %r = {op} ins(%a, %b : {a}, {b}) outs({init} : {c}) -> {c}",
        f"  return %r : {c}",
        "}"])


def kinds(text: str) -> list[str]:
    report = prism.compile(text, target="host", emit="report").report
    return [kernel["kind"] for function in report["kernels"] for kernel in function["kernels"]]


def test_the_dot_product_kernel_is_chosen_by_the_machines_flags(describe_host) -> None:
    text = product(33, 131, 70)
    describe_host(INPUTS / "host-avx512-bf16.json")
    assert kinds(text) == ["gemm (bf16 dot products)"]
    describe_host(INPUTS / "host-avx512.json")
    assert kinds(text) == ["gemm (transform path)"]
    describe_host(REFERENCE_HOST)
    assert kinds(text) == ["gemm (transform path)"]


def test_an_f32_product_never_takes_it(describe_host) -> None:
    describe_host(INPUTS / "host-avx512-bf16.json")
    text = product(33, 131, 70).replace("bf16", "f32")
    assert "gemm (bf16 dot products)" not in kinds(text)


def bounded(got: np.ndarray, a: np.ndarray, b: np.ndarray, start: np.ndarray | None = None) -> None:
    """``got`` against the float64 product of the bf16 values, within the rounding of an f32 sum of K exact
    products (each bf16 product is exact in f32): K ulps of f32 of the sum of the magnitudes, per element."""
    a64, b64 = a.astype(np.float64), b.astype(np.float64)
    want = a64 @ b64 + (0 if start is None else start.astype(np.float64))
    scale = np.abs(a64) @ np.abs(b64) + (0 if start is None else np.abs(start))
    bound = (a.shape[-1] + 1) * 2.0**-24 * scale + 1e-30
    assert got.dtype == np.float32 and got.shape == want.shape
    assert np.all(np.abs(got - want) <= bound), float(np.max(np.abs(got - want) / bound))


@pytest.mark.skipif(not RUNS_HERE, reason="this machine has no AVX512-BF16: the kernel is checked as IR and LLVM")
@pytest.mark.parametrize(("m", "k", "n"), [(7, 5, 20), (1, 64, 16), (33, 131, 97), (100, 1, 5), (64, 255, 300),
                                           (97, 512, 130)])
def test_matches_float64(m: int, k: int, n: int, rng: np.random.Generator, describe_host) -> None:
    describe_host(WITHOUT_AMX)  # where this core has AMX too, the dot products are still the ones run here
    compiled = prism.compile(product(m, k, n), target="host")
    assert kinds(product(m, k, n)) == ["gemm (bf16 dot products)"]
    a, b = (rng.standard_normal(s).astype(ml_dtypes.bfloat16) for s in ((m, k), (k, n)))
    bounded(compiled.jit("mm")(a, b), a, b)


@pytest.mark.skipif(not RUNS_HERE, reason="this machine has no AVX512-BF16: the kernel is checked as IR and LLVM")
def test_a_batch_and_an_init_that_is_not_zero(rng: np.random.Generator, describe_host) -> None:
    describe_host(WITHOUT_AMX)
    text = product(17, 41, 50, batch=3, accumulate=True)
    assert kinds(text) == ["gemm (bf16 dot products)"]
    a, b = (rng.standard_normal(s).astype(ml_dtypes.bfloat16) for s in ((3, 17, 41), (3, 41, 50)))
    c = rng.standard_normal((3, 17, 50)).astype(np.float32)
    got = prism.compile(text, target="host").jit("mm")(a, b, c)
    bounded(got, a, b, c)


def test_a_few_rows_stream_b_in_place() -> None:
    """2 to 16 static rows take one block of rows and read B in slices of PREFETCH_STREAMS rows, in tasks two per
    worker wide (whole groups of panels); one row, more rows, or a dynamic size keep the defaults."""
    def plan(c_type: str, workers: int = 2) -> Bf16Plan:
        return plan_for("mm", "a", "b", c_type, True, workers)

    few = plan("tensor<16x11008xf32>")
    assert (few.tm, few.rm, few.nv, few.tkp) == (16, 8, 2, PREFETCH_STREAMS // 2) and not few.packs
    assert few.tn == 2752 and few.tn % (16 * few.nv) == 0
    odd = plan("tensor<5x1000xf32>", workers=3)
    assert (odd.tm, odd.rm, odd.rm * odd.nv) == (5, 5, 15) and odd.tn % (16 * odd.nv) == 0
    assert odd.tn * 6 >= 1000 > (odd.tn - 16 * odd.nv) * 6
    batched = plan("tensor<4x8x64xf32>")
    assert batched.tn == 64 and batched.rm * batched.nv == STREAMED_ACCUMULATORS
    default = Bf16Plan("mm", "a", "b", "c", True, 2)
    for c_type in ("tensor<1x4096xf32>", "tensor<17x4096xf32>", "tensor<?x4096xf32>", "tensor<8x?xf32>",
                   "tensor<?x8x64xf32>"):
        assert (plan(c_type).tm, plan(c_type).tn, plan(c_type).tkp) == (default.tm, default.tn, default.tkp), c_type


def test_b_read_in_place_is_prefetched_ahead() -> None:
    """Reading B in place, each step prefetches its two rows SWEEP_AHEAD_SLICES slices further down (at least
    SWEEP_AHEAD_ROWS), clamped to K's last row, one prefetch per cache line of the micro-tile's columns; B packed
    into panels is not prefetched."""
    few = kernel_text(plan_for("mm", "tensor<16x999xbf16>", "tensor<999x300xbf16>", "tensor<16x300xf32>", True, 2))
    ahead = max(SWEEP_AHEAD_ROWS, SWEEP_AHEAD_SLICES * 2 * PREFETCH_STREAMS // 2)
    prefetches = re.findall(r"memref\.prefetch %\w+\[(%\w+), %\w+\], read, locality<3>, data", few)
    assert len(prefetches) == 2  # two rows, one line of 32 bf16 columns (the micro-tile's two panels)
    for row in prefetches:  # min(k0 + ahead (+1), K - 1)
        clamp = re.search(rf"{row} = arith\.minui (%\w+), (%\w+) : index", few)
        assert clamp and re.search(rf"{clamp.group(2)} = arith\.subi %\w+, %c1\w* : index", few)
        assert re.search(rf"{clamp.group(1)} = arith\.addi %\w+, %c({ahead}|{ahead + 1})\w* : index", few)
    packed = kernel_text(plan_for("mm", "tensor<200x999xbf16>", "tensor<999x300xbf16>", "tensor<200x300xf32>", True,
                                 2))
    assert "memref.prefetch" not in packed


@pytest.mark.skipif(not RUNS_HERE, reason="this machine has no AVX512-BF16: the kernel is checked as IR and LLVM")
@pytest.mark.parametrize(("m", "k", "n", "batch"), [(2, 33, 7, None), (5, 100, 300, None), (8, 64, 1000, None),
                                                    (16, 257, 131, None), (4, 31, 45, 3)])
def test_a_few_rows_streamed_match_float64(m: int, k: int, n: int, batch: int | None,
                                           rng: np.random.Generator) -> None:
    """The streaming plans of a few rows (ragged slices, panels and tasks, an odd K, a batch with an init)."""
    text = product(m, k, n, batch=batch, accumulate=batch is not None)
    lead = (batch,) if batch else ()
    a, b = (rng.standard_normal(lead + s).astype(ml_dtypes.bfloat16) for s in ((m, k), (k, n)))
    start = [rng.standard_normal(lead + (m, n)).astype(np.float32)] if batch else []
    bounded(prism.compile(text, target="host").jit("mm")(a, b, *start), a, b, *start)
