"""Digests of everything Prism emits for the bundled programs, to show that a change left its outputs alone.

For every example and benchmark workload, on h200 and on this host, the
default pipeline (prism-optimize) runs once; the script records the SHA-256
of the optimized MLIR, of the report (funnel timings removed: they are wall
clock) and of the lowered artifacts (PTX and the host-side LLVM-dialect
module for h200, the LLVM-dialect module for the host). A program Prism refuses records its error message instead.

    .venv/bin/python benchmarks/outputs.py --save before.json     # on the old revision
    .venv/bin/python benchmarks/outputs.py --check before.json    # on the new one: exit 1 on any difference

Host outputs depend on the machine (cores, caches, vector width), so compare
digests taken on one machine.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
from pathlib import Path

from prism.driver import Compilation, steps_for
from prism.infra.errors import PrismError
from prism.infra.ir import SourceChunk, make_context, parse_chunk

REPO = Path(__file__).resolve().parents[1]
PROGRAMS = sorted([*REPO.glob("examples/*.mlir"), *REPO.glob("benchmarks/workloads/**/*.mlir")])
# The lowered artifacts of each target: a GPU's PTX and its host-side LLVM module, the host's LLVM module.
LOWERED = {"h200": ("ptx", "llvm"), "host": ("llvm",)}


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def _without_timings(report: dict) -> dict:
    for family in report.get("families", []):
        for stage in family["funnel"]:
            stage.pop("seconds", None)
    return report


def outputs(path: Path, target: str) -> dict[str, str]:
    """Digest per output kind of ``path`` compiled for ``target`` (or the error it raised)."""
    name = str(path.relative_to(REPO))
    compilation = Compilation(parse_chunk(SourceChunk(path.read_text(), name), make_context()), target)
    found: dict[str, str] = {}
    try:
        compilation.run(steps_for(None, "report"))
        found["mlir"] = _digest(compilation.emit("mlir"))
        found["report"] = _digest(json.dumps(_without_timings(json.loads(compilation.emit("report"))), sort_keys=True))
        for kind in LOWERED[target]:
            found[kind] = _digest(compilation.emit(kind))
    except PrismError as error:
        found["error"] = error.message
    return found


def main() -> int:
    """Entry point."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    action = parser.add_mutually_exclusive_group(required=True)
    action.add_argument("--save", type=Path, help="write the digests to this JSON file")
    action.add_argument("--check", type=Path, help="compare with digests saved earlier; exit 1 on a difference")
    args = parser.parse_args()
    digests = {}
    for path in PROGRAMS:
        for target in LOWERED:
            key = f"{path.relative_to(REPO)} [{target}]"
            digests[key] = outputs(path, target)
            print(f"{key}: {', '.join(digests[key])}", file=sys.stderr, flush=True)
    if args.save:
        args.save.write_text(json.dumps(digests, indent=1, sort_keys=True) + "\n")
        return 0
    saved = json.loads(args.check.read_text())
    differing = [key for key in sorted(set(saved) | set(digests)) if saved.get(key) != digests.get(key)]
    for key in differing:
        kinds = sorted(k for k in set(saved.get(key, {})) | set(digests.get(key, {}))
                       if saved.get(key, {}).get(k) != digests.get(key, {}).get(k))
        print(f"differs: {key}: {', '.join(kinds)}")
    print(f"{len(digests) - len(differing)} of {len(digests)} program/target pairs identical")
    return 1 if differing else 0


if __name__ == "__main__":
    sys.exit(main())
