"""One spelling for every program: named Linalg ops, linalg.softmax and statistics kept with unit axes reach the
algebra as the terms of their hand-written generic twins, and compile and run on the host
(:func:`prism.infra.ir.normalize_program`, :mod:`prism.algebra.terms`)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from mlir import ir

import prism
from prism.algebra.terms import A, Program, translate
from prism.algebra.to_mlir import function_text
from prism.infra.ir import GENERALIZED_OPS, iter_ops, make_context, normalize_program

SPELLINGS = Path(__file__).parent / "spellings"
F64 = np.float64


def _program(text: str) -> Program:
    """The terms of the one function of ``text``, normalized first."""
    with make_context(), ir.Location.unknown():
        module = ir.Module.parse(text)
        normalize_program(module)
        return translate(module.body.operations[0].operation)


def _function(signature: str, body: str) -> str:
    return f"func.func @f({signature} {{\n{body}\n}}"


def _maps(*maps: str) -> str:
    return ", ".join(f"affine_map<{m}>" for m in maps)


def _generic(ins: str, outs: str, maps: str, iterators: str, block: str, result: str) -> str:
    return (f"  %r = linalg.generic {{indexing_maps = [{maps}], iterator_types = [{iterators}]}}\n"
            f"      ins({ins}) outs({outs}) {{\n{block}\n  }} -> {result}\n  return %r : {result}")


P2 = '"parallel", "parallel"'
P3 = '"parallel", "parallel", "parallel"'
ID2 = "(i, j) -> (i, j)"
ID3 = "(b, i, j) -> (b, i, j)"
T48 = "tensor<4x8xf32>"
SIG2 = f"%a: {T48}, %b: {T48}) -> {T48}"
EMPTY = f"  %e = tensor.empty() : {T48}\n"


def _binary_named(name: str) -> str:
    return _function(SIG2, f"{EMPTY}  %r = linalg.{name} ins(%a, %b : {T48}, {T48}) outs(%e : {T48}) -> {T48}\n"
                           f"  return %r : {T48}")


def _binary_generic(scalar: str) -> str:
    return _function(SIG2, EMPTY + _generic(f"%a, %b : {T48}, {T48}", f"%e : {T48}", _maps(ID2, ID2, ID2), P2,
                                            f"  ^bb0(%x: f32, %y: f32, %o: f32):\n    %s = {scalar} %x, %y : f32\n"
                                            "    linalg.yield %s : f32", T48))


def _unary_named(name: str) -> str:
    return _function(f"%a: {T48}) -> {T48}", f"{EMPTY}  %r = linalg.{name} ins(%a : {T48}) outs(%e : {T48}) -> {T48}\n"
                                           f"  return %r : {T48}")


def _unary_generic(scalar: str) -> str:
    return _function(f"%a: {T48}) -> {T48}", EMPTY + _generic(
        f"%a : {T48}", f"%e : {T48}", _maps(ID2, ID2), P2,
        f"  ^bb0(%x: f32, %o: f32):\n    %s = {scalar} %x : f32\n    linalg.yield %s : f32", T48))


_REDUCE_BODY = "  ^bb0(%x: f32, %acc: f32):\n    %s = {op} %x, %acc : f32\n    linalg.yield %s : f32"


def _reduce(op: str, init: str, named: bool) -> str:
    head = f"  %i = arith.constant {init} : f32\n  %e = tensor.empty() : tensor<4xf32>\n" \
           "  %z = linalg.fill ins(%i : f32) outs(%e : tensor<4xf32>) -> tensor<4xf32>\n"
    if named:
        return _function(f"%a: {T48}) -> tensor<4xf32>", head + (
            f"  %r = linalg.reduce ins(%a : {T48}) outs(%z : tensor<4xf32>) dimensions = [1]\n"
            f"    (%x: f32, %acc: f32) {{\n      %s = {op} %x, %acc : f32\n      linalg.yield %s : f32\n    }}\n"
            "  return %r : tensor<4xf32>"))
    return _function(f"%a: {T48}) -> tensor<4xf32>", head + _generic(
        f"%a : {T48}", "%z : tensor<4xf32>", _maps(ID2, "(i, j) -> (i)"), '"parallel", "reduction"',
        _REDUCE_BODY.format(op=op), "tensor<4xf32>"))


def _copy_like(signature: str, named: str, source: str, out: str, source_map: str, out_map: str,
               iterators: str) -> tuple[str, str]:
    """A named op that moves elements (broadcast, transpose, copy) and its generic twin."""
    empty = f"  %e = tensor.empty() : {out}\n"
    return (_function(signature, f"{empty}  %r = {named}\n  return %r : {out}"),
            _function(signature, empty + _generic(f"%a : {source}", f"%e : {out}", _maps(source_map, out_map),
                                                  iterators, "  ^bb0(%x: f32, %o: f32):\n    linalg.yield %x : f32",
                                                  out)))


_SOFTMAX_GENERIC = f"""func.func @f(%a: {T48}) -> {T48} {{
  %ninf = arith.constant 0xFF800000 : f32
  %zero = arith.constant 0.0 : f32
  %re = tensor.empty() : tensor<4xf32>
  %m0 = linalg.fill ins(%ninf : f32) outs(%re : tensor<4xf32>) -> tensor<4xf32>
  %m = linalg.generic {{indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i)>],
      iterator_types = ["parallel", "reduction"]}} ins(%a : {T48}) outs(%m0 : tensor<4xf32>) {{
  ^bb0(%x: f32, %acc: f32):
    %s = arith.maximumf %acc, %x : f32
    linalg.yield %s : f32
  }} -> tensor<4xf32>
  %ee = tensor.empty() : {T48}
  %ex = linalg.generic {{indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i)>,
      affine_map<(i, j) -> (i, j)>], iterator_types = ["parallel", "parallel"]}}
      ins(%a, %m : {T48}, tensor<4xf32>) outs(%ee : {T48}) {{
  ^bb0(%x: f32, %y: f32, %o: f32):
    %d = arith.subf %x, %y : f32
    %s = math.exp %d : f32
    linalg.yield %s : f32
  }} -> {T48}
  %l0 = linalg.fill ins(%zero : f32) outs(%re : tensor<4xf32>) -> tensor<4xf32>
  %l = linalg.generic {{indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i)>],
      iterator_types = ["parallel", "reduction"]}} ins(%ex : {T48}) outs(%l0 : tensor<4xf32>) {{
  ^bb0(%x: f32, %acc: f32):
    %s = arith.addf %x, %acc : f32
    linalg.yield %s : f32
  }} -> tensor<4xf32>
  %r = linalg.generic {{indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i)>,
      affine_map<(i, j) -> (i, j)>], iterator_types = ["parallel", "parallel"]}}
      ins(%ex, %l : {T48}, tensor<4xf32>) outs(%ee : {T48}) {{
  ^bb0(%x: f32, %y: f32, %o: f32):
    %s = arith.divf %x, %y : f32
    linalg.yield %s : f32
  }} -> {T48}
  return %r : {T48}
}}"""


def _softmax(x: np.ndarray) -> np.ndarray:
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return e / e.sum(axis=-1, keepdims=True)


# name: (named program, its generic twin, the float64 reference over the arguments' arrays, argument shapes)
TWINS = {
    **{name: (_binary_named(name), _binary_generic(scalar), reference, [(4, 8), (4, 8)])
       for name, scalar, reference in [("add", "arith.addf", np.add), ("sub", "arith.subf", np.subtract),
                                       ("mul", "arith.mulf", np.multiply), ("div", "arith.divf", np.divide),
                                       ("max", "arith.maximumf", np.maximum)]},
    **{name: (_unary_named(name), _unary_generic(scalar), reference, [(4, 8)])
       for name, scalar, reference in [("exp", "math.exp", np.exp), ("negf", "arith.negf", np.negative),
                                       ("sqrt", "math.sqrt", np.sqrt),
                                       ("rsqrt", "math.rsqrt", lambda x: 1.0 / np.sqrt(x))]},
    "elementwise_mul": (
        _function(SIG2, f"{EMPTY}  %r = linalg.elementwise kind=#linalg.elementwise_kind<mul> ins(%a, %b : {T48}, "
                        f"{T48}) outs(%e : {T48}) -> {T48}\n  return %r : {T48}"),
        _binary_generic("arith.mulf"), np.multiply, [(4, 8), (4, 8)]),
    "elementwise_exp": (
        _function(f"%a: {T48}) -> {T48}", f"{EMPTY}  %r = linalg.elementwise kind=#linalg.elementwise_kind<exp> "
                                        f"ins(%a : {T48}) outs(%e : {T48}) -> {T48}\n  return %r : {T48}"),
        _unary_generic("math.exp"), np.exp, [(4, 8)]),
    "map": (_function(SIG2, f"{EMPTY}  %r = linalg.map {{ arith.subf }} ins(%a, %b : {T48}, {T48}) "
                            f"outs(%e : {T48})\n  return %r : {T48}"),
            _binary_generic("arith.subf"), np.subtract, [(4, 8), (4, 8)]),
    "reduce_sum": (_reduce("arith.addf", "0.0", True), _reduce("arith.addf", "0.0", False),
                   lambda a: a.sum(axis=1), [(4, 8)]),
    "reduce_max": (_reduce("arith.maximumf", "0xFF800000", True), _reduce("arith.maximumf", "0xFF800000", False),
                   lambda a: a.max(axis=1), [(4, 8)]),
    "broadcast": (*_copy_like("%a: tensor<4xf32>) -> tensor<4x8xf32>",
                              "linalg.broadcast ins(%a : tensor<4xf32>) outs(%e : tensor<4x8xf32>) dimensions = [1]",
                              "tensor<4xf32>", T48, "(i, j) -> (i)", ID2, P2),
                  lambda a: np.broadcast_to(a[:, None], (4, 8)), [(4,)]),
    "transpose": (*_copy_like("%a: tensor<2x4x8xf32>) -> tensor<2x8x4xf32>",
                              "linalg.transpose ins(%a : tensor<2x4x8xf32>) outs(%e : tensor<2x8x4xf32>) "
                              "permutation = [0, 2, 1]",
                              "tensor<2x4x8xf32>", "tensor<2x8x4xf32>", "(b, i, j) -> (b, j, i)", ID3, P3),
                  lambda a: a.transpose(0, 2, 1), [(2, 4, 8)]),
    "copy": (*_copy_like(f"%a: {T48}) -> {T48}", f"linalg.copy ins(%a : {T48}) outs(%e : {T48}) -> {T48}",
                         T48, T48, ID2, ID2, P2),
             lambda a: a, [(4, 8)]),
    "softmax": (_function(f"%a: {T48}) -> {T48}", f"{EMPTY}  %r = linalg.softmax dimension(1) ins(%a : {T48}) "
                                                f"outs(%e : {T48}) -> {T48}\n  return %r : {T48}"),
                _SOFTMAX_GENERIC, _softmax, [(4, 8)]),
}


def _inputs(shapes: list[tuple[int, ...]], rng: np.random.Generator) -> list[np.ndarray]:
    """Positive inputs (square roots and divisions stay finite)."""
    return [rng.uniform(0.5, 2.0, shape).astype(np.float32) for shape in shapes]


@pytest.mark.parametrize("name", sorted(TWINS))
def test_named_op_translates_as_its_generic_twin(name: str) -> None:
    named, generic, _, _ = TWINS[name]
    program = _program(named)
    assert program.opaque == []
    assert program.results == _program(generic).results


@pytest.mark.parametrize("name", sorted(TWINS))
def test_named_op_runs_on_the_host(name: str, rng: np.random.Generator) -> None:
    named, _, reference, shapes = TWINS[name]
    args = _inputs(shapes, rng)
    got = prism.compile(named, target="host").jit("f")(*args)
    np.testing.assert_allclose(got, reference(*(a.astype(F64) for a in args)), rtol=2e-6, atol=1e-6)


def test_normalization_leaves_no_generalized_op_and_is_deterministic() -> None:
    texts = []
    for named, _, _, _ in TWINS.values():
        with make_context(), ir.Location.unknown():
            module = ir.Module.parse(named)
            normalize_program(module)
            first = str(module)
            normalize_program(module)
            assert str(module) == first
            assert not {op.name for op in iter_ops(module)} & (GENERALIZED_OPS | {"linalg.softmax"})
            texts.append(first)
    with make_context(), ir.Location.unknown():
        again = []
        for named, _, _, _ in TWINS.values():
            module = ir.Module.parse(named)
            normalize_program(module)
            again.append(str(module))
    assert again == texts


def test_named_ops_outside_the_algebra_are_generalized_and_run(rng: np.random.Generator) -> None:
    """``linalg.log``, ``abs``, ``min``: generalized (the algebra keeps them opaque), and right on the host."""
    for name, reference in [("log", np.log), ("abs", np.abs), ("tanh", np.tanh)]:
        text = _unary_named(name)
        with make_context(), ir.Location.unknown():
            module = ir.Module.parse(text)
            normalize_program(module)
            assert f"linalg.{name}" not in str(module)
        (a,) = _inputs([(4, 8)], rng)
        np.testing.assert_allclose(prism.compile(text, target="host").jit("f")(a), reference(a.astype(F64)),
                                   rtol=2e-6, atol=1e-6)
    text = _binary_named("min")
    a, b = _inputs([(4, 8), (4, 8)], rng)
    np.testing.assert_array_equal(prism.compile(text, target="host").jit("f")(a, b), np.minimum(a, b))


def test_unsupported_named_op_is_left_and_opaque() -> None:
    text = """func.func @f(%x: tensor<1x8x8x4xf32>, %w: tensor<3x3x4x8xf32>) -> tensor<1x6x6x8xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<1x6x6x8xf32>
  %z = linalg.fill ins(%zero : f32) outs(%e : tensor<1x6x6x8xf32>) -> tensor<1x6x6x8xf32>
  %c = linalg.conv_2d_nhwc_hwcf ins(%x, %w : tensor<1x8x8x4xf32>, tensor<3x3x4x8xf32>)
      outs(%z : tensor<1x6x6x8xf32>) -> tensor<1x6x6x8xf32>
  return %c : tensor<1x6x6x8xf32>
}"""
    program = _program(text)
    assert {what for what, _ in program.opaque} == {"linalg.conv_2d_nhwc_hwcf"}


def test_integer_softmax_is_left_as_written() -> None:
    """Upstream's decomposition builds float constants: an aggregate op on other tensors stays whole."""
    text = """func.func @f(%a: tensor<4x8xi32>) -> tensor<4x8xi32> {
  %e = tensor.empty() : tensor<4x8xi32>
  %r = linalg.softmax dimension(1) ins(%a : tensor<4x8xi32>) outs(%e : tensor<4x8xi32>) -> tensor<4x8xi32>
  return %r : tensor<4x8xi32>
}"""
    with make_context(), ir.Location.unknown():
        module = ir.Module.parse(text)
        normalize_program(module)
        assert "linalg.softmax" in str(module)


