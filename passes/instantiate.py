"""prism-instantiate: replace each selected family by its payload, annotated.

Before::

    %0 = "prism.family"(%a, %b, %c) {body = @f_family0, choice = {TM = 64, ...}, ...}
    func.func private @f_family0(...) { %0 = linalg.matmul ...; return %0 }

After::

    %0 = linalg.matmul {prism.choice = {TM = 64 : i64, ...}, prism.roles = ["m", "n", "k"]}
           ins(%a, %b : ...) outs(%c : ...) -> ...

The annotations are discardable attributes: the IR stays plain linalg that any
MLIR tool accepts, and prism-lower-cpu / prism-lower-gpu read them.
"""

from __future__ import annotations

from dataclasses import dataclass

from mlir import ir

from prism.errors import PassFailed
from prism.family import CHOICE_ATTR, ROLES_ATTR, analyze_contraction, body_func, families, family_name
from prism.ir import display_location
from prism.passbase import Pass, PassContext


@dataclass(frozen=True)
class InstantiatePass(Pass):
    """Inline each family's payload with its chosen schedule attached."""

    NAME = "prism-instantiate"
    SUMMARY = "Replace each selected prism.family by its payload, annotated with the choice"

    def run(self, module: ir.Module, ctx: PassContext) -> None:
        for family in list(families(module)):
            if "choice" not in family.attributes:
                raise PassFailed(
                    f"{self.NAME}: family '{family_name(family)}' has no choice; run prism-select first",
                    location=display_location(family.location))
            body = body_func(module, family)
            _inline(family, body)
            body.erase()


def _inline(family: ir.Operation, body: ir.Operation) -> None:
    """Clone ``body``'s ops before ``family`` and rewire the results."""
    block = body.regions[0].blocks[0]
    mapping = {arg: operand for arg, operand in zip(block.arguments, family.operands, strict=True)}
    returned: list[ir.Value] = []
    with ir.InsertionPoint(family):
        for op in block.operations:
            if op.operation.name == "func.return":
                returned = [mapping.get(v, v) for v in op.operands]
                break
            clone = op.operation.clone()
            for index, operand in enumerate(op.operands):
                if operand in mapping:
                    clone.operands[index] = mapping[operand]
            for old, new in zip(op.results, clone.results, strict=True):
                mapping[old] = new
            if analyze_contraction(clone) is not None:
                _annotate(clone, family)
    for old, new in zip(family.results, returned, strict=True):
        old.replace_all_uses_with(new)
    family.erase()


def _annotate(op: ir.Operation, family: ir.Operation) -> None:
    contraction = analyze_contraction(op)
    assert contraction is not None
    with op.context:
        op.attributes[ROLES_ATTR] = ir.ArrayAttr.get([ir.StringAttr.get(r) for r in contraction.roles])
        op.attributes[CHOICE_ATTR] = family.attributes["choice"]
