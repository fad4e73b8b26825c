"""What prism-explore finds on the workloads: predicted and measured time per call, as written and explored.

For each workload (weights marked invariant where the workload has them),
prism-explore runs for the target; the report gives the predicted time of
the program as written and of the variant. On the host, both programs are
then compiled (lift, prune, select, instantiate, lower) and timed: the
function as written against the explored per-call function (bound to
its weights, so that ``_prepare`` runs once and each call runs ``_apply``,
or the rewritten function itself). The two run alternately, ``--rounds`` times each; the
table gives each one's fastest call and the median of the per-round ratios,
which cancels the slow drifts of a shared machine's memory bandwidth.

    .venv/bin/python benchmarks/explore.py [--target host] [--rounds 20]
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import time
from pathlib import Path

import numpy as np
from environment import machine, versions
from mlir import ir

import prism
from prism.driver import Compilation
from prism.infra.ir import make_context
from prism.passes import ExplorePass

WORKLOADS = Path(__file__).resolve().parent / "workloads"
HOST_PIPELINE = "prism-lift,prism-prune,prism-select,prism-instantiate"
# workload -> the arguments that are weights
CASES = {"qkv": ("wq", "wk", "wv"), "lora": ("w", "a", "b"), "rmsnorm_matmul": ("gamma", "w"),
         "swiglu": ("wg", "wu", "wd"), "attention": (), "qk_norm_scores": ()}


def marked(text: str, names: tuple[str, ...]) -> str:
    for name in names:
        text = re.sub(rf"(%{name}: tensor<[^>]*>)", r"\1 {prism.invariant}", text, count=1)
    return text


def seconds(fn, args: list[np.ndarray]) -> float:
    began = time.perf_counter()
    fn(*args)
    return time.perf_counter() - began


def per_call(name: str, explored_text: str, prepared_count: int, inputs: list[np.ndarray]):
    """The explored per-call function and its operands: @name bound to its weights (prepared once), or @name."""
    compiled = prism.compile(explored_text, target="host", pipeline=HOST_PIPELINE)
    if not prepared_count:
        return compiled.jit(name), inputs
    found = re.search(r"prism\.prepare_args = array<i64: ([^>]*)>", explored_text)
    prepare_args = [int(i) for i in found.group(1).split(",")]
    bound = compiled.bind(name, **{f"arg{i}": inputs[i] for i in prepare_args})
    return bound, [value for i, value in enumerate(inputs) if i not in prepare_args]


def measure(name: str, text: str, explored_text: str, prepared_count: int, rounds: int) -> dict[str, float]:
    """Host times of the function as written and of the explored per-call function, interleaved."""
    written = prism.compile(text, target="host", pipeline=HOST_PIPELINE).jit(name)
    rng = np.random.default_rng(0)
    inputs = [(rng.standard_normal(spec.shape) / 8).astype(spec.dtype) for spec in written.signature.inputs]
    variant, operands = per_call(name, explored_text, prepared_count, inputs)
    written(*inputs), variant(*operands)  # warm up
    pairs = [(seconds(written, inputs), seconds(variant, operands)) for _ in range(rounds)]
    return {"measured_written_us": min(a for a, _ in pairs) * 1e6,
            "measured_variant_us": min(b for _, b in pairs) * 1e6,
            "measured_ratio": float(np.median([a / b for a, b in pairs]))}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--target", default="host")
    parser.add_argument("--rounds", type=int, default=60)
    options = parser.parse_args()
    rows = []
    for name, weights in CASES.items():
        text = marked((WORKLOADS / f"{name}.mlir").read_text(), weights)
        compilation = Compilation(ir.Module.parse(text, make_context()), options.target)
        began = time.perf_counter()
        compilation.run([ExplorePass()])
        explore_seconds = time.perf_counter() - began
        (found,) = compilation.ctx.report["explorations"]
        row = {"workload": name, "rewritten": found["rewritten"], "prepared": found["prepared"],
               "predicted_us": found["predicted_seconds"] * 1e6, "variant_us": found["variant_seconds"] * 1e6,
               "predicted_ratio": found["predicted_seconds"] / found["variant_seconds"],
               "explore_s": explore_seconds, "e_classes": found["e_classes"]}
        if options.target == "host" and found["rewritten"]:
            row.update(measure(name, text, str(compilation.module), found["prepared"], options.rounds))
        rows.append(row)
        print(json.dumps(row), file=sys.stderr, flush=True)
    print(table(rows, options))


def table(rows: list[dict], options: argparse.Namespace) -> str:
    """The figures as a markdown section for RESULTS.md."""
    measured = options.target == "host"
    head = "| workload | weights prepared | predicted as written (us) | predicted explored (us) | predicted ratio |"
    head += " fastest as written (us) | fastest explored (us) | median ratio |" if measured else ""
    head += " explore (s) | e-classes |"
    lines = [head, "|" + " --- |" * (head.count("|") - 1)]
    for r in rows:
        cells = [r["workload"], str(r["prepared"]) if r["rewritten"] else "kept as written",
                 f"{r['predicted_us']:.1f}", f"{r['variant_us']:.1f}", f"{r['predicted_ratio']:.3f}"]
        if measured:
            cells += ([f"{r['measured_written_us']:.0f}", f"{r['measured_variant_us']:.0f}",
                       f"{r['measured_ratio']:.2f}"] if "measured_ratio" in r else ["", "", ""])
        cells += [f"{r['explore_s']:.2f}", str(r["e_classes"])]
        lines.append("| " + " | ".join(cells) + " |")
    command = " ".join([".venv/bin/python benchmarks/explore.py", *sys.argv[1:]])
    return "\n".join([f"- Date: {time.strftime('%Y-%m-%d')}", f"- Machine: {machine()}",
                      f"- Versions: {versions('egglog', 'islpy', 'numpy', 'xtc-mlir-python-bindings')}",
                      f"- Target: {options.target}", f"- Command: `{command}`", "", *lines])


if __name__ == "__main__":
    main()
