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

DTYPES = ("f16", "bf16")
RAGGED_GEMMS = ((77, 1000, 513), (1000, 77, 513), (5, 4096, 11008 - 3))  # (m, k, n)
DYNAMIC_M = (1, 77, 512)
_LARGEST = {"f16": 65504.0, "bf16": 3.38e38}
_INF = {"f16": ("0x7C00", "0xFC00"), "bf16": ("0x7F80", "0xFF80")}
_FLOAT = re.compile(r"(?<![\w.])(-?\d+\.\d*(?:e[+-]?\d+)?)(?=\s*:\s*f32)")


def retype(mlir: str, dtype: str) -> str:
    """``mlir`` with every f32 as ``dtype``; constants beyond its range become infinities."""
    def literal(m: re.Match) -> str:
        value = float(m.group(1))
        if abs(value) > _LARGEST[dtype]:
            return _INF[dtype][0] if value > 0 else _INF[dtype][1]
        return m.group(1)
    text = _FLOAT.sub(literal, mlir)
    text = text.replace("0xFF800000", _INF[dtype][1]).replace("0x7F800000", _INF[dtype][0])
    return text.replace("f32", dtype)


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
    """Every GPU workload in ``dtype``."""
    base = [w for w in cw.all_workloads() if w.family not in ("rmsnorm", "softmax")]
    base += [cw.gemm(f"gemm-{m}x{k}x{n}", m, k, n) for m, k, n in RAGGED_GEMMS]
    base.append(dynamic_m_gemm(4096, 4096))
    return [replace(w, name=f"{w.name}-{dtype}", mlir=retype(w.mlir, dtype)) for w in base]
