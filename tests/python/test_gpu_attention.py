"""The GPU attention kernels: what they refuse, how they launch, and their PTX as ptxas assembles it."""

from __future__ import annotations

import math
import re

import numpy as np
import pytest

from prism.codegen.gpu.attention import (
    CHIPS,
    REGISTER_LIMIT,
    AttentionTile,
    attention_problem,
    attention_temporaries,
    emit_attention,
    plan_attention,
)
from prism.codegen.gpu.ptx import compile_kernels, ptxas, ptxas_path
from prism.codegen.gpu.spec import AttentionSpec, Dim, Tensor

needs_ptxas = pytest.mark.skipif(ptxas_path() is None, reason="ptxas is not on PATH")
CHIPS_CHECKED = ("sm_80", "sm_90a")


def attention(dtype: str, batch: tuple[Dim, ...], sq: Dim, skv: Dim, d: int, dv: int | None = None,
              causal: bool = False, k_layout: str = "nd", out: str | None = None, splits: int = 0,
              name: str = "attn") -> AttentionSpec:
    """The spec of softmax(Q K^T / sqrt(d)) V over ``batch`` with consistent tensor shapes."""
    dv = dv or d
    k_shape = (*batch, skv, d) if k_layout == "nd" else (*batch, d, skv)
    return AttentionSpec(name, Tensor("q", dtype, (*batch, sq, d)), Tensor("k", dtype, k_shape),
                         Tensor("v", dtype, (*batch, skv, dv)), Tensor("o", out or dtype, (*batch, sq, dv)),
                         batch, sq, skv, d, dv, d ** -0.5, k_layout, causal, splits)


def assemble(spec: AttentionSpec, chip: str) -> tuple[str, dict]:
    """The PTX of ``spec``'s kernels for ``chip`` and ptxas's resources per kernel."""
    kernels = emit_attention(spec, chip)
    ptx = compile_kernels(kernels, chip)
    return ptx, ptxas(ptx, chip)


# (batch, sq, skv, causal, k_layout): the shapes the emitter must take.
SHAPES = {
    "prefill": ((2, 8), 128, 1024, False, "nd"),
    "heads": ((16,), 512, 512, False, "nd"),
    "ragged": ((1, 3), 77, 1000, False, "nd"),
    "dynamic-sq": ((2, 8), "sq", 1000, False, "nd"),
    "causal": ((2, 4), 200, 333, True, "nd"),
    "k-dn": ((2, 8), 96, 1000, False, "dn"),
    "decode": ((2, 32), 1, 1024, False, "nd"),
    "decode-one": ((1, 1), 1, 4096, False, "nd"),
    "no-batch": ((), 300, 700, True, "nd"),
    "decode-dynamic": (("b", 4), 1, "kv", False, "nd"),
}


@needs_ptxas
@pytest.mark.parametrize("shape", list(SHAPES))
@pytest.mark.parametrize("d", [64, 128])
@pytest.mark.parametrize("dtype", ["f16", "bf16"])
def test_kernels_assemble_without_spills(dtype: str, d: int, shape: str) -> None:
    """Every kernel assembles for sm_80 and sm_90a within the register file and without spills; prefill is
    one kernel, decode two; the tensor-core path is there (cp.async, ldmatrix, mma.sync of the input type)."""
    batch, sq, skv, causal, layout = SHAPES[shape]
    spec = attention(dtype, batch, sq, skv, d, causal=causal, k_layout=layout)
    assert attention_problem(spec, "sm_90a") is None
    for chip in CHIPS_CHECKED:
        ptx, resources = assemble(spec, chip)
        entries = 2 if sq == 1 else 1
        assert ptx.count(".entry ") == entries == len(resources)
        for name, used in resources.items():
            assert used.spill_bytes == 0, (chip, name, used)
            assert 0 < used.registers <= REGISTER_LIMIT, (chip, name, used)
        assert re.search(rf"mma\.sync\.aligned\.m16n8k16\.row\.col\.f32\.{dtype}\.{dtype}\.f32", ptx)
        assert "ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16" in ptx
        assert "cp.async.cg.shared.global" in ptx and "cp.async.wait_group" in ptx
        assert "ex2.approx" in ptx


