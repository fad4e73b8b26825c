"""The tiled program of GPU specs, run on the host, against float64 numpy; and a wrong one, caught."""

from __future__ import annotations

import math

import ml_dtypes
import numpy as np
import pytest

from prism.codegen.gpu.spec import (
    AttentionSpec,
    GemmSpec,
    GemmTile,
    GenericSpec,
    Operand,
    PointwiseSpec,
    Reduction,
    RowOutput,
    RowSpec,
    ScalarFn,
    Tensor,
)
from prism.codegen.gpu.tiled import TiledProgram, split_affine_map, tiled_function
from prism.codegen.text import TextBuilder
from prism.infra.errors import PrismError
from prism.runtime.gpu_check import numpy_dtype, run_tiled

# Twice the unit roundoff of each output type (f32: with room for the accumulation's roundings), relative to
# the largest magnitude of the result.
TOLERANCE = {"f16": 1e-3, "bf16": 8e-3, "f32": 2e-6}


def draw(rng: np.random.Generator, tensor: Tensor, shape: tuple[int, ...], scale: float = 1.0) -> np.ndarray:
    """Random normal data of the tensor's type."""
    return (rng.standard_normal(shape) * scale).astype(numpy_dtype(tensor.dtype))


def wide(array: np.ndarray) -> np.ndarray:
    return np.asarray(array, dtype=np.float64)


def assert_close(got: np.ndarray, want: np.ndarray, dtype: str) -> None:
    """``got`` (of ``dtype``) within a rounding of ``dtype`` of ``want``, relative to the largest magnitude."""
    scale = max(float(np.abs(want).max()), 1.0)
    error = float(np.abs(wide(got) - want).max())
    assert error <= TOLERANCE[dtype] * scale, f"max error {error} (scale {scale})"


# -- scalar functions ---------------------------------------------------------------------------------------------


def f32(b: TextBuilder, value: str, dtype: str) -> str:
    return value if dtype == "f32" else b.value(f"arith.extf {value} : {dtype} to f32")


def to(b: TextBuilder, value: str, dtype: str) -> str:
    return value if dtype == "f32" else b.value(f"arith.truncf {value} : f32 to {dtype}")


def silu(b: TextBuilder, x: str) -> str:
    """``x / (1 + exp(-x))`` in f32."""
    one = b.value("arith.constant 1.0 : f32")
    e = b.value(f"math.exp {b.value(f'arith.negf {x} : f32')} : f32")
    return b.value(f"arith.divf {x}, {b.value(f'arith.addf {one}, {e} : f32')} : f32")


def silu_np(x: np.ndarray) -> np.ndarray:
    return x / (1 + np.exp(-x))


# -- GEMM ---------------------------------------------------------------------------------------------------------

TILE = GemmTile(BM=64, BN=64, BK=32)


def gemm(dtype: str, out: str, m: int | str, n: int, k: int, batch: tuple = (), a_layout: str = "mk",
         b_layout: str = "kn", **fields: object) -> GemmSpec:
    a_inner = (m, k) if a_layout == "mk" else (k, m)
    b_inner = (k, n) if b_layout == "kn" else (n, k)
    return GemmSpec(name="mm", a=Tensor("a", dtype, (*batch, *a_inner)), b=Tensor("b", dtype, (*batch, *b_inner)),
                    c=Tensor("c", out, (*batch, m, n)), m=m, n=n, k=k, batch=batch, a_layout=a_layout,
                    b_layout=b_layout, **{"tile": TILE, **fields})


