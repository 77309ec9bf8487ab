"""ONNX tensor ops against onnxruntime: CumProd and ReduceProd, ScatterND and
ScatterElements (every reduction, duplicate and negative indices),
TensorScatter, GatherND and GatherElements, TopK (ties, smallest, an inner
axis), Concat of 200 inputs, Einsum, Compress, Pad's edge, reflect and wrap modes, CenterCropPad,
AveragePool with dilations, LpPool and Trilu with k; and the refusals of what
ember does not take."""

import numpy as np
import pytest

from ember.frontends.onnx import UnsupportedOperatorError, from_onnx

ort = pytest.importorskip("onnxruntime")

from onnx_util import check  # noqa: E402
from onnx_util import single as _single  # noqa: E402


def single(op, feeds, consts=None, outputs=1, opset=18, **attrs):
    """`onnx_util.single` at opset 18 unless told."""
    return _single(op, feeds, consts, outputs, opset, **attrs)


RNG = np.random.default_rng(0)


def rand(*shape):
    return RNG.standard_normal(shape).astype(np.float32)


def i64(values):
    return np.asarray(values, np.int64)


# -- scans, products, scatters --------------------------------------------------------


@pytest.mark.parametrize(("exclusive", "reverse"), [(0, 0), (1, 1)])
def test_cumprod(exclusive, reverse):
    x = rand(3, 5)
    m = single(
        "CumProd", {"x": x}, {"axis": i64(1)}, opset=26, exclusive=exclusive,
        reverse=reverse,
    )  # fmt: skip
    check(m, {"x": x})


def test_reduce_prod_over_two_axes():
    x = rand(2, 3, 4) + 1.0
    check(single("ReduceProd", {"x": x}, {"axes": i64([0, 2])}, keepdims=0), {"x": x})


@pytest.mark.parametrize("reduction", ["none", "add", "mul", "max", "min"])
def test_scatter_nd_slices_with_negative_indices(reduction):
    """Rows of 2 indices into (4, 3, 2) data, each writing a (2,) slice; the
    combining reductions see one slice twice."""
    x, u = rand(4, 3, 2), rand(2, 2, 2)
    rows = [[[0, -1], [3, 1]], [[-4, 2], [0, 2]]]
    if reduction != "none":
        rows[1][1] = [0, -1]  # the first row's slice again
    m = single("ScatterND", {"x": x, "u": u}, {"i": i64(rows)}, order=["x", "i", "u"],
               reduction=reduction)  # fmt: skip
    check(m, {"x": x, "u": u})


@pytest.mark.parametrize("reduction", ["none", "add", "max"])
def test_scatter_elements_on_ints_along_axis_0(reduction):
    x = RNG.integers(-50, 50, (4, 3)).astype(np.int64)
    u = RNG.integers(-50, 50, (2, 3)).astype(np.int64)
    index = i64(
        [[1, 0, -1], [2, 0, 3]] if reduction != "none" else [[1, 0, 3], [2, 1, 0]]
    )
    m = single("ScatterElements", {"x": x, "u": u}, {"i": index},
               order=["x", "i", "u"], axis=0, reduction=reduction)  # fmt: skip
    check(m, {"x": x, "u": u})


@pytest.mark.parametrize("mode", ["linear", "circular"])
def test_tensor_scatter_into_a_cache(mode):
    """(batch, heads, sequence, dim) caches, the update written at each
    batch's own offset, wrapping past the end when circular."""
    cache, update = rand(2, 3, 6, 4), rand(2, 3, 3, 4)
    offsets = i64([1, 3] if mode == "linear" else [4, 5])
    m = single("TensorScatter", {"c": cache, "u": update, "w": offsets}, opset=24,
               mode=mode)  # fmt: skip
    check(m, {"c": cache, "u": update, "w": offsets})


# -- gathers, TopK, Compress ----------------------------------------------------------


def test_gather_elements_on_an_inner_axis():
    x = rand(2, 5, 3)
    index = np.array(RNG.integers(-5, 5, (2, 4, 3)), np.int32)
    check(single("GatherElements", {"x": x, "i": index}, axis=1), {"x": x, "i": index})


@pytest.mark.parametrize("batch_dims", [0, 1])
def test_gather_nd(batch_dims):
    x = rand(3, 4, 5)
    index = RNG.integers(-3, 3, (3, 2, 2)).astype(np.int64)
    m = single("GatherND", {"x": x, "i": index}, batch_dims=batch_dims)
    check(m, {"x": x, "i": index})


@pytest.mark.parametrize(("axis", "largest"), [(1, 1), (-1, 0)])
def test_top_k_with_ties(axis, largest):
    x = np.round(rand(3, 6, 4) * 2) / 2  # many equal values
    m = single("TopK", {"x": x}, {"k": i64([3])}, outputs=2, axis=axis,
               largest=largest)  # fmt: skip
    check(m, {"x": x})


@pytest.mark.parametrize("axis", [None, 1])
def test_compress(axis):
    x = rand(3, 4)
    condition = np.array([True, False, True], np.bool_)
    attrs = {} if axis is None else {"axis": axis}
    check(single("Compress", {"x": x}, {"c": condition}, **attrs), {"x": x})


