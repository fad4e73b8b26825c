"""Attention of bf16 (or f16) Q, K and V computed in f32 (the products extend their operands), P rounded to bf16
before P V where the program rounds it: one host kernel, checked against float64 on the same narrow values with the
same rounding of P; near misses keep their ops."""

from __future__ import annotations

import math
import re
import sys

import ml_dtypes
import numpy as np
import pytest
from mlir import ir

import prism
from conftest import REPO, lower_on_host
from prism.infra.errors import UnsupportedOp
from prism.infra.ir import make_context
from prism.kernels.host_attention import takes_tiles
from prism.search.attention import NARROW_TYPES, Attention, match_attention
from prism.search.space import fix_shape, point_array, shape_exponents
from prism.targets import get_target
from prism.targets.host_machine import Machine

sys.path.insert(0, str(REPO / "benchmarks"))
import cpu_workloads as cw  # noqa: E402  (the workloads live with the benchmarks)

INPUTS = REPO / "tests" / "filecheck" / "Inputs"
NUMPY = {"bf16": ml_dtypes.bfloat16, "f16": np.float16, "f32": np.float32}
# Unit roundoff of each type (round to nearest): bf16 keeps 8 significant bits, f16 11.
ROUNDOFF = {"bf16": 2.0 ** -8, "f16": 2.0 ** -11}
# The kernel's key rows per step without a choice (prism.codegen.cpu.attention.KEY_ROWS).
KEY_ROWS = 128
# f32 arithmetic (the exp polynomial, the sums over d and the keys) against float64, per unit of max|V|: the f32
# kernel's tolerance (tests/python/test_attention.py).
F32_ERROR = 2e-5


def _dot(types: tuple[str, str]) -> list[str]:
    """A product's body: ``acc + a b`` in f32 of operands of ``types``, each extended first where narrower."""
    names = []
    lines = []
    for i, (arg, element) in enumerate(zip(("%a", "%b"), types, strict=True)):
        if element != "f32":
            lines.append(f"    %w{i} = arith.extf {arg} : {element} to f32")
        names.append(arg if element == "f32" else f"%w{i}")
    return [*lines, f"    %x = arith.mulf {names[0]}, {names[1]} : f32", "    %y = arith.addf %acc, %x : f32",
            "    linalg.yield %y : f32"]


