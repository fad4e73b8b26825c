"""The one builder of transform-dialect scripts, shared by the code generators.

A script is the text of one ``@__transform_main`` named sequence. Payload ops
are found by tag attributes that the planner puts on them, never by handles
held across transforms (which MLIR invalidates).
"""

from __future__ import annotations

from prism.codegen.text import TextBuilder
from prism.infra.diagnostics import SCRIPT_LOCATION

ANY = "!transform.any_op"
_LOC = f'loc("{SCRIPT_LOCATION}")'


def sequence(body: list[str]) -> str:
    """A module holding ``@__transform_main`` with ``body`` (one transform op per line).

    Every op is located at SCRIPT_LOCATION, so that a diagnostic from the
    script is recognized as Prism's own and reported at the payload op instead.
    """
    t = TextBuilder()
    with t.region("module attributes {transform.with_named_sequence}"), \
            t.region(f"transform.named_sequence @__transform_main(%root: {ANY} {{transform.readonly}})", f" {_LOC}"):
        for line in [*body, "transform.yield"]:
            t.add(f"{line} {_LOC}")
    return t.text() + "\n"


def mapping(kind: str, rank: int) -> str:
    """GPU mapping attributes for ``rank`` forall dimensions of ``kind`` (block, warp, thread), the last fastest."""
    return ", ".join(f"#gpu.{kind}<linear_dim_{rank - 1 - d}>" for d in range(rank))


class Script:
    """A transform script under construction; every method appends ops and returns the handles they define."""

    def __init__(self) -> None:
        self.lines: list[str] = []
        self._count = 0

    def fresh(self) -> str:
        """A new handle name."""
        self._count += 1
        return f"%h{self._count}"

    def add(self, line: str) -> None:
        """Append one transform op, written out."""
        self.lines.append(line)

    def match_tag(self, attr: str, tag: int, within: str = "%root") -> str:
        """The payload ops whose ``attr`` is the i64 ``tag``."""
        handle = self.fresh()
        self.add(f"{handle} = transform.structured.match attributes {{{attr} = {tag} : i64}} in {within} "
                 f": ({ANY}) -> {ANY}")
        return handle

    def match_ops(self, names: list[str], within: str = "%root") -> str:
        """The payload ops named ``names`` nested in ``within``."""
        handle = self.fresh()
        quoted = ", ".join(f'"{name}"' for name in names)
        self.add(f"{handle} = transform.structured.match ops{{[{quoted}]}} in {within} : ({ANY}) -> {ANY}")
        return handle

    def tile_for(self, op: str, sizes: list[int], interchange: list[int] | None = None) -> tuple[str, list[str]]:
        """Tile with scf.for loops; returns the tiled op and the loops, outermost first."""
        tiled, loops = self.fresh(), [self.fresh() for s in sizes if s]
        extra = f" interchange = {interchange}" if interchange else ""
        types = ", ".join([ANY] * (1 + len(loops)))
        self.add(f"{', '.join([tiled, *loops])} = transform.structured.tile_using_for {op} "
                 f"tile_sizes {sizes}{extra} : ({ANY}) -> ({types})")
        return tiled, loops

    def tile_forall(self, op: str, sizes: list[int], *, threads: bool = False,
                    kind: str | None = None) -> tuple[str, str]:
        """Tile with one scf.forall (``sizes`` as tile sizes, or as thread counts when ``threads``).

        ``kind`` maps the forall to GPU blocks, warps or threads. Returns the tiled op and the forall.
        """
        tiled, loop = self.fresh(), self.fresh()
        how = "num_threads" if threads else "tile_sizes"
        mapped = f" (mapping = [{mapping(kind, sum(1 for s in sizes if s))}])" if kind else ""
        self.add(f"{tiled}, {loop} = transform.structured.tile_using_forall {op} {how} {sizes}{mapped} "
                 f": ({ANY}) -> ({ANY}, {ANY})")
        return tiled, loop

    def generalize(self, op: str) -> str:
        """Rewrite each named Linalg op of ``op`` as the linalg.generic it stands for."""
        handle = self.fresh()
        self.add(f"{handle} = transform.structured.generalize {op} : ({ANY}) -> {ANY}")
        return handle

    def vectorize(self, op: str, vector_sizes: list[int] | None = None, named_contraction: bool = False) -> None:
        """Vectorize ``op`` (masked to ``vector_sizes`` when given)."""
        sizes = f" vector_sizes {vector_sizes}" if vector_sizes else ""
        named = " {create_named_contraction}" if named_contraction else ""
        self.add(f"transform.structured.vectorize {op}{sizes}{named} : {ANY}")

    def apply_patterns(self, target: str, patterns: list[str]) -> None:
        """Apply the named pattern sets to ``target`` greedily."""
        self.add(f"transform.apply_patterns to {target} {{ {' '.join(patterns)} }} : {ANY}")

    def text(self) -> str:
        """The script."""
        return sequence(self.lines)
