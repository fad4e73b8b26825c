"""The GPU lowering's IR fix-ups between upstream pieces, and the PTX it ends with."""

from __future__ import annotations

from mlir import ir
from mlir.dialects import gpu

from prism.codegen.upstream import run_passes
from prism.infra.errors import PassFailed


def _i64(value: int) -> ir.IntegerAttr:
    return ir.IntegerAttr.get(ir.IntegerType.get_signless(64), value)


def convert_mma_kernels(module: ir.Module) -> None:
    """Turn the 16x8x16 contractions into ldmatrix + mma.sync, kernel by kernel.

    SIMT contractions are lowered already, so kernels that still hold a
    vector.contract are the MMA ones; the conversion runs on those alone
    because it also tries to convert unrelated scalar code and fails there.
    A contraction left afterwards has an operand layout it cannot map.
    """
    kernels: list[ir.Operation] = []

    def visit(op: ir.Operation) -> ir.WalkResult:
        if op.name == "gpu.func" and "vector.contract" in str(op):
            kernels.append(op)
        return ir.WalkResult.ADVANCE
    module.operation.walk(visit)
    for kernel in kernels:
        run_passes(kernel, "gpu.func(convert-vector-to-gpu{use-nvgpu=true},canonicalize,cse)", "mma.sync conversion")
        if "vector.contract" in str(kernel):
            raise PassFailed("a tensor-core (MMA=1) tile did not lower to mma.sync; its operand layout is not "
                             "supported", location=str(kernel.location))


def align_shared_globals(module: ir.Module) -> None:
    """16-byte alignment lets the 128-bit shared-memory accesses of vector
    copies and ldmatrix be legal."""
    def visit(op: ir.Operation) -> ir.WalkResult:
        if op.name == "memref.global":
            op.attributes["alignment"] = _i64(16)
        return ir.WalkResult.ADVANCE
    module.operation.walk(visit)


def numeric_shared_space(module: ir.Module) -> None:
    """Rewrite ``#gpu.address_space<workgroup>`` as NVPTX's address space 3.

    The NVVM pipeline lowers vector loads and stores with a type converter
    that knows no GPU memory-space attributes, so vector copies into shared
    memory would be left unconverted; a numeric space needs no mapping.
    Printing and reparsing is the one public way to rewrite every type.
    """
    text = module.operation.get_asm(print_generic_op_form=True, enable_debug_info=True)
    text = text.replace("#gpu.address_space<workgroup>", "3")
    fresh = ir.Module.parse(text, context=module.context)
    for op in list(module.body.operations):
        op.operation.erase()
    for op in list(fresh.body.operations):
        op.operation.detach_from_parent()
        module.body.append(op)
    for name in list(fresh.operation.attributes):
        module.operation.attributes[name] = fresh.operation.attributes[name]


def drop_timings(module: ir.Module) -> None:
    """Remove the serializer's wall-clock properties from every gpu.object.

    The NVVM serializer records how long each step took (``...TimeInMs``);
    keeping them would make the output differ from run to run.
    """
    for op in module.body.operations:
        if op.operation.name != "gpu.binary":
            continue
        objects = []
        for attr in ir.ArrayAttr(op.attributes["objects"]):
            obj = gpu.ObjectAttr(attr)
            kept = {} if obj.properties is None else {
                named.name: named.attr for named in obj.properties if not named.name.endswith("TimeInMs")}
            objects.append(gpu.ObjectAttr.get(obj.target, obj.format, obj.object, ir.DictAttr.get(kept),
                                              obj.kernels))
        op.attributes["objects"] = ir.ArrayAttr.get(objects)


def collect_ptx(module: ir.Module) -> dict[str, str]:
    """PTX text by gpu.module name, in module order (each is one PTX file)."""
    ptx: dict[str, str] = {}
    for op in module.body.operations:
        if op.operation.name != "gpu.binary":
            continue
        name = ir.StringAttr(op.attributes["sym_name"]).value
        for obj in ir.ArrayAttr(op.attributes["objects"]):
            text = gpu.ObjectAttr(obj).object
            ptx[name] = (text.decode() if isinstance(text, bytes) else str(text)).rstrip("\0")
    return ptx