# Contractions stay named; their maps may transpose an operand.
_MATMUL_T = """func.func @f(%a: tensor<8x16xf32>, %b: tensor<12x16xf32>) -> tensor<8x12xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<8x12xf32>
  %z = linalg.fill ins(%zero : f32) outs(%e : tensor<8x12xf32>) -> tensor<8x12xf32>
  %r = linalg.matmul indexing_maps = [affine_map<(m, n, k) -> (m, k)>, affine_map<(m, n, k) -> (n, k)>,
                                      affine_map<(m, n, k) -> (m, n)>]
      ins(%a, %b : tensor<8x16xf32>, tensor<12x16xf32>) outs(%z : tensor<8x12xf32>) -> tensor<8x12xf32>
  return %r : tensor<8x12xf32>
}"""
_BATCH_MATMUL_T = """func.func @f(%a: tensor<2x16x8xf32>, %b: tensor<2x16x12xf32>) -> tensor<2x8x12xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<2x8x12xf32>
  %z = linalg.fill ins(%zero : f32) outs(%e : tensor<2x8x12xf32>) -> tensor<2x8x12xf32>
  %r = linalg.batch_matmul indexing_maps = [affine_map<(b, m, n, k) -> (b, k, m)>,
                                            affine_map<(b, m, n, k) -> (b, k, n)>,
                                            affine_map<(b, m, n, k) -> (b, m, n)>]
      ins(%a, %b : tensor<2x16x8xf32>, tensor<2x16x12xf32>) outs(%z : tensor<2x8x12xf32>) -> tensor<2x8x12xf32>
  return %r : tensor<2x8x12xf32>
}"""


