"""The direct GEMM kernel (prism.codegen.cpu.kernel) against float64 numpy, on shapes chosen to hit its edges.

Every case runs the whole host lowering and the JIT on fresh random inputs
(the seed is printed; fix it with PRISM_SEED).
"""

from __future__ import annotations

import re

import numpy as np
import pytest
from mlir import ir

from prism.codegen.cpu import CpuLowering
from prism.codegen.cpu.kernel import KernelPlan, kernel_text
from prism.infra.ir import make_context
from prism.infra.passbase import PassContext
from prism.runtime.cpu import jit


def run(text: str, threads: int, *args: np.ndarray) -> np.ndarray:
    """Lower and run @mm, checking that its contraction took the kernel, not the transform path."""
    with make_context(), ir.Location.unknown():
        module = ir.Module.parse(text)
        stages = CpuLowering(threads, PassContext(), 256)
        stages.tile(module)
        assert "linalg.matmul" not in str(module) and "linalg.batch_matmul" not in str(module)
        assert "vector.fma" in str(module)
        for stage in stages.stages()[1:]:
            stage.run(module)
        return jit(module, "mm")(*args)


def choice(tm: int, tn: int, tk: int, rm: int, rn: int, pack: int = 1) -> str:
    return (f'{{prism.roles = ["m", "n", "k"], prism.choice = '
            f'{{TM = {tm}, TN = {tn}, TK = {tk}, RM = {rm}, RN = {rn}, PACK = {pack}}}}}')


def gemm_text(m: int | None, n: int, k: int, attrs: str, zero_init: bool = True) -> str:
    """C = A @ B (+ C0 when not ``zero_init``); ``m`` None is a dynamic M."""
    dm = "?" if m is None else m
    a, b, c = f"tensor<{dm}x{k}xf32>", f"tensor<{k}x{n}xf32>", f"tensor<{dm}x{n}xf32>"
    if not zero_init:
        head, init = f"func.func @mm(%a: {a}, %b: {b}, %init: {c}) -> {c} {{\n", ""
    else:
        head = f"func.func @mm(%a: {a}, %b: {b}) -> {c} {{\n"
        size = "%d" if m is None else ""
        init = (f"  %i0 = arith.constant 0 : index\n  %d = tensor.dim %a, %i0 : {a}\n" if m is None else "") + (
            f"  %zero = arith.constant 0.0 : f32\n  %e = tensor.empty({size}) : {c}\n"
            f"  %init = linalg.fill ins(%zero : f32) outs(%e : {c}) -> {c}\n")
    return (head + init + f"  %r = linalg.matmul {attrs} ins(%a, %b : {a}, {b}) outs(%init : {c}) -> {c}\n"
            f"  return %r : {c}\n}}\n")


def check(result: np.ndarray, reference: np.ndarray, k: int) -> None:
    """Within 8 ulp of f32 per term of a K-long dot product, relative to the result's scale."""
    scale = max(1.0, float(np.abs(reference).max()))
    np.testing.assert_allclose(result, reference, rtol=0, atol=8 * 1.2e-7 * k * scale)


@pytest.mark.parametrize("m, n, k, attrs, threads", [
    (1, 4096 + 24, 300, choice(1, 512, 8, 1, 32), 2),  # decode: B streamed in place, a ragged last panel
    (5, 203, 77, choice(8, 64, 32, 1, 16), 2),  # one-row blocks stream B for 5 rows; K slices of 32 = 4x8 + 5
    (1, 50, 7, choice(1, 64, 8, 1, 16), 3),  # decode splits K over three workers: 3 + 3 + 1 rows of B
    (1, 20, 2, choice(1, 16, 8, 1, 8), 3),  # K shorter than the workers: the third sums nothing
    (3, 200, 77, choice(8, 64, 16, 4, 16), 3),  # fewer rows than a micro-tile; three workers
    (16, 300, 129, choice(16, 128, 64, 6, 16), 2),  # 16 rows in 6-row panels: the last repeats its row
    (97, 61, 45, choice(102, 32, 16, 6, 16), 1),  # B packed, ragged everywhere, K slices of 16
    (64, 64, 8, choice(64, 32, 256, 4, 16), 2),  # K shorter than one slice
    (130, 70, 33, choice(256, 256, 32, 8, 8), 2),  # tiles larger than the problem
])
def test_kernel_matches_float64(rng: np.random.Generator, m: int, n: int, k: int, attrs: str, threads: int) -> None:
    a, b = rng.standard_normal((m, k), dtype=np.float32), rng.standard_normal((k, n), dtype=np.float32)
    check(run(gemm_text(m, n, k, attrs), threads, a, b), a.astype(np.float64) @ b, k)


