"""One gpu.module of kernels to one PTX module, and ``ptxas`` to check it.

:func:`module_text` puts kernels into one ``gpu.module``; :func:`to_ptx`
runs the NVVM pipeline in-process and fixes what LLVM 22 gets wrong for
Prism's kernels:

- ``gpu.dynamic_shared_memory`` comes out as a one-byte static ``.shared``
  variable inside each kernel, which ptxas places before the kernel's other
  shared data, so the tiles addressed from it overlap them (mbarriers
  included). It becomes ``.extern .shared .align 1024`` at module scope, as
  ``nvcc`` declares dynamic shared memory; 1024 bytes is the alignment the
  128-byte swizzle of TMA and wgmma needs.
- ``.maxnreg`` is declared for kernels that ask for it: without it
  ``setmaxnreg`` is ignored.

:func:`ptxas` assembles a module for a chip and reads registers, spills and
shared memory per kernel from ``-v``.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

from mlir import ir, passmanager
from mlir.dialects import gpu

from prism.codegen.gpu.spec import Kernel
from prism.infra.errors import PassFailed
from prism.targets.nvidia import PTX_FEATURES

MODULE_NAME = "prism_kernels"
DYNAMIC_SHARED = "__dynamic_shmem__0"


def module_text(kernels: list[Kernel]) -> str:
    """The MLIR module holding ``kernels`` in one gpu.module, their globals first (each once)."""
    seen: list[str] = []
    for kernel in kernels:
        seen += [g for g in kernel.globals if g not in seen]
    body = "\n".join(["    " + g for g in seen] + [_indent(k.text, 4) for k in kernels])
    return f"module attributes {{gpu.container_module}} {{\n  gpu.module @{MODULE_NAME} {{\n{body}\n  }}\n}}\n"


def _indent(text: str, n: int) -> str:
    return "\n".join(" " * n + line if line else line for line in text.splitlines())


def to_ptx(module: ir.Module, chip: str, kernels: list[Kernel] = ()) -> str:
    """Run the NVVM pipeline on ``module`` (a container module of one gpu.module) and return its PTX, fixed."""
    if chip not in PTX_FEATURES:
        raise PassFailed(f"unknown chip '{chip}'; expected one of {', '.join(sorted(PTX_FEATURES))}")
    pipeline = (f"builtin.module(gpu-lower-to-nvvm-pipeline{{cubin-chip={chip} cubin-features={PTX_FEATURES[chip]} "
                f"cubin-format=isa opt-level=3}})")
    try:
        passmanager.PassManager.parse(pipeline, context=module.context).run(module.operation)
    except ir.MLIRError as error:
        from prism.infra.diagnostics import prism_error_from
        raise prism_error_from(error, PassFailed, prefix="NVVM lowering failed: ") from None
    binaries = [op.operation for op in module.body.operations if op.operation.name == "gpu.binary"]
    if len(binaries) != 1:
        raise PassFailed(f"expected one GPU module, the NVVM pipeline made {len(binaries)}")
    obj = gpu.ObjectAttr(ir.ArrayAttr(binaries[0].attributes["objects"])[0])
    text = obj.object.decode() if isinstance(obj.object, bytes) else str(obj.object)
    ptx = fix_ptx(text.rstrip("\0"), {k.name: k.max_registers for k in kernels if k.max_registers})
    # The binary holds the fixed PTX, without the serializer's timings (which would make the module differ
    # from one compilation to the next).
    binaries[0].attributes["objects"] = ir.ArrayAttr.get(
        [ir.Attribute.parse(f'#gpu.object<{obj.target}, assembly = "{_escape(ptx)}">', context=module.context)],
        context=module.context)
    return ptx


_UNPRINTABLE = re.compile(r'[^\x20-\x7e]|["\\]')


def _escape(text: str) -> str:
    """``text`` as the body of an MLIR string literal."""
    return _UNPRINTABLE.sub(lambda match: f"\\{ord(match.group()):02X}", text)


_DYNAMIC_LINE = re.compile(rf"^\s*\.shared \.align \d+ \.b8 {DYNAMIC_SHARED}(\[\d*\])?;\s*$\n?", re.MULTILINE)
_GLOBAL_DYNAMIC = re.compile(rf"^\.(extern|global) \.shared .* {DYNAMIC_SHARED}.*$\n?", re.MULTILINE)


def fix_ptx(ptx: str, max_registers: dict[str, int]) -> str:
    """Dynamic shared memory declared once at module scope; ``.maxnreg`` where asked."""
    if DYNAMIC_SHARED in ptx:
        ptx = _GLOBAL_DYNAMIC.sub("", _DYNAMIC_LINE.sub("", ptx))
        header_end = ptx.index(".address_size")
        line_end = ptx.index("\n", header_end) + 1
        ptx = ptx[:line_end] + f"\n.extern .shared .align 1024 .b8 {DYNAMIC_SHARED}[];\n" + ptx[line_end:]
    for name, count in max_registers.items():
        ptx = re.sub(rf"(\.entry {re.escape(name)}\((?:[^)]*)\))", rf"\1\n.maxnreg {count}", ptx, count=1)
    return ptx


@dataclass(frozen=True)
class KernelResources:
    """What ``ptxas -v`` says of one kernel."""

    registers: int
    spill_bytes: int  # spill stores + spill loads
    shared_bytes: int  # static shared memory
    messages: tuple[str, ...]  # warnings ptxas printed for it (setmaxnreg ignored, ...)


class PtxasError(RuntimeError):
    """ptxas rejected a module."""


def ptxas_path() -> str | None:
    return shutil.which("ptxas")


def ptxas(ptx: str, chip: str) -> dict[str, KernelResources]:
    """Assemble ``ptx`` for ``chip`` with ``ptxas -v``; per kernel, its resources. Raises PtxasError."""
    exe = ptxas_path()
    if exe is None:
        raise PtxasError("ptxas is not on PATH")
    with tempfile.TemporaryDirectory() as tmp:
        src = Path(tmp) / "module.ptx"
        src.write_text(ptx)
        done = subprocess.run([exe, f"-arch={chip}", "-v", str(src), "-o", str(Path(tmp) / "module.cubin")],
                              capture_output=True, text=True)
    out = done.stdout + done.stderr
    if done.returncode != 0:
        raise PtxasError(out.strip()[-4000:])
    return _resources(out)


def _resources(out: str) -> dict[str, KernelResources]:
    """Per kernel, what ``ptxas -v`` printed: registers, spills and static shared memory from its own lines, and
    the warnings and performance notes (``setmaxnreg`` ignored, ``wgmma`` serialized) that name it."""
    found: dict[str, dict] = {}
    current = None
    notes: list[str] = []
    for line in out.splitlines():
        m = re.search(r"Compiling entry function '([^']+)'", line)
        if m:
            current = m.group(1)
            found[current] = {"registers": 0, "spill": 0, "shared": 0}
            continue
        if "warning" in line.lower() or "Potential Performance Loss" in line:
            notes.append(line.strip())
        if current is None:
            continue
        m = re.search(r"(\d+) bytes spill stores, (\d+) bytes spill loads", line)
        if m:
            found[current]["spill"] = int(m.group(1)) + int(m.group(2))
        m = re.search(r"Used (\d+) registers", line)
        if m:
            found[current]["registers"] = int(m.group(1))
            s = re.search(r"(\d+) bytes smem", line)
            found[current]["shared"] = int(s.group(1)) if s else 0
    return {name: KernelResources(v["registers"], v["spill"], v["shared"],
                                  tuple(n for n in notes if f"'{name}'" in n or not re.search(r"'\w+'", n)))
            for name, v in found.items()}


def compile_kernels(kernels: list[Kernel], chip: str, context: ir.Context | None = None) -> str:
    """The one PTX module of ``kernels`` for ``chip`` (a convenience for tests and emitters)."""
    text = module_text(kernels)
    if context is None:
        with ir.Context() as ctx:
            ctx.allow_unregistered_dialects = False
            return to_ptx(ir.Module.parse(text), chip, kernels)
    return to_ptx(ir.Module.parse(text, context=context), chip, kernels)
