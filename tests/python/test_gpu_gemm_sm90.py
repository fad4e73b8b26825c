"""The sm_90a GEMM kernel (TMA + mbarrier + wgmma, warp-specialized): what it refuses, its launch, and its PTX
assembled by ptxas with no spills, setmaxnreg in force and the Hopper instructions present."""

from __future__ import annotations

import dataclasses
import importlib.util
import re
import struct
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from prism.codegen.gpu import ptx
from prism.codegen.gpu.gemm_sm90 import (
    SHARED_LIMIT,
    _plan,
    emit_gemm_sm90,
    fragment_offset,
    operand_layout,
    resident_blocks,
    tma_problem,
)
from prism.codegen.gpu.manifest import evaluate
from prism.codegen.gpu.spec import GemmSpec, GemmTile, Kernel, Operand, ScalarFn, Tensor
from prism.infra.errors import UnsupportedOp

needs_ptxas = pytest.mark.skipif(ptx.ptxas_path() is None, reason="ptxas is not on PATH")

TILE = GemmTile(BM=128, BN=128, BK=64, WM=64, WN=128, STAGES=4)
HOPPER_PTX = ("wgmma.mma_async", "cp.async.bulk.tensor", "mbarrier.try_wait.parity", "setmaxnreg",
              "fence.mbarrier_init")


def gemm(m=80, n=520, k=1000, dtype="f16", b_layout="kn", a_layout="mk", out="f32", tile=TILE, batch=(),
         **extra) -> GemmSpec:
    """A GEMM spec; A and B shaped by their layouts, with the batch dimensions in front."""
    a = Tensor("a", dtype, (*batch, m, k) if a_layout == "mk" else (*batch, k, m))
    b = Tensor("b", dtype, (*batch, k, n) if b_layout == "kn" else (*batch, n, k))
    if extra.get("b2") is True:
        extra["b2"] = Tensor("b2", dtype, b.shape)
    c = Tensor("c", out, (*batch, m, n))
    return GemmSpec("gemm", a, b, c, m, n, k, batch=batch, a_layout=a_layout, b_layout=b_layout, tile=tile,
                    **extra)


def assemble(kernels: list[Kernel]) -> tuple[str, dict[str, ptx.KernelResources], str]:
    """PTX for sm_90a, ptxas's resources and its whole -v output: its notes on wgmma and setmaxnreg come as
    info lines before the kernel's own, which the resources do not keep."""
    text = ptx.compile_kernels(kernels, chip="sm_90a")
    resources = ptx.ptxas(text, "sm_90a")
    with tempfile.TemporaryDirectory() as tmp:
        src = Path(tmp) / "k.ptx"
        src.write_text(text)
        done = subprocess.run([ptx.ptxas_path(), "-arch=sm_90a", "-v", str(src), "-o", str(Path(tmp) / "k.o")],
                              capture_output=True, text=True, check=True)
    return text, resources, done.stdout + done.stderr


def check_kernel(spec: GemmSpec) -> tuple[str, ptx.KernelResources]:
    """Emit, assemble and check one kernel: no spills, setmaxnreg acting, wgmma not serialized, the Hopper
    instructions present, the dynamic shared memory within the block's limit."""
    assert tma_problem(spec) is None
    (kernel,) = emit_gemm_sm90(spec)
    text, resources, notes = assemble([kernel])
    used = resources[kernel.name]
    assert used.spill_bytes == 0, used
    assert not used.messages, used.messages
    # ptxas notes "'setmaxnreg' ignored" and "wgmma.mma_async instructions are serialized" as such
    assert "Potential Performance Loss" not in notes, notes
    for instruction in HOPPER_PTX:
        assert instruction in text, instruction
    assert f".maxnreg {kernel.max_registers}" in text
    assert kernel.launch.shared_bytes + used.shared_bytes <= SHARED_LIMIT
    return text, used


