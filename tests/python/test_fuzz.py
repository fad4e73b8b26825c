"""A fixed subset of the program fuzzer (benchmarks/fuzz.py): no abort, no traceback, no wrong result.

SEEDS are fourteen programs of the recorded 200-program run (seeds 0-199),
each checked on the host against float64 numpy and, statically shaped,
through the H200 lowering and ptxas. Refusals are allowed: they are answers.
Together they take every kind of step that every tenth program of the run
takes (matmul, batch_matmul, generic products with B stored either way,
generic, named and whole-tensor elementwise ops, a 0-d operand on either
side, sum and max reductions with their broadcast, transposes), at ranks 2
to 4 with 0, 1 or 3 dynamic dimensions, in f32, f16 and f16 with f32
products, with sizes 1, odd, powers of two and 64, one to four steps, and
several results: the kinds ``conftest.fuzz_kinds`` names, which the last
test holds the subset to.
"""

from __future__ import annotations

import sys

import numpy as np

from conftest import REPO, fuzz_kinds

sys.path.insert(0, str(REPO / "benchmarks"))

import fuzz  # noqa: E402  (the fuzzer lives with the benchmarks)

SEEDS = [30, 40, 50, 60, 70, 80, 90, 100, 110, 120, 130, 150, 160, 180]


def test_fuzzed_programs_compile_run_and_match_numpy() -> None:
    outcomes = fuzz.fuzz(SEEDS, gpu=True)
    bad = [line for line in fuzz.summary(outcomes) if line.startswith("- seed")]
    assert not bad, "\n".join(fuzz.summary(outcomes))
    assert sum(o["host"][0] == "ok" for o in outcomes) >= len(SEEDS) // 2, fuzz.summary(outcomes)


# Programs of later runs that found a bug, each kept once fixed: 1366, a row kernel reading the slice of a
# padded product as if its rows were contiguous (wrong results); 1400 and 1451, a product distributed over a
# constant addend, which left a product of a constant that has no shape (a traceback); 2067, the same of a
# transpose; 7058, a GPU plan that named one dynamic row count (two dimensions collapsed) by two symbols; 9044, a
# false alarm of the fuzzer's own: an f16 chain whose stored sums lose to rounding what float64 keeps, right as
# the program's types say (fuzz.matches); 11333, a collapse of rows that erased an expansion read twice twice (a
# segmentation fault).
FOUND = [1366, 1400, 1451, 2067, 7058, 9044, 11333]


def test_programs_that_found_bugs_compile_run_and_match_numpy() -> None:
    outcomes = fuzz.fuzz(FOUND, gpu=True)
    bad = [line for line in fuzz.summary(outcomes) if line.startswith("- seed")]
    assert not bad, "\n".join(fuzz.summary(outcomes))
    assert all(o["host"][0] == "ok" for o in outcomes), fuzz.summary(outcomes)


def test_programs_are_a_function_of_their_seed() -> None:
    assert fuzz.generate(7).text == fuzz.generate(7).text
    assert fuzz.generate(7).text != fuzz.generate(8).text


def test_the_seeds_take_every_kind_of_step_that_every_tenth_program_takes() -> None:
    def kinds(seeds: list[int]) -> set[str]:
        return set().union(*(fuzz_kinds(fuzz.generate(seed)) for seed in seeds))

    assert kinds(list(range(0, 200, 10))) - kinds(SEEDS) == set()


def test_an_f16_value_is_judged_as_stored_only_where_float64_disagrees() -> None:
    """A right f16 answer may differ from the float64 meaning by more than the tolerance (9044); the stored
    meaning then decides, and an answer far from both is still wrong."""
    program = fuzz.generate(9044)
    (value,) = program.results
    inputs = program.inputs(np.random.default_rng(0))
    exact = value.evaluate(inputs)
    with fuzz.stored_in_f16():
        stored = value.evaluate(inputs)
    assert np.abs(stored - exact).max() > fuzz.TOLERANCE["f16"]
    assert fuzz.matches(stored, value, inputs, "f16") and fuzz.matches(exact, value, inputs, "f16")
    assert not fuzz.matches(stored, value, inputs, "f32")
    assert not fuzz.matches(stored + 0.2, value, inputs, "f16")
