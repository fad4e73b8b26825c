#!/usr/bin/env bash
# Prism's main job on the bundled examples: optimize each for an H200 and for
# this host, print a short report per kernel, and write the PTX to out/.
set -euo pipefail
cd "$(dirname "$0")/.."
mkdir -p out
for example in examples/*.mlir; do
  name=$(basename "$example" .mlir)
  for target in h200 host; do
    .venv/bin/prism-opt "$example" --target="$target" --emit=report -o "out/$name.$target.json"
    .venv/bin/python -m prism.summary "out/$name.$target.json"
  done
  .venv/bin/prism-opt "$example" --target=h200 --emit=ptx -o "out/$name.sm_90.ptx"
  echo "  PTX: out/$name.sm_90.ptx"
done
