"""Symbolic dimensions: named sizes and integer expressions over them.

A tensor dimension is an ``int`` or a ``SymExpr``: ``seq``, ``seq + 1``,
``batch * 12``, ``(seq + 15) // 16``. The compiler computes shapes with them
(Python's ``+ - * // %`` and ``sym_min``/``sym_max`` on ints and expressions;
an expression whose value is known *is* an ``int``), the library's metadata
records them as text (``str(expr)``, read back by ``parse``), and the runtime
binds the symbols from its inputs' shapes (``bind``) and evaluates the rest
(``evaluate``). This module is the one place both sides share: plain Python,
no dependency, so the runtime can import it.

Expressions are kept canonical, so equal expressions compare equal and print
alike: a sum of products of *atoms* (symbols, and ``//``, ``%``, ``min``,
``max`` terms that do not simplify) with integer coefficients, terms sorted.
Division simplifies where the divisor divides every coefficient
(``(2 * n + 1) // 2`` is ``n``), ``min`` and ``max`` where the two sides differ
by a constant (``max(n + 1, n)`` is ``n + 1``); the rest stays an atom.

    >>> seq = Sym("seq")
    >>> (seq + 1) * 2 - seq
    seq + 2
    >>> (seq * 12 + 4) // 4
    3 * seq + 1
    >>> evaluate(parse("batch * (seq + 1)"), {"batch": 2, "seq": 7})
    16
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from functools import total_ordering

from .errors import EmberValueError

_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_.]*\Z")
_OPS = ("floordiv", "mod", "min", "max")


@total_ordering
class _Atom:
    """A factor of a product: a symbol (``op`` None, ``name`` its name) or an
    operation that does not simplify (``op`` one of ``_OPS``)."""

    __slots__ = ("args", "name", "op")

    def __init__(self, name: str = "", op: str | None = None, args: tuple = ()):
        self.name, self.op, self.args = name, op, args

    def key(self) -> tuple:
        if self.op is None:
            return (0, self.name)
        return (1, self.op, tuple(_sort_key(a) for a in self.args))

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _Atom) and self.key() == other.key()

    def __lt__(self, other: _Atom) -> bool:
        return self.key() < other.key()

    def __hash__(self) -> int:
        return hash(self.key())

    def text(self) -> str:
        if self.op is None:
            return self.name
        a, b = (_text(x) for x in self.args)
        if self.op in ("min", "max"):
            return f"{self.op}({a}, {b})"
        sign = "//" if self.op == "floordiv" else "%"
        return f"{_paren(self.args[0], a)} {sign} {_paren(self.args[1], b)}"


def _sort_key(value) -> tuple:
    return (0, value) if isinstance(value, int) else (1, value.key())


def _paren(value, text: str) -> str:
    simple = isinstance(value, int) or (
        len(value.terms) == 1 and value.const == 0 and value.terms[0][1] == 1
    )
    return text if simple else f"({text})"


def _text(value) -> str:
    return str(value)


class SymExpr:
    """A canonical integer expression over symbols (see the module docstring).

    Build one from ``Sym(name)`` and Python's operators; never from its fields.
    ``terms`` is a sorted tuple of (monomial, coefficient), a monomial a sorted
    tuple of atoms; ``const`` the constant term.
    """

    __slots__ = ("const", "terms")

    def __init__(self, terms: tuple, const: int):
        self.terms, self.const = terms, const

    # --- construction ----------------------------------------------------------

    @staticmethod
    def _make(coeffs: Mapping[tuple, int], const: int) -> int | SymExpr:
        terms = tuple(sorted(((m, c) for m, c in coeffs.items() if c), key=_term_key))
        return SymExpr(terms, const) if terms else const

    def key(self) -> tuple:
        return (tuple((_term_key(t), t[1]) for t in self.terms), self.const)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, SymExpr) and self.key() == other.key()

    def __hash__(self) -> int:
        return hash(self.key())

    def __bool__(self) -> bool:
        raise TypeError(
            f"the truth of symbolic {self} is unknown at compile time; compare with "
            "sym_eq, or evaluate it with the symbols' values"
        )

    def __index__(self) -> int:
        raise TypeError(f"{self} is symbolic, not an int")

    # --- arithmetic ---------------------------------------------------------------

    def __add__(self, other) -> int | SymExpr:
        a, b = _own_poly(self), _poly(other)
        if b is None:
            return NotImplemented
        coeffs = dict(a[0])
        for m, c in b[0].items():
            coeffs[m] = coeffs.get(m, 0) + c
        return SymExpr._make(coeffs, a[1] + b[1])

    __radd__ = __add__

    def __neg__(self) -> int | SymExpr:
        return self * -1

    def __sub__(self, other) -> int | SymExpr:
        if _poly(other) is None:
            return NotImplemented
        return self + (-other)

    def __rsub__(self, other) -> int | SymExpr:
        if _poly(other) is None:
            return NotImplemented
        return (-self) + other

    def __mul__(self, other) -> int | SymExpr:
        a, b = _own_poly(self), _poly(other)
        if b is None:
            return NotImplemented
        coeffs: dict[tuple, int] = {}
        a_terms = [*a[0].items(), ((), a[1])]
        b_terms = [*b[0].items(), ((), b[1])]
        const = 0
        for ma, ca in a_terms:
            for mb, cb in b_terms:
                m = tuple(sorted(ma + mb))
                if m:
                    coeffs[m] = coeffs.get(m, 0) + ca * cb
                else:
                    const += ca * cb
        return SymExpr._make(coeffs, const)

    __rmul__ = __mul__

    def __floordiv__(self, other) -> int | SymExpr:
        return sym_floordiv(self, other)

    def __rfloordiv__(self, other) -> int | SymExpr:
        return sym_floordiv(other, self)

    def __mod__(self, other) -> int | SymExpr:
        return sym_mod(self, other)

    def __rmod__(self, other) -> int | SymExpr:
        return sym_mod(other, self)

    # --- planning ---------------------------------------------------------------------

    def _planned(self, other, op: str) -> bool:
        sizes = _PLAN.get()
        if sizes is None or _poly(other) is None:
            raise TypeError(
                f"'{op}' of symbolic {self} is unknown at compile time; compare "
                "with sym_eq, or plan at representative sizes (shape_expr.planning)"
            )
        return _COMPARE[op](evaluate(self, sizes), evaluate(other, sizes))

    def __lt__(self, other) -> bool:
        return self._planned(other, "<")

    def __le__(self, other) -> bool:
        return self._planned(other, "<=")

    def __gt__(self, other) -> bool:
        return self._planned(other, ">")

    def __ge__(self, other) -> bool:
        return self._planned(other, ">=")

    # --- reading --------------------------------------------------------------------

    def symbols(self) -> set[str]:
        """The names of the symbols it reads."""
        found: set[str] = set()
        for monomial, _ in self.terms:
            for atom in monomial:
                if atom.op is None:
                    found.add(atom.name)
                else:
                    for arg in atom.args:
                        if isinstance(arg, SymExpr):
                            found |= arg.symbols()
        return found

    def is_symbol(self) -> bool:
        """Whether it is one symbol alone (``seq``)."""
        if self.const or len(self.terms) != 1:
            return False
        (monomial, coeff) = self.terms[0]
        return coeff == 1 and len(monomial) == 1 and monomial[0].op is None

    def __str__(self) -> str:
        parts: list[str] = []
        for monomial, coeff in self.terms:
            text = _monomial_text(monomial, abs(coeff), coeff < 0)
            parts.append(("- " if coeff < 0 else "+ ") + text)
        if self.const:
            parts.append(("- " if self.const < 0 else "+ ") + str(abs(self.const)))
        text = " ".join(parts)
        return text[2:] if text.startswith("+ ") else "-" + text[2:]

    def __repr__(self) -> str:
        return str(self)


Dim = int | SymExpr
"""A dimension: a known size or an expression over symbols."""


def _monomial_text(monomial: tuple, magnitude: int, negative: bool) -> str:
    factors = [atom.text() for atom in monomial]
    # `2 * (n // 4)`, not `2 * n // 4`; `-(n // 4)`, not `-n // 4`
    if len(factors) > 1 or magnitude != 1 or negative:
        factors = [
            f"({t})" if atom.op in ("floordiv", "mod") else t
            for atom, t in zip(monomial, factors, strict=True)
        ]
    text = " * ".join(factors)
    return text if magnitude == 1 else f"{magnitude} * {text}"


def _term_key(term) -> tuple:
    monomial, _ = term
    return (len(monomial), tuple(a.key() for a in monomial))


def _poly(value) -> tuple[dict, int] | None:
    """``value`` as (monomial -> coefficient, constant), or None if it is not
    an int or an expression."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return {}, value
    if isinstance(value, SymExpr):
        return dict(value.terms), value.const
    return None


