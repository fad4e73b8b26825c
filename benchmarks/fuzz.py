"""A program fuzzer: random small Linalg programs through prism-optimize, the host JIT and ptxas.

Each program is a function of one to three arguments built from random
steps: products with any operand layout (``linalg.matmul``, a generic with a
transposed operand, ``linalg.batch_matmul``, a generic of one weight for every
row of the leading dimensions), elementwise chains (named ops,
generics, and ``arith``/``math`` ops on whole tensors, erf and tanh among
them), a 0-d argument broadcast into an elementwise op, row reductions with
their broadcast back, and transposes. Sizes are 1, odd or powers of two;
element types f32, f16, or f16 inputs with f32 products; some functions
have a dynamic leading dimension, and some are of rank 3 or 4 with several
dynamic dimensions.

Every program is compiled for the host and run on random inputs against a
float64 numpy evaluation of the same steps (a program of f16 values may
match it with every f16 value rounded as stored instead: ``matches``), and
compiled for an H200, whose
PTX ``ptxas`` must assemble. Each outcome is one of:

- ``ok``: right results (and PTX that assembles, when a GPU build was made);
- ``refused``: a clean PrismError (counted by reason; a refusal is an answer);
- ``wrong``: results beyond the tolerance;
- ``traceback``: an exception that is not a PrismError (a bug);
- ``abort``: the process died (an assertion in MLIR, a segfault);
- ``ptxas``: PTX that ptxas rejects;
- ``timeout``: no answer within the time limit.

Programs run in a worker process, so an abort is counted rather than fatal.

    .venv/bin/python benchmarks/fuzz.py --programs 200 --seed 0
    .venv/bin/python benchmarks/fuzz.py --programs 20 --seed 7 --show 3   # print three programs
"""

from __future__ import annotations

import argparse
import json
import math
import os
import re
import subprocess
import sys
import tempfile
import time
import traceback
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

SIZES = (1, 3, 5, 7, 8, 13, 16, 17, 32, 33, 64)
# Relative to the largest magnitude of the reference result.
TOLERANCE = {"f32": 2e-4, "f16": 3e-2}
DYNAMIC_SIZE = 11  # the size a dynamic dimension gets when the program runs
TIMEOUT_SECONDS = 300
BAD = ("wrong", "traceback", "abort", "ptxas", "timeout")

Evaluate = Callable[[list[np.ndarray]], np.ndarray]


@dataclass
class Value:
    """A tensor of the program: its SSA name, shape (None for the dynamic dimension), type and float64 meaning
    (within :func:`stored_in_f16`, an f16 value's meaning is rounded to f16, as the program stores it)."""

    name: str
    shape: tuple[int | None, ...]
    dtype: str
    evaluate: Evaluate

    def __post_init__(self) -> None:
        if self.dtype == "f16":
            exact = self.evaluate
            self.evaluate = lambda inputs: _as_stored(exact(inputs))


_F16_STORAGE = [False]  # whether f16 values are evaluated as stored (see stored_in_f16)


def _as_stored(value: np.ndarray) -> np.ndarray:
    return value.astype(np.float16).astype(np.float64) if _F16_STORAGE[0] else value


@contextmanager
def stored_in_f16() -> Iterator[None]:
    """Evaluate every f16 value rounded to f16 after its op, as the program's own types say."""
    _F16_STORAGE[0] = True
    try:
        yield
    finally:
        _F16_STORAGE[0] = False


def matches(got: np.ndarray, value: Value, inputs: list[np.ndarray], precision: str) -> bool:
    """Whether ``got`` is ``value`` within the tolerance of ``precision``: of its float64 meaning, or, for a
    program of f16 values, of its meaning with each f16 value rounded as stored. Either is a right answer: a
    chain that subtracts a row's large sum and then its maximum loses in the stored f16 sum what float64 keeps,
    more than the tolerance, and a program may keep such a value in f32 or round it as its type says."""
    if _close(got, value.evaluate(inputs), precision):
        return True
    if precision != "f16":
        return False
    with stored_in_f16():
        return _close(got, value.evaluate(inputs), precision)


