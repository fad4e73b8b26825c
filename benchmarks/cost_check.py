"""The host cost model against the machine: does the predicted-best schedule of each family run fastest?

Usage:

    .venv/bin/python benchmarks/cost_check.py --quick              # benchmarks/cpu.py's smoke-test workloads
    .venv/bin/python benchmarks/cost_check.py                      # every workload of benchmarks/cpu.py (long)
    .venv/bin/python benchmarks/cost_check.py --only 'gemm-512|swiglu-16x' --candidates 8
    .venv/bin/python benchmarks/cost_check.py --list               # the workload names

Each workload of ``benchmarks/cpu_workloads.py`` is searched for the host by
prism-optimize's search passes with ``prism-select{measure=K}`` (K =
``--candidates``): the K best-predicted schedules of every family are
compiled and timed (``prism.runtime.measure.measure_seconds``: the fastest
of 5 calls after a warm-up, each after a sweep of the caches where the model
prices the inputs streaming from memory, as they do in a whole program), and
the report lists them in predicted order.
Per family this prints:

- the regret: the measured time of the model's pick (the predicted best)
  over the best time measured among the K;
- the model's error: predicted / measured seconds of every candidate, as a
  geomean and the worst (farthest from 1);
- the Spearman rank correlation of predicted against measured times (1: the
  model orders the K as the machine does).

Other work on the machine only adds time, and the machine's speed drifts
from minute to minute, so one timing can make a good pick look slow. A pick
that first measures over ``--threshold`` (10%) slower than the best is
re-timed next to that best: both compiled once, then timed back to back in
alternating order for ``--rounds`` rounds. Each round gives the pick's time
over the best's, measured within a few milliseconds of each other, so a drift
falls on both; the regret is the median of those ratios, and the pick is
flagged slow only if it stays over the threshold.

Each workload is checked in a process of its own (``--in-process``: all in
this one). The order of schedules measured in one process can depend on what
that process did before: a family flagged at 1.5-1.7x after forty workloads
in one process ran within 8% of the best when checked alone
(benchmarks/RESULTS.md, "cost_check on the Zen 5: rounds paired"). Fresh
processes differ too: the same two compiled schedules can swap places from
one process to the next (benchmarks/RESULTS.md, "cost_check across
processes"). So a pick still over the threshold after its re-timing is
re-timed against the best in ``--processes`` - 1 more fresh processes, and
its regret is the median of the processes' regrets: a pick that is slower
stays slower in most of them.

A family runs inside its workload's function, called as written and bound
(its weights prepared and packed once), where the code generator may fuse it
with another product (a dual GEMM) or read its weight prepacked: a pick still
slower over the processes is judged in its program. For each way, where the
function's lowered code is the same with the pick's choice as with the best's,
the pick costs nothing; else the function is timed with each, alternately,
and the pick's regret is 1 + the median difference over the family's best
time alone. The worse way counts (benchmarks/RESULTS.md, "cost_check's flags,
timed in their programs").

Prints Markdown ready for ``benchmarks/RESULTS.md``: the date, the machine,
the versions and the command, one row per family, then a summary.
"""

from __future__ import annotations

import argparse
import datetime
import json
import math
import os
import re
import shlex
import subprocess
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

import numpy as np
from cpu_workloads import QUICK, Workload, all_workloads
from environment import host_rates, machine, versions
from mlir import ir

import prism
from prism.infra.ir import make_context
from prism.runtime.measure import REPEATS, compile_candidate, fastest_seconds
from prism.search.family import body_func, families, family_name, payload_problem
from prism.targets import get_target

# prism-optimize up to the selection: instantiation and the proof change no choice.
SEARCH = "prism-explore,prism-lift,prism-prune,prism-select{{measure={candidates}}}"
# The same, the model's picks unmeasured: the program a user gets, for judging a pick in it.
SELECT = "prism-explore,prism-lift,prism-prune,prism-select"
# Up to the families' bodies, for re-timing two of a family's schedules in a process of its own.
LIFT = "prism-explore,prism-lift"
THRESHOLD = 0.10  # a pick this much slower than the best measured is flagged (after re-timing)
ROUNDS = 5  # re-timing: the pick and the best, alternately, this many times each (the median ratio counts)
PROCESSES = 3  # a pick slow after its re-timing is judged over this many processes (the median regret counts)


