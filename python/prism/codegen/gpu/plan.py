"""Planning a function for the GPU: its ops grouped into kernels, each a spec.

Ops are taken in order (after the program is normalized: calls inlined,
tensor arith as generics, named ops generalized, aggregates decomposed):

- **attention** (a registered family with a GPU kernel): its chain is one
  :class:`~.spec.AttentionSpec`;
- **contractions** that are GEMMs (batch, M, N and K loop groups, each
  contiguous in its operands; f16, bf16 or f32 inputs) become a
  :class:`~.spec.GemmSpec`. A fill of the output is the accumulator's
  start. The chain of elementwise ops that reads the result alone, and
  whose other inputs are ready before it, is its epilogue; two GEMMs of one
  A read by one elementwise op are a dual GEMM;
- a **reduction over the innermost loops** starts a row group
  (:class:`~.spec.RowSpec`): the elementwise ops and reductions after it
  over the same rows join it while what they read is ready before it;
- an **elementwise** op read once, by an op whose kernel computes its
  operands from scalar functions, has no buffer: it is recomputed there
  (:mod:`.compose`); other elementwise ops are a :class:`~.spec.PointwiseSpec`;
- **every other Linalg op** is a :class:`~.spec.GenericSpec`: correct for
  any indexing maps, one thread per point of its parallel loops;
- reshapes are views; ``tensor.empty`` and fills read only as
  accumulators' starts make no kernel. Anything else is refused at its op.

A kernel is placed at its first op; what it reads must be computed before
that (*ready*), which is what the fusion rules check.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from mlir import ir

from prism.codegen.gpu.body import body_problem, captured_arguments, emit_body, owner
from prism.codegen.gpu.buffers import VIEWS, Buffers
from prism.codegen.gpu.compose import Composer, Special, element_type, elementwise, literal
from prism.codegen.gpu.spec import (
    GemmSpec,
    GemmTile,
    GenericSpec,
    Operand,
    PointwiseSpec,
    Reduction,
    RowOutput,
    RowSpec,
    ScalarFn,
    Tensor,
)
from prism.infra import attrs
from prism.infra.errors import UnsupportedOp
from prism.infra.maps import map_dims
from prism.search.family import analyze_contraction

GEMM_TYPES = ("f16", "bf16", "f32")
_COMBINES = {"arith.addf": ("add", 0.0), "arith.maximumf": ("max", float("-inf")),
             "arith.maxnumf": ("max", float("-inf")), "arith.minimumf": ("min", float("inf")),
             "arith.minnumf": ("min", float("inf")), "arith.mulf": ("mul", 1.0)}
_SKIP = ("arith.constant", "tensor.empty", "bufferization.alloc_tensor", "func.return")


@dataclass
class Step:
    """One kernel's spec and the ops it computes (for the report). ``classes``: for a GEMM with a dynamic M,
    the tile of each size class (a condition over the sizes, and its tile): the search's choice at the class's
    size, from the family's domain pruned once; the kernel is then written once per class."""

    kind: str
    spec: object
    ops: list[ir.Operation]
    classes: tuple[tuple[str, GemmTile], ...] = ()


@dataclass
class FunctionPlan:
    """A function's kernels in launch order, and its buffers."""

    name: str
    inputs: list[Tensor]
    outputs: list[Tensor]
    temporaries: list[Tensor]
    sizes: dict[str, dict]
    steps: list[Step] = field(default_factory=list)


def fill_value(value: ir.Value) -> float | int | None:
    """The constant a fill (``linalg.fill``, or its generic form) or a splat constant gives ``value`` (an int for
    integer elements); None."""
    if isinstance(owner(value), ir.Block):
        return None
    op = owner(value)
    scalar = None
    if op.name == "linalg.fill":
        scalar = op.operands[0]
    elif op.name == "linalg.generic" and len(op.operands) == 2 and not isinstance(op.operands[0].type, ir.ShapedType):
        block = op.regions[0].blocks[0]
        ops = list(block.operations)
        if len(ops) == 1 and ops[0].operands[0] == block.arguments[0]:
            scalar = op.operands[0]
    elif op.name == "arith.constant" and isinstance(op.results[0].type, ir.ShapedType):
        attr = op.attributes["value"]
        return _number(attr.get_splat_value()) if isinstance(attr, ir.DenseElementsAttr) and attr.is_splat else None
    if scalar is None or isinstance(owner(scalar), ir.Block) or owner(scalar).name != "arith.constant":
        return None
    return _number(owner(scalar).attributes["value"])


def _number(attr: ir.Attribute) -> float | int | None:
    if isinstance(attr, ir.FloatAttr):
        return attr.value
    if isinstance(attr, ir.IntegerAttr) and str(attr.type) != "index":
        return attr.value
    return None


def _maps(op: ir.Operation) -> list[ir.AffineMap]:
    return [ir.AffineMapAttr(a).value for a in ir.ArrayAttr(op.attributes["indexing_maps"])]


def _iterators(op: ir.Operation) -> list[str]:
    return ["reduction" if "reduction" in str(a) else "parallel" for a in ir.ArrayAttr(op.attributes["iterator_types"])]


