"""--emit=iree: Prism's choices as IREE's compilation_info, proven by IREE's own compiler and runtime."""

from __future__ import annotations

import re
import sys
import time
from pathlib import Path

import numpy as np
import pytest

import prism
from conftest import REPO, run_cli
from prism.codegen.iree import compile_vmfb, load
from prism.search.space import Contraction
from prism.targets import get_target, host_space
from prism.targets.host import host_target

sys.path.insert(0, str(REPO / "benchmarks"))
from cpu_workloads import (  # noqa: E402
    NumpyOps,
    Workload,
    attention,
    causal_attention,
    gemm,
    lora,
    qk_norm_attention,
    qkv,
    rmsnorm_linear,
    rmsnorm_mlp,
    swiglu,
)

# The workloads of DESIGN section 9 at small, odd sizes (IREE compiles each in about a second).
WORKLOADS = [gemm("gemm-37x96x50", 37, 96, 50), rmsnorm_linear(5, 96), swiglu(3, 64), rmsnorm_mlp(3, 64), qkv(7, 64),
             lora(5, 96), attention(1, 2, 9, 33, 16), causal_attention(1, 2, 20, 16),
             qk_norm_attention(1, 2, 9, 33, 16)]


def gemm_contraction(m: int, n: int, k: int) -> Contraction:
    """An f32 GEMM of these sizes, as the search sees it."""
    return Contraction(roles=("m", "n", "k"), operand_dims=((0, 2), (2, 1)), extents=(m, n, k), elem_bytes=(4, 4),
                       acc_bytes=4, input_type="f32")


def inputs(workload: Workload, rng: np.random.Generator) -> list[np.ndarray]:
    values = workload.inputs(rng)
    return [values[a.name] for a in workload.args]


@pytest.mark.parametrize("workload", WORKLOADS, ids=[w.name for w in WORKLOADS])
def test_iree_runs_what_prism_configured_and_matches_float64(workload: Workload, rng: np.random.Generator) -> None:
    compiled = prism.compile(workload.mlir, target="host", emit="iree")
    configured = compiled.iree.count("compilation_info = #iree_codegen.compilation_info<")
    assert configured == compiled.mlir.count("prism.choice") and "prism." not in compiled.iree
    assert configured > 0 or workload.family.endswith("attention")  # IREE configures attention itself
    arrays = inputs(workload, rng)
    want = workload.compute(NumpyOps, *(a.astype(np.float64) for a in arrays))
    have = compiled.iree_function(workload.func)(*arrays)
    for got, expected in zip(have if isinstance(have, tuple) else (have,), want, strict=True):
        np.testing.assert_allclose(got, expected, rtol=1e-4, atol=1e-4 * np.abs(expected).max())


DYNAMIC_M = """
func.func @gemm(%a: tensor<?x96xf32>, %b: tensor<96x130xf32>) -> tensor<?x130xf32> {
  %zero = arith.constant 0.0 : f32
  %c0 = arith.constant 0 : index
  %m = tensor.dim %a, %c0 : tensor<?x96xf32>
  %e = tensor.empty(%m) : tensor<?x130xf32>
  %c = linalg.fill ins(%zero : f32) outs(%e : tensor<?x130xf32>) -> tensor<?x130xf32>
  %r = linalg.matmul ins(%a, %b : tensor<?x96xf32>, tensor<96x130xf32>) outs(%c : tensor<?x130xf32>)
      -> tensor<?x130xf32>
  return %r : tensor<?x130xf32>
}
"""


def test_a_dynamic_size_runs_at_every_size(rng: np.random.Generator) -> None:
    compiled = prism.compile(DYNAMIC_M, target="host", emit="iree")
    assert "compilation_info" in compiled.iree
    run = compiled.iree_function("gemm")
    for m in (1, 77, 300):
        a, b = rng.standard_normal((m, 96), np.float32), rng.standard_normal((96, 130), np.float32)
        np.testing.assert_allclose(run(a, b), a.astype(np.float64) @ b, rtol=1e-4, atol=1e-4)