def attention_text(batch: tuple[int, ...], sq: int | None, skv: int | None, d: int, dv: int, element: str = "bf16",
                   rounding: str = "before", k_element: str | None = None) -> str:
    """``softmax(Q K^T / sqrt(d)) V`` of ``element`` Q, K and V (K of ``k_element`` if given) computed in f32, as
    the bf16 workload writes it; None sizes are dynamic. ``rounding``: ``before``, P rounded to ``element``
    before ``(P V) / l``; ``none``, not rounded; ``normalized``, ``P / l`` rounded before its product with V
    (the ``(P / l) V`` form)."""
    k_element = k_element or element
    dims = "".join(f"{n}x" for n in batch)
    letters = "".join(f"b{i}, " for i in range(len(batch)))

    def t(*shape: int | None, el: str = "f32") -> str:
        return "tensor<" + dims + "".join("?x" if n is None else f"{n}x" for n in shape) + f"{el}>"

    def maps(*parts: str, loops: str) -> str:
        return ", ".join(f"affine_map<({letters}{loops}) -> ({letters}{p})>" for p in parts)

    def generic(name: str, indexing: str, iterators: list[str], ins: str, outs: str, result: str,
                body: list[str], args: str) -> list[str]:
        kinds = ", ".join(f'"{it}"' for it in iterators)
        return [f"  {name} = linalg.generic {{indexing_maps = [{indexing}], iterator_types = [{kinds}]}} "
                f"ins({ins}) outs({outs}) {{", f"  ^bb0({args}):", *body, f"  }} -> {result}"]

    nb = len(batch)
    par, red = ["parallel"] * (nb + 2), ["reduction"]
    q, k, v = t(sq, d, el=element), t(skv, d, el=k_element), t(skv, dv, el=element)
    s, row, o, s_narrow = t(sq, skv), t(sq), t(sq, dv), t(sq, skv, el=element)
    sizes = ([f"  %sq = tensor.dim %q, %c{nb} : {q}"] if sq is None else []) + \
        ([f"  %skv = tensor.dim %k, %c{nb} : {k}"] if skv is None else [])
    s_sizes = ", ".join((["%sq"] if sq is None else []) + (["%skv"] if skv is None else []))
    row_sizes = "%sq" if sq is None else ""
    weights = "%pn" if rounding == "normalized" else "%p"
    rounded = "%pr" if rounding in ("before", "normalized") else weights
    round_op = generic("%pr", maps("i, j", "i, j", loops="i, j"), par, f"{weights} : {s}", f"%sn : {s_narrow}",
                       s_narrow, ["    %r = arith.truncf %a : f32 to " + element, f"    linalg.yield %r : {element}"],
                       f"%a: f32, %out: {element}")
    p_type = s_narrow if rounded == "%pr" else s
    product = generic("%o", maps("i, j", "j, e", "i, e", loops="i, e, j"), par + red, f"{rounded}, %v : {p_type}, {v}",
                      f"%o0 : {o}", o, _dot((element if rounded == "%pr" else "f32", element)),
                      f"%a: {element if rounded == '%pr' else 'f32'}, %b: {element}, %acc: f32")
    divide = ["    %y = arith.divf %a, %b : f32", "    linalg.yield %y : f32"]
    if rounding == "normalized":  # (round(P / l)) V
        tail = [*generic("%pn", maps("i, j", "i", "i, j", loops="i, j"), par, f"%p, %l : {s}, {row}", f"%se : {s}", s,
                         divide, "%a: f32, %b: f32, %out: f32"),
                *round_op, *[line.replace("%o =", "%out =") for line in product]]
    else:  # (P V) / l
        tail = [*(round_op if rounding == "before" else []), *product,
                *generic("%out", maps("i, e", "i", "i, e", loops="i, e"), par, f"%o, %l : {o}, {row}", f"%oe : {o}", o,
                         divide, "%a: f32, %b: f32, %out: f32")]
    return "\n".join([
        f"func.func @attention(%q: {q}, %k: {k}, %v: {v}) -> {o} {{",
        *([f"  %c{nb} = arith.constant {nb} : index"] if sizes else []), *sizes,
        "  %zero = arith.constant 0.0 : f32", "  %ninf = arith.constant 0xFF800000 : f32",
        f"  %scale = arith.constant {1 / math.sqrt(d)!r} : f32",
        f"  %se = tensor.empty({s_sizes}) : {s}",
        *([f"  %sn = tensor.empty({s_sizes}) : {s_narrow}"] if rounded == "%pr" else []),
        f"  %s0 = linalg.fill ins(%zero : f32) outs(%se : {s}) -> {s}",
        *generic("%s", maps("i, c", "j, c", "i, j", loops="i, j, c"), par + red, f"%q, %k : {q}, {k}", f"%s0 : {s}", s,
                 _dot((element, k_element)), f"%a: {element}, %b: {k_element}, %acc: f32"),
        f"  %re = tensor.empty({row_sizes}) : {row}",
        f"  %m0 = linalg.fill ins(%ninf : f32) outs(%re : {row}) -> {row}",
        f"  %l0 = linalg.fill ins(%zero : f32) outs(%re : {row}) -> {row}",
        *generic("%m", maps("i, j", "i", loops="i, j"), par[:-1] + red, f"%s : {s}", f"%m0 : {row}", row,
                 ["    %y = arith.maximumf %acc, %a : f32", "    linalg.yield %y : f32"], "%a: f32, %acc: f32"),
        *generic("%p", maps("i, j", "i", "i, j", loops="i, j"), par, f"%s, %m : {s}, {row}", f"%se : {s}", s,
                 ["    %x = arith.subf %a, %b : f32", "    %y = arith.mulf %x, %scale : f32",
                  "    %z = math.exp %y : f32", "    linalg.yield %z : f32"], "%a: f32, %b: f32, %out: f32"),
        *generic("%l", maps("i, j", "i", loops="i, j"), par[:-1] + red, f"%p : {s}", f"%l0 : {row}", row,
                 ["    %y = arith.addf %acc, %a : f32", "    linalg.yield %y : f32"], "%a: f32, %acc: f32"),
        f"  %oe = tensor.empty({row_sizes}) : {o}",
        f"  %o0 = linalg.fill ins(%zero : f32) outs(%oe : {o}) -> {o}",
        *tail,
        f"  return %out : {o}",
        "}",
    ])


