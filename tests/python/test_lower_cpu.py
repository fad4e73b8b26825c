"""prism-lower-cpu + prism.runtime.cpu.jit against a float64 numpy reference.

Inputs are fresh random arrays; the seed is printed (run with ``-s`` to see
it) and can be fixed with ``PRISM_TEST_SEED``.
"""

from __future__ import annotations

import os
import random

import numpy as np
import pytest
from mlir import ir

from prism.infra.errors import PrismError, UnsupportedOp
from prism.infra.passbase import PassContext
from prism.passes.lower_cpu import LowerCpuPass
from prism.runtime.cpu import ArgumentError, JitFunction, describe_signature, jit

TUNED = '{prism.roles = ["m", "n", "k"], prism.choice = {TM = 24, TN = 64, TK = 32, RM = 6, RN = 16, PACK = 1}}'
UNPACKED = '{prism.roles = ["m", "n", "k"], prism.choice = {TM = 16, TN = 32, TK = 16, RM = 4, RN = 16, PACK = 0}}'


@pytest.fixture
def rng() -> np.random.Generator:
    seed = int(os.environ.get("PRISM_TEST_SEED", random.randrange(2**31)))
    print(f"seed = {seed}")
    return np.random.default_rng(seed)


def compile_text(text: str, name: str | None = None, threads: int = 2) -> JitFunction:
    with ir.Context(), ir.Location.unknown():
        module = ir.Module.parse(text)
        LowerCpuPass(threads=threads).run(module, PassContext())
        return jit(module, name)


def tolerance(dtype: type, k: int) -> float:
    """Relative-to-scale error allowed for a K-long dot product of [0, 1) values."""
    eps = {np.float16: 1e-3, np.float32: 1.2e-7, np.float64: 2.3e-16}[dtype]
    return 8 * eps * k


def check(result: np.ndarray, reference: np.ndarray, dtype: type, k: int) -> None:
    assert result.shape == reference.shape
    scale = max(1.0, float(np.abs(reference).max()))
    np.testing.assert_allclose(result, reference, rtol=0, atol=tolerance(dtype, k) * scale)


def matmul_text(m: int, n: int, k: int, attrs: str, ty: str = "f32") -> str:
    return f"""
func.func @mm(%a: tensor<{m}x{k}x{ty}>, %b: tensor<{k}x{n}x{ty}>) -> tensor<{m}x{n}x{ty}> {{
  %zero = arith.constant 0.0 : {ty}
  %e = tensor.empty() : tensor<{m}x{n}x{ty}>
  %c = linalg.fill ins(%zero : {ty}) outs(%e : tensor<{m}x{n}x{ty}>) -> tensor<{m}x{n}x{ty}>
  %r = linalg.matmul {attrs} ins(%a, %b : tensor<{m}x{k}x{ty}>, tensor<{k}x{n}x{ty}>)
                     outs(%c : tensor<{m}x{n}x{ty}>) -> tensor<{m}x{n}x{ty}>
  return %r : tensor<{m}x{n}x{ty}>
}}"""


@pytest.mark.parametrize("m, n, k, attrs", [
    (64, 64, 64, TUNED),
    (256, 256, 256, TUNED),
    (127, 255, 63, TUNED),
    (127, 255, 63, UNPACKED),
    (33, 40, 17, ""),  # untuned: default choice values
])
def test_matmul_f32(rng: np.random.Generator, m: int, n: int, k: int, attrs: str) -> None:
    f = compile_text(matmul_text(m, n, k, attrs))
    a, b = rng.random((m, k), dtype=np.float32), rng.random((k, n), dtype=np.float32)
    check(f(a, b), a.astype(np.float64) @ b, np.float32, k)


def choice_attrs(choice: str) -> str:
    return f'{{prism.roles = ["m", "n", "k"], prism.choice = {{{choice}}}}}'


# Block grids (M blocks x N blocks) on which async-parallel-for ran some blocks
# of the two-dimensional block loop more than once, adding their product into C
# again: 22 x 4 blocks on 2 threads and 11 x 2 blocks on 1 thread. The small
# shapes keep the grids with one register tile per block; the last ones are ragged.
@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize("m, n", [(132, 64), (66, 32), (130, 61), (61, 30), (138, 80)])
def test_block_grids(rng: np.random.Generator, threads: int, m: int, n: int) -> None:
    attrs = choice_attrs("TM = 6, TN = 16, TK = 16, RM = 6, RN = 16")
    f = compile_text(matmul_text(m, n, 40, attrs), threads=threads)
    a, b = rng.random((m, 40), dtype=np.float32), rng.random((40, n), dtype=np.float32)
    check(f(a, b), a.astype(np.float64) @ b, np.float32, 40)


