#!/usr/bin/env python3
"""Build the GPU bundle: compile the GPU workloads for the H200 with Prism and write them beside run.py.

    python benchmarks/gpu/build.py --out DIR [--only GLOB] [--dtypes f16,bf16] [--no-check]

The workloads are DESIGN's (``benchmarks/workloads/*.mlir``: RMSNorm+matmul,
SwiGLU, attention, QK-norm scores, GEMMs, LoRA, QKV, dynamic M; two examples:
the transposed-B projection and the batched GEMM) and more of its shapes
written by ``cpu_workloads.py`` (ragged GEMMs, decode attention with one query
over 4096 keys, causal and QK-norm attention, RMSNorm+MLP). Each is compiled
once per element type, its f32 (or f16) types rewritten to f16 and bf16.

One compilation is one unit: ``DIR/<unit>/module.ptx`` (the one PTX module)
and ``DIR/<unit>/manifest.json``. ``DIR/workloads.json`` lists the workloads,
each naming its unit; a unit with dynamic sizes serves several workloads.
``DIR/run.py`` runs the bundle on the GPU machine; ``DIR/build.json`` records
what was built and what failed. A unit that fails to compile is reported and
left out; the exit status is then 1. The bundle is dry-run at the end.
"""

from __future__ import annotations

import argparse
import fnmatch
import json
import math
import re
import shutil
import subprocess
import sys
import time
import zlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
sys.path[:0] = [str(HERE), str(HERE.parent)]
import cpu_workloads as cw  # noqa: E402
import gpu_workloads  # noqa: E402
import run as runner  # noqa: E402

TARGET = "h200"
MAX_BUNDLE_BYTES = 32 << 20
DTYPES = ("f16", "bf16")
ATTENTION_BASELINES = ("torch", "compile", "sdpa")
GEMM_BASELINES = ("torch",)  # torch.compile of a lone matmul calls the same cuBLAS, after seconds of compiling


@dataclass(frozen=True)
class Case:
    """One workload of a unit: its name, run.py's reference and parameters, and each input's role.

    A role sets the input's random values: ``act`` N(0, 1); ``weight`` N(0, 1/rows), ``weight_t`` N(0, 1/cols)
    (a weight given transposed), so that products stay O(1); ``gain`` 1 + N(0, 0.01). ``sizes`` are the values
    of the ``?`` dimensions of the arguments, in the order they appear.
    """

    name: str
    reference: str
    roles: tuple[str, ...]
    params: dict = field(default_factory=dict)
    sizes: tuple[int, ...] = ()
    baselines: tuple[str, ...] = ("torch", "compile")


@dataclass(frozen=True)
class Source:
    """A program to compile once per element type, ``base`` being the element type the rewrite replaces."""

    name: str
    text: str
    base: str
    cases: tuple[Case, ...]


# ---- the workloads ------------------------------------------------------------------------------------------------

def _file(path: Path) -> str:
    return path.read_text()


