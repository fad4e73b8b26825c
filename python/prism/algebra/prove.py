"""Whole-program proofs: is a candidate module equal to the original, function by function?

Each public function of the original must exist in the candidate, and each
public function of the candidate in the original (or be a part, ``_prepare``
or ``_apply``, of a function proven with it), with the same type. Where a
function says how its parts compose (``prism.prepare_args``), that
composition is proven equal to the original function too. Both are
translated into terms (:mod:`prism.algebra.terms`) and a bounded egglog
proof is attempted (:mod:`prism.algebra.egraph`). When the proof fails, both
functions are run on the same random inputs by the numeric check that the
caller gives (:func:`prism.runtime.compare.find_counterexample` compiles them
for the host): a difference is reported as a counterexample. Either way an unproven function
is a :class:`~prism.infra.errors.VerificationError` naming it, why the proof
stopped and the laws that were applied; there is no silent pass. A proof
that needed laws is also checked on random inputs, so that an unsound law
cannot pass unnoticed.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from mlir import ir

from prism.algebra.budget import Budget
from prism.algebra.egraph import Proof, prove
from prism.algebra.terms import translate
from prism.infra import attrs
from prism.infra.diagnostics import display_location
from prism.infra.errors import PrismError, VerificationError
from prism.infra.ir import normalize_program

# Runs @name of two modules on the same random inputs (``trials`` draws): the first difference found, in words
# that say how to reproduce it, or None. It needs compiled code, so the caller that joins the layers gives it
# (:func:`prism.runtime.compare.find_counterexample`).
FindCounterexample = Callable[[ir.Module, ir.Module, str, int], "str | None"]


@dataclass(frozen=True)
class NumericCheck:
    """How a proof is checked on random inputs: ``find`` (None: not at all) over ``trials`` draws."""

    find: FindCounterexample | None
    trials: int

@dataclass(frozen=True)
class FunctionProof:
    """One verified function and its proof."""

    name: str
    proof: Proof

    def as_report(self) -> dict:
        """The entry of the ``--emit=report`` JSON (no timings, so reports stay comparable)."""
        return {"function": self.name, "proved": self.proof.proved, "laws": self.proof.laws}


def public_functions(module: ir.Module) -> dict[str, ir.Operation]:
    """The functions of ``module`` with a body and public visibility, by name."""
    found = {}
    for op in module.body.operations:
        op = op.operation
        if op.name != "func.func" or not len(op.regions[0].blocks):
            continue
        if "sym_visibility" in op.attributes and ir.StringAttr(op.attributes["sym_visibility"]).value != "public":
            continue
        found[ir.StringAttr(op.attributes["sym_name"]).value] = op
    return found


def prove_modules(original: ir.Module, candidate: ir.Module, budget: Budget | None = None, trials: int = 3,
                   rulesets: tuple[str, ...] | None = None,
                   find_counterexample: FindCounterexample | None = None) -> list[FunctionProof]:
    """Prove every public function of ``candidate`` equal to the one of the same name in ``original``.

    Raises VerificationError for the first function that is missing, has
    another type, or cannot be proven (with a counterexample when ``trials``
    random runs of ``find_counterexample`` find one). Without
    ``find_counterexample``, nothing is run: proofs that needed laws are not
    checked on random inputs. Both modules are first normalized in place
    (:func:`~prism.infra.ir.normalize_program`), so that every spelling of
    one program has one translation.
    """
    for module in (original, candidate):
        with module.context:
            normalize_program(module)
    check = NumericCheck(find_counterexample, trials)
    originals = public_functions(original)
    candidates = public_functions(candidate)
    compared = _comparable_functions(originals, candidates)
    proofs = []
    for name in compared:
        where = display_location(candidates[name].location)
        proofs.append(_prove_function(name, original, candidate, where, budget, check, rulesets))
        if _splits(candidates[name]):
            parts = composition(candidate, name)
            proofs.append(_prove_function(name, original, parts, where, budget, check, rulesets,
                                          shown=f"{name}_prepare + @{name}_apply"))
    return proofs


def _prove_function(name: str, original: ir.Module, candidate: ir.Module, where: str, budget: Budget | None,
                    check: NumericCheck, rulesets: tuple[str, ...] | None, shown: str = "") -> FunctionProof:
    """The proof that @name of ``candidate`` equals @name of ``original`` (``shown`` names it in messages)."""
    left, right = (translate(public_functions(module)[name]) for module in (original, candidate))
    if left.views != right.views:  # reshaped otherwise at the boundary: compare the reshapes as ops
        left, right = (translate(public_functions(module)[name], views=False) for module in (original, candidate))
    proof = prove(left, right, budget or Budget(), rulesets)
    if not proof.proved:
        raise _unproven(name, proof, original, candidate, check, where, shown)
    if proof.laws and check.trials and check.find is not None:
        _check_numerically(name, proof, original, candidate, check.find(original, candidate, name, check.trials),
                           where, shown)
    return FunctionProof(shown or name, proof)


def _comparable_functions(originals: dict[str, ir.Operation], candidates: dict[str, ir.Operation]) -> list[str]:
    """The names of the functions to prove, once each side is checked to have the other's functions and types."""
    compared = []
    for name, func in candidates.items():
        where = display_location(func.location)
        if name not in originals and _described_part(func, name, originals, candidates):
            continue
        if name not in originals:
            raise VerificationError(f"function @{name} is not in the original program", location=where)
        if str(originals[name].attributes["function_type"]) != str(func.attributes["function_type"]):
            raise VerificationError(f"@{name} has type {func.attributes['function_type']} but the "
                                    f"original has {originals[name].attributes['function_type']}", location=where)
        compared.append(name)
    for name, func in originals.items():
        if name not in candidates:
            raise VerificationError(f"function @{name} of the original program is missing from the candidate",
                                    location=display_location(func.location))
    return compared