def product(spec: GemmSpec, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """A @ B in float64 in the spec's layouts."""
    a = wide(a) if spec.a_layout == "mk" else np.swapaxes(wide(a), -1, -2)
    b = wide(b) if spec.b_layout == "kn" else np.swapaxes(wide(b), -1, -2)
    return a @ b


@pytest.mark.parametrize("dtype", ["f16", "bf16", "f32"])
def test_ragged_gemm(rng: np.random.Generator, dtype: str) -> None:
    spec = gemm(dtype, dtype, "m", 513, 100)
    a, b = draw(rng, spec.a, (77, 100)), draw(rng, spec.b, (100, 513))
    out = run_tiled([spec], {"a": a, "b": b}, [spec.c], [], {"m": 77})["c"]
    assert out.shape == (77, 513) and out.dtype == numpy_dtype(dtype)
    assert_close(out, product(spec, a, b), dtype)


def test_batched_transposed_gemm_from_a_value(rng: np.random.Generator) -> None:
    spec = gemm("bf16", "f32", 45, 70, "k", batch=(3,), a_layout="km", b_layout="nk", init_value=0.5)
    a, b = draw(rng, spec.a, (3, 37, 45)), draw(rng, spec.b, (3, 70, 37))
    out = run_tiled([spec], {"a": a, "b": b}, [spec.c], [], {"k": 37})["c"]
    assert_close(out, product(spec, a, b) + 0.5, "f32")


def test_gemm_bias_silu_epilogue(rng: np.random.Generator) -> None:
    bias = Tensor("bias", "f16", (130,))

    def emit(b: TextBuilder, values: list[str], point: list[str]) -> str:
        x = b.value(f"arith.addf {values[0]}, {f32(b, values[1], 'f16')} : f32")
        return to(b, silu(b, x), "f16")
    epilogue = ScalarFn((Operand("acc"), Operand("tensor", bias, (1,))), "f16", emit)
    spec = gemm("f16", "f16", 90, 130, 64, epilogue=epilogue)
    a, b, c = draw(rng, spec.a, (90, 64)), draw(rng, spec.b, (64, 130)), draw(rng, bias, (130,))
    out = run_tiled([spec], {"a": a, "b": b, "bias": c}, [spec.c], [], {})["c"]
    assert_close(out, silu_np(product(spec, a, b) + wide(c)), "f16")


def test_dual_gemm_silu_mul(rng: np.random.Generator) -> None:
    def emit(b: TextBuilder, values: list[str], point: list[str]) -> str:
        return to(b, b.value(f"arith.mulf {silu(b, values[0])}, {values[1]} : f32"), "bf16")
    epilogue = ScalarFn((Operand("acc"), Operand("acc2")), "bf16", emit)
    spec = gemm("bf16", "bf16", 70, 80, 50, b2=Tensor("b2", "bf16", (50, 80)), epilogue=epilogue)
    a, b, b2 = draw(rng, spec.a, (70, 50)), draw(rng, spec.b, (50, 80)), draw(rng, spec.b2, (50, 80))
    out = run_tiled([spec], {"a": a, "b": b, "b2": b2}, [spec.c], [], {})["c"]
    assert_close(out, silu_np(product(spec, a, b)) * product(spec, a, b2), "bf16")


def test_split_k_gemm_into_an_init(rng: np.random.Generator) -> None:
    """K = 100 in shares of two BK slices: one whole share, one ragged, one empty."""
    init = Tensor("init", "f32", (2, 77, 100))
    spec = gemm("f16", "f32", 77, 100, 100, batch=(2,), init=init, tile=GemmTile(BM=64, BN=64, BK=32, SPLITK=3))
    a, b, c0 = draw(rng, spec.a, (2, 77, 100)), draw(rng, spec.b, (2, 100, 100)), draw(rng, init, (2, 77, 100))
    out = run_tiled([spec], {"a": a, "b": b, "init": c0}, [spec.c], [], {})["c"]
    assert_close(out, wide(c0) + product(spec, a, b), "f32")


def test_split_k_dual_gemm_from_a_value(rng: np.random.Generator) -> None:
    """A dual GEMM split in four shares of one BK slice over a dynamic K = 70 (the last share empty), both
    products' partials summed onto init_value (the first) and zero (the second), as the kernels do."""
    def emit(b: TextBuilder, values: list[str], point: list[str]) -> str:
        return to(b, b.value(f"arith.mulf {silu(b, values[0])}, {values[1]} : f32"), "bf16")
    epilogue = ScalarFn((Operand("acc"), Operand("acc2")), "bf16", emit)
    spec = gemm("bf16", "bf16", 5, 77, "k", b2=Tensor("b2", "bf16", ("k", 77)), epilogue=epilogue,
                init_value=0.25, tile=GemmTile(BM=16, BN=32, BK=32, SPLITK=4))
    a, b, b2 = draw(rng, spec.a, (5, 70)), draw(rng, spec.b, (70, 77)), draw(rng, spec.b2, (70, 77))
    out = run_tiled([spec], {"a": a, "b": b, "b2": b2}, [spec.c], [], {"k": 70})["c"]
    assert_close(out, silu_np(product(spec, a, b) + 0.25) * product(spec, a, b2), "bf16")


# -- rows ---------------------------------------------------------------------------------------------------------


def result(name: str) -> Operand:
    """A row reduction's result as an operand."""
    return Operand("tensor", Tensor(name, "f32", ()))


def test_rms_norm(rng: np.random.Generator) -> None:
    x, w, y = Tensor("x", "f16", ("r", 300)), Tensor("w", "f16", (300,)), Tensor("y", "f16", ("r", 300))

    def square(b: TextBuilder, values: list[str], point: list[str]) -> str:
        v = f32(b, values[0], "f16")
        return b.value(f"arith.mulf {v}, {v} : f32")

    def normed(b: TextBuilder, values: list[str], point: list[str]) -> str:
        mean = b.value(f"arith.divf {values[1]}, {b.value('arith.constant 300.0 : f32')} : f32")
        eps = b.value("arith.constant 1.0e-6 : f32")
        scale = b.value(f"math.rsqrt {b.value(f'arith.addf {mean}, {eps} : f32')} : f32")
        v = b.value(f"arith.mulf {f32(b, values[0], 'f16')}, {scale} : f32")
        return to(b, b.value(f"arith.mulf {v}, {f32(b, values[2], 'f16')} : f32"), "f16")
    spec = RowSpec("rms", ("r",), (300,), (Reduction("ss", "add", 0.0, ScalarFn((Operand("tensor", x, (0, 1)),),
                                                                                  "f32", square)),),
                   (RowOutput(y, ScalarFn((Operand("tensor", x, (0, 1)), result("ss"), Operand("tensor", w, (1,))),
                                          "f16", normed)),))
    xs, ws = draw(rng, x, (37, 300)), draw(rng, w, (300,))
    out = run_tiled([spec], {"x": xs, "w": ws}, [y], [], {"r": 37})["y"]
    want = wide(xs) / np.sqrt((wide(xs) ** 2).mean(axis=1, keepdims=True) + 1e-6) * wide(ws)
    assert_close(out, want, "f16")


def softmax_spec(x: Tensor, y: Tensor, cols: tuple, top: Tensor | None = None) -> RowSpec:
    """Softmax over the last dimensions of x; with ``top``, each row's max is written too."""
    load = Operand("tensor", x, tuple(range(x.rank)))

    def value(b: TextBuilder, values: list[str], point: list[str]) -> str:
        return f32(b, values[0], x.dtype)

    def shifted(b: TextBuilder, values: list[str], point: list[str]) -> str:
        return b.value(f"math.exp {b.value(f'arith.subf {f32(b, values[0], x.dtype)}, {values[1]} : f32')} : f32")

    def normed(b: TextBuilder, values: list[str], point: list[str]) -> str:
        return to(b, b.value(f"arith.divf {shifted(b, values, point)}, {values[2]} : f32"), y.dtype)
    reductions = (Reduction("max", "max", -math.inf, ScalarFn((load,), "f32", value)),
                  Reduction("sum", "add", 0.0, ScalarFn((load, result("max")), "f32", shifted)))
    outputs = [RowOutput(y, ScalarFn((load, result("max"), result("sum")), y.dtype, normed))]
    if top is not None:
        outputs.append(RowOutput(top, ScalarFn((result("max"),), "f32", lambda b, v, p: v[0]), per_row=True))
    return RowSpec("softmax", tuple(x.shape[:x.rank - len(cols)]), cols, reductions, tuple(outputs))


def test_softmax_over_two_dimensions_with_its_max(rng: np.random.Generator) -> None:
    x, y = Tensor("x", "bf16", (5, "r", 7, 19)), Tensor("y", "f32", (5, "r", 7, 19))
    top = Tensor("top", "f32", (5, "r"))
    xs = draw(rng, x, (5, 3, 7, 19), scale=3.0)
    out = run_tiled([softmax_spec(x, y, (7, 19), top)], {"x": xs}, [y, top], [], {"r": 3})
    e = np.exp(wide(xs) - wide(xs).max(axis=(2, 3), keepdims=True))
    assert_close(out["y"], e / e.sum(axis=(2, 3), keepdims=True), "f32")
    assert_close(out["top"], wide(xs).max(axis=(2, 3)), "f32")


# -- attention ----------------------------------------------------------------------------------------------------


def attention(batch: tuple, sq: int | str, skv: int | str, d: int, dv: int, dtype: str = "f16",
              k_layout: str = "nd", **fields: object) -> AttentionSpec:
    k_inner = (skv, d) if k_layout == "nd" else (d, skv)
    return AttentionSpec("attn", Tensor("q", dtype, (*batch, sq, d)), Tensor("k", dtype, (*batch, *k_inner)),
                         Tensor("v", dtype, (*batch, skv, dv)), Tensor("o", dtype, (*batch, sq, dv)), batch, sq, skv,
                         d, dv, 1 / math.sqrt(d), k_layout, **fields)


def attention_inputs(rng: np.random.Generator, spec: AttentionSpec, sizes: dict[str, int]) -> dict[str, np.ndarray]:
    def shape(t: Tensor) -> tuple[int, ...]:
        return tuple(sizes.get(d, d) for d in t.shape)
    return {t.name: draw(rng, t, shape(t), scale=2.0) for t in (spec.q, spec.k, spec.v)}


def attention_np(spec: AttentionSpec, data: dict[str, np.ndarray]) -> np.ndarray:
    q, v = wide(data["q"]), wide(data["v"])
    k = wide(data["k"]) if spec.k_layout == "nd" else np.swapaxes(wide(data["k"]), -1, -2)
    s = q @ np.swapaxes(k, -1, -2) * spec.scale
    if spec.causal:
        sq, skv = s.shape[-2:]
        s = np.where(np.arange(skv)[None, :] > np.arange(sq)[:, None] + (skv - sq), -np.inf, s)
    p = np.exp(s - s.max(axis=-1, keepdims=True))
    return (p / p.sum(axis=-1, keepdims=True)) @ v


def run_attention(rng: np.random.Generator, spec: AttentionSpec, sizes: dict[str, int],
                  program: type[TiledProgram] | None = None) -> tuple[np.ndarray, np.ndarray]:
    data = attention_inputs(rng, spec, sizes)
    return run_tiled([spec], data, [spec.o], [], sizes, program=program)["o"], attention_np(spec, data)


@pytest.mark.parametrize("causal", [False, True])
def test_ragged_attention_prefill(rng: np.random.Generator, causal: bool) -> None:
    spec = attention((2,), "sq", 150, 32, 48, causal=causal)
    got, want = run_attention(rng, spec, {"sq": 100})
    assert_close(got, want, "f16")


def test_causal_prefill_with_keys_in_dn_layout(rng: np.random.Generator) -> None:
    spec = attention((2, 3), 70, "skv", 16, 16, dtype="bf16", k_layout="dn", causal=True)
    got, want = run_attention(rng, spec, {"skv": 70})
    assert_close(got, want, "bf16")


@pytest.mark.parametrize("splits", [3, 0])
def test_split_key_decode(rng: np.random.Generator, splits: int) -> None:
    spec = attention((2, 3), 1, "skv", 32, 40, splits=splits)
    got, want = run_attention(rng, spec, {"skv": 300})
    assert_close(got, want, "f16")


class NoRescale(TiledProgram):
    """The online softmax that forgets to rescale the running sum and O when the running max grows."""

    def rescale_factor(self, m_old: str, m_new: str) -> str:
        return self.const(1.0)


@pytest.mark.parametrize("sq", [100, 1])
def test_a_missing_rescale_is_caught(rng: np.random.Generator, sq: int) -> None:
    """Scores that grow along the keys (positive queries, keys plus a ramp) raise every row's max in each later
    key tile, where the rescale matters."""
    spec = attention((2,), sq, 200, 32, 32, splits=2)
    data = attention_inputs(rng, spec, {})
    data["q"] = np.abs(data["q"])
    ramp = np.linspace(0, 3, 200, dtype=np.float32)[None, :, None]
    data["k"] = (data["k"].astype(np.float32) + ramp).astype(np.float16)
    want = attention_np(spec, data)
    assert_close(run_tiled([spec], data, [spec.o], [], {})["o"], want, "f16")
    got = run_tiled([spec], data, [spec.o], [], {}, program=NoRescale)["o"]
    assert np.isfinite(wide(got)).all()
    with pytest.raises(AssertionError, match="max error"):
        assert_close(got, want, "f16")


# -- pointwise and generic ----------------------------------------------------------------------------------------


def test_pointwise_transpose_and_cast(rng: np.random.Generator) -> None:
    x, y = Tensor("x", "f32", ("m", 33)), Tensor("y", "bf16", (33, "m"))
    spec = PointwiseSpec("t", y, ScalarFn((Operand("tensor", x, (1, 0)),), "bf16",
                                          lambda b, v, p: to(b, v[0], "bf16")))
    xs = draw(rng, x, (45, 33))
    out = run_tiled([spec], {"x": xs}, [y], [], {"m": 45})["y"]
    assert out.dtype == ml_dtypes.bfloat16
    np.testing.assert_array_equal(out, xs.T.astype(ml_dtypes.bfloat16))


def test_pointwise_math_without_an_intrinsic_calls_libm(rng: np.random.Generator) -> None:
    x, y = Tensor("x", "f16", (3, 50)), Tensor("y", "f16", (3, 50))
    spec = PointwiseSpec("erf", y, ScalarFn((Operand("tensor", x, (0, 1)),), "f16",
                                            lambda b, v, p: b.value(f"math.erf {v[0]} : f16")))
    xs = draw(rng, x, (3, 50))
    out = run_tiled([spec], {"x": xs}, [y], [], {})["y"]
    assert_close(out, np.vectorize(math.erf)(wide(xs)), "f16")


def test_generic_reduction_over_the_middle_dimension(rng: np.random.Generator) -> None:
    x, start = Tensor("x", "f16", (6, "r", 11)), Tensor("start", "f16", (6, 11))
    total, top = Tensor("total", "f32", (6, 11)), Tensor("top", "f16", (6, 11))

    def body(b: TextBuilder, inputs: list[str], outputs: list[str], indices: list[str]) -> list[str]:
        return [b.value(f"arith.addf {outputs[0]}, {f32(b, inputs[0], 'f16')} : f32"),
                b.value(f"arith.maximumf {outputs[1]}, {inputs[0]} : f16")]
    both = "affine_map<(d0, d1, d2) -> (d0, d2)>"
    spec = GenericSpec("g", (6, "r", 11), ("parallel", "reduction", "parallel"), (x,),
                       ("affine_map<(d0, d1, d2) -> (d0, d1, d2)>",), (total, top), (both, both), (0.25, start), body)
    xs, ss = draw(rng, x, (6, 29, 11)), draw(rng, start, (6, 11))
    out = run_tiled([spec], {"x": xs, "start": ss}, [total, top], [], {"r": 29})
    assert_close(out["total"], wide(xs).sum(axis=1) + 0.25, "f32")
    np.testing.assert_array_equal(out["top"], np.maximum(xs.max(axis=1), ss))


def test_kernels_in_sequence_through_a_temporary(rng: np.random.Generator) -> None:
    """A GEMM into a temporary, then a softmax over its rows: the second reads what the first wrote."""
    mm = gemm("f16", "f32", "m", 70, 40)
    y = Tensor("y", "f16", ("m", 70))
    xs, bs = draw(rng, mm.a, (50, 40)), draw(rng, mm.b, (40, 70))
    out = run_tiled([mm, softmax_spec(mm.c, y, (70,))], {"a": xs, "b": bs}, [y], [mm.c], {"m": 50})["y"]
    logits = product(mm, xs, bs)
    e = np.exp(logits - logits.max(axis=1, keepdims=True))
    assert_close(out, e / e.sum(axis=1, keepdims=True), "f16")


# -- the interface ------------------------------------------------------------------------------------------------


def test_function_parameters_are_tensors_then_sizes() -> None:
    fn = tiled_function([gemm("f16", "f32", "m", 64, "k")])
    assert [t.name for t in fn.tensors] == ["a", "b", "c"] and fn.sizes == ("k", "m")
    assert fn.text.startswith("func.func @tiled(%tensor0: memref<?xf16>, %tensor1: memref<?xf16>, "
                              "%tensor2: memref<?xf32>, %size0: index, %size1: index)")
    assert "scf.forall" in fn.text


def test_affine_maps_split_per_result() -> None:
    assert split_affine_map("affine_map<(d0, d1) -> ((d0 + d1) floordiv 2, 0)>") == [
        "affine_map<(d0, d1) -> ((d0 + d1) floordiv 2)>", "affine_map<(d0, d1) -> (0)>"]
    assert split_affine_map("affine_map<(d0) -> ()>") == []
    with pytest.raises(ValueError, match="affine map"):
        split_affine_map("affine_map<(d0)[s0] -> (d0 + s0)>")


def test_missing_data_is_refused() -> None:
    spec = gemm("f16", "f32", 8, 8, 8)
    with pytest.raises(PrismError, match="neither inputs"):
        run_tiled([spec], {"a": np.zeros((8, 8), np.float16)}, [spec.c], [], {})
    with pytest.raises(PrismError, match="expected"):
        run_tiled([spec], {"a": np.zeros((8, 8), np.float32), "b": np.zeros((8, 8), np.float16)}, [spec.c], [], {})
