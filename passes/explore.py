"""prism-explore: replace each function by the equivalent form the search's cost model predicts fastest.

Before (the weights marked invariant: the same on every call)::

    func.func @qkv(%x: tensor<16x256xf32>, %wq: tensor<256x256xf32> {prism.invariant}, %wk: ..., %wv: ...)
        -> (tensor<16x256xf32>, tensor<16x64xf32>, tensor<16x64xf32>) {
      %q = linalg.matmul ins(%x, %wq : ...) ...
      %k = linalg.matmul ins(%x, %wk : ...) ...
      %v = linalg.matmul ins(%x, %wv : ...) ...
      return %q, %k, %v : ...
    }

After::

    func.func @qkv_prepare(%arg0: tensor<256x256xf32>, ...) -> tensor<256x384xf32> attributes {prism.part_of = "qkv"}
      { ... tensor.concat ... }
    func.func @qkv_apply(%arg0: tensor<16x256xf32>, %arg1: tensor<256x384xf32> {prism.invariant}) -> (...)
        attributes {prism.part_of = "qkv"} { ... one linalg.matmul, three tensor.extract_slice ... }
    func.func @qkv(%x: ..., %wq: ... {prism.invariant}, ...) -> (...)
        attributes {prism.apply_args = array<i64: 0, -1>, prism.prepare_args = array<i64: 1, 2, 3>} {
      ... the three products as written: concatenating the weights on every call would cost more ...
    }

Each public function is translated into terms (prism.algebra.terms), explored in
an e-graph under a bounded budget and extracted by whole-program cost
(prism.algebra.explore). When a variant is predicted faster, the function is
replaced by it. Values computed from invariant arguments alone go into a
``_prepare`` function, to be run once per set of weights, and the per-call
work into ``_apply``. The function itself keeps its signature and becomes
the best form that prepares nothing, since a call of it cannot reuse
prepared values; ``prism.prepare_args`` and ``prism.apply_args`` on it say how
the parts compose (``CompiledModule.bind`` runs them), and prism-verify
proves that composition equal to the original as well as the function. A function the
algebra cannot express (an op outside it, dynamic shapes, mixed element
types) is left as written, with a remark. Every rewrite is proven by
prism-verify, which ends prism-optimize.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from mlir import ir

from prism.algebra.budget import EXPLORATION as BUDGET
from prism.algebra.budget import Budget
from prism.infra import attrs
from prism.infra.passbase import Pass, PassContext, option
from prism.targets import get_target, target_option

if TYPE_CHECKING:
    from prism.algebra.explore import Exploration
    from prism.algebra.terms import Program


@dataclass(frozen=True)
class ExplorePass(Pass):
    """Rewrite each function into its cheapest equivalent form found (see the module docstring)."""

    NAME = "prism-explore"
    SUMMARY = "Find equivalent forms of each function (egglog) and keep the one predicted fastest"

    target: str = target_option()
    iterations: int = option(BUDGET.iterations, "rounds of the laws in the e-graph", minimum=1, maximum=100)
    max_nodes: int = option(BUDGET.max_nodes, "e-nodes at which exploration stops", minimum=1, maximum=10_000_000)

    def run(self, module: ir.Module, ctx: PassContext) -> None:
        # The algebra loads egglog: only pipelines that explore pay for it.
        from prism.algebra.explore import explorable, explore, replace_function
        from prism.algebra.prove import public_functions
        from prism.algebra.terms import translate

        target = get_target(self.target or ctx.target)
        budget = Budget(BUDGET.seconds, self.max_nodes, self.iterations, BUDGET.match_limit)
        for name, func in public_functions(module).items():
            where = func.location
            program = translate(func)
            element, why, at = explorable(func, program)
            if why:
                ctx.remark(at, f"@{name} kept as written: {why}")
                continue
            invariant = frozenset(i for i, text in enumerate(_arg_attrs(func)) if attrs.INVARIANT in text)
            found = explore(program, target, element, invariant, budget)
            ctx.report.setdefault("explorations", []).append(_report(name, found))
            ctx.progress(f"@{name}: {found.classes} e-classes, {found.nodes} e-nodes, "
                         f"{found.evaluated} programs costed in {found.seconds:.2f} s")
            if found.stopped == "time":
                ctx.remark(where, f"@{name}: exploration reached its {budget.seconds:.0f} s guard; "
                                  "its result may differ between runs (lower iterations or max_nodes)")
            if not found.improves:
                continue
            if not found.best.prepared and not _proven(program, found):
                ctx.remark(where, f"@{name} kept as written: its best form is not proven equal to it within a "
                                  "proof's budget, and an unproven rewrite is never kept")
                continue
            symbols = ir.SymbolTable(module.operation)
            taken = [part for part in (f"{name}_prepare", f"{name}_apply") if found.best.prepared and part in symbols]
            if taken:
                ctx.remark(where, f"@{name} kept as written: @{taken[0]} already exists, and the "
                                  f"variant needs that name")
                continue
            replace_function(module, func, name, program, found, element)
            ctx.remark(where, found.describe(name))


def _proven(program: Program, found: Exploration) -> bool:
    """Whether the best form ``found`` (one that prepares nothing) is proven equal to ``program`` under the
    budget prism-verify gives a proof: exploration's e-graph is bounded otherwise, so a form it reaches may be
    one that a proof does not."""
    from prism.algebra import to_mlir
    from prism.algebra.egraph import prove
    from prism.algebra.prove import public_functions
    from prism.algebra.terms import translate

    # What prism-verify will read: the best form as written back, translated again.
    elements = [e or "f32" for e in program.elements()]
    text = to_mlir.function_text(program.name, [tuple(s) for s in program.arg_shapes], list(found.best.results),
                                 elements, views=program.views)
    parsed = ir.Module.parse(text)  # held while its function is translated
    written = translate(public_functions(parsed)[program.name])
    return prove(program, written, Budget()).proved


def _arg_attrs(func: ir.Operation) -> list[str]:
    """Each argument's attribute dictionary, as text."""
    count = len(func.regions[0].blocks[0].arguments)
    if "arg_attrs" not in func.attributes:
        return ["{}"] * count
    return [str(attr) for attr in ir.ArrayAttr(func.attributes["arg_attrs"])]


def _report(name: str, found: Exploration) -> dict:
    return {"function": name, "rewritten": found.improves, "predicted_seconds": found.original.seconds,
            "variant_seconds": found.best.seconds,
            "standalone_seconds": found.standalone.seconds, "prepared": len(found.best.prepared),
            "stopped": found.stopped, "laws": found.laws, "e_classes": found.classes, "e_nodes": found.nodes,
            "costed": found.evaluated}
