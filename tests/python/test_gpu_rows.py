"""Row kernels (RMSNorm, softmax, layer norm, row sums) and elementwise kernels: their launch rule, their text, and
their PTX assembled by ptxas for sm_80 and sm_90a with no spills."""

from __future__ import annotations

import re

import pytest

from prism.codegen.gpu import ptx
from prism.codegen.gpu.rows import (
    SHORT_ROW,
    _stages,
    emit_pointwise,
    emit_rows,
    pointwise_vector,
    row_plans,
)
from prism.codegen.gpu.spec import Operand, Reduction, RowOutput, RowSpec, ScalarFn, Tensor
from prism.codegen.text import TextBuilder

CHIPS = ("sm_80", "sm_90a")
needs_ptxas = pytest.mark.skipif(ptx.ptxas_path() is None, reason="ptxas is not on PATH")


# -- scalar bodies ------------------------------------------------------------------------------------------------


def to_f32(t: TextBuilder, value: str, dtype: str) -> str:
    return value if dtype == "f32" else t.value(f"arith.extf {value} : {dtype} to f32")


def f32(t: TextBuilder, x: float) -> str:
    return t.value(f"arith.constant {x:e} : f32")


def binary(t: TextBuilder, op: str, a: str, b: str) -> str:
    return t.value(f"{op} {a}, {b} : f32")


def result(name: str) -> Operand:
    """An operand reading the reduction ``name``'s result."""
    return Operand("tensor", Tensor(name, "f32", ()), ())


def whole(tensor: Tensor) -> Operand:
    return Operand("tensor", tensor, tuple(range(tensor.rank)))


def columns_count(t: TextBuilder, cols: tuple) -> str:
    """The row's length as f32 (static only here: dynamic columns use a fixed 1/1024)."""
    n = 1
    for d in cols:
        n = n * d if isinstance(d, int) else 1024
    return f32(t, 1.0 / n)


# -- the specs ----------------------------------------------------------------------------------------------------


def rmsnorm(dtype: str, rows: tuple, cols: tuple) -> RowSpec:
    """y = x * rsqrt(sum(x^2) / n + eps) * w[last column index]."""
    x, w, y = Tensor("x", dtype, rows + cols), Tensor("w", dtype, cols[-1:]), Tensor("y", dtype, rows + cols)
    wop = Operand("tensor", w, (len(rows) + len(cols) - 1,))

    def square(t, v, _):
        xf = to_f32(t, v[0], dtype)
        return binary(t, "arith.mulf", xf, xf)

    def scale(t, v, _):
        mean = binary(t, "arith.mulf", v[1], columns_count(t, cols))
        inv = t.value(f"math.rsqrt {binary(t, 'arith.addf', mean, f32(t, 1e-6))} : f32")
        return binary(t, "arith.mulf", binary(t, "arith.mulf", to_f32(t, v[0], dtype), inv), to_f32(t, v[2], dtype))

    return RowSpec("rmsnorm", rows, cols, (Reduction("ss", "add", 0.0, ScalarFn((whole(x),), "f32", square)),),
                   (RowOutput(y, ScalarFn((whole(x), result("ss"), wop), "f32", scale)),))


def softmax(dtype: str, rows: tuple, cols: tuple) -> RowSpec:
    """max, then sum of exp(x - max), then exp(x - max) / sum."""
    x, y = Tensor("x", dtype, rows + cols), Tensor("p", dtype, rows + cols)

    def shifted_exp(t, v, _):
        return t.value(f"math.exp {binary(t, 'arith.subf', to_f32(t, v[0], dtype), v[1])} : f32")

    def probability(t, v, _):
        return binary(t, "arith.divf", shifted_exp(t, v, _), v[2])

    return RowSpec("softmax", rows, cols,
                   (Reduction("mx", "max", float("-inf"), ScalarFn((whole(x),), dtype, lambda t, v, _: v[0])),
                    Reduction("se", "add", 0.0, ScalarFn((whole(x), result("mx")), "f32", shifted_exp))),
                   (RowOutput(y, ScalarFn((whole(x), result("mx"), result("se")), "f32", probability)),))


def row_sum(dtype: str, rows: tuple, cols: tuple) -> RowSpec:
    """s[row] = scale[row] * sum(x[row, :]), written once per row."""
    x, scale, s = Tensor("x", dtype, rows + cols), Tensor("scale", "f32", rows), Tensor("s", dtype, rows)
    return RowSpec("row_sum", rows, cols,
                   (Reduction("sum", "add", 0.0, ScalarFn((whole(x),), dtype, lambda t, v, _: v[0])),),
                   (RowOutput(s, ScalarFn((whole(scale), result("sum")), "f32",
                                          lambda t, v, _: binary(t, "arith.mulf", v[0], v[1])), per_row=True),))


