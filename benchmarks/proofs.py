"""Proof times: each workload of the design's evaluation, proven equal to its rewritten form.

Usage: .venv/bin/python benchmarks/proofs.py [--repeats 5]

For every ``benchmarks/workloads/rewritten/NAME.mlir`` (the fused or
reassociated form of ``benchmarks/workloads/NAME.mlir``: QKV and gate/up
fused through concatenated weights, RMSNorm's scale moved after the matmul
with gamma folded into the weights, LoRA merged into one GEMM, attention
dividing after the second matmul), for each workload against its own
tuned output, and for each workload against what ``prism-explore`` makes of
it (for h200, weights marked invariant), the script reports:

- the proof alone (translation into terms and the bounded egglog run of
  :func:`prism.algebra.egraph.prove`), the fastest of ``--repeats`` runs;
- the laws that fired (distinct equations, and matches in all), the e-graph's
  size when the goal held;
- the whole ``prism.verify`` call, which also compiles both programs for the
  host and compares them on random inputs whenever the proof needed a law.

Prints Markdown ready to append to benchmarks/RESULTS.md.
"""

from __future__ import annotations

import argparse
import datetime
import time
from pathlib import Path

from environment import machine, versions
from explore import CASES, marked
from mlir import ir

import prism
from prism.algebra.egraph import Budget, Proof, prove
from prism.algebra.prove import public_functions
from prism.algebra.terms import translate
from prism.infra.ir import make_context

WORKLOADS = Path(__file__).resolve().parent / "workloads"


def fastest_proof(original: str, candidate: str, repeats: int) -> tuple[float, Proof]:
    """Seconds of the fastest of ``repeats`` translations and proofs, and the last proof.

    The function proven is the original's (first) public function; the
    candidate's function of that name may call helpers (prism-explore's
    ``_prepare`` and ``_apply``), which the translation inlines.
    """
    best, proof = float("inf"), None
    modules = [ir.Module.parse(text, make_context()) for text in (original, candidate)]
    name = next(iter(public_functions(modules[0])))
    for _ in range(repeats):
        start = time.perf_counter()
        proof = prove(*(translate(public_functions(module)[name]) for module in modules), Budget())
        best = min(best, time.perf_counter() - start)
    if not proof.proved:
        raise SystemExit(f"not proven: {proof}")
    return best, proof


def row(name: str, original: str, candidate: str, repeats: int) -> str:
    """One table row: the proof's time and evidence, then the whole verification's time."""
    seconds, proof = fastest_proof(original, candidate, repeats)
    start = time.perf_counter()
    prism.verify(original, candidate)
    verify_seconds = time.perf_counter() - start
    equations = {law.rstrip("~") for law in proof.laws}
    return (f"| {name} | {seconds * 1e3:.1f} ms | {len(equations)} equations, {sum(proof.laws.values())} matches | "
            f"{proof.nodes} | {verify_seconds:.2f} s | {', '.join(sorted(equations)) or '-'} |")


def main() -> None:
    """Prove every workload and print the table."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5, help="proof runs per workload (fastest kept)")
    args = parser.parse_args()
    lines = [f"- Date: {datetime.date.today()}", f"- Machine: {machine()}",
             f"- Versions: {versions('egglog', 'numpy', 'xtc-mlir-python-bindings')}",
             f"- Command: `.venv/bin/python benchmarks/proofs.py --repeats {args.repeats}`", "",
             "| workload: original vs | proof (translation + egglog) | laws fired | e-nodes | prism.verify "
             "(proof + numeric check) | equations used |", "| --- | --- | --- | --- | --- | --- |"]
    for rewritten in sorted((WORKLOADS / "rewritten").glob("*.mlir")):
        original = (WORKLOADS / rewritten.name).read_text()
        lines.append(row(f"{rewritten.stem}: rewritten", original, rewritten.read_text(), args.repeats))
    for source in sorted(WORKLOADS.glob("*.mlir")):
        tuned = prism.compile(source, target="host", pipeline="prism-lift,prism-prune,prism-select,prism-instantiate")
        lines.append(row(f"{source.stem}: prism-optimize output", source.read_text(), tuned.mlir, args.repeats))
    for name, weights in CASES.items():  # what prism-explore itself produces, weights marked invariant
        source = marked((WORKLOADS / f"{name}.mlir").read_text(), weights)
        explored = prism.compile(source, target="h200", emit="mlir", pipeline="prism-explore")
        lines.append(row(f"{name}: prism-explore output (h200)", source, explored.mlir, args.repeats))
    print("\n".join(lines))


if __name__ == "__main__":
    main()
