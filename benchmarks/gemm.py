"""GFLOP/s of Prism's host code for square f32 GEMMs, next to numpy in the same run.

Usage: .venv/bin/python benchmarks/gemm.py [--sizes 1024 512] [--repeats 10]

Prints one Markdown table row per size with the date, the machine and the
library versions, ready to paste into benchmarks/RESULTS.md.
"""

from __future__ import annotations

import argparse
import datetime
import statistics
import time

import numpy as np
from environment import machine, versions

import prism

GEMM = """func.func @gemm(%a: tensor<{n}x{n}xf32>, %b: tensor<{n}x{n}xf32>) -> tensor<{n}x{n}xf32> {{
  %zero = arith.constant 0.0 : f32
  %empty = tensor.empty() : tensor<{n}x{n}xf32>
  %acc = linalg.fill ins(%zero : f32) outs(%empty : tensor<{n}x{n}xf32>) -> tensor<{n}x{n}xf32>
  %c = linalg.matmul ins(%a, %b : tensor<{n}x{n}xf32>, tensor<{n}x{n}xf32>)
                     outs(%acc : tensor<{n}x{n}xf32>) -> tensor<{n}x{n}xf32>
  return %c : tensor<{n}x{n}xf32>
}}
"""


def median_seconds(run, repeats: int) -> float:
    """Median wall time of ``run()`` after two warm-up calls."""
    run()
    run()
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        run()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def main() -> None:
    """Measure and print the table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, nargs="+", default=[1024, 512])
    parser.add_argument("--repeats", type=int, default=10)
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    print(f"date {datetime.date.today()}; machine {machine()}; {versions('numpy', 'xtc-mlir-python-bindings')}")
    print("| n | prism GFLOP/s | numpy GFLOP/s | prism / numpy | choice |")
    print("| --- | --- | --- | --- | --- |")
    for n in args.sizes:
        start = time.perf_counter()
        compiled = prism.compile(GEMM.format(n=n), target="host")
        gemm = compiled.jit("gemm")
        compile_seconds = time.perf_counter() - start
        a, b = rng.standard_normal((n, n), np.float32), rng.standard_normal((n, n), np.float32)
        np.testing.assert_allclose(gemm(a, b), a.astype(np.float64) @ b, rtol=1e-3, atol=1e-2)
        flops = 2.0 * n**3
        ours = flops / median_seconds(lambda f=gemm, x=a, y=b: f(x, y), args.repeats) / 1e9
        theirs = flops / median_seconds(lambda x=a, y=b: x @ y, args.repeats) / 1e9
        choice = compiled.report["families"][0]["choice"]
        print(f"| {n} | {ours:.1f} | {theirs:.1f} | {ours / theirs:.2f} | {choice} (compile {compile_seconds:.1f} s) |")


if __name__ == "__main__":
    main()