@pytest.mark.parametrize(("text", "expected", "shapes", "reference"), [
    (_MATMUL_T, A.matmul(A.arg(0), A.transpose(A.arg(1))), [(8, 16), (12, 16)], lambda a, b: a @ b.T),
    (_BATCH_MATMUL_T, A.matmul(A.transpose(A.arg(0)), A.arg(1)), [(2, 16, 8), (2, 16, 12)],
     lambda a, b: a.transpose(0, 2, 1) @ b),
], ids=["matmul", "batch_matmul"])
def test_contraction_with_transposing_maps(text: str, expected: object, shapes: list[tuple[int, ...]],
                                           reference: object, rng: np.random.Generator) -> None:
    with make_context(), ir.Location.unknown():
        module = ir.Module.parse(text)
        normalize_program(module)
        names = {op.name for op in iter_ops(module)}
        assert names & {"linalg.matmul", "linalg.batch_matmul"}
        program = translate(module.body.operations[0].operation)
    assert program.opaque == [] and program.results == [expected]
    args = [rng.standard_normal(shape).astype(np.float32) for shape in shapes]
    got = prism.compile(text, target="host").jit("f")(*args)
    np.testing.assert_allclose(got, reference(*(a.astype(F64) for a in args)), rtol=1e-5, atol=1e-5)


