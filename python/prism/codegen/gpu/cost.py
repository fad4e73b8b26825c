"""Predicted seconds of each planned GPU kernel (a spec of :mod:`prism.codegen.gpu.spec`) on an NVIDIA GPU.

- a GEMM is its contraction under the GPU target's model (its ``seconds``)
  with the spec's tile; a dual GEMM counts as one product twice as wide;
- attention is its family's model on the target (looked up in the family
  registry, :func:`prism.search.families.family_model`) with the tile and
  key shares the emitter takes;
- a row, elementwise or generic kernel is memory-bound: a launch, and the
  bytes of every tensor it reads or writes, moved once at DRAM bandwidth,
  slowed by the waves of its blocks over the SMs (its launch, as the emitter
  writes it: the row rule of :func:`prism.codegen.gpu.rows.row_plans`, the
  elementwise and generic kernels' grids).

Sizes are the spec's, its size symbols taking ``sizes`` (``assumed`` for
one not given).
"""

from __future__ import annotations

import ast
import dataclasses
import math
import operator
from typing import TYPE_CHECKING

from mlir import ir

from prism.codegen.gpu import generic
from prism.codegen.gpu.attention import is_decode, kernel_tile, plan_attention
from prism.codegen.gpu.attention_sm90 import sm90_splits, sm90_tile, takes_sm90
from prism.codegen.gpu.manifest import evaluate
from prism.codegen.gpu.rows import emit_pointwise, emit_rows
from prism.codegen.gpu.spec import (
    ELEMENT_BYTES,
    AttentionSpec,
    Dim,
    GemmSpec,
    GenericSpec,
    Kernel,
    PointwiseSpec,
    RowSpec,
)
from prism.codegen.gpu.tiled import spec_tensors
from prism.search.attention import Attention
from prism.search.cost import ceil_div
from prism.search.families import family_model
from prism.search.space import Contraction
from prism.targets.nvidia import LAUNCH_SECONDS

if TYPE_CHECKING:
    from prism.targets.base import Target

ASSUMED = 1024
_COMPARE = {ast.Lt: operator.lt, ast.LtE: operator.le, ast.Gt: operator.gt, ast.GtE: operator.ge,
            ast.Eq: operator.eq, ast.NotEq: operator.ne}


def predict_seconds(spec, target: Target, sizes: dict[str, int] | None = None, assumed: int = ASSUMED) -> float:
    """Predicted seconds of the kernels of ``spec`` on ``target`` (see the module docstring)."""
    known = dict(sizes or {})
    if isinstance(spec, GemmSpec):
        return _gemm(spec, target, known, assumed)
    if isinstance(spec, AttentionSpec):
        return _attention(spec, target, known, assumed)
    if isinstance(spec, RowSpec | PointwiseSpec | GenericSpec):
        return _streaming(spec, target, known, assumed)
    raise TypeError(f"no cost for {type(spec).__name__}")


def _size(dim: Dim, sizes: dict[str, int], assumed: int) -> int:
    return dim if isinstance(dim, int) else sizes.get(dim, assumed)


def _bound(sizes: dict[str, int], symbols, assumed: int) -> dict[str, int]:
    """``sizes`` with ``assumed`` for every other symbol among ``symbols``."""
    return {**{s: assumed for s in symbols if isinstance(s, str)}, **sizes}


def _gemm(spec: GemmSpec, target: Target, sizes: dict[str, int], assumed: int) -> float:
    """The contraction of ``spec`` (a dual GEMM's two products as one of twice the columns) under the GPU's
    model, with the spec's tile."""
    batch = math.prod(_size(d, sizes, assumed) for d in spec.batch)
    m, n, k = (_size(d, sizes, assumed) for d in (spec.m, spec.n, spec.k))
    n *= 2 if spec.b2 is not None else 1
    roles, extents = ("m", "n", "k"), (m, n, k)
    if spec.batch:
        roles, extents = ("batch", *roles), (batch, *extents)
    offset = len(roles) - 3
    a_dims = (*range(offset), offset, offset + 2)  # batch, m, k
    b_dims = (*range(offset), offset + 2, offset + 1)  # batch, k, n
    same = spec.a.dtype == spec.b.dtype
    problem = Contraction(roles=roles, operand_dims=(a_dims, b_dims), extents=extents,
                          elem_bytes=(ELEMENT_BYTES[spec.a.dtype], ELEMENT_BYTES[spec.b.dtype]),
                          acc_bytes=ELEMENT_BYTES[spec.c.dtype], input_type=spec.a.dtype if same else "f32")
    values = {**dataclasses.asdict(spec.tile), "MMA": int(problem.input_type in target.mma_types)}  # every knob
    return float(target.seconds(problem, values, assumed))


