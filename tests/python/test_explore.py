"""prism-explore and prism.algebra.explore: the fused forms Prism finds, their proofs, and their numerics."""

from __future__ import annotations

import functools
import math
import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from egglog import EGraph
from mlir import ir

import prism
from conftest import REPO
from prism.algebra import laws
from prism.algebra.egraph import Budget, prove, read_graph, saturate
from prism.algebra.explore import Exploration, ProgramCost, Variant, explore, replace_function
from prism.algebra.terms import A, Program, to_egglog, translate
from prism.codegen.gpu.ptx import ptxas
from prism.driver import Compilation
from prism.infra.errors import PrismError
from prism.infra.ir import make_context
from prism.passes import PIPELINES, ExplorePass, VerifyPass
from prism.targets import get_target

WORKLOADS = REPO / "benchmarks" / "workloads"
# Lowering for the host without exploring again: what numerics run on.
HOST_PIPELINE = "prism-lift,prism-prune,prism-select,prism-instantiate"


def invariant(text: str, *names: str) -> str:
    """``text`` with the named arguments marked invariant (weights)."""
    for name in names:
        text, count = re.subn(rf"(%{name}: tensor<[^>]*>)", r"\1 {prism.invariant}", text, count=1)
        assert count == 1, name
    return text


def explored(text: str, target: str) -> tuple[str, dict]:
    """The module after prism-explore and prism-verify, and the pass's report."""
    compilation = Compilation(ir.Module.parse(text, make_context()), target)
    compilation.run([ExplorePass(), VerifyPass()])
    return str(compilation.module), compilation.ctx.report


def function(module_text: str, name: str) -> str:
    """The text of ``func.func @name``."""
    match = re.search(rf"func\.func @{name}\(.*?\n  }}\n", module_text, re.S)
    assert match, f"@{name} not in the module"
    return match.group(0)


def assert_kept(source: str, target: str, remark: str) -> None:
    """prism-explore leaves ``source`` as written, with a remark containing ``remark``."""
    compilation = Compilation(ir.Module.parse(source, make_context()), target)
    compilation.run([ExplorePass()])
    assert str(compilation.module) == str(ir.Module.parse(source, make_context()))
    assert any(remark in message for _, message in compilation.ctx.remarks), compilation.ctx.remarks


def host_function(module_text: str, name: str):
    return prism.compile(module_text, target="host", pipeline=HOST_PIPELINE).jit(name)


@functools.cache
def explored_qkv() -> tuple[str, dict]:
    """qkv.mlir with its weights marked invariant, explored for the H200 and proven: once, for the two tests that
    read it (this file runs whole on one worker)."""
    return explored(invariant((WORKLOADS / "qkv.mlir").read_text(), "wq", "wk", "wv"), "h200")


def test_qkv_becomes_one_product_over_prepared_weights(rng: np.random.Generator) -> None:
    text, report = explored_qkv()
    (entry,) = report["explorations"]
    assert entry["rewritten"] and entry["variant_seconds"] < entry["predicted_seconds"]
    assert "fuse-products-sharing-a" in entry["laws"]
    apply, prepare = function(text, "qkv_apply"), function(text, "qkv_prepare")
    assert apply.count("linalg.matmul") == 1 and "tensor<4096x6144xf32>" in apply
    assert "tensor.concat" in prepare and "linalg.matmul" not in prepare
    # @qkv itself concatenates nothing per call: it stays three products, and says how the parts compose.
    whole = function(text, "qkv")
    assert whole.count("linalg.matmul") == 3 and "call" not in whole and "tensor.concat" not in whole
    assert "prism.apply_args = array<i64: 0, -1>, prism.prepare_args = array<i64: 1, 2, 3>" in whole
    assert [(p["function"], p["proved"]) for p in report["proofs"]] == [("qkv", True),
                                                                       ("qkv_prepare + @qkv_apply", True)]

    x = rng.standard_normal((16, 4096)).astype(np.float32)
    weights = [rng.standard_normal(shape).astype(np.float32) / 64 for shape in ((4096, 4096), (4096, 1024),
                                                                                (4096, 1024))]
    expected = [x.astype(np.float64) @ w.astype(np.float64) for w in weights]
    compiled = prism.compile(text, target="host", pipeline=HOST_PIPELINE)
    prepared = compiled.jit("qkv_prepare")(*weights)
    bound = compiled.bind("qkv", arg1=weights[0], arg2=weights[1], arg3=weights[2])
    for got in (compiled.jit("qkv")(x, *weights), compiled.jit("qkv_apply")(x, prepared), bound(x)):
        for want, have in zip(expected, got, strict=True):
            np.testing.assert_allclose(have, want, rtol=2e-4, atol=2e-4)


