"""Run LLVM-dialect modules produced by ``prism-lower-cpu`` on numpy arrays.

Calling convention
------------------
``prism-lower-cpu`` bufferizes function boundaries with identity layouts, so a
tensor-level function ``(tensor<?x1024xf32>, tensor<1024x64xf32>) -> tensor<?x64xf32>``
becomes ``(memref<?x1024xf32>, memref<1024x64xf32>) -> memref<?x64xf32>``, and
``llvm.emit_c_interface`` gives it the C entry point::

    void _mlir_ciface_f(Results *out, Desc0 *arg0, Desc1 *arg1);

where each ``Desc`` is a ranked memref descriptor ``{allocated, aligned,
offset, sizes[r], strides[r]}`` and ``Results`` is a single descriptor (one
result) or a struct of descriptors (several results). Scalar (integer, index
and float) arguments are passed by value.

Compiled code lives as long as the callables over it (each holds its engine).
Parallel loops call the process's thread pool (:mod:`prism.codegen.cpu.pool`),
whose address each engine is given under the name it declares.

A check of the program (``cf.assert``, see :mod:`prism.codegen.cpu.assertions`)
that fails calls the runtime of :mod:`prism.runtime.checks`, which records the
first failed check of the call; the program runs on (so the code that the
check guards runs too, and may read out of bounds), and when the call returns
its results are freed and :class:`~prism.infra.errors.AssertionFailed` is
raised with the check's message at its ``cf.assert``. The record is the
process's, so calls of modules that have checks run one at a time.

Arguments are numpy arrays (``ml_dtypes.bfloat16`` ones for ``bf16``, whose
results come back as such arrays too), or any array that speaks DLPack
(``__dlpack__``: torch CPU tensors, JAX arrays) or the buffer protocol
(memoryview, array.array), read in place through :func:`as_array`.
Inputs are passed in place, without a copy, when they are C-contiguous (others
are copied into a contiguous array first). That is safe because
``prism-lower-cpu`` marks every tensor argument read-only for bufferization,
so compiled code never writes into a caller's array; and it is fast because
the kernels read contraction operands from the packed, aligned buffers they
allocate themselves. Copying a 64 MiB weight into an aligned buffer on every
call cost a third of a 16-row matmul's time.

Results are allocated by the callee with ``malloc`` and owned by the caller
(ownership-based deallocation in the pass guarantees this, copying results
that would alias an argument or a global). :class:`JitFunction` returns each
result as a numpy array viewing that buffer, without a copy; the buffer is
freed with the last array that views it (results sharing one allocation
share it), so dynamic result shapes work and nothing leaks.

The tensor-level signature comes from the ``prism.signature`` attribute that
the pass leaves on each function (see :func:`describe_signature`).
"""

from __future__ import annotations

import ctypes
import ctypes.util
import functools
import mmap
import os
import platform
import threading
from dataclasses import dataclass
from typing import Any

import numpy as np
from mlir import ir
from mlir.execution_engine import ExecutionEngine

from prism.codegen.cpu import assertions
from prism.codegen.cpu.pool import is_entry as is_pool_entry
from prism.codegen.shapes import ShapeRules
from prism.infra import attrs
from prism.infra.diagnostics import display_location
from prism.infra.errors import AssertionFailed, PrismError, TargetError
from prism.runtime import checks as run_checks
from prism.runtime import pool
from prism.runtime.dtypes import is_bfloat16, numpy_dtype

__all__ = ["ArgumentError", "BoundFunction", "CompiledEngine", "JitFunction", "StaleBinding", "TensorSpec",
           "Signature", "bind", "compile_engine", "describe_signature", "jit"]

_RUNTIME_LIBS = ("libmlir_c_runner_utils.so",)
_libc = ctypes.CDLL(ctypes.util.find_library("c"))
_libc.free.argtypes = [ctypes.c_void_p]


class ArgumentError(PrismError):
    """The arrays handed to a :class:`JitFunction` do not match its signature."""


class StaleBinding(ArgumentError):
    """An array bound by :func:`bind` changed after it was bound (and prepared)."""


def _dtype(t: ir.Type) -> np.dtype:
    dtype = numpy_dtype("index" if isinstance(t, ir.IndexType) else str(t))
    if dtype is None:
        raise TargetError(f"element type {t} is not supported by the CPU runtime")
    return dtype


@dataclass(frozen=True)
class TensorSpec:
    """One argument or result: element dtype and shape (``None`` for a dynamic dim).

    ``shape`` is ``None`` for a scalar.
    """

    dtype: np.dtype
    shape: tuple[int | None, ...] | None

    @staticmethod
    def from_type(t: ir.Type) -> TensorSpec:
        if isinstance(t, ir.RankedTensorType):
            dims = tuple(None if t.is_dynamic_dim(i) else t.get_dim_size(i) for i in range(t.rank))
            return TensorSpec(_dtype(t.element_type), dims)
        if isinstance(t, (ir.IntegerType, ir.IndexType, ir.F16Type, ir.BF16Type, ir.F32Type, ir.F64Type)):
            return TensorSpec(_dtype(t), None)
        raise TargetError(f"type {t} is not supported at a function boundary by the CPU runtime")

    def __str__(self) -> str:
        if self.shape is None:
            return str(self.dtype)
        dims = "x".join("?" if d is None else str(d) for d in self.shape)
        return f"{dims}x{self.dtype}" if dims else str(self.dtype)


