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
import textwrap
import traceback
from collections.abc import Callable
from pathlib import Path

from mlir import ir

from prism.driver import EMIT_KINDS, Compilation, check_emit, check_targets, steps_for
from prism.infra.errors import PipelineError, PrismError
from prism.infra.ir import SourceChunk, make_context, parse_chunk, read_source_file, read_text, split_input
from prism.infra.passbase import Pass
from prism.infra.pipeline import Step
from prism.passes import PASSES, PIPELINES, VerifyPass
from prism.runtime.pool import PIN_VARIABLE
from prism.summary import funnel_table
from prism.targets import target_names
from prism.targets.host_machine import DESCRIPTION_VARIABLE, DESCRIPTION_VERSION, Machine

SPLIT_MARKER = "// -----\n"


def _epilog() -> str:
    lines = ["Prism passes (options in braces):"]
    for name, cls in sorted(PASSES.items()):
        lines.append(f"  {name:<20} {cls.SUMMARY}")
        lines += [f"  {'':<22}{line}" for line in cls.option_help()]
        if cls.STAGES:
            lines.append(f"  {'':<22}stages: {', '.join(cls.STAGES)}")
    lines += ["", "Named pipelines:"]
    lines += [f"  {name:<20} {summary}: {','.join(c.NAME for c in passes)}"
              for name, (summary, passes) in sorted(PIPELINES.items())]
    lines += ["", "Pass options go in braces: -p 'prism-lift,canonicalize,prism-prune{target=h200}'.",
              "Any upstream MLIR pass may appear in the pipeline.",
              "Without -p: --emit=mlir runs no pass; other --emit kinds run prism-optimize.",
              "--print-ir-after takes a pass name or a code-generator stage (listed under its pass).",
              "",
              "Running the host code from Python (prism.compile(...).jit(name)): arguments are numpy arrays,",
              "ml_dtypes.bfloat16 arrays for bf16 (bf16 results come back as such), or any CPU array that speaks",
              "DLPack (torch tensors, JAX arrays) or the buffer protocol (memoryview, array.array), read in place",
              "without a copy when contiguous. See docs/usage.md, \"What host functions take and return\".",
              "",
              "Environment (the host target):",
              f"  {DESCRIPTION_VARIABLE}  a JSON file describing the machine to compile for instead of this one",
              *textwrap.wrap(f"(version {DESCRIPTION_VERSION}, "
                             f"{', '.join(field.name for field in dataclasses.fields(Machine))})", 96,
                             initial_indent=" " * 26, subsequent_indent=" " * 26),
              "  PRISM_HOST_CONFIG       the calibration file ('python -m prism.calibrate'); empty: none",
              "  PRISM_HOST_GFLOPS, PRISM_HOST_GBPS, PRISM_HOST_FMA_BITS  override the rates and the FMA width",
              f"  {PIN_VARIABLE}       0: leave the thread pool's threads to the scheduler (default: each",
              "                          worker pinned to a CPU of its own, callers moved off them)"]
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
    parser.add_argument("--target", default="host", choices=target_names(),
                        help="machine to optimize for (default: host, this CPU); h200, h100 and a100 lower to "
                             "PTX; mi300x (AMD gfx942) is searched here and compiled by IREE (--emit=iree)")
    parser.add_argument("--emit", default="mlir", choices=EMIT_KINDS,
                        help="what to write (default: mlir); iree: the tuned module with IREE's compilation_info "
                             "on each scheduled contraction, for iree-compile (host: llvm-cpu, products of several "
                             "row blocks packed for its data-tiled pipeline; NVIDIA: cuda, the module naming its "
                             "device; mi300x: rocm); iree-spec: the "
                             "configurations as an IREE tuning spec (--iree-codegen-tuning-spec-path)")
    parser.add_argument("--verify-against", metavar="ORIGINAL", default=None,
                        help="after the pipeline, prove every function equal to the one of the same name in "
                             "ORIGINAL (prism-verify{against=ORIGINAL}); exit 1 with a counterexample if not")
    parser.add_argument("--print-ir-after-all", action="store_true",
                        help="print the IR on stderr after every pass and every code-generator stage")
    parser.add_argument("--print-ir-after", metavar="NAME", action="append", default=[],
                        help="print the IR on stderr after the pass or code-generator stage NAME (repeatable)")
    parser.add_argument("-v", "--verbose", action="store_true",
                        help="print search progress and each family's funnel table on stderr")
    parser.add_argument("--debug", action="store_true", help="show Python tracebacks on errors")
    return parser


def _print_error(error: PrismError, filename: str) -> None:
    print(f"{error.location or filename}: error: {error.message}", file=sys.stderr)
    for note in error.notes:
        print(note, file=sys.stderr)


def _read_input(path: str) -> tuple[str, str]:
    if path == "-":
        return read_text(sys.stdin.buffer.read(), "<stdin>"), "<stdin>"
    return read_source_file(path), path


def _printer(names: list[str], every: bool) -> Callable[[str, ir.Module], None] | None:
    """The observer that prints the IR after the named passes and stages (all of them with ``every``)."""
    if not names and not every:
        return None

    def show(name: str, module: ir.Module) -> None:
        if every or name in names:
            print(f"// -----// IR Dump After {name} //----- //\n{module}", file=sys.stderr, flush=True)
    return show


def _check_print_names(names: list[str], steps: list[Step]) -> None:
    """Refuse a --print-ir-after name that no pass or stage of this run has."""
    known = {step.NAME if isinstance(step, Pass) else step.spelling() for step in steps}
    known |= {stage for cls in PASSES.values() for stage in cls.STAGES}
    for name in names:
        if name not in known and name not in PASSES:
            raise PipelineError(f"--print-ir-after={name}: no pass or code-generator stage of that name; "
                                "see prism-opt --help")


def _write_output(path: str, text: str) -> None:
    if path == "-":
        sys.stdout.write(text)
        return
    try:
        Path(path).write_text(text)
    except OSError as error:
        raise PrismError(f"cannot write output file '{path}': {error.strerror}", location=path) from None


def _compile_chunk(chunk: SourceChunk, context: ir.Context, steps: list[Step],
                   args: argparse.Namespace) -> str:
    """Compile one chunk and return its output; remarks go to stderr either way."""
    compilation = Compilation(parse_chunk(chunk, context), args.target)
    compilation.ctx.verbose = args.verbose
    compilation.ctx.observer = _printer(args.print_ir_after, args.print_ir_after_all)
    try:
        compilation.run(steps)
        output = compilation.emit(args.emit)
        if args.verbose:
            print("\n".join(funnel_table(compilation.ctx.report)), file=sys.stderr)
        return output
    finally:
        for location, message in compilation.ctx.remarks:
            print(f"{location}: remark: {message}", file=sys.stderr)


def run(args: argparse.Namespace) -> int:
    """Compile every chunk of the input; return the exit status.

    As with mlir-opt, a failing chunk does not stop the others: every error
    is reported, and the exit status is 1 if any chunk failed.
    """
    steps = steps_for(args.pipeline, args.emit)
    if args.verify_against:
        steps.append(VerifyPass(against=args.verify_against))
    check_emit(args.emit, args.target)
    check_targets(steps, args.target, args.emit)
    _check_print_names(args.print_ir_after, steps)
    text, filename = _read_input(args.input)
    context = make_context()
    outputs, failed = [], False
    for chunk in split_input(text, filename, args.split_input_file):
        try:
            outputs.append(_compile_chunk(chunk, context, steps, args))
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
