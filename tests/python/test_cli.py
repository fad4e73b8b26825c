"""prism-opt's behaviour on good and bad input."""

from __future__ import annotations

import json

import pytest

import prism
from conftest import EXAMPLES, run_cli

MATMUL = """func.func @mm(%a: tensor<8x4xf32>, %b: tensor<4x6xf32>, %c: tensor<8x6xf32>) -> tensor<8x6xf32> {
  %0 = linalg.matmul ins(%a, %b : tensor<8x4xf32>, tensor<4x6xf32>) outs(%c : tensor<8x6xf32>) -> tensor<8x6xf32>
  return %0 : tensor<8x6xf32>
}
"""


def assert_user_error(result, *fragments: str) -> None:
    """Exit status 1, each fragment on stderr, no traceback, nothing on stdout."""
    assert result.returncode == 1, result.stderr
    assert "Traceback" not in result.stderr
    assert result.stdout == ""
    for fragment in fragments:
        assert fragment in result.stderr, result.stderr


def test_syntax_error_points_at_file_line_col(tmp_path) -> None:
    path = tmp_path / "bad.mlir"
    path.write_text("func.func @f() {\n  %0 = arith.constant 1 : \n}\n")
    assert_user_error(run_cli(str(path)), f"{path}:2:26: error: expected non-function type")


def test_verifier_error_points_at_the_op(tmp_path) -> None:
    path = tmp_path / "bad.mlir"
    path.write_text("func.func @f(%a: tensor<4xf32>) -> tensor<4xf16> {\n  return %a : tensor<4xf32>\n}\n")
    assert_user_error(run_cli(str(path)), f"{path}:2:3: error:", "func.return")


@pytest.mark.parametrize(("pipeline", "message"), [
    ("prism-nonsense", "unknown pass 'prism-nonsense'"),
    ("no-such-upstream-pass", "'no-such-upstream-pass' does not refer to a registered pass"),
    ("prism-prune{bogus=1}", "unknown option 'bogus' for pass 'prism-prune'; known options: target"),
    ("prism-select{assume=many}", "option 'assume' of 'prism-select' expects int, got 'many'"),
    ("prism-lift{target=tpu}", "option 'target' must name a target (h200, h100, a100, mi300x, host), got 'tpu'"),
    ("canonicalize{nope=1}", "no such option nope"),
])
def test_bad_pipeline(pipeline: str, message: str) -> None:
    assert_user_error(run_cli("-", "-p", pipeline, stdin=MATMUL), message)


def test_unknown_target_flag() -> None:
    result = run_cli("-", "--target=tpu", stdin=MATMUL)
    assert result.returncode == 1 and "invalid choice: 'tpu'" in result.stderr


def test_unreadable_file(tmp_path) -> None:
    missing = tmp_path / "missing.mlir"
    assert_user_error(run_cli(str(missing)), f"{missing}: error: cannot read input file", "No such file")


def test_ptx_for_host_target_is_an_error() -> None:
    assert_user_error(run_cli("-", "--emit=ptx", stdin=MATMUL), "--emit=ptx needs a target that lowers to PTX")


def test_odd_sizes_and_whole_operand_blocks_compile_for_the_gpu() -> None:
    """The GPU kernels mask their edges: an odd M, or a product smaller than one block, has schedules."""
    odd = MATMUL.replace("8x4", "33x64").replace("4x6", "64x64").replace("8x6", "33x64")
    for text in (odd, MATMUL):
        result = run_cli("-", "--target=h200", "--emit=ptx", stdin=text)
        assert result.returncode == 0, result.stderr
        assert result.stdout.count(".entry") == 1


def test_an_op_the_gpu_cannot_run_is_a_located_error() -> None:
    pad = """func.func @pad(%a: tensor<4xf32>) -> tensor<6xf32> {
  %p = arith.constant 0.0 : f32
  %c = tensor.pad %a low[1] high[1] { ^bb0(%i: index): tensor.yield %p : f32 } : tensor<4xf32> to tensor<6xf32>
  return %c : tensor<6xf32>
}"""
    assert_user_error(run_cli("-", "--target=h200", "--emit=ptx", stdin=pad), "'tensor.pad' has no GPU kernel")


def test_help_lists_every_pass() -> None:
    result = run_cli("--help")
    assert result.returncode == 0
    for name in ("prism-lift", "prism-prune", "prism-select", "prism-instantiate", "prism-lower-gpu",
                 "prism-lower-cpu", "prism-optimize"):
        assert name in result.stdout


def test_output_file_and_stdin(tmp_path) -> None:
    out = tmp_path / "out.mlir"
    result = run_cli("-", "-p", "prism-optimize", "-o", str(out), stdin=MATMUL)
    assert result.returncode == 0, result.stderr
    assert "prism.choice" in out.read_text()


@pytest.mark.parametrize(("target", "emit"), [
    ("host", "mlir"), ("host", "report"), ("host", "llvm"), ("h200", "report"), ("h200", "ptx"),
])
def test_output_is_deterministic(target: str, emit: str) -> None:
    """Byte-identical output, except the report's wall-clock stage timings (a GPU's PTX is made from its
    tuned MLIR and its LLVM, so it covers them)."""
    args = [str(EXAMPLES / "gemm.mlir"), f"--target={target}", f"--emit={emit}", "-p", "prism-optimize"]
    first, second = run_cli(*args), run_cli(*args)
    assert first.returncode == 0, first.stderr
    assert first.stdout
    if emit == "report":
        assert without_timings(first.stdout) == without_timings(second.stdout)
    else:
        assert first.stdout == second.stdout


def without_timings(report: str) -> dict:
    parsed = json.loads(report)
    for family in parsed["families"]:
        for stage in family["funnel"]:
            assert "seconds" in stage
            del stage["seconds"]
    return parsed


def test_verbose_prints_the_funnel_table() -> None:
    result = run_cli(str(EXAMPLES / "gemm.mlir"), "--emit=report", "--verbose")
    assert result.returncode == 0, result.stderr
    assert "gemm_family0 (gemm)" in result.stderr
    for stage in ("space", "registers", "l1", "l2", "shape", "bound", "instantiated"):
        assert f"  {stage} " in result.stderr


COMPLEX_COPY = """func.func @f(%x: tensor<4xcomplex<f32>>) -> tensor<4xcomplex<f32>> {
  %e = tensor.empty() : tensor<4xcomplex<f32>>
  %r = linalg.copy ins(%x : tensor<4xcomplex<f32>>) outs(%e : tensor<4xcomplex<f32>>) -> tensor<4xcomplex<f32>>
  return %r : tensor<4xcomplex<f32>>
}
"""


@pytest.mark.parametrize("target", ["host", "h200"])
def test_a_report_of_what_cannot_be_built_is_its_located_error(target: str) -> None:
    """--emit=report describes what will be built: where the lowering fails, it exits 1 with the lowering's
    error at the user's op, as --emit=llvm or --emit=ptx would, and writes no report."""
    result = run_cli("-", f"--target={target}", "--emit=report", stdin=COMPLEX_COPY)
    assert result.returncode == 1 and result.stdout == ""
    assert "<stdin>:2:8: error: prism-lower-" in result.stderr and "complex<f32>" in result.stderr
    assert "Traceback" not in result.stderr
    with pytest.raises(prism.UnsupportedOp, match="whose element type Prism cannot lower"):
        prism.compile(COMPLEX_COPY, target=target, emit="report")


def test_a_report_of_what_is_built_lists_its_kernels() -> None:
    result = run_cli(str(EXAMPLES / "gemm.mlir"), "--target=host", "--emit=report")
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout)["kernels"]