def test_iree_uses_prism_tiles_not_its_defaults(tmp_path: Path) -> None:
    """IREE's dump of its configured executables shows the workgroup and vector tiles that the host target made
    of Prism's choice, not IREE's own: for a product of several row blocks, its packed operands' tiles and
    workgroup on linalg.mmt4d; for one row block (a single row), the double-tiling pipeline's."""
    for m, kind in ((200, "mmt4d"), (1, "matmul")):
        workload = gemm(f"gemm-{m}x96x130", m, 96, 130)
        compiled = prism.compile(workload.mlir, target="host", emit="iree")
        (family,) = [f for f in compiled.report["families"] if f["kind"] == "gemm"]
        op = gemm_contraction(m, 130, 96)
        packed = host_target().iree_data_tiling(op, family["choice"])
        assert (packed is not None) == (kind == "mmt4d") and f"linalg.{kind} {{compilation_info" in compiled.iree
        config = packed[1] if packed else host_target().iree_config(op, family["choice"])[0]
        tiles = re.findall(r"(distribution|vector_common_parallel) = (\[[0-9, ]*\])", config)
        folder = tmp_path / kind
        compile_vmfb(compiled.iree, "llvm-cpu", [f"--iree-hal-dump-executable-configurations-to={folder}"])
        dumped = "".join(path.read_text() for path in folder.iterdir())
        assert len(tiles) == 2 and all(f"{name} = {sizes}" in dumped for name, sizes in tiles)
        assert "vector_common_parallel = [8, 8, 0]" not in dumped and f"linalg.{kind}" in dumped


def test_what_iree_cannot_take_is_remarked(tmp_path: Path) -> None:
    source = tmp_path / "attention.mlir"
    source.write_text(attention(1, 2, 9, 33, 16).mlir)
    result = run_cli(str(source), "--target=host", "--emit=iree")
    assert result.returncode == 0, result.stderr
    assert re.search(r"attention.mlir:\d+:\d+: remark: IREE has no configuration for an attention family",
                     result.stderr)
    gemm_source = tmp_path / "gemm.mlir"
    gemm_source.write_text(gemm("g", 64, 64, 64).mlir)
    result = run_cli(str(gemm_source), "--target=host", "--emit=iree")
    assert "remark: IREE's configuration cannot express the K slice" in result.stderr


GEMM_F16 = """
func.func @mm(%a: tensor<512x256xf16>, %b: tensor<256x512xf16>) -> tensor<512x512xf32> {
  %z = arith.constant 0.0 : f32
  %e = tensor.empty() : tensor<512x512xf32>
  %c = linalg.fill ins(%z : f32) outs(%e : tensor<512x512xf32>) -> tensor<512x512xf32>
  %r = linalg.matmul ins(%a, %b : tensor<512x256xf16>, tensor<256x512xf16>) outs(%c : tensor<512x512xf32>)
      -> tensor<512x512xf32>
  return %r : tensor<512x512xf32>
}
"""


def dumped_configuration(text: str, backend: str, flags: list[str], folder: Path) -> tuple[bytes, str]:
    """The executable IREE compiles ``text`` into, and the configurations it dumped on the way."""
    vmfb = compile_vmfb(text, backend, [*flags, f"--iree-hal-dump-executable-configurations-to={folder}"])
    return vmfb, "".join(path.read_text() for path in folder.iterdir())