def test_a_preparation_that_saves_nothing_is_not_split_off(rng: np.random.Generator) -> None:
    """QK-norm attention's gains are invariant, but nothing computed from them alone saves time per call: the
    function stays whole (no @_prepare / @_apply), so binding the gains runs the same program as a plain call."""
    sys.path.insert(0, str(REPO / "benchmarks"))
    import cpu_workloads as cw  # the workloads live with the benchmarks

    workload = cw.qk_norm_attention(1, 2, 1, 96, 16)
    text, report = explored(workload.mlir, "host")
    (entry,) = report["explorations"]
    assert "qk_norm_attention_prepare" not in text and "qk_norm_attention_apply" not in text
    assert "prism.prepare_args" not in text
    inputs = {a.name: rng.standard_normal(a.shape).astype(np.float32) for a in workload.args}
    compiled = prism.compile(workload.mlir, target="host")
    bound = compiled.bind(workload.func, **{a.name: inputs[a.name] for a in workload.weights})
    (want,) = workload.compute(cw.NumpyOps, *(inputs[a.name].astype(np.float64) for a in workload.args))
    np.testing.assert_allclose(bound(*(inputs[a.name] for a in workload.activations)), want, rtol=1e-4, atol=1e-4)


def test_without_invariant_weights_the_fusion_does_not_pay_and_the_program_stays() -> None:
    source = (WORKLOADS / "qkv.mlir").read_text()
    text, report = explored(source, "h200")
    assert not report["explorations"][0]["rewritten"]
    assert text == str(ir.Module.parse(source, make_context()))


def test_lora_becomes_one_product_with_merged_weights(rng: np.random.Generator) -> None:
    text, report = explored(invariant((WORKLOADS / "lora.mlir").read_text(), "w", "a", "b"), "h200")
    assert report["explorations"][0]["rewritten"]
    apply, prepare = function(text, "lora_apply"), function(text, "lora_prepare")
    assert apply.count("linalg.matmul") == 1 and "linalg.generic" not in apply
    assert prepare.count("linalg.matmul") == 1 and "arith.addf" in prepare

    x, w = rng.standard_normal((16, 4096)).astype(np.float32), rng.standard_normal((4096, 4096)).astype(np.float32)
    a, b = rng.standard_normal((4096, 16)).astype(np.float32), rng.standard_normal((16, 4096)).astype(np.float32)
    want = x.astype(np.float64) @ w + (x.astype(np.float64) @ a) @ b
    have = host_function(text, "lora_apply")(x, host_function(text, "lora_prepare")(w, a, b))
    np.testing.assert_allclose(have, want, rtol=1e-3, atol=1e-2 * np.abs(want).max())


@pytest.mark.parametrize("target", ["h200", "host"])
def test_rmsnorm_scale_moves_after_the_product_and_gamma_into_the_weights(target: str,
                                                                          rng: np.random.Generator) -> None:
    text, report = explored(invariant((WORKLOADS / "rmsnorm_matmul.mlir").read_text(), "gamma", "w"), target)
    assert report["explorations"][0]["rewritten"]
    apply = function(text, "rmsnorm_matmul_apply")
    product = apply.index("linalg.matmul ins(%arg0, %arg1")  # x times the prepared weights: nothing before x
    # The row scale: a product with rsqrt (the statistics written first, one row kernel with the rows' other
    # ops), or (one law away) a division by sqrt, in the product's epilogue.
    after = apply[product:]
    assert ("math.rsqrt" in apply and "arith.mulf" in after) or ("math.sqrt" in apply and "arith.divf" in after), \
        "the row scale is an epilogue"
    assert "arith.mulf" in function(text, "rmsnorm_matmul_prepare"), "gamma is folded into the weights"

    x = rng.standard_normal((16, 4096)).astype(np.float32)
    gamma, w = rng.standard_normal(4096).astype(np.float32), rng.standard_normal((4096, 4096)).astype(np.float32)
    x64 = x.astype(np.float64)
    want = (x64 / np.sqrt((x64 ** 2).mean(axis=1, keepdims=True) + 1e-6) * gamma) @ w
    have = host_function(text, "rmsnorm_matmul_apply")(x, host_function(text, "rmsnorm_matmul_prepare")(gamma, w))
    np.testing.assert_allclose(have, want, rtol=1e-3, atol=1e-3 * np.abs(want).max())


