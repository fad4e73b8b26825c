#!/usr/bin/env python3
"""Run a Prism GPU bundle where the GPU is: check every compiled function against float64 and time it.

A bundle is a folder made by ``build.py``: ``workloads.json`` (what to run),
and per compilation unit a ``module.ptx`` (one PTX module) with its
``manifest.json`` (how to launch its kernels; see docs/gpu.md). A workload
naming no ``unit`` reads them from the bundle's own folder.

    python run.py [DIR] [--dry-run] [--only NAME] [--budget SECONDS] [--out DIR]

For each workload: seeded inputs, the float64 reference from this file's
own table, the kernel parameters packed per the manifest and checked
against the PTX's ``.entry`` signatures; then, unless ``--dry-run``: the
module loaded with ``cuModuleLoadDataEx``, every kernel launched in order,
the outputs checked, and the function timed against torch eager, ``torch.compile``
and SDPA with CUDA events (L2 flushed before each call). Writes
``results.json`` and ``results.md``. ``--dry-run`` touches no GPU and needs
numpy alone; it exits non-zero on any manifest or packing error.

The standard library and numpy are imported here; torch and the CUDA
driver (``libcuda`` through ctypes) only when a GPU run needs them.
"""

from __future__ import annotations

import argparse
import ast
import ctypes
import fnmatch
import json
import math
import operator
import re
import statistics
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

MANIFEST_VERSION = 1
L2_FLUSH_BYTES = 256 << 20
MIN_REPS, MAX_REPS = 20, 500
MAX_SHARED_BYTES = 232448  # 227 KiB: the most dynamic shared memory a block may opt into on sm_90
STATIC_SHARED_LIMIT = 48 << 10  # above this a kernel must opt in with MAX_DYNAMIC_SHARED_SIZE_BYTES
ELEMENT_BYTES = {"f16": 2, "bf16": 2, "f32": 4, "f64": 8, "i8": 1, "i16": 2, "i32": 4, "i64": 8}
# Numpy holds bf16 as its bits (uint16); the others as themselves.
STORAGE = {"f16": np.float16, "bf16": np.uint16, "f32": np.float32, "f64": np.float64, "i8": np.int8,
           "i16": np.int16, "i32": np.int32, "i64": np.int64}
# A normwise relative error, max |out - ref| / max |ref|, a result must stay under; the looser of its
# workload's and its own element type's.
TOLERANCE = {"f64": 1e-9, "f32": 1e-4, "f16": 1e-2, "bf16": 5e-2}
# CUtensorMapDataType and CUtensorMapSwizzle values.
TENSOR_MAP_DTYPE = {"i8": 0, "i16": 1, "i32": 3, "i64": 5, "f16": 6, "f32": 7, "f64": 8, "bf16": 9}
TENSOR_MAP_SWIZZLE = {0: 0, 32: 1, 64: 2, 128: 3}


class ManifestError(Exception):
    """A bundle that cannot be run as written: the message names the file, function, kernel and parameter."""


class ExpressionError(ManifestError):
    """An expression outside the manifest's grammar, or naming an unknown size symbol."""


class DeviceError(RuntimeError):
    """The CUDA driver refused a call."""


# ---- expressions ------------------------------------------------------------------------------------------------

_BINARY = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.FloorDiv: operator.floordiv}
_COMPARE = {ast.Lt: operator.lt, ast.LtE: operator.le, ast.Gt: operator.gt, ast.GtE: operator.ge,
            ast.Eq: operator.eq, ast.NotEq: operator.ne}
