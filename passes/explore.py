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
    func.func @qkv_apply(%arg0: tensor<16x256xf32>, %arg1: tensor<256x384xf32>) -> (...)
        attributes {prism.part_of = "qkv"} { ... one linalg.matmul, three tensor.extract_slice ... }
    func.func @qkv(%arg0: ..., %arg1: ... {prism.invariant}, ...) -> (...) {
      %p0 = call @qkv_prepare(%arg1, %arg2, %arg3) ...
      %r0, %r1, %r2 = call @qkv_apply(%arg0, %p0) ...
      return %r0, %r1, %r2 : ...
    }

Each public function is translated into terms (prism.algebra.terms), explored in
an e-graph under a bounded budget and extracted by whole-program cost
(prism.algebra.explore). When a variant is predicted faster, the function is
replaced by it; values computed from invariant arguments alone go into a
``_prepare`` function, to be run once per set of weights, and the per-call
work into ``_apply``; the function itself keeps its signature and calls
both, so callers and prism-verify see the same program. A function the
algebra cannot express (an op outside it, dynamic shapes, mixed element
types) is left as written, with a remark. Every rewrite is proven by
prism-verify, which ends prism-optimize.
"""

from __future__ import annotations

from dataclasses import dataclass

from mlir import ir

from prism.algebra.egraph import Budget
from prism.algebra.explore import BUDGET, ELEMENT_BYTES, Exploration, explore
from prism.algebra.prove import public_functions
from prism.algebra.terms import Program, Term, argument_indices, renamed_arguments, translate
from prism.algebra.to_mlir import Shapes, function_text, tensor_type
from prism.infra import attrs
from prism.infra.passbase import Pass, PassContext, option
from prism.targets import get_target, name_problem


@dataclass(frozen=True)
class ExplorePass(Pass):
    """Rewrite each function into its cheapest equivalent form found (see the module docstring)."""

    NAME = "prism-explore"
    SUMMARY = "Find equivalent forms of each function (egglog) and keep the one predicted fastest"

    target: str = option("", "the target to optimize for (default: the pipeline's, --target)", check=name_problem)
    iterations: int = option(BUDGET.iterations, "rounds of the laws in the e-graph", minimum=1, maximum=100)
    max_nodes: int = option(BUDGET.max_nodes, "e-nodes at which exploration stops", minimum=1, maximum=10_000_000)

    def run(self, module: ir.Module, ctx: PassContext) -> None:
        target = get_target(self.target or ctx.target)
        budget = Budget(BUDGET.seconds, self.max_nodes, self.iterations, BUDGET.match_limit)
        for name, func in public_functions(module).items():
            where = func.location
            program = translate(func)
            element, why = _explorable(func, program)
            if why:
                ctx.remark(where, f"@{name} kept as written: {why}")
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
            symbols = ir.SymbolTable(module.operation)
            taken = [part for part in (f"{name}_prepare", f"{name}_apply") if found.best.prepared and part in symbols]
            if taken:
                ctx.remark(where, f"@{name} kept as written: @{taken[0]} already exists, and the "
                                  f"variant needs that name")
                continue
            _replace(module, func, name, program, found, element)
            ctx.remark(where, f"@{name} rewritten: predicted {found.original.seconds * 1e6:.1f} us "
                              f"-> {found.best.seconds * 1e6:.1f} us per call ({found.speedup:.2f}x)"
                              + (f", {len(found.best.prepared)} value(s) prepared once by @{name}_prepare"
                                 if found.best.prepared else ""))


def _arg_attrs(func: ir.Operation) -> list[str]:
    """Each argument's attribute dictionary, as text."""
    count = len(func.regions[0].blocks[0].arguments)
    if "arg_attrs" not in func.attributes:
        return ["{}"] * count
    return [str(attr) for attr in ir.ArrayAttr(func.attributes["arg_attrs"])]


def _explorable(func: ir.Operation, program: Program) -> tuple[str, str]:
    """The one float element type of ``func``'s tensors, or why the algebra cannot rewrite it."""
    function_type = ir.FunctionType(ir.TypeAttr(func.attributes["function_type"]).value)
    types = [*function_type.inputs, *function_type.results]
    if not all(isinstance(t, ir.RankedTensorType) and t.has_static_shape for t in types):
        return "", "its arguments and results must be tensors of static shape"
    if program.opaque:
        return "", f"'{program.opaque[0]}' is outside the algebra"
    elements = {str(ir.RankedTensorType(t).element_type) for t in types}
    if len(elements) != 1 or next(iter(elements)) not in ELEMENT_BYTES:
        return "", f"its tensors must share one float element type, not {', '.join(sorted(elements))}"
    if any(term.op == "splat" for term in program.results):
        return "", "a result is a constant"
    return next(iter(elements)), ""


