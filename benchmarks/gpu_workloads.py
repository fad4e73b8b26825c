"""The GPU workloads: DESIGN §9's programs in f16 and bf16, plus ragged GEMMs, dynamic M and decode attention.

Each is a :class:`cpu_workloads.Workload` (MLIR text, array program,
inputs) whose MLIR is retyped: every f32 tensor and scalar becomes the
16-bit type, the program then computing in it as written (the GPU
accumulates products in f32 and rounds once). ``DYNAMIC_M`` sizes are the
runtime sizes of the dynamic-M projection.
"""

from __future__ import annotations

import re
from dataclasses import replace

import cpu_workloads as cw
import ml_dtypes
import numpy as np

DTYPES = ("f16", "bf16")
RAGGED_GEMMS = ((77, 1000, 513), (1000, 77, 513), (5, 4096, 11008 - 3))  # (m, k, n)
DYNAMIC_M = (1, 77, 512)
_LARGEST = {"f16": 65504.0, "bf16": 3.38e38, "f32": 3.4028234663852886e38}
_HEX_CONSTANT = r"(0x[0-9A-Fa-f]+)(\s*:\s*){}\b"


def _numpy(dtype: str) -> np.dtype:
    return {"f16": np.dtype(np.float16), "bf16": np.dtype(ml_dtypes.bfloat16), "f32": np.dtype(np.float32)}[dtype]


def _float_of_bits(bits: int, dtype: str) -> float:
    unsigned = np.uint32 if dtype == "f32" else np.uint16
    return float(np.array([bits], unsigned).view(_numpy(dtype))[0])


def _bits_of_float(value: float, dtype: str) -> str:
    unsigned, digits = (np.uint32, 8) if dtype == "f32" else (np.uint16, 4)
    return f"0x{int(np.array([value]).astype(_numpy(dtype)).view(unsigned)[0]):0{digits}X}"


def retype(mlir: str, dtype: str, base: str = "f32") -> str:
    """``mlir`` with every ``base`` element type as ``dtype``: hexadecimal constants re-encoded, decimal ones
    beyond ``dtype``'s range made infinities."""
    if base == dtype:
        return mlir

    def decimal(m: re.Match) -> str:
        value = float(m.group(1))
        if abs(value) <= _LARGEST[dtype]:
            return m.group(1)
        return _bits_of_float(float("inf") if value > 0 else float("-inf"), dtype)
    text = re.sub(rf"(?<![\w.])(-?\d+\.\d*(?:e[+-]?\d+)?)(?=\s*:\s*{base}\b)", decimal, mlir)
    text = re.sub(_HEX_CONSTANT.format(base),
                  lambda m: f"{_bits_of_float(_float_of_bits(int(m.group(1), 16), base), dtype)}{m.group(2)}{dtype}",
                  text)
    return re.sub(rf"(?:(?<=[0-9?]x)|\b){base}\b", dtype, text)  # 16x4096xf32 has no word boundary before f32


def dynamic_m_gemm(k: int, n: int) -> cw.Workload:
    """``x @ w`` with x's row count dynamic (a projection of any number of tokens)."""
    base = cw.gemm(f"gemm-dynamic-m-{k}x{n}", 1, k, n)
    mlir = (f"func.func @gemm(%x: tensor<?x{k}xf32>, %w: tensor<{k}x{n}xf32> {{prism.invariant}}) "
            f"-> tensor<?x{n}xf32> {{\n"
            "  %zero = arith.constant 0.0 : f32\n  %c0 = arith.constant 0 : index\n"
            f"  %m = tensor.dim %x, %c0 : tensor<?x{k}xf32>\n"
            f"  %e = tensor.empty(%m) : tensor<?x{n}xf32>\n"
            f"  %z = linalg.fill ins(%zero : f32) outs(%e : tensor<?x{n}xf32>) -> tensor<?x{n}xf32>\n"
            f"  %y = linalg.matmul ins(%x, %w : tensor<?x{k}xf32>, tensor<{k}x{n}xf32>) "
            f"outs(%z : tensor<?x{n}xf32>) -> tensor<?x{n}xf32>\n"
            f"  return %y : tensor<?x{n}xf32>\n}}\n")
    return replace(base, mlir=mlir, family="gemm-dynamic-m")


def workloads(dtype: str) -> list[cw.Workload]:
    """Every GPU workload in ``dtype``: the f32 host workloads retyped (the host's bf16 rows, typed already, are
    not retyped)."""
    base = [w for w in cw.all_workloads() if w.family not in ("rmsnorm", "softmax") and not w.family.startswith("bf16")]
    base += [cw.gemm(f"gemm-{m}x{k}x{n}", m, k, n) for m, k, n in RAGGED_GEMMS]
    base.append(dynamic_m_gemm(4096, 4096))
    return [replace(w, name=f"{w.name}-{dtype}", mlir=retype(w.mlir, dtype)) for w in base]