def test_attention_divides_after_the_second_product() -> None:
    text, report = explored((WORKLOADS / "attention.mlir").read_text(), "h200")
    assert report["explorations"][0]["rewritten"]
    body = function(text, "attention")
    last_product = body.rindex("linalg.batch_matmul")
    assert "arith.divf" in body[last_product:] and "arith.divf" not in body[:last_product]
    assert "arith.maximumf" in body, "the max-subtraction stays: softmax laws are not explored"


def test_odd_shapes_explore_and_compute_the_same(rng: np.random.Generator) -> None:
    """Two projections of one input with odd sizes: whatever form wins, the numbers match float64."""
    source = invariant("""
func.func @gate_up(%x: tensor<7x93xf32>, %wg: tensor<93x45xf32>, %wu: tensor<93x45xf32>) -> tensor<7x45xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<7x45xf32>
  %z = linalg.fill ins(%zero : f32) outs(%e : tensor<7x45xf32>) -> tensor<7x45xf32>
  %g = linalg.matmul ins(%x, %wg : tensor<7x93xf32>, tensor<93x45xf32>) outs(%z : tensor<7x45xf32>) -> tensor<7x45xf32>
  %u = linalg.matmul ins(%x, %wu : tensor<7x93xf32>, tensor<93x45xf32>) outs(%z : tensor<7x45xf32>) -> tensor<7x45xf32>
  %p = linalg.mul ins(%g, %u : tensor<7x45xf32>, tensor<7x45xf32>) outs(%e : tensor<7x45xf32>) -> tensor<7x45xf32>
  return %p : tensor<7x45xf32>
}""", "wg", "wu")
    text, report = explored(source, "host")
    x = rng.standard_normal((7, 93)).astype(np.float32)
    wg, wu = (rng.standard_normal((93, 45)).astype(np.float32) for _ in range(2))
    want = (x.astype(np.float64) @ wg) * (x.astype(np.float64) @ wu)
    np.testing.assert_allclose(host_function(text, "gate_up")(x, wg, wu), want, rtol=1e-4, atol=1e-4)
    assert report["proofs"][0]["proved"]


def test_exploration_is_deterministic_across_processes() -> None:
    """Byte-identical output from two processes with different string hashing: this one (its exploration of qkv,
    cached) and prism-opt in a child whose hash seed is not this process's."""
    source = invariant((WORKLOADS / "qkv.mlir").read_text(), "wq", "wk", "wv")
    seed = "2" if os.environ.get("PYTHONHASHSEED") == "1" else "1"
    run = subprocess.run([sys.executable, "-m", "prism.cli", "-", "--target=h200", "-p", "prism-explore"],
                         input=source, capture_output=True, text=True, cwd=REPO, timeout=300,
                         env={**os.environ, "PYTHONHASHSEED": seed})
    assert run.returncode == 0, run.stderr
    assert "qkv_apply" in run.stdout and run.stdout == explored_qkv()[0]


def test_explored_qkv_lowers_to_one_gpu_gemm(tmp_path: Path) -> None:
    source = invariant((WORKLOADS / "qkv.mlir").read_text(), "wq", "wk", "wv")
    compiled = prism.compile(source, target="h200")
    kinds = [k["name"].split("_k", 1)[1] for k in compiled.manifest["functions"]["qkv_apply"]["kernels"]]
    assert kinds == ["0_gemm", "1_copy", "2_copy", "3_copy"], "one product, then the three slices of its result"
    assert all(r.spill_bytes == 0 for r in ptxas(compiled.ptx_text, "sm_90a").values())


def test_functions_outside_the_algebra_stay_with_a_remark() -> None:
    source = """
func.func @f(%x: tensor<10x10xf32>, %k: tensor<3x3xf32>, %o: tensor<8x8xf32>) -> tensor<8x8xf32> {
  %c = linalg.conv_2d ins(%x, %k : tensor<10x10xf32>, tensor<3x3xf32>) outs(%o : tensor<8x8xf32>) -> tensor<8x8xf32>
  return %c : tensor<8x8xf32>
}"""
    assert_kept(source, "host", "'linalg.conv_2d' is outside the algebra")


