"""ONNX's losses and small composites (`frontends/onnx_loss.py`, Hardmax and
OneHot in `onnx_index.py`, Sum and Mean in `onnx_ops.py`) against onnxruntime:
NegativeLogLikelihoodLoss and SoftmaxCrossEntropyLoss over every reduction,
with and without weights, ignore_index in range, negative and past the
classes, (N, C) and (N, C, d1, d2) inputs, int64 and int32 targets, and SCE's
log_prob; Hardmax with ties, LpNormalization with a zero row, variadic
broadcasting Sum and Mean, OneHot with computed values, EyeLike; and the
refusals of what ember does not convert. Each model holds many nodes, so one
compile covers many attribute values."""

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

import ember
from ember import runtime as rt
from ember.frontends.onnx import OnnxImportError, UnsupportedOperatorError

ort = pytest.importorskip("onnxruntime")

RNG = np.random.default_rng(0)


def make(nodes, feeds, outputs, initializers=(), opset=22):
    """A model over graph inputs `feeds` (name to array) and outputs (name to
    ONNX element type, or type and shape), shapes left to inference."""
    g = helper.make_graph(
        nodes,
        "loss",
        [
            helper.make_tensor_value_info(
                n, helper.np_dtype_to_tensor_dtype(v.dtype), v.shape
            )
            for n, v in feeds.items()
        ],
        [
            helper.make_tensor_value_info(
                n, *(t if isinstance(t, tuple) else (t, None))
            )
            for n, t in outputs.items()
        ],
        [numpy_helper.from_array(np.asarray(v), n) for n, v in initializers],
    )
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = 10
    m = onnx.shape_inference.infer_shapes(m)
    onnx.checker.check_model(m)
    return m


def run_both(m, feeds, rtol=1e-5, atol=1e-6):
    session = ort.InferenceSession(
        m.SerializeToString(), providers=["CPUExecutionProvider"]
    )
    expected = session.run(None, feeds)
    gm = rt.GraphModule(ember.compile_model(m)["default"](rt.cpu()))
    got = gm(**feeds)
    names = [o.name for o in m.graph.output]
    for name, g, e in zip(names, got, expected, strict=True):
        assert g.shape == e.shape and g.dtype == e.dtype, name
        np.testing.assert_allclose(g, e, rtol=rtol, atol=atol, err_msg=name)


# -- losses ---------------------------------------------------------------------------


def loss_nodes(op, target, weight):
    """`op` once per reduction, weighted or not, and ignore_index absent, in
    range (1) and past the classes (99)."""
    nodes, outputs = [], {}
    for reduction in ("none", "sum", "mean"):
        for weighted in (False, True):
            for ignore in (None, 1, 99):
                name = f"{op}_{reduction}_{int(weighted)}_{ignore}"
                inputs = ["x", target, weight] if weighted else ["x", target]
                attrs = {"reduction": reduction}
                if ignore is not None:
                    attrs["ignore_index"] = ignore
                nodes.append(helper.make_node(op, inputs, [name], **attrs))
                outputs[name] = TensorProto.FLOAT
    return nodes, outputs


def targets(shape, classes, dtype):
    t = RNG.integers(0, classes, shape).astype(dtype)
    t.flat[::3] = 1  # ignore_index=1 hits some
    with_negative = t.copy()
    with_negative.flat[1::4] = -1
    return t, with_negative


@pytest.mark.parametrize(
    ("shape", "dtype", "every"),
    [
        ((2, 3, 4, 2), np.int64, True),
        ((5, 4), np.int64, False),
        ((3, 6, 5), np.int32, False),
    ],
    ids=["NCd1d2", "NC", "NCd1-int32"],
)
def test_losses_against_onnxruntime(shape, dtype, every):
    """Every attribute combination on one shape, the negative ignore_index and
    SCE's log_prob on the others."""
    x = RNG.standard_normal(shape).astype(np.float32)
    t, t_neg = targets((shape[0], *shape[2:]), shape[1], dtype)
    weight = RNG.uniform(0.2, 1.5, shape[1]).astype(np.float32)
    nodes, outputs = [], {}
    for op in ("NegativeLogLikelihoodLoss", "SoftmaxCrossEntropyLoss")[: 2 * every]:
        n, o = loss_nodes(op, "t", "w")
        nodes += n
        outputs.update(o)
    # negative ignore_index with targets holding it
    for op in ("NegativeLogLikelihoodLoss", "SoftmaxCrossEntropyLoss"):
        for reduction in ("none", "mean"):
            name = f"{op}_{reduction}_negative_targets"
            nodes.append(
                helper.make_node(
                    op,
                    ["x", "t_neg", "w"],
                    [name],
                    reduction=reduction,
                    ignore_index=-1,
                )
            )
            outputs[name] = TensorProto.FLOAT
    nodes.append(
        helper.make_node(
            "SoftmaxCrossEntropyLoss", ["x", "t"], ["sce", "log_prob"], ignore_index=1
        )
    )
    outputs.update(sce=TensorProto.FLOAT, log_prob=TensorProto.FLOAT)
    feeds = {"x": x, "t": t, "t_neg": t_neg, "w": weight}
    run_both(make(nodes, feeds, outputs), feeds)


def test_every_target_ignored_gives_nan_as_onnxruntime():
    x = RNG.standard_normal((3, 4)).astype(np.float32)
    t = np.full(3, 2, np.int64)
    node = helper.make_node(
        "NegativeLogLikelihoodLoss", ["x", "t"], ["y"], ignore_index=2
    )
    feeds = {"x": x, "t": t}
    run_both(make([node], feeds, {"y": TensorProto.FLOAT}), feeds)


