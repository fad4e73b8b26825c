"""A LLaMA-style decoder block as MLIR: the bundled workloads decoder_block*.mlir are written by this script.

    x1  = x + sum_h (attention_h(rmsnorm(x) g1 Wq_h, .. Wk_h, .. Wv_h) Wo_h)
    out = x1 + (silu(rmsnorm(x1) g2 Wg) * (rmsnorm(x1) g2 Wu)) Wd

Heads are a batch axis: the normalized rows are broadcast to every head and projected by per-head weights
(``linalg.batch_matmul``), and the heads' projections are summed into the residual. f32 computes everything
in f32; f16 takes f16 arguments and weights, runs each product on f16 operands with f32 accumulation, keeps
the norms, the softmax and the residual stream in f32, and returns f16. The token count is static, or dynamic
(``?``). Regenerate after a change (the suite checks the files are current):

    python benchmarks/workloads/decoder_block.py
"""

from __future__ import annotations

import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent
TOKENS, MODEL, HEADS, HEAD_DIM, HIDDEN = 32, 256, 4, 64, 704
EPS = 1e-6
VARIANTS = {"decoder_block": ("f32", False), "decoder_block_f16": ("f16", False),
            "decoder_block_dynamic": ("f32", True), "decoder_block_f16_dynamic": ("f16", True)}


class Block:
    """The text of one variant, line by line."""

    def __init__(self, element: str, dynamic: bool):
        self.element, self.dynamic = element, dynamic
        self.lines: list[str] = []

    def t(self, *shape: int, element: str = "f32") -> str:
        dims = ["?" if self.dynamic and size == TOKENS else str(size) for size in shape]
        return f"tensor<{'x'.join(dims)}x{element}>"

    def empty(self, name: str, *shape: int, element: str = "f32") -> str:
        sizes = ", ".join("%tokens" for size in shape if self.dynamic and size == TOKENS)
        self.lines.append(f"  %{name} = tensor.empty({sizes}) : {self.t(*shape, element=element)}")
        return f"%{name}"

    def filled(self, name: str, value: str, *shape: int) -> str:
        empty = self.empty(f"{name}_empty", *shape)
        self.lines.append(f"  %{name} = linalg.fill ins({value} : f32) outs({empty} : {self.t(*shape)}) "
                          f"-> {self.t(*shape)}")
        return f"%{name}"

    def generic(self, name: str, maps: list[str], iterators: str, ins: list[tuple[str, str]], out: tuple[str, str],
                body: list[str]) -> str:
        """A generic over ``ins`` (value, type) into ``out``; ``body`` computes ``%r`` from ``%a0``.. and ``%acc``."""
        args = ", ".join([f"%a{i}: {_element(t)}" for i, (_, t) in enumerate(ins)] + [f"%acc: {_element(out[1])}"])
        self.lines += [
            f"  %{name} = linalg.generic {{indexing_maps = [{', '.join(maps)}], iterator_types = [{iterators}]}}",
            f"      ins({', '.join(v for v, _ in ins)} : {', '.join(t for _, t in ins)}) outs({out[0]} : {out[1]}) {{",
            f"  ^bb0({args}):", *(f"    {line}" for line in body), f"    linalg.yield %r : {_element(out[1])}",
            f"  }} -> {out[1]}"]
        return f"%{name}"

    def rmsnorm(self, name: str, x: str, x_element: str, gamma: str) -> str:
        """``x * rsqrt(mean(x^2) + eps) * gamma``, computed in f32, in the block's element type."""
        el = self.element
        extend = [] if x_element == "f32" else ["%w_a0 = arith.extf %a0 : f16 to f32"]
        a0 = "%a0" if x_element == "f32" else "%w_a0"
        rows = self.filled(f"{name}_zero", "%zero", TOKENS)
        ss = self.generic(f"{name}_ss", ["#td", "#t"], '"parallel", "reduction"', [(x, self.t(TOKENS, MODEL,
                          element=x_element))], (rows, self.t(TOKENS)),
                          [*extend, f"%sq = arith.mulf {a0}, {a0} : f32", "%r = arith.addf %acc, %sq : f32"])
        scale = self.generic(f"{name}_scale", ["#v", "#v"], '"parallel"', [(ss, self.t(TOKENS))],
                             (self.empty(f"{name}_rows", TOKENS), self.t(TOKENS)),
                             ["%mean = arith.mulf %a0, %inv_d : f32", "%shifted = arith.addf %mean, %eps : f32",
                              "%r = math.rsqrt %shifted : f32"])
        gamma_wide = [] if el == "f32" else ["%g = arith.extf %a2 : f16 to f32"]
        out = ["%r = arith.mulf %n, %a2 : f32"] if el == "f32" else ["%y = arith.mulf %n, %g : f32",
                                                                      "%r = arith.truncf %y : f32 to f16"]
        return self.generic(name, ["#td", "#t", "#d", "#td"], '"parallel", "parallel"',
                            [(x, self.t(TOKENS, MODEL, element=x_element)), (scale, self.t(TOKENS)),
                             (gamma, self.t(MODEL, element=el))],
                            (self.empty(f"{name}_out", TOKENS, MODEL, element=el), self.t(TOKENS, MODEL, element=el)),
                            [*extend, *gamma_wide, f"%n = arith.mulf {a0}, %a1 : f32", *out])

    def product(self, name: str, op: str, lhs: tuple[str, tuple[int, ...]], rhs: tuple[str, tuple[int, ...]],
                shape: tuple[int, ...], init: str | None = None) -> str:
        """``op`` (matmul or batch_matmul) of operands in the block's element type, accumulated in f32."""
        acc = init or self.filled(f"{name}_zero", "%zero", *shape)
        el = self.element
        self.lines.append(f"  %{name} = linalg.{op} ins({lhs[0]}, {rhs[0]} : {self.t(*lhs[1], element=el)}, "
                          f"{self.t(*rhs[1], element=el)}) outs({acc} : {self.t(*shape)}) -> {self.t(*shape)}")
        return f"%{name}"

    def narrow(self, name: str, value: str, shape: tuple[int, ...], maps: str, iterators: str) -> str:
        """``value`` (f32) in the block's element type."""
        if self.element == "f32":
            return value
        return self.generic(name, [maps, maps], iterators, [(value, self.t(*shape))],
                            (self.empty(f"{name}_out", *shape, element="f16"), self.t(*shape, element="f16")),
                            ["%r = arith.truncf %a0 : f32 to f16"])


