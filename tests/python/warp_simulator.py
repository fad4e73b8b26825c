"""A lockstep interpreter of the MLIR text of Prism's tensor-core kernels, one block at a time, in numpy.

It runs the ops the GPU emitters write (arith, math.exp2, scf, gpu ids, shuffles and barriers, dynamic shared
memory, nvgpu cp.async and ldmatrix, nvvm.mma.sync m16n8k16, vector and memref loads and stores) with the
fragment layouts of the PTX ISA, every thread of the block as one lane of a numpy array. Branches and loops
whose conditions differ between threads run under a mask. Copies complete when issued, so it checks what the
kernel computes, not its synchronization; every access is checked against its buffer's bounds.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

import numpy as np

SSA = r"%[\w#]+"
WARP = 32


def round_to(x: np.ndarray, dtype: str) -> np.ndarray:
    """``x`` rounded to ``dtype`` (to nearest even), as float64."""
    if dtype == "f16":
        return np.asarray(x, np.float64).astype(np.float16).astype(np.float64)
    if dtype == "bf16":
        bits = np.asarray(x, np.float32).view(np.uint32).astype(np.uint64)
        bits = ((bits + 0x7FFF + ((bits >> 16) & 1)) & 0xFFFF0000).astype(np.uint32)
        return bits.view(np.float32).astype(np.float64)
    return np.asarray(x, np.float64)


@dataclass
class _Node:
    line: str
    body: list = field(default_factory=list)
    orelse: list = field(default_factory=list)


def parse(text: str) -> tuple[list[str], list[_Node]]:
    """The kernel's argument names and its body as a tree of regions."""
    lines = [line.strip() for line in text.splitlines() if line.strip()]
    args = re.findall(r"(%\w+): ", lines[0])
    root: list[_Node] = []
    stack: list[list[_Node]] = [root]
    nodes: list[_Node] = []
    for line in lines[1:]:
        if line == "} else {":
            stack[-1] = nodes[-1].orelse
        elif line.startswith("}"):
            if nodes:  # the last one closes the function
                stack.pop()
                nodes.pop()
        elif line.endswith("{"):
            node = _Node(line)
            stack[-1].append(node)
            stack.append(node.body)
            nodes.append(node)
        else:
            stack[-1].append(_Node(line))
    return args, root