class _Planner:
    def __init__(self, func: ir.Operation, gpu_families: list, chip: str):
        self.func = func
        self.chip = chip
        self.buffers = Buffers(func)
        self.ops = [op.operation for op in func.regions[0].blocks[0].operations]
        self.position = {op: i for i, op in enumerate(self.ops)}
        self.ready: dict[ir.Value, int] = {arg: -1 for arg in func.regions[0].blocks[0].arguments}
        self.done: set[ir.Operation] = set()
        self.inlined_ops: set[ir.Operation] = set()
        self.materialized: set[ir.Value] = set()
        self.steps: list[Step] = []
        self.families = gpu_families
        self.composer = Composer(self._inlined, self._leaf_tensor, self._lazy_constant)
        self._bind_results()

    # -- values ---------------------------------------------------------------------------------------------------

    def _inlined(self, value: ir.Value) -> bool:
        return not isinstance(owner(value), ir.Block) and owner(value) in self.inlined_ops

    def _lazy_constant(self, value: ir.Value) -> float | None:
        """A fill's constant where the fill has no buffer (it is read as a scalar)."""
        return None if value in self.materialized else fill_value(value)

    def _leaf_tensor(self, value: ir.Value) -> Tensor:
        return self.buffers.tensor(value)

    def _bind_results(self) -> None:
        ret = self.ops[-1]
        self.outputs: list[Tensor] = []
        self.copies: list[tuple[ir.Value, Tensor]] = []
        bound: set[ir.Value] = set()
        for j, value in enumerate(ret.operands):
            root = value
            while not isinstance(owner(root), ir.Block) and owner(root).name in VIEWS:
                root = owner(root).operands[0]
            tensor = Tensor(f"result_{j}", element_type(value), self.buffers.shape(value))
            self.outputs.append(tensor)
            if isinstance(owner(root), ir.Block) or root in bound or fill_value(root) is not None:
                self.copies.append((value, tensor))
            else:
                bound.add(root)
                self.buffers.bind(root, Tensor(tensor.name, element_type(root), self.buffers.shape(root)))

    def _is_ready(self, values, before: int) -> bool:
        """Whether every value of ``values`` is computed by a kernel placed before ``before`` (or needs none)."""
        return all(self.ready.get(v, 10**9) < before or self._lazy_constant(v) is not None
                   or not isinstance(v.type, ir.ShapedType) or _empty(v) for v in values)

    def _leaves_ready(self, value: ir.Value, dims, specials, before: int) -> bool:
        return self._is_ready(self.composer.leaves(value, dims, specials), before)

    def _users(self, value: ir.Value) -> list[ir.Operation]:
        return [owner(use) for use in value.uses]

    def _returned(self, value: ir.Value) -> bool:
        return any(u.name == "func.return" for u in self._users(value))

    def _add(self, kind: str, spec, ops: list[ir.Operation], produced: list[ir.Value], at: int,
             classes: tuple = ()) -> None:
        self.steps.append(Step(kind, spec, ops, classes))
        for op in ops:
            self.done.add(op)
        for v in produced:
            self.ready[v] = at
            self.materialized.add(v)

    # -- the walk -------------------------------------------------------------------------------------------------

    def plan(self) -> FunctionPlan:
        self._claim_families()
        self._choose_inlined()
        for op in self.ops:
            if op in self.done or op in self.inlined_ops or op.name in _SKIP or _scalar(op):
                continue
            at = self.position[op]
            if op in self.claimed:
                if op in self.chains:
                    self._family(op, at)
                continue
            if op.name in VIEWS:
                self.buffers.view(op.results[0], op.operands[0])
                self.ready[op.results[0]] = self.ready.get(op.operands[0], at)
                continue
            if fill_value(op.results[0]) is not None:
                continue  # a constant: a buffer is written where a reader needs one (_materialize_fill)
            if self._gemm(op, at) or self._rows(op, at):
                continue
            self._single(op, at)
        for value, tensor in self.copies:
            self._copy(value, tensor)
        return FunctionPlan(_name(self.func), self.buffers.inputs, self.outputs, self.buffers.temporaries,
                            self.buffers.sizes.sources, self.steps)

    def _choose_inlined(self) -> None:
        """Elementwise ops read once by a kernel that composes scalar functions, and not returned."""
        for op in self.ops:
            if not elementwise(op) or body_problem(op) or fill_value(op.results[0]) is not None:
                continue
            users = self._users(op.results[0])
            if len(users) == 1 and users[0].name == "linalg.generic" and self._composes(users[0], op.results[0]):
                self.inlined_ops.add(op)

    def _composes(self, user: ir.Operation, value: ir.Value) -> bool:
        """Whether ``user`` reads ``value`` through a scalar function: as an elementwise op, or as a
        reduction's input, read through a projected permutation."""
        if body_problem(user) or user in self.claimed:
            return False
        if analyze_contraction(user) is not None:
            return False
        n_in = len(user.operands) - len(user.results)
        maps = _maps(user)
        return all(map_dims(maps[i]) is not None for i, v in enumerate(list(user.operands)[:n_in]) if v == value)

    def _materialize_inlined(self, value: ir.Value, at: int) -> None:
        """An inlined elementwise value that a kernel reading buffers needs: its own elementwise kernel."""
        op = owner(value)
        fn = self._own_fn(op, len(_iterators(op)))
        self.inlined_ops.discard(op)
        self._add("pointwise", PointwiseSpec(self._kname("pointwise"), self.buffers.tensor(value), fn), [op],
                  [value], at)

    def _materialize_fill(self, value: ir.Value, at: int) -> None:
        if value in self.materialized:
            return
        tensor = self.buffers.tensor(value)
        constant = fill_value(value)
        self._add("fill", PointwiseSpec(self._kname("fill"), tensor, _constant_fn(constant, tensor.dtype)),
                  [owner(value)], [value], at)

    def _kname(self, kind: str) -> str:
        return f"{_name(self.func)}_k{len(self.steps)}_{'_'.join(re.findall(r'[a-z0-9]+', kind))}"

    # -- families -------------------------------------------------------------------------------------------------

    def _claim_families(self) -> None:
        """The chains of registered families with a GPU kernel, each placed at its last op."""
        self.claimed: set[ir.Operation] = set()
        self.chains: dict[ir.Operation, tuple] = {}
        for op in reversed(self.ops):
            if op in self.claimed:
                continue
            for kind, kernel in self.families:
                found = kernel(op, self.buffers, self.chip)
                if found is None:
                    continue
                ops = [o.operation for o in found[0]]
                if any(o in self.claimed for o in ops) or ops[-1] != op:
                    continue
                self.claimed.update(ops)
                self.chains[op] = (kind, ops, found[1], found[2])
                break

    def _family(self, op: ir.Operation, at: int) -> None:
        kind, ops, spec, produced = self.chains[op]
        outside = [v for o in ops for v in o.operands if not _inside(v, ops)]
        if not self._is_ready(outside, at):
            raise UnsupportedOp(f"the {kind} chain reads a value computed after it starts", location=str(op.location))
        self._add(kind, spec(self._kname(kind)), list(ops), produced, at)

    # -- GEMMs ----------------------------------------------------------------------------------------------------

    def _gemm(self, op: ir.Operation, at: int) -> bool:
        gemm = _gemm_layout(op, self.buffers)
        if gemm is None:
            return False
        a, b, out = op.operands[0], op.operands[1], op.operands[2]
        if not self._is_ready([a, b], at):
            return False
        init = fill_value(out)
        init_tensor = None
        if init is None:
            if not self._is_ready([out], at):
                return False
            init_tensor = self.buffers.tensor(out)
        ops = [op]
        result = op.results[0]
        epilogue, target, second = self._epilogue(op, gemm, at, init)
        c_value = result if target is None else target
        if second is not None:
            ops.append(owner(second))
        chain = self._chain_ops(result, target)
        kind = "dual gemm + epilogue" if second is not None else ("gemm + epilogue" if epilogue else "gemm")
        spec = GemmSpec(
            name=self._kname(kind),
            a=self.buffers.tensor(a), b=self.buffers.tensor(b), c=self.buffers.tensor(c_value),
            m=gemm["m"], n=gemm["n"], k=gemm["k"], batch=gemm["batch"],
            a_layout=gemm["a_layout"], b_layout=gemm["b_layout"], init_value=init or 0.0, init=init_tensor,
            b2=self.buffers.tensor(owner(second).operands[1]) if second is not None else None,
            epilogue=epilogue, tile=_tile(op))
        self._add(kind, spec, ops + chain, [c_value], at, size_classes(op, spec, self.chip))
        return True

    def _epilogue(self, op: ir.Operation, gemm: dict, at: int, init):
        """The elementwise chain after ``op`` that its kernel can apply: (scalar function, the chain's last
        value, a dual GEMM's second result) or (None, None, None).

        The chain starts at the one elementwise op reading the product, element for element, and grows along
        single readers of the same rank while what it reads is ready before the GEMM. Its ops but the last are
        recomputed in the last's scalar function; the last's value is what the kernel stores.
        """
        rank = len(gemm["batch"]) + 2
        consumer = self._elementwise_reader(op.results[0], rank)
        if consumer is None:
            return None, None, None
        second = self._dual_partner(op, consumer, at, init)
        specials = {op.results[0]: Special(Operand("acc"), "f32")}
        if second is not None:
            specials[second] = Special(Operand("acc2"), "f32")
        whole = list(range(rank))
        if any(v in specials and map_dims(m) != whole for v, m in zip(consumer.operands, _maps(consumer),
                                                                      strict=False)):
            return None, None, None  # an accumulator read other than element for element
        chain = [consumer]
        while (reader := self._elementwise_reader(chain[-1].results[0], rank)) is not None \
                and reader not in self.inlined_ops and self._composable([*chain, reader], specials, at):
            chain.append(reader)
        if not self._composable(chain, specials, at):
            return None, None, None
        last = chain[-1]
        saved = set(self.inlined_ops)
        self.inlined_ops.update(chain)
        fn = self.composer.fn(last.results[0], tuple(whole), specials)
        self.inlined_ops = saved | set(chain[:-1])
        self.inlined_ops.discard(last)
        return fn, last.results[0], second

    def _elementwise_reader(self, value: ir.Value, rank: int) -> ir.Operation | None:
        """The one reader of ``value`` (not returned) when it is an elementwise op of ``rank`` loops that reads it
        element for element; else None."""
        users = self._users(value)
        if len(users) != 1 or self._returned(value):
            return None
        user = users[0]
        if not elementwise(user) or body_problem(user) or len(_iterators(user)) != rank:
            return None
        position = list(user.operands).index(value)
        return user if map_dims(_maps(user)[position]) == list(range(rank)) else None

    def _composable(self, chain: list[ir.Operation], specials: dict, at: int) -> bool:
        """Whether the chain's last value, its ops recomputed, reads only values ready before ``at``."""
        saved = set(self.inlined_ops)
        self.inlined_ops.update(chain)
        try:
            return self._leaves_ready(chain[-1].results[0], tuple(range(len(_iterators(chain[-1])))), specials,
                                      at)
        finally:
            self.inlined_ops = saved

    def _chain_values(self, first: ir.Value, last: ir.Value) -> list[ir.Value]:
        values = [first]
        while values[-1] != last:
            values.append(self._users(values[-1])[0].results[0])
        return values[:-1]

    def _chain_ops(self, result: ir.Value, last: ir.Value | None) -> list[ir.Operation]:
        if last is None:
            return []
        users = self._users(result)
        return [owner(v) for v in self._chain_values(users[0].results[0], last)] + [owner(last)]

    def _dual_partner(self, op: ir.Operation, consumer: ir.Operation, at: int, init) -> ir.Value | None:
        for v in consumer.operands:
            if isinstance(owner(v), ir.Block) or owner(v) == op or owner(v) in self.done:
                continue
            other = owner(v)
            if other.name != "linalg.generic" or len(self._users(v)) != 1 or self._returned(v):
                continue
            layout = _gemm_layout(other, self.buffers)
            mine = _gemm_layout(op, self.buffers)
            if layout is None or layout != mine or other.operands[0] != op.operands[0]:
                continue
            if fill_value(other.operands[2]) != init or init is None:
                continue
            if other.operands[1].type != op.operands[1].type or not self._is_ready([other.operands[1]], at):
                continue
            return v
        return None

    # -- rows -----------------------------------------------------------------------------------------------------

    def _rows(self, op: ir.Operation, at: int) -> bool:
        shape = _row_shape(op, self.buffers)
        if shape is None or fill_value(op.operands[-1]) is None:
            return False
        if not all(self._leaves_ready(v, tuple(range(ir.RankedTensorType(v.type).rank)), {}, at)
                   for v in _inputs(op) if isinstance(v.type, ir.ShapedType)):
            return False
        group = _RowGroup(self, op, shape, at)
        group.grow()
        spec = group.spec(self._kname("rows"))
        if spec is None:
            return False
        self._add("rows", spec, group.ops, group.produced, at)
        return True

    # -- one op ---------------------------------------------------------------------------------------------------

    def _single(self, op: ir.Operation, at: int) -> None:
        if op.name in _COPIES:
            self._copies(op, at)
            return
        if op.name == "linalg.fill":
            self._fill(op, at)
            return
        if not op.name.startswith("linalg."):
            raise UnsupportedOp(f"'{op.name}' has no GPU kernel (Prism maps Linalg ops, reshapes and fills)",
                                location=str(op.location))
        if op.name != "linalg.generic":
            raise UnsupportedOp(f"'{op.name}' has no GPU kernel (a relayout into tiles, with no generic form)"
                                if op.name in ("linalg.pack", "linalg.unpack") else
                                f"'{op.name}' has no GPU kernel: generalize it to linalg.generic",
                                location=str(op.location))
        problem = body_problem(op)
        if problem:
            raise UnsupportedOp(f"this op cannot run on the GPU: {problem}", location=str(op.location))
        if elementwise(op) and fill_value(op.results[0]) is None:
            value = op.results[0]
            rank = len(_iterators(op))
            out = self.buffers.tensor(value)
            self._add("pointwise", PointwiseSpec(self._kname("pointwise"), out,
                                                 self._own_fn(op, rank)), [op], [value], at)
            return
        self._generic(op, at)

    def _own_fn(self, op: ir.Operation, rank: int) -> ScalarFn:
        """The scalar function of an elementwise op's own result (composing its inlined inputs)."""
        self.inlined_ops.add(op)
        try:
            return self.composer.fn(op.results[0], tuple(range(rank)))
        finally:
            self.inlined_ops.discard(op)

    def _generic(self, op: ir.Operation, at: int) -> None:
        n_out = len(op.results)
        n_in = len(op.operands) - n_out
        nothing = f"affine_map<({', '.join(f'd{i}' for i in range(len(_iterators(op))))}) -> ()>"
        inputs, input_maps = [], []
        constants: dict[int, ir.Operation] = {}  # scalar inputs that are constants, by position
        for i, (v, m) in enumerate(zip(list(op.operands)[:n_in], _maps(op)[:n_in], strict=False)):
            if not isinstance(v.type, ir.ShapedType) and not isinstance(owner(v), ir.Block):
                constants[i] = owner(v)
                continue
            if self._inlined(v):  # this kernel reads buffers: the value gets its own kernel first
                self._materialize_inlined(v, at)
            if fill_value(v) is not None and v not in self.materialized:
                self._materialize_fill(v, at)
            inputs.append(self.buffers.tensor(v) if isinstance(v.type, ir.ShapedType) else self.buffers.tensors[v])
            input_maps.append(str(ir.AffineMapAttr.get(m)) if isinstance(v.type, ir.ShapedType) else nothing)
        captured = captured_arguments(op)
        inputs += [self.buffers.tensors[v] for v in captured]
        input_maps += [nothing] * len(captured)
        outs = list(op.operands)[n_in:]
        inits = []
        for v in outs:
            constant = fill_value(v)
            inits.append(constant if constant is not None else (self.buffers.tensor(v) if _reads_output(op) else None))

        def body(tb, values, outputs, indices, op=op, constants=constants, captured=captured):
            loaded = iter(values)
            full = [tb.value(f"arith.constant {constants[i].attributes['value']}", "k") if i in constants
                    else next(loaded) for i in range(n_in)]
            names = dict(zip(captured, loaded, strict=False))
            return emit_body(tb, op, full + list(outputs), indices, names)
        loops = _loop_extents(op, self.buffers)
        spec = GenericSpec(self._kname("loops"), tuple(loops), tuple(_iterators(op)), tuple(inputs),
                           tuple(input_maps), tuple(self.buffers.tensor(r) for r in op.results),
                           tuple(str(ir.AffineMapAttr.get(m)) for m in _maps(op)[n_in:]), tuple(inits), body)
        self._add("loops", spec, [op], list(op.results), at)

    def _fill(self, op: ir.Operation, at: int) -> None:
        """A fill with a value computed at run time: a scalar argument of the function (a buffer of one)."""
        scalar = op.operands[0]
        if not isinstance(owner(scalar), ir.Block) or scalar not in self.buffers.tensors:
            raise UnsupportedOp("a fill whose value is neither a constant nor an argument of the function has no "
                                "GPU kernel", location=str(op.location))
        source = self.buffers.tensors[scalar]
        out = self.buffers.tensor(op.results[0])
        fn = ScalarFn((Operand("tensor", source, ()),), out.dtype, lambda tb, values, indices: values[0])
        self._add("fill", PointwiseSpec(self._kname("fill"), out, fn), [op], [op.results[0]], at)

    def _copies(self, op: ir.Operation, at: int) -> None:
        """Slices and concatenations as copy kernels, each a generic op whose maps carry the offsets."""
        result = op.results[0]
        out = self.buffers.tensor(result)
        pieces = _copy_pieces(op, self.buffers)
        for k, (source, shape, in_map, out_map) in enumerate(pieces):
            if fill_value(source) is not None and source not in self.materialized:
                self._materialize_fill(source, at)
            loops = ", ".join(f"d{i}" for i in range(len(shape)))
            spec = GenericSpec(self._kname("copy"), tuple(shape), ("parallel",) * len(shape),
                               (self.buffers.tensor(source),), (f"affine_map<({loops}) -> ({in_map})>",), (out,),
                               (f"affine_map<({loops}) -> ({out_map})>",), (None,),
                               lambda tb, values, outputs, indices: [values[0]])
            self._add("copy", spec, [op] if k == len(pieces) - 1 else [], [result], at)

    def _copy(self, value: ir.Value, tensor: Tensor) -> None:
        at = len(self.ops)
        constant = fill_value(value) if value not in self.materialized else None
        if constant is not None:
            fn = _constant_fn(constant, tensor.dtype)
        else:
            source = self.buffers.tensor(value)
            fn = ScalarFn((Operand("tensor", source, tuple(range(source.rank))),), tensor.dtype,
                          lambda tb, values, indices: values[0])
        self._add("copy", PointwiseSpec(self._kname("copy"), tensor, fn), [], [], at)


