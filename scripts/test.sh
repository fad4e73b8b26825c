#!/usr/bin/env bash
# Set up .venv (with the test tools) and run the whole suite: the FileCheck
# tests through lit first, then pytest, each through its CMake target
# (check-prism runs both). Progress goes to the terminal as it runs.
set -euo pipefail
cd "$(dirname "$0")/.."
began=$SECONDS
echo "== [1/4] setting up .venv (pinned dependencies and test tools)"
scripts/setup.sh --test
echo "== [2/4] configuring the CMake build"
cmake -S . -B build -DPython3_EXECUTABLE="$PWD/.venv/bin/python" >/dev/null
echo "== [3/4] FileCheck tests (lit)"
cmake --build build --target check-prism-lit
echo "== [4/4] pytest"
cmake --build build --target check-prism-pytest
echo "== all tests passed in $((SECONDS - began)) s"