@dataclass(frozen=True)
class Signature:
    """The tensor-level signature of a function, and the rules its arguments' sizes keep (see
    :mod:`prism.codegen.shapes`)."""

    name: str
    inputs: tuple[TensorSpec, ...]
    results: tuple[TensorSpec, ...]
    rules: ShapeRules = ShapeRules()


def _is_public_function(op: ir.Operation) -> bool:
    if op.name == "llvm.func":  # the C-interface wrapper inherits the attribute; skip it
        return attrs.SIGNATURE in op.attributes and not ir.StringAttr(
            op.attributes["sym_name"]).value.startswith("_mlir_ciface_")
    return op.name == "func.func" and len(op.regions[0].blocks) > 0 and (
        "sym_visibility" not in op.attributes or ir.StringAttr(op.attributes["sym_visibility"]).value == "public")


def _find_function(module: ir.Module, name: str | None) -> ir.Operation:
    funcs = [op.operation for op in module.body.operations if _is_public_function(op.operation)]
    if name is None:
        if len(funcs) != 1:
            names = [ir.StringAttr(f.attributes["sym_name"]).value for f in funcs]
            raise ArgumentError(f"module has {len(funcs)} functions {names}; name the one to run")
        return funcs[0]
    for f in funcs:
        if ir.StringAttr(f.attributes["sym_name"]).value == name:
            return f
    raise ArgumentError(f"no function named '{name}' in the module")


def describe_signature(module: ir.Module, name: str | None = None) -> Signature:
    """The tensor-level signature of function ``name`` (the only one when ``None``).

    Works on the tensor-level module and on the lowered one (through ``prism.signature``).
    """
    func = _find_function(module, name)
    attr = func.attributes[attrs.SIGNATURE] if attrs.SIGNATURE in func.attributes else func.attributes["function_type"]
    ftype = ir.FunctionType(ir.TypeAttr(attr).value)
    return Signature(ir.StringAttr(func.attributes["sym_name"]).value,
                     tuple(TensorSpec.from_type(t) for t in ftype.inputs),
                     tuple(TensorSpec.from_type(t) for t in ftype.results), ShapeRules.of(func))


# 16-bit floats (f16 and bf16) travel as their bits.
_SCALAR_CTYPES = {np.dtype(np.float16): ctypes.c_uint16, np.dtype(np.float32): ctypes.c_float,
                  np.dtype(np.float64): ctypes.c_double, np.dtype(np.int8): ctypes.c_int8,
                  np.dtype(np.int16): ctypes.c_int16, np.dtype(np.int32): ctypes.c_int32,
                  np.dtype(np.int64): ctypes.c_int64, np.dtype(np.bool_): ctypes.c_bool}


def _ctype(dtype: np.dtype) -> Any:
    return ctypes.c_uint16 if is_bfloat16(dtype) else _SCALAR_CTYPES[np.dtype(dtype)]


def _runtime_libs() -> list[str]:
    libdir = os.path.join(os.path.dirname(ir.__file__), "lib")  # shipped inside the mlir package
    paths = [os.path.join(libdir, lib) for lib in _RUNTIME_LIBS]
    missing = [p for p in paths if not os.path.exists(p)]
    if missing:
        raise TargetError(f"MLIR runtime libraries not found: {missing}")
    return paths


def _scalar(arg: Any, spec: TensorSpec, what: str) -> np.ndarray:
    """``arg`` as a 0-d array of the scalar argument's dtype; ArgumentError if it is not one such scalar."""
    if np.ndim(arg) != 0:
        raise ArgumentError(f"{what}: expected a {spec.dtype} scalar, got an array of shape {np.shape(arg)}")
    try:
        return np.asarray(arg, dtype=spec.dtype)
    except (TypeError, ValueError):
        raise ArgumentError(f"{what}: expected a {spec.dtype} scalar, got {arg!r}") from None


_DLPACK_CPU, _DLPACK_CUDA_HOST = 1, 3  # DLPack's device types that are memory this process reads


def as_array(arg: Any, what: str) -> np.ndarray:
    """``arg`` as a numpy array sharing its memory where it can: a numpy array itself, an object that speaks
    DLPack (``__dlpack__``: torch CPU tensors, JAX arrays) by ``np.from_dlpack``, anything else by
    ``np.asarray`` (the buffer protocol: memoryview, array.array; ``__array__``; nested lists, copied)."""
    if isinstance(arg, np.ndarray):
        return arg
    if hasattr(arg, "__dlpack__"):
        device = arg.__dlpack_device__()[0] if hasattr(arg, "__dlpack_device__") else _DLPACK_CPU
        try:
            if device not in (_DLPACK_CPU, _DLPACK_CUDA_HOST):
                raise BufferError(f"it lives on DLPack device type {device}, not the CPU")
            return np.from_dlpack(arg)
        except (BufferError, TypeError, RuntimeError, ValueError) as error:
            raise ArgumentError(f"{what}: its DLPack tensor cannot be read in place on the CPU ({error}); "
                                "pass a CPU array of a type numpy reads") from None
    try:
        return np.asarray(arg)
    except (ValueError, TypeError) as error:
        raise ArgumentError(f"{what}: not an array ({error})") from None


