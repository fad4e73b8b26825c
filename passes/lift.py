"""prism-lift: turn matmul-like linalg contractions into prism.family ops.

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

The family's domain is the unpruned space of its kind on the target; its
parameters are symbols. Every other op is left as it is, with a remark.
"""

from __future__ import annotations

from dataclasses import dataclass

from mlir import ir
from mlir.dialects import func

from prism.infra import attrs
from prism.infra.passbase import Pass, PassContext
from prism.search.family import analyze_contraction, kind_of, make_int_dict, why_not_lifted
from prism.search.space import Contraction, fix_shape, shape_exponents
from prism.targets import Target, get_target, target_option

# Linalg ops that only build operands: not worth a remark.
_PLUMBING = {"linalg.fill", "linalg.copy"}


@dataclass(frozen=True)
class LiftPass(Pass):
    """Lift each linalg contraction into a prism.family with symbolic tiles."""

    NAME = "prism-lift"
    SUMMARY = "Lift linalg contractions into prism.family ops with symbolic tile parameters"

    target: str = target_option()

    def run(self, module: ir.Module, ctx: PassContext) -> None:
        target = get_target(self.target or ctx.target)
        taken = _symbol_names(module)
        for function in [op for op in module.body.operations if op.operation.name == "func.func"]:
            if _is_declaration_or_body(function):
                continue
            counter, remarked = 0, set()
            for op in list(function.regions[0].blocks[0].operations):
                contraction = analyze_contraction(op.operation)
                if contraction is None:
                    if _computes(op.operation) and op.operation.name not in remarked:
                        remarked.add(op.operation.name)
                        ctx.remark(op.operation.location, f"'{op.operation.name}' left unchanged: "
                                   f"{why_not_lifted(op.operation)}")
                    continue
                name = _fresh_name(f"{_sym_name(function)}_family{counter}", taken)
                counter += 1
                _outline(module, op.operation, name, contraction, target)


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


def _outline(module: ir.Module, op: ir.Operation, name: str, contraction: Contraction,
             target: Target) -> None:
    """Move ``op`` into a private payload function ``name`` headed by its family, and call it."""
    operands = list(op.operands)
    result_types = [r.type for r in op.results]
    with op.context, op.location:
        with ir.InsertionPoint(module.body):
            body = func.FuncOp(name, ([v.type for v in operands], result_types), visibility="private")
            body.attributes[attrs.FAMILY_BODY] = ir.UnitAttr.get()
            block = body.add_entry_block()
        with ir.InsertionPoint(block):
            _create_family(contraction, target)
            clone = op.clone()
            for index, arg in enumerate(block.arguments):
                clone.operands[index] = arg
            func.ReturnOp(list(clone.results))
        with ir.InsertionPoint(op):
            call = func.CallOp(result_types, ir.FlatSymbolRefAttr.get(name), operands)
        for old, new in zip(op.results, call.results, strict=True):
            old.replace_all_uses_with(new)
        op.erase()


def _create_family(contraction: Contraction, target: Target) -> ir.Operation:
    """A prism.family whose domain is the whole unpruned space of its kind."""
    space = target.space(contraction)
    universe = space.universe_set()
    size = fix_shape(space, universe, shape_exponents(contraction)).count_val().to_python()
    return ir.Operation.create(attrs.FAMILY_OP, attributes={
        "kind": ir.StringAttr.get(kind_of(contraction)),
        "symbols": ir.ArrayAttr.get([ir.StringAttr.get(s) for s in space.symbols]),
        "domain": ir.StringAttr.get(str(universe)),
        "cost": ir.StringAttr.get(""),
        "stats": make_int_dict({"space": size}),
    })