class _RowGroup:
    """A reduction over a row and the ops after it over the same rows (see the module docstring)."""

    def __init__(self, planner: _Planner, first: ir.Operation, shape, at: int):
        self.p = planner
        self.rows, self.cols = shape
        self.at = at
        self.ops = [first]
        self.reductions: list[ir.Operation] = [first]
        self.members: set[ir.Operation] = {first}
        self.produced: list[ir.Value] = []

    def grow(self) -> None:
        start = self.p.position[self.ops[0]]
        for op in self.p.ops[start + 1:]:
            if op in self.p.done or op.name in _SKIP or op.name in VIEWS:
                continue
            if op in self.p.inlined_ops:
                continue  # read through its consumer, which joins or not
            if not op.name == "linalg.generic" or body_problem(op):
                continue
            if not any(self._member_value(v) for v in op.operands):
                continue
            if self._admits(op):
                self.ops.append(op)
                self.members.add(op)
                if _row_reduction(op) is not None:
                    self.reductions.append(op)

    def _member_value(self, v: ir.Value) -> bool:
        return not isinstance(owner(v), ir.Block) and (owner(v) in self.members or (
            owner(v) in self.p.inlined_ops and any(self._member_value(w) for w in owner(v).operands)))

    def _usable(self, v: ir.Value) -> bool:
        return self._member_value(v) or self.p._is_ready([v], self.at) or not isinstance(v.type, ir.ShapedType) \
            or (owner(v) is not None and not isinstance(owner(v), ir.Block) and owner(v) in self.p.inlined_ops
                and all(self._usable(w) for w in owner(v).operands))

    def _admits(self, op: ir.Operation) -> bool:
        shape = _row_shape(op, self.p.buffers)
        loops = _loop_extents(op, self.p.buffers)
        if shape is not None:
            if shape != (self.rows, self.cols) or fill_value(op.operands[-1]) is None:
                return False
        elif not elementwise(op) or tuple(loops) not in (self.rows + self.cols, self.rows):
            return False
        maps = _maps(op)
        for v, m in zip(list(op.operands)[:-1], maps, strict=False):
            dims = map_dims(m)
            if dims is None:
                return False
            if self._member_value(v):
                per_row = self._per_row(v)
                want = list(range(len(self.rows))) if per_row else list(range(len(self.rows) + len(self.cols)))
                if dims != want:
                    return False
            elif not self._usable(v):
                return False
        return True

    def _per_row(self, v: ir.Value) -> bool:
        return len(ir.RankedTensorType(v.type).shape) == len(self.rows)

    def spec(self, name: str) -> RowSpec | None:
        """The group's row kernel. Its elementwise members are recomputed wherever the group reads them (never
        read back from a buffer the same kernel writes); those read outside the group are its outputs."""
        nrows, ncols = len(self.rows), len(self.cols)
        elementwise_members = [op for op in self.ops if op not in self.reductions]
        self.p.inlined_ops.update(elementwise_members)
        specials: dict[ir.Value, Special] = {}
        reductions = []
        for k, op in enumerate(self.reductions):
            combine, neutral = _combine(op)
            rname = f"r{k}"
            value = self._reduction_value(op, neutral, specials, nrows + ncols)
            reductions.append(Reduction(rname, combine, fill_value(op.operands[-1]), value))
            specials[op.results[0]] = Special(Operand("tensor", Tensor(rname, "f32", ()), ()), "f32")
        outputs = []
        for op in self.ops:
            value = op.results[0]
            outside = [u for u in self.p._users(value) if u not in self.members and u not in self.p.inlined_ops]
            if not outside and not self.p._returned(value):
                continue
            per_row = self._per_row(value)
            fn = self.p.composer.fn(value, tuple(range(nrows if per_row else nrows + ncols)), specials)
            outputs.append(RowOutput(self.p.buffers.tensor(value), fn, per_row))
            self.produced.append(value)
        for op in elementwise_members:
            if op.results[0] in self.produced:
                self.p.inlined_ops.discard(op)
        if not outputs:
            return None
        return RowSpec(name, tuple(self.rows), tuple(self.cols), tuple(reductions), tuple(outputs))

    def _reduction_value(self, op, neutral, specials, rank) -> ScalarFn:
        """The value a reduction combines at a point: its body with the accumulator bound to the neutral
        element, composed over its inputs."""
        maps = _maps(op)
        # compose the body as if it were an elementwise op over (rows, cols) with the output fixed to neutral
        composer = self.p.composer
        operands: list[Operand] = []
        inputs = list(op.operands)[:-1]
        dims_of = [tuple(map_dims(m)) for m in maps[:-1]]
        sub_fns = [composer.fn(v, d, specials) if isinstance(v.type, ir.ShapedType) else None
                   for v, d in zip(inputs, dims_of, strict=False)]
        spans = []
        for fn in sub_fns:
            start = len(operands)
            if fn is not None:
                operands.extend(fn.operands)
            spans.append((start, len(operands)))
        dtype = element_type(op.results[0])

        def emit(tb, values, indices):
            args = []
            for fn, (s, e), v in zip(sub_fns, spans, inputs, strict=False):
                if fn is None:
                    args.append(tb.value(f"arith.constant {owner(v).attributes['value']}", "k"))
                else:
                    args.append(fn.emit(tb, values[s:e], indices))
            acc = tb.value(f"arith.constant {literal(neutral, dtype)} : {dtype}", "k")
            return emit_body(tb, op, args + [acc], indices)[0]
        return ScalarFn(tuple(operands), dtype, emit)


