"""End to end on the host: Prism's own search picks the schedule, the result must match numpy (float64)."""

from __future__ import annotations

import numpy as np
import pytest

import prism

TRANSPOSED_B = ("affine_map<(m, n, k) -> (m, k)>, affine_map<(m, n, k) -> (n, k)>, "
                "affine_map<(m, n, k) -> (m, n)>")


def gemm_source(m: int | None, n: int, k: int, in_type: str = "f32", acc_type: str = "f32",
                transpose_b: bool = False) -> str:
    """A zero-initialized GEMM; ``m=None`` makes M dynamic."""
    dim_m = "?" if m is None else str(m)
    a, c = f"tensor<{dim_m}x{k}x{in_type}>", f"tensor<{dim_m}x{n}x{acc_type}>"
    b = f"tensor<{n}x{k}x{in_type}>" if transpose_b else f"tensor<{k}x{n}x{in_type}>"
    maps = f"indexing_maps = [{TRANSPOSED_B}] " if transpose_b else ""
    size = "%m" if m is None else ""
    dim = "  %c0 = arith.constant 0 : index\n  %m = tensor.dim %a, %c0 : " + a + "\n" if m is None else ""
    return f"""func.func @gemm(%a: {a}, %b: {b}) -> {c} {{
{dim}  %zero = arith.constant 0.0 : {acc_type}
  %empty = tensor.empty({size}) : {c}
  %acc = linalg.fill ins(%zero : {acc_type}) outs(%empty : {c}) -> {c}
  %r = linalg.matmul {maps}ins(%a, %b : {a}, {b}) outs(%acc : {c}) -> {c}
  return %r : {c}
}}
"""


def check(result: np.ndarray, expected: np.ndarray, k: int, eps: float) -> None:
    """Error bound growing with the reduction length, relative to the result's scale."""
    tolerance = eps * np.sqrt(k) * 8 * max(1.0, float(np.abs(expected).max()))
    np.testing.assert_allclose(result, expected, rtol=0, atol=tolerance)


@pytest.mark.parametrize(("m", "n", "k"), [(64, 64, 64), (256, 256, 256), (127, 255, 63), (1, 33, 7), (5, 8, 300)])
def test_gemm(m: int, n: int, k: int, rng: np.random.Generator) -> None:
    run = prism.compile(gemm_source(m, n, k), target="host").jit()
    a, b = rng.standard_normal((m, k), np.float32), rng.standard_normal((k, n), np.float32)
    check(run(a, b), a.astype(np.float64) @ b, k, np.finfo(np.float32).eps)


def test_transposed_b(rng: np.random.Generator) -> None:
    run = prism.compile(gemm_source(65, 47, 129, transpose_b=True), target="host").jit()
    a, b = rng.standard_normal((65, 129), np.float32), rng.standard_normal((47, 129), np.float32)
    check(run(a, b), a.astype(np.float64) @ b.T.astype(np.float64), 129, np.finfo(np.float32).eps)


def test_f16_inputs_accumulate_in_f32(rng: np.random.Generator) -> None:
    run = prism.compile(gemm_source(96, 80, 200, in_type="f16"), target="host").jit()
    a, b = rng.standard_normal((96, 200)).astype(np.float16), rng.standard_normal((200, 80)).astype(np.float16)
    result = run(a, b)
    assert result.dtype == np.float32
    check(result, a.astype(np.float64) @ b.astype(np.float64), 200, np.finfo(np.float32).eps)


def test_dynamic_m_is_compiled_once_for_every_m(rng: np.random.Generator) -> None:
    compiled = prism.compile(gemm_source(None, 1024, 64), target="host")
    run = compiled.jit()
    for m in (1, 7, 64, 131):
        a, b = rng.standard_normal((m, 64), np.float32), rng.standard_normal((64, 1024), np.float32)
        check(run(a, b), a.astype(np.float64) @ b, 64, np.finfo(np.float32).eps)
    assert len(compiled.report["families"]) == 1


def test_batch_matmul(rng: np.random.Generator) -> None:
    source = """func.func @bmm(%q: tensor<3x37x16xf32>, %k: tensor<3x16x29xf32>) -> tensor<3x37x29xf32> {
  %zero = arith.constant 0.0 : f32
  %empty = tensor.empty() : tensor<3x37x29xf32>
  %acc = linalg.fill ins(%zero : f32) outs(%empty : tensor<3x37x29xf32>) -> tensor<3x37x29xf32>
  %s = linalg.batch_matmul ins(%q, %k : tensor<3x37x16xf32>, tensor<3x16x29xf32>)
                           outs(%acc : tensor<3x37x29xf32>) -> tensor<3x37x29xf32>
  return %s : tensor<3x37x29xf32>
}
"""
    compiled = prism.compile(source, target="host")
    assert compiled.report["families"][0]["kind"] == "batch_gemm"
    q, k = rng.standard_normal((3, 37, 16), np.float32), rng.standard_normal((3, 16, 29), np.float32)
    check(compiled.jit("bmm")(q, k), q.astype(np.float64) @ k, 16, np.finfo(np.float32).eps)