@dataclass(frozen=True)
class Candidate:
    """One timed schedule of a family."""

    choice: dict[str, int]
    predicted: float
    measured: float

    @property
    def ratio(self) -> float:
        """Predicted over measured seconds: 1 where the model is exact."""
        return self.predicted / self.measured


@dataclass(frozen=True)
class FamilyCheck:
    """A family's timed candidates (predicted order: the model's pick first) and the pick's regret.

    ``retimed`` holds the pick's and the best's seconds in each round of the
    alternating re-timing, when the first timing made the pick look slow;
    ``elsewhere``, the regrets of the same re-timing in other fresh processes,
    when the re-timing left the pick slow; ``program``, per way its workload
    runs (:data:`MODES`), the pick's regret in the program (None where the
    program runs the same code with either choice), when the processes left
    it slow (:func:`program_regrets`).
    """

    workload: str
    family: str
    candidates: tuple[Candidate, ...]
    retimed: tuple[tuple[float, float], ...] | None = None
    elsewhere: tuple[float, ...] = ()
    program: tuple[tuple[str, float | None], ...] = ()

    @property
    def pick(self) -> Candidate:
        """The model's pick: the predicted best."""
        return self.candidates[0]

    @property
    def best(self) -> Candidate:
        """The fastest measured candidate (the first of equals, in predicted order)."""
        return min(self.candidates, key=lambda c: c.measured)

    @property
    def first_regret(self) -> float:
        """The pick's measured seconds over the best's, from the first timing."""
        return self.pick.measured / self.best.measured

    @property
    def retimed_regret(self) -> float:
        """The pick's seconds over the best's in this process: the median over the re-timing's rounds where it
        was re-timed, else the first timing's."""
        if not self.retimed:
            return self.first_regret
        return rounds_regret(self.retimed)

    @property
    def alone_regret(self) -> float:
        """The pick's seconds over the best's, the family timed alone: the median of the processes' regrets where
        it was re-timed in others, else this process's."""
        if not self.elsewhere:
            return self.retimed_regret
        return float(np.median([self.retimed_regret, *self.elsewhere]))

    @property
    def regret(self) -> float:
        """The pick's regret: in its program where it was judged there (the worst of the ways the program runs,
        1 where it runs the same code either way), else :attr:`alone_regret`."""
        if not self.program:
            return self.alone_regret
        return max((r for _, r in self.program if r is not None), default=1.0)

    def slow(self, threshold: float = THRESHOLD) -> bool:
        """Whether the pick is over ``threshold`` slower than the best, confirmed by the re-timing (over several
        processes, by the median of their regrets; in its program, where it was judged there)."""
        return self.retimed is not None and self.regret > 1 + threshold

    @property
    def misranked(self) -> int:
        """Candidates that measured faster than the pick (the pick's place in the measured order, from 0)."""
        return sum(c.measured < self.pick.measured for c in self.candidates)

    @property
    def ratio_geomean(self) -> float:
        """Geomean of predicted / measured over the candidates."""
        return geomean([c.ratio for c in self.candidates])

    @property
    def ratio_worst(self) -> float:
        """The predicted / measured ratio farthest from 1 (in log terms)."""
        return max((c.ratio for c in self.candidates), key=lambda r: abs(math.log(r)))

    @property
    def spearman(self) -> float | None:
        """Rank correlation of predicted and measured seconds; None under 3 candidates or with constant ranks."""
        if len(self.candidates) < 3:
            return None
        return spearman([c.predicted for c in self.candidates], [c.measured for c in self.candidates])


def rounds_regret(pairs: Sequence[tuple[float, float]]) -> float:
    """The median over re-timing rounds of the pick's seconds over the best's."""
    return float(np.median([pick / best for pick, best in pairs]))


def to_json(check: FamilyCheck) -> dict[str, object]:
    """``check`` as plain data (:func:`from_json` reads it back)."""
    return {"workload": check.workload, "family": check.family,
            "candidates": [[c.choice, c.predicted, c.measured] for c in check.candidates],
            "retimed": None if check.retimed is None else [list(pair) for pair in check.retimed],
            "elsewhere": list(check.elsewhere), "program": [list(mode) for mode in check.program]}