# -- op shapes --------------------------------------------------------------------------------------------------


def _reads_output(op: ir.Operation) -> bool:
    block = op.regions[0].blocks[0]
    n_out = len(op.results)
    return any(len(list(a.uses)) for a in list(block.arguments)[len(block.arguments) - n_out:])


def _loop_extents(op: ir.Operation, buffers: Buffers) -> list:
    extents: list = [None] * len(_iterators(op))
    for v, m in zip(op.operands, _maps(op), strict=False):
        if not isinstance(v.type, ir.ShapedType):
            continue
        shape = buffers.shape(v)
        for pos, expr in enumerate(m.results):
            if isinstance(expr, ir.AffineDimExpr):
                d = expr.position
                if extents[d] is None or isinstance(extents[d], str) and isinstance(shape[pos], int):
                    extents[d] = shape[pos]
    if None in extents:
        raise UnsupportedOp("a loop of this op is not the dimension of any operand; its extent is unknown",
                            location=str(op.location))
    return extents


def _row_reduction(op: ir.Operation):
    """(rows, cols) loop extents of a reduction over its innermost loops with one output read at the rows;
    None otherwise. The extents are read from the op's operand types (static ints or None for dynamic)."""
    if op.name != "linalg.generic" or len(op.results) != 1 or body_problem(op):
        return None
    if element_type(op.results[0]) not in ("f16", "bf16", "f32") or captured_arguments(op):
        return None
    iterators = _iterators(op)
    if "reduction" not in iterators:
        return None
    p = iterators.index("reduction") if "reduction" in iterators else len(iterators)
    if any(it != "parallel" for it in iterators[:p]) or any(it != "reduction" for it in iterators[p:]) or p == 0:
        return None
    maps = _maps(op)
    if map_dims(maps[-1]) != list(range(p)) or any(map_dims(m) is None for m in maps[:-1]):
        return None
    if _combine(op) is None:
        return None
    return p


