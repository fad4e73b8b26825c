"""Run the tiled program of a function's GPU kernels on the host: the GPU lowering's numbers without a GPU.

:func:`run_tiled` writes the specs' tiled program (:mod:`prism.codegen.gpu.tiled`),
lowers it for the host with upstream passes (the grid's ``scf.forall`` run
as loops in order), compiles it with the execution engine and calls it on
flat buffers: each input's data, and for outputs and temporaries fresh
buffers filled with NaN (integers: zero), so that an element no kernel
writes shows in the result. bf16 arrays are ``ml_dtypes.bfloat16`` ones.

Example::

    out = run_tiled([spec], {"a": a, "b": b}, outputs=[c], temporaries=[], sizes={"m": 77})
    out["c"]  # shaped as c, of c's dtype
"""

from __future__ import annotations

import ctypes
from collections.abc import Iterator, Sequence
from contextlib import contextmanager

import numpy as np
from mlir import ir
from mlir.execution_engine import ExecutionEngine
from mlir.runtime import get_ranked_memref_descriptor

from prism.codegen.gpu.spec import Dim, Tensor
from prism.codegen.gpu.tiled import Spec, TiledFunction, TiledProgram, tiled_function
from prism.codegen.upstream import run_passes
from prism.infra.errors import PrismError
from prism.infra.ir import make_context
from prism.runtime import dtypes

__all__ = ["HOST_LOWERING", "compile_tiled", "planned_function", "predict_planned", "run_planned", "run_tiled"]

# The tiled program to LLVM: the grid and the loops become branches, math on f16/bf16 is computed in f32,
# math ops without an LLVM intrinsic become libm calls, and every function gets its C interface.
HOST_LOWERING = ("builtin.module(func.func(scf-forall-to-for), math-extend-to-supported-types, "
                 "expand-strided-metadata, lower-affine, convert-scf-to-cf, finalize-memref-to-llvm, "
                 "convert-math-to-llvm, convert-math-to-libm, convert-arith-to-llvm, convert-index-to-llvm, "
                 "convert-cf-to-llvm, convert-func-to-llvm, convert-ub-to-llvm, reconcile-unrealized-casts)")

# The element types of the host check's buffers.
_BUFFER_TYPES = ("f16", "bf16", "f32", "f64", "i8", "i16", "i32", "i64")


def numpy_dtype(dtype: str) -> np.dtype:
    """The numpy dtype of an MLIR element type."""
    if dtype not in _BUFFER_TYPES:
        raise PrismError(f"the host check has no buffers of {dtype}")
    return dtypes.numpy_dtype(dtype)


def shape_of(tensor: Tensor, sizes: dict[str, int]) -> tuple[int, ...]:
    """The concrete shape of ``tensor`` at ``sizes``."""
    def size(d: Dim) -> int:
        if isinstance(d, int):
            return d
        if d not in sizes:
            raise PrismError(f"tensor {tensor.name}: no value for size symbol {d}")
        return sizes[d]
    return tuple(size(d) for d in tensor.shape)


class CompiledTiled:
    """A tiled function compiled for the host, callable on flat buffers."""

    def __init__(self, function: TiledFunction, engine: ExecutionEngine):
        self.function = function
        self._engine = engine

    def __call__(self, buffers: Sequence[np.ndarray], sizes: Sequence[int]) -> None:
        """Run on one C-contiguous 1-D array per tensor (written in place) and one integer per size symbol."""
        args: list[object] = []
        for array in buffers:
            flat = array.view(np.uint16) if array.dtype.itemsize == 2 else array  # 16-bit floats as their bits
            args.append(ctypes.pointer(ctypes.pointer(get_ranked_memref_descriptor(flat))))
        args += [ctypes.pointer(ctypes.c_int64(n)) for n in sizes]
        self._engine.invoke(self.function.name, *args)


def compile_tiled(specs: Sequence[Spec], program: type[TiledProgram] | None = None) -> CompiledTiled:
    """The specs' tiled program (written by ``program``, see :func:`prism.codegen.gpu.tiled.tiled_function`),
    lowered and compiled for the host."""
    function = tiled_function(specs, program=program)
    with make_context(), ir.Location.unknown():
        module = ir.Module.parse(f"module {{\n{function.text}\n}}")
        run_passes(module, HOST_LOWERING, "host lowering of the tiled program")
        engine = ExecutionEngine(module, opt_level=2)
    return CompiledTiled(function, engine)


def _buffer(tensor: Tensor, inputs: dict[str, np.ndarray], sizes: dict[str, int]) -> np.ndarray:
    """The flat buffer of ``tensor``: a copy of its input, else NaN (zero for integers). A kernel may read an input
    through a view (a collapse of its rows, :mod:`prism.infra.collapse`): the input then has another shape of as
    many elements, and the kernels index the same flat buffer."""
    dtype, shape = numpy_dtype(tensor.dtype), shape_of(tensor, sizes)
    if tensor.name not in inputs:
        fill = np.nan if dtype.kind == "f" or dtypes.is_bfloat16(dtype) else 0
        return np.full(int(np.prod(shape)), fill, dtype=dtype)
    array = np.asarray(inputs[tensor.name])
    if array.dtype != dtype or array.size != int(np.prod(shape)):
        raise PrismError(f"input {tensor.name}: expected {shape} of {dtype} (or a view of as many elements), got "
                         f"{array.shape} of {array.dtype}")
    return np.ascontiguousarray(array).reshape(-1).copy()


