"""The attention family, ``softmax(c Q K^T) V``: matched by :func:`prism.search.attention.match_attention`,
searched on the host (:mod:`prism.targets.host_attention`) and run there as one online-softmax kernel
(:mod:`prism.codegen.cpu.attention`); on NVIDIA GPUs, f16 and bf16 chains are searched
(:mod:`prism.families.attention_gpu`) and run as flash attention, or split-KV flash decoding for one query row
(:mod:`prism.codegen.gpu.attention`, and on sm_90a :mod:`prism.codegen.gpu.attention_sm90`).

The family's matcher takes every chain some target runs (f32, f16 and bf16; K as ``[.., keys, d]`` or
transposed; f32 chains of bf16 or f16 Q, K and V, P perhaps rounded before P V); each target's space refuses the
chains its kernel does not take (the host's: all but f32 chains, perhaps of narrower Q, K and V, with K
untransposed; the GPU's: the f32 chains of narrower Q, K and V or a rounded P), whose parts are then lifted as they
are."""

from __future__ import annotations

from mlir import ir

from prism.codegen.cpu.attention import fuse_attention
from prism.codegen.gpu.attention_sm90 import kernels_problem
from prism.codegen.gpu.spec import AttentionSpec, AttentionTile
from prism.families import attention_gpu
from prism.infra import attrs
from prism.infra.errors import UnsupportedOp
from prism.search.attention import NARROW_TYPES, Attention, AttentionMatch, match_attention
from prism.search.families import Family, FamilyModel, register_family
from prism.targets import host_attention
from prism.targets.nvidia import GPU_TARGETS

GPU_TYPES = ("f32", "f16", "bf16")


def match_family(op: ir.Operation) -> AttentionMatch | None:
    """The attention chain ending at ``op``, of any type a target runs; None if there is none."""
    return match_attention(op, types=GPU_TYPES, transposed_k=True, widened=NARROW_TYPES)


def host_space(op: Attention, target):
    """The host's space (:func:`~prism.targets.host_attention.attention_space`) for f32 chains (of f32 Q, K and V,
    or of narrower ones that it widens) with K untransposed, the only ones its kernel takes; None for the others."""
    if (op.input_type != "f32" and not op.widened) or op.k_transposed:
        return None
    return host_attention.attention_space(op, target)


def gpu_space(op: Attention, target):
    """The GPU's space (:func:`~prism.families.attention_gpu.attention_space`) for chains of one type throughout;
    None for an f32 chain of narrower Q, K and V or one that rounds P, which its kernels do not take."""
    if op.widened or op.p_type is not None:
        return None
    return attention_gpu.attention_space(op, target)


# The keys of the choice on the chain's first op (prism.attention) that the GPU's kernels read.
GPU_CHOICE_KEYS = attention_gpu.CHOICE_KEYS


def read_gpu_choice(op: ir.Operation) -> tuple[AttentionTile, int] | None:
    """The tile and split count of the ``prism.attention`` choice on ``op``; None without one. A choice whose
    keys or values the kernels do not take is an error at ``op``."""
    if attrs.ATTENTION_CHOICE not in op.attributes:
        return None
    attr, where = op.attributes[attrs.ATTENTION_CHOICE], str(op.location)
    values = {}
    for key in GPU_CHOICE_KEYS:
        value = attr[key] if isinstance(attr, ir.DictAttr) and key in attr else None
        if not isinstance(value, ir.IntegerAttr) or value.value < 1:
            raise UnsupportedOp(f"{attrs.ATTENTION_CHOICE}.{key} must be a positive integer on the GPU",
                                location=where)
        values[key] = value.value
    try:
        tile = attention_gpu.attention_tile(values)
    except ValueError as error:
        raise UnsupportedOp(f"{attrs.ATTENTION_CHOICE}: {error}", location=where) from None
    return tile, values["SPLITS"]


def gpu_attention(op: ir.Operation, buffers, chip: str):
    """The GPU kernel of the attention chain ending at ``op``: (its ops, a spec maker taking the kernel's name,
    the values it produces), or None. A chain the kernels do not take (a causal mask whose offset is not
    ``keys - queries``, f32 operands, an f32 chain of narrower operands or a rounded P, a head size they refuse)
    keeps its ops, which run as GEMMs and rows.

    The search's choice on the chain's first op (``prism.attention``: BQ, BK, DECODE_BK, DECODE_WARPS, SPLITS,
    STAGES) sets the kernels' tile and, for decode, the key shares; without one the spec carries no tile and the
    emitter's own rules apply (each kernel's default). A choice the kernels cannot run is an error at that
    op."""
    found = match_family(op)
    if found is None or found.widened or found.p_type is not None:
        return None
    q, k, v = (buffers.tensor(x) for x in (found.q, found.k, found.v))
    result = found.ops[-1].results[0]
    sq, skv = q.shape[-2], k.shape[-1 if found.k_transposed else -2]
    if found.causal is not None and not (isinstance(sq, int) and isinstance(skv, int) and found.causal == skv - sq):
        return None
    if not isinstance(q.shape[-1], int) or not isinstance(v.shape[-1], int):
        return None
    choice = read_gpu_choice(found.ops[0])
    tile, splits = choice if choice is not None else (None, 0)

    def spec(name: str) -> AttentionSpec:
        return AttentionSpec(name=name, q=q, k=k, v=v, o=buffers.tensor(result), batch=tuple(q.shape[:-2]), sq=sq,
                             skv=skv, d=q.shape[-1], dv=v.shape[-1], scale=found.scale,
                             k_layout="dn" if found.k_transposed else "nd", causal=found.causal is not None,
                             splits=splits if sq == 1 else 0, tile=tile)
    problem = kernels_problem(spec("attention"), chip)
    if problem is not None and (choice is None or not attention_gpu.some_tile_fits(spec("attention"), chip)):
        return None
    if problem is not None:  # a tile fits, the chosen one does not
        raise UnsupportedOp(f"{attrs.ATTENTION_CHOICE}: {problem}", location=str(found.ops[0].location))
    return list(found.ops), spec, [result]


_GPU_MODEL = FamilyModel(space=gpu_space, seconds=attention_gpu.attention_seconds,
                         lower_bound=attention_gpu.attention_lower_bound, cost_text=attention_gpu.COST_TEXT)

ATTENTION = Family(
    kind=Attention.kind,
    problem_type=Attention,
    match=match_family,
    choice_attribute=attrs.ATTENTION_CHOICE,
    models={"host": FamilyModel(space=host_space, seconds=host_attention.attention_seconds,
                                lower_bound=host_attention.attention_lower_bound,
                                cost_text=host_attention.COST_TEXT,
                                from_memory=host_attention.streams_from_memory),
            **dict.fromkeys(GPU_TARGETS, _GPU_MODEL)},
    kernels={"cpu": fuse_attention, "gpu": gpu_attention},
)

register_family(ATTENTION)