def _row_shape(op: ir.Operation, buffers: Buffers):
    """(rows, cols) extents of a row reduction, None if ``op`` is not one."""
    p = _row_reduction(op)
    if p is None:
        return None
    extents = _loop_extents(op, buffers)
    return tuple(extents[:p]), tuple(extents[p:])


def _combine(op: ir.Operation):
    """(combine, neutral) of a reduction whose body ends ``acc = combine(acc, value)``; None otherwise."""
    block = op.regions[0].blocks[0]
    acc = block.arguments[len(block.arguments) - 1]
    ops = list(block.operations)
    yielded = ops[-1].operands[0]
    if isinstance(owner(yielded), ir.Block) or owner(yielded).name not in _COMBINES:
        return None
    last = owner(yielded)
    if acc not in list(last.operands) or len(list(acc.uses)) != 1:
        return None
    return _COMBINES[last.name]


def _gemm_layout(op: ir.Operation, buffers: Buffers) -> dict | None:
    """The GEMM view of a contraction: its batch, M, N and K extents and operand layouts; None where its loops
    are not contiguous groups in its operands (it then runs as a generic op)."""
    if op.name != "linalg.generic":
        return None
    contraction = analyze_contraction(op)
    if contraction is None or contraction.input_type not in GEMM_TYPES:
        return None
    a_t, b_t = (element_type(v) for v in op.operands[:2])
    if a_t != b_t or a_t not in GEMM_TYPES or element_type(op.results[0]) not in GEMM_TYPES:
        return None
    if not _plain_product(op):
        return None
    roles = contraction.roles
    maps = [map_dims(m) for m in _maps(op)]
    a_dims, b_dims, c_dims = maps
    groups = {r: [d for d in range(len(roles)) if roles[d] == r] for r in ("batch", "m", "n", "k")}
    nb = len(groups["batch"])
    if a_dims[:nb] != groups["batch"] or b_dims[:nb] != groups["batch"] or c_dims[:nb] != groups["batch"]:
        return None
    if c_dims[nb:] != groups["m"] + groups["n"]:
        return None
    a_layout = _layout(a_dims[nb:], groups["m"], groups["k"], ("mk", "km"))
    b_layout = _layout(b_dims[nb:], groups["k"], groups["n"], ("kn", "nk"))
    if a_layout is None or b_layout is None:
        return None
    extents = _loop_extents(op, buffers)
    if len(groups["m"]) != 1 or len(groups["n"]) != 1 or len(groups["k"]) != 1:
        return None  # several M, N or K loops: the generic path (their buffers are not one matrix each)
    return {"batch": tuple(extents[d] for d in groups["batch"]), "m": extents[groups["m"][0]],
            "n": extents[groups["n"][0]], "k": extents[groups["k"][0]], "a_layout": a_layout,
            "b_layout": b_layout}