def test_dynamic_shapes_stay_with_a_remark() -> None:
    source = (WORKLOADS / "gemm_dynamic_m.mlir").read_text()
    assert_kept(source, "host", "static shape")


def test_bad_options_are_errors() -> None:
    compilation = Compilation(ir.Module.parse((WORKLOADS / "qkv.mlir").read_text(), make_context()), "host")
    with pytest.raises(PrismError, match="must be in \\[1, "):
        compilation.run([ExplorePass(iterations=0)])


def test_prism_optimize_starts_with_explore() -> None:
    assert PIPELINES["prism-optimize"][1][0] is ExplorePass


def test_a_part_its_whole_does_not_describe_is_not_verified() -> None:
    original = (WORKLOADS / "qkv.mlir").read_text()
    stray = original + """
func.func @qkv_prepare(%w: tensor<4x4xf32>) -> tensor<4x4xf32> attributes {prism.part_of = "qkv"} {
  return %w : tensor<4x4xf32>
}"""
    with pytest.raises(prism.VerificationError, match="@qkv_prepare is not in the original program"):
        prism.verify(original, stray)


def _split_gemm(apply_body: str, attributes: str = "prism.apply_args = array<i64: 0, -1>, "
                "prism.prepare_args = array<i64: 1>") -> str:
    """A 4x4 GEMM @g split into parts: @g_prepare passes the weight through, @g_apply returns ``apply_body``."""
    return f"""
func.func @g_prepare(%w: tensor<4x4xf32>) -> tensor<4x4xf32> attributes {{prism.part_of = "g"}} {{
  return %w : tensor<4x4xf32>
}}
func.func @g_apply(%x: tensor<4x4xf32>, %w: tensor<4x4xf32>) -> tensor<4x4xf32> attributes {{prism.part_of = "g"}} {{
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<4x4xf32>
  %z = linalg.fill ins(%zero : f32) outs(%e : tensor<4x4xf32>) -> tensor<4x4xf32>
  {apply_body}
}}
func.func @g(%x: tensor<4x4xf32>, %w: tensor<4x4xf32>) -> tensor<4x4xf32> attributes {{{attributes}}} {{
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<4x4xf32>
  %z = linalg.fill ins(%zero : f32) outs(%e : tensor<4x4xf32>) -> tensor<4x4xf32>
  %c = linalg.matmul ins(%x, %w : tensor<4x4xf32>, tensor<4x4xf32>) outs(%z : tensor<4x4xf32>) -> tensor<4x4xf32>
  return %c : tensor<4x4xf32>
}}"""


_PRODUCT = ("%c = linalg.matmul ins(%x, %w : tensor<4x4xf32>, tensor<4x4xf32>) outs(%z : tensor<4x4xf32>) "
            "-> tensor<4x4xf32>\n  return %c : tensor<4x4xf32>")


def test_the_composition_of_the_parts_is_proven_not_only_the_whole() -> None:
    original = _split_gemm(_PRODUCT).split("func.func @g(")[1]
    original = "func.func @g(" + original.replace(" attributes {prism.apply_args = array<i64: 0, -1>, "
                                                  "prism.prepare_args = array<i64: 1>}", "")
    assert [p.name for p in prism.verify(original, _split_gemm(_PRODUCT))] == ["g", "g_prepare + @g_apply"]
    # @g itself is right, but @g_apply returns the input: the composition is refused, with a counterexample.
    with pytest.raises(prism.VerificationError, match="could not prove @g_prepare \\+ @g_apply .*counterexample"):
        prism.verify(original, _split_gemm("return %x : tensor<4x4xf32>"))
    # Attributes that do not fit the parts' arguments are refused before any proof.
    with pytest.raises(prism.VerificationError, match="do not fit the arguments of @g_prepare and @g_apply"):
        prism.verify(original, _split_gemm(_PRODUCT, "prism.apply_args = array<i64: 0>, "
                                                     "prism.prepare_args = array<i64: 1>"))


_EGGLOG_INPUT = """
import sys
from egglog import EGraph
from mlir import ir
from prism.algebra import egraph
from prism.algebra.terms import to_egglog, translate
from prism.infra.ir import make_context, normalize_program
with make_context():
    module = ir.Module.parse(open(sys.argv[1]).read())
    normalize_program(module)
    program = translate(next(op for op in module.body.operations if op.operation.name == "func.func"))
graph, memo = EGraph(save_egglog_string=True), {}
program.register_shapes(graph)
for index, term in enumerate(program.results):
    graph.let(f"result{index}", to_egglog(term, memo))
print(graph.as_egglog_string)
"""


