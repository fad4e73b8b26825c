"""The resource model against the assembler: for every kernel of the GPU bundle (H200 and A100, f16) and for GEMM
space points, ptxas's shared memory (static + the launch's dynamic bytes) is the model's exactly, its register
count lies in the model's band (for the GEMM kernels: at most the allotment they declare as .maxnreg, at least
its floor), and nothing spills."""

from __future__ import annotations

import random
import sys
from contextlib import contextmanager

import numpy as np
import pytest

from conftest import REPO
from prism.codegen.gpu import GpuLowering
from prism.codegen.gpu import resources as res
from prism.codegen.gpu.gemm import gemm_tile_allotment
from prism.codegen.gpu.gemm_sm90 import wgmma_problem
from prism.codegen.gpu.kernels import _gemm
from prism.codegen.gpu.ptx import compile_kernels, ptxas, ptxas_path
from prism.codegen.gpu.spec import GemmSpec, GemmTile, Tensor
from prism.search.space import Contraction, fix_shape, points, shape_exponents
from prism.targets import get_target
from prism.targets.nvidia_registers import gemm_allotment, register_cap

sys.path[:0] = [str(REPO / "benchmarks" / "gpu"), str(REPO / "benchmarks")]
import build  # noqa: E402  (the bundle's workloads live with the benchmarks)

pytestmark = pytest.mark.skipif(ptxas_path() is None, reason="ptxas is not on PATH")

TARGETS = {"h200": "sm_90a", "a100": "sm_80"}
SWEEP_POINTS = 20


@contextmanager
def _recorded_steps():
    """Every planned step the GPU lowering emits, with its kernels, while the block runs."""
    found: list = []
    emit = GpuLowering._emit_step

    def recording(self, step):
        kernels = emit(self, step)
        found.append((step, kernels))
        return kernels

    GpuLowering._emit_step = recording
    try:
        yield found
    finally:
        GpuLowering._emit_step = emit


def _spec_of(step, kernel):
    """The spec a kernel was emitted from (a size class's GEMM kernel: the class's tile)."""
    spec = step.spec
    return res.tile_of(spec, kernel.name, step.classes) if isinstance(spec, GemmSpec) else spec


def _build(target: str) -> list[tuple[str, str, object, res.Assembled, res.Resources]]:
    """Per kernel of the f16 bundle for ``target``: its unit, name, spec, what ptxas says and the prediction."""
    import prism

    chip, rows = TARGETS[target], []
    for source, dtype in build.selected([], ["f16"]):
        unit = f"{source.name}-{dtype}"
        with _recorded_steps() as steps:
            ptx = prism.compile(build.retype(source.text, source.base, dtype), target=target, emit="ptx").ptx_text
        kernels = [k for _, ks in steps for k in ks]
        found = res.assembled(ptx, chip, kernels)
        for step, ks in steps:
            for kernel in ks:
                spec = _spec_of(step, kernel)
                rows.append((unit, kernel.name, spec, found[kernel.name], res.predict(spec, chip, kernel)))
    return rows


@pytest.fixture(scope="session")
def bundles():
    cache: dict[str, list] = {}

    def get(target: str) -> list:
        if target not in cache:
            cache[target] = _build(target)
        return cache[target]

    return get


@pytest.mark.parametrize("target", sorted(TARGETS))
def test_bundle_kernels_match_the_model(bundles, target):
    rows = bundles(target)
    kinds = {_kind(spec, TARGETS[target]) for _, _, spec, _, _ in rows}
    assert {"attention", "rows"} <= kinds and kinds & {"wgmma", "mma"}, kinds
    wrong = [(unit, name, got, want) for unit, name, spec, got, want in rows
             if got.shared_bytes != want.shared_bytes or not want.admits(got.registers) or got.spill_bytes]
    assert not wrong, "\n".join(f"{u} {n}: ptxas {g} model {w}" for u, n, g, w in wrong)


def _kind(spec, chip: str) -> str:
    if isinstance(spec, GemmSpec):
        return res.gemm_kernel(spec, chip)[0]
    return {"AttentionSpec": "attention", "RowSpec": "rows"}.get(type(spec).__name__, type(spec).__name__)


