"""Scalar `arith` and `math` ops as C expressions, with `arith`'s semantics.

`ScalarPrinter` is the half of the C-family printer that writes expressions:
integer division rounding as `floordivsi`/`ceildivsi` define it (helpers, or
plain `/` where the dividend is provably non-negative and the divisor a positive
constant), `maximumf`/`minimumf` that propagate NaN and order -0 below +0,
unordered float predicates with NaN semantics, casts with `arith`'s signedness,
bit casts, math functions by the face's names, and float16 emulated as floats
rounded after each op where the face has no half arithmetic. `printer.py`'s
`FunctionPrinter` adds statements, loops and buffers.
"""

from collections.abc import Iterable

from xdsl.dialects import arith
from xdsl.dialects.builtin import (
    Float32Type,
    FloatAttr,
    IndexType,
    IntegerAttr,
    IntegerType,
)
from xdsl.ir import Attribute, Block, BlockArgument, Operation, SSAValue

from ember.backends.source.faces import MATH_FUNCTIONS, Face, bits, is_float
from ember.dialects import loop
from ember.runtime.errors import EmberValueError


class SourceError(EmberValueError):
    """Loop IR that a C-family target cannot express."""


_INT_BINARY = {
    "arith.addi": "+",
    "arith.subi": "-",
    "arith.muli": "*",
    "arith.divsi": "/",
    "arith.remsi": "%",
    "arith.andi": "&",
    "arith.ori": "|",
    "arith.xori": "^",
    "arith.shrsi": ">>",
}
_BOOL_BINARY = {"arith.andi": "&&", "arith.ori": "||", "arith.xori": "!="}
_UNSIGNED_BINARY = {"arith.divui": "/", "arith.remui": "%", "arith.shrui": ">>"}
_FLOAT_BINARY = {
    "arith.addf": "+",
    "arith.subf": "-",
    "arith.mulf": "*",
    "arith.divf": "/",
}
_CMPI = {
    "eq": "==", "ne": "!=", "slt": "<", "sle": "<=", "sgt": ">", "sge": ">=",
    "ult": "<", "ule": "<=", "ugt": ">", "uge": ">=",
}  # fmt: skip
_CMPF = (
    "false", "oeq", "ogt", "oge", "olt", "ole", "one", "ord",
    "ueq", "ugt", "uge", "ult", "ule", "une", "uno", "true",
)  # fmt: skip
_CASTS = (
    "arith.extsi", "arith.trunci", "arith.index_cast", "arith.sitofp",
    "arith.fptosi", "arith.extf", "arith.truncf",
)  # fmt: skip
_UNSIGNED_CASTS = (
    "arith.extui", "arith.uitofp", "arith.fptoui", "arith.index_castui",
)  # fmt: skip
# ops whose float16 result needs no rounding: exact, or a value already held
EXACT_IN_HALF = {
    "arith.negf", "arith.select", "arith.maximumf", "arith.minimumf",
    "arith.maxnumf", "arith.minnumf", "math.absf", "math.copysign",
    "arith.extf", "arith.bitcast",
}  # fmt: skip


def constant_int(value: SSAValue) -> int | None:
    """The integer a value is, when an `arith.constant` defines it."""
    op = value.owner
    if isinstance(op, arith.ConstantOp) and isinstance(op.value, IntegerAttr):
        return op.value.value.data
    return None


class SourceUnit:
    """A translation unit being printed: helper functions and features that
    the printed functions use, in the order first used."""

    def __init__(self, face: Face):
        self.face = face
        self.helpers: dict[str, list[str]] = {}
        self.features: set[str] = set()

    def helper(self, name: str, lines: Iterable[str]) -> str:
        if name not in self.helpers:
            qualifier = self.face.helper_qualifier
            first = next(iter(lines))
            self.helpers[name] = [f"{qualifier} {first}" if qualifier else first]
            self.helpers[name] += list(lines)[1:]
        return name

    def join(self, piece: dict) -> None:
        """Take in the features and helpers a piece printed apart used (a
        kernel compiled on its own: `gpu.kernel_piece`, `c_model`), each
        helper once."""
        self.features.update(piece["features"])
        for name, lines in piece["helpers"].items():
            self.helpers.setdefault(name, lines)

    def text(self, functions: Iterable[str]) -> str:
        parts = ["\n".join(self.face.prelude(self.features))]
        parts += ["\n".join(lines) for lines in self.helpers.values()]
        parts += list(functions)
        return "\n\n".join(p for p in parts if p) + "\n"


