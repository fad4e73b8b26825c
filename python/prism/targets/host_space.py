"""The host's GEMM schedule space: cache tiles (TM, TN, TK) and register block (RM, RN), derived from the
machine's vector registers and caches (for attention, see :mod:`.host_attention`)."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from prism.kernels import host_gemm
from prism.search.space import Contraction, Space, pow2_sum_le, shape_fit, shape_param_bounds

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
    rm_min, tk_min = (0, 3) if direct_kernel(op) else (1, 4)
    tn_max = "(tn <= 10 or (rm = 0 and m3 = 0 and tn <= 12))" if direct_kernel(op) else "tn <= 10"
    # RM <= TM: 3 * 2**rm <= 2**tm exactly when rm + 2 <= tm.
    universe = (f"{shape_param_bounds()} and {rm_min} <= rm <= 4 and 0 <= t3 <= m3 <= 1 and rm + 2 * m3 <= 4"
                f" and {lanes_log2} <= rn <= {lanes_log2 + 2} and rm + 2 * (m3 - t3) <= tm <= 9"
                f" and rn <= tn and {tn_max} and {tk_min} <= tk <= 10")
    footprint = op.footprint_exponent
    reg_tiles = {"m": "rm", "n": "rn", "k": "tk"}
    cache_tiles = {"m": "tm", "n": "tn", "k": "tk"}

    def by_factor(factor: str, constraint) -> str:
        """``constraint(scale)`` with the scale that the 0/1 variable ``factor`` gives: 1, or 3 when set."""
        return f"(({factor} = 0 and {constraint(1)}) or ({factor} = 1 and {constraint(3)}))"

    # Accumulators (RM x RN/lanes vectors) plus one row of B and one broadcast
    # register must fit the vector register file.
    acc = f"rm + rn - {lanes_log2}"
    b_row = f"rn - {lanes_log2}"
    c_block = op.output_footprint_exponent(cache_tiles)
    groups = (
        ("registers", by_factor("m3", lambda f: pow2_sum_le(acc, b_row, target.vector_registers - 1, scale_a=f))),
        # The loop order decides what each level must hold (see
        # prism.codegen.cpu): a B panel (TK x RN) is reused by every RM-high
        # row panel of the block, so it must stay in L1 beside the A panel
        # streaming through; the A slice (TM x TK) is reused by every column
        # panel and the C block (TM x TN) by every K slice, so both must stay
        # in L2, of which half is left to the B stream.
        ("l1", by_factor("m3", lambda f: pow2_sum_le(footprint(0, reg_tiles), footprint(1, reg_tiles),
                                                     target.l1d_bytes, scale_a=f))),
        ("l2", by_factor("t3", lambda f: pow2_sum_le(footprint(0, cache_tiles), c_block, target.l2_bytes / 2 / f))),
        # 3 * 2**tm <= 2**LM exactly when tm + 2 <= LM.
        ("shape", " and ".join([shape_fit("tm", "m", 1, scale_log2="2 * t3"), shape_fit("tn", "n", lanes_log2),
                                shape_fit("tk", "k", 4)])),
    )
    return Space(kind="gemm", knobs={"tm": "TM", "tn": "TN", "tk": "TK", "rm": "RM", "rn": "RN"},
                 flags={}, universe=universe, groups=groups, factors={"m3": (3, ("rm",)), "t3": (3, ("tm",))})