def layer_norm(dtype: str, rows: tuple, cols: tuple) -> RowSpec:
    """Sum and sum of squares in one stage, then (x - mean) * rsqrt(var + eps) * w + b."""
    x, y = Tensor("x", dtype, rows + cols), Tensor("y", dtype, rows + cols)
    w, b = Tensor("w", "f32", cols), Tensor("b", "f32", cols)
    colops = tuple(range(len(rows), len(rows) + len(cols)))

    def square(t, v, _):
        xf = to_f32(t, v[0], dtype)
        return binary(t, "arith.mulf", xf, xf)

    def normalize(t, v, _):
        inv_n = columns_count(t, cols)
        mean = binary(t, "arith.mulf", v[1], inv_n)
        var = binary(t, "arith.subf", binary(t, "arith.mulf", v[2], inv_n), binary(t, "arith.mulf", mean, mean))
        inv = t.value(f"math.rsqrt {binary(t, 'arith.addf', var, f32(t, 1e-5))} : f32")
        centred = binary(t, "arith.subf", to_f32(t, v[0], dtype), mean)
        return binary(t, "arith.addf", binary(t, "arith.mulf", binary(t, "arith.mulf", centred, inv), v[3]), v[4])

    return RowSpec("layer_norm", rows, cols,
                   (Reduction("s1", "add", 0.0, ScalarFn((whole(x),), dtype, lambda t, v, _: v[0])),
                    Reduction("s2", "add", 0.0, ScalarFn((whole(x),), "f32", square))),
                   (RowOutput(y, ScalarFn((whole(x), result("s1"), result("s2"), Operand("tensor", w, colops),
                                           Operand("tensor", b, colops)), "f32", normalize)),))


SHAPES = {
    "7x1000": ((7,), (1000,)),
    "3x5x77": ((3,), (5, 77)),
    "dyn_rows": (("r",), (1000,)),
    "dyn_cols": ((7,), ("n",)),
    "2x3x4096": ((2, 3), (4096,)),
    "5x11008": ((5,), (11008,)),
}


def renamed(spec: RowSpec, suffix: str) -> RowSpec:
    return RowSpec(spec.name + suffix, spec.rows, spec.cols, spec.reductions, spec.outputs)


def entries(text: str) -> dict[str, str]:
    """Each kernel's PTX body, by name."""
    parts = re.split(r"\.entry (\w+)\(", text)
    return dict(zip(parts[1::2], parts[2::2], strict=True))


def assemble(kernels, chip: str) -> tuple[str, dict]:
    text = ptx.compile_kernels(kernels, chip)
    return text, ptx.ptxas(text, chip)


# -- the launch rule ----------------------------------------------------------------------------------------------


def test_short_rows_take_a_warp_each():
    (plan,) = row_plans(rmsnorm("f16", (7,), (1000,)))
    assert (plan.threads, plan.rows_per_block, plan.vector) == (32, 4, 8)
    assert plan.cached == 4  # 125 chunks of 8 over 32 lanes
    (kernel,) = emit_rows(rmsnorm("f16", (7,), (1000,)), "sm_90a")
    assert kernel.launch.block == (128, 1, 1) and kernel.launch.grid[0] == "cdiv(7, 4)"
    assert [p.name for p in kernel.launch.params] == ["y", "x", "w"]


def test_long_rows_take_a_block_and_stay_in_registers():
    (plan,) = row_plans(rmsnorm("f16", (5,), (11008,)))
    assert (plan.threads, plan.rows_per_block, plan.vector, plan.cached) == (1024, 1, 8, 2)
    (plan,) = row_plans(softmax("f32", (2, 3), (4096,)))
    assert (plan.threads, plan.vector, plan.cached) == (512, 4, 2)
    (kernel,) = emit_rows(softmax("f32", (2, 3), (4096,)), "sm_80")
    assert kernel.launch.grid[0] == "2 * 3" and "workgroup(%red: memref<64xf32" in kernel.text


