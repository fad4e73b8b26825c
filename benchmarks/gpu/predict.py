#!/usr/bin/env python3
"""What Prism's GPU model predicts for each workload of the bundle, as a fraction of the chip's measured ceilings.

    python benchmarks/gpu/predict.py [--target h200] [--dtypes bf16] [--only GLOB] [--json FILE]

For every workload :mod:`build` puts in the bundle, each function is
compiled as the bundle compiles it and planned for the GPU; each planned
kernel's time is predicted by the model the search uses
(:func:`prism.runtime.gpu_check.predict_planned`) at the workload's sizes.
The ceiling is the time the workload would take at the chip's measured
rates: its contractions' FLOPs at the measured dense matmul rate, or its
inputs' and outputs' bytes once each at the measured copy bandwidth,
whichever is longer. The fraction is ceiling / predicted: 1.0 would be the
chip's best. It needs no GPU; it says what the model expects, not what the
kernels do (``run.py`` measures that on a GPU).
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path[:0] = [str(HERE), str(HERE.parent)]
import build  # noqa: E402

# Measured ceilings (benchmarks/RESULTS.md, "Measurements behind rules in the code"): an 8192^3 bf16 matmul
# through torch and a device-to-device copy.
CEILINGS = {"h200": {"flops": 788e12, "bytes_per_s": 4.3e12}}
WIDTH = {"f16": 2, "bf16": 2, "f32": 4}


def predict_workloads(target: str, dtypes: list[str], only: list[str]) -> list[dict]:
    """One row per workload: its kernels' predicted seconds, its ceiling and the fraction."""
    import prism
    from prism.runtime.gpu_check import predict_planned

    ceiling = CEILINGS[target]
    rows = []
    for source, dtype in build.selected(only, dtypes):
        text = build.retype(source.text, source.base, dtype)
        compiled = prism.compile(text, target=target, emit="ptx")
        function = build.signature(text)[0]
        for case in source.cases:
            shapes = build.input_shapes(text, case)
            kernels = predict_planned(compiled.mlir, target, function, shapes)
            flops = build.flops(case.reference, case.params, shapes)
            moved = (sum(math.prod(s) for s in shapes) * WIDTH[dtype]
                     + _output_bytes(compiled.manifest, function, shapes))
            floor = max(flops / ceiling["flops"], moved / ceiling["bytes_per_s"])
            predicted = sum(seconds for _, seconds in kernels)
            rows.append({"workload": f"{case.name}-{dtype}", "kernels": len(kernels),
                         "predicted_us": predicted * 1e6, "ceiling_us": floor * 1e6,
                         "bound": "compute" if flops / ceiling["flops"] >= moved / ceiling["bytes_per_s"]
                         else "memory", "fraction": floor / predicted,
                         "per_kernel_us": {name: seconds * 1e6 for name, seconds in kernels}})
    return rows


def _output_bytes(manifest: dict, function: str, shapes: list[tuple[int, ...]]) -> int:
    """The bytes of the function's outputs at the inputs' sizes (from the manifest's shapes)."""
    from prism.codegen.gpu.manifest import bind_sizes, evaluate

    spec = manifest["functions"][function]
    sizes = bind_sizes(spec["sizes"], {t["name"]: s for t, s in zip(spec["inputs"], shapes, strict=True)})
    return sum(math.prod(evaluate(d, sizes) for d in t["shape"]) * WIDTH[t["dtype"]]
               for t in spec["outputs"])


def table(rows: list[dict], target: str) -> str:
    """The rows as a markdown table, with the geometric mean of the fractions."""
    lines = [f"| workload ({target}) | kernels | predicted µs | ceiling µs | bound | fraction |",
             "|---|---|---|---|---|---|"]
    lines += [f"| {r['workload']} | {r['kernels']} | {r['predicted_us']:.1f} | {r['ceiling_us']:.1f} | "
              f"{r['bound']} | {r['fraction']:.2f} |" for r in rows]
    if rows:
        geomean = math.exp(sum(math.log(r["fraction"]) for r in rows) / len(rows))
        lines.append(f"| geomean | | | | | {geomean:.2f} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--target", default="h200", choices=sorted(CEILINGS), help="chip with measured ceilings")
    parser.add_argument("--dtypes", default="bf16", help="comma-separated element types (default: bf16)")
    parser.add_argument("--only", action="append", default=[], metavar="GLOB", help="units to predict")
    parser.add_argument("--json", type=Path, help="also write the rows as JSON here")
    args = parser.parse_args(argv)
    rows = predict_workloads(args.target, args.dtypes.split(","), args.only)
    print(table(rows, args.target))
    if args.json:
        args.json.write_text(json.dumps(rows, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
