"""A target is one object: one defined here is searched, selected and lowered for like a built-in one.

The target below is a second host target with a space of its own (square
cache blocks, a fixed register block) and a plain roofline; nothing outside
this file knows it exists.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import prism
from prism import targets
from prism.search.attention import Attention
from prism.search.cost import KnobValues, ceil_div, problem_sizes, roofline, traffic_bytes
from prism.search.space import Contraction, Space, pow2_sum_le, shape_param_bounds
from prism.targets import host_cost
from prism.targets.host import host_target

GEMM = """
func.func @gemm(%a: tensor<37x64xf32>, %b: tensor<64x50xf32>) -> tensor<37x50xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<37x50xf32>
  %c = linalg.fill ins(%zero : f32) outs(%e : tensor<37x50xf32>) -> tensor<37x50xf32>
  %r = linalg.matmul ins(%a, %b : tensor<37x64xf32>, tensor<64x50xf32>)
         outs(%c : tensor<37x50xf32>) -> tensor<37x50xf32>
  return %r : tensor<37x50xf32>
}
"""


@dataclass(frozen=True)
class SquareBlockHost:
    """One core, 16 KiB of cache, square TM = TN blocks, and a 4 x 16 register block."""

    name: str = "square-host"
    cache_bytes: int = 16 * 1024
    flops: float = 10e9
    bandwidth: float = 5e9

    artifact = "llvm"
    runs_here = True
    fusion = frozenset()  # no IREE configurations: the target plays no IreeTarget role

    def lowering(self) -> str:
        return "prism-lower-cpu{threads=1}"

    def space(self, op: Contraction | Attention) -> Space | None:
        if isinstance(op, Attention):
            return None  # lifted as its products
        tiles = {"m": "tm", "n": "tn", "k": "tk"}
        universe = f"{shape_param_bounds()} and 3 <= tm <= 7 and tn = tm and 3 <= tk <= 7 and rm = 2 and rn = 4"
        groups = (("cache", pow2_sum_le(op.footprint_exponent(0, tiles), op.footprint_exponent(1, tiles),
                                        self.cache_bytes)),)
        return Space(kind="gemm", knobs={"tm": "TM", "tn": "TN", "tk": "TK", "rm": "RM", "rn": "RN"}, flags={},
                     universe=universe, groups=groups)

    def seconds(self, op: Contraction, values: KnobValues, assumed: int = 1024) -> np.ndarray:
        s = problem_sizes(op, assumed)
        tm, tn = values["TM"], values["TN"]
        work = 2 * s["batch"] * ceil_div(s["m"], tm) * tm * ceil_div(s["n"], tn) * tn * s["k"]
        return roofline(work / self.flops, traffic_bytes(op, tm, tn, s) / self.bandwidth) + 1e-9 * values["TK"]

    def lower_bound(self, op: Contraction, values: KnobValues, assumed: int = 1024) -> np.ndarray:
        s = problem_sizes(op, assumed)
        work = 2 * s["batch"] * s["m"] * s["n"] * s["k"]
        tm, tn = values["TM"], values["TN"]
        return roofline(np.full(np.shape(tm), work / self.flops), traffic_bytes(op, tm, tn, s) / self.bandwidth)

    def cost_text(self, op: Contraction) -> str:
        return "roofline of padded square blocks"

    def pass_seconds(self, moved: int) -> float:
        return moved / self.bandwidth



@pytest.fixture
def square_host() -> Iterator[SquareBlockHost]:
    target = SquareBlockHost()
    targets.register(target)
    yield target
    targets.unregister(target.name)


def test_a_target_defined_here_is_pruned_selected_and_lowered_for(square_host: SquareBlockHost,
                                                                 rng: np.random.Generator) -> None:
    compiled = prism.compile(GEMM, target=square_host.name)
    (family,) = compiled.report["families"]
    choice = family["choice"]
    assert choice["TM"] == choice["TN"] and (choice["RM"], choice["RN"]) == (4, 16)
    assert (choice["TM"] * choice["TK"] + choice["TK"] * choice["TN"]) * 4 <= square_host.cache_bytes
    assert [stage["stage"] for stage in family["funnel"]][:2] == ["space", "cache"]
    assert f"prism.choice = {{RM = 4 : i64, RN = 16 : i64, TK = {choice['TK']} : i64" in compiled.mlir
    a, b = rng.standard_normal((37, 64), np.float32), rng.standard_normal((64, 50), np.float32)
    np.testing.assert_allclose(compiled.jit()(a, b), a.astype(np.float64) @ b, rtol=1e-4, atol=1e-4)


def test_the_cost_model_of_a_target_drives_selection(square_host: SquareBlockHost) -> None:
    """Predicted seconds come from the target's own model: the report's figure is its value at the choice."""
    compiled = prism.compile(GEMM, target=square_host.name, emit="report")
    (family,) = compiled.report["families"]
    op = Contraction(("m", "n", "k"), ((0, 2), (2, 1)), (37, 50, 64), (4, 4), 4, "f32")
    values = {key: np.asarray(value) for key, value in family["choice"].items()}
    assert math.isclose(family["predicted_seconds"], float(square_host.seconds(op, values)), rel_tol=1e-12)


def test_targets_are_known_by_name_and_registered_once(square_host: SquareBlockHost) -> None:
    assert square_host.name in targets.target_names()
    assert targets.get_target(square_host.name) is square_host
    with pytest.raises(prism.TargetError, match="already exists"):
        targets.register(square_host)
    targets.unregister("host")
    assert targets.get_target("host") is host_target()


def test_targets_play_their_roles(square_host: SquareBlockHost) -> None:
    """Each role is a protocol, asked with isinstance: the search model of every target, lowering where Prism
    lowers for it, IREE export where it writes IREE's configurations."""
    roles = (targets.SearchModel, targets.LoweringTarget, targets.IreeTarget)
    played = {name: [isinstance(targets.get_target(name), role) for role in roles]
              for name in ("host", "h200", "mi300x", square_host.name)}
    assert played == {"host": [True, True, True], "h200": [True, True, True], "mi300x": [True, False, True],
                      square_host.name: [True, True, False]}
    with pytest.raises(prism.TargetError, match="not a target"):
        targets.register(object())


