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
inputs reveal one (see prism.algebra.prove). The proofs, with the laws that fired,
go into the report.
"""

from __future__ import annotations

from dataclasses import dataclass

from mlir import ir

from prism.algebra.budget import Budget
from prism.infra.errors import PrismError
from prism.infra.ir import SourceChunk, parse_chunk, read_source_file
from prism.infra.passbase import Pass, PassContext, option

ORIGINAL = "original"  # the PassContext artifact holding the pipeline's input, as text


@dataclass(frozen=True)
class VerifyPass(Pass):
    """Prove each public function equal to the original program's (see the module docstring)."""

    NAME = "prism-verify"
    SUMMARY = "Prove every function equal to the original program (egglog), with a numeric counterexample if not"

    against: str = option("", "the original program's file (default: the pipeline's input)")
    budget_ms: int = option(5000, "wall-clock limit of each proof, in milliseconds", minimum=1, maximum=600_000)
    max_nodes: int = option(100_000, "e-nodes at which a proof stops", minimum=1, maximum=10_000_000)
    trials: int = option(3, "random inputs tried for a counterexample", minimum=0, maximum=1000)

    def run(self, module: ir.Module, ctx: PassContext) -> None:
        from prism.algebra.prove import prove_modules  # loads egglog: only pipelines that prove pay for it
        from prism.runtime.compare import describe_counterexample

        original = self._original(module, ctx)
        budget = Budget(seconds=self.budget_ms / 1000, max_nodes=self.max_nodes)
        proofs = prove_modules(original, module, budget, self.trials, find_counterexample=describe_counterexample)
        ctx.report.setdefault("proofs", []).extend(p.as_report() for p in proofs)
        for proof in proofs:
            ctx.progress(f"@{proof.name} proved in {proof.proof.seconds:.3f} s with "
                         f"{len(proof.proof.laws)} laws")

    def _original(self, module: ir.Module, ctx: PassContext) -> ir.Module:
        if self.against:
            return parse_chunk(SourceChunk(read_source_file(self.against), self.against), module.context)
        if ORIGINAL not in ctx.artifacts:
            raise PrismError("no original program to compare with; name one with against=FILE")
        return parse_chunk(SourceChunk(ctx.artifacts[ORIGINAL], "<original>"), module.context)