@pytest.mark.parametrize("threads, choice", [
    (2, "TM = 48, TN = 256, TK = 256, RM = 6, RN = 16"),  # 22 x 4 blocks
    (1, "TM = 96, TN = 512, TK = 256, RM = 6, RN = 16"),  # 11 x 2 blocks
])
def test_block_grids_1024(rng: np.random.Generator, threads: int, choice: str) -> None:
    f = compile_text(matmul_text(1024, 1024, 1024, choice_attrs(choice)), threads=threads)
    a, b = rng.random((1024, 1024), dtype=np.float32), rng.random((1024, 1024), dtype=np.float32)
    check(f(a, b), a.astype(np.float64) @ b, np.float32, 1024)


@pytest.mark.parametrize("threads", [1, 2])
def test_batch_block_grid(rng: np.random.Generator, threads: int) -> None:
    # 20 x 2 x 2 blocks: the batch dim makes the block loop three-dimensional.
    f = compile_text("""
func.func @bmm(%a: tensor<20x12x24xf32>, %b: tensor<20x24x32xf32>) -> tensor<20x12x32xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<20x12x32xf32>
  %c = linalg.fill ins(%zero : f32) outs(%e : tensor<20x12x32xf32>) -> tensor<20x12x32xf32>
  %r = linalg.batch_matmul {prism.roles = ["batch", "m", "n", "k"],
                            prism.choice = {TM = 6, TN = 16, TK = 8, RM = 6, RN = 16, PACK = 1}}
         ins(%a, %b : tensor<20x12x24xf32>, tensor<20x24x32xf32>)
         outs(%c : tensor<20x12x32xf32>) -> tensor<20x12x32xf32>
  return %r : tensor<20x12x32xf32>
}""", threads=threads)
    a, b = rng.random((20, 12, 24), dtype=np.float32), rng.random((20, 24, 32), dtype=np.float32)
    check(f(a, b), a.astype(np.float64) @ b, np.float32, 24)


def test_matmul_f64(rng: np.random.Generator) -> None:
    attrs = TUNED.replace("RN = 16", "RN = 8")
    f = compile_text(matmul_text(50, 70, 90, attrs, "f64"))
    a, b = rng.random((50, 90)), rng.random((90, 70))
    check(f(a, b), a @ b, np.float64, 90)


def test_matmul_f16_inputs_f32_accumulation(rng: np.random.Generator) -> None:
    f = compile_text(f"""
func.func @mm(%a: tensor<100x200xf16>, %b: tensor<200x48xf16>) -> tensor<100x48xf32> {{
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<100x48xf32>
  %c = linalg.fill ins(%zero : f32) outs(%e : tensor<100x48xf32>) -> tensor<100x48xf32>
  %r = linalg.matmul {TUNED} ins(%a, %b : tensor<100x200xf16>, tensor<200x48xf16>)
                     outs(%c : tensor<100x48xf32>) -> tensor<100x48xf32>
  return %r : tensor<100x48xf32>
}}""")
    a, b = rng.random((100, 200)).astype(np.float16), rng.random((200, 48)).astype(np.float16)
    # f16 inputs are exact in f32, so the only error is f32 accumulation.
    check(f(a, b), a.astype(np.float64) @ b.astype(np.float64), np.float32, 200)


def test_transposed_b_matmul(rng: np.random.Generator) -> None:
    f = compile_text(f"""
#a = affine_map<(m, n, k) -> (m, k)>
#bt = affine_map<(m, n, k) -> (n, k)>
#c = affine_map<(m, n, k) -> (m, n)>
func.func @mm(%a: tensor<70x96xf32>, %b: tensor<80x96xf32>) -> tensor<70x80xf32> {{
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<70x80xf32>
  %c = linalg.fill ins(%zero : f32) outs(%e : tensor<70x80xf32>) -> tensor<70x80xf32>
  %r = linalg.matmul indexing_maps = [#a, #bt, #c] {TUNED}
         ins(%a, %b : tensor<70x96xf32>, tensor<80x96xf32>) outs(%c : tensor<70x80xf32>) -> tensor<70x80xf32>
  return %r : tensor<70x80xf32>
}}""")
    a, b = rng.random((70, 96), dtype=np.float32), rng.random((80, 96), dtype=np.float32)
    check(f(a, b), a.astype(np.float64) @ b.T, np.float32, 96)


