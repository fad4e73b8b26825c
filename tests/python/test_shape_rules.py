"""The sizes a host function's ops assume of its arguments (prism.codegen.shapes): a call that breaks one raises
ArgumentError at the op, before any code runs; a call that keeps them computes as before. Constant sizes that
contradict each other are refused when the program is lowered, for either code generator."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from mlir import ir

import prism
from prism.codegen.shapes import ShapeRules, Size, Sum, attach_shape_rules, shape_rules
from prism.infra.ir import make_context, normalize_program
from prism.runtime.cpu import ArgumentError

ADD = """func.func @add(%a: tensor<?x4xf32>, %b: tensor<?x4xf32>) -> tensor<?x4xf32> {
  %c0 = arith.constant 0 : index
  %n = tensor.dim %a, %c0 : tensor<?x4xf32>
  %e = tensor.empty(%n) : tensor<?x4xf32>
  %r = linalg.add ins(%a, %b : tensor<?x4xf32>, tensor<?x4xf32>) outs(%e : tensor<?x4xf32>) -> tensor<?x4xf32>
  return %r : tensor<?x4xf32>
}
"""

MATMUL = """func.func @mm(%a: tensor<?x?xf32>, %b: tensor<?x?xf32>) -> tensor<?x?xf32> {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %m = tensor.dim %a, %c0 : tensor<?x?xf32>
  %n = tensor.dim %b, %c1 : tensor<?x?xf32>
  %z = arith.constant 0.0 : f32
  %e = tensor.empty(%m, %n) : tensor<?x?xf32>
  %f = linalg.fill ins(%z : f32) outs(%e : tensor<?x?xf32>) -> tensor<?x?xf32>
  %r = linalg.matmul ins(%a, %b : tensor<?x?xf32>, tensor<?x?xf32>) outs(%f : tensor<?x?xf32>) -> tensor<?x?xf32>
  return %r : tensor<?x?xf32>
}
"""

# A size given as an i32 argument: it must not be negative, and the op ties it to %a's rows.
PADDED = """func.func @padded(%a: tensor<?x4xf32>, %rows: i32) -> tensor<?x4xf32> {
  %n = arith.index_cast %rows : i32 to index
  %z = arith.constant 1.0 : f32
  %e = tensor.empty(%n) : tensor<?x4xf32>
  %f = linalg.fill ins(%z : f32) outs(%e : tensor<?x4xf32>) -> tensor<?x4xf32>
  %r = linalg.add ins(%a, %f : tensor<?x4xf32>, tensor<?x4xf32>) outs(%f : tensor<?x4xf32>) -> tensor<?x4xf32>
  return %r : tensor<?x4xf32>
}
"""

# The weight is prepared once by bind(); the rule still ties x's rows to v's.
BOUND = """func.func @f(%x: tensor<?x64xf32>, %w: tensor<64x48xf32> {prism.invariant}, %v: tensor<?x48xf32>)
    -> tensor<?x48xf32> {
  %r = linalg.matmul ins(%x, %w : tensor<?x64xf32>, tensor<64x48xf32>) outs(%v : tensor<?x48xf32>)
    -> tensor<?x48xf32>
  return %r : tensor<?x48xf32>
}
"""


def _compile(tmp_path: Path, text: str) -> prism.CompiledModule:
    source = tmp_path / "program.mlir"
    source.write_text(text)
    return prism.compile(source, target="host")


def _line(text: str, needle: str) -> int:
    return next(i for i, line in enumerate(text.splitlines(), 1) if needle in line)


def test_operands_that_disagree_on_a_loop_are_refused_at_the_op(tmp_path: Path, rng: np.random.Generator) -> None:
    add = _compile(tmp_path, ADD).jit()
    a, b = rng.standard_normal((3, 4), dtype=np.float32), rng.standard_normal((3, 4), dtype=np.float32)
    np.testing.assert_allclose(add(a, b), a.astype(np.float64) + b, rtol=1e-6)
    with pytest.raises(ArgumentError) as caught:
        add(a, rng.standard_normal((5, 4), dtype=np.float32))
    assert "dim 0 of argument 0 (3) and dim 0 of argument 1 (5)" in caught.value.message
    assert caught.value.location == f"{tmp_path / 'program.mlir'}:{_line(ADD, 'linalg.add')}:8"
    # Nothing changed: the function computes on sizes that agree, after the refused call.
    np.testing.assert_allclose(add(b, a), a.astype(np.float64) + b, rtol=1e-6)


def test_a_product_whose_inner_sizes_differ_is_refused(tmp_path: Path, rng: np.random.Generator) -> None:
    mm = _compile(tmp_path, MATMUL).jit()
    a, b = rng.standard_normal((3, 7), dtype=np.float32), rng.standard_normal((7, 6), dtype=np.float32)
    np.testing.assert_allclose(mm(a, b), a.astype(np.float64) @ b, rtol=1e-5, atol=1e-5)
    with pytest.raises(ArgumentError, match=r"'linalg.matmul' takes dim 1 of argument 0 \(7\) and dim 0 of "
                                            r"argument 1 \(5\) as the extent of one loop"):
        mm(a, rng.standard_normal((5, 6), dtype=np.float32))
    # The rule is on the sizes alone: any M and N are taken.
    wide = rng.standard_normal((1, 7), dtype=np.float32)
    np.testing.assert_allclose(mm(wide, b[:, :1].copy()), wide.astype(np.float64) @ b[:, :1], rtol=1e-5, atol=1e-5)


def test_a_size_argument_is_checked_against_zero_and_the_sizes_it_meets(tmp_path: Path,
                                                                        rng: np.random.Generator) -> None:
    padded = _compile(tmp_path, PADDED).jit()
    a = rng.standard_normal((3, 4), dtype=np.float32)
    np.testing.assert_allclose(padded(a, 3), a.astype(np.float64) + 1.0, rtol=1e-6)
    with pytest.raises(ArgumentError, match=r"'tensor.empty' takes argument 1 \(-1\), which must be at least 0") \
            as caught:
        padded(a, -1)
    assert caught.value.location.endswith(f"program.mlir:{_line(PADDED, 'tensor.empty')}:8")
    with pytest.raises(ArgumentError, match=r"dim 0 of argument 0 \(3\) and argument 1 \(5\)"):
        padded(a, np.int32(5))


# A window of %a's rows, %n from %o; and a block written into %a, every second row from %o.
SLICES = """func.func @window(%a: tensor<?x4xf32>, %n: index, %o: index) -> tensor<?x2xf32> {
  %s = tensor.extract_slice %a[%o, 1] [%n, 2] [1, 1] : tensor<?x4xf32> to tensor<?x2xf32>
  %e = tensor.empty(%n) : tensor<?x2xf32>
  %one = arith.constant 1.0 : f32
  %f = linalg.fill ins(%one : f32) outs(%e : tensor<?x2xf32>) -> tensor<?x2xf32>
  %r = linalg.add ins(%s, %f : tensor<?x2xf32>, tensor<?x2xf32>) outs(%f : tensor<?x2xf32>) -> tensor<?x2xf32>
  return %r : tensor<?x2xf32>
}
func.func @write(%a: tensor<?x8xf32>, %b: tensor<3x4xf32>, %o: index) -> tensor<?x8xf32> {
  %i = tensor.insert_slice %b into %a[%o, 2] [3, 4] [2, 1] : tensor<3x4xf32> into tensor<?x8xf32>
  return %i : tensor<?x8xf32>
}
"""


def test_a_slice_past_the_end_of_its_tensor_is_refused(tmp_path: Path, rng: np.random.Generator) -> None:
    compiled = _compile(tmp_path, SLICES)
    window, write = compiled.jit("window"), compiled.jit("write")
    a = rng.standard_normal((5, 4), dtype=np.float32)
    np.testing.assert_allclose(window(a, 2, 3), a[3:5, 1:3].astype(np.float64) + 1.0, rtol=1e-6)
    assert window(a, 0, 5).shape == (0, 2)  # an empty slice at the end
    with pytest.raises(ArgumentError, match=r"'tensor.extract_slice' ends its slice at argument 2 \+ argument 1 "
                                            r"\(6\) along dim 0 of argument 0, which is 5") as caught:
        window(a, 3, 3)
    assert caught.value.location.endswith(f"program.mlir:{_line(SLICES, 'tensor.extract_slice')}:8")
    with pytest.raises(ArgumentError, match=r"takes argument 2 \(-1\), which must be at least 0"):
        window(a, 2, -1)
    # Rows o, o + 2 and o + 4 of 6: o may be 0 or 1.
    big, block = rng.standard_normal((6, 8), dtype=np.float32), rng.standard_normal((3, 4), dtype=np.float32)
    expected = big.copy()
    expected[1:6:2, 2:6] = block
    np.testing.assert_array_equal(write(big, block, 1), expected)
    with pytest.raises(ArgumentError, match=r"'tensor.insert_slice' ends its slice at argument 2 \+ 5 \(7\) along "
                                            r"dim 0 of argument 0, which is 6"):
        write(big, block, 2)


# Pieces side by side: their rows must agree, with each other and with the static result; a pad by %n rows.
JOINED = """func.func @beside(%a: tensor<3x?xf32>, %b: tensor<?x4xf32>) -> tensor<3x?xf32> {
  %r = tensor.concat dim(1) %a, %b : (tensor<3x?xf32>, tensor<?x4xf32>) -> tensor<3x?xf32>
  return %r : tensor<3x?xf32>
}
func.func @padded(%x: tensor<?x5xf32>, %n: index) -> tensor<?x9xf32> {
  %z = arith.constant 0.0 : f32
  %p = tensor.pad %x low[%n, 2] high[1, 2] {
  ^bb0(%i: index, %j: index):
    tensor.yield %z : f32
  } : tensor<?x5xf32> to tensor<?x9xf32>
  return %p : tensor<?x9xf32>
}
"""


def test_concatenated_pieces_and_pads_keep_their_rules(tmp_path: Path, rng: np.random.Generator) -> None:
    compiled = _compile(tmp_path, JOINED)
    beside, padded = compiled.jit("beside"), compiled.jit("padded")
    a, b = rng.standard_normal((3, 2), dtype=np.float32), rng.standard_normal((3, 4), dtype=np.float32)
    np.testing.assert_array_equal(beside(a, b), np.concatenate([a, b], axis=1))
    with pytest.raises(ArgumentError, match=r"'tensor.concat' takes dim 0 of argument 1 \(5\) and 3 as one extent; "
                                            r"they must be equal"):
        beside(a, rng.standard_normal((5, 4), dtype=np.float32))
    x = rng.standard_normal((3, 5), dtype=np.float32)
    np.testing.assert_array_equal(padded(x, 2), np.pad(x, ((2, 1), (2, 2))))
    with pytest.raises(ArgumentError, match=r"'tensor.pad' takes argument 1 \(-1\), which must be at least 0"):
        padded(x, -1)


def test_a_bound_function_checks_the_whole_call(tmp_path: Path, rng: np.random.Generator) -> None:
    compiled = _compile(tmp_path, BOUND)
    w = rng.standard_normal((64, 48), dtype=np.float32)
    bound = compiled.bind("f", w=w)
    x, v = rng.standard_normal((5, 64), dtype=np.float32), rng.standard_normal((5, 48), dtype=np.float32)
    np.testing.assert_allclose(bound(x, v), v + x.astype(np.float64) @ w, rtol=1e-5, atol=1e-5)
    with pytest.raises(ArgumentError, match=r"dim 0 of argument 0 \(5\) and dim 0 of argument 2 \(9\)"):
        bound(x, rng.standard_normal((9, 48), dtype=np.float32))


def test_contradicting_constant_sizes_are_refused_by_both_code_generators(tmp_path: Path) -> None:
    text = """func.func @f(%a: tensor<3x4xf32>) -> tensor<?x4xf32> {
  %c5 = arith.constant 5 : index
  %e = tensor.empty(%c5) : tensor<?x4xf32>
  %r = linalg.add ins(%a, %a : tensor<3x4xf32>, tensor<3x4xf32>) outs(%e : tensor<?x4xf32>) -> tensor<?x4xf32>
  return %r : tensor<?x4xf32>
}
"""
    with pytest.raises(prism.ShapeMismatch, match="takes 3 and 5 as the extent of one loop") as caught:
        _compile(tmp_path, text).jit()
    assert caught.value.location.endswith("program.mlir:4:8")
    with pytest.raises(prism.ShapeMismatch, match="takes 3 and 5"):
        prism.compile(tmp_path / "program.mlir", target="h200", emit="ptx")


def _rules(text: str) -> list[str]:
    with make_context():
        module = ir.Module.parse(text)
        normalize_program(module)  # as the lowering does first: named elementwise ops become generics
        attach_shape_rules(module, shape_rules(module))
        func = module.body.operations[0].operation
        return [f"{rule.left} {rule.relation} {rule.right} {rule.op}" for rule in ShapeRules.of(func).rules]


def test_rules_follow_sizes_the_runtime_knows_and_only_those() -> None:
    assert _rules(MATMUL) == ["a0.1 == a1.0 linalg.matmul"]
    assert _rules(PADDED) == ["a1 >= 0 tensor.empty", "a0.0 == a1 linalg.generic"]
    assert _rules(SLICES) == ["a2 >= 0 tensor.extract_slice", "a1 >= 0 tensor.extract_slice",
                              "a0.0 >= a2 + a1 tensor.extract_slice"]
    # Through a cast, and against a static size.
    assert _rules("""func.func @f(%a: tensor<?x8xf32>, %b: tensor<?x?xf32>) -> tensor<?x?xf32> {
  %c = tensor.cast %a : tensor<?x8xf32> to tensor<?x?xf32>
  %r = linalg.add ins(%c, %b : tensor<?x?xf32>, tensor<?x?xf32>) outs(%b : tensor<?x?xf32>) -> tensor<?x?xf32>
  return %r : tensor<?x?xf32>
}""") == ["a0.0 == a1.0 linalg.generic", "a1.1 == 8 linalg.generic"]
    # A size computed by arithmetic, and an op in a loop's body, give none; nor does a static program.
    assert _rules("""func.func @f(%a: tensor<?xf32>, %n: index) -> tensor<?xf32> {
  %two = arith.constant 2 : index
  %m = arith.muli %n, %two : index
  %e = tensor.empty(%m) : tensor<?xf32>
  %r = linalg.add ins(%a, %a : tensor<?xf32>, tensor<?xf32>) outs(%e : tensor<?xf32>) -> tensor<?xf32>
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %l = scf.for %i = %c0 to %n step %c1 iter_args(%t = %r) -> tensor<?xf32> {
    %s = linalg.add ins(%t, %a : tensor<?xf32>, tensor<?xf32>) outs(%t : tensor<?xf32>) -> tensor<?xf32>
    scf.yield %s : tensor<?xf32>
  }
  return %l : tensor<?xf32>
}""") == []
    assert _rules(ADD.replace("?", "3").replace("(%n)", "()")) == []


def test_a_rule_over_an_argument_of_the_wrong_kind_is_left_to_the_argument_checks() -> None:
    dim, scalar = Size("dim", 0, 1), Size("scalar", 1)
    assert dim.value([np.zeros((2, 3)), 4]) == 3 and scalar.value([np.zeros((2, 3)), 4]) == 4
    assert dim.value([np.zeros(2)]) is None and scalar.value([None, "four"]) is None and dim.value([]) is None
    end = Sum.of([(1, dim), (2, scalar), (3, Size("const", 5))], -1)
    assert str(end) == "a0.1 + 2*a1 + 14" and Sum.parse(str(end)) == end
    assert end.value([np.zeros((2, 3)), 4]) == 3 + 8 + 14 and end.value([np.zeros(2), 4]) is None
    assert str(Sum.of([])) == "0" and Sum.parse("0") == Sum((), 0)
