"""The attention family, ``softmax(c Q K^T) V``: matched by :func:`prism.search.attention.match_attention`,
searched on the host (:mod:`prism.targets.host_attention`) and run there as one online-softmax kernel
(:mod:`prism.codegen.cpu.attention`); on NVIDIA GPUs, f32, f16 and bf16 chains run as flash attention, or
split-KV flash decoding for one query row (:mod:`prism.codegen.gpu.attention`)."""

from __future__ import annotations

from mlir import ir

from prism.codegen.cpu.attention import fuse_attention
from prism.codegen.gpu.attention import attention_problem
from prism.codegen.gpu.spec import AttentionSpec
from prism.infra import attrs
from prism.search.attention import Attention, match_attention
from prism.search.families import Family, FamilyModel, register_family
from prism.targets import host_attention

GPU_TYPES = ("f32", "f16", "bf16")


def gpu_attention(op: ir.Operation, buffers, chip: str):
    """The GPU kernel of the attention chain ending at ``op``: (its ops, a spec maker taking the kernel's name,
    the values it produces), or None. A chain the kernels do not take (a causal mask whose offset is not
    ``keys - queries``, f32 operands, a head size they refuse) keeps its ops, which run as GEMMs and rows."""
    found = match_attention(op, types=GPU_TYPES, transposed_k=True)
    if found is None:
        return None
    q, k, v = (buffers.tensor(x) for x in (found.q, found.k, found.v))
    result = found.ops[-1].results[0]
    sq, skv = q.shape[-2], k.shape[-1 if found.k_transposed else -2]
    if found.causal is not None and not (isinstance(sq, int) and isinstance(skv, int) and found.causal == skv - sq):
        return None
    if not isinstance(q.shape[-1], int) or not isinstance(v.shape[-1], int):
        return None

    def spec(name: str) -> AttentionSpec:
        return AttentionSpec(name=name, q=q, k=k, v=v, o=buffers.tensor(result), batch=tuple(q.shape[:-2]), sq=sq,
                             skv=skv, d=q.shape[-1], dv=v.shape[-1], scale=found.scale,
                             k_layout="dn" if found.k_transposed else "nd", causal=found.causal is not None)
    if attention_problem(spec("attention"), chip) is not None:
        return None
    return list(found.ops), spec, [result]


ATTENTION = Family(
    kind=Attention.kind,
    problem_type=Attention,
    match=match_attention,
    choice_attribute=attrs.ATTENTION_CHOICE,
    models={"host": FamilyModel(space=host_attention.attention_space, seconds=host_attention.attention_seconds,
                                lower_bound=host_attention.attention_lower_bound,
                                cost_text=host_attention.COST_TEXT)},
    kernels={"cpu": fuse_attention, "gpu": gpu_attention},
)

register_family(ATTENTION)
