"""What a GPU kernel emitter is given and what it gives back.

The planner (:mod:`.plan`) turns each group of ops of a function into one
spec; an emitter turns a spec into one or more :class:`Kernel` s: the text
of a ``gpu.func ... kernel`` (valid inside the function's ``gpu.module``)
and how to launch it. The module assembler (:mod:`.module`) puts every
kernel of a compilation into one ``gpu.module``, hence one PTX module, and
writes the launch manifest from the :class:`Launch` es.

**The kernel ABI.** Every tensor is a row-major contiguous buffer, passed as
a 1-D ``memref<?xT>``: five parameters (allocated pointer, aligned pointer,
offset, size, stride), of which a kernel reads the aligned pointer alone.
Kernels index it themselves, row-major over the tensor's shape. A size
symbol (a dynamic dimension, ``"d0"``) is one ``index`` parameter. A TMA
tensor map is one ``!llvm.ptr`` parameter: the device address of the
128-byte map that the launcher encodes as :class:`TensorMap` says.

**Expressions** (grid sizes, conditions) are Python syntax over the size
symbols, with integers, ``+ - * //``, and ``cdiv(a, b)``, ``min``, ``max``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Literal

# A dimension: a static size, or the name of a size symbol passed as an index parameter.
Dim = int | str

ELEMENT_BYTES = {"f16": 2, "bf16": 2, "f32": 4, "f64": 8, "i1": 1, "i8": 1, "i16": 2, "i32": 4, "i64": 8}


def storage_type(dtype: str) -> str:
    """The element type a buffer of ``dtype`` holds: i1 as i8, every other type as itself."""
    return "i8" if dtype == "i1" else dtype


def load_element(tb, tensor: Tensor, ref: str, index: str, hint: str = "ld") -> str:
    """Write the load of ``tensor``'s element ``index`` from ``ref`` (its memref); the value, of its dtype."""
    value = tb.value(f"memref.load {ref}[{index}] : {tensor.memref}", hint)
    return tb.value(f"arith.trunci {value} : i8 to i1", "b") if tensor.dtype == "i1" else value


def store_element(tb, value: str, tensor: Tensor, ref: str, index: str) -> None:
    """Write the store of ``value`` (of ``tensor``'s dtype) as ``tensor``'s element ``index`` in ``ref``."""
    if tensor.dtype == "i1":
        value = tb.value(f"arith.extui {value} : i1 to i8", "b")
    tb.add(f"memref.store {value}, {ref}[{index}] : {tensor.memref}")


FLOAT_BITS = {"f16": 16, "bf16": 16, "f32": 32, "f64": 64}


def convert(tb, value: str, source: str, target: str) -> str:
    """Write ``value`` of type ``source`` as ``target``: floats widen or round to nearest (f16 and bf16 through
    f32), floats and integers convert signed, integers extend signed or truncate."""
    if source == target:
        return value
    if source in FLOAT_BITS and target in FLOAT_BITS:
        if FLOAT_BITS[source] == FLOAT_BITS[target]:
            value, source = tb.value(f"arith.extf {value} : {source} to f32", "cv"), "f32"
        op = "arith.extf" if FLOAT_BITS[source] < FLOAT_BITS[target] else "arith.truncf"
    elif source in FLOAT_BITS or target in FLOAT_BITS:
        op = "arith.fptosi" if source in FLOAT_BITS else "arith.sitofp"
    else:
        op = "arith.extsi" if int(source[1:]) < int(target[1:]) else "arith.trunci"
    return tb.value(f"{op} {value} : {source} to {target}", "cv")


def dim_text(dim: Dim) -> str:
    """A dimension in an expression."""
    return str(dim)


def numel_text(shape: tuple[Dim, ...]) -> str:
    """The element count of ``shape`` as an expression."""
    return " * ".join(str(d) for d in shape) if shape else "1"


@dataclass(frozen=True)
class Tensor:
    """A kernel operand: a row-major contiguous buffer of ``dtype`` with ``shape``."""

    name: str  # the manifest's name: an argument, a result, a temporary
    dtype: str  # the MLIR element type: f16, bf16, f32, i8, ...
    shape: tuple[Dim, ...]

    @property
    def memref(self) -> str:
        """The kernel parameter's type (booleans held one per byte: LLVM's lowering of memref loads and stores
        takes no narrower element)."""
        return f"memref<?x{storage_type(self.dtype)}>"

    @property
    def rank(self) -> int:
        return len(self.shape)


@dataclass(frozen=True)
class TensorMap:
    """A TMA descriptor for ``tensor``, as ``cuTensorMapEncodeTiled`` takes it.

    ``dims`` and ``box`` are innermost first; ``strides`` are the byte strides
    of the outer dimensions (innermost first, the innermost dimension left
    out). ``swizzle`` is 0 (none), 32, 64 or 128 bytes. Out-of-bounds boxes
    are filled with zeros, which is how TMA kernels mask their edges.
    """

    tensor: str
    dtype: str
    dims: tuple[str, ...]  # expressions, innermost first
    strides: tuple[str, ...]  # byte-stride expressions, innermost first, without the innermost
    box: tuple[int, ...]  # innermost first
    swizzle: int = 128