class JitFunction:
    """A compiled function, callable on numpy arrays, ``ml_dtypes.bfloat16`` arrays for bf16, and any array that
    speaks DLPack or the buffer protocol (see :func:`as_array` and the module docstring)."""

    def __init__(self, engine: ExecutionEngine, signature: Signature):
        self.signature = signature
        self._engine = engine  # keeps the compiled code alive
        self._checks = engine.checks if isinstance(engine, CompiledEngine) else None
        if any(r.shape is None for r in signature.results):
            raise TargetError(f"@{signature.name}: scalar results are not supported; return a 0-d tensor")
        address = engine.raw_lookup("_mlir_ciface_" + signature.name)
        if not address:
            raise TargetError(f"@{signature.name} has no C interface; was it lowered by prism-lower-cpu?")
        # raw_lookup yields the packed wrapper: void f(void **args), args[i] -> i-th C argument.
        self._entry = ctypes.CFUNCTYPE(None, ctypes.c_void_p)(address)
        self._frame = _Frame(signature)
        self._local = threading.local()  # each thread's words (see _Frame), written by each of its calls

    def _check(self, args: tuple[Any, ...]) -> list[np.ndarray | Any]:
        sig = self.signature
        if len(args) != len(sig.inputs):
            raise ArgumentError(f"@{sig.name} takes {len(sig.inputs)} arguments, got {len(args)}")
        if self._frame.accepts(args):
            return list(args)
        return self.check_some(list(args), set(range(len(args))))

    def check_some(self, args: list[Any], which: set[int]) -> list[np.ndarray | Any]:
        """Check arguments ``which`` of a full argument list; returns them, converted, in order."""
        sig = self.signature
        checked: list[np.ndarray | Any] = []
        for i, (arg, spec) in enumerate(zip(args, sig.inputs, strict=True)):
            if i not in which:
                continue
            if spec.shape is None:
                value = _scalar(arg, spec, f"@{sig.name} argument {i}")
                checked.append(_ctype(spec.dtype)(value.view(np.uint16) if spec.dtype.itemsize == 2 else value))
                continue
            array = as_array(arg, f"@{sig.name} argument {i}")
            if array.dtype != spec.dtype:
                raise ArgumentError(f"@{sig.name} argument {i}: expected dtype {spec.dtype}, got {array.dtype}")
            if array.ndim != len(spec.shape):
                raise ArgumentError(f"@{sig.name} argument {i}: expected rank {len(spec.shape)} ({spec}), "
                                    f"got shape {array.shape}")
            for d, (want, got) in enumerate(zip(spec.shape, array.shape, strict=True)):
                if want is not None and want != got:
                    raise ArgumentError(f"@{sig.name} argument {i}: dim {d} must be {want} ({spec}), "
                                        f"got shape {array.shape}")
            checked.append(np.ascontiguousarray(array))
        return checked

    def check_rules(self, args: list[Any]) -> None:
        """Raise ArgumentError, at the op, when the sizes of ``args`` (a full argument list) break one of the rules
        the function's ops assume (see :mod:`prism.codegen.shapes`)."""
        rules = self.signature.rules
        if rules and (broken := rules.broken(args)) is not None:
            message, location = broken
            raise ArgumentError(f"@{self.signature.name}: {message}", location=location)

    def __call__(self, *args: Any) -> np.ndarray | tuple[np.ndarray, ...] | None:
        """Run on ``args`` (numpy arrays and scalars); returns one array or a tuple of them.

        Raises AssertionFailed, at the program's ``cf.assert``, when one of its run-time checks failed in the
        call (the first to fail); the call ran to its end, and its results are freed.
        """
        checked = self._check(args)
        self.check_rules(checked)
        words = getattr(self._local, "words", None)
        if words is None:
            words = self._local.words = self._frame.words()
        inputs = self._frame.fill(words, checked)
        if self._checks is None:
            self._entry(words.address)
        elif (first := run_checks.run_checked(self._entry, words.address)) is not None:
            self._free_results(words.array, inputs)
            message, location = self._checks[first]
            raise AssertionFailed(message, location=location)
        if not self.signature.results:
            return None
        arrays = self._results(words.array, inputs)
        return arrays[0] if len(arrays) == 1 else arrays

    def _results(self, words: np.ndarray, inputs: set[int]) -> tuple[np.ndarray, ...]:
        """The call's results as numpy arrays (see :meth:`_take`): where each has a buffer of its own, a
        static shape and C order, each array views its buffer through a :func:`_owned_buffer` (the quicker way)."""
        frame, specs = self._frame, self.signature.results
        descriptors = [frame.result(words, i) for i in range(len(specs))]
        pointers = {desc[0] for desc in descriptors}
        if len(pointers) < len(specs) or 0 in pointers or not pointers.isdisjoint(inputs):
            blocks: dict[int, _Block] = {}
            return tuple(self._take(desc, spec, inputs, blocks) for desc, spec in zip(descriptors, specs, strict=True))
        arrays = []
        for desc, spec, plan in zip(descriptors, specs, frame.static_results, strict=True):
            if plan is not None and desc[3:] == plan.sizes_and_strides:
                arrays.append(_owned_array(desc, spec, plan))
            else:
                arrays.append(self._take(desc, spec, inputs, {}))
        return tuple(arrays)

    def _free_results(self, words: np.ndarray, inputs: set[int]) -> None:
        """Free the buffers of the call's results (each once; never an input's) without returning them."""
        pointers = {self._frame.result(words, i)[0] for i in range(len(self.signature.results))}
        for pointer in sorted(pointers - inputs - {0}):
            _libc.free(pointer)

    @staticmethod
    def _take(desc: list[int], spec: TensorSpec, inputs: set[int], blocks: dict[int, _Block]) -> np.ndarray:
        """A result descriptor (its words: allocated, aligned, offset, sizes, strides) as a numpy array: a view of
        the callee's allocation, which it then owns.

        Several results may share one allocation (slices of one buffer): they
        share its :class:`_Block`, freed with the last of them. A result in an
        input's buffer (never produced by prism-lower-cpu, which copies such
        results) is copied and not freed.
        """
        rank = len(spec.shape or ())
        pointer, aligned, offset = desc[0], desc[1], desc[2]
        shape = tuple(desc[3:3 + rank])
        owned = bool(pointer) and pointer not in inputs
        if owned and pointer not in blocks:
            blocks[pointer] = _Block(pointer)
        if any(n == 0 for n in shape):
            return np.zeros(shape, dtype=spec.dtype)
        strides = tuple(n * spec.dtype.itemsize for n in desc[3 + rank:3 + 2 * rank])
        start = aligned + offset * spec.dtype.itemsize
        # The array interface spells only numpy's own types: an extension type (bf16) is read as its bits.
        typestr = spec.dtype.str if spec.dtype.kind != "V" else f"<u{spec.dtype.itemsize}"
        interface = {"shape": shape, "strides": strides, "typestr": typestr, "data": (start, False), "version": 3}
        view = np.asarray(_View(interface, blocks[pointer] if owned else None)).view(spec.dtype)
        return view if owned else view.copy()


