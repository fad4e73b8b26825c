"""Named lowering stages, in the manner of Triton's ``make_ttir -> make_ttgir -> make_llir -> make_ptx``."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

from mlir import ir

from prism.infra.passbase import PassContext


@dataclass(frozen=True)
class Stage:
    """One step of a code generator: a name (``cpu-bufferize``), what it does, and the function that does it."""

    name: str
    summary: str
    run: Callable[[ir.Module], None]


class Lowering:
    """A code generator's run over one module: STAGES lists its stages, in order, as (name, summary, method),
    each method the function itself (written after the methods), so that a search for its references finds
    the stage."""

    STAGES: tuple[tuple[str, str, Callable[..., None]], ...] = ()

    def stages(self) -> list[Stage]:
        """The stages, in order, each run by its method bound to this lowering."""
        return [Stage(name, summary, method.__get__(self)) for name, summary, method in self.STAGES]

    @classmethod
    def stage_names(cls) -> tuple[str, ...]:
        """The names of the stages, in order."""
        return tuple(name for name, _, _ in cls.STAGES)


def run_stages(stages: Sequence[Stage], module: ir.Module, ctx: PassContext) -> None:
    """Run ``stages`` in order on ``module``, reporting progress and offering the IR after each to ``ctx``."""
    for stage in stages:
        ctx.progress(f"{stage.name}: {stage.summary}")
        stage.run(module)
        ctx.after(stage.name, module)