def from_json(data: dict[str, object]) -> FamilyCheck:
    """The FamilyCheck that :func:`to_json` wrote."""
    candidates = tuple(Candidate(dict(choice), predicted, measured)
                       for choice, predicted, measured in data["candidates"])
    retimed = None if data["retimed"] is None else tuple((pick, best) for pick, best in data["retimed"])
    return FamilyCheck(data["workload"], data["family"], candidates, retimed, tuple(data["elsewhere"]),
                       tuple((mode, regret) for mode, regret in data.get("program", ())))


def geomean(values: Sequence[float]) -> float:
    """The geometric mean of positive ``values``."""
    return math.exp(sum(math.log(v) for v in values) / len(values))


def _ranks(values: Sequence[float]) -> np.ndarray:
    """Ranks from 0, equal values sharing their mean rank."""
    array = np.asarray(values, dtype=float)
    ranks = np.empty(len(array))
    ranks[np.argsort(array, kind="stable")] = np.arange(len(array))
    for value in np.unique(array):
        tied = array == value
        ranks[tied] = ranks[tied].mean()
    return ranks


def spearman(xs: Sequence[float], ys: Sequence[float]) -> float | None:
    """Spearman's rank correlation (ties take their mean rank); None where either side has one rank only."""
    rx, ry = _ranks(xs), _ranks(ys)
    if rx.std() == 0 or ry.std() == 0:
        return None
    return float(np.corrcoef(rx, ry)[0, 1])


# ---- Measuring --------------------------------------------------------------------------------------------------

def progress(message: str) -> None:
    """A line on stderr: stdout carries the Markdown."""
    print(message, file=sys.stderr, flush=True)


def search(workload: Workload, candidates: int) -> prism.CompiledModule:
    """The workload searched for the host with its ``candidates`` best-predicted schedules per family timed."""
    return prism.compile(workload.mlir, target="host", emit="mlir", pipeline=SEARCH.format(candidates=candidates))


def check_in_child(workload: Workload, args: argparse.Namespace) -> list[FamilyCheck]:
    """:func:`check_workload` of ``workload`` in a new process (its progress on this one's stderr)."""
    command = [sys.executable, os.path.abspath(__file__), "--in-process", "--json", "--only",
               f"^{re.escape(workload.name)}$", "--candidates", str(args.candidates), "--threshold",
               str(args.threshold), "--rounds", str(args.rounds)]
    result = subprocess.run(command, stdout=subprocess.PIPE, text=True, check=True)
    return [from_json(data) for data in json.loads(result.stdout)]


def retime_in_child(check: FamilyCheck, args: argparse.Namespace) -> float:
    """The regret of ``check``'s pick against its best, re-timed in a new process (:func:`retime_family`)."""
    command = [sys.executable, os.path.abspath(__file__), "--only", f"^{re.escape(check.workload)}$",
               "--retime-family", check.family, "--pick", json.dumps(check.pick.choice), "--best",
               json.dumps(check.best.choice), "--rounds", str(args.rounds)]
    result = subprocess.run(command, stdout=subprocess.PIPE, text=True, check=True)
    return rounds_regret([tuple(pair) for pair in json.loads(result.stdout)])


def judged_elsewhere(check: FamilyCheck, args: argparse.Namespace) -> FamilyCheck:
    """``check`` with its pick re-timed against its best in ``args.processes`` - 1 more fresh processes."""
    progress(f"  {check.family}: still {check.retimed_regret:.2f}x the best; re-timing in "
             f"{args.processes - 1} more processes")
    return replace(check, elsewhere=tuple(retime_in_child(check, args) for _ in range(args.processes - 1)))


def retime_family(workload: Workload, family: str, pick: dict[str, int], best: dict[str, int],
                  rounds: int) -> tuple[tuple[float, float], ...]:
    """:func:`retime` of ``pick`` against ``best`` on the body of ``workload``'s family ``family``."""
    lifted = prism.compile(workload.mlir, target="host", emit="mlir", pipeline=LIFT)
    with make_context() as context, ir.Location.unknown():
        module = ir.Module.parse(lifted.mlir, context=context)
        bodies = {family_name(f): body_func(f) for f in families(module)}
        if family not in bodies:
            raise SystemExit(f"cost_check.py: error: {workload.name} has no family {family!r}")
        return retime(bodies[family], pick, best, rounds)


