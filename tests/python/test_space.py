"""Search-space builders, tested from both sides: non-empty, and emptied by an impossible constraint."""

from __future__ import annotations

from dataclasses import replace

import islpy as isl
import numpy as np
import pytest

from prism.infra.errors import EmptySearchSpace
from prism.search import search
from prism.search.search import ShapeTable, candidates_at, prune, select
from prism.search.space import (
    Contraction,
    count_points,
    fix_shape,
    parse_set,
    point_array,
    points,
    pow2_sum_le,
    shape_exponents,
)
from prism.targets import get_target
from prism.targets.host_space import MANY_ROWS

GEMM_F16 = Contraction(roles=("m", "n", "k"), operand_dims=((0, 2), (2, 1)), extents=(1024, 1024, 1024),
                       elem_bytes=(2, 2), acc_bytes=4, input_type="f16")
GEMM_DYNAMIC_M = Contraction(roles=("m", "n", "k"), operand_dims=((0, 2), (2, 1)), extents=(None, 1024, 512),
                             elem_bytes=(4, 4), acc_bytes=4, input_type="f32")


@pytest.mark.parametrize("scales", [(1, 1), (3, 1), (1, 3), (3, 3)])
@pytest.mark.parametrize("bound", [1, 2, 3, 4, 15, 16, 17, 100, 1000, 48 * 1024 / 2])
def test_pow2_sum_le_is_exact(bound: float, scales: tuple[int, int]) -> None:
    constraint = pow2_sum_le("a", "b", bound, *scales)
    found = set(points(isl.Set("{ [a, b] : 0 <= a <= 18 and 0 <= b <= 18 and " + constraint + " }")))
    expected = {(a, b) for a in range(19) for b in range(19) if scales[0] * 2**a + scales[1] * 2**b <= bound}
    assert found == expected


@pytest.mark.parametrize("target", ["h200", "h100", "a100", "host"])
@pytest.mark.parametrize("op", [GEMM_F16, GEMM_DYNAMIC_M], ids=["f16-1024", "f32-dynamic-m"])
def test_every_group_keeps_points_and_an_impossible_one_empties(target: str, op: Contraction) -> None:
    space = get_target(target).space(op)
    domain = space.universe_set()
    exponents = shape_exponents(op)
    for group, _ in space.groups:
        domain = domain.intersect(space.group_set(group))
        assert not fix_shape(space, domain, exponents).is_empty(), group
    first = space.variables[0]
    impossible = isl.Set(space.wrap(f"{first} >= 60"))
    assert fix_shape(space, domain.intersect(impossible), exponents).is_empty()


def shaped_points(space, op: Contraction) -> list:
    """The points of ``space`` within every group, at ``op``'s shape."""
    domain = space.universe_set()
    for group, _ in space.groups:
        domain = domain.intersect(space.group_set(group))
    return list(points(fix_shape(space, domain, shape_exponents(op))))


