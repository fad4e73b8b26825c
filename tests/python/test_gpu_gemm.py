"""The Ampere-form GEMM emitter (prism.codegen.gpu.gemm): kernels for every input type, layout, ragged and
dynamic sizes, batch, epilogues, dual GEMMs and initial tensors, assembled by ptxas for sm_80 and sm_90a
without spills; their results, run by the reference interpreter (kernel_interpreter.py) against numpy; and
the tiles it refuses, with the reason."""

from __future__ import annotations

import math
import re
from dataclasses import replace
from functools import cache

import numpy as np
import pytest
from kernel_interpreter import cast_to, run_kernel

from prism.codegen.gpu.gemm import (
    MAX_ACCUMULATORS,
    MAX_SPLITK,
    SHARED_LIMIT,
    emit_gemm,
    emit_tile_order,
    gemm_shared_bytes,
    gemm_tile_problem,
    operand_tiles,
    tile_order,
)
from prism.codegen.gpu.manifest import evaluate
from prism.codegen.gpu.ptx import compile_kernels, ptxas, ptxas_path
from prism.codegen.gpu.spec import Dim, GemmSpec, GemmTile, Kernel, Operand, ScalarFn, Tensor
from prism.codegen.text import TextBuilder
from prism.infra.errors import UnsupportedOp

CHIPS = ("sm_80", "sm_90a")
LAYOUTS = (("mk", "kn"), ("km", "nk"), ("mk", "nk"), ("km", "kn"))
DUAL_TILE = GemmTile(BM=128, BN=64, WM=64, WN=32)
needs_ptxas = pytest.mark.skipif(ptxas_path() is None, reason="ptxas is not on PATH")


def gemm(name: str, dtype: str, m: Dim, n: Dim, k: Dim, layouts: tuple[str, str] = ("mk", "kn"),
         batch: tuple[Dim, ...] = (), out: str = "f32", **extra: object) -> GemmSpec:
    """A GEMM spec over fresh tensors A, B, C of the given sizes and layouts."""
    a_shape = (m, k) if layouts[0] == "mk" else (k, m)
    b_shape = (k, n) if layouts[1] == "kn" else (n, k)
    a, b = Tensor(f"{name}_a", dtype, batch + a_shape), Tensor(f"{name}_b", dtype, batch + b_shape)
    c = Tensor(f"{name}_c", out, batch + (m, n))
    return GemmSpec(name, a, b, c, m, n, k, batch, layouts[0], layouts[1], **extra)


def bias_residual(name: str, m: Dim, n: Dim, batch: tuple[Dim, ...]) -> ScalarFn:
    """``acc + bias[n] + residual[..., m, n]`` with f16 bias and residual, in f32."""
    rank = len(batch) + 2
    bias = Operand("tensor", Tensor(f"{name}_bias", "f16", (n,)), (rank - 1,))
    residual = Operand("tensor", Tensor(f"{name}_res", "f16", batch + (m, n)), tuple(range(rank)))

    def emit(t, values: list[str], point: list[str]) -> str:
        acc, b, r = values
        b32 = t.value(f"arith.extf {b} : f16 to f32")
        r32 = t.value(f"arith.extf {r} : f16 to f32")
        return t.value(f"arith.addf {t.value(f'arith.addf {acc}, {b32} : f32')}, {r32} : f32")

    return ScalarFn((Operand("acc"), bias, residual), "f32", emit)


def silu_mul() -> ScalarFn:
    """``silu(acc) * acc2``: ``acc / (1 + exp(-acc)) * acc2`` in f32."""
    def emit(t, values: list[str], point: list[str]) -> str:
        acc, gate = values
        one = t.value("arith.constant 1.0 : f32")
        e = t.value(f"math.exp {t.value(f'arith.negf {acc} : f32')} : f32")
        silu = t.value(f"arith.divf {acc}, {t.value(f'arith.addf {one}, {e} : f32')} : f32")
        return t.value(f"arith.mulf {silu}, {gate} : f32")

    return ScalarFn((Operand("acc"), Operand("acc2")), "f32", emit)


def layout_specs(dtype: str) -> list[GemmSpec]:
    """Every layout of a ragged static GEMM (77 x 513 x 1000: N and C's rows not 16-byte aligned)."""
    return [gemm(f"{dtype}_{a}_{b}", dtype, 77, 513, 1000, (a, b)) for a, b in LAYOUTS]