@dataclass
class Program:
    """A generated function, its arguments and the float64 evaluation of each result."""

    name: str
    text: str
    args: list[Value]
    results: list[Value]
    steps: list[str] = field(default_factory=list)

    def inputs(self, rng: np.random.Generator) -> list[np.ndarray]:
        """Random arguments (dynamic dimensions DYNAMIC_SIZE), small enough that exp stays finite."""
        return [np.asarray(0.5 * rng.standard_normal([DYNAMIC_SIZE if d is None else d for d in arg.shape]))
                .astype(np.float16 if arg.dtype == "f16" else np.float32) for arg in self.args]


class Builder:
    """Writes one function step by step, keeping each value's numpy meaning beside its MLIR."""

    def __init__(self, rng: np.random.Generator, name: str, dynamic: bool, extra: np.random.Generator | None = None,
                 later: np.random.Generator | None = None):
        self.rng = rng
        # The forms added after the recorded runs draw from their own stream, so that a seed's older forms
        # stay as they were; those added after the programs of FOUND (tests/python/test_fuzz.py), from another.
        self.extra = extra or np.random.default_rng()
        self.later = later or np.random.default_rng()
        self.name = name
        self.dynamic = dynamic
        self.lines: list[str] = []
        self.args: list[Value] = []
        self.count = 0
        self.steps: list[str] = []

    def fresh(self) -> str:
        self.count += 1
        return f"%v{self.count}"

    def type(self, shape: tuple[int | None, ...], dtype: str) -> str:
        return "tensor<" + "".join(f"{'?' if d is None else d}x" for d in shape) + dtype + ">"

    def arg(self, shape: tuple[int | None, ...], dtype: str) -> Value:
        index = len(self.args)
        value = Value(f"%arg{index}", shape, dtype, lambda inputs, i=index: inputs[i].astype(np.float64))
        self.args.append(value)
        return value

    def empty(self, shape: tuple[int | None, ...], dtype: str) -> str:
        """A tensor.empty of ``shape``; each dynamic dimension is read off the first argument's (dynamic
        dimensions lead, and every value keeps the first argument's)."""
        name = self.fresh()
        sizes = []
        first = self.args[0]
        for index in (i for i, d in enumerate(shape) if d is None):
            constant, dim = self.fresh(), self.fresh()
            self.lines.append(f"{constant} = arith.constant {index} : index")
            self.lines.append(f"{dim} = tensor.dim {first.name}, {constant} : {self.type(first.shape, first.dtype)}")
            sizes.append(dim)
        self.lines.append(f"{name} = tensor.empty({', '.join(sizes)}) : {self.type(shape, dtype)}")
        return name

    def tensor_op(self, op: str, operands: list[Value], shape: tuple[int | None, ...], dtype: str) -> str:
        """``op`` applied to whole tensors (``arith.addf %a, %b : tensor<...>``)."""
        name = self.fresh()
        self.lines.append(f"{name} = {op} {', '.join(v.name for v in operands)} : {self.type(shape, dtype)}")
        return name

    def zeros(self, shape: tuple[int | None, ...], dtype: str) -> str:
        empty, zero, filled = self.empty(shape, dtype), self.fresh(), self.fresh()
        self.lines.append(f"{zero} = arith.constant 0.0 : {dtype}")
        self.lines.append(f"{filled} = linalg.fill ins({zero} : {dtype}) outs({empty} : {self.type(shape, dtype)}) "
                          f"-> {self.type(shape, dtype)}")
        return filled

    def generic(self, inputs: list[tuple[Value, str]], shape: tuple[int | None, ...], dtype: str, iterators: list[str],
                out_map: str, body: list[str], init: str | None = None) -> str:
        """A linalg.generic over ``inputs`` (each with its indexing map); ``body`` computes %r from %in0.. and %acc."""
        name = self.fresh()
        init = init or self.empty(shape, dtype)
        dims = ", ".join(f"d{i}" for i in range(len(iterators)))
        maps = ", ".join(f"affine_map<({dims}) -> ({m})>" for m in [*(m for _, m in inputs), out_map])
        ins = ", ".join(v.name for v, _ in inputs)
        types = ", ".join(self.type(v.shape, v.dtype) for v, _ in inputs)
        block = ", ".join([*(f"%in{i}: {v.dtype}" for i, (v, _) in enumerate(inputs)), f"%acc: {dtype}"])
        self.lines.append(f"{name} = linalg.generic {{indexing_maps = [{maps}], iterator_types = "
                          f"[{', '.join(repr(i).replace(chr(39), chr(34)) for i in iterators)}]}} "
                          f"ins({ins} : {types}) outs({init} : {self.type(shape, dtype)}) {{")
        self.lines.append(f"^bb0({block}):")
        self.lines += ["  " + line for line in body]
        self.lines.append(f"  linalg.yield %r : {dtype}")
        self.lines.append(f"}} -> {self.type(shape, dtype)}")
        return name

    def text(self, results: list[Value]) -> str:
        args = ", ".join(f"{a.name}: {self.type(a.shape, a.dtype)}" for a in self.args)
        types = ", ".join(self.type(r.shape, r.dtype) for r in results)
        body = "\n".join("  " + line for line in self.lines)
        signature = f"({types})" if len(results) > 1 else types
        return (f"func.func @{self.name}({args}) -> {signature} {{\n{body}\n"
                f"  return {', '.join(r.name for r in results)} : {types}\n}}\n")


