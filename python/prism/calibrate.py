"""``python -m prism.calibrate``: measure this host once and save what the host target's cost model reads.

Three rates, all cores together:

- the f32 FMA rate a tuned GEMM reaches (numpy's BLAS on an n^3 product);
- the streaming bandwidth of a copy far larger than the caches (DRAM);
- the same bandwidth within half the last-level cache.

The file (``~/.config/prism/host.json``, or ``PRISM_HOST_CONFIG``) is read
by :func:`prism.targets.host.host_target`; nothing is timed during a
compilation, so outputs stay a function of the input and this file.

    .venv/bin/python -m prism.calibrate            # measure and save
    .venv/bin/python -m prism.calibrate --quick    # smaller problems, for a smoke test
"""

from __future__ import annotations

import argparse
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np

from prism.infra.errors import PrismError
from prism.runtime.measure import fastest_seconds
from prism.targets.host_calibration import Calibration, config_path
from prism.targets.host_machine import available_cores, cache_size, machine_name


def gemm_gflops(n: int, repeats: int) -> float:
    """GFLOP/s of an n x n x n f32 product through numpy's BLAS (every core)."""
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal((n, n), np.float32), rng.standard_normal((n, n), np.float32)
    out = np.empty((n, n), np.float32)
    return 2 * n**3 / fastest_seconds(lambda: np.matmul(a, b, out=out), repeats) / 1e9


def copy_gbps(size_bytes: int, cores: int, repeats: int) -> float:
    """GB/s (bytes read plus bytes written) of copying ``size_bytes`` on ``cores`` threads, a slice each."""
    count = max(cores, size_bytes // 4)
    source, target = np.ones(count, np.float32), np.empty(count, np.float32)
    bounds = np.linspace(0, count, cores + 1).astype(int)
    slices = [(source[lo:hi], target[lo:hi]) for lo, hi in zip(bounds[:-1], bounds[1:], strict=True)]
    with ThreadPoolExecutor(cores) as pool:
        def run() -> None:
            list(pool.map(lambda pair: np.copyto(pair[1], pair[0]), slices))

        return 2 * count * 4 / fastest_seconds(run, repeats) / 1e9


def calibrate(quick: bool = False) -> Calibration:
    """Measure this machine (see the module docstring)."""
    cores = available_cores()
    l3 = cache_size(3, "Unified", 32 * 1024**2)
    n, dram, repeats = (256, 64 * 1024**2, 3) if quick else (2048, 1024**3, 7)
    return Calibration(
        machine=machine_name(), cores=cores,
        gflops=round(gemm_gflops(n, repeats), 1),
        # Source and target together: twice the buffer, well past the caches.
        dram_gbps=round(copy_gbps(max(dram, 8 * l3), cores, repeats), 1),
        cache_gbps=round(copy_gbps(l3 // 4, cores, 4 * repeats), 1),
    )


def main(argv: list[str] | None = None) -> int:
    """Entry point."""
    parser = argparse.ArgumentParser(prog="python -m prism.calibrate", description=__doc__.splitlines()[0])
    parser.add_argument("-o", "--output", type=Path, default=None,
                        help=f"where to write (default: {config_path() or 'PRISM_HOST_CONFIG is empty'})")
    parser.add_argument("--quick", action="store_true", help="small problems: a smoke test, not a calibration")
    args = parser.parse_args(argv)
    path = args.output or config_path()
    if path is None:
        print("prism.calibrate: PRISM_HOST_CONFIG is empty, so there is nowhere to write; pass -o FILE",
              file=sys.stderr)
        return 1
    print(f"prism.calibrate: measuring {machine_name()} on {available_cores()} cores...", file=sys.stderr, flush=True)
    found = calibrate(args.quick)
    try:
        found.write(path)
    except OSError as error:
        print(f"{path}: error: cannot write the calibration: {error.strerror}", file=sys.stderr)
        return 1
    except PrismError as error:
        print(f"{path}: error: {error.message}", file=sys.stderr)
        return 1
    print(f"{path}: f32 GEMM {found.gflops} GFLOP/s, DRAM copy {found.dram_gbps} GB/s, "
          f"cache copy {found.cache_gbps} GB/s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
