"""The host kernel's decisions exist once (:mod:`prism.kernels.host_gemm`): change one rule there, and both the
host's cost and the code the host code generator writes follow it."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest
from mlir import ir

from prism.codegen.cpu import CpuLowering
from prism.infra.ir import make_context
from prism.infra.passbase import PassContext
from prism.kernels import host_gemm
from prism.search.space import Contraction
from prism.targets.host import host_target


def _matmul(m: int, n: int, k: int, tm: int, tn: int, tk: int, rm: int, rn: int) -> str:
    a, b, c = f"tensor<{m}x{k}xf32>", f"tensor<{k}x{n}xf32>", f"tensor<{m}x{n}xf32>"
    return (f"func.func @mm(%a: {a}, %b: {b}, %c: {c}) -> {c} {{\n"
            f'  %r = linalg.matmul {{prism.roles = ["m", "n", "k"], prism.choice = {{TM = {tm}, TN = {tn}, '
            f"TK = {tk}, RM = {rm}, RN = {rn}}}}} ins(%a, %b : {a}, {b}) outs(%c : {c}) -> {c}\n"
            f"  return %r : {c}\n}}\n")


def _tiled(text: str, threads: int) -> str:
    """The module after the host code generator's first stage, which writes the kernels."""
    with make_context(), ir.Location.unknown():
        module = ir.Module.parse(text)
        CpuLowering(threads, PassContext(), 256).tile(module)
        return str(module)


def _never(*args: object) -> bool:
    return False


