"""Every op of the math dialect on the host, against float64 numpy, on f32 and f16.

Each op runs inside a ``linalg.generic``: over a rank-1 tensor (the generic path's scalar loops) and, for
f32, over a rank-2 one, where the ops that row kernels accept (``kernel.ELEMENTWISE_OPS``) run on vectors.
Tolerances, per op (``TOLERANCES``): the results are compared to float64 numpy on the same inputs, with a
relative tolerance that covers the implementation, and an absolute one only where it is named:

- exact ops (rounding, abs, copysign, the float classes, the integer ops): 0;
- ops with an LLVM instruction or intrinsic, or a libm call (sqrt, sin, log, erfc, cbrt, ...): 2e-6 (libm's
  single-precision functions are within 1-2 ulp, 1.2e-7 each);
- exp, erf and tanh on vectors are Prism's polynomials: exp within 2 ulp, tanh and erf within 2e-6
  relative;
- f16: every op is computed in f32 and rounded once, so 1e-3 (two f16 ulps, 2**-10 each), and 1e-7
  absolute where an f16 result underflows.
"""

from __future__ import annotations

import math
import os
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import mlir.dialects.math as math_dialect
import numpy as np
import pytest
from mlir import ir

from conftest import run_cli
from prism.codegen.cpu import CpuLowering
from prism.codegen.cpu.kernel import ELEMENTWISE_OPS
from prism.infra.ir import make_context
from prism.infra.passbase import PassContext
from prism.runtime.cpu import compile_engine, jit

Inputs = Callable[[np.random.Generator, tuple[int, ...], type], list[np.ndarray]]


def uniform(low: float, high: float, count: int = 1) -> Inputs:
    return lambda rng, shape, dtype: [rng.uniform(low, high, shape).astype(dtype) for _ in range(count)]


def with_specials(values: list[float]) -> Inputs:
    """Random normals with ``values`` written over the first elements."""
    def make(rng: np.random.Generator, shape: tuple[int, ...], dtype: type) -> list[np.ndarray]:
        x = (rng.standard_normal(shape) * 3).astype(dtype).reshape(-1)
        with np.errstate(over="ignore"):  # 3.4e38 is inf in f16
            x[:len(values)] = np.array(values).astype(dtype)
        return [x.reshape(shape)]
    return make


def integers(low: int, high: int, count: int = 1) -> Inputs:
    return lambda rng, shape, dtype: [rng.integers(low, high, shape, dtype=np.int32) for _ in range(count)]


def _round_half_away(x: np.ndarray) -> np.ndarray:
    return np.sign(x) * np.floor(np.abs(x) + 0.5)


def _bits(x: np.ndarray, count: Callable[[int], int]) -> np.ndarray:
    return np.vectorize(lambda v: count(int(v) & 0xFFFFFFFF), otypes=[np.int32])(x)


def _ipowi(b: np.ndarray, e: np.ndarray) -> np.ndarray:
    """Integer powers wrapping at 32 bits; a negative power is 1/b**n truncated (0 unless |b| = 1)."""
    def one(b: int, e: int) -> int:
        if e < 0:
            return 1 if b == 1 else ((-1) ** (-e) if b == -1 else 0)
        return ((b ** e + 2 ** 31) % 2 ** 32) - 2 ** 31
    return np.vectorize(one, otypes=[np.int32])(b, e)


@dataclass(frozen=True)
class Case:
    """One math op: its body (``%y`` from ``%a0``, ``%a1``, ...; ``T`` the element type), its inputs, its
    float64 reference, and its relative and absolute tolerances on f32."""

    body: str
    inputs: Inputs
    reference: Callable[..., np.ndarray]
    rtol: float = 2e-6
    atol: float = 0.0
    f16_atol: float = 1e-7
    integer: bool = False  # computes on i32 (no f16 run)
    input_types: tuple[str, ...] = field(default=())  # per input, where not T


