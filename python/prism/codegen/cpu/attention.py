"""Attention on the host: the chains of :mod:`prism.search.attention` that the host's kernels take, their plans,
and the kernels' text in place of each chain.

A chain (as ``cpu-tile`` sees it, after ``linalg.softmax`` is decomposed) whose value rows are whole vectors
becomes one online-softmax kernel (:mod:`.attention_kernel`), on AMX tiles where the host has them and the chain
takes its products of bf16 operands, P rounded to bf16 (:mod:`.attention_amx`). The schedule (BQ, BKV, RM, RN, KVS)
is the attention family's choice, which prism-instantiate leaves on the scores' product (``prism.attention``);
without one, :func:`plan_attention` picks fixed tiles.
"""

from __future__ import annotations

from mlir import ir

from prism.codegen.cpu.attention_amx import AmxAttention, takes_tiles
from prism.codegen.cpu.attention_kernel import AttentionPlan, AttentionWriter
from prism.codegen.cpu.text import erase_unused_inits, inline_function
from prism.infra import attrs
from prism.infra.diagnostics import describe_ops
from prism.infra.errors import UnsupportedOp
from prism.infra.passbase import PassContext
from prism.kernels.host_attention import AMX_BLOCK
from prism.search.attention import NARROW_TYPES, AttentionMatch, attention_lanes, match_attention
from prism.targets.host import host_target

# Query rows per task (about) and key rows per step, without a choice: the fastest fixed tiles measured at
# S = 512 and 2048 (benchmarks/RESULTS.md, "Attention on the host: one online-softmax kernel").
QUERY_ROWS, KEY_ROWS = 96, 128
# The knobs of a choice (the attention family's symbols).
CHOICE_KEYS = ("BQ", "BKV", "RM", "RN", "KVS")
# f32 lanes of an AVX-512 vector.
AVX512_LANES = 16


def read_choice(op: ir.Operation) -> dict[str, int] | None:
    """The ``prism.attention`` choice on ``op`` (every key of CHOICE_KEYS, positive), or None without one."""
    if attrs.ATTENTION_CHOICE not in op.attributes:
        return None
    attr, where = op.attributes[attrs.ATTENTION_CHOICE], str(op.location)
    if not isinstance(attr, ir.DictAttr):
        raise UnsupportedOp(f"{attrs.ATTENTION_CHOICE} must be a dictionary, got {attr}", location=where)
    values = {}
    for key in CHOICE_KEYS:
        value = attr[key] if key in attr else None
        if not isinstance(value, ir.IntegerAttr) or value.value < 1:
            raise UnsupportedOp(f"{attrs.ATTENTION_CHOICE}.{key} must be a positive integer", location=where)
        values[key] = value.value
    return values


def plan_attention(match: AttentionMatch, lanes: int, workers: int, amx: bool = False, avx512: bool = False) \
        -> AttentionPlan:
    """The kernel's tiles: the choice on the chain's first op, else fixed ones (6 x 2-vector register blocks,
    about QUERY_ROWS query rows and KEY_ROWS key rows per block; one-row blocks, and wider ones, for fewer
    than 6 query rows; one share of the keys). On a host with AMX tiles (``amx``), a chain that
    :func:`.attention_amx.takes_tiles` takes its products there, in blocks of whole
    :data:`~prism.kernels.host_attention.AMX_BLOCK` rows (the choice's RM and RN do not apply). On an AVX-512 host
    (``avx512``), vectors of 16 take ``vscalefps`` in their exponentials.

    The query rows are evened out over ``ceil(Sq / BQ)`` blocks, so that the
    last is not mostly repeats, and a block of keys is no longer than K.
    Raises UnsupportedOp for a choice the kernel cannot run (RN not a
    multiple of the vector lanes dividing the value size, BQ not a multiple of
    RM, BKV not one of RN).
    """
    problem = match.problem
    rows, value_dim = problem.queries, problem.value_dim
    choice = read_choice(match.ops[0])
    if choice is None:
        rm = 6 if rows is None or rows >= 6 else 1
        widths = (4 * lanes, 2 * lanes, lanes) if rm == 1 else (2 * lanes, lanes)
        # One-row blocks keep only RN/lanes accumulators: wider ones read each row of V in fewer passes.
        choice = {"BQ": QUERY_ROWS, "BKV": KEY_ROWS, "RM": rm, "RN": next(w for w in widths if value_dim % w == 0),
                  "KVS": 1}
    tiles = amx and takes_tiles(match)
    rm, rn = (AMX_BLOCK, AMX_BLOCK) if tiles else (choice["RM"], choice["RN"])
    if not tiles and (rn % lanes or value_dim % rn or choice["BQ"] % rm or choice["BKV"] % rn):
        chosen = ", ".join(f"{key} = {value}" for key, value in choice.items())
        raise UnsupportedOp(f"{attrs.ATTENTION_CHOICE} {{{chosen}}} does not fit a value size of {value_dim} in "
                            f"vectors of {lanes} (RN must be a multiple of {lanes} dividing {value_dim}, BQ one of "
                            "RM, BKV one of RN)", location=str(match.ops[0].location))
    blocks = 1 if rows is None else -(-rows // choice["BQ"])
    bq = -(-choice["BQ"] // rm) * rm if rows is None else -(-rows // (blocks * rm)) * rm
    bkv = -(-choice["BKV"] // rn) * rn
    if problem.keys is not None:
        bkv = min(bkv, -(-problem.keys // rn) * rn)
    out_type = str(match.ops[-1].results[0].type)
    return AttentionPlan(str(match.q.type), str(match.k.type), str(match.v.type), out_type, match.scale,
                         bq, bkv, rm, rn, choice["KVS"], match.causal, lanes, workers, match.p_type,
                         scalef=avx512 and lanes == AVX512_LANES, amx=tiles)


def fuse_attention(module: ir.Module, lanes: int, workers: int, ctx: PassContext) -> list[list[str]]:
    """Replace every attention chain in ``module`` by the online-softmax kernel.

    Returns, per chain replaced, its function and ops as text (:func:`describe_ops`), read before they go.
    """
    found: list[list[str]] = []
    for func in module.body.operations:
        if func.operation.name != "func.func" or not func.regions[0].blocks:
            continue
        for block in func.regions[0].blocks:
            for op in list(block.operations):
                match = match_attention(op.operation, widened=NARROW_TYPES)
                width = attention_lanes(match.problem.value_dim, lanes) if match else None
                if width is None:
                    continue  # not attention, or rows of V that are not whole vectors: the generic path
                host = host_target()
                plan = plan_attention(match, width, workers, host.amx, host.vector_bits == 512)
                blocks = "products on AMX tiles" if plan.amx else f"{plan.rm}x{plan.rn} blocks"
                ctx.progress(f"cpu-tile: attention at {op.operation.location}: BQ={plan.bq}, BKV={plan.bkv}, "
                             f"{blocks}, {plan.splits} share(s) of the keys")
                found.append(describe_ops(func.operation, match.ops))
                last = match.ops[-1]
                feeding = [operand.owner.operation for chained in match.ops for operand in chained.operands
                           if not isinstance(operand.owner, ir.Block)]
                inline_function(last, attention_text(plan), [match.q, match.k, match.v])
                for dead in reversed(match.ops[:-1]):
                    dead.erase()
                erase_unused_inits(feeding)
    return found


def attention_text(plan: AttentionPlan) -> str:
    """The private ``func.func @attention(q, k, v)`` of ``plan``, on tensors at its boundary."""
    return (AmxAttention(plan) if plan.amx else AttentionWriter(plan)).text()
