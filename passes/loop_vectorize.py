"""`loop-vectorize`: `vectorized` loops become SIMD code on `vector` types.

This file decides what becomes of each loop: its bounds, strip-mining, versioning
on guards, the serial fallback. How a body becomes vector code (uniform, affine
and varying values) is `vector_lanes.py`. The native vector is the module's
target's (`ember.target`, see `module_target`): 64 bytes on AVX-512, 32 on AVX2,
16 on SSE2, NEON, RVV (VLEN 128) and Wasm simd128.
"""

from dataclasses import dataclass

from xdsl.context import Context
from xdsl.dialects import arith, memref, scf
from xdsl.dialects.builtin import (
    AnyFloat,
    IndexType,
    IntegerType,
    ModuleOp,
    StringAttr,
    i1,
)
from xdsl.ir import Attribute, Block, Operation, Region, SSAValue
from xdsl.passes import ModulePass
from xdsl.rewriter import InsertPoint, Rewriter

from ember.backends.llvm.target import Target, module_target
from ember.dialects import loop
from ember.passes.convert_memref_to_llvm import element_bytes
from ember.passes.vector_lanes import (
    FOLDS,
    UNSIGNED,
    BodyVectorizer,
    Fallback,
    constant_int,
    fold,
    index_constant,
)

MAX_CHUNKS = 4
"""The most native vectors a loop may span and still become straight-line vector
code of its width (LLVM splits a vector<64xf32> into four AVX-512 registers);
longer loops are strip-mined into native vectors of their widest element type."""

FAILED = "ember.vectorize_failed"
"""The discardable attribute saying why a loop was left serial."""


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

    The bounds and step must be `arith.constant`s, the step 1. A loop of W
    iterations, W at most `MAX_CHUNKS` native vectors of the module target's
    (`ember.target`, else `Target.current()`; AVX-512: 64 f32), becomes vector
    code of width W; a longer one a serial loop over chunks of a native vector
    (the target's vector bytes of its widest element type) plus a narrower
    vector for the remainder; one of a single iteration its body. Loads
    and stores with uniform indices stay scalar; those whose one varying index
    steps through memory by +-1 element per lane (the last index with stride
    +-1, or an earlier one followed by dimensions of extent 1, as the channel
    index of a (1, C, 1, 1) tensor) become vector.load/store (reversed by a
    shuffle for -1); a load of the last index with a constant base and a
    stride of 2 to 4 becomes one contiguous load inside the row and a shuffle
    (`BodyVectorizer.strided`); others become one scalar access per lane.
    arith and math ops work on vectors; compares and
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
        if not loops:
            return
        target = module_target(op)
        for inner in reversed(loops):  # inner loops first
            _vectorize_loop(inner, target)


def _serial(op: loop.ForOp, why: str) -> None:
    op.properties["kind"] = StringAttr("serial")
    op.attributes[FAILED] = StringAttr(why)


def _vectorize_loop(op: loop.ForOp, target: Target) -> None:
    bounds = [constant_int(v) for v in (op.lower, op.upper, op.step)]
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
    width = _native_width(op, target)
    try:
        if trip == 1:
            _inline_iteration(op, op.lower, out)
        elif trip <= MAX_CHUNKS * width:
            _chunk(op, op.lower, trip, out, whole=True)
        else:
            _strip_mine(op, lower, trip, width, out)
    except Fallback as e:
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


def _native_width(op: loop.ForOp, target: Target) -> int:
    """Lanes of one of `target`'s vectors of the widest element the body loads,
    stores or computes (at least 2: a target without SIMD gets pairs, which
    LLVM makes scalar code)."""
    widest = 0
    for inner in op.body.walk():
        types: list[Attribute] = [r.type for r in inner.results]
        if isinstance(inner, memref.LoadOp | memref.StoreOp):
            types.append(inner.memref.type.element_type)  # pyright: ignore
        for t in types:
            if isinstance(t, IntegerType | AnyFloat) and t != i1:
                widest = max(widest, element_bytes(t) or 8)
    return max(2, target.vector_bytes // (widest or 8))


def _strip_mine(op: loop.ForOp, lower: int, trip: int, width: int, out: Block) -> None:
    """Chunks of a native vector (`width` lanes) in a serial loop, then the rest
    as one vector."""
    full = trip // width * width
    end = index_constant(lower + full)  # of the chunks, where the rest starts
    end.result.name_hint = "rest"
    if full > width or trip > full:
        out.add_op(end)
    if full == width:
        _chunk(op, op.lower, width, out)
    else:
        step = index_constant(width)
        body = Block(arg_types=[IndexType()])
        body.args[0].name_hint = op.induction_var.name_hint
        try:
            _chunk(op, body.args[0], width, body)
        except Fallback:
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
    vectorizer = BodyVectorizer(op, base, width)
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
        step = ends.emit(index_constant(1)).results[0]
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
            self.constants[value] = self.emit(index_constant(value)).results[0]
        return self.constants[value]

    def add(self, base: SSAValue, offset: int) -> SSAValue:
        """`base + offset`, folded if `base` is a constant or `offset` 0."""
        if offset == 0:
            return base
        if (start := constant_int(base)) is not None:
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
        if type(owner) in FOLDS and isinstance(value.type, IndexType):
            folded = fold(type(owner), *operands)
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
        if predicate in UNSIGNED:
            # Unsigned order is the signed one while a lane-affine operand is
            # non-negative at both ends (it cannot wrap around in between).
            for operand in owner.operands:
                if isinstance(operand.type, IndexType) and self.varies(operand):
                    for lane in (0, self.last):
                        x, zero = self.at(operand, lane), self.constant(0)
                        terms.append(self.emit(arith.CmpiOp(x, zero, "sge")).results[0])
        return terms
