"""The GPU kernel of any Linalg op: one thread per point of its parallel loops.

Threads take points of the parallel loops in a grid-stride loop (so any
extent, static or dynamic, fits any grid), each point's reduction loops run
in the thread, its outputs carried in registers from their initial values,
and each input is read through its indexing map, any affine expression
included. It is the kernel for what the specialized kernels (GEMMs, rows,
attention) do not take: correct for every op, fast for none that reduce a
lot.
"""

from __future__ import annotations

from mlir import ir

from prism.codegen.gpu.compose import literal
from prism.codegen.gpu.spec import Dim, GenericSpec, Kernel, Launch, Param, Tensor, load_element, store_element
from prism.codegen.text import TextBuilder

THREADS = 256
# Blocks of a grid-stride kernel: enough to fill any chip many times over.
MAX_BLOCKS = 65536


class KernelText(TextBuilder):
    """A kernel's text: its parameters (tensors and size symbols) and index arithmetic over them."""

    def __init__(self, name: str, tensors: list[Tensor], extra_dims: tuple[Dim, ...] = ()):
        super().__init__()
        self.name = name
        self.tensors: list[Tensor] = []
        for t in tensors:
            if t.name not in [u.name for u in self.tensors]:
                self.tensors.append(t)
        dims = [d for t in self.tensors for d in t.shape] + list(extra_dims)
        self.symbols = sorted({d for d in dims if isinstance(d, str)}, key=lambda s: (len(s), s))

    def params(self) -> tuple[Param, ...]:
        return tuple(Param("tensor", t.name) for t in self.tensors) + tuple(Param("size", s) for s in self.symbols)

    def header(self, threads: int) -> str:
        args = [f"%{t.name}: {t.memref}" for t in self.tensors] + [f"%{s}: index" for s in self.symbols]
        return (f"gpu.func @{self.name}({', '.join(args)}) kernel attributes "
                f"{{known_block_size = array<i32: {threads}, 1, 1>}}")

    def dim(self, d: Dim) -> str:
        return self.const(d) if isinstance(d, int) else f"%{d}"

    def product(self, dims) -> str:
        value = self.const(1)
        for d in dims:
            value = self.value(f"arith.muli {value}, {self.dim(d)} : index", "n") if value != self.const(1) \
                else self.dim(d)
        return value

    def linear(self, tensor: Tensor, indices: list[str]) -> str:
        """The row-major position of ``indices`` in ``tensor``."""
        if not indices:
            return self.const(0)
        value = indices[0]
        for d, i in zip(tensor.shape[1:], indices[1:], strict=False):
            scaled = self.value(f"arith.muli {value}, {self.dim(d)} : index", "l")
            value = self.value(f"arith.addi {scaled}, {i} : index", "l")
        return value

    def load(self, tensor: Tensor, indices: list[str]) -> str:
        return load_element(self, tensor, f"%{tensor.name}", self.linear(tensor, indices), "x")

    def store(self, value: str, tensor: Tensor, indices: list[str]) -> None:
        store_element(self, value, tensor, f"%{tensor.name}", self.linear(tensor, indices))

    def delinearize(self, linear: str, dims) -> list[str]:
        """The indices of position ``linear`` in a row-major space of ``dims``."""
        out = []
        rest = linear
        for d in reversed(dims[1:]):
            out.append(self.value(f"arith.remui {rest}, {self.dim(d)} : index", "i"))
            rest = self.value(f"arith.divui {rest}, {self.dim(d)} : index", "q")
        out.append(rest)
        return list(reversed(out))

    def grid_stride(self, total: str, threads: int):
        """A loop over ``[0, total)`` shared by every thread of the grid."""
        tid = self.value("gpu.thread_id x", "t")
        bid = self.value("gpu.block_id x", "b")
        blocks = self.value("gpu.grid_dim x", "g")
        base = self.value(f"arith.muli {bid}, {self.const(threads)} : index", "o")
        start = self.value(f"arith.addi {base}, {tid} : index", "o")
        stride = self.value(f"arith.muli {blocks}, {self.const(threads)} : index", "s")
        return self.for_(start, total, stride, "p")


