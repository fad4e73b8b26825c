"""The attention family's search model on NVIDIA targets: its space is what the emitter takes, its cost favours
key shares where few blocks would leave SMs idle, and the search's choice reaches the emitted kernels."""

from __future__ import annotations

import dataclasses
import re
import sys

import numpy as np
import pytest
from mlir import ir

import prism
import prism.families  # noqa: F401  (registers the attention family)
from conftest import REPO
from prism.codegen.gpu.attention import attention_problem
from prism.codegen.gpu.attention_sm90 import plan_sm90_attention, sm90_attention_problem
from prism.codegen.gpu.kernels import _attention
from prism.codegen.gpu.ptx import compile_kernels, ptxas, ptxas_path
from prism.codegen.gpu.spec import AttentionTile
from prism.families.attention import match_family
from prism.families.attention_gpu import (
    attention_lower_bound,
    attention_seconds,
    attention_space,
    attention_tile,
    problem_spec,
    runs_sm90,
)
from prism.infra import attrs
from prism.infra.errors import UnsupportedOp
from prism.search.attention import Attention
from prism.search.space import fix_shape, point_array, shape_exponents
from prism.targets.nvidia import GPU_TARGETS, LAUNCH_SECONDS

sys.path.insert(0, str(REPO / "benchmarks"))
import cpu_workloads as cw  # noqa: E402
import gpu_workloads as gw  # noqa: E402

needs_ptxas = pytest.mark.skipif(ptxas_path() is None, reason="ptxas (CUDA) is not installed on this machine")
TARGETS = ("h200", "a100")

# (batch, queries, keys, d, dv, causal offset, type, K transposed)
PROBLEMS = {
    "prefill": Attention(16, 128, 1024, 128, 128, None, "bf16", True),
    "prefill-d256": Attention(8, 300, 700, 256, 256, None, "f16", False),
    "prefill-d64-causal": Attention(16, 512, 512, 64, 64, 0, "bf16", False),
    "prefill-dynamic": Attention(None, None, 2048, 128, 128, None, "bf16", False),
    "decode": Attention(32, 1, 4096, 128, 128, None, "bf16", False),
    "decode-d192": Attention(4, 1, 1000, 192, 192, None, "f16", True),
    "decode-dynamic": Attention(8, 1, None, 64, 64, None, "bf16", False),
    "decode-dynamic-dn": Attention(8, 1, None, 64, 64, None, "f16", True),
}


def _points(space, op, groups=None):
    """The symbol values of the points of ``space`` (within ``groups``, all by default) at ``op``'s shape."""
    domain = space.universe_set()
    for name, _ in space.groups:
        if groups is None or name in groups:
            domain = domain.intersect(space.group_set(name))
    found = point_array(fix_shape(space, domain, shape_exponents(op)))
    return [space.value_of(tuple(row)) for row in found.tolist()]


def _spec(op, values):
    """The problem's spec carrying the point's tile and, for decode, its shares."""
    return dataclasses.replace(problem_spec(op), splits=values["SPLITS"] if op.queries == 1 else 0,
                               tile=attention_tile(values))


def _problem(op, values, chip):
    """Why the kernel that runs the point refuses it: the wgmma kernel's refusal where the space is its own."""
    spec = _spec(op, values)
    return sm90_attention_problem(spec) if runs_sm90(spec, chip) else attention_problem(spec, chip)


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("name", sorted(PROBLEMS))
def test_every_point_is_a_tile_the_emitter_takes_and_the_limits_are_its_own(target, name):
    model, op = GPU_TARGETS[target], PROBLEMS[name]
    space = attention_space(op, model)
    inside = _points(space, op)
    assert inside, name
    for values in inside:
        assert _problem(op, values, model.chip) is None, values
    # a tile the registers or shared-memory group leaves out is one the emitter refuses
    within_shape = _points(space, op, groups={"shape"})
    kept = {tuple(sorted(v.items())) for v in inside}
    for values in within_shape:
        if tuple(sorted(values.items())) not in kept:
            assert _problem(op, values, model.chip) is not None, values


