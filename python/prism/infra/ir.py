"""MLIR plumbing shared by the driver, the API and the passes.

One place creates contexts (with the sGraph dialect loaded exactly once),
parses sources with diagnostics that point at the user's file, walks IR,
and knows the element types Prism computes in.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from mlir import ir, passmanager
from mlir.dialects.transform import interpreter

from prism.dialects import load_prism_dialect
from prism.infra.collapse import collapse_loops
from prism.infra.diagnostics import NOTE_LINES, SCRIPT_LOCATION, prism_error_from
from prism.infra.errors import ParseError, PassFailed, PrismError


def make_context() -> ir.Context:
    """A fresh MLIR context with every upstream dialect and the sGraph dialect."""
    context = ir.Context()
    context.load_all_available_dialects()
    load_prism_dialect(context)
    return context


def read_text(data: bytes, name: str) -> str:
    """``data`` decoded as UTF-8, the encoding of MLIR sources; ParseError naming ``name`` if it is not."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as error:
        raise ParseError(f"not UTF-8 text: byte 0x{data[error.start]:02x} at offset {error.start} "
                         "(MLIR sources are UTF-8)",
                         location=name) from None


def read_source_file(path: str | Path) -> str:
    """The text of the MLIR file at ``path``; PrismError if it cannot be read or is not UTF-8."""
    try:
        data = Path(path).read_bytes()
    except OSError as error:
        raise PrismError(f"cannot read input file '{path}': {error.strerror}", location=str(path)) from None
    return read_text(data, str(path))


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


def parse_chunk(chunk: SourceChunk, context: ir.Context) -> ir.Module:
    """Parse and verify one chunk; its ops are located in ``chunk.filename``, at the lines of the whole file."""
    # Leading newlines keep MLIR's line numbers aligned with the whole file.
    padded = "\n" * chunk.first_line + chunk.text
    try:
        with context:
            module = ir.Module.parse(padded)
    except ir.MLIRError as error:
        raise prism_error_from(error, ParseError, chunk.filename) from None
    _name_buffer(module, chunk.filename)
    return module


_BUFFER_LOCATION = re.compile(r'loc\("-":(\d+):(\d+)\)')


def _name_buffer(module: ir.Module, filename: str) -> None:
    """Locate every op parsed from MLIR's in-memory buffer (named ``-``) in ``filename`` instead.

    The bindings parse text without a source name; without this, every error
    and remark after parsing would point at ``-``.
    """
    with module.context:
        for op in iter_ops(module):
            match = _BUFFER_LOCATION.fullmatch(str(op.location))
            if match:
                op.location = ir.Location.file(filename, int(match.group(1)), int(match.group(2)))


def iter_ops(module: ir.Module) -> Iterator[ir.Operation]:
    """Every op nested in ``module``, in pre-order: the ops there were when it began (MLIR's own walk, about
    five times faster than visiting regions and blocks from Python). A caller may change ops' attributes and
    locations as it goes; one that erases or moves ops walks again."""
    found: list[ir.Operation] = []

    def take(op: ir.Operation) -> ir.WalkResult:
        found.append(op)
        return ir.WalkResult.ADVANCE

    module.operation.walk(take, ir.WalkOrder.PRE_ORDER)
    return iter(found)


# Elementwise ops on whole tensors as linalg.generic ops of their scalar op (upstream's rewrite).
_ELEMENTWISE_TO_LINALG = "builtin.module(func.func(convert-elementwise-to-linalg))"


def _tensor_elementwise(op: ir.Operation) -> bool:
    """``op`` is an arith or math op (not a constant) on ranked tensors."""
    return op.name.split(".")[0] in ("arith", "math") and op.name != "arith.constant" and any(
        isinstance(v.type, ir.RankedTensorType) for v in [*op.operands, *op.results])


def normalize_elementwise(module: ir.Module) -> None:
    """Rewrite, in place, every elementwise ``arith`` and ``math`` op on whole tensors (``arith.addf %a, %b :
    tensor<8x64xf32>``, ``math.erf`` on a tensor) as the ``linalg.generic`` that applies it to each element.

    Every Prism pass and code generator reads Linalg: the algebra translates
    generics, and bufferization has no rule for these ops. A module without
    such ops is left untouched, so the call is cheap and may be repeated.
    """
    if not any(_tensor_elementwise(op) for op in iter_ops(module)):
        return
    try:
        passmanager.PassManager.parse(_ELEMENTWISE_TO_LINALG, context=module.context).run(module.operation)
    except ir.MLIRError as error:
        raise prism_error_from(error, PassFailed, prefix="conversion of tensor arith and math ops to linalg "
                                                         "failed: ") from None


