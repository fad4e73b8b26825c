"""MLIR written as text, and put in place: the host kernels' common ground.

The host kernels (:mod:`.kernel`, :mod:`.attention`, :mod:`.rows`) are
written as MLIR text with :class:`MlirText` (the builder of
:mod:`prism.codegen.text`, whose regions are ``with`` blocks), parsed, and inlined where the
ops they replace were (:func:`inline_function`, :func:`inline_body`); the
inits that only those ops read go with them (:func:`erase_unused_inits`).
Elementwise programs (see :class:`~prism.codegen.cpu.kernel.Epilogue`) are
written on scalars or vectors by :meth:`MlirText.program`, with ``exp``, ``erf``
and ``tanh`` on vectors as polynomials (:meth:`MlirText.exp`, :meth:`MlirText.erf`,
:meth:`MlirText.tanh`).
"""

from __future__ import annotations

import math
import struct

from mlir import ir

from prism.codegen.text import TextBuilder
from prism.infra.ir import relocate

F32 = "f32"

# exp on vectors, by Cephes' expf polynomial: exp(x) = 2**n * exp(r), n = round(x log2 e), r = x - n ln 2 (in
# two parts). LLVM would call libm's expf once per lane.
_LN2_HI, _LN2_LO = 0.693359375, -2.12194440e-4
_EXP_COEFFS = (1.9875691500e-4, 1.3981999507e-3, 8.3334519073e-3, 4.1665795894e-2, 1.6666665459e-1,
               5.0000001201e-1)
# Below the floor, exp(x) is under f32's smallest normal number: 0 (the exponent bits would wrap). Above the
# ceiling, ln of f32's largest number, it is +inf.
EXP_FLOOR, EXP_CEILING = -87.33654, 88.72283935546875
# 2**f on [-1/2, 1/2] by degree, fitted to the relative error with the constant term 1 (so that 2**0 is 1
# exactly), highest degree first as _EXP_COEFFS, each with its largest relative error over [-1/2, 1/2] in float64:
# degree 6 is f32's full accuracy (within 1.7 ulp once evaluated in f32); the lower degrees serve results that
# are rounded to a narrower type next (exp2_degree).
_EXP2_POLYNOMIALS = {
    4: ((9.582852867479156e-3, 5.590642492460133e-2, 2.4024098616711292e-1, 6.93124193358667e-1, 1.0), 2.82e-6),
    5: ((1.3264726899090643e-3, 9.67151266056332e-3, 5.550733744244489e-2, 2.402224208491922e-1,
         6.931469775984712e-1, 1.0), 9.15e-8),
    6: ((1.5337577497120947e-4, 1.3399859890341759e-3, 9.618519805371761e-3, 5.550329014658928e-2,
         2.4022646248340607e-1, 6.931471824645996e-1, 1.0), 1.98e-9),
}
EXP2_FULL_DEGREE = 6
# A polynomial serves a result rounded next to a type when its error is within this share of half that type's
# ulp: the result then rounds as the exact value does but for one time in a few hundred (a weight that falls
# within the polynomial's error of a rounding boundary).
EXP2_ROUNDING_SHARE = 1 / 256
# Below this, 2**x is under f32's smallest normal number: 0.
EXP2_FLOOR = -126.0
# erf on vectors (least-squares fits in float64, highest degree first), within 2.5 ulp in f32: below 1,
# x P(x**2) (degree 6); from 1, 1 - exp(-x**2) erfcx(x), erfcx(x) = erfc(x) exp(x**2) a polynomial in x - 2.5
# (degree 11); from 4 on, erf rounds to 1 in f32, and |x| is clamped to 4.
_ERF_SMALL_COEFFS = (8.1482934199e-05, -8.0955785907e-04, 5.1976045411e-03, -2.6858458202e-02, 1.1283690662e-01,
                     -3.7612634698e-01, 1.1283791670e+00)
_ERFCX_COEFFS = (-3.2676097837e-07, 1.6163560578e-06, -4.3307631059e-06, 1.4646100200e-05, -5.8291678617e-05,
                 2.1243733087e-04, -7.3427800766e-04, 2.4663765442e-03, -8.0012803523e-03, 2.4938103749e-02,
                 -7.4347378454e-02, 2.1080636149e-01)
