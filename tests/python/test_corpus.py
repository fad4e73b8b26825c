"""The corpus: Linalg programs from other projects' public tests (tests/corpus, sources in its README), compiled
for the host and run on fresh seeded random inputs against float64 numpy (integers: exactly).

Each program's outcome is written down here: it runs and matches, or it is refused with one located error
whose message is asserted. All programs run in one child process (this file run as a script), which reports
on each before it starts the next; a child that dies (an abort) is recorded against the program it was
running and a new child takes the rest, so an abort fails that program's test and never pytest.
"""

from __future__ import annotations

import json
import math
import os
import subprocess
import sys
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pytest

CORPUS = Path(__file__).resolve().parents[1] / "corpus"
Arrays = tuple[np.ndarray, ...]


@dataclass(frozen=True)
class Program:
    """A corpus file: its function, how to make its inputs, and either its float64 reference or the error
    (a message substring) it is refused with."""

    func: str
    inputs: Callable[[np.random.Generator], list[Any]]
    reference: Callable[..., Any] | None = None
    refused: str | None = None
    rtol: float = 1e-4
    atol: float | None = None  # where rounding grows with the problem, not the result (rtol x the largest value)
    defect: str | None = None  # a known defect, not yet a located error: the test is expected to fail


def normal(*shape: int, dtype: Any = np.float32) -> Callable[[np.random.Generator], np.ndarray]:
    return lambda rng: rng.standard_normal(shape).astype(dtype)


def uniform(low: float, high: float, *shape: int) -> Callable[[np.random.Generator], np.ndarray]:
    return lambda rng: rng.uniform(low, high, shape).astype(np.float32)


def ints(low: int, high: int, *shape: int, dtype: Any = np.int32) -> Callable[[np.random.Generator], np.ndarray]:
    return lambda rng: rng.integers(low, high, shape).astype(dtype)


def an_i64(rng: np.random.Generator) -> np.int64:
    """An i64 argument that the program ignores (torch-mlir passes the op's dim or dtype this way)."""
    return np.int64(1)


def args(*makers: Callable[[np.random.Generator], Any]) -> Callable[[np.random.Generator], list[Any]]:
    return lambda rng: [make(rng) for make in makers]


def softmax(x: np.ndarray, axis: int) -> np.ndarray:
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def layernorm(x: np.ndarray, count: np.ndarray, eps: np.ndarray) -> np.ndarray:
    """IREE's layernorm.mlir as its generics write it: mean and variance scaled by 1/count."""
    r = 1.0 / count[:, 0]
    centered = x - (x.sum(axis=1) * r)[:, None]
    variance = (centered**2).sum(axis=1) * r
    return centered / np.sqrt(variance + eps[:, 0])[:, None]


def conv_nhwc(x: np.ndarray, w: np.ndarray, stride: int) -> np.ndarray:
    """linalg.conv_2d_nhwc_hwcf, dilation 1."""
    windows = np.lib.stride_tricks.sliding_window_view(x, w.shape[:2], axis=(1, 2))[:, ::stride, ::stride]
    return np.einsum("nhwcij,ijcf->nhwf", windows, w)


def conv_nchw(x: np.ndarray, w: np.ndarray) -> np.ndarray:
    """linalg.conv_2d_nchw_fchw, stride and dilation 1."""
    windows = np.lib.stride_tricks.sliding_window_view(x, w.shape[2:], axis=(2, 3))
    return np.einsum("nchwij,fcij->nfhw", windows, w)


def wrap(x: np.ndarray, dtype: Any) -> np.ndarray:
    """Integers as the program's type holds them (two's complement wrap-around)."""
    return np.asarray(x).astype(np.int64).astype(dtype)


def index_grid(rows: int, cols: int, scale: int) -> np.ndarray:
    return np.arange(rows)[:, None] * scale + np.arange(cols)[None, :]


def strided_slice() -> np.ndarray:
    out = np.full((10, 12), 42)
    out[1:7:2, 2:11:3] = index_grid(12, 15, 15)[2:8:2, 3:12:3] + index_grid(14, 16, 16)[3:12:3, 2:8:2]
    return out


