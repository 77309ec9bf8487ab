"""`loop-vectorize`: `vectorized` loops become SIMD code on `vector` types.

Each lane of the vector is one iteration of the loop. Every value of the body is
classified as *uniform* (the same in every lane: defined outside the loop, a
constant, or computed from uniforms only), *affine* (an index `base + stride *
lane`, with a uniform base and a constant stride) or *varying* (a vector, one
value per lane). Affine indices make contiguous `vector.load`/`vector.store`;
other varying addresses are gathered and scattered lane by lane.
"""

from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import arith, llvm, memref, scf, vector
from xdsl.dialects.builtin import (
    AnyFloat,
    DenseArrayBase,
    DenseIntOrFPElementsAttr,
    IndexType,
    IntegerAttr,
    IntegerType,
    MemRefType,
    ModuleOp,
    StringAttr,
    VectorType,
    i1,
    i64,
)
from xdsl.ir import Attribute, Block, Operation, Region, SSAValue
from xdsl.passes import ModulePass
from xdsl.rewriter import InsertPoint, Rewriter

from ember.dialects import loop
from ember.dialects.llvm import FCmpOp, SelectOp
from ember.passes.convert_memref_to_llvm import element_bytes

MAX_WIDTH = 64
"""The most iterations a loop may have to become straight-line vector code of its
width (LLVM splits a vector<64xf32> into four zmm registers)."""

VECTOR_BYTES = 64
"""Bytes of a native vector (AVX-512): longer loops are strip-mined into chunks of
this many bytes of their widest element type."""

FAILED = "ember.vectorize_failed"
"""The discardable attribute saying why a loop was left serial."""

# Predicates under which a comparison of lane-affine indices is monotone in the lane.
_MONOTONE = ("slt", "sle", "sgt", "sge", "ult", "ule", "ugt", "uge")
_UNSIGNED = ("ult", "ule", "ugt", "uge")


class _Fallback(Exception):
    """The loop cannot be vectorized; it stays serial, the reason recorded."""


@dataclass(frozen=True)
class Uniform:
    """The same value in every lane. `invariant`: computed only from values
    defined outside the loop (not from loads or inner induction variables)."""

    value: SSAValue
    invariant: bool


@dataclass(frozen=True)
class Affine:
    """The index `base + stride * lane`, base uniform."""

    base: SSAValue
    stride: int
    invariant: bool


@dataclass(frozen=True)
class Varying:
    """One value per lane, as a vector. `monotone`: an i1 made of comparisons of
    affine indices (slt, ule, ...) and `andi`s of them, so true at the first and
    the last lane means true at every lane."""

    value: SSAValue
    invariant: bool
    monotone: bool = False


Lanes = Uniform | Affine | Varying


@dataclass(frozen=True)
class _Access:
    buffer: SSAValue
    store: bool
    lane_dims: tuple[tuple[SSAValue, int] | None, ...]
    """Per index: (base, stride) if it is `base + stride * lane` with a base fixed
    for the whole loop, else None."""
    in_inner_loop: bool


@dataclass(frozen=True)
class LoopVectorizePass(ModulePass):
    """Turn each `vectorized` `loop.for` into vector code.

    Before:

        loop.for %i = %c0 to %c16 step %c1 vectorized {
          %a = memref.load %A[%i] : memref<16xf32>
          %b = memref.load %B[%c0] : memref<16xf32>
          %s = arith.mulf %a, %b : f32
          memref.store %s, %C[%i] : memref<16xf32>
        }

    After:

        %a = vector.load %A[%c0] : memref<16xf32>, vector<16xf32>
        %b = memref.load %B[%c0] : memref<16xf32>
        %0 = vector.broadcast %b : f32 to vector<16xf32>
        %s = arith.mulf %a, %0 : vector<16xf32>
        vector.store %s, %C[%c0] : memref<16xf32>, vector<16xf32>

    The bounds and step must be `arith.constant`s, the step 1. A loop of W <= 64
    iterations becomes vector code of width W; a longer one a serial loop over
    chunks of a native vector (64 bytes of its widest element type) plus a
    narrower vector for the remainder; one of a single iteration its body. Loads
    and stores with uniform indices stay scalar, with a last index of stride +-1
    become vector.load/store (reversed by a shuffle for -1), others become one
    scalar access per lane. arith and math ops work on vectors; compares and
    selects on varying values are `llvm.icmp`/`llvm.fcmp`/`llvm.select` (xDSL's
    arith compares and selects are scalar-only). Inner `loop.for`s with uniform
    bounds and `scf.if`s with uniform conditions are kept, their bodies vectorized.

    An `scf.if` whose condition varies but is monotone in the lane (comparisons of
    affine indices, and `andi`s of them) is removed by versioning: `scf.if (cond at
    the first lane && cond at the last lane) { vector code } else { the serial
    loop }`. Everything else that cannot be vectorized without changing results
    leaves the loop serial with `ember.vectorize_failed = "<why>"`: a varying value
    stored to one address (a reduction over the loop), stores whose elements
    lanes may share, other varying conditions, inner loops with varying bounds,
    `loop.alloc` and ops other than arith, math, memref.load/store, loop.for and
    scf.if. Distinct memrefs are assumed not to overlap (ember's kernels check it
    at their entry). No `vectorized` loop is left.
    """

    name = "loop-vectorize"

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        loops = [
            inner
            for inner in op.walk()
            if isinstance(inner, loop.ForOp) and inner.kind.data == "vectorized"
        ]
        for inner in reversed(loops):  # inner loops first
            _vectorize_loop(inner)