def _size(rng: np.random.Generator) -> int:
    return int(rng.choice(SIZES))


def _dims(rank: int) -> list[str]:
    return [f"d{i}" for i in range(rank)]


def product(b: Builder, x: Value, out_dtype: str) -> Value:
    """x @ W for a new argument W, stored as [K, N] or [N, K]; a named op or a generic; batched at rank 3 and
    beyond, or (a generic) one W for every row of the leading dimensions."""
    rng, k, n = b.rng, x.shape[-1], _size(b.rng)
    rank = len(x.shape)
    transposed = rank == 2 and bool(rng.integers(2))
    shared = rank > 2 and b.later.random() < 0.4
    w = b.arg((n, k) if transposed else (k, n) if shared else (*x.shape[:-2], k, n), x.dtype)
    shape = (*x.shape[:-1], n)
    init = b.zeros(shape, out_dtype)
    name = b.fresh()
    if transposed or rng.integers(3) == 0 or rank > 3 or shared:
        m_dims = _dims(rank + 1)  # batch... (rows of a shared W), m, n, k
        lead, (mm, nn, kk) = m_dims[:-3], m_dims[-3:]
        a_map = ", ".join([*lead, mm, kk])
        b_map = ", ".join([nn, kk] if transposed else [kk, nn] if shared else [*lead, kk, nn])
        c_map = ", ".join([*lead, mm, nn])
        extend = [] if out_dtype == x.dtype else [f"%a = arith.extf %in0 : {x.dtype} to {out_dtype}",
                                                  f"%b = arith.extf %in1 : {x.dtype} to {out_dtype}"]
        lhs, rhs = ("%a", "%b") if extend else ("%in0", "%in1")
        body = [*extend, f"%p = arith.mulf {lhs}, {rhs} : {out_dtype}", f"%r = arith.addf %acc, %p : {out_dtype}"]
        name = b.generic([(x, a_map), (w, b_map)], shape, out_dtype, ["parallel"] * (rank) + ["reduction"],
                         c_map, body, init=init)
        b.steps.append(f"generic product{' (B transposed)' if transposed else ' (B shared)' if shared else ''}")
    else:
        op = "linalg.batch_matmul" if rank == 3 else "linalg.matmul"
        b.lines.append(f"{name} = {op} ins({x.name}, {w.name} : {b.type(x.shape, x.dtype)}, "
                       f"{b.type(w.shape, w.dtype)}) outs({init} : {b.type(shape, out_dtype)}) "
                       f"-> {b.type(shape, out_dtype)}")
        b.steps.append(op)
    wx, ww = x.evaluate, w.evaluate
    if transposed:
        evaluate = lambda inputs: wx(inputs) @ ww(inputs).T  # noqa: E731
    else:
        evaluate = lambda inputs: wx(inputs) @ ww(inputs)  # noqa: E731
    return Value(name, shape, out_dtype, evaluate)


_BINARY = {"add": ("arith.addf", np.add), "sub": ("arith.subf", np.subtract), "mul": ("arith.mulf", np.multiply),
           "max": ("arith.maximumf", np.maximum)}


# Unary ops that stay bounded, whatever they are chained with.
_UNARY = {"neg": ("arith.negf", np.negative), "erf": ("math.erf", np.vectorize(math.erf)),
          "tanh": ("math.tanh", np.tanh)}


