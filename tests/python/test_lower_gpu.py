"""GPU lowering to PTX, checked without a GPU: ptxas must assemble the PTX."""

from __future__ import annotations

import re
import shutil
import subprocess

import pytest
from mlir import ir

from prism.infra.errors import PipelineError, UnsupportedOp
from prism.infra.passbase import PassContext
from prism.passes.lower_gpu import LowerGpuPass

CHIPS = ["sm_80", "sm_90"]

FILL = """
  %e = tensor.empty() : tensor<{c}>
  %z = arith.constant 0.0 : f32
  %f = linalg.fill ins(%z : f32) outs(%e : tensor<{c}>) -> tensor<{c}>"""


def _choice(**keys: int) -> str:
    return "{" + ", ".join(f"{k} = {v} : i64" for k, v in keys.items()) + "}"


def _matmul(m: int, n: int, k: int, elem: str, choice: str = "", b_t: bool = False) -> str:
    a, c = f"{m}x{k}x{elem}", f"{m}x{n}xf32"
    b = f"{n}x{k}x{elem}" if b_t else f"{k}x{n}x{elem}"
    maps = ""
    if b_t:
        maps = ("indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d2)>, "
                "affine_map<(d0, d1, d2) -> (d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d1)>]")
    attrs = f" {{prism.choice = {choice}}}" if choice else ""
    return f"""
func.func @mm(%a: tensor<{a}>, %b: tensor<{b}>) -> tensor<{c}> {{{FILL.format(c=c)}
  %r = linalg.matmul {maps} ins(%a, %b : tensor<{a}>, tensor<{b}>)
         outs(%f : tensor<{c}>){attrs} -> tensor<{c}>
  return %r : tensor<{c}>
}}"""


def _batch_matmul(bs: int, m: int, n: int, k: int, elem: str, choice: str) -> str:
    a, b, c = f"{bs}x{m}x{k}x{elem}", f"{bs}x{k}x{n}x{elem}", f"{bs}x{m}x{n}xf32"
    return f"""
func.func @bmm(%a: tensor<{a}>, %b: tensor<{b}>) -> tensor<{c}> {{{FILL.format(c=c)}
  %r = linalg.batch_matmul {{prism.choice = {choice}}} ins(%a, %b : tensor<{a}>, tensor<{b}>)
         outs(%f : tensor<{c}>) -> tensor<{c}>
  return %r : tensor<{c}>
}}"""


RELU = """
func.func @relu(%x: tensor<100x300xf32>) -> tensor<100x300xf32> {
  %e = tensor.empty() : tensor<100x300xf32>
  %r = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>],
                       iterator_types = ["parallel", "parallel"]}
       ins(%x : tensor<100x300xf32>) outs(%e : tensor<100x300xf32>) {
  ^bb0(%in: f32, %out: f32):
    %z = arith.constant 0.0 : f32
    %m = arith.maximumf %in, %z : f32
    linalg.yield %m : f32
  } -> tensor<100x300xf32>
  return %r : tensor<100x300xf32>
}"""

MMA = _choice(BM=64, BN=64, BK=32, WM=32, WN=32, MMA=1)
SIMT = _choice(BM=64, BN=64, BK=16, WM=32, WN=32, MMA=0)


def _lower(source: str, chip: str) -> tuple[dict[str, str], str]:
    with ir.Context(), ir.Location.unknown():
        module = ir.Module.parse(source)
        ctx = PassContext()
        LowerGpuPass(chip=chip).run(module, ctx)
        return ctx.artifacts["ptx"], str(module)


def _text(ptx: dict[str, str]) -> str:
    return "\n".join(ptx.values())


