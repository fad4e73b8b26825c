"""The workloads of ``benchmarks/cpu.py``: each one as MLIR text, as an array program, and its random inputs.

A workload's array program is written once against a small ops adapter, so
that one definition serves the float64 numpy reference, numpy in float32,
torch eager and ``torch.compile``. Weights are ``{prism.invariant}``
arguments; activations are unmarked. Every tensor is f32 but those of the
``bf16-*`` workloads: bf16 arguments, products of bf16 operands accumulated
in f32, everything else in f32 (see :func:`bf16_gemm`).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import ml_dtypes
import numpy as np

LAYER_SHAPES = ((1, 4096), (8, 1024), (8, 2048), (8, 4096), (16, 1024), (16, 4096), (128, 4096))
ATTENTION_SHAPES = ((2, 8, 1, 1024, 128), (2, 8, 128, 1024, 128), (2, 32, 1, 1024, 128), (4, 8, 1, 1024, 128),
                    (1, 16, 512, 512, 64), (1, 16, 2048, 2048, 64), (1, 16, 1, 4096, 64))
# Attention written another way (the scale inside the row max and the exponent, as a graph compiler fuses
# it): the long-context shape.
SCALE_IN_MAX_SHAPES = ((1, 16, 1024, 1024, 64),)
# Causal attention (b, h, s, d): prefill of a prompt of s tokens.
CAUSAL_SHAPES = ((1, 16, 512, 64), (1, 16, 2048, 64))
# QK-norm attention (RMSNorm of each query and key over the head dimension first): prefill, a batch of
# prompts, decode.
QK_NORM_SHAPES = ((1, 16, 512, 512, 64), (2, 8, 128, 1024, 128), (1, 16, 1, 4096, 64))
# RMSNorm + SwiGLU MLP over (batch, sequence, model) activations, every op written over the batch and sequence
# loops (as a model's exporter writes a layer): the rows and widths of rmsnorm-mlp-8x1024 and -16x4096.
BATCHED_SHAPES = ((1, 8, 1024), (2, 8, 4096))
# Row ops alone (no contraction): RMSNorm of a batch of rows, and a softmax over attention-sized score rows.
ROW_SHAPES = {"rmsnorm": ((4096, 4096),), "softmax": ((16384, 1024),)}
# bf16 arguments, products accumulated in f32: a GEMM, the SwiGLU MLP (rows, model width), prefill attention.
BF16_SHAPES = {"gemm": (2048,), "swiglu": ((16, 4096),), "attention": ((1, 16, 2048, 2048, 64),)}
# A bf16 workload's result is right within this fraction of the output's scale (max|reference|). The float64
# reference computes on the same bf16 values, so the inputs' rounding does not count; what does: a bf16 result
# (torch's, SwiGLU's) is rounded to 8 bits of mantissa, 2**-9 ~ 2e-3 of its value; bf16 intermediates (SwiGLU's
# hidden activations, attention's probabilities, and all of torch's, its scores included) carry the same relative
# error into the next product, where thousands of such independent errors average out to a few 1e-3 of the output's
# scale. 2e-2 leaves room above those, and a wrong result (a missing scale, a transposed operand, a lost term) is off
# by O(1).
BF16_TOLERANCE = 2e-2
LORA_RANK = 16
EPS = 1e-6
# The --quick smoke test: small shapes, and every family of the geomean rows but RMSNorm+MLP.
QUICK = ("gemm-512", "decode-4096", "rmsnorm-linear-16x1024", "swiglu-16x1024", "qkv-16x1024", "lora-16x1024",
         "attention-2x8x1x1024x128")


class NumpyOps:
    """The few operations whose spelling differs between numpy and torch, for numpy arrays."""

    @staticmethod
    def exp(x: Any) -> Any:
        """``e ** x``."""
        return np.exp(x)

    @staticmethod
    def rsqrt(x: Any) -> Any:
        """``1 / sqrt(x)``."""
        return 1 / np.sqrt(x)

    @staticmethod
    def mean_last(x: Any) -> Any:
        """The mean over the last axis, kept."""
        return x.mean(axis=-1, keepdims=True)

    @staticmethod
    def max_last(x: Any) -> Any:
        """The maximum over the last axis, kept."""
        return x.max(axis=-1, keepdims=True)

    @staticmethod
    def sum_last(x: Any) -> Any:
        """The sum over the last axis, kept."""
        return x.sum(axis=-1, keepdims=True)

    @staticmethod
    def transpose_last(x: Any) -> Any:
        """The last two axes swapped."""
        return x.swapaxes(-1, -2)

    @staticmethod
    def silu(x: Any) -> Any:
        """``x * sigmoid(x)``."""
        return x / (1 + np.exp(-x))

    @staticmethod
    def causal(x: Any) -> Any:
        """-inf above the diagonal of the last two axes (key j after query i)."""
        rows, columns = x.shape[-2:]
        return np.where(np.arange(columns) <= np.arange(rows)[:, None], x, x.dtype.type(-np.inf))


class TorchOps:
    """The same operations for torch tensors (torch is imported only by whoever uses this)."""

    @staticmethod
    def exp(x: Any) -> Any:
        """``e ** x``."""
        return x.exp()

    @staticmethod
    def rsqrt(x: Any) -> Any:
        """``1 / sqrt(x)``."""
        return x.rsqrt()

    @staticmethod
    def mean_last(x: Any) -> Any:
        """The mean over the last axis, kept."""
        return x.mean(dim=-1, keepdim=True)

    @staticmethod
    def max_last(x: Any) -> Any:
        """The maximum over the last axis, kept."""
        return x.amax(dim=-1, keepdim=True)

    @staticmethod
    def sum_last(x: Any) -> Any:
        """The sum over the last axis, kept."""
        return x.sum(dim=-1, keepdim=True)

    @staticmethod
    def transpose_last(x: Any) -> Any:
        """The last two axes swapped."""
        return x.transpose(-1, -2)

    @staticmethod
    def silu(x: Any) -> Any:
        """``x * sigmoid(x)`` (torch's fused SiLU)."""
        import torch.nn.functional as F  # noqa: N812

        return F.silu(x)

    @staticmethod
    def causal(x: Any) -> Any:
        """-inf above the diagonal of the last two axes (key j after query i)."""
        import torch

        rows, columns = x.shape[-2:]
        return x.masked_fill(torch.ones(rows, columns, dtype=torch.bool).triu(1), float("-inf"))


Ops = type[NumpyOps] | type[TorchOps]


@dataclass(frozen=True)
class Arg:
    """One function argument: its random values are ``offset + scale * N(0, 1)``, rounded to ``dtype``
    (``f32`` or ``bf16``)."""

    name: str
    shape: tuple[int, ...]
    invariant: bool = False
    scale: float = 1.0
    offset: float = 0.0
    dtype: str = "f32"

    @property
    def nbytes(self) -> int:
        """Its size in bytes."""
        return ITEM_BYTES[self.dtype] * math.prod(self.shape)


ITEM_BYTES = {"f32": 4, "bf16": 2}
NUMPY_DTYPES = {"f32": np.float32, "bf16": ml_dtypes.bfloat16}


@dataclass(frozen=True)
class Workload:
    """A benchmark case.

    Attributes:
        name: e.g. ``swiglu-16x4096``; ``--only`` matches it.
        family: e.g. ``swiglu``.
        func: the MLIR function's name.
        args: the arguments in order (their names are the MLIR SSA names).
        mlir: the program as MLIR text.
        compute: ``compute(ops, *arrays)`` returns a tuple of outputs.
        flops: multiply-adds count 2, elementwise work is ignored.
        rows: the rows of activations per weight (M of a GEMM, queries per head for attention).
        memory_bound: its bytes bound its time whatever ``rows`` is (row ops alone): report GB/s.
        attention: for attention workloads, ``attention(ops, *arrays)`` gives the q, k and v of its attention
            (after any prologue, QK-norm's), for the contenders that call a fused attention instead.
        causal: its attention masks key j for query i when j > i.
        tolerance: the largest error of a right result, relative to max|reference| (None: the harness's
            default, meant for f32).
    """

    name: str
    family: str
    func: str
    args: tuple[Arg, ...]
    mlir: str
    compute: Callable[..., tuple[Any, ...]]
    flops: int
    rows: int
    memory_bound: bool = False
    attention: Callable[..., tuple[Any, Any, Any]] | None = None
    causal: bool = False
    tolerance: float | None = None

    @property
    def dtype(self) -> str:
        """``bf16`` if an argument is bf16, else ``f32``."""
        return "bf16" if any(a.dtype == "bf16" for a in self.args) else "f32"

    @property
    def weights(self) -> tuple[Arg, ...]:
        """The ``{prism.invariant}`` arguments, in order."""
        return tuple(a for a in self.args if a.invariant)

    @property
    def activations(self) -> tuple[Arg, ...]:
        """The other arguments, in order."""
        return tuple(a for a in self.args if not a.invariant)

    @property
    def nbytes(self) -> int:
        """Bytes of every argument: what one call must read at least."""
        return sum(a.nbytes for a in self.args)

    def inputs(self, rng: np.random.Generator) -> dict[str, np.ndarray]:
        """Fresh values for every argument (f32, or bf16 as ``ml_dtypes.bfloat16``), O(1) after each
        contraction."""
        return {a.name: (a.offset + a.scale * rng.standard_normal(a.shape, np.float32)).astype(NUMPY_DTYPES[a.dtype])
                for a in self.args}


# ---- MLIR text --------------------------------------------------------------------------------------------------

def _t(*shape: int, dtype: str = "f32") -> str:
    return f"tensor<{'x'.join(map(str, shape))}x{dtype}>"


def _f32(value: float) -> str:
    return f"{value:.9e}"


def _function(name: str, args: Sequence[Arg], results: Sequence[tuple[Any, ...]],
              body: Sequence[str], maps: dict[str, str] | None = None) -> str:
    """A module of one func.func: ``maps`` are affine-map aliases, ``body`` its lines (``%zero`` is defined);
    ``results`` are ``(name, shape)``, f32, or ``(name, shape, element type)``."""
    params = ", ".join(f"%{a.name}: {_t(*a.shape, dtype=a.dtype)}" + (" {prism.invariant}" if a.invariant else "")
                       for a in args)
    types = ", ".join(_t(*r[1], dtype=r[2] if len(r) > 2 else "f32") for r in results)
    lines = [f"#{alias} = affine_map<{m}>" for alias, m in (maps or {}).items()]
    lines.append(f"func.func @{name}({params}) -> ({types}) {{")
    lines.append("  %zero = arith.constant 0.0 : f32")
    lines += [f"  {line}" for line in body]
    lines.append(f"  return {', '.join('%' + r[0] for r in results)} : {types}")
    lines.append("}")
    return "\n".join(lines) + "\n"


def _matmul(out: str, lhs: str, rhs: str, m: int, k: int, n: int, operands: str = "f32") -> list[str]:
    """``%out = lhs @ rhs``, f32, of operands of the element type ``operands`` (linalg.matmul extends them)."""
    return [
        f"%{out}_empty = tensor.empty() : {_t(m, n)}",
        f"%{out}_zero = linalg.fill ins(%zero : f32) outs(%{out}_empty : {_t(m, n)}) -> {_t(m, n)}",
        f"%{out} = linalg.matmul ins(%{lhs}, %{rhs} : {_t(m, k, dtype=operands)}, {_t(k, n, dtype=operands)}) "
        f"outs(%{out}_zero : {_t(m, n)}) -> {_t(m, n)}",
    ]


def _generic(out: str, maps: Sequence[str], iterators: Sequence[str], ins: Sequence[tuple[str, tuple[int, ...]]],
             init: str, shape: tuple[int, ...], block: Sequence[str], in_dtype: str = "f32",
             out_dtype: str = "f32") -> list[str]:
    """A linalg.generic; ``block`` computes ``%r`` from the block arguments ``%a0``, ``%a1``, ... and ``%acc``.
    Its inputs are of the element type ``in_dtype``, its init and result of ``out_dtype``."""
    kinds = ", ".join(f'"{i}"' for i in iterators)
    operands = ", ".join(f"%{name}" for name, _ in ins)
    types = ", ".join(_t(*s, dtype=in_dtype) for _, s in ins)
    block_args = ", ".join([f"%a{i}: {in_dtype}" for i in range(len(ins))] + [f"%acc: {out_dtype}"])
    return [
        f"%{out} = linalg.generic {{indexing_maps = [{', '.join('#' + m for m in maps)}], iterator_types = [{kinds}]}}",
        f"    ins({operands} : {types}) outs(%{init} : {_t(*shape, dtype=out_dtype)}) {{",
        f"^bb0({block_args}):",
        *(f"  {line}" for line in block),
        f"  linalg.yield %r : {out_dtype}",
        f"}} -> {_t(*shape, dtype=out_dtype)}",
    ]


ROW_MAPS = {"rows": "(i, j) -> (i, j)", "row": "(i, j) -> (i)", "col": "(i, j) -> (j)", "vec": "(i) -> (i)"}


def _rmsnorm(out: str, x: str, g: str, n: int, d: int) -> list[str]:
    """``out = x * rsqrt(mean(x^2) + eps) * g``, row by row (uses ROW_MAPS)."""
    return [
        f"%{out}_inv_d = arith.constant {_f32(1 / d)} : f32",
        f"%{out}_eps = arith.constant {_f32(EPS)} : f32",
        f"%{out}_rows_empty = tensor.empty() : {_t(n)}",
        f"%{out}_rows_zero = linalg.fill ins(%zero : f32) outs(%{out}_rows_empty : {_t(n)}) -> {_t(n)}",
        *_generic(f"{out}_sum_sq", ["rows", "row"], ["parallel", "reduction"], [(x, (n, d))], f"{out}_rows_zero",
                  (n,), ["%sq = arith.mulf %a0, %a0 : f32", "%r = arith.addf %acc, %sq : f32"]),
        *_generic(f"{out}_scale", ["vec", "vec"], ["parallel"], [(f"{out}_sum_sq", (n,))], f"{out}_rows_empty", (n,),
                  [f"%mean = arith.mulf %a0, %{out}_inv_d : f32", f"%shifted = arith.addf %mean, %{out}_eps : f32",
                   "%r = math.rsqrt %shifted : f32"]),
        f"%{out}_empty = tensor.empty() : {_t(n, d)}",
        *_generic(out, ["rows", "row", "col", "rows"], ["parallel", "parallel"],
                  [(x, (n, d)), (f"{out}_scale", (n,)), (g, (d,))], f"{out}_empty", (n, d),
                  ["%normed = arith.mulf %a0, %a1 : f32", "%r = arith.mulf %normed, %a2 : f32"]),
    ]


def _swiglu(out: str, x: str, n: int, d: int, hidden: int) -> list[str]:
    """``out = (silu(x @ wg) * (x @ wu)) @ wd`` (uses ROW_MAPS)."""
    return [
        "%one = arith.constant 1.0 : f32",
        *_matmul("gate", x, "wg", n, d, hidden),
        *_matmul("up", x, "wu", n, d, hidden),
        *_generic("h", ["rows", "rows", "rows"], ["parallel", "parallel"], [("gate", (n, hidden)), ("up", (n, hidden))],
                  "gate_empty", (n, hidden),
                  ["%neg = arith.negf %a0 : f32", "%e = math.exp %neg : f32", "%den = arith.addf %one, %e : f32",
                   "%silu = arith.divf %a0, %den : f32", "%r = arith.mulf %silu, %a1 : f32"]),
        *_matmul(out, "h", "wd", n, hidden, d),
    ]


def _bf16_swiglu(out: str, x: str, n: int, d: int, hidden: int) -> list[str]:
    """``out = (silu(x @ wg) * (x @ wu)) @ wd`` of bf16 arguments: the gate and up products in f32, SiLU and the
    product in f32, rounded to bf16 for the down product, into f32 (uses ROW_MAPS)."""
    return [
        "%one = arith.constant 1.0 : f32",
        *_matmul("gate", x, "wg", n, d, hidden, operands="bf16"),
        *_matmul("up", x, "wu", n, d, hidden, operands="bf16"),
        f"%h_empty = tensor.empty() : {_t(n, hidden, dtype='bf16')}",
        *_generic("h", ["rows", "rows", "rows"], ["parallel", "parallel"], [("gate", (n, hidden)), ("up", (n, hidden))],
                  "h_empty", (n, hidden),
                  ["%neg = arith.negf %a0 : f32", "%e = math.exp %neg : f32", "%den = arith.addf %one, %e : f32",
                   "%silu = arith.divf %a0, %den : f32", "%hf = arith.mulf %silu, %a1 : f32",
                   "%r = arith.truncf %hf : f32 to bf16"], out_dtype="bf16"),
        *_matmul(out, "h", "wd", n, hidden, d, operands="bf16"),
    ]


# ---- The workloads ----------------------------------------------------------------------------------------------

def _weight(name: str, rows: int, cols: int) -> Arg:
    return Arg(name, (rows, cols), invariant=True, scale=1 / math.sqrt(rows))


def _gamma(d: int) -> Arg:
    return Arg("g", (d,), invariant=True, scale=0.1, offset=1.0)


def hidden_size(d: int) -> int:
    """The SwiGLU hidden width: 8d/3 rounded, then up to a multiple of 256 (2816 for d = 1024)."""
    return -(-round(8 * d / 3) // 256) * 256


def _rmsnorm_array(ops: Ops, x: Any, g: Any) -> Any:
    return x * ops.rsqrt(ops.mean_last(x * x) + EPS) * g


def _swiglu_array(ops: Ops, x: Any, wg: Any, wu: Any, wd: Any) -> Any:
    gate = x @ wg
    return (gate / (1 + ops.exp(-gate)) * (x @ wu)) @ wd


def gemm(name: str, m: int, k: int, n: int) -> Workload:
    """``x @ w``, the weight invariant."""
    args = (Arg("x", (m, k)), _weight("w", k, n))
    mlir = _function("gemm", args, [("y", (m, n))], _matmul("y", "x", "w", m, k, n))
    return Workload(name, "gemm", "gemm", args, mlir, lambda ops, x, w: (x @ w,), 2 * m * k * n, m)


def rmsnorm_linear(n: int, d: int) -> Workload:
    """RMSNorm of the rows of x (gain g), then ``@ w``."""
    args = (Arg("x", (n, d)), _gamma(d), _weight("w", d, d))
    body = [*_rmsnorm("y", "x", "g", n, d), *_matmul("out", "y", "w", n, d, d)]
    return Workload(f"rmsnorm-linear-{n}x{d}", "rmsnorm-linear", "rmsnorm_linear", args,
                    _function("rmsnorm_linear", args, [("out", (n, d))], body, ROW_MAPS),
                    lambda ops, x, g, w: (_rmsnorm_array(ops, x, g) @ w,), 2 * n * d * d, n)


def rmsnorm(n: int, d: int) -> Workload:
    """RMSNorm of the rows of x (gain g) alone: statistics, rsqrt, normalization."""
    args = (Arg("x", (n, d)), _gamma(d))
    return Workload(f"rmsnorm-{n}x{d}", "rmsnorm", "rmsnorm", args,
                    _function("rmsnorm", args, [("y", (n, d))], _rmsnorm("y", "x", "g", n, d), ROW_MAPS),
                    lambda ops, x, g: (_rmsnorm_array(ops, x, g),), 0, n, memory_bound=True)


def softmax(n: int, d: int) -> Workload:
    """A softmax over the rows of x, as four generics: max, exp of the difference, sum, division."""
    args = (Arg("x", (n, d), scale=4.0),)
    full, row, par, red = (n, d), (n,), ["parallel", "parallel"], ["parallel", "reduction"]
    body = [
        "%ninf = arith.constant 0xFF800000 : f32",
        f"%row_empty = tensor.empty() : {_t(*row)}",
        f"%row_ninf = linalg.fill ins(%ninf : f32) outs(%row_empty : {_t(*row)}) -> {_t(*row)}",
        f"%row_zero = linalg.fill ins(%zero : f32) outs(%row_empty : {_t(*row)}) -> {_t(*row)}",
        f"%e_empty = tensor.empty() : {_t(*full)}",
        *_generic("m", ["rows", "row"], red, [("x", full)], "row_ninf", row, ["%r = arith.maximumf %acc, %a0 : f32"]),
        *_generic("e", ["rows", "row", "rows"], par, [("x", full), ("m", row)], "e_empty", full,
                  ["%shifted = arith.subf %a0, %a1 : f32", "%r = math.exp %shifted : f32"]),
        *_generic("l", ["rows", "row"], red, [("e", full)], "row_zero", row, ["%r = arith.addf %acc, %a0 : f32"]),
        *_generic("y", ["rows", "row", "rows"], par, [("e", full), ("l", row)], "e_empty", full,
                  ["%r = arith.divf %a0, %a1 : f32"]),
    ]

    def compute(ops: Ops, x: Any) -> tuple[Any]:
        e = ops.exp(x - ops.max_last(x))
        return (e / ops.sum_last(e),)

    return Workload(f"softmax-{n}x{d}", "softmax", "softmax", args,
                    _function("softmax", args, [("y", full)], body, ROW_MAPS), compute, 0, n, memory_bound=True)


def swiglu(n: int, d: int) -> Workload:
    """The SwiGLU MLP ``(silu(x @ wg) * (x @ wu)) @ wd``."""
    hidden = hidden_size(d)
    args = (Arg("x", (n, d)), _weight("wg", d, hidden), _weight("wu", d, hidden), _weight("wd", hidden, d))
    return Workload(f"swiglu-{n}x{d}", "swiglu", "swiglu", args,
                    _function("swiglu", args, [("out", (n, d))], _swiglu("out", "x", n, d, hidden), ROW_MAPS),
                    lambda ops, x, wg, wu, wd: (_swiglu_array(ops, x, wg, wu, wd),), 6 * n * d * hidden, n)


def rmsnorm_mlp(n: int, d: int) -> Workload:
    """RMSNorm, then the SwiGLU MLP."""
    hidden = hidden_size(d)
    args = (Arg("x", (n, d)), _gamma(d), _weight("wg", d, hidden), _weight("wu", d, hidden),
            _weight("wd", hidden, d))
    body = [*_rmsnorm("y", "x", "g", n, d), *_swiglu("out", "y", n, d, hidden)]
    return Workload(f"rmsnorm-mlp-{n}x{d}", "rmsnorm-mlp", "rmsnorm_mlp", args,
                    _function("rmsnorm_mlp", args, [("out", (n, d))], body, ROW_MAPS),
                    lambda ops, x, g, wg, wu, wd: (_swiglu_array(ops, _rmsnorm_array(ops, x, g), wg, wu, wd),),
                    6 * n * d * hidden, n)


# The maps of ops over (batch, sequence) rows: products over (b, s, n, k), row ops over (b, s, j).
BATCHED_MAPS = {"act": "(b, s, n, k) -> (b, s, k)", "weight": "(b, s, n, k) -> (k, n)",
                "prod": "(b, s, n, k) -> (b, s, n)", "all": "(b, s, j) -> (b, s, j)", "row": "(b, s, j) -> (b, s)",
                "col": "(b, s, j) -> (j)", "rows": "(b, s) -> (b, s)"}


def _batched_product(out: str, x: str, w: str, rows: tuple[int, int], k: int, n: int) -> list[str]:
    """``%out = x @ w`` for activations of ``rows + (k,)``, as a generic over both row loops (uses BATCHED_MAPS)."""
    shape = (*rows, n)
    return [
        f"%{out}_empty = tensor.empty() : {_t(*shape)}",
        f"%{out}_zero = linalg.fill ins(%zero : f32) outs(%{out}_empty : {_t(*shape)}) -> {_t(*shape)}",
        *_generic(out, ["act", "weight", "prod"], ["parallel", "parallel", "parallel", "reduction"],
                  [(x, (*rows, k)), (w, (k, n))], f"{out}_zero", shape,
                  ["%m = arith.mulf %a0, %a1 : f32", "%r = arith.addf %acc, %m : f32"]),
    ]


def rmsnorm_mlp_batched(b: int, s: int, d: int) -> Workload:
    """RMSNorm, then the SwiGLU MLP, of ``b x s x d`` activations, written over the batch and sequence loops."""
    hidden, rows = hidden_size(d), (b, s)
    args = (Arg("x", (b, s, d)), _gamma(d), _weight("wg", d, hidden), _weight("wu", d, hidden),
            _weight("wd", hidden, d))
    body = [
        f"%inv_d = arith.constant {_f32(1 / d)} : f32",
        f"%eps = arith.constant {_f32(EPS)} : f32",
        "%one = arith.constant 1.0 : f32",
        f"%rows_empty = tensor.empty() : {_t(*rows)}",
        f"%rows_zero = linalg.fill ins(%zero : f32) outs(%rows_empty : {_t(*rows)}) -> {_t(*rows)}",
        *_generic("sum_sq", ["all", "row"], ["parallel", "parallel", "reduction"], [("x", (*rows, d))], "rows_zero",
                  rows, ["%sq = arith.mulf %a0, %a0 : f32", "%r = arith.addf %acc, %sq : f32"]),
        *_generic("scale", ["rows", "rows"], ["parallel", "parallel"], [("sum_sq", rows)], "rows_empty", rows,
                  ["%mean = arith.mulf %a0, %inv_d : f32", "%shifted = arith.addf %mean, %eps : f32",
                   "%r = math.rsqrt %shifted : f32"]),
        f"%y_empty = tensor.empty() : {_t(*rows, d)}",
        *_generic("y", ["all", "row", "col", "all"], ["parallel"] * 3, [("x", (*rows, d)), ("scale", rows),
                                                                       ("g", (d,))], "y_empty", (*rows, d),
                  ["%normed = arith.mulf %a0, %a1 : f32", "%r = arith.mulf %normed, %a2 : f32"]),
        *_batched_product("gate", "y", "wg", rows, d, hidden),
        *_batched_product("up", "y", "wu", rows, d, hidden),
        *_generic("h", ["all", "all", "all"], ["parallel"] * 3, [("gate", (*rows, hidden)), ("up", (*rows, hidden))],
                  "gate_empty", (*rows, hidden),
                  ["%neg = arith.negf %a0 : f32", "%e = math.exp %neg : f32", "%den = arith.addf %one, %e : f32",
                   "%silu = arith.divf %a0, %den : f32", "%r = arith.mulf %silu, %a1 : f32"]),
        *_batched_product("out", "h", "wd", rows, hidden, d),
    ]
    return Workload(f"rmsnorm-mlp-{b}x{s}x{d}", "rmsnorm-mlp-batched", "rmsnorm_mlp", args,
                    _function("rmsnorm_mlp", args, [("out", (*rows, d))], body, BATCHED_MAPS),
                    lambda ops, x, g, wg, wu, wd: (_swiglu_array(ops, _rmsnorm_array(ops, x, g), wg, wu, wd),),
                    6 * b * s * d * hidden, b * s)


def qkv(n: int, d: int) -> Workload:
    """Three projections of one x: ``x @ wq`` (d x d), ``x @ wk`` and ``x @ wv`` (d x d/4)."""
    kv = d // 4
    args = (Arg("x", (n, d)), _weight("wq", d, d), _weight("wk", d, kv), _weight("wv", d, kv))
    body = [*_matmul("q", "x", "wq", n, d, d), *_matmul("k", "x", "wk", n, d, kv), *_matmul("v", "x", "wv", n, d, kv)]
    return Workload(f"qkv-{n}x{d}", "qkv", "qkv", args,
                    _function("qkv", args, [("q", (n, d)), ("k", (n, kv)), ("v", (n, kv))], body),
                    lambda ops, x, wq, wk, wv: (x @ wq, x @ wk, x @ wv), 2 * n * d * (d + 2 * kv), n)


def lora(n: int, d: int) -> Workload:
    """LoRA of rank 16: ``x @ w + (x @ a) @ b``."""
    r = LORA_RANK
    args = (Arg("x", (n, d)), _weight("w", d, d), _weight("a", d, r), _weight("b", r, d))
    body = [*_matmul("base", "x", "w", n, d, d), *_matmul("down", "x", "a", n, d, r),
            *_matmul("up", "down", "b", n, r, d),
            # A generic, not linalg.add: IREE 3.13 no longer parses linalg.add.
            *_generic("out", ["rows", "rows", "rows"], ["parallel", "parallel"], [("base", (n, d)), ("up", (n, d))],
                      "base_empty", (n, d), ["%r = arith.addf %a0, %a1 : f32"])]
    return Workload(f"lora-{n}x{d}", "lora", "lora", args, _function("lora", args, [("out", (n, d))], body, ROW_MAPS),
                    lambda ops, x, w, a, b: (x @ w + (x @ a) @ b,), 2 * n * d * (d + 2 * r), n)


ATTENTION_MAPS = {
    "q5": "(b, h, i, j, k) -> (b, h, i, k)", "k5": "(b, h, i, j, k) -> (b, h, j, k)",
    "s5": "(b, h, i, j, k) -> (b, h, i, j)", "all4": "(b, h, i, j) -> (b, h, i, j)",
    "row4": "(b, h, i, j) -> (b, h, i)", "v5": "(b, h, i, e, j) -> (b, h, j, e)",
    "p5": "(b, h, i, e, j) -> (b, h, i, j)", "o5": "(b, h, i, e, j) -> (b, h, i, e)",
    "col4": "(b, h, i, j) -> (j)", "all3": "(b, h, i) -> (b, h, i)",
}


def attention(b: int, h: int, q: int, kv: int, d: int) -> Workload:
    """``softmax(Q K^T / sqrt(d)) V`` as linalg.generic ops: contraction, max, exp, sum, contraction, divide."""
    args = (Arg("q", (b, h, q, d)), Arg("k", (b, h, kv, d)), Arg("v", (b, h, kv, d)))
    return Workload(f"attention-{b}x{h}x{q}x{kv}x{d}", "attention", "attention", args,
                    _function("attention", args, [("out", (b, h, q, d))], _attention("q", "k", "v", args),
                              ATTENTION_MAPS),
                    _attention_array, 4 * b * h * q * kv * d, q, attention=lambda ops, q, k, v: (q, k, v))


def scale_in_max_attention(b: int, h: int, q: int, kv: int, d: int) -> Workload:
    """Attention with the scale applied inside each consumer of the raw scores: ``m = max(s c)``,
    ``p = exp(s c - m)``, normalized after P V. The same function as :func:`attention`, spelled otherwise."""
    args = (Arg("q", (b, h, q, d)), Arg("k", (b, h, kv, d)), Arg("v", (b, h, kv, d)))
    return Workload(f"scale-in-max-attention-{b}x{h}x{q}x{kv}x{d}", "scale-in-max-attention", "attention", args,
                    _function("attention", args, [("out", (b, h, q, d))],
                              _attention("q", "k", "v", args, scale_in_max=True), ATTENTION_MAPS),
                    _attention_array, 4 * b * h * q * kv * d, q, attention=lambda ops, q, k, v: (q, k, v))


def causal_attention(b: int, h: int, s: int, d: int) -> Workload:
    """Attention over ``s`` queries and keys with a causal mask (key j for query i when j <= i) on the scores,
    written with ``linalg.index``: half the pairs weigh."""
    args = (Arg("q", (b, h, s, d)), Arg("k", (b, h, s, d)), Arg("v", (b, h, s, d)))
    body = _attention("q", "k", "v", args, causal=True)
    return Workload(f"causal-attention-{b}x{h}x{s}x{s}x{d}", "causal-attention", "attention", args,
                    _function("attention", args, [("out", (b, h, s, d))], body, ATTENTION_MAPS),
                    lambda ops, q, k, v: _attention_array(ops, q, k, v, causal=True), 2 * b * h * s * (s + 1) * d, s,
                    attention=lambda ops, q, k, v: (q, k, v), causal=True)


def qk_norm_attention(b: int, h: int, q: int, kv: int, d: int) -> Workload:
    """Attention whose queries and keys are each RMSNorm-ed over the head dimension (gains gq, gk) first."""
    args = (Arg("q", (b, h, q, d)), Arg("k", (b, h, kv, d)), Arg("v", (b, h, kv, d)),
            Arg("gq", (d,), invariant=True, scale=0.1, offset=1.0), Arg("gk", (d,), invariant=True, scale=0.1,
                                                                       offset=1.0))
    body = [*_rmsnorm4("qn", "q", "gq", (b, h, q, d)), *_rmsnorm4("kn", "k", "gk", (b, h, kv, d)),
            *_attention("qn", "kn", "v", args)]
    return Workload(f"qk-norm-attention-{b}x{h}x{q}x{kv}x{d}", "qk-norm-attention", "qk_norm_attention", args,
                    _function("qk_norm_attention", args, [("out", (b, h, q, d))], body, ATTENTION_MAPS),
                    lambda ops, q, k, v, gq, gk: _attention_array(ops, _rmsnorm_array(ops, q, gq),
                                                                  _rmsnorm_array(ops, k, gk), v),
                    4 * b * h * q * kv * d, q,
                    attention=lambda ops, q, k, v, gq, gk: (_rmsnorm_array(ops, q, gq), _rmsnorm_array(ops, k, gk), v))


def _rmsnorm4(out: str, x: str, g: str, shape: tuple[int, int, int, int]) -> list[str]:
    """RMSNorm over the last axis of a 4-D tensor (uses ATTENTION_MAPS)."""
    rows, d = shape[:3], shape[3]
    par, red = ["parallel"] * 3, ["reduction"]
    return [
        f"%{out}_inv_d = arith.constant {_f32(1 / d)} : f32",
        f"%{out}_eps = arith.constant {_f32(EPS)} : f32",
        f"%{out}_rows_empty = tensor.empty() : {_t(*rows)}",
        f"%{out}_rows_zero = linalg.fill ins(%zero : f32) outs(%{out}_rows_empty : {_t(*rows)}) -> {_t(*rows)}",
        *_generic(f"{out}_sum_sq", ["all4", "row4"], par + red, [(x, shape)], f"{out}_rows_zero", rows,
                  ["%sq = arith.mulf %a0, %a0 : f32", "%r = arith.addf %acc, %sq : f32"]),
        *_generic(f"{out}_scale", ["all3", "all3"], par, [(f"{out}_sum_sq", rows)], f"{out}_rows_empty", rows,
                  [f"%mean = arith.mulf %a0, %{out}_inv_d : f32", f"%shifted = arith.addf %mean, %{out}_eps : f32",
                   "%r = math.rsqrt %shifted : f32"]),
        f"%{out}_empty = tensor.empty() : {_t(*shape)}",
        *_generic(out, ["all4", "row4", "col4", "all4"], par + ["parallel"],
                  [(x, shape), (f"{out}_scale", rows), (g, (d,))], f"{out}_empty", shape,
                  ["%normed = arith.mulf %a0, %a1 : f32", "%r = arith.mulf %normed, %a2 : f32"]),
    ]


def _dot(operands: str) -> list[str]:
    """A contraction's block: ``%acc + %a0 %a1`` in f32, the operands extended to f32 first if they are not."""
    if operands == "f32":
        return ["%prod = arith.mulf %a0, %a1 : f32", "%r = arith.addf %acc, %prod : f32"]
    return [f"%x0 = arith.extf %a0 : {operands} to f32", f"%x1 = arith.extf %a1 : {operands} to f32",
            "%prod = arith.mulf %x0, %x1 : f32", "%r = arith.addf %acc, %prod : f32"]


def _attention(q_name: str, k_name: str, v_name: str, args: Sequence[Arg], causal: bool = False,
               scale_in_max: bool = False) -> list[str]:
    """The six ops of attention over ``q_name``, ``k_name`` and ``v_name`` (shaped as ``args[:3]``), into %out;
    with ``causal``, a seventh masks the scores (-inf where key j comes after query i); with ``scale_in_max``,
    the row max and the exponent each scale the raw scores themselves. With bf16 arguments, the products are of
    bf16 operands into f32, and a seventh op rounds the (unnormalized) probabilities to bf16 for P V."""
    operands = args[0].dtype
    b, h, q, d = args[0].shape
    kv = args[1].shape[2]
    scores, rows, out = (b, h, q, kv), (b, h, q), (b, h, q, d)
    par4, red = ["parallel"] * 4, ["reduction"]
    mask = [*_generic("sm", ["all4", "all4"], par4, [("s", scores)], "s_empty", scores,
                      ["%i = linalg.index 2 : index", "%j = linalg.index 3 : index",
                       "%keep = arith.cmpi ule, %j, %i : index", "%r = arith.select %keep, %a0, %ninf : f32"])]
    s = "sm" if causal else "s"
    return [
        "%ninf = arith.constant 0xFF800000 : f32",
        f"%scale = arith.constant {_f32(1 / math.sqrt(d))} : f32",
        f"%s_empty = tensor.empty() : {_t(*scores)}",
        f"%s_zero = linalg.fill ins(%zero : f32) outs(%s_empty : {_t(*scores)}) -> {_t(*scores)}",
        *_generic("s", ["q5", "k5", "s5"], par4 + red, [(q_name, args[0].shape), (k_name, args[1].shape)], "s_zero",
                  scores, _dot(operands), in_dtype=operands),
        *(mask if causal else []),
        f"%row_empty = tensor.empty() : {_t(*rows)}",
        f"%row_ninf = linalg.fill ins(%ninf : f32) outs(%row_empty : {_t(*rows)}) -> {_t(*rows)}",
        f"%row_zero = linalg.fill ins(%zero : f32) outs(%row_empty : {_t(*rows)}) -> {_t(*rows)}",
        *_generic("m", ["all4", "row4"], par4[:3] + red, [(s, scores)], "row_ninf", rows,
                  ["%scaled = arith.mulf %a0, %scale : f32", "%r = arith.maximumf %acc, %scaled : f32"]
                  if scale_in_max else ["%r = arith.maximumf %acc, %a0 : f32"]),
        *_generic("p", ["all4", "row4", "all4"], par4, [(s, scores), ("m", rows)], "s_empty", scores,
                  ["%scaled = arith.mulf %a0, %scale : f32", "%shifted = arith.subf %scaled, %a1 : f32",
                   "%r = math.exp %shifted : f32"] if scale_in_max else
                  ["%shifted = arith.subf %a0, %a1 : f32", "%scaled = arith.mulf %shifted, %scale : f32",
                   "%r = math.exp %scaled : f32"]),
        *_generic("l", ["all4", "row4"], par4[:3] + red, [("p", scores)], "row_zero", rows,
                  ["%r = arith.addf %acc, %a0 : f32"]),
        f"%o_empty = tensor.empty() : {_t(*out)}",
        f"%o_zero = linalg.fill ins(%zero : f32) outs(%o_empty : {_t(*out)}) -> {_t(*out)}",
        *(_round_bf16("p", scores) if operands == "bf16" else []),
        *_generic("o", ["p5", "v5", "o5"], par4 + red, [("p_bf16" if operands == "bf16" else "p", scores),
                                                        (v_name, args[2].shape)], "o_zero", out, _dot(operands),
                  in_dtype=operands),
        *_generic("out", ["all4", "row4", "all4"], par4, [("o", out), ("l", rows)], "o_empty", out,
                  ["%r = arith.divf %a0, %a1 : f32"]),
    ]


def _round_bf16(name: str, shape: tuple[int, ...]) -> list[str]:
    """``%{name}_bf16 = arith.truncf %{name}`` (f32 to bf16, elementwise; ``all4`` or ``rows`` by the rank)."""
    alias = {2: "rows", 4: "all4"}[len(shape)]
    par = ["parallel"] * len(shape)
    return [f"%{name}_bf16_empty = tensor.empty() : {_t(*shape, dtype='bf16')}",
            *_generic(f"{name}_bf16", [alias, alias], par, [(name, shape)], f"{name}_bf16_empty", shape,
                      ["%r = arith.truncf %a0 : f32 to bf16"], out_dtype="bf16")]


def _attention_array(ops: Ops, q: Any, k: Any, v: Any, causal: bool = False) -> tuple[Any]:
    s = (q @ ops.transpose_last(k)) * (1 / math.sqrt(q.shape[-1]))
    if causal:
        s = ops.causal(s)
    p = ops.exp(s - ops.max_last(s))
    return ((p / ops.sum_last(p)) @ v,)


def _bf16(arg: Arg) -> Arg:
    return Arg(arg.name, arg.shape, arg.invariant, arg.scale, arg.offset, dtype="bf16")


def bf16_gemm(n: int) -> Workload:
    """``x @ w`` of bf16 n x n operands (the weight invariant) into f32, as ``linalg.matmul`` of bf16 operands
    into an f32 fill.

    bf16 workloads have bf16 arguments; their products accumulate in f32. This one returns the f32 sums (a
    frontend would round them to bf16 only for a bf16 result: see :func:`bf16_swiglu`). The float64 reference
    computes on the same (bf16) values, so only the arithmetic counts in the error: see BF16_TOLERANCE.
    """
    args = (_bf16(Arg("x", (n, n))), _bf16(_weight("w", n, n)))
    mlir = _function("gemm", args, [("y", (n, n))], _matmul("y", "x", "w", n, n, n, operands="bf16"))
    return Workload(f"bf16-gemm-{n}", "bf16-gemm", "gemm", args, mlir, lambda ops, x, w: (x @ w,), 2 * n ** 3, n,
                    tolerance=BF16_TOLERANCE)


def bf16_swiglu(n: int, d: int) -> Workload:
    """The SwiGLU MLP of bf16 arguments (the hidden width of :func:`swiglu`): gate and up products into f32, SiLU
    and their product in f32 (``arith.truncf`` to bf16 for the down product), the down product into f32, rounded
    to a bf16 result: the layer of a bf16 model as torch-mlir lowers it (an f32 accumulator for a bf16 matmul,
    then ``arith.truncf`` to the bf16 type of its result; torch returns bf16 too)."""
    hidden = hidden_size(d)
    args = tuple(map(_bf16, (Arg("x", (n, d)), _weight("wg", d, hidden), _weight("wu", d, hidden),
                             _weight("wd", hidden, d))))
    body = [*_bf16_swiglu("out", "x", n, d, hidden), *_round_bf16("out", (n, d))]
    return Workload(f"bf16-swiglu-{n}x{d}", "bf16-swiglu", "swiglu", args,
                    _function("swiglu", args, [("out_bf16", (n, d), "bf16")], body, ROW_MAPS),
                    lambda ops, x, wg, wu, wd: (((ops.silu(x @ wg) * (x @ wu)) @ wd),), 6 * n * d * hidden, n,
                    tolerance=BF16_TOLERANCE)


def bf16_attention(b: int, h: int, q: int, kv: int, d: int) -> Workload:
    """Attention of bf16 Q, K, V: scores by a product of bf16 operands into f32, the softmax in f32, its
    probabilities (before the division by the row sum) rounded to bf16 for P V into f32."""
    args = tuple(_bf16(Arg(name, (b, h, rows, d))) for name, rows in (("q", q), ("k", kv), ("v", kv)))
    return Workload(f"bf16-attention-{b}x{h}x{q}x{kv}x{d}", "bf16-attention", "attention", args,
                    _function("attention", args, [("out", (b, h, q, d))], _attention("q", "k", "v", args),
                              ATTENTION_MAPS),
                    _attention_array, 4 * b * h * q * kv * d, q, attention=lambda ops, q, k, v: (q, k, v),
                    tolerance=BF16_TOLERANCE)


def bf16_workloads() -> list[Workload]:
    """The bf16 workloads (BF16_SHAPES)."""
    return [*(bf16_gemm(n) for n in BF16_SHAPES["gemm"]), *(bf16_swiglu(*s) for s in BF16_SHAPES["swiglu"]),
            *(bf16_attention(*s) for s in BF16_SHAPES["attention"])]


def all_workloads() -> list[Workload]:
    """Every workload, in the order of the report."""
    return [
        *(gemm(f"gemm-{n}", n, n, n) for n in (512, 1024, 2048)),
        gemm("decode-4096", 1, 4096, 4096),
        *(gemm(f"gemm-m{m}-4096", m, 4096, 4096) for m in (16, 128)),
        *(build(n, d) for build in (rmsnorm_linear, swiglu, rmsnorm_mlp, qkv, lora) for n, d in LAYER_SHAPES),
        *(rmsnorm_mlp_batched(*shape) for shape in BATCHED_SHAPES),
        *(attention(*shape) for shape in ATTENTION_SHAPES),
        *(scale_in_max_attention(*shape) for shape in SCALE_IN_MAX_SHAPES),
        *(causal_attention(*shape) for shape in CAUSAL_SHAPES),
        *(qk_norm_attention(*shape) for shape in QK_NORM_SHAPES),
        *(rmsnorm(*shape) for shape in ROW_SHAPES["rmsnorm"]),
        *(softmax(*shape) for shape in ROW_SHAPES["softmax"]),
        *bf16_workloads(),
    ]