def _element(tensor_type: str) -> str:
    return tensor_type.rsplit("x", 1)[1].rstrip(">")


MAPS = """#td = affine_map<(t, d) -> (t, d)>
#t = affine_map<(t, d) -> (t)>
#d = affine_map<(t, d) -> (d)>
#v = affine_map<(t) -> (t)>
#s4 = affine_map<(h, i, j, c) -> (h, i, c)>
#k4 = affine_map<(h, i, j, c) -> (h, j, c)>
#o4 = affine_map<(h, i, j, c) -> (h, i, j)>
#a3 = affine_map<(h, i, j) -> (h, i, j)>
#r3 = affine_map<(h, i, j) -> (h, i)>
#hs = affine_map<(h, t, d) -> (h, t, d)>
#hr = affine_map<(h, t, d) -> (t, d)>"""


def attention(b: Block, q: str, k: str, v: str) -> str:
    """softmax(q k^T / sqrt(head_dim)) v per head, in f32, normalized after the second product."""
    ht, hte = (HEADS, TOKENS), (HEADS, TOKENS, HEAD_DIM)
    s = b.generic("s", ["#s4", "#k4", "#o4"], '"parallel", "parallel", "parallel", "reduction"',
                  [(q, b.t(*hte)), (k, b.t(*hte))], (b.filled("s_zero", "%zero", HEADS, TOKENS, TOKENS),
                                                    b.t(HEADS, TOKENS, TOKENS)),
                  ["%p = arith.mulf %a0, %a1 : f32", "%r = arith.addf %acc, %p : f32"])
    scores = b.t(HEADS, TOKENS, TOKENS)
    m = b.generic("m", ["#a3", "#r3"], '"parallel", "parallel", "reduction"', [(s, scores)],
                  (b.filled("m_init", "%ninf", *ht), b.t(*ht)), ["%r = arith.maximumf %acc, %a0 : f32"])
    p = b.generic("p", ["#a3", "#r3", "#a3"], '"parallel", "parallel", "parallel"', [(s, scores), (m, b.t(*ht))],
                  (b.empty("p_out", HEADS, TOKENS, TOKENS), scores),
                  ["%diff = arith.subf %a0, %a1 : f32", "%scaled = arith.mulf %diff, %scale : f32",
                   "%r = math.exp %scaled : f32"])
    l_ = b.generic("l", ["#a3", "#r3"], '"parallel", "parallel", "reduction"', [(p, scores)],
                   (b.filled("l_zero", "%zero", *ht), b.t(*ht)), ["%r = arith.addf %acc, %a0 : f32"])
    b.lines.append(f"  %pv = linalg.batch_matmul ins({p}, {v} : {scores}, {b.t(*hte)}) "
                   f"outs({b.filled('pv_zero', '%zero', *hte)} : {b.t(*hte)}) -> {b.t(*hte)}")
    return b.generic("att", ["#a3", "#r3", "#a3"], '"parallel", "parallel", "parallel"',
                     [("%pv", b.t(*hte)), (l_, b.t(*ht))], (b.empty("att_out", *hte), b.t(*hte)),
                     ["%r = arith.divf %a0, %a1 : f32"])


