"""The host's calibration file: the rates ``python -m prism.calibrate`` measured on this machine, which the
host target's cost model reads (:func:`prism.targets.host.host_target`); and, for a machine never calibrated,
the rates recorded for its core family (:data:`FAMILY_RATES`).

A micro-kernel's rate is kept per kernel shape: the seconds one ``RM x RN``
micro-tile of the ``direct`` kernel (f32, A and B read in place) or of the
``packed`` one (the transform path, on packed operands) takes per step of K,
on one core while every core runs one (:func:`step_key` names them).

The pipelined copy of B (a direct kernel of several row panels reading B
from memory: :func:`prism.kernels.host_gemm.pipelines_copy`) is kept per
slice depth TK, as its time over the time of the fastest depth measured.
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
from dataclasses import dataclass, field
from pathlib import Path

from prism.infra.errors import TargetError
from prism.targets.host_machine import Machine

# The file written by ``python -m prism.calibrate``; PRISM_HOST_CONFIG names another ('' for none).
CONFIG_NAME = "host.json"
CONFIG_VERSION = 2
KERNELS = ("direct", "packed")


def config_path() -> Path | None:
    """Where the host's calibration is read from and written to, or None when it is switched off."""
    if "PRISM_HOST_CONFIG" in os.environ:
        return Path(os.environ["PRISM_HOST_CONFIG"]) if os.environ["PRISM_HOST_CONFIG"] else None
    base = Path(os.environ.get("XDG_CONFIG_HOME") or Path.home() / ".config")
    return base / "prism" / CONFIG_NAME


def step_key(kernel: str, rm: int, rn: int) -> str:
    """The name of a micro-kernel shape in a calibration: ``"direct 6x32"`` (RM rows, RN f32 columns)."""
    return f"{kernel} {rm}x{rn}"


def parse_step_key(key: str) -> tuple[str, int, int] | None:
    """``(kernel, RM, RN)`` of a :func:`step_key`, or None if ``key`` is not one."""
    kernel, _, block = key.partition(" ")
    rm, _, rn = block.partition("x")
    if kernel not in KERNELS or not (rm.isdigit() and rn.isdigit()) or min(int(rm), int(rn)) < 1:
        return None
    return kernel, int(rm), int(rn)


