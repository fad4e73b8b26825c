"""prism-lower-cpu: tensor-level Linalg to the LLVM dialect for the host CPU (see :mod:`prism.codegen.cpu`).

Before::

    func.func @mm(%a: tensor<?x64xf32>, %b: tensor<64x32xf32>) -> tensor<?x32xf32> {
      ... linalg.matmul {prism.roles = ["m", "n", "k"], prism.choice = {RM = 6, RN = 16}} ...
    }

After::

    llvm.func @mm(...) attributes {llvm.emit_c_interface, prism.signature = (tensor<?x64xf32>,
                  tensor<64x32xf32>) -> tensor<?x32xf32>} { ... vector<16xf32> fma ... }
"""

from __future__ import annotations

from dataclasses import dataclass

from mlir import ir

from prism.codegen import cpu
from prism.infra.passbase import Pass, PassContext, option
from prism.targets.host import host_target


@dataclass(frozen=True)
class LowerCpuPass(Pass):
    """Pack, tile, register-block and vectorize contractions; everything else through loops; then LLVM."""

    NAME = "prism-lower-cpu"
    SUMMARY = "Pack, tile, register-block and vectorize for the host CPU, then lower to LLVM"
    LOWERS = True
    STAGES = cpu.STAGE_NAMES

    threads: int = option(0, "worker threads of the parallel loops (0: every core of this machine)",
                          minimum=0, maximum=1024)
    copy_in_phase_bytes: int = option(-1, "the largest B whose copy into panels runs in a phase of its own rather "
                                      "than pipelined (-1: this machine's, from its calibration)",
                                      minimum=-1, maximum=2**62)

    def run(self, module: ir.Module, ctx: PassContext) -> None:
        cpu.lower(module, ctx, self.threads or host_target().cores, host_target().vector_bits, self._in_phase())

    def kernels(self, module: ir.Module) -> list[dict]:
        """What cpu-tile makes of a copy of ``module`` (:func:`prism.codegen.cpu.kernel_report`)."""
        return cpu.kernel_report(module, self.threads or host_target().cores, host_target().vector_bits,
                                 self._in_phase())

    def _in_phase(self) -> int | None:
        """The copy_in_phase_bytes option; None (the host target's) where it is left at -1."""
        return None if self.copy_in_phase_bytes < 0 else self.copy_in_phase_bytes