def test_every_process_gives_egglog_the_same_commands() -> None:
    """A program's terms reach egglog as the same commands in every process (names of shared subterms and their
    order included): with other commands, a bounded run of the laws reaches other programs."""
    runs = [subprocess.run([sys.executable, "-c", _EGGLOG_INPUT, str(WORKLOADS / "decoder_block_f16.mlir")],
                           capture_output=True, text=True, check=True, env={**os.environ, "PYTHONHASHSEED": seed})
            for seed in ("1", "2", "2")]
    assert "$__expr_" in runs[0].stdout and "prism_algebra_ops_matmul" in runs[0].stdout
    assert runs[0].stdout == runs[1].stdout == runs[2].stdout


def test_the_graph_reader_sees_each_term_in_its_class() -> None:
    egraph = EGraph()
    program = Program("f", [(4, 3), (3, 5), (3, 2)], [A.matmul(A.arg(0), A.arg(1)), A.matmul(A.arg(0), A.arg(2))])
    egraph.register(*program.shape_facts())
    for index, term in enumerate(program.results):
        egraph.let(f"result{index}", to_egglog(term))
    saturate(egraph, Budget(iterations=2), ("sharing",))
    graph = read_graph(egraph)
    x, w1, w2 = (graph.find("arg", (), (i,)) for i in range(3))
    first, second = graph.lets["result0"], graph.lets["result1"]
    assert graph.find("matmul", (x, w1), ()) == first and graph.shapes[first] == (4, 5)
    fused = graph.find("matmul", (x, graph.find("concat", (w1, w2), (1,))), ())
    assert graph.shapes[fused] == (4, 7)
    assert graph.find("slice_", (fused,), (1, 0, 5)) == first and graph.find("slice_", (fused,), (1, 5, 2)) == second


def test_the_sharing_law_proves_a_fusion_and_not_a_wrong_one() -> None:
    shapes = [(4, 3), (3, 5), (3, 2)]
    written = Program("f", shapes, [A.matmul(A.arg(0), A.arg(1)), A.matmul(A.arg(0), A.arg(2))])
    fused = A.matmul(A.arg(0), A.concat(A.arg(1), A.arg(2), 1))
    right = Program("f", shapes, [A.slice_(fused, 1, 0, 5), A.slice_(fused, 1, 5, 2)])
    wrong = Program("f", shapes, [A.slice_(fused, 1, 0, 5), A.slice_(fused, 1, 4, 2)])
    assert prove(written, right, Budget(iterations=3), ("sharing",)).proved
    assert not prove(written, wrong, Budget(iterations=3), ("sharing",)).proved
    assert laws.LAW_NAMES["sharing"] == ["fuse-products-sharing-a"]


def test_explore_costs_products_with_the_search() -> None:
    """A fused product is cheaper than the three it replaces on a GPU, where each launch costs."""
    module = ir.Module.parse((WORKLOADS / "qkv.mlir").read_text(), make_context())
    program = translate(next(op.operation for op in module.body.operations))
    found = explore(program, get_target("h200"), "f32", frozenset({1, 2, 3}))
    assert found.improves and found.speedup > 1.05 and len(found.best.prepared) == 1


def test_a_taken_helper_name_keeps_the_function_as_written() -> None:
    source = invariant((WORKLOADS / "qkv.mlir").read_text(), "wq", "wk", "wv") + """
func.func @qkv_apply(%a: tensor<4x4xf32>) -> tensor<4x4xf32> {
  return %a : tensor<4x4xf32>
}"""
    assert_kept(source, "h200", "@qkv_apply already exists")