SPECIALS = [0.0, -0.0, np.inf, -np.inf, np.nan, 1e-40, -3e-39, 1e-5, 65504.0, 3.4e38]
CASES: dict[str, Case] = {
    "absf": Case("%y = math.absf %a0 : T", with_specials([-0.0, -np.inf, -2.5]), np.abs, 0),
    "absi": Case("%y = math.absi %a0 : i32", integers(-1000, 1000), np.abs, 0, integer=True),
    "acos": Case("%y = math.acos %a0 : T", uniform(-1, 1), np.arccos),
    "acosh": Case("%y = math.acosh %a0 : T", uniform(1, 100), np.arccosh),
    "asin": Case("%y = math.asin %a0 : T", uniform(-1, 1), np.arcsin),
    "asinh": Case("%y = math.asinh %a0 : T", uniform(-100, 100), np.arcsinh),
    "atan": Case("%y = math.atan %a0 : T", uniform(-50, 50), np.arctan),
    "atan2": Case("%y = math.atan2 %a0, %a1 : T", uniform(-5, 5, 2), np.arctan2),
    "atanh": Case("%y = math.atanh %a0 : T", uniform(-0.99, 0.99), np.arctanh),
    "cbrt": Case("%y = math.cbrt %a0 : T", uniform(-1000, 1000), np.cbrt),
    "ceil": Case("%y = math.ceil %a0 : T", uniform(-100, 100), np.ceil, 0),
    "clampf": Case("%y = math.clampf %a0 to [%a1, %a2] : T",
                   lambda rng, shape, dtype: [rng.uniform(-4, 4, shape).astype(dtype),
                                              rng.uniform(-3, 0, shape).astype(dtype),
                                              rng.uniform(0, 3, shape).astype(dtype)],
                   lambda x, lo, hi: np.minimum(np.maximum(x, lo), hi), 0),
    "copysign": Case("%y = math.copysign %a0, %a1 : T", uniform(-10, 10, 2), np.copysign, 0),
    "cos": Case("%y = math.cos %a0 : T", uniform(-10, 10), np.cos, 2e-6, 1e-7),
    "cosh": Case("%y = math.cosh %a0 : T", uniform(-10, 10), np.cosh),
    "ctlz": Case("%y = math.ctlz %a0 : i32", integers(-2 ** 31, 2 ** 31 - 1),
                 lambda x: _bits(x, lambda v: 32 - v.bit_length()), 0, integer=True),
    "ctpop": Case("%y = math.ctpop %a0 : i32", integers(-2 ** 31, 2 ** 31 - 1),
                  lambda x: _bits(x, lambda v: bin(v).count("1")), 0, integer=True),
    "cttz": Case("%y = math.cttz %a0 : i32", integers(-2 ** 31, 2 ** 31 - 1),
                 lambda x: _bits(x, lambda v: (v & -v).bit_length() - 1 if v else 32), 0, integer=True),
    "erf": Case("%y = math.erf %a0 : T", uniform(-5, 5), np.vectorize(math.erf)),
    "erfc": Case("%y = math.erfc %a0 : T", uniform(-3, 9), np.vectorize(math.erfc)),
    "exp": Case("%y = math.exp %a0 : T", uniform(-9, 11), np.exp, 3e-7),
    "exp2": Case("%y = math.exp2 %a0 : T", uniform(-14, 15), np.exp2),
    "expm1": Case("%y = math.expm1 %a0 : T", uniform(-2, 2), np.expm1),
    "floor": Case("%y = math.floor %a0 : T", uniform(-100, 100), np.floor, 0),
    "fma": Case("%y = math.fma %a0, %a1, %a2 : T", uniform(-10, 10, 3), lambda a, b, c: a * b + c, 2e-6, 1e-6),
    "fpowi": Case("%y = math.fpowi %a0, %a1 : T, i32",
                  lambda rng, shape, dtype: [(rng.uniform(0.5, 4, shape) * rng.choice([-1, 1], shape)).astype(dtype),
                                             rng.integers(-3, 5, shape, dtype=np.int32)],
                  lambda x, n: x ** n.astype(np.float64), input_types=("T", "i32")),
    "ipowi": Case("%y = math.ipowi %a0, %a1 : i32",
                  # 0 to a negative power is a division by zero (undefined): bases are never 0
                  lambda rng, shape, dtype: [(rng.integers(1, 10, shape) * rng.choice([-1, 1], shape)).astype(np.int32),
                                             rng.integers(-2, 12, shape, dtype=np.int32)],
                  _ipowi, 0, integer=True),
    "isfinite": Case("%b = math.isfinite %a0 : T\n%one = arith.constant 1.0 : T\n%zero = arith.constant 0.0 : T\n"
                     "%y = arith.select %b, %one, %zero : T", with_specials(SPECIALS),
                     lambda x: np.isfinite(x).astype(np.float64), 0),
    "isinf": Case("%b = math.isinf %a0 : T\n%one = arith.constant 1.0 : T\n%zero = arith.constant 0.0 : T\n"
                  "%y = arith.select %b, %one, %zero : T", with_specials(SPECIALS),
                  lambda x: np.isinf(x).astype(np.float64), 0),
    "isnan": Case("%b = math.isnan %a0 : T\n%one = arith.constant 1.0 : T\n%zero = arith.constant 0.0 : T\n"
                  "%y = arith.select %b, %one, %zero : T", with_specials(SPECIALS),
                  lambda x: np.isnan(x).astype(np.float64), 0),
    "isnormal": Case("%b = math.isnormal %a0 : T\n%one = arith.constant 1.0 : T\n%zero = arith.constant 0.0 : T\n"
                     "%y = arith.select %b, %one, %zero : T", with_specials(SPECIALS), None, 0),
    "log": Case("%y = math.log %a0 : T", uniform(1e-3, 1e3), np.log),
    "log10": Case("%y = math.log10 %a0 : T", uniform(1e-3, 1e3), np.log10),
    "log1p": Case("%y = math.log1p %a0 : T", uniform(-0.9, 2), np.log1p),
    "log2": Case("%y = math.log2 %a0 : T", uniform(1e-3, 1e3), np.log2),
    "powf": Case("%y = math.powf %a0, %a1 : T",
                 lambda rng, shape, dtype: [rng.uniform(0.1, 10, shape).astype(dtype),
                                            rng.uniform(-3, 3, shape).astype(dtype)], np.power),
    "round": Case("%y = math.round %a0 : T", lambda rng, shape, dtype: [
        (rng.integers(-40, 40, shape) / 4).astype(dtype)], _round_half_away, 0),
    "roundeven": Case("%y = math.roundeven %a0 : T", lambda rng, shape, dtype: [
        (rng.integers(-40, 40, shape) / 4).astype(dtype)], np.rint, 0),
    "rsqrt": Case("%y = math.rsqrt %a0 : T", uniform(1e-3, 1e3), lambda x: 1 / np.sqrt(x)),
    "sin": Case("%y = math.sin %a0 : T", uniform(-10, 10), np.sin, 2e-6, 1e-7),
    # Both results, summed: in f16, sin, cos and their sum are each rounded (three f16 roundings of values
    # up to 1.4, 2e-3 absolute).
    "sincos": Case("%s, %c = math.sincos %a0 : T\n%y = arith.addf %s, %c : T", uniform(-10, 10),
                   lambda x: np.sin(x) + np.cos(x), 2e-6, 1e-6, f16_atol=2e-3),
    "sinh": Case("%y = math.sinh %a0 : T", uniform(-10, 10), np.sinh),
    "sqrt": Case("%y = math.sqrt %a0 : T", uniform(0, 1e3), np.sqrt),
    "tan": Case("%y = math.tan %a0 : T", uniform(-1.5, 1.5), np.tan),
    "tanh": Case("%y = math.tanh %a0 : T", with_specials([0.0, -0.0, 1e-30, -1e-8, 9.0, -9.0, 20.0, -np.inf,
                                                           np.inf, np.nan]), np.tanh),
    "trunc": Case("%y = math.trunc %a0 : T", uniform(-100, 100), np.trunc, 0),
}
F16_RTOL = 1e-3


