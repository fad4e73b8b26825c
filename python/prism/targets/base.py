"""What a target is: the one object that answers every question Prism asks about a machine.

A target owns its hardware numbers, its schedule schema (the space of a
contraction's knobs, with their ranges), its cost model and a lower bound on
it, how its programs are lowered (a pass pipeline naming its code generator)
and what that produces. Code elsewhere asks the target; it never tests what
kind of target it holds. A new target is one module that registers an
object of this shape (:func:`prism.targets.register`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Protocol

import numpy as np

if TYPE_CHECKING:
    from mlir import ir

    from prism.search.attention import Attention
    from prism.search.cost import KnobValues
    from prism.search.space import Contraction, Space

    # What a family computes: a contraction, or an attention (softmax(c Q K^T) V).
    Problem = Contraction | Attention

def iree_tile_levels(roles: Sequence[str], tiles: dict[str, tuple[int, ...]], levels: Sequence[str]) -> str:
    """IREE's tile lists of a lowering config (``distribution = [64, 64, 0], ...``): level ``i``, named
    ``levels[i]``, takes ``tiles[role][i]`` for each loop's role, in loop order."""
    return ", ".join(f"{name} = [{', '.join(str(tiles[role][i]) for role in roles)}]"
                     for i, name in enumerate(levels))


# Keeping 80% of a copy bandwidth as the effective figure leaves room for
# access patterns that are less friendly than a straight copy.
BANDWIDTH_MARGIN = 0.8


class Target(Protocol):
    """A machine Prism optimizes for (see the module docstring)."""

    name: str
    # What its code generator fuses, for the cost of whole programs (prism-explore): "epilogue", the one
    # pointwise consumer of a product (its only reader) runs on the product's tiles; "dual", two products of one
    # left operand that such a consumer reads run as one kernel.
    fusion: frozenset[str]

    @property
    def artifact(self) -> str:
        """What lowering produces, as an ``--emit`` kind: ``ptx`` or ``llvm``."""

    @property
    def runs_here(self) -> bool:
        """Whether lowered code runs in this process (``jit()`` and ``measure=K``)."""

    def lowering(self) -> str:
        """The pass pipeline that lowers tuned Linalg to :attr:`artifact`, e.g. ``prism-lower-gpu{chip=sm_90}``."""

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

    @property
    def iree_backend(self) -> str | None:
        """IREE's backend for this target (``llvm-cpu``, ``cuda``, ``rocm``), or None where Prism writes no IREE
        configuration."""

    @property
    def iree_flags(self) -> tuple[str, ...]:
        """The iree-compile flags that select this machine within :attr:`iree_backend`, for a module that does
        not name its device; empty where IREE cannot name the machine itself."""

    @property
    def iree_device(self) -> str | None:
        """The ``#hal.device.target`` (with its type) that ``--emit=iree`` writes into the module's
        ``hal.device.targets``, so that IREE compiles for this machine whatever its flags say; None where the
        flags name it."""

    def iree_config(self, op: Contraction, choice: dict[str, int]) -> tuple[str, list[str]]:
        """IREE's ``compilation_info`` for contraction ``op`` scheduled by ``choice`` (this target's schema), as
        attribute text; and, in words, what of the choice IREE's configuration cannot express (the text is then
        the nearest configuration)."""

    def iree_data_tiling(self, op: Contraction, choice: dict[str, int]
                         ) -> tuple[tuple[int, int, int], str, list[str]] | None:
        """Where IREE should run contraction ``op`` on packed operands (``linalg.mmt4d``): the inner tiles
        (m0, n0, k0), the mmt4d's ``compilation_info`` and what of the choice it cannot express; None to keep
        the op as it is, configured by :meth:`iree_config`."""

    def measure(self, body: ir.Operation, choice: dict[str, int], assume: int) -> float:
        """Seconds of the family payload ``body`` run under ``choice`` (raises TargetError where it cannot run)."""
