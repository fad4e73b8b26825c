"""What prism-explore finds on the workloads: predicted and measured time per call, as written and explored.

For each workload (weights marked invariant where the workload has them),
prism-explore runs for the target; the report gives the predicted time of
the program as written and of the variant. On the host, both programs are
then compiled (lift, prune, select, instantiate, lower) and timed: the
function as written against the explored per-call function (``_apply``
with its prepared values computed once beforehand, or the rewritten
function itself). Times are minima over interleaved rounds; ratios compare
runs of the same process.

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
from prism.ir import make_context
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


def best_seconds(fn, args, rounds: int) -> float:
    fn(*args)
    best = float("inf")
    for _ in range(rounds):
        began = time.perf_counter()
        fn(*args)
        best = min(best, time.perf_counter() - began)
    return best


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--target", default="host")
    parser.add_argument("--rounds", type=int, default=20)
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
            explored_text = str(compilation.module)
            written = prism.compile(text, target="host", pipeline=HOST_PIPELINE).jit(name)
            rng = np.random.default_rng(0)
            inputs = [rng.standard_normal(spec.shape).astype(spec.dtype) / 8 for spec in written.signature.inputs]
            compiled = prism.compile(explored_text, target="host", pipeline=HOST_PIPELINE)
            if found["prepared"]:  # the entry shows which arguments each part takes
                def operands(part: str) -> list[str]:
                    call = re.search(rf"call @{name}_{part}\(([^)]*)\)", explored_text).group(1)
                    return [v.strip() for v in call.split(",")]
                prepared = compiled.jit(f"{name}_prepare")(*(inputs[int(v[4:])] for v in operands("prepare")))
                prepared = list(prepared) if isinstance(prepared, tuple) else [prepared]
                variant_args = [inputs[int(v[4:])] if v.startswith("%arg") else prepared.pop(0)
                                for v in operands("apply")]
                variant_fn = compiled.jit(f"{name}_apply")
            else:
                variant_fn, variant_args = compiled.jit(name), inputs
            written_s, variant_s = np.inf, np.inf
            for _ in range(3):  # interleaved
                written_s = min(written_s, best_seconds(written, inputs, options.rounds))
                variant_s = min(variant_s, best_seconds(variant_fn, variant_args, options.rounds))
            row.update(measured_written_us=written_s * 1e6, measured_variant_us=variant_s * 1e6,
                       measured_ratio=written_s / variant_s)
        rows.append(row)
        print(json.dumps(row), flush=True)
    print(json.dumps({"date": time.strftime("%Y-%m-%d"), "machine": machine(), "versions": versions(),
                      "command": " ".join(["benchmarks/explore.py", *sys.argv[1:]])}))


if __name__ == "__main__":
    main()