# -- refusals ---------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("spec, reason", [
    (gemm(m=77, n=513), "not a multiple of 16 bytes"),  # a row of 513 f16 is 1026 bytes
    (gemm(k=1001), "not a multiple of 16 bytes"),
    (gemm(dtype="f32"), "takes f16 or bf16"),
    (gemm(tile=GemmTile(BM=128, BN=128, BK=32, WM=64, WN=128)), "BK=32"),
    (gemm(tile=GemmTile(BM=512, BN=128, BK=64, WM=256, WN=128)), "BM=512"),
    (gemm(tile=GemmTile(BM=256, BN=128, BK=64, WM=64, WN=128)), "one or two consumer warpgroups"),
    (gemm(tile=GemmTile(BM=128, BN=256, BK=128, WM=64, WN=256, STAGES=4)), "shared memory"),
    (gemm(tile=GemmTile(BM=128, BN=256, BK=64, WM=128, WN=256)), "accumulator registers"),
    (gemm(tile=GemmTile(BM=128, BN=128, BK=64, WM=64, WN=128, SPLITK=0)), "SPLITK=0"),
    (gemm(tile=GemmTile(BM=128, BN=128, BK=64, WM=64, WN=128, SPLITK=65)), "SPLITK=65"),
    (gemm(tile=GemmTile(BM=128, BN=128, BK=64, WM=64, WN=128, STAGES=1)), "STAGES=1"),
])
def test_refuses_what_tma_and_wgmma_cannot_do(spec: GemmSpec, reason: str) -> None:
    problem = tma_problem(spec)
    assert problem is not None and reason in problem, problem
    with pytest.raises(UnsupportedOp, match="wgmma"):
        emit_gemm_sm90(spec)


def test_accepts_aligned_ragged_sizes() -> None:
    assert tma_problem(gemm(m=77, n=520, k=1000)) is None
    assert tma_problem(gemm(m=77, n=520, k=1000, b_layout="nk", dtype="bf16")) is None


# -- layouts -----------------------------------------------------------------------------------------------------