def file_sources() -> list[Source]:
    """DESIGN's workloads as written in benchmarks/workloads, and two examples."""
    w, ex = REPO / "benchmarks" / "workloads", REPO / "examples"
    act, weights3 = "act", ("act", "weight", "weight", "weight")
    eps = {"eps": 1e-6}
    return [
        Source("gemm-1024", _file(w / "gemm.mlir"), "f32",
               (Case("gemm-1024", "gemm", (act, "weight"), baselines=GEMM_BASELINES),)),
        Source("gemm-dynamic-m", _file(w / "gemm_dynamic_m.mlir"), "f16",
               tuple(Case(f"gemm-dynamic-m{m}x4096x4096", "gemm", (act, "weight"), sizes=(m,),
                          baselines=GEMM_BASELINES) for m in (1, 16, 77, 128, 2048))),
        Source("rmsnorm-linear-16x4096", _file(w / "rmsnorm_matmul.mlir"), "f32",
               (Case("rmsnorm-linear-16x4096", "rmsnorm_linear", (act, "gain", "weight"), eps),)),
        Source("swiglu-16x1024", _file(w / "swiglu.mlir"), "f32", (Case("swiglu-16x1024", "swiglu", weights3),)),
        Source("attention-16x128x1024x128", _file(w / "attention.mlir"), "f32",
               (Case("attention-16x128x1024x128", "attention", (act,) * 3,
                     {"k_layout": "dn", "scale": 0.08838834764831845}, baselines=ATTENTION_BASELINES),)),
        Source("qk-norm-scores-16x128x1024x128", _file(w / "qk_norm_scores.mlir"), "f32",
               (Case("qk-norm-scores-16x128x1024x128", "qk_norm_scores", (act, act, "gain", "gain"),
                     {"k_layout": "dn", **eps}),)),
        Source("lora-16x4096", _file(w / "lora.mlir"), "f32", (Case("lora-16x4096", "lora", weights3),)),
        Source("qkv-16x4096", _file(w / "qkv.mlir"), "f32", (Case("qkv-16x4096", "qkv", weights3),)),
        Source("gemm-512x2048x1024-bt", _file(ex / "gemm_f16_transposed.mlir"), "f16",
               (Case("gemm-512x2048x1024-bt", "gemm", (act, "weight_t"), {"transpose_b": True},
                     baselines=GEMM_BASELINES),)),
        Source("batch-gemm-8x128x64x256", _file(ex / "batch_gemm.mlir"), "f32",
               (Case("batch-gemm-8x128x64x256", "batch_gemm", (act, "weight"), baselines=GEMM_BASELINES),)),
    ]


# cpu_workloads' families as run.py's references.
FAMILIES = {"gemm": ("gemm", {}), "rmsnorm-linear": ("rmsnorm_linear", {"eps": cw.EPS}),
            "rmsnorm-mlp": ("rmsnorm_mlp", {"eps": cw.EPS}), "swiglu": ("swiglu", {}), "lora": ("lora", {}),
            "qkv": ("qkv", {}), "attention": ("attention", {}), "causal-attention": ("attention", {"causal": True}),
            "qk-norm-attention": ("qk_norm_attention", {"eps": cw.EPS})}


def generated_workloads() -> list[cw.Workload]:
    """More of DESIGN's shapes: ragged and decode GEMMs, decode, prefill, causal and QK-norm attention."""
    return [
        cw.gemm("gemm-77x513x1000", 77, 513, 1000), cw.gemm("gemm-1000x77x513", 1000, 77, 513),
        cw.gemm("gemm-1x4096x4096", 1, 4096, 4096), cw.gemm("gemm-128x4096x4096", 128, 4096, 4096),
        cw.gemm("gemm-512", 512, 512, 512), cw.gemm("gemm-2048", 2048, 2048, 2048),
        cw.rmsnorm_linear(8, 2048), cw.rmsnorm_mlp(16, 1024),
        cw.attention(1, 32, 1, 4096, 128), cw.attention(2, 8, 128, 1024, 128), cw.causal_attention(1, 16, 512, 64),
        cw.qk_norm_attention(2, 8, 128, 1024, 128), cw.qk_norm_attention(1, 16, 1, 4096, 64),
    ]


def generated_sources() -> list[Source]:
    """The generated workloads as sources, each with run.py's reference for its family."""
    sources = []
    for w in generated_workloads():
        reference, params = FAMILIES[w.family]
        roles = tuple("gain" if a.offset else "weight" if a.scale != 1 else "act" for a in w.args)
        baselines = (ATTENTION_BASELINES if w.attention else GEMM_BASELINES if w.family == "gemm"
                     else ("torch", "compile"))
        sources.append(Source(w.name, w.mlir, "f32", (Case(w.name, reference, roles, params, baselines=baselines),)))
    return sources


# ---- element types ------------------------------------------------------------------------------------------------

def retype(text: str, base: str, dtype: str) -> str:
    """``text`` with every ``base`` element type made ``dtype`` (:func:`gpu_workloads.retype`)."""
    return gpu_workloads.retype(text, dtype, base)


