"""The bf16 workloads of benchmarks/cpu_workloads.py, at small sizes: their MLIR parses and has bf16 arguments,
their float64 references agree with the f32 workloads' and with torch's bf16, Prism computes them within their
tolerance, and benchmarks/cpu.py runs them with numpy and IREE skipped for a recorded reason."""

from __future__ import annotations

import re
import sys

import ml_dtypes
import numpy as np
import pytest

from conftest import REPO

sys.path.insert(0, str(REPO / "benchmarks"))
import cpu  # noqa: E402  (the harness lives with the benchmarks)
import cpu_workloads as cw  # noqa: E402

SMALL = {"gemm": lambda: cw.bf16_gemm(96), "swiglu": lambda: cw.bf16_swiglu(5, 96),
         "attention": lambda: cw.bf16_attention(1, 2, 24, 40, 32)}
F32_TWINS = {"gemm": lambda: cw.gemm("gemm", 96, 96, 96), "swiglu": lambda: cw.swiglu(5, 96),
             "attention": lambda: cw.attention(1, 2, 24, 40, 32)}


def _inputs(workload: cw.Workload, seed: int = 0) -> list[np.ndarray]:
    values = workload.inputs(np.random.default_rng(seed))
    return [values[a.name] for a in workload.args]


def _reference(workload: cw.Workload, arrays: list[np.ndarray]) -> tuple[np.ndarray, ...]:
    return workload.compute(cw.NumpyOps, *(a.astype(np.float64) for a in arrays))


def test_the_bf16_rows_are_selected_by_bf16_and_the_f32_rows_stay_f32() -> None:
    names = [w.name for w in cw.all_workloads() if re.search("bf16", w.name)]
    assert names == ["bf16-gemm-2048", "bf16-swiglu-16x4096", "bf16-attention-1x16x2048x2048x64"]
    assert all(w.dtype == "f32" and w.tolerance is None for w in cw.all_workloads() if w.name not in names)
    swiglu = cw.bf16_workloads()[1]
    assert [a.shape for a in swiglu.args][1] == (4096, cw.hidden_size(4096))


@pytest.mark.parametrize("kind", sorted(SMALL))
def test_bf16_mlir_parses_with_bf16_arguments_and_f32_accumulators(kind: str) -> None:
    from mlir import ir

    from prism.infra.ir import make_context

    workload = SMALL[kind]()
    with make_context():
        module = ir.Module.parse(workload.mlir)
        assert module.operation.verify()
    signature = next(line for line in str(module).splitlines() if "func.func @" in line)
    assert signature.split(") ->")[0].count("xbf16>") == len(workload.args)
    assert "linalg.matmul" in workload.mlir or "arith.extf %a0 : bf16 to f32" in workload.mlir
    arrays = _inputs(workload)
    assert all(a.dtype == ml_dtypes.bfloat16 for a in arrays)
    assert workload.nbytes == sum(2 * a.size for a in arrays)


@pytest.mark.parametrize("kind", sorted(SMALL))
def test_bf16_references_are_the_f32_workloads_on_the_same_values(kind: str) -> None:
    arrays = _inputs(SMALL[kind]())
    got = _reference(SMALL[kind](), arrays)
    want = _reference(F32_TWINS[kind](), arrays)
    for g, w in zip(got, want, strict=True):
        np.testing.assert_allclose(g, w, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("kind", sorted(SMALL))
def test_torch_bf16_is_within_the_bf16_tolerance_of_the_reference(kind: str) -> None:
    torch = pytest.importorskip("torch")
    workload = SMALL[kind]()
    arrays = _inputs(workload)
    got = cpu.as_arrays(workload.compute(cw.TorchOps, *map(cpu.torch_tensor, arrays)))
    assert all(t.dtype == torch.bfloat16 for t in workload.compute(cw.TorchOps, *map(cpu.torch_tensor, arrays)))
    error = cpu.relative_error(got, _reference(workload, arrays))
    assert 1e-4 < error <= cw.BF16_TOLERANCE  # bf16 arithmetic: not exact, within the tolerance


@pytest.mark.parametrize("kind", sorted(SMALL))
def test_prism_is_within_the_bf16_tolerance_and_a_wrong_result_is_not(kind: str) -> None:
    import prism

    workload = SMALL[kind]()
    arrays = _inputs(workload)
    got = prism.compile(workload.mlir, target="host").jit(workload.func)(*arrays)
    got = cpu.as_arrays(got)
    reference = _reference(workload, arrays)
    assert cpu.relative_error(got, reference) <= cw.BF16_TOLERANCE
    scaled = tuple(g.astype(np.float64) * 1.1 for g in got)
    assert cpu.relative_error(scaled, reference) > cw.BF16_TOLERANCE


def test_the_harness_runs_bf16_rows_and_skips_numpy_and_iree_with_a_reason() -> None:
    pytest.importorskip("torch")
    args = cpu.parse_args(["--repeats", "1", "--rounds", "1", "--pause", "0", "--warmup", "0",
                           "--build-timeout", "0"])
    names = ["prism", "prism-bound", "numpy", "torch", "sdpa", "iree"]
    records = {kind: cpu.run_workload(SMALL[kind](), args, names) for kind in ("gemm", "swiglu")}
    gemm, swiglu = (records[k]["contenders"] for k in ("gemm", "swiglu"))
    assert {n: c["status"] for n, c in gemm.items()} == {"prism": "ok", "prism-bound": "ok", "numpy": "ok",
                                                          "torch": "ok", "iree": "skipped"}
    assert swiglu["numpy"]["status"] == "skipped" and "bf16" in swiglu["numpy"]["error"]
    assert records["gemm"]["tolerance"] == cw.BF16_TOLERANCE and records["gemm"]["dtype"] == "bf16"
    report = {"meta": {"date": "", "machine": "", "load_average": [], "versions": "", "torch_threads": 1,
                       "command": "", "sgemm_gflops": 0.0, "sgemm_n": 0, "decode_read_gbps": 0.0,
                       "decode_weight_mib": 0, "method": "", "contenders": names},
              "workloads": list(records.values())}
    report["geomeans"], report["fused_geomean"] = cpu.geomeans(report["workloads"]), None
    table = cpu.markdown(report)
    assert "| skipped |" in table and "## Skipped" in table