def _isnormal(x: np.ndarray) -> np.ndarray:
    return ((np.abs(x) >= np.finfo(x.dtype).tiny) & np.isfinite(x)).astype(np.float64)


def test_every_math_op_is_tested() -> None:
    ops = {getattr(math_dialect, n).OPERATION_NAME for n in dir(math_dialect)
           if n.endswith("Op") and hasattr(getattr(math_dialect, n), "OPERATION_NAME")}
    assert {f"math.{name}" for name in CASES} == ops


def _program(name: str, case: Case, element: str, shape: tuple[int, ...]) -> str:
    """``@math_<name>`` (``@name`` may be a libm function's): the op's body in a generic over ``shape``, on
    ``element`` (or i32)."""
    out = "i32" if case.integer else element
    types = [t.replace("T", element) for t in case.input_types] or [out] * _arity(case)
    dims = ", ".join(f"d{i}" for i in range(len(shape)))
    identity = f"affine_map<({dims}) -> ({dims})>"
    tensor = lambda t: f"tensor<{'x'.join(map(str, shape))}x{t}>"  # noqa: E731
    args = ", ".join(f"%x{i}: {tensor(t)}" for i, t in enumerate(types))
    block = ", ".join([f"%a{i}: {t}" for i, t in enumerate(types)] + [f"%o: {out}"])
    body = "\n".join(f"    {line}" for line in case.body.replace("T", out if case.integer else element).split("\n"))
    parallel = ", ".join(['"parallel"'] * len(shape))
    return (f"func.func @math_{name}({args}) -> {tensor(out)} {{\n"
            f"  %e = tensor.empty() : {tensor(out)}\n"
            f"  %r = linalg.generic {{indexing_maps = [{', '.join([identity] * (len(types) + 1))}], "
            f"iterator_types = [{parallel}]}} "
            f"ins({', '.join(f'%x{i}' for i in range(len(types)))} : {', '.join(tensor(t) for t in types)}) "
            f"outs(%e : {tensor(out)}) {{\n  ^bb0({block}):\n{body}\n    linalg.yield %y : {out}\n"
            f"  }} -> {tensor(out)}\n  return %r : {tensor(out)}\n}}")