def test_apply_marks_prepared_and_passed_through_weights_invariant() -> None:
    """@f_apply's arguments that are the same on every call (a prepared value, and a weight of @f passed
    through) carry {prism.invariant}, so that the host packs them once too; the activation does not."""
    source = """func.func @qkv(%x: tensor<4x8xf32>, %wq: tensor<8x8xf32> {prism.invariant},
               %wk: tensor<8x4xf32> {prism.invariant}, %wv: tensor<8x4xf32> {prism.invariant})
    -> (tensor<4x8xf32>, tensor<4x4xf32>, tensor<4x4xf32>) {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<4x8xf32>
  %z = linalg.fill ins(%zero : f32) outs(%e : tensor<4x8xf32>) -> tensor<4x8xf32>
  %q = linalg.matmul ins(%x, %wq : tensor<4x8xf32>, tensor<8x8xf32>) outs(%z : tensor<4x8xf32>) -> tensor<4x8xf32>
  %e2 = tensor.empty() : tensor<4x4xf32>
  %z2 = linalg.fill ins(%zero : f32) outs(%e2 : tensor<4x4xf32>) -> tensor<4x4xf32>
  %k = linalg.matmul ins(%x, %wk : tensor<4x8xf32>, tensor<8x4xf32>) outs(%z2 : tensor<4x4xf32>) -> tensor<4x4xf32>
  %v = linalg.matmul ins(%x, %wv : tensor<4x8xf32>, tensor<8x4xf32>) outs(%z2 : tensor<4x4xf32>) -> tensor<4x4xf32>
  return %q, %k, %v : tensor<4x8xf32>, tensor<4x4xf32>, tensor<4x4xf32>
}"""
    module = ir.Module.parse(source, make_context())
    with module.context:
        func = module.body.operations[0].operation
        program = translate(func)
        x, wq, wk, wv = (A.arg(i) for i in range(4))
        kv = A.matmul(x, A.arg(4))  # x times the prepared concat(wk, wv): K and V share one product
        written = Variant(tuple(program.results), (), 3.0)
        best = Variant((A.matmul(x, wq), A.slice_(kv, 1, 0, 4), A.slice_(kv, 1, 4, 4)), (A.concat(wk, wv, 1),),
                       1.0)
        found = Exploration(written, best, written, "iterations", {}, 0, 0, 0, 0.0, frozenset({1, 2, 3}))
        replace_function(module, func, "qkv", program, found, "f32")
    text = str(module)
    assert re.search(r"func.func @qkv_apply\(%arg0: tensor<4x8xf32>, %arg1: tensor<8x8xf32> \{prism.invariant\}, "
                     r"%arg2: tensor<8x8xf32> \{prism.invariant\}\)", text), text
    assert "prism.apply_args = array<i64: 0, 1, -1>, prism.prepare_args = array<i64: 2, 3>" in text
    assert [p.name for p in prism.verify(source, text)] == ["qkv", "qkv_prepare + @qkv_apply"]


# x (16 x 1024) times w (1024 x 2048), and what reads the product.
X, W, W2, ROW, COLUMN, BATCH_COLUMN = A.arg(0), A.arg(1), A.arg(2), A.arg(3), A.arg(4), A.arg(5)
SHAPES = [(16, 1024), (1024, 2048), (1024, 2048), (16,), (2048,), (16, 2048)]


def cost(target: str, *results) -> float:
    return ProgramCost(get_target(target), "f32", SHAPES).seconds(results)


def test_targets_with_fused_kernels_count_epilogues_and_dual_products(tuned_host: None) -> None:
    """A row scale, a bias or a residual read by nothing but its pointwise consumer runs on the product kernel's
    tiles (no pass over the product); two products of x read by one consumer (SwiGLU's gate and up) run as
    one kernel, costed as one product of twice the columns: on the host and on NVIDIA GPUs, whose kernels do
    both. A target compiled by IREE (mi300x) pays each as written."""
    product = A.matmul(X, W)
    row, column = A.broadcast(ROW, 1, 2048), A.broadcast(COLUMN, 0, 16)
    for target, fuses in (("host", True), ("h200", True), ("mi300x", False)):
        model, alone = ProgramCost(get_target(target), "f32", SHAPES), cost(target, product)
        c_bytes = 4 * 16 * 2048
        for consumer, read in ((A.mul(product, row), 4 * 16), (A.add(product, column), 4 * 2048),
                               (A.add(product, BATCH_COLUMN), c_bytes)):
            # Fused, it reads its other input inside the product's kernel; else it is a kernel of its own that
            # also reads the product and writes its result.
            extra = (model.pass_seconds(read) - model.pass_seconds(0) if fuses
                     else model.pass_seconds(read + 2 * c_bytes))
            assert math.isclose(cost(target, consumer), alone + extra, rel_tol=1e-9)
        gated = A.mul(A.exp(A.matmul(X, W)), A.matmul(X, W2))
        both = ProgramCost(get_target(target), "f32", SHAPES).product_seconds((16, 1024), (1024, 4096))
        assert math.isclose(cost(target, gated), both, rel_tol=1e-9) == fuses
    # One consumer reading the product twice (as SiLU reads the gate) is still its epilogue: one generic, which
    # reads the product once.
    model = ProgramCost(get_target("host"), "f32", SHAPES)
    twice = A.add(A.mul(product, row), product)
    assert math.isclose(cost("host", twice), cost("host", product) + model.pass_seconds(4 * 16) - model.pass_seconds(0),
                        rel_tol=1e-9)
    # Not an epilogue: a product read by two consumers, and a scale per column of another shape than the
    # product's loops.
    assert model.seconds([A.mul(product, row), product]) > cost("host", product) * 1.0001
    other = A.mul(product, A.broadcast(A.arg(6), 1, 2048))
    shapes = [*SHAPES, (16,)]
    assert ProgramCost(get_target("host"), "f32", shapes).seconds([other]) < cost("host", product) * 1.001