def narrow_inputs(rng: np.random.Generator, element: str, batch: tuple[int, ...], sq: int, skv: int, d: int,
                  dv: int) -> tuple[np.ndarray, ...]:
    """Q, K and V drawn from a normal distribution and rounded to ``element``."""
    return tuple(rng.standard_normal((*batch, rows, size)).astype(NUMPY[element])
                 for rows, size in ((sq, d), (skv, d), (skv, dv)))


def weights(q: np.ndarray, k: np.ndarray) -> np.ndarray:
    """The weights of attention in float64 on the same narrow values, relative to each row's largest:
    ``exp((s - max s) / sqrt(d))`` for the scores ``s = Q K^T``."""
    s = q.astype(np.float64) @ np.swapaxes(k.astype(np.float64), -1, -2)
    return np.exp((s - s.max(axis=-1, keepdims=True)) / math.sqrt(q.shape[-1]))


def reference(q: np.ndarray, k: np.ndarray, v: np.ndarray, p_type: str | None, normalized: bool = False) \
        -> np.ndarray:
    """The program in float64 on the same narrow values: P (with ``normalized``, P / l) rounded to ``p_type``
    (through f32, as the program holds it) where the program rounds it (``p_type`` not None)."""
    p, v64 = weights(q, k), v.astype(np.float64)
    total = p.sum(axis=-1, keepdims=True)

    def rounded(x: np.ndarray) -> np.ndarray:
        return x if p_type is None else x.astype(np.float32).astype(NUMPY[p_type]).astype(np.float64)

    return rounded(p / total) @ v64 if normalized else (rounded(p) @ v64) / total


def lower(text: str, threads: int = 2, run: bool = True):
    return lower_on_host(text, "attention", threads, run)


def check(result: np.ndarray, q: np.ndarray, k: np.ndarray, v: np.ndarray, element: str, rounds: bool,
          keys_in_one_step: bool) -> None:
    """``result`` against :func:`reference`. The kernel rounds each weight relative to the running row maximum:
    ``round(p a) / a`` for the program's ``round(p)``, each within the unit roundoff u of p, so the output is within
    ``2 u max|V|`` of the program's (a convex combination of rows of V), plus f32's arithmetic. Where one step of
    keys holds the row the maximum is final and the rounding the program's: the result is then nearer the rounded
    reference than the unrounded one is, by far (and the other way where P is not rounded)."""
    scale = float(np.abs(v.astype(np.float64)).max())
    exact = reference(q, k, v, element if rounds else None)
    other = reference(q, k, v, None if rounds else element)
    bound = (2 * ROUNDOFF[element] if rounds else 0) + F32_ERROR
    np.testing.assert_allclose(result, exact, rtol=0, atol=bound * scale)
    if keys_in_one_step:
        clear = ~near_a_tie(q, k, element).any(axis=-1)
        if clear.any():
            assert np.abs(result - exact)[clear].mean() < 0.1 * np.abs(other - exact)[clear].mean()


# The narrow types' fraction bits: a weight's unit in the last place is 2^(exponent - bits).
FRACTION_BITS = {"bf16": 7, "f16": 10}


def near_a_tie(q: np.ndarray, k: np.ndarray, element: str) -> np.ndarray:
    """Per query row and key, whether the exact weight lies within 1/512 of a narrow unit of a rounding tie (and is
    at least 1/64 of the row's largest, where a flip matters). The kernel's f32 weight is off the exact one by a few
    parts in a million (2e-6 relative, measured), which can round such a weight the other way: one flip moves the
    output by a narrow unit of that weight, as much as rounding P moves it in all, so rows holding one are left out
    of the comparison of the two references."""
    p = weights(q, k)
    unit = np.exp2(np.floor(np.log2(p)) - FRACTION_BITS[element])
    place = p / unit - np.floor(p / unit)
    return (np.abs(place - 0.5) < 2.0 ** -9) & (p >= 2.0 ** -6)