@dataclass(frozen=True)
class Param:
    """One kernel parameter, in order: a tensor (5 memref parameters), a size symbol, or a tensor map."""

    kind: Literal["tensor", "size", "tensormap"]
    name: str  # the tensor's or the size symbol's name; for a tensor map, its tensor's name
    tensormap: TensorMap | None = None


@dataclass(frozen=True)
class Launch:
    """How to launch one kernel: grid and block, dynamic shared memory and parameters."""

    grid: tuple[str, str, str]  # expressions over the size symbols
    block: tuple[int, int, int]
    shared_bytes: int  # dynamic shared memory; over 48 KiB the launcher opts in
    params: tuple[Param, ...]
    when: str | None = None  # a size class: launch only where this expression holds


@dataclass(frozen=True)
class Kernel:
    """One emitted kernel."""

    name: str
    text: str  # ``gpu.func @name(...) kernel attributes {...} { ... }``
    launch: Launch
    globals: tuple[str, ...] = ()  # module-scope lines this kernel needs (``memref.global`` of shared memory)
    max_registers: int | None = None  # ``.maxnreg`` to declare (needed for ``setmaxnreg`` to act)
    temporaries: tuple[Tensor, ...] = ()  # device buffers of its own (split-KV partials), zeroed before launch


# -- scalar functions: an epilogue, an elementwise body -----------------------------------------------------------


@dataclass(frozen=True)
class Operand:
    """An input of a scalar function.

    ``kind`` is ``"acc"`` (a GEMM's accumulator, f32), ``"acc2"`` (a dual
    GEMM's second accumulator) or ``"tensor"``. A tensor is read at the
    point's indices ``dims``: for each of the tensor's dimensions, the index
    of the iteration space that indexes it (a bias of a [M, N] result reads
    ``dims=(1,)``, a row scale ``dims=(0,)``, a residual ``dims=(0, 1)``).
    """

    kind: Literal["acc", "acc2", "tensor"]
    tensor: Tensor | None = None
    dims: tuple[int, ...] = ()


# emit(builder, operand values, point indices) -> the result's SSA name. Operand values have their tensor's
# element type (f32 for accumulators); indices are ``index`` values of the iteration space, outermost first.
ScalarEmit = Callable[["object", list[str], list[str]], str]


@dataclass(frozen=True)
class ScalarFn:
    """A scalar function of operands at one point of an iteration space, giving a value of ``dtype``."""

    operands: tuple[Operand, ...]
    dtype: str
    emit: ScalarEmit = field(compare=False)


# -- the specs ----------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class GemmTile:
    """A GEMM kernel's knobs."""

    BM: int = 128
    BN: int = 128
    BK: int = 32
    WM: int = 64  # a warp's (or on sm_90a a warpgroup's) tile of C
    WN: int = 64
    STAGES: int = 3
    SPLITK: int = 1
    # 1: the wgmma kernel's grid is at most the blocks the chip holds at once, each looping over output tiles
    PERSISTENT: int = 0
    # Output tiles ordered in groups of GROUP_M rows of tiles, each group walking N (1: row by row)
    GROUP_M: int = 1


@dataclass(frozen=True)
class GemmSpec:
    """``C[batch..., m, n] = epilogue(sum_k A[batch..., m, k] * B[batch..., k, n])``.

    ``a_layout`` is ``"mk"`` or ``"km"``, ``b_layout`` ``"kn"`` or ``"nk"``
    (their last two dimensions). Inputs are f16, bf16 or f32; products are
    accumulated in f32. The accumulator starts at zero, at ``init_value``,
    or at ``init`` (a tensor shaped as C, read before the products: a
    contraction into a non-filled output). ``b2`` makes a dual GEMM: a
    second product of the same A (same layout, same shape as ``b``) whose
    accumulator the epilogue reads as ``"acc2"``. Without an epilogue, C is
    the accumulator cast to ``c.dtype``.
    """

    name: str
    a: Tensor
    b: Tensor
    c: Tensor
    m: Dim
    n: Dim
    k: Dim
    batch: tuple[Dim, ...] = ()
    a_layout: Literal["mk", "km"] = "mk"
    b_layout: Literal["kn", "nk"] = "kn"
    init_value: float = 0.0
    init: Tensor | None = None
    b2: Tensor | None = None
    epilogue: ScalarFn | None = None
    tile: GemmTile = GemmTile()


@dataclass(frozen=True)
class Reduction:
    """One reduction of a row: ``combine`` (``"add"``, ``"max"``, ``"min"``, ``"mul"``) of ``value`` over the
    row's columns, starting from ``init``. ``value``'s operands may read the reductions before it
    (kind ``"tensor"`` with the reduction's name as the tensor name is not used; see :class:`RowSpec`)."""

    name: str
    combine: Literal["add", "max", "min", "mul"]
    init: float
    value: ScalarFn  # over the point (row indices..., column indices...)


