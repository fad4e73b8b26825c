#!/usr/bin/env bash
# Prism's main job on the bundled examples: optimize each for an H200 and for
# this host, print a short report per kernel, and write the PTX module and its
# launch manifest to out/.
# Usage: scripts/demo.sh [PYTHON]   (default: .venv/bin/python)
set -euo pipefail
cd "$(dirname "$0")/.."
python="${1:-.venv/bin/python}"
mkdir -p out
for example in examples/*.mlir; do
  name=$(basename "$example" .mlir)
  for target in h200 host; do
    "$python" -m prism.cli "$example" --target="$target" --emit=report -o "out/$name.$target.json"
    "$python" -m prism.summary "out/$name.$target.json"
  done
  "$python" -m prism.cli "$example" --target=h200 --emit=ptx -o "out/$name.sm_90a.ptx"
  "$python" -m prism.cli "$example" --target=h200 --emit=manifest -o "out/$name.sm_90a.json"
  echo "  PTX for $name: out/$name.sm_90a.ptx (launches: out/$name.sm_90a.json)"
done