@pytest.mark.parametrize("name", ["a100", "h200"])
def test_an_nvidia_choice_is_iree_cuda_configuration(name: str, tmp_path: Path) -> None:
    """For an NVIDIA target, the block becomes IREE's workgroup tile, each warp's tile its subgroup tile and BK
    its reduction tile, both counted in mma.sync intrinsics: IREE compiles the module with them, as its dumped
    configuration shows, into PTX for the target's chip. The module names its device, so no flag is needed,
    sm_90 included, which IREE 3.13 cannot name by flags."""
    compiled = prism.compile(GEMM_F16, target=name, emit="iree")
    (family,) = compiled.report["families"]
    choice = family["choice"]
    assert choice["MMA"] == 1 and "hal.device.targets" in compiled.iree
    vmfb, dumped = dumped_configuration(compiled.iree, "cuda", [], tmp_path)
    assert f"workgroup = [{choice['BM']}, {choice['BN']}, 0]" in dumped
    assert f"subgroup = [{choice['WM'] // 16}, {choice['WN'] // 8}, 0]" in dumped
    assert f"reduction = [0, 0, {choice['BK'] // 16}]" in dumped
    assert "mma_kind = #iree_gpu.mma_layout<NV_MMA_SYNC_F32_16x8x16_F16>" in dumped
    chip = get_target(name).chip
    assert f".target {chip}".encode() in vmfb and b"mma.sync" in vmfb


@pytest.mark.parametrize("element", ["f16", "bf16"])
def test_the_amd_target_is_iree_rocm_configuration(element: str, tmp_path: Path) -> None:
    """The MI300X is searched like the NVIDIA chips, with its own numbers (64-lane wavefronts, 64 KiB of LDS,
    16x16x16 matrix cores, for bf16 too); IREE compiles Prism's tiles for gfx942 with MFMA instructions."""
    compiled = prism.compile(GEMM_F16.replace("xf16>", f"x{element}>"), target="mi300x", emit="iree")
    (family,) = compiled.report["families"]
    choice = family["choice"]
    assert choice["MMA"] == 1
    vmfb, dumped = dumped_configuration(compiled.iree, "rocm", list(get_target("mi300x").iree_flags), tmp_path)
    assert f"workgroup = [{choice['BM']}, {choice['BN']}, 0]" in dumped
    assert f"reduction = [0, 0, {choice['BK'] // 16}]" in dumped
    assert f"MFMA_F32_16x16x16_{element.upper()}" in dumped and "subgroup_size = 64" in dumped
    assert b"gfx942" in vmfb


def test_an_f32_gpu_choice_spreads_each_warp_tile_over_its_lanes(tmp_path: Path) -> None:
    compiled = prism.compile(gemm("g", 64, 128, 96).mlir, target="a100", emit="iree")
    (family,) = [f for f in compiled.report["families"] if f["kind"] == "gemm"]
    choice = family["choice"]
    _, dumped = dumped_configuration(compiled.iree, "cuda", [], tmp_path)
    assert f"thread = [{choice['WM'] // 4}, {choice['WN'] // 8}, 0]" in dumped and "mma_kind" not in dumped


def test_gpu_targets_refuse_to_lower_where_prism_cannot(tmp_path: Path) -> None:
    source = tmp_path / "gemm.mlir"
    source.write_text(GEMM_F16)
    for emit in ("ptx", "llvm"):
        result = run_cli(str(source), "--target=mi300x", f"--emit={emit}")
        assert result.returncode == 1 and "Prism does not lower for target 'mi300x' itself" in result.stderr
        assert "Traceback" not in result.stderr


def test_without_an_iree_module_there_is_nothing_to_run() -> None:
    with pytest.raises(prism.TargetError, match="compile with emit='iree'"):
        prism.compile(gemm("g", 64, 64, 64).mlir, target="host").iree_function("gemm")


def test_an_attribute_syntax_iree_does_not_take_is_a_clean_error() -> None:
    """IREE's attributes change between versions (2022's ``tile_sizes`` no longer parse): iree-compile's
    error comes back as a TargetError, never a crash."""
    old = prism.compile(gemm("g", 1, 64, 64).mlir, target="host", emit="iree").iree
    old = re.sub(r"#iree_cpu\.lowering_config<[^>]*>", "#iree_codegen.lowering_config<tile_sizes = [[64, 64, 0]]>", old)
    with pytest.raises(prism.TargetError, match="iree-compile refused the module"):
        compile_vmfb(old)