def test_generic_contraction_transposed_b(rng: np.random.Generator) -> None:
    # Loop order (n, k, m): roles follow the loops, not the operand layout.
    f = compile_text("""
#a = affine_map<(n, k, m) -> (m, k)>
#bt = affine_map<(n, k, m) -> (n, k)>
#c = affine_map<(n, k, m) -> (m, n)>
func.func @mm(%a: tensor<45x61xf32>, %b: tensor<50x61xf32>) -> tensor<45x50xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<45x50xf32>
  %c = linalg.fill ins(%zero : f32) outs(%e : tensor<45x50xf32>) -> tensor<45x50xf32>
  %r = linalg.generic {indexing_maps = [#a, #bt, #c], iterator_types = ["parallel", "reduction", "parallel"],
                       prism.roles = ["n", "k", "m"],
                       prism.choice = {TM = 12, TN = 32, TK = 16, RM = 6, RN = 16, PACK = 1}}
         ins(%a, %b : tensor<45x61xf32>, tensor<50x61xf32>) outs(%c : tensor<45x50xf32>) {
  ^bb0(%x: f32, %y: f32, %acc: f32):
    %p = arith.mulf %x, %y : f32
    %s = arith.addf %acc, %p : f32
    linalg.yield %s : f32
  } -> tensor<45x50xf32>
  return %r : tensor<45x50xf32>
}""")
    a, b = rng.random((45, 61), dtype=np.float32), rng.random((50, 61), dtype=np.float32)
    check(f(a, b), a.astype(np.float64) @ b.T, np.float32, 61)


def test_batch_matmul(rng: np.random.Generator) -> None:
    f = compile_text("""
func.func @bmm(%a: tensor<3x37x29xf32>, %b: tensor<3x29x40xf32>) -> tensor<3x37x40xf32> {
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<3x37x40xf32>
  %c = linalg.fill ins(%zero : f32) outs(%e : tensor<3x37x40xf32>) -> tensor<3x37x40xf32>
  %r = linalg.batch_matmul {prism.roles = ["batch", "m", "n", "k"],
                            prism.choice = {TM = 12, TN = 32, TK = 16, RM = 6, RN = 16, PACK = 1}}
         ins(%a, %b : tensor<3x37x29xf32>, tensor<3x29x40xf32>) outs(%c : tensor<3x37x40xf32>) -> tensor<3x37x40xf32>
  return %r : tensor<3x37x40xf32>
}""")
    a, b = rng.random((3, 37, 29), dtype=np.float32), rng.random((3, 29, 40), dtype=np.float32)
    check(f(a, b), a.astype(np.float64) @ b, np.float32, 29)


DYNAMIC_M = f"""
func.func @mm(%a: tensor<?x1024xf32>, %b: tensor<1024x64xf32>) -> tensor<?x64xf32> {{
  %zero = arith.constant 0.0 : f32
  %i0 = arith.constant 0 : index
  %m = tensor.dim %a, %i0 : tensor<?x1024xf32>
  %e = tensor.empty(%m) : tensor<?x64xf32>
  %c = linalg.fill ins(%zero : f32) outs(%e : tensor<?x64xf32>) -> tensor<?x64xf32>
  %r = linalg.matmul {TUNED} ins(%a, %b : tensor<?x1024xf32>, tensor<1024x64xf32>)
                     outs(%c : tensor<?x64xf32>) -> tensor<?x64xf32>
  return %r : tensor<?x64xf32>
}}"""


def test_dynamic_m(rng: np.random.Generator) -> None:
    f = compile_text(DYNAMIC_M)
    b = rng.random((1024, 64), dtype=np.float32)
    for m in (1, 7, 24, 131):
        a = rng.random((m, 1024), dtype=np.float32)
        check(f(a, b), a.astype(np.float64) @ b, np.float32, 1024)


def test_argument_checks(rng: np.random.Generator) -> None:
    f = compile_text(DYNAMIC_M)
    b = rng.random((1024, 64), dtype=np.float32)
    with pytest.raises(ArgumentError, match="dtype"):
        f(rng.random((3, 1024)), b)
    with pytest.raises(ArgumentError, match="rank"):
        f(rng.random(1024, dtype=np.float32), b)
    with pytest.raises(ArgumentError, match="dim 1 must be 1024"):
        f(rng.random((3, 1000), dtype=np.float32), b)
    with pytest.raises(ArgumentError, match="takes 2 arguments"):
        f(b)


