"""Bad and unusual input through the Python API: only PrismError subclasses, with the source's own locations."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import prism
from conftest import EXAMPLES, REPO, run_cli

SCALE = """
func.func @scale(%a: tensor<4xf32>, %s: f32) -> tensor<4xf32> {
  %e = tensor.empty() : tensor<4xf32>
  %r = linalg.generic {indexing_maps = [affine_map<(i) -> (i)>, affine_map<(i) -> (i)>], iterator_types = ["parallel"]}
      ins(%a : tensor<4xf32>) outs(%e : tensor<4xf32>) {
    ^bb0(%x: f32, %o: f32):
      %y = arith.mulf %x, %s : f32
      linalg.yield %y : f32
  } -> tensor<4xf32>
  return %r : tensor<4xf32>
}
"""
EXTERNAL = """
func.func private @external(tensor<4xf32>) -> tensor<4xf32>
func.func @caller(%a: tensor<4xf32>) -> tensor<4xf32> {
  %r = func.call @external(%a) : (tensor<4xf32>) -> tensor<4xf32>
  return %r : tensor<4xf32>
}
"""
BF16 = """
func.func @mm(%a: tensor<16x32xbf16>, %b: tensor<32x8xbf16>) -> tensor<16x8xf32> {
  %z = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<16x8xf32>
  %c = linalg.fill ins(%z : f32) outs(%e : tensor<16x8xf32>) -> tensor<16x8xf32>
  %r = linalg.matmul ins(%a, %b : tensor<16x32xbf16>, tensor<32x8xbf16>) outs(%c : tensor<16x8xf32>) -> tensor<16x8xf32>
  return %r : tensor<16x8xf32>
}
"""


def test_scalar_arguments_take_scalars_only() -> None:
    scale = prism.compile(SCALE).jit()
    np.testing.assert_array_equal(scale(np.ones(4, np.float32), 2.0), np.full(4, 2.0, np.float32))
    for bad in (np.ones(3, np.float32), [1.0, 2.0], "x"):
        with pytest.raises(prism.PrismError, match="argument 1: expected a float32 scalar"):
            scale(np.ones(4, np.float32), bad)


def test_bytes_sources_are_utf8_text() -> None:
    compiled = prism.compile(SCALE.encode())
    assert "@scale" in compiled.mlir
    with pytest.raises(prism.ParseError, match="not UTF-8 text: byte 0xff at offset 0"):
        prism.compile(b"\xff" + SCALE.encode())


def test_a_path_that_is_not_utf8_is_a_parse_error(tmp_path: Path) -> None:
    path = tmp_path / "latin1.mlir"
    path.write_bytes(b"// caf\xe9\n" + SCALE.encode())
    with pytest.raises(prism.ParseError, match="not UTF-8 text: byte 0xe9 at offset 6") as raised:
        prism.compile(path)
    assert raised.value.location == str(path)


@pytest.mark.parametrize("source", ["missing.txt", "missing.mlir", Path("missing")])
def test_a_missing_file_is_not_parsed_as_mlir(source: str | Path) -> None:
    with pytest.raises(prism.PrismError, match="cannot read input file 'missing"):
        prism.compile(source)


def test_a_source_of_another_type_is_refused() -> None:
    with pytest.raises(prism.PrismError, match="not int"):
        prism.compile(42)  # type: ignore[arg-type]


def test_errors_point_into_the_source_file(tmp_path: Path) -> None:
    path = tmp_path / "nested.mlir"
    path.write_text("module {\n  module @inner {\n  }\n}\n")
    with pytest.raises(prism.UnsupportedOp, match="nested modules") as raised:
        prism.compile(path, target="h200")
    assert raised.value.location == f"{path}:2:3"


def test_a_proof_against_an_empty_program_fails_and_names_the_function() -> None:
    for candidate in ("", "module {}"):
        missing = "function @gemm of the original program is missing"
        with pytest.raises(prism.VerificationError, match=missing) as raised:
            prism.verify(EXAMPLES / "gemm.mlir", candidate)
        assert raised.value.location.startswith(str(EXAMPLES / "gemm.mlir"))


def test_calls_to_undefined_functions_are_refused_before_linking() -> None:
    compiled = prism.compile(EXTERNAL)
    with pytest.raises(prism.TargetError, match="@external is declared but defined nowhere") as raised:
        compiled.jit("caller")
    assert raised.value.location == "<string>:2:1"


def test_bf16_contractions_are_tuned_on_the_host() -> None:
    compiled = prism.compile(BF16, target="host", emit="report")
    (family,) = compiled.report["families"]
    assert family["predicted_seconds"] > 0


def test_functions_without_tensors_pass_through() -> None:
    void = "func.func @nothing() {\n  return\n}\n"
    compiled = prism.compile(void)
    assert "func.func @nothing()" in compiled.mlir
    prism.verify(void, compiled.mlir)


def test_compiling_from_several_threads_is_quiet() -> None:
    """egglog's engine may only be dropped by the thread that made it; nothing may complain on stderr."""
    code = f"""
import gc, threading, prism
source = open({str(REPO / "examples" / "qkv.mlir")!r}).read()
gc.disable()
threads = [threading.Thread(target=prism.compile, args=(source,), kwargs={{"emit": "report"}}) for _ in range(2)]
[t.start() for t in threads]
[t.join() for t in threads]
gc.enable()
gc.collect()
print("done")
"""
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=600)
    assert result.returncode == 0 and "done" in result.stdout, result.stderr
    assert "unsendable" not in result.stderr and "Traceback" not in result.stderr, result.stderr


def test_remarks_come_once_per_op_kind_and_function_at_the_op() -> None:
    source = """
func.func @f(%a: tensor<?x8xf32>, %b: tensor<8x8xf32>, %c: tensor<?x8xf32>) -> tensor<?x8xf32> {
  %c0 = arith.constant 0 : index
  %m = tensor.dim %a, %c0 : tensor<?x8xf32>
  %t = linalg.exp ins(%c : tensor<?x8xf32>) outs(%c : tensor<?x8xf32>) -> tensor<?x8xf32>
  %u = linalg.exp ins(%t : tensor<?x8xf32>) outs(%c : tensor<?x8xf32>) -> tensor<?x8xf32>
  %r = linalg.matmul ins(%a, %b : tensor<?x8xf32>, tensor<8x8xf32>) outs(%u : tensor<?x8xf32>) -> tensor<?x8xf32>
  return %r : tensor<?x8xf32>
}
"""
    result = run_cli("-", "-p", "prism-lift", stdin=source)
    assert result.returncode == 0, result.stderr
    remarks = [line for line in result.stderr.splitlines() if "remark" in line]
    # Passes read named elementwise ops as the generics they stand for.
    assert remarks == ["<stdin>:5:8: remark: prism-lift: 'linalg.generic' left unchanged: not a contraction"]


def test_integer_matmuls_are_blamed_on_their_element_type() -> None:
    source = """
func.func @imm(%a: tensor<4x8xi32>, %b: tensor<8x4xi32>, %c: tensor<4x4xi32>) -> tensor<4x4xi32> {
  %r = linalg.matmul ins(%a, %b : tensor<4x8xi32>, tensor<8x4xi32>) outs(%c : tensor<4x4xi32>) -> tensor<4x4xi32>
  return %r : tensor<4x4xi32>
}
"""
    result = run_cli("-", "--emit=report", stdin=source)
    assert result.returncode == 0, result.stderr
    explore = "prism-explore: @imm kept as written: its tensors must have float element types, not i32"
    assert explore in result.stderr
    assert "'linalg.matmul' left unchanged: its element types (i32) are not ones Prism tunes" in result.stderr
