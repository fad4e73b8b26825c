"""Prism's search against an exhaustive autotuner over the unpruned space, on the host (f32).

Usage: .venv/bin/python benchmarks/search.py [--samples 32] [--seed 0] [--repeats 7] [--measure 0]

For each workload in ``benchmarks/workloads`` (a 1024^3 GEMM, RMSNorm + matmul,
a SwiGLU MLP) two searches produce one schedule per contraction family:

- Prism: ``prism.compile`` with ``prism-select{measure=K}``, K = ``--measure``:
  the cost model ranks the pruned space and picks alone (K = 0, the
  default), or the K best-predicted points per family are timed and the
  fastest is kept. Its time to solution is the wall time of that call, plus
  the JIT of the pick.
- Exhaustive: the unpruned space is the product over families of each
  family's universe (the box of tile exponents before any constraint). It is
  too large to enumerate, so ``--samples`` points are drawn from it uniformly
  without replacement (fixed ``--seed``); each is compiled as a fixed schedule
  (``prism.roles`` / ``prism.choice`` on every contraction, no search) and
  timed. Its time to solution is the total wall time of the sample (compile,
  run, check), also extrapolated linearly to the whole space.

Every program is timed the same way on the same inputs: the fastest of
``--repeats`` calls after one warm-up call. The minimum, not the median,
because the noise on this shared machine only ever adds time: one program's
calls were seen to range from 2.3 to 6.3 ms, with a median that moved by a
third between runs while the minimum stayed within a few percent. A point
that fails to compile or run, or gives wrong numbers, counts as infeasible.
A point whose warm-up call is over CAP_FACTOR times the best time so far is
not repeated: it cannot win, and the unpruned space holds schedules slow
enough to dominate the run otherwise. Prism's pick and the sample's FINALISTS
fastest are finally re-timed back to back, alternating, so that the ratio is
not skewed by the machine's load changing during the run. That re-timing
chooses the sample's best; a second, independent one of Prism's pick and that
best gives the ratio (selecting and measuring on the same noisy timings would
bias the best low). The ratio uses minima; the medians are reported beside
them. The detail table shows the finalists' first re-timing, and the second
one for Prism's pick and the finalist chosen as best.

Prints Markdown ready to append to benchmarks/RESULTS.md.
"""

from __future__ import annotations

import argparse
import datetime
import math
import os
import statistics
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import islpy as isl
import numpy as np
from environment import machine, versions
from mlir import ir

import prism
from prism.infra import attrs
from prism.infra.ir import iter_ops, make_context
from prism.search.family import analyze_contraction, make_int_dict
from prism.search.space import Contraction, Space, fix_shape, points, shape_exponents
from prism.targets.host import host_target

WORKLOAD_DIR = Path(__file__).resolve().parent / "workloads"
PRISM_PIPELINE = "prism-lift,prism-prune,prism-select{{measure={measure}}},prism-instantiate"
CAP_FACTOR = 10.0
# Sampled programs re-timed next to Prism's pick: first timings on a shared
# machine are too noisy to rank close programs.
FINALISTS = 5
# Relative to the reference's largest magnitude: f32 rounding over these
# reductions stays far below it, a wrong schedule lands far above it.
TOLERANCE = 1e-3

Arrays = list[np.ndarray]
Choice = dict[str, int]