def elementwise(b: Builder, x: Value) -> Value:
    """A binary op with a new argument of x's shape, or a unary one; a named op or a generic."""
    rng = b.rng
    rank = len(x.shape)
    identity = ", ".join(_dims(rank))
    if rng.integers(3):
        kind = str(rng.choice(list(_BINARY)))
        other = b.arg(x.shape, x.dtype)
        op, fn = _BINARY[kind]
        if rng.integers(2):
            name = b.generic([(x, identity), (other, identity)], x.shape, x.dtype, ["parallel"] * rank, identity,
                             [f"%r = {op} %in0, %in1 : {x.dtype}"])
            b.steps.append(f"generic {kind}")
        elif b.extra.random() < 0.4:
            name = b.tensor_op(op, [x, other], x.shape, x.dtype)
            b.steps.append(f"tensor {op}")
        else:
            name = b.fresh()
            named = {"add": "linalg.add", "sub": "linalg.sub", "mul": "linalg.mul", "max": "linalg.max"}[kind]
            init = b.empty(x.shape, x.dtype)
            t = b.type(x.shape, x.dtype)
            b.lines.append(f"{name} = {named} ins({x.name}, {other.name} : {t}, {t}) outs({init} : {t}) -> {t}")
            b.steps.append(named)
        wx, wo = x.evaluate, other.evaluate
        return Value(name, x.shape, x.dtype, lambda inputs: fn(wx(inputs), wo(inputs)))
    unary = str(rng.choice(["exp", "neg"]))
    if b.extra.random() < 0.4:
        unary = str(b.extra.choice(["neg", "erf", "tanh"]))
        if b.extra.random() < 0.5:
            op, fn = _UNARY[unary]
            name = b.tensor_op(op, [x], x.shape, x.dtype)
            b.steps.append(f"tensor {op}")
            wx = x.evaluate
            return Value(name, x.shape, x.dtype, lambda inputs: fn(wx(inputs)))
    if unary in ("erf", "tanh"):
        op, fn = _UNARY[unary]
        body = [f"%r = {op} %in0 : {x.dtype}"]
    elif unary == "exp":
        # exp of a scaled value: 0.25 keeps chains of products finite in f16.
        body = [f"%c = arith.constant 0.25 : {x.dtype}", f"%s = arith.mulf %in0, %c : {x.dtype}",
                f"%r = math.exp %s : {x.dtype}"]
        fn = lambda v: np.exp(0.25 * v)  # noqa: E731
    else:
        body = [f"%r = arith.negf %in0 : {x.dtype}"]
        fn = np.negative
    name = b.generic([(x, identity)], x.shape, x.dtype, ["parallel"] * rank, identity, body)
    b.steps.append(f"generic {unary}")
    wx = x.evaluate
    return Value(name, x.shape, x.dtype, lambda inputs: fn(wx(inputs)))


def scalar_operand(b: Builder, x: Value) -> Value:
    """x combined with a new 0-d argument, read through ``(d0, ...) -> ()``, as either operand."""
    kind = str(b.rng.choice(list(_BINARY)))
    op, fn = _BINARY[kind]
    scalar = b.arg((), x.dtype)
    identity = ", ".join(_dims(len(x.shape)))
    first = bool(b.rng.integers(2))
    inputs = [(scalar, ""), (x, identity)] if first else [(x, identity), (scalar, "")]
    name = b.generic(inputs, x.shape, x.dtype, ["parallel"] * len(x.shape), identity,
                     [f"%r = {op} %in0, %in1 : {x.dtype}"])
    b.steps.append(f"generic {kind} with a 0-d {'first' if first else 'second'} operand")
    wx, ws = x.evaluate, scalar.evaluate
    if first:
        return Value(name, x.shape, x.dtype, lambda inputs: fn(ws(inputs), wx(inputs)))
    return Value(name, x.shape, x.dtype, lambda inputs: fn(wx(inputs), ws(inputs)))