@pytest.mark.parametrize("n", [8, 64, 256])
def test_fragment_covers_the_block_once(n: int) -> None:
    """The 128 threads' n/2 elements each fill a 64 x n wgmma block, every place exactly once."""
    seen = set()
    for thread in range(128):
        warp, lane = thread // 32, thread % 32
        for i in range(n // 2):
            dr, dc = fragment_offset(i)
            seen.add((16 * warp + lane // 4 + dr, 2 * (lane % 4) + dc))
    assert seen == {(r, c) for r in range(64) for c in range(n)}


def tma_place(op, row: int, k: int) -> int:
    """Where TMA's chunked boxes put element (row, k) of an operand's tile (bytes, before the swizzle)."""
    if op.k_major:
        return (k // 64) * op.chunk_bytes + row * 128 + (k % 64) * 2
    return (row // 64) * op.chunk_bytes + k * 128 + (row % 64) * 2


@pytest.mark.parametrize("a_layout", ["mk", "km"])
@pytest.mark.parametrize("b_layout", ["kn", "nk"])
@pytest.mark.parametrize("bk", [64, 128])
def test_descriptors_address_the_tiles_tma_writes(a_layout: str, b_layout: str, bk: int) -> None:
    """Each wgmma's start is its first element's place; the stride offset steps 8 rows (K-major) or 8 K
    (MN-major), the leading offset one 64-wide chunk of an MN-major tile."""
    tile = GemmTile(BM=128, BN=128, BK=bk, WM=64, WN=128, STAGES=2)
    for op in operand_layout(gemm(a_layout=a_layout, b_layout=b_layout, tile=tile)):
        bits = op.descriptor_bits()
        leading, stride = (bits >> 16 & 0x3FFF) << 4, (bits >> 32 & 0x3FFF) << 4
        assert bits >> 62 == 1  # the 128-byte swizzle
        for row in range(0, op.rows, 64):
            for kstep in range(bk // 16):
                k = 16 * kstep
                assert op.tile_offset(row, kstep) == tma_place(op, row, k)
                if op.k_major:
                    assert tma_place(op, row + 8, k) - tma_place(op, row, k) == stride
                else:
                    assert tma_place(op, row, k + 8) - tma_place(op, row, k) == stride
                    if row + 64 < op.rows:
                        assert tma_place(op, row + 64, k) - tma_place(op, row, k) == leading


# -- the launch ---------------------------------------------------------------------------------------------------


def test_launch_tensor_maps_and_grid() -> None:
    spec = gemm(m="m", n=520, k=1000, b_layout="nk", batch=(3,))
    (kernel,) = emit_gemm_sm90(spec)
    launch = kernel.launch
    assert launch.grid == ("5", "cdiv(m, 128)", "3")
    assert launch.block == (384, 1, 1)
    assert launch.shared_bytes == 4 * (128 * 64 + 128 * 64) * 2
    a, b = (p.tensormap for p in launch.params[:2])
    assert [p.kind for p in launch.params] == ["tensormap", "tensormap", "tensor", "size"]
    assert a.dims == ("1000", "m", "3") and a.strides == ("2000", "m * 2000") and a.box == (64, 128, 1)
    assert b.dims == ("1000", "520", "3") and b.strides == ("2000", "1040000") and b.box == (64, 128, 1)
    assert a.swizzle == b.swizzle == 128
    assert launch.when is None
    assert kernel.max_registers == 168  # 128 x 40 + 2 x 128 x 232 registers over 384 threads


def test_dynamic_rows_are_checked_at_launch() -> None:
    (kernel,) = emit_gemm_sm90(gemm(m=64, n="n", k="k"))
    assert kernel.launch.when == "k // 8 * 8 == k and n // 8 * 8 == n"
    km = gemm(a_layout="km")
    (kernel,) = emit_gemm_sm90(km)
    assert kernel.launch.params[0].tensormap.dims == ("80", "1000")  # A stored [k, m]: m innermost


# -- kernels through ptxas --------------------------------------------------------------------------------------


@needs_ptxas
@pytest.mark.parametrize("dtype", ["f16", "bf16"])
@pytest.mark.parametrize("b_layout", ["kn", "nk"])
def test_kernel_assembles(dtype: str, b_layout: str) -> None:
    text, used = check_kernel(gemm(dtype=dtype, b_layout=b_layout, out=dtype))
    assert re.search(rf"wgmma\.mma_async\.sync\.aligned\.m64n128k16\.f32\.{dtype}\.{dtype}", text)
    # B read transposed (N-major) from a [k, n] tensor, straight (K-major) from [n, k]; A K-major
    trans_b = "1" if b_layout == "kn" else "0"
    assert re.search(rf"p, 1,\s*1, 0,\s*{trans_b};", text)
    # pairs of adjacent columns stored as one 4-byte store: 2 per n8 block of the 64x128 fragment
    assert text.count("st.global.b32") == 128 // 8 * 2 and "st.global.b16" not in text
    assert used.registers <= 168


@needs_ptxas
def test_setmaxnreg_needs_the_declared_register_count() -> None:
    """Without ``.maxnreg`` ptxas ignores setmaxnreg and serializes the wgmmas: the check above can fail."""
    (kernel,) = emit_gemm_sm90(gemm())
    _, _, notes = assemble([dataclasses.replace(kernel, max_registers=None)])
    assert "'setmaxnreg' ignored" in notes and "serialized" in notes


@needs_ptxas
def test_unknown_row_length_stores_elements() -> None:
    """With N dynamic and B [n, k] (no alignment known of C's rows) each element is stored alone."""
    text, _ = check_kernel(gemm(n="n", b_layout="nk", out="f16"))
    assert text.count("st.global.b16") == 128 // 8 * 4 and "st.global.b32" not in text


@needs_ptxas
def test_transposed_a_and_dynamic_m() -> None:
    text, _ = check_kernel(gemm(m="m", a_layout="km", dtype="bf16"))
    assert re.search(r"p, 1,\s*1, 1,\s*1;", text)


@needs_ptxas
def test_batched_with_init_and_epilogue() -> None:
    bias = Tensor("bias", "f32", (520,))
    residual = Tensor("res", "f16", (2, "m", 520))

    def emit(tb, values, point):
        acc, b, r = values
        s = tb.value(f"arith.addf {acc}, {b} : f32")
        r32 = tb.value(f"arith.extf {r} : f16 to f32")
        return tb.value(f"arith.addf {s}, {r32} : f32")

    epilogue = ScalarFn((Operand("acc"), Operand("tensor", bias, (2,)), Operand("tensor", residual, (0, 1, 2))),
                        "f32", emit)
    spec = gemm(m="m", b_layout="nk", out="f16", batch=(2,), init=Tensor("c", "f16", (2, "m", 520)),
                epilogue=epilogue)
    text, _ = check_kernel(spec)
    assert "cp.async.bulk.tensor.3d" in text


@needs_ptxas
def test_dual_gemm() -> None:
    def emit(tb, values, point):
        return tb.value(f"arith.mulf {values[0]}, {values[1]} : f32")

    spec = gemm(b2=True, out="bf16", dtype="bf16", epilogue=ScalarFn((Operand("acc"), Operand("acc2")), "f32", emit),
                tile=GemmTile(BM=128, BN=128, BK=64, WM=64, WN=128, STAGES=3))
    text, _ = check_kernel(spec)
    assert text.count("wgmma.mma_async") % 2 == 0


@needs_ptxas
@pytest.mark.parametrize("tile", [
    GemmTile(BM=128, BN=256, BK=64, WM=64, WN=256, STAGES=4),  # two consumers, 128 accumulators each
    GemmTile(BM=128, BN=64, BK=64, WM=128, WN=64, STAGES=5),  # one consumer, two m64 blocks
    GemmTile(BM=64, BN=128, BK=128, WM=64, WN=64, STAGES=3),  # consumers split N; K in two chunks
])
def test_tile_shapes(tile: GemmTile) -> None:
    check_kernel(gemm(m=4096, n=4096, k=4096, tile=tile))


@needs_ptxas
def test_two_batch_dimensions_init_value_and_a_row_scale() -> None:
    """Batch dimensions (2, h) flattened into the grid's z and the tensor maps' third dimension; the epilogue
    reads a scale per (outer batch index, row)."""
    scale = Tensor("scale", "bf16", (2, 80))

    def emit(tb, values, point):
        s = tb.value(f"arith.extf {values[1]} : bf16 to f32")
        return tb.value(f"arith.mulf {values[0]}, {s} : f32")

    spec = gemm(dtype="bf16", a_layout="km", b_layout="nk", out="bf16", batch=(2, "h"), init_value=1.5,
                epilogue=ScalarFn((Operand("acc"), Operand("tensor", scale, (0, 2))), "f32", emit))
    (kernel,) = emit_gemm_sm90(spec)
    assert kernel.launch.grid[2] == "2 * h"
    assert kernel.launch.params[0].tensormap.dims == ("80", "1000", "2 * h")
    text, _ = check_kernel(spec)
    assert str(int.from_bytes(struct.pack("<f", 1.5), "little")) in text  # the accumulators start at 1.5


# -- split-K -----------------------------------------------------------------------------------------------------

SPLIT_TILE = GemmTile(BM=64, BN=128, BK=64, WM=64, WN=128, STAGES=4, SPLITK=8)


@needs_ptxas
@pytest.mark.parametrize("spec", [
    gemm(m=1, n=4096, k=4096, b_layout="nk", out="bf16", dtype="bf16", tile=SPLIT_TILE),
    gemm(m=16, n="n", k="k", tile=dataclasses.replace(SPLIT_TILE, SPLITK=16)),
    gemm(m=128, n=4096, k=4096, b_layout="nk", out="f16", init=Tensor("c0", "f32", (128, 4096)),
         tile=GemmTile(BM=128, BN=128, BK=64, WM=64, WN=128, STAGES=4, SPLITK=4)),
    gemm(m=16, n=520, k=104, batch=(3,), init_value=0.5, tile=dataclasses.replace(SPLIT_TILE, SPLITK=16)),
    gemm(m=16, n=512, k=4096, b2=True, out="f16", tile=GemmTile(BM=64, BN=128, BK=64, WM=64, WN=64, SPLITK=4)),
    gemm(m=512, n=1024, k=2048, b_layout="nk", tile=GemmTile(BM=128, BN=256, BK=64, WM=64, WN=256, SPLITK=4)),
], ids=["1x4096x4096", "dynamic", "128x4096x4096-init", "empty-shares-batched", "dual-two-consumers",
        "128-accumulators"])
def test_split_k_kernel(spec: GemmSpec) -> None:
    """One launch: grid z walks batch x shares; the partials ``[products * SPLITK, batch..., M, N]`` and one
    counter per output tile are temporaries and parameters; only the consumers store partials, fence, meet at
    named barrier 1 and count (one atomic add); the producer never waits there; setmaxnreg still acts."""
    text, _ = check_kernel(spec)
    (kernel,) = emit_gemm_sm90(spec)
    tile, split = spec.tile, spec.tile.SPLITK
    consumers = (tile.BM // tile.WM) * (tile.BN // tile.WN)
    products = 2 if spec.b2 is not None else 1
    partials, counters = kernel.temporaries
    padded = -(-spec.n // tile.BN) * tile.BN if isinstance(spec.n, int) else f"cdiv({spec.n}, {tile.BN}) * {tile.BN}"
    assert partials.dtype == "f32" and partials.shape == (products * split, *spec.batch, spec.m, padded)
    assert counters.dtype == "i32" and counters.shape[:-2] == spec.batch
    assert kernel.launch.grid[2] == (f"{spec.batch[0]} * {split}" if spec.batch else str(split))
    assert [p.name for p in kernel.launch.params if p.kind == "tensor"][-2:] == [partials.name, counters.name]
    assert kernel.launch.shared_bytes == tile.STAGES * sum(op.bytes for op in operand_layout(spec)) + 16
    assert text.count("atom.global.add.u32") == 1 and text.count("fence.acq_rel.gpu") == 2
    assert len(re.findall(rf"bar\.sync\s+1, {128 * consumers};", text)) == 2
    assert len(re.findall(r"bar\.sync\s+0;", text)) == 1  # the mbarrier init's, before the roles split


def test_split_k_workspace_addressing() -> None:
    """In the kernel's text: every consumer thread stores its m64nWN fragment's pairs into its share's slab
    (8-byte stores of f32 pairs, N even), the last block loads SPLITK slabs in a loop of SPLITK steps, and the
    counter is added to and reset by the first consumer thread only, inside the consumers' branch."""
    spec = gemm(m=16, n=4096, k=4096, b_layout="nk", tile=SPLIT_TILE)
    (kernel,) = emit_gemm_sm90(spec)
    text = kernel.text
    pairs = SPLIT_TILE.WM * SPLIT_TILE.WN // 128 // 2
    assert text.count("vector.store") == 2 * pairs  # the partials, then C (f32) in the last block
    assert len(re.findall(r"vector\.store .*memref<\?xf32>, vector<2xf32>", text)) == 2 * pairs
    assert len(re.findall(r"vector\.load .*\{alignment = 8\} : memref<\?xf32>, vector<2xf32>", text)) == pairs
    assert re.search(rf"scf\.for %s\w* = %c0 to %c{spec.tile.SPLITK} step %c1", text)
    consumer = text.index("nvvm.setmaxregister increase")
    for op in ("memref.atomic_rmw addi", "nvvm.barrier id", 'llvm.fence syncscope("device") acq_rel'):
        assert text.index(op) > consumer, op
    assert re.search(r"arith\.cmpi eq, %tid\w*, %c128 : index", text)
    assert re.search(r"memref\.store %zero\w*, %t_\w+_counters\[%tile\w*\] : memref<\?xi32>", text)


# -- persistent kernels --------------------------------------------------------------------------------------------

PERSISTENT_TILE = dataclasses.replace(TILE, PERSISTENT=1)


def run_script_evaluate():
    """benchmarks/gpu/run.py's expression evaluator (the launcher's reading of a manifest's grid)."""
    path = Path(__file__).resolve().parents[2] / "benchmarks" / "gpu" / "run.py"
    spec = importlib.util.spec_from_file_location("gpu_run", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules["gpu_run"] = module
    spec.loader.exec_module(module)
    return module.evaluate


@needs_ptxas
@pytest.mark.parametrize("spec", [
    gemm(tile=PERSISTENT_TILE),
    gemm(m=4096, n=4096, k=4096, dtype="bf16", b_layout="nk", out="bf16",
         tile=dataclasses.replace(PERSISTENT_TILE, GROUP_M=8)),
    gemm(m=200, n=520, k=1000, a_layout="km", tile=dataclasses.replace(PERSISTENT_TILE, GROUP_M=4)),
    gemm(m="m", n="n", k="k", dtype="bf16", tile=dataclasses.replace(PERSISTENT_TILE, GROUP_M=4)),
    gemm(m=300, n=520, k=1000, batch=(3,), init_value=0.5, tile=dataclasses.replace(PERSISTENT_TILE, GROUP_M=2)),
    gemm(m=16, n=520, k=104, batch=(3,), tile=GemmTile(BM=64, BN=128, BK=64, WM=64, WN=128, STAGES=4,
                                                       SPLITK=16, PERSISTENT=1)),
    gemm(m=200, n=512, k=4096, b2=True, out="f16", tile=GemmTile(BM=128, BN=128, BK=64, WM=64, WN=128,
                                                                 PERSISTENT=1, GROUP_M=4)),
    gemm(m=512, n=1024, k=2048, b_layout="nk", init=Tensor("c0", "f32", (512, 1024)),
         tile=GemmTile(BM=128, BN=256, BK=64, WM=64, WN=256, STAGES=3, PERSISTENT=1)),
], ids=["f16", "bf16-grouped", "ragged-km", "dynamic", "batched", "split-k-empty-shares", "dual", "init-wide"])
def test_persistent_kernel(spec: GemmSpec) -> None:
    """0 spills with setmaxnreg acting; one block a resident slot walking the tiles by grid x; the consumers free
    each tile's last slot (a second arrive besides the K loop's) so that the producer runs ahead."""
    text, _ = check_kernel(spec)
    (kernel,) = emit_gemm_sm90(spec)
    assert kernel.launch.grid[1:] == ("1", "1")
    assert "%nctaid.x" in text
    assert kernel.text.count("nvgpu.mbarrier.arrive ") == 2
    plain = emit_gemm_sm90(dataclasses.replace(spec, tile=dataclasses.replace(spec.tile, PERSISTENT=0)))[0]
    assert plain.text.count("nvgpu.mbarrier.arrive ") == 1 and "gpu.grid_dim" not in plain.text


def test_persistent_grid_is_the_tiles_up_to_the_resident_blocks() -> None:
    """The grid is min(tiles, SMs x blocks an SM holds): tiles over batch x shares x M tiles x N tiles; folded
    where static, else an expression that the manifest's evaluator and the launcher's agree on."""
    (small,) = emit_gemm_sm90(gemm(tile=PERSISTENT_TILE))  # 1 x 5 tiles
    assert small.launch.grid == ("5", "1", "1")
    (square,) = emit_gemm_sm90(gemm(m=4096, n=4096, k=4096, tile=PERSISTENT_TILE))
    assert square.launch.grid == ("132", "1", "1")  # 1024 tiles; 132 SMs of one block (128 KiB of ring)
    assert resident_blocks(_plan(gemm(tile=PERSISTENT_TILE))) == 132
    # 32 KiB of ring would let 6 blocks share an SM, but setmaxnreg's split takes 256 x 136 of the 64 Ki registers
    small_tile = GemmTile(BM=64, BN=64, BK=64, WM=64, WN=64, STAGES=2, PERSISTENT=1)
    assert resident_blocks(_plan(gemm(tile=small_tile))) == 132
    (dynamic,) = emit_gemm_sm90(gemm(m="m", n="n", k="k", batch=("h",),
                                     tile=dataclasses.replace(PERSISTENT_TILE, SPLITK=2)))
    grid = dynamic.launch.grid[0]
    assert grid.startswith("min(")
    launcher = run_script_evaluate()
    for sizes in ({"m": 1, "n": 8, "k": 64, "h": 1}, {"m": 1000, "n": 520, "k": 64, "h": 3},
                  {"m": 4096, "n": 4096, "k": 64, "h": 2}):
        tiles = -(-sizes["m"] // 128) * -(-sizes["n"] // 128) * sizes["h"] * 2
        assert evaluate(grid, sizes) == launcher(grid, sizes) == min(tiles, 132), sizes


class _Barrier:
    """An mbarrier: ``arrivals`` a phase; a wait for parity ``p`` passes once the phase of that parity before the
    current one completed (a fresh barrier counts its previous phase, parity 1, as complete)."""

    def __init__(self, arrivals: int) -> None:
        self.arrivals, self.count, self.completed = arrivals, 0, 0

    def arrive(self) -> None:
        self.count += 1
        if self.count == self.arrivals:
            self.count, self.completed = 0, self.completed + 1

    def passes(self, parity: int) -> bool:
        return parity != self.completed % 2


def _ring_run(steps: list[int], stages: int, consumers: int, free_last: bool = True) -> list[list[int]]:
    """The persistent kernel's ring protocol over tiles of ``steps`` K steps each, as the kernel writes it: slot
    ``it % stages``, the producer waiting for parity ``(it // stages & 1) ^ 1`` of the empty barrier and a consumer
    for ``it // stages & 1`` of the full one, the iteration count going on across tiles; a consumer frees the slot
    before from a tile's second step, and the tile's last slot after it. Returns the iterations each consumer read
    per tile; raises on a deadlock or on a slot read with another iteration's data. Without ``free_last``, the
    consumers keep each tile's last slot (as the one-tile kernel may)."""
    full, empty = [_Barrier(1) for _ in range(stages)], [_Barrier(consumers) for _ in range(stages)]
    slots = [None] * stages

    def producer():
        it = 0
        for count in steps:
            for _ in range(count):
                slot = it % stages
                yield lambda s=slot, p=(it // stages & 1) ^ 1: empty[s].passes(p)
                slots[slot] = it
                full[slot].arrive()
                it += 1

    def consumer(read: list[list[int]]):
        base = 0
        for count in steps:
            read.append([])
            for kt in range(count):
                it = base + kt
                slot = it % stages
                yield lambda s=slot, p=it // stages & 1: full[s].passes(p)
                assert slots[slot] == it, (slots[slot], it)
                read[-1].append(it)
                if kt > 0:
                    empty[(it + stages - 1) % stages].arrive()
            if count and free_last:
                empty[(base + count - 1) % stages].arrive()
            base += count

    reads = [[] for _ in range(consumers)]
    agents = [producer()] + [consumer(r) for r in reads]
    waiting = {i: None for i in range(len(agents))}
    while waiting:
        moved = False
        for i in list(waiting):
            if waiting[i] is None or waiting[i]():
                moved = True
                try:
                    waiting[i] = next(agents[i])
                except StopIteration:
                    del waiting[i]
        assert moved, "deadlock"
    return reads


@pytest.mark.parametrize("steps", [[4], [1, 1, 1, 1, 1], [7, 0, 3, 0, 0, 5, 2], [2] * 9, [16, 1, 16]], ids=str)
@pytest.mark.parametrize("stages", [2, 3, 4])
def test_persistent_ring_phases_continue_across_tiles(steps: list[int], stages: int) -> None:
    """Tiles of any K steps (split-K's empty shares among them) go through the ring without a deadlock, every
    consumer reading each tile's iterations in order from the slots the producer filled for them."""
    reads = _ring_run(steps, stages, consumers=2)
    first = [sum(steps[:i]) for i in range(len(steps))]
    want = [list(range(f, f + n)) for f, n in zip(first, steps, strict=True)]
    assert reads == [want, want]


def test_persistent_ring_needs_the_last_slot_freed() -> None:
    """Without freeing a tile's last slot, the producer waits forever once the ring wraps: the model sees it."""
    with pytest.raises(AssertionError, match="deadlock"):
        _ring_run([3, 3, 3], stages=2, consumers=2, free_last=False)


@needs_ptxas
def test_a_split_dynamic_gemm_takes_only_size_symbols() -> None:
    """Split-K's counters are shaped by expressions of the sizes (``cdiv(m, BM)``); the kernel takes the symbols
    alone, as a launcher binds them (an expression among its size parameters cannot be bound)."""
    spec = gemm(m="m", k="k", tile=GemmTile(BM=64, BN=128, BK=64, WM=64, WN=128, STAGES=4, SPLITK=4))
    kernel, = emit_gemm_sm90(spec)
    sizes = [p.name for p in kernel.launch.params if p.kind == "size"]
    assert sizes and all(name.isidentifier() for name in sizes), sizes
    assert any(not isinstance(d, int) and not d.isidentifier() for t in kernel.temporaries for d in t.shape)
    check_kernel(spec)
    from prism.codegen.gpu.gemm import emit_gemm
    for k in emit_gemm(gemm(m="m", k="k", tile=GemmTile(BM=64, BN=64, BK=32, WM=32, WN=32, STAGES=3, SPLITK=4)),
                       "sm_80"):
        assert all(p.name.isidentifier() for p in k.launch.params if p.kind == "size"), k.name