# Ops that stand for several others (linalg's AggregatedOpInterface), rewritten as what they stand for.
AGGREGATE_OPS = frozenset({"linalg.softmax"})
# Named Linalg ops that are not contractions, rewritten as the linalg.generic they stand for. Contractions
# (linalg.matmul, linalg.batch_matmul, linalg.contract, ...) stay named: the search reads their roles.
GENERALIZED_OPS = frozenset({
    "linalg.reduce", "linalg.broadcast", "linalg.transpose", "linalg.map", "linalg.elementwise", "linalg.copy",
    "linalg.add", "linalg.sub", "linalg.mul", "linalg.div", "linalg.div_unsigned", "linalg.max", "linalg.min",
    "linalg.exp", "linalg.log", "linalg.abs", "linalg.ceil", "linalg.floor", "linalg.negf", "linalg.reciprocal",
    "linalg.round", "linalg.sqrt", "linalg.rsqrt", "linalg.square", "linalg.tanh", "linalg.erf", "linalg.powf",
    "linalg.select",
})
_ANY = "!transform.any_op"
_SCRIPT_LOC = f'loc("{SCRIPT_LOCATION}")'


def _normalization_script(decompose: list[str], generalize: list[str]) -> str:
    """The transform script that decomposes the ops named ``decompose``, then generalizes those named
    ``generalize`` (each list may be empty)."""
    lines = []
    for index, (names, transform) in enumerate([(decompose, "decompose_interface"), (generalize, "generalize")]):
        if names:
            quoted = ", ".join(f'"{name}"' for name in names)
            lines += [f"%m{index} = transform.structured.match ops{{[{quoted}]}} in %root : ({_ANY}) -> {_ANY}",
                      f"%r{index} = transform.structured.{transform} %m{index} : ({_ANY}) -> {_ANY}"]
    body = "\n".join(f"    {line} {_SCRIPT_LOC}" for line in [*lines, "transform.yield"])
    return ("module attributes {transform.with_named_sequence} {\n"
            f"  transform.named_sequence @__transform_main(%root: {_ANY} {{transform.readonly}}) {{\n"
            f"{body}\n  }} {_SCRIPT_LOC}\n}}\n")


def _decomposable(op: ir.Operation) -> bool:
    """``op`` is an aggregate op on ranked float tensors, which upstream's decomposition handles."""
    return all(isinstance(v.type, ir.RankedTensorType) and isinstance(ir.ShapedType(v.type).element_type,
                                                                        ir.FloatType)
               for v in [*op.operands, *op.results])


def _block_ops(module: ir.Module) -> list[list[ir.Operation]]:
    """The ops of each function's body, by function."""
    return [[op.operation for op in func.regions[0].blocks[0].operations] for func in module.body.operations
            if func.operation.name == "func.func" and len(func.operation.regions[0].blocks)]


# The script's own location in the interpreter's diagnostics (_SCRIPT_LOC as written, and its prefixes).
_SCRIPT_LOC_IN_DIAGNOSTICS = re.compile(rf'(Diagnostic message at )?loc\("{re.escape(SCRIPT_LOCATION)}"\)(: )?')


def apply_script(module: ir.Module, text: str, stage: str) -> None:
    """Apply the transform script ``text`` (its ``@__transform_main``) to ``module``; a failure is a PassFailed
    naming ``stage``, with the interpreter's diagnostics as notes."""
    script = ir.Module.parse(text, context=module.context)
    try:
        interpreter.apply_named_sequence(module.operation, script.body.operations[0], script)
    except ir.MLIRError as error:
        raise prism_error_from(error, PassFailed, prefix=f"{stage} failed: ") from None
    except ValueError as error:
        lines = _interpreter_lines(str(error))
        raise PassFailed(f"{stage} failed: {lines[-1] if lines else 'no diagnostic'}", notes=lines[:-1]) from None


def _interpreter_lines(text: str) -> list[str]:
    """The interpreter's diagnostics, the script's own locations and its generic first line removed."""
    lines = [line for line in _SCRIPT_LOC_IN_DIAGNOSTICS.sub("", text).strip().splitlines()
             if line.strip() and line.strip() != "Failed to apply named transform sequence."]
    return lines[:NOTE_LINES] + (["  ..."] if len(lines) > NOTE_LINES else [])


def generalize_named(module: ir.Module, names: list[str], decompose: list[str] | None = None) -> None:
    """Rewrite every op named in ``names`` as its ``linalg.generic`` (after decomposing the aggregate ops
    named in ``decompose``), keeping their ``prism.*`` attributes.

    Generalization drops an op's discardable attributes; a named op and its
    generic hold the same position in their function's body, so they are put
    back by position (decomposition, which changes positions, runs first).
    """
    if decompose:
        apply_script(module, _normalization_script(decompose, []), "decomposition of aggregate ops")
    if not names:
        return
    kept = {(f, i): [(name, op.attributes[name]) for name in op.attributes if name.startswith("prism.")]
            for f, ops in enumerate(_block_ops(module)) for i, op in enumerate(ops) if op.name in names}
    apply_script(module, _normalization_script([], names), "generalization of named ops")
    ops = _block_ops(module)
    for (f, i), attributes in kept.items():
        for name, value in attributes:
            ops[f][i].attributes[name] = value


