"""How loop-vectorize sees a loop body: every value as lanes of a vector.

Each lane is one iteration of the loop. A value is *uniform* (the same in every
lane: defined outside the loop, a constant, or computed from uniforms only),
*affine* (an index `base + stride * lane`, with a uniform base and a constant
stride) or *varying* (a vector, one value per lane). `BodyVectorizer` emits a body
as vector code on these: affine indices make contiguous `vector.load` and
`vector.store` (a small constant stride, a wider load and a shuffle), other
varying addresses are gathered and scattered lane by lane.
The pass itself (bounds, strip-mining, versioning) is `loop_vectorize.py`.
"""

from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass

from xdsl.dialects import arith, llvm, memref, scf, vector
from xdsl.dialects.builtin import (
    AnyFloat,
    DenseArrayBase,
    DenseIntOrFPElementsAttr,
    IndexType,
    IntegerAttr,
    IntegerType,
    MemRefType,
    VectorType,
    i1,
    i64,
)
from xdsl.ir import Attribute, Block, Operation, Region, SSAValue

from ember.dialects import loop
from ember.dialects.llvm import FCmpOp, FPToSIOp, FPToUIOp, SelectOp, UIToFPOp
from ember.passes.convert_memref_to_llvm import element_bytes

VECTOR_CASTS: dict[type[Operation], Callable[[SSAValue, Attribute], Operation]] = {
    arith.FPToSIOp: FPToSIOp,
    arith.FPToUIOp: FPToUIOp,
    arith.SIToFPOp: llvm.SIToFPOp,
    arith.UIToFPOp: UIToFPOp,
    arith.ExtSIOp: llvm.SExtOp,
    arith.ExtUIOp: llvm.ZExtOp,
    arith.TruncIOp: llvm.TruncOp,
}
"""xDSL's arith casts between integers and floats take scalars only (their
verifiers refuse vectors); a lane-wise cast becomes LLVM's, which takes both."""

# Predicates under which a comparison of lane-affine indices is monotone in the lane.
_MONOTONE = ("slt", "sle", "sgt", "sge", "ult", "ule", "ugt", "uge")
UNSIGNED = ("ult", "ule", "ugt", "uge")
"""Monotone while the lane-affine operand does not wrap around."""


MAX_STRIDE = 4
"""The largest stride of a load made one contiguous load and a shuffle
(`BodyVectorizer.strided`): it reads that many times the lanes it keeps."""


class Fallback(Exception):
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


def constant_int(value: SSAValue) -> int | None:
    """The value of an `arith.constant` integer, None for anything else."""
    owner = value.owner
    if isinstance(owner, arith.ConstantOp) and isinstance(owner.value, IntegerAttr):
        return owner.value.value.data
    return None


FOLDS: dict[type[Operation], Callable[[int, int], int]] = {
    arith.AddiOp: lambda a, b: a + b,
    arith.SubiOp: lambda a, b: a - b,
    arith.MuliOp: lambda a, b: a * b,
}


def fold(cls: type[Operation], lhs: SSAValue, rhs: SSAValue) -> int | SSAValue | None:
    """The value of the index op `cls(lhs, rhs)` if constants decide it: a number,
    or the operand it leaves unchanged (x + 0, x - 0, x * 1)."""
    a, b = constant_int(lhs), constant_int(rhs)
    if a is not None and b is not None:
        return FOLDS[cls](a, b)
    if (b == 0 and cls is not arith.MuliOp) or (b == 1 and cls is arith.MuliOp):
        return lhs
    if (a == 0 and cls is arith.AddiOp) or (a == 1 and cls is arith.MuliOp):
        return rhs
    return None


def index_constant(value: int) -> arith.ConstantOp:
    """`arith.constant value : index`."""
    return arith.ConstantOp(IntegerAttr(value, IndexType()))


