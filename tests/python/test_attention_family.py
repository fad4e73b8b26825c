"""Attention as a searched family: lifted whole, pruned and costed on the host, its choice run by the kernel,
and the keys split into shares at decode (flash-decoding), checked against float64."""

from __future__ import annotations

import math

import numpy as np
import pytest
from mlir import ir
from test_attention import SOFTMAX_ATTENTION, attention_text, reference

import prism
from conftest import lower_on_host
from prism.codegen.cpu.attention import plan_attention
from prism.infra.ir import make_context
from prism.search.attention import Attention, attention_lanes, match_attention
from prism.search.space import fix_shape, point_array, shape_exponents
from prism.targets import get_target
from prism.targets.host import host_target


def with_choice(text: str, **choice: int) -> str:
    """``text`` (from :func:`attention_text`) with ``prism.attention = choice`` on its scores' product."""
    values = ", ".join(f"{key} = {value} : i64" for key, value in choice.items())
    head = "%s = linalg.generic {"
    marked = text.replace(head + "indexing_maps", f"{head}prism.attention = {{{values}}}, indexing_maps", 1)
    assert marked != text
    return marked


def causal_text(batch: tuple[int | None, ...], sq: int | None, skv: int | None, d: int, offset: int,
                form: str = "keep") -> str:
    """:func:`attention_text` with a causal mask on its scores: key j kept for query i when ``j <= i + offset``,
    written as a select of the scores where ``j <= i + offset`` (``keep``) or of -inf where ``j > i + offset``
    (``drop``)."""
    text = attention_text(batch, sq, skv, d, d)
    nb = len(batch)
    scores = "tensor<" + "".join("?x" if n is None else f"{n}x" for n in (*batch, sq, skv)) + "f32>"
    loops = ", ".join(f"d{i}" for i in range(nb + 2))
    identity = f"affine_map<({loops}) -> ({loops})>"
    select = {"keep": "%c = arith.cmpi ule, %j, %ioff : index\n    %r = arith.select %c, %a, %ninf : f32",
              "drop": "%c = arith.cmpi sgt, %j, %ioff : index\n    %r = arith.select %c, %ninf, %a : f32"}[form]
    parallel = ", ".join(['"parallel"'] * (nb + 2))
    mask = "\n".join([
        f"  %sm = linalg.generic {{indexing_maps = [{identity}, {identity}], iterator_types = [{parallel}]}} "
        f"ins(%s : {scores}) outs(%se : {scores}) {{",
        "  ^bb0(%a: f32, %o: f32):", f"    %i = linalg.index {nb} : index", f"    %j = linalg.index {nb + 1} : index",
        f"    %off = arith.constant {offset} : index", "    %ioff = arith.addi %i, %off : index",
        "    %ninf = arith.constant 0xFF800000 : f32", f"    {select}", "    linalg.yield %r : f32",
        f"  }} -> {scores}", ""])
    text = text.replace("ins(%s : ", "ins(%sm : ").replace("ins(%s, %m", "ins(%sm, %m")
    return text.replace("  %re = tensor.empty(", mask + "  %re = tensor.empty(", 1)


def causal_reference(q: np.ndarray, k: np.ndarray, v: np.ndarray, scale: float, offset: int) -> np.ndarray:
    s = q.astype(np.float64) @ np.swapaxes(k.astype(np.float64), -1, -2)
    keep = np.arange(s.shape[-1])[None, :] <= np.arange(s.shape[-2])[:, None] + offset
    s = np.where(keep, s, -np.inf)
    p = np.exp((s - s.max(axis=-1, keepdims=True)) * scale)
    return (p @ v.astype(np.float64)) / p.sum(axis=-1, keepdims=True)


def families(text: str, target: str) -> list[str]:
    lifted = prism.compile(text, target=target, pipeline="prism-lift", emit="mlir").mlir
    return [line.split('kind = "')[1].split('"')[0] for line in lifted.splitlines() if '"prism.family"()' in line]


@pytest.mark.parametrize("text", [attention_text((2, 4), 33, 70, 32, 32), SOFTMAX_ATTENTION.format(sq=9, skv=21)],
                         ids=["six generics", "linalg.softmax"])
def test_the_host_lifts_a_chain_as_one_family_and_a_gpu_its_products(text: str) -> None:
    assert families(text, "host") == ["attention"]
    assert families(text, "h200") == ["batch_gemm", "batch_gemm"]


