"""Mixed precision in the algebra: casts as terms with exact laws only, element types derived for every term, and
f16/bf16 programs (f16 in, f32 accumulation, f16 out) proven, explored and written back.

Each law is proven on a true instance and refused on a false variant; a scale or any arithmetic moved across a cast
to f16 is refused, and laws that reassociate arithmetic hold in f32 and f64 alone.
"""

from __future__ import annotations

import re

import numpy as np
import pytest
from mlir import ir

from conftest import lower_on_host, run_cli
from prism.algebra import to_mlir
from prism.algebra.budget import Budget
from prism.algebra.egraph import owned_egraph, prove, read_graph, saturate
from prism.algebra.explore import ProgramCost, product_contraction
from prism.algebra.prove import prove_modules, public_functions
from prism.algebra.terms import A, Program, Term, element_of, to_egglog, translate
from prism.codegen.gpu.ptx import ptxas_path
from prism.infra.errors import VerificationError
from prism.infra.ir import make_context, normalize_elementwise
from prism.targets import get_target

x, y, z = A.arg(0), A.arg(1), A.arg(2)


def proves(left: Term, right: Term, elements: tuple[str, ...], shapes: tuple[tuple[int, ...], ...] | None = None,
           rulesets: tuple[str, ...] | None = None) -> bool:
    """Whether the algebra proves ``left`` equal to ``right`` over arguments of ``elements`` (4x8 by default)."""
    shapes = shapes or ((4, 8),) * len(elements)
    program = Program("f", list(shapes), [left], arg_elements=list(elements))
    candidate = Program("f", list(shapes), [right], arg_elements=list(elements))
    return prove(program, candidate, Budget(seconds=3), rulesets).proved


# --- the cast laws, each true instance proven and each false variant refused -------------------------------------

def test_a_cast_to_its_own_type_is_the_identity_and_a_cast_to_another_is_not() -> None:
    assert proves(A.cast(x, "f16"), x, ("f16",))
    assert not proves(A.cast(x, "f32"), x, ("f16",))


@pytest.mark.parametrize(("source", "through", "to"), [("f16", "f32", "f16"), ("bf16", "f32", "bf16"),
                                                       ("f16", "f32", "f64"), ("f32", "f64", "f16"),
                                                       ("bf16", "f64", "f32")])
def test_a_cast_after_an_exact_cast_is_one_cast(source: str, through: str, to: str) -> None:
    assert proves(A.cast(A.cast(x, through), to), A.cast(x, to), (source,))


@pytest.mark.parametrize(("source", "through", "to"), [("f32", "f16", "f32"), ("f32", "bf16", "f32"),
                                                       ("f16", "bf16", "f32"), ("bf16", "f16", "f32"),
                                                       ("f64", "f32", "f64")])
def test_a_cast_after_a_rounding_cast_is_refused(source: str, through: str, to: str) -> None:
    assert not proves(A.cast(A.cast(x, through), to), A.cast(x, to), (source,))


def test_f16_widened_and_narrowed_is_itself_but_f32_narrowed_and_widened_is_not() -> None:
    assert proves(A.cast(A.cast(x, "f32"), "f16"), x, ("f16",))
    assert not proves(A.cast(A.cast(x, "f16"), "f32"), x, ("f32",))


def test_casts_commute_with_data_movement() -> None:
    f16 = ("f16", "f16")
    assert proves(A.cast(A.transpose(x), "f32"), A.transpose(A.cast(x, "f32")), f16)
    assert proves(A.cast(A.slice_(x, 1, 2, 4), "f32"), A.slice_(A.cast(x, "f32"), 1, 2, 4), f16)
    assert proves(A.cast(A.broadcast(x, 0, 3), "f32"), A.broadcast(A.cast(x, "f32"), 0, 3), f16)
    assert proves(A.cast(A.concat(x, y, 1), "f32"), A.concat(A.cast(x, "f32"), A.cast(y, "f32"), 1), f16)


