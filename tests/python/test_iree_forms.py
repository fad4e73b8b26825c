"""Every bundled example and workload, in every form Prism writes for it, compiled by iree-compile and run by
IREE's runtime against a float64 evaluation of the program as written.

The forms of each file (examples/*.mlir, benchmarks/workloads/**/*.mlir): as written (no exploration), as
prism-explore rewrites it, and as it rewrites it with every argument but the first marked invariant, where
@f_prepare and @f_apply are run one after the other as well as @f. The hand-rewritten workloads
(benchmarks/workloads/rewritten/) are checked against the program they rewrite. Sizes of 512 and above are
scaled down alike in a file and its rewrite, so that the whole set compiles and runs in about a minute; the
float64 reference evaluates the terms of the program as written with numpy, and the unexplored form checks
that reading against IREE's own.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
from mlir import ir

import prism
from conftest import REPO
from prism.algebra.terms import Term, translate
from prism.codegen.iree import ELEMENTWISE_NAMED_OPS, compile_vmfb, load
from prism.infra import attrs
from prism.infra.ir import make_context
from prism.targets import get_target

WORKLOADS = REPO / "benchmarks" / "workloads"
# The decoder blocks sum their heads into the residual argument itself (a reduction whose init is a function
# argument), which iree-compile 3.13 refuses at dispatch formation ("write affecting operations on global
# resources are restricted to workgroup distributed contexts"); tests/python/test_decoder_block.py checks them
# on Prism's host.
FILES = sorted([*(REPO / "examples").glob("*.mlir"),
                *(p for p in WORKLOADS.glob("*.mlir") if not p.stem.startswith("decoder_block")),
                *(WORKLOADS / "rewritten").glob("*.mlir")])
# The sizes scaled down, each to one size, so that concatenations and their slices still line up.
SMALLER = {4096: 64, 6144: 128, 5632: 80, 5120: 96, 2816: 40, 2048: 48, 1024: 32, 512: 24}
_SIZE = re.compile(r"(?<![\d.])(" + "|".join(map(str, SMALLER)) + r")(?![\d.e])")
WRITTEN = "prism-lift,prism-prune,prism-select,prism-instantiate"  # the host pipeline without exploration
DYNAMIC_SIZE = 5
_INVARIANT = " {prism.invariant}"


def scaled(text: str) -> str:
    """``text`` with every size of SMALLER replaced by its smaller one."""
    return _SIZE.sub(lambda m: str(SMALLER[int(m[1])]), text)


def as_written(path: Path) -> str:
    """The file, scaled down, with no argument marked invariant."""
    return scaled(path.read_text()).replace(_INVARIANT, "")


def with_invariant_weights(text: str) -> str:
    """``text`` with every argument of each function but the first marked invariant."""
    def mark(match: re.Match[str]) -> str:
        head, args = match[1], match[2]
        marked = re.sub(r"(?<!^)(%\w+: tensor<[^>]*>)", rf"\1{_INVARIANT}", args)
        return head + marked
    return re.sub(r"(func\.func @\w+\()([^)]*)", mark, text)


def _evaluate(term: Term, args: list[np.ndarray], memo: dict[Term, np.ndarray | float]) -> np.ndarray | float:
    """``term`` over ``args`` in float64."""
    if term in memo:
        return memo[term]
    op, attrs_ = term.op, term.attrs
    operands = [_evaluate(a, args, memo) for a in term.args]
    if op == "arg":
        value = args[attrs_[0]]
    elif op == "splat":
        value = float(attrs_[0])
    elif op == "opaque" and str(attrs_[0]).startswith("computed in "):
        (value,) = operands  # an element-type conversion: exact in float64
    elif op == "cast":  # a conversion to f16 rounds there; to f32 or wider, the float64 reference keeps the value
        (value,) = operands
        if attrs_[0] == "f16":
            value = np.asarray(value).astype(np.float16).astype(np.float64)
    elif op in _NUMPY:
        value = _NUMPY[op](*operands, *attrs_)
    else:
        raise AssertionError(f"no float64 meaning for '{op}' {attrs_}")
    memo[term] = value
    return value


def _broadcast(a: np.ndarray, axis: int, size: int) -> np.ndarray:
    return np.repeat(np.expand_dims(a, axis), size, axis)


def _slice(a: np.ndarray, axis: int, offset: int, size: int) -> np.ndarray:
    return np.take(a, range(offset, offset + size), axis)


_NUMPY: dict[str, Callable[..., np.ndarray]] = {
    "matmul": np.matmul, "transpose": lambda a: np.swapaxes(a, -1, -2), "add": np.add, "sub": np.subtract,
    "mul": np.multiply, "div": np.divide, "maximum": np.maximum, "neg": np.negative, "exp": np.exp,
    "sqrt": np.sqrt, "rsqrt": lambda a: 1 / np.sqrt(a), "reduce_sum": lambda a, axis: a.sum(axis),
    "reduce_max": lambda a, axis: a.max(axis), "broadcast": _broadcast, "slice_": _slice,
    "concat": lambda a, b, axis: np.concatenate([a, b], axis),
}


def reference(text: str, name: str, args: list[np.ndarray]) -> list[np.ndarray]:
    """The results of ``@name`` in ``text`` on ``args``, evaluated in float64."""
    module = ir.Module.parse(text, make_context())
    (function,) = [op.operation for op in module.body.operations
                   if ir.StringAttr(op.operation.attributes["sym_name"]).value == name]
    program = translate(function)
    memo: dict[Term, np.ndarray | float] = {}
    wide = [a.astype(np.float64) for a in args]
    return [np.asarray(_evaluate(result, wide, memo)) for result in program.results]


def random_inputs(text: str, name: str, rng: np.random.Generator) -> list[np.ndarray]:
    """Arguments for ``@name``: a dynamic size is DYNAMIC_SIZE; values small enough for f16 and exp."""
    signature = re.search(rf"func\.func @{name}\((.*?)\)\s*->", text, re.S)[1]
    arrays = []
    for shape, element in re.findall(r"tensor<((?:[\d?]+x)*)(\w+)>", signature):
        sizes = [DYNAMIC_SIZE if s == "?" else int(s) for s in shape.split("x") if s]
        arrays.append((0.5 * rng.standard_normal(sizes)).astype(np.float16 if element == "f16" else np.float32))
    return arrays


def _functions(text: str) -> list[str]:
    return re.findall(r"func\.func @(\w+)\(", text)


def _indices(mlir: str, name: str, attribute: str) -> list[int]:
    found = re.search(rf"func\.func @{name}\(.*?{re.escape(attribute)} = array<i64(?:: ([-\d, ]*))?>", mlir, re.S)
    assert found, f"@{name} does not say how its parts compose ({attribute})"
    return [int(i) for i in found[1].split(",")] if found[1] else []


EXPLORED = "prism-explore," + WRITTEN  # prism-optimize without prism-verify: IREE's results are the check here
FORMS = {"written": WRITTEN, "explored": EXPLORED, "invariant": EXPLORED}


def iree_forms(text: str) -> tuple[str, dict[str, str]]:
    """One IREE module holding every form of ``text`` (the symbols of form F suffixed with ``__F``), and the
    Prism module of each form (for how its parts compose)."""
    aliases, bodies, modules = [], [], {}
    for form, pipeline in FORMS.items():
        source = with_invariant_weights(text) if form == "invariant" else text
        compiled = prism.compile(source, target="host", emit="iree", pipeline=pipeline)
        assert "prism." not in compiled.iree and not any(f"{op} " in compiled.iree for op in ELEMENTWISE_NAMED_OPS)
        parts = re.fullmatch(r"(.*?)module \{\n(.*)\}\n", compiled.iree, re.S)
        assert parts, compiled.iree[:200]
        names = set(re.findall(r"^#(\w+) = ", parts[1], re.M))

        def renamed(part: str, form: str = form, names: set[str] = names) -> str:
            part = re.sub(r"#(\w+)", lambda m: f"#{m[1]}__{form}" if m[1] in names else m[0], part)
            return re.sub(r"@(\w+)", rf"@\1__{form}", part)
        aliases.append(renamed(parts[1]))
        bodies.append(renamed(parts[2]))
        modules[form] = compiled.mlir
    return "".join(aliases) + "module {\n" + "".join(bodies) + "}\n", modules


def check_in_iree(source: str, original: str, rng: np.random.Generator) -> dict[str, str]:
    """Compile every form of ``source`` for the host with --emit=iree, run each function and each composition of
    parts in IREE, and compare with ``original``'s float64 results; Prism's module of each form."""
    text, modules = iree_forms(source)
    host = get_target("host")
    vmfb = compile_vmfb(text, host.iree_backend, host.iree_flags)
    for name in _functions(original):
        args = random_inputs(original, name, rng)
        want = reference(original, name, args)
        for form, mlir in modules.items():
            _assert_close(load(vmfb, f"{name}__{form}")(*args), want, args, f"@{name}, {form}")
            if f"@{name}_prepare(" not in mlir:
                continue
            prepare_args = _indices(mlir, name, attrs.PREPARE_ARGS)
            apply_args = _indices(mlir, name, attrs.APPLY_ARGS)
            prepared = _tuple(load(vmfb, f"{name}_prepare__{form}")(*(args[i] for i in prepare_args)))
            have = load(vmfb, f"{name}_apply__{form}")(*(args[i] if i >= 0 else prepared[-i - 1] for i in apply_args))
            _assert_close(have, want, args, f"@{name}_apply after @{name}_prepare, {form}")
    return modules


def _tuple(value: object) -> tuple[np.ndarray, ...]:
    return value if isinstance(value, tuple) else (value,)


def _assert_close(have: object, want: list[np.ndarray], args: list[np.ndarray], what: str) -> None:
    tolerance = 2e-2 if any(a.dtype == np.float16 for a in args) else 1e-4
    for got, expected in zip(_tuple(have), want, strict=True):
        scale = max(1.0, float(np.abs(expected).max()))
        np.testing.assert_allclose(got, expected, rtol=tolerance, atol=tolerance * scale, err_msg=what)


def _original(path: Path) -> Path:
    """The program a hand-written rewrite rewrites (the file itself for the others)."""
    return WORKLOADS / path.name if path.parent.name == "rewritten" else path


@pytest.mark.parametrize("path", FILES, ids=[str(p.relative_to(REPO)) for p in FILES])
def test_every_form_runs_in_iree(path: Path, rng: np.random.Generator) -> None:
    modules = check_in_iree(as_written(path), as_written(_original(path)), rng)
    if path.stem in ("lora", "qkv"):  # weights merged or concatenated once, in @f_prepare
        assert f"@{path.stem}_prepare(" in modules["invariant"]


def test_named_elementwise_ops_reach_iree_as_generics(rng: np.random.Generator) -> None:
    """IREE's parser does not know linalg.add, linalg.exp...: --emit=iree writes them as linalg.generic."""
    source = """
func.func @f(%a: tensor<5x7xf32>, %b: tensor<5x7xf32>) -> tensor<5x7xf32> {
  %e = tensor.empty() : tensor<5x7xf32>
  %s = linalg.add ins(%a, %b : tensor<5x7xf32>, tensor<5x7xf32>) outs(%e : tensor<5x7xf32>) -> tensor<5x7xf32>
  %x = linalg.exp ins(%s : tensor<5x7xf32>) outs(%e : tensor<5x7xf32>) -> tensor<5x7xf32>
  %m = linalg.mul ins(%x, %a : tensor<5x7xf32>, tensor<5x7xf32>) outs(%e : tensor<5x7xf32>) -> tensor<5x7xf32>
  return %m : tensor<5x7xf32>
}"""
    compiled = prism.compile(source, target="host", emit="iree", pipeline=WRITTEN)
    assert compiled.iree.count("linalg.generic") == 3
    a, b = (rng.standard_normal((5, 7)).astype(np.float32) for _ in range(2))
    want = np.exp(a.astype(np.float64) + b) * a
    np.testing.assert_allclose(compiled.iree_function("f")(a, b), want, rtol=1e-5)