def _space_points(target: str, dtype: str, mnk: tuple[int, int, int], count: int, seed: int) -> list[GemmTile]:
    """``count`` points of the GEMM space of an m x n x k ``dtype`` contraction on ``target``, drawn with ``seed``."""
    size = 4 if dtype == "f32" else 2
    op = Contraction(roles=("m", "n", "k"), operand_dims=((0, 2), (2, 1)), extents=mnk, elem_bytes=(size, size),
                     acc_bytes=4, input_type=dtype)
    space = get_target(target).space(op)
    domain = space.universe_set()
    for group, _ in space.groups:
        domain = domain.intersect(space.group_set(group))
    found = sorted(points(fix_shape(space, domain, shape_exponents(op))), key=str)
    random.Random(seed).shuffle(found)
    keys = ("BM", "BN", "BK", "WM", "WN", "STAGES", "SPLITK")
    return [GemmTile(**{k: space.value_of(p)[k] for k in keys}) for p in found[:count]]


def _check_tiles(target: str, dtype: str, mnk: tuple[int, int, int], tiles: list[GemmTile]) -> list[str]:
    """Each tile's GEMM kernels assembled and held to the model; what disagrees."""
    chip, (m, n, k) = TARGETS[target], mnk
    a, b, c = Tensor("a", dtype, (m, k)), Tensor("b", dtype, (k, n)), Tensor("c", dtype, (m, n))
    wrong = []
    for tile in tiles:
        spec = GemmSpec("g", a, b, c, m, n, k, tile=tile)
        kernels = _gemm(spec, chip, lambda message: None)
        found = res.assembled(compile_kernels(kernels, chip), chip, kernels)
        for kernel in kernels:
            got, want = found[kernel.name], res.predict(spec, chip, kernel)
            if got.shared_bytes != want.shared_bytes or not want.admits(got.registers) or got.spill_bytes:
                wrong.append(f"{tile} {kernel.name}: ptxas {got} model {want}")
    return wrong


@pytest.mark.parametrize("target", sorted(TARGETS))
def test_space_points_match_the_model(target):
    """Tensor-core GEMM tiles of the space (wgmma on the H200, mma.sync on the A100; SPLITK among the knobs):
    shared memory exact, registers within the declared allotment, no spills."""
    tiles = _space_points(target, "f16", (1024, 1024, 1024), SWEEP_POINTS, seed=2026)
    assert len(tiles) == SWEEP_POINTS
    wrong = _check_tiles(target, "f16", (1024, 1024, 1024), tiles)
    assert not wrong, "\n".join(wrong)


@pytest.mark.parametrize("target", sorted(TARGETS))
def test_element_loaded_space_points_match_the_model(target):
    """Rows of odd length (B's 513 columns), which TMA and cp.async cannot read: the mma.sync kernel loads them
    element by element (on the H200 too, with its own tile). Shared memory exact, registers within the
    allotment, no spills."""
    tiles = _space_points(target, "f16", (77, 513, 1000), SWEEP_POINTS, seed=2026)
    wrong = _check_tiles(target, "f16", (77, 513, 1000), tiles)
    assert not wrong, "\n".join(wrong)


@pytest.mark.parametrize("mnk", [(1024, 1024, 1024), (16, 4096, 4096)])
def test_fma_space_points_match_the_model(mnk):
    """f32 GEMMs (FMA) of the A100 space, square and skinny (split-K): shared memory exact, registers within the
    allotment the kernel declares, no spills (without .maxnreg, ptxas aims at an occupancy of its own from the
    block size and may spill)."""
    tiles = _space_points("a100", "f32", mnk, SWEEP_POINTS, seed=2026)
    wrong = _check_tiles("a100", "f32", mnk, tiles)
    assert not wrong, "\n".join(wrong)


def test_split_k_space_points_match_the_model():
    """Skinny f16 GEMMs of the A100 space, where most tiles split K: the last block's sum of the partials fits
    the allotment without spilling."""
    tiles = _space_points("a100", "f16", (16, 4096, 4096), SWEEP_POINTS, seed=2026)
    assert sum(t.SPLITK > 1 for t in tiles) >= SWEEP_POINTS // 2
    wrong = _check_tiles("a100", "f16", (16, 4096, 4096), tiles)
    assert not wrong, "\n".join(wrong)


