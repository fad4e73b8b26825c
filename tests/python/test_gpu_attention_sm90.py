"""The sm_90a attention kernel (TMA + mbarrier ring + wgmma, warp-specialized): what it refuses, how it
launches, where its wgmma operands lie against what TMA writes, that P is fed to the second wgmma in the register
layout the PTX ISA gives, and its PTX as ptxas assembles it; its decode split mode: its variants through ptxas,
its partials where the split-KV combine kernel reads them, and the combine kernel merging them."""

from __future__ import annotations

import re
import subprocess
import tempfile
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from prism.codegen.gpu import hopper
from prism.codegen.gpu.attention import attention_problem
from prism.codegen.gpu.attention_sm90 import (
    _Writer,
    default_tile,
    emit_sm90_attention,
    plan_sm90_attention,
    sm90_attention_problem,
    sm90_temporaries,
)
from prism.codegen.gpu.gemm_sm90 import SHARED_LIMIT, fragment_offset
from prism.codegen.gpu.kernels import _attention
from prism.codegen.gpu.ptx import compile_kernels, ptxas, ptxas_path
from prism.codegen.gpu.spec import AttentionSpec, AttentionTile, Dim, Kernel, Tensor
from prism.infra.errors import UnsupportedOp

needs_ptxas = pytest.mark.skipif(ptxas_path() is None, reason="ptxas is not on PATH")
HOPPER_PTX = ("wgmma.mma_async", "cp.async.bulk.tensor", "mbarrier.try_wait.parity", "setmaxnreg",
              "fence.mbarrier_init", "wgmma.fence", "wgmma.commit_group", "wgmma.wait_group")


def attention(dtype: str = "f16", batch: tuple[Dim, ...] = (2, 3), sq: Dim = 77, skv: Dim = 1000, d: int = 128,
              dv: int | None = None, causal: bool = False, k_layout: str = "nd") -> AttentionSpec:
    """softmax(Q K^T / sqrt(d)) V over ``batch`` with consistent tensor shapes."""
    dv = dv or d
    k_shape = (*batch, skv, d) if k_layout == "nd" else (*batch, d, skv)
    return AttentionSpec("attn", Tensor("q", dtype, (*batch, sq, d)), Tensor("k", dtype, k_shape),
                         Tensor("v", dtype, (*batch, skv, dv)), Tensor("o", dtype, (*batch, sq, dv)),
                         batch, sq, skv, d, dv, d ** -0.5, k_layout, causal)


def ptxas_output(ptx: str) -> str:
    """ptxas -v's whole output: its notes on wgmma serialization and setmaxnreg precede the kernel's lines."""
    with tempfile.TemporaryDirectory() as tmp:
        src = Path(tmp) / "k.ptx"
        src.write_text(ptx)
        done = subprocess.run([ptxas_path(), "-arch=sm_90a", "-v", str(src), "-o", str(Path(tmp) / "k.o")],
                              capture_output=True, text=True, check=True)
    return done.stdout + done.stderr


def check_kernel(spec: AttentionSpec) -> tuple[Kernel, str]:
    """Emit, assemble and check: no spills, no ptxas notes, the Hopper instructions and both wgmma forms."""
    assert sm90_attention_problem(spec) is None
    (kernel,) = emit_sm90_attention(spec)
    ptx = compile_kernels([kernel], "sm_90a")
    used = ptxas(ptx, "sm_90a")[kernel.name]
    assert used.spill_bytes == 0, used
    assert not used.messages, used.messages
    assert "Potential Performance Loss" not in ptxas_output(ptx)
    for instruction in HOPPER_PTX:
        assert instruction in ptx, instruction
    assert f".maxnreg {kernel.max_registers}" in ptx
    bk, dt = plan_sm90_attention(spec).tile.BK, spec.q.dtype
    # S = Q K^T from descriptors; O += P V with P in four registers
    assert re.search(rf"wgmma\.mma_async\.sync\.aligned\.m64n{bk}k16\.f32\.{dt}\.{dt} \{{[^}}]*\}}, %rd\d+, %rd\d+",
                     ptx)
    assert re.search(rf"wgmma\.mma_async\.sync\.aligned\.m64n{spec.dv}k16\.f32\.{dt}\.{dt} \{{[^}}]*\}}, "
                     r"\{%r\d+, %r\d+, %r\d+, %r\d+\}, %rd\d+, p, 1, 1, 1;", ptx)
    assert kernel.launch.shared_bytes + used.shared_bytes <= SHARED_LIMIT
    return kernel, ptx


# -- kernels through ptxas ---------------------------------------------------------------------------------------


@needs_ptxas
@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("k_layout", ["nd", "dn"])
@pytest.mark.parametrize("d", [64, 128])
@pytest.mark.parametrize("dtype", ["f16", "bf16"])
def test_ragged_kernels_assemble(dtype: str, d: int, k_layout: str, causal: bool) -> None:
    """77 queries, 1000 keys, two batch dimensions: every variant assembles without spills."""
    _, ptx = check_kernel(attention(dtype, d=d, k_layout=k_layout, causal=causal))
    # K read transposed (MN-major) from [d, keys], straight (K-major) from [keys, d]; Q K-major
    trans_k = "1" if k_layout == "dn" else "0"
    assert re.search(rf"p, 1,\s*1, 0,\s*{trans_k};", ptx)
    # O stored from the fragment: each thread's two rows, a pair of adjacent columns per 4-byte store
    assert ptx.count("st.global.b32") == 2 * d // 8 and ptx.count("st.global") == 2 * d // 8