# Odd shapes (37 queries, 129 keys: a ragged second step of keys), several batch dimensions, decode (one query row:
# scores as dot products over K's rows), a head size of 20 (2.5 vectors: a scalar tail), a value size other than
# the head size, dynamic sequence lengths, f16, and P not rounded.
@pytest.mark.parametrize("batch, sq, skv, d, dv, element, rounding, dynamic", [
    ((3,), 37, 129, 64, 64, "bf16", "before", False),
    ((1, 3), 37, 100, 64, 64, "bf16", "before", False),
    ((2,), 1, 77, 20, 32, "bf16", "before", False),
    ((2,), 9, 40, 20, 16, "bf16", "before", False),
    ((3,), 37, 129, 64, 64, "bf16", "before", True),
    ((2,), 50, 120, 64, 64, "bf16", "before", True),
    ((3,), 37, 129, 64, 64, "bf16", "none", False),
    ((2,), 21, 90, 32, 32, "bf16", "none", False),
    ((3,), 37, 129, 64, 64, "f16", "before", False),
    ((2,), 21, 90, 32, 32, "f16", "before", False),
])
def test_narrow_attention_matches_float64(rng: np.random.Generator, batch, sq, skv, d, dv, element, rounding,
                                          dynamic) -> None:
    text = attention_text(batch, None if dynamic else sq, None if dynamic else skv, d, dv, element, rounding)
    tiled, fn = lower(text)
    assert "linalg.generic" not in tiled and "math.exp" not in tiled  # one kernel
    assert ("arith.truncf" in tiled) == (rounding == "before")
    q, k, v = narrow_inputs(rng, element, batch, sq, skv, d, dv)
    result = fn(q, k, v)
    assert result.dtype == np.float32
    check(result, q, k, v, element, rounding == "before", skv <= KEY_ROWS)


def test_the_kernel_reads_narrow_operands_and_rounds_p(describe_host) -> None:
    """Without AMX tiles, Q, K and V are read as bf16 and extended to f32 as they are loaded (vectors of V, of Q
    into the worker's block, of K into its transposed copy); each weight is rounded to bf16 and back before P V."""
    describe_host(INPUTS / "host-avx512-bf16.json")
    tiled, _ = lower(attention_text((2,), 37, 129, 64, 64))
    assert "linalg.generic" not in tiled
    assert ": vector<8xbf16> to vector<8xf32>" in tiled and ": bf16 to f32" not in tiled
    assert "arith.truncf" in tiled and ": vector<8xf32> to vector<8xbf16>" in tiled


def test_the_bf16_workload_is_one_attention_kernel(rng: np.random.Generator) -> None:
    """The benchmark's bf16 attention (bf16 Q, K, V, f32 softmax, P rounded to bf16 for P V), at a small shape:
    lifted as one attention family through prism.compile, lowered as one kernel of its seven ops, and right."""
    workload = cw.bf16_attention(1, 3, 37, 129, 64)
    report = prism.compile(workload.mlir, target="host", emit="report").report
    assert [f["kind"] for f in report["families"]] == ["attention"]
    assert [(k["count"], k["kernels"][0]["kind"], len(k["kernels"][0]["ops"])) for k in report["kernels"]] == [
        (1, "attention", 7)]
    q, k, v = narrow_inputs(rng, "bf16", (1, 3), 37, 129, 64, 64)
    result = prism.compile(workload.mlir, target="host").jit("attention")(q, k, v)
    check(result, q, k, v, "bf16", True, keys_in_one_step=False)


def test_the_host_lifts_one_family_and_a_gpu_the_products() -> None:
    """The GPU's kernels do not take an f32 chain of bf16 operands: it lifts the products, the host the chain."""
    text = attention_text((2, 4), 33, 70, 32, 32)

    def families(target: str) -> list[str]:
        lifted = prism.compile(text, target=target, pipeline="prism-lift", emit="mlir").mlir
        return [line.split('kind = "')[1].split('"')[0] for line in lifted.splitlines() if '"prism.family"()' in line]

    assert families("host") == ["attention"]
    assert families("h200") == ["batch_gemm", "batch_gemm"]