def test_dynamic_columns_give_a_short_and_a_long_kernel():
    kernels = emit_rows(rmsnorm("bf16", ("r",), ("n",)), "sm_90a")
    assert [k.launch.when for k in kernels] == [f"n <= {SHORT_ROW}", f"n > {SHORT_ROW}"]
    assert [k.launch.block[0] for k in kernels] == [128, 512]
    assert [p.name for p in kernels[0].launch.params][-2:] == ["r", "n"]
    short, long = row_plans(rmsnorm("bf16", ("r",), ("n",)))
    assert (short.vector, short.cached, long.vector, long.cached) == (8, 4, 8, 0)
    # rows whose length is not a multiple of 8 take the scalar path of the same kernel
    assert (short.fallback.vector, short.fallback.cached, long.fallback.vector) == (1, 32, 1)
    assert "scf.for" in kernels[1].text and "scf.for" not in kernels[0].text
    assert "vector.load" in kernels[0].text and "arith.remui %size1, %c8" in kernels[0].text
    (static_inner,) = row_plans(rmsnorm("f16", ("n",), (16,)))[:1]
    assert static_inner.vector == 8 and static_inner.fallback is None


def test_row_inputs_read_twice_stay_in_registers():
    # x (arg1) feeds the sum of squares and the output: loaded once per cached chunk; w (arg2) only by the output
    (kernel,) = emit_rows(rmsnorm("f16", (7,), (1000,)), "sm_90a")
    assert kernel.text.count("vector.load %arg1[") == 4 and kernel.text.count("vector.load %arg2[") == 4
    assert kernel.text.index("vector.load %arg2[") > kernel.text.index("gpu.shuffle")
    # without a static bound on the columns, each sweep of the long-row kernel reloads x
    long = emit_rows(softmax("f16", (7,), ("n",)), "sm_90a")[1]
    assert long.text.count("vector.load %arg1[") == 3 and long.text.count("memref.load %arg1[") == 3
    assert long.text.count("scf.for") == 6  # three sweeps on each side of the alignment test


def test_unaligned_columns_read_scalars():
    assert row_plans(softmax("f16", (3,), (5, 77)))[0].vector == 1
    assert "vector.load" not in emit_rows(softmax("f16", (3,), (5, 77)), "sm_90a")[0].text
    assert row_plans(softmax("f16", (3,), (77, 12)))[0].vector == 4


def test_independent_reductions_share_a_sweep():
    assert _stages(layer_norm("f16", (4,), (512,))) == [[0, 1]]
    assert _stages(softmax("f16", (4,), (512,))) == [[0], [1]]


def test_bad_specs_are_refused():
    spec = rmsnorm("f16", (7,), (1000,))
    wrong = RowOutput(Tensor("y", "f16", (7, 999)), spec.outputs[0].value)
    with pytest.raises(ValueError, match="shape"):
        emit_rows(RowSpec("bad", spec.rows, spec.cols, spec.reductions, (wrong,)), "sm_90a")
    acc = ScalarFn((Operand("acc"),), "f32", lambda t, v, _: v[0])
    with pytest.raises(ValueError, match="'acc'"):
        emit_rows(RowSpec("bad", spec.rows, spec.cols, (Reduction("a", "add", 0.0, acc),), ()), "sm_90a")
    soft = softmax("f16", (7,), (1000,))
    with pytest.raises(ValueError, match="later reduction"):
        emit_rows(RowSpec("bad", soft.rows, soft.cols, soft.reductions[::-1], soft.outputs), "sm_90a")
    per_row = RowOutput(Tensor("s", "f16", (7,)), spec.outputs[0].value, per_row=True)
    with pytest.raises(ValueError, match="column-indexed"):
        emit_rows(RowSpec("bad", spec.rows, spec.cols, spec.reductions, (per_row,)), "sm_90a")


# -- PTX ----------------------------------------------------------------------------------------------------------


@needs_ptxas
@pytest.mark.parametrize("shape", list(SHAPES))
@pytest.mark.parametrize("dtype", ["f16", "bf16", "f32"])
def test_row_kernels_assemble_without_spills(dtype, shape):
    rows, cols = SHAPES[shape]
    specs = [rmsnorm(dtype, rows, cols), softmax(dtype, rows, cols), row_sum(dtype, rows, cols)]
    if shape in ("7x1000", "5x11008"):
        specs.append(layer_norm(dtype, rows, cols))
    kernels = [k for spec in specs for k in emit_rows(spec, "sm_90a")]
    for chip in CHIPS:
        text, resources = assemble(kernels, chip)
        assert set(resources) == {k.name for k in kernels}
        for name, body in entries(text).items():
            assert resources[name].spill_bytes == 0, (chip, name, resources[name])
            assert "shfl.sync.bfly" in body, name
    if (not isinstance(cols[-1], int) or cols[-1] % 8 == 0) and dtype != "f32":
        assert "ld.global.v4" in text and "st.global.v4" in text
    if any(k.launch.block[0] > 128 for k in kernels):
        assert "bar.sync" in text