@dataclass(frozen=True)
class Calibration:
    """What ``python -m prism.calibrate`` measured on this machine, all cores together."""

    machine: str
    cores: int
    gflops: float  # f32 FMA rate a tuned GEMM reaches
    dram_gbps: float  # streaming copy, bytes read and written, far beyond the caches
    cache_gbps: float  # the same within half the L3
    # Seconds per step of K of each micro-kernel shape measured (step_key), on one core with all cores busy.
    steps: dict[str, float] = field(default_factory=dict)
    # The weights' bytes per second of Prism's own kernel at decode (one row of C, B from DRAM); None: not measured
    stream_gbps: float | None = None
    # The attention kernel's measured seconds over its modelled ones, per register block ("RMxRN")
    attention: dict[str, float] = field(default_factory=dict)
    # The same at decode (one query per head), per one-row register block ("1xRN")
    decode_attention: dict[str, float] = field(default_factory=dict)
    # The pipelined copy's measured seconds over those of its fastest slice depth, per TK ("128")
    pipelined: dict[str, float] = field(default_factory=dict)
    # The L3 the cores measurably get, where less than the machine reports (prism.calibrate.effective_l3)
    l3_bytes: int | None = None
    # The pipelined copy's seconds over those of the copy in a phase of its own, on a B the L3 holds
    pipelined_in_cache: float | None = None

    @staticmethod
    def read(path: Path, machine: Machine) -> Calibration | None:
        """The calibration at ``path`` (None without a file); TargetError if it is none, or not ``machine``'s."""
        try:
            data = json.loads(path.read_text())
        except FileNotFoundError:
            return None
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as error:
            raise TargetError(f"cannot read the host calibration: {error}", location=str(path)) from None
        fields = {"machine": str, "cores": int, "gflops": float, "dram_gbps": float, "cache_gbps": float}
        numbers = (int, float)
        if not isinstance(data, dict) or data.get("version") != CONFIG_VERSION or any(
                not isinstance(data.get(key), numbers if kind is float else kind) for key, kind in fields.items()) \
                or not _valid_steps(data.get("steps", {})) \
                or not isinstance(data.get("stream_gbps", 1.0), numbers) \
                or not isinstance(data.get("pipelined_in_cache", 1.0), numbers) \
                or not _positive_int(data.get("l3_bytes", 1)) \
                or not _valid_blocks(data.get("attention", {})) \
                or not _valid_blocks(data.get("decode_attention", {})) \
                or not _valid_depths(data.get("pipelined", {})):
            raise TargetError(f"not a version-{CONFIG_VERSION} host calibration; rerun "
                              "'python -m prism.calibrate'", location=str(path))
        stream, in_cache = data.get("stream_gbps"), data.get("pipelined_in_cache")
        found = Calibration(**{key: kind(data[key]) for key, kind in fields.items()},
                            steps={key: float(value) for key, value in data.get("steps", {}).items()},
                            stream_gbps=None if stream is None else float(stream),
                            attention={key: float(value) for key, value in data.get("attention", {}).items()},
                            decode_attention={key: float(value)
                                              for key, value in data.get("decode_attention", {}).items()},
                            pipelined={key: float(value) for key, value in data.get("pipelined", {}).items()},
                            l3_bytes=data.get("l3_bytes"),
                            pipelined_in_cache=None if in_cache is None else float(in_cache))
        rates = (found.gflops, found.dram_gbps, found.cache_gbps, *found.steps.values(), *found.attention.values(),
                 *found.decode_attention.values(), *found.pipelined.values(),
                 *(value for value in (found.stream_gbps, found.pipelined_in_cache) if value is not None))
        if min(rates) <= 0 or found.cores < 1:
            raise TargetError("the host calibration holds a rate that is not positive", location=str(path))
        if (found.machine, found.cores) != (machine.machine, machine.cores):
            raise TargetError(f"the host calibration was measured on '{found.machine}' with {found.cores} cores, "
                              f"not on this '{machine.machine}' with {machine.cores}; "
                              "rerun 'python -m prism.calibrate'",
                              location=str(path))
        return found

    def write(self, path: Path) -> None:
        """Save as JSON (deterministic: sorted keys)."""
        path.parent.mkdir(parents=True, exist_ok=True)
        fields = {key: value for key, value in dataclasses.asdict(self).items() if value is not None}
        path.write_text(json.dumps({"version": CONFIG_VERSION, **fields}, indent=2, sort_keys=True) + "\n")


def _positive_int(value: object) -> bool:
    """Whether ``value`` is a positive integer (a JSON integer, not a boolean)."""
    return isinstance(value, int) and not isinstance(value, bool) and value > 0


def _valid_steps(steps: object) -> bool:
    """Whether ``steps`` maps micro-kernel shapes (step_key) to finite numbers."""
    return isinstance(steps, dict) and all(
        parse_step_key(key) is not None and isinstance(value, (int, float)) and not isinstance(value, bool)
        and math.isfinite(value) for key, value in steps.items())


def _valid_blocks(factors: object) -> bool:
    """Whether ``factors`` maps register blocks ("4x64") to finite numbers."""
    return isinstance(factors, dict) and all(
        parse_step_key(f"direct {key}") is not None and isinstance(value, (int, float))
        and not isinstance(value, bool) and math.isfinite(value) for key, value in factors.items())


def _valid_depths(factors: object) -> bool:
    """Whether ``factors`` maps slice depths ("128") to finite numbers."""
    return isinstance(factors, dict) and all(
        key.isdigit() and int(key) > 0 and isinstance(value, (int, float)) and not isinstance(value, bool)
        and math.isfinite(value) for key, value in factors.items())


