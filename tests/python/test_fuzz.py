"""A fixed subset of the program fuzzer (benchmarks/fuzz.py): no abort, no traceback, no wrong result.

Every tenth program of the recorded 200-program run (seeds 0-199), each
checked on the host against float64 numpy and, statically shaped, through
the H200 lowering and ptxas. Refusals are allowed: they are answers.
"""

from __future__ import annotations

import sys

from conftest import REPO

sys.path.insert(0, str(REPO / "benchmarks"))

import fuzz  # noqa: E402  (the fuzzer lives with the benchmarks)

SEEDS = list(range(0, 200, 10))


def test_fuzzed_programs_compile_run_and_match_numpy() -> None:
    outcomes = fuzz.fuzz(SEEDS, gpu=True)
    bad = [line for line in fuzz.summary(outcomes) if line.startswith("- seed")]
    assert not bad, "\n".join(fuzz.summary(outcomes))
    assert sum(o["host"][0] == "ok" for o in outcomes) >= len(SEEDS) // 2, fuzz.summary(outcomes)


def test_programs_are_a_function_of_their_seed() -> None:
    assert fuzz.generate(7).text == fuzz.generate(7).text
    assert fuzz.generate(7).text != fuzz.generate(8).text
