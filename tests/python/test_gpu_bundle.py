"""The GPU bundle: run.py stays runnable without Prism, and its dry run catches what a GPU run would trip on.

The bundle here is made by hand, not by build.py: one PTX module of two
small kernels compiled by Prism's PTX path, a manifest written out, and two
workloads. Each corrupted copy must fail the dry run with a message that
says what is wrong.
"""

from __future__ import annotations

import ast
import copy
import importlib.util
import json
import re
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np
import pytest

from conftest import REPO

GPU = REPO / "benchmarks" / "gpu"
RUN = GPU / "run.py"
ALLOWED_ROOTS = {"numpy", "torch", "cupy", "cuda"}

ADD = """gpu.func @add(%a: memref<?xf32>, %b: memref<?xf32>, %c: memref<?xf32>, %n: index) kernel {
  %block = gpu.block_id x
  %threads = gpu.block_dim x
  %thread = gpu.thread_id x
  %base = arith.muli %block, %threads : index
  %i = arith.addi %base, %thread : index
  %inside = arith.cmpi ult, %i, %n : index
  scf.if %inside {
    %x = memref.load %a[%i] : memref<?xf32>
    %y = memref.load %b[%i] : memref<?xf32>
    %s = arith.addf %x, %y : f32
    memref.store %s, %c[%i] : memref<?xf32>
  }
  gpu.return
}"""
# A kernel taking a tensor map (a pointer), a tensor and a size: only its parameters matter here.
TOUCH = """gpu.func @touch(%map: !llvm.ptr, %c: memref<?xf32>, %n: index) kernel {
  gpu.return
}"""


def load_module(path: Path, name: str) -> ModuleType:
    """Import a script of benchmarks/gpu as a module."""
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


@pytest.fixture(scope="module")
def run() -> ModuleType:
    return load_module(RUN, "gpu_run")


def manifest() -> dict:
    """The hand-written manifest of ``add``: c = a + b over n elements, a size-class kernel with a tensor map."""
    vector = lambda name: {"name": name, "dtype": "f32", "shape": ["n"]}  # noqa: E731
    return {"version": 1, "chip": "sm_90a", "functions": {"add": {
        "inputs": [vector("arg0"), vector("arg1")],
        "outputs": [vector("result0")],
        "sizes": {"n": {"input": "arg0", "dim": 0}},
        "temporaries": [{"name": "tmp0", "dtype": "f32", "shape": ["cdiv(n, 64) * 64"]}],
        "views": [{"name": "v0", "of": "tmp0", "shape": ["n"]}],
        "kernels": [
            {"name": "add", "grid": ["cdiv(n, 128)", "1", "1"], "block": [128, 1, 1], "shared_bytes": 0,
             "when": None, "params": [{"tensor": "arg0"}, {"tensor": "arg1"}, {"tensor": "result0"}, {"size": "n"}]},
            {"name": "touch", "grid": ["1", "1", "1"], "block": [32, 1, 1], "shared_bytes": 65536,
             "when": "n >= 64 and n < 4096",
             "params": [{"tensormap": {"tensor": "arg0", "dtype": "f32", "dims": ["n"], "strides": [], "box": [32],
                                       "swizzle": 128}},
                        {"tensor": "v0"}, {"size": "n"}]},
        ]}}}


def workloads() -> list[dict]:
    """Two sizes of ``add``: one where ``touch`` runs, one below its size class."""
    return [{"name": f"add-{n}", "function": "add", "dtype": "f32", "reference": "add", "flops": n,
             "bytes": 12 * n, "baselines": ["torch"],
             "inputs": [{"shape": [n], "seed": 1}, {"shape": [n], "seed": 2, "scale": 0.5}]} for n in (1000, 37)]


@pytest.fixture(scope="module")
def ptx() -> str:
    from prism.codegen.gpu.ptx import compile_kernels
    from prism.codegen.gpu.spec import Kernel, Launch

    launch = Launch(("1", "1", "1"), (128, 1, 1), 0, ())
    return compile_kernels([Kernel("add", ADD, launch), Kernel("touch", TOUCH, launch)], "sm_90a")


