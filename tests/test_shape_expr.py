"""Symbolic dimensions (`ember.runtime.shape_expr`): expressions built with
Python's operators evaluate as the same arithmetic on ints does, print and
parse back to themselves, and bind from input shapes with clear refusals."""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ember.runtime.errors import EmberValueError
from ember.runtime.shape_expr import (
    Sym,
    SymExpr,
    bind,
    check,
    evaluate,
    parse,
    sym_eq,
    sym_floordiv,
    sym_max,
    sym_min,
    sym_mod,
)

NAMES = ("batch", "seq", "n")


def _build(draw, depth: int):
    """A random expression as (symbolic value, function of the symbols)."""
    if depth == 0 or draw(st.integers(0, 3)) == 0:
        if draw(st.booleans()):
            name = draw(st.sampled_from(NAMES))
            return Sym(name), lambda env, name=name: env[name]
        k = draw(st.integers(-6, 9))
        return k, lambda env, k=k: k
    op = draw(st.sampled_from(["+", "-", "*", "//", "%", "min", "max"]))
    a, fa = _build(draw, depth - 1)
    if op in ("//", "%"):
        # a divisor that is never 0 (sizes are >= 1 here): a positive int, a
        # symbol plus one, or a multiple of a symbol
        kind = draw(st.integers(0, 2))
        name = draw(st.sampled_from(NAMES))
        if kind == 0:
            d = draw(st.integers(1, 8))
            b, fb = d, lambda env, d=d: d
        elif kind == 1:
            b, fb = Sym(name) + 1, lambda env, name=name: env[name] + 1
        else:
            k = draw(st.integers(1, 4))
            b, fb = k * Sym(name), lambda env, name=name, k=k: k * env[name]
    else:
        b, fb = _build(draw, depth - 1)
    table = {
        "+": (lambda x, y: x + y, lambda x, y: x + y),
        "-": (lambda x, y: x - y, lambda x, y: x - y),
        "*": (lambda x, y: x * y, lambda x, y: x * y),
        "//": (sym_floordiv, lambda x, y: x // y),
        "%": (sym_mod, lambda x, y: x % y),
        "min": (sym_min, min),
        "max": (sym_max, max),
    }
    symbolic, concrete = table[op]
    return symbolic(a, b), lambda env: concrete(fa(env), fb(env))


@st.composite
def expressions(draw):
    return _build(draw, 4)


@settings(max_examples=300, deadline=None)
@given(
    expressions(),
    st.fixed_dictionaries({name: st.integers(1, 40) for name in NAMES}),
)
def test_expressions_compute_as_ints_do_and_read_back(case, env):
    value, concrete = case
    assert evaluate(value, env) == concrete(env)
    again = parse(str(value))
    assert again == value, (str(value), str(again))
    assert evaluate(again, env) == concrete(env)


def test_canonical_forms():
    seq, batch = Sym("seq"), Sym("batch")
    assert (seq + 1) * 2 - seq == seq + 2
    assert str(batch * 12 * seq) == "12 * batch * seq"
    assert (seq * 12 + 4) // 4 == 3 * seq + 1
    assert (seq * 12 + 5) % 4 == 1
    assert (768 * batch * seq) // (12 * batch) == 64 * seq  # a reshape's -1
    assert (batch * seq) % batch == 0
    assert (seq + 15) // 16 * 16 != seq  # a tile round-up stays symbolic
    assert str((seq + 15) // 16 * 16) == "16 * ((seq + 15) // 16)"
    assert sym_max(seq + 1, seq) == seq + 1 and sym_min(seq, seq + 3) == seq
    assert str(sym_max(batch, seq)) == str(sym_max(seq, batch)) == "max(batch, seq)"
    assert seq - seq == 0 and isinstance(seq - seq, int)
    assert sym_eq(seq + 1, 1 + seq) is True
    assert sym_eq(seq, seq + 1) is False
    assert sym_eq(seq, batch) is None
    with pytest.raises(TypeError, match="unknown at compile time"):
        bool(seq)
    assert (seq * batch).symbols() == {"seq", "batch"}
    assert seq.is_symbol() and not (seq + 1).is_symbol()
    assert isinstance(seq, SymExpr)


@pytest.mark.parametrize(
    "text, message",
    [
        ("seq +", "expected more, got the end"),
        ("2 ** seq", "unexpected '\\*'"),
        ("seq $ 2", "unexpected '\\$ 2'"),
        ("(seq", "expected '\\)'"),
        ("seq // 0", "// 0"),
        ("min(seq)", "expected ','"),
        ("max", "unexpected 'max'"),
    ],
)
def test_bad_text_is_refused_naming_the_place(text, message):
    with pytest.raises(EmberValueError, match=message):
        parse(text)


def test_symbol_names_are_identifiers():
    with pytest.raises(EmberValueError, match="symbol name"):
        Sym("2x")
    assert str(Sym("input.dim0")) == "input.dim0"


def test_binding_from_shapes():
    batch, seq = Sym("batch"), Sym("seq")
    env: dict[str, int] = {}
    bind([batch, seq, 768], [2, 7, 768], env, "input 'ids'")
    assert env == {"batch": 2, "seq": 7}
    bind([batch, 2 * seq + 1], [2, 15], env, "input 'mask'")  # agrees
    check([batch, 2 * seq + 1], [2, 15], env, "input 'mask'")
    fresh: dict[str, int] = {}
    bind([2 * seq + 1], [15], fresh, "input 'x'")  # solved for seq
    assert fresh == {"seq": 7}
    with pytest.raises(
        EmberValueError,
        match=r"input 'x': dimension 0 is 2 \* seq \+ 1, which cannot be 14",
    ):
        bind([2 * seq + 1], [14], {}, "input 'x'")
    with pytest.raises(
        EmberValueError, match=r"input 'y': dimension 1 is seq = 7 \(seq = 7\), got 8"
    ):
        check([batch, seq], [2, 8], env, "input 'y'")
    with pytest.raises(EmberValueError, match="dimension 2 must be 768, got 512"):
        bind([batch, seq, 768], [2, 7, 512], env, "input 'ids'")
    with pytest.raises(EmberValueError, match="symbol 'n' has no value"):
        evaluate(Sym("n") + 1, env)