def reduce_and_broadcast(b: Builder, x: Value) -> Value:
    """x - broadcast(reduce(x, last axis)), the reduction a sum or a max (the shape of a softmax's first steps)."""
    rank = len(x.shape)
    kind = str(b.rng.choice(["sum", "max"]))
    dims = _dims(rank)
    reduced_shape = x.shape[:-1]
    op = "arith.addf" if kind == "sum" else "arith.maximumf"
    start = "0.0" if kind == "sum" else "-65504.0" if x.dtype == "f16" else "-3.0e38"
    init_empty = b.empty(reduced_shape, x.dtype)
    init_value, init = b.fresh(), b.fresh()
    t = b.type(reduced_shape, x.dtype)
    b.lines.append(f"{init_value} = arith.constant {start} : {x.dtype}")
    b.lines.append(f"{init} = linalg.fill ins({init_value} : {x.dtype}) outs({init_empty} : {t}) -> {t}")
    reduced = b.generic([(x, ", ".join(dims))], reduced_shape, x.dtype, ["parallel"] * (rank - 1) + ["reduction"],
                        ", ".join(dims[:-1]), [f"%r = {op} %in0, %acc : {x.dtype}"], init=init)
    r = Value(reduced, reduced_shape, x.dtype, lambda inputs, w=x.evaluate, k=kind:
              (np.sum if k == "sum" else np.max)(w(inputs), axis=-1))
    name = b.generic([(x, ", ".join(dims)), (r, ", ".join(dims[:-1]))], x.shape, x.dtype, ["parallel"] * rank,
                     ", ".join(dims), [f"%r = arith.subf %in0, %in1 : {x.dtype}"])
    b.steps.append(f"reduce_{kind} and broadcast")
    wx, wr = x.evaluate, r.evaluate
    return Value(name, x.shape, x.dtype, lambda inputs: wx(inputs) - wr(inputs)[..., None])


def transpose(b: Builder, x: Value) -> Value:
    """The last two axes swapped, by linalg.transpose."""
    rank = len(x.shape)
    perm = [*range(rank - 2), rank - 1, rank - 2]
    shape = tuple(x.shape[p] for p in perm)
    init, name = b.empty(shape, x.dtype), b.fresh()
    b.lines.append(f"{name} = linalg.transpose ins({x.name} : {b.type(x.shape, x.dtype)}) "
                   f"outs({init} : {b.type(shape, x.dtype)}) permutation = {perm}")
    b.steps.append("linalg.transpose")
    wx = x.evaluate
    return Value(name, shape, x.dtype, lambda inputs: np.swapaxes(wx(inputs), -1, -2))


def generate(seed: int) -> Program:
    """The program of ``seed``: the same seed gives the same program."""
    rng = np.random.default_rng(seed)
    extra = np.random.default_rng([seed, 1])  # see Builder.extra
    later = np.random.default_rng([seed, 2])
    dynamic = rng.random() < 0.2
    batched = not dynamic and rng.random() < 0.2
    style = str(rng.choice(["f32", "f32", "f16", "mixed"]))
    dtype = "f32" if style == "f32" else "f16"
    b = Builder(rng, f"fuzz{seed}", dynamic, extra, later)
    shape = (None if dynamic else _size(rng), _size(rng))
    shape = (_size(rng), *shape) if batched else shape
    if not dynamic and extra.random() < 0.15:
        # Rank 3 or 4 with several dynamic dimensions (leading), the last one static.
        rank = int(extra.integers(3, 5))
        lead = [None if extra.random() < 0.7 else _size(extra) for _ in range(rank - 1)]
        lead[:2] = [None, None]
        extra.shuffle(lead)
        shape, dynamic = (*lead, shape[-1]), True
    x = b.arg(shape, dtype)
    results = []
    for _ in range(int(rng.integers(1, 5))):
        step = str(rng.choice(["product", "product", "elementwise", "scalar", "reduce", "transpose"]))
        if step == "product":
            x = product(b, x, "f32" if style == "mixed" else x.dtype)
        elif step == "elementwise":
            x = elementwise(b, x)
        elif step == "scalar":
            x = scalar_operand(b, x)
        elif step == "reduce":
            x = reduce_and_broadcast(b, x)
        elif not dynamic:
            x = transpose(b, x)
        if rng.random() < 0.15 and x not in results:
            results.append(x)
    if x not in results:
        results.append(x)
    return Program(b.name, b.text(results), b.args, results, b.steps)


def _reason(error: Exception) -> str:
    """A refusal's kind: its class and message, with names, numbers and locations taken out."""
    message = str(error).split(";")[0]
    message = re.sub(r"'[^']*\d[^']*'|@\w+|\S*\.mlir\S*|<string>:\S*|-?\d+(\.\d+)?(e-?\d+)?", "_", message)
    return f"{type(error).__name__}: {message.strip()}"[:140]