# the prefills the sm_90a wgmma kernel takes: its space is its tiles (BQ 64 or 128, BK 64 or 128, STAGES)
SM90_PREFILLS = ("prefill", "prefill-d64-causal", "prefill-dynamic")


@pytest.mark.parametrize("name", SM90_PREFILLS)
def test_the_sm90_prefill_space_is_the_wgmma_kernels(name):
    model, op = GPU_TARGETS["h200"], PROBLEMS[name]
    inside = _points(attention_space(op, model), op)
    assert {v["BQ"] for v in inside} <= {64, 128} and {v["BK"] for v in inside} <= {64, 128}
    assert len({v["STAGES"] for v in inside}) > 1, inside
    for values in inside:
        spec = _spec(op, values)
        assert runs_sm90(spec, model.chip) and sm90_attention_problem(spec) is None, values
    # on sm_80 the same problem keeps the mma.sync kernel's space, two stages
    a100 = _points(attention_space(op, GPU_TARGETS["a100"]), op)
    assert {v["STAGES"] for v in a100} == {2} and {v["BQ"] for v in a100} & {16, 32}


@needs_ptxas
@pytest.mark.parametrize("name", SM90_PREFILLS)
def test_a_sample_of_the_sm90_prefill_space_assembles_without_spills(name):
    model, op = GPU_TARGETS["h200"], PROBLEMS[name]
    inside = sorted(_points(attention_space(op, model), op), key=lambda v: (v["BQ"], v["BK"], v["STAGES"]))
    for values in inside[::3] + inside[-1:]:
        spec = dataclasses.replace(_spec(op, values), name="attention")
        kernels = _attention(spec, model.chip)
        assert kernels[0].name.endswith("_prefill_sm90"), values
        assert kernels[0].launch.block[0] == 128 * (1 + values["BQ"] // 64)
        assert kernels[0].launch.shared_bytes == plan_sm90_attention(spec).shared_bytes
        resources = ptxas(compile_kernels(kernels, model.chip), model.chip)
        assert all(r.spill_bytes == 0 for r in resources.values()), (values, resources)


def test_chains_the_kernels_refuse_have_no_space():
    model = GPU_TARGETS["h200"]
    assert attention_space(Attention(4, 64, 64, 64, 64, None, "f32"), model) is None  # f32: no mma.sync
    assert attention_space(Attention(4, 64, 64, 40, 40, None, "bf16"), model) is None  # head size
    assert attention_space(Attention(4, 64, 80, 64, 64, 0, "bf16"), model) is None  # mask off the last key
    # a decode of head size 256 needs more registers than a thread has, whatever the tile
    assert attention_space(Attention(4, 1, 1000, 256, 256, None, "bf16"), model) is None


@pytest.mark.parametrize("target", TARGETS)
def test_the_cost_falls_as_splits_grow_from_one_for_few_heads(target):
    model = GPU_TARGETS[target]
    op = Attention(4, 1, 8192, 128, 128, None, "bf16", False)
    seconds = [float(attention_seconds(model, op, {"BQ": 64, "BK": 64, "DECODE_BK": 32, "DECODE_WARPS": 1,
                                                   "SPLITS": s}, 1024)) for s in (1, 2, 4, 8, 16)]
    assert all(a > b for a, b in zip(seconds, seconds[1:], strict=False)), seconds
    assert seconds[0] > 8 * seconds[-1]


@pytest.mark.parametrize("target", TARGETS)
@pytest.mark.parametrize("name", sorted(PROBLEMS))
def test_the_bound_is_below_the_cost(target, name):
    model, op = GPU_TARGETS[target], PROBLEMS[name]
    space = attention_space(op, model)
    values = {key: np.array([v[key] for v in _points(space, op)]) for key in space.symbols}
    assert (attention_lower_bound(model, op, values, 1024) <= attention_seconds(model, op, values, 1024)).all()


def _decode_text(dtype="bf16"):
    return gw.retype(cw.attention(1, 32, 1, 4096, 128).mlir, dtype)


@pytest.mark.parametrize("target", TARGETS)
def test_the_search_picks_balanced_key_shares_for_decode(target):
    report = prism.compile(_decode_text(), target=target, emit="report").report
    (family,) = report["families"]
    assert family["kind"] == "attention"
    stages = [step["stage"] for step in family["funnel"]]
    assert stages[:4] == ["space", "registers", "shared_memory", "shape"], stages
    choice = family["choice"]
    splits, key_tile, warps = choice["SPLITS"], choice["DECODE_BK"], choice["DECODE_WARPS"]
    if GPU_TARGETS[target].chip == "sm_90a":  # the wgmma kernel's split mode: BK-key tiles, a block a share
        key_tile, warps = choice["BK"], 1
    tiles = -(-4096 // key_tile)
    assert 2 <= splits <= tiles and splits & (splits - 1) == 0, choice
    assert tiles % splits == 0, choice  # every share the same number of key tiles
    assert warps <= splits, choice
    # more blocks than 32 heads alone would give: at least one per SM in the first wave
    assert 32 * -(-splits // warps) >= GPU_TARGETS[target].sm_count * 0.9, choice
    (entry,) = report["kernels"]
    assert entry["kernels"][0]["kind"] == "attention" and entry["kernels"][0]["predicted_us"] > 0


def _with_choice(text: str, choice: dict[str, int]) -> str:
    """``text`` with the attention choice ``choice`` on its chain's first op."""
    with ir.Context() as context:
        context.allow_unregistered_dialects = True
        module = ir.Module.parse(text)
        found = None
        for op in module.body.operations[0].regions[0].blocks[0].operations:
            found = match_family(op.operation) or found
        assert found is not None
        i64 = ir.IntegerType.get_signless(64)
        found.ops[0].attributes[attrs.ATTENTION_CHOICE] = ir.DictAttr.get(
            {k: ir.IntegerAttr.get(i64, v) for k, v in choice.items()})
        return str(module)


def _kernels(compiled):
    return {k["name"]: k for f in compiled.manifest["functions"].values() for k in f["kernels"]}


@needs_ptxas
@pytest.mark.parametrize("target", TARGETS)
def test_a_choice_reaches_the_emitted_kernels(target):
    chip = GPU_TARGETS[target].chip
    decode = {"BQ": 64, "BK": 64, "DECODE_BK": 16, "DECODE_WARPS": 4, "SPLITS": 32, "STAGES": 2}
    compiled = prism.compile(_with_choice(_decode_text(), decode), target=target, pipeline="", emit="ptx")
    kernels = _kernels(compiled)
    if chip == "sm_90a":  # the wgmma kernel's split mode: a block of a producer and a consumer per share
        (split,) = [k for name, k in kernels.items() if name.endswith("_decode_sm90")]
        assert split["grid"][0].startswith("32 * ") and split["block"][0] == 2 * 128, split
        assert split["shared_bytes"] == 64 * 128 * 2 + 2 * 2 * 64 * 128 * 2, split
    else:
        (split,) = [k for name, k in kernels.items() if name.endswith("_decode")]
        assert split["grid"][0].startswith("8 * ") and split["block"][0] == 4 * 32  # 32 shares, 4 a block
    resources = ptxas(compiled.ptx_text, chip)
    assert all(r.spill_bytes == 0 for r in resources.values()), resources
    text = gw.retype(cw.attention(2, 8, 128, 1024, 128).mlir, "f16")
    if chip != "sm_90a":  # the mma.sync kernel: BQ / 16 warps, BQ rows a block
        prefill = {"BQ": 32, "BK": 32, "DECODE_BK": 32, "DECODE_WARPS": 2, "SPLITS": 1, "STAGES": 2}
        compiled = prism.compile(_with_choice(text, prefill), target=target, pipeline="", emit="ptx")
        (kernel,) = _kernels(compiled).values()
        assert re.match(r"cdiv\(128, 32\)", kernel["grid"][0]) and kernel["block"][0] == 2 * 32, kernel
        resources = ptxas(compiled.ptx_text, chip)
        assert all(r.spill_bytes == 0 for r in resources.values()), resources
        return
    # the wgmma kernel: BQ / 64 consumer warpgroups and a producer, the Q tile and STAGES of K and V tiles
    shared = set()
    for bq, bk, stages in ((64, 64, 4), (128, 128, 2), (64, 128, 3)):
        prefill = {"BQ": bq, "BK": bk, "DECODE_BK": 32, "DECODE_WARPS": 2, "SPLITS": 1, "STAGES": stages}
        compiled = prism.compile(_with_choice(text, prefill), target=target, pipeline="", emit="ptx")
        (kernel,) = _kernels(compiled).values()
        assert kernel["name"].endswith("_prefill_sm90"), kernel
        assert kernel["grid"][0].startswith(f"{128 // bq} * ") and kernel["block"][0] == 128 * (1 + bq // 64), kernel
        assert kernel["shared_bytes"] == bq * 128 * 2 + stages * 2 * bk * 128 * 2, kernel
        shared.add(kernel["shared_bytes"])
        resources = ptxas(compiled.ptx_text, chip)
        assert all(r.spill_bytes == 0 for r in resources.values()), resources
    assert len(shared) == 3


def test_a_choice_the_kernels_cannot_run_is_an_error_at_its_op():
    wrong = {"BQ": 64, "BK": 64, "DECODE_BK": 32, "DECODE_WARPS": 3, "SPLITS": 4, "STAGES": 2}
    with pytest.raises(UnsupportedOp, match="DECODE_WARPS"):
        prism.compile(_with_choice(_decode_text(), wrong), target="h200", pipeline="", emit="ptx")


def test_a_transposed_k_gives_its_keys_and_layout():
    text = gw.retype((REPO / "benchmarks" / "workloads" / "attention.mlir").read_text(), "bf16")
    with ir.Context() as context:
        context.allow_unregistered_dialects = True
        module = ir.Module.parse(text)
        found = [match_family(op.operation) for op in module.body.operations[0].regions[0].blocks[0].operations]
        (problem,) = [m.problem for m in found if m is not None]
    assert (problem.batch, problem.queries, problem.keys, problem.head_dim) == (16, 128, 1024, 128)
    assert problem.k_transposed and problem.input_type == "bf16"


def test_the_wgmma_kernels_stages_hide_the_key_loads():
    """On sm_90a a deeper ring divides the latency of the key loads (the blocks an SM holds alike); the mma.sync
    kernel's two stages are fixed, so STAGES leaves its cost alone."""
    op = Attention(2, 4096, 4096, 128, 128, None, "bf16", False)
    base = {"BQ": 64, "BK": 128, "DECODE_BK": 32, "DECODE_WARPS": 2, "SPLITS": 1}
    h200 = [float(attention_seconds(GPU_TARGETS["h200"], op, {**base, "STAGES": s}, 1024)) for s in (2, 3)]
    assert h200[1] < h200[0], h200
    a100 = [float(attention_seconds(GPU_TARGETS["a100"], op, {**base, "BQ": 32, "STAGES": s}, 1024)) for s in (2, 3)]
    assert a100[0] == a100[1], a100


# the decodes the sm_90a wgmma kernel's split mode takes (d = 192 and sm_80 keep the split-KV kernels)
SM90_DECODES = ("decode", "decode-dynamic", "decode-dynamic-dn")


@pytest.mark.parametrize("name", SM90_DECODES)
def test_the_sm90_decode_space_is_the_split_modes(name):
    """SPLITS, BK of 64 or 128 and STAGES range; BQ, DECODE_BK and DECODE_WARPS stay at the tile's defaults
    (the split mode reads none of them); every point's kernel is the split mode."""
    model, op = GPU_TARGETS["h200"], PROBLEMS[name]
    inside = _points(attention_space(op, model), op)
    assert {v["BK"] for v in inside} == {64, 128} and len({v["STAGES"] for v in inside}) > 1, inside
    assert len({v["SPLITS"] for v in inside}) > 4
    default = AttentionTile()
    assert {(v["BQ"], v["DECODE_BK"], v["DECODE_WARPS"]) for v in inside} == \
        {(default.BQ, default.DECODE_BK, default.DECODE_WARPS)}
    for values in inside:
        spec = _spec(op, values)
        assert runs_sm90(spec, model.chip) and sm90_attention_problem(spec) is None, values
        assert values["SPLITS"] * values["BK"] <= 2 ** shape_exponents(op)["LN"]  # a key tile a share at least
    # d = 192 and sm_80 keep the split-KV kernels' space
    assert {v["BK"] for v in _points(attention_space(PROBLEMS["decode-d192"], model), PROBLEMS["decode-d192"])} \
        == {default.BK}
    a100 = _points(attention_space(op, GPU_TARGETS["a100"]), op)
    assert len({v["DECODE_WARPS"] for v in a100}) > 1


def test_the_sm90_decodes_cost_is_its_key_stream():
    """The K and V stream at bandwidth makes the cost: one share a batch index leaves most SMs idle; shares up
    to a wave of blocks approach the stream's time over every SM (with the two launches); past it, a second
    wave and the partials cost more. The 64-row tiles' FLOPs stay under the stream."""
    model = GPU_TARGETS["h200"]
    op = Attention(4, 1, 8192, 128, 128, None, "bf16", False)
    base = {"BQ": 64, "BK": 128, "DECODE_BK": 32, "DECODE_WARPS": 2, "STAGES": 2}
    seconds = [float(attention_seconds(model, op, {**base, "SPLITS": s}, 1024)) for s in (1, 4, 16, 32, 64)]
    assert all(a > b for a, b in zip(seconds, seconds[1:4], strict=False)), seconds
    assert seconds[4] > seconds[3], seconds  # 256 blocks: two waves over 132 SMs
    stream = 4 * 8192 * 256 * 2 / model.dram_bytes_per_s
    assert stream < seconds[3] - 2 * LAUNCH_SECONDS < 2 * stream and seconds[0] > 8 * stream
    flops = 4 * 2 * 64 * 8192 * 256 / model.flops["bf16"]  # every share of the 4 batch indices, 64 rows
    assert flops < stream


def _bundle_decode(name: str, dtype: str) -> str:
    """The GPU bundle's decode workloads (attention-1x32x1x4096x128, qk-norm-attention-1x16x1x4096x64)."""
    workload = cw.attention(1, 32, 1, 4096, 128) if name == "attention" else cw.qk_norm_attention(1, 16, 1, 4096, 64)
    return gw.retype(workload.mlir, dtype)


@needs_ptxas
@pytest.mark.parametrize("dtype", ["f16", "bf16"])
@pytest.mark.parametrize("name", ["attention", "qk-norm-attention"])
def test_the_bundles_decodes_take_the_split_mode_on_h200(name, dtype):
    """The search's choice runs on the split mode and the combine kernel, a block per batch index and share,
    and assembles without spills."""
    compiled = prism.compile(_bundle_decode(name, dtype), target="h200", emit="ptx")
    kernels = _kernels(compiled)
    (split,) = [k for n, k in kernels.items() if n.endswith("_decode_sm90")]
    assert [n for n in kernels if n.endswith("_combine")], kernels
    assert split["block"][0] == 256 and re.fullmatch(r"\d+ \* 1 \* (32|16)", split["grid"][0]), split
    resources = ptxas(compiled.ptx_text, "sm_90a")
    assert all(r.spill_bytes == 0 for r in resources.values()), resources
    assert "wgmma.mma_async" in compiled.ptx_text and "cp.async.bulk.tensor" in compiled.ptx_text
