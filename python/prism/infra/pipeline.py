"""Pass pipelines: parsing the textual form and running it.

A pipeline string is a comma-separated list, as in mlir-opt: Prism passes
(``prism-prune{target=h200}``), Prism's named pipelines (``prism-optimize``)
and any upstream MLIR pass (``canonicalize``, ``func.func(cse)``). Upstream
passes cannot name Python passes, so the driver splits the string itself:
runs of upstream passes go to ``PassManager.parse`` as one segment each.
The CLI and the Python API run the same pass objects through this module.
The pass registry (``prism.passes``) is looked up here, lazily: the library
never imports the passes.
"""

from __future__ import annotations

import dataclasses
import functools
import re
from collections.abc import Sequence
from dataclasses import dataclass

from mlir import ir, passmanager

from prism.infra.diagnostics import prism_error_from
from prism.infra.errors import PassFailed, PipelineError, PrismError
from prism.infra.ir import check_ir, make_context, normalize_program
from prism.infra.passbase import Pass, PassContext

# A pass and its options: a name, then at most one brace group that ends the element.
_ELEMENT = re.compile(r"\s*([^{}\s]+)\s*(?:\{([^{}]*)\})?\s*")


@dataclass(frozen=True)
class UpstreamPasses:
    """A run of upstream MLIR passes, spelled as in mlir-opt."""

    text: str

    NAME = "upstream"
    STAGES = ()

    def run(self, module: ir.Module, ctx: PassContext) -> None:
        """Run the passes on ``module`` through MLIR's PassManager."""
        try:
            manager = passmanager.PassManager.parse(f"builtin.module({self.text})", context=module.context)
        except ValueError as error:
            raise PipelineError(f"invalid upstream pass pipeline '{self.text}': {error}") from None
        try:
            manager.run(module.operation)
        except ir.MLIRError as error:
            raise prism_error_from(error, PassFailed, prefix=f"pass pipeline '{self.text}' failed: ") from None

    def spelling(self) -> str:
        """The segment as it appears in a pipeline string."""
        return self.text


Step = Pass | UpstreamPasses


def registry() -> tuple[dict[str, type[Pass]], dict[str, tuple[str, tuple[type[Pass], ...]]]]:
    """Prism's passes and named pipelines, by name."""
    from prism.passes import PASSES, PIPELINES  # the one lookup of the registry

    return PASSES, PIPELINES


def split_top_level(text: str) -> list[str]:
    """Split on commas that are not inside braces or parentheses."""
    parts, depth, current = [], 0, []
    for char in text:
        if char in "({":
            depth += 1
        elif char in ")}":
            depth -= 1
            if depth < 0:
                raise PipelineError(f"unbalanced '{char}' in pass pipeline '{text}'")
        if char == "," and depth == 0:
            parts.append("".join(current).strip())
            current = []
        else:
            current.append(char)
    if depth != 0:
        raise PipelineError(f"unbalanced brackets in pass pipeline '{text}'")
    parts.append("".join(current).strip())
    return [p for p in parts if p]


def _parse_options(cls: type[Pass], name: str, text: str) -> dict[str, object]:
    """``key=value key2=value2`` into typed keyword arguments of ``cls``."""
    fields = {f.name: f for f in dataclasses.fields(cls)}
    options: dict[str, object] = {}
    for item in text.split():
        key, sep, value = item.partition("=")
        if not sep:
            raise PipelineError(f"option '{item}' of '{name}' needs a value (key=value)")
        if key not in fields:
            known = ", ".join(fields) or "none"
            raise PipelineError(f"unknown option '{key}' for pass '{name}'; known options: {known}")
        options[key] = _convert(value, fields[key].type, name, key)
    return options


def _convert(value: str, annotation: object, name: str, key: str) -> object:
    """An option's text as the type its field declares (annotations are strings under PEP 563)."""
    kind = annotation if isinstance(annotation, str) else getattr(annotation, "__name__", str(annotation))
    if kind == "int" and re.fullmatch(r"-?\d{1,18}", value):
        return int(value)
    if kind == "bool" and value in ("true", "false", "1", "0"):
        return value in ("true", "1")
    if kind in ("int", "bool"):
        raise PipelineError(f"option '{key}' of '{name}' expects {kind}, got '{value}'")
    return value


