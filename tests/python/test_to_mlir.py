"""prism.algebra.to_mlir: terms back into MLIR, checked by round trips and by running both programs."""

from __future__ import annotations

import math

import numpy as np
import pytest
from mlir import ir
from test_verify import LORA, LORA_FUSED, PLAIN, RMSNORM, RMSNORM_FOLDED, TRANSPOSED, _row_sums

import prism
from conftest import REPO
from prism.algebra.terms import A, Program, translate
from prism.algebra.to_mlir import float_literal, function_text
from prism.infra.errors import UnsupportedOp
from prism.infra.ir import make_context
from prism.runtime.compare import find_counterexample

WORKLOADS = REPO / "benchmarks" / "workloads"


def _program(text: str) -> tuple[ir.Module, Program]:
    module = ir.Module.parse(text, make_context())
    func = next(op.operation for op in module.body.operations if op.operation.name == "func.func")
    return module, translate(func)


def _round_trip(text: str) -> tuple[ir.Module, ir.Module, Program, Program]:
    module, program = _program(text)
    emitted_text = function_text(program.name, list(program.arg_shapes), program.results, "f32")
    emitted, again = _program(emitted_text)
    return module, emitted, program, again


@pytest.mark.parametrize("name, text", [
    ("rmsnorm", RMSNORM), ("rmsnorm_folded", RMSNORM_FOLDED), ("lora", LORA), ("lora_fused", LORA_FUSED),
    ("plain", PLAIN), ("transposed", TRANSPOSED), ("row_sums", _row_sums("j")), ("column_sums", _row_sums("i")),
    *((f"workload {path.stem}", path.read_text()) for path in sorted(WORKLOADS.glob("attention.mlir"))),
    *((f"rewritten {path.stem}", path.read_text()) for path in sorted((WORKLOADS / "rewritten").glob("*.mlir"))),
])
def test_emitted_programs_translate_back_to_the_same_terms_and_compute_the_same(name: str, text: str) -> None:
    module, emitted, program, again = _round_trip(text)
    assert again.results == program.results
    assert not program.opaque, "these programs are inside the algebra"
    assert find_counterexample(module, emitted, program.name) is None


@pytest.mark.parametrize("name, text", [
    ("transposed", TRANSPOSED), ("lora", LORA),
    ("f16 transposed", (REPO / "examples" / "gemm_f16_transposed.mlir").read_text())])
def test_every_emitted_op_takes_the_location_given(name: str, text: str) -> None:
    """Ops inside the emitted generics' bodies too (an f16 operand's extension, each yield), so that no
    diagnostic about the emitted code points into generated text. (A named op's body is implicit: lowering
    replaces it with ops at the named op's location.)"""
    _, program = _program(text)
    emitted = function_text(program.name, list(program.arg_shapes), program.results, program.elements(),
                            location='loc("user.mlir":3:5)')
    module = ir.Module.parse(emitted, make_context())
    located = []

    def walk(op: ir.Operation) -> None:
        located.append(str(op.location))
        for region in op.regions if op.name in ("func.func", "linalg.generic") else ():
            for block in region.blocks:
                for inner in block.operations:
                    walk(inner.operation)

    for op in module.body.operations:
        walk(op.operation)
    assert located and all(where == 'loc("user.mlir":3:5)' for where in located), set(located)


def test_opaque_terms_and_dynamic_shapes_cannot_be_emitted() -> None:
    with pytest.raises(UnsupportedOp, match="opaque term"):
        function_text("f", [(2, 2)], [A.opaque("some.op", [A.arg(0)])], "f32")
    with pytest.raises(UnsupportedOp, match="no static shape"):
        function_text("f", [(None, 2)], [A.exp(A.arg(0))], "f32")
    with pytest.raises(UnsupportedOp, match="bare constant"):
        function_text("f", [(2, 2)], [A.splat(1.0)], "f32")
    # A product or a transpose of a constant (which a law may write) has no shape: a clean refusal, which
    # exploration takes as a choice to pass over.
    with pytest.raises(UnsupportedOp, match="matmul of a constant"):
        function_text("f", [(2, 2)], [A.add(A.arg(0), A.matmul(A.splat(1.0), A.arg(0)))], "f32")
    with pytest.raises(UnsupportedOp, match="transpose of a constant"):
        function_text("f", [(2, 2)], [A.add(A.arg(0), A.transpose(A.splat(1.0)))], "f32")


@pytest.mark.parametrize("value, element, literal", [
    (0.5, "f32", "5.00000000000000000e-01"), (1e-06, "f32", "9.99999999999999955e-07"),
    (-math.inf, "f32", "0xFF800000"), (math.inf, "f16", "0x7C00"),
    (-math.inf, "f64", "0xFFF0000000000000")])
def test_float_literals(value: float, element: str, literal: str) -> None:
    assert float_literal(value, element) == literal
    with make_context():
        ir.Module.parse(f"func.func @f() -> {element} {{\n  %c = arith.constant {literal} : {element}\n"
                        f"  return %c : {element}\n}}")


@pytest.mark.parametrize("reduce", [A.reduce_sum, A.reduce_max])
def test_a_reduction_along_a_broadcast_axis_is_emitted(reduce: object, rng: np.random.Generator) -> None:
    # The fused broadcast reads no element along the reduced loop: the operand is materialized instead.
    rows = A.broadcast(A.exp(A.arg(0)), 1, 5)
    results = [A.add(A.arg(1), A.broadcast(reduce(rows, 1), 1, 5)),
               reduce(A.add(A.broadcast(A.arg(0), 1, 5), A.broadcast(A.arg(0), 1, 5)), 1)]
    text = function_text("f", [(4,), (4, 5)], results, "f32")
    emitted, program = _program(text)
    assert program.results == results
    x, y = 0.5 * rng.standard_normal(4), 0.5 * rng.standard_normal((4, 5))
    expected = [y + (5 * np.exp(x) if reduce is A.reduce_sum else np.exp(x))[:, None],
                10 * x if reduce is A.reduce_sum else 2 * x]
    got = prism.compile(text, target="host").jit("f")(x.astype(np.float32), y.astype(np.float32))
    for have, want in zip(got, expected, strict=True):
        np.testing.assert_allclose(have, want, rtol=1e-5, atol=1e-5)