# A row sum kept with a unit axis (keepdims), read back at the constant 0, and the same without the unit axis.
_KEEPDIMS = """func.func @f(%x: tensor<4x8xf32>) -> tensor<4x8xf32> {{
  %zero = arith.constant 0.0 : f32
  %re = tensor.empty() : {stat}
  %s0 = linalg.fill ins(%zero : f32) outs(%re : {stat}) -> {stat}
  %s = linalg.generic {{indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> {row}>],
      iterator_types = ["parallel", "reduction"]}} ins(%x : tensor<4x8xf32>) outs(%s0 : {stat}) {{
  ^bb0(%a: f32, %acc: f32):
    %r = arith.addf %acc, %a : f32
    linalg.yield %r : f32
  }} -> {stat}
  %e = tensor.empty() : tensor<4x8xf32>
  %d = linalg.generic {{indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> {row}>,
      affine_map<(i, j) -> (i, j)>], iterator_types = ["parallel", "parallel"]}}
      ins(%x, %s : tensor<4x8xf32>, {stat}) outs(%e : tensor<4x8xf32>) {{
  ^bb0(%a: f32, %l: f32, %o: f32):
    %r = arith.divf %a, %l : f32
    linalg.yield %r : f32
  }} -> tensor<4x8xf32>
  return %d : tensor<4x8xf32>
}}"""


