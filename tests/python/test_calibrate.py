"""Host calibration: measured once into a file, then read by the host target; compilations time nothing. A host
description replaces what the target reads off this machine."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import prism
from conftest import EXAMPLES, REFERENCE_HOST, REPO
from prism.infra.errors import TargetError
from prism.targets.host_calibration import CONFIG_VERSION, FAMILY_RATES, parse_step_key, step_key
from prism.targets.host_machine import DESCRIPTION_VARIABLE, Machine, described_machine, machine_name


def run(*args: str, config: Path | str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PRISM_HOST_CONFIG": str(config)}
    return subprocess.run([sys.executable, *args], capture_output=True, text=True, cwd=REPO, env=env, timeout=300)


def write_config(path: Path, **changes: object) -> Path:
    """A calibration of the machine the host target describes (this one, unless PRISM_HOST_DESCRIPTION names
    another)."""
    machine = described_machine()
    data = {"version": CONFIG_VERSION, "machine": machine.machine, "cores": machine.cores, "gflops": 1.0,
            "dram_gbps": 1.0, "cache_gbps": 2.0, **changes}
    path.write_text(json.dumps(data))
    return path


def predicted(config: Path | str) -> tuple[float, str]:
    result = run("-m", "prism.cli", str(EXAMPLES / "gemm.mlir"), "--emit=report", config=config)
    assert result.returncode == 0, result.stderr
    (family,) = json.loads(result.stdout)["families"]
    return family["predicted_seconds"], json.dumps(family["choice"])


def test_calibrate_writes_a_file_the_host_target_reads(tmp_path: Path) -> None:
    path = tmp_path / "host.json"
    result = run("-m", "prism.calibrate", "--quick", "-o", str(path), config="")
    assert result.returncode == 0, result.stderr
    saved = json.loads(path.read_text())
    assert saved["version"] == CONFIG_VERSION and saved["machine"] == machine_name()
    assert min(saved["gflops"], saved["dram_gbps"], saved["cache_gbps"], saved["stream_gbps"]) > 0
    assert saved["steps"] and all(parse_step_key(key) for key in saved["steps"])
    assert saved["attention"] and all(re.fullmatch(r"\d+x\d+", key) for key in saved["attention"])
    assert saved["pipelined"] and all(key.isdigit() for key in saved["pipelined"])
    assert min(saved["pipelined"].values()) == 1.0  # each depth over the fastest
    assert saved["pipelined_in_cache"] > 0


def test_a_calibration_changes_the_cost_model_and_compiling_stays_deterministic(tmp_path: Path) -> None:
    slow = write_config(tmp_path / "slow.json")
    default_seconds, _ = predicted("")
    first, second = predicted(slow), predicted(slow)
    assert first == second
    assert first[0] > 10 * default_seconds  # 1 GFLOP/s and 1 GB/s against the configured defaults


def test_a_broken_or_foreign_calibration_is_a_clean_error(tmp_path: Path) -> None:
    cases = {f"not a version-{CONFIG_VERSION} host calibration": write_config(tmp_path / "old.json", version=1),
             "holds a rate that is not positive": write_config(tmp_path / "zero.json", gflops=0),
             "not a version-2 host calibration": write_config(tmp_path / "shape.json", steps={"direct 6by16": 1e-9}),
             "not positive": write_config(tmp_path / "step.json", steps={"packed 4x16": -1e-9}),
             "host calibration; rerun": write_config(tmp_path / "block.json", attention={"4 by 64": 1.0}),
             "host calibration;": write_config(tmp_path / "depth.json", pipelined={"128 deep": 1.0}),
             "calibration; rerun": write_config(tmp_path / "decode.json", decode_attention={"one by 64": 1.0}),
             "version-2 host calibration; rerun": write_config(tmp_path / "l3.json", l3_bytes=-1),
             "a version-2 host calibration": write_config(tmp_path / "l3-float.json", l3_bytes=1.5),
             "a rate that is not positive": write_config(tmp_path / "in-cache.json", pipelined_in_cache=0),
             "version-2 host calibration": write_config(tmp_path / "in-cache-text.json", pipelined_in_cache="fast"),
             "was measured on 'another CPU'": write_config(tmp_path / "other.json", machine="another CPU"),
             "cannot read the host calibration": tmp_path / "garbage.json"}
    (tmp_path / "garbage.json").write_text("{")
    for message, path in cases.items():
        result = run("-m", "prism.cli", str(EXAMPLES / "gemm.mlir"), "--emit=report", config=path)
        assert result.returncode == 1 and "Traceback" not in result.stderr, result.stderr
        assert f"{path}: error: " in result.stderr and message in result.stderr, result.stderr


def describe(path: Path, **changes: object) -> Path:
    data = {**json.loads(REFERENCE_HOST.read_text()), **changes}
    path.write_text(json.dumps({key: value for key, value in data.items() if value is not None}))
    return path


def test_a_host_description_replaces_what_is_read_off_this_machine(tmp_path: Path,
                                                                   describe_host: Callable[..., Any]) -> None:
    """PRISM_HOST_DESCRIPTION: the vector width, cores and caches of the target are the file's, and a
    calibration applies only if it was measured on the machine described."""
    wide = describe(tmp_path / "wide.json", machine="wide", cores=3, vector_bits=512, l2_bytes=2 * 1024**2)
    target = describe_host(wide)
    assert (target.cores, target.vector_bits, target.vector_registers, target.l2_bytes) == (3, 512, 32, 2 * 1024**2)
    # Two FMA pipes of the description's 256 bits: one 512-bit FMA per cycle, and the default rate to match.
    assert target.vector_fmas_per_cycle == 1 and target.flops["f32"] == 3 * 2 * 2 * 8 * 3.6e9
    assert target.lowering() == "prism-lower-cpu{threads=3}"
    calibration = write_config(tmp_path / "here.json", machine=machine_name())  # this machine, not "wide"
    with pytest.raises(TargetError, match="measured on .* not on this 'wide' with 3"):
        describe_host(wide, calibration)
    wide_calibration = write_config(tmp_path / "wide-calibration.json", machine="wide", cores=3, gflops=7.0)
    assert describe_host(wide, wide_calibration).flops["f32"] == 7e9


def test_a_broken_host_description_is_a_clean_error(tmp_path: Path) -> None:
    cases = {"vector_bits is 384, not 128, 256 or 512": describe(tmp_path / "width.json", vector_bits=384),
             "not a version-1 host description": describe(tmp_path / "fields.json", l3_bytes=None),
             "the integers 'cores'": describe(tmp_path / "float.json", cores=2.0),
             "holds a size that is not positive": describe(tmp_path / "zero.json", l1d_bytes=0),
             r"fma_bits \(512\) is wider than its vectors \(256\)": describe(tmp_path / "fma.json", fma_bits=512),
             "cannot read the host description": tmp_path / "missing.json"}
    for message, path in cases.items():
        with pytest.raises(TargetError, match=message):
            Machine.read(path)
        env = {**os.environ, "PRISM_HOST_CONFIG": "", DESCRIPTION_VARIABLE: str(path)}
        result = subprocess.run([sys.executable, "-m", "prism.cli", str(EXAMPLES / "gemm.mlir")], capture_output=True,
                                text=True, cwd=REPO, env=env, timeout=300)
        assert result.returncode == 1 and "Traceback" not in result.stderr and not result.stdout, result.stderr
        assert f"{path.name}: error:" in result.stderr and re.search(message, result.stderr), result.stderr


def steps_favouring(fast: tuple[int, int], slower: tuple[int, int]) -> dict[str, float]:
    """Measured steps of the direct kernel where the register block ``fast`` beats ``slower`` per element of
    C, and every other block is far slower."""
    steps = {step_key("direct", rm, rn): 1e-6 for rm in (1, 2, 3, 4, 6, 8, 12, 16) for rn in (8, 16, 32)}
    return {**steps, step_key("direct", *fast): 1e-9, step_key("direct", *slower): 2e-9}


def test_the_pick_follows_the_calibration_of_each_micro_kernel(tmp_path: Path,
                                                               describe_host: Callable[..., Any]) -> None:
    """Two calibrations that rank two register blocks oppositely: each compilation picks its calibration's
    faster block, and the predicted time is the measured steps'."""
    picks = {}
    for fast, slower in (((6, 16), (4, 16)), ((4, 16), (6, 16))):
        machine = json.loads(REFERENCE_HOST.read_text())
        config = tmp_path / f"{fast[0]}x{fast[1]}.json"
        config.write_text(json.dumps({"version": CONFIG_VERSION, "machine": machine["machine"],
                                      "cores": machine["cores"], "gflops": 100.0, "dram_gbps": 20.0,
                                      "cache_gbps": 100.0, "steps": steps_favouring(fast, slower)}))
        target = describe_host(REFERENCE_HOST, config)
        assert target.rates == "calibrated" and len(target.step_seconds) == 24
        report = prism.compile((EXAMPLES / "gemm.mlir").read_text(), target="host", emit="report").report
        (family,) = report["families"]
        picks[fast] = (family["choice"]["RM"], family["choice"]["RN"])
    assert picks == {(6, 16): (6, 16), (4, 16): (4, 16)}


