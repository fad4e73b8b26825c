"""The timing method of benchmarks/cpu.py: warm-up before each block, blocks in alternating order, the defaults."""

from __future__ import annotations

import sys
import time

import pytest

from conftest import REPO

sys.path.insert(0, str(REPO / "benchmarks"))
import cpu  # noqa: E402  (the harness lives with the benchmarks)


def _recording(log: list[str], name: str, seconds: float = 0.0):
    def call() -> None:
        log.append(name)
        if seconds:
            time.sleep(seconds)
    return call


def test_each_block_follows_one_untimed_call_without_warmup() -> None:
    log: list[str] = []
    calls = {name: _recording(log, name) for name in ("a", "b")}
    times = cpu.time_blocks(calls, repeats=6, rounds=3, pause=0.0, warmup=0.0)
    assert {name: len(t) for name, t in times.items()} == {"a": 6, "b": 6}
    # Blocks of one untimed and two timed calls; the order of the contenders turns round every round.
    assert "".join(log) == "aaa" "bbb" + "bbb" "aaa" + "aaa" "bbb"


def test_the_warmup_runs_calls_for_its_time_before_each_block() -> None:
    log: list[str] = []
    start = time.perf_counter()
    times = cpu.time_blocks({"slow": _recording(log, "slow", 0.001)}, repeats=2, rounds=2, pause=0.0, warmup=0.03)
    assert time.perf_counter() - start >= 2 * 0.03
    assert len(times["slow"]) == 2
    assert len(log) - 2 > 2  # more than the one untimed call per block of warmup=0 (30 ms of 1 ms calls)


def test_the_defaults_time_24_calls_in_8_blocks_after_50_ms_of_warmup() -> None:
    args = cpu.parse_args([])
    assert (args.repeats, args.rounds, args.warmup) == (24, 8, 0.05)
    quick = cpu.parse_args(["--quick"])
    assert (quick.repeats, quick.rounds) == (4, 2)


@pytest.mark.parametrize("option", [["--rounds", "0"], ["--repeats", "0"], ["--warmup", "-1"], ["--pause", "-0.1"]])
def test_meaningless_timing_options_are_refused(option: list[str], capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as raised:
        cpu.parse_args(option)
    assert raised.value.code == 2
    assert "must" in capsys.readouterr().err