def test_casts_moved_through_data_movement_must_keep_it() -> None:
    f16 = ("f16", "f16")
    assert not proves(A.cast(A.slice_(x, 1, 2, 4), "f32"), A.slice_(A.cast(x, "f32"), 1, 0, 4), f16)
    assert not proves(A.cast(A.concat(x, y, 1), "f32"), A.concat(A.cast(y, "f32"), A.cast(x, "f32"), 1), f16)
    assert not proves(A.cast(A.transpose(x), "f32"), A.transpose(A.cast(x, "f64")), f16)


def test_no_arithmetic_moves_across_a_cast_to_f16() -> None:
    scaled = A.mul(x, A.splat(0.1))
    assert not proves(A.cast(scaled, "f16"), A.mul(A.cast(x, "f16"), A.splat(0.1)), ("f32",))
    assert not proves(A.cast(A.add(x, y), "f16"), A.add(A.cast(x, "f16"), A.cast(y, "f16")), ("f32", "f32"))
    assert not proves(A.cast(A.neg(x), "bf16"), A.neg(A.cast(x, "bf16")), ("f32",))


def test_a_scale_moved_across_an_f16_cast_into_a_product_is_refused() -> None:
    """(x * s) rounded to f16, then multiplied by w, is not x rounded to f16 times (s * w) rounded to f16."""
    shapes = ((4, 8), (8,), (8, 6))
    a16 = A.cast(A.mul(A.cast(x, "f32"), A.broadcast(A.cast(y, "f32"), 0, 4)), "f16")
    left = A.matmul(A.cast(a16, "f32"), A.cast(z, "f32"))
    moved = A.cast(A.mul(A.cast(z, "f32"), A.broadcast(A.cast(y, "f32"), 1, 6)), "f16")
    right = A.matmul(A.cast(A.cast(x, "f16"), "f32"), A.cast(moved, "f32"))
    assert not proves(left, right, ("f16", "f16", "f16"), shapes)
    # The same move in f32, with no rounding to f16 between, is the column-scaling law.
    exact_left = A.matmul(A.mul(A.cast(x, "f32"), A.broadcast(A.cast(y, "f32"), 0, 4)), A.cast(z, "f32"))
    exact_right = A.matmul(A.cast(x, "f32"), A.mul(A.cast(z, "f32"), A.broadcast(A.cast(y, "f32"), 1, 6)))
    assert proves(exact_left, exact_right, ("f16", "f16", "f16"), shapes)


@pytest.mark.parametrize("element", ["f16", "bf16"])
def test_laws_that_change_rounding_hold_in_f32_and_f64_alone(element: str) -> None:
    square = ((8, 8),) * 3
    pairs = [
        (A.mul(A.mul(x, y), z), A.mul(x, A.mul(y, z)), None),
        (A.matmul(x, A.add(y, z)), A.add(A.matmul(x, y), A.matmul(x, z)), square),
        (A.matmul(A.matmul(x, y), z), A.matmul(x, A.matmul(y, z)), square),
        (A.matmul(A.mul(x, A.splat(0.5)), y), A.mul(A.matmul(x, y), A.splat(0.5)), square),
    ]
    for left, right, shapes in pairs:
        for wide in ("f32", "f64"):
            assert proves(left, right, (wide,) * 3, shapes)
        assert not proves(left, right, (element,) * 3, shapes)


def test_structural_laws_hold_in_f16() -> None:
    shapes = ((4, 8), (8, 6), (8, 5))
    fused = A.matmul(x, A.concat(y, z, 1))
    assert proves(A.matmul(x, z), A.slice_(fused, 1, 6, 5), ("f16",) * 3, shapes)
    assert proves(A.add(x, y), A.add(y, x), ("f16", "f16"))


# --- element types of terms -------------------------------------------------------------------------------------

def test_every_term_has_its_operands_type_and_a_cast_its_own() -> None:
    elements = ["f16", "bf16"]
    term = A.add(A.cast(A.matmul(A.cast(x, "f32"), A.transpose(A.cast(y, "f32"))), "f16"), A.splat(1.0))
    assert element_of(term, elements) == "f16"
    assert element_of(term.args[0].args[0], elements) == "f32"
    assert element_of(A.slice_(y, 0, 1, 2), elements) == "bf16"
    assert element_of(A.splat(2.0), elements) is None