@needs_ptxas
def test_odd_head_sizes_and_float_output() -> None:
    """Head sizes that are multiples of 16 but not powers of two, dv apart from d, f32 O."""
    spec = attention("bf16", (3,), 50, 130, 48, dv=80, out="f32")
    _, resources = assemble(spec, "sm_90a")
    assert [r.spill_bytes for r in resources.values()] == [0]


@needs_ptxas
def test_keys_stored_by_dimension_with_unaligned_rows_are_copied_element_wise() -> None:
    """K as [d, kv] with a dynamic kv has no provably aligned rows: K is loaded element by element, V
    still by 16-byte cp.async."""
    aligned = attention("f16", (2,), 64, 1024, 64, k_layout="dn")
    unaligned = attention("f16", (2,), 64, "kv", 64, k_layout="dn")
    counts = [compile_kernels(emit_attention(s, "sm_90a"), "sm_90a").count("cp.async.cg") for s in (aligned, unaligned)]
    assert counts[0] > counts[1] > 0
    ptx, resources = assemble(unaligned, "sm_80")
    assert "ld.global.u16" in ptx or "ld.global.b16" in ptx
    assert all(r.spill_bytes == 0 for r in resources.values())


def test_causal_masks_by_the_diagonal() -> None:
    """A causal spec bounds the key loop and masks past the diagonal; a non-causal one of whole key tiles
    masks nothing."""
    plain = emit_attention(attention("f16", (2,), 128, 1024, 64), "sm_90a")[0].text
    causal = emit_attention(attention("f16", (2,), 128, 1024, 64, causal=True), "sm_90a")[0].text
    assert "0xFF800000" in plain and "arith.select" not in plain.split("arith.mulf")[1].split("arith.maxnumf")[0]
    assert causal.count("arith.minsi") > plain.count("arith.minsi")
    assert causal.count("arith.cmpi sgt") >= 32 > plain.count("arith.cmpi sgt")


def test_refusals_give_the_reason() -> None:
    """f32 inputs, head sizes off the mma.sync steps, unknown chips, mismatched shapes and too many
    registers are refused with a reason; emitting them raises it."""
    f32 = attention("f32", (2,), 64, 64, 64)
    assert "mma.sync" in attention_problem(f32, "sm_90a") and "cast" in attention_problem(f32, "sm_90a")
    assert "multiple of 16" in attention_problem(attention("f16", (2,), 64, 64, 40), "sm_90a")
    assert "sm_70" in attention_problem(attention("f16", (2,), 64, 64, 64), "sm_70")
    wrong = attention("f16", (2,), 64, 64, 64)
    wrong = AttentionSpec(**{**wrong.__dict__, "v": Tensor("v", "f16", (2, 64, 32))})
    assert "shape" in attention_problem(wrong, "sm_90a")
    assert "registers" in attention_problem(attention("f16", (2,), 64, 64, 256, dv=256), "sm_90a")
    mixed = AttentionSpec(**{**wrong.__dict__, "v": Tensor("v", "bf16", (2, 64, 64))})
    assert "one element type" in attention_problem(mixed, "sm_90a")
    with pytest.raises(ValueError, match="mma.sync"):
        emit_attention(f32, "sm_90a")
    with pytest.raises(ValueError, match="BQ"):
        AttentionTile(BQ=48)


def test_shared_memory_fits_each_chip() -> None:
    """The tiles' shared memory is checked against the chip: a tile that fits sm_90a may not fit sm_80."""
    spec = attention("f16", (2,), 512, 512, 128)
    tile = AttentionTile(BQ=128, BK=128)
    need = plan_attention(spec, "sm_90a", tile).shared_bytes
    assert CHIPS["sm_80"][0] < need <= CHIPS["sm_90a"][0]
    assert attention_problem(spec, "sm_90a", tile) is None
    assert attention_problem(spec, "sm_80", AttentionTile(BQ=128, BK=32)) is None
    assert "shared memory" in attention_problem(spec, "sm_80", tile)


