"""The resource model against the assembler: for every kernel of the GPU bundle (H200 and A100, f16) and for GEMM
space points, ptxas's shared memory (static + the launch's dynamic bytes) is the model's exactly, its register
count lies in the model's band, and nothing spills."""

from __future__ import annotations

import random
import sys
from contextlib import contextmanager

import pytest

from conftest import REPO
from prism.codegen.gpu import GpuLowering
from prism.codegen.gpu import resources as res
from prism.codegen.gpu.kernels import _gemm
from prism.codegen.gpu.ptx import compile_kernels, ptxas, ptxas_path
from prism.codegen.gpu.spec import GemmSpec, GemmTile, Tensor
from prism.search.space import Contraction, fix_shape, points, shape_exponents
from prism.targets import get_target

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


def _check_tiles(target: str, dtype: str, mnk: tuple[int, int, int], tiles: list[GemmTile],
                 spills: bool = True) -> list[str]:
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
            if got.shared_bytes != want.shared_bytes or not want.admits(got.registers) or \
                    (spills and got.spill_bytes):
                wrong.append(f"{tile} {kernel.name}: ptxas {got} model {want}")
    return wrong


@pytest.mark.parametrize("target", sorted(TARGETS))
def test_space_points_match_the_model(target):
    """Tensor-core GEMM tiles of the space (wgmma on the H200, mma.sync on the A100): shared memory exact,
    registers in the band, no spills."""
    tiles = _space_points(target, "f16", (1024, 1024, 1024), SWEEP_POINTS, seed=2026)
    assert len(tiles) == SWEEP_POINTS
    wrong = _check_tiles(target, "f16", (1024, 1024, 1024), tiles)
    assert not wrong, "\n".join(wrong)


@pytest.mark.parametrize("target", sorted(TARGETS))
def test_element_loaded_space_points_match_the_model(target):
    """Rows of odd length (B's 513 columns), which TMA and cp.async cannot read: the mma.sync kernel loads them
    element by element (on the H200 too, with its own tile). Shared memory exact, registers in the band.
    Spills are not held here: the space does not see row strides, and some of its tiles spill with element
    loads (a warp tile of 128 accumulators whose loaded chunks the model counts past 255 registers)."""
    tiles = _space_points(target, "f16", (77, 513, 1000), SWEEP_POINTS, seed=2026)
    wrong = _check_tiles(target, "f16", (77, 513, 1000), tiles, spills=False)
    assert not wrong, "\n".join(wrong)


def test_fma_space_points_match_the_model():
    """f32 GEMMs (FMA) of the A100 space: shared memory exact and registers in the band. Spills are not held
    here: with a 128- or 256-thread block alone, ptxas aims at an occupancy of its own and may spill a few bytes
    (the kernel declares no ``.maxnreg``)."""
    tiles = _space_points("a100", "f32", (1024, 1024, 1024), SWEEP_POINTS, seed=2026)
    wrong = _check_tiles("a100", "f32", (1024, 1024, 1024), tiles, spills=False)
    assert not wrong, "\n".join(wrong)


def test_every_wgmma_space_point_fits_its_maxnreg():
    """The H200 space's register rule is the model's: every wgmma tile it admits has room for its consumer's
    accumulators within the kernel's .maxnreg."""
    for mnk in [(1024, 1024, 1024), (2048, 2048, 2048)]:
        tiles = _space_points("h200", "f16", mnk, 1000, seed=0)
        a, b, c = Tensor("a", "f16", mnk[::2]), Tensor("b", "f16", mnk[:0:-1]), Tensor("c", "f16", mnk[:2])
        for tile in tiles:
            spec = GemmSpec("g", a, b, c, *mnk, tile=tile)
            assert res.gemm_kernel(spec, "sm_90a") == ("wgmma", spec), tile
            assert res.wgmma_problem(spec) is None, tile


def test_one_consumer_cannot_take_a_64x256_wgmma():
    """Where the model says a wgmma consumer lacks registers, ptxas refuses the kernel."""
    m = n = k = 1024
    a, b, c = Tensor("a", "f16", (m, k)), Tensor("b", "f16", (k, n)), Tensor("c", "f16", (m, n))
    narrow = GemmSpec("g", a, b, c, m, n, k, tile=GemmTile(64, 128, 64, 64, 128, 2))
    wide = GemmSpec("g", a, b, c, m, n, k, tile=GemmTile(64, 256, 64, 64, 256, 2))
    assert res.wgmma_problem(narrow) is None
    assert res.wgmma_problem(wide) is not None
    from prism.codegen.gpu.gemm_sm90 import emit_gemm_sm90
    from prism.codegen.gpu.ptx import PtxasError
    assert ptxas(compile_kernels(emit_gemm_sm90(narrow), "sm_90a"), "sm_90a")["g"].spill_bytes == 0
    with pytest.raises(PtxasError, match="Insufficient registers"):
        ptxas(compile_kernels(emit_gemm_sm90(wide), "sm_90a"), "sm_90a")