def test_the_egraph_derives_the_same_element_types() -> None:
    elements = ["f16", "f16"]
    product = A.matmul(A.cast(x, "f32"), A.cast(y, "f32"))
    terms = [A.cast(A.mul(product, A.splat(2.0)), "f16"), A.reduce_sum(product, 1), A.concat(x, y, 0)]
    program = Program("f", [(4, 4), (4, 4)], terms, arg_elements=elements)
    with owned_egraph() as egraph:
        program.register_shapes(egraph)
        memo: dict = {}
        for index, term in enumerate(terms):
            egraph.let(f"t{index}", to_egglog(term, memo))
        saturate(egraph, Budget(iterations=1), ("casts",))
        graph = read_graph(egraph)
    for index, term in enumerate(terms):
        assert graph.elements[graph.lets[f"t{index}"]] == element_of(term, elements)


# --- translation and writing back -------------------------------------------------------------------------------

def _tensor(shape: tuple[int, ...], element: str) -> str:
    return to_mlir.tensor_type(shape, element)


def _matmul(out: str, a: str, b: str, m: int, n: int, k: int, inputs: str = "f16", acc: str = "f32",
            b_element: str | None = None) -> list[str]:
    """``%out = a @ b``: inputs of ``inputs`` (b of ``b_element``), accumulated in ``acc``."""
    c = _tensor((m, n), acc)
    return [f"%{out}_e = tensor.empty() : {c}",
            f"%{out}_z = linalg.fill ins(%zero_{acc} : {acc}) outs(%{out}_e : {c}) -> {c}",
            f"%{out} = linalg.matmul ins(%{a}, %{b} : {_tensor((m, k), inputs)}, "
            f"{_tensor((k, n), b_element or inputs)}) outs(%{out}_z : {c}) -> {c}"]


def _cast(out: str, source: str, shape: tuple[int, ...], from_: str, to: str) -> list[str]:
    op = "arith.extf" if to_mlir.ELEMENT_BYTES[to] > to_mlir.ELEMENT_BYTES[from_] else "arith.truncf"
    return [f"%{out} = {op} %{source} : {_tensor(shape, from_)} to {_tensor(shape, to)}"]


def _function(name: str, args: list[tuple[str, tuple[int, ...], str]], results: list[tuple[str, tuple[int, ...]]],
              body: list[str], element: str = "f16") -> str:
    signature = ", ".join(f"%{a}: {_tensor(shape, e)}" for a, shape, e in args)
    types = ", ".join(_tensor(shape, element) for _, shape in results)
    return (f"func.func @{name}({signature}) -> ({types}) {{\n"
            "  %zero_f32 = arith.constant 0.0 : f32\n  %zero_f16 = arith.constant 0.0 : f16\n"
            + "".join(f"  {line}\n" for line in body)
            + f"  return {', '.join('%' + r for r, _ in results)} : {types}\n}}\n")


def _translated(text: str, name: str) -> Program:
    with make_context():
        module = ir.Module.parse(text)
        normalize_elementwise(module)
        return translate(public_functions(module)[name])


def _product_function(acc: str) -> str:
    body = [*_matmul("p", "a", "b", 4, 6, 8, acc=acc)]
    if acc == "f32":
        body += _cast("out", "p", (4, 6), "f32", "f16")
    else:
        body += ["%out = arith.addf %p, %p : tensor<4x6xf16>"]
    return _function("f", [("a", (4, 8), "f16"), ("b", (8, 6), "f16")], [("out", (4, 6))], body)


def test_an_f16_product_accumulated_in_f32_is_a_product_of_casts() -> None:
    program = _translated(_product_function("f32"), "f")
    assert program.results == [A.cast(A.matmul(A.cast(x, "f32"), A.cast(y, "f32")), "f16")]
    assert not program.opaque
    assert program.arg_elements == ["f16", "f16"]
    f16_product = _translated(_product_function("f16"), "f")
    assert f16_product.results == [A.add(A.matmul(x, y), A.matmul(x, y))]