# (m, n, k, TM, TN, TK, RM, RN), and how to change the rule that decides it.
CASES = {
    # Several row blocks of several row panels: workers keep their column block's B panels.
    "reuse": ((256, 512, 512, 64, 256, 256, 4, 16),
              lambda patch: patch.setattr(host_gemm, "REUSED_PANEL_BYTES", 0)),
    # One row of C in one-row blocks: the workers split K.
    "split-k": ((1, 4096, 512, 1, 512, 128, 1, 32),
                lambda patch: patch.setattr(host_gemm, "splits_k", _never)),
    # Several row panels of several rows: each task copies B into panels.
    "copy": ((64, 256, 256, 64, 256, 256, 4, 16),
             lambda patch: patch.setattr(host_gemm, "copies_panels", lambda *args, **kw: np.asarray(False))),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_one_rule_changed_moves_the_cost_and_the_code(case: str, reference_host: None,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    (m, n, k, tm, tn, tk, rm, rn), change = CASES[case]
    host = host_target()
    op = Contraction(("m", "n", "k"), ((0, 2), (2, 1)), (m, n, k), (4, 4), 4, "f32")
    values = {"TM": np.asarray([tm]), "TN": np.asarray([tn]), "TK": np.asarray([tk]), "RM": np.asarray([rm]),
              "RN": np.asarray([rn])}
    text = _matmul(m, n, k, tm, tn, tk, rm, rn)
    cost, code = float(host.seconds(op, values)[0]), _tiled(text, host.cores)
    change(monkeypatch)
    assert float(host.seconds(op, values)[0]) != cost
    assert _tiled(text, host.cores) != code


def test_the_cost_and_the_code_ask_the_same_rules(reference_host: None, monkeypatch: pytest.MonkeyPatch) -> None:
    """Every decision the code generator takes for a product, the cost model takes too, for that product."""
    asked: dict[str, list[Callable]] = {}
    for name in ("direct_layout", "copies_panels", "reuses_panels", "splits_k"):
        rule = getattr(host_gemm, name)

        def spy(*args: object, _rule: Callable = rule, _name: str = name, **kw: object) -> object:
            asked.setdefault(_name, []).append(_rule)
            return _rule(*args, **kw)

        monkeypatch.setattr(host_gemm, name, spy)
    host = host_target()
    op = Contraction(("m", "n", "k"), ((0, 2), (2, 1)), (96, 128, 64), (4, 4), 4, "f32")
    host.seconds(op, {"TM": np.asarray([32]), "TN": np.asarray([64]), "TK": np.asarray([64]),
                      "RM": np.asarray([4]), "RN": np.asarray([16])})
    by_cost = set(asked)
    asked.clear()
    _tiled(_matmul(96, 128, 64, 32, 64, 64, 4, 16), host.cores)
    assert set(asked) == by_cost == {"direct_layout", "copies_panels", "reuses_panels", "splits_k"}


def _swiglu(m: int, choice: str) -> str:
    """silu(a @ wg) * (a @ wu) of m x 64 by 64 x 48, both products scheduled by ``choice``."""
    a, b, c = f"tensor<{m}x64xf32>", "tensor<64x48xf32>", f"tensor<{m}x48xf32>"
    matmul = f'linalg.matmul {{prism.roles = ["m", "n", "k"], prism.choice = {{{choice}}}}}'
    identity = "affine_map<(i, j) -> (i, j)>"
    return "\n".join([
        f"func.func @f(%a: {a}, %wg: {b}, %wu: {b}) -> {c} {{",
        "  %zero = arith.constant 0.0 : f32", "  %one = arith.constant 1.0 : f32", f"  %e = tensor.empty() : {c}",
        f"  %c0 = linalg.fill ins(%zero : f32) outs(%e : {c}) -> {c}",
        f"  %g = {matmul} ins(%a, %wg : {a}, {b}) outs(%c0 : {c}) -> {c}",
        f"  %u = {matmul} ins(%a, %wu : {a}, {b}) outs(%c0 : {c}) -> {c}",
        f"  %y = linalg.generic {{indexing_maps = [{identity}, {identity}, {identity}], "
        f'iterator_types = ["parallel", "parallel"]}} ins(%g, %u : {c}, {c}) outs(%e : {c}) {{',
        "  ^bb0(%x: f32, %up: f32, %o: f32):", "    %n = arith.negf %x : f32", "    %ex = math.exp %n : f32",
        "    %den = arith.addf %one, %ex : f32", "    %s = arith.divf %x, %den : f32",
        "    %r = arith.mulf %s, %up : f32", "    linalg.yield %r : f32", f"  }} -> {c}", f"  return %y : {c}", "}"])


@pytest.mark.parametrize(("m", "choice", "moves"), [
    (8, "TM = 8, TN = 48, TK = 16, RM = 8, RN = 16", True),  # 8 rows read B in place in slices of 16
    (16, "TM = 16, TN = 48, TK = 16, RM = 16, RN = 16", False),  # more rows than stream B
    (8, "TM = 8, TN = 48, TK = 16, RM = 4, RN = 16", False),  # two row panels: B copied
])
def test_a_dual_gemm_streaming_b_in_place_takes_half_the_slice(m: int, choice: str, moves: bool, reference_host: None,
                                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    """A dual GEMM reads two B's in each slice: where its plans stream B in place, the kernel halves the slice
    (host_gemm.dual_slice_depth), and nowhere else."""
    host = host_target()
    code = _tiled(_swiglu(m, choice), host.cores)
    monkeypatch.setattr(host_gemm, "dual_slice_depth", lambda tk, streams: tk)
    assert (_tiled(_swiglu(m, choice), host.cores) != code) is moves


@pytest.mark.parametrize(("m", "tm", "rm", "tk", "expected"), [
    (8, 8, 8, 16, True), (8, 8, 8, 32, False), (16, 16, 16, 16, False), (8, 4, 4, 16, False), (5, 8, 8, 8, True),
    (None, 8, 8, 16, False), (8, 8, 1, 16, False)])
def test_b_streams_in_place_for_a_few_rows_in_shallow_slices(m: int | None, tm: int, rm: int, tk: int,
                                                            expected: bool) -> None:
    assert bool(host_gemm.streams_in_place(False, rm, tm, tk, m)) is expected
    assert not host_gemm.streams_in_place(True, rm, tm, tk, m)
    many = host_gemm.streams_in_place(np.asarray([False, True]), np.asarray([rm, rm]), np.asarray([tm, tm]),
                                      np.asarray([tk, tk]), m)
    assert many.tolist() == [expected, False]


@pytest.mark.parametrize(("m", "rm", "tm", "expected"), [(None, 2, 2, True), (1, 4, 8, False), (16, 4, 8, True),
                                                        (16, 1, 8, False), (3, 4, 4, False)])
def test_a_rule_answers_integers_and_arrays_alike(m: int | None, rm: int, tm: int, expected: bool) -> None:
    assert bool(host_gemm.copies_panels(tm, rm, m)) is expected
    many = host_gemm.copies_panels(np.asarray([tm, tm]), np.asarray([rm, rm]), m)
    assert many.tolist() == [expected, expected]


@pytest.mark.parametrize(("b_mib", "expected"), [(4, False), (32, False), (33, True), (64, True), (None, True)])
def test_the_copy_of_b_is_pipelined_past_a_quarter_of_the_l3(b_mib: int | None, expected: bool) -> None:
    """A task's copy of B into panels runs inside its micro-tiles where B is larger than a quarter of the L3 (a
    B of half of it comes in at the L3's latency, which a copy in a phase of its own waits on) or of unknown size;
    never with a batch, panels kept across row blocks, or panels not copied."""
    l3 = host_gemm.copy_in_phase_bytes(128 << 20, None)
    b_bytes = None if b_mib is None else b_mib << 20
    assert bool(host_gemm.pipelines_copy(True, False, False, b_bytes, l3)) is expected
    assert not host_gemm.pipelines_copy(True, False, True, b_bytes, l3)
    assert not host_gemm.pipelines_copy(True, True, False, b_bytes, l3)
    assert not host_gemm.pipelines_copy(False, False, False, b_bytes, l3)
    many = host_gemm.pipelines_copy(np.asarray([True, False]), np.asarray([False, False]), False, b_bytes, l3)
    assert many.tolist() == [expected, False]


@pytest.mark.parametrize(("k", "expected"), [(16, False), (host_gemm.SHALLOW_K, False), (host_gemm.SHALLOW_K + 1, True),
                                            (64, True), (None, True)])
def test_the_copy_over_a_shallow_k_runs_in_a_phase_of_its_own(k: int | None, expected: bool) -> None:
    """Over a K of a few rows (a LoRA's rank), B's copy into panels runs in a phase of its own, however large B is
    and even on a machine that pipelines every copy; from SHALLOW_K on (or an unknown K), as before."""
    assert bool(host_gemm.pipelines_copy(True, False, False, 64 << 20, 0, k)) is expected
    assert bool(host_gemm.pipelines_copy(True, False, False, None, 0, k)) is expected


@pytest.mark.parametrize(("in_cache", "expected"), [(None, 32 << 20), (1.2, 32 << 20), (0.96, 32 << 20), (0.9, 0)])
def test_a_machine_whose_pipelined_copy_wins_from_the_l3_pipelines_every_copy(in_cache: float | None,
                                                                              expected: int) -> None:
    """The copy of B runs in a phase of its own up to a quarter of the L3, unless the machine measured the
    pipelined copy faster by PIPELINED_IN_CACHE_WIN on a B the L3 holds: then every copy is pipelined, down to
    a B of a few KiB."""
    limit = host_gemm.copy_in_phase_bytes(128 << 20, in_cache)
    assert limit == expected
    assert bool(host_gemm.pipelines_copy(True, False, False, 16 << 10, limit)) is (expected == 0)
    assert not host_gemm.pipelines_copy(True, False, True, 16 << 10, limit)
