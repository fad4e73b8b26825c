"""The launch manifest: everything a runtime needs to run a compilation's kernels.

Format version 1 (JSON; ``docs/gpu.md`` documents it for users)::

    {"version": 1, "chip": "sm_90a", "module": "prism_kernels",
     "functions": {"f": {
        "inputs":  [{"name": "arg_0", "dtype": "f16", "shape": [16, "size_0"]}],
        "outputs": [{"name": "result_0", "dtype": "f16", "shape": [16, 1024]}],
        "sizes": {"size_0": {"input": "arg_0", "dim": 1}, "size_1": {"expr": "size_0 * 4"}},
        "temporaries": [{"name": "tmp_0", "dtype": "f32", "shape": ["size_0", 4096]}],
        "kernels": [{"name": "f_k0_gemm", "grid": ["cdiv(size_0, 128)", "8", "1"], "block": [384, 1, 1],
                     "shared_bytes": 98304, "when": null, "max_registers": 168,
                     "params": [{"tensor": "arg_0"}, {"size": "size_0"}, {"tensormap": {...}}]}]}}}

Kernels are listed in launch order; a kernel with ``when`` runs only where
that expression of the sizes holds (a size class). Temporaries are device
buffers, zeroed before the function's first kernel. A tensor parameter is a
1-D memref descriptor (5 kernel parameters), a size one 64-bit integer, a
tensor map the device address of a 128-byte ``CUtensorMap``.
"""

from __future__ import annotations

import ast
import dataclasses
import operator

from prism.codegen.gpu.plan import FunctionPlan
from prism.codegen.gpu.ptx import MODULE_NAME
from prism.codegen.gpu.spec import Kernel, Param, Tensor

VERSION = 1


def _tensor(t: Tensor) -> dict:
    return {"name": t.name, "dtype": t.dtype, "shape": list(t.shape)}


def _param(p: Param) -> dict:
    if p.kind == "tensormap":
        return {"tensormap": {k: (list(v) if isinstance(v, tuple) else v)
                              for k, v in dataclasses.asdict(p.tensormap).items()}}
    return {p.kind: p.name}


def _kernel(k: Kernel) -> dict:
    launch = k.launch
    return {"name": k.name, "grid": list(launch.grid), "block": list(launch.block),
            "shared_bytes": launch.shared_bytes, "when": launch.when, "max_registers": k.max_registers,
            "params": [_param(p) for p in launch.params]}


def function_manifest(plan: FunctionPlan, kernels: list[Kernel]) -> dict:
    temporaries = list(plan.temporaries)
    for k in kernels:
        temporaries += [t for t in k.temporaries if t not in temporaries]
    return {"inputs": [_tensor(t) for t in plan.inputs], "outputs": [_tensor(t) for t in plan.outputs],
            "sizes": dict(plan.sizes), "temporaries": [_tensor(t) for t in temporaries],
            "kernels": [_kernel(k) for k in kernels]}


def manifest(chip: str, plans: list[FunctionPlan], kernels: dict[str, list[Kernel]]) -> dict:
    """The manifest of one compilation (see the module docstring)."""
    return {"version": VERSION, "chip": chip, "module": MODULE_NAME,
            "functions": {p.name: function_manifest(p, kernels[p.name]) for p in plans}}


_BINARY = {ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul, ast.FloorDiv: operator.floordiv}
_COMPARE = {ast.Lt: operator.lt, ast.LtE: operator.le, ast.Gt: operator.gt, ast.GtE: operator.ge,
            ast.Eq: operator.eq, ast.NotEq: operator.ne}
_CALLS = {"cdiv": lambda a, b: -(-a // b), "min": min, "max": max}


def evaluate(expression: int | str, sizes: dict[str, int]) -> int:
    """The value of a manifest expression: integers, size symbols, ``+ - * //``, comparisons, ``and``/``or``/``not``
    (a condition is 0 or 1), ``cdiv``, ``min``, ``max``; what a launcher evaluates for grids and ``when``."""
    if isinstance(expression, int):
        return expression
    return int(_walk(ast.parse(expression, mode="eval").body, sizes))


def _walk(node: ast.AST, sizes: dict[str, int]) -> int:
    if isinstance(node, ast.Constant) and isinstance(node.value, int):
        return node.value
    if isinstance(node, ast.Name):
        return sizes[node.id]
    if isinstance(node, ast.BinOp) and type(node.op) in _BINARY:
        return _BINARY[type(node.op)](_walk(node.left, sizes), _walk(node.right, sizes))
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub | ast.Not):
        value = _walk(node.operand, sizes)
        return -value if isinstance(node.op, ast.USub) else int(not value)
    if isinstance(node, ast.BoolOp):
        values = [_walk(v, sizes) for v in node.values]
        return int(all(values) if isinstance(node.op, ast.And) else any(values))
    if isinstance(node, ast.Compare) and all(type(op) in _COMPARE for op in node.ops):
        values = [_walk(v, sizes) for v in [node.left, *node.comparators]]
        return int(all(_COMPARE[type(op)](a, b) for op, a, b in zip(node.ops, values, values[1:], strict=False)))
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id in _CALLS:
        return _CALLS[node.func.id](*(_walk(a, sizes) for a in node.args))
    raise ValueError(f"not a manifest expression: {ast.unparse(node)}")


def bind_sizes(sizes: dict[str, dict], inputs: dict) -> dict[str, int]:
    """Each size symbol's value, from the inputs (by name: a shape, or the value of an ``index`` argument) and
    the expressions of those before it."""
    values: dict[str, int] = {}
    for symbol, source in sizes.items():
        if "expr" in source:
            values[symbol] = evaluate(source["expr"], values)
        elif "dim" in source:
            values[symbol] = inputs[source["input"]][source["dim"]]
        else:  # an index argument: the size is the input's value
            values[symbol] = int(inputs[source["input"]])
    return values