def _ptxas(ptx: dict[str, str], chip: str, tmp_path) -> dict[str, int]:
    """Assemble every module with ptxas -v; return the largest registers,
    spill and shared-memory figures over the kernels."""
    if shutil.which("ptxas") is None:
        pytest.skip("ptxas is not on PATH; cannot assemble the PTX")
    log = ""
    for name, text in ptx.items():
        path = tmp_path / f"{name}.ptx"
        path.write_text(text)
        run = subprocess.run(["ptxas", "-v", f"-arch={chip}", str(path), "-o", str(path) + ".cubin"],
                             capture_output=True, text=True)
        assert run.returncode == 0, run.stderr
        assert "error" not in run.stderr.lower(), run.stderr
        log += run.stderr
    regs = [int(r) for r in re.findall(r"Used (\d+) registers", log)]
    smem = [int(s) for s in re.findall(r"(\d+) bytes smem", log)] or [0]
    spills = [int(s) for s in re.findall(r"(\d+) bytes spill stores", log)]
    assert regs, log
    return {"registers": max(regs), "smem": max(smem), "spills": max(spills)}


@pytest.mark.parametrize("chip", CHIPS)
def test_f32_matmul_simt(chip, tmp_path):
    ptx, host = _lower(_matmul(256, 256, 256, "f32", SIMT), chip)
    stats = _ptxas(ptx, chip, tmp_path)
    text = _text(ptx)
    assert "mma.sync" not in text and "ld.shared" in text and "st.shared" in text
    assert stats["smem"] == (64 * 16 + 16 * 64) * 4
    assert stats["spills"] == 0
    assert "gpu.launch_func" in host or "mgpuLaunchKernel" in host


@pytest.mark.parametrize("chip", CHIPS)
def test_f16_matmul_mma(chip, tmp_path):
    ptx, _ = _lower(_matmul(256, 256, 256, "f16", MMA), chip)
    text = _text(ptx)
    assert "mma.sync" in text and "ldmatrix" in text and "st.shared" in text
    stats = _ptxas(ptx, chip, tmp_path)
    assert stats["smem"] == (64 * 32 + 32 * 64) * 2
    assert stats["spills"] == 0


@pytest.mark.parametrize("chip", CHIPS)
def test_transposed_b_mma(chip, tmp_path):
    ptx, _ = _lower(_matmul(128, 256, 64, "f16", MMA, b_t=True), chip)
    assert "mma.sync" in _text(ptx)
    _ptxas(ptx, chip, tmp_path)


@pytest.mark.parametrize("chip", CHIPS)
def test_transposed_b_simt(chip, tmp_path):
    ptx, _ = _lower(_matmul(128, 256, 64, "f32", SIMT, b_t=True), chip)
    _ptxas(ptx, chip, tmp_path)


@pytest.mark.parametrize("chip", CHIPS)
def test_batch_matmul_mma(chip, tmp_path):
    ptx, _ = _lower(_batch_matmul(4, 128, 128, 64, "f16", MMA), chip)
    assert "mma.sync" in _text(ptx)
    _ptxas(ptx, chip, tmp_path)


def test_untuned_defaults(tmp_path):
    ptx, _ = _lower(_matmul(128, 128, 64, "f16"), "sm_90")
    assert "mma.sync" in _text(ptx)
    _ptxas(ptx, "sm_90", tmp_path)
    ptx, _ = _lower(_matmul(128, 128, 64, "bf16"), "sm_90")
    assert "mma.sync" not in _text(ptx)
    _ptxas(ptx, "sm_90", tmp_path)


def test_elementwise_partial_tiles(tmp_path):
    ptx, _ = _lower(RELU, "sm_90")
    _ptxas(ptx, "sm_90", tmp_path)


def test_mma_and_elementwise_in_one_module(tmp_path):
    source = _matmul(128, 128, 64, "f16", MMA) + RELU
    ptx, _ = _lower(source, "sm_90")
    assert len(ptx) == 2 and "mma.sync" in _text(ptx)
    _ptxas(ptx, "sm_90", tmp_path)


def test_deterministic():
    source = _matmul(128, 128, 64, "f16", MMA)
    assert _lower(source, "sm_90")[0] == _lower(source, "sm_90")[0]