def test_a_scale_the_kernel_cannot_read_is_not_an_epilogue() -> None:
    """The host's epilogues read other inputs per element, per row or per column; a scale per batch and column
    of a batched product (QK-norm's key scale after the scores) is a pass of its own."""
    q, k, scale = A.arg(0), A.arg(1), A.arg(2)
    shapes = [(4, 128, 64), (4, 64, 256), (4, 256)]
    product = A.matmul(q, k)
    scaled = A.mul(product, A.broadcast(scale, 1, 128))
    model = ProgramCost(get_target("host"), "f32", shapes)
    assert model.seconds([scaled]) > model.seconds([product]) * 1.01


def test_the_rmsnorm_scale_moves_after_the_product_where_it_is_an_epilogue() -> None:
    """Without invariant weights, RMSNorm's row scale after the product is the product kernel's epilogue on
    NVIDIA GPUs, so the moved form (x * gamma, the product, the scale on its tiles) is taken: it moves no more
    bytes than the written one, and spares the scale's own kernel."""
    text, report = explored((WORKLOADS / "rmsnorm_matmul.mlir").read_text(), "h200")
    found = report["explorations"][0]
    assert found["rewritten"] and found["variant_seconds"] <= found["predicted_seconds"]
    written = function(text, "rmsnorm_matmul")
    after = written[written.index("linalg.matmul"):]  # rsqrt, or (one law away) a division by sqrt
    assert "math.rsqrt" in after or "math.sqrt" in after, "the row scale comes after the product"


def test_the_host_runs_the_rmsnorm_statistics_in_the_row_kernel_of_the_normalization() -> None:
    """On the host the row scale's statistics and the normalization are one row kernel, before the product or
    with x * gamma before its epilogue: two kernels either way, at one predicted time; the row scale stays in
    canonical form, one rsqrt per row."""
    text, report = explored((WORKLOADS / "rmsnorm_matmul.mlir").read_text(), "host")
    found = report["explorations"][0]
    assert found["variant_seconds"] <= found["predicted_seconds"]
    written = function(text, "rmsnorm_matmul")
    assert written.count("math.rsqrt") == 1 and "math.sqrt" not in written
    kernels = prism.compile(text, target="host", emit="report").report["kernels"]
    assert sum(len(function["kernels"]) for function in kernels) <= 2


def test_a_target_without_epilogues_keeps_the_rmsnorm_scale_before_the_product() -> None:
    """On a target whose products take no epilogue (mi300x, compiled by IREE), the moved scale would be a pass
    of its own: the program stays as written."""
    assert not explored((WORKLOADS / "rmsnorm_matmul.mlir").read_text(), "mi300x")[1]["explorations"][0]["rewritten"]