def quantized(lhs: np.ndarray, rhs: np.ndarray, lhs_zp: np.ndarray, rhs_zp: np.ndarray) -> np.ndarray:
    return (lhs - lhs_zp) @ (rhs - rhs_zp)


def pad_dynamic(x: np.ndarray) -> np.ndarray:
    return np.pad(x, ((0, 0), (2, 0), (0, 2)), constant_values=np.float32(2.3))


def init_and_dot(a: np.ndarray, b: np.ndarray, _: np.ndarray) -> np.ndarray:
    return np.array(a @ b)


def matvec_args(batch: tuple[int, ...] = ()) -> Callable[[np.random.Generator], list[Any]]:
    return args(ints(-128, 128, *batch, 3, 4, dtype=np.int8), ints(-128, 128, *batch, 4, dtype=np.int8),
                ints(-1000, 1000, *batch, 3))


erf = np.vectorize(math.erf)
I8 = np.int8
# The host holds no buffers of sub-byte integers; the refusal says to hold them in i8.
SUB_BYTE = "hold such values in i8 tensors instead"

# name -> program. The defects known at the time of writing are recorded as their current located error.
PROGRAMS: dict[str, Program] = {
    "iree_argmax_1d": Program("argmax_1d", args(normal(131072)),
                              lambda x: (x.max(), np.int32(np.argmax(x)))),
    "iree_associative_reordering": Program("check_reordering", args(normal(384), normal()),
                                           lambda x, c: ((x - c) ** 2).sum()),
    "iree_batch_matmul_dynamic_k_f16": Program(
        "batch_matmul_dynamic_reduction_size_B2_M1_N3_K5", args(normal(2, 1, 5, dtype=np.float16),
                                                                normal(2, 5, 3, dtype=np.float16)),
        lambda a, b: a @ b, rtol=1e-2),
    "iree_batch_matmul_erf": Program("batch_matmul_B1_M1_N32_K64_followed_by_erf",
                                     args(normal(2, 3, 64), normal(2, 64, 32)), lambda a, b: erf(a @ b)),
    "iree_batch_matmul_narrow_n_2_i8": Program(
        "batch_matmul_narrow_n_2", args(ints(-128, 128, 2, 3, 4, dtype=I8), ints(-128, 128, 2, 4, 2, dtype=I8),
                                        ints(-1000, 1000, 2, 3, 2)), lambda a, b, c: c + a @ b),
    "iree_batch_matvec_i8": Program("batch_matvec", matvec_args((2,)),
                                    lambda a, b, c: c + np.einsum("bmk,bk->bm", a, b)),
    "iree_broadcast_batch_matmul": Program("broadcast_batch_matmul", args(normal(2, 2, 3), normal(3, 4)),
                                           lambda a, w: a @ w),
    "iree_broadcast_batch_matmul_transpose_b": Program("broadcast_batch_matmul_transpose_b",
                                                       args(normal(2, 2, 3), normal(4, 3)), lambda a, w: a @ w.T),
    "iree_collapse_shape_i64": Program("collapse_shape_i64", args(ints(-99, 99, 1, 4, dtype=np.int64)),
                                       lambda x: x.reshape(4)),
    "iree_concat_i32_dim1": Program("concat_i32_dim1", args(ints(-99, 99, 2, 3), ints(-99, 99, 2, 5)),
                                    lambda a, b: np.concatenate([a, b], axis=1)),
    "iree_conv2d_nchw_fchw": Program("conv2d_nopadding", args(normal(1, 2, 4, 4), normal(1, 2, 3, 2)),
                                     conv_nchw),
    "iree_conv2d_nhwc_bias": Program("operand_fusion",
                                     args(normal(1, 225, 225, 3), normal(3, 3, 3, 16), normal(16)),
                                     lambda x, w, b: conv_nhwc(x, w, 2) + b),
    "iree_expand_shape_i32": Program("expand_shape_i32", args(ints(-99, 99, 4)), lambda x: x.reshape(1, 4)),
    "iree_extract_slice_stride2_i32": Program("extract_slice_i32_offset1_size2_stride2", args(ints(-99, 99, 4)),
                                              lambda x: x[1::2]),
    "iree_export_parameters_mlp": Program(
        "main", args(normal(1, 2), normal(1, 2), normal(2, 2), normal(1, 2), normal(2, 2)),
        lambda x, g3, g4, g5, g6: (x @ g6 + g5) @ g4 + g3),
    "iree_extract_slice_strided": Program("extract_slice_strided", args(),
                                          lambda: (index_grid(500, 750, 750)[20:120:2, 30:255:3],) * 2),
    "iree_fill_i64": Program("fill_i64", args(ints(-9, 9, 2, 3, dtype=np.int64)),
                             lambda x: (np.full(x.shape, -1), np.full(x.shape, 2**63 - 1))),
    "iree_gather_like_i64": Program("gather_like_op", args(ints(-99, 99, 2, 4, dtype=np.int64),
                                                           ints(0, 2, 4, dtype=np.int64)),
                                    lambda x, i: np.broadcast_to(x[i, np.arange(4)], (4, 4))),
    "iree_half_reduction_f16": Program("half_reduction_aligned", args(normal(2, 4096, dtype=np.float16)),
                                       # 4096 additions rounded to f16 (an ulp of 1/16 at 64) walk by ~0.3,
                                       # under 2.1 in 200 trials, whatever the sum.
                                       lambda x: x.sum(axis=1), rtol=2e-2, atol=4.0),
    "iree_i4_to_f32": Program("i4_to_f32_1d", args(), lambda: np.arange(8.0), refused=SUB_BYTE),
    "iree_insert_slice_small_i32": Program("tensor_insert_slice_small", args(ints(-99, 99, 10, 10),
                                                                             ints(-99, 99, 5, 5)),
                                           lambda a, b: np.concatenate([a[:4], np.concatenate(
                                               [a[4:9, :3], b, a[4:9, 8:]], axis=1), a[9:]])),
    "iree_issue_8825_dynamic_slice": Program("issue_8825", args(normal(4)), lambda x: x[2:] * 3),
    "iree_layernorm": Program("layernorm", lambda rng: [rng.standard_normal((128, 384), np.float32),
                                                        np.full((128, 1), 384, np.float32),
                                                        np.full((128, 1), 1e-12, np.float32)], layernorm),
    "iree_layernorm_dynamic": Program("layernorm_dynamic", lambda rng: [
        np.full((33, 1), 1e-12, np.float32), np.full((33, 1), 96, np.float32),
        rng.standard_normal((33, 96), np.float32)], lambda e, c, x: layernorm(x, c, e)),
    "iree_libm_tanh": Program("tanh", args(normal()), np.tanh),
    "iree_matmul_2048x512x1024_f32": Program("matmul_2048x512x1024_f32_f32",
                                             args(normal(2048, 1024), normal(1024, 512)), lambda a, b: a @ b),
    "iree_matmul_narrow_n_1_i8": Program("matmul_narrow_n_1", args(ints(-128, 128, 3, 4, dtype=I8),
                                                                   ints(-128, 128, 4, 1, dtype=I8),
                                                                   ints(-1000, 1000, 3, 1)),
                                         lambda a, b, c: c + a @ b),
    "iree_matmuls_on_same_accumulator_i8": Program(
        "matmul_i8", args(ints(-128, 128, 37, 50, dtype=I8), ints(-128, 128, 50, 29, dtype=I8),
                          ints(-1000, 1000, 37, 29)), lambda a, b, c: c + 3 * (a @ b)),
    "iree_matvec_i8": Program("matvec", matvec_args(), lambda a, b, c: c + a @ b),
    "iree_max_sub_exp": Program("max_sub_exp", args(normal(12, 128, 128)),
                                lambda x: np.exp(x - x.max(axis=2, keepdims=True))),
    "iree_mlp_relu_neg": Program("mlp_invocation", args(normal(33, 40), normal(40, 71)),
                                 lambda a, b: -np.maximum(a @ b, 0)),
    "iree_multi_result_i32": Program("multi_result", args(ints(-999, 999, 3, 4), ints(-999, 999, 3, 4)),
                                     lambda a, b: (a + b, a * b)),
    "iree_quantized_matmul_as_matmul": Program(
        "quantized_matmul_as_matmul_3x4x5", args(ints(-128, 128, 3, 4, dtype=I8), ints(-128, 128, 4, 5, dtype=I8),
                                                 lambda rng: np.int32(rng.integers(-128, 128)),
                                                 lambda rng: np.int32(rng.integers(-128, 128))),
        quantized),
    "iree_quantized_matmul_i8": Program(
        "check_one_quantized_matmul_as_matmul_3x4x5",
        args(ints(-128, 128, 3, 4, dtype=I8), ints(-128, 128, 4, 5, dtype=I8),
             lambda rng: np.int32(rng.integers(-128, 128)), lambda rng: np.int32(rng.integers(-128, 128))),
        quantized),
    "iree_quarter_reduction_i8": Program("quarter_reduction_aligned_smaller", args(ints(-128, 128, 128, 128, dtype=I8)),
                                         lambda x: wrap(x.sum(axis=1), I8)),
    "iree_reduction_aligned_larger": Program("reduction_aligned_larger", args(normal(2, 40960)),
                                             lambda x: x.sum(axis=1)),
    "iree_reduction_unaligned": Program("reduction_unaligned", args(normal(129, 384)), lambda x: x.sum(axis=1)),
    "iree_scalar_dag": Program("simpleDAG", args(normal(), normal(), normal(), normal()),
                               lambda a, b, c, d: (a + b, c * d - (a + b))),
    "iree_select_i1": Program("select_with_binary", args(lambda rng: rng.integers(0, 2, 4).astype(bool),
                                                         ints(-99, 99, 4), ints(-99, 99, 4)), np.where),
    "iree_softmax_dynamic": Program("softmax_dynamic_10x256x256xf32", args(normal(3, 5, 40)),
                                    lambda x: softmax(x, 2)),
    "iree_softmax_dynamic_reduction": Program("softmax_dynamic_reduction_N65_K1531", args(normal(65, 1531)),
                                              lambda x: softmax(x, 1)),
    "iree_softmax_generic_dynamic": Program("softmax_dynamic", args(normal(3, 5, 40)), lambda x: softmax(x, 2)),
    "iree_softmax_generic_chain": Program("softmax", args(normal(12, 128, 128)), lambda x: softmax(x, 2)),
    "iree_softmax_static": Program("softmax_static_10x256x256xf32", args(normal(10, 256, 256)),
                                   lambda x: softmax(x, 2)),
    "iree_stride_slice_i32": Program("stride_slice", args(), strided_slice),
    "iree_transpose_small_i32": Program("transpose_small", args(ints(-99, 99, 3, 3)), lambda x: x.T),
    "iree_dynamic_pack_pad": Program("dynamic_pack_simple_pad_mode", args(ints(-99, 99, 4, 5)),
                                     lambda x: np.pad(x, ((0, 2), (0, 1))).reshape(2, 3, 2, 3).transpose(0, 2, 1, 3)),
    "iree_pack_pad_transpose_large": Program(
        "static_pack_pad_transpose_inner_and_outer_dims_large", args(ints(-999, 999, 100, 250)),
        lambda x: (np.pad(x, ((0, 28), (0, 6)), constant_values=42).reshape(4, 32, 16, 16).transpose(2, 0, 3, 1),) * 2),
    "iree_unpack_transpose_large": Program(
        "dynamic_unpack_transpose_inner_and_outer_dims_large",
        args(ints(-999, 999, 16, 4, 16, 32), ints(-999, 999, 16, 4, 16, 32), lambda rng: np.int64(128),
             lambda rng: np.int64(256)),
        lambda a, b, m, n: tuple(x.transpose(1, 3, 0, 2).reshape(m, n) for x in (a, b))),
    "mlir_collapse_dynamic": Program("collapse_dynamic_shape", args(normal(2, 2, 3, 2)),
                                     lambda x: x.reshape(2, 6, 2)),
    "mlir_conv_1d_nwc_wcf": Program("conv_1d_nwc_wcf", args(normal(3, 8, 1), normal(3, 1, 1), normal(3, 6, 1)),
                                    lambda x, w, c: c + np.einsum(
                                        "nwck,kcf->nwf", np.lib.stride_tricks.sliding_window_view(x, 3, axis=1), w)),
    "mlir_conv_2d_nchw_fchw_q": Program(
        "conv", args(ints(-128, 128, 2, 2, 3, 3, dtype=I8), ints(-128, 128, 3, 2, 2, 2, dtype=I8),
                     ints(-999, 999, 2, 3, 2, 2), lambda rng: np.int32(rng.integers(-128, 128)),
                     lambda rng: np.int32(rng.integers(-128, 128))),
        lambda x, w, c, xz, wz: c + conv_nchw(x - xz, w - wz)),
    "mlir_conv_1d_nwc_wcf_dynamic": Program(
        "conv_1d_nwc_wcf", args(normal(2, 9, 3), normal(3, 3, 4), normal(2, 7, 4)),
        lambda x, w, c: c + np.einsum("nwck,kcf->nwf", np.lib.stride_tricks.sliding_window_view(x, 3, axis=1), w)),
    "mlir_depthwise_conv_1d_i32": Program(
        "conv", args(ints(-99, 99, 1, 8, 6), ints(-99, 99, 2, 6), ints(-99, 99, 1, 7, 6)),
        lambda x, w, c: c + x[:, :7] * w[0] + x[:, 1:] * w[1]),
    "mlir_depthwise_conv_2d_hwcm_dilated": Program(
        "depthwise_conv_2d_nhwc_hwcm_tensor_dilated", args(normal(2, 8, 9, 2), normal(2, 2, 2, 3)),
        lambda x, w: sum(np.einsum("nhwc,cm->nhwcm", x[:, 2 * i:2 * i + 6, 2 * j:2 * j + 7], w[i, j])
                         for i in range(2) for j in range(2))),
    "mlir_elementwise_addf": Program("main", args(normal(3), normal(3)), np.add),
    "mlir_elementwise_exp_3d": Program("unary_identity_exp", args(normal(8, 16, 32), normal(8, 16, 32)),
                                       lambda a, _: np.exp(a)),
    "mlir_elementwise_mul_5d_i32": Program("binary_identity_mul_5Di", args(*[ints(-999, 999, 1, 2, 3, 4, 5)] * 3),
                                           lambda a, b, _: a * b),
    "mlir_elementwise_tanh_projection": Program("unary_projection_tanh", args(normal(5, 16), normal(8, 16, 5)),
                                                lambda a, _: np.broadcast_to(np.tanh(a).T, (8, 16, 5))),
    "mlir_generic_reduce_2d_i32": Program("generic_reduce_2d_i32", args(ints(-9999, 9999, 16, 1000)),
                                          lambda x: x.sum(axis=1)),
    "mlir_init_and_dot": Program("init_and_dot", args(normal(64), normal(64), normal()), init_and_dot),
    "mlir_insert_slice_multiple_uses": Program("main", args(normal(2), normal(1)),
                                               lambda c, v: (np.r_[v, c[1:]], np.r_[c[:1], v])),
    "mlir_insert_slice_rank_reducing": Program("main", args(ints(-99, 99, 5)),
                                               lambda x: np.pad(x[:, None], ((0, 0), (2, 0)))),
    "mlir_matmul_i8_via_mmt4d": Program("matmul_via_mmt4d", args(ints(-128, 128, 7, 16, dtype=I8),
                                                                 ints(-128, 128, 16, 13, dtype=I8),
                                                                 ints(-9999, 9999, 7, 13)),
                                        lambda a, b, c: c + a @ b),
    "mlir_matmul_transpose_a_dynamic": Program("matmul_transpose_a", args(normal(13, 7), normal(13, 9),
                                                                          normal(7, 9)),
                                               lambda a, b, c: c + a.T @ b),
    "mlir_mmt4d_i32": Program("mmt4d", args(ints(-99, 99, 2, 2, 3, 1), ints(-99, 99, 2, 2, 3, 1),
                                            ints(-99, 99, 2, 2, 3, 3)),
                              lambda a, b, c: c + np.einsum("mkab,nkcb->mnac", a, b)),
    "mlir_pack_mmt4d_unpack_i32": Program("mmt4d", args(ints(-99, 99, 7, 16), ints(-99, 99, 16, 13),
                                                        ints(-99, 99, 7, 13)), lambda a, b, c: c + a @ b),
    "mlir_padtensor_dynamic": Program("main", args(normal(1, 2, 3)), pad_dynamic),
    "mlir_pooling_nhwc_max_i8": Program(
        "pooling_nhwc_i8_max_tensor", args(ints(-128, 128, 1, 4, 4, 1, dtype=I8)),
        lambda x: np.maximum(np.lib.stride_tricks.sliding_window_view(x, (3, 3), axis=(1, 2)).max(axis=(4, 5)), 0)),
    "mlir_pooling_nhwc_max_strided_dilated": Program(
        "generalize_pooling_nhwc_max_f32", args(normal(1, 4, 16, 1), normal(2, 2), normal(1, 2, 4, 1)),
        lambda x, _, c: np.maximum(c, np.max([x[:, i:i + 3:2, 2 * j:2 * j + 13:4] for i in range(2) for j in range(2)],
                                             axis=0))),
    "mlir_reduce_2d_dynamic": Program("reduce_2d_f32", args(normal(16, 1000)), lambda x: x.sum(axis=1)),
    "mlir_tensor_matmul": Program("main", args(normal(2, 3), normal(3, 4), normal(2, 4)), lambda a, b, c: c + a @ b),
    "mlir_tile_reduction_subf": Program("main", args(normal(2, 8)), lambda x: -x.sum(axis=1)),
    "torch_mlir_addcdiv": Program("main", args(normal(128, 128), normal(128, 1), uniform(1, 2, 1, 128)),
                                  lambda x, a, b: x + a / b),
    "torch_mlir_addmm": Program("main", args(normal(128, 128), normal(128, 256), normal(256, 128)),
                                lambda x, a, b: x + a @ b),
    "torch_mlir_batch_norm": Program("main", args(normal(128, 128), normal(128, 1), uniform(0.5, 2, 128, 1)),
                                     lambda x, m, v: (x - m) / np.sqrt(v + 1e-5)),
    "torch_mlir_bmm": Program("main", args(normal(8, 128, 8), normal(8, 8, 128)), lambda a, b: a @ b),
    "torch_mlir_clamp": Program("main", args(normal(128, 128)), lambda x: np.clip(x, -0.5, 0.5)),
    "torch_mlir_expand": Program("main", args(normal(128, 128), an_i64, an_i64, an_i64),
                                 lambda x, *_: np.broadcast_to(x, (12, 128, 128))),
    "torch_mlir_flip": Program("main", args(normal(128, 128), an_i64), lambda x, _: x[:, ::-1]),
    "torch_mlir_gather": Program("main", args(normal(3, 2), an_i64, ints(0, 2, 3, 2, dtype=np.int64)),
                                 lambda x, _, i: np.take_along_axis(x, i, axis=1)),
    "torch_mlir_gelu": Program("main", args(normal(128, 128)), lambda x: x * (1 + erf(x / np.sqrt(2))) / 2),
    "torch_mlir_gt_tensor": Program("main", args(normal(128, 128), normal(128, 128)), np.greater),
    "torch_mlir_isinf": Program("main", args(lambda rng: np.where(rng.integers(0, 4, (128, 128)) == 0, -np.inf,
                                                              rng.standard_normal((128, 128))).astype(np.float32)),
                                np.isinf),
    "torch_mlir_index_select": Program("main", args(normal(128, 128), an_i64, ints(0, 128, 4, dtype=np.int64)),
                                       lambda x, _, i: x[i]),
    "torch_mlir_layer_norm": Program("main", args(normal(256, 128), an_i64), lambda x, _: (
        x - x.mean(axis=1, keepdims=True)) / np.sqrt(x.var(axis=1, keepdims=True) + 1e-5)),
    "torch_mlir_lerp_tensor": Program("main", args(normal(128, 128), normal(128, 128), normal(128, 128)),
                                      lambda a, b, w: a + (b - a) * w),
    "torch_mlir_linalg_vector_norm": Program("main", args(normal(128, 128)), lambda x: np.sqrt((x**2).sum())),
    "torch_mlir_log_softmax": Program("main", args(normal(128, 128), an_i64), lambda x, _: x - x.max(axis=0) - np.log(
        np.exp(x - x.max(axis=0)).sum(axis=0))),
    "torch_mlir_masked_fill_scalar": Program(
        "main", args(normal(128, 128), lambda rng: rng.integers(0, 2, (128, 128)).astype(bool), an_i64),
        lambda x, m, _: (np.where(m, 2.0, x),) * 2),
    "torch_mlir_meandim": Program("main", args(normal(128, 128), an_i64), lambda x, _: x.mean(axis=1)),
    "torch_mlir_mish": Program("main", args(normal(128, 128)), lambda x: x * np.tanh(np.log1p(np.exp(x)))),
    "torch_mlir_nll_loss_forward": Program("main", args(normal(3, 5), ints(0, 5, 3, dtype=np.int64)),
                                           lambda x, t: -x[np.arange(3), t].mean()),
    "torch_mlir_permute": Program("main", args(normal(128, 128), an_i64, an_i64), lambda x, *_: x.T),
    "torch_mlir_prelu": Program("main", args(normal(128, 128), normal(128)), lambda x, w: np.where(x > 0, x, w * x)),
    "torch_mlir_prod": Program("main", args(uniform(0.9, 1.1, 128, 128), an_i64), lambda x, _: x.prod(axis=1)),
    "torch_mlir_remainder": Program("main", args(normal(128, 128), uniform(0.5, 2, 128, 128)), np.fmod),
    "torch_mlir_roll": Program("main", args(normal(128, 128), an_i64, an_i64, an_i64, an_i64),
                               lambda x, *_: np.roll(x, (2, 1), axis=(0, 1))),
    "torch_mlir_sign": Program("main", args(lambda rng: np.round(rng.standard_normal((128, 128))).astype(np.float32)),
                               np.sign),
    "torch_mlir_silu": Program("main", args(normal(128, 128)), lambda x: x / (1 + np.exp(-x))),
    "torch_mlir_softmax": Program("main", args(normal(128, 128), an_i64), lambda x, _: softmax(x, 1)),
    "torch_mlir_threshold_backward": Program("main", args(normal(128, 128), normal(128, 128), lambda rng: 0.1),
                                             lambda g, x, _: np.where(x <= np.float32(0.1), 0, g)),
    "torch_mlir_trace": Program("main", args(normal(128, 128)), lambda x: np.trace(x)),
    "torch_mlir_tril": Program("main", args(normal(128, 128)), np.tril),
    "torch_mlir_var": Program("main", args(normal(128, 128)), lambda x: x.var(ddof=1)),
    "torch_mlir_where": Program("main", args(lambda rng: rng.integers(0, 2, (128, 128)).astype(bool),
                                             normal(128, 128), normal(128, 128)), np.where),
    "torch_mlir_eltwise_mul": Program("forward", args(normal(64, 128), normal(64, 128)), np.multiply),
    "torch_mlir_linear_bias": Program("forward", args(normal(128, 64), normal(128), normal(32, 64)),
                                      lambda w, b, x: (x @ w.T + b, x)),
}


