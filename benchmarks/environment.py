"""What every benchmark records beside its figures: the machine and the library versions."""

from __future__ import annotations

import os
import platform
from importlib import metadata
from pathlib import Path


def machine() -> str:
    """CPU model and the cores this process may use."""
    model = platform.processor() or platform.machine()
    try:
        with open("/proc/cpuinfo") as cpuinfo:
            model = next((line.split(":", 1)[1].strip() for line in cpuinfo if line.startswith("model name")), model)
    except OSError:
        pass
    return f"{model}, {len(os.sched_getaffinity(0))} cores"


def versions(*packages: str) -> str:
    """Python's version and each package's, e.g. ``Python 3.11.7, numpy 2.4.6``."""
    return ", ".join([f"Python {platform.python_version()}", *(f"{p} {metadata.version(p)}" for p in packages)])


def _shown(path: Path | None) -> str:
    """``path`` as a report prints it: under the home directory as ``~/...``, which names no user."""
    if path is not None and path.is_absolute() and path.is_relative_to(Path.home()):
        return str("~" / path.relative_to(Path.home()))
    return str(path)


def host_rates() -> str:
    """Whether this machine was calibrated (``python -m prism.calibrate``): where the host cost model's rates
    come from, and how many micro-kernel shapes were measured."""
    from prism.targets.host import host_target
    from prism.targets.host_calibration import config_path

    target = host_target()
    where = f" ({_shown(config_path())})" if target.rates == "calibrated" else ""
    return (f"{target.rates}{where}, {len(target.step_seconds)} micro-kernel shapes and "
            f"{len(target.pipelined_factors)} depths of the pipelined copy measured")
