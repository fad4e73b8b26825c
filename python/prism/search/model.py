"""What the search and the exploration ask of a machine: its search model.

A target (:mod:`prism.targets`) answers these for its hardware; the search,
the selection and prism-explore's whole-program cost know a machine only
through this protocol, so they never import a target.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol, runtime_checkable

import numpy as np

if TYPE_CHECKING:
    from prism.search.cost import KnobValues
    from prism.search.family import Problem
    from prism.search.space import Space


@runtime_checkable
class SearchModel(Protocol):
    """A machine's schedule spaces and cost model, for one family and for whole programs."""

    name: str
    # What its code generator fuses, for the cost of whole programs (prism-explore): "epilogue", the one
    # pointwise consumer of a product (its only reader) runs on the product's tiles; "dual", two products of one
    # left operand that such a consumer reads run as one kernel; "attention", an attention chain as one kernel;
    # "rows", RMSNorm's row statistics as one row kernel (prism.algebra.recognize).
    fusion: frozenset[str]

    def space(self, op: Problem) -> Space | None:
        """The schedule space of ``op``: its knobs, their ranges and the constraint groups.

        None when the target has no family for it (an attention that it runs
        as its parts): prism-lift then lifts the parts.
        """

    def seconds(self, op: Problem, values: KnobValues, assumed: int = 1024) -> np.ndarray:
        """Predicted seconds of ``op`` under each schedule in ``values``; dynamic extents count as ``assumed``."""

    def lower_bound(self, op: Problem, values: KnobValues, assumed: int = 1024) -> np.ndarray:
        """A bound below :meth:`seconds` that reads few knobs of each schedule (a contraction's output tile)."""

    def cost_text(self, op: Problem) -> str:
        """The cost formula of ``op``'s family, as stored in its ``cost`` attribute."""

    def pass_seconds(self, moved: int) -> float:
        """Predicted seconds of one loop nest (one kernel) that moves ``moved`` bytes through memory."""
