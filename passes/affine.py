"""Affine index forms for bound inference and index emission (not a pass).

A `Form` is `sum(coef * atom) + const` over atoms with known integer ranges: loop
variables, or a floor division / modulo of a form by a positive constant that
could not be simplified away. A loop over a symbolic extent (`n`, `(n + 7) // 8`)
and a size symbol itself are variables too, of range `[0, SYMBOLIC_RANGE)`:
what the ranges prove then holds for every size the symbol may take. Schedules make indices such as `(32*no + ni) // 32`
with `0 <= ni < 32`; `floordiv` and `mod` simplify them to `no` and `ni` using the
ranges, so bound inference sees exact regions and the vectorizer sees unit strides.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from xdsl.dialects import arith
from xdsl.dialects.builtin import IndexType, IntegerAttr
from xdsl.ir import SSAValue
from xdsl.rewriter import InsertPoint, Rewriter

from ember.dialects.graph_shapes import emit_dim
from ember.runtime.shape_expr import SymExpr

SYMBOLIC_RANGE = 2**40
"""The range assumed of a symbolic size: every dim a compiled kernel runs at
is below it (a tensor of 2**40 elements is a terabyte or more)."""

Extent = int | SymExpr
"""A loop's trip count: an int, or an expression over the size symbols."""


@dataclass(eq=False)
class Var:
    """A loop variable over `[0, extent)`, or a size symbol (`extent` then
    the symbol plus one); `value` is its SSA value once emitted."""

    name: str
    extent: Extent
    value: SSAValue | None = None

    @property
    def range(self) -> tuple[int, int]:
        if isinstance(self.extent, SymExpr):
            return 0, SYMBOLIC_RANGE - 1
        return 0, self.extent - 1

    @property
    def symbolic(self) -> bool:
        return isinstance(self.extent, SymExpr)


@dataclass(eq=False)
class DivMod:
    """`form // divisor` or `form % divisor` (floor semantics), kept opaque; a
    symbolic divisor (a fused loop's inner extent) is a positive size."""

    form: Form
    divisor: Extent
    op: str  # "div" or "mod"
    range: tuple[int, int] = (0, 0)

    def vars(self) -> set[Var]:
        return self.form.vars()


Atom = Var | DivMod


@dataclass
class Form:
    terms: dict[Atom, int] = field(default_factory=dict[Atom, int])
    const: int = 0

    @staticmethod
    def of(atom: Atom, coef: int = 1) -> Form:
        return Form({atom: coef})

    def __add__(self, other: Form | int) -> Form:
        other = _lift(other)
        terms = dict(self.terms)
        for atom, coef in other.terms.items():
            terms[atom] = terms.get(atom, 0) + coef
        return Form({a: c for a, c in terms.items() if c}, self.const + other.const)

    def __neg__(self) -> Form:
        return self * -1

    def __sub__(self, other: Form | int) -> Form:
        return self + -_lift(other)

    def __mul__(self, k: int) -> Form:
        if k == 0:
            return Form()
        return Form({a: c * k for a, c in self.terms.items()}, self.const * k)

    def is_const(self) -> bool:
        return not self.terms

    def vars(self) -> set[Var]:
        found: set[Var] = set()
        for atom in self.terms:
            found |= {atom} if isinstance(atom, Var) else atom.vars()
        return found

    def range(self, fixed: set[Var] | None = None) -> tuple[int, int]:
        """The smallest and largest value, over the atoms not in `fixed` (those
        count as 0 here: the caller adds them back symbolically)."""
        low = high = self.const
        for atom, coef in self.terms.items():
            if fixed is not None and _is_fixed(atom, fixed):
                continue
            a, b = atom.range[0] * coef, atom.range[1] * coef
            low, high = low + min(a, b), high + max(a, b)
        return low, high

    def split(self, fixed: set[Var]) -> tuple[Form, Form]:
        """(the part over fixed atoms, the rest including the constant)."""
        inner = {a: c for a, c in self.terms.items() if _is_fixed(a, fixed)}
        rest = {a: c for a, c in self.terms.items() if not _is_fixed(a, fixed)}
        return Form(inner), Form(rest, self.const)