def test_tiles_must_divide():
    with pytest.raises(UnsupportedOp, match="not a multiple of its tile"):
        _lower(_matmul(100, 256, 256, "f16", MMA), "sm_90")


def test_bad_choice_is_reported():
    bad = _choice(BM=64, BN=64, BK=32, WM=32, WN=32, MMA=1, STAGES=3)
    with pytest.raises(UnsupportedOp, match="STAGES"):
        _lower(_matmul(256, 256, 256, "f16", bad), "sm_90")
    for elem in ("f32", "bf16"):
        with pytest.raises(UnsupportedOp, match="needs f16"):
            _lower(_matmul(256, 256, 256, elem, MMA), "sm_90")


def test_unknown_chip():
    with pytest.raises(PipelineError, match="option 'chip' must be one of .* got 'sm_75'"):
        _lower(_matmul(64, 64, 64, "f32"), "sm_75")


def test_dynamic_shape():
    source = """
func.func @mm(%a: tensor<?x64xf32>, %b: tensor<64x64xf32>, %c: tensor<?x64xf32>) -> tensor<?x64xf32> {
  %r = linalg.matmul ins(%a, %b : tensor<?x64xf32>, tensor<64x64xf32>) outs(%c : tensor<?x64xf32>) -> tensor<?x64xf32>
  return %r : tensor<?x64xf32>
}"""
    with pytest.raises(UnsupportedOp, match="dynamic shape") as err:
        _lower(source, "sm_90")
    assert err.value.location


# ----------------------------------------------------------------------------
# Structure of the K loop in the PTX: the accumulator must stay in registers.
# ----------------------------------------------------------------------------

_LABEL = re.compile(r"^\s*(\$\w+):")
_ADDRESS = re.compile(r"\[(%\w+)")
_WIDTH = re.compile(r"\.(?:v(\d)\.)?[bfsu](\d+)\s")


def _blocks(ptx: str) -> list[tuple[str | None, list[str]]]:
    """The entry's instructions as basic blocks (label, instructions): a block
    starts at a label and ends after a branch or return."""
    body = ptx[ptx.index("{", ptx.index(".entry")) + 1:ptx.rindex("}")]
    blocks: list[tuple[str | None, list[str]]] = [(None, [])]
    pending = ""
    for line in body.splitlines():
        line = line.split("//")[0].strip()
        label = _LABEL.match(line)
        if label:
            blocks.append((label.group(1), []))
            continue
        pending += " " + line
        if not pending.rstrip().endswith(";"):
            continue
        instruction, pending = pending.strip().rstrip(";"), ""
        if blocks[-1][1] and re.search(r"\b(bra|ret)\b", blocks[-1][1][-1]):
            blocks.append((None, []))
        blocks[-1][1].append(instruction)
    return [b for b in blocks if b[0] or b[1]]


def _successors(blocks: list[tuple[str | None, list[str]]]) -> list[list[int]]:
    index = {label: i for i, (label, _) in enumerate(blocks) if label}
    succs = []
    for i, (_, instructions) in enumerate(blocks):
        last = instructions[-1] if instructions else ""
        branch = re.search(r"\bbra(?:\.uni)?\s+(\$\w+)", last)
        conditional = last.startswith("@")
        nxt = [i + 1] if i + 1 < len(blocks) and (conditional or not (branch or last == "ret")) else []
        succs.append(([index[branch.group(1)]] if branch else []) + nxt)
    return succs


def _reachable(succs: list[list[int]], start: list[int]) -> set[int]:
    seen, todo = set(), list(start)
    while todo:
        i = todo.pop()
        if i not in seen:
            seen.add(i)
            todo += succs[i]
    return seen


