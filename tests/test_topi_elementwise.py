"""topi elementwise ops and fused injective chains against numpy: every op,
broadcasting corner cases, NaN/inf where numpy defines the result, the default
schedule's shape, and a hypothesis property over random broadcasting chains."""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from topi_util import close, rand, run_kernel

import ember
from ember import te
from ember.topi import elementwise as ew
from ember.topi import transform as tr

ERF = np.vectorize(math.erf, otypes=[np.float64])

# topi's scalar forms by the graph op's short name ("relu")
UNARY, BINARY = ew.UNARY, ew.BINARY

NUMPY_UNARY = {
    "relu": lambda x: np.maximum(x, 0),
    "sigmoid": lambda x: 1 / (1 + np.exp(-x)),
    "tanh": np.tanh,
    "exp": np.exp,
    "erf": ERF,
    "gelu": lambda x: 0.5 * x * (1 + ERF(x / np.sqrt(2))),
    "sqrt": np.sqrt,
    "log": np.log,
    "abs": np.abs,
    "neg": np.negative,
}
NUMPY_BINARY = {
    "add": np.add,
    "sub": np.subtract,
    "mul": np.multiply,
    "div": np.divide,
    "maximum": np.maximum,
    "minimum": np.minimum,
    "pow": np.power,
}


def unary_kernel(op: str, shape):
    x = te.placeholder(shape, name="x")
    return ew.injective(ew.map_unary(UNARY[op], x, op), [x])


@pytest.mark.parametrize("op", sorted(NUMPY_UNARY))
def test_unary_matches_numpy(op):
    low = 0.01 if op in ("sqrt", "log") else -6.0
    x = rand(3, 5, 37, low=low, high=6.0)
    y = run_kernel(unary_kernel(op, x.shape), x)
    expected = NUMPY_UNARY[op](x.astype("float64"))
    close(y, expected.astype("float32"), rtol=1e-5)


@pytest.mark.parametrize("op", sorted(NUMPY_BINARY))
def test_binary_matches_numpy(op):
    a, b = rand(2, 3, 4, 17), rand(3, 1, 17, low=0.5, high=2.0)
    if op == "pow":
        a = np.abs(a) + 0.1
    x, y = te.placeholder(a.shape, name="a"), te.placeholder(b.shape, name="b")
    k = ew.injective(ew.map_binary(BINARY[op], x, y, op), [x, y])
    expected = NUMPY_BINARY[op](a.astype("float64"), b.astype("float64"))
    close(run_kernel(k, a, b), expected.astype("float32"))


@pytest.mark.parametrize(
    ("sa", "sb"),
    [
        ((4, 5), (5,)),  # lower rank on the right
        ((1,), (3, 4)),  # a single element against a matrix
        ((3, 1, 5), (1, 4, 1)),  # both stretch
        ((2, 1, 1, 3), (7, 1)),  # rank 4 against rank 2
        ((1, 1), (1, 1)),  # nothing to stretch
        ((6,), (6,)),
    ],
)
def test_broadcasting_corner_cases(sa, sb):
    a, b = rand(*sa), rand(*sb)
    x, y = te.placeholder(sa, name="a"), te.placeholder(sb, name="b")
    k = ew.injective(ew.sub(x, y), [x, y])
    assert k.output.shape == np.broadcast_shapes(sa, sb)
    close(run_kernel(k, a, b), a - b)


def test_broadcast_shape_names_the_shapes():
    with pytest.raises(
        ValueError, match=r"expected shapes that broadcast, got \(2, 3\) and \(4,\)"
    ):
        ew.broadcast_shape((2, 3), (4,))


def test_scalar_operands_and_pow_specializations():
    a = rand(4, 33, low=-3, high=3)
    x = te.placeholder(a.shape, name="x")
    chain = ew.add(ew.power(x, 2.0), ew.power(x, 3.0))
    chain = ew.add(chain, ew.div(1.0, ew.add(ew.absolute(x), 1.0)))
    chain = ew.add(chain, ew.power(ew.absolute(x), 0.5))
    chain = ew.add(chain, ew.power(x, 0.0))
    k = ew.injective(chain, [x])
    expected = a**2 + a**3 + 1 / (np.abs(a) + 1) + np.abs(a) ** 0.5 + 1
    close(run_kernel(k, a), expected)