def test_conv_pad_and_matmul_module(rng: np.random.Generator) -> None:
    f = compile_text(f"""
func.func @net(%x: tensor<1x8x8x3xf32>, %w: tensor<3x3x3x16xf32>, %b: tensor<16x20xf32>) -> tensor<100x20xf32> {{
  %zero = arith.constant 0.0 : f32
  %xp = tensor.pad %x low[0, 1, 1, 0] high[0, 1, 1, 0] {{
  ^bb0(%i: index, %j: index, %k: index, %l: index):
    tensor.yield %zero : f32
  }} : tensor<1x8x8x3xf32> to tensor<1x10x10x3xf32>
  %ce = tensor.empty() : tensor<1x8x8x16xf32>
  %cf = linalg.fill ins(%zero : f32) outs(%ce : tensor<1x8x8x16xf32>) -> tensor<1x8x8x16xf32>
  %conv = linalg.conv_2d_nhwc_hwcf {{dilations = dense<1> : tensor<2xi64>, strides = dense<1> : tensor<2xi64>}}
            ins(%xp, %w : tensor<1x10x10x3xf32>, tensor<3x3x3x16xf32>)
            outs(%cf : tensor<1x8x8x16xf32>) -> tensor<1x8x8x16xf32>
  %flat = tensor.collapse_shape %conv [[0, 1, 2], [3]] : tensor<1x8x8x16xf32> into tensor<64x16xf32>
  %rows = tensor.pad %flat low[0, 0] high[36, 0] {{
  ^bb0(%i: index, %j: index):
    tensor.yield %zero : f32
  }} : tensor<64x16xf32> to tensor<100x16xf32>
  %me = tensor.empty() : tensor<100x20xf32>
  %mf = linalg.fill ins(%zero : f32) outs(%me : tensor<100x20xf32>) -> tensor<100x20xf32>
  %r = linalg.matmul {TUNED} ins(%rows, %b : tensor<100x16xf32>, tensor<16x20xf32>)
         outs(%mf : tensor<100x20xf32>) -> tensor<100x20xf32>
  return %r : tensor<100x20xf32>
}}""")
    x, w = rng.random((1, 8, 8, 3), dtype=np.float32), rng.random((3, 3, 3, 16), dtype=np.float32)
    b = rng.random((16, 20), dtype=np.float32)
    xp = np.pad(x.astype(np.float64), ((0, 0), (1, 1), (1, 1), (0, 0)))
    conv = np.zeros((1, 8, 8, 16))
    for i in range(3):
        for j in range(3):
            conv += xp[:, i:i + 8, j:j + 8, :] @ w[i, j]
    rows = np.pad(conv.reshape(64, 16), ((0, 36), (0, 0)))
    check(f(x, w, b), rows @ b, np.float32, 27 * 16)


def test_two_results(rng: np.random.Generator) -> None:
    f = compile_text(f"""
func.func @two(%a: tensor<?x32xf32>, %b: tensor<32x48xf32>) -> (tensor<?x48xf32>, tensor<?x32xf32>) {{
  %zero = arith.constant 0.0 : f32
  %i0 = arith.constant 0 : index
  %m = tensor.dim %a, %i0 : tensor<?x32xf32>
  %e = tensor.empty(%m) : tensor<?x48xf32>
  %c = linalg.fill ins(%zero : f32) outs(%e : tensor<?x48xf32>) -> tensor<?x48xf32>
  %r = linalg.matmul {TUNED} ins(%a, %b : tensor<?x32xf32>, tensor<32x48xf32>)
         outs(%c : tensor<?x48xf32>) -> tensor<?x48xf32>
  %de = tensor.empty(%m) : tensor<?x32xf32>
  %d = linalg.add ins(%a, %a : tensor<?x32xf32>, tensor<?x32xf32>) outs(%de : tensor<?x32xf32>) -> tensor<?x32xf32>
  return %r, %d : tensor<?x48xf32>, tensor<?x32xf32>
}}""")
    a, b = rng.random((19, 32), dtype=np.float32), rng.random((32, 48), dtype=np.float32)
    product, doubled = f(a, b)
    check(product, a.astype(np.float64) @ b, np.float32, 32)
    np.testing.assert_array_equal(doubled, a + a)


def test_arguments_are_never_written(rng: np.random.Generator) -> None:
    """A matmul accumulating into an argument leaves the caller's array as it was (inputs are passed in place)."""
    f = compile_text(f"""
func.func @acc(%a: tensor<9x16xf32>, %b: tensor<16x40xf32>, %c: tensor<9x40xf32>) -> tensor<9x40xf32> {{
  %r = linalg.matmul {TUNED} ins(%a, %b : tensor<9x16xf32>, tensor<16x40xf32>)
         outs(%c : tensor<9x40xf32>) -> tensor<9x40xf32>
  return %r : tensor<9x40xf32>
}}""")
    a, b, c = (rng.random(shape, dtype=np.float32) for shape in ((9, 16), (16, 40), (9, 40)))
    saved = [x.copy() for x in (a, b, c)]
    check(f(a, b, c), c.astype(np.float64) + a.astype(np.float64) @ b, np.float32, 16)
    for x, before in zip((a, b, c), saved, strict=True):
        np.testing.assert_array_equal(x, before)