# --- the loop --------------------------------------------------------------------


def _constant_int(value: SSAValue) -> int | None:
    owner = value.owner
    if isinstance(owner, arith.ConstantOp) and isinstance(owner.value, IntegerAttr):
        return owner.value.value.data
    return None


_FOLDS: dict[type[Operation], Callable[[int, int], int]] = {
    arith.AddiOp: lambda a, b: a + b,
    arith.SubiOp: lambda a, b: a - b,
    arith.MuliOp: lambda a, b: a * b,
}


def _fold(cls: type[Operation], lhs: SSAValue, rhs: SSAValue) -> int | SSAValue | None:
    """The value of the index op `cls(lhs, rhs)` if constants decide it: a number,
    or the operand it leaves unchanged (x + 0, x - 0, x * 1)."""
    a, b = _constant_int(lhs), _constant_int(rhs)
    if a is not None and b is not None:
        return _FOLDS[cls](a, b)
    if (b == 0 and cls is not arith.MuliOp) or (b == 1 and cls is arith.MuliOp):
        return lhs
    if (a == 0 and cls is arith.AddiOp) or (a == 1 and cls is arith.MuliOp):
        return rhs
    return None


def _index(value: int) -> arith.ConstantOp:
    return arith.ConstantOp(IntegerAttr(value, IndexType()))


def _serial(op: loop.ForOp, why: str) -> None:
    op.properties["kind"] = StringAttr("serial")
    op.attributes[FAILED] = StringAttr(why)


def _vectorize_loop(op: loop.ForOp) -> None:
    bounds = [_constant_int(v) for v in (op.lower, op.upper, op.step)]
    names = ("lower bound", "upper bound", "step")
    for value, name in zip(bounds, names, strict=True):
        if value is None:
            _serial(op, f"expected a constant {name}, got a value computed at run time")
            return
    lower, upper, step = bounds
    assert lower is not None and upper is not None and step is not None
    if step != 1:
        _serial(op, f"expected step 1, got {step}")
        return
    trip = upper - lower
    if trip <= 0:
        Rewriter.erase_op(op)
        return
    out = Block()
    try:
        if trip == 1:
            _inline_iteration(op, op.lower, out)
        elif trip <= MAX_WIDTH:
            _chunk(op, op.lower, trip, out, whole=True)
        else:
            _strip_mine(op, lower, trip, out)
    except _Fallback as e:
        out.drop_all_references()
        _serial(op, str(e))
        return
    ops = list(out.ops)
    for inner in ops:
        out.detach_op(inner)
    Rewriter.insert_op(ops, InsertPoint.before(op))
    Rewriter.erase_op(op)


def _inline_iteration(op: loop.ForOp, iv: SSAValue, out: Block) -> None:
    """One iteration of `op`'s body with the induction variable `iv`."""
    mapping = {op.induction_var: iv}
    for inner in op.body.block.ops:
        if not isinstance(inner, loop.YieldOp):
            out.add_op(inner.clone(mapping))