def test_a_target_without_iree_configurations_is_refused_before_anything_runs(square_host: SquareBlockHost) -> None:
    for emit in ("iree", "iree-spec"):
        with pytest.raises(prism.TargetError, match=f"--emit={emit}: Prism writes no IREE configuration"):
            prism.compile(GEMM, target=square_host.name, emit=emit)


def _picked(m: int, k: int, n: int) -> dict[str, int]:
    """The schedule the host picks for an m x k by k x n f32 product."""
    a, b, c = f"tensor<{m}x{k}xf32>", f"tensor<{k}x{n}xf32>", f"tensor<{m}x{n}xf32>"
    (family,) = prism.compile(f"""func.func @f(%x: {a}, %w: {b}, %c: {c}) -> {c} {{
      %r = linalg.matmul ins(%x, %w : {a}, {b}) outs(%c : {c}) -> {c}
      return %r : {c}
    }}""", target="host", emit="report").report["families"]
    return family["choice"]


def test_rows_of_a_that_alias_in_one_l1_set_cost_more(describe_host: Callable[..., Any]) -> None:
    """The direct kernel reads RM rows of A, K apart. With K a multiple of the L1 way size (4 KiB of f32 on a
    48 KiB 12-way L1), more than ways - 2 rows evict each other: 16 x 16 register blocks cost more than 8 x 32
    at K = 1024, and the same at K = 1000, where the rows spread over the sets."""
    from conftest import REFERENCE_HOST

    host = describe_host(REFERENCE_HOST.with_name("host-avx512.json"))
    assert (host.l1d_bytes, host.l1d_ways) == (48 * 1024, 12)

    def ratio(k: int) -> float:
        op = Contraction(("m", "n", "k"), ((0, 2), (2, 1)), (16, 1024, k), (4, 4), 4, "f32")
        blocks = {"TM": np.array([16, 16]), "TN": np.array([512, 512]), "TK": np.array([256, 256]),
                  "RM": np.array([16, 8]), "RN": np.array([16, 32])}
        tall, wide = host.seconds(op, blocks)
        return float(tall / wide)

    assert ratio(1024) > 1.2 and ratio(1000) < 1.1
    choice = _picked(16, 1024, 1024)
    assert choice["RM"] <= host.l1d_ways - 2, choice


