"""The Python API: prism.compile on every kind of source, both kinds of target, and bad input."""

from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

import prism
from conftest import EXAMPLES
from prism.infra.ir import make_context

MIXED = """
func.func @mixed(%img: tensor<1x6x7x3xf32>, %filter: tensor<3x3x3x5xf32>, %a: tensor<33x17xf32>,
                 %b: tensor<17x9xf32>) -> (tensor<1x6x7x5xf32>, tensor<33x9xf32>) {
  %zero = arith.constant 0.0 : f32
  %padded = tensor.pad %img low[0, 1, 1, 0] high[0, 1, 1, 0] {
  ^bb0(%i: index, %j: index, %k: index, %l: index):
    tensor.yield %zero : f32
  } : tensor<1x6x7x3xf32> to tensor<1x8x9x3xf32>
  %e0 = tensor.empty() : tensor<1x6x7x5xf32>
  %o0 = linalg.fill ins(%zero : f32) outs(%e0 : tensor<1x6x7x5xf32>) -> tensor<1x6x7x5xf32>
  %conv = linalg.conv_2d_nhwc_hwcf ins(%padded, %filter : tensor<1x8x9x3xf32>, tensor<3x3x3x5xf32>)
                                   outs(%o0 : tensor<1x6x7x5xf32>) -> tensor<1x6x7x5xf32>
  %e1 = tensor.empty() : tensor<33x9xf32>
  %o1 = linalg.fill ins(%zero : f32) outs(%e1 : tensor<33x9xf32>) -> tensor<33x9xf32>
  %mm = linalg.matmul ins(%a, %b : tensor<33x17xf32>, tensor<17x9xf32>) outs(%o1 : tensor<33x9xf32>) -> tensor<33x9xf32>
  return %conv, %mm : tensor<1x6x7x5xf32>, tensor<33x9xf32>
}
"""


def conv_reference(img: np.ndarray, filt: np.ndarray) -> np.ndarray:
    padded = np.pad(img.astype(np.float64), ((0, 0), (1, 1), (1, 1), (0, 0)))
    kh, kw, _, _ = filt.shape
    out_h, out_w = padded.shape[1] - kh + 1, padded.shape[2] - kw + 1
    out = np.zeros((1, out_h, out_w, filt.shape[3]))
    for i in range(kh):
        for j in range(kw):
            out += np.einsum("nhwc,cf->nhwf", padded[:, i:i + out_h, j:j + out_w, :], filt[i, j].astype(np.float64))
    return out


def test_mixed_module_lifts_only_the_matmul_and_runs_correctly(rng: np.random.Generator) -> None:
    compiled = prism.compile(MIXED, target="host")
    assert compiled.mlir.count("prism.choice") == 1
    assert "linalg.conv_2d_nhwc_hwcf" in compiled.mlir and "tensor.pad" in compiled.mlir
    assert [f["kind"] for f in compiled.report["families"]] == ["gemm"]
    img, filt = rng.standard_normal((1, 6, 7, 3), np.float32), rng.standard_normal((3, 3, 3, 5), np.float32)
    a, b = rng.standard_normal((33, 17), np.float32), rng.standard_normal((17, 9), np.float32)
    conv, mm = compiled.jit("mixed")(img, filt, a, b)
    np.testing.assert_allclose(conv, conv_reference(img, filt), rtol=1e-4, atol=1e-4)
    np.testing.assert_allclose(mm, a.astype(np.float64) @ b, rtol=1e-4, atol=1e-4)


def test_sources_text_path_and_module_agree() -> None:
    path = EXAMPLES / "batch_gemm.mlir"
    context = make_context()
    with context:
        from mlir import ir

        module = ir.Module.parse(path.read_text())
    before = str(module)
    results = [prism.compile(s, target="h200", emit="report").mlir for s in (path.read_text(), path, str(path), module)]
    assert len(set(results)) == 1
    assert str(module) == before, "compile must not modify the caller's module"


