"""The host's IREE export: IREE's CPU configuration nearest to Prism's choice for a product."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from prism.search.space import Contraction
from prism.targets.base import iree_tile_levels

if TYPE_CHECKING:
    from prism.targets.host import HostTarget

# IREE's llvm-cpu pipeline rejects a vector op of 512 native vectors' bytes or more (its vector size check):
# 8 KiB for an x86-64 target of no named CPU (16-byte vectors), as IREE compiles by default; a named CPU's limit
# is larger. Products accumulate in f32.
IREE_VECTOR_BYTES, ACCUMULATOR_BYTES = 16 * 512, 4


def iree_config(target: HostTarget, op: Contraction, choice: dict[str, int]) -> tuple[str, list[str]]:
    """IREE's CPU double-tiling pipeline, as near Prism's choice as it runs well.

    IREE's pipeline keeps the whole of K in each workgroup (a cache-level
    K tile makes it vectorize whole slices) and reads B where it lies, so
    TK and B's panels have no counterpart. Its vector tiles run well as
    powers of two: RM becomes the largest one not above it (6 rows become
    4). The workgroup is :func:`iree_workgroup`'s. Prism's tiles as they
    are run several times slower in IREE than its defaults
    (benchmarks/RESULTS.md, "IREE with Prism's configurations against
    IREE's defaults").
    """
    rm, rn = choice["RM"], choice["RN"]
    vm, wm, wn = iree_workgroup(op, choice)
    # K one step at a time as in Prism's micro-kernel, but 8 for a short K (at most 1024), as IREE's own
    # configurations take it (benchmarks/RESULTS.md, "Measurements behind rules in the code": IREE's K step).
    reduction = 8 if iree_k(op) <= 1024 else 1
    # IREE refuses a vector contraction whose iteration space holds IREE_VECTOR_BYTES of accumulators or more;
    # the K step is halved until the vector tile's is below it.
    while reduction > 1 and vm * rn * reduction * ACCUMULATOR_BYTES >= IREE_VECTOR_BYTES:
        reduction //= 2
    tiles = {"batch": (1, 1, 0), "m": (wm, vm, 0), "n": (wn, rn, 0), "k": (0, 0, reduction)}
    config = iree_tile_levels(op.roles, tiles, ("distribution", "vector_common_parallel", "vector_reduction"))
    text = (f"#iree_codegen.compilation_info<lowering_config = #iree_cpu.lowering_config<{config}>, "
            "translation_info = #iree_codegen.translation_info<pipeline = #iree_cpu.pipeline<DoubleTilingExpert>>>")
    unexpressed = [f"the K slice (TK = {choice['TK']}) and B's panels (IREE keeps whole K in a workgroup)"]
    if vm != rm:
        unexpressed.append(f"RM = {rm} (IREE's vector tile takes {vm} rows)")
    if (wm, wn) != (choice["TM"], choice["TN"]):
        unexpressed.append(f"TM x TN = {choice['TM']} x {choice['TN']} (a workgroup of {wm} x {wn}, whose rows "
                           "of A and columns of B stay in cache over the whole of K)")
    return text, unexpressed

def iree_data_tiling(target: HostTarget, op: Contraction, choice: dict[str, int]
                     ) -> tuple[tuple[int, int, int], str, list[str]] | None:
    """The inner tiles (m0, n0, k0) into which ``--emit=iree`` packs a product that IREE should run on
    packed operands (``linalg.mmt4d``), with the ``compilation_info`` of that mmt4d and, in words, what of
    the choice it cannot express; None to leave the product as it is.

    Packed, like Prism's own kernel with several row blocks: an f32
    product of static M above TM (each panel of B then serves several
    row blocks) or of dynamic M, without a batch. Each operand is packed
    once per call into lanes x lanes tiles (8 x 8 with AVX2, IREE's own
    data-tiling tile), and the workgroup is :func:`iree_workgroup`'s.
    Packing pays where each panel of B serves several row blocks; with one
    row block (16 x 4096^2) B would be packed on every call for 16 rows, so
    the product keeps the double-tiling configuration
    (benchmarks/RESULTS.md, "IREE with Prism's configurations: packed
    products on the host").
    """
    if op.input_type != "f32" or op.acc_bytes != 4 or "batch" in op.roles:
        return None
    m = op.extent("m")
    if m is not None and m <= choice["TM"]:
        return None
    lanes = target.lanes(op)
    _, wm, wn = iree_workgroup(op, choice)
    distribution = [-(-wm // lanes), max(1, wn // lanes), 0, 0, 0, 0]  # outer tiles of M and N
    config = (f"#iree_codegen.compilation_info<lowering_config = #iree_cpu.lowering_config<distribution = "
              f"{distribution}, vector_common_parallel = [1, 1, 0, {lanes}, {lanes}, 0], vector_reduction "
              "= [0, 0, 1, 0, 0, 1]>, translation_info = #iree_codegen.translation_info<pipeline = "
              "#iree_cpu.pipeline<Mmt4dTilingExpert>>>")
    unexpressed = [f"the K slice (TK = {choice['TK']}): IREE packs whole operands and keeps K in a workgroup"]
    if (choice["RM"], choice["RN"]) != (lanes, lanes):
        unexpressed.append(f"the register block {choice['RM']} x {choice['RN']} (IREE's packed tile is "
                           f"{lanes} x {lanes})")
    if (wm, wn) != (choice["TM"], choice["TN"]):
        unexpressed.append(f"TM x TN = {choice['TM']} x {choice['TN']} (a workgroup of {wm} x {wn})")
    return (lanes, lanes, 1), config, unexpressed

def iree_workgroup(op: Contraction, choice: dict[str, int]) -> tuple[int, int, int]:
    """IREE's vector rows, and its workgroup's rows and columns, for Prism's ``choice``.

    A workgroup is 4 vector tiles wide (TN capped) and K/128 high, from 8
    to 32 vector tiles (TM capped): the longer K, the more rows share a
    workgroup's panel of B (measured from 512^3 to 2048^3 and at
    16 x 4096^2: benchmarks/RESULTS.md, "Measurements behind rules in the
    code": IREE workgroups).
    """
    vm = min(1 << (choice["RM"].bit_length() - 1), 8)
    rows = vm * min(max(iree_k(op) // 128, 8), 32)
    return vm, max(vm, min(choice["TM"], rows) // vm * vm), min(choice["TN"], 4 * choice["RN"])

def iree_k(op: Contraction) -> int:
    """The product's K, counting a dynamic extent as 1024."""
    return math.prod(extent or 1024 for extent, role in zip(op.extents, op.roles, strict=True) if role == "k")
