"""The host's calibration file: the rates ``python -m prism.calibrate`` measured on this machine, which the
host target's cost model reads (:func:`prism.targets.host.host_target`)."""

from __future__ import annotations

import dataclasses
import json
import os
from dataclasses import dataclass
from pathlib import Path

from prism.infra.errors import TargetError
from prism.targets.host_machine import Machine

# The file written by ``python -m prism.calibrate``; PRISM_HOST_CONFIG names another ('' for none).
CONFIG_NAME = "host.json"
CONFIG_VERSION = 1


def config_path() -> Path | None:
    """Where the host's calibration is read from and written to, or None when it is switched off."""
    if "PRISM_HOST_CONFIG" in os.environ:
        return Path(os.environ["PRISM_HOST_CONFIG"]) if os.environ["PRISM_HOST_CONFIG"] else None
    base = Path(os.environ.get("XDG_CONFIG_HOME") or Path.home() / ".config")
    return base / "prism" / CONFIG_NAME


@dataclass(frozen=True)
class Calibration:
    """What ``python -m prism.calibrate`` measured on this machine, all cores together."""

    machine: str
    cores: int
    gflops: float  # f32 FMA rate a tuned GEMM reaches
    dram_gbps: float  # streaming copy, bytes read and written, far beyond the caches
    cache_gbps: float  # the same within half the L3

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
        if not isinstance(data, dict) or data.get("version") != CONFIG_VERSION or any(
                not isinstance(data.get(key), (int, float) if kind is float else kind) for key, kind in fields.items()):
            raise TargetError(f"not a version-{CONFIG_VERSION} host calibration; rerun "
                              "'python -m prism.calibrate'", location=str(path))
        found = Calibration(**{key: kind(data[key]) for key, kind in fields.items()})
        if min(found.gflops, found.dram_gbps, found.cache_gbps) <= 0 or found.cores < 1:
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
        path.write_text(json.dumps({"version": CONFIG_VERSION, **dataclasses.asdict(self)}, indent=2,
                                   sort_keys=True) + "\n")
