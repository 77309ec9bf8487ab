"""Loop IR printed as C-family source: one printer, three faces.

The input is a module after the te-to-loop segment (`TE_TO_LOOP`): `func.func`s
over static row-major `memref`s with `loop.for` nests, `loop.alloc`, `memref`
loads and stores, `arith`, `math` and `scf.if`. What C99, OpenCL C and CUDA C
spell differently comes from a `Face` (`faces.py`).

The contract of `print_c` with the `c` target's packed entry (`c.py`):

    static int32_t ember_<name>_impl(const float* restrict A, ..., float* restrict C)

- one C function per `func.func`, named `impl_name(func)`;
- its parameters are the function's memref arguments in order, one pointer to
  the first element of each (a row-major, densely packed buffer); inputs the
  function never stores to are `const`;
- it returns 0, or a non-zero error code: `ALLOC_FAILED` (-101, the runtime's
  EMBER_ERR_ALLOC) when an intermediate buffer cannot be allocated; it frees
  what it allocated on every path;
- `global`-scope `loop.alloc`s are allocated by the face's `alloc_global` and
  freed by its `free_global` at the end of their block (malloc/free in
  `CFace`; a face over a static workspace overrides both);
- `local` allocs are arrays on the stack.

Values are named after their name hints (`i_outer`, `acc`), unnamed ones `t<N>`;
constants and single-use pure expressions are written inline. Integer division
follows `arith`: `divsi`/`remsi` are C's truncating `/` and `%`, `floordivsi`
and `ceildivsi` round towards minus and plus infinity (helper functions, or `/`
where the dividend is provably non-negative and the divisor a positive
constant). An op the printer does not know raises `SourceError` naming it.
"""

import re
from collections.abc import Iterable

from xdsl.dialects import arith, func, memref, scf
from xdsl.dialects.builtin import (
    Float32Type,
    FloatAttr,
    IndexType,
    IntegerAttr,
    MemRefType,
    ModuleOp,
    NoneAttr,
    StringAttr,
)
from xdsl.ir import Attribute, Block, BlockArgument, Operation, SSAValue

from ember.backends.source.faces import MATH_FUNCTIONS, CFace, Face, bits, is_float
from ember.dialects import loop
from ember.runtime.errors import EmberValueError

THREAD_ATTR = "ember.thread"


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
_EXACT_IN_HALF = {
    "arith.negf", "arith.select", "arith.maximumf", "arith.minimumf",
    "arith.maxnumf", "arith.minnumf", "math.absf", "math.copysign",
    "arith.extf", "arith.bitcast",
}  # fmt: skip
_RESERVED = (
    set(
        """auto break case char const continue default do double else enum extern
    float for goto if inline int long register restrict return short signed
    sizeof static struct switch typedef union unsigned void volatile while bool
    true false half uchar ushort uint ulong kernel global local constant private
    threadIdx blockIdx blockDim gridDim warpSize main free malloc NULL signbit
    INFINITY NAN max min abs clamp mad select dot mix sign step""".split()
    )
    | {n for n, _ in MATH_FUNCTIONS.values()}
    | {n + "f" for n, _ in MATH_FUNCTIONS.values()}
)


def c_identifier(text: str) -> str:
    """`text` as a C identifier (dots and other punctuation become `_`)."""
    name = re.sub(r"\W", "_", text, flags=re.ASCII) or "v"
    return "v" + name if name[0].isdigit() else name


def impl_name(function: func.FuncOp) -> str:
    """The C name of `function`'s body: `ember_<name>_impl`."""
    return f"ember_{c_identifier(function.sym_name.data)}_impl"


def memref_shape(t: Attribute, what: str) -> list[int]:
    """The static row-major shape of a memref type, or a `SourceError`."""
    if not isinstance(t, MemRefType):
        raise SourceError(f"{what}: expected a memref, got {t}")
    if not isinstance(t.layout, NoneAttr):
        raise SourceError(f"{what}: expected a row-major memref, got {t}")
    shape = list(t.get_shape())
    if any(d < 0 for d in shape):
        raise SourceError(f"{what}: expected a static shape, got {t}")
    return shape


def buffer_name(value: SSAValue) -> str:
    """The name a buffer argument carries (`ember.name`, else its hint)."""
    owner = value.owner
    if isinstance(value, BlockArgument) and isinstance(owner, Block):
        parent = owner.parent_op()
        if isinstance(parent, func.FuncOp) and parent.arg_attrs is not None:
            attrs = parent.arg_attrs.data[value.index].data
            name = attrs.get("ember.name")
            if isinstance(name, StringAttr):
                return name.data
    return value.name_hint or f"arg{getattr(value, 'index', 0)}"