def _report(name: str, found: Exploration) -> dict:
    return {"function": name, "rewritten": found.improves, "predicted_seconds": found.original.seconds,
            "variant_seconds": found.best.seconds, "prepared": len(found.best.prepared), "stopped": found.stopped,
            "laws": found.laws, "e_classes": found.classes, "e_nodes": found.nodes, "costed": found.evaluated}


def _replace(module: ir.Module, func: ir.Operation, name: str, program: Program, found: Exploration,
             element: str) -> None:
    """Put the best variant of ``func`` in its place (with _prepare and _apply functions when it prepares values)."""
    shapes = [tuple(s) for s in program.arg_shapes]
    best = found.best
    location = str(func.location)
    if not best.prepared:
        texts = [function_text(name, shapes, list(best.results), element, location)]
    else:
        texts = _split(name, shapes, best.prepared, best.results, element, location)
    function_type = func.attributes["function_type"]
    carried = {key: func.attributes[key] for key in ("arg_attrs", "res_attrs") if key in func.attributes}
    parsed = ir.Module.parse("\n".join(texts), module.context)
    with ir.InsertionPoint(func), func.location:
        for op in list(parsed.body.operations):
            op = op.operation
            op.move_before(func)
            op_name = ir.StringAttr(op.attributes["sym_name"]).value
            if op_name == name:
                assert str(op.attributes["function_type"]) == str(function_type), "a variant keeps the signature"
                for key, value in carried.items():
                    op.attributes[key] = value
            else:
                op.attributes[attrs.PART_OF] = ir.StringAttr.get(name)
    func.erase()


def _split(name: str, shapes: list[tuple[int, ...]], prepared: tuple[Term, ...], results: tuple[Term, ...],
           element: str, location: str) -> list[str]:
    """The texts of @name_prepare, @name_apply and @name, which calls the two; every op at ``location``."""
    arity = len(shapes)
    prepared_shapes = [Shapes(list(shapes))(term) for term in prepared]
    prepare_args = sorted(argument_indices(prepared))
    apply_args = sorted(i for i in argument_indices(results) if i < arity)
    prepare = function_text(f"{name}_prepare", [shapes[i] for i in prepare_args],
                            [renamed_arguments(t, {a: k for k, a in enumerate(prepare_args)}) for t in prepared],
                            element, location)
    into_apply = {a: k for k, a in enumerate(apply_args)}
    into_apply.update({arity + j: len(apply_args) + j for j in range(len(prepared))})
    result_shapes = [Shapes([*shapes, *prepared_shapes])(term) for term in results]
    apply = function_text(f"{name}_apply", [shapes[i] for i in apply_args] + prepared_shapes,
                          [renamed_arguments(t, into_apply) for t in results], element, location)

    def types(of: list[tuple[int, ...]]) -> str:
        return ", ".join(tensor_type(shape, element) for shape in of)

    values = [f"%p{j}" for j in range(len(prepared))]
    outputs = [f"%r{j}" for j in range(len(results))]
    signature = f"({types(result_shapes)})" if len(results) > 1 else types(result_shapes)
    entry = (
        f"func.func @{name}({', '.join(f'%arg{i}: {tensor_type(s, element)}' for i, s in enumerate(shapes))}) "
        f"-> {signature} {{\n"
        f"  {', '.join(values)} = func.call @{name}_prepare({', '.join(f'%arg{i}' for i in prepare_args)}) : "
        f"({types([shapes[i] for i in prepare_args])}) -> ({types(prepared_shapes)}) {location}\n"
        f"  {', '.join(outputs)} = func.call @{name}_apply("
        f"{', '.join([*(f'%arg{i}' for i in apply_args), *values])}) : "
        f"({types([shapes[i] for i in apply_args] + prepared_shapes)}) -> ({types(result_shapes)}) {location}\n"
        f"  return {', '.join(outputs)} : {types(result_shapes)} {location}\n}} {location}\n")
    return [prepare, apply, entry]