class ScalarPrinter:
    """Writes scalar ops as C expressions; the statement printer subclasses it
    and supplies `expr` (a value's name or inlined expression)."""

    def __init__(self, unit: SourceUnit):
        self.unit = unit
        self.face = unit.face
        self._nonneg: dict[SSAValue, bool] = {}

    def expr(self, value: SSAValue) -> str:
        raise NotImplementedError

    def ctype(self, t: Attribute) -> str:
        if is_float(t) and bits(t) != 32:
            self.unit.features.add(f"f{bits(t)}")
            self.emulated_half(t)
        return self.face.ctype(t)

    def emulated_half(self, t: Attribute) -> bool:
        """Whether `t` is float16 held in floats (rounded after each op); its
        helpers join the unit."""
        if not is_float(t) or bits(t) != 16 or self.face.native_half:
            return False
        for name, lines in self.face.half_helpers().items():
            self.unit.helper(name, lines)
        return True

    def constant(self, op: arith.ConstantOp) -> str:
        value, t = op.value, op.result.type
        if isinstance(value, FloatAttr):
            self.ctype(t)
            return self.face.float_literal(float(value.value.data), t)
        if isinstance(value, IntegerAttr):
            n = value.value.data
            if bits(t) == 1:
                return "true" if n & 1 else "false"
            if bits(t) == 64 and not -(2**31) <= n < 2**31:
                long = f"{n}{self.face.long_suffix}"
                return f"({self.face.cast(self.ctype(t), long)})"
            return str(n) if n >= 0 or bits(t) < 64 else f"({n})"
        raise SourceError(f"{self.face.name} source: unsupported constant {value}")

    # scalar expressions

    def scalar(self, op: Operation) -> str:
        name = op.name
        args = [self.expr(v) for v in op.operands]
        t = op.results[0].type
        if name in _BOOL_BINARY and bits(t) == 1:  # GLSL has no & on bool
            return f"{args[0]} {_BOOL_BINARY[name]} {args[1]}"
        if name in _INT_BINARY:
            return f"{args[0]} {_INT_BINARY[name]} {args[1]}"
        if name == "arith.shli":
            u = self.face.int_type(bits(t), unsigned=True)
            shifted = f"({self.face.cast(u, args[0])} << {args[1]})"
            return self.face.cast(self.ctype(t), shifted)
        if name in _UNSIGNED_BINARY:
            u = self.face.int_type(bits(t), unsigned=True)
            a, b = self.face.cast(u, args[0]), self.face.cast(u, args[1])
            return self.face.cast(self.ctype(t), f"({a} {_UNSIGNED_BINARY[name]} {b})")
        if name in _FLOAT_BINARY:
            return f"{args[0]} {_FLOAT_BINARY[name]} {args[1]}"
        if name == "arith.negf":
            return f"-{args[0]}"
        if name in ("arith.floordivsi", "arith.ceildivsi"):
            return self.division(op, args)
        if name in ("arith.maxsi", "arith.minsi", "arith.maxui", "arith.minui"):
            a, b = args
            if name.endswith("ui") and bits(t) > 1:
                u = self.face.int_type(bits(t), unsigned=True)
                a, b = self.face.cast(u, a), self.face.cast(u, b)
            sign = ">" if "max" in name else "<"
            return f"{a} {sign} {b} ? {args[0]} : {args[1]}"
        if name in ("arith.maximumf", "arith.minimumf"):
            return f"{self.float_helper(name, t)}({args[0]}, {args[1]})"
        if name == "arith.cmpi":
            assert isinstance(op, arith.CmpiOp)
            pred = arith.CMPI_COMPARISON_OPERATIONS[op.predicate.value.data]
            a, b = args
            if pred.startswith("u") and bits(op.lhs.type) > 1:
                u = self.face.int_type(bits(op.lhs.type), unsigned=True)
                a, b = self.face.cast(u, a), self.face.cast(u, b)
            return f"{a} {_CMPI[pred]} {b}"
        if name == "arith.cmpf":
            assert isinstance(op, arith.CmpfOp)
            return _cmpf(_CMPF[op.predicate.value.data], *args)
        if name == "arith.select":
            return f"{args[0]} ? {args[1]} : {args[2]}"
        if name in _CASTS or name in _UNSIGNED_CASTS:
            return self.cast(op, args[0])
        if name == "arith.bitcast":
            return self.bitcast(op.operands[0].type, t, args[0])
        if name in MATH_FUNCTIONS:
            return self.math(name, t, args)
        if name == "math.rsqrt":
            one = self.face.float_literal(1.0, t)
            return f"{one} / {self.math('math.sqrt', t, args)}"
        if name == "math.absi":
            return f"{args[0]} < 0 ? -{args[0]} : {args[0]}"
        if name == "dot.u8i8":
            return f"{self.dot_u8i8()}({', '.join(args)})"
        if name == "dot.bf16":
            return f"{self.dot_bf16()}({', '.join(args)})"
        raise SourceError(f"{self.face.name} source: unsupported op '{name}'")

    def dot_u8i8(self) -> str:
        """The helper computing `dot.u8i8` on one lane: unsigned arithmetic
        (the sum wraps, as the instruction's does), the signed bytes widened
        by their sign bit."""
        i32, u32 = self.face.int_type(32), self.face.int_type(32, unsigned=True)
        a, b = self.face.cast(u32, "a"), self.face.cast(u32, "b")
        terms = []
        for j in (0, 8, 16, 24):
            product = f"(({a} >> {j}) & 255u) * (((({b} >> {j}) & 255u) ^ 128u) - 128u)"
            terms.append(f"  s += {self.face.cast(u32, f'({product})')};")
        return self.unit.helper(
            "ember_dot_u8i8",
            [
                f"{i32} ember_dot_u8i8({i32} acc, {i32} a, {i32} b) {{",
                "  /* dot.u8i8: a's bytes unsigned times b's signed, plus acc */",
                f"  {u32} s = {self.face.cast(u32, 'acc')};",
                *terms,
                f"  return {self.face.cast(i32, 's')};",
                "}",
            ],
        )

    def dot_bf16(self) -> str:
        """The helper computing `dot.bf16` on one lane: each bfloat16 widened
        to float32 by moving its bits to the high half (exact), the odd pair's
        product added first. The products are exact in float32, so a multiply
        and an add round once, as the instruction's addition does, without
        libm's `fmaf` where the machine has no fused multiply-add."""
        i32, u32 = self.face.int_type(32), self.face.int_type(32, unsigned=True)
        f32 = self.ctype(_F32)
        halves = []
        for word in "ab":
            w = self.face.cast(u32, word)
            for high, moved in ((1, f"{w} & 0xffff0000u"), (0, f"{w} << 16")):
                value = self.bitcast(_I32, _F32, self.face.cast(i32, f"({moved})"))
                halves.append(f"  {f32} {word}{high} = {value};")
        return self.unit.helper(
            "ember_dot_bf16",
            [
                f"{f32} ember_dot_bf16({f32} acc, {i32} a, {i32} b) {{",
                "  /* dot.bf16: acc + a1 * b1, then + a0 * b0 (word = a1:a0) */",
                *halves,
                f"  {f32} s = acc + a1 * b1;",
                "  return s + a0 * b0;",
                "}",
            ],
        )

    def math(self, name: str, t: Attribute, args: list[str]) -> str:
        if bits(t) == 16 and not self.face.native_half:
            return f"{self.math_function(name, _F32)}({', '.join(args)})"
        if bits(t) == 16:
            f32 = self.face.float_type(32)
            wide = [self.face.cast(f32, a) for a in args]
            fn = self.math_function(name, _F32)
            return self.face.cast(self.ctype(t), f"{fn}({', '.join(wide)})")
        return f"{self.math_function(name, t)}({', '.join(args)})"

    def math_function(self, name: str, t: Attribute) -> str:
        """The face's function for math op `name`; a helper joins the unit."""
        function = self.face.math_function(name, t)
        helper = self.face.math_helpers().get(function)
        return self.unit.helper(function, helper) if helper else function

    def cast(self, op: Operation, value: str) -> str:
        src, dst = op.operands[0].type, op.results[0].type
        to = self.ctype(dst)
        if bits(dst) == 1:
            return f"({value} & 1) != 0"
        if op.name == "arith.extsi" and bits(src) == 1:
            return f"{value} ? {self.face.cast(to, '-1')} : {self.face.cast(to, '0')}"
        if op.name in _UNSIGNED_CASTS and bits(src) > 1 and not is_float(src):
            value = self.face.cast(self.face.int_type(bits(src), True), value)
        if op.name == "arith.fptoui":
            value = self.face.cast(self.face.int_type(bits(dst), True), value)
        return self.face.cast(to, value)

    def bitcast(self, src: Attribute, dst: Attribute, value: str) -> str:
        if self.emulated_half(src) or self.emulated_half(dst):
            raise SourceError(
                f"{self.face.name} source: a bit cast of float16 is not supported"
            )
        native = self.face.bitcast(value, src, dst)
        if native is not None:
            return native
        a, b = self.ctype(src), self.ctype(dst)
        name = f"ember_bitcast_{_tname(src)}_{_tname(dst)}"
        self.unit.helper(
            name,
            [
                f"{b} {name}({a} x) {{",
                f"  union {{ {a} from; {b} to; }} u;",
                "  u.from = x;",
                "  return u.to;",
                "}",
            ],
        )
        return f"{name}({value})"

    def float_helper(self, name: str, t: Attribute) -> str:
        c = self.ctype(t)
        kind = name.split(".")[1]
        helper = f"ember_{kind}_{_tname(t)}"
        first, second = ("b", "a") if kind == "maximumf" else ("a", "b")
        cmp = ">" if kind == "maximumf" else "<"
        f32 = self.face.float_type(32)
        sign = f"signbit({self.face.cast(f32, 'a')})" if bits(t) == 16 else "signbit(a)"
        self.unit.helper(
            helper,
            [
                f"{c} {helper}({c} a, {c} b) {{",
                f"  /* {name}: NaN if either is NaN, and -0 {cmp[::-1]} +0 */",
                f"  if (a {cmp} b) return a;",
                f"  if (b {cmp} a) return b;",
                f"  if (a == b) return {sign} ? {first} : {second};",
                "  return a + b;",
                "}",
            ],
        )
        return helper

    def division(self, op: Operation, args: list[str]) -> str:
        t = op.results[0].type
        floor = op.name == "arith.floordivsi"
        divisor = constant_int(op.operands[1])
        if divisor is not None and divisor > 0 and self.nonneg(op.operands[0]):
            if floor:
                return f"{args[0]} / {args[1]}"
            return f"({args[0]} + {divisor - 1}) / {args[1]}"
        c = self.ctype(t)
        kind = "floordiv" if floor else "ceildiv"
        helper = f"ember_{kind}_{_tname(t)}"
        sign = "!=" if floor else "=="
        adjust = "q - 1" if floor else "q + 1"
        self.unit.helper(
            helper,
            [
                f"{c} {helper}({c} a, {c} b) {{",
                f"  /* arith.{kind}si: C's / truncates towards zero */",
                f"  {c} q = a / b;",
                f"  return (q * b != a && ((a < 0) {sign} (b < 0))) ? {adjust} : q;",
                "}",
            ],
        )
        return f"{helper}({args[0]}, {args[1]})"

    def nonneg(self, value: SSAValue) -> bool:
        """Whether `value` is provably >= 0 (index arithmetic of loop counters)."""
        if value in self._nonneg:
            return self._nonneg[value]
        self._nonneg[value] = False  # cycles (none in SSA) read as unknown
        result = False
        n = constant_int(value)
        owner = value.owner
        if n is not None:
            result = n >= 0
        elif isinstance(value, BlockArgument) and isinstance(owner, Block):
            parent = owner.parent_op()
            if isinstance(parent, loop.ForOp):
                step = constant_int(parent.step)
                result = self.nonneg(parent.lower) and step is not None and step > 0
        elif isinstance(owner, Operation) and owner.name in (
            "arith.addi", "arith.muli", "arith.divsi", "arith.remsi",
            "arith.floordivsi", "arith.maxsi", "arith.minsi",
        ):  # fmt: skip
            operands = [self.nonneg(v) for v in owner.operands]
            result = any(operands) if owner.name == "arith.maxsi" else all(operands)
        self._nonneg[value] = result
        return result


_F32 = Float32Type()
_I32 = IntegerType(32)


def _tname(t: Attribute) -> str:
    if isinstance(t, IndexType):
        return "index"
    return ("f" if is_float(t) else "i") + str(bits(t))


def _cmpf(pred: str, a: str, b: str) -> str:
    """A float comparison with `arith.cmpf`'s NaN semantics (no fast math)."""
    return {
        "false": "false",
        "true": "true",
        "oeq": f"{a} == {b}",
        "ogt": f"{a} > {b}",
        "oge": f"{a} >= {b}",
        "olt": f"{a} < {b}",
        "ole": f"{a} <= {b}",
        "one": f"{a} < {b} || {a} > {b}",
        "ord": f"{a} == {a} && {b} == {b}",
        "ueq": f"!({a} < {b} || {a} > {b})",
        "ugt": f"!({a} <= {b})",
        "uge": f"!({a} < {b})",
        "ult": f"!({a} >= {b})",
        "ule": f"!({a} > {b})",
        "une": f"{a} != {b}",
        "uno": f"{a} != {a} || {b} != {b}",
    }[pred]