def retime(body: ir.Operation, pick: dict[str, int], best: dict[str, int], rounds: int,
           assume: int = 1024) -> tuple[tuple[float, float], ...]:
    """The seconds of ``pick`` and of ``best`` (each the fastest of a few calls, as prism-select times them,
    the caches swept as it sweeps them) in each of ``rounds`` rounds: both compiled once, then timed back to
    back, the one timed first alternating, so that a change in the machine's speed falls on both."""
    target = get_target("host")
    lowering, sweep = target.lowering(), target.sweep_bytes(payload_problem(body), assume)
    runs = {name: compile_candidate(body, choice, lowering, assume) for name, choice in (("pick", pick),
                                                                                         ("best", best))}
    pairs = []
    for index in range(rounds):
        order = ("pick", "best") if index % 2 == 0 else ("best", "pick")
        times = {name: fastest_seconds(runs[name], REPEATS, sweep) for name in order}
        pairs.append((times["pick"], times["best"]))
    return tuple(pairs)


# ---- A pick in its program ----------------------------------------------------------------------------------

# A family runs inside its workload's function, which benchmarks/cpu.py calls as written (the weights read where
# they lie) and bound (``bind``: the weights prepared and packed once, each call running @f_apply). There the code
# generator may fuse the family with another (a dual GEMM, whose in-place slices keep to 8 rows whatever the
# choice) or read its weight prepacked, so a choice slower alone can run the same code, or as fast, in the
# program (benchmarks/RESULTS.md, "cost_check's flags, timed in their programs"). Each way, the function whose
# calls it times.
MODES = {"as written": "{}", "bound": "{}_apply"}


def with_choice(searched: str, family: str, choice: dict[str, int]) -> str:
    """The program ``searched`` (prism-select's output) with ``family``'s choice replaced by ``choice``."""
    with make_context() as context, ir.Location.unknown():
        module = ir.Module.parse(searched, context=context)
        headers = [header for header in families(module) if family_name(header) == family]
        if len(headers) != 1:
            raise SystemExit(f"cost_check.py: error: the program has no family {family!r}")
        i64 = ir.IntegerType.get_signless(64)
        headers[0].attributes["choice"] = ir.DictAttr.get({k: ir.IntegerAttr.get(i64, v) for k, v in choice.items()})
        return str(module)


def owns(function: str, name: str) -> bool:
    """Whether the lowered function ``name`` is ``function``'s code: itself, its C interface, or one of its
    parallel loops' tasks."""
    return name in (function, f"_mlir_ciface_{function}") or re.fullmatch(
        rf"__prism_task_{re.escape(function)}_\d+(_entry|_launch)?", name) is not None


def lowered_code(text: str) -> dict[str, str]:
    """The program ``text`` instantiated and lowered for this machine: each function's code by name."""
    lowered = prism.compile(text, target="host", emit="mlir",
                            pipeline=f"prism-instantiate,{get_target('host').lowering()}").mlir
    with make_context() as context:
        module = ir.Module.parse(lowered, context=context)
        return {ir.StringAttr(op.attributes["sym_name"]).value: str(op) for op in module.body.operations
                if "sym_name" in op.attributes}


def _call(workload: Workload, compiled: prism.CompiledModule, mode: str,
          inputs: dict[str, np.ndarray]) -> Callable[[], object]:
    """A call of ``workload``'s function as ``mode`` runs it (the weights bound by position: the printed program
    no longer names its arguments)."""
    if mode == "as written":
        run, arrays = compiled.jit(workload.func), [inputs[a.name] for a in workload.args]
        return lambda: run(*arrays)
    bound = compiled.bind(workload.func, **{f"arg{i}": inputs[a.name] for i, a in enumerate(workload.args)
                                              if a.invariant})
    free = [inputs[a.name] for a in workload.args if not a.invariant]
    return lambda: bound(*free)