def test_an_iree_compile_that_hangs_is_stopped_run_again_and_then_a_clean_error(monkeypatch: pytest.MonkeyPatch
                                                                                ) -> None:
    """A run of iree-compile past COMPILE_SECONDS is stopped and run once more; a second hang is a TargetError
    that says so, not a wait without end (the child here sleeps instead of compiling)."""
    from prism.codegen import iree

    monkeypatch.setattr(iree, "_COMPILE", "import sys, time; sys.stdin.read(); time.sleep(30)")
    monkeypatch.setattr(iree, "COMPILE_SECONDS", 0.5)
    began = time.perf_counter()
    with pytest.raises(prism.TargetError, match=r"did not finish within 0.5 s in 2 runs"):
        compile_vmfb("module {}")
    assert time.perf_counter() - began < 10


# Other element types and layouts: f16 inputs accumulating in f32, packed products with A or B transposed, a batch
# of products with B transposed; each with its float64 reference. The packed products have more rows than any task
# takes (TM <= 3 x 2^TM_MAX), so that IREE runs them on packed operands whatever this machine's pick
# (host_iree.iree_data_tiling).
PACKED_M = 3 * 2**host_space.TM_MAX + 64
TRANSPOSED_A = ("affine_map<(m, n, k) -> (k, m)>", "affine_map<(m, n, k) -> (k, n)>")
TRANSPOSED_B = ("affine_map<(m, n, k) -> (m, k)>", "affine_map<(m, n, k) -> (n, k)>")
OTHER_STYLES = {
    "f16": ([(37, 64), (64, 50)], np.float16, "tensor<37x50xf32>",
            "linalg.matmul ins(%a, %b : tensor<37x64xf16>, tensor<64x50xf16>)", lambda a, b: a @ b),
    "packed, A transposed": ([(64, PACKED_M), (64, 50)], np.float32, f"tensor<{PACKED_M}x50xf32>",
                             f"linalg.matmul indexing_maps = [{', '.join(TRANSPOSED_A)}, "
                             f"affine_map<(m, n, k) -> (m, n)>] ins(%a, %b : tensor<64x{PACKED_M}xf32>, "
                             "tensor<64x50xf32>)", lambda a, b: a.T @ b),
    "packed, B transposed": ([(PACKED_M, 64), (50, 64)], np.float32, f"tensor<{PACKED_M}x50xf32>",
                             f"linalg.matmul indexing_maps = [{', '.join(TRANSPOSED_B)}, "
                             f"affine_map<(m, n, k) -> (m, n)>] ins(%a, %b : tensor<{PACKED_M}x64xf32>, "
                             "tensor<50x64xf32>)", lambda a, b: a @ b.T),
    "batched, B transposed": ([(3, 37, 64), (3, 50, 64)], np.float32, "tensor<3x37x50xf32>",
                              "linalg.batch_matmul indexing_maps = [affine_map<(b, m, n, k) -> (b, m, k)>, "
                              "affine_map<(b, m, n, k) -> (b, n, k)>, affine_map<(b, m, n, k) -> (b, m, n)>] "
                              "ins(%a, %b : tensor<3x37x64xf32>, tensor<3x50x64xf32>)",
                              lambda a, b: a @ np.swapaxes(b, -1, -2)),
}