def test_unit_axis_statistics_translate_as_plain_ones(rng: np.random.Generator) -> None:
    kept = _KEEPDIMS.format(stat="tensor<4x1xf32>", row="(i, 0)")
    plain = _KEEPDIMS.format(stat="tensor<4xf32>", row="(i)")
    program = _program(kept)
    assert program.opaque == []
    assert program.results == _program(plain).results
    (x,) = _inputs([(4, 8)], rng)
    x64 = x.astype(F64)
    np.testing.assert_allclose(prism.compile(kept, target="host").jit("f")(x), x64 / x64.sum(axis=1, keepdims=True),
                               rtol=2e-6)


# Unit axes on the arguments and on the result: the statistic read at the constant 0 is an argument, so its
# unit axis is dropped by a sum over it, and the result gets one back.
_UNIT_IO = """func.func @f(%x: tensor<4x8xf32>, %s: tensor<4x1xf32>) -> tensor<4x1xf32> {
  %zero = arith.constant 0.0 : f32
  %re = tensor.empty() : tensor<4x1xf32>
  %s0 = linalg.fill ins(%zero : f32) outs(%re : tensor<4x1xf32>) -> tensor<4x1xf32>
  %r = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i, 0)>,
      affine_map<(i, j) -> (i, 0)>], iterator_types = ["parallel", "reduction"]}
      ins(%x, %s : tensor<4x8xf32>, tensor<4x1xf32>) outs(%s0 : tensor<4x1xf32>) {
  ^bb0(%a: f32, %l: f32, %acc: f32):
    %q = arith.divf %a, %l : f32
    %r = arith.addf %acc, %q : f32
    linalg.yield %r : f32
  } -> tensor<4x1xf32>
  return %r : tensor<4x1xf32>
}"""