def _layout(dims: list[int], first: list[int], second: list[int], names: tuple[str, str]) -> str | None:
    if dims == first + second:
        return names[0]
    if dims == second + first:
        return names[1]
    return None


def _plain_product(op: ir.Operation) -> bool:
    """The body is ``out + a * b`` with float conversions of the inputs only."""
    block = op.regions[0].blocks[0]
    ops = [o for o in block.operations]
    names = [o.name for o in ops]
    core = [n for n in names if n not in ("arith.extf", "arith.truncf", "linalg.yield")]
    return core == ["arith.mulf", "arith.addf"]


# The sizes a dynamic M takes for a class of its own: decode (one to a few rows), small batches, and the rest.
SIZE_CLASS_BOUNDS = (16, 128)


def size_classes(op: ir.Operation, spec: GemmSpec, chip: str) -> tuple[tuple[str, GemmTile], ...]:
    """For a GEMM whose M is dynamic, one tile per size class of M (``m <= 16``, ``m <= 128``, the rest), each
    the search's choice at the class's largest size (4096 for the last) from the family's domain, pruned once;
    classes with the same tile merge. None for a static M, or where the chip has no search model."""
    if not isinstance(spec.m, str):
        return ()
    from prism.infra.errors import EmptySearchSpace
    from prism.search.search import candidates_at, prune, select
    from prism.targets.nvidia import GPU_TARGETS
    target = next((t for t in GPU_TARGETS.values() if t.chip == chip), None)
    contraction = analyze_contraction(op)
    if target is None or contraction is None or [r for r in contraction.roles if r != "batch"].count("m") != 1:
        return ()
    space = target.space(contraction)
    domain, _ = prune(space, contraction, space.universe_set(), on_empty=None)  # pruned once, for every size
    tiles = []
    for bound in (*SIZE_CLASS_BOUNDS, 4096):
        try:
            values = space.value_of(select(space, contraction, candidates_at(space, contraction, domain, bound),
                                           target, bound).best)
        except EmptySearchSpace:  # a class without a schedule: the op's own tile serves every size
            return ()
        tiles.append(GemmTile(**{k: v for k, v in values.items() if k in GemmTile.__dataclass_fields__}))
    return _merged(spec.m, tiles)


