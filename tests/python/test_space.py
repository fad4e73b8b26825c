"""Search-space builders, tested from both sides: non-empty, and emptied by an impossible constraint."""

from __future__ import annotations

import islpy as isl
import pytest

from prism.search import prune, select
from prism.space import Contraction, family_space, fix_shape, points, pow2_sum_le, shape_exponents
from prism.targets import get_target

GEMM_F16 = Contraction(roles=("m", "n", "k"), operand_dims=((0, 2), (2, 1)), extents=(1024, 1024, 1024),
                       elem_bytes=(2, 2), acc_bytes=4, input_type="f16")
GEMM_DYNAMIC_M = Contraction(roles=("m", "n", "k"), operand_dims=((0, 2), (2, 1)), extents=(None, 1024, 512),
                             elem_bytes=(4, 4), acc_bytes=4, input_type="f32")


@pytest.mark.parametrize("bound", [1, 2, 3, 15, 16, 17, 100, 1000, 48 * 1024 / 2])
def test_pow2_sum_le_is_exact(bound: float) -> None:
    found = set(points(isl.Set("{ [a, b] : 0 <= a <= 18 and 0 <= b <= 18 and " + pow2_sum_le("a", "b", bound) + " }")))
    expected = {(a, b) for a in range(19) for b in range(19) if 2**a + 2**b <= bound}
    assert found == expected


@pytest.mark.parametrize("target", ["h200", "h100", "a100", "host"])
@pytest.mark.parametrize("op", [GEMM_F16, GEMM_DYNAMIC_M], ids=["f16-1024", "f32-dynamic-m"])
def test_every_group_keeps_points_and_an_impossible_one_empties(target: str, op: Contraction) -> None:
    space = family_space(op, get_target(target))
    domain = space.universe_set()
    exponents = shape_exponents(op)
    for group, _ in space.groups:
        domain = domain.intersect(space.group_set(group))
        assert not fix_shape(space, domain, exponents).is_empty(), group
    first = space.variables[0]
    impossible = isl.Set(space.wrap(f"{first} >= 60"))
    assert fix_shape(space, domain.intersect(impossible), exponents).is_empty()


def test_gpu_constraints_hold_at_every_point() -> None:
    target = get_target("h200")
    space = family_space(GEMM_F16, target)
    domain = space.universe_set()
    for group, _ in space.groups:
        domain = domain.intersect(space.group_set(group))
    for point in points(fix_shape(space, domain, shape_exponents(GEMM_F16))):
        c = space.value_of(point)
        assert (c["BM"] // c["WM"]) * (c["BN"] // c["WN"]) * 32 <= target.max_threads_per_block
        assert (c["BM"] * c["BK"] + c["BK"] * c["BN"]) * 2 <= 48 * 1024
        assert 1024 % c["BM"] == 0 and 1024 % c["BK"] == 0
        if c["MMA"]:
            assert c["WM"] % 16 == 0 and c["WN"] % 8 == 0 and c["BK"] % 16 == 0


def test_dynamic_m_domain_is_shared_by_every_m() -> None:
    """One pruned domain serves every M: instantiating a shape only fixes parameters."""
    space = family_space(GEMM_DYNAMIC_M, get_target("host"))
    domain = space.universe_set()
    for group, _ in space.groups:
        domain = domain.intersect(space.group_set(group))
    small = fix_shape(space, domain, {**shape_exponents(GEMM_DYNAMIC_M), "LM": 3})
    large = fix_shape(space, domain, {**shape_exponents(GEMM_DYNAMIC_M), "LM": 13})
    assert not small.is_empty() and not large.is_empty()
    assert small.count_val().to_python() < large.count_val().to_python()


@pytest.mark.parametrize("target", ["h200", "host"])
def test_dynamic_m_is_pruned_once_and_instantiated_per_m(target: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """One pruning for 1 <= M <= 8192; each new M only fixes parameters and selects (no constraint is re-applied)."""
    op = Contraction(roles=("m", "n", "k"), operand_dims=((0, 2), (2, 1)), extents=(None, 4096, 4096),
                     elem_bytes=(2, 2), acc_bytes=4, input_type="f16")
    space = family_space(op, get_target(target))
    domain, _ = prune(space, op, space.universe_set(), on_empty=None)
    constraint_builds = []
    monkeypatch.setattr(type(space), "group_set", lambda self, name: constraint_builds.append(name))
    chosen = {}
    for m in (16, 64, 1024, 4096, 8192):
        chosen[m] = space.value_of(select(space, op, domain, get_target(target), assume=m).best)
    assert constraint_builds == []
    assert len({tuple(c.values()) for c in chosen.values()}) > 1, "the choice should follow M"
    if target == "h200":
        assert all(m % c["BM"] == 0 for m, c in chosen.items())
