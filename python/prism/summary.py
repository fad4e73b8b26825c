"""Print a one-line-per-family summary of a ``prism-opt --emit=report`` file.

Usage: ``python -m prism.summary REPORT.json``
"""

from __future__ import annotations

import json
import sys
from pathlib import Path


def funnel_table(report: dict) -> list[str]:
    """The funnel of each family as an aligned table: stage, points left, seconds."""
    lines = []
    for family in report.get("families", []):
        lines.append(f"{family['name']} ({family['kind']}): {len(family['funnel'])} stages")
        for stage in family["funnel"]:
            seconds = "-" if stage["seconds"] is None else f"{stage['seconds'] * 1e3:.2f} ms"
            lines.append(f"  {stage['stage']:<14} {stage['size']:>8}  {seconds:>10}")
    return lines


def summarize(report: dict) -> list[str]:
    """Lines describing each explored function (rewritten or not), the kernels of each function (host), then
    each family: its funnel and its choice."""
    lines = []
    for found in report.get("explorations", []):
        verdict = ("rewritten" + (f", {found['prepared']} value(s) prepared once" if found["prepared"] else "")
                   if found["rewritten"] else "kept as written")
        lines.append(f"{report['target']:>5} @{found['function']}: {verdict}; predicted "
                     f"{found['predicted_seconds'] * 1e6:.1f} -> {found['variant_seconds'] * 1e6:.1f} us per call "
                     f"({found['e_classes']} e-classes, {found['costed']} programs costed)")
    for entry in report.get("kernels", []):
        kinds = ", ".join(k["kind"] + (f" ({len(k['ops'])} ops)" if len(k["ops"]) > 1 else "")
                          for k in entry["kernels"])
        lines.append(f"{report['target']:>5} {entry['function']}: {entry['count']} kernel(s): {kinds}")
    for family in report.get("families", []):
        funnel = " -> ".join(f"{s['stage']} {s['size']}" for s in family["funnel"])
        choice = ", ".join(f"{k}={v}" for k, v in family["choice"].items())
        lines.append(f"{report['target']:>5} {family['name']}: {family['kind']} [{choice}] "
                     f"predicted {family['predicted_seconds'] * 1e6:.1f} us; funnel {funnel}")
    return lines


def main(argv: list[str] | None = None) -> int:
    """Entry point."""
    args = sys.argv[1:] if argv is None else argv
    if len(args) != 1:
        print("usage: python -m prism.summary REPORT.json", file=sys.stderr)
        return 1
    print("\n".join(summarize(json.loads(Path(args[0]).read_text()))))
    return 0


if __name__ == "__main__":
    sys.exit(main())
