"""The host code generator: tensor-level Linalg to the LLVM dialect, in named stages.

Contractions carrying ``prism.roles`` / ``prism.choice`` (and plain
``linalg.matmul`` / ``linalg.batch_matmul`` without them, with default choice
values) are scheduled with their knobs. An f32 contraction laid out as
``A[b,m,k] x B[b,k,n] -> C[b,m,n]`` becomes Prism's own GEMM kernel, inlined
in place (:mod:`.kernel`); where it reads an invariant weight, the function
also gets ``@f_prepare`` and ``@f_apply`` (:mod:`.prepare`). Every other
contraction gets a data-tiling schedule written in the transform dialect:

1. pack: the op is rewritten over blocked operands, ``A -> [.. M/RM][K/KU][KU][RM]``,
   ``B -> [.. N/RN][K/KU][KU][RN]``, ``C -> [.. M/RM][N/RN][RM][RN]`` (``linalg.pack``
   pads ragged edges, so every micro-tile is full and static); packs and the
   final unpack are lowered to pad + transpose, each transpose runs as an
   scf.forall of register-sized vector tiles, and the unpack writes the result;
2. threads: ``scf.forall`` over ``TM x TN`` blocks of C (and batch), flattened
   into one dimension and run in parallel on Prism's thread pool (see :mod:`.pool`);
3. cache: a loop over ``TK`` slices of K, then loops over the RN-wide column
   panels and the RM-high row panels of the block;
4. registers: an innermost K loop whose body is an ``RM x RN x KU`` contraction,
   vectorized into KU rank-1 FMA updates; the C accumulator is hoisted out of
   the K loop so that it lives in registers.

With ``PACK = 0`` the same loop nest runs on the unpacked operands, with
masked vectors at ragged edges. The one elementwise op that reads a kernel
GEMM's result runs inside the kernel as its epilogue (:mod:`.epilogue`), and
two GEMMs of one A that it reads both become one dual GEMM. Attention (its
six ops: two contractions, a row max, exp, a row sum and a division) becomes
one online-softmax kernel that never stores the scores (:mod:`.attention`).
Elementwise ops and reductions over the last axis, over the same rows,
become one row kernel per group, vectorized and threaded (:mod:`.rows`).
Every other op takes the generic path: bufferization, then loops.

Before::

    %r = linalg.matmul {prism.roles = ["m", "n", "k"],
                        prism.choice = {TM = 96, TN = 256, TK = 256, RM = 6, RN = 16, PACK = 1}}
           ins(%a, %b : tensor<?x1024xf32>, tensor<1024x64xf32>) outs(%c : tensor<?x64xf32>) ...

After::

    llvm.func @mm(...) attributes {llvm.emit_c_interface, prism.signature = (tensor<?x1024xf32>, ...) -> ...}
    llvm.func @_mlir_ciface_mm(...)  // plus thread-pool tasks and a vectorized micro-kernel

Each public function keeps its tensor-level type in the ``prism.signature``
attribute (a ``TypeAttr``), which :mod:`prism.runtime.cpu` reads.

The stages, each printable with ``--print-ir-after=NAME``:

- ``cpu-tile``: the attention and GEMM kernels and the schedule above on tensors (packs, blocks,
  micro-kernels, vectorized pack transposes), and the prepared weights' functions;
- ``cpu-bufferize``: one-shot bufferization, with C micro-tiles hoisted into registers, and rank-2
  copies as parallel vector loops;
- ``cpu-vector``: vector ops down to the 1-D form LLVM takes;
- ``cpu-parallel``: parallel blocks become flat ``scf.parallel`` loops;
- ``cpu-llvm``: each parallel loop a task for the thread pool, each ``cf.assert`` a call that the runtime
  raises as an error (:mod:`.assertions`), and everything to the LLVM dialect.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from mlir import ir

from prism.codegen.checks import check_expansions, check_module, reshape_dynamic_expansions
from prism.codegen.cpu import kernel_amx, kernel_bf16, rewrites, tasks
from prism.codegen.cpu.assertions import route_assertions
from prism.codegen.cpu.booleans import widen_booleans
from prism.codegen.cpu.epilogue import EpilogueMatch, as_dual, inline_with_epilogue, match_epilogue
from prism.codegen.cpu.kernel import KERNEL_NAME, KernelPlan, inline_kernel
from prism.codegen.cpu.prepare import Planned, prepare_weights
from prism.codegen.cpu.rows import fuse_rows
from prism.codegen.cpu.schedule import (
    CpuGemm,
    CpuSchedule,
    collect_gemms,
    gemm_script,
    kernel_plan,
    kernel_serves_as_written,
    starts_at_zero,
    tag_transposes,
    transpose_script,
)
from prism.codegen.cpu.text import erase_unused_inits, inline_function
from prism.codegen.shapes import attach_shape_rules, shape_rules
from prism.codegen.stages import Lowering, run_stages
from prism.codegen.upstream import apply_script, run_passes
from prism.infra import attrs
from prism.infra.diagnostics import describe_ops
from prism.infra.errors import PipelineError, UnsupportedOp
from prism.infra.ir import normalize_program
from prism.infra.passbase import PassContext
from prism.kernels import host_gemm
from prism.search.families import registered_families
from prism.targets.host import host_target


class CpuLowering(Lowering):
    """One lowering of one module for the host, on ``threads`` worker threads, as named stages."""

    def __init__(self, threads: int, ctx: PassContext, vector_bits: int = 256, copy_in_phase_bytes: int | None = None):
        if threads < 1:
            raise PipelineError(f"threads must be at least 1, got {threads}")
        self.threads = threads
        self.ctx = ctx
        self.lanes = max(vector_bits // 32, 1)  # f32 lanes of one vector register
        # The largest B the direct kernel copies into panels in a phase of its own (None: the host target's)
        self.copy_in_phase_bytes = host_target().copy_in_phase_bytes if copy_in_phase_bytes is None \
            else copy_in_phase_bytes
        # Per function, the rules among its arguments' sizes that its ops assume (:mod:`prism.codegen.shapes`):
        # derived from the program as cpu-tile receives it, put on the functions as they become LLVM.
        self.shape_rules: dict[str, ir.Attribute] = {}

    def tile(self, module: ir.Module) -> None:
        """Fuse attention (:mod:`.attention`), schedule every contraction (see :mod:`.schedule`), then vectorize
        the pack transposes."""
        self._normalize(module)
        self.shape_rules = shape_rules(module)
        # Registered families' kernels first (attention's: :mod:`.attention`), each named by its family's kind.
        kernels = [Kernel(family.kind, ops[0], ops[1:]) for family in registered_families() if "cpu" in family.kernels
                   for ops in family.kernels["cpu"](module, self.lanes, self.threads, self.ctx)]
        transform_path: list[CpuGemm] = []  # in tag order
        bf16_kernels: list[Kernel] = []
        planned = self._plan_gemms(module, transform_path, bf16_kernels)
        kernels += bf16_kernels
        kernels += [Kernel(kind, ops[0], ops[1:]) for kind, ops in prepare_weights(module, planned, self.ctx,
                                                                                   self.lanes)]
        kernels += [Kernel("gemm (transform path)", *_described(gemm.op)) for gemm in transform_path]
        kernels += self._inline_kernels(planned, transform_path)
        kernels += [Kernel("rows", ops[0], ops[1:]) for ops in fuse_rows(module, self.lanes, self.threads)]
        kernels += [Kernel("loops", *_described(op)) for op in _generic_path_ops(module)]
        self.ctx.report["kernels"] = _by_function(module, kernels)
        apply_script(module, gemm_script(transform_path), "tiling and vectorization")
        rewrites.forward_copies_into_empty(module)
        tiles = tag_transposes(module)
        if tiles:
            apply_script(module, transpose_script(tiles), "pack vectorization")

    @staticmethod
    def _normalize(module: ir.Module) -> None:
        """Refuse what cannot be lowered, then put the program in the form the kernels match: the program's calls
        inlined and normalized (:func:`~prism.infra.ir.normalize_program`), crowded expansions as reshapes, booleans
        in bytes; each function's signature kept for the runtime."""
        check_module(module)
        rewrites.inline_calls(module)
        normalize_program(module)
        reshape_dynamic_expansions(module)
        rewrites.record_signatures(module)
        widen_booleans(module)

    def _plan_gemms(self, module: ir.Module, transform_path: list[CpuGemm], bf16_kernels: list[Kernel]) \
            -> list[Planned]:
        """The contractions Prism's GEMM kernel can run, with their plans; bf16 products on AMX tiles or dot
        products run now (their kernels join ``bf16_kernels``); the others join ``transform_path`` (tagged before
        prepare_weights, which leaves their functions alone)."""
        planned: list[Planned] = []
        for gemm in collect_gemms(module, self.ctx):
            if self._amx(gemm, bf16_kernels) or self._bf16_dot(gemm, bf16_kernels):
                continue
            self.ctx.progress(f"cpu-tile: {gemm.op.name} at {gemm.op.location}: {gemm.schedule}")
            plan = kernel_plan(gemm, KERNEL_NAME, self.lanes, self.threads, self.copy_in_phase_bytes)
            if plan is None:
                _to_transform_path(gemm, transform_path)
            else:
                planned.append(Planned(gemm, plan, written_path=kernel_serves_as_written(gemm, plan)))
        return planned

    def _amx(self, gemm: CpuGemm, kernels: list[Kernel]) -> bool:
        """Run ``gemm`` as the AMX tile kernel (:mod:`.kernel_amx`) where the host has AMX and the product is of
        bf16 operands into f32, its tiles from the op's ``prism.choice``, its kernel joining ``kernels``;
        whether it did."""
        op = gemm.op
        types = [v.type for v in op.operands]
        roles = [[gemm.roles[d] for d in dims] for dims in gemm.maps]
        if not host_target().amx or len(types) != 3 or not kernel_bf16.takes(*types, roles):
            return False
        choice = op.attributes[attrs.CHOICE] if attrs.CHOICE in op.attributes else None
        tiles = kernel_amx.choice_values(choice, str(op.location))
        try:
            plan = kernel_amx.AmxPlan(name=f"{KERNEL_NAME}_amx", a_type=str(types[0]), b_type=str(types[1]),
                                      c_type=str(types[2]), zero_init=starts_at_zero(op), workers=self.threads,
                                      **tiles)
        except UnsupportedOp as error:  # the choice's tiles: the op's location goes with the refusal
            raise UnsupportedOp(error.message, location=str(op.location)) from None
        kernels.append(Kernel("gemm (AMX tiles)", *_described(op)))
        inline_function(op, kernel_amx.kernel_text(plan), list(op.operands))
        return True

    def _bf16_dot(self, gemm: CpuGemm, kernels: list[Kernel]) -> bool:
        """Run ``gemm`` as the bf16 dot-product kernel (:mod:`.kernel_bf16`) where the host has one and the
        product is of bf16 operands into f32, its kernel joining ``kernels``; whether it did."""
        op = gemm.op
        types = [v.type for v in op.operands]
        roles = [[gemm.roles[d] for d in dims] for dims in gemm.maps]
        if not host_target().bf16_dot or len(types) != 3 or not kernel_bf16.takes(*types, roles):
            return False
        kernels.append(Kernel("gemm (bf16 dot products)", *_described(op)))
        plan = kernel_bf16.plan_for(f"{KERNEL_NAME}_bf16", str(types[0]), str(types[1]), str(types[2]),
                                    starts_at_zero(op), self.threads)
        inline_function(op, kernel_bf16.kernel_text(plan), list(op.operands))
        return True

    def _inline_kernels(self, planned: list[Planned], transform_path: list[CpuGemm]) -> list[Kernel]:
        """Write Prism's GEMM kernel in place of each planned contraction that runs as written: alone, with the
        elementwise op that reads it as its epilogue, or as a dual GEMM with a second product of the same A."""
        kernels: list[Kernel] = []
        seconds: list[Planned] = []  # GEMMs computed as a dual GEMM's second product
        for i, p in enumerate(planned):
            if any(p is q for q in seconds):
                continue
            if not p.written_path:
                kernels.append(Kernel("gemm (transform path)", *_described(p.op)))
                _to_transform_path(p.gemm, transform_path)
                continue
            fused = match_epilogue(p.op)
            if fused is None:
                kernels.append(Kernel("gemm", *_described(p.op)))
                inline_kernel(p.op, p.plan)
                continue
            function, ops = _described(p.op)
            second = _dual_partner(p, fused, planned[i + 1:])
            if second is None:
                kernels.append(Kernel("gemm + epilogue", function, ops + _described(fused.op)[1]))
                inline_with_epilogue(p.op, p.plan, list(p.op.operands), fused)
                continue
            q, index = second
            seconds.append(q)
            kernels.append(Kernel("dual gemm + epilogue", function,
                                  ops + _described(q.op)[1] + _described(fused.op)[1]))
            _inline_dual(p, q, as_dual(fused, index))
        return kernels

    def bufferize(self, module: ir.Module) -> None:
        """One-shot bufferization, each op writing into an empty tensor of its own; the self-copies of in-place
        slices are dropped."""
        rewrites.split_shared_inits(module)
        run_passes(module, rewrites.BUFFERIZE, "bufferization")
        rewrites.erase_self_copies(module)
        rewrites.vectorize_copies(module, self.lanes * 4)

    def vectorize(self, module: ir.Module) -> None:
        """Lower vector ops to the 1-D form that convert-vector-to-llvm expects."""
        apply_script(module, rewrites.vector_script(), "vector lowering")

    def parallelize(self, module: ir.Module) -> None:
        """scf.forall to scf.parallel, each made one-dimensional."""
        run_passes(module, rewrites.FORALL_TO_PARALLEL, "conversion to parallel loops")
        rewrites.flatten_parallel_loops(module)

    def to_llvm(self, module: ir.Module) -> None:
        """Everything to the LLVM dialect, parallel loops as tasks on the thread pool (see :mod:`.tasks`), the
        program's run-time checks as calls into the runtime (see :mod:`.assertions`), each function with the rules
        among its sizes that the runtime checks before a call."""
        run_passes(module, rewrites.DEALLOCATE, "deallocation")
        attach_shape_rules(module, self.shape_rules)
        route_assertions(module)
        rewrites.check_byte_elements(module)
        tasks.outline_parallel_loops(module, self.threads)
        check_expansions(module)
        rewrites.expand_math(module)
        rewrites.check_c_names(module)
        run_passes(module, rewrites.TO_LLVM, "conversion to LLVM")
        tasks.define_launches(module)
        rewrites.check_lowered(module)

    # name, summary, method
    STAGES = (
        ("cpu-tile", "pack, tile and vectorize contractions on tensors", tile),
        ("cpu-bufferize", "tensors to buffers, C micro-tiles in registers, copies as vector loops", bufferize),
        ("cpu-vector", "vectors to 1-D", vectorize),
        ("cpu-parallel", "parallel blocks as flat scf.parallel loops", parallelize),
        ("cpu-llvm", "thread-pool tasks and the LLVM dialect", to_llvm),
    )