class Block:
    """The blocks of one kernel: its launch's threads, the global buffers by tensor name (float64 arrays,
    written in place) and the size symbols' values."""

    def __init__(self, kernel, arrays: dict[str, np.ndarray], sizes: dict[str, int]) -> None:
        args, self.body = parse(kernel.text)
        self.threads = kernel.launch.block[0]
        self.buffers: dict[str, np.ndarray] = {}
        self.dtypes: dict[str, str] = {}
        self.symbols: dict[str, int] = {}
        for param, arg in zip(kernel.launch.params, args, strict=True):
            if param.kind == "tensor":
                self.buffers[arg] = arrays[param.name]
                self.dtypes[arg] = re.search(rf"{arg}: memref<\?x(\w+)>", kernel.text).group(1)
            else:
                self.symbols[arg] = sizes[param.name]
        self.shared = np.zeros(0)
        self.shared_type = "f32"

    def run(self, block_id: int) -> None:
        """Run the kernel for block ``block_id``."""
        self.env: dict[str, np.ndarray] = {name: np.full(self.threads, value, np.int64)
                                           for name, value in self.symbols.items()}
        self.block_id = block_id
        self._run(self.body, np.ones(self.threads, bool))

    # -- evaluation -----------------------------------------------------------------------------------------------

    def _v(self, name: str) -> np.ndarray:
        if name not in self.env:
            m = re.fullmatch(r"%c(\d+)", name)
            if m:
                return np.full(self.threads, int(m.group(1)), np.int64)
            raise KeyError(name)
        return self.env[name]

    def _run(self, nodes: list[_Node], mask: np.ndarray) -> list[np.ndarray] | None:
        for node in nodes:
            line = node.line
            if line.startswith("scf.yield"):
                values = re.findall(SSA, line.split(":")[0])
                return [self._v(v) for v in values]
            if " scf.for " in line or line.startswith("scf.for"):
                self._for(node, mask)
            elif " scf.if " in line or line.startswith("scf.if"):
                self._if(node, mask)
            else:
                self._op(line, mask)
        return None

    def _for(self, node: _Node, mask: np.ndarray) -> None:
        m = re.match(rf"(?:(%\w+):\d+ = )?scf\.for (%\w+) = ({SSA}) to ({SSA}) step ({SSA})"
                     rf"(?: iter_args\((.*)\) -> \(.*\))?", node.line)
        out, iv, lo, hi, step, carried = m.groups()
        pairs = re.findall(rf"(%\w+) = ({SSA})", carried or "")
        values = [self._v(init).copy() for _, init in pairs]
        index, hi_v, step_v = self._v(lo).copy(), self._v(hi), self._v(step)
        while True:
            active = mask & (index < hi_v)
            if not active.any():
                break
            self.env[iv] = index
            for (name, _), value in zip(pairs, values, strict=True):
                self.env[name] = value
            new = self._run(node.body, active) or []
            values = [np.where(active, n, v) for n, v in zip(new, values, strict=True)]
            index = np.where(active, index + step_v, index)
        for i, value in enumerate(values):
            self.env[f"{out}#{i}"] = value

    def _if(self, node: _Node, mask: np.ndarray) -> None:
        m = re.match(rf"(?:(%\w+):\d+ = )?scf\.if ({SSA})", node.line)
        out, cond = m.groups()
        c = self._v(cond).astype(bool)
        then = self._run(node.body, mask & c) if (mask & c).any() or out else None
        other = self._run(node.orelse, mask & ~c) if node.orelse else None
        if out:
            for i, (a, b) in enumerate(zip(then, other, strict=True)):
                self.env[f"{out}#{i}"] = np.where(c, a, b)

    def _op(self, line: str, mask: np.ndarray) -> None:
        m = re.match(r"(%\w+)(:\d+)? = (\S+) ?(.*)", line)
        if not m:
            return self._effect(line, mask)
        name, multi, op, rest = m.groups()
        value = self._value(op, rest, line, mask)
        if multi:
            for i, v in enumerate(value):
                self.env[f"{name}#{i}"] = v
        else:
            self.env[name] = value
        return None

    def _value(self, op: str, rest: str, line: str, mask: np.ndarray):
        """The value of an arith or math op, else of a device op."""
        refs = re.findall(SSA, rest)
        n = self.threads
        if op == "arith.constant":
            text = rest.split(":")[0].strip()
            if text == "0xFF800000":
                return np.full(n, -np.inf)
            return np.full(n, float(text) if ("." in text or "e" in text) else int(text))
        if op in _INT_OPS:
            a, b = self._v(refs[0]), self._v(refs[1])
            with np.errstate(all="ignore"):
                return _INT_OPS[op](a, b)
        if op == "arith.cmpi":
            pred = rest.split(",")[0].strip()
            a, b = self._v(refs[0]), self._v(refs[1])
            return {"slt": a < b, "sgt": a > b, "eq": a == b, "sle": a <= b, "sge": a >= b, "ne": a != b}[pred]
        if op == "arith.cmpf":
            pred = rest.split(",")[0].strip()
            a, b = self._v(refs[0]), self._v(refs[1])
            return {"oeq": a == b, "ogt": a > b, "olt": a < b}[pred]
        if op == "arith.select":
            c, a, b = (self._v(r) for r in refs)
            return np.where(c.astype(bool).reshape(c.shape + (1,) * (a.ndim - c.ndim)), a, b)
        if op in _FLOAT_OPS:
            with np.errstate(all="ignore"):
                return _FLOAT_OPS[op](self._v(refs[0]), self._v(refs[1]))
        if op == "math.exp2":
            with np.errstate(all="ignore"):
                return np.exp2(self._v(refs[0]))
        if op == "arith.truncf":
            return round_to(self._v(refs[0]), rest.split(" to ")[-1].strip())
        if op == "arith.index_cast":
            return self._v(refs[0]).copy()
        return self._device_value(op, rest, line, mask, refs)

    def _device_value(self, op: str, rest: str, line: str, mask: np.ndarray, refs: list[str]):
        """The value of a gpu, nvgpu, nvvm, vector, llvm or memref op."""
        n = self.threads
        if op == "gpu.thread_id":
            return np.arange(n, dtype=np.int64)
        if op == "gpu.block_id":
            return np.full(n, self.block_id, np.int64)
        if op == "gpu.shuffle":
            value, offset = self._v(refs[0]), int(self._v(refs[1])[0])
            lanes = np.arange(n)
            return [value[lanes ^ offset], np.ones(n, bool)]
        if op in ("gpu.dynamic_shared_memory", "nvgpu.device_async_create_group"):
            return np.zeros(n)
        if op == "memref.view":
            shape = re.search(r"memref<(\d+)x(\w+), #gpu", rest.split(" to ")[-1])
            self.shared, self.shared_type = np.full(int(shape.group(1)), np.nan), shape.group(2)
            return np.zeros(n)
        if op == "nvgpu.device_async_copy":
            return self._copy(rest, refs)
        if op == "nvgpu.ldmatrix":
            return self._ldmatrix(refs[1], "transpose = true" in rest)
        if op == "vector.extract":
            value = self._v(refs[0])
            if "from vector<1xi32>" in rest:
                return value  # an i32 register holds its pair as is
            index = int(re.search(r"\[(\d+)\]", rest).group(1))
            return value[:, index]
        if op == "vector.bitcast":
            return self._v(refs[0])
        if op == "vector.from_elements":
            dtype = re.search(r"vector<2x(\w+)>", rest).group(1)
            return np.stack([round_to(self._v(r), dtype) for r in refs], axis=1)
        if op == "nvvm.mma.sync":
            return self._mma([self._v(r) for r in refs])
        if op == "llvm.extractvalue":
            return self._v(refs[0])[:, int(re.search(r"\[(\d+)\]", rest).group(1))]
        if op == "memref.load":
            return self._load(refs[0], self._v(refs[1]), mask)
        raise NotImplementedError(line)

    # -- memory -----------------------------------------------------------------------------------------------------

    def _buffer(self, ref: str) -> np.ndarray:
        return self.buffers.get(ref, self.shared)

    def _load(self, ref: str, index: np.ndarray, mask: np.ndarray) -> np.ndarray:
        buffer, at = self._buffer(ref), index[mask]
        if (at < 0).any() or (at >= buffer.size).any():
            raise IndexError(f"load of {ref} out of bounds: {at.min()}..{at.max()} of {buffer.size}")
        out = np.zeros(self.threads)
        out[mask] = buffer[at]
        return out

    def _effect(self, line: str, mask: np.ndarray) -> None:
        op = line.split()[0]
        refs = re.findall(SSA, line)
        if op == "memref.store":
            self._store(refs[1], self._v(refs[2]), self._v(refs[0])[:, None], mask, line)
        elif op == "vector.store":
            self._store(refs[1], self._v(refs[2]), self._v(refs[0]), mask, line)
        elif op not in ("gpu.barrier", "nvgpu.device_async_wait", "gpu.return"):
            raise NotImplementedError(line)

    def _store(self, ref: str, index: np.ndarray, values: np.ndarray, mask: np.ndarray, line: str) -> None:
        buffer, dtype = self._buffer(ref), self.dtypes.get(ref, self.shared_type)
        for t in np.nonzero(mask)[0]:
            at, width = int(index[t]), values.shape[1]
            if at < 0 or at + width > buffer.size:
                raise IndexError(f"store to {ref} out of bounds at {at}")
            buffer[at:at + width] = round_to(values[t], dtype)

    def _copy(self, rest: str, refs: list[str]) -> np.ndarray:
        width = int(re.search(r"\], (\d+)", rest).group(1))
        src, at, to = self._buffer(refs[0]), self._v(refs[1]), self._v(refs[3])
        counts = self._v(refs[4]) if len(refs) > 4 else np.full(self.threads, width)
        for t in range(self.threads):  # every thread copies (the kernels issue copies unconditionally)
            count = int(max(0, min(width, counts[t])))
            if at[t] < 0 or at[t] + max(count, 1) > src.size:  # even an empty chunk's address lies inside
                raise IndexError(f"cp.async reads {refs[0]} out of bounds at {at[t]} (+{count})")
            if to[t] < 0 or to[t] + width > self.shared.size:
                raise IndexError(f"cp.async writes shared memory out of bounds at {to[t]}")
            row = np.zeros(width)
            row[:count] = src[at[t]:at[t] + count]
            self.shared[to[t]:to[t] + width] = row
        return np.zeros(self.threads)

    # -- tensor cores -----------------------------------------------------------------------------------------------

    def _ldmatrix(self, index_ref: str, transpose: bool) -> np.ndarray:
        """ldmatrix .x4: lanes 8i..8i+7 address the rows of matrix i; lane l receives row l/4, columns
        2(l%4) and 2(l%4)+1 of each matrix (of its transpose with .trans)."""
        index = self._v(index_ref)
        out = np.zeros((self.threads, 4, 2))
        for w in range(0, self.threads, WARP):
            for i in range(4):
                rows = [index[w + 8 * i + r] for r in range(8)]
                if min(rows) < 0 or max(rows) + 8 > self.shared.size:
                    raise IndexError("ldmatrix reads shared memory out of bounds")
                matrix = np.stack([self.shared[a:a + 8] for a in rows])
                if transpose:
                    matrix = matrix.T
                for lane in range(WARP):
                    out[w + lane, i] = matrix[lane // 4, 2 * (lane % 4):2 * (lane % 4) + 2]
        return out

    def _mma(self, values: list[np.ndarray]) -> np.ndarray:
        """mma.sync m16n8k16 row.col, f32 accumulators, in the fragment layouts of the PTX ISA."""
        a, b, c = values[:4], values[4:6], values[6:]
        out = np.zeros((self.threads, 4))
        for w in range(0, self.threads, WARP):
            A, B, C = np.zeros((16, 16)), np.zeros((16, 8)), np.zeros((16, 8))
            for lane in range(WARP):
                g, q, t = lane // 4, lane % 4, w + lane
                A[g, 2 * q:2 * q + 2], A[g + 8, 2 * q:2 * q + 2] = a[0][t], a[1][t]
                A[g, 2 * q + 8:2 * q + 10], A[g + 8, 2 * q + 8:2 * q + 10] = a[2][t], a[3][t]
                B[2 * q:2 * q + 2, g], B[2 * q + 8:2 * q + 10, g] = b[0][t], b[1][t]
                C[g, 2 * q:2 * q + 2], C[g + 8, 2 * q:2 * q + 2] = (c[0][t], c[1][t]), (c[2][t], c[3][t])
            D = A @ B + C
            for lane in range(WARP):
                g, q = lane // 4, lane % 4
                out[w + lane] = [D[g, 2 * q], D[g, 2 * q + 1], D[g + 8, 2 * q], D[g + 8, 2 * q + 1]]
        return out


_INT_OPS = {
    "arith.addi": np.add, "arith.subi": np.subtract, "arith.muli": np.multiply,
    "arith.divui": np.floor_divide, "arith.remui": np.remainder,
    "arith.ceildivui": lambda a, b: -(-a // b), "arith.minsi": np.minimum, "arith.maxsi": np.maximum,
    "arith.minui": np.minimum,
}
_FLOAT_OPS = {
    "arith.addf": np.add, "arith.subf": np.subtract, "arith.mulf": np.multiply, "arith.divf": np.divide,
    "arith.maxnumf": np.fmax,
}