def _lift(value: Form | int) -> Form:
    return value if isinstance(value, Form) else Form({}, value)


def _is_fixed(atom: Atom, fixed: set[Var]) -> bool:
    return (atom in fixed) if isinstance(atom, Var) else atom.vars() <= fixed


def floordiv(form: Form, c: Extent) -> Form:
    """`form // c` for c > 0, exact where the ranges allow; opaque over a
    symbolic `c`.

    The terms whose coefficients c divides come out of the division
    (`(4*io + ii) // 2` is `2*io + ii // 2`), so what stays opaque ranges only
    over the rest."""
    if isinstance(c, SymExpr):
        low, high = form.range()
        return Form.of(DivMod(form, c, "div", (min(low, 0), max(high, 0))))
    if c == 1:
        return form
    whole = Form({a: k // c for a, k in form.terms.items() if k % c == 0})
    rest = Form({a: k for a, k in form.terms.items() if k % c}, form.const % c)
    whole.const = form.const // c
    low, high = rest.range()
    if low // c == high // c:
        return whole + low // c
    return whole + Form.of(DivMod(rest, c, "div", (low // c, high // c)))


def mod(form: Form, c: Extent) -> Form:
    """`form % c` (floor semantics) for c > 0; terms that c divides drop out."""
    if isinstance(c, SymExpr):
        return Form.of(DivMod(form, c, "mod", (0, SYMBOLIC_RANGE - 1)))
    if c == 1:
        return Form()
    rest = Form({a: k for a, k in form.terms.items() if k % c}, form.const % c)
    low, high = rest.range()
    if low // c == high // c:
        return rest - (low // c) * c
    bounds = (low, high) if 0 <= low and high < c else (0, c - 1)
    return Form.of(DivMod(rest, c, "mod", bounds))


class Emitter:
    """Emits forms as `arith` index ops at an insertion point, one op per step."""

    def __init__(self, constant, size=None):
        self.constant = constant  # int -> SSAValue of an index constant
        self.size = size or constant  # an extent -> its SSAValue

    def emit(self, form: Form, at: InsertPoint) -> SSAValue:
        value: SSAValue | None = None
        for atom, coef in form.terms.items():
            term = self._atom(atom, at)
            if coef != 1:
                term = self._op(arith.MuliOp(term, self.constant(coef)), at)
            value = term if value is None else self._op(arith.AddiOp(value, term), at)
        if value is None:
            return self.constant(form.const)
        if form.const:
            value = self._op(arith.AddiOp(value, self.constant(form.const)), at)
        return value

    def _atom(self, atom: Atom, at: InsertPoint) -> SSAValue:
        if isinstance(atom, Var):
            assert atom.value is not None, f"loop '{atom.name}' used before its loop"
            return atom.value
        inner = self.emit(atom.form, at)
        divisor = self.size(atom.divisor)
        if atom.op == "mod" and atom.form.range()[0] >= 0:
            return self._op(arith.RemSIOp(inner, divisor), at)
        quotient = self._op(arith.FloorDivSIOp(inner, divisor), at)
        if atom.op == "div":
            return quotient
        product = self._op(arith.MuliOp(quotient, divisor), at)
        return self._op(arith.SubiOp(inner, product), at)

    @staticmethod
    def _op(op, at: InsertPoint) -> SSAValue:
        Rewriter.insert_op(op, at)
        return op.results[0]


def emit_size(value: Extent, symbol, constant, at: InsertPoint) -> SSAValue:
    """`value` (an int, or an expression over size symbols) as an index value
    at `at` (`graph_shapes.emit_dim`)."""
    return emit_dim(value, symbol, constant, lambda op: Emitter._op(op, at))


def constant_value(value: SSAValue) -> int | None:
    owner = value.owner
    if isinstance(owner, arith.ConstantOp) and isinstance(owner.value, IntegerAttr):
        if isinstance(owner.value.type, IndexType) or owner.value.type.width.data > 1:  # type: ignore[union-attr]
            return owner.value.value.data
        return owner.value.value.data & 1
    return None