def constant_int(value: SSAValue) -> int | None:
    """The integer a value is, when an `arith.constant` defines it."""
    op = value.owner
    if isinstance(op, arith.ConstantOp) and isinstance(op.value, IntegerAttr):
        return op.value.value.data
    return None


def loop_label(op: loop.ForOp) -> str:
    return op.induction_var.name_hint or "loop"


class SourceUnit:
    """A translation unit being printed: helper functions and features that
    the printed functions use, in the order first used."""

    def __init__(self, face: Face):
        self.face = face
        self.helpers: dict[str, list[str]] = {}
        self.features: set[str] = set()

    def helper(self, name: str, lines: Iterable[str]) -> str:
        if name not in self.helpers:
            self.helpers[name] = [f"{self.face.helper_qualifier} {next(iter(lines))}"]
            self.helpers[name] += list(lines)[1:]
        return name

    def text(self, functions: Iterable[str]) -> str:
        parts = ["\n".join(self.face.prelude(self.features))]
        parts += ["\n".join(lines) for lines in self.helpers.values()]
        parts += list(functions)
        return "\n\n".join(p for p in parts if p) + "\n"


class FunctionPrinter:
    """Prints ops of one function (or kernel) into `lines`. `gpu.py` subclasses
    it for kernels (`emit_bound_for`, `before_op`, `emit_alloc`)."""

    def __init__(self, unit: SourceUnit):
        self.unit = unit
        self.face = unit.face
        self.names: dict[SSAValue, str] = {}
        self.exprs: dict[SSAValue, str] = {}
        self.taken: set[str] = set(_RESERVED)
        self.lines: list[str] = []
        self.depth = 1
        self.live_globals: list[str] = []
        self._nonneg: dict[SSAValue, bool] = {}
        self.temporaries = 0

    # names and expressions

    def fresh(self, hint: str) -> str:
        base = c_identifier(hint)
        name, n = base, 0
        while name in self.taken:
            n += 1
            name = f"{base}_{n}"
        self.taken.add(name)
        return name

    def bind(self, value: SSAValue, hint: str | None = None) -> str:
        if not (hint or value.name_hint):
            self.temporaries += 1
        hint = hint or value.name_hint or f"t{self.temporaries - 1}"
        self.names[value] = name = self.fresh(hint)
        return name

    def expr(self, value: SSAValue) -> str:
        if value in self.exprs:
            return self.exprs[value]
        if value in self.names:
            return self.names[value]
        raise SourceError(f"value {value.name_hint or value} used before it is printed")

    def emit(self, line: str) -> None:
        self.lines.append("  " * self.depth + line if line else "")

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

    # ops

    def emit_block(self, block: Block) -> None:
        for op in block.ops:
            self.emit_op(op)

    def before_op(self, op: Operation) -> None:
        """Hook: lines before `op` (the GPU kernels' barriers)."""

    def emit_op(self, op: Operation) -> None:
        self.before_op(op)
        name = op.name
        if isinstance(op, arith.ConstantOp):
            self.exprs[op.result] = self.constant(op)
        elif isinstance(op, loop.YieldOp | func.ReturnOp):
            pass
        elif isinstance(op, loop.ForOp):
            if THREAD_ATTR in op.attributes:
                self.emit_bound_for(op)
            else:
                self.emit_for(op)
        elif isinstance(op, loop.AllocOp):
            self.emit_alloc(op)
        elif isinstance(op, memref.LoadOp):
            buffer, index = self.expr(op.memref), self.index(op.memref, op.indices)
            t = op.res.type
            value = f"{buffer}[{index}]"
            if self.emulated_half(t):
                value = self.face.half_load(buffer, index)
            self.emit(f"{self.ctype(t)} {self.bind(op.res)} = {value};")
        elif isinstance(op, memref.StoreOp):
            buffer, index = self.expr(op.memref), self.index(op.memref, op.indices)
            value = _bare(self.expr(op.value))
            if self.emulated_half(op.value.type):
                self.emit(self.face.half_store(buffer, index, value))
            else:
                self.emit(f"{buffer}[{index}] = {value};")
        elif isinstance(op, scf.IfOp):
            self.emit_if(op)
        elif isinstance(op, scf.YieldOp):
            parent = op.parent_op()
            if parent is not None:
                for result, value in zip(parent.results, op.operands, strict=True):
                    self.emit(f"{self.names[result]} = {_bare(self.expr(value))};")
        elif len(op.results) == 1 and not op.regions:
            text = self.scalar(op)
            result = op.results[0]
            if self.emulated_half(result.type) and name not in _EXACT_IN_HALF:
                text = f"ember_round_f16({_bare(text)})"
            if self.inlinable(op):
                self.exprs[result] = f"({text})" if _composite(text) else text
            else:
                decl = f"{self.ctype(result.type)} {self.bind(result)}"
                self.emit(f"{decl} = {text};")
        else:
            raise SourceError(f"{self.face.name} source: unsupported op '{name}'")

    def inlinable(self, op: Operation) -> bool:
        if op.results[0].name_hint:
            return False  # a name from the IR is worth keeping
        uses = list(op.results[0].uses)
        return len(uses) == 1 and uses[0].operation.parent_block() is op.parent_block()

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
                return f"(({self.ctype(t)}){n}LL)"
            return str(n) if n >= 0 or bits(t) < 64 else f"({n})"
        raise SourceError(f"{self.face.name} source: unsupported constant {value}")

    def index(self, buffer: SSAValue, indices: Iterable[SSAValue]) -> str:
        shape = memref_shape(buffer.type, f"buffer {self.expr(buffer)}")
        terms: list[str] = []
        offset = 0  # the constant indices' part, folded
        stride = 1
        for dim, index in reversed(list(zip(shape, indices, strict=True))):
            n = constant_int(index)
            if n is not None:
                offset += n * stride
            elif stride == 1:
                terms.append(self.expr(index))
            else:
                terms.append(f"{self.expr(index)} * {stride}")
            stride *= dim
        terms = [*reversed(terms), *([str(offset)] if offset else [])]
        return " + ".join(terms) or "0"

    def emit_for(self, op: loop.ForOp) -> None:
        lower, upper, step = (self.expr(v) for v in (op.lower, op.upper, op.step))
        t = self.ctype(IndexType())
        iv = self.bind(op.induction_var, loop_label(op))
        extent = _extent(op)
        for pragma in self.face.loop_pragma(op.kind.data, extent):
            self.emit(pragma)
        increment = f"++{iv}" if step == "1" else f"{iv} += {step}"
        self.emit(f"for ({t} {iv} = {lower}; {iv} < {upper}; {increment}) {{")
        self.emit_body(op.body.block)
        self.emit("}")

    def emit_body(self, block: Block) -> None:
        """A nested block: its `global` allocations freed at its end."""
        self.depth += 1
        outer = len(self.live_globals)
        self.emit_block(block)
        for name in reversed(self.live_globals[outer:]):
            for line in self.face.free_global(name):
                self.emit(line)
        del self.live_globals[outer:]
        self.depth -= 1

    def emit_bound_for(self, op: loop.ForOp) -> None:
        tag = op.attributes[THREAD_ATTR]
        tag = tag.data if isinstance(tag, StringAttr) else str(tag)
        raise SourceError(
            f"loop '{loop_label(op)}' is bound to {tag}; bind needs a GPU target: "
            "build with target='cuda' or 'opencl'"
        )

    def emit_alloc(self, op: loop.AllocOp) -> None:
        shape = memref_shape(op.buffer.type, "loop.alloc")
        t = op.buffer.type
        assert isinstance(t, MemRefType)
        elem = self.face.element_type(t.element_type)
        self.ctype(t.element_type)
        count = _product(shape)
        name = self.bind(op.buffer, op.buffer.name_hint or "buffer")
        if op.scope_name == "local":
            self.emit(f"{elem} {name}[{count}];")
        elif op.scope_name == "global":
            self.unit.features.add("malloc")
            for line in self.face.alloc_global(name, elem, count, self.live_globals):
                self.emit(line)
            self.live_globals.append(name)
        else:
            raise SourceError(
                f"{self.face.name} source: a '{op.scope_name}' buffer ({name}) "
                "needs a GPU target"
            )

    def emit_if(self, op: scf.IfOp) -> None:
        for result in op.results:
            self.emit(f"{self.ctype(result.type)} {self.bind(result)};")
        self.emit(f"if ({_bare(self.expr(op.cond))}) {{")
        self.emit_body(op.true_region.block)
        if op.false_region.blocks and (
            list(op.false_region.block.ops) != [] and not _only_empty_yield(op)
        ):
            self.emit("} else {")
            self.emit_body(op.false_region.block)
        self.emit("}")

    # scalar expressions

    def scalar(self, op: Operation) -> str:
        name = op.name
        args = [self.expr(v) for v in op.operands]
        t = op.results[0].type
        if name in _INT_BINARY:
            return f"{args[0]} {_INT_BINARY[name]} {args[1]}"
        if name == "arith.shli":
            u = self.face.int_type(bits(t), unsigned=True)
            return f"({self.ctype(t)})(({u}){args[0]} << {args[1]})"
        if name in _UNSIGNED_BINARY:
            u = self.face.int_type(bits(t), unsigned=True)
            return f"({self.ctype(t)})(({u}){args[0]} {_UNSIGNED_BINARY[name]} ({u}){args[1]})"
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
                a, b = f"({u}){a}", f"({u}){b}"
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
                a, b = f"({u}){a}", f"({u}){b}"
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
        raise SourceError(f"{self.face.name} source: unsupported op '{name}'")

    def math(self, name: str, t: Attribute, args: list[str]) -> str:
        if bits(t) == 16 and not self.face.native_half:
            return f"{self.face.math_function(name, _F32)}({', '.join(args)})"
        if bits(t) == 16:
            f32 = self.face.float_type(32)
            wide = [f"({f32}){a}" for a in args]
            fn = self.face.math_function(name, _F32)
            return f"({self.ctype(t)}){fn}({', '.join(wide)})"
        return f"{self.face.math_function(name, t)}({', '.join(args)})"

    def cast(self, op: Operation, value: str) -> str:
        src, dst = op.operands[0].type, op.results[0].type
        to = self.ctype(dst)
        if bits(dst) == 1:
            return f"({value} & 1) != 0"
        if op.name == "arith.extsi" and bits(src) == 1:
            return f"{value} ? ({to})-1 : ({to})0"
        if op.name in _UNSIGNED_CASTS and bits(src) > 1 and not is_float(src):
            value = f"({self.face.int_type(bits(src), unsigned=True)}){value}"
        if op.name == "arith.fptoui":
            value = f"({self.face.int_type(bits(dst), unsigned=True)}){value}"
        return f"({to}){value}"

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
        sign = "signbit((float)a)" if bits(t) == 16 else "signbit(a)"
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


