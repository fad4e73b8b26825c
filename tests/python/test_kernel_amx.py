"""bf16 products into f32 on AMX tiles (prism.codegen.cpu.kernel_amx): the choice of kernel by the machine's flags;
the tile knobs in the host's GEMM space; the request for the tile state, made only for modules with AMX code, once
per process; and the numbers, against float64 numpy over odd shapes. Where this machine has no AMX, AMX code never
runs: the kernel is checked as IR and LLVM (tests/filecheck/codegen/cpu-stages-amx.mlir), built into an object by
LLVM's X86 backend, and its staging, packing and tasks are run with each tile op written as the vector ops that
compute the same tile."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import islpy as isl
import llvm
import ml_dtypes
import numpy as np
import pytest
from mlir.dialects.llvm import translate_module_to_llvmir
from test_kernel_bf16 import bounded, kinds, product

import prism
from conftest import REFERENCE_HOST, lower_on_host
from prism.codegen.cpu import kernel_amx
from prism.codegen.cpu.kernel_bf16 import PACKED_PAIRS
from prism.infra.errors import TargetError, UnsupportedOp
from prism.runtime import cpu as runtime
from prism.search.space import Contraction
from prism.targets import host_space
from prism.targets.host_machine import Machine

INPUTS = Path(__file__).resolve().parents[1] / "filecheck" / "Inputs"
RUNS_HERE = bool(Machine.here().amx)
# The AMX machine described without AVX512-BF16: every bf16 product takes the tiles, a few static rows among them
TILES = INPUTS / "host-amx-tiles.json"


def test_the_amx_kernel_is_chosen_by_the_machines_flags(describe_host) -> None:
    text = product(33, 131, 70)
    describe_host(INPUTS / "host-amx.json")
    assert kinds(text) == ["gemm (AMX tiles)"]
    describe_host(INPUTS / "host-avx512-bf16.json")
    assert kinds(text) == ["gemm (bf16 dot products)"]
    describe_host(REFERENCE_HOST)
    assert kinds(text) == ["gemm (transform path)"]


def test_a_few_rows_take_the_tiles_each_task_packing_its_b(describe_host) -> None:
    """On the AMX machine a few rows take the tiles too: where one task's rows cover a static M, each task packs
    its own slices of B as it takes them (no pass packing all of B first); more rows than a task, or a dynamic M,
    pack B whole first."""
    describe_host(INPUTS / "host-amx.json")
    assert kinds(product(16, 131, 70)) == kinds(product(1, 64, 40)) == ["gemm (AMX tiles)"]
    assert kinds(product(16, 131, 70, batch=3)) == ["gemm (AMX tiles)"]

    def plan(c_type: str, tm: int) -> kernel_amx.AmxPlan:
        return kernel_amx.AmxPlan("f", "tensor<?x?xbf16>", "tensor<?x?xbf16>", c_type, True, 2, tm=tm)

    in_task = kernel_amx.kernel_text(plan("tensor<16x70xf32>", 32))
    whole = kernel_amx.kernel_text(plan("tensor<100x70xf32>", 32))
    assert kernel_amx._Kernel(plan("tensor<32x70xf32>", 32)).in_task
    assert not kernel_amx._Kernel(plan("tensor<?x70xf32>", 256)).in_task
    # The whole pass packs PACKED_PAIRS pairs of every panel at a time (its loop %kb); a task packs its own slices,
    # prefetching B's rows ahead.
    whole_pass = re.compile(rf"scf\.for %kb\w* = %c0\w* to %\w+ step %c{PACKED_PAIRS}\b")
    assert "vector.interleave" in in_task and "memref.prefetch" in in_task and not whole_pass.search(in_task)
    assert whole_pass.search(whole) and "memref.prefetch" not in whole


def test_an_f32_product_never_takes_it(describe_host) -> None:
    describe_host(INPUTS / "host-amx.json")
    assert "gemm (AMX tiles)" not in kinds(product(33, 131, 70).replace("bf16", "f32"))


def test_the_rate_of_bf16_on_amx(describe_host) -> None:
    amx = describe_host(INPUTS / "host-amx.json")
    assert amx.amx and amx.flops["bf16"] == 8 * amx.flops["f32"]
    dot = describe_host(INPUTS / "host-avx512-bf16.json")
    assert not dot.amx and dot.flops["bf16"] == 2 * dot.flops["f32"]


def test_tiles_that_do_not_fit_are_refused() -> None:
    assert host_space.tiles_fit(16, 64, 2, 2) and host_space.tiles_fit(8, 32, 1, 3)
    for tiles in [(32, 64, 1, 1), (16, 128, 1, 1), (16, 62, 1, 1), (16, 64, 2, 3), (16, 64, 1, 4)]:
        assert not host_space.tiles_fit(*tiles)
    with pytest.raises(UnsupportedOp, match="do not fit the 8 tile registers"):
        kernel_amx.AmxPlan("f", "tensor<2x2xbf16>", "tensor<2x2xbf16>", "tensor<2x2xf32>", True, 1, tiles_m=3,
                           tiles_n=2)


def bf16_product(m: int, n: int, k: int) -> Contraction:
    return Contraction(roles=("m", "n", "k"), extents=(m, n, k), operand_dims=((0, 2), (2, 1)),
                       elem_bytes=(2, 2), acc_bytes=4, input_type="bf16")


def test_the_space_holds_the_amx_knobs_only_on_amx(describe_host) -> None:
    op = bf16_product(100, 70, 131)
    space = host_space.gemm_space(op, describe_host(INPUTS / "host-amx.json"))
    assert {"AR", "AB", "AM", "AN"} <= set(space.symbols)
    tiles = space.group_set("amx tiles").intersect(space.universe_set())
    assert not tiles.is_empty()
    # Its points are the blocks that fit: 16 rows, 64 bytes per row, at most 8 tiles.
    for impossible in ["ar >= 5", "ab >= 7", "am >= 2", "an >= 2"]:
        assert tiles.intersect(isl.Set(space.wrap(impossible))).is_empty(), impossible
    assert not tiles.intersect(isl.Set(space.wrap("ar = 4 and ab = 6 and am = 1 and an = 1"))).is_empty()
    for other in ["host-avx512-bf16.json", "host-avx2.json"]:
        plain = host_space.gemm_space(op, describe_host(INPUTS / other))
        assert "AR" not in plain.symbols and "amx tiles" not in dict(plain.groups)


def test_the_search_takes_whole_tiles(describe_host) -> None:
    describe_host(INPUTS / "host-amx.json")
    report = prism.compile(product(100, 131, 70), target="host", emit="report").report
    (family,) = report["families"]
    assert {key: family["choice"][key] for key in ("AR", "AB", "AM", "AN")} == {"AR": 16, "AB": 64, "AM": 2,
                                                                                 "AN": 2}


def test_the_amx_space_holds_the_kernels_cache_rules(describe_host) -> None:
    """On AMX the space keeps the tile kernel's footprints, not the f32 kernels': a band's slice of A (AR x AM rows x
    TK) within half of L1 and the task's slice of B (TK x TN) within a quarter of L2; a task may take all rows of a
    static M, however large its block of C."""
    op = bf16_product(2048, 2048, 2048)
    space = host_space.gemm_space(op, describe_host(INPUTS / "host-amx.json"))  # L1 48 KiB, L2 1 MiB
    points = space.universe_set()
    for _, constraint in space.groups:
        points = points.intersect(isl.Set(space.wrap(constraint)))
    shape = "LB = 0 and LM = 11 and LN = 11 and LK = 11 and DM = 0 and DN = 0 and DK = 0"

    def holds(knobs: str) -> bool:
        return not points.intersect(isl.Set(space.wrap(f"{shape} and ar = 4 and ab = 6 and am = 1 and an = 1 "
                                                        f"and rm = 2 and rn = 5 and m3 = 0 and t3 = 0 and {knobs}"))
                                    ).is_empty()

    assert holds("tm = 11 and tn = 9 and tk = 8")  # all 2048 rows; B's slice 256 KiB, A's band 16 KiB
    assert not holds("tm = 11 and tn = 10 and tk = 8")  # B's slice 512 KiB: past a quarter of L2
    assert not holds("tm = 11 and tn = 7 and tk = 9")  # A's band 32 KiB: past half of L1
    assert not holds("tm = 12 and tn = 9 and tk = 8")  # more rows than M has


def test_a_large_product_takes_tasks_of_all_rows(describe_host) -> None:
    """Tasks of all rows of a static M pack their own slices of B (no pass over all of B, nor its reads from memory
    by every row of tasks): the search takes them for 2048^3, each within a quarter of L2 (1.05-1.15x faster than
    256 x 512 tasks on the AMX Xeon of benchmarks/RESULTS.md, "bf16 on AMX: tasks of all rows, each packing its own
    slices of B")."""
    describe_host(INPUTS / "host-amx.json")
    report = prism.compile(product(2048, 2048, 2048), target="host", emit="report").report
    (family,) = report["families"]
    assert family["choice"]["TM"] >= 2048
    assert family["choice"]["TN"] * family["choice"]["TK"] * 2 <= 1024 * 1024 // 4


def lowered_amx_module(describe_host):
    """The LLVM-dialect module of a bf16 product lowered for the AMX machine (never compiled here)."""
    describe_host(INPUTS / "host-amx.json")
    return prism.compile(product(33, 131, 70), target="host")._lowered()


class RecordedCalls:
    """The calls of the arch_prctl system call, recorded instead of made: ``calls``; each answers 0 (granted), or
    -1 (refused) once ``refused`` is set."""

    def __init__(self) -> None:
        self.calls: list[tuple[int, int]] = []
        self.refused = False

    def __call__(self, code: int, argument: int) -> int:
        self.calls.append((code, argument))
        return -1 if self.refused else 0


def test_the_x86_backend_builds_the_tiles(describe_host, tmp_path: Path) -> None:
    """LLVM's X86 backend, for a Sapphire Rapids core, makes an object of the module (nothing runs it): its tile
    ops become AMX instructions, each task configuring its tiles."""
    module = lowered_amx_module(describe_host)
    source = tmp_path / "amx.ll"
    source.write_text(str(translate_module_to_llvmir(module.operation)))
    llc = [str(Path(next(iter(llvm.__path__))) / "bin" / "llc"), "-O3", "-mtriple=x86_64-unknown-linux-gnu",
           "-mcpu=sapphirerapids", str(source)]
    subprocess.run([*llc, "-filetype=obj", "-o", str(tmp_path / "amx.o")], check=True, timeout=300)
    assert (tmp_path / "amx.o").stat().st_size > 0
    assembly = subprocess.run([*llc, "-o", "-"], check=True, capture_output=True, text=True, timeout=300).stdout
    for instruction in ("ldtilecfg", "tileloadd", "tdpbf16ps", "tilestored", "tilerelease"):
        assert re.search(rf"\b{instruction}\b", assembly), instruction


@pytest.fixture
def arch_prctl(monkeypatch: pytest.MonkeyPatch) -> RecordedCalls:
    """The runtime's arch_prctl, recorded (:class:`RecordedCalls`), in a process that has not asked yet."""
    recorded = RecordedCalls()
    monkeypatch.setattr(runtime, "_arch_prctl", recorded)
    monkeypatch.setattr(runtime, "_tile_data_granted", False)
    return recorded


def test_the_tile_state_is_asked_for_modules_with_amx_code(describe_host, arch_prctl: RecordedCalls) -> None:
    module = lowered_amx_module(describe_host)
    assert runtime.uses_amx(module)
    arch_prctl.refused = True  # compilation stops before the engine: no AMX code is ever built or run here
    with pytest.raises(TargetError, match="Linux refused this process their state"):
        runtime.compile_engine(module, "@mm")
    assert arch_prctl.calls == [(0x1023, 18)]


def test_the_tile_state_is_asked_for_once(arch_prctl: RecordedCalls) -> None:
    runtime.request_tile_data("@mm")
    runtime.request_tile_data("@mm")
    assert arch_prctl.calls == [(0x1023, 18)]


def test_modules_without_amx_code_do_not_ask(describe_host, arch_prctl: RecordedCalls,
                                             rng: np.random.Generator) -> None:
    describe_host(REFERENCE_HOST)
    compiled = prism.compile(product(9, 13, 20).replace("bf16", "f32"), target="host")
    a, b = rng.standard_normal((9, 13)).astype(np.float32), rng.standard_normal((13, 20)).astype(np.float32)
    np.testing.assert_allclose(compiled.jit("mm")(a, b), a @ b, rtol=1e-5, atol=1e-5)
    assert arch_prctl.calls == []


# -- the kernel's tiles computed on vectors, where this machine has no AMX ---------------------------------------

_TILE = re.compile(r"!amx\.tile<(\w+)>")
_LOAD = re.compile(r"(%[\w#]+) = amx\.tile_load (%[\w#]+)\[([^\]]*)\] : (memref<[^>]*>) into vector<(\w+)x(\w+)>")
_ZERO = re.compile(r"(%[\w#]+) = amx\.tile_zero : vector<(\w+)>")
_STORE = re.compile(r"amx\.tile_store (%[\w#]+)\[([^\]]*)\], (%[\w#]+) : (memref<[^>]*>), (vector<\w+>)")
_MULF = re.compile(r"(%[\w#]+) = amx\.tile_mulf (%[\w#]+), (%[\w#]+), (%[\w#]+) : "
                   r"vector<(\d+)x(\d+)xbf16>, vector<(\d+)x32xbf16>, vector<(\d+)x16xf32>")
_MAPS = "[affine_map<(m, n, k) -> (m, k)>, affine_map<(m, n, k) -> (k, n)>, affine_map<(m, n, k) -> (m, n)>]"


def _tile_op_as_vectors(line: str) -> str:
    """An amx tile op (its tiles already spelled as vectors) as vector ops that compute the same tile:
    ``C[m, n] += sum over pairs p of A[m, 2p] B[p, 2n] + A[m, 2p + 1] B[p, 2n + 1]``, B's pairs read as rows of k."""
    indent = line[:len(line) - len(line.lstrip())]
    if match := _LOAD.search(line):
        name, buffer, at, memref, shape, element = match.groups()
        return (f"{indent}{name}_pad = arith.constant 0.0 : {element}\n{indent}{name} = vector.transfer_read "
                f"{buffer}[{at}], {name}_pad {{in_bounds = [true, true]}} : {memref}, vector<{shape}x{element}>")
    if match := _ZERO.search(line):
        name, shape = match.groups()
        return f"{indent}{name} = arith.constant dense<0.0> : vector<{shape}>"
    if match := _STORE.search(line):
        buffer, at, value, memref, vector = match.groups()
        return (f"{indent}vector.transfer_write {value}, {buffer}[{at}] {{in_bounds = [true, true]}} "
                f": {vector}, {memref}")
    if match := _MULF.search(line):
        name, a, b, c, rows, k, pairs, _ = match.groups()
        a2 = f"vector<{rows}x{k}xf32>"
        b3, b2 = f"vector<{pairs}x16x2xf32>", f"vector<{k}x16xf32>"
        return "\n".join(indent + text for text in [
            f"{name}_a = arith.extf {a} : vector<{rows}x{k}xbf16> to {a2}",
            f"{name}_b = arith.extf {b} : vector<{pairs}x32xbf16> to vector<{pairs}x32xf32>",
            # B's rows of pairs as rows of k: [p][n][2] to [p][2][n] to [2p + q][n].
            f"{name}_b3 = vector.shape_cast {name}_b : vector<{pairs}x32xf32> to {b3}",
            f"{name}_bt = vector.transpose {name}_b3, [0, 2, 1] : {b3} to vector<{pairs}x2x16xf32>",
            f"{name}_b2 = vector.shape_cast {name}_bt : vector<{pairs}x2x16xf32> to {b2}",
            f"{name} = vector.contract {{indexing_maps = {_MAPS}, iterator_types = [\"parallel\", \"parallel\", "
            f"\"reduction\"], kind = #vector.kind<add>}} {name}_a, {name}_b2, {c} : {a2}, {b2} "
            f"into vector<{rows}x16xf32>"])
    assert "amx." not in line, line
    return line


def tiles_on_vectors(text: str) -> str:
    """The kernel text with every tile op written as vector ops (see :func:`_tile_op_as_vectors`)."""
    return "\n".join(_tile_op_as_vectors(line) for line in _TILE.sub(r"vector<\1>", text).splitlines())


def emulated(text: str, monkeypatch: pytest.MonkeyPatch) -> tuple[str, object]:
    """``@mm`` of ``text`` lowered for the AMX machine with its tiles computed on vectors, and the IR after cpu-tile."""
    real = kernel_amx.kernel_text
    monkeypatch.setattr(kernel_amx, "kernel_text", lambda plan: tiles_on_vectors(real(plan)))
    return lower_on_host(text, "mm")


@pytest.mark.parametrize(("m", "k", "n", "tiles"), [
    (7, 5, 20, {}), (33, 131, 97, {}), (100, 1, 5, {}), (64, 255, 300, {}),
    (37, 70, 50, {"rows": 8, "row_bytes": 32, "tiles_m": 1, "tiles_n": 3}),
    (19, 33, 17, {"rows": 4, "row_bytes": 16, "tiles_m": 2, "tiles_n": 1}),
    # Several tasks and slices of K, the last slice ragged (10 tiles of K in slices of 3), C straight to the result
    (64, 300, 96, {"tm": 32, "tn": 64, "tk": 96}),
    # ... and staged, with tasks ragged in both directions
    (100, 77, 130, {"tm": 64, "tn": 48, "tk": 32, "tiles_n": 1})])
def test_the_tiles_computed_on_vectors_match_float64(describe_host, monkeypatch: pytest.MonkeyPatch, m: int, k: int,
                                                      n: int, tiles: dict[str, int], rng: np.random.Generator) -> None:
    describe_host(TILES)
    choice = ", ".join(f"{key} = {tiles[field]}" for key, field in kernel_amx.CHOICE_KNOBS.items() if field in tiles)
    text = product(m, k, n).replace("linalg.matmul ins", f"linalg.matmul {{prism.choice = {{{choice}}}}} ins")
    tiled, run = emulated(text, monkeypatch)
    assert "vector.contract" in tiled and "x86vector" not in tiled
    a, b = (rng.standard_normal(s).astype(ml_dtypes.bfloat16) for s in ((m, k), (k, n)))
    bounded(run(a, b), a, b)


def test_a_batch_and_an_init_that_is_not_zero_on_vectors(describe_host, monkeypatch: pytest.MonkeyPatch,
                                                         rng: np.random.Generator) -> None:
    describe_host(INPUTS / "host-amx.json")
    _, run = emulated(product(17, 41, 50, batch=3, accumulate=True), monkeypatch)
    a, b = (rng.standard_normal(s).astype(ml_dtypes.bfloat16) for s in ((3, 17, 41), (3, 41, 50)))
    c = rng.standard_normal((3, 17, 50)).astype(np.float32)
    bounded(run(a, b, c), a, b, c)


@pytest.mark.parametrize(("m", "n", "whole"), [(64, 96, True), (64, 80, False), (48, 96, False)])
def test_whole_blocks_go_straight_to_the_result(describe_host, monkeypatch: pytest.MonkeyPatch, m: int, n: int,
                                                whole: bool, rng: np.random.Generator) -> None:
    """Where M and N are static and whole blocks of 2 x 2 tiles (32 x 32), C's tiles are stored into the result (no
    staging buffer, nothing copied out), starting from the C operand where it is not zero; else they are staged."""
    describe_host(INPUTS / "host-amx.json")
    tiled, run = emulated(product(m, 70, n, batch=2, accumulate=True), monkeypatch)
    staged = re.search(r"memref\.alloc\(\) \{alignment = \d+ : i64\} : memref<\d+x\d+xf32>", tiled)
    assert (staged is None) == whole and ("vector.maskedstore" not in tiled) == whole
    a, b = (rng.standard_normal(s).astype(ml_dtypes.bfloat16) for s in ((2, m, 70), (2, 70, n)))
    c = rng.standard_normal((2, m, n)).astype(np.float32)
    bounded(run(a, b, c), a, b, c)


def test_dynamic_rows_on_vectors(describe_host, monkeypatch: pytest.MonkeyPatch, rng: np.random.Generator) -> None:
    describe_host(INPUTS / "host-amx.json")
    text = "\n".join([
        "func.func @mm(%a: tensor<?x75xbf16>, %b: tensor<75x40xbf16>) -> tensor<?x40xf32> {",
        "  %zero = arith.constant 0.0 : f32",
        "  %c0 = arith.constant 0 : index",
        "  %m = tensor.dim %a, %c0 : tensor<?x75xbf16>",
        "  %e = tensor.empty(%m) : tensor<?x40xf32>",
        "  %init = linalg.fill ins(%zero : f32) outs(%e : tensor<?x40xf32>) -> tensor<?x40xf32>",
        "  %r = linalg.matmul ins(%a, %b : tensor<?x75xbf16>, tensor<75x40xbf16>) outs(%init : tensor<?x40xf32>) "
        "-> tensor<?x40xf32>",
        "  return %r : tensor<?x40xf32>",
        "}"])
    tiled, run = emulated(text, monkeypatch)
    # A staged as whole tiles of 32 k each (3 per staged row), as many as the call's rows bring; C staged too.
    assert re.search(r"memref\.alloc\(%\w+\) \{alignment = \d+ : i64\} : memref<\?x32xbf16>", tiled)
    assert re.search(r"memref\.alloc\(%\w+\) \{alignment = \d+ : i64\} : memref<\?x64xf32>", tiled)
    b = rng.standard_normal((75, 40)).astype(ml_dtypes.bfloat16)
    for m in (1, 31, 45):
        a = rng.standard_normal((m, 75)).astype(ml_dtypes.bfloat16)
        bounded(run(a, b), a, b)


# -- on AMX ------------------------------------------------------------------------------------------------------

@pytest.mark.skipif(not RUNS_HERE, reason="this CPU has no AMX")
@pytest.mark.parametrize(("m", "k", "n"), [(7, 5, 20), (1, 64, 16), (33, 131, 97), (100, 1, 5), (64, 255, 300),
                                           (97, 512, 130), (64, 300, 96), (256, 1100, 160)])
def test_matches_float64(m: int, k: int, n: int, rng: np.random.Generator, describe_host) -> None:
    describe_host(TILES)
    assert kinds(product(m, k, n)) == ["gemm (AMX tiles)"]
    compiled = prism.compile(product(m, k, n), target="host")
    a, b = (rng.standard_normal(s).astype(ml_dtypes.bfloat16) for s in ((m, k), (k, n)))
    bounded(compiled.jit("mm")(a, b), a, b)


@pytest.mark.skipif(not RUNS_HERE, reason="this CPU has no AMX")
def test_a_batch_and_an_init_that_is_not_zero(rng: np.random.Generator, describe_host) -> None:
    describe_host(TILES)
    text = product(17, 41, 50, batch=3, accumulate=True)
    assert kinds(text) == ["gemm (AMX tiles)"]
    a, b = (rng.standard_normal(s).astype(ml_dtypes.bfloat16) for s in ((3, 17, 41), (3, 41, 50)))
    c = rng.standard_normal((3, 17, 50)).astype(np.float32)
    bounded(prism.compile(text, target="host").jit("mm")(a, b, c), a, b, c)


@pytest.mark.skipif(not RUNS_HERE, reason="this CPU has no AMX")
@pytest.mark.parametrize("choice", ["TM = 32, TN = 64, TK = 64", "TM = 128, TN = 64, TK = 64", "TM = 128, TN = 4096"])
def test_b_packed_whole_or_by_each_task_matches_float64(choice: str, rng: np.random.Generator, describe_host) -> None:
    """97 rows in tasks of 32 (B packed whole first) or of 128 (each task packs its slices), with an odd K, a
    ragged N and ragged slices of K."""
    describe_host(TILES)
    text = product(97, 301, 130).replace("linalg.matmul ins", f"linalg.matmul {{prism.choice = {{{choice}}}}} ins")
    a, b = (rng.standard_normal(s).astype(ml_dtypes.bfloat16) for s in ((97, 301), (301, 130)))
    bounded(prism.compile(text, target="host").jit("mm")(a, b), a, b)
