"""What a target is: the one object that answers every question Prism asks about a machine.

A target owns its hardware numbers and plays up to three roles, each a
protocol checked with ``isinstance``:
- its search model (:class:`~prism.search.model.SearchModel`): its schedule
  schema (the space of a family's knobs, with their ranges), its cost model
  and a lower bound on it; every target plays it;
- lowering (:class:`LoweringTarget`): how its programs are lowered (a pass
  pipeline naming its code generator) and what that produces;
- IREE export (:class:`IreeTarget`): IREE's backend, device and the
  configuration of each product.
Code elsewhere asks the target for a role; it never tests what kind of
target it holds. A new target is one module that registers an object of
these shapes (:func:`prism.targets.register`).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Protocol, runtime_checkable

from prism.search.model import SearchModel

if TYPE_CHECKING:
    from prism.search.family import Problem
    from prism.search.space import Contraction

def iree_tile_levels(roles: Sequence[str], tiles: dict[str, tuple[int, ...]], levels: Sequence[str]) -> str:
    """IREE's tile lists of a lowering config (``distribution = [64, 64, 0], ...``): level ``i``, named
    ``levels[i]``, takes ``tiles[role][i]`` for each loop's role, in loop order."""
    return ", ".join(f"{name} = [{', '.join(str(tiles[role][i]) for role in roles)}]"
                     for i, name in enumerate(levels))


# Keeping 80% of a copy bandwidth as the effective figure leaves room for
# access patterns that are less friendly than a straight copy.
BANDWIDTH_MARGIN = 0.8


@runtime_checkable
class Target(SearchModel, Protocol):
    """A machine Prism optimizes for: a search model (:class:`~prism.search.model.SearchModel`), and where it
    plays them, the roles below. Code asks for a role with ``isinstance``."""


@runtime_checkable
class LoweringTarget(Target, Protocol):
    """A target that Prism lowers for itself."""

    @property
    def artifact(self) -> str:
        """What lowering produces, as an ``--emit`` kind: ``ptx`` or ``llvm``."""

    @property
    def runs_here(self) -> bool:
        """Whether lowered code runs in this process (``jit()`` and ``measure=K``)."""

    def lowering(self) -> str:
        """The pass pipeline that lowers tuned Linalg to :attr:`artifact`, e.g. ``prism-lower-gpu{chip=sm_90}``."""


@runtime_checkable
class MeasuredTarget(Protocol):
    """A target whose code runs here (``measure=K``) that says where a timed call should find its inputs."""

    def sweep_bytes(self, op: Problem, assumed: int = 1024) -> int:
        """Bytes that a measurement writes over before each timed call of ``op``, so that the call finds its
        inputs where the cost model assumes them (0: in the cache, as the last call left them)."""


@runtime_checkable
class IreeTarget(Target, Protocol):
    """A target that ``--emit=iree`` writes IREE's configurations for."""

    @property
    def iree_backend(self) -> str:
        """IREE's backend for this target (``llvm-cpu``, ``cuda``, ``rocm``)."""

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
