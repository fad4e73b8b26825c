"""A fixed subset of the prover fuzzer (benchmarks/prover_fuzz.py): every equal pair proven, every unequal one
refused with a counterexample, no crash; and the fuzzer itself catches a false law in its table."""

from __future__ import annotations

import sys

import pytest

from conftest import REPO

sys.path.insert(0, str(REPO / "benchmarks"))

import prover_fuzz as pf  # noqa: E402  (the fuzzer lives with the benchmarks)

from prism.algebra.terms import A  # noqa: E402
from prism.algebra.to_mlir import Shapes  # noqa: E402

SEED = 1
PAIRS = 16


def test_fixed_pairs_are_proven_or_refused_with_a_counterexample() -> None:
    outcomes = [pf.check_pair(SEED, index) for index in range(PAIRS)]
    expected = {"equal": "proved", "unequal": "refused"}
    wrong = [f"{pf.describe(o)}: {o['outcome']}: {o.get('detail', '')}\n{o.get('traceback', '')}"
             for o in outcomes if o["outcome"] != expected[o["kind"]]]
    assert not wrong, "\n".join(wrong)
    assert any(o["laws"] for o in outcomes if o["kind"] == "equal")


def test_a_false_law_in_the_table_gives_a_pair_that_is_refused() -> None:
    # sub(a, b) = sub(b, a) is false: the "equal" pair it writes must be refused, with a counterexample.
    false_law = pf.Rewrite("sub-commutative", "->", pf.commutative("sub"))
    once = next(index for index in range(0, 60, 2)  # an equal pair rewritten by the false law once
                if pf.build_pair(SEED, index, [false_law])[0].laws == ["sub-commutative ->"])
    outcome = pf.check_pair(SEED, once, table=[false_law])
    assert outcome["outcome"] == "unproven-counterexample", outcome
    assert "counterexample: result" in outcome["detail"]
    assert "unproven-counterexample" in pf.BAD


def test_pairs_are_a_function_of_their_seed() -> None:
    first, _ = pf.build_pair(SEED, 0)
    again, _ = pf.build_pair(SEED, 0)
    other, _ = pf.build_pair(SEED + 1, 0)
    assert first is not None and again is not None and other is not None
    assert pf.candidate_text(first.source, first.candidate) == pf.candidate_text(again.source, again.candidate)
    assert (first.source.seed, first.laws) != (other.source.seed, other.laws)


def test_every_entry_of_the_table_names_a_law_of_the_algebra() -> None:
    known = pf.known_laws()
    assert {entry.law for entry in pf.rewrites()} <= known
    assert len(pf.rewrites()) > 40  # the table covers the laws present


def test_ill_shaped_terms_are_not_written() -> None:
    shapes = Shapes([(3, 4), (4, 5), (3, 4)])
    assert pf.check_shapes(A.matmul(A.arg(0), A.arg(1)), shapes) == (3, 5)
    assert pf.check_shapes(A.add(A.arg(0), A.splat(1.0)), shapes) == (3, 4)
    for term in (A.matmul(A.arg(0), A.arg(2)), A.add(A.arg(0), A.arg(1)), A.exp(A.splat(1.0)),
                 A.slice_(A.arg(0), 1, 2, 3), A.broadcast(A.splat(1.0), 0, 3)):
        with pytest.raises(pf.IllShaped):
            pf.check_shapes(term, shapes)