# -- small composites -----------------------------------------------------------------


def test_hardmax_takes_the_first_of_ties():
    x = RNG.standard_normal((3, 4, 5)).astype(np.float32)
    x[0, 1, :] = 2.0  # ties along the last axis
    x[:, :, 2] = 7.0  # ties along axis 1
    nodes = [
        helper.make_node("Hardmax", ["x"], [f"y{axis}"], axis=axis)
        for axis in (0, 1, -1)
    ]
    outputs = {f"y{axis}": TensorProto.FLOAT for axis in (0, 1, -1)}
    run_both(make(nodes, {"x": x}, outputs), {"x": x})


def test_lp_normalization_with_a_zero_row():
    x = RNG.standard_normal((4, 6)).astype(np.float32)
    x[2] = 0.0
    nodes = [
        helper.make_node("LpNormalization", ["x"], [f"y{p}_{axis}"], p=p, axis=axis)
        for p in (1, 2)
        for axis in (0, 1)
    ]
    outputs = {n.output[0]: TensorProto.FLOAT for n in nodes}
    run_both(make(nodes, {"x": x}, outputs), {"x": x})


def test_sum_and_mean_broadcast_many_inputs():
    feeds = {
        "a": RNG.standard_normal((2, 1, 4)).astype(np.float32),
        "b": RNG.standard_normal((3, 1)).astype(np.float32),
        "c": RNG.standard_normal((4,)).astype(np.float32),
    }
    nodes = [
        helper.make_node("Sum", ["a", "b", "c"], ["sum"]),
        helper.make_node("Mean", ["a", "b", "c"], ["mean"]),
        helper.make_node("Sum", ["c"], ["one"]),
    ]
    outputs = {"sum": TensorProto.FLOAT, "mean": TensorProto.FLOAT}
    outputs["one"] = TensorProto.FLOAT
    run_both(make(nodes, feeds, outputs), feeds)


def test_one_hot_with_computed_values_and_int32_indices():
    feeds = {
        "i": np.array([[0, 3, -1], [-4, 4, 2]], np.int32),
        "v": np.array([-1.5, 2.0], np.float32),
    }
    nodes = [
        helper.make_node("OneHot", ["i", "depth", "v"], ["y1"], axis=1),
        helper.make_node("OneHot", ["i", "depth", "v"], ["y_last"]),
        helper.make_node("OneHot", ["i", "depth", "v"], ["y0"], axis=-3),
    ]
    m = make(
        nodes,
        feeds,
        {n.output[0]: TensorProto.FLOAT for n in nodes},
        [("depth", np.array(4, np.float32))],
    )
    run_both(m, feeds)


def test_eye_like_off_the_diagonal_of_a_computed_input():
    feeds = {"x": RNG.standard_normal((3, 5)).astype(np.float32)}
    nodes = [
        helper.make_node("Relu", ["x"], ["r"]),
        helper.make_node("EyeLike", ["r"], ["e"], k=-1, dtype=TensorProto.INT64),
        helper.make_node("EyeLike", ["r"], ["f"], k=2),
        helper.make_node("Add", ["f", "r"], ["g"]),
    ]
    outputs = {"e": TensorProto.INT64, "g": TensorProto.FLOAT}
    run_both(make(nodes, feeds, outputs), feeds)


# -- refusals -------------------------------------------------------------------------


def refusal(nodes, feeds, outputs, initializers=()):
    m = make(nodes, feeds, outputs, initializers)
    with pytest.raises((UnsupportedOperatorError, OnnxImportError)) as info:
        ember.compile_model(m)
    return str(info.value)


def test_an_unknown_reduction_is_refused_naming_it():
    feeds = {"x": np.zeros((2, 3), np.float32), "t": np.zeros(2, np.int64)}
    node = helper.make_node(
        "NegativeLogLikelihoodLoss", ["x", "t"], ["y"], reduction="max"
    )
    message = refusal([node], feeds, {"y": TensorProto.FLOAT})
    assert "NegativeLogLikelihoodLoss (reduction='max')" in message


def test_lp_normalization_of_p_3_is_refused():
    node = helper.make_node("LpNormalization", ["x"], ["y"], p=3)
    message = refusal([node], {"x": np.zeros((2, 3), np.float32)}, {"y": 1})
    assert "LpNormalization (p=3)" in message


def test_one_hot_with_a_computed_depth_is_refused():
    feeds = {"i": np.zeros(3, np.int64), "d": np.array(4, np.int64)}
    nodes = [
        helper.make_node("Abs", ["d"], ["depth"]),
        helper.make_node("OneHot", ["i", "depth", "v"], ["y"]),
    ]
    message = refusal(nodes, feeds, {"y": 1}, [("v", np.array([0.0, 1.0], np.float32))])
    assert "OneHot (depth computed by the model)" in message


def test_eye_like_refuses_a_dtype_graph_tensors_lack_and_a_3d_input():
    x = {"x": np.zeros((2, 3), np.float32)}
    node = helper.make_node("EyeLike", ["x"], ["y"], dtype=TensorProto.BFLOAT16)
    assert "EyeLike (dtype=bfloat16)" in refusal([node], x, {"y": 16})
    node = helper.make_node("EyeLike", ["x"], ["y"])
    cube = {"x": np.zeros((2, 3, 4), np.float32)}
    message = refusal([node], cube, {"y": (1, [2, 3])})
    assert (
        "EyeLike" in message and "expected a 2-D input, got shape (2, 3, 4)" in message
    )