def _ref_gemm(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    return a @ b


def _ref_rmsnorm_matmul(x: np.ndarray, gamma: np.ndarray, w: np.ndarray) -> np.ndarray:
    scale = 1.0 / np.sqrt(np.mean(x * x, axis=1, keepdims=True) + 1e-6)
    return (x * scale * gamma) @ w


def _ref_swiglu(x: np.ndarray, wg: np.ndarray, wu: np.ndarray, wd: np.ndarray) -> np.ndarray:
    gate = x @ wg
    return (gate / (1.0 + np.exp(-gate)) * (x @ wu)) @ wd


@dataclass(frozen=True)
class Workload:
    """A program in ``benchmarks/workloads`` and its float64 numpy reference."""

    name: str
    file: str
    reference: Callable[..., np.ndarray]

    @property
    def text(self) -> str:
        """The MLIR source."""
        return (WORKLOAD_DIR / self.file).read_text()


WORKLOADS = (
    Workload("gemm", "gemm.mlir", _ref_gemm),
    Workload("rmsnorm_matmul", "rmsnorm_matmul.mlir", _ref_rmsnorm_matmul),
    Workload("swiglu", "swiglu.mlir", _ref_swiglu),
)


@dataclass(frozen=True)
class Family:
    """One contraction of a workload: its space, unpruned points and pruned points."""

    contraction: Contraction
    space: Space
    universe: list[tuple[int, ...]]
    pruned: frozenset[tuple[int, ...]]


@dataclass
class Trial:
    """One timed program: per-family choices, seconds, and the wall time spent getting them."""

    choices: list[Choice]
    seconds: float = math.inf
    cost_seconds: float = 0.0
    status: str = "ok"
    retimed: float = math.nan
    retimed_median: float = math.nan
    run: Callable[..., np.ndarray] | None = field(default=None, repr=False)


def _parse(text: str) -> ir.Module:
    with make_context():
        return ir.Module.parse(text)


def _contraction_ops(module: ir.Module) -> list[tuple[ir.Operation, Contraction]]:
    """Every contraction Prism lifts, in program order (the order of its families)."""
    found = []
    for op in iter_ops(module):
        contraction = analyze_contraction(op)
        if contraction is not None:
            found.append((op, contraction))
    return found


def _points_of(space: Space, domain: isl.Set, contraction: Contraction) -> list[tuple[int, ...]]:
    return points(fix_shape(space, domain, shape_exponents(contraction)))


def families_of(text: str) -> list[Family]:
    """Each contraction's family on the host, with its unpruned universe and its pruned set."""
    target = host_target()
    found = []
    for _, contraction in _contraction_ops(_parse(text)):
        space = target.space(contraction)
        universe = space.universe_set()
        pruned = universe
        for group, _ in space.groups:
            pruned = pruned.intersect(space.group_set(group))
        found.append(Family(contraction, space, _points_of(space, universe, contraction),
                            frozenset(_points_of(space, pruned, contraction))))
    return found


def annotate(text: str, choices: Sequence[Choice]) -> str:
    """``text`` with each contraction carrying its roles and the given fixed schedule."""
    module = _parse(text)
    ops = _contraction_ops(module)
    with module.context:
        for (op, contraction), choice in zip(ops, choices, strict=True):
            op.attributes[attrs.ROLES] = ir.ArrayAttr.get([ir.StringAttr.get(r) for r in contraction.roles])
            op.attributes[attrs.CHOICE] = make_int_dict(choice)
    return str(module)


def input_arrays(text: str, rng: np.random.Generator) -> Arrays:
    """Random f32 inputs of the function's argument shapes, scaled by 1/sqrt(rows) to keep outputs O(1)."""
    module = _parse(text)
    function = next(op for op in iter_ops(module) if op.name == "func.func")
    arg_types = ir.FunctionType(ir.TypeAttr(function.attributes["function_type"]).value).inputs
    arrays = []
    for arg_type in arg_types:
        shape = ir.RankedTensorType(arg_type).shape
        scale = 1.0 / math.sqrt(shape[0]) if len(shape) == 2 and shape[0] > 64 else 1.0
        arrays.append((rng.uniform(-1.0, 1.0, shape) * scale).astype(np.float32))
    return arrays


def check(output: np.ndarray, expected: np.ndarray) -> bool:
    """True when ``output`` matches the float64 reference."""
    return bool(np.abs(output.astype(np.float64) - expected).max() <= TOLERANCE * np.abs(expected).max())


def timed_calls(run: Callable[..., np.ndarray], inputs: Arrays, repeats: int,
                cap: float) -> tuple[float, np.ndarray]:
    """Seconds of the fastest of ``repeats`` calls after a warm-up, and the warm-up's output.

    When the warm-up alone exceeds ``cap`` its time is returned unrepeated.
    """
    start = time.perf_counter()
    output = run(*inputs)
    first = time.perf_counter() - start
    if first > cap:
        return first, output
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        run(*inputs)
        times.append(time.perf_counter() - start)
    return min(times), output


def run_prism(workload: Workload, inputs: Arrays, expected: np.ndarray, repeats: int,
              measure: int) -> tuple[Trial, float]:
    """Prism's search (timing ``measure`` points per family); returns its trial and the compile-only wall time."""
    start = time.perf_counter()
    compiled = prism.compile(workload.text, target="host", pipeline=PRISM_PIPELINE.format(measure=measure))
    compile_seconds = time.perf_counter() - start
    run = compiled.jit(workload.name)
    trial = Trial([f["choice"] for f in compiled.report["families"]], run=run)
    trial.cost_seconds = time.perf_counter() - start
    trial.seconds, output = timed_calls(run, inputs, repeats, math.inf)
    if not check(output, expected):
        raise SystemExit(f"{workload.name}: Prism's pick {trial.choices} gives wrong results")
    return trial, compile_seconds


def sample_choices(families: list[Family], count: int, seed: int) -> list[list[Choice]]:
    """``count`` distinct points of the product of the families' universes, uniformly at random."""
    sizes = [len(f.universe) for f in families]
    total = math.prod(sizes)
    rng = np.random.default_rng(seed)
    samples = []
    for flat in rng.choice(total, size=min(count, total), replace=False):
        flat = int(flat)
        choices = []
        for family, size in zip(families, sizes, strict=True):
            flat, index = divmod(flat, size)
            choices.append(family.space.value_of(family.universe[index]))
        samples.append(choices)
    return samples


def try_sample(workload: Workload, choices: list[Choice], inputs: Arrays, expected: np.ndarray,
               repeats: int, cap: float) -> Trial:
    """Compile and time one fixed schedule; failures are recorded, not raised."""
    trial = Trial(choices)
    start = time.perf_counter()
    try:
        run = prism.compile(annotate(workload.text, choices), target="host", pipeline="").jit(workload.name)
        trial.seconds, output = timed_calls(run, inputs, repeats, cap)
        if check(output, expected):
            trial.run = run
        else:
            trial.status, trial.seconds = "wrong", math.inf
    except prism.PrismError as error:
        trial.status = f"infeasible ({type(error).__name__})"
    trial.cost_seconds = time.perf_counter() - start
    return trial


def run_exhaustive(workload: Workload, families: list[Family], inputs: Arrays, expected: np.ndarray,
                   args: argparse.Namespace) -> list[Trial]:
    """Every sampled point of the unpruned space, compiled and timed in turn."""
    trials = []
    best = math.inf
    for index, choices in enumerate(sample_choices(families, args.samples, args.seed)):
        trial = try_sample(workload, choices, inputs, expected, args.repeats, CAP_FACTOR * best)
        best = min(best, trial.seconds)
        trials.append(trial)
        print(f"  {workload.name} sample {index + 1}/{args.samples}: {trial.status} "
              f"{trial.seconds * 1e3:.2f} ms {fmt_choices(choices)}", flush=True)
    return trials


def retime(trials: list[Trial], inputs: Arrays, repeats: int) -> None:
    """Set each trial's ``retimed`` (fastest) and ``retimed_median`` over ``repeats`` rounds calling every program once.

    Interleaving the programs makes them share the same machine load, which
    on a shared machine moves more than the schedules do.
    """
    times: list[list[float]] = [[] for _ in trials]
    for trial in trials:
        trial.run(*inputs)
    for _ in range(repeats):
        for trial, bucket in zip(trials, times, strict=True):
            start = time.perf_counter()
            trial.run(*inputs)
            bucket.append(time.perf_counter() - start)
    for trial, bucket in zip(trials, times, strict=True):
        trial.retimed, trial.retimed_median = min(bucket), statistics.median(bucket)


def fmt_choices(choices: list[Choice]) -> str:
    """``TM=.. TN=.. TK=.. RM=.. RN=..`` per family, families separated by ``;``."""
    keys = ("TM", "TN", "TK", "RM", "RN")
    return "; ".join(" ".join(f"{k}={c[k]}" for k in keys) for c in choices)


def fmt_seconds(seconds: float) -> str:
    """A duration in the largest unit that keeps it readable."""
    for unit, size in (("years", 365.25 * 86400), ("days", 86400), ("h", 3600), ("min", 60)):
        if seconds >= 2 * size:
            return f"{seconds / size:.1f} {unit}"
    return f"{seconds:.1f} s"


def predicted(families: list[Family], choices: list[Choice]) -> float:
    """The cost model's total for a program: the sum over its families."""
    target = host_target()
    return sum(target.seconds(f.contraction, c) for f, c in zip(families, choices, strict=True))


def in_pruned(families: list[Family], choices: list[Choice]) -> bool:
    """Whether every family's choice survives Prism's pruning."""
    for family, choice in zip(families, choices, strict=True):
        point = family.space.point_of(choice)
        if point not in family.pruned:
            return False
    return True


@dataclass
class Outcome:
    """What one workload's comparison produced."""

    workload: Workload
    families: list[Family]
    prism: Trial
    prism_compile_seconds: float
    trials: list[Trial]
    numpy_seconds: float = math.nan
    best_finalist: Trial | None = None

    @property
    def space_size(self) -> int:
        """The number of points in the product of the unpruned universes."""
        return math.prod(len(f.universe) for f in self.families)

    @property
    def finalists(self) -> list[Trial]:
        """The sample's fastest correct programs by their first timing; they are re-timed beside Prism's pick."""
        ranked = sorted((t for t in self.trials if t.run is not None), key=lambda t: t.seconds)
        return ranked[:FINALISTS]

    @property
    def best(self) -> Trial:
        """The sampled program the ratio compares with: the fastest finalist of the first re-timing."""
        if self.best_finalist is None:
            raise ValueError("the finalists have not been re-timed yet")
        return self.best_finalist

    @property
    def best_within_prism_time(self) -> Trial | None:
        """The fastest program the sample had found by the time Prism's search had finished."""
        spent, found = 0.0, None
        for trial in self.trials:
            spent += trial.cost_seconds
            if spent > self.prism.cost_seconds:
                break
            if found is None or trial.seconds < found.seconds:
                found = trial
        return found

    @property
    def sample_seconds(self) -> float:
        """Wall time of the whole sample."""
        return sum(t.cost_seconds for t in self.trials)

    @property
    def extrapolated_seconds(self) -> float:
        """The sample's mean cost per point times the space size."""
        return self.sample_seconds / len(self.trials) * self.space_size


def compare(workload: Workload, args: argparse.Namespace) -> Outcome:
    """Run both searches on ``workload`` and re-time their winners side by side."""
    text = workload.text
    families = families_of(text)
    inputs = input_arrays(text, np.random.default_rng(args.seed))
    expected = workload.reference(*(a.astype(np.float64) for a in inputs))
    prism_trial, compile_seconds = run_prism(workload, inputs, expected, args.repeats, args.measure)
    print(f"  {workload.name} Prism: {compile_seconds:.1f} s, {prism_trial.seconds * 1e3:.2f} ms "
          f"{fmt_choices(prism_trial.choices)}", flush=True)
    outcome = Outcome(workload, families, prism_trial, compile_seconds,
                      run_exhaustive(workload, families, inputs, expected, args))
    if not outcome.finalists:
        raise SystemExit(f"{workload.name}: no sampled schedule compiled and ran correctly")
    # Choosing the fastest of several noisy timings favours whichever got
    # lucky; so the finalists are re-timed once to choose the best, and the
    # ratio comes from a second, independent re-timing of just the two.
    rounds = 2 * args.repeats + 1
    retime([prism_trial, *outcome.finalists], inputs, rounds)
    outcome.best_finalist = min(outcome.finalists, key=lambda t: t.retimed)
    retime([prism_trial, outcome.best_finalist], inputs, rounds)
    outcome.numpy_seconds, _ = timed_calls(workload.reference, inputs, args.repeats, math.inf)
    return outcome


def header(args: argparse.Namespace, load_at_start: float) -> list[str]:
    """Date, machine, load (other jobs share the machine), versions and command."""
    command = f".venv/bin/python benchmarks/search.py --samples {args.samples} --seed {args.seed} " \
              f"--repeats {args.repeats} --measure {args.measure}"
    load = f"1-minute load average {load_at_start:.1f} at the start, {os.getloadavg()[0]:.1f} at the end"
    return [f"- Date: {datetime.date.today()}", f"- Machine: {machine()}; {load}",
            f"- Versions: {versions('numpy', 'islpy', 'xtc-mlir-python-bindings')}", f"- Command: `{command}`"]


def summary_row(o: Outcome) -> str:
    """One row of the main table."""
    feasible = sum(t.status == "ok" for t in o.trials)
    ratio = o.prism.retimed / o.best.retimed
    median_ratio = o.prism.retimed_median / o.best.retimed_median
    return (f"| {o.workload.name} | {len(o.families)} | {o.space_size:.3g} | "
            f"{o.prism.cost_seconds:.1f} s ({o.prism_compile_seconds:.1f} s search) | "
            f"{o.prism.retimed * 1e3:.2f} ms | {o.best.retimed * 1e3:.2f} ms ({feasible}/{len(o.trials)} ok) | "
            f"{ratio:.2f} ({median_ratio:.2f}) | "
            f"{fmt_seconds(o.sample_seconds)} / {fmt_seconds(o.extrapolated_seconds)} | "
            f"{o.sample_seconds / o.prism.cost_seconds:.2g}x / {o.extrapolated_seconds / o.prism.cost_seconds:.2g}x |")


def program_row(o: Outcome, label: str, trial: Trial) -> str:
    """One program of the detail table: its timings, the cost model's figure and its schedule."""
    pruned = "yes" if in_pruned(o.families, trial.choices) else "no"
    retimed = "-" if math.isnan(trial.retimed) else f"{trial.retimed * 1e3:.2f} ({trial.retimed_median * 1e3:.2f})"
    return (f"| {o.workload.name} | {label} | {retimed} | {trial.seconds * 1e3:.2f} | "
            f"{predicted(o.families, trial.choices) * 1e3:.2f} | {pruned} | {fmt_choices(trial.choices)} |")


def detail_rows(o: Outcome) -> list[str]:
    """numpy, Prism's pick, the sample's finalists, and the best the sample had within Prism's time."""
    rows = [f"| {o.workload.name} | numpy (f32, same inputs) | - | {o.numpy_seconds * 1e3:.2f} | - | - | - |",
            program_row(o, "Prism pick", o.prism)]
    rows.extend(program_row(o, f"sample finalist {rank + 1}", t) for rank, t in enumerate(o.finalists))
    early = o.best_within_prism_time
    if early is not None:
        rows.append(program_row(o, "sample's best within Prism's time to solution", early))
    return rows


def report(outcomes: list[Outcome], args: argparse.Namespace, load_at_start: float) -> str:
    """The Markdown section body: header, main table, and the schedules that beat Prism's pick."""
    lines = [*header(args, load_at_start), "",
             "| workload | families | space size (unpruned) | Prism time to solution (search only) "
             "| Prism pick runtime | exhaustive sampled best runtime | ratio pick / best (of medians) "
             "| exhaustive time: sample / extrapolated | optimization speedup: vs sample / vs extrapolated |",
             "| --- | --- | --- | --- | --- | --- | --- | --- | --- |",
             *(summary_row(o) for o in outcomes), "",
             "| workload | program | re-timed ms (median) | first timing ms | predicted ms | in pruned space "
             "| choice per family |",
             "| --- | --- | --- | --- | --- | --- | --- |"]
    for o in outcomes:
        lines.extend(detail_rows(o))
    return "\n".join(lines)


def main() -> None:
    """Run every workload and print the Markdown report."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--samples", type=int, default=32, help="points drawn from each unpruned space")
    parser.add_argument("--seed", type=int, default=0, help="seed of the sample and of the inputs")
    parser.add_argument("--repeats", type=int, default=7, help="timed calls per program (fastest)")
    parser.add_argument("--measure", type=int, default=0,
                        help="best-predicted points Prism times per family (0: the cost model alone picks)")
    parser.add_argument("--workloads", nargs="+", choices=[w.name for w in WORKLOADS],
                        default=[w.name for w in WORKLOADS])
    args = parser.parse_args()
    load_at_start = os.getloadavg()[0]
    outcomes = [compare(w, args) for w in WORKLOADS if w.name in args.workloads]
    print(report(outcomes, args, load_at_start))


if __name__ == "__main__":
    main()