@pytest.mark.parametrize("target,dtype", [("a100", "f16"), ("a100", "f32"), ("h200", "f32")])
@pytest.mark.parametrize("mnk", [(1024, 1024, 1024), (16, 4096, 4096), (100, 3000, 1000)])
def test_every_space_point_gets_an_allotment_within_the_cap(target, dtype, mnk):
    """The space's registers rule is the model's: every mma.sync or FMA tile it admits needs at most the
    registers a thread of its block may have (255, or 65536 / threads rounded down to 8; 256 is 255 rounded up
    to the allotment's multiple of 8), so the allotment the kernel declares is what it needs, not the cap. (The
    space does not see row strides: tiles of element-loaded rows may need more, and take the cap.)"""
    for tile in _space_points(target, dtype, mnk, 10**6, seed=0):
        threads = tile.BM // tile.WM * (tile.BN // tile.WN) * 32
        need = gemm_allotment(tile.BM, tile.BN, tile.BK, tile.WM, tile.WN, tile.SPLITK, dtype != "f32",
                                  capped=False)
        assert need <= -(-register_cap(threads) // 8) * 8, (tile, int(need))


def test_allotment_is_the_declared_maxnreg():
    """The kernel declares the model's allotment (a multiple of 8 within the cap), and the allotment of an array
    of space points is each point's."""
    m = n = k = 1024
    a, b, c = Tensor("a", "f16", (m, k)), Tensor("b", "f16", (k, n)), Tensor("c", "f16", (m, n))
    spec = GemmSpec("g", a, b, c, m, n, k, tile=GemmTile(128, 128, 32, 64, 64, 2))
    (kernel,) = _gemm(spec, "sm_80", lambda message: None)
    assert kernel.max_registers == gemm_tile_allotment(spec) == res.predict(spec, "sm_80", kernel).registers
    assert kernel.max_registers % 8 == 0 and kernel.max_registers <= register_cap(128)
    tiles = [GemmTile(64, 64, 16, 16, 16, 2), GemmTile(128, 128, 32, 64, 64, 2), GemmTile(16, 128, 16, 16, 16, 2, 8)]
    knobs = [np.array([getattr(t, name) for t in tiles]) for name in ("BM", "BN", "BK", "WM", "WN", "SPLITK")]
    together = gemm_allotment(*knobs, np.array([True, True, False]))
    alone = [gemm_allotment(t.BM, t.BN, t.BK, t.WM, t.WN, t.SPLITK, tc)
             for t, tc in zip(tiles, (True, True, False), strict=True)]
    assert list(together) == alone and alone[0] < alone[1]


def test_every_wgmma_space_point_fits_its_maxnreg():
    """The H200 space's register rule is the model's: every wgmma tile it admits has room for its consumer's
    accumulators within the kernel's .maxnreg."""
    for mnk in [(1024, 1024, 1024), (2048, 2048, 2048)]:
        tiles = _space_points("h200", "f16", mnk, 1000, seed=0)
        a, b, c = Tensor("a", "f16", mnk[::2]), Tensor("b", "f16", mnk[:0:-1]), Tensor("c", "f16", mnk[:2])
        for tile in tiles:
            spec = GemmSpec("g", a, b, c, *mnk, tile=tile)
            assert res.gemm_kernel(spec, "sm_90a") == ("wgmma", spec), tile
            assert wgmma_problem(spec) is None, tile


def test_one_consumer_cannot_take_a_64x256_wgmma(monkeypatch):
    """Where the model says a wgmma consumer lacks registers, the kernel refuses the tile, and ptxas refuses the
    kernel emitted past that check."""
    from prism.codegen.gpu import gemm_sm90
    from prism.codegen.gpu.ptx import PtxasError
    from prism.infra.errors import UnsupportedOp
    m = n = k = 1024
    a, b, c = Tensor("a", "f16", (m, k)), Tensor("b", "f16", (k, n)), Tensor("c", "f16", (m, n))
    narrow = GemmSpec("g", a, b, c, m, n, k, tile=GemmTile(64, 128, 64, 64, 128, 2))
    wide = GemmSpec("g", a, b, c, m, n, k, tile=GemmTile(64, 256, 64, 64, 256, 2))
    assert wgmma_problem(narrow) is None and gemm_sm90.tma_problem(narrow) is None
    assert wgmma_problem(wide) is not None and gemm_sm90.tma_problem(wide) == wgmma_problem(wide)
    assert ptxas(compile_kernels(gemm_sm90.emit_gemm_sm90(narrow), "sm_90a"), "sm_90a")["g"].spill_bytes == 0
    with pytest.raises(UnsupportedOp, match="registers"):
        gemm_sm90.emit_gemm_sm90(wide)
    assert res.gemm_kernel(wide, "sm_90a")[1].tile != wide.tile  # the router gives it the default tile
    monkeypatch.setattr(gemm_sm90, "tma_problem", lambda spec: None)
    with pytest.raises(PtxasError, match="Insufficient registers"):
        ptxas(compile_kernels(gemm_sm90.emit_gemm_sm90(wide), "sm_90a"), "sm_90a")