@needs_ptxas
def test_a_single_row_and_a_scalar_operand():
    spec = softmax("f16", (), (1000,))
    temperature = Operand("tensor", Tensor("temperature", "f32", ()), ())
    first = spec.reductions[0]
    scaled = Reduction(first.name, first.combine, first.init,
                       ScalarFn((whole(Tensor("x", "f16", (1000,))), temperature), "f32",
                                lambda t, v, _: binary(t, "arith.mulf", to_f32(t, v[0], "f16"), v[1])))
    spec = RowSpec("single", (), (1000,), (scaled,) + spec.reductions[1:], spec.outputs)
    (kernel,) = emit_rows(spec, "sm_90a")
    assert kernel.launch.grid[0] == "cdiv(1, 4)"
    assert "memref.load %arg2[%c0]" in kernel.text  # the scalar is read once, at 0
    for chip in CHIPS:
        _, resources = assemble([kernel], chip)
        assert resources["single"].spill_bytes == 0


# -- elementwise --------------------------------------------------------------------------------------------------


def affine(dtype: str, shape: tuple) -> tuple[Tensor, ScalarFn]:
    """out = x * s[first index] + b[last index] (f32 arithmetic), every index broadcast where it can be."""
    x, out = Tensor("x", dtype, shape), Tensor("out", dtype, shape)
    s, b = Tensor("s", "f32", shape[:1]), Tensor("b", dtype, shape[-1:])
    operands = (whole(x), Operand("tensor", s, (0,)), Operand("tensor", b, (len(shape) - 1,)))

    def body(t, v, _):
        return binary(t, "arith.addf", binary(t, "arith.mulf", to_f32(t, v[0], dtype), v[1]), to_f32(t, v[2], dtype))

    return out, ScalarFn(operands, "f32", body)


def transpose(dtype: str, m, n) -> tuple[Tensor, ScalarFn]:
    """out[i, j] = x[j, i] + 1 (a gathered read)."""
    x, out = Tensor("x", dtype, (n, m)), Tensor("out", dtype, (m, n))
    one = ScalarFn((Operand("tensor", x, (1, 0)),), "f32",
                   lambda t, v, _: binary(t, "arith.addf", to_f32(t, v[0], dtype), f32(t, 1.0)))
    return out, one


@needs_ptxas
@pytest.mark.parametrize("dtype", ["f16", "bf16", "f32"])
def test_pointwise_kernels_assemble(dtype):
    cases = {"rank1": affine(dtype, (1000,)), "rank2_dyn": affine(dtype, ("m", 64)),
             "rank3": affine(dtype, (3, 5, 77)), "rank4_dyn": affine(dtype, (2, "a", "b", 16)),
             "transposed": transpose(dtype, "m", 48)}
    kernels = [k for name, (out, fn) in cases.items() for k in emit_pointwise(f"pw_{name}", out, fn, "sm_90a")]
    for chip in CHIPS:
        text, resources = assemble(kernels, chip)
        assert all(r.spill_bytes == 0 for r in resources.values()) and set(resources) == {k.name for k in kernels}
        bodies = entries(text)
        assert "st.global.v4" in bodies["pw_rank2_dyn"] and "ld.global.v4" in bodies["pw_rank2_dyn"]
        assert "st.global.v4" not in bodies["pw_rank3"]


def test_boolean_operands_are_read_as_scalars():
    mask, x = Tensor("mask", "i1", (4, 64)), Tensor("x", "f16", (4, 64))
    out = Tensor("out", "f16", (4, 64))
    fn = ScalarFn((whole(mask), whole(x)), "f16",
                  lambda t, v, _: t.value(f"arith.select {v[0]}, {v[1]}, {v[1]} : f16"))
    (kernel,) = emit_pointwise("masked", out, fn, "sm_90a")
    assert pointwise_vector(out, fn) == 8
    assert "vector.load %arg1" not in kernel.text and kernel.text.count("memref.load %arg1") == 8


def test_pointwise_launch():
    out, fn = affine("f16", ("m", 64))
    assert pointwise_vector(out, fn) == 8  # 16 bytes of f16; the f32 scale is read once per chunk
    (kernel,) = emit_pointwise("pw", out, fn, "sm_90a")
    grid = eval(kernel.launch.grid[0], {"cdiv": lambda a, b: -(-a // b), "m": 100})
    assert grid == -(-100 * 64 // 8 // 256)
    assert [p.name for p in kernel.launch.params] == ["out", "x", "s", "b", "m"]
    assert pointwise_vector(*affine("f32", (3, 5, 77))) == 1