# A row panel of a few rows reads B in place (KernelPlan.sweeps_b) and prefetches its columns two K slices
# (at least 16 rows) ahead, clamped to B's last row: K = 45 ends within the distance of every slice, N = 203 is
# ragged (the ragged micro-tile does not prefetch), and K is static or dynamic.
@pytest.mark.parametrize("m, n, k, tiles, dynamic", [
    (8, 203, 45, (8, 64, 8, 8, 32), False),
    (5, 96, 300, (8, 32, 16, 8, 16), False),
    (3, 203, 45, (8, 64, 4, 4, 32), True),
])
def test_kernel_prefetches_b_it_sweeps(rng: np.random.Generator, m: int, n: int, k: int, tiles: tuple,
                                       dynamic: bool) -> None:
    text = dynamic_text(m, choice(*tiles, pack=0)) if dynamic else gemm_text(m, n, k, choice(*tiles, pack=0))
    with make_context(), ir.Location.unknown():
        module = ir.Module.parse(text)
        CpuLowering(2, PassContext(), 256).tile(module)
        tiled = str(module)
    assert "panels" not in tiled
    # Each row of B that a micro-tile reads (RN / 8 vectors of 8 lanes here), one prefetch per 64-byte line of
    # it, at a row clamped to K - 1.
    ahead = max(16, 2 * tiles[2])
    prefetches = re.findall(r"%(\w+) = arith.addi %\w+, %c" + str(ahead) + r" : index\n\s*%(\w+) = arith.minui %\1, "
                            r"%(\w+) : index\n((?:\s*memref.prefetch .*\n)+)", tiled)
    assert prefetches, tiled
    for _, row, _, lines in prefetches:
        assert lines.count("memref.prefetch") == tiles[4] // 16
        assert all(f"[%{row}, " in line for line in lines.strip().splitlines())
    a, b = rng.standard_normal((m, k), dtype=np.float32), rng.standard_normal((k, n), dtype=np.float32)
    check(run(text, 2, a, b), a.astype(np.float64) @ b, k)


# A product of many rows whose B is copied into panels in a phase of its own prefetches nothing of B in place.
def test_kernel_with_panels_does_not_prefetch_b_in_place() -> None:
    with make_context(), ir.Location.unknown():
        module = ir.Module.parse(gemm_text(97, 61, 45, choice(102, 32, 16, 6, 16)))
        CpuLowering(2, PassContext(), 256, copy_in_phase_bytes=61 * 45 * 4).tile(module)
        assert "memref.prefetch" not in str(module)


# Register blocks, streaming one-row blocks, and decode (K split over the workers, their sums added to C's init).
@pytest.mark.parametrize("m, rm", [(37, 4), (37, 1), (1, 1)])
def test_kernel_accumulates_into_its_init(rng: np.random.Generator, m: int, rm: int) -> None:
    a, b = rng.standard_normal((m, 50), dtype=np.float32), rng.standard_normal((50, 45), dtype=np.float32)
    c0 = rng.standard_normal((m, 45), dtype=np.float32)
    result = run(gemm_text(m, 45, 50, choice(40, 32, 16, rm, 16), zero_init=False), 2, a, b, c0)
    check(result, c0 + a.astype(np.float64) @ b, 50)


