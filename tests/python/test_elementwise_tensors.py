"""Elementwise arith and math ops on whole tensors: every entry point reads them as linalg.generic ops (the
pipeline's passes, prism-verify's translation, both code generators on raw input, the Python API)."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np
import pytest

import prism
from conftest import run_cli

PROGRAM = """
func.func @add(%a: tensor<8x64xf32>, %b: tensor<8x64xf32>) -> tensor<8x64xf32> {
  %r = arith.addf %a, %b : tensor<8x64xf32>
  return %r : tensor<8x64xf32>
}
func.func @ext(%a: tensor<3x4xi8>) -> tensor<3x4xi32> {
  %r = arith.extsi %a : tensor<3x4xi8> to tensor<3x4xi32>
  return %r : tensor<3x4xi32>
}
func.func @root(%a: tensor<?x?x32xf32>) -> tensor<?x?x32xf32> {
  %r = math.sqrt %a : tensor<?x?x32xf32>
  %s = arith.mulf %r, %a : tensor<?x?x32xf32>
  return %s : tensor<?x?x32xf32>
}
"""

# The same functions as generics, as a user might write them.
AS_GENERICS = """
#id2 = affine_map<(i, j) -> (i, j)>
#id3 = affine_map<(i, j, k) -> (i, j, k)>
func.func @add(%a: tensor<8x64xf32>, %b: tensor<8x64xf32>) -> tensor<8x64xf32> {
  %e = tensor.empty() : tensor<8x64xf32>
  %r = linalg.generic {indexing_maps = [#id2, #id2, #id2], iterator_types = ["parallel", "parallel"]}
      ins(%b, %a : tensor<8x64xf32>, tensor<8x64xf32>) outs(%e : tensor<8x64xf32>) {
  ^bb0(%x: f32, %y: f32, %o: f32):
    %s = arith.addf %y, %x : f32
    linalg.yield %s : f32
  } -> tensor<8x64xf32>
  return %r : tensor<8x64xf32>
}
func.func @ext(%a: tensor<3x4xi8>) -> tensor<3x4xi32> {
  %e = tensor.empty() : tensor<3x4xi32>
  %r = linalg.generic {indexing_maps = [#id2, #id2], iterator_types = ["parallel", "parallel"]}
      ins(%a : tensor<3x4xi8>) outs(%e : tensor<3x4xi32>) {
  ^bb0(%x: i8, %o: i32):
    %w = arith.extsi %x : i8 to i32
    linalg.yield %w : i32
  } -> tensor<3x4xi32>
  return %r : tensor<3x4xi32>
}
func.func @root(%a: tensor<?x?x32xf32>) -> tensor<?x?x32xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %d0 = tensor.dim %a, %c0 : tensor<?x?x32xf32>
  %d1 = tensor.dim %a, %c1 : tensor<?x?x32xf32>
  %e = tensor.empty(%d0, %d1) : tensor<?x?x32xf32>
  %r = linalg.generic {indexing_maps = [#id3, #id3], iterator_types = ["parallel", "parallel", "parallel"]}
      ins(%a : tensor<?x?x32xf32>) outs(%e : tensor<?x?x32xf32>) {
  ^bb0(%x: f32, %o: f32):
    %q = math.sqrt %x : f32
    %m = arith.mulf %q, %x : f32
    linalg.yield %m : f32
  } -> tensor<?x?x32xf32>
  return %r : tensor<?x?x32xf32>
}
"""


def check_results(compiled: prism.CompiledModule, rng: np.random.Generator) -> None:
    a, b = (rng.standard_normal((8, 64), dtype=np.float32) for _ in range(2))
    np.testing.assert_allclose(compiled.jit("add")(a, b), a.astype(np.float64) + b, rtol=1e-7)
    i8 = rng.integers(-128, 128, (3, 4), dtype=np.int8)
    ext = compiled.jit("ext")(i8)
    assert ext.dtype == np.int32 and np.array_equal(ext, i8.astype(np.int32))
    x = rng.uniform(0.0, 9.0, (3, 5, 32)).astype(np.float32)
    np.testing.assert_allclose(compiled.jit("root")(x), np.sqrt(x.astype(np.float64)) * x, rtol=3e-7)


@pytest.mark.parametrize("pipeline", [None, "prism-lower-cpu", "prism-lift,prism-prune,prism-select,prism-instantiate"])
def test_tensor_ops_run_on_the_host(rng: np.random.Generator, pipeline: str | None) -> None:
    """Through the default pipeline (explore and verify included) and straight into the host lowering."""
    check_results(prism.compile(PROGRAM, target="host", pipeline=pipeline), rng)


def test_the_cli_lowers_raw_tensor_ops(tmp_path: Path) -> None:
    source = tmp_path / "ops.mlir"
    source.write_text(PROGRAM)
    for args in (["-p", "prism-lower-cpu"], ["--target=host", "--emit=llvm"]):
        result = run_cli(str(source), *args)
        assert result.returncode == 0, result.stderr
        assert "llvm.func @add(" in result.stdout and "llvm.func @root(" in result.stdout


def test_the_gpu_lowers_raw_tensor_ops(tmp_path: Path) -> None:
    """The static function as a GPU kernel (a parallel generic), not refused as an unknown op."""
    source = tmp_path / "add.mlir"
    source.write_text(PROGRAM.split("func.func @ext")[0])
    result = run_cli(str(source), "--target=h200", "-p", "prism-lower-gpu", "--emit=ptx")
    assert result.returncode == 0, result.stderr
    assert result.stdout.count(".entry") == 1 and ".entry add_k0_pointwise(" in result.stdout
    assert "add.rn.f32" in result.stdout


def test_optimize_writes_generics() -> None:
    optimized = prism.compile(PROGRAM, target="host", emit="mlir").mlir
    assert optimized.count("linalg.generic") >= 3
    assert not re.search(r"= (arith|math)\.\w+ .*: tensor<", optimized)


@pytest.mark.parametrize("original, candidate", [(PROGRAM, AS_GENERICS), (AS_GENERICS, PROGRAM)])
def test_either_spelling_is_proven_equal_to_the_other(original: str, candidate: str) -> None:
    proofs = prism.verify(original, candidate)
    assert sorted(p.name for p in proofs) == ["add", "ext", "root"]


def test_verification_still_tells_programs_apart() -> None:
    """A tensor op that computes something else is not proven, and the numeric check runs it to show why."""
    wrong = AS_GENERICS.replace("%s = arith.addf %y, %x : f32", "%s = arith.subf %y, %x : f32")
    with pytest.raises(prism.VerificationError, match=r"@add.*counterexample"):
        prism.verify(PROGRAM, wrong)


def test_the_verify_pass_compares_against_the_original_spelling(tmp_path: Path) -> None:
    original, candidate = tmp_path / "original.mlir", tmp_path / "candidate.mlir"
    original.write_text(PROGRAM)
    candidate.write_text(AS_GENERICS)
    for file, against in ((candidate, original), (original, candidate)):
        result = run_cli(str(file), f"--verify-against={against}", "-o", "/dev/null")
        assert result.returncode == 0, result.stderr