def test_pow_of_negative_bases_follows_numpy():
    a = np.array([-2.0, -2.0, -2.0, 0.0, 0.0, 2.0, -1.5, 3.0], "float32")
    b = np.array([3.0, 2.0, 0.5, 2.0, 0.0, -1.0, 0.0, 1.5], "float32")
    x, y = te.placeholder(a.shape, name="a"), te.placeholder(b.shape, name="b")
    got = run_kernel(ew.injective(ew.power(x, y), [x, y]), a, b)
    with np.errstate(invalid="ignore", divide="ignore"):
        close(got, np.power(a, b))


def test_clip_relu6_and_nan_propagation():
    a = np.array([-1.0, 0.0, 3.0, 6.0, 7.5, np.nan, np.inf, -np.inf], "float32")
    x = te.placeholder(a.shape, name="x")
    got = run_kernel(ew.injective(ew.clip(x, 0.0, 6.0), [x]), a)
    close(got, np.clip(a, 0.0, 6.0))
    got = run_kernel(ew.injective(ew.relu(x), [x]), a)
    close(got, np.maximum(a, 0.0))
    b = a[::-1].copy()
    y = te.placeholder(b.shape, name="y")
    for fn, ref in ((ew.maximum, np.maximum), (ew.minimum, np.minimum)):
        close(
            run_kernel(ew.injective(fn(x, y), [x, y]), a, b), ref(a, b)
        )  # NaN both sides


def test_special_values_of_transcendentals():
    a = np.array([np.nan, np.inf, -np.inf, 0.0, 100.0, -100.0, 88.0, -90.0], "float32")
    x = te.placeholder(a.shape, name="x")
    with np.errstate(all="ignore"):
        for op in ("exp", "sigmoid", "tanh", "erf"):
            got = run_kernel(unary_kernel(op, a.shape), a)
            expected = NUMPY_UNARY[op](a).astype("float32")
            np.testing.assert_array_equal(np.isnan(got), np.isnan(expected), op)
            finite = ~np.isnan(expected)
            close(got[finite], expected[finite])
    del x


def test_batch_norm_inference():
    a = rand(2, 6, 5, 7)
    stats = [rand(6), rand(6), rand(6), rand(6, low=0.1, high=2.0)]
    ts = [te.placeholder(a.shape, name="x")] + [
        te.placeholder((6,), name=n) for n in ("gamma", "beta", "mean", "var")
    ]
    k = ew.injective(ew.batch_norm(*ts, epsilon=1e-3), ts)
    g, b, m, v = (s.reshape(1, 6, 1, 1) for s in stats)
    close(run_kernel(k, a, *stats), (a - m) / np.sqrt(v + 1e-3) * g + b)


def test_fused_chain_is_one_loop_nest_vectorized_and_parallel():
    x = te.placeholder((1, 64, 56, 56), name="x")
    b = te.placeholder((64, 1, 1), name="b")
    r = te.placeholder((1, 64, 56, 56), name="r")
    k = ew.injective(ew.relu(ew.add(ew.add(x, b), r)), [x, b, r])
    loops = ember.passes.run(
        ember.lower(k.schedule(), k.args, name="f", emit="te"), "convert-te-to-loop"
    )
    text = str(loops)
    assert text.count("loop.for") == 2, text
    assert "parallel" in text and "vectorized" in text
    assert "loop.alloc" not in text  # the intermediate adds are inlined
    xa, ba, ra = rand(1, 64, 56, 56), rand(64, 1, 1), rand(1, 64, 56, 56)
    close(run_kernel(k, xa, ba, ra), np.maximum(xa + ba + ra, 0))


def test_small_tensors_stay_on_one_thread():
    x = te.placeholder((1, 1000), name="x")
    k = ew.injective(ew.sigmoid(x), [x])
    text = str(ember.lower(k.schedule(), k.args, name="f", emit="te"))
    assert "te.parallel" not in text and "te.vectorize" in text


