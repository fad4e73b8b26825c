#!/usr/bin/env bash
# The whole test suite: FileCheck tests through lit, then pytest.
set -euo pipefail
cd "$(dirname "$0")/.."
.venv/bin/lit -v tests/filecheck
.venv/bin/pytest -v tests/python