def write_bundle(folder: Path, ptx: str, manifest: dict, workloads: list[dict]) -> Path:
    """A flat bundle: module.ptx, manifest.json and workloads.json in ``folder``."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "module.ptx").write_text(ptx)
    (folder / "manifest.json").write_text(json.dumps(manifest))
    (folder / "workloads.json").write_text(json.dumps(workloads))
    return folder


def dry_run(folder: Path) -> subprocess.CompletedProcess[str]:
    """run.py --dry-run on ``folder`` in a child process, which then asserts it never imported torch or CUDA."""
    script = (f"import runpy, sys; sys.argv = ['run.py', {str(folder)!r}, '--dry-run']\n"
              "try:\n    runpy.run_path(" + repr(str(RUN)) + ", run_name='__main__')\n"
              "except SystemExit as done:\n"
              "    gpu = sorted(m for m in sys.modules if m.split('.')[0] in ('torch', 'cupy', 'cuda'))\n"
              "    assert not gpu, gpu\n    raise\n")
    return subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)


def test_the_hand_made_module_assembles(ptx: str) -> None:
    from prism.codegen.gpu.ptx import ptxas, ptxas_path

    if ptxas_path() is None:
        pytest.skip("ptxas is not on PATH")
    resources = ptxas(ptx, "sm_90a")
    assert set(resources) == {"add", "touch"} and all(r.spill_bytes == 0 for r in resources.values())


# ---- (a) what run.py imports --------------------------------------------------------------------------------------

def test_run_imports_only_the_standard_library_numpy_torch_and_cuda() -> None:
    tree = ast.parse(RUN.read_text())
    roots = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            roots |= {alias.name.split(".")[0] for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            roots.add((node.module or "").split(".")[0])
    outside = {r for r in roots if r not in sys.stdlib_module_names and r not in ALLOWED_ROOTS and r != "__future__"}
    assert not outside, f"run.py imports {outside}"
    assert not {r for r in roots if r.startswith(("prism", "mlir"))}
    top_level = {alias.name.split(".")[0] for node in tree.body if isinstance(node, (ast.Import, ast.ImportFrom))
                 for alias in (node.names if isinstance(node, ast.Import) else [ast.alias(node.module or "")])}
    assert top_level & {"torch", "cupy", "cuda"} == set(), "torch and CUDA are imported lazily, in GPU runs only"


# ---- (b) the dry run on a bundle made by hand ----------------------------------------------------------------------

def test_the_dry_run_passes_a_well_formed_bundle(tmp_path: Path, ptx: str) -> None:
    done = dry_run(write_bundle(tmp_path, ptx, manifest(), workloads()))
    assert done.returncode == 0, done.stdout + done.stderr
    assert "add-1000: 2 launches (0 skipped), 23 kernel parameters" in done.stdout
    assert "add-37: 1 launches (1 skipped), 16 kernel parameters" in done.stdout


def _drop_size(m: dict) -> None:
    m["functions"]["add"]["kernels"][0]["params"].pop()


def _unknown_symbol(m: dict) -> None:
    m["functions"]["add"]["kernels"][0]["grid"][0] = "cdiv(m, 128)"


def _attribute(m: dict) -> None:
    m["functions"]["add"]["kernels"][0]["grid"][0] = "n.real + 1"


def _call(m: dict) -> None:
    m["functions"]["add"]["kernels"][1]["when"] = "__import__('os').getpid()"


def _unknown_kernel(m: dict) -> None:
    m["functions"]["add"]["kernels"][0]["name"] = "add2"


def _unknown_tensor(m: dict) -> None:
    m["functions"]["add"]["kernels"][0]["params"][2] = {"tensor": "result1"}


def _wide_box(m: dict) -> None:
    m["functions"]["add"]["kernels"][1]["params"][0]["tensormap"]["box"] = [64]


def _skipped_kernel(m: dict) -> None:
    """A kernel of a size class no workload takes is checked all the same."""
    m["functions"]["add"]["kernels"][1]["when"] = "n > 100000"
    m["functions"]["add"]["kernels"][1]["params"][0]["tensormap"]["dims"] = ["k"]


def _version(m: dict) -> None:
    m["version"] = 2


def _output_shape(m: dict) -> None:
    m["functions"]["add"]["outputs"][0]["shape"] = ["n + 1"]


CORRUPTIONS: list[tuple[Callable[[dict], None], str]] = [
    (_drop_size, "packs 15 kernel parameters, the PTX .entry takes 16"),
    (_unknown_symbol, "unknown size symbol 'm'"),
    (_attribute, "Attribute is not allowed"),
    (_call, "only cdiv, min and max may be called"),
    (_unknown_kernel, "no .entry add2 in module.ptx"),
    (_unknown_tensor, "unknown tensor 'result1'"),
    (_wide_box, "wider than the 128-byte swizzle"),
    (_skipped_kernel, "unknown size symbol 'k'"),
    (_version, "format version 2"),
    (_output_shape, "the reference gives shapes [[1000]]"),
]


@pytest.mark.parametrize(("corrupt", "message"), CORRUPTIONS, ids=[c.__name__.strip("_") for c, _ in CORRUPTIONS])
def test_the_dry_run_refuses_a_corrupt_manifest(tmp_path: Path, ptx: str, corrupt: Callable[[dict], None],
                                                message: str) -> None:
    broken = copy.deepcopy(manifest())
    corrupt(broken)
    done = dry_run(write_bundle(tmp_path, ptx, broken, workloads()))
    assert done.returncode != 0
    assert message in done.stderr, done.stderr
    assert "manifest.json" in done.stderr, "the message names the file"


def test_the_dry_run_refuses_inputs_that_disagree_with_the_manifest(tmp_path: Path, ptx: str) -> None:
    bad = workloads()
    bad[0]["inputs"][1]["shape"] = [999]
    done = dry_run(write_bundle(tmp_path, ptx, manifest(), bad))
    assert done.returncode != 0
    assert "input 'arg1' is [999], the manifest says ['n'] = [1000]" in done.stderr


def test_the_dry_run_reads_units_from_subfolders(tmp_path: Path, ptx: str) -> None:
    write_bundle(tmp_path / "add-unit", ptx, manifest(), [])
    (tmp_path / "workloads.json").write_text(json.dumps([{**w, "unit": "add-unit"} for w in workloads()]))
    done = dry_run(tmp_path)
    assert done.returncode == 0, done.stderr
    (tmp_path / "workloads.json").write_text(json.dumps([{**workloads()[0], "unit": "missing"}]))
    assert "no manifest.json" in dry_run(tmp_path).stderr


def test_packing_follows_the_kernel_abi(run: ModuleType) -> None:
    plan = run.plan_function(manifest()["functions"]["add"], [(1000,), (1000,)], "add")
    add, touch = plan.launches
    assert add.grid == (8, 1, 1)
    assert add.params[:5] == [("ptr", "arg0"), ("ptr", "arg0"), ("i64", 0), ("i64", 1000), ("i64", 1)]
    assert add.params[-1] == ("i64", 1000)
    kind, tensor_map = touch.params[0]
    assert kind == "map" and tensor_map.dims == (1000,) and tensor_map.swizzle == 3 and tensor_map.dtype == 7
    assert touch.params[1:3] == [("ptr", "v0"), ("ptr", "v0")], "a view is passed as itself"
    assert plan.buffers["v0"].of == "tmp0" and plan.buffers["tmp0"].shape == (1024,)


# ---- (c) the expression evaluator -----------------------------------------------------------------------------------

def test_expressions_evaluate_the_manifest_grammar(run: ModuleType) -> None:
    sizes = {"d0": 1000, "m": 77}
    assert run.evaluate("cdiv(d0, 128) * 2 + max(m, 3, 5) - min(m // 10, 4) - -1", sizes) == 16 + 77 - 4 + 1
    assert run.evaluate(22, sizes) == 22
    assert run.evaluate("m > 64 and not d0 < 1000", sizes) == 1
    assert run.evaluate("m <= 64 or d0 != 1000", sizes) == 0


@pytest.mark.parametrize("text", ["d0.real", "abs(d0)", "cdiv.__name__", "(lambda: 1)()", "d0[0]", "1.5 * d0",
                                  "__import__('os')", "cdiv(d0)", "cdiv(d0, 0)", "d0 // 0", "max(d0, key=abs)",
                                  "open('x')", "d0 ** 2", "d0 % 3", "'d0'", "x", "d0 +"])
def test_expressions_refuse_everything_else(run: ModuleType, text: str) -> None:
    with pytest.raises(run.ExpressionError):
        run.evaluate(text, {"d0": 1000})


# ---- element types and references ------------------------------------------------------------------------------------

def test_bf16_rounds_to_nearest_even_as_torch_does(run: ModuleType, rng: np.random.Generator) -> None:
    torch = pytest.importorskip("torch")
    values = np.concatenate([rng.standard_normal(4096) * 10.0 ** rng.integers(-8, 8, 4096),
                             [1 + 2**-8, 1 + 3 * 2**-8, -0.0, 65504.0]])
    expected = torch.tensor(values).to(torch.bfloat16).double().numpy()
    np.testing.assert_array_equal(run.decode(run.encode(values, "bf16"), "bf16"), expected)


REFERENCE_CASES = [
    ("gemm", {"transpose_b": True}, [(5, 7), (3, 7)]),
    ("batch_gemm", {}, [(2, 5, 7), (2, 7, 3)]),
    ("swiglu", {}, [(4, 8), (8, 12), (8, 12), (12, 8)]),
    ("rmsnorm_mlp", {"eps": 1e-6}, [(4, 8), (8,), (8, 12), (8, 12), (12, 8)]),
    ("attention", {"causal": True, "k_layout": "dn"}, [(2, 3, 5, 8), (2, 3, 8, 11), (2, 3, 11, 8)]),
    ("qk_norm_attention", {"eps": 1e-6, "scale": 0.3}, [(2, 3, 8), (2, 6, 8), (2, 6, 8), (8,), (8,)]),
    ("qk_norm_scores", {"k_layout": "dn"}, [(2, 3, 8), (2, 8, 6), (8,), (8,)]),
    ("lora", {}, [(3, 8), (8, 8), (8, 2), (2, 8)]),
]


@pytest.mark.parametrize(("name", "params", "shapes"), REFERENCE_CASES, ids=[c[0] for c in REFERENCE_CASES])
def test_the_torch_baselines_compute_the_reference(run: ModuleType, rng: np.random.Generator, name: str,
                                                   params: dict, shapes: list[tuple[int, ...]]) -> None:
    torch = pytest.importorskip("torch")
    arrays = [rng.standard_normal(shape) for shape in shapes]
    reference = run.REFERENCES[name]
    expected = reference.compute(run.NumpyOps, params, *arrays)
    tensors = [torch.from_numpy(a) for a in arrays]
    for got, want in zip(reference.compute(run.TorchOps, params, *tensors), expected, strict=True):
        np.testing.assert_allclose(got.numpy(), want, rtol=1e-10, atol=1e-12)
    if reference.sdpa is not None:
        got = reference.sdpa(torch, params, *tensors)()
        np.testing.assert_allclose(got[0].numpy(), expected[0], rtol=1e-10, atol=1e-12)


def test_causal_attention_masks_keys_after_the_query_aligned_bottom_right(run: ModuleType) -> None:
    q = np.zeros((1, 2, 4))
    k = np.zeros((1, 5, 4))
    v = np.arange(5.0).reshape(1, 5, 1)
    out = run.REFERENCES["attention"].compute(run.NumpyOps, {"causal": True}, q, k, v)[0]
    np.testing.assert_allclose(out[0, :, 0], [np.mean([0, 1, 2, 3]), np.mean([0, 1, 2, 3, 4])])


# ---- build.py -----------------------------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def build() -> ModuleType:
    return load_module(GPU / "build.py", "gpu_build")


def test_every_source_parses_at_f16_and_bf16(build: ModuleType) -> None:
    from mlir import ir

    from prism.infra.ir import make_context

    sources = build.file_sources() + build.generated_sources()
    assert len({s.name for s in sources}) == len(sources)
    context = make_context()
    for source in sources:
        for dtype in ("f16", "bf16"):
            text = build.retype(source.text, source.base, dtype)
            ir.Module.parse(text, context=context)  # raises on a type the rewrite missed
            if source.base == "f32":
                assert not re.search(r"(?<![a-z])f32\b", text.split("func.func", 1)[1].split("(", 1)[1]), source.name
            for case in source.cases:
                shapes = build.input_shapes(text, case)
                assert len(shapes) == len(case.roles), case.name
                assert case.reference in build.runner.REFERENCES


def test_retype_reencodes_hexadecimal_constants(build: ModuleType) -> None:
    text = "%ninf = arith.constant 0xFF800000 : f32, %one = arith.constant 0x3F800000 : f32"
    assert build.retype(text, "f32", "f16") == "%ninf = arith.constant 0xFC00 : f16, %one = arith.constant 0x3C00 : f16"
    assert build.retype(text, "f32", "bf16") == ("%ninf = arith.constant 0xFF80 : bf16, "
                                                 "%one = arith.constant 0x3F80 : bf16")
    assert build.retype("tensor<?x4096xf16>, f32", "f16", "bf16") == "tensor<?x4096xbf16>, f32"


def test_flops_agree_with_the_cpu_workloads(build: ModuleType) -> None:
    for workload, source in zip(build.generated_workloads(), build.generated_sources(), strict=True):
        case = source.cases[0]
        assert build.flops(case.reference, case.params, build.input_shapes(source.text, case)) == workload.flops
    lora = next(s for s in build.file_sources() if s.name.startswith("lora"))
    shapes = build.input_shapes(lora.text, lora.cases[0])
    assert build.flops("lora", {}, shapes) == 2 * 16 * 4096 * (4096 + 2 * 16)


def test_build_writes_a_bundle_that_dry_runs(build: ModuleType, ptx: str, tmp_path: Path,
                                             monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture) -> None:
    """With the compiler replaced by the ``add`` module under a manifest shaped as gemm-512's function, build.py
    writes the unit, the workloads and run.py, and the bundle passes its dry run; a failing unit is reported."""
    def fake_compile(text: str, target: str) -> tuple[str, dict]:
        if "bf16" in text:
            raise ValueError("no bf16 today")
        square = lambda name: {"name": name, "dtype": "f16", "shape": [512, "m"]}  # noqa: E731
        kernel = {"name": "add", "grid": ["cdiv(m * 512, 128)", "1", "1"], "block": [128, 1, 1], "shared_bytes": 0,
                  "params": [{"tensor": "arg0"}, {"tensor": "arg1"}, {"tensor": "result0"}, {"size": "m"}]}
        return ptx, {"version": 1, "chip": "sm_90a", "functions": {"gemm": {
            "inputs": [square("arg0"), square("arg1")], "outputs": [square("result0")],
            "sizes": {"m": {"input": "arg0", "dim": 1}}, "kernels": [kernel]}}}

    monkeypatch.setattr(build, "compile_unit", fake_compile)
    out = tmp_path / "bundle"
    assert build.main(["--out", str(out), "--only", "gemm-512-*"]) == 1, "the bf16 unit failed"
    printed = capsys.readouterr().out
    assert "gemm-512-bf16 ... FAILED" in printed and "ValueError: no bf16 today" in printed
    assert (out / "gemm-512-f16" / "module.ptx").read_text() == ptx
    assert (out / "run.py").read_text() == RUN.read_text()
    [workload] = json.loads((out / "workloads.json").read_text())
    assert workload["unit"] == "gemm-512-f16" and workload["reference"] == "gemm"
    assert workload["flops"] == 2 * 512**3 and workload["bytes"] == 3 * 2 * 512 * 512
    assert workload["inputs"][1]["scale"] == pytest.approx(512**-0.5)
    assert json.loads((out / "build.json").read_text())["failed"] == {"gemm-512-bf16": "ValueError: no bf16 today"}
    assert dry_run(out).returncode == 0
    assert build.main(["--out", str(out), "--only", "gemm-512-f16"]) == 0, "a previous bundle is replaced"


def test_reports_hold_one_row_per_workload(run: ModuleType, tmp_path: Path) -> None:
    ok = {"name": "gemm-f16", "dtype": "f16", "shapes": [[77, 513], [513, 1000]], "error": 1.5e-3, "ok": True,
          "prism": {"ms": 0.02}, "baselines": {"torch": {"ms": 0.01}, "compile": {"failed": "x"}}, "ratio": 0.5}
    wrong = {**ok, "name": "gemm-bf16", "ok": False, "ratio": None, "baselines": {}}
    failed = {"name": "attention-f16", "dtype": "f16", "failed": "DeviceError: CUDA_ERROR_LAUNCH_FAILED"}
    run.write_reports(tmp_path, [ok, wrong, failed], {"device": "a GPU"})
    rows = (tmp_path / "results.md").read_text().splitlines()
    assert "| gemm-f16 | f16 | 77x513, 513x1000 | 1.50e-03 | 0.0200 | 0.0100 | failed | — | 0.50 |" in rows
    assert any(r.startswith("| gemm-bf16 |") and "WRONG" in r for r in rows)
    assert any(r.startswith("| attention-f16 |") and "CUDA_ERROR_LAUNCH_FAILED" in r for r in rows)
    assert json.loads((tmp_path / "results.json").read_text())["results"][0] == ok


# ---- the GPU path, with the host standing in for the device --------------------------------------------------------

class HostDriver:
    """The driver's calls on the host: ``add`` runs in numpy on the addresses its packed parameters hold."""

    def __init__(self, skip_last: bool) -> None:
        self.skip_last = skip_last  # a faulty kernel: leaves the last element unwritten
        self.launches: list[str] = []
        self.maps: list[tuple[Any, int]] = []

    def load(self, ptx: str) -> str:
        return ptx

    def function(self, module: str, name: str, shared_bytes: int) -> str:
        assert f".entry {name}(" in module
        return name

    def encode_tensor_map(self, spec: Any, address: int) -> bytes:
        self.maps.append((spec, address))
        return bytes(128)

    def launch(self, func: str, launch: Any, args: Any, stream: int) -> None:
        import ctypes

        self.launches.append(func)
        pointer = ctypes.POINTER(ctypes.c_uint64)
        values = [ctypes.cast(args[i], pointer).contents.value for i in range(len(launch.params))]
        if func != "add":
            return
        a, b, c, n = values[1], values[6], values[11], values[15]
        assert values[3] == values[8] == values[13] == n and values[2] == 0 and values[4] == 1
        vector = lambda address: np.ctypeslib.as_array((ctypes.c_float * n).from_address(address))  # noqa: E731
        written = n - 1 if self.skip_last else n
        vector(c)[:written] = vector(a)[:written] + vector(b)[:written]