def feature_specs(dtype: str) -> list[GemmSpec]:
    """Dynamic sizes, batch, a bias+residual epilogue cast to f16, a dual SiLU*mul GEMM, an initial tensor."""
    name = f"{dtype}_feat"
    dual_b2 = Tensor(f"{name}_dual_b2", dtype, (1000, 96))
    init = Tensor(f"{name}_init_c0", "f32", (3, 100, 72))
    return [
        gemm(f"{name}_dyn", dtype, "m", "n", "k", ("km", "nk")),
        gemm(f"{name}_epi", dtype, "m", 520, 264, ("mk", "nk"), batch=("b",), out="f16",
             epilogue=bias_residual(f"{name}_epi", "m", 520, ("b",))),
        gemm(f"{name}_dual", dtype, 33, 96, 1000, out="f16", b2=dual_b2, epilogue=silu_mul(), tile=DUAL_TILE),
        gemm(f"{name}_init", dtype, 100, 72, 40, batch=(3,), init=init, init_value=0.0,
             tile=GemmTile(BM=64, BN=64, BK=32, WM=32, WN=32, STAGES=4)),
    ]


def tile_specs(dtype: str) -> list[GemmSpec]:
    """A ragged GEMM (300 x 1000 x 520) under each of TILES."""
    return [gemm(f"{dtype}_tile{i}", dtype, 300, 1000, 520, ("mk", "nk"), tile=tile) for i, tile in enumerate(TILES)]


def entries(ptx: str) -> dict[str, str]:
    """Each kernel's PTX body, by name."""
    parts = re.split(r"^\.visible \.entry ", ptx, flags=re.MULTILINE)[1:]
    return {part[: part.index("(")]: part for part in parts}


@cache
def compiled(group: str, chip: str) -> tuple[tuple[Kernel, ...], str]:
    """The kernels of a group of specs and their one PTX module for ``chip``."""
    dtype, kind = group.split(":")
    specs = {"layouts": layout_specs, "features": feature_specs, "tiles": tile_specs}[kind](dtype)
    kernels = tuple(k for spec in specs for k in emit_gemm(spec, chip))
    return kernels, compile_kernels(list(kernels), chip)


GROUPS = [f"{dtype}:{kind}" for dtype in ("f16", "bf16", "f32") for kind in ("layouts", "features")]
# Other tiles: 8 warps, BK = 64 at 4 stages, 5 stages, and a tile smaller than one copy per thread.
TILES = (GemmTile(BM=128, BN=256, BK=32, WM=64, WN=64, STAGES=3), GemmTile(BK=64, STAGES=4),
         GemmTile(BM=64, BN=64, BK=64, WM=32, WN=32, STAGES=5), GemmTile(BM=32, BN=32, BK=16, WM=16, WN=16, STAGES=2))