def _arity(case: Case) -> int:
    return max(int(part[2:3]) for part in case.body.replace(",", " ").split() if part.startswith("%a")) + 1


@dataclass
class Lowered:
    """A module of one function per op, lowered for the host: its functions and its LLVM text."""

    functions: dict[str, Callable[..., np.ndarray]]
    llvm: str


def _lower(element: str, shape: tuple[int, ...]) -> Lowered:
    names = [n for n, case in CASES.items() if not (case.integer and element != "f32")]
    with make_context(), ir.Location.unknown():
        module = ir.Module.parse("\n".join(_program(n, CASES[n], element, shape) for n in names))
        stages = CpuLowering(2, PassContext(), 256)
        for stage in stages.stages():
            stage.run(module)
        engine = compile_engine(module, "math ops")
        return Lowered({n: jit(module, f"math_{n}", engine=engine) for n in names}, str(module))


SHAPES = {"f32-loops": ("f32", (37,)), "f32-rows": ("f32", (5, 37)), "f16-loops": ("f16", (37,))}


@pytest.fixture(scope="module")
def lowered() -> dict[str, Lowered]:
    return {key: _lower(element, shape) for key, (element, shape) in SHAPES.items()}


@pytest.mark.parametrize("name, variant", [(name, variant) for name, case in CASES.items() for variant in SHAPES
                                           if not (case.integer and SHAPES[variant][0] != "f32")])
def test_math_op(lowered: dict[str, Lowered], rng: np.random.Generator, name: str, variant: str) -> None:
    """The op on random inputs (and special values) against float64 numpy; the integer ops run once, on i32."""
    case = CASES[name]
    element, shape = SHAPES[variant]
    dtype = np.float16 if element == "f16" else np.float32
    inputs = case.inputs(rng, shape, dtype)
    got = lowered[variant].functions[name](*inputs)
    reference = case.reference or _isnormal
    with np.errstate(all="ignore"):
        want = reference(*[x.astype(np.float64) if x.dtype != np.int32 else x for x in inputs]) \
            if case.reference else _isnormal(inputs[0])
    if case.integer:
        assert got.dtype == np.int32 and np.array_equal(got, want)
        return
    assert got.dtype == dtype
    rtol, atol = (case.rtol, case.atol) if element == "f32" else (max(case.rtol, F16_RTOL), case.f16_atol)
    np.testing.assert_allclose(got.astype(np.float64), want.astype(dtype).astype(np.float64) if rtol == 0 else want,
                               rtol=rtol, atol=atol, equal_nan=True)


@pytest.mark.parametrize("name", ["exp", "erf", "tanh"])
def test_vector_math_is_a_polynomial(lowered: dict[str, Lowered], name: str) -> None:
    """In a row kernel, these ops run on vectors without a call per lane: no libm call, and no LLVM intrinsic
    on vectors (which LLVM would turn into one call per lane)."""
    assert f"math.{name}" in ELEMENTWISE_OPS
    text = lowered["f32-rows"].llvm
    assert "vector<8xf32>" in text
    assert not re.search(rf"llvm\.intr\.{name}\([^\n]*vector<", text)
    assert f"@{name}f(" not in text


@pytest.mark.parametrize("name, op", [("sinf", "math.sin"), ("erff", "math.erf"), ("malloc", "math.sin")])
def test_a_function_named_as_a_c_function_it_calls_is_refused(tmp_path: Path, name: str, op: str) -> None:
    """Lowered code calls libm (and malloc) by name: a function of the program under that name would be linked
    in its place, and the call would crash the process."""
    source = tmp_path / "clash.mlir"
    source.write_text(f"func.func @{name}(%a: tensor<37xf32>) -> tensor<37xf32> {{\n"
                      f"  %r = {op} %a : tensor<37xf32>\n  return %r : tensor<37xf32>\n}}\n")
    result = run_cli(str(source), "-p", "prism-lower-cpu", "-o", os.devnull)
    assert result.returncode == 1
    assert f"clash.mlir:1:1: error: prism-lower-cpu: @{name}: the lowered program calls the C library's {name}" \
        in result.stderr


def test_a_function_named_as_a_c_function_it_does_not_call_runs(rng: np.random.Generator) -> None:
    """@exp on f32 calls expf (or a polynomial), never exp: it compiles and runs."""
    text = _program("exp", CASES["exp"], "f32", (37,)).replace("@math_exp", "@exp")
    with make_context(), ir.Location.unknown():
        module = ir.Module.parse(text)
        stages = CpuLowering(2, PassContext(), 256)
        for stage in stages.stages():
            stage.run(module)
        x = rng.uniform(-9, 11, 37).astype(np.float32)
        np.testing.assert_allclose(jit(module, "exp")(x), np.exp(x.astype(np.float64)), rtol=2e-6)
