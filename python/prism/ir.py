"""MLIR plumbing shared by the driver, the API and the passes.

One place creates contexts (with the sGraph dialect loaded exactly once),
parses sources with diagnostics that point at the user's file, and turns MLIR
errors into Prism errors.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass

from mlir import ir

from prism.dialects import load_prism_dialect
from prism.errors import ParseError, PassFailed, PrismError, format_location

_PARSER_BUFFER_NAME = "-"


def make_context() -> ir.Context:
    """A fresh MLIR context with every upstream dialect and the sGraph dialect."""
    context = ir.Context()
    context.load_all_available_dialects()
    load_prism_dialect(context)
    return context


@dataclass(frozen=True)
class SourceChunk:
    """A piece of input text and where it starts in its file (0-based line)."""

    text: str
    filename: str
    first_line: int = 0


def split_input(text: str, filename: str, split: bool) -> list[SourceChunk]:
    """Split ``text`` on ``// -----`` lines, as mlir-opt's --split-input-file does."""
    if not split:
        return [SourceChunk(text, filename)]
    chunks: list[SourceChunk] = []
    start = 0
    lines = text.splitlines(keepends=True)
    for index, line in enumerate(lines):
        if re.fullmatch(r"\s*// -----\s*", line.rstrip("\n")):
            chunks.append(SourceChunk("".join(lines[start:index]), filename, start))
            start = index + 1
    chunks.append(SourceChunk("".join(lines[start:]), filename, start))
    return chunks


def display_location(location: ir.Location | str, filename: str | None = None) -> str:
    """``file:line:col`` for a file location; the MLIR spelling otherwise.

    Sources are parsed from memory, where MLIR names the buffer ``-``; the
    driver passes the user's file name to show instead.
    """
    text = str(location)
    if text == "loc(unknown)":
        return filename or "<unknown>"
    formatted = format_location(text)
    if filename is not None and formatted.startswith(_PARSER_BUFFER_NAME + ":"):
        return filename + formatted[len(_PARSER_BUFFER_NAME):]
    return formatted


def diagnostics_from(error: ir.MLIRError, filename: str | None = None) -> list[tuple[str, str, list[str]]]:
    """``(location, message, notes)`` triples of an MLIRError's error diagnostics."""
    found = []
    for diag in error.error_diagnostics:
        notes = [f"{display_location(n.location, filename)}: note: {n.message}" for n in diag.notes]
        found.append((display_location(diag.location, filename), diag.message, notes))
    return found


def prism_error_from(error: ir.MLIRError, kind: type[PrismError], filename: str | None = None,
                     prefix: str = "") -> PrismError:
    """Convert an MLIRError to a Prism error carrying its first location and all messages."""
    diags = diagnostics_from(error, filename)
    if not diags:
        return kind(prefix + str(error))
    location, message, notes = diags[0]
    for other_location, other_message, other_notes in diags[1:]:
        notes.append(f"{other_location}: error: {other_message}")
        notes.extend(other_notes)
    return kind(prefix + message, location=location, notes=notes)


def parse_chunk(chunk: SourceChunk, context: ir.Context) -> ir.Module:
    """Parse and verify one chunk; line numbers match the original file."""
    # Leading newlines keep MLIR's line numbers aligned with the whole file.
    padded = "\n" * chunk.first_line + chunk.text
    try:
        with context:
            return ir.Module.parse(padded)
    except ir.MLIRError as error:
        raise prism_error_from(error, ParseError, chunk.filename) from None


def iter_ops(module: ir.Module) -> Iterator[ir.Operation]:
    """Every op nested in ``module``, in pre-order."""
    stack = [module.operation]
    while stack:
        op = stack.pop()
        yield op
        children = [child.operation for region in op.regions for block in region for child in block]
        stack.extend(reversed(children))


def verify(module: ir.Module, after: str) -> None:
    """Verify ``module``; a failure is a pass bug, reported as such."""
    try:
        module.operation.verify()
    except ir.MLIRError as error:
        raise prism_error_from(error, PassFailed, prefix=f"IR invalid after {after}: ") from None