def test_a_product_accumulated_in_f16_is_not_one_accumulated_in_f32() -> None:
    accumulated = A.cast(A.matmul(A.cast(x, "f32"), A.cast(y, "f32")), "f16")
    assert not proves(accumulated, A.matmul(x, y), ("f16", "f16"), ((4, 8), (8, 6)))


def test_casts_are_written_as_extf_and_truncf_and_products_read_the_narrow_tensors() -> None:
    terms = [A.cast(A.matmul(A.cast(x, "f32"), A.cast(y, "f32")), "f16"),
             A.cast(A.mul(A.cast(x, "f32"), A.splat(2.0)), "bf16")]
    text = to_mlir.function_text("f", [(4, 8), (8, 6)], terms, ["f16", "f16"])
    assert "ins(%arg0, %arg1 : tensor<4x8xf16>, tensor<8x6xf16>) outs(" in text
    assert "arith.truncf" in text and "arith.extf" in text and "tensor<4x8xbf16>" in text
    program = _translated(text, "f")
    assert program.results == terms


def test_written_casts_compute_what_numpy_computes(rng: np.random.Generator) -> None:
    terms = [A.cast(A.add(A.matmul(A.cast(x, "f32"), A.cast(y, "f32")), A.splat(1.0)), "f16")]
    text = to_mlir.function_text("f", [(8, 16), (16, 12)], terms, ["f16", "f16"])
    _, run = lower_on_host(text, "f")
    a, b = (rng.standard_normal(s).astype(np.float16) for s in ((8, 16), (16, 12)))
    out = run(a, b)
    expected = (a.astype(np.float64) @ b.astype(np.float64) + 1.0).astype(np.float16)
    assert out.dtype == np.float16
    np.testing.assert_allclose(out.astype(np.float64), expected.astype(np.float64), rtol=2e-3, atol=2e-3)


def test_tensors_are_costed_at_their_own_type() -> None:
    target = get_target("host")
    cost = ProgramCost(target, "f32", [(256, 256), (256, 256)], ["f16", "f16"])
    narrow = cost.seconds([A.neg(x)])
    wide = cost.seconds([A.neg(A.cast(x, "f32"))])
    assert narrow < wide
    assert product_contraction((16, 64), (64, 32), "f16", "f32").input_type == "f16"
    assert product_contraction((16, 64), (64, 32), "f16", "f32").acc_bytes == 4
    # A product of widened f16 operands reads them as f16: no tensor holds the f32 copies.
    widened = A.matmul(A.cast(x, "f32"), A.cast(y, "f32"))
    assert cost.seconds([widened]) == pytest.approx(cost.product_seconds((256, 256), (256, 256), "f16", "f32"))


# --- f16 workloads ------------------------------------------------------------------------------------------------

def qkv(n: int, d: int, kv: int) -> str:
    """Three f16 projections of one f16 x, accumulated in f32 and rounded to f16."""
    body = []
    for out, weight, cols in (("q", "wq", d), ("k", "wk", kv), ("v", "wv", kv)):
        body += [*_matmul(f"{out}32", "x", weight, n, cols, d), *_cast(out, f"{out}32", (n, cols), "f32", "f16")]
    args = [("x", (n, d), "f16"), ("wq", (d, d), "f16"), ("wk", (d, kv), "f16"), ("wv", (d, kv), "f16")]
    return _function("qkv", args, [("q", (n, d)), ("k", (n, kv)), ("v", (n, kv))], body)


