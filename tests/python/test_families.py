"""A family is one registered object: one defined here, which no other file knows, is lifted, pruned, costed,
lowered and run on the host like a built-in one.

The family squares a matrix elementwise (``y = x * x``, one ``linalg.generic``). Its one knob is BR, the rows
of a block; its kernel on the host tiles the op into parallel blocks of BR rows.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np
import pytest
from mlir import ir

import prism
from prism.codegen.cpu import CpuLowering
from prism.codegen.transform import Script
from prism.codegen.upstream import apply_script
from prism.infra.diagnostics import describe_ops
from prism.infra.ir import iter_ops, make_context
from prism.infra.passbase import PassContext
from prism.search.cost import KnobValues, ceil_div, problem_sizes, roofline
from prism.search.families import Family, FamilyModel, register_family, registered_families, unregister_family
from prism.search.family import int_dict
from prism.search.space import Space, shape_param_bounds
from prism.targets.host import HostTarget, host_target

CHOICE = "test.square"  # where the selected block goes, and the kernel reads it
TAG = "test.square_tag"

PROGRAM = """
#id = affine_map<(d0, d1) -> (d0, d1)>
func.func @square(%x: tensor<100x48xf32>) -> tensor<100x48xf32> {
  %e = tensor.empty() : tensor<100x48xf32>
  %y = linalg.generic {indexing_maps = [#id, #id], iterator_types = ["parallel", "parallel"]}
      ins(%x : tensor<100x48xf32>) outs(%e : tensor<100x48xf32>) {
  ^bb0(%a: f32, %out: f32):
    %s = arith.mulf %a, %a : f32
    linalg.yield %s : f32
  } -> tensor<100x48xf32>
  return %y : tensor<100x48xf32>
}
"""


@dataclass(frozen=True)
class Square:
    """What the search reads off a square: the rows and columns (its loops ``m`` and ``n``)."""

    rows: int | None
    cols: int | None

    roles = ("m", "n")
    input_type = "f32"
    acc_bytes = 4

    def extent(self, role: str) -> int | None:
        return {"m": self.rows, "n": self.cols}[role]


@dataclass(frozen=True)
class SquareMatch:
    ops: tuple[ir.Operation, ...]
    problem: Square


def match_square(op: ir.Operation) -> SquareMatch | None:
    """A 2-D f32 ``linalg.generic`` whose body multiplies its one input by itself."""
    if op.name != "linalg.generic" or len(op.operands) != 2 or len(op.results) != 1:
        return None
    result = ir.RankedTensorType(op.results[0].type)
    if result.rank != 2 or str(result.element_type) != "f32":
        return None
    body = list(op.regions[0].blocks[0].operations)
    argument = op.regions[0].blocks[0].arguments[0]
    if len(body) != 2 or body[0].operation.name != "arith.mulf" \
            or any(operand != argument for operand in body[0].operands):
        return None
    dynamic = ir.ShapedType.is_dynamic_size
    return SquareMatch((op,), Square(*(None if dynamic(n) else n for n in result.shape)))


def square_space(op: Square, target: HostTarget) -> Space:
    return Space(kind="square", knobs={"br": "BR"}, flags={}, universe=f"{shape_param_bounds()} and 0 <= br <= 6",
                 groups=(("shape", "br <= LM"),))


def square_seconds(target: HostTarget, op: Square, values: KnobValues, assumed: int) -> np.ndarray:
    """Rounds of BR-row blocks over the cores, a vector a cycle; the square read and written once."""
    s = problem_sizes(op, assumed)
    lanes = target.vector_bits // 32
    rounds = ceil_div(ceil_div(s["m"], values["BR"]), target.cores)
    compute = rounds * (values["BR"] * ceil_div(s["n"], lanes) * target.cycle_seconds(op)
                        + target.block_overhead_seconds)
    return roofline(compute, 8 * s["m"] * s["n"] / target.dram_bytes_per_s)


def square_lower_bound(target: HostTarget, op: Square, values: KnobValues, assumed: int) -> np.ndarray:
    s = problem_sizes(op, assumed)
    return np.full(np.shape(values["BR"]), 8 * s["m"] * s["n"] / target.dram_bytes_per_s)


def square_kernel(module: ir.Module, lanes: int, workers: int, ctx: PassContext) -> list[list[str]]:
    """Tile each square that carries its choice into parallel blocks of BR rows."""
    chosen: list[ir.Operation] = []

    def visit(op: ir.Operation) -> ir.WalkResult:
        if CHOICE in op.attributes:
            chosen.append(op)
        return ir.WalkResult.ADVANCE

    module.operation.walk(visit)
    script, found = Script(), []
    for index, op in enumerate(chosen):
        function = op.parent
        while function.name != "func.func":
            function = function.parent
        found.append(describe_ops(function, [op]))
        op.attributes[TAG] = ir.IntegerAttr.get(ir.IntegerType.get_signless(64), index)
        script.tile_forall(script.match_tag(TAG, index), [int_dict(op.attributes[CHOICE])["BR"], 0])
    if chosen:
        apply_script(module, script.text(), "square blocks")
    return found


SQUARE = Family(kind="square", problem_type=Square, match=match_square, choice_attribute=CHOICE,
                models={"host": FamilyModel(space=square_space, seconds=square_seconds,
                                            lower_bound=square_lower_bound, cost_text="square: rounds of BR rows")},
                kernels={"cpu": square_kernel})


@pytest.fixture
def square_family() -> Iterator[Family]:
    register_family(SQUARE)
    yield SQUARE
    unregister_family(SQUARE.kind)


def test_a_family_defined_here_is_lifted_pruned_costed_lowered_and_run(square_family: Family,
                                                                      rng: np.random.Generator) -> None:
    lifted = prism.compile(PROGRAM, target="host", pipeline="prism-lift")
    assert 'kind = "square"' in lifted.mlir and 'symbols = ["BR"]' in lifted.mlir
    compiled = prism.compile(PROGRAM, target="host", emit="report")
    (family,) = compiled.report["families"]
    assert family["kind"] == "square"
    assert [stage["stage"] for stage in family["funnel"]][:2] == ["space", "shape"]
    assert family["funnel"][0]["size"] == 7 and family["funnel"][1]["size"] == 7  # BR from 1 to 64, within 128
    # The cost is the family's own: the choice is the block that it predicts fastest.
    op, host = Square(100, 48), host_target()
    blocks = np.asarray([2**e for e in range(7)])
    predicted = square_seconds(host, op, {"BR": blocks}, 1024)
    assert family["choice"] == {"BR": int(blocks[np.argmin(predicted)])}
    assert math.isclose(family["predicted_seconds"], float(predicted.min()), rel_tol=1e-12)
    (function,) = compiled.report["kernels"]
    assert [kernel["kind"] for kernel in function["kernels"]] == ["square", "loops"]  # each block's body: loops
    x = rng.standard_normal((100, 48), dtype=np.float32)
    np.testing.assert_allclose(prism.compile(PROGRAM, target="host").jit()(x), x.astype(np.float64) ** 2,
                               rtol=1e-6)


def test_the_kernel_reads_the_choice_and_runs_in_blocks(square_family: Family) -> None:
    selected = prism.compile(PROGRAM, target="host", pipeline="prism-lift,prism-prune,prism-select,prism-instantiate")
    (choice,) = re.findall(r"test.square = \{BR = (\d+) : i64\}", selected.mlir)
    with make_context(), ir.Location.unknown():
        module = ir.Module.parse(selected.mlir)
        CpuLowering(2, PassContext(), 256).tile(module)
        tiled = str(module)
    assert "scf.forall" in tiled and f"affine_map<(d0) -> (d0 * {choice})>" in tiled  # blocks of BR rows


def test_unknown_families_are_not_looked_for() -> None:
    """Without its registration, the same program has no family: the square is left as it is."""
    assert SQUARE not in registered_families()
    assert prism.compile(PROGRAM, target="host", emit="report").report["families"] == []


NEGATED_PRODUCT = """func.func @f(%a: tensor<7x16xf32>, %b: tensor<16x3xf32>) -> tensor<7x3xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<7x3xf32>
  %z = linalg.fill ins(%zero : f32) outs(%e : tensor<7x3xf32>) -> tensor<7x3xf32>
  %r = linalg.generic {indexing_maps = [affine_map<(m, n, k) -> (m, k)>, affine_map<(m, n, k) -> (k, n)>,
                                        affine_map<(m, n, k) -> (m, n)>],
                       iterator_types = ["parallel", "parallel", "reduction"]}
      ins(%a, %b : tensor<7x16xf32>, tensor<16x3xf32>) outs(%z : tensor<7x3xf32>) {
  ^bb0(%x: f32, %y: f32, %acc: f32):
    %ny = arith.negf %y : f32
    %p = arith.mulf %x, %ny : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  } -> tensor<7x3xf32>
  return %r : tensor<7x3xf32>
}"""


def test_a_body_that_negates_an_input_is_not_a_plain_product(rng: np.random.Generator) -> None:
    """Linalg's contraction test takes ``acc + a * -b`` (any unary chain on the inputs); Prism's product does not:
    it is not lifted (with the reason), the algebra keeps the negation, and the program computes ``-(A @ B)``
    (the algebra read it as ``A @ B``, and prism-verify refused the compilation as an unsound rewrite)."""
    from prism.search.family import analyze_contraction, why_not_lifted

    with make_context():
        module = ir.Module.parse(NEGATED_PRODUCT)
        generic = next(op for op in iter_ops(module) if op.name == "linalg.generic")
        assert analyze_contraction(generic) is None
        assert "not a plain product" in why_not_lifted(generic)
    a, b = rng.standard_normal((7, 16), dtype=np.float32), rng.standard_normal((16, 3), dtype=np.float32)
    got = prism.compile(NEGATED_PRODUCT, target="host").jit("f")(a, b)
    np.testing.assert_allclose(got, -(a.astype(np.float64) @ b), rtol=0, atol=1e-5)
