"""Every point of the NVIDIA GEMM spaces is a tile Prism's GPU kernels take: the search and the emitters agree."""

from __future__ import annotations

import pytest

from prism.codegen.gpu.gemm import gemm_tile_problem
from prism.codegen.gpu.gemm_sm90 import tma_problem
from prism.codegen.gpu.spec import GemmSpec, GemmTile, Tensor
from prism.search.search import candidates_at, prune, select
from prism.search.space import Contraction, fix_shape, points, shape_exponents
from prism.targets import get_target
from prism.targets.nvidia_space import uses_wgmma


def _domain(space):
    domain = space.universe_set()
    for group, _ in space.groups:
        domain = domain.intersect(space.group_set(group))
    return domain


@pytest.mark.parametrize("dtype", ["f16", "bf16", "f32"])
@pytest.mark.parametrize("target", ["h200", "a100"])
@pytest.mark.parametrize("mnk", [(1024, 1024, 1024), (77, 513, 1000), (16, 4096, 4096), (1, 4096, 100)], ids=str)
def test_every_point_is_a_tile_the_kernel_takes(target, dtype, mnk):
    m, n, k = mnk
    size = 4 if dtype == "f32" else 2
    op = Contraction(roles=("m", "n", "k"), operand_dims=((0, 2), (2, 1)), extents=(m, n, k),
                     elem_bytes=(size, size), acc_bytes=4, input_type=dtype)
    chip = get_target(target)
    space = chip.space(op)
    found = list(points(fix_shape(space, _domain(space), shape_exponents(op))))
    assert found, "no schedule"
    # TMA needs 16-byte rows: K and N multiples of 8 (the wgmma kernel's own condition, not the tile's)
    a, b = Tensor("arg_0", dtype, (m, 1024)), Tensor("arg_1", dtype, (1024, 1024))
    c = Tensor("result_0", "f32", (m, 1024))
    for point in found:
        values = space.value_of(point)
        tile = GemmTile(**{key: values[key] for key in ("BM", "BN", "BK", "WM", "WN", "STAGES", "SPLITK",
                                                        "PERSISTENT", "GROUP_M")})
        if tile.SPLITK > 1:  # each share holds a BK step of K (its extent padded to a power of two)
            assert tile.SPLITK * tile.BK <= 1 << (k - 1).bit_length(), values
        spec = GemmSpec("g", a, b, c, m, 1024, 1024, tile=tile)
        problem = tma_problem(spec) if uses_wgmma(op, chip) else gemm_tile_problem(spec, chip.chip)
        assert problem is None, (values, problem)


def _choice(target: str, m: int, n: int, k: int, dtype: str = "bf16") -> dict[str, int]:
    size = 4 if dtype == "f32" else 2
    op = Contraction(roles=("m", "n", "k"), operand_dims=((0, 2), (2, 1)), extents=(m, n, k),
                     elem_bytes=(size, size), acc_bytes=4, input_type=dtype)
    chip = get_target(target)
    space = chip.space(op)
    domain, _ = prune(space, op, space.universe_set(), on_empty=None)
    return space.value_of(select(space, op, candidates_at(space, op, domain, 1024), chip, 1024).best)


@pytest.mark.parametrize("target", ["h200", "a100"])
def test_skinny_gemms_split_k(target):
    """Few output tiles leave SMs idle and draw a fraction of the bandwidth: the search splits K where even the
    narrowest tiles leave most SMs idle (N = 512 over a long K), and for a decode projection, and not for a
    square GEMM whose tiles fill the chip. (At M = 1 over N = 4096 the narrowest tiles already give 64 blocks,
    which the model lets draw nearly all the bandwidth: no split is needed there.)"""
    for m in (1, 16):
        assert _choice(target, m, 512, 16384)["SPLITK"] > 1, m
    assert _choice(target, 16, 4096, 4096)["SPLITK"] > 1
    assert _choice(target, 4096, 4096, 4096)["SPLITK"] == 1
    assert _choice(target, 1, 4096, 64)["SPLITK"] * _choice(target, 1, 4096, 64)["BK"] <= 64