_SIGNATURE = re.compile(r"func\.func\s+@([\w$.]+)\s*\((.*?)\)\s*(?:->|\{)", re.DOTALL)


def signature(text: str) -> tuple[str, list[tuple[str, ...]]]:
    """The (first) function's name and its arguments' shapes, ``?`` for a dynamic dimension."""
    found = _SIGNATURE.search(text)
    if found is None:
        raise ValueError("no func.func in the program")
    shapes = [tuple(dims.split("x")[:-1]) for dims in re.findall(r"tensor<([^>]*)>", found.group(2))]
    return found.group(1), shapes


def input_shapes(text: str, case: Case) -> list[tuple[int, ...]]:
    """The arguments' shapes with ``case.sizes`` in place of the ``?`` dimensions."""
    sizes = iter(case.sizes)
    shapes = [tuple(next(sizes) if d == "?" else int(d) for d in shape) for shape in signature(text)[1]]
    if next(sizes, None) is not None:
        raise ValueError(f"{case.name}: more sizes than dynamic dimensions")
    return shapes


def scale_of(role: str, shape: tuple[int, ...]) -> dict[str, float]:
    """An input's random values: ``offset + scale * N(0, 1)`` per its role (see :class:`Case`)."""
    if role == "gain":
        return {"scale": 0.1, "offset": 1.0}
    if role in ("weight", "weight_t"):
        return {"scale": 1 / math.sqrt(shape[-2] if role == "weight" else shape[-1])}
    return {}


def flops(reference: str, params: dict, shapes: list[tuple[int, ...]]) -> int:
    """Multiply-adds (two flops each) of the contractions; elementwise work is left out."""
    def mm(a: tuple[int, ...], b: tuple[int, ...], transposed: bool = False) -> int:
        n = b[-2] if transposed else b[-1]
        return 2 * math.prod(a) * n

    if reference in ("gemm", "batch_gemm"):
        return mm(shapes[0], shapes[1], params.get("transpose_b", False))
    if reference == "rmsnorm_linear":
        return mm(shapes[0], shapes[2])
    if reference in ("swiglu", "rmsnorm_mlp"):
        x, wg, wd = shapes[0], shapes[-3], shapes[-1]
        return 2 * mm(x, wg) + mm(x[:-1] + (wd[0],), wd)
    if reference in ("lora", "qkv"):
        x, *ws = shapes
        return mm(x, ws[0]) + sum(mm(x if w[0] == x[-1] else x[:-1] + (w[0],), w) for w in ws[1:])
    q, k = shapes[0], shapes[1]
    rows, keys = q[-2], k[-1] if params.get("k_layout") == "dn" else k[-2]
    products = 1 if reference == "qk_norm_scores" else 2
    pairs = sum(min(keys, i + 1 + keys - rows) for i in range(rows)) if params.get("causal") else rows * keys
    return 2 * products * math.prod(q[:-2]) * pairs * q[-1]


# ---- compiling and writing ----------------------------------------------------------------------------------------

class UnitFailed(Exception):
    """A unit that could not be compiled, checked or described; the message says why."""


def compile_unit(text: str, target: str = TARGET) -> tuple[str, dict]:
    """Prism's one PTX module and launch manifest for ``text`` (``prism.compile(text, target=target,
    emit="ptx")``'s ``ptx_text`` and ``manifest``)."""
    import prism

    compiled = prism.compile(text, target=target, emit="ptx")
    ptx, manifest = compiled.ptx_text, compiled.manifest
    if ptx.count(".version") != 1:
        raise UnitFailed(f"expected one PTX module, got {ptx.count('.version')}")
    return ptx, manifest