def test_prefill_launch() -> None:
    """A block per (batch index, query tile), two threads per query row, the tiles in dynamic shared
    memory, parameters Q, K, V, O then the size symbols."""
    spec = attention("bf16", ("b", 8), "sq", 1000, 128)
    (kernel,) = emit_attention(spec, "sm_90a", AttentionTile(BQ=128, BK=32))
    launch = kernel.launch
    assert launch.grid == ("cdiv(sq, 128) * b * 8", "1", "1") and launch.block == (256, 1, 1)
    assert launch.shared_bytes == 2 * (128 * 136 + 4 * 32 * 136)
    assert [(p.kind, p.name) for p in launch.params] == [("tensor", "q"), ("tensor", "k"), ("tensor", "v"),
                                                         ("tensor", "o"), ("size", "b"), ("size", "sq")]
    assert kernel.text.startswith("gpu.func @attn_prefill(")
    assert "known_block_size = array<i32: 256, 1, 1>" in kernel.text
    assert attention_temporaries(spec, "sm_90a") == []


def test_decode_launch_and_temporaries() -> None:
    """Decode: the split kernel writes the temporaries that the combine kernel reads; splits fill the SMs
    when the emitter chooses them, and a given count is kept."""
    spec = attention("f16", (2, 32), 1, 1024, 128)
    split, combine = emit_attention(spec, "sm_90a")
    plan = plan_attention(spec, "sm_90a")
    assert plan.decode and plan.splits * 64 >= CHIPS["sm_90a"][1] * plan.warps
    temporaries = attention_temporaries(spec, "sm_90a")
    assert [(t.name, t.dtype, t.shape) for t in temporaries] == [
        ("attn_partial_o", "f32", (2, 32, plan.splits, 128)), ("attn_partial_m", "f32", (2, 32, plan.splits)),
        ("attn_partial_l", "f32", (2, 32, plan.splits))]
    names = {t.name for t in temporaries}
    assert {p.name for p in split.launch.params} >= names and {p.name for p in combine.launch.params} >= names
    assert split.launch.grid == (f"{-(-plan.splits // plan.warps)} * 2 * 32", "1", "1")
    assert combine.launch.grid == ("2 * 32", "1", "1") and combine.launch.shared_bytes == 0
    given = attention("f16", (2, 32), 1, 1024, 128, splits=7)
    assert attention_temporaries(given, "sm_90a")[1].shape == (2, 32, 7)
    one = plan_attention(attention("bf16", (1, 1), 1, 4096, 64), "sm_90a")
    assert one.splits == 4096 // one.key_tile


@needs_ptxas
def test_decode_with_a_share_count_off_the_warps() -> None:
    """A split count that is not a multiple of the warps per block leaves the last warps idle."""
    spec = attention("bf16", ("b",), 1, "kv", 64, splits=5)
    _, resources = assemble(spec, "sm_80")
    assert len(resources) == 2 and all(r.spill_bytes == 0 for r in resources.values())


# -- numerics: the kernels' text run by a lockstep interpreter of its ops (warp_simulator) ----------------------


