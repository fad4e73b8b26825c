"""IREE export: tuned Linalg whose contractions carry IREE's ``compilation_info``, a tuning spec that gives
them the same configurations, and a way to run either.

``--emit=iree`` (``prism.compile(..., emit="iree")``) writes the module as
prism-optimize leaves it (prism-explore's proven rewrites included), with
each contraction that prism-select scheduled annotated with the
``#iree_codegen.compilation_info`` its target makes of the choice
(``Target.iree_config``): IREE's code generation then uses Prism's tiles
instead of its own. Where the target packs a product
(``Target.iree_data_tiling``: the host, for several row blocks), the product
is rewritten on packed operands (:class:`Packing`: ``linalg.pack``,
``linalg.mmt4d``, ``linalg.unpack``) and the configuration goes on its mmt4d.
Linalg's named elementwise ops (``linalg.add``, ``linalg.exp``...), which
IREE's parser does not know, become ``linalg.generic``.
Prism's own attributes (``prism.*``: choices, roles, ``prism.invariant``
weights, the parts of prepared functions) are dropped. A choice IREE's
configuration cannot express in full gets the nearest configuration and a
remark; families IREE has no configuration for
(attention) keep IREE's defaults, with a remark. The host writes IREE's
llvm-cpu configurations, NVIDIA targets its cuda ones, the MI300X its rocm
ones. Where the target gives IREE's device (``Target.iree_device``: the
NVIDIA chips, sm_90 included, which IREE 3.13 cannot name by flags), the
module names it in ``hal.device.targets`` and compiles without flags.

``--emit=iree-spec`` writes the configurations as a transform-dialect
tuning spec instead (:func:`iree_spec_text`), for a module IREE compiles
from elsewhere: ``iree-compile --iree-codegen-tuning-spec-path=SPEC``. A
spec cannot change the program, so there every product keeps its form and
its :meth:`Target.iree_config`.

IREE's attributes are not parsed here (its dialects are not registered in
Prism's context): each op first carries the attribute's text in a string,
which the printed module then spells as the attribute.

:func:`compile_vmfb` and :func:`load` compile and run the text with
``iree.compiler`` and ``iree.runtime`` (pinned in the ``test`` and
``bench`` extras). ``iree.compiler`` runs in a child process: its own MLIR
bindings cannot be loaded beside Prism's.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from mlir import ir
from mlir.dialects import func

from prism.codegen.cpu.text import inline_body
from prism.codegen.transform import ANY, Script, sequence
from prism.codegen.upstream import apply_script
from prism.infra import attrs
from prism.infra.errors import TargetError
from prism.infra.ir import iter_ops
from prism.infra.maps import map_dims
from prism.infra.passbase import PassContext
from prism.search.family import analyze_contraction, int_dict
from prism.targets.base import Target

# The placeholders that annotated ops, and the module, carry until it is printed, by the attribute each spells.
_PLACEHOLDERS = {"prism.iree_compilation_info": "compilation_info", "prism.iree_device_targets": "hal.device.targets"}
_SPELLED = re.compile(r'(prism\.iree_compilation_info|prism\.iree_device_targets) = "((?:[^"\\]|\\.)*)"')
_ESCAPE = re.compile(r"\\([0-9A-Fa-f]{2})")  # how MLIR prints a quote or a backslash in a string: \22, \5C


# Linalg's named elementwise ops: IREE's parser does not know them, so they are written as linalg.generic.
ELEMENTWISE_NAMED_OPS = tuple(f"linalg.{name}" for name in (
    "add", "sub", "mul", "div", "div_unsigned", "max", "min", "powf", "select", "exp", "log", "abs", "ceil", "floor",
    "negf", "reciprocal", "round", "sqrt", "rsqrt", "square", "tanh", "erf", "elementwise"))


def iree_text(module: ir.Module, target: Target, ctx: PassContext) -> str:
    """``module`` (tuned, instantiated) as IREE input: see the module docstring."""
    with module.context:
        generalize_elementwise(module)
        _annotate(module, target, ctx)
        _drop_prism_attributes(module)
        if target.iree_device is not None:
            module.operation.attributes["prism.iree_device_targets"] = ir.StringAttr.get(f"[{target.iree_device}]")
    return _SPELLED.sub(lambda m: f"{_PLACEHOLDERS[m[1]]} = {_ESCAPE.sub(lambda e: chr(int(e[1], 16)), m[2])}",
                        str(module))


def generalize_elementwise(module: ir.Module) -> None:
    """Rewrite every named elementwise op of ``module`` (ELEMENTWISE_NAMED_OPS) as the equal linalg.generic."""
    if not any(op.name in ELEMENTWISE_NAMED_OPS for op in iter_ops(module)):
        return
    script = Script()
    script.add(f"transform.structured.generalize {script.match_ops(list(ELEMENTWISE_NAMED_OPS))} "
               f": ({ANY}) -> {ANY}")
    apply_script(module, sequence(script.lines), "iree-generalize")


def _drop_prism_attributes(module: ir.Module) -> None:
    """Remove Prism's own attributes (``prism.*``) from every op and function argument, but the placeholders."""
    for op in iter_ops(module):
        for name in list(op.attributes):
            if name.startswith("prism.") and name not in _PLACEHOLDERS:
                del op.attributes[name]
        if "arg_attrs" in op.attributes:
            kept = [ir.DictAttr.get({named.name: named.attr for named in (d[i] for i in range(len(d)))
                                     if not named.name.startswith("prism.")})
                    for d in map(ir.DictAttr, ir.ArrayAttr(op.attributes["arg_attrs"]))]
            if any(len(attr) for attr in kept):
                op.attributes["arg_attrs"] = ir.ArrayAttr.get(kept)
            else:
                del op.attributes["arg_attrs"]