class BodyVectorizer:
    """Emits the iterations `[base, base + width)` of a loop's body as vector code
    into a new block, or raises `Fallback`."""

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
        except Fallback:
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
        try:
            hash(key)
        except TypeError:  # an attribute that cannot be hashed: not shared
            return self.emit(build())
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
        return self.value(("constant", value), lambda: index_constant(value))

    def index_op(self, cls: type[Operation], lhs: SSAValue, rhs: SSAValue) -> SSAValue:
        """`lhs + rhs`, `lhs - rhs` or `lhs * rhs`, folded where a side is known."""
        folded = fold(cls, lhs, rhs)
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
                indices = VectorType(IndexType(), [self.width])
                numbers = DenseIntOrFPElementsAttr.from_list(
                    indices, list(range(self.width))
                )
                iota = self.value(("iota",), lambda: arith.ConstantOp(numbers))
                if lanes.stride != 1:
                    stride = DenseIntOrFPElementsAttr.from_list(indices, [lanes.stride])
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
                raise Fallback("expected no loop.alloc in a vectorized loop")
            case _ if op.dialect_name() in ("arith", "math", "dot") and not op.regions:
                self.lanewise(op)
            case _:
                raise Fallback(f"'{op.name}' cannot be vectorized")

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
                raise Fallback(f"'{op.name}' on {v.type} cannot be vectorized")
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
            cast = VECTOR_CASTS.get(type(op))
            if cast is not None:
                (v,), (t,) = vectors, types
                new = self.shared(("cast", op.name, v, t), lambda: cast(v, t))
            else:
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
            k = constant_int(b) if sb == 0 else constant_int(a) if sa == 0 else None
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
        """The buffer, its indices and the stride in memory (+-1) of a
        contiguous access, 0 if it is not contiguous.

        An access is contiguous when one index is `base + s * lane`, the others
        uniform, and that dimension's stride in the buffer times `s` is +-1: the
        last index with s = +-1, or an earlier one whose later dimensions all
        have extent 1 (channel c of a (1, C, 1, 1) tensor is element c)."""
        buffer = self.lookup(op.memref)
        if not isinstance(buffer, Uniform):
            raise Fallback(f"'{op.name}' on a buffer that differs across lanes")
        t = op.memref.type
        assert isinstance(t, MemRefType)
        lanes = [self.lookup(i) for i in op.indices]
        self.record(op.memref, lanes, store)
        varying = [d for d, x in enumerate(lanes) if not isinstance(x, Uniform)]
        if len(varying) != 1 or element_bytes(t.element_type) is None:
            return buffer.value, lanes, 0
        x, strides = lanes[varying[0]], t.get_strides()
        if not isinstance(x, Affine) or strides is None:
            return buffer.value, lanes, 0
        step = (strides[varying[0]] or 0) * x.stride
        return buffer.value, lanes, step if step in (1, -1) else 0

    def first(self, lanes: list[Lanes], stride: int) -> list[SSAValue]:
        """The indices of the lowest element a contiguous access touches."""
        indices = []
        for x in lanes:
            if isinstance(x, Affine):
                start = x.base
                if stride == -1:
                    width = self.constant(self.width - 1)
                    start = self.index_op(arith.SubiOp, start, width)
                indices.append(start)
            else:
                indices.append(self.lane(x, 0))
        return indices

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
        strided = self.strided(op, buffer, lanes)
        if strided is not None:
            self.bind(op.res, Varying(strided, False))
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

    def strided(
        self, op: memref.LoadOp, buffer: SSAValue, lanes: list[Lanes]
    ) -> SSAValue | None:
        """A load whose one varying index is the last, `base + s * lane` with s
        in 2..`MAX_STRIDE` and base a constant, as one contiguous load inside
        that dimension (s vectors where they fit, else just the elements from
        the first lane's to the last's) and a shuffle picking every s-th
        element: one channel of each pair a bfloat16 pack reads, the even
        columns of a stride-2 window. None where it is not one."""
        t = op.memref.type
        assert isinstance(t, MemRefType)
        *_, x = lanes
        shape, strides = t.get_shape(), t.get_strides()
        if (
            not isinstance(x, Affine)
            or not 2 <= x.stride <= MAX_STRIDE
            or any(not isinstance(o, Uniform) for o in lanes[:-1])
            or strides is None
            or strides[-1] != 1
            or shape[-1] < 0
            or element_bytes(t.element_type) is None
            or t.element_type == i1
        ):
            return None
        base = constant_int(x.base)
        if base is None:
            return None
        # s whole vectors where they fit in the row, else from the first lane's
        # element to the last's
        last = x.stride * (self.width - 1)  # the last lane's element, from the first's
        for span in (x.stride * self.width, last + 1):
            start = min(base, shape[-1] - span)
            if 0 <= start and base - start + last < span:
                break
        else:
            return None
        offset = base - start
        indices = [self.lane(o, 0) for o in lanes[:-1]] + [self.constant(start)]
        wide = VectorType(t.element_type, [span])
        loaded = self.emit(vector.LoadOp(buffer, indices, wide)).results[0]
        mask = [offset + x.stride * i for i in range(self.width)]
        pick = vector.ShuffleOp(
            loaded,
            loaded,
            DenseArrayBase.from_list(i64, mask),
            result_type=self.vector_type(t.element_type),
        )
        return self.emit(pick).results[0]

    def store(self, op: memref.StoreOp) -> None:
        buffer, lanes, stride = self.indices(op, store=True)
        value = self.lookup(op.value)
        if all(isinstance(x, Uniform) for x in lanes):
            if not isinstance(value, Uniform):
                raise Fallback(
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
            raise Fallback(
                f"lanes may access the same element of {_name(buffer)}: it is "
                f"stored, and no index of all its accesses is one element per lane"
            )

    # --- structure -----------------------------------------------------------------

    def inner_loop(self, op: loop.ForOp) -> None:
        bounds = [self.lookup(v) for v in (op.lower, op.upper, op.step)]
        values = [b.value for b in bounds if isinstance(b, Uniform)]
        if len(values) != 3:
            raise Fallback("an inner loop's bounds differ across lanes")
        lower, upper, step = values
        body = self.new_block([IndexType()])
        body.args[0].name_hint = op.induction_var.name_hint
        new = loop.ForOp(lower, upper, step, body, op.kind.data)
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
            raise Fallback(
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
        otherwise = Region(blocks[1]) if len(blocks) > 1 else None
        new = self.emit(scf.IfOp(cond, types, Region(blocks[0]), otherwise))
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