def test_gpu_compile_gives_ptx_and_report() -> None:
    compiled = prism.compile(EXAMPLES / "gemm_f16_transposed.mlir", target="h200")
    (family,) = compiled.report["families"]
    assert family["choice"]["MMA"] == 1
    assert [s["stage"] for s in family["funnel"]][0] == "space"
    assert "wgmma.mma_async" in compiled.ptx_text and compiled.ptx_text.count(".version") == 1
    with pytest.raises(prism.TargetError, match="jit\\(\\) and bind\\(\\) run code on this machine"):
        compiled.jit()


@pytest.mark.parametrize(("kwargs", "error", "message"), [
    ({"source": "func.func @f( {"}, prism.ParseError, "expected"),
    ({"target": "tpu"}, prism.TargetError, "unknown target 'tpu'"),
    ({"emit": "ptx"}, prism.TargetError, "needs a target that lowers to PTX"),
    ({"pipeline": "prism-unknown"}, prism.PipelineError, "unknown pass"),
    ({"source": "missing/file.mlir"}, prism.PrismError, "cannot read input file"),
])
def test_bad_input_raises_prism_errors(kwargs: dict, error: type, message: str) -> None:
    arguments = {"source": EXAMPLES / "gemm.mlir", **kwargs}
    with pytest.raises(error, match=message):
        prism.compile(**arguments)


def test_loading_the_dialect_twice_does_not_abort() -> None:
    """A second IRDL load into one context would abort the process; the loader must guard it."""
    code = ("from prism.infra.ir import make_context\nfrom prism.dialects import load_prism_dialect\n"
            "c = make_context()\nload_prism_dialect(c)\nload_prism_dialect(c)\nprint('alive')")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert result.returncode == 0 and "alive" in result.stdout


def test_select_measures_the_best_predicted_points(rng: np.random.Generator) -> None:
    pipeline = "prism-lift,prism-prune,prism-select{measure=2},prism-instantiate"
    compiled = prism.compile(MIXED, target="host", pipeline=pipeline)
    (family,) = compiled.report["families"]
    assert [s["stage"] for s in family["funnel"]][-3:] == ["bound", "instantiated", "measured"]
    assert [s["size"] for s in family["funnel"]][-2:] == [2, 2] and family["measured_seconds"] > 0
    a, b = rng.standard_normal((33, 17), np.float32), rng.standard_normal((17, 9), np.float32)
    img, filt = rng.standard_normal((1, 6, 7, 3), np.float32), rng.standard_normal((3, 3, 3, 5), np.float32)
    np.testing.assert_allclose(compiled.jit()(img, filt, a, b)[1], a.astype(np.float64) @ b, rtol=1e-4, atol=1e-4)


def gemm_text(m: int, k: int, n: int) -> str:
    """An f32 ``linalg.matmul`` of m x k by k x n."""
    a, b, c = (f"tensor<{rows}x{cols}xf32>" for rows, cols in ((m, k), (k, n), (m, n)))
    return f"""func.func @gemm(%a: {a}, %b: {b}) -> {c} {{
  %zero = arith.constant 0.0 : f32
  %empty = tensor.empty() : {c}
  %acc = linalg.fill ins(%zero : f32) outs(%empty : {c}) -> {c}
  %y = linalg.matmul ins(%a, %b : {a}, {b}) outs(%acc : {c}) -> {c}
  return %y : {c}
}}"""


def test_a_measured_call_finds_its_inputs_where_the_cost_assumes_them(monkeypatch: pytest.MonkeyPatch,
                                                                      tuned_host: None) -> None:
    """prism-select{measure=K} sweeps the caches before each timed call where the host's cost prices the inputs
    streaming from memory (here 64 MiB of B), and leaves them in the cache where it keeps them there."""
    import prism.passes.select as select
    from prism.targets import get_target

    swept: list[int] = []

    def measure(*args: object, sweep_bytes: int = 0, **options: object) -> float:
        swept.append(sweep_bytes)
        return measure_seconds(*args, sweep_bytes=sweep_bytes, **options)

    measure_seconds = select.measure_seconds
    monkeypatch.setattr(select, "measure_seconds", measure)
    pipeline = "prism-lift,prism-prune,prism-select{measure=2}"
    for m, k, n in ((8, 4096, 4096), (64, 96, 80)):
        prism.compile(gemm_text(m, k, n), target="host", pipeline=pipeline)
    assert swept == [2 * get_target("host").l3_bytes] * 2 + [0] * 2