def test_a_core_family_stands_in_for_a_calibration(tmp_path: Path, describe_host: Callable[..., Any]) -> None:
    """Without a calibration, a machine of a known core family takes the rates recorded for it; a description
    names its family or none, and an unknown family is refused."""
    for core, rates in FAMILY_RATES.items():
        target = describe_host(describe(tmp_path / f"{core}.json", core=core))
        assert target.rates == f"{core} defaults"
        assert target.flops["f32"] == pytest.approx(rates.gflops * target.cores * 1e9)
        assert dict(target.step_seconds) == rates.steps
        assert target.pipelined_in_cache == rates.pipelined_in_cache
    assert describe_host(REFERENCE_HOST).rates == "configured defaults"
    with pytest.raises(TargetError, match="core is 'zen9', not one of 'zen4'"):
        Machine.read(describe(tmp_path / "zen9.json", core="zen9"))


DECODE = """func.func @decode(%x: tensor<1x4096xf32>, %w: tensor<4096x8192xf32>) -> tensor<1x8192xf32> {
  %zero = arith.constant 0.0 : f32
  %empty = tensor.empty() : tensor<1x8192xf32>
  %acc = linalg.fill ins(%zero : f32) outs(%empty : tensor<1x8192xf32>) -> tensor<1x8192xf32>
  %y = linalg.matmul ins(%x, %w : tensor<1x4096xf32>, tensor<4096x8192xf32>)
                     outs(%acc : tensor<1x8192xf32>) -> tensor<1x8192xf32>
  return %y : tensor<1x8192xf32>
}"""