def run_programs(names: list[str], folder: Path) -> None:
    """The child: compile, run and save each program, reporting on stdout before and after each."""
    import prism

    for name in names:
        print(json.dumps({"start": name}), flush=True)
        program = PROGRAMS[name]
        with np.load(folder / f"{name}.in.npz") as saved:
            inputs = [saved[f"arr_{i}"] for i in range(len(saved.files))]
        try:
            function = prism.compile(CORPUS / f"{name}.mlir", target="host").jit(program.func)
            results = function(*inputs)
        except prism.PrismError as error:
            report = {"error": type(error).__name__, "message": str(error), "location": error.location}
        except Exception:  # reported, so the test shows it
            report = {"error": "traceback", "message": traceback.format_exc(), "location": None}
        else:
            results = results if isinstance(results, tuple) else (results,)
            np.savez(folder / f"{name}.out.npz", *[np.asarray(r) for r in results])
            report = {"results": len(results)}
        print(json.dumps({"done": name, **report}), flush=True)


def run_children(names: list[str], folder: Path) -> dict[str, dict[str, Any]]:
    """Each program's report; a child that dies is recorded against the program it was running."""
    reports: dict[str, dict[str, Any]] = {}
    while len(reports) < len(names):
        rest = [n for n in names if n not in reports]
        done_before = len(reports)
        child = subprocess.run([sys.executable, __file__, str(folder), *rest], capture_output=True, text=True,
                               timeout=600)
        started = None
        for line in child.stdout.splitlines():
            record = json.loads(line)
            if "start" in record:
                started = record["start"]
            else:
                reports[record.pop("done")] = record
        if started is not None and started not in reports:
            reports[started] = {"error": f"the process died (exit {child.returncode})", "message": child.stderr,
                                "location": None}
        elif child.returncode and len(reports) == done_before:
            raise RuntimeError(f"the corpus child failed (exit {child.returncode}) before any program:\n"
                               f"{child.stderr}")
    return reports


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict[str, Arrays], dict[str, dict[str, Any]]]:
    """Every program's inputs, and its report from the child processes (compiled once each)."""
    seed = int(os.environ.get("PRISM_SEED", np.random.SeedSequence().entropy % 2**32))
    print(f"corpus: seed {seed} (replay with PRISM_SEED={seed})")
    rng = np.random.default_rng(seed)
    folder = tmp_path_factory.mktemp("corpus")
    inputs = {}
    for name, program in PROGRAMS.items():
        inputs[name] = tuple(np.asarray(a) for a in program.inputs(rng))
        np.savez(folder / f"{name}.in.npz", *inputs[name])
    reports = run_children(list(PROGRAMS), folder)
    for name, report in reports.items():
        if "results" in report:
            with np.load(folder / f"{name}.out.npz") as saved:
                report["arrays"] = tuple(saved[f"arr_{i}"] for i in range(report["results"]))
    return inputs, reports


