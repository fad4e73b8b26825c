"""The host machine as Prism reads it: from ``/proc/cpuinfo``, the sysfs cache descriptions and the process's
CPU affinity, or from the JSON file that ``PRISM_HOST_DESCRIPTION`` names (:class:`Machine`: to compile for
another machine, or to pin what the output depends on, as the FileCheck tests do)."""

from __future__ import annotations

import dataclasses
import functools
import json
import os
import re
from dataclasses import dataclass
from pathlib import Path

from prism.infra.errors import TargetError


def _cpu_flags() -> set[str]:
    return set((_cpu_field("flags") or "").split())


def _cache_field(level: int, kind: str, field: str) -> str | None:
    """Field ``field`` of cpu0's cache at ``level`` of ``kind`` (Data/Unified), from sysfs; None if unknown."""
    for index in sorted(Path("/sys/devices/system/cpu/cpu0/cache").glob("index*")):
        try:
            if int((index / "level").read_text()) != level or (index / "type").read_text().strip() != kind:
                continue
            return (index / field).read_text().strip()
        except (OSError, ValueError):
            continue
    return None


def cache_size(level: int, kind: str, default: int) -> int:
    """Size of cpu0's cache at ``level`` of ``kind`` (Data/Unified), from sysfs."""
    size = _cache_field(level, kind, "size")
    if not size:
        return default
    try:
        return int(size.rstrip("KM")) * {"K": 1024, "M": 1024**2}.get(size[-1], 1)
    except ValueError:
        return default


def l1d_ways(default: int = 8) -> int:
    """The associativity of cpu0's L1 data cache, from sysfs."""
    ways = _cache_field(1, "Data", "ways_of_associativity")
    return int(ways) if ways and ways.isdigit() and int(ways) > 0 else default


@functools.cache
def _cpuinfo() -> str:
    """/proc/cpuinfo, read once ('' where there is none)."""
    try:
        return Path("/proc/cpuinfo").read_text()
    except OSError:
        return ""


def _cpu_field(name: str) -> str | None:
    """Field ``name`` of the first processor in /proc/cpuinfo (None without one)."""
    match = re.search(rf"^{re.escape(name)}\s*:\s*(.*)$", _cpuinfo(), re.MULTILINE)
    return match.group(1).strip() if match else None


def machine_name() -> str:
    """The CPU's model name, from /proc/cpuinfo."""
    return _cpu_field("model name") or "unknown"