@pytest.mark.parametrize("text, shape", [
    (attention_text((2, 4), 33, 70, 32, 32), ((2, 4), 33, 70, 32, 32)),
    (SOFTMAX_ATTENTION.format(sq=9, skv=21), ((2,), 9, 21, 16, 24)),
    (attention_text((3,), None, 50, 16, 16), ((3,), 40, 50, 16, 16)),
], ids=["six generics", "linalg.softmax", "dynamic queries"])
def test_the_chosen_schedule_reaches_the_kernel(text: str, shape: tuple, rng: np.random.Generator) -> None:
    """Through prism.compile the family is selected and verified; its choice lands on the scores' product, the
    kernel's plan follows it, and the result matches float64."""
    compiled = prism.compile(text, target="host", emit="report")
    (family,) = compiled.report["families"]
    choice = family["choice"]
    assert family["kind"] == "attention" and set(choice) == {"BQ", "BKV", "RM", "RN", "KVS"}
    compiled = prism.compile(text, target="host")
    with make_context():
        module = ir.Module.parse(compiled.mlir)
        (match,) = [m for op in module.body.operations[0].regions[0].blocks[0].operations
                    if (m := match_attention(op.operation)) is not None]
        plan = plan_attention(match, lanes=8, workers=2)
    assert (plan.rm, plan.rn, plan.splits) == (choice["RM"], choice["RN"], choice["KVS"])
    assert plan.bq <= choice["BQ"] and plan.bkv <= choice["BKV"]
    batch, sq, skv, d, dv = shape
    scale = 0.25 if "softmax" in text else 1 / math.sqrt(d)
    q, k = (rng.standard_normal((*batch, n, d), dtype=np.float32) for n in (sq, skv))
    v = rng.standard_normal((*batch, skv, dv), dtype=np.float32)
    np.testing.assert_allclose(compiled.jit("attention")(q, k, v), reference(q, k, v, scale), rtol=0,
                               atol=2e-5 * np.abs(v).max())


# Shares of the keys (KVS): more shares than key blocks (empty ones), a ragged last block, one query row and
# several, register blocks over K^T and dot products, a dynamic number of keys, and three workers.
@pytest.mark.parametrize("batch, sq, skv, d, choice, threads", [
    ((1,), 1, 1000, 64, dict(BQ=1, BKV=64, RM=1, RN=32, KVS=4), 2),
    ((2,), 5, 77, 16, dict(BQ=6, BKV=16, RM=3, RN=16, KVS=2), 3),
    ((2,), 5, 13, 16, dict(BQ=6, BKV=8, RM=2, RN=8, KVS=8), 2),
    ((1, 2), 40, 300, 32, dict(BQ=24, BKV=32, RM=6, RN=16, KVS=2), 2),
    ((2,), 1, None, 32, dict(BQ=1, BKV=32, RM=1, RN=32, KVS=16), 2),
])
def test_shares_of_the_keys_merge_to_float64(batch, sq, skv, d, choice, threads, rng: np.random.Generator) -> None:
    _, fn = lower_on_host(with_choice(attention_text(batch, sq, skv, d, d), **choice), "attention", threads)
    keys = 211 if skv is None else skv
    q = rng.standard_normal((*batch, sq, d), dtype=np.float32)
    k, v = (rng.standard_normal((*batch, keys, d), dtype=np.float32) for _ in range(2))
    np.testing.assert_allclose(fn(q, k, v), reference(q, k, v, 1 / math.sqrt(d)), rtol=0, atol=2e-5)


@pytest.mark.parametrize("choice, message", [
    (dict(BQ=8, BKV=36, RM=1, RN=12, KVS=1), "does not fit a value size of 32"),
    (dict(BQ=9, BKV=32, RM=2, RN=16, KVS=1), "BQ one of RM"),
    (dict(BQ=8, BKV=32, RM=1, RN=16), "prism.attention.KVS must be a positive integer"),
    (dict(BQ=8, BKV=32, RM=1, RN=16, KVS=0), "prism.attention.KVS must be a positive integer"),
])
def test_a_choice_the_kernel_cannot_run_is_an_error(choice: dict[str, int], message: str) -> None:
    with pytest.raises(prism.UnsupportedOp, match=message):
        lower_on_host(with_choice(attention_text((2,), 8, 40, 32, 32), **choice), "attention")


def test_decode_splits_the_keys_only_when_cores_would_idle() -> None:
    """One head at decode is one task per share: the search splits its keys over the cores. Sixteen heads keep
    every core busy without."""
    cores = host_target().cores
    one = prism.compile(attention_text((1,), 1, 16384, 64, 64), target="host", emit="report").report
    many = prism.compile(attention_text((16,), 1, 4096, 64, 64), target="host", emit="report").report
    assert (one["families"][0]["choice"]["KVS"] > 1) == (cores > 1)
    if cores <= 16:
        assert many["families"][0]["choice"]["KVS"] == 1


@pytest.mark.parametrize("op", [Attention(16, 512, 512, 64, 64), Attention(1, 1, 16384, 64, 64),
                                Attention(None, None, 300, 32, 32), Attention(8, 77, None, 128, 64),
                                Attention(16, 512, 512, 64, 64, causal=0), Attention(2, 100, 300, 32, 32, causal=200)],
                         ids=["prefill", "one-head decode", "dynamic", "dynamic keys", "causal", "causal offset"])