@pytest.mark.parametrize("style", OTHER_STYLES)
def test_other_types_and_layouts_run_in_iree(style: str, rng: np.random.Generator) -> None:
    shapes, dtype, result, product, reference = OTHER_STYLES[style]
    types = [f"tensor<{'x'.join(map(str, s))}x{'f16' if dtype == np.float16 else 'f32'}>" for s in shapes]
    text = (f"func.func @f(%a: {types[0]}, %b: {types[1]}) -> {result} {{\n"
            f"  %z = arith.constant 0.0 : f32\n  %e = tensor.empty() : {result}\n"
            f"  %c = linalg.fill ins(%z : f32) outs(%e : {result}) -> {result}\n"
            f"  %r = {product} outs(%c : {result}) -> {result}\n  return %r : {result}\n}}\n")
    compiled = prism.compile(text, target="host", emit="iree")
    assert "compilation_info" in compiled.iree
    assert ("linalg.mmt4d" in compiled.iree) == style.startswith("packed")
    a, b = (rng.standard_normal(s).astype(dtype) for s in shapes)
    want = reference(a.astype(np.float64), b.astype(np.float64))
    np.testing.assert_allclose(compiled.iree_function("f")(a, b), want, rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("workload", [gemm("gemm-200x96x130", 200, 96, 130), swiglu(3, 64), attention(1, 2, 9, 33, 16)],
                         ids=["gemm", "swiglu", "attention"])
def test_a_tuning_spec_configures_the_program_as_written(workload: Workload, tmp_path: Path,
                                                         rng: np.random.Generator) -> None:
    """--emit=iree-spec: IREE compiles the program as written with the spec; each op that prism-optimize
    scheduled and left as it was gets Prism's configuration, and the results match float64. (A spec with no
    matcher, attention's, is valid and changes nothing.)"""
    compiled = prism.compile(workload.mlir, target="host", emit="iree-spec")
    spec = tmp_path / "spec.mlir"
    spec.write_text(compiled.iree)
    matchers = re.findall(r"named_sequence @match_\d+\(", compiled.iree)
    assert compiled.iree.count("transform.iree.match.cast_compatible_dag_from_root") == len(matchers)
    assert (len(matchers) > 0) == (workload.family != "attention")
    dump = tmp_path / "configured"
    vmfb = compile_vmfb(workload.mlir, "llvm-cpu", [f"--iree-codegen-tuning-spec-path={spec}",
                                                    f"--iree-hal-dump-executable-configurations-to={dump}"])
    if workload.family == "gemm":
        (family,) = [f for f in compiled.report["families"] if f["kind"] == "gemm"]
        config, _ = host_target().iree_config(gemm_contraction(200, 130, 96), family["choice"])
        distribution = re.search(r"distribution = \[[0-9, ]*\]", config).group(0)
        assert distribution in "".join(path.read_text() for path in dump.iterdir())
    arrays = inputs(workload, rng)
    want = workload.compute(NumpyOps, *(a.astype(np.float64) for a in arrays))
    have = load(vmfb, workload.func)(*arrays)
    for got, expected in zip(have if isinstance(have, tuple) else (have,), want, strict=True):
        np.testing.assert_allclose(got, expected, rtol=1e-4, atol=1e-4 * np.abs(expected).max())


def test_a_vector_tile_stays_below_irees_vector_limit(tmp_path: Path, rng: np.random.Generator) -> None:
    """A choice of 12 x 32 register blocks over a short K becomes an 8 x 32 vector tile whose K step is halved
    to 4 (8 x 32 x 8 f32 accumulators are the 8 KiB IREE refuses without a named CPU); IREE compiles it, and the
    product matches float64."""
    from prism.targets.host_iree import ACCUMULATOR_BYTES, IREE_VECTOR_BYTES

    op = gemm_contraction(200, 130, 96)
    config, _ = host_target().iree_config(op, {"TM": 192, "TN": 256, "TK": 128, "RM": 12, "RN": 32})
    assert "vector_common_parallel = [8, 32, 0]" in config and "vector_reduction = [0, 0, 4]" in config
    assert 8 * 32 * 4 * ACCUMULATOR_BYTES < IREE_VECTOR_BYTES
    workload = gemm("gemm-200x96x130", 200, 96, 130)
    spec = prism.compile(workload.mlir, target="host", emit="iree-spec").iree
    spec = re.sub(r"#iree_codegen\.compilation_info<.*DoubleTilingExpert>>>", lambda _: config, spec)
    assert config in spec
    path = tmp_path / "spec.mlir"
    path.write_text(spec)
    vmfb = compile_vmfb(workload.mlir, "llvm-cpu", [f"--iree-codegen-tuning-spec-path={path}"])
    arrays = inputs(workload, rng)
    (want,) = workload.compute(NumpyOps, *(a.astype(np.float64) for a in arrays))
    np.testing.assert_allclose(load(vmfb, workload.func)(*arrays), want, rtol=1e-4, atol=1e-4 * np.abs(want).max())
