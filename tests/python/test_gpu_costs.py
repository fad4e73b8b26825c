"""Predicted seconds of planned GPU kernels (prism.codegen.gpu.cost): bytes at DRAM bandwidth, blocks in waves
over the SMs, a launch each; GEMMs and attention by their search models."""

from __future__ import annotations

import dataclasses
import sys

import numpy as np
import pytest

import prism
from conftest import REPO
from prism.codegen.gpu.cost import holds, predict_seconds
from prism.codegen.gpu.spec import (
    AttentionSpec,
    AttentionTile,
    GemmSpec,
    GemmTile,
    GenericSpec,
    Operand,
    PointwiseSpec,
    Reduction,
    RowOutput,
    RowSpec,
    ScalarFn,
    Tensor,
)
from prism.families.attention_gpu import attention_seconds
from prism.search.attention import Attention
from prism.targets.nvidia import GPU_TARGETS, LAUNCH_SECONDS

sys.path.insert(0, str(REPO / "benchmarks"))
import cpu_workloads as cw  # noqa: E402
import gpu_workloads as gw  # noqa: E402

H200 = GPU_TARGETS["h200"]


def _first(t, values, _):
    return values[0]


def copy(rows, cols, dtype="bf16") -> PointwiseSpec:
    x, y = Tensor("x", dtype, (rows, cols)), Tensor("y", dtype, (rows, cols))
    return PointwiseSpec("copy", y, ScalarFn((Operand("tensor", x, (0, 1)),), dtype, _first))


def row_sum(rows, cols, dtype="bf16") -> RowSpec:
    """Each row's sum of x, written once per row."""
    x, s = Tensor("x", dtype, (rows, cols)), Tensor("s", "f32", (rows,))
    value = ScalarFn((Operand("tensor", x, (0, 1)),), dtype, _first)
    total = ScalarFn((Operand("tensor", Tensor("sum", "f32", ()), ()),), "f32", _first)
    return RowSpec("row_sum", (rows,), (cols,), (Reduction("sum", "add", 0.0, value),),
                   (RowOutput(s, total, per_row=True),))


def test_more_bytes_cost_more():
    seconds = [predict_seconds(copy(rows, 4096), H200) for rows in (64, 256, 1024, 4096, 16384, 65536)]
    assert all(a < b for a, b in zip(seconds, seconds[1:], strict=False)), seconds
    assert seconds[0] >= LAUNCH_SECONDS


def test_a_block_past_a_full_wave_costs_a_wave():
    # short rows: a warp a row, 4 rows a block; 132 blocks fill the H200's SMs once, 133 need a second wave
    full, over = (predict_seconds(row_sum(4 * blocks, 1024), H200) - LAUNCH_SECONDS for blocks in (132, 133))
    assert over > 1.9 * full


def test_a_row_kernel_twice_as_large_costs_about_twice_as_much():
    small, large = (predict_seconds(row_sum(rows, 4096), H200) for rows in (65536, 131072))
    assert 1.9 < large / small < 2.01


def test_dynamic_sizes_take_the_given_or_assumed_values():
    spec = row_sum("m", 4096)
    assert predict_seconds(spec, H200, {"m": 65536}) == predict_seconds(row_sum(65536, 4096), H200)
    assert predict_seconds(spec, H200) == predict_seconds(row_sum(1024, 4096), H200)
    # dynamic columns: the short-row kernel for 512 columns, the block-per-row one for 8192
    wide = row_sum(4096, "n")
    assert predict_seconds(wide, H200, {"n": 8192}) > predict_seconds(wide, H200, {"n": 512})


def test_launch_conditions():
    assert holds(None, {}) and holds("n <= 1024", {"n": 1024}) and not holds("n > 1024", {"n": 1024})
    assert holds("cdiv(n, 8) * 8 == n and m >= 1", {"n": 64, "m": 1})


def test_a_generic_kernel_costs_its_bytes():
    x, y = Tensor("x", "f32", (64, 4096)), Tensor("y", "f32", (64,))
    spec = GenericSpec("g", (64, 4096), ("parallel", "reduction"), (x,), ("affine_map<(d0, d1) -> (d0, d1)>",),
                       (y,), ("affine_map<(d0, d1) -> (d0)>",), (0.0,),
                       lambda t, ins, outs, idx: [t.value(f"arith.addf {ins[0]}, {outs[0]} : f32")])
    moved = (64 * 4096 + 64) * 4
    assert predict_seconds(spec, H200) >= LAUNCH_SECONDS + moved / H200.dram_bytes_per_s


def test_a_gemm_is_its_contraction_under_the_gpu_model():
    a, b, c = Tensor("a", "bf16", (512, 1024)), Tensor("b", "bf16", (1024, 768)), Tensor("c", "bf16", (512, 768))
    spec = GemmSpec("mm", a, b, c, 512, 768, 1024, tile=GemmTile(BM=128, BN=128, BK=64, WM=64, WN=128))
    seconds = predict_seconds(spec, H200)
    assert seconds > 2 * 512 * 768 * 1024 / H200.flops["bf16"]
    big = GemmSpec("mm", Tensor("a", "bf16", (4096, 1024)), b, Tensor("c", "bf16", (4096, 768)), 4096, 768, 1024,
                   tile=spec.tile)
    assert predict_seconds(big, H200) > seconds
    # a dual GEMM is one of twice the columns: more blocks than the SMs take at once cost more
    dual = dataclasses.replace(big, b2=b)
    assert predict_seconds(dual, H200) > predict_seconds(big, H200)


def test_attention_is_its_family_model_with_the_carried_tile():
    batch, sq, skv, d = (32,), 1, 4096, 128
    q, k, v = (Tensor(n, "bf16", (*batch, s, d)) for n, s in (("q", sq), ("k", skv), ("v", skv)))
    spec = AttentionSpec("attn", q, k, v, Tensor("o", "bf16", (*batch, sq, d)), batch, sq, skv, d, d, d**-0.5,
                         splits=8)
    tile = AttentionTile(DECODE_BK=16, DECODE_WARPS=4)
    problem = Attention(32, 1, 4096, d, d, None, "bf16", False)
    expected = attention_seconds(H200, problem, {"BQ": 64, "BK": 64, "DECODE_BK": 16, "DECODE_WARPS": 4,
                                                 "SPLITS": 8}, 1024)
    assert predict_seconds(dataclasses.replace(spec, tile=tile), H200) == pytest.approx(float(expected))


def test_the_report_gives_every_kernel_its_predicted_microseconds():
    for workload in (cw.swiglu(16, 256), cw.rmsnorm_linear(16, 256), cw.attention(1, 32, 1, 4096, 128)):
        report = prism.compile(gw.retype(workload.mlir, "bf16"), target="a100", emit="report").report
        predicted = [k["predicted_us"] for f in report["kernels"] for k in f["kernels"]]
        assert predicted and np.all(np.array(predicted) > LAUNCH_SECONDS * 1e6 * 0.99), (workload.name, predicted)
