"""Pieces of sm_90a kernels that any TMA + mbarrier + wgmma kernel writes the same way.

- **The ring.** Iteration ``it`` of a ``stages``-deep ring uses slot
  ``it % stages``; round ``it // stages`` waits for parity ``round & 1`` on
  the slot's *full* barrier (the consumer) and ``(round & 1) ^ 1`` on its
  *empty* barrier (the producer: a fresh barrier counts its previous phase as
  complete, so the first round does not wait).
- **TMA loads.** An operand's tile (:class:`TileOperand`)
  is loaded chunk by chunk (64 elements, one 128-byte swizzle row, along its
  contiguous dimension), every chunk completing bytes on one mbarrier.
- **Descriptors.** A wgmma shared-memory descriptor is the tile's shared
  address over 16 in its low bits, with the operand's leading and stride
  byte offsets and the 128-byte swizzle; a wgmma operand inside the tile is
  the descriptor plus its byte offset over 16.
- **wgmma.** From descriptors (``nvvm.wgmma.mma_async``), and with A in
  registers, which the NVVM op of these MLIR wheels does not take: there it
  is PTX written through ``llvm.inline_asm``,
  ``wgmma.mma_async.sync.aligned.m64nNk16.f32.T.T {d...}, {a0, a1, a2, a3}, b-desc, p, 1, 1, trans-b``
  with the accumulator registers tied to the results. A thread's four A
  registers of an m64nNk16 step hold elements ``2r, 2r + 1`` (``r`` = 0..3)
  of the warp's 16 x 16 A slice in the order of the m64nN accumulator's
  elements ``8 s + 2r, 8 s + 2r + 1`` of key step ``s``: an accumulator
  rounded to 16 bits and packed in pairs is the A operand of the next
  product (:func:`register_a_elements`).
"""

from __future__ import annotations

from dataclasses import dataclass

from prism.codegen.gpu.spec import ELEMENT_BYTES, Dim, Tensor, TensorMap, numel_text
from prism.codegen.text import TextBuilder
from prism.targets.nvidia_registers import WARPGROUP as WARPGROUP  # the building blocks' warpgroup

# Elements of a 16-bit type in one 128-byte swizzle row: the chunk width of every shared tile.
CHUNK = 64
ROW_BYTES = 128
# Bytes between 8-row groups of a 128-byte-swizzled tile: the wgmma descriptors' stride offset.
GROUP_BYTES = 8 * ROW_BYTES
WGMMA_M, WGMMA_K = 64, 16
BOX_LIMIT = 256  # a TMA box's largest extent per dimension
SHARED_LIMIT = 227 * 1024  # shared memory per block on GH100
# The dynamic shared memory starts 1024-byte aligned after the static mbarriers: room kept for both.
SHARED_RESERVED = 1024
TMA_ROW_ALIGN = 16  # bytes: a tensor map's global strides are multiples of this
WAIT_TICKS = 10_000_000
SHARED = "#gpu.address_space<workgroup>"
SWIZZLE_128B = 1 << 62  # a wgmma descriptor's layout field for the 128-byte swizzle


