"""Host calibration: measured once into a file, then read by the host target; compilations time nothing."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from conftest import EXAMPLES, REPO
from prism.targets.host import CONFIG_VERSION, machine_name


def run(*args: str, config: Path | str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PRISM_HOST_CONFIG": str(config)}
    return subprocess.run([sys.executable, *args], capture_output=True, text=True, cwd=REPO, env=env, timeout=300)


def write_config(path: Path, **changes: object) -> Path:
    cores = len(os.sched_getaffinity(0))
    data = {"version": CONFIG_VERSION, "machine": machine_name(), "cores": cores, "gflops": 1.0,
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
    assert min(saved["gflops"], saved["dram_gbps"], saved["cache_gbps"]) > 0


def test_a_calibration_changes_the_cost_model_and_compiling_stays_deterministic(tmp_path: Path) -> None:
    slow = write_config(tmp_path / "slow.json")
    default_seconds, _ = predicted("")
    first, second = predicted(slow), predicted(slow)
    assert first == second
    assert first[0] > 10 * default_seconds  # 1 GFLOP/s and 1 GB/s against the configured defaults


def test_a_broken_or_foreign_calibration_is_a_clean_error(tmp_path: Path) -> None:
    cases = {"not a version-1 host calibration": write_config(tmp_path / "old.json", version=0),
             "holds a rate that is not positive": write_config(tmp_path / "zero.json", gflops=0),
             "was measured on 'another CPU'": write_config(tmp_path / "other.json", machine="another CPU"),
             "cannot read the host calibration": tmp_path / "garbage.json"}
    (tmp_path / "garbage.json").write_text("{")
    for message, path in cases.items():
        result = run("-m", "prism.cli", str(EXAMPLES / "gemm.mlir"), "--emit=report", config=path)
        assert result.returncode == 1 and "Traceback" not in result.stderr, result.stderr
        assert f"{path}: error: " in result.stderr and message in result.stderr, result.stderr