@pytest.mark.parametrize("change", ["P / l rounded", "K of another type"])
def test_a_near_miss_keeps_its_ops(rng: np.random.Generator, change: str) -> None:
    """A rounding of the normalized weights (which the online kernel never holds) and Q and K of different types
    are not this attention: the ops stay, and still compute what they say."""
    element, k_element = "bf16", "f16" if change == "K of another type" else None
    text = attention_text((2,), 9, 21, 16, 16, element, "normalized" if change == "P / l rounded" else "before",
                          k_element)
    with make_context(), ir.Location.unknown():
        module = ir.Module.parse(text)
        ops = [op.operation for op in module.body.operations[0].regions[0].blocks[0].operations]
        assert all(match_attention(op, widened=NARROW_TYPES) is None for op in ops)
    tiled, fn = lower(text)
    assert "linalg.generic" in tiled or "scf.for" in tiled
    q, k, v = narrow_inputs(rng, element, (2,), 9, 21, 16, 16)
    if k_element:
        k = k.astype(np.float32).astype(NUMPY[k_element])
    # Each weight within bf16's roundoff of the reference's (a rounding of P flipped by f32's arithmetic), summed
    # into a convex combination of rows of V.
    expected = reference(q, k, v, element, normalized=change == "P / l rounded")
    np.testing.assert_allclose(fn(q, k, v), expected, rtol=0, atol=2 * ROUNDOFF[element] * np.abs(v).max())


@pytest.mark.parametrize("op", [
    Attention(16, 2048, 2048, 64, 64, input_type="bf16", widened=True, p_type="bf16"),
    Attention(16, 1, 4096, 64, 64, input_type="bf16", widened=True, p_type="bf16"),
    Attention(None, None, 300, 32, 32, input_type="f16", widened=True),
], ids=["prefill", "decode", "dynamic f16"])
@pytest.mark.parametrize("assume", [1, 4096])
@pytest.mark.parametrize("host", ["host-amx.json", "host-avx512-bf16.json"])
def test_the_narrow_attention_bound_never_exceeds_its_cost(op: Attention, assume: int, host: str,
                                                           describe_host) -> None:
    """On a machine with AMX (the prefill's products priced on tiles) and without."""
    target = describe_host(INPUTS / host)
    space = target.space(op)
    assert space is not None
    everything = point_array(fix_shape(space, space.universe_set(), shape_exponents(op, assume)))
    values = space.values_of(everything)
    bound, cost = target.lower_bound(op, values, assume), target.seconds(op, values, assume)
    assert len(everything) > 100 and np.all(bound <= cost * (1 + 1e-12))


def test_narrow_operands_count_two_bytes(tuned_host: None) -> None:
    """At decode (bound by reading K and V), bf16 operands halve the bytes moved: the bound, which counts K and V
    once, is at most about half of f32's (less where they then fit the cache)."""
    target = get_target("host")
    f32 = Attention(16, 1, 4096, 64, 64)
    bf16 = Attention(16, 1, 4096, 64, 64, input_type="bf16", widened=True, p_type="bf16")
    space = target.space(f32)
    values = space.values_of(point_array(fix_shape(space, space.universe_set(), shape_exponents(f32, 1))))
    ratio = target.lower_bound(bf16, values, 1) / target.lower_bound(f32, values, 1)
    assert np.all(ratio < 0.51)


def test_exploration_prices_the_bf16_chain_as_the_kernel_the_host_runs() -> None:
    """The benchmark's bf16 attention (casts to f32 on Q, K^T and V, P rounded to bf16) is one attention kernel
    on the host, and exploration prices it so: its cost is the kernel's (f32 arithmetic, Q, K, V read at two
    bytes) and nothing else; the chain's casts are inner terms. Priced as separate products and passes, every
    variant that split the chain looked cheaper than the kernel as written, and the host ran them 5x slower."""
    from prism.algebra import recognize, to_mlir
    from prism.algebra.explore import ProgramCost
    from prism.algebra.terms import translate

    workload = cw.bf16_attention(1, 16, 512, 512, 64)
    with make_context():
        module = ir.Module.parse(workload.mlir)
        program = translate(module.body.operations[0])
    model = ProgramCost(get_target("host"), "bf16", program.arg_shapes, ["bf16"] * 3)
    uses = to_mlir.use_counts(program.results)
    (match,) = recognize.attention_terms(program.results, uses, model.shapes, widened=True)
    assert [t.op for t in (match.q, match.k, match.v)] == ["arg"] * 3
    assert not recognize.attention_terms(program.results, uses, model.shapes)  # the f32 form alone: no cast
    assert model.seconds(program.results) == pytest.approx(model.attention_seconds(match))
    f32 = 2 * 16 * 512 * 512 * (64 + 64) / get_target("host").flops["f32"]
    assert model.attention_seconds(match) == pytest.approx(f32 + model.pass_seconds(2 * 3 * 16 * 512 * 64
                                                                                   + 4 * 16 * 512 * 64))