def test_a_measured_body_reads_sizes_at_the_assumed_size() -> None:
    """A family's body may take a size as an index argument (an attention's sizes its inits so): measuring it
    passes the size every dynamic dimension takes, never a random integer."""
    from mlir import ir

    from prism.infra.ir import make_context
    from prism.runtime.measure import CANDIDATE, _random_inputs

    with make_context(), ir.Location.unknown():
        module = ir.Module.parse(f"func.func @{CANDIDATE}(%a: tensor<?x4xf32>, %n: index, %s: f32) "
                                 "-> tensor<?x4xf32> { return %a : tensor<?x4xf32> }")
        a, n, s = _random_inputs(module, 96, 0)
    assert a.shape == (96, 4) and int(n) == 96 and s.dtype == np.float32


def test_measuring_needs_the_host() -> None:
    with pytest.raises(prism.TargetError, match="measure=2 runs candidates on this machine"):
        prism.compile(EXAMPLES / "gemm.mlir", target="h200", pipeline="prism-lift,prism-prune,prism-select{measure=2}")


DYNAMIC_M = """
func.func @project(%a: tensor<?x512xf16>, %b: tensor<512x768xf16>) -> tensor<?x768xf32> {
  %zero = arith.constant 0.0 : f32
  %i0 = arith.constant 0 : index
  %m = tensor.dim %a, %i0 : tensor<?x512xf16>
  %e = tensor.empty(%m) : tensor<?x768xf32>
  %c = linalg.fill ins(%zero : f32) outs(%e : tensor<?x768xf32>) -> tensor<?x768xf32>
  %r = linalg.matmul ins(%a, %b : tensor<?x512xf16>, tensor<512x768xf16>) outs(%c : tensor<?x768xf32>)
         -> tensor<?x768xf32>
  return %r : tensor<?x768xf32>
}
"""


@pytest.mark.parametrize("target", ["h200", "host"])
def test_shape_tables_choose_per_size_what_compile_chooses(target: str) -> None:
    """The table's choice for a size is the one prism-select makes when that size is assumed."""
    (table,) = prism.shape_tables(DYNAMIC_M, target=target).values()
    for m in (16, 48, 4096):
        pipeline = f"prism-lift,prism-prune,prism-select{{assume={m}}}"
        (family,) = prism.compile(DYNAMIC_M, target=target, emit="report", pipeline=pipeline).report["families"]
        assert table.instantiate(m) == family["choice"], m


def test_shape_tables_report_sizes_without_a_schedule() -> None:
    (table,) = prism.shape_tables(DYNAMIC_M, target="mi300x").values()
    with pytest.raises(prism.EmptySearchSpace, match="dynamic extent of 7"):
        table.instantiate(7)  # IREE's kernels need tiles that divide: none of at least 16 divides 7
    (table,) = prism.shape_tables(DYNAMIC_M, target="h200").values()
    assert table.instantiate(7)["BM"] >= 16  # Prism's own kernels mask the ragged edge


def test_shape_tables_of_a_static_family_have_one_entry() -> None:
    (table,) = prism.shape_tables(EXAMPLES / "gemm.mlir", target="host").values()
    assert table.keys == () and len(table.rows) == 1
    assert table.instantiate(1) == table.instantiate(8192)


def test_shape_tables_reject_bad_input() -> None:
    with pytest.raises(prism.ParseError):
        prism.shape_tables("func.func @f( {", target="host")
    with pytest.raises(prism.TargetError, match="unknown target"):
        prism.shape_tables(DYNAMIC_M, target="tpu")