# A dynamic M always takes the kernel, so these cover several row blocks per problem (TM = 24).
@pytest.mark.parametrize("m, rm", [(1, 6), (5, 6), (64, 6), (131, 6), (1, 1), (30, 1)])
def test_kernel_dynamic_m(rng: np.random.Generator, m: int, rm: int) -> None:
    a, b = rng.standard_normal((m, 96), dtype=np.float32), rng.standard_normal((96, 40), dtype=np.float32)
    check(run(gemm_text(None, 40, 96, choice(24, 32, 32, rm, 16)), 2, a, b), a.astype(np.float64) @ b, 96)


# Several row blocks keep each column block's panels for all of K (KernelPlan.reuse_panels): the workers
# take column-major shares of the 5 x 3 tasks, copying B only when their column block changes (K = 45 in
# three slices of 16, the last ragged; N = 70 in column blocks of 32, the last ragged).
@pytest.mark.parametrize("threads", [1, 2, 3])
def test_kernel_reuses_panels_across_row_blocks(rng: np.random.Generator, threads: int) -> None:
    text = gemm_text(None, 70, 45, choice(24, 32, 16, 6, 16))
    with make_context(), ir.Location.unknown():
        module = ir.Module.parse(text)
        CpuLowering(threads, PassContext(), 256).tile(module)
        assert f"memref<{threads}x3x2x16x16xf32>" in str(module)  # [workers][K slices][TN/RN][TK][RN]
    a, b = rng.standard_normal((110, 45), dtype=np.float32), rng.standard_normal((45, 70), dtype=np.float32)
    check(run(text, threads, a, b), a.astype(np.float64) @ b, 45)


def dynamic_text(m: int | None, attrs: str, zero_init: bool = True) -> str:
    """C = A @ B with N and K dynamic (and M too when None)."""
    dm = "?" if m is None else m
    a, b, c = f"tensor<{dm}x?xf32>", "tensor<?x?xf32>", f"tensor<{dm}x?xf32>"
    if not zero_init:
        return (f"func.func @mm(%a: {a}, %b: {b}, %init: {c}) -> {c} {{\n"
                f"  %r = linalg.matmul {attrs} ins(%a, %b : {a}, {b}) outs(%init : {c}) -> {c}\n"
                f"  return %r : {c}\n}}\n")
    sizes = ("%m, %n" if m is None else "%n")
    return (f"func.func @mm(%a: {a}, %b: {b}) -> {c} {{\n"
            "  %i0 = arith.constant 0 : index\n  %i1 = arith.constant 1 : index\n"
            f"  %m = tensor.dim %a, %i0 : {a}\n  %n = tensor.dim %b, %i1 : {b}\n"
            f"  %zero = arith.constant 0.0 : f32\n  %e = tensor.empty({sizes}) : {c}\n"
            f"  %init = linalg.fill ins(%zero : f32) outs(%e : {c}) -> {c}\n"
            f"  %r = linalg.matmul {attrs} ins(%a, %b : {a}, {b}) outs(%init : {c}) -> {c}\n"
            f"  return %r : {c}\n}}\n")