def program_regrets(workload: Workload, family: str, pick: dict[str, int], best: dict[str, int],
                    family_seconds: float, rounds: int) -> tuple[tuple[str, float | None], ...]:
    """Per way the program runs (:data:`MODES`; bound only with weights): None where its code is the same with
    ``pick`` as with ``best``, else ``1 + d / family_seconds``, d the median over ``rounds`` alternating rounds of
    the function's time with ``pick`` less its time with ``best`` (the program's difference, over the family's
    time alone at its best)."""
    searched = prism.compile(workload.mlir, target="host", emit="mlir", pipeline=SELECT).mlir
    texts = {name: with_choice(searched, family, choice) for name, choice in (("pick", pick), ("best", best))}
    code = {name: lowered_code(text) for name, text in texts.items()}
    compiled: dict[str, prism.CompiledModule] = {}
    inputs = workload.inputs(np.random.default_rng(0))
    judged = []
    for mode, pattern in MODES.items():
        function = pattern.format(workload.func)
        if mode == "bound" and not workload.weights:
            continue
        ours = [{name: text for name, text in code[side].items() if owns(function, name)} for side in code]
        if not ours[0]:  # the program has no such function: it does not run this way
            continue
        if ours[0] == ours[1]:
            judged.append((mode, None))
            continue
        for name, text in texts.items():
            if name not in compiled:  # compiled once, for whichever ways need timing
                compiled[name] = prism.compile(text, target="host", pipeline="prism-instantiate")
        runs = {name: _call(workload, compiled[name], mode, inputs) for name in texts}
        differences = []
        for index in range(rounds):
            order = ("pick", "best") if index % 2 == 0 else ("best", "pick")
            times = {name: fastest_seconds(runs[name], REPEATS) for name in order}
            differences.append(times["pick"] - times["best"])
        judged.append((mode, 1 + float(np.median(differences)) / family_seconds))
    return tuple(judged)


def judged_in_program(check: FamilyCheck, args: argparse.Namespace) -> FamilyCheck:
    """``check`` with its pick judged in its program (:func:`program_regrets`), in a new process."""
    progress(f"  {check.family}: still {check.alone_regret:.2f}x the best alone; judging it in its program")
    command = [sys.executable, os.path.abspath(__file__), "--only", f"^{re.escape(check.workload)}$",
               "--judge-family", check.family, "--pick", json.dumps(check.pick.choice), "--best",
               json.dumps(check.best.choice), "--seconds", repr(check.best.measured), "--rounds", str(args.rounds)]
    result = subprocess.run(command, stdout=subprocess.PIPE, text=True, check=True)
    return replace(check, program=tuple((mode, regret) for mode, regret in json.loads(result.stdout)))


def judged(check: FamilyCheck, args: argparse.Namespace) -> FamilyCheck:
    """``check`` judged further while it stays slow: over more processes, then in its program."""
    if args.processes > 1 and check.slow(args.threshold):
        check = judged_elsewhere(check, args)
    return judged_in_program(check, args) if check.slow(args.threshold) else check


def check_workload(workload: Workload, candidates: int = 4, threshold: float = THRESHOLD,
                   rounds: int = ROUNDS) -> list[FamilyCheck]:
    """Every family of ``workload``: its ``candidates`` best-predicted schedules as timed by prism-select, the
    pick re-timed against the best where it first measured over ``threshold`` slower."""
    compiled = search(workload, candidates)
    checks = []
    with make_context() as context, ir.Location.unknown():
        module = ir.Module.parse(compiled.mlir, context=context)
        bodies = {family_name(f): body_func(f) for f in families(module)}
        for entry in compiled.report["families"]:
            timed = tuple(Candidate(c["choice"], c["predicted_seconds"], c["measured_seconds"])
                          for c in entry["candidates"])
            check = FamilyCheck(workload.name, entry["name"], timed)
            if check.first_regret > 1 + threshold:
                progress(f"  {entry['name']}: the pick measured {check.first_regret:.2f}x the best; re-timing")
                check = FamilyCheck(workload.name, entry["name"], timed,
                                    retime(bodies[entry["name"]], check.pick.choice, check.best.choice, rounds))
            checks.append(check)
    return checks


# ---- Markdown ---------------------------------------------------------------------------------------------------

def _choice(choice: dict[str, int]) -> str:
    return " ".join(f"{k}={v}" for k, v in choice.items())