@pytest.mark.parametrize("assume", [1, 100, 4096])
def test_the_attention_bound_never_exceeds_its_cost(op: Attention, assume: int) -> None:
    target = get_target("host")
    space = target.space(op)
    everything = point_array(fix_shape(space, space.universe_set(), shape_exponents(op, assume)))
    values = space.values_of(everything)
    bound, cost = target.lower_bound(op, values, assume), target.seconds(op, values, assume)
    assert len(everything) > 100 and np.all(bound <= cost * (1 + 1e-12))


def test_a_value_size_of_no_whole_vector_has_no_family() -> None:
    """The kernel needs whole vectors of V's rows, of 4 lanes at least: without them the host lifts the products
    instead. Narrower vectors than the machine's serve a value size that its own do not divide."""
    assert get_target("host").space(Attention(2, 8, 40, 16, 10)) is None
    assert families(attention_text((2,), 8, 40, 16, 10), "host") == ["batch_gemm", "batch_gemm"]
    assert get_target("host").space(Attention(2, 8, 40, 16, 12)) is not None
    assert [attention_lanes(dv, 16) for dv in (64, 48, 24, 12, 10)] == [16, 16, 8, 4, None]
    assert [attention_lanes(dv, 8) for dv in (64, 24, 20, 6)] == [8, 8, 4, None]


# Sequence lengths 1, 77 and 1000; an offset (queries at the end of the keys); both ways of writing the mask;
# shares of the keys (later shares empty for the first rows); a dynamic number of queries.
@pytest.mark.parametrize("batch, sq, skv, d, offset, form, choice", [
    ((2,), 77, 77, 32, 0, "keep", None),
    ((2,), 50, 130, 16, 80, "drop", None),
    ((1,), 1000, 1000, 32, 0, "keep", None),
    ((2,), 40, 300, 32, 3, "keep", dict(BQ=24, BKV=32, RM=6, RN=16, KVS=4)),
    ((2,), 1, 100, 32, 99, "drop", dict(BQ=1, BKV=32, RM=1, RN=32, KVS=4)),
    ((3,), None, 60, 16, 0, "keep", None),
])
def test_causal_attention_matches_float64(batch, sq, skv, d, offset, form, choice, rng: np.random.Generator) -> None:
    text = causal_text(batch, sq, skv, d, offset, form)
    tiled, fn = lower_on_host(with_choice(text, **choice) if choice else text, "attention")
    assert "linalg.index" not in tiled  # the mask is in the kernel
    queries = 45 if sq is None else sq
    q = rng.standard_normal((*batch, queries, d), dtype=np.float32)
    k, v = (rng.standard_normal((*batch, skv, d), dtype=np.float32) for _ in range(2))
    np.testing.assert_allclose(fn(q, k, v), causal_reference(q, k, v, 1 / math.sqrt(d), offset), rtol=0, atol=2e-5)


def test_causal_attention_is_one_family_and_one_kernel(rng: np.random.Generator) -> None:
    """Through prism.compile: lifted, selected and proven as one attention family; lowered as one kernel."""
    text = causal_text((2, 4), 77, 77, 32, 0)
    report = prism.compile(text, target="host", emit="report").report
    assert [f["kind"] for f in report["families"]] == ["attention"]
    assert [(k["count"], k["kernels"][0]["kind"], len(k["kernels"][0]["ops"])) for k in report["kernels"]] == [
        (1, "attention", 7)]
    q, k, v = (rng.standard_normal((2, 4, 77, 32), dtype=np.float32) for _ in range(3))
    out = prism.compile(text, target="host").jit("attention")(q, k, v)
    np.testing.assert_allclose(out, causal_reference(q, k, v, 1 / math.sqrt(32), 0), rtol=0, atol=2e-5)


@pytest.mark.parametrize("change", ["j >= i", "negative offset", "mask of -1"])
def test_a_mask_that_is_not_causal_keeps_its_ops(change: str, rng: np.random.Generator) -> None:
    text = causal_text((2,), 9, 21, 16, 0)
    text = {"j >= i": text.replace("arith.cmpi ule, %j, %ioff", "arith.cmpi uge, %j, %ioff"),
            "negative offset": text.replace("%ioff = arith.addi %i, %off", "%ioff = arith.subi %i, %off").replace(
                "arith.constant 0 : index", "arith.constant 1 : index"),
            "mask of -1": text.replace("%ninf = arith.constant 0xFF800000", "%ninf = arith.constant -1.0")}[change]
    tiled, fn = lower_on_host(text, "attention")
    assert "linalg.index" in tiled or "scf.for" in tiled
    with make_context():
        module = ir.Module.parse(text)
        ops = module.body.operations[0].regions[0].blocks[0].operations
        assert not any(match_attention(op.operation) for op in ops)