def _described_part(func: ir.Operation, name: str, originals: dict[str, ir.Operation],
                    candidates: dict[str, ir.Operation]) -> bool:
    """Whether ``func`` is the ``_prepare`` or ``_apply`` part (``prism.part_of``) of a function of both
    programs whose ``prism.prepare_args`` and ``prism.apply_args`` say how the parts compose.

    prism-explore splits a function so; the composition of the parts is
    proven equal to the original function (:func:`composition`), which covers
    them: they are only ever run composed that way.
    """
    if attrs.PART_OF not in func.attributes:
        return False
    whole = ir.StringAttr(func.attributes[attrs.PART_OF]).value
    return (whole in originals and whole in candidates and name in (f"{whole}_prepare", f"{whole}_apply")
            and _splits(candidates[whole]))


def _splits(func: ir.Operation) -> bool:
    return attrs.PREPARE_ARGS in func.attributes and attrs.APPLY_ARGS in func.attributes


def composition(module: ir.Module, name: str) -> ir.Module:
    """A module whose @name runs ``module``'s @name_prepare, then @name_apply, as @name's ``prism.prepare_args``
    and ``prism.apply_args`` say: what :func:`prism.runtime.cpu.bind` runs.

    Raises VerificationError when the attributes do not fit the parts.
    """
    functions = public_functions(module)
    func, where = functions[name], display_location(functions[name].location)
    parts = [functions.get(f"{name}_{part}") for part in ("prepare", "apply")]
    if any(part is None for part in parts):
        raise VerificationError(f"@{name} names prepared parts, but @{name}_prepare or @{name}_apply is missing",
                                location=where)
    prepare_args = list(ir.DenseI64ArrayAttr(func.attributes[attrs.PREPARE_ARGS]))
    apply_args = list(ir.DenseI64ArrayAttr(func.attributes[attrs.APPLY_ARGS]))
    ftype, ptype, atype = (ir.FunctionType(ir.TypeAttr(f.attributes["function_type"]).value)
                           for f in (func, *parts))
    prepared = [f"%p{j}" for j in range(len(ptype.results))]
    fits = (len(prepare_args) == len(ptype.inputs) and len(apply_args) == len(atype.inputs)
            and all(0 <= i < len(ftype.inputs) for i in prepare_args)
            and all(-len(prepared) <= i < len(ftype.inputs) for i in apply_args) and prepared)
    if not fits:
        raise VerificationError(f"@{name}'s prism.prepare_args and prism.apply_args do not fit the arguments of "
                                f"@{name}_prepare and @{name}_apply", location=where)

    def types(of: list[ir.Type]) -> str:
        return ", ".join(str(t) for t in of)

    args = [f"%a{i}" for i in range(len(ftype.inputs))]
    into_apply = [prepared[-i - 1] if i < 0 else args[i] for i in apply_args]
    results = [f"%r{j}" for j in range(len(atype.results))]
    text = "\n".join([
        *(str(part) for part in parts),
        f"func.func @{name}({', '.join(f'{a}: {t}' for a, t in zip(args, ftype.inputs, strict=True))}) "
        f"-> ({types(ftype.results)}) {{",
        f"  {', '.join(prepared)} = func.call @{name}_prepare({', '.join(args[i] for i in prepare_args)}) : "
        f"({types(ptype.inputs)}) -> ({types(ptype.results)})",
        f"  {', '.join(results)} = func.call @{name}_apply({', '.join(into_apply)}) : "
        f"({types(atype.inputs)}) -> ({types(atype.results)})",
        f"  return {', '.join(results)} : {types(ftype.results)}" if results else "  return",
        "}"])
    try:
        composed = ir.Module.parse(text, module.context)
        composed.operation.verify()
    except ir.MLIRError as error:
        raise VerificationError(f"@{name}_prepare and @{name}_apply do not compose as @{name}'s "
                                f"prism.prepare_args and prism.apply_args say: {error}", location=where) from None
    return composed


def _check_numerically(name: str, proof: Proof, original: ir.Module, candidate: ir.Module,
                       counterexample: str | None, where: str, shown: str = "") -> None:
    """A proof that needed laws, run on random inputs too: a difference (``counterexample``) means an unsound law.

    Proofs of identical terms apply no law and are not rerun.
    """
    if counterexample is not None:
        laws = ", ".join(proof.laws)
        raise VerificationError(f"@{shown or name} was proven equal to the original, but it differs on random "
                                f"inputs, so one of the laws applied is unsound ({laws}); counterexample: "
                                f"{counterexample}", location=where)


def _unproven(name: str, proof: Proof, original: ir.Module, candidate: ir.Module, check: NumericCheck,
              where: str, shown: str = "") -> VerificationError:
    """The error for a failed proof, with the numeric check's finding."""
    laws = ", ".join(f"{law} ({count})" for law, count in proof.laws.items()) or "none"
    results = ", ".join(f"#{i}" for i in proof.unproven_results)
    message = (f"could not prove @{shown or name} equal to the original: results {results} unproven "
               f"({proof.stopped} after {proof.seconds:.2f} s, {proof.nodes} e-nodes); laws applied: {laws}")
    if check.find is None:
        return VerificationError(f"{message}; no numeric check was run", location=where)
    try:
        counterexample = check.find(original, candidate, name, check.trials)
    except PrismError as error:
        return VerificationError(f"{message}; the numeric check could not run: {error.message}", location=where)
    if counterexample is None:
        return VerificationError(f"{message}; no counterexample in {check.trials} random trials", location=where)
    return VerificationError(f"{message}; counterexample: {counterexample}", location=where)