def test_strided_and_unaligned_inputs(rng: np.random.Generator) -> None:
    """Transposed views are copied to contiguous arrays; misaligned contiguous ones are read in place."""
    f = compile_text(matmul_text(33, 40, 17, TUNED))
    a = rng.random((17, 33), dtype=np.float32).T
    raw = rng.random(17 * 40 + 1, dtype=np.float32)
    b = raw[1:].reshape(17, 40)  # 4 bytes past an allocation: never 64-byte aligned
    assert not a.flags.c_contiguous and b.ctypes.data % 64
    check(f(a, b), a.astype(np.float64) @ b, np.float32, 17)


def test_signature_survives_lowering() -> None:
    with ir.Context(), ir.Location.unknown():
        module = ir.Module.parse(DYNAMIC_M)
        before = describe_signature(module, "mm")
        LowerCpuPass().run(module, PassContext())
        assert describe_signature(module, "mm") == before
        assert before.inputs[0].shape == (None, 1024)


def test_malformed_roles_are_rejected() -> None:
    bad = TUNED.replace('"m", "n", "k"', '"m", "n"')
    with ir.Context(), ir.Location.unknown():
        module = ir.Module.parse(matmul_text(8, 8, 8, bad))
        with pytest.raises(UnsupportedOp, match="2 entries for 3 loops"):
            LowerCpuPass().run(module, PassContext())


def test_roles_that_do_not_fit_fall_back(rng: np.random.Generator) -> None:
    swapped = TUNED.replace('"m", "n", "k"', '"n", "m", "k"')
    ctx = PassContext()
    with ir.Context(), ir.Location.unknown():
        module = ir.Module.parse(matmul_text(20, 30, 10, swapped))
        LowerCpuPass().run(module, ctx)
        f = jit(module)
    assert any("generic path" in message for _, message in ctx.remarks)
    a, b = rng.random((20, 10), dtype=np.float32), rng.random((10, 30), dtype=np.float32)
    check(f(a, b), a.astype(np.float64) @ b, np.float32, 10)


def test_jit_rejects_unlowered_module() -> None:
    with ir.Context(), ir.Location.unknown():
        module = ir.Module.parse(matmul_text(8, 8, 8, ""))
        with pytest.raises(PrismError, match="prism-lower-cpu"):
            jit(module)


AXPY = """
#id = affine_map<(i) -> (i)>
func.func @axpy(%a: f32, %x: tensor<?xf32>, %y: tensor<?xf32>) -> (tensor<?xf32>, tensor<?xf32>) {
  %c0 = arith.constant 0 : index
  %n = tensor.dim %x, %c0 : tensor<?xf32>
  %e = tensor.empty(%n) : tensor<?xf32>
  %r = linalg.generic {indexing_maps = [#id, #id, #id], iterator_types = ["parallel"]}
      ins(%x, %y : tensor<?xf32>, tensor<?xf32>) outs(%e : tensor<?xf32>) {
  ^bb0(%u: f32, %v: f32, %o: f32):
    %m = arith.mulf %a, %u : f32
    %s = arith.addf %m, %v : f32
    linalg.yield %s : f32
  } -> tensor<?xf32>
  return %r, %x : tensor<?xf32>, tensor<?xf32>
}
"""


def test_a_call_takes_scalars_views_and_returns_several_results(rng: np.random.Generator) -> None:
    """The call frame: a scalar passed by value, dynamic sizes, a strided view (copied first), two results
    (one the input itself, returned as a copy), and the same function called again with other sizes."""
    import prism

    axpy = prism.compile(AXPY, target="host").jit("axpy")
    for n, step in ((7, 1), (40, 3), (1, 1)):
        x = rng.standard_normal(n * step).astype(np.float32)[::step]
        y = rng.standard_normal(n).astype(np.float32)
        r, same = axpy(np.float32(2.5), x, y)
        np.testing.assert_allclose(r, 2.5 * x.astype(np.float64) + y, rtol=1e-6, atol=1e-6)
        np.testing.assert_array_equal(same, x)
        assert same.ctypes.data != x.ctypes.data
    with pytest.raises(ArgumentError, match="expected a float32 scalar"):
        axpy(np.ones(2, np.float32), x, y)
    with pytest.raises(ArgumentError, match="expected dtype float32"):
        axpy(1.0, x.astype(np.float64), y)