@dataclass(frozen=True)
class _StaticResult:
    """What a result of a static shape takes to be viewed by an array: its shape, its descriptor's sizes and
    strides when it is C-contiguous, and its bytes."""

    shape: tuple[int, ...]
    sizes_and_strides: list[int]
    nbytes: int


@dataclass(frozen=True)
class _Words:
    """One thread's words for calls of one function (see :class:`_Frame`), and the address of their first."""

    array: np.ndarray
    address: int


class _Frame:
    """The words one call passes to a function's packed C entry point, laid out once per function.

    One int64 array holds, in order: the packed argument list (``void
    **args``: the result slot first, when there are results, then one per
    argument), a slot per value (a descriptor's address, or a scalar itself),
    each argument's memref descriptor ``{allocated, aligned, offset,
    sizes[r], strides[r]}``, and the results' descriptors, which the callee
    fills. Static sizes and strides are written once, in a template that each
    thread copies once (:meth:`words`); each call then writes the arguments'
    addresses and dynamic extents into its thread's copy. A call writes one
    frame rather than building ctypes structures per argument
    (benchmarks/RESULTS.md, "Measurements behind rules in the code": the call
    frame).
    """

    def __init__(self, signature: Signature):
        self.specs = signature.inputs
        results = [len(r.shape or ()) for r in signature.results]
        values = len(self.specs) + (1 if results else 0)
        self.slots = values
        cursor = 2 * values
        self.descriptors: list[int | None] = []  # word offset of each argument's descriptor (None: a scalar)
        for spec in self.specs:
            if spec.shape is None:
                self.descriptors.append(None)
                continue
            self.descriptors.append(cursor)
            cursor += 3 + 2 * len(spec.shape)
        self.results: list[int] = []
        for rank in results:
            self.results.append(cursor)
            cursor += 3 + 2 * rank
        self.result_ranks = results
        template = [0] * cursor
        # Addresses are stored relative to the frame's start; fill() adds the start to these words.
        relative = list(range(values))  # packed[i] -> slot i, which holds a scalar or a descriptor's address
        for i in range(values):
            template[i] = 8 * (values + i)
        first = 1 if results else 0
        if results:
            template[values] = 8 * self.results[0]
            relative.append(values)
        for k, (spec, at) in enumerate(zip(self.specs, self.descriptors, strict=True)):
            if at is None:
                continue
            template[values + first + k] = 8 * at
            relative.append(values + first + k)
            if spec.shape and None not in spec.shape:
                rank = len(spec.shape)
                template[at + 3:at + 3 + rank] = spec.shape
                template[at + 3 + rank:at + 3 + 2 * rank] = _contiguous_strides(spec.shape)
        self.template = np.array(template, dtype=np.int64)
        self.relative_words = np.array(relative, dtype=np.int64)
        self.first = first
        # Each argument's shape where it is static (None for a dynamic one or a scalar)
        self.static_shapes = [tuple(spec.shape) if spec.shape is not None and None not in spec.shape else None
                              for spec in self.specs]
        # The arrays' positions, descriptors and whether their shapes are static; the scalars' positions
        self.array_words = [(k, at, shape is not None) for k, (at, shape)
                            in enumerate(zip(self.descriptors, self.static_shapes, strict=True)) if at is not None]
        self.scalar_slots = [(k, self.slots + self.first + k) for k, at in enumerate(self.descriptors) if at is None]
        self.static_results = [
            _StaticResult(tuple(r.shape), [*r.shape, *_contiguous_strides(r.shape)],
                          int(np.prod(r.shape, dtype=np.int64)) * r.dtype.itemsize)
            if r.shape is not None and None not in r.shape and all(r.shape) else None for r in signature.results]

    def accepts(self, args: tuple[Any, ...]) -> bool:
        """Whether ``args`` are arrays as the function takes them (dtype, shape, C order), to pass as they are."""
        for arg, spec, shape in zip(args, self.specs, self.static_shapes, strict=True):
            if type(arg) is not np.ndarray or spec.shape is None or arg.dtype != spec.dtype:
                return False
            if not arg.flags.c_contiguous:
                return False
            if shape is not None:
                if arg.shape != shape:
                    return False
            elif len(arg.shape) != len(spec.shape) or any(
                    want is not None and want != got for want, got in zip(spec.shape, arg.shape, strict=True)):
                return False
        return True

    def words(self) -> _Words:
        """A copy of the template, its addresses made absolute: the words of one thread's calls."""
        words = self.template.copy()
        base = words.ctypes.data
        words[self.relative_words] += base
        return _Words(words, base)

    def fill(self, words: _Words, checked: list[np.ndarray | Any]) -> set[int]:
        """Write a call on ``checked`` arguments (arrays and ctypes scalars, as JitFunction checks them) into
        ``words``; returns the addresses of the arrays' data."""
        array, pointers = words.array, set()
        for k, slot in self.scalar_slots:  # a scalar: its bytes in its slot, which the packed list points at
            value = checked[k]
            ctypes.memmove(words.address + 8 * slot, ctypes.addressof(value), ctypes.sizeof(value))
        for k, at, static in self.array_words:
            value = checked[k]
            pointer = _data_address(value)
            pointers.add(pointer)
            array[at] = array[at + 1] = pointer
            if not static:
                rank = value.ndim
                array[at + 3:at + 3 + rank] = value.shape
                array[at + 3 + rank:at + 3 + 2 * rank] = [n // value.itemsize for n in value.strides]
        return pointers

    def result(self, words: np.ndarray, index: int) -> list[int]:
        """The words of result ``index``'s descriptor after the call."""
        at = self.results[index]
        return words[at:at + 3 + 2 * self.result_ranks[index]].tolist()


def _data_address(array: np.ndarray) -> int:
    """The address of ``array``'s first element: through the buffer protocol where the array exports a writable
    one (a third of the time of ``array.ctypes``: benchmarks/RESULTS.md, twentieth pass, "A call's cost"), else
    through ``array.ctypes``."""
    try:
        return ctypes.addressof(ctypes.c_char.from_buffer(array))
    except (TypeError, ValueError, BufferError):  # read-only, empty, or of a type the protocol does not spell
        return array.ctypes.data


def _contiguous_strides(shape: tuple[int, ...]) -> list[int]:
    """The strides, in elements, of a C-contiguous array of ``shape``."""
    strides, step = [], 1
    for n in reversed(shape):
        strides.append(step)
        step *= n
    return strides[::-1]


class _Block:
    """A buffer the compiled code allocated with malloc, freed when the last array viewing it is collected."""

    __slots__ = ("pointer",)

    def __init__(self, pointer: int):
        self.pointer = pointer

    def __del__(self) -> None:
        _libc.free(self.pointer)


def _owned_array(desc: list[int], spec: TensorSpec, plan: _StaticResult) -> np.ndarray:
    """The array of a result of a static shape in C order (its descriptor's words ``desc``) that has a buffer of
    its own: a view of the buffer, which is freed with the last array viewing it."""
    owner = _owned_buffer(plan.nbytes).from_address(desc[1] + desc[2] * spec.dtype.itemsize)
    owner.allocated = desc[0]
    return np.frombuffer(owner, dtype=spec.dtype).reshape(plan.shape)


@functools.lru_cache(maxsize=256)
def _owned_buffer(nbytes: int) -> type:
    """A ctypes array type of ``nbytes`` bytes whose instances, made over a result's data, free the result's
    allocation (their ``allocated`` address) when the last array viewing them goes: three times quicker than
    building an array interface for each result (benchmarks/RESULTS.md, twentieth pass, "A call's cost")."""

    class OwnedBuffer(ctypes.c_char * nbytes):  # type: ignore[misc]
        allocated = 0  # until the result's address is given

        def __del__(self) -> None:
            _libc.free(self.allocated)

    return OwnedBuffer


class _View:
    """Exposes a result's memory to numpy (``__array_interface__``) and keeps its block alive."""

    __slots__ = ("__array_interface__", "block")

    def __init__(self, interface: dict[str, Any], block: _Block | None):
        self.__array_interface__ = interface
        self.block = block


@functools.cache
def _keep_large_blocks_in_heap() -> None:
    """Let glibc reuse freed multi-megabyte blocks instead of returning them to the OS.

    Compiled functions allocate their packed operands and results with malloc
    on every call. Above glibc's mmap threshold each such block is a fresh
    mapping whose pages fault in one by one on every call
    (benchmarks/RESULTS.md, "Measurements behind rules in the code": large
    blocks kept in the heap). Raising the thresholds keeps
    those blocks in the heap, warm, from one call to the next. Other C
    libraries have no mallopt and keep their defaults.
    """
    mallopt = getattr(_libc, "mallopt", None)
    if mallopt is not None:
        m_trim_threshold, m_mmap_threshold = -1, -3
        mallopt(m_mmap_threshold, 512 << 20)
        mallopt(m_trim_threshold, 1 << 30)


# Linux lends a process the AMX tile registers' state (XTILEDATA, state component 18) only once it asks for it
# (arch_prctl ARCH_REQ_XCOMP_PERM); a tile instruction before that faults.
_SYS_ARCH_PRCTL = 158  # x86_64
_ARCH_REQ_XCOMP_PERM = 0x1023
_XFEATURE_XTILEDATA = 18
# The LLVM intrinsics of AMX tile instructions (prism.codegen.cpu.kernel_amx): tile loads, stores, zeroing and
# the tdp* products.
_AMX_INTRINSICS = ("llvm.x86.tile", "llvm.x86.tdp")
_tile_data = threading.Lock()
_tile_data_granted = False


def uses_amx(module: ir.Module) -> bool:
    """Whether the LLVM-dialect ``module`` calls an AMX tile intrinsic."""
    found = False

    def visit(op: ir.Operation) -> ir.WalkResult:
        nonlocal found
        if op.name == "llvm.call_intrinsic" and \
                ir.StringAttr(op.attributes["intrin"]).value.startswith(_AMX_INTRINSICS):
            found = True
            return ir.WalkResult.INTERRUPT
        return ir.WalkResult.ADVANCE

    module.operation.walk(visit)
    return found


def _arch_prctl(code: int, argument: int) -> int:
    """The arch_prctl system call (0 on success, else -1 with errno set)."""
    syscall = ctypes.CDLL(None, use_errno=True).syscall
    syscall.restype = ctypes.c_long
    return syscall(ctypes.c_long(_SYS_ARCH_PRCTL), ctypes.c_long(code), ctypes.c_ulong(argument))


def request_tile_data(what: str) -> None:
    """Ask Linux, once per process, for the AMX tile state that ``what``'s code uses; TargetError where the
    system refuses (or is not Linux on x86_64), before any of that code runs."""
    global _tile_data_granted
    with _tile_data:
        if _tile_data_granted:
            return
        if platform.system() != "Linux" or platform.machine() not in ("x86_64", "AMD64"):
            raise TargetError(f"{what} runs on AMX tiles, which Prism enables on Linux on x86_64 only, not on "
                              f"{platform.system()} on {platform.machine()}; compile for a host without AMX "
                              "(a PRISM_HOST_DESCRIPTION with \"amx\": 0)")
        if _arch_prctl(_ARCH_REQ_XCOMP_PERM, _XFEATURE_XTILEDATA) != 0:
            error = ctypes.get_errno()
            raise TargetError(f"{what} runs on AMX tiles, and Linux refused this process their state "
                              f"(arch_prctl(ARCH_REQ_XCOMP_PERM, XTILEDATA): {os.strerror(error)}); this kernel or "
                              "CPU does not lend AMX: compile for a host without it (a PRISM_HOST_DESCRIPTION with "
                              "\"amx\": 0)")
        _tile_data_granted = True


# Prepared arrays of at least this many bytes move to transparent huge pages (numpy's threshold for its own).
HUGE_PAGE_MIN_BYTES = 4 << 20


def _in_huge_pages(array: np.ndarray) -> np.ndarray:
    """``array``, when it is large, copied into memory advised for transparent huge pages; else itself.

    A prepared weight lives as long as its binding and every call streams
    it. The compiled code's malloc, held in the heap by
    :func:`_keep_large_blocks_in_heap`, gives it 4 KiB pages, where numpy
    advises huge pages for its own large arrays; over the TLB misses of 4 KiB
    pages, 16-row products read a large prepacked weight measurably slower
    (benchmarks/RESULTS.md, "Host code against every baseline", sixth pass:
    huge pages). The copy is one pass over the weight, at bind time.
    Where the platform has no MADV_HUGEPAGE, nothing changes.
    """
    if array.nbytes < HUGE_PAGE_MIN_BYTES or not hasattr(mmap, "MADV_HUGEPAGE"):
        return array
    # A private mapping: the kernel gives huge pages to anonymous private memory, not to shared memory.
    region = mmap.mmap(-1, array.nbytes, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)
    region.madvise(mmap.MADV_HUGEPAGE)
    copy = np.frombuffer(region, dtype=array.dtype, count=array.size).reshape(array.shape)
    copy[...] = array
    return copy


def _check_linkable(module: ir.Module) -> None:
    """Refuse a module that calls a function defined neither in it, nor in the runtime libraries, nor in this process.

    The JIT would fail to link it later, with a message about a missing C interface.
    """
    libraries = [ctypes.CDLL(None), *(ctypes.CDLL(path) for path in _runtime_libs())]
    for op in module.body.operations:
        op = op.operation
        if op.name != "llvm.func" or len(op.regions[0].blocks):
            continue
        symbol = ir.StringAttr(op.attributes["sym_name"]).value
        if symbol.startswith("llvm.") or is_pool_entry(op) or assertions.is_entry(op):
            continue  # Prism's runtime, linked by compile_engine
        if any(hasattr(library, symbol) for library in libraries):
            continue
        raise TargetError(f"@{symbol} is declared but defined nowhere (not in the module, the MLIR runtime or this "
                          "process), so the host JIT cannot link a call to it; define it in the module",
                          location=display_location(op.location))


class CompiledEngine(ExecutionEngine):
    """The compiled code of one module, with the table of its run-time checks (message, location by index; None
    when it has none)."""

    checks: list[tuple[str, str]] | None = None


def _check_entry(module: ir.Module) -> ir.Operation | None:
    """The declaration in ``module`` of the entry that its failed checks call (see
    :mod:`prism.codegen.cpu.assertions`), or None."""
    return next((op.operation for op in module.body.operations
                 if op.operation.name == "llvm.func" and assertions.is_entry(op.operation)), None)


def _pool_entries(module: ir.Module) -> list[str]:
    """The names under which ``module`` declares the thread pool's entry (see
    :func:`prism.codegen.cpu.pool.declaration`)."""
    return [ir.StringAttr(op.operation.attributes["sym_name"]).value for op in module.body.operations
            if op.operation.name == "llvm.func" and is_pool_entry(op.operation)]


def compile_engine(module: ir.Module, what: str, opt_level: int = 3) -> CompiledEngine:
    """The compiled code of ``module`` (lowered by ``prism-lower-cpu``), for :func:`jit` and :func:`bind` of any
    of its functions; ``what`` names it in errors (``@f``)."""
    if any(op.operation.name == "func.func" for op in module.body.operations):
        raise TargetError("the module still has func.func ops; run prism-lower-cpu before jit()")
    _check_linkable(module)
    if uses_amx(module):
        request_tile_data(what)
    _keep_large_blocks_in_heap()
    checks = _check_entry(module)
    try:
        engine = CompiledEngine(module, opt_level=opt_level, shared_libs=_runtime_libs())
        for entry in _pool_entries(module):
            engine.raw_register_runtime(entry, ctypes.c_void_p(pool.parallel_for_address()))
        if checks is not None:
            engine.checks = assertions.table(checks)
            engine.raw_register_runtime(ir.StringAttr(checks.attributes["sym_name"]).value,
                                        ctypes.c_void_p(run_checks.failed_address()))
        engine.initialize()
    except (RuntimeError, ir.MLIRError) as e:
        raise TargetError(f"could not JIT-compile {what}: {e}") from None
    return engine


def jit(module: ir.Module, name: str | None = None, *, opt_level: int = 3,
        engine: ExecutionEngine | None = None) -> JitFunction:
    """Compile a module lowered by ``prism-lower-cpu`` and return function ``name`` as a callable.

    ``name`` may be omitted when the module defines one function. ``engine``: the module's code, compiled
    already by :func:`compile_engine`.
    """
    signature = describe_signature(module, name)
    return JitFunction(engine or compile_engine(module, f"@{signature.name}", opt_level), signature)


# A bound array's fingerprint samples 64 evenly spaced runs of 16 consecutive elements: 1024 elements from
# 64 places, so that a weight of many megabytes costs 64 cache and TLB misses per call rather than 1024
# (benchmarks/RESULTS.md, "Measurements behind rules in the code": the bound-array fingerprint).
_FINGERPRINT_RUNS = 64
_FINGERPRINT_RUN = 16


class _Watch:
    """A bound array and its fingerprint: where it lives, its size, and the elements of the runs above (every
    element of a small array): cheap, and changed by most in-place updates.

    A C-contiguous array's runs are read through views made once (a fifth of
    the time of gathering them by position: benchmarks/RESULTS.md, twentieth
    pass, "A call's cost"): a strided one of all runs but
    the last, which ends at the array's end; another layout's through
    ``array.flat``, which reads a strided array in place, without copying it
    whole.
    """

    __slots__ = ("array", "last", "positions", "runs", "taken")

    def __init__(self, array: np.ndarray):
        self.array = array
        size, run, runs = array.size, _FINGERPRINT_RUN, _FINGERPRINT_RUNS
        small = size <= runs * run
        self.runs: np.ndarray | None = None
        self.last: np.ndarray | None = None
        self.positions: np.ndarray | None = None
        if array.flags.c_contiguous:
            flat = array.reshape(-1)
            step = 0 if small else (size - run) // (runs - 1) * array.itemsize
            self.runs = flat if small else np.lib.stride_tricks.as_strided(
                flat, shape=(runs - 1, run), strides=(step, array.itemsize), writeable=False)
            self.last = flat[:0] if small else flat[size - run:]
        elif not small:
            starts = np.linspace(0, size - run, num=runs).astype(np.int64)
            self.positions = (starts[:, None] + np.arange(run)).reshape(-1)
        self.taken = self.fingerprint()

    def fingerprint(self) -> tuple[int, int, bytes]:
        """The array's fingerprint now."""
        array = self.array
        if self.runs is not None:
            sample = self.runs.tobytes() + self.last.tobytes()
        else:
            sample = array.tobytes() if self.positions is None else array.flat[self.positions].tobytes()
        return _data_address(array), array.size, sample

    def changed(self) -> bool:
        """Whether the fingerprint differs from the one taken when the array was bound."""
        return self.fingerprint() != self.taken


class BoundFunction:
    """A compiled function with some arguments fixed once: see :func:`bind`."""

    def __init__(self, engine: ExecutionEngine, module: ir.Module, name: str, bound: dict[int, Any],
                 names: list[str]):
        self.function = JitFunction(engine, describe_signature(module, name))
        sig = self.function.signature
        self._names = names
        for index in bound:
            if not 0 <= index < len(sig.inputs):
                raise ArgumentError(f"@{sig.name} has no argument {index}")
        # Check the bound arrays as the full call would, and keep the caller's objects to watch them.
        probe = [bound.get(i, _Unbound) for i in range(len(sig.inputs))]
        checked = dict(zip(sorted(bound), self.function.check_some(probe, set(bound)), strict=True))
        self._bound = {i: value if isinstance(value, np.ndarray) else bound[i] for i, value in checked.items()}
        # Per watched array: the positions its fingerprint samples (fixed here, off the call path) and the
        # fingerprint taken now.
        # (An array that speaks DLPack or the buffer protocol is watched through the numpy view of its memory.)
        watched = {i: bound[i] if isinstance(bound[i], np.ndarray) else checked[i] for i in bound
                   if isinstance(checked[i], np.ndarray)}
        self._watched = {i: _Watch(array) for i, array in watched.items()}
        self.free = [i for i in range(len(sig.inputs)) if i not in bound]
        func = _find_function(module, name)
        self.prepared: tuple[np.ndarray, ...] = ()
        self._apply: BoundFunction | None = None
        if attrs.PREPARE_ARGS in func.attributes and attrs.APPLY_ARGS in func.attributes:
            prepare_args = list(ir.DenseI64ArrayAttr(func.attributes[attrs.PREPARE_ARGS]))
            self._apply_args = list(ir.DenseI64ArrayAttr(func.attributes[attrs.APPLY_ARGS]))
            if set(prepare_args) <= set(bound):
                prepare = JitFunction(engine, describe_signature(module, f"{sig.name}_prepare"))
                result = prepare(*(self._bound[i] for i in prepare_args))
                self.prepared = tuple(_in_huge_pages(r) for r in (result if isinstance(result, tuple) else (result,)))
                # @f_apply with everything but @f's free arguments bound (it may prepare further).
                inner = {j: self.prepared[-origin - 1] if origin < 0 else self._bound[origin]
                         for j, origin in enumerate(self._apply_args) if origin < 0 or origin in bound}
                apply_names = [f"{sig.name}_apply argument {j}" for j in range(len(self._apply_args))]
                self._apply = BoundFunction(engine, module, f"{sig.name}_apply", inner, apply_names)

    def __call__(self, *args: Any) -> np.ndarray | tuple[np.ndarray, ...] | None:
        """Run on the free arguments, in their order in the function's signature."""
        sig = self.function.signature
        if len(args) != len(self.free):
            free = ", ".join(self._names[i] for i in self.free)
            raise ArgumentError(f"@{sig.name} bound: takes {len(self.free)} arguments ({free}), got {len(args)}")
        for index, watch in self._watched.items():
            if watch.changed():
                raise StaleBinding(f"@{sig.name}: argument '{self._names[index]}' changed after bind(); "
                                   "bind it again to prepare the new values")
        if self._apply is not None:
            given = dict(zip(self.free, args, strict=True))
            self.function.check_rules([given[i] if i in given else self._bound[i] for i in range(len(sig.inputs))])
            return self._apply(*(given[self._apply_args[j]] for j in self._apply.free))
        full = list(args)
        for index in sorted(self._bound):
            full.insert(index, self._bound[index])
        return self.function(*full)


class _Unbound:
    """Stands for a free argument while the bound ones are checked."""


def bind(module: ir.Module, name: str, bound: dict[int, Any], names: list[str], *,
         opt_level: int = 3, engine: ExecutionEngine | None = None) -> BoundFunction:
    """Compile ``module`` and fix arguments ``bound`` (by index) of function ``name``.

    When the function's weights are prepared (``prism.prepare_args``, see
    :mod:`prism.codegen.cpu.prepare`) and all of them are bound, the
    preparation runs here, once; each call then runs ``@name_apply`` on the
    prepared weights. Bound arrays are passed without a copy where they are
    contiguous, so they must not change: a change is detected by a sampled
    fingerprint before each call and refused with :class:`StaleBinding`.
    ``names`` are the arguments' names, for messages.
    """
    signature = describe_signature(module, name)
    return BoundFunction(engine or compile_engine(module, f"@{signature.name}", opt_level), module, signature.name,
                         bound, names)