def simulate(spec: AttentionSpec, sizes: dict[str, int], tile: AttentionTile | None, seed: int):
    """Run ``spec``'s kernels on random inputs of its element type; O as the kernels write it and numpy's
    softmax(Q K^T * scale) V in float64 (NaN where a causal row sees no key)."""
    from warp_simulator import Block, round_to

    print(f"seed {seed}")
    rng = np.random.default_rng(seed)

    def dims(shape: tuple[Dim, ...]) -> tuple[int, ...]:
        return tuple(sizes[d] if isinstance(d, str) else d for d in shape)

    arrays = {t.name: round_to(rng.standard_normal(dims(t.shape)), t.dtype).ravel() for t in (spec.q, spec.k, spec.v)}
    for t in (spec.o, *attention_temporaries(spec, "sm_90a", tile)):
        arrays[t.name] = np.full(math.prod(dims(t.shape)), np.nan)
    scope = dict(sizes, cdiv=lambda a, b: -(-a // b))
    for kernel in emit_attention(spec, "sm_90a", tile):
        block = Block(kernel, arrays, sizes)
        for block_id in range(eval(kernel.launch.grid[0], scope)):  # the grid expression over the sizes
            block.run(block_id)
    q, k, v = (arrays[t.name].reshape(dims(t.shape)) for t in (spec.q, spec.k, spec.v))
    k_t = k if spec.k_layout == "dn" else np.swapaxes(k, -1, -2)
    s = q @ k_t * spec.scale
    if spec.causal:
        rows, cols = s.shape[-2:]
        s = np.where(np.arange(cols)[None, :] <= np.arange(rows)[:, None] + cols - rows, s, -np.inf)
    with np.errstate(invalid="ignore"):
        p = np.exp(s - s.max(-1, keepdims=True))
        expected = p / p.sum(-1, keepdims=True) @ v
    return arrays[spec.o.name].reshape(dims(spec.o.shape)), expected


SMALL = AttentionTile(BQ=32, BK=32)
NUMERIC_CASES = {
    "ragged": (("f16", (2,), 40, 70, 16), {}, {}, SMALL),
    "dv-apart": (("bf16", (2,), 40, 70, 32), {"dv": 48}, {}, SMALL),
    "rows-of-6-chunks": (("f16", (2,), 40, 70, 48), {"dv": 80}, {}, SMALL),
    "causal": (("f16", (1, 2), 37, 100, 16), {"causal": True}, {}, SMALL),
    "causal-more-rows": (("bf16", (2,), 50, 30, 16), {"causal": True}, {}, SMALL),
    "k-dn": (("f16", (2,), 33, 72, 16), {"k_layout": "dn"}, {}, SMALL),
    "k-dn-4-byte-copies": (("f16", (2,), 33, 70, 16), {"k_layout": "dn"}, {}, SMALL),
    "k-dn-element-copies": (("f16", (2,), 33, "kv", 16), {"k_layout": "dn", "causal": True}, {"kv": 51}, SMALL),
    "dynamic": (("bf16", ("b",), "sq", 90, 16), {"causal": True}, {"b": 2, "sq": 45}, AttentionTile(BQ=16, BK=16)),
    "default-tiles-f32-out": (("f16", (2,), 64, 128, 64), {"out": "f32"}, {}, None),
    "decode": (("f16", (2, 3), 1, 300, 32), {}, {}, None),
    "decode-given-splits": (("bf16", (2,), 1, "kv", 16), {"splits": 5}, {"kv": 77}, None),
    "decode-no-batch": (("f16", (), 1, 130, 16), {"dv": 32}, {}, AttentionTile(DECODE_BK=16, DECODE_WARPS=4)),
}


@pytest.mark.parametrize("case", list(NUMERIC_CASES))
def test_kernels_compute_attention(case: str) -> None:
    """O matches softmax(Q K^T * scale) V within the rounding of P to the inputs' type; every row is
    written, and a causal row that sees no key is zero."""
    args, options, sizes, tile = NUMERIC_CASES[case]
    spec = attention(*args, **options)
    out, expected = simulate(spec, sizes, tile, seed=len(case))
    assert not np.isnan(out).any()
    reached = ~np.isnan(expected)
    tolerance = 1e-2 if spec.q.dtype == "bf16" else 2e-3
    np.testing.assert_allclose(out[reached], expected[reached], atol=tolerance, rtol=tolerance)
    assert (out[~reached] == 0).all()
