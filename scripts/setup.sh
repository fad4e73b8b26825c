#!/usr/bin/env bash
# Create .venv with Prism and its pinned dependencies (and test tools with --test).
# Idempotent: a second run only re-checks the install.
set -euo pipefail
cd "$(dirname "$0")/.."
python3 -m venv .venv
extras=""
[[ "${1:-}" == "--test" ]] && extras="[test]"
.venv/bin/python -m pip install --quiet --disable-pip-version-check -e ".${extras}"