_FUNCTIONS: dict[str, tuple[Callable[..., int], int]] = {  # name -> (function, least argument count)
    "cdiv": (lambda a, b: -(-a // b), 2), "min": (min, 2), "max": (max, 2)}
GRAMMAR = "integers, size symbols, + - * //, comparisons, and/or/not, cdiv(a, b), min, max"


def evaluate(expression: int | str, sizes: dict[str, int]) -> int:
    """The integer value of a manifest expression over ``sizes`` (a comparison gives 0 or 1).

    The grammar is Python's, restricted to :data:`GRAMMAR`; anything else
    (attributes, other calls, subscripts, floats) raises ExpressionError.
    The text is walked as a tree, never given to ``eval``.
    """
    if isinstance(expression, bool) or not isinstance(expression, (int, str)):
        raise ExpressionError(f"expression {expression!r}: expected an integer or a string")
    if isinstance(expression, int):
        return expression
    try:
        tree = ast.parse(expression.strip(), mode="eval")
    except SyntaxError as error:
        raise ExpressionError(f"expression '{expression}': cannot parse it ({error.msg})") from None
    return int(_walk(tree.body, expression, sizes))


def _walk(node: ast.AST, text: str, sizes: dict[str, int]) -> int:
    """One node of an expression's tree, evaluated."""
    if isinstance(node, ast.Constant) and type(node.value) is int:
        return node.value
    if isinstance(node, ast.Name):
        if node.id not in sizes:
            known = ", ".join(sorted(sizes)) or "none"
            raise ExpressionError(f"expression '{text}': unknown size symbol '{node.id}' (known: {known})")
        return sizes[node.id]
    if isinstance(node, ast.BinOp) and type(node.op) in _BINARY:
        left, right = _walk(node.left, text, sizes), _walk(node.right, text, sizes)
        if isinstance(node.op, ast.FloorDiv) and right == 0:
            raise ExpressionError(f"expression '{text}': division by zero")
        return _BINARY[type(node.op)](left, right)
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, (ast.USub, ast.UAdd, ast.Not)):
        value = _walk(node.operand, text, sizes)
        return {ast.USub: -value, ast.UAdd: value}.get(type(node.op), int(not value))
    if isinstance(node, ast.BoolOp):
        values = [_walk(v, text, sizes) for v in node.values]
        return int(all(values) if isinstance(node.op, ast.And) else any(values))
    if isinstance(node, ast.Compare) and all(type(op) in _COMPARE for op in node.ops):
        values = [_walk(v, text, sizes) for v in [node.left, *node.comparators]]
        return int(all(_COMPARE[type(op)](a, b) for op, a, b in zip(node.ops, values, values[1:], strict=False)))
    if isinstance(node, ast.Call):
        return _call(node, text, sizes)
    raise ExpressionError(f"expression '{text}': {type(node).__name__} is not allowed (only {GRAMMAR})")


def _call(node: ast.Call, text: str, sizes: dict[str, int]) -> int:
    """``cdiv(a, b)``, ``min(...)`` or ``max(...)``; no other call."""
    name = node.func.id if isinstance(node.func, ast.Name) else None
    if name not in _FUNCTIONS or node.keywords:
        raise ExpressionError(f"expression '{text}': only cdiv, min and max may be called")
    function, least = _FUNCTIONS[name]
    args = [_walk(a, text, sizes) for a in node.args]
    if len(args) < least or (name == "cdiv" and len(args) != 2):
        raise ExpressionError(f"expression '{text}': {name} takes {'2' if name == 'cdiv' else '2 or more'} arguments")
    if name == "cdiv" and args[1] == 0:
        raise ExpressionError(f"expression '{text}': cdiv by zero")
    return function(*args)


# ---- element types ----------------------------------------------------------------------------------------------

def encode(values: np.ndarray, dtype: str) -> np.ndarray:
    """``values`` (float64) as ``dtype``'s storage, rounded to nearest even (bf16 as its 16 bits)."""
    if dtype == "bf16":
        bits = values.astype(np.float32).view(np.uint32).astype(np.uint64)
        return ((bits + 0x7FFF + ((bits >> 16) & 1)) >> 16).astype(np.uint16)
    if dtype.startswith("i"):
        return np.rint(values).astype(STORAGE[dtype])
    return values.astype(STORAGE[dtype])


def decode(storage: np.ndarray, dtype: str) -> np.ndarray:
    """``dtype``'s storage as float64."""
    if dtype == "bf16":
        return (storage.astype(np.uint32) << 16).view(np.float32).astype(np.float64)
    return storage.astype(np.float64)


def check_dtype(dtype: Any, where: str) -> str:
    """``dtype`` if it is a known element type."""
    if dtype not in ELEMENT_BYTES:
        raise ManifestError(f"{where}: unknown element type {dtype!r} (known: {', '.join(ELEMENT_BYTES)})")
    return dtype


# ---- references: each written once over an ops adapter, for float64 numpy and for torch ------------------------

class NumpyOps:
    """The operations whose spelling differs between numpy and torch, for numpy arrays."""

    exp = staticmethod(np.exp)

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
    def t(x: Any) -> Any:
        """The last two axes swapped."""
        return np.swapaxes(x, -1, -2)

    @staticmethod
    def causal(s: Any) -> Any:
        """-inf where key j comes after query i + (keys - queries), over the last two axes."""
        rows, cols = s.shape[-2:]
        keep = np.arange(cols)[None, :] <= np.arange(rows)[:, None] + (cols - rows)
        return np.where(keep, s, -np.inf)


class TorchOps:
    """The same operations for torch tensors."""

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
    def t(x: Any) -> Any:
        """The last two axes swapped."""
        return x.transpose(-1, -2)

    @staticmethod
    def causal(s: Any) -> Any:
        """-inf where key j comes after query i + (keys - queries), over the last two axes."""
        import torch

        rows, cols = s.shape[-2:]
        keep = torch.ones(rows, cols, dtype=torch.bool, device=s.device).tril(cols - rows)
        return s.masked_fill(~keep, float("-inf"))


def _rmsnorm(ops: Any, p: dict, x: Any, g: Any) -> Any:
    return x * ops.rsqrt(ops.mean_last(x * x) + p.get("eps", 1e-6)) * g


def _swiglu(ops: Any, x: Any, wg: Any, wu: Any, wd: Any) -> Any:
    gate = x @ wg
    return (gate / (1 + ops.exp(-gate)) * (x @ wu)) @ wd


def _keys(ops: Any, p: dict, k: Any) -> Any:
    """K as [..., keys, d], whichever layout (``k_layout``: ``nd``, or ``dn`` for K given transposed) it came in."""
    return ops.t(k) if p.get("k_layout", "nd") == "dn" else k


def _attend(ops: Any, p: dict, q: Any, k: Any, v: Any) -> Any:
    """softmax(scale q k^T, causal if asked) v, k as [..., keys, d]; scale defaults to d^-1/2."""
    s = (q @ ops.t(k)) * p.get("scale", 1 / math.sqrt(q.shape[-1]))
    if p.get("causal"):
        s = ops.causal(s)
    e = ops.exp(s - ops.max_last(s))
    return (e / ops.sum_last(e)) @ v


def _gemm(ops: Any, p: dict, a: Any, b: Any) -> tuple:
    return (a @ (ops.t(b) if p.get("transpose_b") else b),)


def _qk_norm_attention(ops: Any, p: dict, q: Any, k: Any, v: Any, gq: Any, gk: Any) -> tuple:
    return (_attend(ops, p, _rmsnorm(ops, p, q, gq), _rmsnorm(ops, p, _keys(ops, p, k), gk), v),)


def _qk_norm_scores(ops: Any, p: dict, q: Any, k: Any, gq: Any, gk: Any) -> tuple:
    scores = _rmsnorm(ops, p, q, gq) @ ops.t(_rmsnorm(ops, p, _keys(ops, p, k), gk))
    return (scores * p["scale"] if "scale" in p else scores,)


def _sdpa_attention(torch: Any, p: dict, q: Any, k: Any, v: Any, gq: Any = None, gk: Any = None) -> Callable:
    """A call of torch's fused attention on the same inputs (K put in [.., keys, d] before the timing)."""
    k = _keys(TorchOps, p, k).contiguous()
    rows, cols = q.shape[-2], k.shape[-2]
    causal = bool(p.get("causal"))
    mask = None
    if causal and rows != cols:  # SDPA's is_causal aligns the diagonal top-left; the reference bottom-right
        mask = torch.ones(rows, cols, dtype=torch.bool, device=q.device).tril(cols - rows)
    scale = p.get("scale", 1 / math.sqrt(q.shape[-1]))
    attend = torch.nn.functional.scaled_dot_product_attention

    heads = (lambda x: x.unsqueeze(0)) if q.dim() == 3 else (lambda x: x)  # the fused kernels take 4-D

    def call() -> tuple:
        qn, kn = (q, k) if gq is None else (_rmsnorm(TorchOps, p, q, gq), _rmsnorm(TorchOps, p, k, gk))
        out = attend(heads(qn), heads(kn), heads(v), attn_mask=mask, is_causal=causal and mask is None, scale=scale)
        return (out.reshape(*q.shape[:-1], v.shape[-1]),)
    return call


@dataclass(frozen=True)
class Reference:
    """A reference: ``compute(ops, params, *inputs)`` gives the outputs; ``sdpa(torch, params, *tensors)``, where
    it exists, gives a call of torch's fused attention."""

    compute: Callable[..., tuple]
    sdpa: Callable[..., Callable] | None = None


REFERENCES: dict[str, Reference] = {
    "add": Reference(lambda ops, p, a, b: (a + b,)),
    "gemm": Reference(_gemm),  # params: transpose_b (B given as [..., n, k])
    "batch_gemm": Reference(_gemm),
    "swiglu": Reference(lambda ops, p, x, wg, wu, wd: (_swiglu(ops, x, wg, wu, wd),)),
    "rmsnorm_linear": Reference(lambda ops, p, x, g, w: (_rmsnorm(ops, p, x, g) @ w,)),  # params: eps
    "rmsnorm_mlp": Reference(lambda ops, p, x, g, wg, wu, wd: (_swiglu(ops, _rmsnorm(ops, p, x, g), wg, wu, wd),)),
    # params: scale, causal, k_layout; prefill and decode alike.
    "attention": Reference(lambda ops, p, q, k, v: (_attend(ops, p, q, _keys(ops, p, k), v),), _sdpa_attention),
    "qk_norm_attention": Reference(_qk_norm_attention, _sdpa_attention),  # params: eps, scale, causal, k_layout
    "qk_norm_scores": Reference(_qk_norm_scores),  # params: eps, k_layout, scale (none by default)
    "lora": Reference(lambda ops, p, x, w, a, b: (x @ w + (x @ a) @ b,)),
    "qkv": Reference(lambda ops, p, x, wq, wk, wv: (x @ wq, x @ wk, x @ wv)),
}


# ---- the manifest -----------------------------------------------------------------------------------------------

@dataclass
class Buffer:
    """A device buffer of a function: an input, an output, a temporary, or a view of another buffer's bytes."""

    name: str
    dtype: str
    shape: tuple[int, ...]
    kind: str
    of: str | None = None

    @property
    def numel(self) -> int:
        """Its element count."""
        return math.prod(self.shape)

    @property
    def nbytes(self) -> int:
        """Its size in bytes."""
        return self.numel * ELEMENT_BYTES[self.dtype]


@dataclass(frozen=True)
class TensorMapArgs:
    """What ``cuTensorMapEncodeTiled`` takes, but the address: dims and box innermost first, byte strides."""

    tensor: str
    dtype: int
    dims: tuple[int, ...]
    strides: tuple[int, ...]
    box: tuple[int, ...]
    swizzle: int


@dataclass
class Launch:
    """One kernel launch: each parameter packed as ``("ptr", buffer)``, ``("i64", value)`` or ``("map", args)``."""

    kernel: str
    grid: tuple[int, int, int]
    block: tuple[int, int, int]
    shared_bytes: int
    params: list[tuple[str, Any]]


@dataclass
class Plan:
    """A function's buffers and launches for one set of input shapes."""

    sizes: dict[str, int]
    buffers: dict[str, Buffer]
    inputs: list[str]
    outputs: list[str]
    launches: list[Launch]
    skipped: list[str] = field(default_factory=list)  # kernels whose ``when`` is false, or with an empty grid


@dataclass
class Unit:
    """A compilation unit: its manifest, its PTX and the PTX's entries (name -> parameter types)."""

    path: Path
    manifest: dict
    ptx: str
    entries: dict[str, list[str]]


def _require(mapping: Any, key: str, kind: type | tuple, where: str) -> Any:
    """``mapping[key]``, which must exist and be of ``kind``."""
    if not isinstance(mapping, dict) or key not in mapping:
        raise ManifestError(f"{where}: missing '{key}'")
    value = mapping[key]
    if not isinstance(value, kind) or isinstance(value, bool) and kind is not bool:
        raise ManifestError(f"{where}: '{key}' must be {getattr(kind, '__name__', kind)}, not {value!r}")
    return value


def load_unit(bundle: Path, name: str | None) -> Unit:
    """The unit in ``bundle/name`` (or ``bundle`` itself): its manifest checked against its PTX."""
    path = bundle / name if name else bundle
    where = f"{path.name}/manifest.json"
    for required in ("manifest.json", "module.ptx"):
        if not (path / required).exists():
            raise ManifestError(f"{path}: no {required}")
    try:
        manifest = json.loads((path / "manifest.json").read_text())
    except json.JSONDecodeError as error:
        raise ManifestError(f"{where}: not JSON ({error})") from None
    version = _require(manifest, "version", int, where)
    if version != MANIFEST_VERSION:
        raise ManifestError(f"{where}: format version {version}; this runner reads version {MANIFEST_VERSION}")
    _require(manifest, "chip", str, where)
    ptx = (path / "module.ptx").read_text()
    unit = Unit(path, manifest, ptx, ptx_entries(ptx))
    for function, spec in _require(manifest, "functions", dict, where).items():
        check_function(spec, unit.entries, f"{where}: function '{function}'")
    return unit


_ENTRY = re.compile(r"\.entry\s+([\w$.]+)\s*\(([^)]*)\)", re.DOTALL)
_TYPE = re.compile(r"\.[busf]\d+$")


def ptx_entries(ptx: str) -> dict[str, list[str]]:
    """Each ``.entry`` of a PTX module with its parameters' types (``.u64``, ``.b8[128]``, ...)."""
    entries = {}
    for name, params in _ENTRY.findall(ptx):
        types = []
        for param in filter(str.strip, params.split(",")):
            tokens = param.split()  # .param [.align N] .type [.ptr [.space] [.align N]] name[N]
            kind = next((t for t in tokens if _TYPE.match(t)), "?")
            array = re.search(r"\[\d*\]$", tokens[-1])
            types.append(kind + (array.group() if array else ""))
        entries[name] = types
    return entries


# Each manifest parameter's packed kernel parameters: a memref descriptor is five 64-bit values.
PACKED_KINDS = {"tensor": ["ptr", "ptr", "i64", "i64", "i64"], "size": ["i64"], "tensormap": ["ptr"]}
PTX_64BIT = {".u64", ".s64", ".b64"}


def check_function(spec: dict, entries: dict[str, list[str]], where: str) -> None:
    """The static shape of one function's manifest entry, and each kernel's packing against its PTX signature."""
    for key in ("inputs", "outputs"):
        for i, tensor in enumerate(_require(spec, key, list, where)):
            _tensor_decl(tensor, f"{where}: {key}[{i}]")
    for i, tensor in enumerate(spec.get("temporaries") or []):
        _tensor_decl(tensor, f"{where}: temporaries[{i}]")
    if not isinstance(spec.get("sizes", {}), dict):
        raise ManifestError(f"{where}: 'sizes' must be an object, not {spec['sizes']!r}")
    for symbol, source in spec.get("sizes", {}).items():
        if isinstance(source, dict) and "expr" in source:
            _require(source, "expr", str, f"{where}: size '{symbol}'")
            continue
        _require(source, "input", str, f"{where}: size '{symbol}'")
        if "dim" in source:  # without one, the size is the value of an index argument
            _require(source, "dim", int, f"{where}: size '{symbol}'")
    for i, kernel in enumerate(_require(spec, "kernels", list, where)):
        name = _require(kernel, "name", str, f"{where}: kernels[{i}]")
        _check_packing(kernel, entries, f"{where}: kernel '{name}'")


def _tensor_decl(tensor: Any, where: str) -> None:
    _require(tensor, "name", str, where)
    check_dtype(_require(tensor, "dtype", str, where), where)
    _require(tensor, "shape", list, where)


def _check_packing(kernel: dict, entries: dict[str, list[str]], where: str) -> None:
    """The kernel exists in the PTX, and its parameters pack to as many 64-bit values as its ``.entry`` takes."""
    name = kernel["name"]
    if name not in entries:
        raise ManifestError(f"{where}: no .entry {name} in module.ptx (entries: {', '.join(sorted(entries))})")
    packed = []
    for j, param in enumerate(_require(kernel, "params", list, where)):
        kinds = [k for k in PACKED_KINDS if isinstance(param, dict) and k in param]
        if len(kinds) != 1:
            raise ManifestError(f"{where}: params[{j}] must have exactly one of tensor, size, tensormap: {param!r}")
        packed += PACKED_KINDS[kinds[0]]
    ptx_types = entries[name]
    if len(packed) != len(ptx_types):
        raise ManifestError(f"{where}: the manifest packs {len(packed)} kernel parameters, the PTX .entry takes "
                            f"{len(ptx_types)} (a tensor is 5, a size 1, a tensor map 1)")
    for j, ptx_type in enumerate(ptx_types):
        if ptx_type not in PTX_64BIT:
            raise ManifestError(f"{where}: PTX parameter {j} is {ptx_type}; every packed parameter is a 64-bit value")


def bind_sizes(spec: dict, shapes: list[tuple[int, ...]], where: str) -> dict[str, int]:
    """Each size symbol's value, read from the input the manifest names; then every input's shape checked."""
    names = [t["name"] for t in spec["inputs"]]
    if len(shapes) != len(names):
        raise ManifestError(f"{where}: the workload gives {len(shapes)} inputs, the function takes {len(names)}")
    sizes = {}
    derived = []
    for symbol, source in spec.get("sizes", {}).items():
        if "expr" in source:  # an expression of the symbols before it
            derived.append((symbol, source["expr"]))
            continue
        if source["input"] not in names:
            raise ManifestError(f"{where}: size '{symbol}' is read from '{source['input']}', which is not an input")
        shape = shapes[names.index(source["input"])]
        if "dim" not in source:
            raise ManifestError(f"{where}: size '{symbol}' is the value of index argument '{source['input']}', "
                                "which the workloads of a bundle do not give")
        if not 0 <= source["dim"] < len(shape):
            raise ManifestError(f"{where}: size '{symbol}': {source['input']} has no dimension {source['dim']}")
        sizes[symbol] = shape[source["dim"]]
    for symbol, expression in derived:
        try:
            sizes[symbol] = evaluate(expression, sizes)
        except ExpressionError as error:
            raise ExpressionError(f"{where}: size '{symbol}': {error}") from None
    for tensor, shape in zip(spec["inputs"], shapes, strict=True):
        expected = resolve_shape(tensor["shape"], sizes, f"{where}: input '{tensor['name']}'")
        if expected != tuple(shape):
            raise ManifestError(f"{where}: input '{tensor['name']}' is {list(shape)}, the manifest says "
                                f"{tensor['shape']} = {list(expected)}")
    return sizes


def resolve_shape(shape: list, sizes: dict[str, int], where: str) -> tuple[int, ...]:
    """A manifest shape (integers, size symbols or expressions) as integers."""
    try:
        dims = tuple(evaluate(d, sizes) for d in shape)
    except ExpressionError as error:
        raise ExpressionError(f"{where}: {error}") from None
    if any(d < 0 for d in dims):
        raise ManifestError(f"{where}: negative dimension in {list(dims)}")
    return dims


def make_buffers(spec: dict, sizes: dict[str, int], where: str) -> dict[str, Buffer]:
    """Every name a parameter may refer to: inputs, outputs, temporaries, and views of those."""
    buffers: dict[str, Buffer] = {}
    for kind, key in (("input", "inputs"), ("output", "outputs"), ("temporary", "temporaries")):
        for tensor in spec.get(key) or []:
            _add(buffers, Buffer(tensor["name"], tensor["dtype"],
                                 resolve_shape(tensor["shape"], sizes, f"{where}: {kind} '{tensor['name']}'"), kind),
                 where)
    for i, view in enumerate(spec.get("views") or []):
        name = _require(view, "name", str, f"{where}: views[{i}]")
        base = _require(view, "of", str, f"{where}: view '{name}'")
        if base not in buffers:
            raise ManifestError(f"{where}: view '{name}' is of '{base}', which is not declared before it")
        dtype = check_dtype(view.get("dtype", buffers[base].dtype), f"{where}: view '{name}'")
        shape = resolve_shape(_require(view, "shape", list, f"{where}: view '{name}'"), sizes,
                              f"{where}: view '{name}'")
        buffer = Buffer(name, dtype, shape, "view", of=buffers[base].of or base)
        if buffer.nbytes > buffers[buffer.of].nbytes:
            raise ManifestError(f"{where}: view '{name}' needs {buffer.nbytes} bytes; '{base}' has "
                                f"{buffers[buffer.of].nbytes}")
        _add(buffers, buffer, where)
    return buffers


def _add(buffers: dict[str, Buffer], buffer: Buffer, where: str) -> None:
    if buffer.name in buffers:
        raise ManifestError(f"{where}: the name '{buffer.name}' is declared twice")
    buffers[buffer.name] = buffer


def plan_function(spec: dict, shapes: list[tuple[int, ...]], where: str) -> Plan:
    """The buffers and launches of one function for these input shapes; raises ManifestError."""
    sizes = bind_sizes(spec, shapes, where)
    buffers = make_buffers(spec, sizes, where)
    plan = Plan(sizes, buffers, [t["name"] for t in spec["inputs"]], [t["name"] for t in spec["outputs"]], [])
    for kernel in spec["kernels"]:
        launch = plan_kernel(kernel, buffers, sizes, f"{where}: kernel '{kernel['name']}'")
        if launch is None:
            plan.skipped.append(kernel["name"])
        else:
            plan.launches.append(launch)
    return plan


def plan_kernel(kernel: dict, buffers: dict[str, Buffer], sizes: dict[str, int], where: str) -> Launch | None:
    """One kernel's launch, or None where its ``when`` is false or its grid is empty. A kernel not launched is
    checked all the same, but for the ranges of its tensor maps."""
    try:
        when = kernel.get("when")
        launched = when is None or bool(evaluate(when, sizes))
        grid = tuple(evaluate(g, sizes) for g in _triple(kernel, "grid", where))
    except ExpressionError as error:
        raise ExpressionError(f"{where}: {error}") from None
    block = tuple(_triple(kernel, "block", where))
    if not all(isinstance(b, int) and b >= 1 for b in block) or math.prod(block) > 1024 or block[2] > 64:
        raise ManifestError(f"{where}: block {list(block)} is not a CUDA block (at most 1024 threads, z <= 64)")
    if any(g < 0 for g in grid) or grid[0] >= 2**31 or max(grid[1:]) > 65535:
        raise ManifestError(f"{where}: grid {list(grid)} is out of CUDA's range")
    shared = _require(kernel, "shared_bytes", int, where)
    if not 0 <= shared <= MAX_SHARED_BYTES:
        raise ManifestError(f"{where}: shared_bytes {shared} is over the {MAX_SHARED_BYTES} bytes a block may have")
    launched = launched and 0 not in grid
    params = []
    for j, param in enumerate(kernel["params"]):
        params += pack_param(param, buffers, sizes, f"{where}: params[{j}]", launched)
    return Launch(kernel["name"], grid, block, shared, params) if launched else None


def _triple(kernel: dict, key: str, where: str) -> list:
    value = _require(kernel, key, list, where)
    if len(value) != 3:
        raise ManifestError(f"{where}: '{key}' must have 3 entries, not {value!r}")
    return value


def pack_param(param: dict, buffers: dict[str, Buffer], sizes: dict[str, int], where: str,
               launched: bool = True) -> list[tuple[str, Any]]:
    """One manifest parameter as its packed kernel parameters (see PACKED_KINDS); a tensor map of a kernel not
    launched has its names and expressions checked only."""
    if "size" in param:
        symbol = param["size"]
        if symbol not in sizes:
            known = ", ".join(sorted(sizes)) or "none"
            raise ManifestError(f"{where}: unknown size symbol {symbol!r} (known: {known})")
        return [("i64", sizes[symbol])]
    if "tensor" in param:
        buffer = _buffer(param["tensor"], buffers, where)
        return [("ptr", buffer.name), ("ptr", buffer.name), ("i64", 0), ("i64", buffer.numel), ("i64", 1)]
    if launched:
        return [("map", tensor_map_args(param["tensormap"], buffers, sizes, where))]
    spec = param["tensormap"]
    _buffer(_require(spec, "tensor", str, where), buffers, where)
    try:
        for key in ("dims", "strides"):
            for expression in _require(spec, key, list, where):
                evaluate(expression, sizes)
    except ExpressionError as error:
        raise ExpressionError(f"{where}: tensormap: {error}") from None
    return [("map", None)]


def _buffer(name: Any, buffers: dict[str, Buffer], where: str) -> Buffer:
    if name not in buffers:
        raise ManifestError(f"{where}: unknown tensor {name!r} (known: {', '.join(buffers)})")
    return buffers[name]


def tensor_map_args(spec: dict, buffers: dict[str, Buffer], sizes: dict[str, int], where: str) -> TensorMapArgs:
    """A tensor map's encoding, checked against what ``cuTensorMapEncodeTiled`` accepts and the tensor holds."""
    where = f"{where}: tensormap"
    buffer = _buffer(_require(spec, "tensor", str, where), buffers, where)
    dtype = check_dtype(_require(spec, "dtype", str, where), where)
    if dtype not in TENSOR_MAP_DTYPE or ELEMENT_BYTES[dtype] != ELEMENT_BYTES[buffer.dtype]:
        raise ManifestError(f"{where}: dtype {dtype} does not fit tensor '{buffer.name}' ({buffer.dtype})")
    try:
        dims = tuple(evaluate(d, sizes) for d in _require(spec, "dims", list, where))
        strides = tuple(evaluate(s, sizes) for s in _require(spec, "strides", list, where))
    except ExpressionError as error:
        raise ExpressionError(f"{where}: {error}") from None
    box = tuple(_require(spec, "box", list, where))
    swizzle = spec.get("swizzle", 128)
    esize = ELEMENT_BYTES[dtype]
    problems = []
    if not 1 <= len(dims) <= 5 or len(box) != len(dims) or len(strides) != len(dims) - 1:
        problems.append(f"rank: {len(dims)} dims, {len(box)} box entries, {len(strides)} strides (rank - 1)")
    if any(not 0 < d <= 2**32 for d in dims):
        problems.append(f"dims {list(dims)} must be in 1..2^32")
    if any(s % 16 or not 0 < s < 2**40 for s in strides):
        problems.append(f"byte strides {list(strides)} must be positive multiples of 16")
    if any(not isinstance(b, int) or not 1 <= b <= 256 for b in box) or box and (box[0] * esize) % 16:
        problems.append(f"box {list(box)}: entries in 1..256, the innermost a multiple of 16 bytes")
    if swizzle not in TENSOR_MAP_SWIZZLE:
        problems.append(f"swizzle {swizzle!r} is not 0, 32, 64 or 128")
    elif swizzle and box and box[0] * esize > swizzle:
        problems.append(f"the innermost box ({box[0] * esize} bytes) is wider than the {swizzle}-byte swizzle")
    reach = dims[0] * esize + sum((d - 1) * s for d, s in zip(dims[1:], strides, strict=False)) if dims else 0
    if not problems and reach > buffer.nbytes:
        problems.append(f"dims {list(dims)} with strides {list(strides)} reach past '{buffer.name}' "
                        f"({buffer.nbytes} bytes)")
    if problems:
        raise ManifestError(f"{where} of '{buffer.name}': " + "; ".join(problems))
    return TensorMapArgs(buffer.of or buffer.name, TENSOR_MAP_DTYPE[dtype], dims, strides, box,
                         TENSOR_MAP_SWIZZLE[swizzle])


# ---- workloads: inputs and references ---------------------------------------------------------------------------

@dataclass
class Case:
    """A workload made ready: its unit, its plan, its inputs (storage and float64) and its reference outputs."""

    workload: dict
    unit: Unit
    spec: dict
    plan: Plan
    storage: list[np.ndarray]
    values: list[np.ndarray]
    reference: tuple[np.ndarray, ...]


def make_inputs(workload: dict, spec: dict, where: str) -> tuple[list[np.ndarray], list[np.ndarray]]:
    """Seeded inputs, ``offset + scale * N(0, 1)``, in each input's element type (storage) and back as float64."""
    declared = workload.get("inputs")
    if not isinstance(declared, list) or len(declared) != len(spec["inputs"]):
        raise ManifestError(f"{where}: the workload gives {len(declared or [])} inputs, the function takes "
                            f"{len(spec['inputs'])}")
    storage, values = [], []
    for given, tensor in zip(declared, spec["inputs"], strict=True):
        rng = np.random.default_rng(_require(given, "seed", int, f"{where}: input '{tensor['name']}'"))
        shape = tuple(_require(given, "shape", list, f"{where}: input '{tensor['name']}'"))
        raw = given.get("offset", 0.0) + given.get("scale", 1.0) * rng.standard_normal(shape)
        storage.append(encode(raw, tensor["dtype"]))
        values.append(decode(storage[-1], tensor["dtype"]))
    return storage, values


def prepare(bundle: Path, workload: dict, units: dict[str | None, Unit | ManifestError]) -> Case:
    """Load the workload's unit, plan its function, make its inputs and compute its reference; raises
    ManifestError with what is wrong."""
    name = _require(workload, "name", str, "workloads.json: a workload")
    where = f"workload '{name}'"
    unit_name = workload.get("unit")
    if unit_name not in units:
        try:
            units[unit_name] = load_unit(bundle, unit_name)
        except ManifestError as error:
            units[unit_name] = error
            raise
    unit = units[unit_name]
    if isinstance(unit, ManifestError):
        raise ManifestError(f"{where}: its unit '{unit_name or '.'}' failed to load (see above)")
    function = _require(workload, "function", str, where)
    spec = unit.manifest["functions"].get(function)
    if spec is None:
        raise ManifestError(f"{where}: no function '{function}' in {unit.path.name}/manifest.json")
    reference = REFERENCES.get(_require(workload, "reference", str, where))
    if reference is None:
        raise ManifestError(f"{where}: unknown reference '{workload['reference']}' (known: {', '.join(REFERENCES)})")
    storage, values = make_inputs(workload, spec, where)
    in_manifest = f"{unit.path.name}/manifest.json: function '{function}'"
    plan = plan_function(spec, [v.shape for v in values], in_manifest)
    outputs = reference.compute(NumpyOps, workload.get("params", {}), *values)
    expected = [plan.buffers[o].shape for o in plan.outputs]
    if [tuple(o.shape) for o in outputs] != expected:
        raise ManifestError(f"{where}: the reference gives shapes {[list(o.shape) for o in outputs]}, "
                            f"{in_manifest} has outputs {[list(s) for s in expected]}")
    return Case(workload, unit, spec, plan, storage, values, tuple(outputs))


def tolerance(workload: dict, dtype: str) -> float:
    """The largest normwise error an output of ``dtype`` may have in ``workload``."""
    if "tolerance" in workload:
        return float(workload["tolerance"])
    return max(TOLERANCE.get(dtype, 0.0), TOLERANCE.get(workload.get("dtype", "f32"), 0.0))


def relative_error(out: np.ndarray, ref: np.ndarray) -> float:
    """max |out - ref| / max |ref| (inf if ``out`` has a NaN or the shapes differ)."""
    if out.shape != ref.shape or not np.all(np.isfinite(out) | ~np.isfinite(ref)):
        return math.inf
    scale = float(np.max(np.abs(ref))) if ref.size else 0.0
    return float(np.max(np.abs(out - ref))) / (scale or 1.0) if ref.size else 0.0


# ---- the device: torch for memory, events and baselines; libcuda through ctypes for modules and launches --------

class Driver:
    """The few CUDA driver calls the runner needs, through ctypes with full signatures (pointers are 64-bit)."""

    def __init__(self) -> None:
        try:
            self.lib = ctypes.CDLL("libcuda.so.1")
        except OSError:
            self.lib = ctypes.CDLL("libcuda.so")
        c = ctypes
        p, u, i, vp = c.POINTER, c.c_uint, c.c_int, c.c_void_p
        signatures = {
            "cuInit": [u], "cuGetErrorName": [i, p(c.c_char_p)], "cuCtxGetCurrent": [p(vp)],
            "cuDeviceGet": [p(i), i], "cuDevicePrimaryCtxRetain": [p(vp), i], "cuCtxSetCurrent": [vp],
            "cuModuleLoadDataEx": [p(vp), c.c_char_p, u, p(i), p(vp)], "cuModuleGetFunction": [p(vp), vp, c.c_char_p],
            "cuFuncSetAttribute": [vp, i, i], "cuDriverGetVersion": [p(i)],
            "cuLaunchKernel": [vp, u, u, u, u, u, u, u, vp, p(vp), p(vp)],
            "cuTensorMapEncodeTiled": [vp, i, c.c_uint32, vp, p(c.c_uint64), p(c.c_uint64), p(c.c_uint32),
                                       p(c.c_uint32), i, i, i, i],
        }
        for name, argtypes in signatures.items():
            getattr(self.lib, name).argtypes = argtypes
            getattr(self.lib, name).restype = c.c_int
        self.check(self.lib.cuInit(0), "cuInit")

    def check(self, result: int, what: str) -> None:
        """Raise DeviceError naming the call and the driver's error if ``result`` is not CUDA_SUCCESS."""
        if result != 0:
            name = ctypes.c_char_p()
            self.lib.cuGetErrorName(result, ctypes.byref(name))
            raise DeviceError(f"{what}: {(name.value or b'unknown').decode()} ({result})")

    def use_context(self, device: int) -> None:
        """Make the device's primary context (torch's) current on this thread."""
        ctx = ctypes.c_void_p()
        self.check(self.lib.cuCtxGetCurrent(ctypes.byref(ctx)), "cuCtxGetCurrent")
        if not ctx.value:
            dev = ctypes.c_int()
            self.check(self.lib.cuDeviceGet(ctypes.byref(dev), device), "cuDeviceGet")
            self.check(self.lib.cuDevicePrimaryCtxRetain(ctypes.byref(ctx), dev), "cuDevicePrimaryCtxRetain")
            self.check(self.lib.cuCtxSetCurrent(ctx), "cuCtxSetCurrent")

    def load(self, ptx: str) -> ctypes.c_void_p:
        """A module JIT-compiled from PTX text; the JIT's log in the error if it fails."""
        log = ctypes.create_string_buffer(1 << 16)
        options = (ctypes.c_int * 2)(5, 6)  # CU_JIT_ERROR_LOG_BUFFER, CU_JIT_ERROR_LOG_BUFFER_SIZE_BYTES
        values = (ctypes.c_void_p * 2)(ctypes.cast(log, ctypes.c_void_p), ctypes.c_void_p(len(log)))
        module = ctypes.c_void_p()
        result = self.lib.cuModuleLoadDataEx(ctypes.byref(module), ptx.encode() + b"\0", 2, options, values)
        if result != 0:
            self.check(result, f"cuModuleLoadDataEx: {log.value.decode(errors='replace').strip()}")
        return module

    def function(self, module: ctypes.c_void_p, name: str, shared_bytes: int) -> ctypes.c_void_p:
        """A kernel of ``module``, opted into ``shared_bytes`` of dynamic shared memory where over 48 KiB."""
        func = ctypes.c_void_p()
        self.check(self.lib.cuModuleGetFunction(ctypes.byref(func), module, name.encode()),
                   f"cuModuleGetFunction {name}")
        if shared_bytes > STATIC_SHARED_LIMIT:
            self.check(self.lib.cuFuncSetAttribute(func, 8, shared_bytes),  # MAX_DYNAMIC_SHARED_SIZE_BYTES
                       f"cuFuncSetAttribute {name} {shared_bytes}")
        return func

    def launch(self, func: ctypes.c_void_p, launch: Launch, args: Any, stream: int) -> None:
        """Launch one kernel with its packed parameters (``args``: an array of pointers to the values)."""
        self.check(self.lib.cuLaunchKernel(func, *launch.grid, *launch.block, launch.shared_bytes,
                                           ctypes.c_void_p(stream), args, None), f"cuLaunchKernel {launch.kernel}")

    def encode_tensor_map(self, spec: TensorMapArgs, address: int) -> bytes:
        """The 128-byte CUtensorMap, encoded in a 64-byte-aligned buffer as the driver requires."""
        raw = ctypes.create_string_buffer(128 + 64)
        aligned = (ctypes.addressof(raw) + 63) // 64 * 64
        rank = len(spec.dims)
        c = ctypes
        self.check(self.lib.cuTensorMapEncodeTiled(
            c.c_void_p(aligned), spec.dtype, rank, c.c_void_p(address), (c.c_uint64 * rank)(*spec.dims),
            (c.c_uint64 * max(rank - 1, 1))(*spec.strides), (c.c_uint32 * rank)(*spec.box),
            (c.c_uint32 * rank)(*([1] * rank)), 0, spec.swizzle, 0, 0), f"cuTensorMapEncodeTiled of {spec.tensor}")
        return ctypes.string_at(aligned, 128)  # read while ``raw``, which holds it, is alive


class Device:
    """The GPU: torch's allocator, streams and events, with the driver for Prism's modules."""

    place = "cuda"  # where torch puts the tensors

    def __init__(self) -> None:
        import torch

        self.torch = torch
        torch.zeros(1, device=self.place)  # creates torch's (the primary) context
        self.driver = Driver()
        self.driver.use_context(torch.cuda.current_device())
        self.flush_buffer = self.zeros(L2_FLUSH_BYTES)
        self.modules: dict[Path, Any] = {}

    def zeros(self, nbytes: int) -> Any:
        """A raw device buffer (uint8) of ``nbytes`` zeros."""
        return self.torch.zeros(nbytes, dtype=self.torch.uint8, device=self.place)

    def flush(self) -> None:
        """Evict the L2 cache by writing a buffer larger than it."""
        self.flush_buffer.zero_()

    def synchronize(self) -> None:
        """Wait for the device."""
        self.torch.cuda.synchronize()

    def event(self) -> Any:
        """A CUDA event that can time."""
        return self.torch.cuda.Event(enable_timing=True)

    def stream(self) -> int:
        """The handle of torch's current stream, where Prism's kernels are launched too."""
        return self.torch.cuda.current_stream().cuda_stream

    def upload(self, storage: np.ndarray) -> Any:
        """A raw device buffer (uint8) holding ``storage``'s bytes."""
        raw = np.ascontiguousarray(storage).reshape(-1).view(np.uint8).copy()
        return self.torch.from_numpy(raw).to(self.place)

    def typed(self, storage: np.ndarray, dtype: str) -> Any:
        """A device tensor of ``dtype`` (torch's) holding ``storage``."""
        torch = self.torch
        if dtype == "bf16":
            return torch.from_numpy(storage.view(np.int16).copy()).to(self.place).view(torch.bfloat16)
        return torch.from_numpy(storage.copy()).to(self.place)

    def download(self, buffer: Any, spec: Buffer) -> np.ndarray:
        """A device buffer's first bytes as ``spec``'s values, float64."""
        data = buffer[:spec.nbytes].cpu().numpy().view(STORAGE[spec.dtype]).reshape(spec.shape)
        return decode(data, spec.dtype)

    def module(self, unit: Unit) -> Any:
        """The unit's module, loaded once."""
        if unit.path not in self.modules:
            self.modules[unit.path] = self.driver.load(unit.ptx)
        return self.modules[unit.path]


# ---- running a workload on the device ---------------------------------------------------------------------------

class Bound:
    """A case's function on the device: its buffers allocated and each launch's parameters packed once."""

    def __init__(self, device: Device, case: Case) -> None:
        self.device, self.case = device, case
        self.memory: dict[str, Any] = {}
        self.maps: list[Any] = []  # device copies of the tensor maps, alive as long as the launches
        plan = case.plan
        for name, buffer in plan.buffers.items():
            if buffer.kind == "input":
                self.memory[name] = device.upload(case.storage[plan.inputs.index(name)])
            elif buffer.kind != "view":  # outputs and temporaries start at zero
                self.memory[name] = device.zeros(max(buffer.nbytes, 16))
        for name, buffer in plan.buffers.items():
            if buffer.kind == "view":
                self.memory[name] = self.memory[buffer.of]
        module = device.module(case.unit)
        self.calls = []
        for launch in plan.launches:
            values = [self._value(kind, item) for kind, item in launch.params]
            args = (ctypes.c_void_p * len(values))(*[ctypes.addressof(v) for v in values])
            func = device.driver.function(module, launch.kernel, launch.shared_bytes)
            self.calls.append((func, launch, args, values))

    def _value(self, kind: str, item: Any) -> ctypes._SimpleCData:
        """One packed parameter's value: a buffer's device address, an integer, or a tensor map's device address."""
        if kind == "ptr":
            return ctypes.c_uint64(self.memory[item].data_ptr())
        if kind == "i64":
            return ctypes.c_int64(item)
        encoded = self.device.driver.encode_tensor_map(item, self.memory[item.tensor].data_ptr())
        on_device = self.device.upload(np.frombuffer(encoded, np.uint8))
        self.maps.append(on_device)
        return ctypes.c_uint64(on_device.data_ptr())

    def run(self) -> None:
        """Launch every kernel in order on torch's current stream."""
        stream = self.device.stream()
        for func, launch, args, _ in self.calls:
            self.device.driver.launch(func, launch, args, stream)

    def check(self) -> list[float]:
        """Each output's error against the reference after one call, the outputs first filled with NaN (so an
        element left unwritten shows)."""
        plan = self.case.plan
        for name in plan.outputs:
            self.memory[name].fill_(255)
        self.run()
        self.device.synchronize()
        return [relative_error(self.device.download(self.memory[name], plan.buffers[name]), ref)
                for name, ref in zip(plan.outputs, self.case.reference, strict=True)]


def time_calls(device: Device, call: Callable[[], Any], budget_s: float) -> dict:
    """The median time of ``call`` in milliseconds by CUDA events, the L2 flushed before each call; after a
    warm-up, at least MIN_REPS calls unless one call alone would overrun ``budget_s``."""
    call()
    device.synchronize()
    start = time.perf_counter()
    for _ in range(3):
        device.flush()
        call()
    device.synchronize()
    each = max((time.perf_counter() - start) / 3, 1e-6)
    reps = int(min(MAX_REPS, max(MIN_REPS, budget_s / each)))
    if reps * each > max(budget_s, 1.0) * 2:
        reps = max(3, int(max(budget_s, 1.0) / each))
    events = [(device.event(), device.event()) for _ in range(reps)]
    for begin, end in events:
        device.flush()
        begin.record()
        call()
        end.record()
    device.synchronize()
    times = sorted(begin.elapsed_time(end) for begin, end in events)
    return {"ms": statistics.median(times), "min_ms": times[0], "reps": reps}


def baseline_calls(device: Device, case: Case, with_compile: bool) -> dict[str, Callable[[], tuple]]:
    """The workload's baselines on the same inputs: torch eager, ``torch.compile`` of the same code, SDPA."""
    torch = device.torch
    params = case.workload.get("params", {})
    reference = REFERENCES[case.workload["reference"]]
    tensors = [device.typed(s, t["dtype"]).reshape(v.shape)
               for s, t, v in zip(case.storage, case.spec["inputs"], case.values, strict=True)]
    calls: dict[str, Callable[[], tuple]] = {}
    for name in case.workload.get("baselines", ["torch", "compile"]):
        if name == "torch":
            calls[name] = lambda: reference.compute(TorchOps, params, *tensors)
        elif name == "compile" and with_compile:
            torch._dynamo.reset()  # the same lambda is compiled per workload: past its recompile limit it runs eager
            compiled = torch.compile(lambda *t: reference.compute(TorchOps, params, *t))
            calls[name] = lambda compiled=compiled: compiled(*tensors)
        elif name == "sdpa" and reference.sdpa is not None:
            calls[name] = reference.sdpa(torch, params, *tensors)
    return calls


def run_case(device: Device, case: Case, budget_s: float, with_compile: bool) -> dict:
    """Check a case's outputs, time it and its baselines; the result row."""
    result = describe(case)
    bound = Bound(device, case)
    errors = bound.check()
    result["error"] = max(errors, default=0.0)
    result["ok"] = all(e <= tolerance(case.workload, case.plan.buffers[o].dtype)
                       for e, o in zip(errors, case.plan.outputs, strict=True))
    share = budget_s / (2 + len(case.workload.get("baselines", [])))
    result["prism"] = time_calls(device, bound.run, share)
    after = bound.check()  # a kernel may fail only once launched again (a race, a buffer it expects zeroed)
    result["error_after_timing"] = max(after, default=0.0)
    result["ok"] = result["ok"] and all(a <= tolerance(case.workload, case.plan.buffers[o].dtype)
                                        for a, o in zip(after, case.plan.outputs, strict=True))
    for name, call in baseline_calls(device, case, with_compile).items():
        try:
            outputs = call()
            torch_errors = [relative_error(o.float().cpu().numpy().astype(np.float64), r)
                            for o, r in zip(outputs, case.reference, strict=True)]
            result["baselines"][name] = {**time_calls(device, call, share), "error": max(torch_errors, default=0.0)}
        except Exception as error:  # a baseline that fails is reported, not fatal
            result["baselines"][name] = {"failed": f"{type(error).__name__}: {str(error)[:300]}"}
    times = [b["ms"] for b in result["baselines"].values() if "ms" in b]
    result["ratio"] = min(times) / result["prism"]["ms"] if times else None
    return result


def describe(case: Case) -> dict:
    """A result row's fixed part: the workload, its shapes, its launches."""
    w = case.workload
    return {"name": w["name"], "unit": w.get("unit"), "function": w["function"], "dtype": w.get("dtype", ""),
            "shapes": [list(v.shape) for v in case.values], "flops": w.get("flops", 0), "bytes": w.get("bytes", 0),
            "kernels": [launch.kernel for launch in case.plan.launches], "skipped": case.plan.skipped,
            "baselines": {}}


# ---- reports ----------------------------------------------------------------------------------------------------

def _ms(entry: dict | None) -> str:
    if not entry:
        return "—"
    return f"{entry['ms']:.4f}" if "ms" in entry else "failed"


def write_reports(out: Path, results: list[dict], environment: dict) -> None:
    """``results.json`` (everything) and ``results.md`` (one table row per workload)."""
    out.mkdir(parents=True, exist_ok=True)
    (out / "results.json").write_text(json.dumps({"environment": environment, "results": results}, indent=1))
    lines = [f"# Prism on {environment.get('device', 'the GPU')}", "",
             "Times are medians in ms (CUDA events, L2 flushed before each call); error is max |out - ref| / "
             "max |ref| against float64; ratio is the best baseline's time over Prism's (above 1: Prism is faster).",
             "", "| workload | dtype | shape | error | Prism | torch | compile | sdpa | ratio |",
             "|---|---|---|---|---|---|---|---|---|"]
    for r in results:
        shape = ", ".join("x".join(map(str, s)) for s in r.get("shapes", []))
        if "failed" in r:
            lines.append(f"| {r['name']} | {r.get('dtype', '')} | {shape} | failed: {r['failed'][:120]} "
                         "| | | | | |")
            continue
        error = f"{r['error']:.2e}" + ("" if r["ok"] else " WRONG")
        ratio = f"{r['ratio']:.2f}" if r.get("ratio") else "—"
        b = r["baselines"]
        lines.append(f"| {r['name']} | {r['dtype']} | {shape} | {error} | {_ms(r['prism'])} | {_ms(b.get('torch'))} "
                     f"| {_ms(b.get('compile'))} | {_ms(b.get('sdpa'))} | {ratio} |")
    (out / "results.md").write_text("\n".join(lines) + "\n")


def environment(device: Device) -> dict:
    """The GPU, driver and torch this run used."""
    torch = device.torch
    version = ctypes.c_int()
    device.driver.lib.cuDriverGetVersion(ctypes.byref(version))
    return {"device": torch.cuda.get_device_name(), "driver": version.value, "torch": torch.__version__,
            "cuda": torch.version.cuda}


# ---- main -------------------------------------------------------------------------------------------------------

def load_workloads(bundle: Path, only: list[str]) -> list[dict]:
    """The bundle's workloads, those matching one of ``only`` (names or globs) if given."""
    path = bundle / "workloads.json"
    if not path.exists():
        raise ManifestError(f"{path}: no such file")
    try:
        workloads = json.loads(path.read_text())
    except json.JSONDecodeError as error:
        raise ManifestError(f"{path}: not JSON ({error})") from None
    if not isinstance(workloads, list) or not all(isinstance(w, dict) and "name" in w for w in workloads):
        raise ManifestError(f"{path}: expected a list of workloads, each with a name")
    if only:
        workloads = [w for w in workloads if any(fnmatch.fnmatchcase(w["name"], p) for p in only)]
        if not workloads:
            raise ManifestError(f"{path}: no workload matches {' or '.join(only)}")
    return workloads


def prepared(bundle: Path, workloads: list[dict]) -> Iterator[Case | dict]:
    """Each workload made ready in turn (only one holds its arrays at a time), or a failed row saying why."""
    units: dict[str | None, Unit | ManifestError] = {}
    for workload in workloads:
        try:
            case = prepare(bundle, workload, units)
        except ManifestError as error:
            print(f"error: {error}", file=sys.stderr)
            yield {"name": workload["name"], "dtype": workload.get("dtype", ""), "failed": str(error)}
            continue
        launches = case.plan.launches
        print(f"ok     {workload['name']}: {len(launches)} launches ({len(case.plan.skipped)} skipped), "
              f"{sum(len(launch.params) for launch in launches)} kernel parameters", flush=True)
        yield case


def dry_run(bundle: Path, workloads: list[dict]) -> int:
    """Check every workload without a GPU; the exit status."""
    failed = sum(isinstance(case, dict) for case in prepared(bundle, workloads))
    print(f"{len(workloads) - failed} of {len(workloads)} workloads ready" + (f"; {failed} failed" if failed else ""))
    return 1 if failed else 0


def run_all(bundle: Path, workloads: list[dict], out: Path, budget_s: float, started: float) -> int:
    """Run every workload on the GPU within the time budget, writing the reports after each; the exit status."""
    device = Device()
    env = environment(device)
    results: list[dict] = []
    deadline = started + budget_s
    for i, case in enumerate(prepared(bundle, workloads)):
        if isinstance(case, dict):
            results.append(case)
            continue
        left = deadline - time.monotonic()
        share = max(0.5, left / (len(workloads) - i) - 1.0)
        try:
            results.append(run_case(device, case, share, with_compile=left > 60))
        except Exception as error:  # a launch that fails is reported; the next workloads still run
            results.append({**describe(case), "failed": f"{type(error).__name__}: {str(error)[:500]}"})
        r = results[-1]
        status = r.get("failed") or f"error {r['error']:.2e}{'' if r['ok'] else ' WRONG'}, {r['prism']['ms']:.4f} ms"
        print(f"[{i + 1}/{len(workloads)}] {case.workload['name']}: {status}", flush=True)
        write_reports(out, results, env)
    return 0 if all("failed" not in r and r["ok"] for r in results) else 1


def main(argv: list[str] | None = None) -> int:
    """Dry-run or run a bundle; 0 when every workload is well formed (and, on a GPU, right)."""
    started = time.monotonic()
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("bundle", nargs="?", default=str(Path(__file__).resolve().parent),
                        help="the bundle's folder (default: this file's)")
    parser.add_argument("--dry-run", action="store_true", help="check manifests, packing and references; no GPU")
    parser.add_argument("--only", action="append", default=[], help="run the workloads of this name or glob")
    parser.add_argument("--budget", type=float, default=420.0, help="seconds the whole run may take")
    parser.add_argument("--out", default=None, help="where to write results.json and results.md (default: bundle)")
    args = parser.parse_args(argv)
    bundle = Path(args.bundle)
    try:
        workloads = load_workloads(bundle, args.only)
    except ManifestError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    if args.dry_run:
        return dry_run(bundle, workloads)
    return run_all(bundle, workloads, Path(args.out) if args.out else bundle, args.budget, started)


if __name__ == "__main__":
    sys.exit(main())
