"""Shared fixtures: a seeded random generator whose seed each test prints."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

REPO = Path(__file__).resolve().parents[2]
# The tests describe the host by its defaults, whatever this machine's calibration says (and so do the CLI
# runs they start, which inherit this).
os.environ["PRISM_HOST_CONFIG"] = ""
EXAMPLES = REPO / "examples"


@pytest.fixture
def rng(request: pytest.FixtureRequest) -> np.random.Generator:
    """A fresh generator; the seed is printed so a failure can be replayed with PRISM_SEED."""
    seed = int(os.environ.get("PRISM_SEED", np.random.SeedSequence().entropy % 2**32))
    print(f"{request.node.name}: seed {seed} (replay with PRISM_SEED={seed})")
    return np.random.default_rng(seed)


def run_cli(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
    """Run prism-opt in a child process, so an abort would show as a signal, not kill pytest."""
    return subprocess.run([sys.executable, "-m", "prism.cli", *args], input=stdin, capture_output=True,
                          text=True, cwd=REPO, timeout=300)