def available_cores() -> int:
    """The cores this process may run on."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)


# The core families Prism has recorded rates for (prism.targets.host_calibration.FAMILY_RATES).
CORE_FAMILIES = ("zen4", "zen5", "intel-avx512", "avx2")


def core_family(vendor: str | None, family: str | None, vector_bits: int) -> str:
    """The core family of a CPU by its vendor, family number and vector width ('' where none fits): AMD's
    family 26 is Zen 5, family 25 with AVX-512 Zen 4; Intel's AVX-512 cores are its server cores; any other
    core with AVX2 is an AVX2 machine."""
    if vendor == "AuthenticAMD" and family == "26":
        return "zen5"
    if vendor == "AuthenticAMD" and family == "25" and vector_bits == 512:
        return "zen4"
    if vendor == "GenuineIntel" and vector_bits == 512:
        return "intel-avx512"
    return "avx2" if vector_bits >= 256 else ""


DESCRIPTION_VARIABLE = "PRISM_HOST_DESCRIPTION"
# Fields a description may leave out, with the value they then take.
_OPTIONAL = {"bf16_dot": 0, "amx": 0, "core": ""}
DESCRIPTION_VERSION = 1


@dataclass(frozen=True)
class Machine:
    """What the host target reads off a machine: its name, cores, vector and FMA widths, and cache sizes."""

    machine: str
    cores: int
    vector_bits: int  # 128 (SSE), 256 (AVX2) or 512 (AVX-512F)
    fma_bits: int  # the width of one FMA unit (two per core): a wider vector FMA takes several
    l1d_bytes: int
    l1d_ways: int  # the L1 data cache's associativity
    l2_bytes: int
    l3_bytes: int
    bf16_dot: int = 0  # 1 where the cores have AVX512-BF16 dot products (vdpbf16ps); optional in a description
    amx: int = 0  # 1 where the cores have AMX tiles with bf16 products (tdpbf16ps); optional in a description
    # The core family whose recorded rates stand in for a calibration (CORE_FAMILIES; '' for none); optional
    core: str = ""

    @staticmethod
    def here() -> Machine:
        """This machine, from /proc/cpuinfo, sysfs and the process's CPU affinity."""
        flags = _cpu_flags()
        vector_bits = 512 if "avx512f" in flags else 256 if "avx2" in flags else 128
        # Zen 4 (AMD family 25) runs a 512-bit FMA on both of its 256-bit units at once; Zen 5 (26) and the
        # AVX-512 cores of Intel have 512-bit units.
        fma_bits = 256 if vector_bits == 512 and _cpu_field("vendor_id") == "AuthenticAMD" \
            and _cpu_field("cpu family") == "25" else vector_bits
        return Machine(machine=machine_name(), cores=available_cores(), vector_bits=vector_bits, fma_bits=fma_bits,
                       l1d_bytes=cache_size(1, "Data", 32 * 1024), l1d_ways=l1d_ways(),
                       l2_bytes=cache_size(2, "Unified", 1024 * 1024),
                       l3_bytes=cache_size(3, "Unified", 32 * 1024**2),
                       bf16_dot=int("avx512_bf16" in flags and vector_bits == 512),
                       amx=int({"amx_tile", "amx_bf16"} <= flags),
                       core=core_family(_cpu_field("vendor_id"), _cpu_field("cpu family"), vector_bits))

    @staticmethod
    def read(path: Path) -> Machine:
        """A machine described in JSON at ``path`` (see :func:`described_machine`); TargetError if it is not one."""
        try:
            data = json.loads(path.read_text())
        except (OSError, UnicodeDecodeError, json.JSONDecodeError) as error:
            raise TargetError(f"cannot read the host description: {error}", location=str(path)) from None
        kinds = {field.name: str if field.type == "str" else int for field in dataclasses.fields(Machine)}
        fields = [name for name in kinds if name not in _OPTIONAL]
        if isinstance(data, dict):
            data = {**_OPTIONAL, **data}
        if not isinstance(data, dict) or data.get("version") != DESCRIPTION_VERSION \
                or set(data) != {*kinds, "version"} or any(type(data[name]) is not kinds[name] for name in kinds):
            integers = ", ".join(repr(name) for name in fields if kinds[name] is int)
            raise TargetError(f"not a version-{DESCRIPTION_VERSION} host description: a JSON object of exactly "
                              f"'version' ({DESCRIPTION_VERSION}), 'machine' (a string) and the integers {integers}, "
                              f"and optionally {', '.join(repr(name) for name in _OPTIONAL)}", location=str(path))
        found = Machine(**{name: data[name] for name in kinds})
        for name in ("bf16_dot", "amx"):
            if getattr(found, name) not in (0, 1):
                raise TargetError(f"the host description's {name} is {getattr(found, name)}, not 0 or 1",
                                  location=str(path))
        if found.core not in ("", *CORE_FAMILIES):
            raise TargetError(f"the host description's core is '{found.core}', not one of "
                              f"{', '.join(repr(core) for core in CORE_FAMILIES)} (or '' for none)",
                              location=str(path))
        for name in ("vector_bits", "fma_bits"):
            if getattr(found, name) not in (128, 256, 512):
                raise TargetError(f"the host description's {name} is {getattr(found, name)}, not 128, 256 or 512",
                                  location=str(path))
        if found.fma_bits > found.vector_bits:
            raise TargetError(f"the host description's fma_bits ({found.fma_bits}) is wider than its vectors "
                              f"({found.vector_bits})", location=str(path))
        if min(found.cores, found.l1d_bytes, found.l1d_ways, found.l2_bytes, found.l3_bytes) < 1:
            raise TargetError("the host description holds a size that is not positive", location=str(path))
        return found


def described_machine() -> Machine:
    """The machine to compile for: the one named by ``PRISM_HOST_DESCRIPTION`` (a JSON file holding
    ``version`` (1) and every field of :class:`Machine`), else this one. A description compiles for another
    machine, or pins what the output depends on whatever machine runs the compiler (the FileCheck tests do)."""
    path = os.environ.get(DESCRIPTION_VARIABLE)
    return Machine.read(Path(path)) if path else Machine.here()