def _pipeline_options(passes: Sequence[type[Pass]], name: str, text: str) -> list[dict[str, object]]:
    """Route a named pipeline's options to the passes that declare them."""
    per_pass: list[dict[str, object]] = [{} for _ in passes]
    for item in text.split():
        key = item.partition("=")[0]
        owners = [i for i, cls in enumerate(passes) if key in cls.option_names()]
        if not owners:
            raise PipelineError(f"unknown option '{key}' for pipeline '{name}'")
        for index in owners:
            per_pass[index].update(_parse_options(passes[index], name, item))
    return per_pass


def parse_pipeline(text: str) -> list[Step]:
    """Parse a pipeline string into steps, checking every pass name and option."""
    passes, pipelines = registry()
    text = text.strip()
    if text.startswith("builtin.module(") and text.endswith(")"):
        text = text[len("builtin.module("):-1]
    steps: list[Step] = []
    upstream: list[str] = []
    for element in split_top_level(text):
        name = element.partition("{")[0].strip()
        if name in passes or name in pipelines:
            if upstream:
                steps.append(_checked_upstream(",".join(upstream)))
                upstream = []
            steps.extend(_prism_steps(name, _options_text(element, name)))
        elif name.startswith("prism-"):
            raise PipelineError(f"unknown pass '{name}'; run 'prism-opt --help' for the list of passes")
        else:
            upstream.append(element)
    if upstream:
        steps.append(_checked_upstream(",".join(upstream)))
    return steps


def _options_text(element: str, name: str) -> str:
    """The text inside the one ``{...}`` group that follows a Prism pass's name."""
    match = _ELEMENT.fullmatch(element)
    if match is None:
        raise PipelineError(f"malformed options of '{name}' in '{element}'; expected {name}{{key=value ...}}")
    return match.group(2) or ""


def _prism_steps(name: str, options: str) -> list[Step]:
    passes, pipelines = registry()
    if name in passes:
        return [passes[name](**_parse_options(passes[name], name, options))]
    _, members = pipelines[name]
    return [cls(**kw) for cls, kw in zip(members, _pipeline_options(members, name, options), strict=True)]


def _checked_upstream(text: str) -> UpstreamPasses:
    """Reject unknown upstream passes at parse time, before anything runs."""
    try:
        passmanager.PassManager.parse(f"builtin.module({text})", context=_checking_context())
    except ValueError as error:
        message = str(error).strip().splitlines()
        detail = next((line for line in message if "pass" in line.lower()), message[0] if message else "")
        raise PipelineError(f"invalid pass pipeline '{text}': {detail.strip()}") from None
    return UpstreamPasses(text)


@functools.cache
def _checking_context() -> ir.Context:
    """One context, reused, in which pipeline strings are checked."""
    return make_context()


def run_pipeline(module: ir.Module, steps: Sequence[Step], ctx: PassContext) -> None:
    """Run ``steps`` in order, verifying the IR after each; errors are prefixed with the pass that raised them.

    Prism's passes read Linalg in one spelling: elementwise ops on whole tensors, aggregate ops and named ops
    that are not contractions are rewritten as generics before each (:func:`~prism.infra.ir.normalize_program`).
    """
    for step in steps:
        ctx.current = step.NAME if isinstance(step, Pass) else ""
        try:
            with module.context, ir.Location.unknown():
                if isinstance(step, Pass):
                    normalize_program(module)
                step.run(module, ctx)
        except PrismError as error:
            error.prefix(ctx.current)
            raise
        except ir.MLIRError as error:
            raise prism_error_from(error, PassFailed, prefix=f"{step.NAME}: ") from None
        finally:
            ctx.current = ""
        check_ir(module, step.spelling())
        ctx.after(step.NAME if isinstance(step, Pass) else step.spelling(), module)
        if getattr(step, "LOWERS", False):
            ctx.artifacts["lowered"] = step.NAME