def iree_spec_text(module: ir.Module, target: Target, ctx: PassContext) -> str:
    """A transform-dialect tuning spec (``--iree-codegen-tuning-spec-path``) that gives each contraction that
    ``module`` (tuned, instantiated) schedules its IREE configuration, wherever IREE meets the same op.

    One matcher per distinct op (its form and types, matched by
    ``transform.iree.match.cast_compatible_dag_from_root``), all applied by
    the ``@__kernel_config`` entry point of IREE's convention, which
    annotates the op with its ``compilation_info``. The spec tunes the ops
    as prism-optimize leaves them: an op that prism-explore rewrote matches
    only in a module that has the rewritten form.
    """
    matchers: dict[tuple[str, str], str] = {}
    if target.iree_device is not None and not target.iree_flags:
        ctx.remark(module.operation.location, f"IREE cannot name {target.name}'s chip by flags: compile the program "
                                              "the spec tunes with its device named in hal.device.targets, as "
                                              "--emit=iree writes it")
    with module.context:
        for op, config, _ in _configured(module, target, ctx):
            matchers.setdefault((_matched_text(op), config), f"match_{len(matchers)}")
    sequences = [_APPLY]
    for (body, config), name in matchers.items():
        sequences.append(_MATCHER.format(name=name, body=body, config=config))
    if not matchers:  # nothing to configure: an entry point that changes nothing
        return "module attributes {transform.with_named_sequence} {\n" + _EMPTY_ENTRY + "}\n"
    entries = ",\n".join(f"        @{name} -> @apply_op_config" for name in matchers.values())
    sequences.append(_ENTRY.format(entries=entries))
    return ("module attributes {iree_codegen.tuning_spec_with_default_entrypoint, transform.with_named_sequence} {\n"
            + "\n".join(sequences) + "}\n")