def fused_qkv(n: int, d: int, kv: int, order: tuple[str, str, str] = ("wq", "wk", "wv"),
              accumulate: str = "f32") -> str:
    """QKV as one product over ``order``'s weights side by side, sliced apart (accumulated in ``accumulate``)."""
    width = d + 2 * kv
    shapes = {"wq": (d, d), "wk": (d, kv), "wv": (d, kv)}
    body = [f"%w = tensor.concat dim(1) {', '.join('%' + w for w in order)} : "
            f"({', '.join(_tensor(shapes[w], 'f16') for w in order)}) -> {_tensor((d, width), 'f16')}"]
    if accumulate == "f32":
        body += [*_matmul("s32", "x", "w", n, width, d), *_cast("s", "s32", (n, width), "f32", "f16")]
    else:
        body += _matmul("s", "x", "w", n, width, d, acc="f16")
    for out, offset, cols in (("q", 0, d), ("k", d, kv), ("v", d + kv, kv)):
        body.append(f"%{out} = tensor.extract_slice %s[0, {offset}] [{n}, {cols}] [1, 1] : "
                    f"{_tensor((n, width), 'f16')} to {_tensor((n, cols), 'f16')}")
    args = [("x", (n, d), "f16"), ("wq", (d, d), "f16"), ("wk", (d, kv), "f16"), ("wv", (d, kv), "f16")]
    return _function("qkv", args, [("q", (n, d)), ("k", (n, kv)), ("v", (n, kv))], body)


def _prove(original: str, candidate: str) -> list:
    with make_context():
        return prove_modules(ir.Module.parse(original), ir.Module.parse(candidate), Budget(seconds=10))


def test_the_f16_qkv_fusion_is_proven() -> None:
    (proof,) = _prove(qkv(8, 32, 16), fused_qkv(8, 32, 16))
    assert proof.proof.proved
    assert "concat-of-matmuls-sharing-a" in proof.proof.laws or "slice-columns-of-matmul" in proof.proof.laws


def test_an_f16_qkv_fusion_with_swapped_weights_is_refused() -> None:
    with pytest.raises(VerificationError, match="could not prove @qkv"):
        _prove(qkv(8, 32, 16), fused_qkv(8, 32, 16, order=("wq", "wv", "wk")))


def test_an_f16_qkv_fusion_accumulating_in_f16_is_refused() -> None:
    """Rounding to f16 before the sums (an f16 accumulator) is not rounding the f32 sums."""
    with pytest.raises(VerificationError, match="could not prove @qkv"):
        _prove(qkv(8, 32, 16), fused_qkv(8, 32, 16, accumulate="f16"))


def test_prism_explore_fuses_the_f16_qkv_and_verify_proves_it(tuned_host: None) -> None:
    result = run_cli("-", "--target=host", "-p", "prism-optimize", "-v", stdin=qkv(16, 128, 64))
    assert result.returncode == 0, result.stderr
    assert "prism-explore: @qkv rewritten" in result.stderr
    assert "prism-verify: @qkv proved" in result.stderr
    # Weights side by side (all three, or K's and V's: the model's choice, by a few percent), still f16, in
    # fewer products, each accumulating in f32.
    products = [line for line in result.stdout.splitlines() if "linalg.matmul" in line]
    assert len(products) < 3 and any("tensor<16x128xf16>, tensor<128x256xf16>" in p
                                      or "tensor<16x128xf16>, tensor<128x128xf16>" in p for p in products)
    assert all("outs(" in p and re.search(r"outs\(.*tensor<16x(128|256)xf32>", p) for p in products)


@pytest.mark.skipif(ptxas_path() is None, reason="ptxas (CUDA) is not installed on this machine")
def test_the_explored_f16_qkv_compiles_for_the_h200() -> None:
    result = run_cli("-", "--target=h200", "--emit=ptx", "-v", stdin=qkv(16, 128, 64))
    assert result.returncode == 0, result.stderr
    assert "prism-explore: @qkv rewritten" in result.stderr
    # One fused product on the tensor cores: f16 operands, f32 accumulators.
    assert re.search(r"wgmma\.mma_async\.sync\.aligned\.m64n\d+k16\.f32\.f16\.f16", result.stdout)
    assert len(set(re.findall(r"\.entry (\w+_gemm\w*)\(", result.stdout))) == 1