def _attention(spec: AttentionSpec, target: Target, sizes: dict[str, int], assumed: int) -> float:
    """The attention family's model with the tile the emitted kernel runs (the spec's, else that kernel's
    default) and the shares the emitter takes."""
    batch = math.prod(_size(d, sizes, assumed) for d in spec.batch)
    sq, skv = _size(spec.sq, sizes, assumed), _size(spec.skv, sizes, assumed)
    problem = Attention(batch, sq, skv, spec.d, spec.dv, skv - sq if spec.causal else None,
                        input_type=spec.q.dtype, k_transposed=spec.k_layout == "dn")
    wgmma = takes_sm90(spec, target.chip)
    tile = sm90_tile(spec) if wgmma else kernel_tile(spec)
    if not is_decode(spec):
        splits = 1
    else:  # the shares of the kernel that runs the spec
        splits = sm90_splits(spec, tile.BK) if wgmma else plan_attention(spec, target.chip, tile).splits
    values = {"BQ": tile.BQ, "BK": tile.BK, "DECODE_BK": tile.DECODE_BK, "DECODE_WARPS": tile.DECODE_WARPS,
              "SPLITS": max(1, splits), "STAGES": tile.STAGES}
    return float(family_model(problem, target.name).seconds(target, problem, values, assumed))


def _kernels(spec, chip: str) -> list[Kernel]:
    if isinstance(spec, RowSpec):
        return emit_rows(spec, chip)
    if isinstance(spec, PointwiseSpec):
        return emit_pointwise(spec.name, spec.out, spec.value, chip)
    with ir.Context():  # the generic kernel reads its maps as MLIR; its text is all that leaves
        return generic.emit_generic(spec)


def holds(condition: str | None, sizes: dict[str, int]) -> bool:
    """Whether a launch's condition (a comparison of manifest expressions, or none) holds at ``sizes``."""
    if condition is None:
        return True
    node = ast.parse(condition, mode="eval").body
    if isinstance(node, ast.BoolOp):
        results = (holds(ast.unparse(value), sizes) for value in node.values)
        return all(results) if isinstance(node.op, ast.And) else any(results)
    if isinstance(node, ast.Compare) and len(node.ops) == 1 and type(node.ops[0]) in _COMPARE:
        left, right = (evaluate(ast.unparse(side), sizes) for side in (node.left, node.comparators[0]))
        return _COMPARE[type(node.ops[0])](left, right)
    raise ValueError(f"not a launch condition: {condition}")


def _streaming(spec, target: Target, sizes: dict[str, int], assumed: int) -> float:
    """A memory-bound kernel: each launched kernel's overhead, and every tensor's bytes once at DRAM bandwidth,
    the blocks (of the kernel that runs at these sizes) in waves over the SMs."""
    tensors = spec_tensors(spec)
    symbols = {d for t in tensors for d in t.shape if isinstance(d, str)}
    symbols |= {d for d in _dims(spec) if isinstance(d, str)}
    bound = _bound(sizes, symbols, assumed)
    moved = sum(math.prod(_size(d, bound, assumed) for d in t.shape) * ELEMENT_BYTES.get(t.dtype, 1)
                for t in {t.name: t for t in tensors}.values())
    launched = [k for k in _kernels(spec, target.chip) if holds(k.launch.when, bound)]
    blocks = max(1, max((math.prod(evaluate(g, bound) for g in k.launch.grid) for k in launched), default=1))
    waves = ceil_div(blocks, target.sm_count) * target.sm_count / blocks
    return len(launched) * LAUNCH_SECONDS + moved / target.dram_bytes_per_s * waves


def _dims(spec) -> list[Dim]:
    if isinstance(spec, RowSpec):
        return [*spec.rows, *spec.cols]
    if isinstance(spec, GenericSpec):
        return list(spec.loops)
    return list(spec.out.shape)