def test_every_corpus_file_is_listed() -> None:
    assert sorted(p.stem for p in CORPUS.glob("*.mlir")) == sorted(PROGRAMS)


def test_every_corpus_file_names_its_source() -> None:
    for path in CORPUS.glob("*.mlir"):
        head = path.read_text().splitlines()[:5]
        assert head[0].startswith("// Source: ") and any("Licence: Apache-2.0" in line for line in head), path.name


def expected(program: Program, inputs: Arrays) -> Arrays:
    """The float64 (integers: int64) reference of ``program`` on ``inputs``."""
    wide = [a.astype(np.float64) if a.dtype.kind == "f" else a.astype(np.int64) if a.dtype.kind in "iu" else a
            for a in inputs]
    want = program.reference(*wide)
    return tuple(np.asarray(w) for w in (want if isinstance(want, tuple) else (want,)))


@pytest.mark.parametrize("name", [
    pytest.param(name, marks=pytest.mark.xfail(strict=True, reason=PROGRAMS[name].defect))
    if PROGRAMS[name].defect else name for name in sorted(PROGRAMS)])
def test_corpus_program(name: str, corpus: tuple[dict[str, Arrays], dict[str, dict[str, Any]]]) -> None:
    program = PROGRAMS[name]
    inputs, reports = corpus
    report = reports[name]
    if program.refused is not None:
        assert "error" in report and report["error"] != "traceback" and "died" not in report["error"], report
        assert program.refused in report["message"], report["message"]
        assert report["location"] and f"{name}.mlir:" in report["location"], report
        return
    assert "arrays" in report, f"{report.get('error')}: {report.get('message')}"
    want = expected(program, inputs[name])
    assert len(report["arrays"]) == len(want)
    for have, reference in zip(report["arrays"], want, strict=True):
        assert have.shape == reference.shape
        if have.dtype.kind == "f":
            scale = max(float(np.abs(reference).max(initial=0.0)), 1.0)
            np.testing.assert_allclose(have.astype(np.float64), reference, rtol=program.rtol,
                                       atol=program.atol if program.atol is not None else program.rtol * scale)
        else:
            np.testing.assert_array_equal(have, reference.astype(have.dtype))


if __name__ == "__main__":
    run_programs(sys.argv[2:], Path(sys.argv[1]))