# -- operand tiles -----------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class TileOperand:
    """A, B or the dual's B2 as the kernel holds it: a tensor map, and a tile of chunks in each stage of the
    shared ring, read by wgmma through descriptors."""

    tensor: Tensor
    rows: int  # the tile's M (A) or N (B) extent
    k_major: bool  # K is the contiguous dimension
    batched: bool  # the tensor has the batch dimensions (else it is shared by every batch index)
    inner: Dim  # the tensor's contiguous dimension
    outer: Dim
    offset: int  # bytes from the stage's start
    bk: int

    @property
    def chunks(self) -> int:
        return self.bk // CHUNK if self.k_major else self.rows // CHUNK

    @property
    def chunk_bytes(self) -> int:
        return (self.rows if self.k_major else self.bk) * ROW_BYTES

    @property
    def bytes(self) -> int:
        return self.chunks * self.chunk_bytes

    @property
    def box(self) -> tuple[int, ...]:
        """Innermost first; a batched map takes one batch index per box."""
        box = (CHUNK, self.rows if self.k_major else self.bk)
        return box + (1,) if self.batched else box

    def tensormap(self, batch: tuple[Dim, ...]) -> TensorMap:
        """The map cuTensorMapEncodeTiled makes: batch dimensions flattened into one (the tensor is contiguous)."""
        elem = ELEMENT_BYTES[self.tensor.dtype]
        dims = (str(self.inner), str(self.outer))
        strides: tuple[str, ...] = (_product(self.inner, elem),)
        if self.batched:
            dims += (numel_text(batch),)
            strides += (_product(self.inner, self.outer, elem),)
        return TensorMap(self.tensor.name, self.tensor.dtype, dims, strides, self.box, swizzle=ROW_BYTES)

    def descriptor_type(self) -> str:
        shape = "x".join(str(d) for d in reversed(self.box))
        return (f"!nvgpu.tensormap.descriptor<tensor = memref<{shape}x{self.tensor.dtype}, 3>, "
                "swizzle = swizzle_128b, l2promo = none, oob = zero, interleave = none>")

    def tile_offset(self, mn: int, kstep: int) -> int:
        """Bytes from the operand's tile to the wgmma operand at row ``mn`` of the tile and K step ``kstep``."""
        k = kstep * WGMMA_K
        if self.k_major:
            return (k // CHUNK) * self.chunk_bytes + mn * ROW_BYTES + (k % CHUNK) * 2
        return (mn // CHUNK) * self.chunk_bytes + k * ROW_BYTES

    def descriptor_bits(self) -> int:
        """A wgmma descriptor's fields other than the address: leading and stride byte offsets, swizzle."""
        leading = 1 if self.k_major else self.chunk_bytes >> 4  # K-major swizzled tiles ignore it
        return (leading << 16) | ((GROUP_BYTES >> 4) << 32) | SWIZZLE_128B


def _product(*factors: Dim) -> str:
    """The product of ``factors`` as an expression, its static part folded."""
    static, names = 1, []
    for f in factors:
        if isinstance(f, int):
            static *= f
        else:
            names.append(str(f))
    return " * ".join(names + ([str(static)] if static != 1 or not names else []))


def index_op(t: TextBuilder, kind: str, a: str, b: str, hint: str = "v") -> str:
    """``arith.<kind> a, b : index``."""
    return t.value(f"arith.{kind} {a}, {b} : index", hint)


def i64_op(t: TextBuilder, kind: str, a: str, b: str | int) -> str:
    """``arith.<kind> a, b : i64``; an integer ``b`` becomes a constant."""
    if isinstance(b, int):
        b = t.value(f"arith.constant {b} : i64", "k")
    return t.value(f"arith.{kind} {a}, {b} : i64", "d")


# -- the ring ------------------------------------------------------------------------------------------------------


def ring_position(t: TextBuilder, it: str, stages: int, producer: bool) -> tuple[str, str]:
    """The slot of iteration ``it`` and the parity its barrier wait takes (the empty barrier's for the
    producer, the full barrier's for a consumer)."""
    slot = index_op(t, "remui", it, t.const(stages), "slot")
    odd = index_op(t, "andi", index_op(t, "divui", it, t.const(stages)), t.const(1))
    parity = t.value(f"arith.cmpi {'eq' if producer else 'ne'}, {odd}, {t.const(0)} : index", "parity")
    return slot, parity


@dataclass(frozen=True)
class Barriers:
    """A group of ``count`` mbarriers in shared memory, by its SSA name."""

    group: str
    count: int

    @staticmethod
    def create(t: TextBuilder, count: int, hint: str) -> Barriers:
        """A group of ``count`` mbarriers (to be initialized by one thread, then fenced)."""
        return Barriers(t.value(f"nvgpu.mbarrier.create -> {_group_type(count)}", hint), count)

    @property
    def type(self) -> str:
        return _group_type(self.count)

    def init(self, t: TextBuilder, arrivals: int) -> None:
        """Every barrier initialized to expect ``arrivals`` arrivals a phase."""
        for s in range(self.count):
            t.add(f"nvgpu.mbarrier.init {self.group}[{t.const(s)}], {t.const(arrivals)} : {self.type}")

    def wait(self, t: TextBuilder, slot: str, parity: str) -> None:
        """Wait until the phase of parity ``parity`` of barrier ``slot`` completes."""
        t.add(f"nvgpu.mbarrier.try_wait.parity {self.group}[{slot}], {parity}, {t.const(WAIT_TICKS)} : "
              f"{self.type}")

    def expect_bytes(self, t: TextBuilder, slot: str, count: int) -> None:
        """Arrive on barrier ``slot`` announcing ``count`` bytes of TMA to complete on it."""
        t.add(f"nvgpu.mbarrier.arrive.expect_tx {self.group}[{slot}], {t.const(count)} : {self.type}")

    def arrive(self, t: TextBuilder, slot: str) -> None:
        """One arrival on barrier ``slot``."""
        t.value(f"nvgpu.mbarrier.arrive {self.group}[{slot}] : {self.type} -> !nvgpu.mbarrier.token", "token")


def _group_type(count: int) -> str:
    return f"!nvgpu.mbarrier.group<memorySpace = {SHARED}, num_barriers = {count}>"


# -- TMA -----------------------------------------------------------------------------------------------------------


def tma_load(t: TextBuilder, shared: str, tmap: str, op: TileOperand, barrier: Barriers, slot: str, tile_at: str,
             k0: str, mn0: str, batch: str | None) -> None:
    """The TMA loads of ``op``'s chunks into its tile at byte ``tile_at`` of ``shared``, from K index ``k0``
    and M/N index ``mn0`` (and batch index ``batch`` for a batched map), completing on ``barrier[slot]``."""
    shape = "x".join(str(d) for d in reversed(op.box))
    view_type = f"memref<{shape}x{op.tensor.dtype}, {SHARED}>"
    for c in range(op.chunks):
        at = index_op(t, "addi", tile_at, t.const(c * op.chunk_bytes))
        view = t.value(f"memref.view {shared}[{at}][] : memref<?xi8, {SHARED}> to {view_type}", "tile")
        step = t.const(c * CHUNK)
        coords = [index_op(t, "addi", k0, step), mn0] if op.k_major else [index_op(t, "addi", mn0, step), k0]
        if op.batched:
            coords.append(batch)
        t.add(f"nvgpu.tma.async.load {tmap}[{', '.join(coords)}], {barrier.group}[{slot}] to {view} : "
              f"{op.descriptor_type()}, {barrier.type} -> {view_type}")


# -- descriptors and wgmma -----------------------------------------------------------------------------------------


def shared_descriptor(t: TextBuilder, shared: str, byte_offset: str, op: TileOperand) -> str:
    """The wgmma descriptor (i64) of ``op``'s layout starting at byte ``byte_offset`` (an index value) of the
    dynamic shared memory ``shared``."""
    address = t.value(f"memref.extract_aligned_pointer_as_index {shared} : memref<?xi8, {SHARED}> -> index",
                      "addr")
    start = t.value(f"arith.index_cast {index_op(t, 'addi', address, byte_offset)} : index to i64", "d")
    return i64_op(t, "ori", i64_op(t, "shrui", start, 4), op.descriptor_bits())


def descriptor_at(t: TextBuilder, descriptor: str, byte_offset: int | str) -> str:
    """``descriptor`` moved by ``byte_offset`` bytes (a multiple of 16; an int, or an i64 value of bytes / 16)."""
    if isinstance(byte_offset, int):
        return descriptor if byte_offset == 0 else i64_op(t, "addi", descriptor, byte_offset >> 4)
    return i64_op(t, "addi", descriptor, byte_offset)


def accumulator_type(n: int) -> str:
    """The f32 accumulator of an m64nN wgmma as a struct of its thread's N / 2 elements."""
    return "!llvm.struct<(" + ", ".join(["f32"] * (n // 2)) + ")>"


def wgmma_shared(t: TextBuilder, a: str, b: str, acc: str, n: int, dtype: str, a_k_major: bool,
                 b_k_major: bool, accumulate: bool = True) -> str:
    """``acc (+)= A * B`` for one m64nNk16 step, A and B read through descriptors (an MN-major operand
    transposed); without ``accumulate`` the product replaces ``acc``."""
    acc_type = accumulator_type(n)
    return t.value(
        f"nvvm.wgmma.mma_async {a}, {b}, {acc}, #nvvm.shape<m = {WGMMA_M}, n = {n}, k = {WGMMA_K}>, "
        f"D [<f32>, #nvvm.wgmma_scale_out<{'one' if accumulate else 'zero'}>, <wrapped>], "
        f"A [<{dtype}>, #nvvm.wgmma_scale_in<one>, <{'row' if a_k_major else 'col'}>], "
        f"B [<{dtype}>, #nvvm.wgmma_scale_in<one>, <{'col' if b_k_major else 'row'}>] : "
        f"{acc_type} -> {acc_type}", "acc")


def wgmma_register_a(t: TextBuilder, a: list[str], b: str, acc: list[str], dtype: str, b_k_major: bool) -> str:
    """``acc += A * B`` for one m64nNk16 step (N = 2 * len(acc)) with A in four i32 registers (16-bit pairs)
    and B through a descriptor: the PTX instruction inline, the accumulators tied to its results. Returns
    the accumulator struct."""
    n = 2 * len(acc)
    count = len(acc)
    d = ", ".join(f"${i}" for i in range(count))
    regs = ", ".join(f"${2 * count + i}" for i in range(4))
    asm = (f"{{ .reg .pred p; setp.ne.b32 p, 1, 0; wgmma.mma_async.sync.aligned.m{WGMMA_M}n{n}k{WGMMA_K}.f32."
           f"{dtype}.{dtype} {{{d}}}, {{{regs}}}, ${2 * count + 4}, p, 1, 1, {0 if b_k_major else 1}; }}")
    constraints = ",".join(["=f"] * count + [str(i) for i in range(count)] + ["r"] * 4 + ["l"])
    types = ", ".join(["f32"] * count + ["i32"] * 4 + ["i64"])
    return t.value(f'llvm.inline_asm has_side_effects asm_dialect = att "{asm}", "{constraints}" '
                   f"{', '.join(acc + a + [b])} : ({types}) -> {accumulator_type(n)}", "acc")


def register_a_elements(kstep: int) -> list[tuple[int, int]]:
    """The accumulator elements of an m64nN wgmma whose 16-bit pairs make the four A registers of key step
    ``kstep`` of the next m64nNk16 wgmma: register ``r`` holds elements ``8 kstep + 2r`` (low half) and
    ``8 kstep + 2r + 1``."""
    return [(8 * kstep + 2 * r, 8 * kstep + 2 * r + 1) for r in range(4)]


def fence(t: TextBuilder) -> None:
    """Order the registers written before against the wgmmas after (accumulators, register A)."""
    t.add("nvvm.wgmma.fence.aligned")


def commit(t: TextBuilder) -> None:
    """Close the group of wgmmas issued since the last one."""
    t.add("nvvm.wgmma.commit.group.sync.aligned")


def wait(t: TextBuilder, pending: int) -> None:
    """Wait until at most ``pending`` groups of wgmmas are in flight (groups complete in order)."""
    t.add(f"nvvm.wgmma.wait.group.sync.aligned {pending}")


def fence_registers(t: TextBuilder, values: list[str], typ: str) -> list[str]:
    """``values`` (all of ``typ``, f32 or i32) passed through an empty side-effecting inline asm: the values
    after it cannot be computed before the side-effecting ops before it (a wgmma wait), nor the values before
    it after the ops after it (a wgmma fence), however LLVM schedules; it emits no instruction."""
    if not values:
        return values
    code = "f" if typ == "f32" else "r"
    count = len(values)
    constraints = ",".join([f"={code}"] * count + [str(i) for i in range(count)])
    struct = "!llvm.struct<(" + ", ".join([typ] * count) + ")>"
    out = t.value(f'llvm.inline_asm has_side_effects asm_dialect = att "", "{constraints}" {", ".join(values)} : '
                  f"({', '.join([typ] * count)}) -> {struct}", "pin")
    return [t.value(f"llvm.extractvalue {out}[{i}] : {struct}", "r") for i in range(count)]