ERF_SPLIT, ERF_CLAMP, ERFCX_CENTER = 1.0, 4.0, 2.5
# tanh on vectors, within 1.5 ulp in f32: below TANH_SPLIT, x + x**3 P(x**2) (degree 4); above,
# 1 - 2 / (exp(2x) + 1).
_TANH_SMALL_COEFFS = (-6.3540017929e-03, 2.1187158414e-02, -5.3894652730e-02, 1.3333094360e-01, -3.3333333038e-01)
TANH_SPLIT = 0.625
# The math ops written on vectors as polynomials (MlirText methods), where LLVM would call libm once per lane.
VECTOR_POLYNOMIALS = {"math.exp": "exp", "math.erf": "erf", "math.tanh": "tanh"}


class MlirText(TextBuilder):
    """A host kernel's text: the builder of :mod:`prism.codegen.text` with elementwise programs on f32 scalars
    and vectors."""

    def program(self, ops: tuple | list, operand, typ: str) -> str:
        """Write the elementwise program ``ops`` (see :class:`~prism.codegen.cpu.kernel.Epilogue`) on values of
        type ``typ`` (f32 or a vector of it) and return its last value; ``operand(ref)`` gives the value of
        every other reference (``("input", i)``, ``("c",)``, ...)."""
        values: list[str] = []

        def ref(r: tuple) -> str:
            if r[0] == "value":
                return values[r[1]]
            if r[0] == "constant":
                literal = f32_literal(r[1])
                return self.value(f"arith.constant {f'dense<{literal}>' if typ != F32 else literal} : {typ}", "xc")
            return operand(r)

        for name, refs in ops:
            if name in VECTOR_POLYNOMIALS and typ != F32:
                method = getattr(self, VECTOR_POLYNOMIALS[name])
                values.append(method(ref(refs[0]), int(typ[len("vector<"):typ.index("x")])))
            else:
                values.append(self.value(f"{name} {', '.join(ref(r) for r in refs)} : {typ}", "xe"))
        return values[-1]

    def splat(self, value: float, lanes: int) -> str:
        """A vector of ``lanes`` copies of the f32 ``value``."""
        return self.value(f"arith.constant dense<{f32_literal(value)}> : vector<{lanes}x{F32}>", "xc")

    def exp(self, x: str, lanes: int) -> str:
        """exp of a vector of f32, within 2 ulp: 0 below EXP_FLOOR (and for -inf), +inf above EXP_CEILING; NaN
        stays NaN."""
        vec, ivec, mask = f"vector<{lanes}x{F32}>", f"vector<{lanes}xi32>", f"vector<{lanes}xi1>"
        low = self.value(f"arith.cmpf olt, {x}, {self.splat(EXP_FLOOR, lanes)} : {vec}", "under")
        half_up = self.value(f"vector.fma {x}, {self.splat(math.log2(math.e), lanes)}, {self.splat(0.5, lanes)} "
                             f": {vec}")
        n = self.value(f"math.floor {half_up} : {vec}", "n")
        r = self.value(f"vector.fma {n}, {self.splat(-_LN2_HI, lanes)}, {x} : {vec}", "r")
        r = self.value(f"vector.fma {n}, {self.splat(-_LN2_LO, lanes)}, {r} : {vec}", "r")
        poly = self._polynomial(r, _EXP_COEFFS, lanes)
        r2 = self.value(f"arith.mulf {r}, {r} : {vec}", "r2")
        y = self.value(f"vector.fma {poly}, {r2}, {r} : {vec}", "y")
        y = self.value(f"arith.addf {y}, {self.splat(1.0, lanes)} : {vec}", "y")
        # 2**n as exponent bits: n is clamped to [-127, 128] first (NaN converts to a defined integer), and
        # n = 128 (just below the ceiling) is 2**127 * 2.
        n = self.value(f"arith.minnumf {n}, {self.splat(128.0, lanes)} : {vec}", "n")
        n = self.value(f"arith.maxnumf {n}, {self.splat(-127.0, lanes)} : {vec}", "n")
        ni = self.value(f"arith.fptosi {n} : {vec} to {ivec}", "ni")

        def power(exponent: str) -> str:
            bias = self.value(f"arith.constant dense<127> : {ivec}", "ci")
            shift = self.value(f"arith.constant dense<23> : {ivec}", "ci")
            bits = self.value(f"arith.shli {self.value(f'arith.addi {exponent}, {bias} : {ivec}')}, {shift} : {ivec}")
            return self.value(f"arith.bitcast {bits} : {ivec} to {vec}", "pw")

        top = self.value(f"arith.minsi {ni}, {self.value(f'arith.constant dense<127> : {ivec}', 'ci')} : {ivec}")
        y = self.value(f"arith.mulf {y}, {power(top)} : {vec}", "e")
        y = self.value(f"arith.mulf {y}, {power(self.value(f'arith.subi {ni}, {top} : {ivec}'))} : {vec}", "e")
        high = self.value(f"arith.cmpf ogt, {x}, {self.splat(EXP_CEILING, lanes)} : {vec}", "over")
        y = self.value(f"arith.select {high}, {self.splat(math.inf, lanes)}, {y} : {mask}, {vec}", "e")
        return self.value(f"arith.select {low}, {self.splat(0.0, lanes)}, {y} : {mask}, {vec}", "e")

    def erf(self, x: str, lanes: int) -> str:
        """erf of a vector of f32, within 2.5 ulp (see _ERF_SMALL_COEFFS); odd; NaN stays NaN."""
        vec, mask = f"vector<{lanes}x{F32}>", f"vector<{lanes}xi1>"
        # minimumf keeps NaN, where minnumf would make it the clamp.
        a = self.value(f"arith.minimumf {self.value(f'math.absf {x} : {vec}', 'a')}, {self.splat(ERF_CLAMP, lanes)} "
                       f": {vec}", "a")
        a2 = self.value(f"arith.mulf {a}, {a} : {vec}", "a2")
        small = self.value(f"arith.mulf {a}, {self._polynomial(a2, _ERF_SMALL_COEFFS, lanes)} : {vec}", "y")
        shifted = self.value(f"arith.subf {a}, {self.splat(ERFCX_CENTER, lanes)} : {vec}", "t")
        tail = self.value(f"arith.mulf {self.exp(self.value(f'arith.negf {a2} : {vec}'), lanes)}, "
                          f"{self._polynomial(shifted, _ERFCX_COEFFS, lanes)} : {vec}", "y")
        large = self.value(f"arith.subf {self.splat(1.0, lanes)}, {tail} : {vec}", "y")
        below = self.value(f"arith.cmpf olt, {a}, {self.splat(ERF_SPLIT, lanes)} : {vec}", "below")
        y = self.value(f"arith.select {below}, {small}, {large} : {mask}, {vec}", "y")
        return self.value(f"math.copysign {y}, {x} : {vec}", "e")

    def tanh(self, x: str, lanes: int) -> str:
        """tanh of a vector of f32, within 1.5 ulp (see _TANH_SMALL_COEFFS); odd; NaN stays NaN."""
        vec, mask = f"vector<{lanes}x{F32}>", f"vector<{lanes}xi1>"
        a = self.value(f"math.absf {x} : {vec}", "a")
        a2 = self.value(f"arith.mulf {a}, {a} : {vec}", "a2")
        a3 = self.value(f"arith.mulf {a2}, {a} : {vec}", "a3")
        small = self.value(f"vector.fma {a3}, {self._polynomial(a2, _TANH_SMALL_COEFFS, lanes)}, {a} : {vec}", "y")
        e = self.exp(self.value(f"arith.addf {a}, {a} : {vec}"), lanes)
        ratio = self.value(f"arith.divf {self.splat(2.0, lanes)}, "
                           f"{self.value(f'arith.addf {e}, {self.splat(1.0, lanes)} : {vec}')} : {vec}", "y")
        large = self.value(f"arith.subf {self.splat(1.0, lanes)}, {ratio} : {vec}", "y")
        below = self.value(f"arith.cmpf olt, {a}, {self.splat(TANH_SPLIT, lanes)} : {vec}", "below")
        y = self.value(f"arith.select {below}, {small}, {large} : {mask}, {vec}", "y")
        return self.value(f"math.copysign {y}, {x} : {vec}", "e")

    def _polynomial(self, x: str, coefficients: tuple[float, ...], lanes: int) -> str:
        """The polynomial of ``coefficients`` (highest degree first) at the vector ``x``, by Horner's rule."""
        poly = self.splat(coefficients[0], lanes)
        for coefficient in coefficients[1:]:
            poly = self.value(f"vector.fma {poly}, {x}, {self.splat(coefficient, lanes)} : vector<{lanes}x{F32}>", "y")
        return poly

    def exp2_nonpositive(self, x: str, lanes: int, scalef: bool = False, degree: int = EXP2_FULL_DEGREE) -> str:
        """2**x of a vector of f32 whose lanes are all <= 0 or NaN (attention's scores minus their running
        maximum, in base 2), within 2 ulp with the full polynomial (``degree`` 6), else within the lower
        degree's own error (:func:`exp2_degree`): 0 below EXP2_FLOOR (and for -inf); NaN stays NaN.

        With n = round(x) and f = x - n in [-1/2, 1/2], 2**x is a polynomial in f whose exponent bits are
        raised by n: 13 vector ops at degree 6, where :meth:`exp` of the same values takes 17 plus the change of
        base. With ``scalef`` (AVX-512, 16 lanes), one ``vscalefps`` under a mask scales the polynomial by 2**n
        and zeroes the lanes below the floor, in place of four ops.
        """
        vec, ivec, mask = f"vector<{lanes}x{F32}>", f"vector<{lanes}xi32>", f"vector<{lanes}xi1>"
        zero = self.splat(0.0, lanes)
        n = self.value(f"math.roundeven {x} : {vec}", "n")
        f = self.value(f"arith.subf {x}, {n} : {vec}", "f")
        poly = self._polynomial(f, _EXP2_POLYNOMIALS[degree][0], lanes)
        if scalef:
            # The lanes at or above the floor (NaN among them) as the mask's bits.
            kept = self.value(f"arith.cmpf uge, {x}, {self.splat(EXP2_FLOOR, lanes)} : {vec}", "kept")
            bits = self.value(f"vector.bitcast {kept} : {mask} to vector<1xi{lanes}>", "kb")
            bits = self.value(f"vector.extract {bits}[0] : i{lanes} from vector<1xi{lanes}>", "kb")
            rounding = self.value("arith.constant 4 : i32", "rc")  # the current rounding mode
            # The op reads (src, a, b, k): a scaled by 2**b where k's bit is set, else src. The MLIR 22 wheels hand
            # its operands to llvm.x86.avx512.mask.scalef.ps.512 in that order, and the intrinsic takes (a, b, src,
            # k): written in the intrinsic's order, the lanes get poly * 2**n, or 0.
            return self.value(f"x86vector.avx512.mask.scalef {poly}, {n}, {zero}, {bits}, {rounding} : {vec}", "e")
        low = self.value(f"arith.cmpf olt, {x}, {self.splat(EXP2_FLOOR, lanes)} : {vec}", "under")
        # n is in [-126, 0] wherever the result is kept, so adding n << 23 to the bits of poly (in [0.7, 1.5])
        # scales it by 2**n without leaving the normal numbers.
        ni = self.value(f"arith.fptosi {n} : {vec} to {ivec}", "ni")
        shift = self.value(f"arith.constant dense<23> : {ivec}", "ci")
        bits = self.value(f"arith.bitcast {poly} : {vec} to {ivec}", "yb")
        bits = self.value(f"arith.addi {bits}, {self.value(f'arith.shli {ni}, {shift} : {ivec}')} : {ivec}", "yb")
        y = self.value(f"arith.bitcast {bits} : {ivec} to {vec}", "e")
        return self.value(f"arith.select {low}, {zero}, {y} : {mask}, {vec}", "e")

    def tensor_of(self, buffer: str, dyn: str, tensor: str) -> str:
        """``buffer`` (of the dynamic memref type ``dyn``) as a value of type ``tensor``, which owns it: the
        inverse of :meth:`buffer`."""
        static = tensor.replace("tensor<", "memref<")
        cast = self.value(f"memref.cast {buffer} : {dyn} to {static}", "cs")
        return self.value(f"bufferization.to_tensor {cast} restrict : {static} to {tensor}", "r")

    def buffer(self, arg: str, tensor: str, dyn: str) -> str:
        """The tensor argument ``arg`` as a read-only buffer, cast to the dynamic memref type ``dyn``."""
        static = tensor.replace("tensor<", "memref<")
        buf = self.value(f"bufferization.to_buffer {arg} read_only : {tensor} to {static}", "m")
        return self.value(f"memref.cast {buf} : {static} to {dyn}", "m")