@pytest.mark.parametrize("n", [70, pytest.param(200, marks=pytest.mark.slow)])
def test_concat_of_many_inputs(n):
    """Past 64 inputs, the most branches te nests (issue 24, defect 10): the
    kernel picks its input by a binary search, log2(n) branches deep."""
    feeds = {f"x{k}": rand(2, 1 + k % 3, 3) for k in range(n)}
    check(single("Concat", feeds, axis=1), feeds)


# -- Einsum ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("equation", "shapes"),
    [
        ("bij,bjk->bik", [(2, 3, 4), (2, 4, 5)]),
        ("...ij,...jk", [(2, 1, 3, 4), (1, 5, 4, 2)]),  # broadcast, implicit out
        ("ii->i", [(4, 4)]),
        ("ij,j->i", [(3, 4), (4,)]),
        ("abc,cd,ad->b", [(2, 3, 4), (4, 5), (2, 5)]),
        ("bhqd,bhkd->bhkq", [(2, 3, 5, 4), (2, 3, 6, 4)]),
        ("i,i", [(7,), (7,)]),
    ],
)
def test_einsum(equation, shapes):
    feeds = {f"x{i}": rand(*s) for i, s in enumerate(shapes)}
    check(single("Einsum", feeds, equation=equation), feeds, rtol=1e-4, atol=1e-5)


def test_a_two_operand_einsum_is_one_matmul():
    feeds = {"q": rand(2, 3, 5, 4), "k": rand(2, 3, 6, 4)}
    mod, _ = from_onnx(single("Einsum", feeds, equation="bhqd,bhkd->bhqk"))
    names = [op.name for op in mod.walk()]
    assert names.count("graph.matmul") == 1 and "graph.reduce_sum" not in names


# -- padding and pooling --------------------------------------------------------------


@pytest.mark.parametrize("mode", ["edge", "reflect", "wrap", "constant"])
def test_pad_modes_with_a_negative_pad(mode):
    x = rand(4, 5)
    pads = i64([2, -1, 1, 3])  # begin (2, -1), end (1, 3)
    m = single("Pad", {"x": x}, {"pads": pads}, opset=19, mode=mode)
    check(m, {"x": x})


def test_center_crop_pad_on_some_axes():
    x = rand(5, 4, 3)
    m = single("CenterCropPad", {"x": x}, {"shape": i64([8, 3])}, axes=[0, -1])
    check(m, {"x": x})


@pytest.mark.parametrize(("ceil", "include"), [(0, 1), (1, 0)])
def test_average_pool_with_dilations(ceil, include):
    x = rand(1, 2, 9, 8)
    m = single("AveragePool", {"x": x}, opset=19, kernel_shape=[3, 2],
               dilations=[2, 3], strides=[2, 1], pads=[1, 0, 2, 1],
               ceil_mode=ceil, count_include_pad=include)  # fmt: skip
    check(m, {"x": x})


@pytest.mark.parametrize("p", [1, 3])
def test_lp_pool(p):
    x = rand(1, 2, 7, 6)
    m = single("LpPool", {"x": x}, kernel_shape=[3, 2], strides=[2, 2],
               pads=[1, 1, 0, 1], p=p)  # fmt: skip
    check(m, {"x": x}, rtol=1e-4)


def test_trilu_with_k():
    x = rand(2, 4, 5)
    check(single("Trilu", {"x": x}, {"k": i64(-1)}, upper=0), {"x": x})


# -- refusals -------------------------------------------------------------------------


def test_unsupported_attribute_values_are_refused_naming_them():
    x, u = rand(4, 3), rand(2, 3)
    m = single("ScatterND", {"x": x, "u": u}, {"i": i64([[0], [1]])},
               order=["x", "i", "u"], reduction="add")  # fmt: skip
    m.graph.node[0].attribute[0].s = b"xor"
    with pytest.raises(
        UnsupportedOperatorError, match=r"ScatterND \(reduction='xor'\)"
    ):
        from_onnx(m)
    lp = single("LpPool", {"x": rand(1, 1, 4, 4)}, kernel_shape=[2, 2], ceil_mode=1)
    with pytest.raises(UnsupportedOperatorError, match=r"LpPool \(ceil_mode=1\)"):
        from_onnx(lp)


def test_shape_deciding_inputs_computed_by_the_model_are_refused():
    x = rand(3, 4)
    m = single("TopK", {"x": x, "k": i64([2])}, outputs=2)
    with pytest.raises(
        UnsupportedOperatorError, match=r"TopK \(k computed by the model\)"
    ):
        from_onnx(m)
    c = single("Compress", {"x": x, "c": np.array([True, False, True])}, axis=0)
    with pytest.raises(UnsupportedOperatorError, match="Compress .condition computed"):
        from_onnx(c)


@pytest.mark.parametrize(
    ("equation", "message"),
    [
        ("ij,jk->ik", "expected 1 terms in the equation"),
        ("ijk->i", "expected terms matching the operands' ranks"),
        ("ij->k", "expected distinct output letters among the inputs'"),
    ],
)
def test_einsum_equations_that_do_not_fit_are_refused(equation, message):
    m = single("Einsum", {"x": rand(3, 4)}, equation=equation)
    with pytest.raises(Exception, match=message) as info:
        from_onnx(m)
    assert "Einsum" in str(info.value)


def test_top_k_past_the_axis_is_refused():
    m = single("TopK", {"x": rand(3, 4)}, {"k": i64([5])}, outputs=2)
    with pytest.raises(Exception, match=r"expected k in \[1, 4\], got 5"):
        from_onnx(m)