@needs_ptxas
@pytest.mark.parametrize("batch, sq, skv, k_layout, causal", [
    (("b", "h"), "sq", "skv", "nd", True),  # everything dynamic
    (("b",), "sq", 1000, "nd", False),  # one dynamic batch dimension
    ((8,), 300, "skv", "dn", True),  # one static batch dimension, a dynamic [d, keys] row
    ((), 130, 70, "nd", True),  # no batch: more queries than keys, rows no key reaches
    ((2, 3, 4), 128, 256, "dn", False),  # three batch dimensions, whole tiles: no mask at all
    ((2, 3), 77, 1000, "nd", True),  # d = 64, dv = 128
])
def test_dynamic_and_batched_kernels_assemble(batch: tuple, sq: Dim, skv: Dim, k_layout: str, causal: bool) -> None:
    dv = 128 if batch == (2, 3) else 64
    check_kernel(attention("bf16", batch=batch, sq=sq, skv=skv, d=64, dv=dv, k_layout=k_layout, causal=causal))


@needs_ptxas
def test_one_consumer_and_deeper_rings_assemble() -> None:
    spec = attention(d=128)
    for tile in (AttentionTile(BQ=64, BK=128, STAGES=3), AttentionTile(BQ=128, BK=64, STAGES=4)):
        (kernel,) = emit_sm90_attention(spec, tile)
        ptx = compile_kernels([kernel], "sm_90a")
        assert ptxas(ptx, "sm_90a")[kernel.name].spill_bytes == 0
        assert kernel.launch.block == (128 * (1 + tile.BQ // 64), 1, 1)
        assert kernel.launch.shared_bytes == plan_sm90_attention(spec, tile).shared_bytes
        assert plan_sm90_attention(spec, tile).tile.STAGES == tile.STAGES


def test_whole_tiles_without_causal_need_no_mask() -> None:
    """With skv a multiple of BK and no causal mask, one loop without masks after the first tile; ragged keys
    add the masked loop. Each S = Q K^T is d / 16 wgmmas from descriptors; each P V, BK / 16 with register A
    (one per loop and the last tile's)."""
    whole = emit_sm90_attention(attention(skv=1024))[0].text
    ragged = emit_sm90_attention(attention(skv=1000))[0].text
    for text, loops in ((whole, 1), (ragged, 2)):
        assert text.count("nvvm.wgmma.mma_async") == (1 + loops) * 128 // 16
        assert text.count("wgmma.mma_async.sync.aligned.m64n128k16") == (loops + 1) * 128 // 16
        assert text.count("scf.for") == 1 + loops  # the producer's and the consumers'
    assert "0xFF800000" in whole  # the row maxima start at -inf all the same


# -- refusals and dispatch ----------------------------------------------------------------------------------------


@pytest.mark.parametrize("spec, tile, reason", [
    (attention(d=96), None, "head size d = 96"),
    (attention(d=256), None, "head size d = 256"),
    (attention(d=64, dv=32), None, "head size dv = 32"),
    (attention("f32"), None, "takes one of f16 or bf16"),
    (attention(sq=1, d=256), None, "head size d = 256"),
    (attention(skv=1001, k_layout="dn"), None, "not a multiple of 8"),
    (attention(), AttentionTile(BQ=32, BK=128), "BQ=32"),
    (attention(), AttentionTile(BQ=128, BK=32), "BK=32"),
    (attention(), AttentionTile(BQ=128, BK=128, STAGES=4), "shared memory"),
])
def test_refuses_what_the_kernel_cannot_take(spec: AttentionSpec, tile, reason: str) -> None:
    problem = sm90_attention_problem(spec, tile)
    assert problem is not None and reason in problem, problem
    with pytest.raises(UnsupportedOp, match="sm_90a wgmma kernel"):
        emit_sm90_attention(spec, tile)


def test_takes_what_tma_can_read() -> None:
    assert sm90_attention_problem(attention(skv=1000, k_layout="dn")) is None
    assert sm90_attention_problem(attention(skv="skv", k_layout="dn")) is None
    assert sm90_attention_problem(attention(sq="sq", skv=1001)) is None  # [keys, d] rows are d long


def test_dispatch_on_sm90a() -> None:
    """Prefill that TMA reads takes the wgmma kernel on sm_90a alone, decode its split mode and the combine
    kernel; other head sizes and sm_80 keep the mma.sync and split-KV kernels; a dynamic [d, keys] row takes
    both, on complementary launch conditions (a decode's two split kernels with as many shares, one combine)."""
    assert [k.name for k in _attention(attention(), "sm_90a")] == ["attn_prefill_sm90"]
    assert [k.name for k in _attention(attention(), "sm_80")] == ["attn_prefill"]
    assert [k.name for k in _attention(attention(d=96), "sm_90a")] == ["attn_prefill"]
    assert [k.name for k in _attention(attention(sq=1), "sm_90a")] == ["attn_decode_sm90", "attn_combine"]
    assert [k.name for k in _attention(attention(sq=1), "sm_80")] == ["attn_decode", "attn_combine"]
    fast, slow, combine = _attention(attention(sq=1, skv="kv", k_layout="dn"), "sm_90a")
    assert (fast.name, slow.name, combine.name) == ("attn_decode_sm90", "attn_decode_unaligned", "attn_combine")
    assert fast.launch.when == "kv // 8 * 8 == kv" and slow.launch.when == "not (kv // 8 * 8 == kv)"
    assert combine.launch.when is None and fast.temporaries == slow.temporaries == combine.temporaries
    splits = fast.temporaries[1].shape[-1]
    assert fast.launch.grid[0] == f"{splits} * 2 * 3" and slow.launch.grid[0] == f"{-(-splits // 2)} * 2 * 3"
    fast, slow = _attention(attention(skv="kv", k_layout="dn"), "sm_90a")
    assert fast.launch.when == "kv // 8 * 8 == kv" and slow.launch.when == "not (kv // 8 * 8 == kv)"
    assert slow.name == "attn_prefill_unaligned" and "@attn_prefill_unaligned(" in slow.text


def test_dispatch_reads_the_specs_tile() -> None:
    """The spec's tile reaches the wgmma kernel (BQ / 64 consumers, BK, STAGES); without one, the kernel's
    default; a tile it refuses (chosen for the mma.sync kernel) runs there; beside a launch condition, the
    mma.sync kernel takes the same tile."""
    spec = attention(d=64)
    (default,) = _attention(spec, "sm_90a")
    assert default.launch.block == (384, 1, 1)
    assert default.launch.shared_bytes == plan_sm90_attention(spec, default_tile(spec)).shared_bytes
    assert default_tile(spec) == AttentionTile(BQ=128, BK=128, STAGES=3)
    chosen = AttentionTile(BQ=64, BK=64, STAGES=4)
    (kernel,) = _attention(replace(spec, tile=chosen), "sm_90a")
    assert kernel.launch.block == (256, 1, 1) and kernel.launch.grid[0].startswith("2 * ")
    assert kernel.launch.shared_bytes == 64 * 64 * 2 + 4 * 2 * 64 * 64 * 2
    (mma,) = _attention(replace(spec, tile=AttentionTile(BQ=32, BK=32)), "sm_90a")
    assert mma.name == "attn_prefill" and mma.launch.block == (64, 1, 1)
    dynamic = attention(d=128, skv="kv", k_layout="dn")
    for bq in (64, 128):
        tile = AttentionTile(BQ=bq, BK=128, STAGES=2)
        fast, slow = _attention(replace(dynamic, tile=tile), "sm_90a")
        assert fast.launch.block == (128 * (1 + bq // 64), 1, 1) and slow.launch.block == (bq // 16 * 32, 1, 1)
        assert attention_problem(replace(dynamic, tile=tile), "sm_90a") is None


def test_launch_and_tensor_maps() -> None:
    spec = attention("bf16", batch=("b", 3), sq="sq", skv=1000, d=64, k_layout="dn")
    (kernel,) = emit_sm90_attention(spec)
    launch, plan = kernel.launch, plan_sm90_attention(spec)
    assert launch.grid == ("cdiv(sq, 128) * b * 3", "1", "1")
    assert launch.block == (384, 1, 1)
    assert launch.shared_bytes == 128 * 64 * 2 + plan.tile.STAGES * (2 * 128 * 64 * 2)
    assert (plan.k.offset, plan.v.offset) == (128 * 64 * 2, 128 * 64 * 2 + plan.tile.STAGES * 128 * 64 * 2)
    assert [p.kind for p in launch.params] == ["tensormap"] * 3 + ["tensor", "size", "size"]
    q, k, v = (p.tensormap for p in launch.params[:3])
    assert q.dims == ("64", "sq", "b * 3") and q.strides == ("128", "sq * 128") and q.box == (64, 128, 1)
    assert k.dims == ("1000", "64", "b * 3") and k.strides == ("2000", "128000") and k.box == (64, 64, 1)
    assert v.dims == ("64", "1000", "b * 3") and v.strides == ("128", "128000") and v.box == (64, 128, 1)
    assert q.swizzle == k.swizzle == v.swizzle == 128
    assert launch.when is None
    assert kernel.max_registers == 168  # 128 x 24 + 2 x 128 x 240 registers over 384 threads
    assert "nvvm.setmaxregister decrease 24" in kernel.text and "nvvm.setmaxregister increase 240" in kernel.text


# -- layouts: an independent model of TMA's boxes and wgmma's canonical layouts -----------------------------------


def swizzle(address: int) -> int:
    """The 128-byte swizzle on a 1024-byte-aligned region: address bits 4-6 XOR bits 7-9."""
    return address ^ (((address >> 7) & 7) << 4)


def tma_address(chunk_bytes: int, row: int, col: int) -> int:
    """Where TMA's boxes of 64 x rows (the tile's chunks along its contiguous dimension, each ``chunk_bytes``)
    put element (row, col) of a tile, ``col`` along the contiguous dimension."""
    return swizzle((col // 64) * chunk_bytes + row * 128 + (col % 64) * 2)


def wgmma_address(start: int, bits: int, k_major: bool, mn: int, k: int) -> int:
    """The PTX ISA's canonical 128-byte-swizzle layouts of a wgmma operand from its descriptor (start address
    and the leading / stride byte offsets): K-major, 8-row groups of 128-byte rows at the stride offset, K
    contiguous; MN-major, 8-K-row groups at the stride offset, 64-element MN atoms at the leading offset."""
    leading, stride = (bits >> 16 & 0x3FFF) << 4, (bits >> 32 & 0x3FFF) << 4
    assert bits >> 62 == 1  # the 128-byte swizzle
    if k_major:
        return swizzle(start + (mn // 8) * stride + (mn % 8) * 128 + k * 2)
    return swizzle(start + (k // 8) * stride + (k % 8) * 128 + (mn // 64) * leading + (mn % 64) * 2)


@pytest.mark.parametrize("k_layout", ["nd", "dn"])
@pytest.mark.parametrize("d, dv", [(64, 64), (128, 128), (64, 128)])
def test_descriptors_address_the_tiles_tma_writes(d: int, dv: int, k_layout: str) -> None:
    """Every element each wgmma reads (Q for each consumer and K step, K and V for each K step) is where TMA
    wrote it; every tile starts 1024-byte aligned, as the swizzle needs."""
    plan = plan_sm90_attention(attention(d=d, dv=dv, k_layout=k_layout))
    q, k, v = plan.q, plan.k, plan.v
    assert all(x % 1024 == 0 for x in (q.bytes, k.bytes, v.bytes, k.offset, v.offset))
    cases = []  # (operand, wgmma's first MN row in the tile, its M or N extent, K steps)
    cases += [(q, 64 * part, 64, d // 16) for part in range(plan.tile.CONSUMERS)]
    cases += [(k, 0, plan.tile.BK, d // 16), (v, 0, dv, plan.tile.BK // 16)]
    for op, mn0, extent, steps in cases:
        first = (mn0 * 128) if op.k_major else (mn0 // 64) * op.chunk_bytes  # the consumer's part, as emitted
        for s in range(steps):
            start = first + op.tile_offset(0, s)
            for mn in range(extent):
                for kk in range(16):
                    row, col = (mn0 + mn, 16 * s + kk) if op.k_major else (16 * s + kk, mn0 + mn)
                    assert wgmma_address(start, op.descriptor_bits(), op.k_major, mn, kk) == \
                        tma_address(op.chunk_bytes, row, col), (op.tensor.name, s, mn, kk)


# -- the register fragment of P -------------------------------------------------------------------------------------


def isa_accumulator(thread: int, i: int) -> tuple[int, int]:
    """PTX ISA, wgmma .m64nNk16 accumulator D (f32): row warp * 16 + groupID (+ 8 for d2, d3 of each four),
    column (i / 4) * 8 + threadID_in_group * 2 + i % 2."""
    warp, lane = thread // 32, thread % 32
    group, in_group = lane >> 2, lane % 4
    return warp * 16 + group + 8 * ((i % 4) >= 2), (i // 4) * 8 + in_group * 2 + (i & 1)


def isa_register_a(thread: int, j: int) -> tuple[int, int]:
    """PTX ISA, wgmma .m64nNk16 A in registers (.f16/.bf16), elements a0..a7 in four .b32 registers: row
    warp * 16 + groupID for a0, a1, a4, a5 and + 8 for a2, a3, a6, a7; column threadID_in_group * 2 + (j & 1),
    + 8 for a4..a7."""
    warp, lane = thread // 32, thread % 32
    group, in_group = lane >> 2, lane % 4
    return warp * 16 + group + 8 * (j in (2, 3, 6, 7)), in_group * 2 + (j & 1) + 8 * (j >= 4)


def test_accumulator_model_is_gemm_sm90s_fragment() -> None:
    for thread in range(128):
        base_row, base_col = 16 * (thread // 32) + thread % 32 // 4, 2 * (thread % 4)
        for i in range(64):
            dr, dc = fragment_offset(i)
            assert isa_accumulator(thread, i) == (base_row + dr, base_col + dc)


@pytest.mark.parametrize("bk", [64, 128])
def test_p_accumulator_is_the_register_a_of_each_key_step(bk: int) -> None:
    """For every thread, the S accumulator elements packed into A register r (low, high) of key step s are P's
    elements at A's place a_{2r}, a_{2r+1} of the 64 x 16 block of keys 16 s .. 16 s + 15."""
    for thread in range(128):
        for s in range(bk // 16):
            for r, pair in enumerate(hopper.register_a_elements(s)):
                for half, element in enumerate(pair):
                    row, col = isa_register_a(thread, 2 * r + half)
                    assert isa_accumulator(thread, element) == (row, 16 * s + col)


def _definitions(text: str) -> dict[str, str]:
    return {m.group(1): m.group(2) for m in re.finditer(r"^\s*(%\w+) = (.*)$", text, re.MULTILINE)}


def _packed(defs: dict[str, str], register: str) -> tuple[str, str]:
    """The two f32 values an i32 register was packed from (low, high), through truncf, from_elements, bitcast
    and extract."""
    word = re.match(r"vector\.extract (%\w+)\[0\]", defs[register]).group(1)
    pair = re.match(r"vector\.bitcast (%\w+) :", defs[word]).group(1)
    lo, hi = re.match(r"vector\.from_elements (%\w+), (%\w+) :", defs[pair]).groups()
    return tuple(re.match(r"arith\.truncf (%\w+) :", defs[x]).group(1) for x in (lo, hi))


@pytest.mark.parametrize("dtype", ["f16", "bf16"])
def test_the_second_wgmma_reads_p_in_register_order(dtype: str) -> None:
    """The emitted P V: P's words are the pairs of P elements the model above places (low half first), and
    each inline wgmma of key step s takes words 4 s .. 4 s + 3 as A, the accumulator of the step before, and V
    through the descriptor moved by 16 keys."""
    plan = plan_sm90_attention(attention(dtype, d=64, dv=128))
    writer = _Writer(plan)
    bk = plan.tile.BK
    p = [[f"%p{4 * j + e}" for e in range(4)] for j in range(bk // 8)]
    o = [f"%o{i}" for i in range(128 // 2)]
    words = writer.p_words(p)
    writer.issue_values_times_p(words, "%vdesc", o)
    text = writer.t.text()
    defs = _definitions(text)
    assert [_packed(defs, w) for w in words] == [(f"%p{lo}", f"%p{hi}") for s in range(bk // 16)
                                                 for lo, hi in hopper.register_a_elements(s)]
    calls = re.findall(r"(%\w+) = llvm\.inline_asm has_side_effects asm_dialect = att \"([^\"]*)\", \"[^\"]*\" "
                       r"([^:]*) :", text)
    assert len(calls) == bk // 16
    for s, (_, asm, operands) in enumerate(calls):
        assert f"m64n128k16.f32.{dtype}.{dtype}" in asm
        values = [x.strip() for x in operands.split(",")]
        acc, a, b = values[:64], values[64:68], values[68]
        assert a == words[4 * s:4 * s + 4]
        if s == 0:
            assert acc == o and b == "%vdesc"
        else:
            previous = calls[s - 1][0]
            assert all(defs[x] == f"llvm.extractvalue {previous}[{i}] : {hopper.accumulator_type(128)}"
                       for i, x in enumerate(acc))
            step = re.match(r"arith\.addi %vdesc, (%\w+) : i64", defs[b]).group(1)
            assert defs[step] == f"arith.constant {16 * s * 128 >> 4} : i64"


# -- the schedule ---------------------------------------------------------------------------------------------------

EVENTS = [  # (pattern in a line, event): what orders the pipeline
    (r"mbarrier\.try_wait\.parity %fullk", "wait K"), (r"mbarrier\.try_wait\.parity %fullv", "wait V"),
    (r"mbarrier\.try_wait\.parity %emptyk", "wait K free"), (r"mbarrier\.try_wait\.parity %emptyv", "wait V free"),
    (r"mbarrier\.arrive\.expect_tx %fullk", "expect K"), (r"mbarrier\.arrive\.expect_tx %fullv", "expect V"),
    (r"tma\.async\.load %\w+\[[^]]*\], %fullk", "load K"), (r"tma\.async\.load %\w+\[[^]]*\], %fullv", "load V"),
    (r"mbarrier\.arrive %emptyk", "free K"), (r"mbarrier\.arrive %emptyv", "free V"),
    (r"nvvm\.barrier id = ", "turn"), (r"nvvm\.barrier\.arrive id = ", "pass"), (r"nvvm\.wgmma\.fence", "fence"),
    (r"nvvm\.wgmma\.mma_async", "S"), (r"wgmma\.mma_async\.sync\.aligned", "PV"),
    (r"nvvm\.wgmma\.commit", "commit"), (r"nvvm\.wgmma\.wait\.group\.sync\.aligned 1", "wait 1"),
    (r"nvvm\.wgmma\.wait\.group\.sync\.aligned 0", "wait 0"), (r"math\.exp2", "softmax"), (r"arith\.truncf", "pack"),
]


def events(lines: list[str]) -> list[str]:
    """The pipeline's events in ``lines``, repeats of one event in a row counted once."""
    out: list[str] = []
    for line in lines:
        for pattern, event in EVENTS:
            if re.search(pattern, line) and (not out or out[-1] != event):
                out.append(event)
    return out


def regions(text: str, header: str) -> list[list[str]]:
    """The bodies of the regions whose header line matches ``header`` (by indentation)."""
    lines, out = text.splitlines(), []
    for i, line in enumerate(lines):
        if re.search(header, line):
            depth = len(line) - len(line.lstrip())
            end = next(j for j in range(i + 1, len(lines)) if lines[j].startswith(" " * depth + "}"))
            out.append(lines[i + 1:end])
    return out


def test_the_pipeline_is_fa3s_intra_warpgroup_overlap() -> None:
    """Per key tile after the first: S issued before the previous tile's P V, the wait for S alone (wait_group 1)
    frees K's slot before the softmax, the wait for P V frees V's slot after it; the first tile has no P V, the
    last P V comes after the loops; each consumer issues its wgmmas in its turn and then passes it; the producer
    loads a tile's K, then its V, each into a slot freed before."""
    text = emit_sm90_attention(attention(skv=1000, causal=True))[0].text
    loops = regions(text, r"scf\.for .* iter_args")
    assert len(loops) == 2  # without masks, then with them
    for body in loops:
        assert events(body) == ["wait K", "wait V", "turn", "fence", "S", "commit", "PV", "commit", "pass", "wait 1",
                                "free K", "softmax", "pack", "wait 0", "free V"]
    assert events(regions(text, r"%first\d+:\d+ = scf\.if")[0]) == [
        "wait K", "turn", "fence", "S", "commit", "pass", "wait 0", "free K", "softmax", "pack"]
    assert events(regions(text, r"%last\d+:\d+ = scf\.if")[0]) == [
        "wait V", "turn", "fence", "PV", "commit", "pass", "wait 0", "free V"]
    (producer,) = regions(text, r"scf\.for %it\d+ = [^(]*\{$")  # the loop that carries nothing
    assert events(producer) == ["wait K free", "expect K", "load K", "wait V free", "expect V", "load V"]


def test_two_consumers_take_turns() -> None:
    """Named barriers 1 and 2 (0 is the CTA's): each consumer waits on its own with both warpgroups' threads and
    arrives on the other's; the second consumer gives the first its first turn. One consumer, or PINGPONG off:
    no turns."""
    text = emit_sm90_attention(attention())[0].text  # the first tile, two loops, the last P V: four turns
    defs = _definitions(text)
    turns = re.findall(r"nvvm\.barrier id = (%\w+) number_of_threads = (%\w+)", text)
    passes = re.findall(r"nvvm\.barrier\.arrive id = (%\w+) number_of_threads = (%\w+)", text)
    assert len(turns) == 4 and len(passes) == 5
    assert {defs[n] for _, n in turns + passes} == {"arith.constant 256 : i32"}
    mine, other = {b for b, _ in turns}, {b for b, _ in passes}
    assert len(mine) == len(other) == 1 and mine != other
    part = re.match(r"arith\.index_cast (%\w+) : index to i32", defs[mine.pop()]).group(1)
    assert re.match(r"arith\.addi %\w+, %c1 : index", defs[part])  # consumer p waits on barrier p + 1
    part = re.match(r"arith\.index_cast (%\w+) : index to i32", defs[other.pop()]).group(1)
    assert re.match(r"arith\.subi %c2, %\w+ : index", defs[part])
    guarded = re.findall(r"scf\.if (%\w+) \{\n\s*nvvm\.barrier\.arrive [^\n]*\n\s*\}", text)
    assert len(guarded) == 1  # the second consumer's first arrival, alone
    assert re.match(r"arith\.cmpi eq, %\w+, %c1 : index", defs[guarded[0]])
    for tile in (AttentionTile(BQ=64, BK=128),):  # one consumer: no turns
        assert "nvvm.barrier" not in emit_sm90_attention(attention(), tile)[0].text


# -- decode: the split mode ------------------------------------------------------------------------------------------


DECODE_PTX = ("wgmma.mma_async", "cp.async.bulk.tensor", "mbarrier", "setmaxnreg", "fence.mbarrier_init")


def decode(dtype: str = "f16", batch: tuple[Dim, ...] = (2, 3), skv: Dim = 1000, d: int = 128,
           k_layout: str = "nd", splits: int = 0, tile: AttentionTile | None = None) -> AttentionSpec:
    """One query row over ``skv`` keys, ``splits`` key shares (0: the kernel's choice)."""
    return replace(attention(dtype, batch, 1, skv, d, k_layout=k_layout), splits=splits, tile=tile)


def check_decode(spec: AttentionSpec) -> tuple[list[Kernel], str]:
    """Emit the split mode and the combine kernel, assemble, and check: no spills, no ptxas notes, the Hopper
    instructions, a block of a producer and one consumer per batch index and share, both kernels on the same
    temporaries."""
    assert sm90_attention_problem(spec) is None
    kernels = emit_sm90_attention(spec)
    split, combine = kernels
    assert split.name == "attn_decode_sm90" and combine.name == "attn_combine"
    plan = plan_sm90_attention(spec)
    assert plan.decode and plan.tile.CONSUMERS == 1 and split.launch.block == (2 * 128, 1, 1)
    assert split.launch.grid[0] == f"{plan.splits} * {' * '.join(map(str, spec.batch)) or '1'}"
    assert split.temporaries == combine.temporaries == tuple(sm90_temporaries(spec))
    assert [t.shape for t in split.temporaries] == [(*spec.batch, plan.splits, spec.dv), (*spec.batch, plan.splits),
                                                   (*spec.batch, plan.splits)]
    ptx = compile_kernels(kernels, "sm_90a")
    used = ptxas(ptx, "sm_90a")
    assert all(r.spill_bytes == 0 for r in used.values()), used
    assert not used[split.name].messages, used[split.name].messages
    assert "Potential Performance Loss" not in ptxas_output(ptx)
    for instruction in DECODE_PTX:
        assert instruction in ptx, instruction
    dt = spec.q.dtype
    assert re.search(rf"wgmma\.mma_async\.sync\.aligned\.m64n{plan.tile.BK}k16\.f32\.{dt}\.{dt} ", ptx)
    assert re.search(rf"wgmma\.mma_async\.sync\.aligned\.m64n{spec.dv}k16\.f32\.{dt}\.{dt} \{{[^}}]*\}}, "
                     r"\{%r\d+, %r\d+, %r\d+, %r\d+\}", ptx)
    return kernels, ptx


@needs_ptxas
@pytest.mark.parametrize("k_layout", ["nd", "dn"])
@pytest.mark.parametrize("d", [64, 128])
@pytest.mark.parametrize("dtype", ["f16", "bf16"])
def test_ragged_decode_kernels_assemble(dtype: str, d: int, k_layout: str) -> None:
    check_decode(decode(dtype, (2, 3), 1000, d, k_layout, splits=8))


@needs_ptxas
@pytest.mark.parametrize("spec", [
    decode("bf16", ("b",), "skv", 128),  # dynamic keys and batch, the kernel's share count
    decode("f16", (2,), "skv", 64, "dn", splits=8),  # dynamic [d, keys] rows: aligned at launch
    decode("f16", (4,), "skv", 64, splits=1),  # one share: the whole key loop in one block
    decode("bf16", (2,), 1024, 128, "dn", splits=8, tile=AttentionTile(BK=128, STAGES=3)),
    decode("f16", (2, 3), 100, 64, splits=16),  # more shares than key tiles: empty shares
    decode("f16", (3,), 4096, 128, splits=0, tile=AttentionTile(BK=64, STAGES=4)),
], ids=["dynamic", "dynamic-dn", "one-split", "dn-bk128", "empty-shares", "default-splits"])
def test_decode_variants_assemble(spec: AttentionSpec) -> None:
    check_decode(spec)


def test_decode_takes_one_consumer_whatever_bq() -> None:
    for bq in (64, 128):
        plan = plan_sm90_attention(decode(tile=AttentionTile(BQ=bq, BK=128, STAGES=2)))
        assert plan.rows == 64 and plan.threads == 256 and plan.tile.BK == 128
    assert sm90_attention_problem(decode(tile=AttentionTile(BQ=16))) is None
    assert "shared memory" in sm90_attention_problem(decode(tile=AttentionTile(BK=128, STAGES=4)))


def test_decode_splits_as_the_spec_or_balanced() -> None:
    assert plan_sm90_attention(decode(splits=8)).splits == 8
    # 32 batch indices over 4096 keys in tiles of 64: 64 tiles, shares of equal tiles for 2 blocks an SM
    chosen = plan_sm90_attention(decode(batch=(32,), skv=4096, tile=AttentionTile(BK=64, STAGES=4))).splits
    assert 64 % chosen == 0 and 32 * chosen >= 132 and chosen <= 64


# -- the partials: where the split mode writes them and what the combine kernel makes of them -------------------


PROBE = 1 << 16


def probe_kernel(spec: AttentionSpec) -> Kernel:
    """The split mode's ids, key range and partial store, run by every consumer thread with a state read from
    a probe buffer (``probe[x] == x``): the max is ``probe[key0]``, the sum ``probe[trips]`` and O's element
    ``i`` ``probe[thread * dv / 2 + i]``, so that what lands where says which thread, element and share wrote
    it."""
    plan = plan_sm90_attention(spec)
    w = _Writer(plan)
    w.tensors["probe"] = ("%t_probe", Tensor("probe", "f32", (PROBE,)))
    t = w.t
    with t.region(w.header(w.name)):
        w.prologue()
        w.warp, w.wg = w.op("remui", w.warp, 4), w.op("divui", w.tid, 128)
        w.decode_ids()
        w.key_range(w.dim(spec.skv))
        with t.if_(w.cmp("eq", w.wg, t.const(1))):
            def probe(index: str) -> str:
                return t.value(f"memref.load %t_probe[{index}] : memref<?xf32>", "ld")
            m, total = probe(w.key0), probe(w.trips)
            base = w.op("muli", w.tid, spec.dv // 2)
            o = [probe(w.op("addi", base, i)) for i in range(spec.dv // 2)]
            w.store_partials([m, m, total, total, *o])
        t.add("gpu.return")
    launch = emit_sm90_attention(spec)[0].launch
    return Kernel(w.name, t.function_text(), replace(launch, params=w.params()))


def share_model(skv: int, bk: int, splits: int) -> list[tuple[int, int]]:
    """Each share's keys [start, end), as the split-KV kernel shares them: whole key tiles, balanced."""
    tiles = -(-skv // bk)
    span = -(-tiles // splits) * bk
    return [(s * span, min(s * span + span, skv)) for s in range(splits)]


def run_blocks(kernel: Kernel, arrays: dict[str, np.ndarray], sizes: dict[str, int]) -> None:
    from warp_simulator import Block

    block = Block(kernel, arrays, sizes)
    scope = dict(sizes, cdiv=lambda a, b: -(-a // b))
    for block_id in range(eval(kernel.launch.grid[0], scope)):
        block.run(block_id)


@pytest.mark.parametrize("spec, sizes", [
    (decode("f16", (2, 3), 1000, 64, splits=8), {}),
    (decode("bf16", ("b",), "skv", 128, splits=0), {"b": 2, "skv": 300}),
    (decode("f16", (2,), 100, 64, splits=5), {}),  # two key tiles, five shares: three empty
], ids=["ragged", "dynamic", "empty-shares"])
def test_the_partials_lie_where_the_combine_kernel_reads_them(spec: AttentionSpec, sizes: dict[str, int]) -> None:
    """Block ``b * splits + s`` writes entry ``b * splits + s`` of each temporary: the max and sum of its
    share (keys as the split-KV kernel shares them, none past the keys for an empty share) and the O row's
    column ``c`` from the consumer thread and element that hold accumulator row 0, column ``c``."""
    plan = plan_sm90_attention(spec)
    kernel = probe_kernel(spec)
    dims = {**sizes, **{t.name: 0 for t in (spec.q, spec.k, spec.v)}}
    batch = int(np.prod([sizes.get(b, b) for b in spec.batch]))
    entries = batch * plan.splits
    po, pm, pl = (np.full(entries * n, np.nan) for n in (spec.dv, 1, 1))
    arrays = {"probe": np.arange(PROBE, dtype=np.float64), "attn_partial_o": po, "attn_partial_m": pm,
              "attn_partial_l": pl}
    run_blocks(kernel, arrays, dims)
    skv = sizes.get(spec.skv, spec.skv)
    shares = share_model(skv, plan.tile.BK, plan.splits)
    holders: dict[int, list[tuple[int, int]]] = {}  # column c of accumulator row 0: (thread, element)
    for th in range(128):
        for i in range(spec.dv // 2):
            row, column = isa_accumulator(th, i)
            if row == 0:
                holders.setdefault(column, []).append((th, i))
    for entry in range(entries):
        start, end = shares[entry % plan.splits]
        assert pm[entry] == start
        assert pl[entry] == 4 * -(-max(end - start, 0) // plan.tile.BK)  # the row's four lanes' sums
        for c in range(spec.dv):
            (thread, i), = holders[c]
            assert po[entry * spec.dv + c] == (128 + thread) * spec.dv // 2 + i, (entry, c)
    if spec.splits == 5:  # the case of empty shares has them
        assert sum(end <= start for start, end in shares) == 3


@pytest.mark.parametrize("splits, skv", [(8, 1000), (5, 100), (1, 70)])
def test_the_combine_kernel_merges_the_shares_into_attention(splits: int, skv: int) -> None:
    """Partials of each share as the split mode computes them (base-2 scaled max, sum, unnormalized O; an empty
    share's -inf, 0, 0), at the entries the probe shows, merged by the split-KV combine kernel: softmax(Q K^T *
    scale) V."""
    spec = decode("f16", (2,), skv, 64, splits=splits)
    plan = plan_sm90_attention(spec)
    rng = np.random.default_rng(splits)
    q, k, v = (rng.standard_normal(shape) for shape in ((2, 64), (2, skv, 64), (2, skv, 64)))
    x = np.einsum("bd,bkd->bk", q, k) * spec.scale * np.log2(np.e)
    po, pm, pl = np.zeros((2, splits, 64)), np.full((2, splits), -np.inf), np.zeros((2, splits))
    for s, (start, end) in enumerate(share_model(skv, plan.tile.BK, splits)):
        if end > start:
            pm[:, s] = x[:, start:end].max(-1)
            p = np.exp2(x[:, start:end] - pm[:, s:s + 1])
            pl[:, s], po[:, s] = p.sum(-1), np.einsum("bk,bkd->bd", p, v[:, start:end])
    out = np.full(2 * 64, np.nan)
    arrays = {"attn_partial_o": po.ravel(), "attn_partial_m": pm.ravel(), "attn_partial_l": pl.ravel(), "o": out}
    run_blocks(emit_sm90_attention(spec)[1], arrays, {})
    s = np.einsum("bd,bkd->bk", q, k) * spec.scale
    p = np.exp(s - s.max(-1, keepdims=True))
    expected = np.einsum("bk,bkd->bd", p / p.sum(-1, keepdims=True), v)
    np.testing.assert_allclose(out.reshape(2, 64), expected, atol=2e-3, rtol=2e-3)


def test_decode_dispatch_reads_the_specs_tile_and_splits() -> None:
    """The spec's BK, STAGES and SPLITS reach the split mode (grid = SPLITS x batch); the combine kernel reads
    as many shares."""
    spec = decode(splits=16, tile=AttentionTile(BK=128, STAGES=3))
    split, combine = _attention(spec, "sm_90a")
    plan = plan_sm90_attention(spec)
    assert split.launch.grid[0] == "16 * 2 * 3" and plan.tile.BK == 128 and plan.tile.STAGES == 3
    assert split.launch.shared_bytes == 64 * 128 * 2 + 3 * 2 * 128 * 128 * 2
    assert combine.temporaries == split.temporaries and combine.temporaries[1].shape == (2, 3, 16)


@needs_ptxas
def test_a_dynamic_dn_decodes_three_kernels_assemble() -> None:
    """The split mode, the split-KV split kernel of as many shares and the combine kernel, without spills."""
    kernels = _attention(decode("bf16", (4,), "kv", 128, "dn", tile=AttentionTile(BK=128, STAGES=3)), "sm_90a")
    assert [k.name for k in kernels] == ["attn_decode_sm90", "attn_decode_unaligned", "attn_combine"]
    used = ptxas(compile_kernels(kernels, "sm_90a"), "sm_90a")
    assert len(used) == 3 and all(r.spill_bytes == 0 for r in used.values()), used