@dataclass(frozen=True)
class FamilyRates:
    """The rates recorded for a core family, per core (None: not recorded), which the host target takes where
    nothing was calibrated (``benchmarks/RESULTS.md``, "The host calibrated", has the measurements)."""

    gflops: float
    dram_gbps: float | None = None
    cache_gbps: float | None = None
    steps: dict[str, float] = field(default_factory=dict)
    stream_gbps: float | None = None
    attention: dict[str, float] = field(default_factory=dict)
    decode_attention: dict[str, float] = field(default_factory=dict)
    pipelined: dict[str, float] = field(default_factory=dict)
    pipelined_in_cache: float | None = None

    def over(self, configured: Calibration) -> Calibration:
        """``configured`` (a machine's configured defaults) with these rates where they were recorded."""
        n = configured.cores
        return dataclasses.replace(
            configured, gflops=self.gflops * n, steps=dict(self.steps),
            dram_gbps=configured.dram_gbps if self.dram_gbps is None else self.dram_gbps * n,
            cache_gbps=configured.cache_gbps if self.cache_gbps is None else self.cache_gbps * n,
            stream_gbps=None if self.stream_gbps is None else self.stream_gbps * n, attention=dict(self.attention),
            decode_attention=dict(self.decode_attention), pipelined=dict(self.pipelined),
            pipelined_in_cache=self.pipelined_in_cache)


