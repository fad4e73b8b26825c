"""prism.algebra.to_mlir: terms back into MLIR, checked by round trips and by running both programs."""

from __future__ import annotations

import math

import pytest
from mlir import ir
from test_verify import LORA, LORA_FUSED, PLAIN, RMSNORM, RMSNORM_FOLDED, TRANSPOSED, _row_sums

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


def test_opaque_terms_and_dynamic_shapes_cannot_be_emitted() -> None:
    with pytest.raises(UnsupportedOp, match="opaque term"):
        function_text("f", [(2, 2)], [A.opaque("some.op", [A.arg(0)])], "f32")
    with pytest.raises(UnsupportedOp, match="no static shape"):
        function_text("f", [(None, 2)], [A.exp(A.arg(0))], "f32")
    with pytest.raises(UnsupportedOp, match="bare constant"):
        function_text("f", [(2, 2)], [A.splat(1.0)], "f32")


@pytest.mark.parametrize("value, element, literal", [
    (0.5, "f32", "5.00000000000000000e-01"), (1e-06, "f32", "9.99999999999999955e-07"),
    (-math.inf, "f32", "0xFF800000"), (math.inf, "f16", "0x7C00"),
    (-math.inf, "f64", "0xFFF0000000000000")])
def test_float_literals(value: float, element: str, literal: str) -> None:
    assert float_literal(value, element) == literal
    with make_context():
        ir.Module.parse(f"func.func @f() -> {element} {{\n  %c = arith.constant {literal} : {element}\n"
                        f"  return %c : {element}\n}}")
