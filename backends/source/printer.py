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
constants and single-use pure expressions are written inline; scalar ops are
written by `scalars.py` with `arith`'s semantics (floor division, NaN-exact
float maxima, unordered predicates). An op the printer does not know raises
`SourceError` naming it.
"""

import re
from collections.abc import Iterable

from xdsl.dialects import arith, func, memref, scf
from xdsl.dialects.builtin import (
    IndexType,
    MemRefType,
    ModuleOp,
    NoneAttr,
    StringAttr,
)
from xdsl.ir import Attribute, Block, BlockArgument, Operation, SSAValue

from ember.backends.source.faces import MATH_FUNCTIONS, CFace, Face
from ember.backends.source.scalars import (
    EXACT_IN_HALF,
    ScalarPrinter,
    SourceError,
    SourceUnit,
    constant_int,
)
from ember.dialects import loop

THREAD_ATTR = "ember.thread"


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
        raise SourceError(
            f"{what}: expected a static shape, got {t} (symbolic sizes need the "
            "'llvm' target)"
        )
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


def loop_label(op: loop.ForOp) -> str:
    return op.induction_var.name_hint or "loop"


class FunctionPrinter(ScalarPrinter):
    """Prints ops of one function (or kernel) into `lines`. `gpu.py` subclasses
    it for kernels (`emit_bound_for`, `before_op`, `emit_alloc`)."""

    def __init__(self, unit: SourceUnit):
        super().__init__(unit)
        self.names: dict[SSAValue, str] = {}
        self.exprs: dict[SSAValue, str] = {}
        self.taken: set[str] = _RESERVED | unit.face.reserved_words
        self.lines: list[str] = []
        self.depth = 1
        self.live_globals: list[str] = []
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
            if self.emulated_half(result.type) and name not in EXACT_IN_HALF:
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