def _merged(m: str, tiles: list[GemmTile]) -> tuple[tuple[str, GemmTile], ...]:
    """Size classes of ``m`` over SIZE_CLASS_BOUNDS, neighbours with the same tile merged."""
    bounds = (*SIZE_CLASS_BOUNDS, None)
    groups: list[list] = []  # [low, high, tile]
    low = None
    for high, tile in zip(bounds, tiles, strict=False):
        if groups and groups[-1][2] == tile:
            groups[-1][1] = high
        else:
            groups.append([low, high, tile])
        low = high
    out = []
    for low, high, tile in groups:
        parts = [f"{m} > {low}" if low is not None else "", f"{m} <= {high}" if high is not None else ""]
        out.append((" and ".join(p for p in parts if p) or f"{m} >= 0", tile))
    return tuple(out)


def _tile(op: ir.Operation) -> GemmTile:
    if attrs.CHOICE not in op.attributes:
        return GemmTile()
    choice = {n.name: ir.IntegerAttr(n.attr).value for n in ir.DictAttr(op.attributes[attrs.CHOICE])}
    known = {k: v for k, v in choice.items() if k in GemmTile.__dataclass_fields__}
    return GemmTile(**known)


_COPIES = ("tensor.extract_slice", "tensor.insert_slice", "tensor.concat")