_APPLY = """  transform.named_sequence @apply_op_config(%op: !transform.any_op {transform.readonly},
                                           %config: !transform.any_param {transform.readonly}) {
    transform.annotate %op "compilation_info" = %config : !transform.any_op, !transform.any_param
    transform.yield
  }
"""
_MATCHER = """  transform.named_sequence @{name}(%root: !transform.any_op {{transform.readonly}})
      -> (!transform.any_op, !transform.any_param) {{
    %ins, %outs = transform.iree.match.cast_compatible_dag_from_root %root {{
{body}
    }} : (!transform.any_op) -> (!transform.any_value, !transform.any_value)
    %config = transform.param.constant {config} -> !transform.any_param
    transform.yield %root, %config : !transform.any_op, !transform.any_param
  }}
"""
_ENTRY = """  transform.named_sequence @__kernel_config(%variant: !transform.any_op {{transform.consumed}})
      -> !transform.any_op attributes {{iree_codegen.tuning_spec_entrypoint}} {{
    %res = transform.foreach_match in %variant
{entries}
      : (!transform.any_op) -> !transform.any_op
    transform.yield %res : !transform.any_op
  }}
"""

_EMPTY_ENTRY = """  transform.named_sequence @__kernel_config(%variant: !transform.any_op {transform.consumed})
      -> !transform.any_op attributes {iree_codegen.tuning_spec_entrypoint} {
    transform.yield %variant : !transform.any_op
  }
"""


def _matched_text(op: ir.Operation) -> str:
    """``op`` as the body of a DAG matcher: a block whose arguments are its operands, then the op alone, without
    Prism's attributes."""
    with ir.Location.unknown():
        scratch = ir.Module.create()
        with ir.InsertionPoint(scratch.body):
            function = func.FuncOp("matched", ([v.type for v in op.operands], [r.type for r in op.results]))
            block = function.add_entry_block()
            with ir.InsertionPoint(block):
                clone = op.clone()
                for index, argument in enumerate(block.arguments):
                    clone.operands[index] = argument
                func.ReturnOp(list(clone.results))
        for name in list(clone.attributes):
            if name.startswith("prism."):
                del clone.attributes[name]
        arguments = ", ".join(f"%arg{i}: {v.type}" for i, v in enumerate(op.operands))
        lines = str(clone).splitlines()
    return "\n".join([f"    ^bb0({arguments}):", *(f"      {line}" for line in lines)])


def _configured(module: ir.Module, target: Target, ctx: PassContext, may_pack: bool = False
                ) -> list[tuple[ir.Operation, str, Packing | None]]:
    """Each contraction ``module`` schedules, with the text of its IREE configuration and, with ``may_pack``,
    the packing the target asks for (``Target.iree_data_tiling``); remarks for what the configurations
    cannot express, and for attention families."""
    found = []
    for op in iter_ops(module):
        if attrs.ATTENTION_CHOICE in op.attributes:
            ctx.remark(op.location, f"IREE has no configuration for an attention family on '{target.name}': "
                                    "IREE's defaults apply to its ops")
        contraction = analyze_contraction(op) if attrs.CHOICE in op.attributes else None
        if contraction is None:
            continue
        choice = int_dict(op.attributes[attrs.CHOICE])
        packed = target.iree_data_tiling(contraction, choice) if may_pack else None
        packing = None
        if packed is None:
            config, unexpressed = target.iree_config(contraction, choice)
        else:
            tiles, config, unexpressed = packed
            packing = Packing(contraction.roles, tiles)
        for what in unexpressed:
            ctx.remark(op.location, f"IREE's configuration cannot express {what}: the nearest one is emitted")
        found.append((op, config, packing))
    return found


def _annotate(module: ir.Module, target: Target, ctx: PassContext) -> None:
    """Each scheduled contraction's choice as the text of its IREE configuration, on the product itself or on
    the ``linalg.mmt4d`` of its packed operands (see :func:`iree_text`)."""
    for op, config, packing in _configured(module, target, ctx, may_pack=True):
        if packing is not None:
            op = packing.rewrite(op)
        op.attributes["prism.iree_compilation_info"] = ir.StringAttr.get(config)  # Prism's own go after