@pytest.mark.parametrize("m", [16, 96, 1000])
def test_host_constraints_hold_at_every_point_and_six_row_blocks_are_offered(m: int) -> None:
    """RM may take a factor of 3 (m3), and TM with it (t3): the registers, L1, L2 and shape bounds hold for the
    values. L1 holds the micro-tile's A and B panels; for more than MANY_ROWS rows, it may hold the A panel alone,
    the B panel deeper than L1, where the task's B slice keeps to a quarter of L2."""
    target = get_target("host")
    op = Contraction(roles=("m", "n", "k"), operand_dims=((0, 2), (2, 1)), extents=(m, 1024, 512),
                     elem_bytes=(4, 4), acc_bytes=4, input_type="f32")
    space = target.space(op)
    lanes = target.vector_bits // 32
    register_blocks, deep_b_panels = set(), False
    for point in shaped_points(space, op):
        c = space.value_of(point)
        assert set(c) == {"TM", "TN", "TK", "RM", "RN"}
        assert c["RM"] <= c["TM"] and (c["TM"] % 3 != 0 or c["RM"] % 3 == 0)  # TM takes 3 only with RM
        assert c["RM"] * c["RN"] // lanes + c["RN"] // lanes <= target.vector_registers - 1
        in_l1 = (c["RM"] + c["RN"]) * c["TK"] * 4 <= target.l1d_bytes
        deep = c["RM"] * c["TK"] * 4 <= target.l1d_bytes and c["TK"] * c["TN"] * 4 <= target.l2_bytes / 4
        assert in_l1 or (m > MANY_ROWS and deep)
        deep_b_panels |= not in_l1
        assert (c["TM"] * c["TK"] + c["TM"] * c["TN"]) * 4 <= target.l2_bytes / 2
        assert c["TM"] <= max(6, 1 << (m - 1).bit_length())  # the padded extent, or a tile of 2 or 6 rows
        register_blocks.add((c["TM"], c["RM"], c["RN"]))
        assert space.point_of(c) == point
    assert {(6, 2 * lanes), (3, 2 * lanes), (4, 2 * lanes)} <= {b[1:] for b in register_blocks}
    assert (16, 6, 2 * lanes) in register_blocks and (12, 6, 2 * lanes) in register_blocks
    assert not any(rm == 1 for _, rm, _ in register_blocks)  # one-row blocks serve a single row of C alone
    assert deep_b_panels == (m > MANY_ROWS)


def test_one_row_blocks_serve_a_single_row() -> None:
    """A product of one row of C (decode) may take one-row blocks up to four vectors wide; two rows may not."""
    target = get_target("host")
    lanes = target.vector_bits // 32
    for m, offered in ((1, True), (2, False)):
        op = Contraction(roles=("m", "n", "k"), operand_dims=((0, 2), (2, 1)), extents=(m, 4096, 4096),
                         elem_bytes=(4, 4), acc_bytes=4, input_type="f32")
        space = target.space(op)
        blocks = {(c["RM"], c["RN"]) for c in map(space.value_of, shaped_points(space, op))}
        assert ((1, 4 * lanes) in blocks) == offered and (any(rm == 1 for rm, _ in blocks)) == offered


@pytest.mark.parametrize("m, n, k", [(16, 1024, 1024), (12, 256, 2048), (8, 512, 1024), (16, 16, 1024),
                                     (6, 8, 1024), (16, 256, 64), (16, 1024, 16), (16, 512, 16), (16, 64, 64),
                                     (16, 40, 64)])