def test_the_worker_with_the_most_columns_of_b_sets_the_memory_time(describe_host: Callable[..., Any]) -> None:
    """Workers take contiguous shares of the blocks: with N = 5632 in blocks of 4096, one of two cores reads
    4096 columns of B and the other 1536, 1.45 times an even share; blocks of 512 leave it 1.09 times. The
    8-row GEMM of SwiGLU 8x2048's gate then leaves TN = 4096 (benchmarks/RESULTS.md, "Measurements behind rules
    in the code": the busiest worker's columns of B)."""
    from conftest import REFERENCE_HOST

    host = describe_host(REFERENCE_HOST.with_name("host-avx512.json"))
    op = Contraction(("m", "n", "k"), ((0, 2), (2, 1)), (8, 5632, 2048), (4, 4), 4, "f32")
    streams = {"TM": np.array([8, 8]), "TN": np.array([4096, 512]), "TK": np.array([128, 128]),
               "RM": np.array([1, 1]), "RN": np.array([64, 64])}
    uneven, even = host.seconds(op, streams)
    assert uneven > 1.2 * even
    choice = _picked(8, 2048, 5632)
    assert choice["TN"] <= 1024, choice  # 2048 leaves one core two blocks, 4096 columns


def test_a_few_rows_read_b_in_place_as_streams_as_wide_as_their_tasks(describe_host: Callable[..., Any]) -> None:
    """8 rows of C in one row panel read B in place slice by slice, each slice's rows swept across the task's
    columns: in slices of up to 16 rows the prefetchers follow every row, and B is read in runs TN wide; deeper
    slices read it RN wide. At 16 rows the rule does not apply. The 8 x 4096 x 11008 product from DRAM then
    picks B read in place in shallow slices (benchmarks/RESULTS.md, "Eight-row products from DRAM")."""
    from conftest import REFERENCE_HOST

    host = describe_host(REFERENCE_HOST.with_name("host-avx512.json"))

    def seconds(m: int, **knobs: list[int]) -> np.ndarray:
        op = Contraction(("m", "n", "k"), ((0, 2), (2, 1)), (m, 11008, 4096), (4, 4), 4, "f32")
        return host.seconds(op, {key: np.asarray(value) for key, value in knobs.items()})

    shallow, deep = seconds(8, TM=[8, 8], TN=[1024, 1024], TK=[16, 64], RM=[8, 8], RN=[16, 16])
    assert deep > 2 * shallow
    shallow, deep = seconds(16, TM=[16, 16], TN=[1024, 1024], TK=[16, 64], RM=[16, 16], RN=[16, 16])
    assert abs(deep / shallow - 1) < 0.05
    choice = _picked(8, 4096, 11008)
    assert choice["RM"] == choice["TM"] == 8 and choice["TK"] <= 16, choice


def test_a_few_rows_from_the_cache_take_several_tasks_per_core(describe_host: Callable[..., Any]) -> None:
    """8 rows whose B (4 MiB) comes from the L3: cores that run one task each finish far apart, and claiming
    tasks as they free evens them out, so one task per core costs more than four, and jumps between rows read
    in place cost nothing; the pick then spreads the 512 columns over four tasks per core. 16 rows, which copy
    B into panels, keep their cost per task (benchmarks/RESULTS.md, "Eight-row products in the L3: tasks per
    core")."""
    from conftest import REFERENCE_HOST

    host = describe_host(REFERENCE_HOST.with_name("host-avx512.json"))
    tasks = {"TN": np.array([256, 64]), "TK": np.array([16, 16]), "RN": np.array([32, 32])}

    def seconds(m: int) -> np.ndarray:
        op = Contraction(("m", "n", "k"), ((0, 2), (2, 1)), (m, 512, 2048), (4, 4), 4, "f32")
        return host.seconds(op, {**tasks, "TM": np.array([m, m]), "RM": np.array([8, 8])})

    one_each, four_each = seconds(8)
    assert one_each > 1.2 * four_each
    one_each, four_each = seconds(16)
    assert one_each < four_each
    choice = _picked(8, 2048, 512)
    assert choice["TM"] == 8 and 512 // choice["TN"] >= 4 * host.cores, choice