def _row(check: FamilyCheck, threshold: float) -> str:
    best = "(the pick)" if check.best is check.pick else _choice(check.best.choice)
    regret = f"{check.regret:.2f}x" + (f" (re-timed; first {check.first_regret:.2f}x" if check.retimed else "")
    if check.elsewhere:
        regret += f"; over {1 + len(check.elsewhere)} processes: " + ", ".join(
            f"{r:.2f}x" for r in (check.retimed_regret, *check.elsewhere))
    if check.program:
        regret += f"; alone {check.alone_regret:.2f}x; in its program: " + ", ".join(
            f"{mode} {'the same code' if r is None else f'{r:.2f}x'}" for mode, r in check.program)
    regret += ")" if check.retimed else ""
    flag = "**slow**" if check.slow(threshold) else ""
    rho = "n/a" if check.spearman is None else f"{check.spearman:+.2f}"
    cells = [check.workload, check.family, _choice(check.pick.choice), best, regret, flag,
             f"{check.ratio_geomean:.2f}", f"{check.ratio_worst:.2f}", rho]
    return "| " + " | ".join(cells) + " |"


def summary(checks: Sequence[FamilyCheck], threshold: float) -> list[str]:
    """The lines under the table: how often and how far the model misranks, and how far its times are."""
    ratios = [c.ratio for check in checks for c in check.candidates]
    rhos = [check.spearman for check in checks if check.spearman is not None]
    worst = max(checks, key=lambda c: c.regret)
    slow = [c for c in checks if c.slow(threshold)]
    retimed = [c for c in checks if c.retimed]
    elsewhere = [c for c in checks if c.elsewhere]
    lines = [
        f"- {len(checks)} families. At the first timing the pick was the fastest in "
        f"{sum(c.misranked == 0 for c in checks)} and over {threshold:.0%} slower than the best in {len(retimed)}; "
        f"re-timed, {sum(c.retimed_regret > 1 + threshold for c in retimed)} of those stayed over "
        f"{threshold:.0%} slower"
        + (f" (re-timed regrets {min(c.retimed_regret for c in retimed):.2f}x to "
           f"{max(c.retimed_regret for c in retimed):.2f}x)" if retimed else "")
        + (f"; judged over {1 + len(elsewhere[0].elsewhere)} processes each, "
           f"{sum(c.alone_regret > 1 + threshold for c in elsewhere)} of those stayed over {threshold:.0%} slower"
           if elsewhere else "")
        + (f"; judged in their programs, {len(slow)} of those stayed over {threshold:.0%} slower"
           if any(c.program for c in checks) else "")
        + (": " + ", ".join(f"{c.workload} {c.family} {c.regret:.2f}x" for c in slow) if slow else "") + ".",
        f"- Regret: geomean {geomean([c.regret for c in checks]):.3f}x, worst {worst.regret:.2f}x "
        f"({worst.workload} {worst.family}).",
        f"- Predicted / measured seconds over {len(ratios)} candidates: geomean {geomean(ratios):.2f}, "
        f"from {min(ratios):.2f} to {max(ratios):.2f}.",
    ]
    if rhos:
        lines.append(f"- Spearman rank correlation of predicted and measured: mean {sum(rhos) / len(rhos):+.2f}, "
                     f"lowest {min(rhos):+.2f} ({len(rhos)} families with 3 candidates or more and distinct times).")
    return lines


def markdown(checks: Sequence[FamilyCheck], args: argparse.Namespace, command: str) -> str:
    """The RESULTS.md entry."""
    lines = [
        f"## The host cost model against measurement, {datetime.date.today().isoformat()}", "",
        f"Machine: {machine()}; {versions('numpy')}; load average "
        f"{', '.join(f'{x:.2f}' for x in os.getloadavg())} at the end; the cost model's rates: {host_rates()}.", "",
        f"    {command}", "",
        f"Each workload checked {'in this one process' if args.in_process else 'in a process of its own'}. "
        f"Per family, the {args.candidates} best-predicted schedules timed by `prism-select{{measure="
        f"{args.candidates}}}` (fastest of {REPEATS} calls each); a pick first measured over "
        f"{args.threshold:.0%} slower than the best re-timed against it, {args.rounds} rounds, alternating; "
        + (f"one still over it re-timed so in {args.processes - 1} more fresh processes. " if args.processes > 1
           and not args.in_process else "")
        + ("one still over it judged in its program, as written and bound (`bind`): the function with the "
           "pick against the function with the best, alternately; where the program's code is the same, the pick "
           "costs nothing. " if not args.in_process else "")
        + "Regret: the pick's time over the best's (re-timed: the median of the rounds' ratios; over several "
        "processes: the median of theirs; in its program: 1 + the function's median difference over the family's "
        "best time alone, the worse of the two ways). pred/meas: "
        "predicted over measured seconds of the candidates (geomean; worst: farthest from 1). ρ: Spearman rank "
        "correlation of predicted and measured times.", "",
        "| workload | family | pick (predicted best) | fastest measured | regret | flag | pred/meas | worst | ρ |",
        "| --- | --- | --- | --- | --- | --- | --- | --- | --- |",
        *(_row(check, args.threshold) for check in checks), "",
        *summary(checks, args.threshold),
    ]
    return "\n".join(lines) + "\n"