def run_tiled(specs: Sequence[Spec], inputs: dict[str, np.ndarray], outputs: list[Tensor],
              temporaries: list[Tensor], sizes: dict[str, int],
              program: type[TiledProgram] | None = None) -> dict[str, np.ndarray]:
    """Run the tiled program of ``specs`` (in order) on ``inputs`` (by tensor name, of the tensors' dtypes and
    shapes at ``sizes``), and return each of ``outputs`` by name, shaped.

    Every tensor the specs name must be an input, an output or a temporary;
    an output given among the inputs starts from that data. ``program``
    writes the tiled program (:class:`TiledProgram` by default).
    """
    compiled = compile_tiled(specs, program)
    known = set(inputs) | {t.name for t in [*outputs, *temporaries]}
    missing = [t.name for t in compiled.function.tensors if t.name not in known]
    if missing:
        raise PrismError(f"the specs read {missing}, which are neither inputs, outputs nor temporaries")
    named = {t.name for t in compiled.function.tensors}
    if unknown := [t.name for t in outputs if t.name not in named]:
        raise PrismError(f"outputs {unknown} are not written by the specs")
    buffers = {t.name: _buffer(t, inputs, sizes) for t in compiled.function.tensors}
    symbols = [s for s in compiled.function.sizes if s not in sizes]
    if symbols:
        raise PrismError(f"no value for size symbols {symbols}")
    compiled([buffers[t.name] for t in compiled.function.tensors], [sizes[s] for s in compiled.function.sizes])
    return {t.name: buffers[t.name].reshape(shape_of(t, sizes)) for t in outputs}


@contextmanager
def planned_function(module_text: str, chip: str, name: str) -> Iterator:
    """Function ``name`` of ``module_text`` (tensor-level, as ``prism.compile`` optimizes it) planned for the GPU
    ``chip`` (:mod:`prism.codegen.gpu.plan`): its :class:`~prism.codegen.gpu.plan.FunctionPlan`, valid inside the
    ``with`` block (its specs' bodies are emitted from the module's ops, which live as long)."""
    from prism.codegen.gpu import GpuLowering
    from prism.infra.passbase import PassContext

    with make_context(), ir.Location.unknown():
        module = ir.Module.parse(module_text)
        lowering = GpuLowering(chip, PassContext())
        lowering.plan(module)
        plans = {p.name: p for p in lowering.plans}
        if name not in plans:
            raise PrismError(f"no function @{name} runs on the GPU (it has: {', '.join(sorted(plans))})")
        yield plans[name]


def run_planned(module_text: str, chip: str, name: str, arrays: Sequence[np.ndarray]) -> tuple[np.ndarray, ...]:
    """Function ``name`` of ``module_text`` planned for the GPU ``chip`` (:func:`planned_function`), run as its
    tiled program on the host: its results, in order.

    The check that needs no GPU: the plan's kernels, their tiles, masks and fusions computed as the kernels
    compute them, short of mapping threads.
    """
    from prism.codegen.gpu.manifest import bind_sizes

    with planned_function(module_text, chip, name) as plan:
        if len(arrays) != len(plan.inputs):
            raise PrismError(f"@{name} takes {len(plan.inputs)} arguments, got {len(arrays)}")
        inputs = {t.name: np.asarray(a).astype(numpy_dtype(t.dtype))
                  for t, a in zip(plan.inputs, arrays, strict=False)}
        sizes = bind_sizes(plan.sizes, {k: v.shape for k, v in inputs.items()})
        for i, (tensor, array) in enumerate(zip(plan.inputs, inputs.values(), strict=False)):
            if array.shape != shape_of(tensor, sizes):
                raise PrismError(f"@{name} argument {i}: expected shape {shape_of(tensor, sizes)}, got {array.shape}")
        outputs = run_tiled([step.spec for step in plan.steps], inputs, plan.outputs, plan.temporaries, sizes)
        return tuple(outputs[t.name] for t in plan.outputs)


def predict_planned(module_text: str, target: str, name: str,
                    shapes: Sequence[tuple[int, ...]]) -> list[tuple[str, float]]:
    """The predicted seconds of each planned kernel step of function ``name`` on the NVIDIA target named
    ``target`` (:func:`prism.codegen.gpu.cost.predict_seconds`), for inputs of ``shapes``: (the step's name,
    seconds), in launch order. A GEMM with size classes is costed with the tile of the class its sizes fall
    in."""
    from dataclasses import replace

    from prism.codegen.gpu.cost import predict_seconds
    from prism.codegen.gpu.manifest import bind_sizes, evaluate
    from prism.targets.nvidia import GPU_TARGETS

    if target not in GPU_TARGETS:
        raise PrismError(f"'{target}' is not an NVIDIA target (known: {', '.join(sorted(GPU_TARGETS))})")
    model = GPU_TARGETS[target]
    with planned_function(module_text, model.chip, name) as plan:
        if len(shapes) != len(plan.inputs):
            raise PrismError(f"@{name} takes {len(plan.inputs)} arguments, got {len(shapes)} shapes")
        sizes = bind_sizes(plan.sizes, {t.name: tuple(s) for t, s in zip(plan.inputs, shapes, strict=True)})
        predicted = []
        for step in plan.steps:
            spec = step.spec
            tile = next((tile for condition, tile in step.classes if evaluate(condition, sizes)), None)
            if tile is not None:
                spec = replace(spec, tile=tile)
            predicted.append((spec.name, predict_seconds(spec, model, sizes)))
        return predicted