class HostEvent:
    def record(self) -> None:
        import time

        self.at = time.perf_counter()

    def elapsed_time(self, end: HostEvent) -> float:
        return (end.at - self.at) * 1e3


@pytest.fixture
def host_device(run: ModuleType) -> Callable[[bool], Any]:
    torch = pytest.importorskip("torch")

    class HostDevice(run.Device):
        place = "cpu"

        def __init__(self, skip_last: bool) -> None:
            self.torch, self.driver, self.modules = torch, HostDriver(skip_last), {}
            self.flush_buffer = self.zeros(1 << 16)

        def synchronize(self) -> None:
            pass

        def event(self) -> HostEvent:
            return HostEvent()

        def stream(self) -> int:
            return 0

    return HostDevice


@pytest.mark.parametrize("faulty", [False, True], ids=["right", "unwritten-element"])
def test_a_run_checks_and_times_the_launches(run: ModuleType, ptx: str, tmp_path: Path,
                                             host_device: Callable[[bool], Any], faulty: bool) -> None:
    write_bundle(tmp_path, ptx, manifest(), workloads())
    [case] = [c for c in run.prepared(tmp_path, workloads()[:1])]
    device = host_device(faulty)
    result = run.run_case(device, case, budget_s=0.05, with_compile=False)
    assert device.driver.launches[:2] == ["add", "touch"]
    [(spec, address)] = device.driver.maps
    assert spec.dims == (1000,) and address != 0
    assert result["ok"] is not faulty
    assert (result["error"] == float("inf")) is faulty, "an unwritten element is NaN, hence an infinite error"
    assert result["prism"]["reps"] >= run.MIN_REPS
    assert result["baselines"]["torch"]["error"] < 1e-7 and result["baselines"]["torch"]["reps"] >= run.MIN_REPS