def normalize_program(module: ir.Module) -> None:
    """Rewrite ``module`` in place, deterministically, into the one spelling that Prism's passes, its algebra
    and its kernels read:

    - elementwise ``arith``/``math`` ops on whole tensors as generics (:func:`normalize_elementwise`);
    - aggregate ops (``linalg.softmax``) as their parts: a row max, the exp of the difference, a row sum and a
      division;
    - named Linalg ops that are not contractions (GENERALIZED_OPS: ``linalg.reduce``, ``linalg.broadcast``,
      ``linalg.transpose``, ``linalg.map``, ``linalg.elementwise``, ``linalg.add``, ``linalg.exp``,
      ``linalg.copy``, ...) as ``linalg.generic`` ops;
    - a contraction whose M, N or K runs over several loops over collapsed operands, with one loop per role,
      and the generics that read its result (or make its operands) over the same loops collapsed with it
      (:func:`~prism.infra.collapse.collapse_loops`).

    Other ops, and aggregate ops on other than ranked float tensors, are left as they are. A module already in
    this form is left untouched, so the call is cheap and may be repeated.
    """
    normalize_elementwise(module)
    found = list(iter_ops(module))
    aggregates = [op for op in found if op.name in AGGREGATE_OPS]
    decompose = sorted({op.name for op in aggregates}) if all(_decomposable(op) for op in aggregates) else []
    generalize_named(module, sorted({op.name for op in found} & GENERALIZED_OPS), decompose)
    collapse_loops(module)


def check_ir(module: ir.Module, after: str) -> None:
    """Verify ``module``; a failure is a pass bug, reported as such."""
    try:
        module.operation.verify()
    except ir.MLIRError as error:
        raise prism_error_from(error, PassFailed, prefix=f"IR invalid after {after}: ") from None


# Bytes per element of the floating-point types Prism computes in.
ELEMENT_BYTES = {"f64": 8, "f32": 4, "f16": 2, "bf16": 2}


def element_name(type_: ir.Type) -> str | None:
    """``f32``/``f16``/``bf16``/``f64`` for a tensor's (or a scalar's) element type, else None."""
    element = type_.element_type if isinstance(type_, ir.ShapedType) else type_
    name = str(element)
    return name if name in ELEMENT_BYTES else None


_FUNC_HEADER = re.compile(r"func\.func\s+(?:(?:public|private|nested)\s+)?@([\w$.-]+)\s*\(")
_ARG_NAME = re.compile(r"\s*%([\w$.-]+)\s*:")


def argument_names(text: str) -> dict[str, list[str]]:
    """Each function's argument names as the source spells them (``%w`` is ``w``), by function name.

    MLIR does not keep SSA names, so they are read from the text; an argument
    without a readable name is called ``argN``.
    """
    names: dict[str, list[str]] = {}
    for match in _FUNC_HEADER.finditer(text):
        depth, start, parts, i = 1, match.end(), [], match.end()
        while i < len(text) and depth:
            c = text[i]
            if c in "(<{[":
                depth += 1
            elif c in ")}]" or (c == ">" and text[i - 1] != "-"):
                depth -= 1
            elif c == "," and depth == 1:
                parts.append(text[start:i])
                start = i + 1
            i += 1
        parts.append(text[start:i - 1])
        found = [_ARG_NAME.match(part) for part in parts if part.strip()]
        names[match.group(1)] = [m.group(1) if m else f"arg{k}" for k, m in enumerate(found)]
    return names


def filled_constant(value: ir.Value) -> float | None:
    """The f32 constant that a ``linalg.fill`` fills ``value`` with, or None."""
    if isinstance(value.owner, ir.Block) or value.owner.operation.name != "linalg.fill":
        return None
    scalar = value.owner.operation.operands[0]
    if isinstance(scalar.owner, ir.Block) or scalar.owner.operation.name != "arith.constant":
        return None
    attr = scalar.owner.operation.attributes["value"]
    return ir.FloatAttr(attr).value if isinstance(attr, ir.FloatAttr) else None


def defined_functions(module: ir.Module) -> list[ir.Operation]:
    """The ``func.func`` ops at the top of ``module`` that have a body (not declarations), in order."""
    return [op.operation for op in module.body.operations
            if op.operation.name == "func.func" and len(op.operation.regions[0].blocks) > 0]


def symbol_names(module: ir.Module) -> set[str]:
    """The names of the symbols defined at the top of ``module``."""
    return {ir.StringAttr(op.operation.attributes["sym_name"]).value for op in module.body.operations
            if "sym_name" in op.operation.attributes}


def fresh_symbol(taken: set[str], base: str, suffixes: tuple[str, ...] = ("",)) -> str:
    """``base``, or ``base_N`` for the smallest N, such that no name ``+ suffix`` is in ``taken``.

    A generated function gets its name from here, so that no symbol of the
    user's program ever clashes with one Prism writes.
    """
    name, count = base, 0
    while any(name + suffix in taken for suffix in suffixes):
        count += 1
        name = f"{base}_{count}"
    return name


def relocate(op: ir.Operation, location: ir.Location) -> None:
    """Give ``op`` and every op nested in it ``location``.

    Text that Prism generates and parses is located in the parser's buffer
    (``"-"``), which no user can read: its ops take the location of the
    user's op they implement instead, so that every diagnostic points there.
    """
    def visit(inner: ir.Operation) -> ir.WalkResult:
        inner.location = location
        return ir.WalkResult.ADVANCE

    op.walk(visit)
