"""What the host runtime takes: bf16 as ml_dtypes arrays (and gives bf16 results back as such), and any array that
speaks DLPack or the buffer protocol, read in place."""

from __future__ import annotations

import array
from typing import Any

import ml_dtypes
import numpy as np
import pytest

import prism
from conftest import run_cli
from prism.runtime.cpu import ArgumentError, StaleBinding, as_array

BF16 = np.dtype(ml_dtypes.bfloat16)

MATMUL_BF16 = """func.func @mm(%a: tensor<33x64xbf16>, %b: tensor<64x40xbf16>) -> tensor<33x40x{out}> {{
  %z = arith.constant 0.0 : {out}
  %e = tensor.empty() : tensor<33x40x{out}>
  %c = linalg.fill ins(%z : {out}) outs(%e : tensor<33x40x{out}>) -> tensor<33x40x{out}>
  %r = linalg.matmul ins(%a, %b : tensor<33x64xbf16>, tensor<64x40xbf16>) outs(%c : tensor<33x40x{out}>)
      -> tensor<33x40x{out}>
  return %r : tensor<33x40x{out}>
}}"""

ELEMENTWISE_BF16 = """func.func @ew(%x: tensor<7x50xbf16>, %y: tensor<7x50xbf16>, %s: bf16) -> tensor<7x50xbf16> {
  %e = tensor.empty() : tensor<7x50xbf16>
  %r = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i, j)>,
                                        affine_map<(i, j) -> (i, j)>], iterator_types = ["parallel", "parallel"]}
      ins(%x, %y : tensor<7x50xbf16>, tensor<7x50xbf16>) outs(%e : tensor<7x50xbf16>) {
  ^bb0(%a: bf16, %b: bf16, %o: bf16):
    %p = arith.mulf %a, %b : bf16
    %q = arith.addf %p, %s : bf16
    %t = math.exp %q : bf16
    linalg.yield %t : bf16
  } -> tensor<7x50xbf16>
  return %r : tensor<7x50xbf16>
}"""

VECTOR_SCALE = """func.func @scale(%x: tensor<12xf32>, %y: tensor<12xf32>) -> tensor<12xf32> {
  %e = tensor.empty() : tensor<12xf32>
  %r = linalg.mul ins(%x, %y : tensor<12xf32>, tensor<12xf32>) outs(%e : tensor<12xf32>) -> tensor<12xf32>
  return %r : tensor<12xf32>
}"""

# bf16 keeps 8 significant bits: one rounding is within 2^-8 of the value.
BF16_STEP = 2.0 ** -8


@pytest.mark.parametrize("out", ["bf16", "f32"])
def test_a_bf16_product_takes_and_gives_ml_dtypes_arrays(out: str, rng: np.random.Generator) -> None:
    run = prism.compile(MATMUL_BF16.format(out=out), target="host").jit("mm")
    a = rng.standard_normal((33, 64)).astype(BF16)
    b = rng.standard_normal((64, 40)).astype(BF16)
    have = run(a, b)
    assert have.dtype == (BF16 if out == "bf16" else np.float32) and have.shape == (33, 40)
    want = a.astype(np.float64) @ b.astype(np.float64)
    # Each product of bf16 values is exact in f32; the sum of 64 of them rounds once in f32, and a bf16 result
    # once more, or at each of the 64 steps when it is accumulated in bf16.
    bound = np.abs(a.astype(np.float64)) @ np.abs(b.astype(np.float64))
    steps = 64 * BF16_STEP if out == "bf16" else 1e-5
    assert np.all(np.abs(have.astype(np.float64) - want) <= steps * bound + 1e-6)


def test_bf16_elementwise_and_scalars_match_float64(rng: np.random.Generator) -> None:
    run = prism.compile(ELEMENTWISE_BF16, target="host").jit("ew")
    x, y = (0.5 * rng.standard_normal((7, 50))).astype(BF16), (0.5 * rng.standard_normal((7, 50))).astype(BF16)
    s = ml_dtypes.bfloat16(0.375)
    have = run(x, y, s)
    assert have.dtype == BF16
    want = np.exp(x.astype(np.float64) * y.astype(np.float64) + 0.375)
    # Three roundings to bf16 (product, sum, exponential), the sum's error growing through exp.
    np.testing.assert_allclose(have.astype(np.float64), want, rtol=6 * BF16_STEP)


