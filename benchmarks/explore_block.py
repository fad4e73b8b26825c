"""The decoder block explored and proven: prism-explore's time and e-graph, the proof of its output, and the host's
kernels as written and explored, for each variant of ``benchmarks/workloads/decoder_block*.mlir``.

    .venv/bin/python benchmarks/explore_block.py [--repeats 3]

For each variant, prism-explore runs for the host (``--repeats`` times; the
fastest is kept and every run must write the same bytes); the proof is
:func:`prism.algebra.egraph.prove` of the original against the explored
function (translation included, fastest of ``--repeats``), and the whole
``prism-explore,prism-verify`` pipeline is timed once (it also compiles
both programs for the host and compares them on random inputs). A variant
that exploration refuses (dynamic tokens) is reported with its reason.
Prints Markdown ready to append to benchmarks/RESULTS.md.
"""

from __future__ import annotations

import argparse
import datetime
import time
from pathlib import Path

from environment import machine, versions
from mlir import ir

import prism
from prism.algebra.egraph import Budget, prove
from prism.algebra.explore import explorable
from prism.algebra.prove import public_functions
from prism.algebra.terms import translate
from prism.infra.errors import PrismError
from prism.infra.ir import make_context, normalize_program

WORKLOADS = Path(__file__).resolve().parent / "workloads"
AS_WRITTEN = "prism-lift,prism-prune,prism-select,prism-instantiate"
VARIANTS = ("decoder_block", "decoder_block_f16", "decoder_block_dynamic", "decoder_block_f16_dynamic")


def kernels(text: str) -> str:
    """The host's kernel count for ``text`` as written, with the number of attention kernels."""
    report = prism.compile(text, target="host", pipeline=AS_WRITTEN, emit="report").report
    kinds = [kernel["kind"] for function in report["kernels"] for kernel in function["kernels"]]
    return f"{len(kinds)} ({kinds.count('attention')} attention)"


def explored(text: str, repeats: int) -> tuple[float, str, dict]:
    """The fastest prism-explore run's seconds, its output and its report entry; every run must agree."""
    best, outputs, entry = float("inf"), set(), {}
    for _ in range(repeats):
        began = time.perf_counter()
        result = prism.compile(text, target="host", pipeline="prism-explore", emit="mlir")
        best = min(best, time.perf_counter() - began)
        outputs.add(result.mlir)
        entry = prism.compile(text, target="host", pipeline="prism-explore", emit="report").report
    if len(outputs) != 1:
        raise SystemExit("prism-explore wrote different programs on the same input")
    return best, outputs.pop(), entry.get("explorations", [{}])[0]


def refusal(text: str, name: str) -> str:
    """Why prism-explore leaves @name of ``text`` as written, in its own words."""
    with make_context():
        module = ir.Module.parse(text)
        normalize_program(module)
        func = public_functions(module)[name]
        return explorable(func, translate(func))[1]


def proof_seconds(original: str, candidate: str, name: str, repeats: int) -> tuple[float, object]:
    """The fastest of ``repeats`` translations and proofs of @name, and the last proof."""
    best, proof = float("inf"), None
    for _ in range(repeats):
        with make_context():
            modules = [ir.Module.parse(text) for text in (original, candidate)]
            began = time.perf_counter()
            for module in modules:
                normalize_program(module)
            proof = prove(*(translate(public_functions(m)[name]) for m in modules), Budget())
            best = min(best, time.perf_counter() - began)
    return best, proof


def row(name: str, repeats: int) -> str:
    text = (WORKLOADS / f"{name}.mlir").read_text()
    seconds, output, entry = explored(text, repeats)
    if not entry:
        return f"| {name} | not explored: {refusal(text, name)} | | | | | {kernels(text)} | |"
    if not entry["rewritten"]:
        return f"| {name} | {seconds:.2f} s | kept as written | | | | {kernels(text)} | |"
    proved_in, proof = proof_seconds(text, output, name, repeats)
    began = time.perf_counter()
    try:
        prism.compile(text, target="host", pipeline="prism-explore,prism-verify", emit="mlir")
        verified = f"{time.perf_counter() - began:.2f} s"
    except PrismError as error:
        verified = f"failed: {error.message}"
    equations = {law.rstrip("~") for law in entry["laws"]}
    return (f"| {name} | {seconds:.2f} s | {entry['e_classes']} / {entry['e_nodes']}, {len(equations)} equations "
            f"| {'proven' if proof.proved else 'not proven'} in {proved_in:.2f} s ({proof.nodes} e-nodes) "
            f"| {seconds + proved_in:.2f} s | {verified} | {kernels(text)} | {kernels(output)} |")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3, help="runs of exploration and of the proof (fastest kept)")
    args = parser.parse_args()
    lines = [f"- Date: {datetime.date.today()}", f"- Machine: {machine()}",
             f"- Versions: {versions('egglog', 'numpy', 'xtc-mlir-python-bindings')}",
             f"- Command: `.venv/bin/python benchmarks/explore_block.py --repeats {args.repeats}`", "",
             "| variant | prism-explore | e-classes / e-nodes, laws | proof of the explored function | explored + "
             "proven | prism-explore,prism-verify (with the numeric check) | host kernels as written | explored |",
             "| --- | --- | --- | --- | --- | --- | --- | --- |"]
    for name in VARIANTS:
        lines.append(row(name, args.repeats))
        print(lines[-1], flush=True)
    print("\n".join(lines))


if __name__ == "__main__":
    main()