def _close(got: np.ndarray, want: np.ndarray, dtype: str) -> bool:
    if got.shape != want.shape:
        return False
    scale = max(1.0, float(np.abs(want).max(initial=0.0)))
    return bool(np.all(np.abs(got.astype(np.float64) - want) <= TOLERANCE[dtype] * scale))


def check_host(program: Program, rng: np.random.Generator) -> tuple[str, str]:
    """Optimize for the host, run, and compare with float64 numpy."""
    import prism

    try:
        run = prism.compile(program.text, target="host").jit(program.name)
        inputs = program.inputs(rng)
        got = run(*inputs)
    except prism.PrismError as error:
        return "refused", _reason(error)
    got = got if isinstance(got, tuple) else (got,)
    # f16 values anywhere upstream (rounded intermediates, f16 accumulation) set the precision of every result.
    precision = "f16" if any(a.dtype == "f16" for a in program.args) else "f32"
    for result, value in zip(got, program.results, strict=True):
        if not matches(result, value, inputs, precision):
            return "wrong", f"{value.name} differs from numpy"
    return "ok", ""


def check_tiled(program: Program, rng: np.random.Generator) -> tuple[str, str]:
    """Optimize for an H200 and run the GPU kernels' tiled program on the host; compare with float64 numpy."""
    import prism

    try:
        run = prism.compile(program.text, target="h200", emit="mlir").tiled(program.name)
        inputs = program.inputs(rng)
        got = run(*inputs)
    except prism.PrismError as error:
        return "refused", _reason(error)
    precision = "f16" if any(a.dtype == "f16" for a in program.args) else "f32"
    for result, value in zip(got, program.results, strict=True):
        if not matches(result, value, inputs, precision):
            return "wrong", f"{value.name} differs from numpy in the GPU's tiled program"
    return "ok", ""


def check_gpu(program: Program) -> tuple[str, str]:
    """Optimize and lower for an H200, then assemble the PTX module with ptxas for sm_90a; a function left off
    the GPU (with a remark) makes the program refused."""
    import prism

    try:
        compiled = prism.compile(program.text, target="h200", emit="ptx")
    except prism.PrismError as error:
        return "refused", _reason(error)
    if set(compiled.manifest["functions"]) != set(re.findall(r"func\.func @(\w+)", program.text)):
        return "refused", "a function stays off the GPU"
    with tempfile.TemporaryDirectory() as scratch:
        path = Path(scratch) / "module.ptx"
        path.write_text(compiled.ptx_text)
        assembled = subprocess.run(["ptxas", "-arch=sm_90a", str(path), "-o", os.devnull],
                                   capture_output=True, text=True)
        if assembled.returncode:
            return "ptxas", assembled.stderr.strip().splitlines()[0][:140]
    return "ok", ""


def check(seed: int, gpu: bool) -> dict:
    """Every outcome for the program of ``seed``; a non-Prism exception is a traceback."""
    program = generate(seed)
    outcome = {"seed": seed, "steps": program.steps}
    for target, checker in (("host", lambda: check_host(program, np.random.default_rng(seed))),
                            ("h200", lambda: check_gpu(program))):
        if target == "h200" and not gpu:
            continue
        try:
            outcome[target] = checker()
        except Exception as error:  # noqa: BLE001  (the fuzzer's job is to find these)
            outcome[target] = ("traceback", f"{type(error).__name__}: {error}"[:200])
            outcome[f"{target}_traceback"] = traceback.format_exc()
    return outcome


def _worker() -> int:
    """Answer one JSON request per line: {"seed": s, "gpu": bool} -> the outcome."""
    for line in sys.stdin:
        request = json.loads(line)
        print(json.dumps(check(request["seed"], request["gpu"])), flush=True)
    return 0