def _tname(t: Attribute) -> str:
    if isinstance(t, IndexType):
        return "index"
    return ("f" if is_float(t) else "i") + str(bits(t))


def _extent(op: loop.ForOp) -> int | None:
    lower, upper, step = (constant_int(v) for v in (op.lower, op.upper, op.step))
    if lower is None or upper is None or step is None or step <= 0:
        return None
    return max(0, -(-(upper - lower) // step))


def _product(shape: Iterable[int]) -> int:
    n = 1
    for d in shape:
        n *= d
    return n


def _composite(text: str) -> bool:
    return not (re.fullmatch(r"[\w.]+", text) or _balanced_outer(text))


def _balanced_outer(text: str) -> bool:
    """Whether `text` is one call or one parenthesized group."""
    depth = 0
    start = text.find("(")
    if start < 0 or not re.fullmatch(r"\w*", text[:start]):
        return False
    for i, ch in enumerate(text[start:], start):
        depth += ch == "("
        depth -= ch == ")"
        if depth == 0:
            return i == len(text) - 1
    return False


def _bare(text: str) -> str:
    return text[1:-1] if text.startswith("(") and _balanced_outer(text) else text


def _only_empty_yield(op: scf.IfOp) -> bool:
    ops = list(op.false_region.block.ops)
    return len(ops) == 1 and isinstance(ops[0], scf.YieldOp) and not ops[0].operands


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


def stored_buffers(function: func.FuncOp) -> set[SSAValue]:
    """The buffers a function stores to (its outputs among its arguments)."""
    return {op.memref for op in function.walk() if isinstance(op, memref.StoreOp)}


def print_function(function: func.FuncOp, unit: SourceUnit) -> str:
    """`function` as `static int32_t ember_<name>_impl(...)` (the module
    docstring states the contract)."""
    p = FunctionPrinter(unit)
    stored = stored_buffers(function)
    params = []
    for arg in function.args:
        memref_shape(arg.type, f"@{function.sym_name.data} argument {arg.index}")
        assert isinstance(arg.type, MemRefType)
        name = p.bind(arg, buffer_name(arg))
        params.append(
            unit.face.pointer_param(arg.type.element_type, name, arg not in stored)
        )
        p.ctype(arg.type.element_type)
    p.depth = 0
    p.emit_body(function.body.block)
    p.depth = 1
    p.emit("return 0;")
    qual = f"{unit.face.function_qualifier} " if unit.face.function_qualifier else ""
    head = f"{qual}int32_t {impl_name(function)}({', '.join(params)}) {{"
    return "\n".join([head, *p.lines, "}"])


def print_c(module: ModuleOp, face: Face | None = None) -> str:
    """The translation unit of every function in `module` (C face by default)."""
    unit = SourceUnit(face or CFace())
    functions = [
        print_function(op, unit)
        for op in module.ops
        if isinstance(op, func.FuncOp) and not op.is_declaration
    ]
    return unit.text(functions)


__all__ = [
    "THREAD_ATTR",
    "FunctionPrinter",
    "SourceError",
    "SourceUnit",
    "buffer_name",
    "c_identifier",
    "impl_name",
    "memref_shape",
    "print_c",
    "print_function",
]