def _native_width(op: loop.ForOp) -> int:
    """Lanes of a 64-byte vector of the widest element the body loads, stores or
    computes."""
    widest = 0
    for inner in op.body.walk():
        types: list[Attribute] = [r.type for r in inner.results]
        if isinstance(inner, memref.LoadOp | memref.StoreOp):
            types.append(inner.memref.type.element_type)  # pyright: ignore
        for t in types:
            if isinstance(t, IntegerType | AnyFloat) and t != i1:
                widest = max(widest, element_bytes(t) or 8)
    return max(2, VECTOR_BYTES // (widest or 8))


def _strip_mine(op: loop.ForOp, lower: int, trip: int, out: Block) -> None:
    """Chunks of a native vector in a serial loop, then the rest as one vector."""
    width = _native_width(op)
    full = trip // width * width
    end = _index(lower + full)  # of the chunks, where the rest starts
    end.result.name_hint = "rest"
    if full > width or trip > full:
        out.add_op(end)
    if full == width:
        _chunk(op, op.lower, width, out)
    else:
        step = _index(width)
        body = Block(arg_types=[IndexType()])
        body.args[0].name_hint = op.induction_var.name_hint
        try:
            _chunk(op, body.args[0], width, body)
        except _Fallback:
            body.drop_all_references()
            raise
        body.add_op(loop.YieldOp())
        out.add_ops([step, loop.ForOp(op.lower, end, step, body)])
    if trip - full == 1:
        _inline_iteration(op, end.result, out)
    elif trip > full:
        _chunk(op, end.result, trip - full, out)


def _chunk(
    op: loop.ForOp, base: SSAValue, width: int, out: Block, whole: bool = False
) -> None:
    """Append to `out` the iterations `[base, base + width)` of `op` (`whole`: all
    of them) as vector code, versioned if the body has varying guards."""
    vectorizer = _Vectorizer(op, base, width)
    code = vectorizer.run()
    if not vectorizer.guards:
        for inner in list(code.ops):
            out.add_op(code.detach_op(inner))
        return
    ends = _Ends(op, base, width, out)
    terms = [t for guard in vectorizer.guards for t in ends.terms(guard)]
    ok = terms[0]
    for term in terms[1:]:
        ok = ends.emit(arith.AndIOp(ok, term)).results[0]
    code.add_op(scf.YieldOp())
    if whole:
        start, end, step = op.lower, op.upper, op.step
    else:
        start = base
        end = ends.add(base, width)
        step = ends.emit(_index(1)).results[0]
    serial = loop.ForOp(start, end, step, op.body.clone())
    serial.attributes.update(op.attributes)
    out.add_op(scf.IfOp(ok, [], Region(code), Region(Block([serial, scf.YieldOp()]))))


class _Ends:
    """Guard conditions evaluated at the first and last lane, as scalars before the
    versioned code."""

    def __init__(self, op: loop.ForOp, base: SSAValue, width: int, out: Block):
        self.loop, self.base, self.last, self.out = op, base, width - 1, out
        self.known: dict[tuple[SSAValue, int], SSAValue] = {}
        self.depends: dict[SSAValue, bool] = {}
        self.constants: dict[int, SSAValue] = {}

    def emit(self, op: Operation) -> Operation:
        self.out.add_op(op)
        return op

    def constant(self, value: int) -> SSAValue:
        if value not in self.constants:
            self.constants[value] = self.emit(_index(value)).results[0]
        return self.constants[value]

    def add(self, base: SSAValue, offset: int) -> SSAValue:
        """`base + offset`, folded if `base` is a constant or `offset` 0."""
        if offset == 0:
            return base
        if (start := _constant_int(base)) is not None:
            return self.constant(start + offset)
        return self.emit(arith.AddiOp(base, self.constant(offset))).results[0]

    def at(self, value: SSAValue, lane: int) -> SSAValue:
        """`value` (of the original body) in iteration `base + lane`."""
        if value is self.loop.induction_var:
            return self.add(self.base, lane)
        owner = value.owner
        if not isinstance(owner, Operation) or not self.loop.is_ancestor(owner):
            return value
        if not self.varies(value):
            lane = 0
        known = self.known.get((value, lane))
        if known is not None:
            return known
        # An invariant guard is made of arith ops on outside values only.
        operands = [self.at(v, lane) for v in owner.operands]
        folded = None
        if type(owner) in _FOLDS and isinstance(value.type, IndexType):
            folded = _fold(type(owner), *operands)
        if isinstance(folded, int):
            folded = self.constant(folded)
        if folded is not None:
            self.known[value, lane] = folded
            return folded
        new = self.emit(
            type(owner).create(
                operands=operands,
                result_types=[r.type for r in owner.results],
                properties=dict(owner.properties),
                attributes=dict(owner.attributes),
            )
        )
        for old, result in zip(owner.results, new.results, strict=True):
            self.known[old, lane] = result
        return self.known[value, lane]

    def varies(self, value: SSAValue) -> bool:
        """Whether `value` depends on the induction variable."""
        if value is self.loop.induction_var:
            return True
        owner = value.owner
        if not isinstance(owner, Operation) or not self.loop.is_ancestor(owner):
            return False
        if value not in self.depends:
            self.depends[value] = any(self.varies(v) for v in owner.operands)
        return self.depends[value]

    def terms(self, cond: SSAValue) -> list[SSAValue]:
        """Scalars whose conjunction means `cond` holds in every lane."""
        owner = cond.owner
        inside = isinstance(owner, Operation) and self.loop.is_ancestor(owner)
        if inside and isinstance(owner, arith.AndIOp):
            return self.terms(owner.lhs) + self.terms(owner.rhs)
        if not inside or not isinstance(owner, arith.CmpiOp):
            return [self.at(cond, 0)]  # uniform: the same in every lane
        terms = [self.at(cond, 0), self.at(cond, self.last)]
        predicate = arith.CMPI_COMPARISON_OPERATIONS[owner.predicate.value.data]
        if predicate in _UNSIGNED:
            # Unsigned order is the signed one while a lane-affine operand is
            # non-negative at both ends (it cannot wrap around in between).
            for operand in owner.operands:
                if isinstance(operand.type, IndexType) and self.varies(operand):
                    for lane in (0, self.last):
                        x, zero = self.at(operand, lane), self.constant(0)
                        terms.append(self.emit(arith.CmpiOp(x, zero, "sge")).result)
        return terms


# --- the body --------------------------------------------------------------------


class _Vectorizer:
    """Emits the iterations `[base, base + width)` of a loop's body as vector code
    into a new block, or raises `_Fallback`."""

    def __init__(self, op: loop.ForOp, base: SSAValue, width: int):
        self.loop, self.width = op, width
        self.values: dict[SSAValue, Lanes] = {op.induction_var: Affine(base, 1, True)}
        self.block = Block()
        self.blocks = [self.block]
        self.scopes: list[dict[object, Operation]] = [{}]
        self.accesses: list[_Access] = []
        self.guards: list[SSAValue] = []
        """Varying conditions of `scf.if`s assumed true in every lane."""
        self.depth = 0  # inner loops around the op being vectorized
        self.emitted: set[Operation] = set()

    def run(self) -> Block:
        try:
            self.body(self.loop.body.block)
            self.check_accesses()
        except _Fallback:
            # What was emitted must not keep uses of the function's values.
            for block in self.blocks:
                block.drop_all_references()
            raise
        _remove_dead(self.block)
        return self.block

    def new_block(self, arg_types: Sequence[Attribute] = ()) -> Block:
        block = Block(arg_types=arg_types)
        self.blocks.append(block)
        return block

    def body(self, block: Block) -> None:
        for op in block.ops:
            if not isinstance(op, loop.YieldOp | scf.YieldOp):
                self.visit(op)

    @contextmanager
    def nested(self, block: Block) -> Iterator[None]:
        outer = self.block
        self.block = block
        self.scopes.append({})
        try:
            yield
        finally:
            self.scopes.pop()
            self.block = outer

    # --- emitting ------------------------------------------------------------------

    def emit(self, op: Operation) -> Operation:
        self.block.add_op(op)
        self.emitted.add(op)
        return op

    def shared(self, key: object, build: Callable[[], Operation]) -> Operation:
        """A pure op built by `build`, emitted once per `key` in the scopes seen
        from here (a local CSE, so that equal addresses are equal values)."""
        for scope in reversed(self.scopes):
            if (found := scope.get(key)) is not None:
                return found
        op = self.emit(build())
        self.scopes[-1][key] = op
        return op

    def clone(
        self, op: Operation, operands: Sequence[SSAValue], types: Sequence[Attribute]
    ) -> Operation:
        """`op` on new operands and result types, shared like `shared`."""
        key = (
            op.name,
            tuple(operands),
            tuple(types),
            tuple(sorted(op.properties.items())),
            tuple(sorted(op.attributes.items())),
        )
        return self.shared(
            key,
            lambda: type(op).create(
                operands=operands,
                result_types=types,
                properties=dict(op.properties),
                attributes=dict(op.attributes),
            ),
        )

    def value(self, key: object, build: Callable[[], Operation]) -> SSAValue:
        return self.shared(key, build).results[0]

    def constant(self, value: int) -> SSAValue:
        return self.value(("constant", value), lambda: _index(value))

    def index_op(self, cls: type[Operation], lhs: SSAValue, rhs: SSAValue) -> SSAValue:
        """`lhs + rhs`, `lhs - rhs` or `lhs * rhs`, folded where a side is known."""
        folded = _fold(cls, lhs, rhs)
        if isinstance(folded, int):
            return self.constant(folded)
        if folded is not None:
            return folded
        return self.value((cls, lhs, rhs), lambda: cls(lhs, rhs))  # pyright: ignore

    def vector_type(self, t: Attribute) -> VectorType:
        return VectorType(t, [self.width])

    def vector(self, lanes: Lanes, t: Attribute) -> SSAValue:
        """`lanes` as a vector of `t`: uniforms broadcast, affine indices built from
        the lane numbers."""
        vt = self.vector_type(t)
        match lanes:
            case Varying():
                return lanes.value
            case Uniform():
                value = lanes.value
                return self.value(
                    ("broadcast", value), lambda: vector.BroadcastOp(value, vt)
                )
            case Affine():
                numbers = DenseIntOrFPElementsAttr.from_list(
                    vt, list(range(self.width))
                )
                iota = self.value(("iota",), lambda: arith.ConstantOp(numbers))
                if lanes.stride != 1:
                    stride = DenseIntOrFPElementsAttr.from_list(vt, [lanes.stride])
                    scale = self.value(
                        ("splat", lanes.stride), lambda: arith.ConstantOp(stride)
                    )
                    iota = self.index_op(arith.MuliOp, iota, scale)
                start = self.vector(Uniform(lanes.base, lanes.invariant), t)
                return self.index_op(arith.AddiOp, start, iota)

    def lane(self, lanes: Lanes, i: int) -> SSAValue:
        """The scalar value of lane `i`."""
        match lanes:
            case Uniform():
                return lanes.value
            case Affine():
                if lanes.stride * i == 0:
                    return lanes.base
                offset = self.constant(lanes.stride * i)
                return self.index_op(arith.AddiOp, lanes.base, offset)
            case Varying():
                value = lanes.value
                t = value.type
                assert isinstance(t, VectorType)
                return self.value(
                    ("lane", value, i),
                    lambda: vector.ExtractOp(value, [i], t.element_type),
                )

    def bind(self, old: SSAValue, lanes: Lanes) -> None:
        """`old` (of the loop body) is `lanes` in the vector code."""
        new = lanes.base if isinstance(lanes, Affine) else lanes.value
        if new.name_hint is None and new.owner in self.emitted:
            new.name_hint = old.name_hint
        self.values[old] = lanes

    def lookup(self, value: SSAValue) -> Lanes:
        found = self.values.get(value)
        # Values not defined in the loop are the same in every lane.
        return Uniform(value, True) if found is None else found

    # --- ops -------------------------------------------------------------------------

    def visit(self, op: Operation) -> None:
        match op:
            case memref.LoadOp():
                self.load(op)
            case memref.StoreOp():
                self.store(op)
            case loop.ForOp():
                self.inner_loop(op)
            case scf.IfOp():
                self.branch(op)
            case loop.AllocOp():
                raise _Fallback("expected no loop.alloc in a vectorized loop")
            case _ if op.dialect_name() in ("arith", "math") and not op.regions:
                self.lanewise(op)
            case _:
                raise _Fallback(f"'{op.name}' cannot be vectorized")

    def lanewise(self, op: Operation) -> None:
        args = [self.lookup(v) for v in op.operands]
        invariant = all(a.invariant for a in args)
        if all(isinstance(a, Uniform) for a in args):
            values = [a.value for a in args]  # pyright: ignore[reportAttributeAccessIssue]
            new = self.clone(op, values, [r.type for r in op.results])
            for old, result in zip(op.results, new.results, strict=True):
                self.bind(old, Uniform(result, invariant))
            return
        for v in (*op.operands, *op.results):
            if not isinstance(v.type, IntegerType | IndexType | AnyFloat):
                raise _Fallback(f"'{op.name}' on {v.type} cannot be vectorized")
        if (affine := self.affine(op, args, invariant)) is not None:
            self.bind(op.results[0], affine)
        elif isinstance(op, arith.CmpiOp | arith.CmpfOp):
            self.compare(op, args, invariant)
        elif isinstance(op, arith.SelectOp):
            self.select(op, args, invariant)
        else:
            vectors = [
                self.vector(a, v.type) for a, v in zip(args, op.operands, strict=True)
            ]
            types = [self.vector_type(r.type) for r in op.results]
            new = self.clone(op, vectors, types)
            monotone = isinstance(op, arith.AndIOp) and all(
                isinstance(a, Uniform) or (isinstance(a, Varying) and a.monotone)
                for a in args
            )
            for old, result in zip(op.results, new.results, strict=True):
                self.bind(old, Varying(result, invariant, monotone))

    def affine(self, op: Operation, args: list[Lanes], invariant: bool) -> Lanes | None:
        """Index addition, subtraction, and multiplication by a constant of affine
        and uniform indices stay affine."""
        if not isinstance(op, arith.AddiOp | arith.SubiOp | arith.MuliOp):
            return None
        if not isinstance(op.result.type, IndexType):
            return None
        lhs, rhs = args
        if isinstance(lhs, Varying) or isinstance(rhs, Varying):
            return None

        def parts(x: Uniform | Affine) -> tuple[SSAValue, int]:
            return (x.value, 0) if isinstance(x, Uniform) else (x.base, x.stride)

        (a, sa), (b, sb) = parts(lhs), parts(rhs)
        if isinstance(op, arith.MuliOp):
            k = _constant_int(b) if sb == 0 else _constant_int(a) if sa == 0 else None
            if k is None:
                return None  # a varying scale: one value per lane
            base, stride = self.index_op(arith.MuliOp, a, b), (sa or sb) * k
        elif isinstance(op, arith.AddiOp):
            base, stride = self.index_op(arith.AddiOp, a, b), sa + sb
        else:
            base, stride = self.index_op(arith.SubiOp, a, b), sa - sb
        if stride == 0:
            return Uniform(base, invariant)
        return Affine(base, stride, invariant)

    def compare(
        self, op: arith.CmpiOp | arith.CmpfOp, args: list[Lanes], invariant: bool
    ) -> None:
        lhs, rhs = (
            self.vector(a, v.type) for a, v in zip(args, op.operands, strict=True)
        )
        if isinstance(op, arith.CmpfOp):
            predicate = arith.CMPF_COMPARISON_OPERATIONS[op.predicate.value.data]
            if predicate in ("false", "true"):
                predicate = "_" + predicate  # the llvm dialect's spelling
            flags = llvm.FastMathAttr(op.fastmath.data)
            key = ("fcmp", predicate, lhs, rhs, flags)
            result = self.value(key, lambda: FCmpOp(lhs, rhs, predicate, flags))
            self.bind(op.result, Varying(result, invariant))
            return
        predicate = arith.CMPI_COMPARISON_OPERATIONS[op.predicate.value.data]
        if isinstance(op.lhs.type, IndexType):
            lhs, rhs = self.as_i64(lhs), self.as_i64(rhs)
        flag = IntegerAttr(llvm.ICmpPredicateFlag(predicate).to_int(), i64)
        result = self.value(
            ("icmp", predicate, lhs, rhs), lambda: llvm.ICmpOp(lhs, rhs, flag)
        )
        monotone = predicate in _MONOTONE and not any(
            isinstance(a, Varying) for a in args
        )
        self.bind(op.result, Varying(result, invariant, monotone))

    def as_i64(self, value: SSAValue) -> SSAValue:
        t = VectorType(i64, [self.width])
        return self.value(("i64", value), lambda: arith.IndexCastOp(value, t))

    def select(self, op: arith.SelectOp, args: list[Lanes], invariant: bool) -> None:
        cond, lhs, rhs = args
        t = op.result.type
        a, b = self.vector(lhs, t), self.vector(rhs, t)
        if isinstance(cond, Uniform):
            new = self.clone(op, [cond.value, a, b], [a.type])
            self.bind(op.result, Varying(new.results[0], invariant))
            return
        c = self.vector(cond, i1)
        if isinstance(t, IndexType):
            a, b = self.as_i64(a), self.as_i64(b)
        result = self.value(("select", c, a, b), lambda: SelectOp(c, a, b))
        if isinstance(t, IndexType):
            vt = self.vector_type(t)
            result = self.value(
                ("index", result), lambda: arith.IndexCastOp(result, vt)
            )
        self.bind(op.result, Varying(result, invariant))

    # --- memory ----------------------------------------------------------------------

    def indices(
        self, op: memref.LoadOp | memref.StoreOp, store: bool
    ) -> tuple[SSAValue, list[Lanes], int]:
        """The buffer, its indices and the stride (+-1) of a contiguous access, 0
        if it is not contiguous."""
        buffer = self.lookup(op.memref)
        if not isinstance(buffer, Uniform):
            raise _Fallback(f"'{op.name}' on a buffer that differs across lanes")
        t = op.memref.type
        assert isinstance(t, MemRefType)
        lanes = [self.lookup(i) for i in op.indices]
        self.record(op.memref, lanes, store)
        if not lanes:
            return buffer.value, lanes, 0
        *outer, last = lanes
        contiguous = (
            isinstance(last, Affine)
            and last.stride in (1, -1)
            and all(isinstance(x, Uniform) for x in outer)
            and t.element_type != i1  # i1 vectors are bits in LLVM, bytes here
            and element_bytes(t.element_type) is not None
        )
        return buffer.value, lanes, last.stride if contiguous else 0  # pyright: ignore

    def first(self, lanes: list[Lanes], stride: int) -> list[SSAValue]:
        """The indices of the lowest element a contiguous access touches."""
        *outer, last = lanes
        assert isinstance(last, Affine)
        start = last.base
        if stride == -1:
            start = self.index_op(arith.SubiOp, start, self.constant(self.width - 1))
        return [*(self.lane(x, 0) for x in outer), start]

    def reverse(self, value: SSAValue) -> SSAValue:
        mask = DenseArrayBase.from_list(i64, list(range(self.width - 1, -1, -1)))
        t = value.type
        assert isinstance(t, VectorType)
        return self.value(
            ("reverse", value),
            lambda: vector.ShuffleOp(value, value, mask, result_type=t),
        )

    def load(self, op: memref.LoadOp) -> None:
        buffer, lanes, stride = self.indices(op, store=False)
        t = op.res.type
        if all(isinstance(x, Uniform) for x in lanes):
            indices = [self.lane(x, 0) for x in lanes]
            new = self.emit(memref.LoadOp.get(buffer, indices))
            self.bind(op.res, Uniform(new.results[0], False))
            return
        if stride:
            vt = self.vector_type(t)
            loaded = self.emit(vector.LoadOp(buffer, self.first(lanes, stride), vt))
            value = loaded.results[0]
            if stride == -1:
                value = self.reverse(value)
            self.bind(op.res, Varying(value, False))
            return
        # A gather: one scalar load per lane.
        loads = [
            self.emit(memref.LoadOp.get(buffer, [self.lane(x, i) for x in lanes]))
            for i in range(self.width)
        ]
        value = self.vector(Uniform(loads[0].results[0], False), t)
        for i, scalar in enumerate(loads[1:], 1):
            value = self.emit(vector.InsertOp(scalar.results[0], value, [i])).results[0]
        self.bind(op.res, Varying(value, False))

    def store(self, op: memref.StoreOp) -> None:
        buffer, lanes, stride = self.indices(op, store=True)
        value = self.lookup(op.value)
        if all(isinstance(x, Uniform) for x in lanes):
            if not isinstance(value, Uniform):
                raise _Fallback(
                    f"stores a value that differs across lanes to one element of "
                    f"{_name(op.memref)} (a reduction over the vectorized loop)"
                )
            indices = [self.lane(x, 0) for x in lanes]
            self.emit(memref.StoreOp.get(value.value, buffer, indices))
            return
        if stride:
            vec = self.vector(value, op.value.type)
            if stride == -1:
                vec = self.reverse(vec)
            self.emit(vector.StoreOp(vec, buffer, self.first(lanes, stride)))
            return
        # A scatter: one scalar store per lane, in the lanes' order.
        for i in range(self.width):
            indices = [self.lane(x, i) for x in lanes]
            self.emit(memref.StoreOp.get(self.lane(value, i), buffer, indices))

    def record(self, buffer: SSAValue, lanes: list[Lanes], store: bool) -> None:
        dims = tuple(
            (x.base, x.stride) if isinstance(x, Affine) and x.invariant else None
            for x in lanes
        )
        self.accesses.append(_Access(buffer, store, dims, self.depth > 0))

    def check_accesses(self) -> None:
        """Running the lanes side by side instead of one after another keeps the
        results if no element of a stored buffer is accessed by two lanes: if
        one index of every access to it is the same `base + stride * lane` with
        a base fixed for the whole loop (in-bounds indices make lanes that differ
        there touch different elements), or if it is stored once per iteration,
        outside inner loops, and never loaded (the lanes store in their order)."""
        stored = {a.buffer for a in self.accesses if a.store}
        for buffer in stored:
            accesses = [a for a in self.accesses if a.buffer is buffer]
            first, *others = accesses
            if any(
                key is not None and all(a.lane_dims[d] == key for a in others)
                for d, key in enumerate(first.lane_dims)
            ):
                continue
            if not others and not first.in_inner_loop:
                continue
            raise _Fallback(
                f"lanes may access the same element of {_name(buffer)}: it is "
                f"stored, and no index of all its accesses is one element per lane"
            )

    # --- structure -----------------------------------------------------------------

    def inner_loop(self, op: loop.ForOp) -> None:
        bounds = [self.lookup(v) for v in (op.lower, op.upper, op.step)]
        values = [b.value for b in bounds if isinstance(b, Uniform)]
        if len(values) != 3:
            raise _Fallback("an inner loop's bounds differ across lanes")
        body = self.new_block([IndexType()])
        body.args[0].name_hint = op.induction_var.name_hint
        new = loop.ForOp(*values, body, op.kind.data)
        new.attributes.update(op.attributes)
        self.emit(new)
        self.bind(op.induction_var, Uniform(body.args[0], False))
        self.depth += 1
        with self.nested(body):
            self.body(op.body.block)
        self.depth -= 1
        body.add_op(loop.YieldOp())

    def branch(self, op: scf.IfOp) -> None:
        cond = self.lookup(op.cond)
        if isinstance(cond, Uniform):
            self.uniform_branch(op, cond.value)
            return
        if not (isinstance(cond, Varying) and cond.monotone and cond.invariant):
            raise _Fallback(
                "an scf.if condition differs across lanes and is not a comparison "
                "of lane-affine indices (slt, sle, sgt, sge, ult, ule, ugt, uge) or "
                "an andi of them"
            )
        # Versioned: this code runs only where the condition holds in every lane.
        self.guards.append(op.cond)
        then = op.true_region.block
        self.body(then)
        end = then.last_op
        assert isinstance(end, scf.YieldOp)
        for old, new in zip(op.results, end.operands, strict=True):
            self.bind(old, self.lookup(new))

    def uniform_branch(self, op: scf.IfOp, cond: SSAValue) -> None:
        regions = [r for r in (op.true_region, op.false_region) if r.blocks]
        blocks = [self.new_block() for _ in regions]
        yielded: list[list[Lanes]] = []
        scopes: list[dict[object, Operation]] = []
        for region, block in zip(regions, blocks, strict=True):
            with self.nested(block):
                self.body(region.block)
                end = region.block.last_op
                assert isinstance(end, scf.YieldOp)
                yielded.append([self.lookup(v) for v in end.operands])
                scopes.append(self.scopes[-1])
        varying = [
            any(not isinstance(y[i], Uniform) for y in yielded)
            for i in range(len(op.results))
        ]
        types = [
            self.vector_type(r.type) if v else r.type
            for r, v in zip(op.results, varying, strict=True)
        ]
        for block, values, scope in zip(blocks, yielded, scopes, strict=True):
            outer = self.block
            self.block = block
            self.scopes.append(scope)
            operands = [
                self.vector(x, r.type) if v else self.lane(x, 0)
                for x, r, v in zip(values, op.results, varying, strict=True)
            ]
            self.scopes.pop()
            self.block = outer
            block.add_op(scf.YieldOp(*operands))
        new = self.emit(scf.IfOp(cond, types, *(Region(b) for b in blocks)))
        for old, result, v in zip(op.results, new.results, varying, strict=True):
            self.bind(old, Varying(result, False) if v else Uniform(result, False))


def _name(buffer: SSAValue) -> str:
    return f"%{buffer.name_hint}" if buffer.name_hint else "a buffer"


def _remove_dead(block: Block) -> None:
    """Erase the unused side-effect-free ops vectorizing left (the broadcasts and
    comparisons of guards that versioning made unnecessary, ...)."""
    for op in reversed(list(block.ops)):
        for region in op.regions:
            for inner in region.blocks:
                _remove_dead(inner)
        pure = isinstance(op, memref.LoadOp | vector.LoadOp) or (
            op.dialect_name() in ("arith", "math", "vector", "llvm")
            and not isinstance(op, vector.StoreOp)
        )
        if pure and not op.regions and all(not r.uses for r in op.results):
            block.erase_op(op)