class DLPackOnly:
    """An array known to the runtime only through DLPack (as a torch or JAX array would be)."""

    def __init__(self, array: np.ndarray, device: tuple[int, int] = (1, 0)):
        self._array, self._device = array, device

    def __dlpack__(self, **kwargs: Any) -> Any:
        return self._array.__dlpack__(**kwargs)

    def __dlpack_device__(self) -> tuple[int, int]:
        return self._device


def test_dlpack_and_buffer_protocol_arrays_are_read_in_place() -> None:
    x = np.arange(12, dtype=np.float32)
    for wrapped in (DLPackOnly(x), memoryview(x)):
        assert np.shares_memory(as_array(wrapped, "x"), x)
    floats = array.array("f", range(12))
    assert np.shares_memory(as_array(floats, "x"), np.frombuffer(floats, np.float32))


def test_dlpack_and_buffer_protocol_arrays_run(rng: np.random.Generator) -> None:
    run = prism.compile(VECTOR_SCALE, target="host").jit("scale")
    x = rng.standard_normal(12).astype(np.float32)
    y = rng.standard_normal(12).astype(np.float32)
    want = x.astype(np.float64) * y
    for first, second in ((DLPackOnly(x), DLPackOnly(y)), (memoryview(x), y),
                          (array.array("f", x.tolist()), memoryview(y))):
        np.testing.assert_allclose(run(first, second), want, rtol=1e-6)
    bound = prism.compile(VECTOR_SCALE, target="host").bind("scale", y=DLPackOnly(y))
    np.testing.assert_allclose(bound(memoryview(x)), want, rtol=1e-6)
    y[0] += 1  # the bound memory changed in place: the binding is stale
    with pytest.raises(StaleBinding):
        bound(x)


def test_a_dlpack_tensor_off_the_cpu_is_refused() -> None:
    run = prism.compile(VECTOR_SCALE, target="host").jit("scale")
    x = np.ones(12, np.float32)
    with pytest.raises(ArgumentError, match="argument 0: its DLPack tensor cannot be read in place on the CPU"):
        run(DLPackOnly(x, device=(2, 0)), x)  # kDLCUDA


def test_help_says_what_the_runtime_takes() -> None:
    result = run_cli("--help")
    assert result.returncode == 0
    text = " ".join(result.stdout.split())
    assert "ml_dtypes.bfloat16 arrays for bf16" in text and "DLPack" in text and "buffer protocol" in text


def test_ml_dtypes_is_imported_by_the_first_bf16_value_only() -> None:
    """Importing ml_dtypes takes longer than the rest of prism-opt's start: prism and its command line start
    without it, and a bf16 signature brings it in."""
    import subprocess
    import sys

    script = ("import sys, prism.cli\n"
              "assert 'ml_dtypes' not in sys.modules, 'imported at start'\n"
              "from prism.runtime.cpu import TensorSpec\n"
              "from mlir import ir\n"
              "with ir.Context():\n"
              "    spec = TensorSpec.from_type(ir.Type.parse('tensor<2xbf16>'))\n"
              "assert 'ml_dtypes' in sys.modules and spec.dtype.name == 'bfloat16'\n")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr


MATRIX_SCALE = """func.func @scale(%x: tensor<300x200xf32>, %y: tensor<300x200xf32>) -> tensor<300x200xf32> {
  %e = tensor.empty() : tensor<300x200xf32>
  %r = linalg.mul ins(%x, %y : tensor<300x200xf32>, tensor<300x200xf32>) outs(%e : tensor<300x200xf32>)
         -> tensor<300x200xf32>
  return %r : tensor<300x200xf32>
}"""


@pytest.mark.parametrize("layout", ["contiguous", "transposed"])
def test_a_change_to_a_sampled_element_of_a_large_bound_array_is_seen(rng: np.random.Generator, layout: str) -> None:
    """A bound array of 60000 elements is fingerprinted by runs of its elements, the first and the last among them,
    whether it is C-contiguous (read through a strided view) or not (read by position); a change there makes the
    binding stale, and values read at bind time run unchanged."""
    compiled = prism.compile(MATRIX_SCALE, target="host")
    x = rng.standard_normal((300, 200)).astype(np.float32)
    y = rng.standard_normal((300, 200)).astype(np.float32) if layout == "contiguous" \
        else rng.standard_normal((200, 300)).astype(np.float32).T
    for where in ((0, 0), (299, 199)):
        bound = compiled.bind("scale", y=y)
        np.testing.assert_allclose(bound(x), x.astype(np.float64) * y, rtol=1e-6)
        y[where] += 1.0
        with pytest.raises(StaleBinding, match="changed after bind"):
            bound(x)
