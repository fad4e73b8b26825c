"""The limits of e-graph work (proofs, exploration): light to import, so that a pipeline that neither explores
nor proves never loads egglog."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Budget:
    """Limits of one proof attempt."""

    seconds: float = 5.0
    max_nodes: int = 100_000
    iterations: int = 40
    match_limit: int = 2_000  # per rule and iteration, before the back-off scheduler bans it


# Exploration needs a few rounds of the laws, not saturation: a fused product of three operands
# appears in the third.
EXPLORATION = Budget(seconds=30.0, max_nodes=20_000, iterations=6, match_limit=200)
