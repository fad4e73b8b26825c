"""Op families beyond the contraction, each one registered object.

A family is what prism-lift outlines into one ``prism.family``, searched and
lowered as a whole. The contraction is the built-in one (:func:`prism.search.family.analyze_contraction`);
every other family (attention, and those a user adds) is a :class:`Family`
that holds
- its matcher: the chain of ops that ends at a given op, with the problem the
  search reads off it;
- its problem type and its kind (the ``prism.family``'s ``kind``);
- its choice attribute: where prism-instantiate puts the selected schedule
  (on the chain's first op), and where the kernel reads it;
- per target (by name), its search model: space, cost, bound and cost text;
- per code generator (by name: ``cpu`` for the host's), its kernel.

The lower layers look a family up here by its problem or its kind and never
name one; a family's own module, above the code generators, assembles the
object from its parts and registers it (:mod:`prism.families`).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from mlir import ir

from prism.infra.errors import PrismError

if TYPE_CHECKING:
    import numpy as np

    from prism.infra.passbase import PassContext
    from prism.search.cost import KnobValues
    from prism.search.space import Space


class FamilyProblem(Protocol):
    """What the search reads off a family's ops: the roles of its loops (shapes enter its space as a
    contraction's do, as ``LB``, ``LM``, ``LN``, ``LK``) and their extents (None where dynamic)."""

    roles: tuple[str, ...]

    def extent(self, role: str) -> int | None:
        """The extent of ``role``; None if dynamic."""


class FamilyMatch(Protocol):
    """One chain of a family's ops, in order (the last one's result is the chain's), and its problem."""

    @property
    def ops(self) -> Sequence[ir.Operation]:
        """The chain's ops, in order."""

    @property
    def problem(self) -> FamilyProblem:
        """What the search needs to know of the chain."""


@dataclass(frozen=True)
class FamilyModel:
    """A family's search model on one target: its schedule space (None where the target runs the chain as its
    parts), its predicted seconds and a bound below them over candidate arrays, and its cost as text."""

    space: Callable[[Any, Any], Space | None]  # (problem, target)
    seconds: Callable[[Any, Any, KnobValues, int], np.ndarray]  # (target, problem, values, assumed)
    lower_bound: Callable[[Any, Any, KnobValues, int], np.ndarray]  # (target, problem, values, assumed)
    cost_text: str
    # (target, problem, assumed): whether the cost prices the inputs streaming from memory, so that a measured
    # call must not find them in the cache (None: the model never does)
    from_memory: Callable[[Any, Any, int], bool] | None = None


# A code generator's kernel for a family: (module, lanes, workers, ctx) -> per chain it replaced, its function
# and ops as text (the report's ``kernels``).
Kernel = Callable[[ir.Module, int, int, "PassContext"], list[list[str]]]


@dataclass(frozen=True)
class Family:
    """One op family (see the module docstring)."""

    kind: str
    problem_type: type
    match: Callable[[ir.Operation], FamilyMatch | None]
    choice_attribute: str
    models: Mapping[str, FamilyModel] = field(default_factory=dict)
    kernels: Mapping[str, Kernel] = field(default_factory=dict)

    def model(self, target: str) -> FamilyModel | None:
        """Its search model on the target named ``target``; None where that target has no schedule for it."""
        return self.models.get(target)


_FAMILIES: dict[str, Family] = {}


def register_family(family: Family) -> None:
    """Make ``family`` known (prism-lift then looks for its chains, before contractions); a kind already taken
    is an error."""
    if family.kind in _FAMILIES or family.kind in ("gemm", "batch_gemm"):
        raise PrismError(f"a family of kind '{family.kind}' already exists")
    _FAMILIES[family.kind] = family


def unregister_family(kind: str) -> None:
    """Forget the family of kind ``kind``."""
    _FAMILIES.pop(kind, None)


def registered_families() -> tuple[Family, ...]:
    """Every registered family, in registration order."""
    return tuple(_FAMILIES.values())


def family_named(kind: str) -> Family | None:
    """The family of kind ``kind``; None for a contraction's kinds (or an unknown one)."""
    return _FAMILIES.get(kind)


def family_of(problem: object) -> Family | None:
    """The family whose problem ``problem`` is; None for a contraction."""
    return next((f for f in _FAMILIES.values() if isinstance(problem, f.problem_type)), None)


def family_model(problem: object, target: str) -> FamilyModel:
    """The search model of ``problem``'s family on the target named ``target`` (which offered it a space)."""
    family = family_of(problem)
    model = family.model(target) if family is not None else None
    if model is None:
        raise PrismError(f"target '{target}' has no search model for {type(problem).__name__}")
    return model