# Per core, the rates recorded for each core family (CORE_FAMILIES of prism.targets.host_machine): numpy's f32
# GEMM at n = 2048 as prism.calibrate times it, the copy bandwidths and the micro-kernels' steps, from
# benchmarks/RESULTS.md, "The host calibrated" (where its sources are given), the Zen 5's from "Every
# baseline on a calibrated 2-core Zen 5", and the Intel AVX-512 cores' from "A 2-core Intel Xeon with AMX"; the
# pipelined copy from the L3 (pipelined_in_cache) from "The pipelined copy from the L3".
FAMILY_RATES: dict[str, FamilyRates] = {
    "zen4": FamilyRates(
        gflops=102.7, dram_gbps=27.6, cache_gbps=45.9, stream_gbps=33.35,
        steps={"direct 1x16": 7.54e-10, "direct 1x32": 1.384e-09, "direct 1x64": 2.651e-09, "direct 2x16": 1.136e-09,
               "direct 2x32": 1.379e-09, "direct 2x64": 2.543e-09, "direct 3x16": 1.177e-09,
               "direct 3x32": 1.812e-09, "direct 3x64": 3.594e-09, "direct 4x16": 1.205e-09,
               "direct 4x32": 2.443e-09, "direct 4x64": 4.835e-09, "direct 6x16": 1.789e-09,
               "direct 6x32": 3.649e-09, "direct 6x64": 7.252e-09, "direct 8x16": 2.498e-09,
               "direct 8x32": 4.779e-09, "direct 12x16": 3.596e-09, "direct 12x32": 7.143e-09,
               "direct 16x16": 4.768e-09, "packed 2x16": 1.146e-09, "packed 2x32": 1.333e-09,
               "packed 2x64": 2.703e-09, "packed 4x16": 1.163e-09, "packed 4x32": 2.416e-09,
               "packed 4x64": 5.128e-09, "packed 6x16": 1.817e-09, "packed 6x32": 3.63e-09, "packed 6x64": 7.699e-09,
               "packed 8x16": 2.281e-09, "packed 8x32": 4.82e-09, "packed 12x16": 3.666e-09,
               "packed 12x32": 7.436e-09, "packed 16x16": 4.814e-09},
        attention={"1x16": 1.174, "1x32": 1.356, "1x64": 1.727, "2x16": 0.7718, "2x32": 0.9616, "2x64": 1.0,
                   "3x16": 0.8097, "3x32": 0.9762, "3x64": 1.012, "4x16": 0.8771, "4x32": 0.9572, "4x64": 1.022,
                   "6x16": 0.9914, "6x32": 0.9965, "6x64": 1.048, "8x16": 0.9001, "8x32": 0.9709},
        decode_attention={"1x16": 0.4967, "1x32": 0.4586, "1x64": 0.4542},
        pipelined={"32": 1.099, "64": 1.157, "128": 1.0, "256": 1.201, "512": 1.319}),
    "zen5": FamilyRates(
        gflops=135.7, dram_gbps=43.6, cache_gbps=66.45, stream_gbps=52.15,
        steps={"direct 1x16": 4.829e-10, "direct 1x32": 8.409e-10, "direct 1x64": 1.766e-09, "direct 2x16": 9.122e-10,
               "direct 2x32": 9.47e-10, "direct 2x64": 1.57e-09, "direct 3x16": 9.335e-10, "direct 3x32": 1.062e-09,
               "direct 3x64": 1.647e-09, "direct 4x16": 9.532e-10, "direct 4x32": 1.207e-09,
               "direct 4x64": 2.258e-09, "direct 6x16": 1.002e-09, "direct 6x32": 1.572e-09,
               "direct 6x64": 3.19e-09, "direct 8x16": 1.157e-09, "direct 8x32": 2.108e-09,
               "direct 12x16": 1.694e-09, "direct 12x32": 3.138e-09, "direct 16x16": 2.554e-09,
               "packed 2x16": 9.794e-10, "packed 2x32": 1.048e-09, "packed 2x64": 2.671e-09,
               "packed 4x16": 9.981e-10, "packed 4x32": 1.557e-09, "packed 4x64": 2.455e-09,
               "packed 6x16": 1.234e-09, "packed 6x32": 2.189e-09, "packed 6x64": 4.688e-09,
               "packed 8x16": 1.557e-09, "packed 8x32": 3.348e-09, "packed 12x16": 2.171e-09,
               "packed 12x32": 3.962e-09, "packed 16x16": 2.418e-09},
        attention={"1x16": 0.621, "1x32": 0.8461, "1x64": 0.8625, "2x16": 0.3495, "2x32": 0.529, "2x64": 0.5148,
                   "3x16": 0.3748, "3x32": 0.5354, "3x64": 0.488, "4x16": 0.4058, "4x32": 0.5599, "4x64": 0.4927,
                   "6x16": 0.4496, "6x32": 0.4923, "6x64": 0.4935, "8x16": 0.5005, "8x32": 0.4732},
        decode_attention={"1x16": 0.2017, "1x32": 0.2133, "1x64": 0.2023},
        pipelined={"32": 1.084, "64": 1.063, "128": 1.0, "256": 1.019, "512": 1.024}, pipelined_in_cache=1.21),
    "intel-avx512": FamilyRates(
        gflops=179.9, dram_gbps=24.05, cache_gbps=16.35, stream_gbps=24.3,
        steps={"direct 1x16": 4.827e-10, "direct 1x32": 9.51e-10, "direct 1x64": 1.289e-09, "direct 2x16": 1.117e-09,
               "direct 2x32": 1.19e-09, "direct 2x64": 2.353e-09, "direct 3x16": 1.13e-09, "direct 3x32": 1.598e-09,
               "direct 3x64": 2.775e-09, "direct 4x16": 1.314e-09, "direct 4x32": 1.898e-09,
               "direct 4x64": 3.617e-09, "direct 6x16": 1.612e-09, "direct 6x32": 2.676e-09,
               "direct 6x64": 4.651e-09, "direct 8x16": 1.728e-09, "direct 8x32": 3.156e-09,
               "direct 12x16": 2.753e-09, "direct 12x32": 4.649e-09, "direct 16x16": 3.937e-09,
               "packed 2x16": 9.482e-10, "packed 2x32": 8.872e-10, "packed 2x64": 1.67e-09, "packed 4x16": 8.881e-10,
               "packed 4x32": 1.233e-09, "packed 4x64": 1.909e-09, "packed 6x16": 9.636e-10,
               "packed 6x32": 1.463e-09, "packed 6x64": 3.326e-09, "packed 8x16": 1.13e-09, "packed 8x32": 1.901e-09,
               "packed 12x16": 1.563e-09, "packed 12x32": 2.643e-09, "packed 16x16": 1.918e-09},
        attention={"1x16": 1.127, "1x32": 1.388, "1x64": 1.727, "2x16": 0.5852, "2x32": 0.721, "2x64": 1.017,
                   "3x16": 0.6389, "3x32": 0.8684, "3x64": 1.05, "4x16": 0.707, "4x32": 1.009, "4x64": 1.014,
                   "6x16": 0.8418, "6x32": 1.008, "6x64": 0.9742, "8x16": 1.01, "8x32": 0.9822},
        decode_attention={"1x16": 0.5994, "1x32": 0.557, "1x64": 0.5053},
        pipelined={"32": 1.077, "64": 1.042, "128": 1.0, "256": 1.013, "512": 1.107}, pipelined_in_cache=0.91),
    "avx2": FamilyRates(gflops=66.1),
}