def swiglu_gate_up(n: int, d: int, h: int, fused: bool, rounded_gate: bool = False) -> str:
    """SiLU(x @ wg) * (x @ wu) over f16 x and weights, in f32, rounded to f16; fused: one product over wg | wu
    (``rounded_gate``: its gate rounded to f16 before SiLU)."""
    silu = ["^bb0(%g: f32, %u: f32, %o: f16):", "  %one = arith.constant 1.0 : f32", "  %ng = arith.negf %g : f32",
            "  %e = math.exp %ng : f32", "  %den = arith.addf %e, %one : f32", "  %sg = arith.divf %g, %den : f32",
            "  %p = arith.mulf %sg, %u : f32", "  %t = arith.truncf %p : f32 to f16", "  linalg.yield %t : f16"]
    f32, f16 = _tensor((n, h), "f32"), _tensor((n, h), "f16")
    if fused:
        width = 2 * h
        body = [f"%w = tensor.concat dim(1) %wg, %wu : ({_tensor((d, h), 'f16')}, {_tensor((d, h), 'f16')}) -> "
                f"{_tensor((d, width), 'f16')}", *_matmul("s", "x", "w", n, width, d),
                f"%gate = tensor.extract_slice %s[0, 0] [{n}, {h}] [1, 1] : {_tensor((n, width), 'f32')} to {f32}",
                f"%up = tensor.extract_slice %s[0, {h}] [{n}, {h}] [1, 1] : {_tensor((n, width), 'f32')} to {f32}"]
        if rounded_gate:
            body += [*_cast("gate16", "gate", (n, h), "f32", "f16"), *_cast("gate_r", "gate16", (n, h), "f16", "f32")]
    else:
        body = [*_matmul("gate", "x", "wg", n, h, d), *_matmul("up", "x", "wu", n, h, d)]
    gate = "gate_r" if rounded_gate else "gate"
    body += [f"%h_e = tensor.empty() : {f16}",
             "%h = linalg.generic {indexing_maps = [affine_map<(i, j) -> (i, j)>, affine_map<(i, j) -> (i, j)>, "
             "affine_map<(i, j) -> (i, j)>], iterator_types = [\"parallel\", \"parallel\"]} "
             f"ins(%{gate}, %up : {f32}, {f32}) outs(%h_e : {f16}) {{", *silu, f"}} -> {f16}"]
    args = [("x", (n, d), "f16"), ("wg", (d, h), "f16"), ("wu", (d, h), "f16")]
    return _function("gate_up", args, [("h", (n, h))], body)


def test_the_f16_swiglu_gate_up_fusion_is_proven_and_rounding_its_gate_is_refused() -> None:
    (proof,) = _prove(swiglu_gate_up(8, 32, 24, fused=False), swiglu_gate_up(8, 32, 24, fused=True))
    assert proof.proof.proved
    with pytest.raises(VerificationError, match="could not prove @gate_up"):
        _prove(swiglu_gate_up(8, 32, 24, fused=False), swiglu_gate_up(8, 32, 24, fused=True, rounded_gate=True))


def test_prism_explore_fuses_the_f16_gate_and_up_products() -> None:
    result = run_cli("-", "--target=host", "-p", "prism-explore", "-v", stdin=swiglu_gate_up(16, 64, 64, False))
    assert result.returncode == 0, result.stderr
    assert "prism-explore: @gate_up rewritten" in result.stderr, result.stderr
    assert "tensor.concat" in result.stdout and result.stdout.count("linalg.matmul") == 1


LORA_ARGS = [("x", (8, 32), "f16"), ("w", (32, 32), "f16"), ("a", (32, 4), "f16"), ("b", (4, 32), "f16")]


def lora(down_in_f16: bool) -> str:
    """x @ w + (x @ a) @ b over f16 tensors, accumulated in f32; ``down_in_f16``: x @ a rounded to f16."""
    body = [*_matmul("base", "x", "w", 8, 32, 32), *_matmul("down", "x", "a", 8, 4, 32)]
    if down_in_f16:
        body += [*_cast("down16", "down", (8, 4), "f32", "f16"), *_matmul("up", "down16", "b", 8, 32, 4)]
    else:
        body += _matmul("up", "down", "b", 8, 32, 4, inputs="f32", b_element="f16")
    body += ["%sum = arith.addf %base, %up : tensor<8x32xf32>", *_cast("out", "sum", (8, 32), "f32", "f16")]
    return _function("lora", LORA_ARGS, [("out", (8, 32))], body)


