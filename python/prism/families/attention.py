"""The attention family, ``softmax(c Q K^T) V``: matched by :func:`prism.search.attention.match_attention`,
searched on the host (:mod:`prism.targets.host_attention`) and run there as one online-softmax kernel
(:mod:`prism.codegen.cpu.attention`). GPUs have no schedule for it: its products are lifted as GEMMs."""

from __future__ import annotations

from prism.codegen.cpu.attention import fuse_attention
from prism.infra import attrs
from prism.search.attention import Attention, match_attention
from prism.search.families import Family, FamilyModel, register_family
from prism.targets import host_attention

ATTENTION = Family(
    kind=Attention.kind,
    problem_type=Attention,
    match=match_attention,
    choice_attribute=attrs.ATTENTION_CHOICE,
    models={"host": FamilyModel(space=host_attention.attention_space, seconds=host_attention.attention_seconds,
                                lower_bound=host_attention.attention_lower_bound,
                                cost_text=host_attention.COST_TEXT)},
    kernels={"cpu": fuse_attention},
)

register_family(ATTENTION)
