"""``python -m prism.calibrate``: measure this host once and save what the host target's cost model reads.

Three rates and a size, all cores together:

- the f32 FMA rate a tuned GEMM reaches (numpy's BLAS on an n^3 product);
- the streaming bandwidth of a copy far larger than the caches (DRAM);
- the same bandwidth within half the last-level cache, and the size of that
  cache the cores get: a ladder of copies, doubling from 8 MiB, finds where
  the rate falls (a virtual machine shares its socket's L3 with others).

And Prism's own micro-kernels, per kernel shape: every register block (RM x
RN) of the host's GEMM space, in the direct kernel and in the packed one
(the transform path), timed on a product whose blocks stay in L2, one block
per core, at several depths K (one K slice each). The slope of time over K
is the micro-tiles' steps alone: what the call, the threads and the
micro-tiles' set-up cost does not grow with K. The packed kernel's packing
phases, as the cost model counts them, are taken off its slope. Last, the
direct kernel at decode (one row of C, B twice the L3 or more): the rate at
which it streams its weights. And the attention kernel: for each register
block, its best-predicted tiles timed, and the time kept as a factor over
the model's, on heads of as many queries as keys, which stay in the cache;
and at decode the one-row blocks, on heads of one query whose keys and
values stream from memory, as a decode's do. And the pipelined copy of B (16
rows of C, the fewest it serves, B from DRAM): one task shape at each slice
depth TK, each depth's time kept over the fastest one's; and the same task
shape on a B the L3 holds, its time kept over that of the copy in a phase
of its own, which decides where the copy is pipelined.

The file (``~/.config/prism/host.json``, or ``PRISM_HOST_CONFIG``) is read
by :func:`prism.targets.host.host_target`; nothing is timed during a
compilation, so outputs stay a function of the input and this file.

    .venv/bin/python -m prism.calibrate            # measure and save
    .venv/bin/python -m prism.calibrate --quick    # smaller problems, for a smoke test
"""

from __future__ import annotations

import argparse
import dataclasses
import math
import sys
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import numpy as np
from mlir import ir

from prism.api import compile as compile_program
from prism.infra.errors import PrismError
from prism.infra.ir import make_context
from prism.runtime.measure import compile_candidate, fastest_seconds
from prism.search.family import body_func, families, payload_problem
from prism.search.search import candidates_at
from prism.search.space import fix_shape, point_array, shape_exponents
from prism.targets.base import LoweringTarget
from prism.targets.host import host_target, target_for
from prism.targets.host_calibration import KERNELS, Calibration, config_path, step_key
from prism.targets.host_machine import available_cores, cache_size, described_machine, machine_name


def gemm_gflops(n: int, repeats: int) -> float:
    """GFLOP/s of an n x n x n f32 product through numpy's BLAS (every core)."""
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal((n, n), np.float32), rng.standard_normal((n, n), np.float32)
    out = np.empty((n, n), np.float32)
    return 2 * n**3 / fastest_seconds(lambda: np.matmul(a, b, out=out), repeats) / 1e9


