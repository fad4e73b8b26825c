"""The machines Prism optimizes for, by name: NVIDIA GPUs (:mod:`.nvidia`), AMD GPUs through IREE (:mod:`.amd`)
and this host (:mod:`.host`).

``register`` adds a target defined elsewhere (a test, a plugin); prune,
select, exploration and the driver's lowering then use it like the built-in
ones, through the :class:`~prism.targets.base.Target` protocol and its roles.
"""

from __future__ import annotations

from collections.abc import Callable

from prism.infra.errors import TargetError
from prism.infra.passbase import option
from prism.search.model import SearchModel
from prism.targets.amd import AMD_TARGETS
from prism.targets.base import IreeTarget, LoweringTarget, MeasuredTarget, Target
from prism.targets.host import host_target
from prism.targets.nvidia import GPU_TARGETS

_TARGETS: dict[str, Callable[[], Target]] = {
    **{name: (lambda target=target: target) for name, target in {**GPU_TARGETS, **AMD_TARGETS}.items()},
    "host": host_target,
}
_BUILT_IN = frozenset(_TARGETS)


def target_names() -> tuple[str, ...]:
    """The names of every known target, in registration order."""
    return tuple(_TARGETS)


def register(target: Target) -> None:
    """Make ``target`` known by its name; a name already taken, or an object that is no search model, is an
    error."""
    if not isinstance(target, SearchModel):
        raise TargetError(f"{target!r} is not a target: it lacks the search model's members (SearchModel)")
    if target.name in _TARGETS:
        raise TargetError(f"a target named '{target.name}' already exists")
    _TARGETS[target.name] = lambda: target


def unregister(name: str) -> None:
    """Forget a target added by :func:`register` (the built-in targets stay)."""
    if name not in _BUILT_IN:
        _TARGETS.pop(name, None)


def name_problem(name: str) -> str:
    """Why ``name`` does not name a target ('' for a known name, or for '': the pipeline's target)."""
    if not name or name in _TARGETS:
        return ""
    return f"must name a target ({', '.join(_TARGETS)}), got '{name}'"


def target_option() -> str:
    """The ``target`` option of a pass that searches or explores: '' takes the pipeline's (``--target``)."""
    return option("", "the target to optimize for (default: the pipeline's, --target)", check=name_problem)


def get_target(name: str) -> Target:
    """The target called ``name``; raises TargetError listing the valid names."""
    if not isinstance(name, str) or name not in _TARGETS:
        raise TargetError(f"unknown target '{name}'; expected one of: {', '.join(_TARGETS)}")
    return _TARGETS[name]()


__all__ = ["IreeTarget", "LoweringTarget", "MeasuredTarget", "SearchModel", "Target",
           "get_target", "name_problem", "register", "target_names", "target_option", "unregister"]