@dataclass(frozen=True)
class RowOutput:
    """A tensor written by a row kernel: over the whole row (``per_row=False``, shape ``rows + cols``), or
    once per row (``per_row=True``, shape ``rows``)."""

    tensor: Tensor
    value: ScalarFn
    per_row: bool = False


@dataclass(frozen=True)
class RowSpec:
    """A row kernel: for each row (the outer ``rows`` dimensions), the reductions over its ``cols`` (the inner
    dimensions) in order, then the outputs.

    A :class:`ScalarFn`'s operands are tensors read at the point, or a
    previous reduction's result: an :class:`Operand` of kind ``"tensor"``
    whose ``tensor`` is ``Tensor(name=<the reduction's name>, dtype="f32", shape=())``
    and ``dims=()``. The point's indices are the row's, then the column's.
    """

    name: str
    rows: tuple[Dim, ...]
    cols: tuple[Dim, ...]
    reductions: tuple[Reduction, ...]
    outputs: tuple[RowOutput, ...]


@dataclass(frozen=True)
class AttentionTile:
    """The attention kernels' knobs, one set for all of them.

    - the mma.sync prefill kernel (:mod:`~prism.codegen.gpu.attention`):
      ``BQ`` (query rows per block, 16 per warp) and ``BK`` (keys per
      shared tile); its K and V tiles are always two stages deep;
    - the sm_90a TMA/wgmma prefill kernel (:mod:`~prism.codegen.gpu.attention_sm90`):
      ``BQ`` (64 or 128: one or two consumer warpgroups of 64 rows, taking
      turns when two), ``BK`` (64 or 128) and ``STAGES`` (the depth of its
      K and V rings);
    - the split-KV decode kernel: ``DECODE_BK`` (keys per shared tile) and
      ``DECODE_WARPS`` (warps per block, each its own key share).
    """

    BQ: int = 64
    BK: int = 64
    DECODE_BK: int = 32
    DECODE_WARPS: int = 2
    STAGES: int = 2

    def __post_init__(self) -> None:
        for name, value, allowed in (("BQ", self.BQ, (16, 32, 64, 128)), ("BK", self.BK, (16, 32, 64, 128)),
                                     ("DECODE_BK", self.DECODE_BK, (16, 32, 64)),
                                     ("DECODE_WARPS", self.DECODE_WARPS, (1, 2, 4, 8)),
                                     ("STAGES", self.STAGES, (2, 3, 4))):
            if value not in allowed:
                raise ValueError(f"AttentionTile.{name} = {value}: expected one of {allowed}")


@dataclass(frozen=True)
class AttentionSpec:
    """``O = softmax(scale * Q K^T (+ causal mask)) V`` per batch index.

    Q is [batch..., q, d], K [batch..., kv, d] (``k_layout="nd"``) or
    [batch..., d, kv] (``"dn"``), V [batch..., kv, dv], O [batch..., q, dv].
    Scores and the softmax are f32; P is cast to V's type for the second
    product. ``causal`` masks key j > query i + (kv - q).
    """

    name: str
    q: Tensor
    k: Tensor
    v: Tensor
    o: Tensor
    batch: tuple[Dim, ...]
    sq: Dim
    skv: Dim
    d: int
    dv: int
    scale: float
    k_layout: Literal["nd", "dn"] = "nd"
    causal: bool = False
    splits: int = 0  # decode: key shares per (batch, query row); 0 lets the emitter choose
    tile: AttentionTile | None = None  # the search's choice; None: each kernel's own default


@dataclass(frozen=True)
class PointwiseSpec:
    """``out[p] = value(p)`` over the whole of ``out``'s shape: elementwise ops, broadcasts, transposes,
    casts, fills that are not an accumulator's start, of any rank."""

    name: str
    out: Tensor
    value: ScalarFn


# body(builder, input values, output values, loop indices) -> the yielded values, one per output. Output values
# are the running values of the outputs at the point (the accumulators of reduction loops).
GenericBody = Callable[["object", list[str], list[str], list[str]], list[str]]


@dataclass(frozen=True)
class GenericSpec:
    """Any ``linalg.generic``: one thread per point of the parallel loops, the reduction loops run by it.

    ``input_maps`` and ``output_maps`` are MLIR affine maps as text over the
    loops (``affine_map<(d0, d1, d2) -> (d0, d2)>``); output maps are
    projected permutations of the parallel loops. Each output starts from
    ``inits[k]``: a float constant (a fused fill), a tensor shaped as the
    output to read at the point, or None (the output's buffer holds its
    initial value already).
    """

    name: str
    loops: tuple[Dim, ...]
    iterators: tuple[str, ...]  # "parallel" | "reduction", per loop
    inputs: tuple[Tensor, ...]
    input_maps: tuple[str, ...]
    outputs: tuple[Tensor, ...]
    output_maps: tuple[str, ...]
    inits: tuple[float | Tensor | None, ...]
    body: GenericBody = field(compare=False)