def copy_gbps(size_bytes: int, cores: int, repeats: int) -> float:
    """GB/s (bytes read plus bytes written) of copying ``size_bytes`` on ``cores`` threads, a slice each; a
    copy shorter than COPY_TIMED_BYTES is repeated within a timed call, so the threads' start is not timed."""
    count = max(cores, size_bytes // 4)
    source, target = np.ones(count, np.float32), np.empty(count, np.float32)
    bounds = np.linspace(0, count, cores + 1).astype(int)
    slices = [(source[lo:hi], target[lo:hi]) for lo, hi in zip(bounds[:-1], bounds[1:], strict=True)]
    times = max(1, COPY_TIMED_BYTES // (count * 4))

    def copy(pair: tuple[np.ndarray, np.ndarray]) -> None:
        for _ in range(times):
            np.copyto(pair[1], pair[0])

    with ThreadPoolExecutor(cores) as pool:
        def run() -> None:
            list(pool.map(copy, slices))

        return 2 * count * 4 * times / fastest_seconds(run, repeats) / 1e9


def cache_ladder(l3_bytes: int, cores: int, repeats: int) -> dict[int, float]:
    """Copy GB/s at each footprint (source and target together) from LADDER_FIRST_BYTES up to ``l3_bytes``,
    doubling."""
    rates, footprint = {}, LADDER_FIRST_BYTES
    while footprint <= l3_bytes:
        rates[footprint] = copy_gbps(footprint // 2, cores, repeats)
        footprint *= 2
    return rates


def effective_l3(ladder: dict[int, float], l3_bytes: int) -> int:
    """The last-level cache the cores get, from the copy rates of ``cache_ladder``: the largest footprint
    before the first that runs under CACHE_RATE_FRACTION of the fastest rate below it (``l3_bytes``, as the
    machine reports it, where none does). A virtual machine's cores share the socket's L3 with others: one
    reported 480 MiB, and copied 256 MiB (source and target) at half the rate of 128 MiB (benchmarks/RESULTS.md,
    "The L3 a virtual machine gets")."""
    fastest = 0.0
    for footprint, rate in sorted(ladder.items()):
        if fastest and rate < CACHE_RATE_FRACTION * fastest:
            return footprint // 2
        fastest = max(fastest, rate)
    return l3_bytes


# The micro-kernels' product: ROWS rows (a multiple of every register block's), COLUMNS columns per core, and
# the depths K whose times give the slope (at the deepest, a core's A and B take 672 KiB: within a 1 MiB L2);
# the fastest of REPEATS calls, over ROUNDS rounds that alternate the depths and the register blocks
# (fastest_in_rounds), so that a change in the machine's load falls on all of them. The slope is the median of
# the slopes between every two depths: one depth timed slow or fast moves it little (a least-squares slope over
# three depths once put a one-row block at a third of its time, and the model picked it for a whole GEMM).
ROWS, COLUMNS, DEPTHS = 96, 128, (128, 256, 384, 512, 768)
# The pipelined copy's product: 16 rows of C in two row panels of 8 x 32 micro-tiles and 512-column tasks, B
# from DRAM (and from L3 for a smoke test), timed at each of these slice depths. The fewest rows the copy
# serves (8 rows read B in place): an 8-row plan of 4-row panels, which the model no longer picks, timed deep
# slices 1.3-1.5x slower, where 16 and 128 rows ran as fast as at any depth (benchmarks/RESULTS.md, "The
# pipelined copy's depth slows B's stream").
PIPELINED_CHOICE, PIPELINED_DEPTHS = {"TM": 16, "TN": 512, "RM": 8, "RN": 32}, (32, 64, 128, 256, 512)
# The pipelined copy against the copy in a phase of its own on a B the L3 holds (K x N, 4 MiB), at this depth.
IN_CACHE_WEIGHTS, IN_CACHE_DEPTH = (1024, 1024), 128
REPEATS, ROUNDS = 5, 5
# The cache ladder (effective_l3): copies of 8 MiB (source and target) and up, each timed call moving at least
# COPY_TIMED_BYTES; a footprint past the cache copies at under CACHE_RATE_FRACTION of the rate within it.
LADDER_FIRST_BYTES, COPY_TIMED_BYTES, CACHE_RATE_FRACTION = 8 << 20, 256 << 20, 0.65


def calibrate(quick: bool = False, progress: Callable[[str], None] = lambda _: None) -> Calibration:
    """Measure this machine (see the module docstring); ``progress`` hears of each part as it starts."""
    cores = available_cores()
    l3 = cache_size(3, "Unified", 32 * 1024**2)
    n, dram, repeats = (256, 64 * 1024**2, 3) if quick else (2048, 1024**3, 7)
    progress("the f32 FMA rate, the copy bandwidths and the L3 the cores get")
    ladder = cache_ladder(l3, cores, repeats)
    cached = effective_l3(ladder, l3)
    rates = Calibration(
        machine=machine_name(), cores=cores,
        gflops=round(gemm_gflops(n, repeats), 1),
        # Source and target together: twice the buffer, well past the caches.
        dram_gbps=round(copy_gbps(max(dram, 8 * l3), cores, repeats), 1),
        # Within half the L3 the cores get (the ladder's footprint there, else a copy of that size).
        cache_gbps=round(ladder.get(cached // 2) or copy_gbps(cached // 4, cores, 4 * repeats), 1),
        l3_bytes=None if cached == l3 else cached,
    )
    steps: dict[str, float] = {}
    for kernel in KERNELS:
        steps.update(kernel_steps(kernel, rates, quick, progress))
    progress("the direct kernel streaming its weights at decode")
    weights = (1024, 4096) if quick else (4096, 8192)
    rates = dataclasses.replace(rates, steps=steps, stream_gbps=round(decode_gbps(*weights, repeats), 1))
    square, decode = attention_factors(rates, quick, progress)
    rates = dataclasses.replace(rates, attention=square, decode_attention=decode)
    return dataclasses.replace(rates, pipelined=pipelined_factors(weights, quick, progress),
                               pipelined_in_cache=pipelined_in_cache(quick, progress))


def _attention(batch: int, queries: int, keys: int, dim: int) -> str:
    """f32 attention over ``batch`` heads of ``queries`` queries, ``keys`` keys and ``dim`` features, as MLIR: the
    scores, scaled, linalg.softmax and the product with V."""
    q_type, kv_type = f"tensor<{batch}x{queries}x{dim}xf32>", f"tensor<{batch}x{keys}x{dim}xf32>"
    scores = f"tensor<{batch}x{queries}x{keys}xf32>"
    loops = "(b, i, j, c)"
    return (f"func.func @attention(%q: {q_type}, %k: {kv_type}, %v: {kv_type}) -> {q_type} {{\n"
            f"  %zero = arith.constant 0.0 : f32\n  %scale = arith.constant {dim ** -0.5} : f32\n"
            f"  %se = tensor.empty() : {scores}\n"
            f"  %s0 = linalg.fill ins(%zero : f32) outs(%se : {scores}) -> {scores}\n"
            f"  %s = linalg.generic {{indexing_maps = [affine_map<{loops} -> (b, i, c)>, "
            f"affine_map<{loops} -> (b, j, c)>, affine_map<{loops} -> (b, i, j)>], iterator_types = "
            f"[\"parallel\", \"parallel\", \"parallel\", \"reduction\"]}} ins(%q, %k : {q_type}, {kv_type}) "
            f"outs(%s0 : {scores}) {{\n  ^bb0(%a: f32, %b: f32, %acc: f32):\n"
            f"    %x = arith.mulf %a, %b : f32\n    %y = arith.addf %acc, %x : f32\n    linalg.yield %y : f32\n"
            f"  }} -> {scores}\n"
            f"  %scaled = linalg.generic {{indexing_maps = [affine_map<(b, i, j) -> (b, i, j)>, "
            f"affine_map<(b, i, j) -> (b, i, j)>], iterator_types = [\"parallel\", \"parallel\", \"parallel\"]}} "
            f"ins(%s : {scores}) outs(%se : {scores}) {{\n  ^bb0(%a: f32, %o: f32):\n"
            f"    %x = arith.mulf %a, %scale : f32\n    linalg.yield %x : f32\n  }} -> {scores}\n"
            f"  %p = linalg.softmax dimension(2) ins(%scaled : {scores}) outs(%se : {scores}) -> {scores}\n"
            f"  %oe = tensor.empty() : {q_type}\n"
            f"  %o0 = linalg.fill ins(%zero : f32) outs(%oe : {q_type}) -> {q_type}\n"
            f"  %o = linalg.batch_matmul ins(%p, %v : {scores}, {kv_type}) outs(%o0 : {q_type}) -> {q_type}\n"
            f"  return %o : {q_type}\n}}\n")


def attention_factors(rates: Calibration, quick: bool, progress: Callable[[str], None]
                      ) -> tuple[dict[str, float], dict[str, float]]:
    """The attention kernel's measured seconds over the modelled ones (``rates`` without attention factors),
    per register block, each at its best-predicted tiles: every block on heads of as many queries as keys, which
    stay in the cache; and at decode, the one-row blocks on 16 heads per core of one query and 2048 keys of 64
    features (32 MiB of keys and values per two cores, which stream from memory wherever half the L3 holds
    less), as a decode's do."""
    target = target_for(described_machine(), dataclasses.replace(rates, attention={}, decode_attention={}))
    length = 128 if quick else 512
    heads = 2 * rates.cores
    square = _attention_factors(target, _attention(heads, length, length, 64), lambda rm: True, quick, progress)
    decode = _attention(8 * heads, 1, 4 * length, 64)
    return square, _attention_factors(target, decode, lambda rm: rm == 1, quick, progress)


def _attention_factors(target: LoweringTarget, text: str, blocks_of: Callable[[int], bool], quick: bool,
                       progress: Callable[[str], None]) -> dict[str, float]:
    """Measured over modelled seconds of the attention ``text`` at each register block ``blocks_of`` takes (by
    its rows), each at its best-predicted tiles."""
    with make_context(), ir.Location.unknown():
        module, body = _lifted(text)  # the body lives as long as the module
        problem = payload_problem(body)
        space = target.space(problem)
        domain = space.universe_set()
        for group, _ in space.groups:
            domain = domain.intersect(space.group_set(group))
        points = candidates_at(space, problem, domain, assume=1024)
        values = space.values_of(points)
        predicted = np.asarray(target.seconds(problem, values), dtype=np.float64)
        blocks = sorted({(int(rm), int(rn)) for rm, rn in zip(values["RM"], values["RN"], strict=True)
                         if blocks_of(int(rm))})
        progress(f"the attention kernel's {len(blocks)} register blocks of {problem.extent('m')} queries")
        blocks = blocks[::max(1, len(blocks) // 2)] if quick else blocks
        best = []
        for rm, rn in blocks:
            mine = np.flatnonzero((values["RM"] == rm) & (values["RN"] == rn))
            best.append(mine[np.argmin(predicted[mine])])
        runs = [compile_candidate(body, {symbol: int(column[point]) for symbol, column in values.items()},
                                  target.lowering()) for point in best]
        times = fastest_in_rounds(runs, 1 if quick else ROUNDS)
        return {f"{rm}x{rn}": float(f"{seconds / predicted[point]:.4g}")
                for (rm, rn), point, seconds in zip(blocks, best, times, strict=True)}


def pipelined_factors(weights: tuple[int, int], quick: bool, progress: Callable[[str], None]) -> dict[str, float]:
    """The pipelined copy's seconds at each slice depth over those of the fastest depth: a product of
    PIPELINED_CHOICE's rows by the ``weights`` (K x N) B, one input array for every depth."""
    depths = PIPELINED_DEPTHS[1:4] if quick else PIPELINED_DEPTHS
    progress(f"the pipelined copy of B at {len(depths)} slice depths")
    lowering = host_target().lowering()
    with make_context(), ir.Location.unknown():
        # The module is kept: the body lives as long as it.
        module, body = _lifted(_product("direct", PIPELINED_CHOICE["TM"], weights[1], weights[0]))
        runs = [compile_candidate(body, {**PIPELINED_CHOICE, "TK": tk}, lowering) for tk in depths]
        times = fastest_in_rounds(runs, 1 if quick else ROUNDS)
    return {str(tk): float(f"{seconds / min(times):.4g}") for tk, seconds in zip(depths, times, strict=True)}


def pipelined_in_cache(quick: bool, progress: Callable[[str], None]) -> float:
    """The pipelined copy's seconds over those of the copy in a phase of its own, on a product of
    PIPELINED_CHOICE's rows by an IN_CACHE_WEIGHTS B, which stays in the L3 from call to call."""
    progress("the pipelined copy against the copy in phase, on a B the L3 holds")
    k, n = IN_CACHE_WEIGHTS
    with make_context(), ir.Location.unknown():
        # The module is kept: the body lives as long as it.
        module, body = _lifted(_product("direct", PIPELINED_CHOICE["TM"], n, k))
        # Nothing copied in phase, then all of B.
        runs = [compile_candidate(body, {**PIPELINED_CHOICE, "TK": IN_CACHE_DEPTH},
                                  host_target().lowering(copy_in_phase_bytes=limit)) for limit in (0, k * n * 4)]
        pipelined, in_phase = fastest_in_rounds(runs, 1 if quick else 2 * ROUNDS)
    return float(f"{pipelined / in_phase:.4g}")


def median_slope(xs: tuple[int, ...], ys: list[float]) -> float:
    """The median of the slopes between every two points (Theil-Sen): a line's slope that one stray point does
    not move far."""
    return float(np.median([(ys[j] - ys[i]) / (xs[j] - xs[i])
                            for i in range(len(xs)) for j in range(i + 1, len(xs))]))


def fastest_in_rounds(runs: list[Callable[[], object]], rounds: int) -> list[float]:
    """The fastest seconds of each run over ``rounds`` rounds of every run in turn (the fastest of REPEATS calls
    in each): a spell of other work on the machine slows one round of a few runs, not every round of one."""
    times = [math.inf] * len(runs)
    for _ in range(rounds):
        times = [min(best, fastest_seconds(run, REPEATS)) for best, run in zip(times, runs, strict=True)]
    return times


def decode_gbps(k: int, n: int, repeats: int) -> float:
    """GB/s of B's bytes through Prism's own product of one row by a k x n f32 B (decode: B from DRAM), as
    prism-optimize schedules it."""
    program = compile_program(_product("direct", 1, n, k), target="host")
    run = program.jit()
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal((1, k), np.float32), rng.standard_normal((k, n), np.float32)
    return k * n * 4 / fastest_seconds(lambda: run(a, b), repeats) / 1e9


def _product(kernel: str, m: int, n: int, k: int) -> str:
    """An f32 product C = A B of m x k by k x n, as MLIR; for the packed kernel B is stored n x k (a layout
    the direct kernel does not take)."""
    b_type = f"tensor<{n}x{k}xf32>" if kernel == "packed" else f"tensor<{k}x{n}xf32>"
    maps = ("indexing_maps = [affine_map<(m, n, k) -> (m, k)>, affine_map<(m, n, k) -> (n, k)>, "
            "affine_map<(m, n, k) -> (m, n)>] " if kernel == "packed" else "")
    c_type = f"tensor<{m}x{n}xf32>"
    return (f"func.func @product(%a: tensor<{m}x{k}xf32>, %b: {b_type}) -> {c_type} {{\n"
            f"  %zero = arith.constant 0.0 : f32\n  %empty = tensor.empty() : {c_type}\n"
            f"  %c = linalg.fill ins(%zero : f32) outs(%empty : {c_type}) -> {c_type}\n"
            f"  %r = linalg.matmul {maps}ins(%a, %b : tensor<{m}x{k}xf32>, {b_type}) outs(%c : {c_type}) -> {c_type}\n"
            f"  return %r : {c_type}\n}}\n")


def _lifted(text: str) -> tuple[ir.Module, ir.Operation]:
    """The program ``text`` of one family, lifted (in the current context), and its family's body (which lives
    as long as the module)."""
    module = ir.Module.parse(compile_program(text, target="host", emit="mlir", pipeline="prism-lift").mlir)
    (family,) = families(module)
    return module, body_func(family)


def _family(kernel: str, k: int, cores: int) -> tuple[ir.Module, ir.Operation]:
    """The lifted micro-kernels' product at depth ``k`` (in the current context), and its family's body."""
    return _lifted(_product(kernel, ROWS, cores * COLUMNS, k))


def register_blocks(body: ir.Operation) -> list[tuple[int, int]]:
    """The register blocks (RM, RN) the host's space allows the product ``body``: its universe within the
    vector registers, whatever the tiles around them."""
    problem = payload_problem(body)
    space = host_target().space(problem)
    domain = fix_shape(space, space.universe_set() & space.group_set("registers"), shape_exponents(problem))
    values = space.values_of(point_array(domain))
    return sorted({(int(rm), int(rn)) for rm, rn in zip(values["RM"], values["RN"], strict=True)})


def kernel_steps(kernel: str, rates: Calibration, quick: bool,
                 progress: Callable[[str], None]) -> dict[str, float]:
    """Seconds per step of K of every register block of ``kernel`` (``direct`` or ``packed``), by step_key."""
    depths = DEPTHS[:2] if quick else DEPTHS
    lowering, steps = host_target().lowering(), {}
    with make_context(), ir.Location.unknown():
        modules, bodies = zip(*(_family(kernel, k, rates.cores) for k in depths), strict=True)
        blocks = register_blocks(bodies[0])
        blocks = blocks[::len(blocks) // 2] if quick else blocks  # a smoke test times a few
        progress(f"the {kernel} kernel's {len(blocks)} register blocks")
        runs = [compile_candidate(body, {"TM": ROWS, "TN": COLUMNS, "TK": k, "RM": rm, "RN": rn}, lowering)
                for rm, rn in blocks for body, k in zip(bodies, depths, strict=True)]
        times = fastest_in_rounds(runs, 1 if quick else ROUNDS)
        for index, (rm, rn) in enumerate(blocks):
            seconds = times[index * len(depths):(index + 1) * len(depths)]
            slope = median_slope(depths, seconds)
            if kernel == "packed":
                # Packing reads and writes a row of A and a column of B per step of K, at the cache's rate.
                slope -= 2 * (ROWS + rates.cores * COLUMNS) * 4 / (rates.cache_gbps * 1e9)
            micro_tiles = -(-ROWS // rm) * -(-COLUMNS // rn)  # one block per core
            steps[step_key(kernel, rm, rn)] = float(f"{max(slope, 0.0) / micro_tiles:.4g}")
    return {key: value for key, value in steps.items() if value > 0}


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
    found = calibrate(args.quick, lambda part: print(f"prism.calibrate: {part}", file=sys.stderr, flush=True))
    try:
        found.write(path)
    except OSError as error:
        print(f"{path}: error: cannot write the calibration: {error.strerror}", file=sys.stderr)
        return 1
    except PrismError as error:
        print(f"{path}: error: {error.message}", file=sys.stderr)
        return 1
    l3 = "as reported" if found.l3_bytes is None else f"{found.l3_bytes >> 20} MiB"
    print(f"{path}: f32 GEMM {found.gflops} GFLOP/s, DRAM copy {found.dram_gbps} GB/s, "
          f"cache copy {found.cache_gbps} GB/s, L3 {l3}, {len(found.steps)} micro-kernel shapes, "
          f"decode {found.stream_gbps} GB/s, pipelined copy at {len(found.pipelined)} slice depths "
          f"and {found.pipelined_in_cache}x the copy in phase from the L3")
    return 0


if __name__ == "__main__":
    sys.exit(main())