def check_ptx(ptx: str, chip: str) -> dict[str, Any]:
    """ptxas -v on the module for its chip: the most registers and the spill bytes of any kernel (if ptxas is
    on PATH); raises UnitFailed if ptxas rejects it."""
    from prism.codegen.gpu.ptx import PtxasError, ptxas, ptxas_path

    if ptxas_path() is None:
        return {}
    try:
        kernels = ptxas(ptx, chip)
    except PtxasError as error:
        raise UnitFailed(f"ptxas -arch={chip}: {error}") from None
    spilled = {name: k.spill_bytes for name, k in kernels.items() if k.spill_bytes}
    if spilled:
        raise UnitFailed(f"ptxas -arch={chip}: registers spill in {spilled}")
    return {"registers": max((k.registers for k in kernels.values()), default=0),
            "spill_bytes": 0, "warnings": [m for k in kernels.values() for m in k.messages]}


def workload_entries(source: Source, text: str, dtype: str, unit: str, compiled: tuple[str, dict]) -> list[dict]:
    """The unit's workloads for workloads.json, each planned against the manifest (its bytes come from there),
    the manifest checked against the PTX as run.py checks it."""
    ptx, manifest = compiled
    function = signature(text)[0]
    where = f"{unit}/manifest.json: function '{function}'"
    spec = manifest.get("functions", {}).get(function) if isinstance(manifest.get("functions"), dict) else None
    if spec is None:
        raise UnitFailed(f"{unit}/manifest.json: no function '{function}'")
    try:
        runner.check_function(spec, runner.ptx_entries(ptx), where)
    except runner.ManifestError as error:
        raise UnitFailed(str(error)) from None
    entries = []
    for case in source.cases:
        shapes = input_shapes(text, case)
        try:
            plan = runner.plan_function(spec, shapes, where)
        except runner.ManifestError as error:
            raise UnitFailed(str(error)) from None
        name = f"{case.name}-{dtype}"
        seed = zlib.crc32(name.encode())
        entries.append({
            "name": name, "unit": unit, "function": function, "dtype": dtype,
            "inputs": [{"shape": list(s), "seed": seed + i, **scale_of(role, s)}
                       for i, (s, role) in enumerate(zip(shapes, case.roles, strict=True))],
            "reference": case.reference, "params": case.params, "flops": flops(case.reference, case.params, shapes),
            "bytes": sum(plan.buffers[n].nbytes for n in plan.inputs + plan.outputs),
            "baselines": list(case.baselines)})
    return entries


def build_unit(source: Source, dtype: str, out: Path, target: str = TARGET) -> tuple[list[dict], dict]:
    """Compile one source at one element type into ``out/<unit>``; its workloads and what build.json records."""
    unit = f"{source.name}-{dtype}"
    text = retype(source.text, source.base, dtype)
    try:
        ptx, manifest = compile_unit(text, target)
    except UnitFailed:
        raise
    except Exception as error:  # a compiler error names what it could not do; the other units still build
        raise UnitFailed(f"{type(error).__name__}: {error}") from None
    resources = check_ptx(ptx, manifest.get("chip", "sm_90a"))
    entries = workload_entries(source, text, dtype, unit, (ptx, manifest))
    folder = out / unit
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "module.ptx").write_text(ptx)
    (folder / "manifest.json").write_text(json.dumps(manifest, indent=1))
    kernels = sorted({k["name"] for f in manifest["functions"].values() for k in f.get("kernels", [])})
    return entries, {"kernels": kernels, "ptxas": resources}


def selected(only: list[str], dtypes: list[str]) -> list[tuple[Source, str]]:
    """Every (source, element type) to build, filtered by unit name globs."""
    pairs = [(s, d) for s in file_sources() + generated_sources() for d in dtypes]
    if only:
        pairs = [(s, d) for s, d in pairs if any(fnmatch.fnmatchcase(f"{s.name}-{d}", p) for p in only)]
    return pairs


def prepare_out(out: Path) -> None:
    """An empty ``out``: a previous bundle there is removed; any other non-empty folder is refused."""
    if out.exists() and any(out.iterdir()):
        if not (out / "workloads.json").exists():
            raise SystemExit(f"error: {out} is not empty and holds no bundle; choose another --out")
        shutil.rmtree(out)
    out.mkdir(parents=True, exist_ok=True)


