#!/usr/bin/env bash
# Create .venv with Prism and its pinned dependencies; --test adds the test tools,
# --bench the baselines of benchmarks/cpu.py (torch, IREE, matplotlib).
# Idempotent: a second run only re-checks the install.
set -euo pipefail
cd "$(dirname "$0")/.."
extras=()
for flag in "$@"; do
  case "$flag" in
    --test) extras+=(test) ;;
    --bench) extras+=(bench) ;;
    *) echo "usage: scripts/setup.sh [--test] [--bench]" >&2; exit 2 ;;
  esac
done
python3 -m venv .venv
spec="."
if ((${#extras[@]})); then
  spec=".[$(IFS=,; echo "${extras[*]}")]"
fi
.venv/bin/python -m pip install --quiet --disable-pip-version-check -e "${spec}"