# -- products on AMX tiles (prism.codegen.cpu.attention_amx) ------------------------------------------------------

# Whether this machine runs AMX code; where it does not, the kernel is checked as IR and LLVM
# (tests/filecheck/codegen/cpu-stages-amx-attention.mlir).
AMX_HERE = bool(Machine.here().amx)


def causal_bf16_text(batch: int, heads: int, s: int, d: int) -> str:
    """The benchmarks' causal attention (key j kept for query i when j <= i) of bf16 Q, K and V, P rounded."""
    args = tuple(cw.Arg(name, (batch, heads, s, d), dtype="bf16") for name in ("q", "k", "v"))
    return cw._function("attention", args, [("out", (batch, heads, s, d))],
                        cw._attention("q", "k", "v", args, causal=True), cw.ATTENTION_MAPS)


@pytest.mark.parametrize("case, tiles", [
    (dict(), True),
    (dict(rounding="none"), False),  # P in f32: the tiles multiply bf16 only
    (dict(element="f16"), False),
    (dict(sq=9), False),  # fewer query rows than a tile: the f32 kernel
    (dict(dv=40), False),  # rows of V that are not whole C tiles
])
def test_the_tiles_take_bf16_attention_by_the_machines_flags(describe_host, case: dict, tiles: bool) -> None:
    """On a machine with AMX, a chain of bf16 Q, K and V that rounds P to bf16 takes its two products on tiles
    (no f32 copy of K, no extension of its operands); without AMX, or for any other chain, the f32 kernel."""
    shape = dict(batch=(2,), sq=37, skv=129, d=64, dv=64) | {key: value for key, value in case.items()
                                                              if key in ("sq", "dv")}
    text = attention_text(**shape, element=case.get("element", "bf16"), rounding=case.get("rounding", "before"))
    describe_host(INPUTS / "host-amx.json")
    tiled, _ = lower(text, run=False)  # AMX code is lowered to LLVM here, and run only where the machine has AMX
    assert "linalg.generic" not in tiled
    assert ("amx.tile_mulf" in tiled) == tiles and ("amx." in tiled) == tiles
    assert (re.search(r"memref<\d+x\d+x64x128xf32>", tiled) is None) == tiles  # the f32 copy of K^T
    describe_host(INPUTS / "host-avx512-bf16.json")
    assert "amx." not in lower(text, run=False)[0]


def test_amx_blocks_are_whole_tiles(describe_host) -> None:
    """On AMX tiles the choice's BQ and BKV round up to blocks of 32 (2 x 2 C tiles; RM and RN do not apply), BQ
    evened out over the query rows and BKV no longer than the keys (rounded)."""
    from prism.codegen.cpu.attention import plan_attention

    describe_host(INPUTS / "host-amx.json")
    text = attention_text((2,), 100, 70, 64, 64).replace(
        "%s = linalg.generic {", "%s = linalg.generic {prism.attention = {BQ = 40, BKV = 200, RM = 5, RN = 24, "
        "KVS = 2}, ", 1)
    with make_context(), ir.Location.unknown():
        module = ir.Module.parse(text)
        (match,) = [m for op in module.body.operations[0].regions[0].blocks[0].operations
                    if (m := match_attention(op.operation, widened=NARROW_TYPES)) is not None]
        plan = plan_attention(match, lanes=16, workers=2, amx=True)
        assert (plan.amx, plan.bq, plan.bkv, plan.splits) == (True, 64, 96, 2)  # 100 rows in 2 blocks; 70 keys
        with pytest.raises(UnsupportedOp, match="RN must be a multiple of 16"):  # the f32 kernel's blocks
            plan_attention(match, lanes=16, workers=2, amx=False)


