"""prism-lift: turn matmul-like linalg contractions and attention chains into prism.family ops.

Before::

    %0 = linalg.matmul ins(%a, %b : tensor<64x32xf32>, tensor<32x16xf32>)
                       outs(%c : tensor<64x16xf32>) -> tensor<64x16xf32>

After::

    %0 = call @f_family0(%a, %b, %c) : (...) -> tensor<64x16xf32>
    func.func private @f_family0(%a: ..., %b: ..., %c: ...) -> tensor<64x16xf32>
        attributes {prism.family_body} {
      "prism.family"() {kind = "gemm", symbols = ["TM", "TN", "TK", "RM", "RN"],
                        domain = "[LB, LM, LN, LK] -> {...}", cost = "",
                        stats = {space = 5880 : i64}} : () -> ()
      %0 = linalg.matmul ins(...) outs(...) -> tensor<64x16xf32>
      return %0 : tensor<64x16xf32>
    }

The chain of a registered family (:mod:`prism.search.families`; an attention,
``softmax(c Q K^T) V``, see prism.search.attention) becomes one family of its
kind with all its ops, where the target has a schedule for it (the host);
elsewhere its parts are lifted as they are. The family's domain is the unpruned space of its kind on the
target; its parameters are symbols. Every other op is left as it is, with a
remark.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

from mlir import ir

from prism.infra import attrs
from prism.infra.passbase import Pass, PassContext
from prism.search.families import registered_families
from prism.search.family import Problem, analyze_contraction, kind_of, make_int_dict, outline_family, why_not_lifted
from prism.search.space import Space, count_points, fix_shape, shape_exponents
from prism.targets import get_target, target_option

# Ops that make a chain's inits: copied into its family's body, where its matcher reads them.
_INITS = ("arith.constant", "tensor.empty", "linalg.fill")
# Ops that make a product's init (a fill, with its sizes): copied into its family's body, so that the body
# computes what the program does. A kernel starts at a fill of zero rather than reading it, and prism-select
# times the body as it will run.
_PRODUCT_INITS = (*_INITS, "tensor.dim")
# Linalg ops that only build operands: not worth a remark.
_PLUMBING = {"linalg.fill", "linalg.copy"}


@dataclass(frozen=True)
class LiftPass(Pass):
    """Lift each attention chain and linalg contraction into a prism.family with symbolic tiles."""

    NAME = "prism-lift"
    SUMMARY = "Lift linalg contractions and attention chains into prism.family ops with symbolic tile parameters"

    target: str = target_option()

    def run(self, module: ir.Module, ctx: PassContext) -> None:
        target = get_target(self.target or ctx.target)
        taken = _symbol_names(module)
        for function in [op for op in module.body.operations if op.operation.name == "func.func"]:
            if _is_declaration_or_body(function):
                continue
            names = (_fresh_name(f"{_sym_name(function)}_family{n}", taken) for n in itertools.count())
            block = function.regions[0].blocks[0]
            # Registered families' chains first: their products are not families of their own. A chain ends at
            # the op visited, so the ops it erases were visited before it.
            for family in registered_families():
                for op in list(block.operations):
                    match = family.match(op.operation)
                    space = target.space(match.problem) if match is not None else None
                    if space is not None:
                        outline_family(module, match.ops, next(names), _family(match.problem, space),
                                       copied=_INITS)
            remarked = set()
            for op in list(block.operations):
                contraction = analyze_contraction(op.operation)
                if contraction is None:
                    if _computes(op.operation) and op.operation.name not in remarked:
                        remarked.add(op.operation.name)
                        ctx.remark(op.operation.location, f"'{op.operation.name}' left unchanged: "
                                   f"{why_not_lifted(op.operation)}")
                    continue
                outline_family(module, [op.operation], next(names), _family(contraction, target.space(contraction)),
                               copied=_PRODUCT_INITS if _made_of_tensors(op.operands[-1]) else ())


def _made_of_tensors(value: ir.Value) -> bool:
    """Whether the ops of _PRODUCT_INITS that make ``value`` read only tensors from outside them: copied into a
    family's body, they add no scalar argument (a size computed otherwise), which measuring the body could not
    give a value."""
    if isinstance(value.owner, ir.Block) or value.owner.operation.name not in _PRODUCT_INITS:
        return isinstance(value.type, ir.RankedTensorType)
    return all(_made_of_tensors(operand) for operand in value.owner.operation.operands)


def _computes(op: ir.Operation) -> bool:
    """Whether ``op`` does work worth a remark when it is not lifted (a Linalg op or a loop), not plumbing."""
    return op.name.startswith(("linalg.", "scf.", "affine.")) and op.name not in _PLUMBING


def _sym_name(op: ir.OpView) -> str:
    return ir.StringAttr(op.attributes["sym_name"]).value


def _symbol_names(module: ir.Module) -> set[str]:
    return {_sym_name(op) for op in module.body.operations if "sym_name" in op.attributes}


def _is_declaration_or_body(function: ir.OpView) -> bool:
    """Skip external declarations and bodies that prism-lift itself outlined."""
    if not function.regions[0].blocks:
        return True
    return attrs.FAMILY_BODY in function.attributes


def _fresh_name(base: str, taken: set[str]) -> str:
    name, suffix = base, 0
    while name in taken:
        suffix += 1
        name = f"{base}_{suffix}"
    taken.add(name)
    return name


def _family(problem: Problem, space: Space) -> dict[str, ir.Attribute]:
    """The attributes of a prism.family whose domain is the whole unpruned space of its kind."""
    universe = space.universe_set()
    size = count_points(fix_shape(space, universe, shape_exponents(problem)))
    return {
        "kind": ir.StringAttr.get(kind_of(problem)),
        "symbols": ir.ArrayAttr.get([ir.StringAttr.get(s) for s in space.symbols]),
        "domain": ir.StringAttr.get(str(universe)),
        "cost": ir.StringAttr.get(""),
        "stats": make_int_dict({"space": size}),
    }
