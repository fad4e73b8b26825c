"""``prism-opt``: Prism's mlir-opt-style driver.

Reads MLIR (a file or ``-`` for stdin), runs a pass pipeline that mixes Prism
passes with upstream MLIR passes, and writes MLIR, PTX, the LLVM-dialect
module or a JSON report. User errors print ``file:line:col: error: ...`` and
exit with status 1; ``--debug`` adds the Python traceback.
"""

from __future__ import annotations

import argparse
import dataclasses
import sys
import traceback
from pathlib import Path

from mlir import ir

from prism.driver import EMIT_KINDS, Compilation, stages_for
from prism.errors import PrismError
from prism.ir import SourceChunk, make_context, parse_chunk, split_input
from prism.passes import PASSES, PIPELINES, VerifyPass
from prism.pipeline import Stage
from prism.summary import funnel_table
from prism.targets import TARGET_NAMES

SPLIT_MARKER = "// -----\n"


def _epilog() -> str:
    lines = ["Prism passes (options in braces):"]
    for name, cls in sorted(PASSES.items()):
        options = " ".join(f"{f.name}=<{f.type}>" for f in dataclasses.fields(cls))
        lines.append(f"  {name:<20} {cls.SUMMARY}")
        if options:
            lines.append(f"  {'':<20} {{{options}}}")
    lines += ["", "Named pipelines:"]
    lines += [f"  {name:<20} {summary}: {','.join(c.NAME for c in passes)}"
              for name, (summary, passes) in sorted(PIPELINES.items())]
    lines += ["", "Pass options go in braces: -p 'prism-lift,canonicalize,prism-prune{target=h200}'.",
              "Any upstream MLIR pass may appear in the pipeline.",
              "Without -p: --emit=mlir runs no pass; other --emit kinds run prism-optimize."]
    return "\n".join(lines)


def build_parser() -> argparse.ArgumentParser:
    """The command-line interface."""
    parser = argparse.ArgumentParser(
        prog="prism-opt", description="Optimize MLIR tensor programs with Prism.",
        epilog=_epilog(), formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("input", nargs="?", default="-", help="input .mlir file, or - for stdin (default)")
    parser.add_argument("-o", dest="output", default="-", help="output file (default: stdout)")
    parser.add_argument("-p", "--pass-pipeline", dest="pipeline", default=None,
                        help="comma-separated passes, e.g. 'prism-lift,canonicalize'")
    parser.add_argument("--split-input-file", action="store_true",
                        help="process each '// -----' separated chunk on its own")
    parser.add_argument("--target", default="host", choices=TARGET_NAMES,
                        help="machine to optimize for (default: host)")
    parser.add_argument("--emit", default="mlir", choices=EMIT_KINDS, help="what to write (default: mlir)")
    parser.add_argument("--verify-against", metavar="ORIGINAL", default=None,
                        help="after the pipeline, prove every function equal to the one of the same name in "
                             "ORIGINAL (prism-verify{against=ORIGINAL}); exit 1 with a counterexample if not")
    parser.add_argument("-v", "--verbose", action="store_true",
                        help="print search progress and each family's funnel table on stderr")
    parser.add_argument("--debug", action="store_true", help="show Python tracebacks on errors")
    return parser


def _rename_buffer(location: str | None, filename: str) -> str:
    """``file:line:col`` for ``location``, naming MLIR's in-memory buffer ``-`` after the user's file."""
    if not location:
        return filename
    return filename + location[1:] if location.startswith("-:") else location


def _print_error(error: PrismError, filename: str) -> None:
    print(f"{_rename_buffer(error.location, filename)}: error: {error.message}", file=sys.stderr)
    for note in error.notes:
        print(_rename_buffer(note, filename), file=sys.stderr)


def _read_input(path: str) -> tuple[str, str]:
    if path == "-":
        return sys.stdin.read(), "<stdin>"
    try:
        return Path(path).read_text(), path
    except (OSError, UnicodeDecodeError) as error:
        reason = getattr(error, "strerror", None) or str(error)
        raise PrismError(f"cannot read input file '{path}': {reason}", location=path) from None


def _write_output(path: str, text: str) -> None:
    if path == "-":
        sys.stdout.write(text)
        return
    try:
        Path(path).write_text(text)
    except OSError as error:
        raise PrismError(f"cannot write output file '{path}': {error.strerror}", location=path) from None


def _compile_chunk(chunk: SourceChunk, context: ir.Context, stages: list[Stage],
                   args: argparse.Namespace) -> str:
    """Compile one chunk and return its output; remarks go to stderr either way."""
    compilation = Compilation(parse_chunk(chunk, context), args.target)
    compilation.ctx.verbose = args.verbose
    try:
        compilation.run(stages)
        output = compilation.emit(args.emit)
        if args.verbose:
            print("\n".join(funnel_table(compilation.ctx.report)), file=sys.stderr)
        return output
    finally:
        for location, message in compilation.ctx.remarks:
            print(f"{_rename_buffer(location, chunk.filename)}: remark: {message}", file=sys.stderr)


def run(args: argparse.Namespace) -> int:
    """Compile every chunk of the input; return the exit status.

    As with mlir-opt, a failing chunk does not stop the others: every error
    is reported, and the exit status is 1 if any chunk failed.
    """
    text, filename = _read_input(args.input)
    stages = stages_for(args.pipeline, args.emit)
    if args.verify_against:
        stages.append(VerifyPass(against=args.verify_against))
    context = make_context()
    outputs, failed = [], False
    for chunk in split_input(text, filename, args.split_input_file):
        try:
            outputs.append(_compile_chunk(chunk, context, stages, args))
        except PrismError as error:
            if args.debug:
                traceback.print_exc()
            _print_error(error, filename)
            failed = True
    if failed:
        return 1
    _write_output(args.output, SPLIT_MARKER.join(o if o.endswith("\n") else o + "\n" for o in outputs))
    return 0


def main(argv: list[str] | None = None) -> int:
    """Entry point of ``prism-opt``."""
    parser = build_parser()
    try:
        args = parser.parse_args(argv)
    except SystemExit as exit_:
        # argparse exits 2 on usage errors; Prism reports every user error with 1.
        return 0 if exit_.code == 0 else 1
    filename = "<stdin>" if args.input == "-" else args.input
    try:
        return run(args)
    except PrismError as error:
        if args.debug:
            traceback.print_exc()
        _print_error(error, filename)
        return 1
    except Exception as error:  # a bug in Prism, not a user error: say so, keep it short
        if args.debug:
            traceback.print_exc()
        print(f"prism-opt: internal error: {type(error).__name__}: {error} (rerun with --debug for the "
              "traceback, and please report it)", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        print("prism-opt: interrupted", file=sys.stderr)
        return 130


if __name__ == "__main__":
    sys.exit(main())