def merged_lora(merged_in_f16: bool) -> str:
    """x @ (w + a @ b), the merged weight computed in f32 (``merged_in_f16``: then rounded to f16)."""
    body = [*_matmul("ab", "a", "b", 32, 32, 4), *_cast("w32", "w", (32, 32), "f16", "f32"),
            "%m = arith.addf %w32, %ab : tensor<32x32xf32>"]
    if merged_in_f16:
        body += [*_cast("m16", "m", (32, 32), "f32", "f16"), *_matmul("sum", "x", "m16", 8, 32, 32)]
    else:
        body += _matmul("sum", "x", "m", 8, 32, 32, b_element="f32")
    body += _cast("out", "sum", (8, 32), "f32", "f16")
    return _function("lora", LORA_ARGS, [("out", (8, 32))], body)


def test_a_lora_merge_is_proven_in_f32_only() -> None:
    """x @ w + (x @ a) @ b = x @ (w + a @ b) reassociates f32 sums: exact in the reals, so proven with the
    merged weight kept in f32; rounding the merged weight, or x @ a, to f16 changes the result."""
    (proof,) = _prove(lora(down_in_f16=False), merged_lora(merged_in_f16=False))
    assert proof.proof.proved
    assert "matmul-associative" in proof.proof.laws or "matmul-associative~" in proof.proof.laws
    with pytest.raises(VerificationError, match="could not prove @lora"):
        _prove(lora(down_in_f16=False), merged_lora(merged_in_f16=True))
    with pytest.raises(VerificationError, match="could not prove @lora"):
        _prove(lora(down_in_f16=True), merged_lora(merged_in_f16=False))


RMS_ARGS = [("x", (8, 32), "f16"), ("g", (32,), "f16"), ("w", (32, 16), "f16")]
_ROWS = "affine_map<(i, j) -> (i)>"
_COLUMNS = "affine_map<(i, j) -> (j)>"
_ALL = "affine_map<(i, j) -> (i, j)>"


def _generic(out: str, inputs: list[tuple[str, str, str]], result: str, body: list[str]) -> list[str]:
    """A parallel 2-D generic over ``inputs`` (value, type, map) into a tensor of type ``result``."""
    maps = ", ".join([*(m for _, _, m in inputs), _ALL])
    scalar = result.rsplit("x", 1)[1].rstrip(">")
    block = ", ".join([*(f"%i{k}: {t.rsplit('x', 1)[1].rstrip('>')}" for k, (_, t, _) in enumerate(inputs)),
                       f"%o: {scalar}"])
    return [f"%{out}_e = tensor.empty() : {result}",
            f"%{out} = linalg.generic {{indexing_maps = [{maps}], iterator_types = [\"parallel\", \"parallel\"]}} "
            f"ins({', '.join('%' + v for v, _, _ in inputs)} : {', '.join(t for _, t, _ in inputs)}) "
            f"outs(%{out}_e : {result}) {{", f"^bb0({block}):", *(f"  {line}" for line in body), f"}} -> {result}"]


