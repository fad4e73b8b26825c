"""benchmarks/gpu/predict.py: the GPU model's predicted time of the bundle's workloads against the chip's measured
ceilings, per kernel and per workload."""

from __future__ import annotations

import sys

import pytest

from conftest import REPO

sys.path[:0] = [str(REPO / "benchmarks" / "gpu"), str(REPO / "benchmarks")]
import predict  # noqa: E402


@pytest.fixture(scope="module")
def rows() -> list[dict]:
    return predict.predict_workloads("h200", ["bf16"], ["gemm-dynamic-m-*", "swiglu-*", "attention-1x32x1x4096x128-*"])


def test_no_prediction_beats_the_measured_ceilings(rows: list[dict]) -> None:
    """The model's rates are the measured ones less a margin, so no workload is predicted faster than the chip's
    ceiling; each workload's time is its kernels' sum."""
    assert {r["workload"] for r in rows} >= {"swiglu-16x1024-bf16", "attention-1x32x1x4096x128-bf16",
                                             "gemm-dynamic-m1x4096x4096-bf16"}
    for r in rows:
        assert 0 < r["fraction"] <= 1, r
        assert r["predicted_us"] == pytest.approx(sum(r["per_kernel_us"].values()))
        assert r["kernels"] == len(r["per_kernel_us"])


def test_a_dynamic_gemm_is_predicted_at_each_size_with_its_class_tile(rows: list[dict]) -> None:
    """One compiled unit serves every M, each size predicted with its class's tile: the small sizes near the
    weight's streaming time, the large one compute-bound and slower."""
    times = {int(r["workload"].split("m")[-1].split("x")[0]): r["predicted_us"] for r in rows
             if r["workload"].startswith("gemm-dynamic-m")}
    sizes = sorted(times)
    assert sizes == [1, 16, 77, 128, 2048]
    assert max(times[m] for m in sizes[:-1]) < times[2048]
    weight_us = 4096 * 4096 * 2 / predict.CEILINGS["h200"]["bytes_per_s"] * 1e6
    assert times[1] < 3 * weight_us


def test_the_table_lists_every_row_and_the_geomean(rows: list[dict]) -> None:
    text = predict.table(rows, "h200")
    assert all(r["workload"] in text for r in rows)
    assert text.splitlines()[-1].startswith("| geomean |")
