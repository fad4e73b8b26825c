#!/usr/bin/env bash
# Set up (with test tools) and run the whole suite through CMake's check-prism:
# the FileCheck tests through lit, then pytest.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh --test
cmake -S . -B build -DPython3_EXECUTABLE="$PWD/.venv/bin/python" >/dev/null
cmake --build build --target check-prism