# Where B may not fit the caches (here: N and K unknown), the copy into panels runs inside the micro-tiles of
# the slice before (KernelPlan.pipelined). Cases: slices of unequal length (K = 45 = 16 + 16 + 13, so a short
# slice precedes the next task's full one and the copy finishes after its micro-tiles), a ragged last column
# block and panel (N = 203), tasks shared by 1-3 workers, fewer rows than TM, several row blocks (dynamic M),
# and an init read by the first slice.
@pytest.mark.parametrize("m, n, k, tiles, threads, zero_init", [
    (16, 203, 45, (16, 64, 16, 4, 16), 2, True),
    (16, 203, 45, (16, 64, 16, 4, 16), 3, True),
    (7, 100, 300, (8, 32, 64, 4, 16), 1, True),
    (12, 64, 40, (12, 32, 8, 6, 8), 2, False),
    (None, 90, 70, (8, 32, 16, 4, 16), 2, True),
])
def test_kernel_pipelined_copy(rng: np.random.Generator, m: int | None, n: int, k: int, tiles: tuple, threads: int,
                               zero_init: bool) -> None:
    text = dynamic_text(m, choice(*tiles), zero_init)
    with make_context(), ir.Location.unknown():
        module = ir.Module.parse(text)
        CpuLowering(threads, PassContext(), 256).tile(module)
        tiled = str(module)
    tm, tn, tk, rm, rn = tiles
    assert f"memref<{threads}x2x{tn // rn}x{tk}x{rn}xf32>" in tiled  # two panel buffers per worker
    assert "memref.prefetch" in tiled
    rows = 37 if m is None else m
    a, b = rng.standard_normal((rows, k), dtype=np.float32), rng.standard_normal((k, n), dtype=np.float32)
    args, expected = (a, b), a.astype(np.float64) @ b
    if not zero_init:
        c0 = rng.standard_normal((rows, n), dtype=np.float32)
        args, expected = (a, b, c0), expected + c0
    check(run(text, threads, *args), expected, k)


def test_kernel_batch(rng: np.random.Generator) -> None:
    text = """func.func @mm(%a: tensor<3x20x33xf32>, %b: tensor<3x33x24xf32>) -> tensor<3x20x24xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<3x20x24xf32>
  %init = linalg.fill ins(%zero : f32) outs(%e : tensor<3x20x24xf32>) -> tensor<3x20x24xf32>
  %r = linalg.batch_matmul {prism.roles = ["batch", "m", "n", "k"],
                            prism.choice = {TM = 20, TN = 16, TK = 16, RM = 4, RN = 8}}
      ins(%a, %b : tensor<3x20x33xf32>, tensor<3x33x24xf32>) outs(%init : tensor<3x20x24xf32>) -> tensor<3x20x24xf32>
  return %r : tensor<3x20x24xf32>
}
"""
    a, b = rng.standard_normal((3, 20, 33), dtype=np.float32), rng.standard_normal((3, 33, 24), dtype=np.float32)
    check(run(text, 2, a, b), a.astype(np.float64) @ b, 33)


def test_kernel_text_is_deterministic_and_verifies() -> None:
    plan = KernelPlan(name="k", batch=False, a_type="tensor<?x64xf32>", b_type="tensor<64x40xf32>",
                      c_type="tensor<?x40xf32>", zero_init=True, tm=32, tn=32, tk=16, rm=4, rn=16, lanes=8,
                      pack=True, workers=2)
    assert kernel_text(plan) == kernel_text(plan)
    with make_context():
        ir.Module.parse(kernel_text(plan)).operation.verify()


INVARIANT = """func.func @f(%x: tensor<{m}x300xf32>, %w: tensor<300x200xf32> {{prism.invariant}},
             %v: tensor<{m}x200xf32>) -> tensor<{m}x200xf32> {{
  %r = linalg.matmul ins(%x, %w : tensor<{m}x300xf32>, tensor<300x200xf32>) outs(%v : tensor<{m}x200xf32>)
    -> tensor<{m}x200xf32>
  return %r : tensor<{m}x200xf32>
}}
"""


def _mapping(array: np.ndarray) -> object:
    """The object at the end of ``array``'s chain of bases (what a memoryview views, for one)."""
    while isinstance(array, np.ndarray) and array.base is not None:
        array = array.base
    return array.obj if isinstance(array, memoryview) else array