def test_a_task_of_one_row_panel_covers_m_unless_b_is_small_or_its_micro_tile_covers_n(m: int, n: int, k: int
                                                                                      ) -> None:
    """A task of one row panel (TM = RM) reads B in place, RN columns of a row at a time: over a split M each row
    block reads all of B so (1.1-3x slower than one block of M rows, measured with B from 32 KiB to several MiB),
    so such tasks cover M where B exceeds half of L1, unless a micro-tile covers N (each row of B is then one
    run)."""
    target = get_target("host")
    op = Contraction(roles=("m", "n", "k"), operand_dims=((0, 2), (2, 1)), extents=(m, n, k),
                     elem_bytes=(4, 4), acc_bytes=4, input_type="f32")
    small_b = (1 << (k - 1).bit_length()) * (1 << (n - 1).bit_length()) * 4 <= target.l1d_bytes / 2
    space = target.space(op)
    plans = [space.value_of(point) for point in shaped_points(space, op)]
    one_panel = [c for c in plans if c["TM"] == c["RM"]]
    split = [c for c in one_panel if c["TM"] < m]
    assert any(c["TM"] >= m for c in one_panel)  # one row panel over the whole of M stays
    assert small_b or all(c["RN"] >= n for c in split), split
    # where B is small or a micro-tile covers N, M may split
    assert bool(split) == (small_b or n <= 4 * target.vector_bits // 32)


def test_a_pipelined_copy_of_a_few_rows_keeps_its_slice_within_an_eighth_of_l2(reference_host: None) -> None:
    """Where the direct kernel copies B for a few rows in a pipelined copy (B beyond a quarter of the L3), the
    L2 holds a slice's panels and the next slice at once: each slice (TK x TN) keeps to an eighth of L2 wherever
    the register block leaves several row panels. B within a quarter of the L3, more rows than MANY_ROWS, or a
    batch keep the old space."""
    target = get_target("host")

    def product(m: int, k: int, n: int, batch: int | None = None) -> Contraction:
        if batch is None:
            return Contraction(roles=("m", "n", "k"), operand_dims=((0, 2), (2, 1)), extents=(m, n, k),
                               elem_bytes=(4, 4), acc_bytes=4, input_type="f32")
        return Contraction(roles=("batch", "m", "n", "k"), operand_dims=((0, 1, 3), (0, 3, 2)),
                           extents=(batch, m, n, k), elem_bytes=(4, 4), acc_bytes=4, input_type="f32")

    op = product(16, 4096, 4096)  # B of 64 MiB
    assert 4096 * 4096 * 4 > target.l3_bytes / 4
    space = target.space(op)
    assert "pipelined copy" in dict(space.groups)
    slices = set()
    for c in map(space.value_of, shaped_points(space, op)):
        if c["RM"] < 16:
            assert c["TK"] * c["TN"] * 4 <= target.l2_bytes / 8, c
        slices.add(c["TK"] * c["TN"] * 4)
    assert max(slices) == target.l2_bytes // 8
    for other in (product(16, 1024, 1024), product(32, 4096, 4096), product(16, 4096, 4096, batch=2)):
        assert "pipelined copy" not in dict(target.space(other).groups), other


def test_the_busiest_worker_takes_whole_row_blocks(reference_host: None) -> None:
    """Workers take contiguous shares of the blocks, the ragged last one going to the last worker: with M = 256
    on two cores, TM = 192 leaves one worker 192 rows (the other 64) and costs about 1.5 times TM = 128's even
    halves, with the same register block and column tiles (the blocks' average, 128 rows, priced them alike)."""
    target = get_target("host")
    op = Contraction(roles=("m", "n", "k"), operand_dims=((0, 2), (2, 1)), extents=(256, 256, 256),
                     elem_bytes=(4, 4), acc_bytes=4, input_type="f32")
    values = {"TM": np.array([192, 128]), "TN": np.array([256, 256]), "TK": np.array([128, 128]),
              "RM": np.array([4, 4]), "RN": np.array([16, 16])}
    uneven, even = target.seconds(op, values)
    assert uneven > even * 1.2


def test_point_of_refuses_values_outside_the_space() -> None:
    space = get_target("host").space(GEMM_DYNAMIC_M)
    good = {"TM": 96, "TN": 256, "TK": 256, "RM": 6, "RN": 16}
    assert space.value_of(space.point_of(good)) == good
    with pytest.raises(ValueError, match="TN = 96"):
        space.point_of({**good, "TN": 96})
    with pytest.raises(ValueError, match="RM = 5"):
        space.point_of({**good, "RM": 5})


def test_points_of_a_parameter_fixed_union_are_those_of_a_plain_scan() -> None:
    # Two overlapping pieces, both parameters fixed (point_array and count_points project them out first).
    union = isl.Set("[N, M] -> { [i, j] : N = 5 and M = 3 and 0 <= i < N and 0 <= j < M; "
                    "[i, j] : N = 5 and M = 3 and 2 <= i <= 6 and i <= 2j + 4 and 0 <= j <= 4 }")
    want = [(i, j) for i in range(7) for j in range(5) if (i < 5 and j < 3) or (2 <= i <= 6 and i <= 2 * j + 4)]
    assert points(union) == want
    assert count_points(union) == len(want) == 29
    # With a parameter left free, the set is not theirs to change: isl refuses to scan it, as before.
    with pytest.raises(isl.Error):
        point_array(isl.Set("[N] -> { [i] : 0 <= i < N }"))


def _random_set(rng: np.random.Generator) -> isl.Set:
    """A union of up to three small basic sets over up to four dimensions, a fixed parameter, sometimes an
    existential variable: equalities, inequalities with several dimensions, overlapping pieces."""
    dims = "abcd"[:rng.integers(0, 5)]
    pieces = []
    for _ in range(rng.integers(1, 4)):
        parts = ["P = 3"] + [f"{rng.integers(-3, 1)} <= {d} <= {rng.integers(0, 7)}" for d in dims]
        for _ in range(rng.integers(0, 5) if dims else 0):
            read = rng.choice(list(dims), size=rng.integers(1, len(dims) + 1), replace=False)
            terms = " + ".join(f"{rng.integers(-3, 4)}{d}" for d in read)
            parts.append(f"{terms} {rng.choice(['<=', '>=', '='])} {rng.integers(-4, 7)}")
        if dims and rng.random() < 0.2:
            parts.append(f"exists (e: {dims[0]} = 2e)")
        pieces.append(f"[{', '.join(dims)}] : {' and '.join(parts)}")
    return isl.Set("[P] -> { " + "; ".join(pieces) + " }")


def test_the_scan_gives_isls_points_and_count_for_random_sets() -> None:
    rng = np.random.default_rng(20261207)
    for _ in range(300):
        union = _random_set(rng)
        scanned = union.project_out(isl.dim_type.param, 0, 1)
        n, want = scanned.dim(isl.dim_type.set), []
        scanned.foreach_point(lambda p, n=n, want=want: want.append(
            tuple(p.get_coordinate_val(isl.dim_type.set, i).to_python() for i in range(n))))
        assert points(union) == sorted(want), union
        assert count_points(union) == len(want) == scanned.count_val().to_python(), union


def test_a_large_space_is_counted_by_its_independent_dimensions_and_scanned_whole() -> None:
    # Eleven dimensions, 770 000 points: two pairs tied by constraints, the rest free.
    box = isl.Set("{ [a, b, c, d, e, f, g, h, i, j, k] : 0 <= a, b, c, d <= 4 and 0 <= e, f, g, h, i, j, k <= 2 "
                  "and a + b <= 6 and 2c - d >= 1 }")
    pairs = (sum(1 for a in range(5) for b in range(5) if a + b <= 6)
             * sum(1 for c in range(5) for d in range(5) if 2 * c - d >= 1))
    assert count_points(box) == box.count_val().to_python() == pairs * 3**7
    array = point_array(box)
    assert array.shape == (pairs * 3**7, 11)
    assert (np.lexsort(array.T[::-1]) == np.arange(len(array))).all()
    assert (array[:, 0] + array[:, 1] <= 6).all() and (2 * array[:, 2] - array[:, 3] >= 1).all()
    assert len(np.unique(array, axis=0)) == len(array)


def test_a_parsed_set_is_each_callers_own_and_prints_as_a_fresh_parse() -> None:
    text = get_target("h200").space(GEMM_F16).wrap("bm + bn <= 14 and (bk = 3 or bk = 5) and wm <= bm")
    first, second = parse_set(text), parse_set(text)
    assert str(first) == str(second) == str(isl.Set(text))
    named = parse_set("{ S[i] : 0 <= i < 4 }")
    assert named.get_tuple_name() == "S" and named.count_val().to_python() == 4
    # What one caller makes of its copy leaves the next caller's untouched.
    changed = first.set_tuple_name("T").intersect(isl.Set(text).set_tuple_name("T")).coalesce()
    assert changed.get_tuple_name() == "T"
    assert str(parse_set(text)) == str(isl.Set(text))
    with pytest.raises(isl.Error):
        parse_set("{ [i] : i < }")


@pytest.mark.parametrize("target", ["h200", "a100", "host"])
def test_a_role_read_through_several_loops_counts_its_tile_once(target: str) -> None:
    # A 2 x 3 x 33 x 40 activation times a 40 x 17 weight: three M loops, whose tile covers all three together.
    op = Contraction(roles=("m", "m", "m", "n", "k"), operand_dims=((0, 1, 2, 4), (4, 3)), extents=(2, 3, 33, 17, 40),
                     elem_bytes=(2, 2), acc_bytes=4, input_type="f16")
    tiles = {"m": "bm", "n": "bn", "k": "bk"}
    assert op.footprint_exponent(0, tiles) == "bm + bk + 1"
    assert op.output_footprint_exponent(tiles) == "bm + bn + 2"
    space = get_target(target).space(op)
    _, funnel = prune(space, op, space.universe_set(), None)
    assert funnel[-1].size > 0, funnel


def test_dynamic_m_domain_is_shared_by_every_m() -> None:
    """One pruned domain serves every M: instantiating a shape only fixes parameters."""
    space = get_target("host").space(GEMM_DYNAMIC_M)
    domain = space.universe_set()
    for group, _ in space.groups:
        domain = domain.intersect(space.group_set(group))
    small = fix_shape(space, domain, {**shape_exponents(GEMM_DYNAMIC_M), "LM": 3})
    large = fix_shape(space, domain, {**shape_exponents(GEMM_DYNAMIC_M), "LM": 13})
    assert not small.is_empty() and not large.is_empty()
    assert small.count_val().to_python() < large.count_val().to_python()


DYNAMIC_M_4096 = Contraction(roles=("m", "n", "k"), operand_dims=((0, 2), (2, 1)), extents=(None, 4096, 4096),
                             elem_bytes=(2, 2), acc_bytes=4, input_type="f16")


@pytest.mark.parametrize("target", ["h200", "host"])
def test_dynamic_m_is_pruned_once_and_instantiated_per_m(target: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """One pruning for 1 <= M <= 8192; instantiating a new M then runs no isl operation at all."""
    op, chip = DYNAMIC_M_4096, get_target(target)
    space = chip.space(op)
    domain, _ = prune(space, op, space.universe_set(), on_empty=None)
    table = ShapeTable.build(space, op, domain, chip, max_extent=8192)
    isl_calls = []
    for module, name in ((search, "fix_shape"), (search, "point_array"), (search, "prune")):
        monkeypatch.setattr(module, name, lambda *args, name=name: isl_calls.append(name))
    for method in ("group_set", "universe_set"):
        monkeypatch.setattr(type(space), method, lambda self, *args, method=method: isl_calls.append(method))
    chosen = {m: table.instantiate(m) for m in (16, 64, 96, 1024, 4096, 8192)}
    assert isl_calls == []
    assert len({tuple(c.values()) for c in chosen.values()}) > 1, "the choice should follow M"


@pytest.mark.parametrize("target", ["h200", "host"])
def test_a_space_is_pruned_once_for_every_shape(target: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """Pruning the same space from the same start again runs no intersection: families of other shapes get the
    same domain, and funnel sizes counted at their own shape, as a pruning from scratch counts them."""
    chip = get_target(target)
    ops = [GEMM_F16, *(replace(GEMM_F16, extents=extents) for extents in ((96, 4096, 512), (16, 1000, 4096)))]
    space = chip.space(ops[0])
    assert all(chip.space(op) == space for op in ops)
    start = space.wrap(space.universe + " and " + space.variables[0] + " >= 1")  # parsed afresh, as from a family
    first, _ = prune(space, ops[0], isl.Set(start), on_empty=None)
    intersections = []
    monkeypatch.setattr(type(space), "group_set", lambda self, name: intersections.append(name))
    for op in ops:
        domain, funnel = prune(space, op, isl.Set(start), on_empty=None)
        assert str(domain) == str(first)
        expected, exponents = isl.Set(start).intersect(isl.Set(space.wrap(space.universe))), shape_exponents(op)
        sizes = [fix_shape(space, expected, exponents).count_val().to_python()]
        for _, constraint in space.groups:
            expected = expected.intersect(isl.Set(space.wrap(constraint)))
            sizes.append(fix_shape(space, expected, exponents).count_val().to_python())
        assert [step.size for step in funnel] == sizes and domain == expected
    assert intersections == []


def test_a_group_that_empties_the_space_calls_on_empty_or_leaves_an_empty_domain() -> None:
    space = get_target("h200").space(GEMM_F16)
    start = isl.Set(space.wrap(space.universe + " and " + space.variables[0] + " >= 60"))
    domain, funnel = prune(space, GEMM_F16, start, on_empty=None)
    assert domain.is_empty() and funnel[0].size == 0
    called = []
    with pytest.raises(EmptySearchSpace):
        prune(space, GEMM_F16, start, on_empty=lambda group, steps, why: called.append(group) or
              (_ for _ in ()).throw(EmptySearchSpace(group)))
    assert called == [space.groups[0][0]]


@pytest.mark.parametrize("target", ["h200", "host"])
def test_shape_table_agrees_with_a_fresh_enumeration(target: str) -> None:
    """For sizes the table was not built around (odd ones included) it selects what enumerating the domain selects."""
    op, chip = DYNAMIC_M_4096, get_target(target)
    space = chip.space(op)
    domain, _ = prune(space, op, space.universe_set(), on_empty=None)
    table = ShapeTable.build(space, op, domain, chip, max_extent=8192)
    for m in (1, 3, 16, 17, 96, 100, 777, 1024, 5000, 8192):
        try:
            fresh = space.value_of(select(space, op, candidates_at(space, op, domain, m), chip, m).best)
        except EmptySearchSpace:
            assert not len(table.candidates(m)), m  # e.g. no GPU tile divides an odd M
            continue
        assert table.instantiate(m) == fresh, m


@pytest.mark.parametrize("target", ["h200", "a100", "host"])
@pytest.mark.parametrize("op", [GEMM_F16, GEMM_DYNAMIC_M, DYNAMIC_M_4096],
                         ids=["f16-1024", "f32-dynamic-m", "f16-m-4096"])
@pytest.mark.parametrize("assume", [1, 16, 1000, 4096])
def test_lower_bound_never_exceeds_the_cost(target: str, op: Contraction, assume: int) -> None:
    """Branch and bound is exact only if the bound is one: check it on every point of the universe."""
    chip = get_target(target)
    space = chip.space(op)
    everything = point_array(fix_shape(space, space.universe_set(), shape_exponents(op, assume)))
    values = space.values_of(everything)
    bound = chip.lower_bound(op, values, assume)
    cost = chip.seconds(op, values, assume)
    assert len(everything) > 100 and np.all(bound <= cost * (1 + 1e-12))


def test_branch_and_bound_finds_what_costing_everything_finds() -> None:
    chip = get_target("host")
    space = chip.space(GEMM_DYNAMIC_M)
    domain, _ = prune(space, GEMM_DYNAMIC_M, space.universe_set(), on_empty=None)
    for assume in (1, 37, 512, 4096):
        candidates = candidates_at(space, GEMM_DYNAMIC_M, domain, assume)
        selection = select(space, GEMM_DYNAMIC_M, candidates, chip, assume, keep=3)
        costs = chip.seconds(GEMM_DYNAMIC_M, space.values_of(candidates), assume)
        order = np.lexsort((np.arange(len(candidates)), costs))[:3]
        assert [tuple(p) for p in selection.points[:3].tolist()] == [tuple(p) for p in candidates[order].tolist()]
        assert len(selection.points) < len(candidates), "the bound should spare some points"
