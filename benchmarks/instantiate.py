"""Instantiating a shape-generic family: prune once, then choose a schedule per M.

Usage: .venv/bin/python benchmarks/instantiate.py [--sizes 200] [--seed 0]

The dynamic-M projection in ``benchmarks/workloads/gemm_dynamic_m.mlir`` is
pruned once per target (``h200`` and ``host``) for 1 <= M <= 8192, and a
:class:`prism.search.ShapeTable` is built from the pruned domain. Then
``--sizes`` values of M drawn uniformly from [1, 8192], and as many drawn
from the multiples of 16 in that range (sizes the GPU kernels, which need
tiles that divide M, can serve), are instantiated twice each:

- through the table (a lookup and one vectorized branch-and-bound selection);
- from scratch, as a tuner without the table would: fix M in the pruned
  domain, enumerate its points with isl, and select.

Both must pick the same schedule (checked for every M). The report gives
the one-off costs (pruning, building the table) and the median and worst
per-M time of each path over the sizes that have a schedule. A size for which
no schedule exists (on the GPU, no power-of-two tile of at least 16 divides
an odd M) must be reported as an empty space by both paths; those are
counted.

Prints Markdown ready to append to benchmarks/RESULTS.md.
"""

from __future__ import annotations

import argparse
import datetime
import statistics
import time
from pathlib import Path

import numpy as np
from environment import machine, versions
from mlir import ir

from prism.infra.errors import EmptySearchSpace
from prism.infra.ir import iter_ops, make_context
from prism.search.family import analyze_contraction
from prism.search.search import ShapeTable, candidates_at, prune, select
from prism.search.space import Contraction
from prism.targets import get_target

WORKLOAD = Path(__file__).resolve().parent / "workloads" / "gemm_dynamic_m.mlir"
MAX_M = 8192


def contraction() -> Contraction:
    """The analysis of the workload's one contraction, as prism-lift sees it."""
    with make_context():
        module = ir.Module.parse(WORKLOAD.read_text())
        return next(c for c in map(analyze_contraction, iter_ops(module)) if c is not None)


def timed(call: object, *args: object) -> tuple[float, object]:
    """Seconds of one call and its result (None when it reports an empty space)."""
    start = time.perf_counter()
    try:
        result = call(*args)
    except EmptySearchSpace:
        result = None
    return time.perf_counter() - start, result


def measure(target_name: str, sizes: list[int]) -> list[str]:
    """One target's row: one-off costs, then per-M times through the table and from scratch."""
    op, target = contraction(), get_target(target_name)
    space = target.space(op)
    prune_seconds, (domain, _) = timed(prune, space, op, space.universe_set(), None)
    build_seconds, table = timed(ShapeTable.build, space, op, domain, target, MAX_M)

    def from_scratch(m: int) -> dict[str, int]:
        return space.value_of(select(space, op, candidates_at(space, op, domain, m), target, m).best)

    table.instantiate(MAX_M)  # first-call costs of numpy, outside the figures
    fast, slow, empty = [], [], 0
    for m in sizes:
        fast_seconds, fast_choice = timed(table.instantiate, m)
        slow_seconds, slow_choice = timed(from_scratch, m)
        if fast_choice != slow_choice:
            raise SystemExit(f"{target_name}: M={m}: table chose {fast_choice}, enumeration chose {slow_choice}")
        if fast_choice is None:
            empty += 1
            continue
        fast.append(fast_seconds)
        slow.append(slow_seconds)
    points = sum(len(rows) for rows in table.rows.values())
    return [f"| {target_name} | {prune_seconds * 1e3:.1f} ms | {build_seconds * 1e3:.0f} ms "
            f"({len(table.rows)} buckets over {', '.join(table.keys)}; {points} points) | "
            f"{statistics.median(fast) * 1e6:.0f} us / {max(fast) * 1e6:.0f} us | "
            f"{statistics.median(slow) * 1e3:.1f} ms / {max(slow) * 1e3:.1f} ms | "
            f"{statistics.median(slow) / statistics.median(fast):.0f}x | {empty}/{len(sizes)} |"]


def main() -> None:
    """Measure both targets and print the Markdown section body."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", type=int, default=200, help="values of M to draw (twice: any, multiples of 16)")
    parser.add_argument("--seed", type=int, default=0, help="seed of the drawn sizes")
    args = parser.parse_args()
    rng = np.random.default_rng(args.seed)
    sizes = [int(m) for m in rng.integers(1, MAX_M + 1, size=args.sizes)]
    sizes += [16 * int(m) for m in rng.integers(1, MAX_M // 16 + 1, size=args.sizes)]
    lines = [f"- Date: {datetime.date.today()}", f"- Machine: {machine()}",
             f"- Versions: {versions('numpy', 'islpy')}",
             f"- Command: `.venv/bin/python benchmarks/instantiate.py --sizes {args.sizes} --seed {args.seed}`", "",
             "| target | prune (once) | build the table (once) | instantiate via table: median / worst "
             "| from scratch: median / worst | speedup (median) | sizes with no schedule |",
             "| --- | --- | --- | --- | --- | --- | --- |"]
    for name in ("h200", "host"):
        lines += measure(name, sizes)
    print("\n".join(lines))


if __name__ == "__main__":
    main()