def test_trailing_unit_axes_leave_the_channels_vectorized():
    x = te.placeholder((1, 1280, 1, 1), name="x")
    k = ew.injective(ew.sigmoid(x), [x])
    text = str(ember.lower(k.schedule(), k.args, name="f", emit="te"))
    assert 'te.vectorize "sigmoid" "j"' in text
    a = rand(1, 1280, 1, 1)
    close(run_kernel(k, a), 1 / (1 + np.exp(-a.astype("float64"))))


def test_long_rows_are_chunked_for_threads():
    x = te.placeholder((2, 40000), name="x")
    k = ew.injective(ew.tanh(x), [x])
    text = str(ember.lower(k.schedule(), k.args, name="f", emit="te"))
    assert "factor 1024" in text and "te.parallel" in text
    a = rand(2, 40000)
    close(run_kernel(k, a), np.tanh(a))


def test_duplicate_stage_names_are_made_unique():
    x = te.placeholder((8,), name="x")
    k = ew.injective(ew.add(ew.add(x, 1.0), 2.0), [x])
    assert k.output.name == "add.1"
    close(run_kernel(k, np.arange(8, dtype="float32")), np.arange(8) + 3.0)


def test_scalar_results_and_placeholder_outputs():
    x = te.placeholder((1,), name="x")
    scalar = te.compute((), lambda: UNARY["exp"](x[0]), name="s")
    close(
        run_kernel(ew.injective(scalar, [x]), np.array([0.5], "float32")), np.exp(0.5)
    )
    with pytest.raises(
        ValueError, match="expected a computed output, got the placeholder 'x'"
    ):
        ew.injective(x, [x])


def test_missing_placeholder_is_named():
    x, y = te.placeholder((4,), name="x"), te.placeholder((4,), name="y")
    with pytest.raises(ValueError, match="reads of y"):
        ew.injective(ew.add(x, y), [x])


# A chain of random ops over inputs of random broadcast-compatible shapes.
_OPS = ["add", "sub", "mul", "maximum", "minimum", "relu", "tanh", "sigmoid", "neg"]


@st.composite
def chains(draw):
    out = draw(st.lists(st.integers(1, 5), min_size=1, max_size=4))
    n_inputs = draw(st.integers(1, 3))
    shapes = []
    for _ in range(n_inputs):
        rank = draw(st.integers(1, len(out)))
        dims = out[len(out) - rank :]
        shapes.append(tuple(d if draw(st.booleans()) else 1 for d in dims))
    shapes[0] = tuple(out)  # one input has the full shape
    steps = draw(
        st.lists(
            st.tuples(st.sampled_from(_OPS), st.integers(0, n_inputs - 1)),
            min_size=1,
            max_size=6,
        )
    )
    return shapes, steps


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(chains())
def test_property_broadcasting_chains_match_numpy(case):
    shapes, steps = case
    arrays = [rand(*s) for s in shapes]
    ts = [te.placeholder(s, name=f"in{n}") for n, s in enumerate(shapes)]
    cur, ref = ts[0], arrays[0].astype("float64")
    for op, operand in steps:
        if op in UNARY:
            cur = ew.map_unary(UNARY[op], cur, op)
            ref = NUMPY_UNARY[op](ref)
        else:
            cur = ew.map_binary(BINARY[op], cur, ts[operand], op)
            ref = NUMPY_BINARY[op](ref, arrays[operand].astype("float64"))
    k = ew.injective(cur, ts)
    close(run_kernel(k, *arrays), ref.astype("float32"))


def test_transform_ops_join_injective_chains():
    a = rand(2, 3, 4)
    x = te.placeholder(a.shape, name="x")
    y = tr.transpose(ew.relu(x), (2, 0, 1))
    k = ew.injective(ew.mul(tr.reshape(y, (4, 6)), 2.0), [x])
    close(run_kernel(k, a), np.maximum(a, 0).transpose(2, 0, 1).reshape(4, 6) * 2)