@needs_ptxas
@pytest.mark.parametrize("chip", CHIPS)
@pytest.mark.parametrize("group", GROUPS)
def test_kernels_assemble_without_spills(group: str, chip: str) -> None:
    kernels, ptx = compiled(group, chip)
    resources = ptxas(ptx, chip)
    bodies = entries(ptx)
    assert sorted(bodies) == sorted(k.name for k in kernels), "one .entry per kernel"
    dtype = group.split(":")[0]
    for kernel in kernels:
        used = resources[kernel.name]
        print(f"{chip} {kernel.name}: {used.registers} registers, {used.spill_bytes} spill bytes")
        assert used.spill_bytes == 0, f"{kernel.name} spills on {chip}"
        body = bodies[kernel.name]
        if dtype == "f32":
            assert "mma.sync" not in body and "fma.rn.f32" in body
        else:
            assert f"mma.sync.aligned.m16n8k16.row.col.f32.{dtype}.{dtype}.f32" in body
            assert "ldmatrix.sync.aligned.m8n8.x4" in body
        assert ("cp.async.cg.shared.global" in body) == _copies_16_bytes(kernel), kernel.name
        if not _copies_16_bytes(kernel):  # odd strides: 4-byte copies of f32, element loads of 16-bit types
            assert ("cp.async.ca.shared.global" in body) == (dtype == "f32"), kernel.name
            assert ("ld.global" in body) == (dtype != "f32"), kernel.name
        assert kernel.launch.shared_bytes <= SHARED_LIMIT[chip]
        assert kernel.launch.block[0] == (kernel_tile(kernel).BM // kernel_tile(kernel).WM) * \
            (kernel_tile(kernel).BN // kernel_tile(kernel).WN) * 32


def kernel_tile(kernel: Kernel) -> GemmTile:
    if "_tile" in kernel.name:
        return TILES[int(kernel.name[-1])]
    return DUAL_TILE if "dual" in kernel.name else GemmTile(BM=64, BN=64, BK=32, WM=32, WN=32, STAGES=4) \
        if "init" in kernel.name else GemmTile()


def _copies_16_bytes(kernel: Kernel) -> bool:
    """Whether some operand of the kernel has 16-byte aligned rows: K = 1000 for mk A and nk B at 77x513x1000;
    the unaligned kernel of a dynamic GEMM has none."""
    if kernel.name.endswith("_unaligned"):
        return False
    return not kernel.name.endswith("_km_kn")


@needs_ptxas
@pytest.mark.parametrize("chip", CHIPS)
def test_other_tiles_assemble_without_spills(chip: str) -> None:
    kernels, ptx = compiled("bf16:tiles", chip)
    resources = ptxas(ptx, chip)
    for kernel in kernels:
        print(f"{chip} {kernel.name} {kernel_tile(kernel)}: {resources[kernel.name].registers} registers")
        assert resources[kernel.name].spill_bytes == 0, kernel.name
        assert kernel.launch.shared_bytes == gemm_shared_bytes(kernel_tile(kernel), "bf16", a_layout="mk",
                                                               b_layout="nk")


@needs_ptxas
def test_transposed_operands_use_transposed_ldmatrix() -> None:
    _, ptx = compiled("f16:layouts", "sm_80")
    bodies = entries(ptx)
    assert "ldmatrix.sync.aligned.m8n8.x4.trans" in bodies["f16_km_nk"]  # A stored k-major
    assert "ldmatrix.sync.aligned.m8n8.x4.trans" in bodies["f16_mk_kn"]  # B stored k-major
    assert ".trans" not in bodies["f16_mk_nk"]


def test_dynamic_strides_give_two_kernels_under_complementary_conditions() -> None:
    kernels = emit_gemm(gemm("dyn", "f16", "m", "n", "k"), "sm_80")
    assert [k.name for k in kernels] == ["dyn", "dyn_unaligned"]
    fast, slow = (k.launch.when for k in kernels)
    assert slow == f"not ({fast})"
    for k_size, n_size, chosen in ((64, 128, 0), (63, 128, 1), (64, 127, 1)):
        env = {"m": 10, "n": n_size, "k": k_size}
        assert [eval(k.launch.when, {}, env) for k in kernels] == [i == chosen for i in range(2)]
    assert kernels[0].launch.grid == ("cdiv(n, 128)", "cdiv(m, 128)", "1")
    assert [(p.kind, p.name) for p in kernels[0].launch.params] == [
        ("tensor", "dyn_a"), ("tensor", "dyn_b"), ("tensor", "dyn_c"), ("size", "m"), ("size", "n"), ("size", "k")]


def test_static_aligned_gemm_is_one_kernel_with_its_launch() -> None:
    spec = gemm("sq", "bf16", 256, 384, 512, batch=(4,))
    (kernel,) = emit_gemm(spec, "sm_90a")
    assert kernel.launch.when is None
    assert kernel.launch.grid == ("cdiv(384, 128)", "cdiv(256, 128)", "(4)")
    assert kernel.launch.block == (128, 1, 1)
    assert kernel.launch.shared_bytes == gemm_shared_bytes(GemmTile(), "bf16") == 3 * (128 * 32 + 32 * 128) * 2


def test_swizzle_keeps_ldmatrix_rows_in_distinct_bank_groups() -> None:
    for rows, cols in ((128, 32), (32, 128), (64, 16), (16, 64), (64, 64)):
        stored, _ = operand_tiles(GemmTile(BM=rows, BK=cols), "f16", "mk", "kn")
        shift, mask = stored.swizzle or (0, 0)
        for chunk in range(stored.chunks_per_row):
            for first in range(0, stored.rows, 8):
                groups = {((r * stored.row_len) // stored.vec + (chunk ^ ((r >> shift) & mask))) % 8
                          for r in range(first, first + 8)}
                assert len(groups) == 8, (rows, cols, chunk)


def test_oversized_and_malformed_tiles_are_refused_with_the_reason() -> None:
    spec = gemm("big", "f16", 4096, 4096, 4096)
    huge = GemmTile(BM=256, BN=256, BK=64, WM=64, WN=64, STAGES=5)
    problem = gemm_tile_problem(GemmSpec(**{**spec.__dict__, "tile": huge}), "sm_80")
    assert problem is not None and "shared memory" in problem and str(SHARED_LIMIT["sm_80"]) in problem
    with pytest.raises(UnsupportedOp, match="shared memory"):
        emit_gemm(GemmSpec(**{**spec.__dict__, "tile": huge}), "sm_80")
    cases = {
        GemmTile(BM=256, BN=256, WM=32, WN=32): "threads",
        GemmTile(WM=24, BM=96): "powers of two",
        GemmTile(WM=8, WN=64): "multiple of 16",
        GemmTile(STAGES=1): "stages",
        GemmTile(SPLITK=0): "SPLITK",
        GemmTile(SPLITK=MAX_SPLITK + 1): "SPLITK",
    }
    for tile, words in cases.items():
        problem = gemm_tile_problem(GemmSpec(**{**spec.__dict__, "tile": tile}), "sm_90a")
        assert problem is not None and words in problem, (tile, problem)
    dual = GemmSpec(**{**spec.__dict__, "b2": spec.b})
    assert str(MAX_ACCUMULATORS) in gemm_tile_problem(dual, "sm_80")
    assert gemm_tile_problem(spec, "sm_80") is None and gemm_tile_problem(spec, "sm_90a") is None
    assert gemm_tile_problem(spec, "sm_70") is not None


# -- numerics, by the reference interpreter -------------------------------------------------------------------------

SMALL = GemmTile(BM=32, BN=32, BK=16, WM=16, WN=16, STAGES=3)


def reference(spec: GemmSpec, inputs: dict[str, np.ndarray]) -> np.ndarray:
    """C in float64 from the inputs (already rounded to their types)."""
    a, b = inputs[spec.a.name].astype(np.float64), inputs[spec.b.name].astype(np.float64)
    a = a if spec.a_layout == "mk" else np.swapaxes(a, -1, -2)
    b = b if spec.b_layout == "kn" else np.swapaxes(b, -1, -2)
    acc = a @ b + (inputs[spec.init.name] if spec.init is not None else spec.init_value)
    if spec.b2 is not None:
        b2 = inputs[spec.b2.name].astype(np.float64)
        gate = a @ (b2 if spec.b_layout == "kn" else np.swapaxes(b2, -1, -2))
        return acc / (1 + np.exp(-acc)) * gate
    if spec.epilogue is not None:  # bias_residual
        return acc + inputs[f"{spec.name}_bias"] + inputs[f"{spec.name}_res"]
    return acc


def interpret(spec: GemmSpec, sizes: dict[str, int], seed: int) -> tuple[np.ndarray, np.ndarray]:
    """Run the kernel that the launch conditions pick for ``sizes`` in the interpreter; C and its reference."""
    rng = np.random.default_rng(seed)
    kernels = emit_gemm(spec, "sm_80")
    env = dict(sizes)
    (kernel,) = [k for k in kernels if k.launch.when is None or eval(k.launch.when, {}, env)]
    print(f"{kernel.name} (of {len(kernels)})")
    size = {**env, "cdiv": lambda a, b: -(-a // b)}
    tensors = {t.name: t for t in [spec.a, spec.b, spec.b2, spec.init, spec.c] if t is not None}
    if spec.epilogue:
        tensors |= {op.tensor.name: op.tensor for op in spec.epilogue.operands if op.tensor is not None}
    inputs = {}
    for name, t in tensors.items():
        shape = tuple(d if isinstance(d, int) else sizes[d] for d in t.shape)
        values = rng.standard_normal(shape) if name != spec.c.name else np.full(shape, np.nan)
        inputs[name] = cast_to(values, t.dtype)
    flat = {name: np.ascontiguousarray(v).reshape(-1) for name, v in inputs.items()}
    args = [flat[p.name] if p.kind == "tensor" else sizes[p.name] for p in kernel.launch.params]
    dtypes = [tensors[p.name].dtype if p.kind == "tensor" else None for p in kernel.launch.params]
    grid = tuple(eval(g, {}, size) for g in kernel.launch.grid)
    run_kernel(kernel.text, grid, kernel.launch.block[0], kernel.launch.shared_bytes, args, dtypes)
    return flat[spec.c.name].reshape(inputs[spec.c.name].shape), reference(spec, inputs)


def numeric_specs() -> list[tuple[GemmSpec, dict[str, int]]]:
    """Small GEMMs across types, layouts, copy widths, masks and features, with their sizes."""
    ragged = {"m": 37, "n": 45, "k": 50}  # K rows of 100 bytes (4-byte copies of f16), N odd (element loads)
    found = []
    for i, (dtype, (al, bl)) in enumerate(zip(("f16", "bf16", "f32", "f16"), LAYOUTS, strict=True)):
        found.append((gemm(f"num{i}", dtype, 37, 45, 50, (al, bl), tile=SMALL, init_value=0.5 * i), ragged))
        found.append((gemm(f"dyn{i}", dtype, "m", "n", "k", (al, bl), tile=SMALL), {"m": 40, "n": 48, "k": 64}))
    for dtype in ("f32", "bf16"):  # the kernels for strides a size symbol leaves unaligned
        found.append((gemm(f"odd_{dtype}", dtype, "m", "n", "k", ("km", "nk"), tile=SMALL), ragged))
    b2 = Tensor("dual_b2", "bf16", (72, 40))
    found.append((gemm("dual", "bf16", 33, 40, 72, out="f16", b2=b2, epilogue=silu_mul(), tile=SMALL), {}))
    found.append((gemm("epi", "f16", "m", 24, 40, ("mk", "nk"), batch=(2,), out="f16", tile=SMALL,
                       epilogue=bias_residual("epi", "m", 24, (2,))), {"m": 19}))
    for i, (dtype, (al, bl)) in enumerate(zip(("f16", "f32", "bf16"), LAYOUTS[1:], strict=True)):
        found.append((gemm(f"big{i}", dtype, 130, 136, 72, (al, bl)), {}))  # the default tile, 2 x 2 blocks
    # odd strides on both sides at the default tile: element loads stored before the math (registers are short)
    found.append((gemm("big_odd", "f16", 131, 135, 40, ("km", "kn")), {}))
    init = Tensor("init_c0", "f32", (2, 20, 36))
    found.append((gemm("init", "f32", 20, 36, 24, batch=(2,), init=init, tile=SMALL), {}))
    return found


@pytest.mark.parametrize("index", range(len(numeric_specs())))
def test_kernels_compute_the_product(index: int) -> None:
    spec, sizes = numeric_specs()[index]
    seed = 1000 + index
    print(f"seed {seed}")
    got, want = interpret(spec, sizes, seed)
    assert not np.isnan(got).any(), "every element of C is written"
    # Inputs are rounded to their types before the reference, so an f32 C differs only by the order of the sums;
    # an f16 C by its rounding.
    tolerance = {"f32": 1e-5, "f16": 1e-3}[spec.c.dtype]
    np.testing.assert_allclose(got, want, atol=tolerance * np.abs(want).max(), rtol=tolerance)


# -- split-K ----------------------------------------------------------------------------------------------------------

SPLIT_TILE = GemmTile(BM=16, BN=32, BK=32, WM=16, WN=16, STAGES=3, SPLITK=4)


def split_specs() -> list[tuple[GemmSpec, dict[str, int]]]:
    """Ragged skinny GEMMs (M=5, N=77, K=1000) split four ways: f16 with a bias+residual epilogue, bf16 from
    an initial tensor with an odd, dynamic K (element loads), f32 on FMAs split into more shares than K has
    steps (empty shares), a dual bf16 GEMM, and an even N (pairs of partials in one store)."""
    init = Tensor("sk_init_c0", "f32", (5, 77))
    b2 = Tensor("sk_dual_b2", "bf16", (1000, 40))
    return [
        (gemm("sk_epi", "f16", 5, 77, 1000, ("mk", "nk"), out="f16", tile=SPLIT_TILE,
              epilogue=bias_residual("sk_epi", 5, 77, ())), {}),
        (gemm("sk_init", "bf16", "m", 77, "k", ("km", "kn"), init=init, tile=SPLIT_TILE), {"m": 5, "k": 999}),
        (gemm("sk_fma", "f32", 5, 77, 40, init_value=0.5,
              tile=GemmTile(BM=16, BN=32, BK=8, WM=8, WN=16, STAGES=2, SPLITK=8)), {}),
        (gemm("sk_dual", "bf16", 5, 40, 1000, out="f16", b2=b2, epilogue=silu_mul(),
              tile=GemmTile(BM=16, BN=32, BK=32, WM=16, WN=16, STAGES=3, SPLITK=2)), {}),
        (gemm("sk_even", "f16", 9, "n", 1000, batch=(2,), tile=SPLIT_TILE), {"n": 78}),
    ]


def interpret_split(spec: GemmSpec, sizes: dict[str, int], seed: int, launches: int) -> list[np.ndarray]:
    """Run the split-K kernel ``launches`` times over the same temporaries (zeroed once, as the launcher
    does), each launch's blocks in another order; C after each launch, and its float64 reference."""
    rng = np.random.default_rng(seed)
    (kernel,) = [k for k in emit_gemm(spec, "sm_80") if k.launch.when is None or eval(k.launch.when, {}, sizes)]
    size = {**sizes, "cdiv": lambda a, b: -(-a // b)}
    tensors = {t.name: t for t in [spec.a, spec.b, spec.b2, spec.init, spec.c] if t is not None}
    if spec.epilogue:
        tensors |= {op.tensor.name: op.tensor for op in spec.epilogue.operands if op.tensor is not None}
    inputs = {}
    for name, t in tensors.items():
        shape = tuple(d if isinstance(d, int) else sizes[d] for d in t.shape)
        inputs[name] = cast_to(rng.standard_normal(shape), t.dtype)
    flat = {name: np.ascontiguousarray(v).reshape(-1) for name, v in inputs.items()}
    for t in kernel.temporaries:
        count = int(np.prod([eval(str(d), {}, size) for d in t.shape]))
        flat[t.name] = np.zeros(count, {"f32": np.float32, "i32": np.int32}[t.dtype])
        tensors[t.name] = t
    grid = tuple(eval(g, {}, size) for g in kernel.launch.grid)
    args = [flat[p.name] if p.kind == "tensor" else sizes[p.name] for p in kernel.launch.params]
    dtypes = [tensors[p.name].dtype if p.kind == "tensor" else None for p in kernel.launch.params]
    results = []
    for launch in range(launches):
        flat[spec.c.name][:] = np.nan
        run_kernel(kernel.text, grid, kernel.launch.block[0], kernel.launch.shared_bytes, args, dtypes,
                   seed=None if launch == 0 else seed + launch)
        counters = flat[kernel.temporaries[1].name]
        assert not counters.any(), "the last block of each tile resets its counter"
        results.append(flat[spec.c.name].reshape(inputs[spec.c.name].shape).copy())
    return [*results, reference(spec, inputs)]


@pytest.mark.parametrize("index", range(len(split_specs())))
def test_split_k_computes_the_product_deterministically(index: int) -> None:
    spec, sizes = split_specs()[index]
    *runs, want = interpret_split(spec, sizes, 2000 + index, launches=3)
    tolerance = {"f32": 1e-5, "f16": 1e-3}[spec.c.dtype]
    for got in runs:
        assert not np.isnan(got).any(), "every element of C is written"
        np.testing.assert_allclose(got, want, atol=tolerance * np.abs(want).max(), rtol=tolerance)
        # the partials are summed in share order whichever block is last: the same bits every launch
        np.testing.assert_array_equal(got.view(np.uint8), runs[0].view(np.uint8))


def skinny_split_specs(dtype: str) -> list[GemmSpec]:
    """The skinny shapes split-K is for (1, 16 and 128 x 4096 x 4096, a ragged dynamic one, a batched dual
    GEMM with an epilogue), at the tiles the search gives them."""
    one = GemmTile(BM=16, BN=64, BK=64, WM=16, WN=32, STAGES=4, SPLITK=16)
    wide = GemmTile(BM=128, BN=128, BK=32, WM=64, WN=32, STAGES=3, SPLITK=4)
    b2 = Tensor(f"skinny_{dtype}_b2", dtype, (2, 4096, 512))
    return [
        gemm(f"skinny_{dtype}_1", dtype, 1, 4096, 4096, ("mk", "nk"), out="f16", tile=one),
        gemm(f"skinny_{dtype}_16", dtype, 16, 4096, 4096, ("mk", "kn"), tile=replace(one, SPLITK=8)),
        gemm(f"skinny_{dtype}_128", dtype, 128, 4096, 4096, ("mk", "nk"), tile=wide),
        gemm(f"skinny_{dtype}_dyn", dtype, "m", "n", "k", ("km", "nk"), tile=replace(one, SPLITK=4)),
        gemm(f"skinny_{dtype}_dual", dtype, 16, 512, 4096, batch=(2,), out="f16", b2=b2, epilogue=silu_mul(),
             tile=GemmTile(BM=16, BN=64, BK=64, WM=16, WN=32, STAGES=4, SPLITK=8)),
    ]


@needs_ptxas
@pytest.mark.parametrize("chip", CHIPS)
@pytest.mark.parametrize("dtype", ("f16", "bf16", "f32"))
def test_split_k_kernels_assemble_without_spills(dtype: str, chip: str) -> None:
    """One launch each: the grid's z walks batch x shares, the temporaries are the partials and the per-tile
    counters; the PTX fences and counts with one atomic add, and does not spill."""
    specs = skinny_split_specs(dtype)
    if dtype == "f32":  # FMAs: a smaller warp tile
        specs = [replace(s, tile=replace(s.tile, WM=min(s.tile.BM // 2, 32), WN=32, BK=16)) for s in specs]
    kernels = [k for spec in specs for k in emit_gemm(spec, chip)]
    ptx = compile_kernels(kernels, chip)
    resources, bodies = ptxas(ptx, chip), entries(ptx)
    for spec in specs:
        for kernel in [k for k in kernels if k.name in (spec.name, f"{spec.name}_unaligned")]:
            used = resources[kernel.name]
            print(f"{chip} {kernel.name}: {used.registers} registers, {used.spill_bytes} spill bytes")
            assert used.spill_bytes == 0, f"{kernel.name} spills on {chip}"
            body = bodies[kernel.name]
            assert body.count("atom.global.add.u32") == 1 and body.count("fence.acq_rel.gpu") == 2
            split = spec.tile.SPLITK
            partials, counters = kernel.temporaries
            products = 2 if spec.b2 is not None else 1
            padded = -(-spec.n // spec.tile.BN) * spec.tile.BN if isinstance(spec.n, int) else \
                f"cdiv({spec.n}, {spec.tile.BN}) * {spec.tile.BN}"
            assert partials.dtype == "f32" and partials.shape == (products * split, *spec.batch, spec.m, padded)
            assert counters.dtype == "i32"
            sizes = {"m": 77, "n": 1000, "k": 3000}
            tiles = [evaluate(str(d), sizes) for d in counters.shape]
            grid = [evaluate(g, sizes) for g in kernel.launch.grid]
            assert tiles[-2:] == [grid[1], grid[0]] and grid[2] == math.prod(tiles[:-2]) * split
            assert {partials.name, counters.name} <= {p.name for p in kernel.launch.params}


def test_split_k_refuses_what_it_cannot_split() -> None:
    """More shares than MAX_SPLITK; warp tiles whose accumulators leave no registers for the last block's sum
    (64 x 64 on tensor cores, 32 x 64 on FMAs, a dual 32 x 64)."""
    split = GemmTile(BM=128, BN=128, BK=32, WM=64, WN=64, SPLITK=4)
    cases = [("f16", replace(split, BM=16, BN=64, WM=16, WN=32, SPLITK=128), {}, "1 to 64 shares"),
             ("f16", split, {}, "at most 64"),
             ("f32", replace(split, WM=32), {}, "at most 32"),
             ("bf16", replace(split, WM=32), {"b2": Tensor("refuse_b2", "bf16", (4096, 4096))}, "at most 64")]
    for dtype, tile, extra, words in cases:
        spec = gemm("refuse", dtype, 16, 4096, 4096, tile=tile, **extra)
        assert words in (gemm_tile_problem(spec, "sm_80") or ""), (tile, gemm_tile_problem(spec, "sm_80"))
        with pytest.raises(UnsupportedOp, match="SPLITK"):
            emit_gemm(spec, "sm_80")
        assert gemm_tile_problem(replace(spec, tile=replace(tile, SPLITK=1)), "sm_80") is None


# -- tile order (GROUP_M) ----------------------------------------------------------------------------------------------


@pytest.mark.parametrize("group_m", [1, 2, 3, 4, 8, 16])
@pytest.mark.parametrize("tiles", [(1, 1), (1, 7), (7, 1), (5, 3), (9, 4), (16, 16), (13, 29)], ids=str)
def test_tile_order_takes_every_tile_once(tiles: tuple[int, int], group_m: int) -> None:
    """Any GROUP_M and any (ragged) tile counts: the order is a permutation of the tiles, GROUP_M = 1 is row by
    row, and a group's tiles lie within its GROUP_M rows, walking them before the next column."""
    tiles_m, tiles_n = tiles
    order = [tile_order(i, tiles_m, tiles_n, group_m) for i in range(tiles_m * tiles_n)]
    assert sorted(order) == [(m, n) for m in range(tiles_m) for n in range(tiles_n)]
    if group_m == 1:
        assert order == [divmod(i, tiles_n) for i in range(tiles_m * tiles_n)]
    for i, (m, n) in enumerate(order):
        group = i // (group_m * tiles_n)
        assert group * group_m <= m < (group + 1) * group_m
        rows = min(group_m, tiles_m - group * group_m)
        assert n == i % (group_m * tiles_n) // rows


def tile_order_kernel(group_m: int) -> str:
    """A kernel whose block x stores the tile that :func:`emit_tile_order` gives its linear index: M tile times N
    tiles plus N tile, at ``out[x]``."""
    t = TextBuilder()
    with t.region("gpu.func @order(%out: memref<?xi32>, %tm: index, %tn: index) kernel"):
        linear = t.value("gpu.block_id x", "bx")
        tile_m, tile_n = emit_tile_order(t, linear, "%tm", "%tn", group_m)
        place = t.value(f"arith.addi {t.value(f'arith.muli {tile_m}, %tn : index')}, {tile_n} : index")
        value = t.value(f"arith.index_cast {place} : index to i32")
        t.add(f"memref.store {value}, %out[{linear}] : memref<?xi32>")
        t.add("gpu.return")
    return t.function_text()


@pytest.mark.parametrize("group_m", [1, 4, 8])
@pytest.mark.parametrize("tiles", [(5, 3), (9, 4), (13, 7)], ids=str)
def test_kernel_tile_order_is_the_model(tiles: tuple[int, int], group_m: int) -> None:
    """The kernels' index arithmetic (run by the interpreter) gives the model's tile for every linear index."""
    tiles_m, tiles_n = tiles
    count = tiles_m * tiles_n
    out = np.full(count, -1, np.int32)
    run_kernel(tile_order_kernel(group_m), (count, 1, 1), 1, 0, [out, tiles_m, tiles_n], ["i32", None, None])
    want = [m * tiles_n + n for m, n in (tile_order(i, tiles_m, tiles_n, group_m) for i in range(count))]
    assert out.tolist() == want


def test_grouped_gemm_computes_the_product() -> None:
    """GROUP_M = 4 over 5 x 3 ragged tiles (M = 147, N = 90 in 32 x 32 tiles): the grouped block-to-tile mapping
    writes every element of C once, and C is the float64 product."""
    spec = gemm("grouped", "f16", 147, 90, 40, ("mk", "nk"), tile=replace(SMALL, GROUP_M=4))
    got, want = interpret(spec, {}, 3000)
    assert not np.isnan(got).any(), "every element of C is written"
    np.testing.assert_allclose(got, want, atol=1e-5 * np.abs(want).max(), rtol=1e-5)


@needs_ptxas
@pytest.mark.parametrize("chip", CHIPS)
def test_grouped_kernels_assemble_without_spills(chip: str) -> None:
    """The grouped order's arithmetic costs no spills, split-K included (its counters index the mapped tile)."""
    grouped = GemmTile(BM=128, BN=128, BK=32, WM=64, WN=32, STAGES=3, GROUP_M=8)
    specs = [gemm("grouped_f16", "f16", "m", "n", "k", tile=grouped),
             gemm("grouped_split", "bf16", 16, 4096, 4096, ("mk", "nk"),
                  tile=GemmTile(BM=16, BN=64, BK=64, WM=16, WN=32, STAGES=4, SPLITK=8, GROUP_M=4))]
    kernels = [k for spec in specs for k in emit_gemm(spec, chip)]
    used = ptxas(compile_kernels(kernels, chip), chip)
    for kernel in kernels:
        assert used[kernel.name].spill_bytes == 0, (kernel.name, used[kernel.name])