def rmsnorm_linear(gamma_in_weights: bool, rounded: bool) -> str:
    """RMSNorm of f16 rows (statistics in f32) with gain g, then @ w accumulated in f32. ``gamma_in_weights``: g
    scales w's rows instead of the normalized rows; ``rounded``: the normalized rows (and so the scaled weights)
    are rounded to f16 before the product."""
    x32, r, g32 = _tensor((8, 32), "f32"), _tensor((8,), "f32"), _tensor((32,), "f16")
    body = [*_cast("x32", "x", (8, 32), "f16", "f32"), f"%ss_e = tensor.empty() : {r}",
            f"%ss_z = linalg.fill ins(%zero_f32 : f32) outs(%ss_e : {r}) -> {r}",
            f"%ss = linalg.generic {{indexing_maps = [{_ALL}, {_ROWS}], iterator_types = [\"parallel\", "
            f"\"reduction\"]}} ins(%x32 : {x32}) outs(%ss_z : {r}) {{",
            "^bb0(%v: f32, %acc: f32):", "  %sq = arith.mulf %v, %v : f32", "  %a = arith.addf %acc, %sq : f32",
            "  linalg.yield %a : f32", f"}} -> {r}"]
    scale = ["%inv = arith.constant 0.03125 : f32", "%eps = arith.constant 1.0e-5 : f32",
             "%mean = arith.mulf %i1, %inv : f32", "%me = arith.addf %mean, %eps : f32", "%rs = math.rsqrt %me : f32",
             "%n = arith.mulf %i0, %rs : f32"]
    out_type = _tensor((8, 32), "f16" if rounded else "f32")
    store = ["%t = arith.truncf %y : f32 to f16", "linalg.yield %t : f16"] if rounded else ["linalg.yield %y : f32"]
    if gamma_in_weights:
        body += _generic("normed", [("x32", x32, _ALL), ("ss", r, _ROWS)], out_type,
                         [*scale[:-1], scale[-1].replace("%n =", "%y ="), *store])
        w_type = _tensor((32, 16), "f16" if rounded else "f32")
        w_store = ["%t = arith.truncf %y : f32 to f16", "linalg.yield %t : f16"] if rounded else \
            ["linalg.yield %y : f32"]
        body += _generic("ws", [("w", _tensor((32, 16), "f16"), _ALL), ("g", g32, _ROWS)],
                         w_type, ["%wf = arith.extf %i0 : f16 to f32", "%gf = arith.extf %i1 : f16 to f32",
                                  "%y = arith.mulf %wf, %gf : f32", *w_store])
        weights, weight_element = "ws", "f16" if rounded else "f32"
    else:
        body += _generic("normed", [("x32", x32, _ALL), ("ss", r, _ROWS), ("g", g32, _COLUMNS)], out_type,
                         [*scale, "%gf = arith.extf %i2 : f16 to f32", "%y = arith.mulf %n, %gf : f32", *store])
        weights, weight_element = "w", "f16"
    body += _matmul("p", "normed", weights, 8, 16, 32, inputs="f16" if rounded else "f32", b_element=weight_element)
    body += _cast("out", "p", (8, 16), "f32", "f16")
    return _function("rmsnorm_linear", RMS_ARGS, [("out", (8, 16))], body)


def test_rmsnorm_gain_moves_into_the_weights_in_f32_only() -> None:
    (proof,) = _prove(rmsnorm_linear(False, rounded=False), rmsnorm_linear(True, rounded=False))
    assert proof.proof.proved
    assert any(law.startswith("column-scaling-moves-into-b") for law in proof.proof.laws)
    with pytest.raises(VerificationError, match="could not prove @rmsnorm_linear"):
        _prove(rmsnorm_linear(False, rounded=True), rmsnorm_linear(True, rounded=True))


def test_a_function_accumulating_in_f16_is_kept_as_written() -> None:
    """Its partial sums are rounded to f16, so a fused product split otherwise would change them."""
    body = []
    for out, weight in (("q", "wq"), ("k", "wk")):
        body += [*_matmul(f"{out}16", "x", weight, 16, 64, 64, acc="f16"),
                 f"%{out} = arith.addf %{out}16, %{out}16 : tensor<16x64xf16>"]
    args = [("x", (16, 64), "f16"), ("wq", (64, 64), "f16"), ("wk", (64, 64), "f16")]
    text = _function("qk", args, [("q", (16, 64)), ("k", (16, 64))], body)
    result = run_cli("-", "--target=host", "-p", "prism-explore", "-v", stdin=text)
    assert result.returncode == 0, result.stderr
    assert "@qk kept as written: a product accumulates in f16" in result.stderr
    # Accumulated in f32, the same products are fused.
    fused = run_cli("-", "--target=host", "-p", "prism-explore", "-v", stdin=qkv(16, 64, 64))
    assert "@qkv rewritten" in fused.stderr