def block(element: str, dynamic: bool, name: str) -> str:
    """One variant's module text."""
    b = Block(element, dynamic)
    el = element
    tensors = {"x": (TOKENS, MODEL), "g1": (MODEL,), "wq": (HEADS, MODEL, HEAD_DIM), "wk": (HEADS, MODEL, HEAD_DIM),
               "wv": (HEADS, MODEL, HEAD_DIM), "wo": (HEADS, HEAD_DIM, MODEL), "g2": (MODEL,),
               "wg": (MODEL, HIDDEN), "wu": (MODEL, HIDDEN), "wd": (HIDDEN, MODEL)}
    params = ", ".join(f"%{n}: {b.t(*s, element=el)}" for n, s in tensors.items())
    b.lines += [f"func.func @{name}({params}) -> {b.t(TOKENS, MODEL, element=el)} {{",
                "  %zero = arith.constant 0.0 : f32", "  %one = arith.constant 1.0 : f32",
                "  %ninf = arith.constant 0xFF800000 : f32", f"  %inv_d = arith.constant {1 / MODEL:.9e} : f32",
                f"  %eps = arith.constant {EPS:.9e} : f32", f"  %scale = arith.constant {HEAD_DIM ** -0.5:.9e} : f32"]
    if dynamic:
        b.lines += ["  %c0 = arith.constant 0 : index",
                    f"  %tokens = tensor.dim %x, %c0 : {b.t(*tensors['x'], element=el)}"]
    xn = b.rmsnorm("xn", "%x", el, "%g1")
    b.lines.append(f"  %xb = linalg.broadcast ins({xn} : {b.t(TOKENS, MODEL, element=el)}) "
                   f"outs({b.empty('xb_out', HEADS, TOKENS, MODEL, element=el)} : "
                   f"{b.t(HEADS, TOKENS, MODEL, element=el)}) dimensions = [0]")
    hte = (HEADS, TOKENS, HEAD_DIM)
    q, k, v = (b.product(n, "batch_matmul", ("%xb", (HEADS, TOKENS, MODEL)), (f"%w{n}", (HEADS, MODEL, HEAD_DIM)),
                         hte) for n in "qkv")
    att = b.narrow("att_n", attention(b, q, k, v), hte, "#a3", '"parallel", "parallel", "parallel"')
    proj = b.product("proj", "batch_matmul", (att, hte), ("%wo", (HEADS, HEAD_DIM, MODEL)), (HEADS, TOKENS, MODEL))
    residual = "%x" if el == "f32" else b.generic(
        "x_wide", ["#td", "#td"], '"parallel", "parallel"', [("%x", b.t(TOKENS, MODEL, element=el))],
        (b.empty("x_wide_out", TOKENS, MODEL), b.t(TOKENS, MODEL)), ["%r = arith.extf %a0 : f16 to f32"])
    x1 = b.generic("x1", ["#hs", "#hr"], '"reduction", "parallel", "parallel"',
                   [(proj, b.t(HEADS, TOKENS, MODEL))], (residual, b.t(TOKENS, MODEL)),
                   ["%r = arith.addf %acc, %a0 : f32"])
    hn = b.rmsnorm("hn", x1, "f32", "%g2")
    gate = b.product("gate", "matmul", (hn, (TOKENS, MODEL)), ("%wg", (MODEL, HIDDEN)), (TOKENS, HIDDEN))
    up = b.product("up", "matmul", (hn, (TOKENS, MODEL)), ("%wu", (MODEL, HIDDEN)), (TOKENS, HIDDEN))
    act = b.generic("act", ["#td", "#td", "#td"], '"parallel", "parallel"',
                    [(gate, b.t(TOKENS, HIDDEN)), (up, b.t(TOKENS, HIDDEN))],
                    (b.empty("act_out", TOKENS, HIDDEN), b.t(TOKENS, HIDDEN)),
                    ["%neg = arith.negf %a0 : f32", "%e = math.exp %neg : f32", "%den = arith.addf %one, %e : f32",
                     "%silu = arith.divf %a0, %den : f32", "%r = arith.mulf %silu, %a1 : f32"])
    act = b.narrow("act_n", act, (TOKENS, HIDDEN), "#td", '"parallel", "parallel"')
    out = b.product("out", "matmul", (act, (TOKENS, HIDDEN)), ("%wd", (HIDDEN, MODEL)), (TOKENS, MODEL), init=x1)
    out = b.narrow("out_n", out, (TOKENS, MODEL), "#td", '"parallel", "parallel"')
    b.lines += [f"  return {out} : {b.t(TOKENS, MODEL, element=el)}", "}"]
    shape = "? tokens" if dynamic else f"{TOKENS} tokens"
    header = (f"// A LLaMA-style decoder block, {el}, {shape}, model {MODEL}, {HEADS} heads of {HEAD_DIM}, hidden "
              f"{HIDDEN}.\n// Written by benchmarks/workloads/decoder_block.py; regenerate rather than edit.\n")
    return header + MAPS + "\n" + "\n".join(b.lines) + "\n"


def main() -> int:
    for name, (element, dynamic) in VARIANTS.items():
        (HERE / f"{name}.mlir").write_text(block(element, dynamic, name))
    return 0


if __name__ == "__main__":
    sys.exit(main())
