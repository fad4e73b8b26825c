"""The numeric check of a proof: run a function of two modules, compiled for the host, on the same random
inputs and find where their results differ (:mod:`prism.algebra.prove` is given it by its caller)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
from mlir import ir

from prism.codegen import cpu
from prism.infra.ir import make_context
from prism.infra.passbase import PassContext
from prism.runtime.cpu import JitFunction, TensorSpec, jit
from prism.targets.host import host_target

# Relative to the original result's largest magnitude: far above the rounding
# of two f32 schedules of the same computation, far below a wrong one. A function
# is checked at the tolerance of the narrowest float type it computes in (a result
# in f32 of a product of rounded bf16 probabilities carries bf16's rounding).
TOLERANCE = {"f16": 2e-2, "bf16": 2e-2, "f32": 1e-3, "f64": 1e-9}
DYNAMIC_SIZE = 7  # the size given to every dynamic dimension in numeric checks
# A check runs each function a few times, so LLVM's optimizations would cost more than they save: the lowering
# has already vectorized and tiled the code, and at -O0 it compiles 2.5-4 times faster and runs about as fast
# (benchmarks/RESULTS.md, "The suite's time": the numeric check compiled at -O0).
CHECK_OPT_LEVEL = 0


@dataclass(frozen=True)
class Counterexample:
    """Inputs (reproducible from ``seed``) on which the two functions disagree."""

    seed: int
    result: int
    index: tuple[int, ...]
    original: float
    candidate: float

    def describe(self) -> str:
        """One line that says how to reproduce the difference."""
        return (f"result #{self.result} differs at {list(self.index)}: original {self.original:.6g}, "
                f"candidate {self.candidate:.6g} (inputs: numpy.random.default_rng({self.seed}).standard_normal, "
                f"dynamic sizes {DYNAMIC_SIZE})")

def describe_counterexample(original: ir.Module, candidate: ir.Module, name: str, trials: int = 3) -> str | None:
    """:func:`find_counterexample`'s finding in words (None when there is none): a
    :data:`prism.algebra.prove.FindCounterexample`."""
    found = find_counterexample(original, candidate, name, trials)
    return None if found is None else found.describe()


def find_counterexample(original: ir.Module, candidate: ir.Module, name: str, trials: int = 3,
                        seed: int = 0) -> Counterexample | None:
    """Run @name of both modules on random inputs; the first difference found, or None."""
    run_original, run_candidate = _host_function(original, name), _host_function(candidate, name)
    signature = run_original.signature
    narrowest = narrowest_float(original, name)
    for trial in range(trials):
        trial_seed = seed + trial
        rng = np.random.default_rng(trial_seed)
        inputs = [_random_input(spec, rng) for spec in signature.inputs]
        expected, got = (_as_tuple(run(*inputs)) for run in (run_original, run_candidate))
        for index, (want, have) in enumerate(zip(expected, got, strict=True)):
            difference = _difference(want, have, str(signature.results[index].dtype), narrowest)
            if difference is not None:
                position, before, after = difference
                return Counterexample(trial_seed, index, position, before, after)
    return None


def narrowest_float(module: ir.Module, name: str) -> str:
    """The float type of :data:`TOLERANCE` with the widest tolerance among the element types that @name of
    ``module`` takes, returns or computes in ("f32" if it has none of them)."""
    found = {"f32"}
    for op in module.body.operations:
        if op.operation.name == "func.func" and ir.StringAttr(op.attributes["sym_name"]).value == name:
            for region in op.regions:
                _float_types(region, found)
    return max(found, key=TOLERANCE.__getitem__)


def _float_types(region: ir.Region, found: set[str]) -> None:
    """Add to ``found`` the float types (of TOLERANCE) of the values of ``region``: block arguments and results,
    themselves or as elements of a shaped type."""
    for block in region.blocks:
        values = [*block.arguments, *(result for op in block.operations for result in op.results)]
        for value in values:
            kind = value.type
            element = str(kind.element_type) if isinstance(kind, ir.ShapedType) else str(kind)
            if element in TOLERANCE:
                found.add(element)
        for op in block.operations:
            for inner in op.regions:
                _float_types(inner, found)


def _host_function(module: ir.Module, name: str) -> JitFunction:
    """@name of a copy of ``module``, lowered for the host and compiled."""
    copy = ir.Module.parse(module.operation.get_asm(enable_debug_info=True), make_context())
    with copy.context, ir.Location.unknown():
        cpu.lower(copy, PassContext(), host_target().cores, host_target().vector_bits)
        return jit(copy, name, opt_level=CHECK_OPT_LEVEL)


def _random_input(spec: TensorSpec, rng: np.random.Generator) -> np.ndarray:
    shape = [DYNAMIC_SIZE if d is None else d for d in (spec.shape or ())]
    if spec.dtype in (np.float32, np.float64):  # drawn in the type itself, not in float64 and then converted
        values = rng.standard_normal(shape, dtype=spec.dtype)
        values *= 0.5
        return values
    if np.issubdtype(spec.dtype, np.floating):
        return (0.5 * rng.standard_normal(shape, dtype=np.float32)).astype(spec.dtype)
    return rng.integers(-3, 4, size=shape).astype(spec.dtype)


def _as_tuple(value: object) -> tuple[np.ndarray, ...]:
    return value if isinstance(value, tuple) else (value,)


def _difference(want: np.ndarray, have: np.ndarray, dtype: str,
                narrowest: str = "f64") -> tuple[tuple[int, ...], float, float] | None:
    """Where two results of type ``dtype`` differ beyond the tolerance (the wider of that type's and of
    ``narrowest``, the narrowest float type computed in), with both values; None if they agree."""
    if want.shape != have.shape:
        return (), float("nan"), float("nan")
    wide, other = want.astype(np.float64), have.astype(np.float64)
    # NaN where both have NaN, and one infinity where both have it, agree; NaN or inf on one side only differs.
    same = (wide == other) | (np.isnan(wide) & np.isnan(other))
    with np.errstate(invalid="ignore"):  # inf - inf is NaN, read as a difference below
        error = np.where(same, 0.0, np.abs(wide - other))
    error = np.where(np.isnan(error), np.inf, error)
    scale = max(1.0, float(np.abs(wide[np.isfinite(wide)]).max(initial=0.0)))
    names = {"float16": "f16", "bfloat16": "bf16", "float32": "f32", "float64": "f64"}
    tolerance = max(TOLERANCE.get(names.get(dtype, "f32"), 1e-3), TOLERANCE[narrowest])
    if not error.size or error.max() <= tolerance * scale:
        return None
    position = tuple(int(i) for i in np.unravel_index(int(error.argmax()), error.shape))
    return position, float(want[position]), float(have[position])
