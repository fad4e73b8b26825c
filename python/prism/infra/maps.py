"""Reading Linalg's indexing maps."""

from __future__ import annotations

from mlir import ir


def map_dims(affine_map: ir.AffineMap) -> list[int] | None:
    """Loop dimension read by each result of a projected-permutation map."""
    dims = []
    for expr in affine_map.results:
        if not isinstance(expr, ir.AffineDimExpr):
            return None
        dims.append(expr.position)
    return dims