def exp2_degree(significand_bits: int | None) -> int:
    """The degree of the polynomial of :meth:`MlirText.exp2_nonpositive` for results rounded next to a type of
    ``significand_bits`` (the implicit bit counted: 8 for bf16, 11 for f16): the lowest whose relative error is
    within EXP2_ROUNDING_SHARE of half that type's ulp, relative to the largest value of its binade (bf16:
    degree 4, f16: 5); f32's full accuracy where the results are not rounded (None)."""
    if significand_bits is None:
        return EXP2_FULL_DEGREE
    bound = EXP2_ROUNDING_SHARE * 2.0 ** -(significand_bits + 1)
    return min((d for d, (_, error) in _EXP2_POLYNOMIALS.items() if error <= bound), default=EXP2_FULL_DEGREE)


def f32_literal(value: float) -> str:
    """An f32 constant as MLIR text, exactly (its bits in hexadecimal; also for inf and NaN)."""
    return f"0x{struct.unpack('<I', struct.pack('<f', value))[0]:08X}"


def inline_function(op: ir.Operation, text: str, operands: list[ir.Value]) -> None:
    """Replace ``op`` (no result or one) by the body of the single function in ``text``, applied to ``operands``."""
    returned = inline_body(op, text, operands)
    if len(op.results):
        op.results[0].replace_all_uses_with(returned[0])
    op.erase()


