"""prism-instantiate: replace each selected family by its payload, annotated.

Before::

    %0 = call @f_family0(%a, %b, %c) : (...) -> tensor<64x16xf32>
    func.func private @f_family0(...) attributes {prism.family_body} {
      "prism.family"() {choice = {TM = 64 : i64, ...}, ...} : () -> ()
      %0 = linalg.matmul ...
      return %0
    }

After::

    %0 = linalg.matmul {prism.choice = {TM = 64 : i64, ...}, prism.roles = ["m", "n", "k"]}
           ins(%a, %b : ...) outs(%c : ...) -> ...

An attention family's chain comes back with the choice on its first op, the
scores' product (``prism.attention = {BQ = 96 : i64, ...}``).

The annotations are discardable attributes: the IR stays plain linalg that any
MLIR tool accepts, and prism-lower-cpu / prism-lower-gpu read them.
"""

from __future__ import annotations

from dataclasses import dataclass

from mlir import ir

from prism.infra import attrs
from prism.infra.diagnostics import display_location
from prism.infra.errors import PassFailed
from prism.infra.ir import iter_ops
from prism.infra.passbase import Pass, PassContext
from prism.search.family import annotate_payload, body_func, families, family_name, remap_operands


@dataclass(frozen=True)
class InstantiatePass(Pass):
    """Inline each family's payload at its calls, with its chosen schedule attached."""

    NAME = "prism-instantiate"
    SUMMARY = "Replace each call of a selected family by its payload, annotated with the choice"

    def run(self, module: ir.Module, ctx: PassContext) -> None:
        chosen: dict[str, ir.Operation] = {}
        for family in families(module):
            if "choice" not in family.attributes:
                raise PassFailed(
                    f"family '{family_name(family)}' has no choice; run prism-select first",
                    location=display_location(family.location))
            chosen[family_name(family)] = family
        calls = [op for op in iter_ops(module) if op.name == "func.call" and _callee(op) in chosen]
        for call in calls:
            _inline(call, chosen[_callee(call)])
        for family in chosen.values():
            body_func(family).erase()


def _callee(call: ir.Operation) -> str:
    return ir.FlatSymbolRefAttr(call.attributes["callee"]).value


def _inline(call: ir.Operation, family: ir.Operation) -> None:
    """Clone the payload's ops before ``call`` and rewire its results."""
    block = body_func(family).regions[0].blocks[0]
    mapping = dict(zip(block.arguments, call.operands, strict=True))
    returned: list[ir.Value] = []
    clones: list[ir.Operation] = []
    with ir.InsertionPoint(call):
        for op in block.operations:
            if op.operation.name == attrs.FAMILY_OP:
                continue
            if op.operation.name == "func.return":
                returned = [mapping.get(v, v) for v in op.operands]
                break
            clone = op.operation.clone()
            remap_operands(clone, mapping)
            mapping.update(zip(op.results, clone.results, strict=True))
            clones.append(clone)
    annotate_payload(clones, ir.StringAttr(family.attributes["kind"]).value, family.attributes["choice"])
    for old, new in zip(call.results, returned, strict=True):
        old.replace_all_uses_with(new)
    call.erase()