def test_the_measured_decode_rate_prices_streaming_the_weights(tmp_path: Path,
                                                              describe_host: Callable[..., Any]) -> None:
    """A decode product streams its 128 MiB of weights at the rate measured for the kernel at decode, where
    one was measured, else at the DRAM copy's."""
    machine = json.loads(REFERENCE_HOST.read_text())
    seconds = {}
    for stream in (None, 40.0):
        config = tmp_path / f"stream-{stream}.json"
        data = {"version": CONFIG_VERSION, "machine": machine["machine"], "cores": machine["cores"],
                "gflops": 100.0, "dram_gbps": 20.0, "cache_gbps": 100.0}
        config.write_text(json.dumps(data if stream is None else {**data, "stream_gbps": stream}))
        describe_host(REFERENCE_HOST, config)
        (family,) = prism.compile(DECODE, target="host", emit="report").report["families"]
        seconds[stream] = family["predicted_seconds"]
    weights = 4096 * 8192 * 4
    assert seconds[None] >= weights / 20e9 and seconds[40.0] < seconds[None] / 1.8


def test_the_attention_pick_follows_the_calibrated_register_blocks(tmp_path: Path,
                                                                  describe_host: Callable[..., Any]) -> None:
    """The attention kernel's calibrated factors: where the model's own pick is timed 4x slower than modelled,
    the pick moves to another register block; the predicted time is the factor's."""
    from test_attention import attention_text

    machine = json.loads(REFERENCE_HOST.read_text())
    text = attention_text((4,), 256, 256, 64, 64)

    def pick(attention: dict[str, float]) -> tuple[tuple[int, int], float]:
        config = tmp_path / f"attention-{len(attention)}.json"
        config.write_text(json.dumps({"version": CONFIG_VERSION, "machine": machine["machine"],
                                      "cores": machine["cores"], "gflops": 100.0, "dram_gbps": 20.0,
                                      "cache_gbps": 100.0, "attention": attention}))
        describe_host(REFERENCE_HOST, config)
        (family,) = prism.compile(text, target="host", emit="report").report["families"]
        return (family["choice"]["RM"], family["choice"]["RN"]), family["predicted_seconds"]

    first, seconds = pick({})
    slower = {f"{first[0]}x{first[1]}": 4.0}
    second, slowed = pick(slower)
    assert second != first and seconds < slowed < 4 * seconds