# ---- Main -------------------------------------------------------------------------------------------------------

def command_line() -> str:
    """This run's command, to paste into a shell."""
    python = os.path.relpath(sys.executable) if sys.executable.startswith(os.getcwd()) else sys.executable
    return shlex.join([python, *sys.argv])


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    """The options."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--only", metavar="REGEX", help="check the workloads whose name this matches (re.search)")
    parser.add_argument("--quick", action="store_true", help=f"the smoke-test workloads: {', '.join(QUICK)}")
    parser.add_argument("--list", action="store_true", help="print the selected workload names and exit")
    parser.add_argument("--candidates", type=int, default=4, help="schedules timed per family (4; 2 to 64)")
    parser.add_argument("--threshold", type=float, default=THRESHOLD,
                        help=f"flag a pick this much slower than the best, after re-timing ({THRESHOLD})")
    parser.add_argument("--rounds", type=int, default=ROUNDS,
                        help=f"re-timings of a slow-looking pick and of the best, alternately ({ROUNDS})")
    parser.add_argument("--processes", type=int, default=PROCESSES,
                        help=f"judge a pick still slow after its re-timing over this many fresh processes, the "
                        f"median regret counting ({PROCESSES}; 1: its own process alone)")
    parser.add_argument("--in-process", action="store_true",
                        help="check every workload in this process, not each in a process of its own (and judge "
                        "each pick there alone)")
    parser.add_argument("--retime-family", metavar="FAMILY", help=argparse.SUPPRESS)
    parser.add_argument("--judge-family", metavar="FAMILY", help=argparse.SUPPRESS)
    parser.add_argument("--seconds", type=float, help=argparse.SUPPRESS)
    parser.add_argument("--pick", type=json.loads, help=argparse.SUPPRESS)
    parser.add_argument("--best", type=json.loads, help=argparse.SUPPRESS)
    parser.add_argument("--json", action="store_true", help="print the checks as JSON rather than Markdown")
    args = parser.parse_args(argv)
    if not 2 <= args.candidates <= 64:
        parser.error("--candidates must be between 2 and 64")
    if args.rounds < 1 or args.threshold < 0 or args.processes < 1:
        parser.error("--rounds and --processes must be positive and --threshold not negative")
    return args


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point."""
    args = parse_args(argv)
    workloads = [w for w in all_workloads() if (not args.quick or w.name in QUICK)
                 and (args.only is None or re.search(args.only, w.name))]
    if args.list:
        print("\n".join(w.name for w in workloads))
        return 0
    if not workloads:
        print("cost_check.py: error: no workload selected (see --list)", file=sys.stderr)
        return 1
    if (args.retime_family or args.judge_family) and (args.pick is None or args.best is None
                                                      or len(workloads) != 1
                                                      or (args.judge_family and args.seconds is None)):
        print("cost_check.py: error: --retime-family and --judge-family need --pick, --best and one workload "
              "(and --judge-family --seconds)", file=sys.stderr)
        return 1
    if args.retime_family:  # a child of judged_elsewhere
        print(json.dumps(retime_family(workloads[0], args.retime_family, args.pick, args.best, args.rounds)))
        return 0
    if args.judge_family:  # a child of judged_in_program
        print(json.dumps(program_regrets(workloads[0], args.judge_family, args.pick, args.best, args.seconds,
                                         args.rounds)))
        return 0
    checks = []
    for index, workload in enumerate(workloads, 1):
        if not args.json:  # a child's parent said it
            progress(f"[{index}/{len(workloads)}] {workload.name}")
        if args.in_process:
            checks += check_workload(workload, args.candidates, args.threshold, args.rounds)
            continue
        checks += [judged(check, args) for check in check_in_child(workload, args)]
    print(json.dumps([to_json(check) for check in checks]) if args.json else markdown(checks, args, command_line()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