def test_a_few_rows_beyond_the_l2s_take_wider_tasks(describe_host: Callable[..., Any], tmp_path: Path) -> None:
    """8 rows whose B (16 MiB) comes from the L3 of an Intel AVX-512 core (its recorded rates) but exceeds the
    cores' L2s together: B read in place pays for the jumps between its rows, so a task of 256 columns costs less
    than one of 64, and the pick reads runs of at least 256 columns, still several tasks per core
    (benchmarks/RESULTS.md, "Eight-row products beyond the L2s")."""
    from conftest import REFERENCE_HOST

    description = json.loads(REFERENCE_HOST.with_name("host-avx512.json").read_text())
    path = tmp_path / "xeon.json"
    path.write_text(json.dumps({**description, "core": "intel-avx512", "l2_bytes": 2 << 20, "l3_bytes": 128 << 20}))
    host = describe_host(path)
    op = Contraction(("m", "n", "k"), ((0, 2), (2, 1)), (8, 2048, 2048), (4, 4), 4, "f32")
    assert 2048 * 2048 * 4 > host.cores * host.l2_bytes
    narrow, wide = host.seconds(op, {"TM": np.array([8, 8]), "TN": np.array([64, 256]), "TK": np.array([16, 16]),
                                     "RM": np.array([8, 8]), "RN": np.array([32, 32])})
    assert wide < narrow
    choice = _picked(8, 2048, 2048)
    assert choice["TM"] == 8 and 256 <= choice["TN"] <= 2048 // (2 * host.cores), choice


def test_an_init_read_from_memory_adds_its_traffic_in_task_wide_runs(describe_host: Callable[..., Any]) -> None:
    """The direct kernel reading C's init, where C (64 MiB) does not stay in the L3, waits for it: C's bytes,
    read and written back at DRAM's rate, add to the time, and each task's rows of C are a run, so wider tasks
    cost less. A fill of zero is not read, and a C that stays in the L3 adds nothing (benchmarks/RESULTS.md,
    "C's init read from memory")."""
    from conftest import REFERENCE_HOST

    host = describe_host(REFERENCE_HOST.with_name("host-avx512.json"))
    tasks = {"TM": np.array([384, 96]), "TN": np.array([256, 1024]), "TK": np.array([16, 16]),
             "RM": np.array([6, 6]), "RN": np.array([64, 64])}

    def seconds(m: int, n: int, reads_init: bool) -> np.ndarray:
        return host.seconds(Contraction(("m", "n", "k"), ((0, 2), (2, 1)), (m, n, 16), (4, 4), 4, "f32", reads_init),
                            tasks)

    narrow, wide = seconds(4096, 4096, True)
    _, zero_wide = seconds(4096, 4096, False)
    assert narrow > wide
    assert wide >= zero_wide + 2 * 4096 * 4096 * 4 / host.dram_bytes_per_s
    np.testing.assert_allclose(seconds(1024, 1024, True), seconds(1024, 1024, False))