class Worker:
    """A child process that checks programs one at a time, restarted when it dies."""

    def __init__(self) -> None:
        self.process: subprocess.Popen | None = None

    def check(self, seed: int, gpu: bool) -> dict:
        if self.process is None or self.process.poll() is not None:
            self.process = subprocess.Popen([sys.executable, __file__, "--worker"], stdin=subprocess.PIPE,
                                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        assert self.process.stdin and self.process.stdout
        self.process.stdin.write(json.dumps({"seed": seed, "gpu": gpu}) + "\n")
        self.process.stdin.flush()
        line = _read_line(self.process, TIMEOUT_SECONDS)
        if line is None:
            self.process.kill()
            self.process = None
            return {"seed": seed, "steps": generate(seed).steps,
                    "host": ("timeout", f"no answer in {TIMEOUT_SECONDS} s")}
        if not line:
            code = self.process.wait()
            self.process = None
            return {"seed": seed, "steps": generate(seed).steps, "host": ("abort", f"worker exited with {code}")}
        return json.loads(line)

    def close(self) -> None:
        if self.process is not None:
            self.process.stdin.close()
            self.process.wait()


def _read_line(process: subprocess.Popen, timeout: float) -> str | None:
    """One line of the worker's output, '' if it died, None if it said nothing for ``timeout`` seconds."""
    import selectors

    with selectors.DefaultSelector() as selector:
        selector.register(process.stdout, selectors.EVENT_READ)
        if not selector.select(timeout):
            return None
    return process.stdout.readline()


def fuzz(seeds: list[int], gpu: bool, progress: Callable[[dict], None] = lambda outcome: None) -> list[dict]:
    """The outcome of every program, checked in a worker process."""
    worker = Worker()
    try:
        outcomes = []
        for seed in seeds:
            outcomes.append(worker.check(seed, gpu))
            progress(outcomes[-1])
        return outcomes
    finally:
        worker.close()


def summary(outcomes: list[dict]) -> list[str]:
    """A Markdown table of outcomes per target, then the refusals by reason, then every bad outcome."""
    lines = ["| target | programs | " + " | ".join(["ok", "refused", *BAD]) + " |",
             "| --- | --- | " + " | ".join(["---"] * (2 + len(BAD))) + " |"]
    reasons: Counter[tuple[str, str]] = Counter()
    bad = []
    for target in ("host", "h200"):
        kinds = Counter(o[target][0] for o in outcomes if target in o)
        if kinds:
            lines.append(f"| {target} | {sum(kinds.values())} | "
                         + " | ".join(str(kinds.get(k, 0)) for k in ["ok", "refused", *BAD]) + " |")
        for o in outcomes:
            if target in o and o[target][0] == "refused":
                reasons[(target, o[target][1])] += 1
            elif target in o and o[target][0] in BAD:
                bad.append(f"- seed {o['seed']} ({target}, {', '.join(o['steps'])}): {o[target][0]}: {o[target][1]}")
    lines += ["", "Refusals by reason:", "", "| target | count | reason |", "| --- | --- | --- |"]
    lines += [f"| {target} | {count} | {reason} |" for (target, reason), count in sorted(
        reasons.items(), key=lambda item: (item[0][0], -item[1], item[0][1]))]
    return lines + (["", "Bad outcomes:", "", *bad] if bad else [])


def main() -> int:
    """Entry point."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--programs", type=int, default=200)
    parser.add_argument("--seed", type=int, default=0, help="the first program's seed; the others follow")
    parser.add_argument("--no-gpu", action="store_true", help="check the host only")
    parser.add_argument("--show", type=int, default=0, help="print the first N programs and stop")
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        return _worker()
    seeds = list(range(args.seed, args.seed + args.programs))
    if args.show:
        for seed in seeds[:args.show]:
            print(generate(seed).text)
        return 0
    began = time.perf_counter()

    def progress(outcome: dict) -> None:
        verdicts = ", ".join(f"{t} {outcome[t][0]}" for t in ("host", "h200") if t in outcome)
        print(f"[{len(done) + 1}/{len(seeds)}] seed {outcome['seed']}: {verdicts}", file=sys.stderr, flush=True)
        done.append(outcome)

    done: list[dict] = []
    outcomes = fuzz(seeds, not args.no_gpu, progress)
    print(f"{len(seeds)} programs, seeds {seeds[0]}-{seeds[-1]}, {time.perf_counter() - began:.0f} s")
    print("\n".join(summary(outcomes)))
    return 1 if any(o[t][0] in BAD for o in outcomes for t in ("host", "h200") if t in o) else 0


if __name__ == "__main__":
    sys.exit(main())