def test_unit_axis_terms_write_back_and_run(rng: np.random.Generator) -> None:
    program = _program(_UNIT_IO)
    assert program.opaque == []
    divisor = A.broadcast(A.reduce_sum(A.arg(1), 1), 1, 8)
    assert program.results == [A.broadcast(A.reduce_sum(A.div(A.arg(0), divisor), 1), 1, 1)]
    x, s = _inputs([(4, 8), (4, 1)], rng)
    expected = (x.astype(F64) / s).sum(axis=1, keepdims=True)
    written = function_text("f", [(4, 8), (4, 1)], program.results, "f32")
    for text in (_UNIT_IO, written):
        np.testing.assert_allclose(prism.compile(text, target="host").jit("f")(x, s), expected, rtol=2e-6)


def _attention(q: np.ndarray, k: np.ndarray, v: np.ndarray) -> np.ndarray:
    scores = q @ np.swapaxes(k, -1, -2) / np.sqrt(q.shape[-1])
    return _softmax(scores) @ v


# Every spelling (tests/python/test_spellings.py runs them and checks their kernels) reaches the algebra whole.
SPELLING_FILES = sorted(SPELLINGS.glob("*.mlir"))


@pytest.mark.parametrize("path", SPELLING_FILES, ids=[p.stem for p in SPELLING_FILES])
def test_spelling_translates_without_opaque_terms(path: Path) -> None:
    assert _program(path.read_text()).opaque == []


def test_written_back_batched_product_reads_its_transpose_through_maps(rng: np.random.Generator) -> None:
    """Q K^T's terms, written back, read K through the product's maps (no transpose op), and run right."""
    program = _program((SPELLINGS / "attention_named.mlir").read_text())
    written = function_text("attention", [(2, 24, 16), (2, 40, 16), (2, 40, 16)], program.results, "f32")
    assert "linalg.transpose" not in written
    assert "affine_map<(b, m, n, k) -> (b, n, k)>" in written
    assert _program(written).results == program.results
    args = [rng.standard_normal(shape).astype(np.float32) for shape in [(2, 24, 16), (2, 40, 16), (2, 40, 16)]]
    got = prism.compile(written, target="host").jit("attention")(*args)
    np.testing.assert_allclose(got, _attention(*(a.astype(F64) for a in args)), rtol=1e-4, atol=1e-5)


NAMED_ELEMENTWISE = """
func.func @named(%a: tensor<8x64xf32>, %b: tensor<8x64xf32>) -> tensor<8x64xf32> {
  %e = tensor.empty() : tensor<8x64xf32>
  %s = linalg.add ins(%a, %b : tensor<8x64xf32>, tensor<8x64xf32>) outs(%e : tensor<8x64xf32>) -> tensor<8x64xf32>
  %x = linalg.exp ins(%s : tensor<8x64xf32>) outs(%e : tensor<8x64xf32>) -> tensor<8x64xf32>
  %y = linalg.elementwise kind=#linalg.elementwise_kind<log> ins(%x : tensor<8x64xf32>)
      outs(%e : tensor<8x64xf32>) -> tensor<8x64xf32>
  %z = linalg.max ins(%y, %a : tensor<8x64xf32>, tensor<8x64xf32>) outs(%e : tensor<8x64xf32>) -> tensor<8x64xf32>
  return %z : tensor<8x64xf32>
}
"""


@pytest.mark.parametrize("target", ["h200", "a100"])
def test_named_elementwise_ops_compile_for_the_gpu_as_one_kernel(target: str) -> None:
    """Named elementwise ops reach the GPU code generator as generics: one pointwise kernel for the chain."""
    ptx = prism.compile(NAMED_ELEMENTWISE, target=target, emit="ptx").ptx_text
    assert ptx.count(".entry") == 1 and "named_k0_pointwise" in ptx