def _own_poly(value: SymExpr) -> tuple[dict, int]:
    return dict(value.terms), value.const


def _atom(op: str, a, b) -> SymExpr:
    if op in ("min", "max"):
        a, b = sorted((a, b), key=_sort_key)
    return SymExpr((((_Atom(op=op, args=(a, b)),), 1),), 0)


def Sym(name: str) -> SymExpr:  # noqa: N802 - a constructor, read as a type
    """The symbol ``name`` (a size: never negative).

    Raises:
        EmberValueError: ``name`` is not an identifier (dots allowed).
    """
    if not isinstance(name, str) or not _NAME.match(name) or name in _OPS:
        raise EmberValueError(f"expected a symbol name such as 'seq', got {name!r}")
    return SymExpr((((_Atom(name),), 1),), 0)


def is_symbolic(value) -> bool:
    """Whether ``value`` is an expression (not a known ``int``)."""
    return isinstance(value, SymExpr)


def _split(value, divisor: int) -> tuple[int | SymExpr, int | SymExpr]:
    """``value`` as ``divisor * q + rest``: the terms whose coefficients the
    divisor divides go to ``q`` (with the constant's floor quotient), the
    others and the constant's remainder (in ``[0, divisor)``) stay in
    ``rest``; then ``value // divisor`` is ``q + rest // divisor``."""
    poly = _poly(value)
    assert poly is not None
    coeffs, const = poly
    whole = {m: c // divisor for m, c in coeffs.items() if c % divisor == 0}
    rest = {m: c for m, c in coeffs.items() if c % divisor}
    q = SymExpr._make(whole, const // divisor)
    return q, SymExpr._make(rest, const % divisor)


def _floor_rest(rest, divisor: int) -> int | SymExpr:
    """``rest // divisor`` for a ``rest`` of `_split`: an int, or an atom
    over non-negative coefficients (a sum of negative terms ``-t + r`` is
    ``-((t + divisor - 1 - r) // divisor)``, a ceiling), so that one
    quotient prints one way however it was written."""
    if isinstance(rest, int):
        return rest // divisor
    if all(c < 0 for _, c in rest.terms):
        flipped = -rest + divisor - 1  # -t - r + d - 1: positive coefficients
        return -_atom("floordiv", flipped, divisor)
    return _atom("floordiv", rest, divisor)


def sym_floordiv(a, b) -> int | SymExpr:
    """``a // b`` (floor division), simplified where the divisor divides."""
    if isinstance(a, int) and isinstance(b, int):
        return a // b
    if isinstance(b, int):
        if b == 0:
            raise ZeroDivisionError(f"{a} // 0")
        if b == 1:
            return a
        if b > 0:
            q, rest = _split(a, b)
            return q + _floor_rest(rest, b)
    elif (quotient := _exact_quotient(a, b)) is not None:
        return quotient
    return _atom("floordiv", a, b)


def _exact_quotient(a, b) -> int | SymExpr | None:
    """``a / b`` where ``b`` is one product (``768 * batch``) that divides
    every term of ``a`` (``768 * batch * seq``), else None."""
    if not isinstance(b, SymExpr) or b.const or len(b.terms) != 1:
        return None
    ((monomial, coeff),) = b.terms
    poly = _poly(a)
    assert poly is not None
    coeffs, const = poly
    if const:
        return None
    out: dict[tuple, int] = {}
    for m, c in coeffs.items():
        rest = list(m)
        for atom in monomial:
            if atom not in rest:
                return None
            rest.remove(atom)
        if c % coeff:
            return None
        out[tuple(rest)] = out.get(tuple(rest), 0) + c // coeff
    constant = out.pop((), 0)
    return SymExpr._make(out, constant)


def sym_mod(a, b) -> int | SymExpr:
    """``a % b`` (floor modulo), simplified where the divisor divides."""
    if isinstance(a, int) and isinstance(b, int):
        return a % b
    if isinstance(b, int):
        if b == 0:
            raise ZeroDivisionError(f"{a} % 0")
        if b == 1:
            return 0
        if b > 0:
            _, rest = _split(a, b)
            if isinstance(rest, int) or all(c < 0 for _, c in rest.terms):
                return rest - b * _floor_rest(rest, b)
            return _atom("mod", rest, b)
    elif _exact_quotient(a, b) is not None:
        return 0
    return _atom("mod", a, b)


def sym_min(a, b) -> int | SymExpr:
    """``min(a, b)``; decided where one side is known to be the smaller
    (``sym_le``)."""
    if isinstance(a, int) and isinstance(b, int):
        return min(a, b)
    if sym_le(a, b):
        return a
    if sym_le(b, a):
        return b
    return _atom("min", a, b)


def sym_max(a, b) -> int | SymExpr:
    """``max(a, b)``; decided where one side is known to be the larger
    (``sym_le``): ``max(4 * n, 12 * n)`` is ``12 * n``, sizes being >= 0."""
    if isinstance(a, int) and isinstance(b, int):
        return max(a, b)
    if sym_le(a, b):
        return b
    if sym_le(b, a):
        return a
    return _atom("max", a, b)


def sym_le(a, b) -> bool:
    """Whether ``a <= b`` holds for every value of the symbols (sizes, never
    negative): ``b - a`` is a sum of non-negative terms. False where unknown."""
    difference = b - a
    if isinstance(difference, int):
        return difference >= 0
    return difference.const >= 0 and all(
        c > 0 and all(_nonneg(atom) for atom in m) for m, c in difference.terms
    )


def _nonneg(atom: _Atom) -> bool:
    """Whether ``atom`` is never negative: a symbol, or ``//``, ``%``, ``min``
    and ``max`` of values that are not."""
    if atom.op is None:
        return True
    if atom.op == "mod":
        return isinstance(atom.args[1], int) and atom.args[1] > 0
    return all((x >= 0) if isinstance(x, int) else sym_le(0, x) for x in atom.args)


def sym_eq(a, b) -> bool | None:
    """Whether ``a == b``: True or False where known, None where it depends on
    the symbols' values (``seq`` and ``batch``)."""
    difference = a - b
    if isinstance(difference, int):
        return difference == 0
    return None


def sym_prod(values: Iterable) -> int | SymExpr:
    """The product of ``values`` (1 for none)."""
    result: int | SymExpr = 1
    for v in values:
        result = result * v
    return result


# --- evaluating and binding ---------------------------------------------------------


_COMPARE = {
    "<": lambda a, b: a < b,
    "<=": lambda a, b: a <= b,
    ">": lambda a, b: a > b,
    ">=": lambda a, b: a >= b,
}


class _Sizes(dict):
    """Representative sizes: the given ones, else the default for any symbol."""

    def __init__(self, sizes: Mapping[str, int], default: int):
        super().__init__(sizes)
        self.default = default

    def __missing__(self, name: str) -> int:
        return self.default

    def __contains__(self, name: object) -> bool:
        return True


_PLAN: ContextVar[Mapping[str, int] | None] = ContextVar("_PLAN", default=None)


@contextmanager
def planning(sizes: Mapping[str, int], default: int) -> Iterator[None]:
    """Within the block, ``<``, ``<=``, ``>`` and ``>=`` on expressions compare
    their values at representative sizes: ``sizes`` by symbol, else
    ``default``. A schedule written for ints then plans a symbolic kernel as
    for those sizes (how much work there is, whether a split pays); what it
    computes stays exact at every size, since loops over symbolic extents are
    bounded and guarded by the symbols themselves. Equality stays structural
    (``sym_eq``), so no decision about *what* is computed is taken on a guess.
    """
    token = _PLAN.set(_Sizes(sizes, default))
    try:
        yield
    finally:
        _PLAN.reset(token)


def planned(value) -> int:
    """``value`` (an int or expression) at the representative sizes of the
    enclosing ``planning`` block: for estimates (work, flops), never results.

    Raises:
        TypeError: an expression outside a ``planning`` block.
    """
    if isinstance(value, int):
        return value
    sizes = _PLAN.get()
    if sizes is None:
        raise TypeError(f"{value} is symbolic; plan it inside shape_expr.planning")
    return evaluate(value, sizes)


def evaluate(value, env: Mapping[str, int]) -> int:
    """The value of ``value`` (an int or expression) with the symbols ``env``
    gives.

    Raises:
        EmberValueError: a symbol it reads has no value in ``env``.
    """
    if isinstance(value, int):
        return value
    total = value.const
    for monomial, coeff in value.terms:
        product = coeff
        for atom in monomial:
            product *= _evaluate_atom(atom, env)
        total += product
    return total


def _evaluate_atom(atom: _Atom, env: Mapping[str, int]) -> int:
    if atom.op is None:
        if atom.name not in env:
            raise EmberValueError(f"symbol {atom.name!r} has no value")
        return int(env[atom.name])
    a, b = (evaluate(x, env) for x in atom.args)
    if atom.op == "min":
        return min(a, b)
    if atom.op == "max":
        return max(a, b)
    if b == 0:
        raise EmberValueError(f"{atom.text()}: division by zero with {dict(env)}")
    return a // b if atom.op == "floordiv" else a % b


def bind(dims: Iterable, sizes: Iterable[int], env: dict[str, int], label: str) -> None:
    """Bind the symbols of an input's dims from its actual sizes into ``env``:
    a dim that is one symbol takes the size (or must equal the value it has);
    a dim ``a * s + b`` of one unbound symbol is solved for it; other dims are
    checked once their symbols have values (``check``).

    Raises:
        EmberValueError: a size contradicts a known value or a dim cannot
            give it, naming ``label``, the dim and the values.
    """
    for i, (dim, size) in enumerate(zip(dims, sizes, strict=True)):
        if isinstance(dim, int):
            if dim != size:
                raise EmberValueError(
                    f"{label}: dimension {i} must be {dim}, got {size}"
                )
            continue
        unbound = dim.symbols() - env.keys()
        if len(unbound) != 1:
            continue
        (name,) = unbound
        # a * s + b with s the one unbound symbol: linear if evaluating at
        # s = 0 and s = 1 gives the coefficient, and s = 2 agrees
        at = [evaluate(dim, {**env, name: s}) for s in (0, 1, 2)]
        a, b = at[1] - at[0], at[0]
        if a <= 0 or at[2] != 2 * a + b:
            continue
        if (size - b) % a or size < b:
            raise EmberValueError(
                f"{label}: dimension {i} is {dim}, which cannot be {size} "
                f"({', '.join(f'{k} = {v}' for k, v in env.items()) or 'no symbol known'})"
            )
        env[name] = (size - b) // a


def check(dims: Iterable, sizes: Iterable[int], env: Mapping[str, int], label: str):
    """Check that every dim evaluates to its size with ``env``.

    Raises:
        EmberValueError: naming ``label``, the dim, the size and the symbols.
    """
    for i, (dim, size) in enumerate(zip(dims, sizes, strict=True)):
        want = evaluate(dim, env)
        if want != size:
            known = ", ".join(
                f"{k} = {env[k]}" for k in sorted(_symbols(dim)) if k in env
            )
            raise EmberValueError(
                f"{label}: dimension {i} is {dim} = {want} ({known}), got {size}"
            )


def _symbols(value) -> set[str]:
    return value.symbols() if isinstance(value, SymExpr) else set()


# --- text ----------------------------------------------------------------------------

_TOKEN = re.compile(r"\s*(?:(\d+)|([A-Za-z_][A-Za-z0-9_.]*)|(//|[-+*%(),]))")


def parse(text: str) -> int | SymExpr:
    """An int or expression from its text (``str(expr)``'s form: integers,
    symbols, ``+ - * // %``, parentheses, ``min(a, b)``, ``max(a, b)``).

    Raises:
        EmberValueError: the text is not such an expression (the message
            quotes it and says where).
    """
    if not isinstance(text, str):
        raise EmberValueError(f"expected a dimension expression, got {text!r}")
    tokens: list[str] = []
    at = 0
    stripped = text.rstrip()
    while at < len(stripped):
        m = _TOKEN.match(stripped, at)
        if m is None:
            raise EmberValueError(
                f"dimension expression {text!r}: unexpected {stripped[at:].strip()[:10]!r}"
            )
        tokens.append(m.group(m.lastindex or 0))
        at = m.end()
    parser = _Parser(tokens, text)
    value = parser.sum()
    if parser.at != len(tokens):
        raise EmberValueError(
            f"dimension expression {text!r}: unexpected {tokens[parser.at]!r}"
        )
    return value


class _Parser:
    def __init__(self, tokens: list[str], text: str):
        self.tokens, self.text, self.at = tokens, text, 0

    def peek(self) -> str | None:
        return self.tokens[self.at] if self.at < len(self.tokens) else None

    def take(self, expected: str | None = None) -> str:
        token = self.peek()
        if token is None or (expected is not None and token != expected):
            want = repr(expected) if expected else "more"
            raise EmberValueError(
                f"dimension expression {self.text!r}: expected {want}, got "
                f"{'the end' if token is None else repr(token)}"
            )
        self.at += 1
        return token

    def sum(self):
        value = self.product()
        while self.peek() in ("+", "-"):
            op = self.take()
            rhs = self.product()
            value = value + rhs if op == "+" else value - rhs
        return value

    def product(self):
        value = self.unary()
        while self.peek() in ("*", "//", "%"):
            op = self.take()
            rhs = self.unary()
            if op == "*":
                value = value * rhs
            elif isinstance(rhs, int) and rhs == 0:
                raise EmberValueError(f"dimension expression {self.text!r}: {op} 0")
            else:
                value = sym_floordiv(value, rhs) if op == "//" else sym_mod(value, rhs)
        return value

    def unary(self):
        if self.peek() == "-":
            self.take()
            return -self.unary()
        return self.atom()

    def atom(self):
        token = self.take()
        if token == "(":
            value = self.sum()
            self.take(")")
            return value
        if token.isdigit():
            return int(token)
        if token in ("min", "max") and self.peek() == "(":
            self.take("(")
            a = self.sum()
            self.take(",")
            b = self.sum()
            self.take(")")
            return sym_min(a, b) if token == "min" else sym_max(a, b)
        if _NAME.match(token) and token not in _OPS:
            return Sym(token)
        raise EmberValueError(
            f"dimension expression {self.text!r}: unexpected {token!r}"
        )


def dim_text(dim) -> str:
    """A dim as text: an int's digits, an expression's ``str``."""
    return str(dim)


__all__ = [
    "Dim",
    "Sym",
    "SymExpr",
    "bind",
    "check",
    "dim_text",
    "evaluate",
    "is_symbolic",
    "parse",
    "sym_eq",
    "sym_floordiv",
    "sym_max",
    "sym_min",
    "sym_mod",
    "sym_prod",
]