def inline_body(anchor: ir.Operation, text: str, operands: list[ir.Value]) -> list[ir.Value]:
    """Insert the body of the single function in ``text``, applied to ``operands``, before ``anchor``; return
    the values it returns."""
    with anchor.location:
        parsed = ir.Module.parse(text)
        relocate(parsed.operation, anchor.location)
        body = parsed.body.operations[0].regions[0].blocks[0]
        for argument, operand in zip(body.arguments, operands, strict=True):
            argument.replace_all_uses_with(operand)
        *ops, terminator = list(body.operations)
        for inner in ops:
            inner.operation.move_before(anchor)
        return list(terminator.operands)


# Ops that only make inits: erased with the ops that a kernel replaced once nothing else reads them (a dead
# fill of attention's S x S scores would still be bufferized into an allocation).
_INIT_OPS = ("linalg.fill", "tensor.empty", "tensor.dim", "arith.constant")


def erase_unused_inits(ops: list[ir.Operation]) -> None:
    """Erase those of ``ops`` (and then of their producers) that make inits and that nothing reads any more.

    Only live ops are ever held: a producer is live while the op reading it is, and an op leaves the
    pending list as it is erased.
    """
    pending: list[ir.Operation] = []

    def add(op: ir.Operation) -> None:
        if op.name in _INIT_OPS and not any(op == other for other in pending):
            pending.append(op)

    for op in ops:
        add(op)
    while True:
        unused = next((op for op in pending if not any(len(list(r.uses)) for r in op.results)), None)
        if unused is None:
            return
        pending = [op for op in pending if op != unused]
        for operand in unused.operands:
            if not isinstance(operand.owner, ir.Block):
                add(operand.owner.operation)
        unused.erase()