def _static(op: ir.Operation, name: str) -> list[int]:
    values = list(ir.DenseI64ArrayAttr(op.attributes[name]))
    if any(ir.ShapedType.is_dynamic_size(v) for v in values):
        raise UnsupportedOp(f"'{op.name}' with dynamic offsets, sizes or strides has no GPU kernel",
                            location=str(op.location))
    return values


def _copy_pieces(op: ir.Operation, buffers: Buffers) -> list[tuple]:
    """The copies that make ``op``'s result: (source, loop extents, the source's map results, the result's map
    results), the maps over loops ``d0, d1, ...``."""
    result_shape = buffers.shape(op.results[0])
    if op.name == "tensor.concat":
        axis = ir.IntegerAttr(op.attributes["dim"]).value
        pieces, offset = [], 0
        for source in op.operands:
            shape = buffers.shape(source)
            if not isinstance(offset, int) or not isinstance(shape[axis], int) and source != op.operands[-1]:
                raise UnsupportedOp("a concatenation of dynamic sizes along its axis has no GPU kernel",
                                    location=str(op.location))
            dims = [f"d{i}" for i in range(len(shape))]
            out = [d if i != axis else f"d{i} + {offset}" for i, d in enumerate(dims)]
            pieces.append((source, shape, ", ".join(dims), ", ".join(out)))
            offset = offset + shape[axis] if isinstance(shape[axis], int) else None
        return pieces
    offsets, sizes, strides = (_static(op, n) for n in ("static_offsets", "static_sizes", "static_strides"))
    if op.name == "tensor.extract_slice":
        source, small, big = op.operands[0], result_shape, buffers.shape(op.operands[0])
    else:
        source, small, big = op.operands[0], buffers.shape(op.operands[0]), result_shape
    kept = _kept_dims(sizes, len(small))
    loops = [f"d{i}" for i in range(len(small))]
    at = []
    for j in range(len(big)):
        term = f"{loops[kept.index(j)]} * {strides[j]} + {offsets[j]}" if j in kept else str(offsets[j])
        at.append(term)
    if op.name == "tensor.extract_slice":
        return [(source, small, ", ".join(at), ", ".join(loops))]
    full = [f"d{i}" for i in range(len(big))]
    return [(op.operands[1], big, ", ".join(full), ", ".join(full)), (source, small, ", ".join(at), ", ".join(loops))]


def _kept_dims(sizes: list[int], rank: int) -> list[int]:
    """The dimensions a rank-reducing slice keeps: unit dimensions are dropped from the left until ``rank``
    remain."""
    drop = len(sizes) - rank
    kept = []
    for j, n in enumerate(sizes):
        if n == 1 and drop > 0:
            drop -= 1
            continue
        kept.append(j)
    return kept


def _inputs(op: ir.Operation) -> list[ir.Value]:
    """A Linalg op's inputs (its operands but its outputs)."""
    return list(op.operands)[:len(op.operands) - len(op.results)]


def _empty(value: ir.Value) -> bool:
    """A ``tensor.empty`` (or ``bufferization.alloc_tensor``): a shape without data."""
    return not isinstance(owner(value), ir.Block) and owner(value).name in _EMPTY


_EMPTY = ("tensor.empty", "bufferization.alloc_tensor")


def _scalar(op: ir.Operation) -> bool:
    """An op of scalars (sizes, constants): followed where a shape or a body reads it, no kernel of its own."""
    return len(op.results) > 0 and not any(isinstance(r.type, ir.ShapedType) for r in op.results) \
        and not len(op.regions)


def _inside(v: ir.Value, ops) -> bool:
    return not isinstance(owner(v), ir.Block) and owner(v) in ops


def _constant_fn(value: float | int, dtype: str) -> ScalarFn:
    return ScalarFn((), dtype, lambda tb, values, indices: tb.value(f"arith.constant {literal(value, dtype)} : "
                                                                    f"{dtype}", "k"))


def _name(func: ir.Operation) -> str:
    return ir.StringAttr(func.attributes["sym_name"]).value


def plan_function(func: ir.Operation, gpu_families: list, chip: str) -> FunctionPlan:
    """The kernels of ``func`` for ``chip`` (see the module docstring). ``gpu_families``: (kind, matcher) pairs,
    a matcher giving for an op, the function's buffers and the chip (ops of its chain, a spec maker taking the
    kernel's name, the values it produces), or None where the chain ending at the op is not one it runs."""
    return _Planner(func, gpu_families, chip).plan()
