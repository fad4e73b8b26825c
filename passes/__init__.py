"""Prism's passes, one module each, and the registry that names them.

The flag, the class and the module share one name: ``prism-prune`` is
``PrunePass`` in ``passes/prune.py``. Named pipelines are lists of passes.
"""

from __future__ import annotations

from prism.infra.passbase import Pass
from prism.passes.explore import ExplorePass
from prism.passes.instantiate import InstantiatePass
from prism.passes.lift import LiftPass
from prism.passes.lower_cpu import LowerCpuPass
from prism.passes.lower_gpu import LowerGpuPass
from prism.passes.prune import PrunePass
from prism.passes.select import SelectPass
from prism.passes.verify import VerifyPass

PASSES: dict[str, type[Pass]] = {
    cls.NAME: cls
    for cls in (ExplorePass, LiftPass, PrunePass, SelectPass, InstantiatePass, VerifyPass, LowerCpuPass, LowerGpuPass)
}

# Named pipelines: a name, a one-line summary, and the passes it expands to.
# Options given to the pipeline (prism-optimize{target=h200}) reach every pass
# in it that has an option of that name.
PIPELINES: dict[str, tuple[str, tuple[type[Pass], ...]]] = {
    "prism-optimize": (
        "Explore, lift, prune, select and instantiate, then prove the result equal to the input: linalg in, tuned "
        "linalg out",
        (ExplorePass, LiftPass, PrunePass, SelectPass, InstantiatePass, VerifyPass),
    ),
}

__all__ = [
    "PASSES", "PIPELINES", "ExplorePass", "InstantiatePass", "LiftPass", "LowerCpuPass", "LowerGpuPass", "PrunePass",
    "SelectPass", "VerifyPass",
]
