"""The one converter from MLIR diagnostics to Prism errors, used by parsing, passes and both code generators.

MLIR reports failures as diagnostics (a location, a message, notes). Prism
errors carry the first error's location and message, with every other
diagnostic as a note. Locations inside a transform script that a code
generator built are Prism's own, not the user's: they are replaced by the
payload op the script was working on (MLIR names it in a note), and never
shown.
"""

from __future__ import annotations

from mlir import ir

from prism.infra.errors import PrismError, format_location

# Sources are parsed from memory, where MLIR names the buffer "-"; the caller's file name is shown instead.
PARSER_BUFFER_NAME = "-"
# The location every op of a generated transform script carries (see prism.codegen.transform).
SCRIPT_LOCATION = "prism transform script"
NOTE_LINES = 40  # diagnostics may dump whole kernels; keep the head


def describe_ops(func: ir.Operation, ops) -> list[str]:
    """``@function``, then each op as ``name at file:line:col``: how a report names the ops a kernel runs."""
    return [f"@{ir.StringAttr(func.attributes['sym_name']).value}",
            *(f"{op.name} at {display_location(op.location)}" for op in ops)]


def display_location(location: ir.Location | str, filename: str | None = None) -> str:
    """``file:line:col`` for a file location; the MLIR spelling otherwise.

    ``filename`` replaces MLIR's name for an in-memory buffer.
    """
    text = str(location)
    if text == "loc(unknown)":
        return filename or "<unknown>"
    formatted = format_location(text).removesuffix(":0:0")  # line 0: the whole file (a module's location)
    if filename is not None and formatted.startswith(PARSER_BUFFER_NAME + ":"):
        return filename + formatted[len(PARSER_BUFFER_NAME):]
    return formatted


def _in_script(location: ir.Location) -> bool:
    return SCRIPT_LOCATION in str(location)


def _clip(text: str) -> str:
    lines = text.splitlines()
    return "\n".join(lines[:NOTE_LINES] + (["  ..."] if len(lines) > NOTE_LINES else []))


def diagnostics_from(error: ir.MLIRError, filename: str | None = None) -> list[tuple[str | None, str, list[str]]]:
    """``(location, message, notes)`` of each error diagnostic; the location of a script op becomes its payload's."""
    found = []
    for diag in error.error_diagnostics:
        payload = [n for n in diag.notes if not _in_script(n.location)]
        location = None if _in_script(diag.location) else display_location(diag.location, filename)
        if location is None and payload:
            location = display_location(payload[0].location, filename)
        notes = [_clip(f"{display_location(n.location, filename)}: note: {n.message}") for n in payload]
        found.append((location, _clip(diag.message), notes))
    return found


def prism_error_from(error: ir.MLIRError, kind: type[PrismError], filename: str | None = None,
                     prefix: str = "") -> PrismError:
    """Convert an MLIRError to a Prism error carrying its first location and all messages."""
    diags = diagnostics_from(error, filename)
    if not diags:
        return kind(prefix + str(error))
    location, message, notes = diags[0]
    for other_location, other_message, other_notes in diags[1:]:
        notes.append(f"{other_location or '<transform script>'}: error: {other_message}")
        notes.extend(other_notes)
    return kind(prefix + message, location=location, notes=notes)