def _to_transform_path(gemm: CpuGemm, transform_path: list[CpuGemm]) -> None:
    """Tag ``gemm`` for the transform-dialect path (its tag is its index in ``transform_path``)."""
    gemm.op.attributes[attrs.CPU_CONTRACTION_TAG] = ir.IntegerAttr.get(ir.IntegerType.get_signless(64),
                                                                    len(transform_path))
    transform_path.append(gemm)


def _inline_dual(p: Planned, q: Planned, fused: EpilogueMatch) -> None:
    """One kernel in place of the products ``p`` and ``q`` of one A and the epilogue ``fused`` that reads both."""
    # A micro-tile covers half its columns in each product, and a task half its columns: its panels keep
    # their size. A task that sweeps B in place (a few rows) reads each product's rows in runs as long as its
    # plan chose, in slices of half as many rows (it reads two B's): benchmarks/RESULTS.md, "Eight-row products
    # on the Xeon: B prefetched two slices ahead".
    rn = _dual_rn(p.plan)
    step = rn // 2
    if p.plan.streams:
        tn = p.plan.tn
    elif p.plan.sweeps_b:
        tn = 2 * p.plan.tn
    else:
        tn = max(step, p.plan.tn // 2 // step * step)
    tk = host_gemm.dual_slice_depth(p.plan.tk, p.plan.sweeps_b)
    plan = dataclasses.replace(p.plan, epilogue=fused.epilogue, dual=q.plan.b_type, tn=tn, rn=rn, tk=tk)
    inline_kernel(fused.op, plan, [*p.op.operands, q.op.operands[1], *fused.inputs])
    init = q.op.operands[2]
    p.op.erase()
    q.op.erase()
    if not isinstance(init.owner, ir.Block):
        erase_unused_inits([init.owner.operation])


def _dual_rn(plan: KernelPlan) -> int | None:
    """The columns of a dual GEMM's micro-tile, half in each product, for a plan of one product: its RN where
    that is an even number of vectors; else twice RN, each product keeping the micro-tile the search chose,
    where the doubled accumulators (and a row of B) still fit the vector registers; else None."""
    vectors = plan.rn // plan.lanes
    if vectors % 2 == 0:
        return plan.rn
    fits = plan.rm * 2 * vectors + 2 * vectors <= host_target().vector_registers - 1
    return 2 * plan.rn if fits else None


def _dual_partner(p: Planned, fused: EpilogueMatch, later: list[Planned]) -> tuple[Planned, int] | None:
    """A kernel GEMM of ``later`` whose result is the epilogue's input ``index`` and which can be computed with
    ``p``'s as one dual GEMM (the same A, a B of the same type, both from zero, read by the epilogue alone),
    and that index; or None."""
    if not p.plan.zero_init or _dual_rn(p.plan) is None:
        return None
    for index, value in enumerate(fused.inputs):
        q = next((q for q in later if q.op.results[0] == value), None)
        if q is None or not q.written_path or not q.plan.zero_init \
                or q.plan.streams != p.plan.streams or q.plan.split_k != p.plan.split_k:
            continue
        if q.op.operands[0] == p.op.operands[0] and q.plan.b_type == p.plan.b_type \
                and q.plan.c_type == p.plan.c_type and len(list(value.uses)) == 1:
            return q, index
    return None


@dataclass(frozen=True)
class Kernel:
    """One kernel the host code runs: its kind, its function, and the ops it runs (``name at file:line:col``)."""

    kind: str
    function: str
    ops: list[str]


def _described(op: ir.Operation) -> tuple[str, list[str]]:
    function, *ops = describe_ops(_function_of(op), [op])
    return function, ops


def _function_of(op: ir.Operation) -> ir.Operation:
    while op.name != "func.func":
        op = op.parent
    return op


def _generic_path_ops(module: ir.Module) -> list[ir.Operation]:
    """The linalg ops left for the generic path (each a loop nest of its own), in walk order: every op but
    the transform path's contractions, dead ops, and fills read only by kernels (their inits)."""
    found: list[ir.Operation] = []

    def visit(op: ir.Operation) -> ir.WalkResult:
        if not op.name.startswith("linalg.") or op.name == "linalg.yield" or attrs.CPU_CONTRACTION_TAG in op.attributes:
            return ir.WalkResult.ADVANCE
        users = [use.owner.operation for result in op.results for use in result.uses]
        if op.results and not users:
            return ir.WalkResult.SKIP
        if op.name == "linalg.fill" and all(
                not u.name.startswith("linalg.") or attrs.CPU_CONTRACTION_TAG in u.attributes for u in users):
            return ir.WalkResult.SKIP
        found.append(op)
        return ir.WalkResult.SKIP

    module.operation.walk(visit, ir.WalkOrder.PRE_ORDER)
    return found


def _by_function(module: ir.Module, kernels: list[Kernel]) -> list[dict]:
    """The report's ``kernels``: per function, in module order, its kernels and the ops each runs."""
    names = [f"@{ir.StringAttr(op.attributes['sym_name']).value}" for op in module.body.operations
             if op.operation.name == "func.func"]
    return [{"function": name, "count": len(mine), "kernels": [{"kind": k.kind, "ops": k.ops} for k in mine]}
            for name in names if (mine := [k for k in kernels if k.function == name])]


def kernel_report(module: ir.Module, threads: int, vector_bits: int = 256, copy_in_phase_bytes: int | None = None
                  ) -> list[dict]:
    """The report's ``kernels`` for ``module``: what cpu-tile makes of a copy of it (``module`` is unchanged)."""
    ctx = PassContext()
    with module.context, ir.Location.unknown():
        copy = ir.Module.parse(module.operation.get_asm(enable_debug_info=True))
        CpuLowering(threads, ctx, vector_bits, copy_in_phase_bytes).tile(copy)
    return ctx.report["kernels"]


def lower(module: ir.Module, ctx: PassContext, threads: int, vector_bits: int = 256,
          copy_in_phase_bytes: int | None = None) -> None:
    """Lower ``module`` in place to the LLVM dialect, ready for :func:`prism.runtime.cpu.jit`.

    ``vector_bits`` is the width of the host's vector registers (256 with AVX2, 512 with AVX-512);
    ``copy_in_phase_bytes`` the largest B that the GEMM kernel copies into panels in a phase of its own (None:
    the host target's).
    """
    run_stages(CpuLowering(threads, ctx, vector_bits, copy_in_phase_bytes).stages(), module, ctx)


STAGE_NAMES = CpuLowering.stage_names()

__all__ = ["STAGE_NAMES", "CpuGemm", "CpuLowering", "CpuSchedule", "kernel_report", "lower"]