def _scalar_program(name: str, shape: tuple[int, ...], operands: list[str], body: list[str]) -> str:
    """``@name`` of one parallel generic over ``shape``: operand ``"x"`` has that shape, ``"m"`` is 0-d."""
    loops = ", ".join(f"d{i}" for i in range(len(shape)))
    full = f"tensor<{'x'.join(map(str, shape))}xf32>"
    types = [full if kind == "x" else "tensor<f32>" for kind in operands]
    maps = [f"affine_map<({loops}) -> ({loops if kind == 'x' else ''})>" for kind in operands]
    args = ", ".join(f"%a{i}: {t}" for i, t in enumerate(types))
    names = ", ".join(f"%a{i}" for i in range(len(operands)))
    block = ", ".join([*(f"%i{i}: f32" for i in range(len(operands))), "%o: f32"])
    lines = "".join(f"    {line}\n" for line in body)
    return f"""
func.func @{name}({args}) -> {full} {{
  %e = tensor.empty() : {full}
  %r = linalg.generic {{indexing_maps = [{', '.join(maps)}, affine_map<({loops}) -> ({loops})>],
                       iterator_types = [{', '.join(['"parallel"'] * len(shape))}]}}
      ins({names} : {', '.join(types)}) outs(%e : {full}) {{
  ^bb0({block}):
{lines}    linalg.yield %y : f32
  }} -> {full}
  return %r : {full}
}}"""


# 0-d operands broadcast into ops of rank 1 to 3, first, second or both: (shape, operand kinds, body, float64).
SCALAR_CASES = {
    "x_minus_m": ((64,), "xm", ["%y = arith.subf %i0, %i1 : f32"], lambda a: a[0] - a[1]),
    "m_minus_x": ((8, 16), "mx", ["%y = arith.subf %i0, %i1 : f32"], lambda a: a[0] - a[1]),
    "exp_of_m_times_x": ((2, 3, 8), "mx", ["%t = math.exp %i0 : f32", "%y = arith.mulf %t, %i1 : f32"],
                         lambda a: np.exp(a[0]) * a[1]),
    "a_x_plus_b": ((5, 12), "mxm", ["%t = arith.mulf %i0, %i1 : f32", "%y = arith.addf %t, %i2 : f32"],
                   lambda a: a[0] * a[1] + a[2]),
    "m_alone": ((4, 6), "m", ["%y = arith.negf %i0 : f32"], lambda a: np.broadcast_to(-a[0], (4, 6))),
}


@pytest.mark.parametrize("case", sorted(SCALAR_CASES))
def test_zero_d_operands_broadcast_into_every_rank(case: str, rng: np.random.Generator) -> None:
    """A 0-d tensor read through ``(d0, ...) -> ()`` keeps the op's iteration space in the explored form."""
    shape, kinds, body, reference = SCALAR_CASES[case]
    source = _scalar_program(case, shape, list(kinds), body)
    text, report = explored(source, "host")
    assert report["proofs"] == [] or all(proof["proved"] for proof in report["proofs"])
    args = [rng.standard_normal(shape if kind == "x" else ()).astype(np.float32) for kind in kinds]
    want = reference([a.astype(np.float64) for a in args])
    have = prism.compile(source, target="host").jit(case)(*args)
    np.testing.assert_allclose(have, want, rtol=1e-5, atol=1e-5)


def test_a_sum_to_0_d_subtracted_from_its_input(rng: np.random.Generator) -> None:
    """Centering: a reduction to a 0-d tensor, broadcast back over the rank-2 input."""
    source = """
func.func @center(%x: tensor<6x10xf32>) -> tensor<6x10xf32> {
  %zero = arith.constant 0.0 : f32
  %e0 = tensor.empty() : tensor<f32>
  %z = linalg.fill ins(%zero : f32) outs(%e0 : tensor<f32>) -> tensor<f32>
  %s = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> ()>],
                       iterator_types = ["reduction", "reduction"]} ins(%x : tensor<6x10xf32>) outs(%z : tensor<f32>) {
  ^bb0(%in: f32, %acc: f32):
    %t = arith.addf %acc, %in : f32
    linalg.yield %t : f32
  } -> tensor<f32>
  %e = tensor.empty() : tensor<6x10xf32>
  %r = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> ()>,
                                        affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]}
      ins(%x, %s : tensor<6x10xf32>, tensor<f32>) outs(%e : tensor<6x10xf32>) {
  ^bb0(%a: f32, %b: f32, %o: f32):
    %d = arith.subf %a, %b : f32
    linalg.yield %d : f32
  } -> tensor<6x10xf32>
  return %r : tensor<6x10xf32>
}"""
    explored(source, "host")
    x = rng.standard_normal((6, 10)).astype(np.float32)
    want = x.astype(np.float64) - x.astype(np.float64).sum()
    np.testing.assert_allclose(prism.compile(source, target="host").jit("center")(x), want, rtol=1e-5, atol=1e-5)