@dataclass(frozen=True)
class Packing:
    """A product rewritten for IREE's data-tiled pipeline: each operand packed into ``tiles`` (m0, n0, k0)
    by ``linalg.pack``, ``linalg.mmt4d`` on the packed operands, and the result unpacked into C's layout.

    Before (any layout of A, B and C, static or dynamic sizes; f32)::

        %r = linalg.matmul ins(%a, %b : tensor<?x96xf32>, tensor<96x130xf32>) outs(%c : tensor<?x130xf32>)

    After, with tiles (8, 8, 1)::

        %pa = linalg.pack %a padding_value(%zero : f32) outer_dims_perm = [0, 1] inner_dims_pos = [0, 1]
                  inner_tiles = [8, 1] into %ea : tensor<?x96xf32> -> tensor<?x96x8x1xf32>
        %pb = linalg.pack %b ... outer_dims_perm = [1, 0] inner_dims_pos = [1, 0] inner_tiles = [8, 1]
                  -> tensor<17x96x8x1xf32>
        %pc = linalg.pack %c ... inner_tiles = [8, 8] -> tensor<?x17x8x8xf32>
        %pr = linalg.mmt4d ins(%pa, %pb : ...) outs(%pc : ...)
        %r = linalg.unpack %pr ... into %c : tensor<?x17x8x8xf32> -> tensor<?x130xf32>
    """

    roles: tuple[str, ...]  # each loop's, as the search has them
    tiles: tuple[int, int, int]

    def rewrite(self, op: ir.Operation) -> ir.Operation:
        """Replace ``op`` by the packed form; returns its ``linalg.mmt4d``."""
        types = [ir.RankedTensorType(v.type) for v in op.operands]
        dims = [map_dims(ir.AffineMapAttr(m).value) for m in ir.ArrayAttr(op.attributes["indexing_maps"])]
        tile = dict(zip("mnk", self.tiles, strict=True))
        lines, packed = [], []
        for index, (operand_type, loops, (outer, inner)) in enumerate(zip(types, dims, (("m", "k"), ("n", "k"),
                                                                                         ("m", "n")), strict=True)):
            position = {self.roles[loop]: p for p, loop in enumerate(loops)}
            perm = [position[outer], position[inner]]
            sizes = [(operand_type.get_dim_size(p), tile[role]) for p, role in zip(perm, (outer, inner), strict=True)]
            dynamic, shape = [], []
            for k, (size, step) in enumerate(sizes):
                if ir.ShapedType.is_dynamic_size(size):
                    lines += [f"  %i{index}_{k} = arith.constant {perm[k]} : index",
                              f"  %d{index}_{k} = tensor.dim %x{index}, %i{index}_{k} : {operand_type}",
                              f"  %t{index}_{k} = arith.constant {step} : index",
                              f"  %o{index}_{k} = arith.ceildivsi %d{index}_{k}, %t{index}_{k} : index"]
                    dynamic.append(f"%o{index}_{k}")
                    shape.append("?")
                else:
                    shape.append(str(-(-size // step)))
            packed_type = f"tensor<{'x'.join(shape)}x{tile[outer]}x{tile[inner]}x{operand_type.element_type}>"
            packed.append(packed_type)
            lines += [f"  %e{index} = tensor.empty({', '.join(dynamic)}) : {packed_type}",
                      f"  %p{index} = linalg.pack %x{index} padding_value(%zero : {operand_type.element_type}) "
                      f"outer_dims_perm = {perm} inner_dims_pos = {perm} inner_tiles = [{tile[outer]}, {tile[inner]}] "
                      f"into %e{index} : {operand_type} -> {packed_type}"]
        c_perm = perm  # C's, the last packed: its M and N dimensions
        lines += [f"  %r = linalg.mmt4d ins(%p0, %p1 : {packed[0]}, {packed[1]}) outs(%p2 : {packed[2]}) "
                  f"-> {packed[2]}",
                  f"  %u = linalg.unpack %r outer_dims_perm = {c_perm} inner_dims_pos = {c_perm} inner_tiles = "
                  f"[{tile['m']}, {tile['n']}] into %x2 : {packed[2]} -> {types[2]}",
                  f"  return %u : {types[2]}"]
        arguments = ", ".join(f"%x{i}: {t}" for i, t in enumerate(types))
        text = (f"func.func @packed({arguments}) -> {types[2]} {{\n  %zero = arith.constant 0.0 : "
                f"{types[0].element_type}\n" + "\n".join(lines) + "\n}")
        anchor = op.operation
        (result,) = inline_body(anchor, text, list(anchor.operands))
        anchor.results[0].replace_all_uses_with(result)
        anchor.erase()
        return result.owner.operands[0].owner  # the unpack reads the mmt4d


_COMPILE = """import sys, iree.compiler
text = sys.stdin.read()
sys.stdout.buffer.write(iree.compiler.compile_str(text, target_backends=[sys.argv[1]], extra_args=sys.argv[2:]))
"""


# Seconds an iree-compile run may take. IREE 3.13's compiler has hung, once in many runs, asleep with no output
# (a program it compiles in seconds, whose next run did): such a run is stopped and the compile run once more.
COMPILE_SECONDS, COMPILE_ATTEMPTS = 600, 2


def compile_vmfb(text: str, backend: str = "llvm-cpu", flags: Sequence[str] = ()) -> bytes:
    """The IREE module (``.vmfb``) of ``text`` for ``backend``, by ``iree.compiler`` in a child process.

    Raises TargetError with iree-compile's errors when it refuses the text,
    when IREE is not installed, or when it does not finish within
    COMPILE_SECONDS in any of COMPILE_ATTEMPTS runs.
    """
    for _ in range(COMPILE_ATTEMPTS):
        # A session of its own, so that a run past the time is stopped with the iree-compile it started.
        with subprocess.Popen([sys.executable, "-c", _COMPILE, backend, *flags], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, start_new_session=True) as child:
            try:
                stdout, stderr = child.communicate(text.encode(), timeout=COMPILE_SECONDS)
                break
            except subprocess.TimeoutExpired:
                os.killpg(child.pid, signal.SIGKILL)
                child.communicate()
            except BaseException:  # an interrupt: the compile stops with the caller
                os.killpg(child.pid, signal.SIGKILL)
                raise
    else:
        raise TargetError(f"iree-compile did not finish within {COMPILE_SECONDS} s in {COMPILE_ATTEMPTS} runs")
    if child.returncode:
        lines = stderr.decode(errors="replace").strip().splitlines()
        if any("No module named 'iree" in line for line in lines):
            raise TargetError("IREE is not installed: pip install iree-base-compiler==3.13.0 "
                              "iree-base-runtime==3.13.0 (the test and bench extras pin them)")
        errors = [line for line in lines if "error" in line] or lines[-20:]
        raise TargetError("iree-compile refused the module:\n" + "\n".join(errors))
    return stdout


def load(vmfb: bytes, function: str, driver: str = "local-task") -> Callable[..., Any]:
    """``function`` of a compiled IREE module, callable with numpy arrays; it returns numpy arrays (a tuple
    when there are several results)."""
    try:
        import iree.runtime as runtime
    except ImportError:
        raise TargetError("IREE's runtime is not installed: pip install iree-base-runtime==3.13.0") from None
    config = runtime.Config(driver)
    context = runtime.SystemContext(config=config)
    context.add_vm_module(runtime.VmModule.copy_buffer(context.instance, vmfb))
    try:
        entry = context.modules.module[function]
    except KeyError:
        raise TargetError(f"the IREE module has no function '{function}'") from None

    def call(*arrays: Any) -> Any:
        results = entry(*arrays)
        if isinstance(results, tuple | list):
            return tuple(r.to_host() for r in results)
        return results.to_host()

    return call