# More rows than read B in place as streams (prism.kernels.host_gemm.STREAMING_ROWS).
SIXTEEN_ROWS = DECODE.replace("1x4096xf32", "16x4096xf32").replace("1x8192xf32", "16x8192xf32")


def test_the_pipelined_copy_depth_follows_the_calibration(tmp_path: Path,
                                                          describe_host: Callable[..., Any]) -> None:
    """A product of 16 rows by 128 MiB of weights, where one-row blocks stream slowly, copies B in a pipeline:
    where the calibration times the model's own slice depth 1.5x slower than others, the pick moves to another
    depth; where it times every depth 1.5x slower, the prediction grows by at most that."""
    machine = json.loads(REFERENCE_HOST.read_text())

    def pick(pipelined: dict[str, float]) -> tuple[dict[str, int], float]:
        config = tmp_path / f"pipelined-{len(pipelined)}.json"
        config.write_text(json.dumps({"version": CONFIG_VERSION, "machine": machine["machine"],
                                      "cores": machine["cores"], "gflops": 100.0, "dram_gbps": 20.0,
                                      "cache_gbps": 100.0, "stream_gbps": 5.0, "pipelined": pipelined}))
        describe_host(REFERENCE_HOST, config)
        (family,) = prism.compile(SIXTEEN_ROWS, target="host", emit="report").report["families"]
        return family["choice"], family["predicted_seconds"]

    first, seconds = pick({})
    assert first["TM"] > first["RM"] > 1  # several row panels of several rows: the copy is pipelined
    depth = first["TK"]
    second, _ = pick({str(depth): 1.5, str(depth // 2): 1.0, str(depth * 2): 1.0})
    assert second["TK"] != depth
    # Every depth is nearest to the one measured: the pipelined copies are all 1.5x slower, and the pick is
    # another plan or a slower one.
    _, slowed = pick({str(depth): 1.5})
    assert seconds < slowed <= 1.5 * seconds


def test_the_calibration_decides_where_the_copy_of_b_is_pipelined(tmp_path: Path,
                                                                  describe_host: Callable[..., Any]) -> None:
    """Where the calibration timed the pipelined copy faster than the copy in a phase of its own on a B the L3
    holds, the direct kernel pipelines the copy of a B of 256 KiB (two panel buffers per worker, and prefetches of
    the B it will copy); timed slower, or not at all, it copies that B in a phase of its own. Over a K of a few
    rows (host_gemm.SHALLOW_K) it copies in a phase even there."""
    machine = json.loads(REFERENCE_HOST.read_text())

    def lowered(in_cache: float | None, k: int = 256) -> tuple[int, bool]:
        measured = {} if in_cache is None else {"pipelined_in_cache": in_cache}
        config = write_config(tmp_path / f"in-cache-{in_cache}.json", machine=machine["machine"],
                              cores=machine["cores"], **measured)
        target = describe_host(REFERENCE_HOST, config)
        text = prism.compile(pipelined_product(k), target="host", pipeline="prism-lower-cpu{threads=2}").mlir
        return target.copy_in_phase_bytes, "prefetch" in text

    quarter = machine["l3_bytes"] // 4
    assert lowered(0.8) == (0, True)
    assert lowered(1.2) == (quarter, False)
    assert lowered(None) == (quarter, False)
    assert lowered(0.8, k=16) == (0, False)


def pipelined_product(k: int) -> str:
    """A 16 x ``k`` by ``k`` x 256 product in two row panels of 8 rows: its tasks copy B into panels."""
    a, b, c = f"tensor<16x{k}xf32>", f"tensor<{k}x256xf32>", "tensor<16x256xf32>"
    return f"""func.func @mm(%a: {a}, %b: {b}) -> {c} {{
  %zero = arith.constant 0.0 : f32
  %e = tensor.empty() : {c}
  %init = linalg.fill ins(%zero : f32) outs(%e : {c}) -> {c}
  %r = linalg.matmul {{prism.roles = ["m", "n", "k"], prism.choice = {{TM = 16, TN = 128, TK = 64, RM = 8, RN = 16}}}}
         ins(%a, %b : {a}, {b}) outs(%init : {c}) -> {c}
  return %r : {c}
}}"""


def test_decode_attention_factors_apply_at_decode_alone(tmp_path: Path, describe_host: Callable[..., Any]) -> None:
    """The one-row blocks' factors measured at decode price attention of one query per head, and leave attention
    of many queries as its own factors price it."""
    from test_attention import attention_text

    machine = json.loads(REFERENCE_HOST.read_text())

    def predicted_attention(text: str, decode: dict[str, float]) -> tuple[dict[str, int], float]:
        config = tmp_path / f"decode-{len(decode)}.json"
        blocks = {f"{rm}x{rn}": 1.0 for rm in (1, 2, 4, 8) for rn in (16, 32, 64)}
        config.write_text(json.dumps({"version": CONFIG_VERSION, "machine": machine["machine"],
                                      "cores": machine["cores"], "gflops": 100.0, "dram_gbps": 20.0,
                                      "cache_gbps": 100.0, "attention": blocks, "decode_attention": decode}))
        describe_host(REFERENCE_HOST, config)
        (family,) = prism.compile(text, target="host", emit="report").report["families"]
        return family["choice"], family["predicted_seconds"]

    quick = {f"1x{rn}": 0.01 for rn in (16, 32, 64)}
    square = attention_text((4,), 256, 256, 64, 64)
    assert predicted_attention(square, {}) == predicted_attention(square, quick)
    decode = attention_text((32,), 1, 256, 64, 64)
    (_, plain), (_, faster) = predicted_attention(decode, {}), predicted_attention(decode, quick)
    assert faster < plain


def test_a_stray_depth_moves_the_step_little() -> None:
    """The micro-kernels' step is the median slope over the depths: one depth timed three times fast (a stray
    minimum) leaves it within a few percent of the line's, where a least-squares fit is off by a third."""
    from prism.calibrate import DEPTHS, median_slope

    step, fixed = 2e-9, 3e-5
    times = [fixed + step * k for k in DEPTHS]
    assert median_slope(DEPTHS, times) == pytest.approx(step)
    stray = [times[0] * 3, *times[1:]]
    assert abs(median_slope(DEPTHS, stray) / step - 1) < 0.15
    assert abs(np.polyfit(DEPTHS, stray, 1)[0] / step - 1) > 0.3


def test_the_l3_the_cores_get_is_where_the_copy_rate_falls() -> None:
    """A ladder of copies finds the L3 the cores get: the largest footprint before the rate falls under
    CACHE_RATE_FRACTION of the fastest below it (a virtual machine that reported 480 MiB copied 128 MiB at 50
    GB/s and 256 MiB at 28); a dip that stays above the fraction, or none, leaves the reported size."""
    from prism.calibrate import CACHE_RATE_FRACTION, effective_l3

    mib = 1 << 20
    measured = {8 * mib: 58.2, 16 * mib: 56.9, 32 * mib: 53.6, 64 * mib: 57.5, 128 * mib: 46.4, 256 * mib: 28.9}
    assert effective_l3(measured, 480 * mib) == 128 * mib
    assert effective_l3({8 * mib: 50.0, 16 * mib: 50.0 * CACHE_RATE_FRACTION * 1.01}, 32 * mib) == 32 * mib
    assert effective_l3({8 * mib: 50.0, 16 * mib: 20.0, 32 * mib: 60.0}, 32 * mib) == 8 * mib
    assert effective_l3({}, 32 * mib) == 32 * mib


def test_a_calibrated_l3_stands_in_for_the_reported_one(tmp_path: Path, describe_host: Callable[..., Any]) -> None:
    """The host target takes the calibration's L3 where it is smaller than the described one, and the cost
    model then streams from DRAM what it would have priced in the cache."""
    machine = json.loads(REFERENCE_HOST.read_text())
    data = {"version": CONFIG_VERSION, "machine": machine["machine"], "cores": machine["cores"],
            "gflops": 100.0, "dram_gbps": 20.0, "cache_gbps": 100.0}
    targets = {}
    for l3 in (None, 4 << 20, 1 << 40):
        config = tmp_path / f"l3-{l3}.json"
        config.write_text(json.dumps(data if l3 is None else {**data, "l3_bytes": l3}))
        targets[l3] = describe_host(REFERENCE_HOST, config)
    assert targets[None].l3_bytes == targets[1 << 40].l3_bytes == machine["l3_bytes"]
    assert targets[4 << 20].l3_bytes == 4 << 20
    from prism.search.space import Contraction
    from prism.targets.host_cost import streams_from_memory

    op = Contraction(("m", "n", "k"), ((0, 2), (2, 1)), (256, 1024, 1024), (4, 4), 4, "f32")
    assert not streams_from_memory(targets[None], op) and streams_from_memory(targets[4 << 20], op)