# Odd shapes: ragged query and key blocks (37 x 129), a head size of 20 and 80 (zeros up to whole tiles of 32),
# three panels of V (48 values: a last block of one C tile across), several batch dimensions, dynamic lengths,
# several shares of the keys, a causal mask, three workers.
@pytest.mark.skipif(not AMX_HERE, reason="no AMX on this machine: checked as IR and LLVM in cpu-stages-amx-attention")
@pytest.mark.parametrize("batch, sq, skv, d, dv, dynamic, choice, threads", [
    ((3,), 37, 129, 64, 64, False, None, 2),
    ((1, 3), 40, 100, 20, 48, False, None, 2),
    ((2,), 70, 300, 80, 32, False, dict(BQ=64, BKV=64, RM=6, RN=16, KVS=3), 3),
    ((2,), 50, 120, 64, 64, True, None, 2),
    ((1,), 16, 33, 128, 16, True, dict(BQ=32, BKV=32, RM=6, RN=16, KVS=1), 1),
])
def test_attention_on_amx_tiles_matches_float64(rng: np.random.Generator, batch, sq, skv, d, dv, dynamic, choice,
                                                threads) -> None:
    text = attention_text(batch, None if dynamic else sq, None if dynamic else skv, d, dv)
    if choice:
        values = ", ".join(f"{key} = {value}" for key, value in choice.items())
        text = text.replace("%s = linalg.generic {", f"%s = linalg.generic {{prism.attention = {{{values}}}, ", 1)
    tiled, fn = lower(text, threads)
    assert "amx.tile_mulf" in tiled
    q, k, v = narrow_inputs(rng, "bf16", batch, sq, skv, d, dv)
    check(fn(q, k, v), q, k, v, "bf16", True, keys_in_one_step=False)


@pytest.mark.skipif(not AMX_HERE, reason="no AMX on this machine: checked as IR and LLVM in cpu-stages-amx-attention")
def test_causal_attention_on_amx_tiles_matches_float64(rng: np.random.Generator) -> None:
    """The benchmarks' causal attention of bf16 operands (70 tokens: a ragged last block of queries and keys)."""
    text = causal_bf16_text(1, 3, 70, 64)
    result = prism.compile(text, target="host").jit("attention")
    q, k, v = narrow_inputs(rng, "bf16", (1, 3), 70, 70, 64, 64)
    q64, k64, v64 = (x.astype(np.float64) for x in (q, k, v))
    s = q64 @ np.swapaxes(k64, -1, -2) / 8.0
    s = np.where(np.tril(np.ones((70, 70), dtype=bool)), s, -np.inf)
    p = np.exp(s - s.max(axis=-1, keepdims=True))
    rounded = p.astype(np.float32).astype(ml_dtypes.bfloat16).astype(np.float64)
    expected = (rounded @ v64) / p.sum(axis=-1, keepdims=True)
    np.testing.assert_allclose(result(q, k, v), expected, rtol=0,
                               atol=(2 * ROUNDOFF["bf16"] + F32_ERROR) * np.abs(v64).max())


def test_the_cost_prices_the_tiles_where_the_kernel_takes_them(describe_host) -> None:
    """The bf16 chain that rounds P is priced on AMX tiles on a machine with AMX (its products at the tiles'
    rate, far below the f32 kernel's), and as the f32 kernel elsewhere, or for a chain whose P is not rounded."""
    rounded = Attention(16, 2048, 2048, 64, 64, input_type="bf16", widened=True, p_type="bf16")
    unrounded = Attention(16, 2048, 2048, 64, 64, input_type="bf16", widened=True)
    assert takes_tiles(rounded) and not takes_tiles(unrounded)
    assert not takes_tiles(Attention(16, 8, 2048, 64, 64, input_type="bf16", widened=True, p_type="bf16"))

    def cost(host: str, op: Attention) -> float:
        target = describe_host(INPUTS / host)
        space = target.space(op)
        values = space.values_of(point_array(fix_shape(space, space.universe_set(), shape_exponents(op, 1))))
        return float(np.min(target.seconds(op, values, 1)))

    assert cost("host-amx.json", rounded) < 0.6 * cost("host-avx512-bf16.json", rounded)
    assert cost("host-amx.json", unrounded) == pytest.approx(cost("host-avx512-bf16.json", unrounded))