def test_panels_kept_beyond_the_l2_are_read_back_from_the_l3(describe_host: Callable[..., Any],
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    """A column block's panels kept across row blocks are copied once, and every later task of the column reads
    them back: beyond half the L2, from the L3 at a core's share of its bandwidth. Two row blocks of 64 then cost
    that read-back more than one of 128 rows with the same tile area, which keeps nothing; panels within the L2
    cost nothing more (benchmarks/RESULTS.md, "Kept panels read back from the L3")."""
    from conftest import REFERENCE_HOST
    from prism.kernels import host_gemm

    host = describe_host(REFERENCE_HOST.with_name("host-avx512.json"))
    tasks = {"TM": np.array([64, 128]), "TN": np.array([256, 128]), "TK": np.array([128, 128]),
             "RM": np.array([8, 8]), "RN": np.array([32, 32])}
    op = Contraction(("m", "n", "k"), ((0, 2), (2, 1)), (128, 11008, 4096), (4, 4), 4, "f32", False)

    two_rows_of_64, one_of_128 = host.seconds(op, tasks)
    panel = 4096 * 256 * 4
    assert two_rows_of_64 > one_of_128 and 2 * panel > host.l2_bytes
    # The read-back, added to the time the kept copies save: half the tasks read a panel each.
    monkeypatch.setattr(host_gemm, "REUSED_PANEL_BYTES", 0)
    copied_each_time, _ = host.seconds(op, tasks)
    assert two_rows_of_64 < copied_each_time

    # Within the L2, a later task reads the kept panels at no extra cost.
    def readback(k: int) -> float:
        op = Contraction(("m", "n", "k"), ((0, 2), (2, 1)), (128, 11008, k), (4, 4), 4, "f32", False)
        return float(host_cost._kept_panel_cycles(host, op, problem_sizes(op, 1024), np.array(64), np.array(128),
                                                  np.array(256), np.array(True)))

    assert 2 * 256 * 128 * 4 < host.l2_bytes < 2 * 4096 * 128 * 4
    assert readback(256) == 0 < readback(4096)


def test_a_product_reads_its_init_unless_it_is_a_fill_of_zero() -> None:
    """A contraction reads its init where it is an argument or a fill of another value; a fill of zero, and
    every product prism-explore writes, start at zero instead."""
    from mlir import ir

    from prism.algebra.explore import product_contraction
    from prism.infra.ir import make_context
    from prism.search.family import analyze_contraction

    def reads(init: str) -> bool:
        with make_context(), ir.Location.unknown():
            module = ir.Module.parse(f"""func.func @f(%a: tensor<4x8xf32>, %b: tensor<8x2xf32>, %c: tensor<4x2xf32>)
                -> tensor<4x2xf32> {{
              %v = arith.constant {init} : f32
              %e = tensor.empty() : tensor<4x2xf32>
              %z = linalg.fill ins(%v : f32) outs(%e : tensor<4x2xf32>) -> tensor<4x2xf32>
              %filled = linalg.matmul ins(%a, %b : tensor<4x8xf32>, tensor<8x2xf32>) outs(%z : tensor<4x2xf32>)
                -> tensor<4x2xf32>
              %r = linalg.matmul ins(%a, %b : tensor<4x8xf32>, tensor<8x2xf32>) outs(%c : tensor<4x2xf32>)
                -> tensor<4x2xf32>
              return %filled : tensor<4x2xf32>
            }}""")
            products = [op for op in module.body.operations[0].regions[0].blocks[0].operations
                        if op.operation.name == "linalg.matmul"]
            filled, argument = (analyze_contraction(op.operation) for op in products)
            assert argument.reads_init
            return filled.reads_init

    assert not reads("0.0") and reads("1.0")
    assert not product_contraction((4, 8), (8, 2), "f32").reads_init


def test_a_few_rows_from_dram_wait_on_memory(describe_host: Callable[..., Any]) -> None:
    """A product of 8 rows does too little work per byte of B to hide DRAM behind it: its predicted time is at
    least B's bytes at DRAM's rate plus its FMAs at the peak rate, where a roofline would take the larger."""
    from conftest import REFERENCE_HOST

    host = describe_host(REFERENCE_HOST.with_name("host-avx512.json"))
    m, n, k = 8, 11008, 4096
    op = Contraction(("m", "n", "k"), ((0, 2), (2, 1)), (m, n, k), (4, 4), 4, "f32")
    (seconds,) = host.seconds(op, {"TM": np.asarray([8]), "TN": np.asarray([1024]), "TK": np.asarray([16]),
                                   "RM": np.asarray([8]), "RN": np.asarray([16])})
    assert seconds >= 4 * k * n / host.dram_bytes_per_s + 2 * m * n * k / host.flops["f32"]


def test_a_copy_of_b_from_dram_pays_for_its_short_runs(describe_host: Callable[..., Any]) -> None:
    """16 rows copy B into panels per task. From DRAM, the copy reads each row of B TN wide, and each jump
    between runs costs as much as STRIDED_RUN_BYTES more: 128 columns (512-byte runs) cost more than 512 (2 KiB),
    and the 16 x 4096 x 11008 product copies B in runs of 2 KiB at least (benchmarks/RESULTS.md, "16 rows
    copied from DRAM")."""
    from conftest import REFERENCE_HOST

    host = describe_host(REFERENCE_HOST.with_name("host-avx512.json"))
    op = Contraction(("m", "n", "k"), ((0, 2), (2, 1)), (16, 11008, 4096), (4, 4), 4, "f32")
    narrow, wide = host.seconds(op, {"TM": np.array([16, 16]), "TN": np.array([128, 512]),
                                     "TK": np.array([64, 64]), "RM": np.array([8, 8]), "RN": np.array([32, 32])})
    assert narrow > 1.05 * wide
    choice = _picked(16, 4096, 11008)
    assert choice["TM"] == 16 and choice["TN"] >= 512, choice


def test_a_narrow_tasks_b_fitting_the_l2_does_not_keep_all_of_b_there(describe_host: Callable[..., Any]) -> None:
    """128 rows copy B into panels per task. One task's B of 32 columns (2048 x 32, 256 KiB) fits a 1 MiB L2
    twice over, but a core's share of all 11008 columns does not stay there from call to call: each vector is
    copied at the rate B arrives from memory, in 128-byte runs (TN = 32 ran 1.3x slower than 512 on
    128 x 4096 x 11008 with a 2 MiB L2, where the cost had taken the narrow task's copy for a load and a store:
    benchmarks/RESULTS.md, "The L3 a virtual machine gets"). Where a core's share of B fits, a copy is a load
    and a store."""
    from conftest import REFERENCE_HOST
    from prism.targets.host_cost import PANEL_COPY_CYCLES, _panel_copy_cycles

    host = describe_host(REFERENCE_HOST.with_name("host-avx512.json"))
    assert host.l2_bytes == 1 << 20

    def copy_cycles(k: int, n: int, tn: int) -> float:
        op = Contraction(("m", "n", "k"), ((0, 2), (2, 1)), (128, n, k), (4, 4), 4, "f32")
        return float(_panel_copy_cycles(host, op, {"batch": 1, "m": 128, "n": n, "k": k}, np.array(tn)))

    assert copy_cycles(2048, 11008, 32) > 4 * PANEL_COPY_CYCLES
    assert copy_cycles(2048, 11008, 32) > copy_cycles(2048, 11008, 512) > PANEL_COPY_CYCLES
    assert copy_cycles(256, 512, 32) == copy_cycles(256, 512, 256) == PANEL_COPY_CYCLES


def test_the_pipelined_copys_depth_slows_b_not_the_micro_tiles(tmp_path: Path,
                                                                 describe_host: Callable[..., Any]) -> None:
    """The calibration's pipelined factor (the copy at one slice depth over its fastest) slows the copy of B
    and B's stream, not the micro-tiles: 16 rows, whose time is B's, take most of it; 128 rows, with 8 times
    the work per byte of B, hide most of it. Charged to the whole product, it moved the Zen 5's 128-row down
    projection off one row block of 128 to 64 (1.24x slower; benchmarks/RESULTS.md, "The pipelined copy's depth
    slows B's stream")."""
    import json

    from conftest import REFERENCE_HOST
    from prism.targets.host_calibration import CONFIG_VERSION

    def seconds(m: int, factor: float) -> float:
        config = tmp_path / f"depth-{factor}.json"
        config.write_text(json.dumps({"version": CONFIG_VERSION, "machine": "reference x86-64 with AVX-512",
                                      "cores": 2, "gflops": 200.0, "dram_gbps": 40.0, "cache_gbps": 100.0,
                                      "pipelined": {"64": factor}}))
        host = describe_host(REFERENCE_HOST.with_name("host-avx512.json"), config)
        op = Contraction(("m", "n", "k"), ((0, 2), (2, 1)), (m, 4096, 11008), (4, 4), 4, "f32")
        (time,) = host.seconds(op, {"TM": np.asarray([m]), "TN": np.asarray([512]), "TK": np.asarray([64]),
                                    "RM": np.asarray([8]), "RN": np.asarray([32])})
        return float(time)

    assert seconds(16, 1.5) > 1.2 * seconds(16, 1.0)
    assert seconds(128, 1.5) < 1.1 * seconds(128, 1.0)


def test_causal_attention_steps_are_the_mean_of_each_query_blocks() -> None:
    """Under a causal mask, query block b reads its keys up to offset + (b + 1) * rows in whole steps of BKV: the
    model's steps per task are the mean over the blocks of those step counts, exactly where the blocks run
    through whole periods of remainders, and within half a step otherwise."""
    from prism.search.attention import Attention
    from prism.targets.host_attention import _shape, _steps

    for m in (256, 384, 512):
        for offset in (0, 64, 100):
            op = Attention(1, m, m + offset, 64, 64, causal=offset)
            for bq in (16, 32, 64, 128, 256):
                for bkv in (16, 32, 64, 128, 256, 512):
                    values = {"BQ": np.asarray([bq]), "BKV": np.asarray([bkv]), "RM": np.asarray([8]),
                              "RN": np.asarray([16]), "KVS": np.asarray([1])}
                    s = _shape(op, values, 1024)
                    rows, width = int(s["rows"][0]), int(s["bkv"][0])
                    if m % rows:  # the model evens a ragged last block out over the blocks
                        continue
                    counts = [ceil_div(offset + (b + 1) * rows, width) for b in range(m // rows)]
                    modelled = float(_steps(op, s, s["bkv"], values["KVS"])[0])
                    period = width // math.gcd(rows, width)
                    exact = len(counts) % period == 0
                    assert abs(modelled - sum(counts) / len(counts)) <= (1e-9 if exact else 0.5), \
                        (m, offset, bq, bkv, counts, modelled)


def test_short_slices_of_a_slice_beyond_l1_start_cold(describe_host: Callable[..., Any]) -> None:
    """The direct kernel reads each micro-tile's rows of A in place, one run per K slice. Where the task's rows
    of A outgrow half of L2 and its A slice (TM x TK) 1.5 times L1, every run starts cold: at 2048^3, TK = 128
    costs more than TK = 512 at TM = 512 (a 256 KiB slice), while at TM = 96 (48 KiB) the two cost alike. Where
    the rows of A stay in L2 and every input in the cache, a run starts warm, at a third of the cold cost per
    slice beyond the first. A product of many rows may take B panels deeper than L1, and 2048^3 picks slices
    whose runs start warm (benchmarks/RESULTS.md, "Deep K slices for the square GEMMs" and "Warm slices of the
    square GEMMs")."""
    from conftest import REFERENCE_HOST

    host = describe_host(REFERENCE_HOST.with_name("host-avx512.json"))

    def ratio(tm: int, size: int = 2048, k: int = 2048) -> float:
        op = Contraction(("m", "n", "k"), ((0, 2), (2, 1)), (size, size, k), (4, 4), 4, "f32")
        slices = {"TM": np.array([tm, tm]), "TN": np.array([256, 256]), "TK": np.array([128, min(512, k)]),
                  "RM": np.array([6, 6]), "RN": np.array([64, 64])}
        short, deep = host.seconds(op, slices)
        return float(short / deep)

    assert ratio(512) > 1.1 and ratio(96) < 1.03
    assert 512 * 256 * 4 <= host.l2_bytes / 2 and 1.02 < ratio(512, size=512, k=256) < 1.06 < ratio(512)
    choice = _picked(2048, 2048, 2048)  # its runs of A start warm
    assert choice["TM"] * choice["TK"] * 4 <= host_cost.A_WARM_L1 * host.l1d_bytes, choice


def test_a_product_in_the_cache_takes_deep_slices(describe_host: Callable[..., Any],
                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    """A product of many rows whose inputs stay in the cache pays a warm start of its runs of A per slice beyond
    the first: 512^3 takes a single slice, where without that start it took two. Thirty-two rows keep their
    slices (benchmarks/RESULTS.md, "Warm slices of the square GEMMs")."""
    from conftest import REFERENCE_HOST

    describe_host(REFERENCE_HOST.with_name("host-avx512.json"))
    square, few = _picked(512, 512, 512), _picked(32, 1024, 1024)  # 32 rows ran deeper slices slower
    assert square["TK"] == 512, square
    monkeypatch.setattr(host_cost, "A_WARM_RUN_START_CYCLES", 0)
    assert _picked(512, 512, 512)["TK"] < 512
    assert _picked(32, 1024, 1024) == few