def bundle_bytes(out: Path) -> int:
    """The bundle's size on disk."""
    return sum(p.stat().st_size for p in out.rglob("*") if p.is_file())


def build(out: Path, pairs: list[tuple[Source, str]], target: str = TARGET) -> tuple[list[dict], dict, dict]:
    """Compile every pair, printing progress; the workloads, the units built and the units failed."""
    workloads, units, failed = [], {}, {}
    for i, (source, dtype) in enumerate(pairs, 1):
        unit, started = f"{source.name}-{dtype}", time.perf_counter()
        print(f"[{i}/{len(pairs)}] {unit} ...", end=" ", flush=True)
        try:
            entries, units[unit] = build_unit(source, dtype, out, target)
        except UnitFailed as error:
            failed[unit] = str(error)
            print(f"FAILED ({time.perf_counter() - started:.1f} s): {str(error)[:400]}", flush=True)
            continue
        workloads += entries
        r = units[unit]["ptxas"]
        regs = f", {r['registers']} registers, {r['spill_bytes']} spill bytes" if r else ""
        print(f"ok ({time.perf_counter() - started:.1f} s): {len(units[unit]['kernels'])} kernels{regs}", flush=True)
    return workloads, units, failed


def commit() -> str:
    """The repository's commit (with ``-dirty`` for uncommitted changes), or ``unknown``."""
    try:
        head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=REPO, capture_output=True, text=True)
        dirty = subprocess.run(["git", "status", "--porcelain"], cwd=REPO, capture_output=True, text=True)
        return head.stdout.strip() + ("-dirty" if dirty.stdout.strip() else "")
    except OSError:
        return "unknown"


def main(argv: list[str] | None = None) -> int:
    """Build the bundle; 0 when every unit compiled, the bundle fits and its dry run passes."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", required=True, help="the bundle's folder (a previous bundle there is replaced)")
    parser.add_argument("--only", action="append", default=[], help="build the units of this name or glob")
    parser.add_argument("--dtypes", default=",".join(DTYPES), help="element types, comma-separated")
    parser.add_argument("--no-check", action="store_true", help="skip the dry run of the finished bundle")
    parser.add_argument("--target", default=TARGET, choices=("h200", "h100", "a100"),
                        help="the GPU to compile for (the bundle runs on that GPU)")
    args = parser.parse_args(argv)
    dtypes = [d for d in args.dtypes.split(",") if d]
    if not set(dtypes) <= {"f16", "bf16", "f32"}:
        parser.error(f"--dtypes: expected f16, bf16 or f32, not {args.dtypes}")
    pairs = selected(args.only, dtypes)
    if not pairs:
        parser.error("no unit matches --only")
    out = Path(args.out)
    prepare_out(out)
    workloads, units, failed = build(out, pairs, args.target)
    (out / "workloads.json").write_text(json.dumps(workloads, indent=1))
    (out / "build.json").write_text(json.dumps({"commit": commit(), "target": args.target, "units": units,
                                                "failed": failed}, indent=1))
    shutil.copy(HERE / "run.py", out / "run.py")
    size = bundle_bytes(out)
    print(f"{out}: {len(units)} units, {len(workloads)} workloads, {size / 2**20:.1f} MiB"
          + (f"; {len(failed)} units failed: {', '.join(failed)}" if failed else ""))
    if size > MAX_BUNDLE_BYTES:
        print(f"error: the bundle is {size} bytes, over the {MAX_BUNDLE_BYTES} a GPU run may carry", file=sys.stderr)
        return 1
    if not args.no_check and workloads:
        print("dry run:", flush=True)
        if subprocess.run([sys.executable, str(out / "run.py"), str(out), "--dry-run"]).returncode != 0:
            return 1
    return 1 if failed or not workloads else 0


if __name__ == "__main__":
    sys.exit(main())