def _grid(total_dims) -> tuple[str, str, str]:
    total = " * ".join(str(d) for d in total_dims) or "1"
    return (f"max(1, min(cdiv({total}, {THREADS}), {MAX_BLOCKS}))", "1", "1")


def _parse_map(text: str) -> ir.AffineMap:
    return ir.AffineMapAttr(ir.Attribute.parse(text if text.startswith("affine_map") else f"affine_map<{text}>")).value


def _apply(t: KernelText, amap: ir.AffineMap, loops: list[str]) -> list[str]:
    out = []
    dims = ", ".join(f"d{i}" for i in range(amap.n_dims))
    for expr in amap.results:
        if isinstance(expr, ir.AffineDimExpr):
            out.append(loops[expr.position])
        elif isinstance(expr, ir.AffineConstantExpr):
            out.append(t.const(expr.value))
        else:
            out.append(t.value(f"affine.apply affine_map<({dims}) -> ({expr})>({', '.join(loops)})", "a"))
    return out


def emit_generic(spec: GenericSpec) -> list[Kernel]:
    """Any linalg.generic (see the module docstring)."""
    inits = [i for i in spec.inits if isinstance(i, Tensor)]
    t = KernelText(spec.name, list(spec.outputs) + list(spec.inputs) + inits, spec.loops)
    parallel = [k for k, it in enumerate(spec.iterators) if it == "parallel"]
    reduction = [k for k, it in enumerate(spec.iterators) if it == "reduction"]
    in_maps = [_parse_map(m) for m in spec.input_maps]
    out_maps = [_parse_map(m) for m in spec.output_maps]
    with t.region(t.header(THREADS)):
        total = t.product([spec.loops[k] for k in parallel])
        with t.grid_stride(total, THREADS) as p:
            point = t.delinearize(p, [spec.loops[k] for k in parallel]) if parallel else []
            loops: list[str] = [t.const(0)] * len(spec.loops)
            for k, i in zip(parallel, point, strict=False):
                loops[k] = i
            starts = [_initial(t, spec, k, _apply(t, out_maps[k], loops)) for k in range(len(spec.outputs))]
            results = _reduce(t, spec, in_maps, loops, reduction, starts)
            for k, out in enumerate(spec.outputs):
                t.store(results[k], out, _apply(t, out_maps[k], loops))
        t.add("gpu.return")
    launch = Launch(_grid([spec.loops[k] for k in parallel]), (THREADS, 1, 1), 0, t.params())
    return [Kernel(spec.name, t.function_text(), launch)]


def _initial(t: KernelText, spec: GenericSpec, k: int, at: list[str]) -> str:
    init = spec.inits[k]
    out = spec.outputs[k]
    if isinstance(init, Tensor):
        return t.load(init, at)
    if init is None:
        return t.load(out, at)
    return t.value(f"arith.constant {literal(init, out.dtype)} : {out.dtype}", "k")


def _reduce(t: KernelText, spec: GenericSpec, in_maps, loops: list[str], reduction: list[int], acc: list[str]):
    """The reduction loops (innermost last) carrying the outputs, each step one run of the body."""
    if not reduction:
        values = [t.load(x, _apply(t, m, loops)) for x, m in zip(spec.inputs, in_maps, strict=False)]
        return spec.body(t, values, acc, loops)
    k = reduction[0]
    types = [o.dtype for o in spec.outputs]
    with t.for_carried(t.const(0), t.dim(spec.loops[k]), t.const(1), acc, types) as loop:
        inner = list(loops)
        inner[k] = loop.iv
        results = _reduce(t, spec, in_maps, inner, reduction[1:], loop.args)
        t.yield_(results, types)
    return loop.results
