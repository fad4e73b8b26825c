"""prism-verify: prove the program equal to the original, or fail.

Before::

    func.func @qkv(%x: ..., %wq: ..., %wk: ..., %wv: ...) -> (...) {
      %w = tensor.concat dim(1) %wq, %wk, %wv : ...
      %s = linalg.matmul ins(%x, %w : ...) outs(...) -> tensor<16x128xf32>
      %q = tensor.extract_slice %s[0, 0] [16, 64] [1, 1] : ...
      ...

After: the same module, unchanged, when every public function is proven
equal (by egglog, under a budget) to the function of the same name in the
original program: the pipeline's input, or the file named by ``against``.
Otherwise the pass fails with an error that names the function, why the
proof stopped, the laws applied, and a numeric counterexample when random
inputs reveal one (see prism.verify). The proofs, with the laws that fired,
go into the report.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from mlir import ir

from prism.egraph import Budget
from prism.errors import PrismError
from prism.ir import SourceChunk, parse_chunk
from prism.passbase import Pass, PassContext
from prism.verify import verify_modules

ORIGINAL = "original"  # the PassContext artifact holding the pipeline's input, as text


@dataclass(frozen=True)
class VerifyPass(Pass):
    """Prove each public function equal to the original program's (see the module docstring)."""

    NAME = "prism-verify"
    SUMMARY = "Prove every function equal to the original program (egglog), with a numeric counterexample if not"

    against: str = ""
    budget_ms: int = 5000
    max_nodes: int = 100_000
    trials: int = 3

    def run(self, module: ir.Module, ctx: PassContext) -> None:
        original = self._original(module, ctx)
        budget = Budget(seconds=self.budget_ms / 1000, max_nodes=self.max_nodes)
        proofs = verify_modules(original, module, budget, self.trials)
        ctx.report.setdefault("proofs", []).extend(p.as_report() for p in proofs)
        for proof in proofs:
            ctx.progress(f"{self.NAME}: @{proof.name} proved in {proof.proof.seconds:.3f} s with "
                         f"{len(proof.proof.laws)} laws")

    def _original(self, module: ir.Module, ctx: PassContext) -> ir.Module:
        if self.against:
            try:
                text = Path(self.against).read_text()
            except OSError as error:
                raise PrismError(f"{self.NAME}: cannot read '{self.against}': {error.strerror}",
                                 location=self.against) from None
            return parse_chunk(SourceChunk(text, self.against), module.context)
        if ORIGINAL not in ctx.artifacts:
            raise PrismError(f"{self.NAME}: no original program to compare with; name one with against=FILE")
        return parse_chunk(SourceChunk(ctx.artifacts[ORIGINAL], "<original>"), module.context)
