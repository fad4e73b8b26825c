"""The host's GEMM schedule space: cache tiles (TM, TN, TK) and register block (RM, RN), derived from the
machine's vector registers and caches (for attention, see :mod:`.host_attention`)."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import numpy as np

from prism.kernels import host_gemm
from prism.search.cost import KnobValues
from prism.search.space import SHAPE_PARAMS, Contraction, Space, pow2_sum_le, shape_fit, shape_param_bounds

if TYPE_CHECKING:
    from prism.targets.host import HostTarget


def direct_kernel(op: Contraction) -> bool:
    """Whether the host runs ``op`` with the direct GEMM kernel (:func:`prism.kernels.host_gemm.direct_layout`).

    (The contraction records its inputs' maps only; C is taken to follow the loops' order, as in linalg's named ops.)
    """
    if len(op.operand_dims) != 2:
        return False
    f32 = op.input_type == "f32" and op.elem_bytes == (4, 4) and op.acc_bytes == 4
    inputs = [[op.roles[d] for d in dims] for dims in op.operand_dims]
    return host_gemm.direct_layout(f32, [*inputs, [r for r in op.roles if r in ("batch", "m", "n")]])


# A static M above this many rows: a product the direct kernel runs in many row panels (see streams_panels).
MANY_ROWS = 16


def streams_panels(op: Contraction) -> bool:
    """Whether the direct kernel's B panel (TK x RN) may outgrow L1 for ``op``, where the task's B slice keeps to a
    quarter of L2: a product of a static M of more than MANY_ROWS rows, whose row panels read each panel in order,
    so that the prefetchers bring it from L2 as they go. Deep slices then pay: 6 x 64 blocks on 128 KiB panels
    (TK = 512) ran 1.2x faster than on the 32 KiB panels L1 allowed (TK = 128) at 2048^3. A task's B slice beyond
    a quarter of L2 is evicted before its row panels read it: 128 x 4096 x 4096 in 1024-column tasks ran 5% slower
    at TK = 256 (1 MiB slices) and 8% at TK = 1024 than at TK = 128 (benchmarks/RESULTS.md, "Deep K slices for the
    square GEMMs"). Fewer rows keep their panels in L1 (not measured otherwise)."""
    m = op.extent("m")
    return direct_kernel(op) and m is not None and m > MANY_ROWS


# AMX's tile registers (prism.codegen.cpu.kernel_amx): eight, each of at most 16 rows of 64 bytes.
TILE_ROWS = 16
TILE_ROW_BYTES = 64
TILE_REGISTERS = 8
# The AMX knobs' exponents as the space holds them (AR = 2**ar rows from 4, AB = 2**ab bytes per row from 16,
# AM x AN = 2**am x 2**an C tiles per block), each bounded one step past what the tile registers take, so that the
# group "amx tiles" is what keeps them in.
_AMX_KNOBS = {"ar": "AR", "ab": "AB", "am": "AM", "an": "AN"}
_AMX_BOX = "2 <= ar <= 5 and 4 <= ab <= 7 and 0 <= am <= 2 and 0 <= an <= 2"


def tiles_fit(rows: int, row_bytes: int, tiles_m: int, tiles_n: int) -> bool:
    """Whether a block of ``tiles_m x tiles_n`` C tiles of ``rows`` rows, fed by A tiles of ``row_bytes`` bytes
    per row, fits AMX's tile registers: rows within 16, whole pairs of bf16 within 64 bytes per row, and its C
    tiles, its A tiles (one per row of C tiles) and its B tiles (one per column) eight at most."""
    return (1 <= rows <= TILE_ROWS and 4 <= row_bytes <= TILE_ROW_BYTES and row_bytes % 4 == 0
            and tiles_m >= 1 and tiles_n >= 1 and tiles_m * tiles_n + tiles_m + tiles_n <= TILE_REGISTERS)


def pipelines_few_rows(op: Contraction, target: HostTarget) -> bool:
    """Whether the direct kernel copies B for a static M of a few rows (2 to MANY_ROWS) in a pipelined copy
    (:func:`prism.kernels.host_gemm.pipelines_copy`: no batch, B beyond what the target copies in a phase of its
    own), wherever its register block leaves several row panels."""
    m, n, k = op.extent("m"), op.extent("n"), op.extent("k")
    if not direct_kernel(op) or m is None or not 1 < m <= MANY_ROWS or n is None or k is None:
        return False
    return host_gemm.pipelines_copy(True, False, "batch" in op.roles, k * n * op.elem_bytes[1],
                                    target.copy_in_phase_bytes, k)


def pipelined_slice_constraint(op: Contraction, target: HostTarget) -> str:
    """The task's slice of B (TK x TN) within an eighth of L2 where the copy of a few rows is pipelined
    (:func:`pipelines_few_rows`) and the register block leaves several row panels (RM below M, roughly: RM = 1
    streams B in place): the L2 then holds the slice's panels as the micro-tiles read them and the next slice
    as the copy brings it in. At 16 x 4096 x 4096 (a B of 64 MiB), slices of 256 KiB ran 1.04x faster than
    128 KiB, 1.10x faster than 512 KiB (TN = 1024 or TK = 256) and 1.08x faster than 1 MiB (benchmarks/RESULTS.md,
    "The pipelined copy's slices at 16 rows")."""
    slice_bytes = op.footprint_exponent(1, {"n": "tn", "k": "tk"})
    several = f"(rm + m3 < {SHAPE_PARAMS['m']} and (rm >= 1 or m3 = 1))"
    return f"(not {several}) or {slice_bytes} <= {math.floor(math.log2(target.l2_bytes / 8))}"


# A bf16 product of a static M of at most this many rows (a few tokens) is bound by reading B: the dot-product
# kernel reads B in place in slices of as many rows as the f32 kernel streams (prism.codegen.cpu.kernel_bf16).
FEW_BF16_ROWS = 16


def amx_product(op: Contraction, target: HostTarget) -> bool:
    """Whether the host's space for ``op`` holds AMX's tiles: a machine with AMX, and a product of two bf16
    operands into f32."""
    return target.amx and len(op.operand_dims) == 2 and op.input_type == "bf16" and op.elem_bytes == (2, 2) \
        and op.acc_bytes == 4


def amx_tiles_constraint() -> str:
    """The isl constraint on the AMX knobs' exponents that :func:`tiles_fit` states: tile rows at most 16, bytes per
    row at most 64, C, A and B tiles at most 8. The fitting blocks of C tiles are written as a box where they form
    one (a disjunction would multiply the pieces that the search counts), else listed."""
    blocks = {(am, an) for am in range(4) for an in range(4) if tiles_fit(1, 4, 2**am, 2**an)}
    top_m, top_n = max(am for am, _ in blocks), max(an for _, an in blocks)
    if blocks == {(am, an) for am in range(top_m + 1) for an in range(top_n + 1)}:
        tiles = f"am <= {top_m} and an <= {top_n}"
    else:
        tiles = " or ".join(f"(am = {am} and an = {an})" for am, an in sorted(blocks))
    return f"ar <= {TILE_ROWS.bit_length() - 1} and ab <= {TILE_ROW_BYTES.bit_length() - 1} and ({tiles})"


# The most rows of a task, as an exponent (TM <= 2**TM_MAX, or three times that). An AMX task may take all rows
# of a static M up to 2**AMX_TM_MAX, and then packs its own slices of B (prism.codegen.cpu.kernel_amx).
TM_MAX = 9
AMX_TM_MAX = 13


def amx_cache_groups(op: Contraction, target: HostTarget) -> tuple[tuple[str, str], ...]:
    """What the AMX kernel's loops keep in the caches (:mod:`prism.codegen.cpu.kernel_amx`), in place of the f32
    kernels' rules: a band's slice of A (AR x AM rows x TK) stays in half of L1 while the B tiles of each group of
    panels stream past it, and the task's slice of B (TK x TN, packed by the task where it takes all of a static
    M) in a quarter of L2 over its bands. C's tiles go through memory once per slice and need no place: at 2048^3,
    tasks of all 2048 rows and 1024 columns (C blocks of 8 MiB) ran 1.05-1.15x faster than tasks of 256 x 512
    whose C blocks stay in L2 (benchmarks/RESULTS.md, "bf16 on AMX: tasks of all rows, each packing its own slices
    of B")."""
    a_band = f"ar + am + tk + {int(math.log2(op.elem_bytes[0]))}"
    b_slice = op.footprint_exponent(1, {"n": "tn", "k": "tk"})
    return (("l1", f"{a_band} <= {math.floor(math.log2(target.l1d_bytes / 2))}"),
            ("l2", f"{b_slice} <= {math.floor(math.log2(target.l2_bytes / 4))}"))


def amx_efficiency(values: KnobValues) -> np.ndarray:
    """The share of AMX's peak that tiles of ``values`` (AR rows, AB bytes per row, AM x AN C tiles) reach: a
    tdpbf16ps takes as long on a smaller tile, so a tile of AR rows x AB bytes does AR/16 x AB/64 of a full one's
    work; and each tile of K loads AM A tiles and AN B tiles for AM x AN products, half a product's time each
    where they come from L2 (1/2 for 1 x 1 C tiles, 2/3 for 2 x 2)."""
    shape = values["AR"] / TILE_ROWS * (values["AB"] / TILE_ROW_BYTES)
    products = values["AM"] * values["AN"]
    return shape * products / (products + (values["AM"] + values["AN"]) / 2)


def whole_rows_in_place(op: Contraction, target: HostTarget) -> str:
    """The direct kernel's tasks of one row panel (TM = RM) cover M where B's (padded) bytes exceed half of L1,
    unless a micro-tile covers B's rows (RN >= N). Such a task reads B in place, RN columns of each row at a time,
    and where M takes several row blocks, each of them reads all of B so: on a Zen 4, 16-row products in two
    blocks of 8 rows ran 1.5-3x slower than in one block of 16 rows with B of 1 MiB or more, where the cost put
    them within 40% (benchmarks/RESULTS.md, "Rows of A in one L1 set, measured": one-panel tasks over a split M),
    and 1.1-2.2x slower from 32 KiB to 256 KiB, where the cost put them within 2% ("Tasks of eight rows over a
    small B"). Within half of L1 they ran slower too, by 1-10 microseconds, but there the rule moves which form
    exploration picks for one spelling of a tiny RMSNorm (32 x 64 x 40) and not for the others (test_spellings
    holds them to one program), so it starts above it. A block of 3 * 2**tm rows counts as covering M where it
    covers 2**LM, so a few that would are left out; TM = 2**LM covers them alike."""
    m, n, k = SHAPE_PARAMS["m"], SHAPE_PARAMS["n"], SHAPE_PARAMS["k"]
    covers = f"((t3 = 0 and tm >= {m}) or (t3 = 1 and tm + 1 >= {m}))"
    small_b = f"{k} + {n} <= {math.floor(math.log2(target.l1d_bytes / 2 / op.elem_bytes[1]))}"
    return f"(tm > rm or t3 < m3 or {covers} or rn >= {n} or {small_b})"


def gemm_space(op: Contraction, target: HostTarget) -> Space:
    """Cache tiles (TM, TN, TK) and register block (RM, RN) for the host CPU.

    RM is a power of two, or three times one (``m3 = 1``): a 6-row block
    fills AVX2's sixteen registers with 12 accumulators, which keeps more
    FMAs in flight than 4 rows (8 accumulators, just the FMA latency times
    two units). TM may then be three times a power of two as well
    (``t3 = 1``), so that a block holds whole micro-tiles; a power of two
    keeps a problem of that many rows in one block: one block whose last
    micro-tile repeats a few rows beats two row blocks
    (benchmarks/RESULTS.md, "Host code against every baseline", fourth
    pass: the register block).
    """
    lanes_log2 = int(math.log2(target.vector_bits // (8 * op.acc_bytes)))
    # The direct kernel takes any register block and short K slices (decode
    # streams B best in slices of a few rows); the transform path needs
    # RM >= 2 (it folds unit dimensions of the micro-kernel, and a single-row
    # block would degenerate into a matrix-vector product).
    # A one-row block streams whole rows of its task's columns (only a row of C stays in L1), so its tasks
    # may be as wide as N's share of one core.
    # A one-row block serves a single row of C alone: over several rows it reloads B's group for every row,
    # where a block of RM rows loads it once for all of them (16 rows ran 1.8-2.3x slower on one-row blocks
    # than on 8 x 32 blocks: benchmarks/RESULTS.md, "A 2-core Intel Xeon with AMX").
    rm_min, tk_min = (0, 3) if direct_kernel(op) else (1, 4)
    amx = amx_product(op, target)  # the tiles of prism.codegen.cpu.kernel_amx
    tm_max = AMX_TM_MAX if amx else TM_MAX
    one_row = f"(rm >= 1 or m3 = 1 or {SHAPE_PARAMS['m']} = 0)"
    tn_max = "(tn <= 10 or (rm = 0 and m3 = 0 and tn <= 12))" if direct_kernel(op) else "tn <= 10"
    # RM <= TM: 3 * 2**rm <= 2**tm exactly when rm + 2 <= tm.
    universe = (f"{shape_param_bounds()} and {rm_min} <= rm <= 4 and 0 <= t3 <= m3 <= 1 and rm + 2 * m3 <= 4"
                f" and {lanes_log2} <= rn <= {lanes_log2 + 2} and rm + 2 * (m3 - t3) <= tm <= {tm_max}"
                f" and rn <= tn and {tn_max} and {tk_min} <= tk <= 10 and {one_row}")
    if direct_kernel(op):
        universe = f"{universe} and {whole_rows_in_place(op, target)}"
    footprint = op.footprint_exponent
    reg_tiles = {"m": "rm", "n": "rn", "k": "tk"}
    cache_tiles = {"m": "tm", "n": "tn", "k": "tk"}

    def by_factor(factor: str, constraint) -> str:
        """``constraint(scale)`` with the scale that the 0/1 variable ``factor`` gives: 1, or 3 when set."""
        return f"(({factor} = 0 and {constraint(1)}) or ({factor} = 1 and {constraint(3)}))"

    def l1_panels(f: int) -> str:
        """The micro-tile's A and B panels (RM x TK and TK x RN) within L1, RM scaled by ``f``."""
        return pow2_sum_le(footprint(0, reg_tiles), footprint(1, reg_tiles), target.l1d_bytes, scale_a=f)

    # Accumulators (RM x RN/lanes vectors) plus one row of B and one broadcast
    # register must fit the vector register file.
    acc = f"rm + rn - {lanes_log2}"
    b_row = f"rn - {lanes_log2}"
    c_block = op.output_footprint_exponent(cache_tiles)
    groups = (
        ("registers", by_factor("m3", lambda f: pow2_sum_le(acc, b_row, target.vector_registers - 1, scale_a=f))),
        # The loop order decides what each level must hold (see
        # prism.codegen.cpu): a B panel (TK x RN) is reused by every RM-high
        # row panel of the block, so it stays in L1 beside the A panel
        # streaming through; where the direct kernel runs a product of many
        # rows (:func:`streams_panels`), L1 may instead hold only the
        # micro-tile's rows of A (RM x TK), while the task's B slice (TK x TN,
        # its panels) keeps to a quarter of L2. The A slice (TM x TK) is reused
        # by every column panel and the C block (TM x TN) by every K slice, so
        # both must stay in L2, of which half is left to the B stream.
        ("l1", by_factor("m3", lambda f: l1_panels(f) if not streams_panels(op) else f"({l1_panels(f)} or "
                         f"({footprint(0, reg_tiles)} <= {math.floor(math.log2(target.l1d_bytes / f))} and "
                         f"{footprint(1, cache_tiles)} <= {math.floor(math.log2(target.l2_bytes / 4))}))")),
        ("l2", by_factor("t3", lambda f: pow2_sum_le(footprint(0, cache_tiles), c_block, target.l2_bytes / 2 / f))),
        # 3 * 2**tm <= 2**LM exactly when tm + 2 <= LM.
        ("shape", " and ".join([shape_fit("tm", "m", 1, scale_log2="2 * t3"), shape_fit("tn", "n", lanes_log2),
                                shape_fit("tk", "k", 4)])),
    )
    if pipelines_few_rows(op, target):
        groups = (*groups, ("pipelined copy", pipelined_slice_constraint(op, target)))
    knobs = {"tm": "TM", "tn": "TN", "tk": "TK", "rm": "RM", "rn": "RN"}
    if amx:
        knobs |= _AMX_KNOBS
        universe = f"{universe} and {_AMX_BOX}"
        named = dict(groups)
        groups = (("registers", named["registers"]), *amx_cache_groups(op, target), ("shape", named["shape"]),
                  ("amx tiles", amx_tiles_constraint()))
    return Space(kind="gemm", knobs=knobs, flags={}, universe=universe, groups=groups,
                 factors={"m3": (3, ("rm",)), "t3": (3, ("tm",))})