def test_a_large_prepared_weight_moves_to_huge_pages(rng: np.random.Generator, reference_host: None) -> None:
    """A prepared weight of 4 MiB or more is copied once, at bind time, into memory advised for transparent huge
    pages (an anonymous private mapping); a smaller one stays where the compiled code allocated it."""
    import mmap

    import prism
    from prism.runtime.cpu import HUGE_PAGE_MIN_BYTES

    for k, n, large in ((1024, 1024, True), (300, 200, False)):
        compiled = prism.compile(INVARIANT.replace("300", str(k)).replace("200", str(n)).format(m=16), target="host")
        x, v = rng.standard_normal((16, k), dtype=np.float32), rng.standard_normal((16, n), dtype=np.float32)
        w = rng.standard_normal((k, n), dtype=np.float32)
        bound = compiled.bind("f", w=w)
        (packed,) = bound.prepared
        assert (packed.nbytes >= HUGE_PAGE_MIN_BYTES) == large
        assert isinstance(_mapping(packed), mmap.mmap) == large
        assert packed.flags.c_contiguous and packed.ctypes.data % 64 == 0
        check(bound(x, v), v + x.astype(np.float64) @ w, k)


@pytest.mark.parametrize("m", [1, 5, 130])
def test_bound_weights_are_packed_once_and_rebinding_sees_new_values(rng: np.random.Generator, m: int,
                                                                      reference_host: None) -> None:
    """On the reference host, one row streams the weight in place and 5 and 130 rows read it packed (7 rows take
    two blocks of 4 there, which run on the transform path, as written, and it packs B itself)."""
    import prism

    compiled = prism.compile(INVARIANT.format(m=m), target="host")
    x = rng.standard_normal((m, 300), dtype=np.float32)
    w, v = rng.standard_normal((300, 200), dtype=np.float32), rng.standard_normal((m, 200), dtype=np.float32)
    bound = compiled.bind("f", w=w)
    if re.search(r"prism.choice = \{RM = 1 :", str(compiled.mlir)):
        assert bound.prepared == (), "a streaming kernel (one-row blocks) reads the weight where it lies"
    else:  # one packed copy of w: [ceil(200 / RN)][300][RN] panels
        (packed,) = bound.prepared
        assert packed.shape[1] == 300 and packed.shape[0] * packed.shape[2] >= 200
    check(bound(x, v), v + x.astype(np.float64) @ w, 300)
    check(compiled.jit("f")(x, w, v), v + x.astype(np.float64) @ w, 300)
    # Every jit() and bind() of one compiled module runs the same compiled code, compiled once.
    assert compiled.jit("f")._engine is bound.function._engine
    # The caller changes the weight: the old binding refuses to run; a new one computes with the new values.
    w += 1.0
    with pytest.raises(prism.PrismError, match="changed after bind"):
        bound(x, v)
    check(compiled.bind("f", w=w)(x, v), v + x.astype(np.float64) @ w, 300)
    # Binding every argument but x, positionally named, is a plain partial application.
    check(compiled.bind("f", arg1=w, v=v)(x), v + x.astype(np.float64) @ w, 300)
    with pytest.raises(prism.PrismError, match="no argument 'u'"):
        compiled.bind("f", u=w)
    with pytest.raises(prism.PrismError, match="dtype"):
        compiled.bind("f", w=w.astype(np.float64))


@pytest.mark.parametrize("attrs", [choice(16, 32, 128, 1, 8), choice(32, 64, 8, 4, 16)])
def test_every_point_of_the_host_space_compiles(rng: np.random.Generator, attrs: str) -> None:
    """RM = 1 and TK = 8 are in the space for kernel-shaped contractions, also where several row blocks
    would otherwise send them down the transform path (which needs RM >= 2)."""
    from prism.passes.lower_cpu import LowerCpuPass

    a, b = rng.standard_normal((100, 64), dtype=np.float32), rng.standard_normal((64, 40), dtype=np.float32)
    with make_context(), ir.Location.unknown():
        module = ir.Module.parse(gemm_text(100, 40, 64, attrs))
        LowerCpuPass(threads=2).run(module, PassContext())
        check(jit(module, "mm")(a, b), a.astype(np.float64) @ b, 64)