def _roots(instructions: list[str], register: str) -> set[str]:
    """The kernel parameters a register's value is computed from."""
    sources: dict[str, set[str]] = {}
    for ins in instructions:
        match = re.match(r"(?:@!?%\w+\s+)?[\w.]+\s+(%\w+),(.*)", ins)
        if match:
            sources.setdefault(match.group(1), set()).update(re.findall(r"%\w+|\w+_param_\d+", match.group(2)))
    roots, seen, todo = set(), set(), [register]
    while todo:
        value = todo.pop()
        if value in seen:
            continue
        seen.add(value)
        if not value.startswith("%"):
            roots.add(value)
        todo += sources.get(value, ())
    return roots


def _bytes(instruction: str) -> int:
    lanes, bits = _WIDTH.search(instruction + " ").groups()
    return int(lanes or 1) * int(bits) // 8


def _k_loop(ptx: str) -> dict[str, list[str]]:
    """Instructions inside the one loop of a kernel, before it and after it."""
    blocks = _blocks(ptx)
    succs = _successors(blocks)
    loop = {i for i in range(len(blocks)) if i in _reachable(succs, succs[i])}
    assert loop, "the kernel has no loop"
    after = _reachable(succs, [s for i in loop for s in succs[i]]) - loop
    parts: dict[str, list[str]] = {"before": [], "loop": [], "after": []}
    for i, (_, instructions) in enumerate(blocks):
        parts["loop" if i in loop else "after" if i in after else "before"] += instructions
    return parts


ACCUMULATOR_CASES = {
    # name: (source, compute instruction, per K step, C bytes each thread owns)
    "mma": (_matmul(256, 256, 256, "f16", MMA), "mma.sync", (32 // 16) * (32 // 8) * (32 // 16), 32 * 32 * 4 // 32),
    "simt": (_matmul(256, 256, 256, "f32", SIMT), "fma.rn.f32", (32 // 4) * (32 // 8) * 16, (32 // 4) * (32 // 8) * 4),
    # What the search picks for examples/gemm_f16_transposed.mlir on an H200.
    "mma_transposed_b": (_matmul(256, 256, 256, "f16", _choice(BM=128, BN=128, BK=16, WM=16, WN=32, MMA=1), b_t=True),
                         "mma.sync", (16 // 16) * (32 // 8) * (16 // 16), 16 * 32 * 4 // 32),
    "batch_mma": (_batch_matmul(4, 128, 128, 64, "f16", MMA), "mma.sync", (32 // 16) * (32 // 8) * (32 // 16),
                  32 * 32 * 4 // 32),
    "batch_simt": (_batch_matmul(4, 128, 128, 64, "f32", _choice(BM=64, BN=64, BK=8, WM=8, WN=16, MMA=0)),
                   "fma.rn.f32", (8 // 4) * (16 // 8) * 8, (8 // 4) * (16 // 8) * 4),
}


@pytest.mark.parametrize("chip", CHIPS)
@pytest.mark.parametrize("case", sorted(ACCUMULATOR_CASES))
def test_accumulator_stays_in_registers(case, chip, tmp_path):
    """C is never loaded or stored inside the K loop; each thread stores its
    tile once, after the loop, and the fill leaves no stores behind."""
    source, compute, per_step, c_bytes = ACCUMULATOR_CASES[case]
    ptx, _ = _lower(source, chip)
    (text,) = ptx.values()
    parts = _k_loop(text)
    everything = [ins for part in parts.values() for ins in part]
    assert not any(ins.startswith("st.global") for ins in parts["before"] + parts["loop"])
    stores = [ins for ins in parts["after"] if ins.startswith("st.global")]
    c_params = set().union(*(_roots(everything, _ADDRESS.search(ins).group(1)) for ins in stores))
    loop_loads = [ins for ins in parts["loop"] if ins.startswith("ld.global")]
    assert loop_loads, "the A and B tiles are loaded inside the loop"
    for ins in loop_loads:
        assert not _roots(everything, _ADDRESS.search(ins).group(1)) & c_params, ins
    assert sum(ins.startswith(compute) for ins in parts["loop"]) == per_step
    assert sum(_bytes(ins) for ins in stores) == c_bytes
    assert _ptxas(ptx, chip, tmp_path)["spills"] == 0
