"""ember.frontends.onnx: per-op models imported into the graph dialect, their result
shapes against onnxruntime's and their values (the graph dialect's numpy semantics,
passes/graph_reference.py) against onnxruntime's; whole example models; the errors
(unsupported operators listed at once, files that are not ONNX, opsets, shapes)."""

import functools
import math
import sys
from collections import Counter
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from ember.dialects import graph as G
from ember.frontends import onnx as frontend
from ember.frontends.onnx import OnnxImportError, UnsupportedOperatorError, from_onnx
from ember.passes.graph_reference import run_graph
from ember.runtime.errors import EmberError

ort = pytest.importorskip("onnxruntime")

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "examples"))
import onnx_models  # noqa: E402


def make_model(
    nodes,
    inputs,
    outputs,
    initializers=None,
    opset=17,
    extra_opsets=(),
):
    """A checked model: inputs {name: shape}, outputs [name] (or {name: shape} for
    outputs onnx's shape inference cannot type), initializers {name: array}."""
    graph = helper.make_graph(
        nodes,
        "test",
        [
            helper.make_tensor_value_info(n, TensorProto.FLOAT, s)
            for n, s in inputs.items()
        ],
        [helper.make_empty_tensor_value_info(n) for n in outputs],
        [
            numpy_helper.from_array(np.asarray(a), n)
            for n, a in (initializers or {}).items()
        ],
    )
    opsets = [helper.make_opsetid("", opset), *extra_opsets]
    model = helper.make_model(graph, opset_imports=opsets)
    model.ir_version = 8 if opset <= 18 else 10
    # ONNX wants typed outputs: onnx's own shape inference types them (the
    # frontend never reads them)
    inferred = onnx.shape_inference.infer_shapes(model)
    known = {v.name: v for v in [*inferred.graph.value_info, *inferred.graph.output]}
    for output in model.graph.output:
        if output.name in known and known[output.name].type.HasField("tensor_type"):
            output.CopyFrom(known[output.name])
        elif isinstance(outputs, dict):  # ops onnx cannot infer: the test says
            shape = outputs[output.name]
            output.CopyFrom(
                helper.make_tensor_value_info(output.name, TensorProto.FLOAT, shape)
            )
    onnx.checker.check_model(model)
    return model


def rand(*shape, seed=0, positive=False):
    x = np.random.default_rng(seed).standard_normal(shape).astype(np.float32)
    return np.abs(x) + 0.5 if positive else x


def graph_ops(module) -> Counter:
    return Counter(op.name for op in module.walk() if op.name.startswith("graph."))


def main_func(module):
    (fn,) = module.ops
    return fn


def check(model, ops=(), absent=(), feeds=None, seed=1, rtol=1e-4, atol=1e-5):
    """Import `model`; its graph has `ops` and none of `absent`, its result types
    are onnxruntime's output shapes, and the reference semantics of the graph
    reproduces onnxruntime's outputs. Returns (module, params)."""
    module, params = from_onnx(model)
    counts = graph_ops(module)
    for op in ops:
        assert counts[op] > 0, (op, counts)
    for op in absent:
        assert counts[op] == 0, (op, counts)
    if feeds is None:
        feeds = {
            v.name: rand(
                *[d.dim_value for d in v.type.tensor_type.shape.dim], seed=seed
            )
            for v in model.graph.input
            if v.name not in {t.name for t in model.graph.initializer}
        }
    expected = ort_session(model).run(None, feeds)
    fn = main_func(module)
    types = fn.function_type.outputs.data
    assert [tuple(t.get_shape()) for t in types] == [e.shape for e in expected]
    got = run_graph(fn, list(feeds.values()), params)
    for g, e in zip(got, expected, strict=True):
        np.testing.assert_allclose(g, e, rtol=rtol, atol=atol)
    return module, params


@functools.cache
def ort_newest_opset() -> int:
    """The newest default-domain opset onnxruntime runs (it lags onnx)."""
    for opset in range(onnx.defs.onnx_opset_version(), 13, -1):
        model = make_model([node("Relu", ["x"])], {"x": (2,)}, ["y"], opset=opset)
        model.ir_version = min(onnx.IR_VERSION, 10 if opset <= 22 else 11)
        try:
            ort_session(model, lower=False)
        except Exception:  # noqa: BLE001 - ORT raises its own untyped errors
            continue
        return opset
    raise AssertionError("onnxruntime runs no opset past 13")


def ort_session(model, lower=True):
    """onnxruntime's session; a model newer than onnxruntime's opsets runs at its
    newest one (the tests' ops have the same semantics there)."""
    if lower and model.opset_import[0].version > ort_newest_opset():
        model = onnx.ModelProto.FromString(model.SerializeToString())
        model.opset_import[0].version = ort_newest_opset()
        model.ir_version = min(model.ir_version, onnx.IR_VERSION, 11)
    return ort.InferenceSession(
        model.SerializeToString(), providers=["CPUExecutionProvider"]
    )


def node(op, inputs, outputs=("y",), name=None, **attrs):
    return helper.make_node(
        op, list(inputs), list(outputs), name or op.lower(), **attrs
    )


# -- per-op models ------------------------------------------------------------------


CONV_CASES = {
    "basic": dict(x=(1, 3, 8, 8), w=(4, 3, 3, 3), attrs=dict(pads=[1, 1, 1, 1])),
    "strided_asymmetric": dict(
        x=(2, 3, 9, 7), w=(5, 3, 3, 2), attrs=dict(strides=[2, 1], pads=[0, 1, 2, 0])
    ),
    "dilated": dict(x=(1, 2, 10, 10), w=(3, 2, 3, 3), attrs=dict(dilations=[2, 2])),
    "grouped": dict(x=(1, 4, 6, 6), w=(6, 2, 3, 3), attrs=dict(group=2, pads=[1] * 4)),
    "depthwise": dict(
        x=(1, 8, 7, 7),
        w=(8, 1, 3, 3),
        attrs=dict(group=8, strides=[2, 2], pads=[1] * 4),
    ),
    "same_upper": dict(
        x=(1, 3, 8, 8),
        w=(4, 3, 3, 3),
        attrs=dict(auto_pad="SAME_UPPER", strides=[2, 2]),
    ),
    "same_lower": dict(
        x=(1, 3, 8, 8),
        w=(4, 3, 4, 4),
        attrs=dict(auto_pad="SAME_LOWER", strides=[2, 2]),
    ),
    "valid": dict(x=(1, 3, 8, 8), w=(4, 3, 3, 3), attrs=dict(auto_pad="VALID")),
}


@pytest.mark.parametrize("bias", [False, True])
@pytest.mark.parametrize("case", sorted(CONV_CASES))
def test_conv(case, bias):
    c = CONV_CASES[case]
    inits = {"w": rand(*c["w"], seed=2)}
    if bias:
        inits["b"] = rand(c["w"][0], seed=3)
    model = make_model(
        [node("Conv", ["x", "w", "b"] if bias else ["x", "w"], **c["attrs"])],
        {"x": c["x"]},
        ["y"],
        inits,
    )
    module, params = check(model, ["graph.conv2d", "graph.param"])
    assert set(params) == set(inits)
    (conv,) = [op for op in module.walk() if isinstance(op, G.Conv2DOp)]
    assert len(conv.operands) == (3 if bias else 2)


def test_conv_padding_is_top_left_bottom_right():
    model = make_model(
        [node("Conv", ["x", "w"], pads=[0, 1, 2, 3])],
        {"x": (1, 1, 5, 5)},
        ["y"],
        {"w": rand(1, 1, 1, 1)},
    )
    module, _ = check(model)
    (conv,) = [op for op in module.walk() if isinstance(op, G.Conv2DOp)]
    assert conv.config["padding"] == (0, 1, 2, 3)


def test_same_lower_puts_the_extra_padding_first():
    model = make_model(
        [node("Conv", ["x", "w"], auto_pad="SAME_LOWER")],
        {"x": (1, 1, 6, 6)},
        ["y"],
        {"w": rand(1, 1, 2, 2)},
    )
    module, _ = check(model)
    (conv,) = [op for op in module.walk() if isinstance(op, G.Conv2DOp)]
    assert conv.config["padding"] == (1, 1, 0, 0)


GEMM_CASES = {
    "transB_bias": (dict(transB=1), (6, 5), (4,), ["graph.dense"], ["graph.add"]),
    "weight_kn": (dict(), (5, 6), (6,), ["graph.dense", "graph.transpose"], []),
    "transA": (dict(transA=1, transB=1), (6, 5), (6,), ["graph.dense"], []),
    "alpha_beta": (
        dict(alpha=0.5, beta=2.0, transB=1),
        (6, 5),
        (6,),
        ["graph.dense", "graph.mul", "graph.add"],
        [],
    ),
    "matrix_bias": (dict(transB=1), (6, 5), (3, 6), ["graph.dense", "graph.add"], []),
    "no_bias": (dict(transB=1), (6, 5), None, ["graph.dense"], ["graph.add"]),
}


@pytest.mark.parametrize("case", sorted(GEMM_CASES))
def test_gemm(case):
    attrs, b_shape, c_shape, ops, absent = GEMM_CASES[case]
    if case == "transB_bias":
        b_shape, c_shape = (4, 5), (4,)
    a_shape = (5, 3) if attrs.get("transA") else (3, 5)
    inits = {"B": rand(*b_shape, seed=2)}
    inputs = ["A", "B"]
    if c_shape is not None:
        inits["C"] = rand(*c_shape, seed=3)
        inputs.append("C")
    model = make_model([node("Gemm", inputs, **attrs)], {"A": a_shape}, ["y"], inits)
    check(model, ops, absent)


def test_gemm_with_a_computed_b_is_a_matmul():
    model = make_model([node("Gemm", ["A", "B"])], {"A": (3, 5), "B": (5, 4)}, ["y"])
    check(model, ["graph.matmul"], ["graph.dense"])


@pytest.mark.parametrize(
    "a, b",
    [
        ((3, 5), (5, 4)),
        ((2, 3, 4, 5), (5, 6)),
        ((2, 1, 4, 5), (3, 5, 2)),
        ((5,), (5, 3)),
    ],
)
def test_matmul(a, b):
    model = make_model([node("MatMul", ["a", "b"])], {"a": a, "b": b}, ["y"])
    check(model, ["graph.matmul"])


def test_batch_norm():
    c = 6
    inits = {
        "g": rand(c, seed=2),
        "b": rand(c, seed=3),
        "m": rand(c, seed=4),
        "v": rand(c, seed=5, positive=True),
    }
    model = make_model(
        [node("BatchNormalization", ["x", "g", "b", "m", "v"], epsilon=1e-3)],
        {"x": (2, c, 4, 4)},
        ["y"],
        inits,
    )
    module, params = check(model, ["graph.batch_norm"])
    (bn,) = [op for op in module.walk() if isinstance(op, G.BatchNormOp)]
    assert bn.config["epsilon"] == pytest.approx(1e-3)
    assert sorted(params) == ["b", "g", "m", "v"]


@pytest.mark.parametrize(
    "op, graph_op",
    [
        ("Add", "graph.add"),
        ("Sub", "graph.sub"),
        ("Mul", "graph.mul"),
        ("Div", "graph.div"),
        ("Pow", "graph.pow"),
        ("Max", "graph.maximum"),
        ("Min", "graph.minimum"),
    ],
)
def test_binary_broadcasting(op, graph_op):
    model = make_model([node(op, ["a", "b"])], {"a": (2, 3, 4), "b": (3, 1)}, ["y"])
    feeds = {"a": rand(2, 3, 4, positive=op == "Pow"), "b": rand(3, 1, seed=2)}
    if op == "Div":
        feeds["b"] = rand(3, 1, seed=2, positive=True)
    check(model, [graph_op], feeds=feeds)


def test_variadic_max_and_scalar_initializer_operand():
    model = make_model(
        [node("Max", ["a", "b", "s"])],
        {"a": (4, 5), "b": (5,)},
        ["y"],
        {"s": np.float32(0.25)},
    )
    module, params = check(model)
    assert graph_ops(module)["graph.maximum"] == 2
    assert graph_ops(module)["graph.constant"] == 1  # a scalar is a literal
    assert params == {}


@pytest.mark.parametrize(
    "op", ["Relu", "Sigmoid", "Tanh", "Exp", "Sqrt", "Erf", "Neg", "Abs", "Log"]
)
def test_unary(op):
    model = make_model([node(op, ["x"])], {"x": (3, 7)}, ["y"])
    positive = op in ("Sqrt", "Log")
    check(model, [f"graph.{op.lower()}"], feeds={"x": rand(3, 7, positive=positive)})


# Activations: (ONNX op, attributes, opset, graph op)
ACTIVATIONS = [
    ("LeakyRelu", {}, 17, "graph.leaky_relu"),
    ("LeakyRelu", {"alpha": 0.3}, 17, "graph.leaky_relu"),
    ("Elu", {}, 17, "graph.elu"),
    ("Elu", {"alpha": 0.5}, 21, "graph.elu"),
    ("Selu", {}, 17, "graph.selu"),
    ("Selu", {"alpha": 1.5, "gamma": 2.0}, 18, "graph.selu"),
    ("HardSigmoid", {}, 17, "graph.hard_sigmoid"),
    ("HardSigmoid", {"alpha": 0.25, "beta": 0.4}, 21, "graph.hard_sigmoid"),
    ("HardSwish", {}, 17, "graph.hard_swish"),
    ("Mish", {}, 18, "graph.mish"),
    ("Softplus", {}, 17, "graph.softplus"),
    ("Gelu", {}, 20, "graph.gelu"),
    ("Gelu", {"approximate": "none"}, 20, "graph.gelu"),
    ("Gelu", {"approximate": "tanh"}, 20, "graph.gelu_tanh"),
]
ACTIVATION_IDS = [f"{op}-{'-'.join(map(str, a.values())) or 'default'}" for op, a, *_ in ACTIVATIONS]  # fmt: skip


def activation_input(*shape, seed=0):
    """Values over the activations' interesting range, 0 and a few far ones."""
    x = 4 * rand(*shape, seed=seed)
    flat = x.reshape(-1)
    flat[:5] = [0.0, -30.0, 30.0, -3.0, 3.0]
    return x


@pytest.mark.parametrize("op, attrs, opset, graph_op", ACTIVATIONS, ids=ACTIVATION_IDS)
def test_activations(op, attrs, opset, graph_op):
    model = make_model([node(op, ["x"], **attrs)], {"x": (3, 17)}, ["y"], opset=opset)
    module, _ = check(model, [graph_op], feeds={"x": activation_input(3, 17)})
    assert sum(graph_ops(module).values()) == 1


@pytest.mark.parametrize("slope_shape", [(4, 1, 1), (1,), (5,), (1, 4, 1, 5)])
def test_prelu_slope_broadcasts_to_the_input(slope_shape):
    model = make_model(
        [node("PRelu", ["x", "slope"])],
        {"x": (2, 4, 3, 5)},
        ["y"],
        {"slope": rand(*slope_shape, seed=4)},
    )
    check(model, ["graph.prelu"])


def test_prelu_slope_that_does_not_broadcast_to_the_input():
    model = make_model(
        [node("PRelu", ["x", "slope"])],
        {"x": (4, 3)},
        {"y": (4, 3)},
        {"slope": rand(2, 1, 3)},
    )
    with pytest.raises(
        OnnxImportError,
        match="PRelu node 'prelu': expected a slope that broadcasts to 4x3, got 2x1x3",
    ):
        from_onnx(model)


def test_gelu_opset_20_and_the_contrib_gelu():
    model = make_model([node("Gelu", ["x"])], {"x": (4, 9)}, ["y"], opset=20)
    check(model, ["graph.gelu"])
    contrib = make_model(
        [helper.make_node("Gelu", ["x"], ["y"], "gelu", domain="com.microsoft")],
        {"x": (4, 9)},
        {"y": (4, 9)},
        extra_opsets=[helper.make_opsetid("com.microsoft", 1)],
    )
    check(contrib, ["graph.gelu"])


@pytest.mark.parametrize(
    "bounds, ops",
    [
        ((0.0, 6.0), ["graph.clip"]),
        ((0.0, None), ["graph.relu"]),
        ((-1.0, None), ["graph.clip"]),
        ((None, 0.5), ["graph.clip"]),
        ((None, None), []),
    ],
)
def test_clip_bounds_read_at_import(bounds, ops):
    inits, inputs = {}, ["x"]
    for name, bound in zip(("lo", "hi"), bounds, strict=True):
        if bound is not None:
            inits[name] = np.float32(bound)
        inputs.append(name if bound is not None else "")
    while inputs[-1] == "":
        inputs.pop()
    model = make_model([node("Clip", inputs)], {"x": (2, 8)}, ["y"], inits)
    module, _ = check(model, ops)
    assert graph_ops(module)["graph.constant"] == 0  # bounds are attributes
    clips = [op for op in module.walk() if isinstance(op, G.ClipOp)]
    if clips:
        assert (clips[0].config["min"], clips[0].config["max"]) == bounds


POOL_CASES = [
    ("MaxPool", dict(kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1])),
    ("MaxPool", dict(kernel_shape=[2, 3], strides=[2, 2], ceil_mode=1)),
    ("MaxPool", dict(kernel_shape=[2, 2], dilations=[2, 2], pads=[0, 1, 1, 0])),
    ("MaxPool", dict(kernel_shape=[3, 3], auto_pad="SAME_UPPER", strides=[2, 2])),
    ("AveragePool", dict(kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1])),
    (
        "AveragePool",
        dict(
            kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1], count_include_pad=1
        ),
    ),
    ("AveragePool", dict(kernel_shape=[2, 2], strides=[2, 2], ceil_mode=1)),
]


@pytest.mark.parametrize("op, attrs", POOL_CASES)
def test_pooling(op, attrs):
    model = make_model([node(op, ["x"], **attrs)], {"x": (1, 3, 9, 8)}, ["y"])
    check(model, ["graph.max_pool2d" if op == "MaxPool" else "graph.avg_pool2d"])


@pytest.mark.parametrize(
    "op, graph_op",
    [
        ("GlobalAveragePool", "graph.global_avg_pool2d"),
        ("GlobalMaxPool", "graph.reduce_max"),
    ],
)
def test_global_pooling(op, graph_op):
    model = make_model([node(op, ["x"])], {"x": (2, 5, 6, 7)}, ["y"])
    check(model, [graph_op])


@pytest.mark.parametrize("axis", [1, -1, 0])
def test_softmax(axis):
    model = make_model([node("Softmax", ["x"], axis=axis)], {"x": (3, 4, 5)}, ["y"])
    check(model, ["graph.softmax"])


def test_reshape_with_zero_and_minus_one():
    model = make_model(
        [node("Reshape", ["x", "shape"])],
        {"x": (2, 3, 4, 5)},
        ["y"],
        {"shape": np.array([0, -1, 5], np.int64)},
    )
    module, params = check(model, ["graph.reshape"])
    assert params == {}  # the shape was read at import
    assert main_func(module).function_type.outputs.data[0].get_shape() == (2, 12, 5)


@pytest.mark.parametrize("axis", [0, 2, -1])
def test_flatten(axis):
    model = make_model([node("Flatten", ["x"], axis=axis)], {"x": (2, 3, 4)}, ["y"])
    check(model, ["graph.flatten"])


@pytest.mark.parametrize("perm", [None, [0, 2, 3, 1]])
def test_transpose(perm):
    attrs = {} if perm is None else {"perm": perm}
    model = make_model([node("Transpose", ["x"], **attrs)], {"x": (2, 3, 4, 5)}, ["y"])
    check(model, ["graph.transpose"])


def test_concat_with_a_param_operand():
    model = make_model(
        [node("Concat", ["a", "b", "c"], axis=1)],
        {"a": (2, 3, 4), "b": (2, 1, 4)},
        ["y"],
        {"c": rand(2, 5, 4, seed=7)},
    )
    module, params = check(model, ["graph.concat", "graph.param"])
    assert list(params) == ["c"]


@pytest.mark.parametrize("opset", [13, 18])
def test_pad_constant(opset):
    inits = {"pads": np.array([0, 1, 2, 0, 3, 1], np.int64), "v": np.float32(1.5)}
    inputs = ["x", "pads", "v"]
    if opset == 18:
        inits["pads"] = np.array([1, 2, 3, 1], np.int64)  # axes 1 and 2 only
        inits["axes"] = np.array([1, -1], np.int64)
        inputs.append("axes")
    model = make_model(
        [node("Pad", inputs, mode="constant")], {"x": (2, 3, 4)}, ["y"], inits, opset
    )
    module, params = check(model, ["graph.pad"])
    (pad,) = [op for op in module.walk() if isinstance(op, G.PadOp)]
    assert pad.config["pads"] == (0, 1, 2, 0, 3, 1)
    assert params == {}


REDUCE_CASES = [
    ("ReduceSum", 13, [1], 1),
    ("ReduceSum", 13, [0, 2], 0),
    ("ReduceSum", 13, None, 1),
    ("ReduceMean", 13, [-1], 1),
    ("ReduceMean", 18, [-1], 0),
    ("ReduceMax", 17, [1, 2], 1),
    ("ReduceMax", 18, [0], 0),
    ("ReduceMean", 18, None, 0),
]


@pytest.mark.parametrize("op, opset, axes, keepdims", REDUCE_CASES)
def test_reductions_axes_by_opset(op, opset, axes, keepdims):
    as_input = opset >= 18 or op == "ReduceSum"
    inits, inputs, attrs = {}, ["x"], {"keepdims": keepdims}
    if axes is not None and as_input:
        inits["axes"] = np.array(axes, np.int64)
        inputs.append("axes")
    elif axes is not None:
        attrs["axes"] = axes
    model = make_model(
        [node(op, inputs, **attrs)], {"x": (2, 3, 4)}, ["y"], inits, opset
    )
    check(model, [f"graph.reduce_{op[6:].lower()}"])


def test_reduce_noop_with_empty_axes_is_identity():
    model = make_model(
        [node("ReduceSum", ["x"], noop_with_empty_axes=1)], {"x": (2, 3)}, ["y"]
    )
    module, _ = check(model)
    assert not graph_ops(module)


# -- what torch.onnx.export (dynamo, opset 18+) writes ------------------------------

TORCH_OPSETS = [17, 18, 21, onnx.defs.onnx_opset_version()]


def _axes(op, opset, axes, inits, inputs, attrs):
    """Reduction axes as torch writes them: an input from 18 (ReduceSum from 13)."""
    if opset >= 18 or op == "ReduceSum":
        inits[f"{op}_axes"] = np.array(axes, np.int64)
        inputs.append(f"{op}_axes")
    else:
        attrs["axes"] = axes


@pytest.mark.parametrize("opset", TORCH_OPSETS)
def test_torch_exporter_graph(opset):
    """allowzero=1 reshapes of a computed tensor and of a shape computation,
    CastLike of an int64 constant and of the input, reductions with axes."""
    inits = {
        "shape": np.array([2, 12], np.int64),
        "back": np.array([2, 3, 4], np.int64),
        "two": np.array(2, np.int64),
    }
    nodes = [
        node("Reshape", ["x", "shape"], ["flat"], "reshape", allowzero=1),
        node("CastLike", ["two", "flat"], ["twof"], "castlike_const"),
        node("CastLike", ["flat", "x"], ["flatf"], "castlike_same"),
        node("Mul", ["flatf", "twof"], ["m"], "mul"),
        node("Reshape", ["m", "back"], ["r"], "reshape_back", allowzero=1),
    ]
    outputs = []
    for op, axes, keep in [("ReduceMean", [-1], 1), ("ReduceMax", [1], 0),
                           ("ReduceSum", [0, 2], 1)]:  # fmt: skip
        inputs, attrs = ["r"], {"keepdims": keep}
        _axes(op, opset, axes, inits, inputs, attrs)
        nodes.append(node(op, inputs, [op], op.lower(), **attrs))
        outputs.append(op)
    model = make_model(nodes, {"x": (2, 3, 4)}, outputs, inits, opset)
    model.ir_version = 10 if opset <= 22 else 11
    check(
        model,
        ["graph.reshape", "graph.mul", "graph.reduce_mean", "graph.reduce_max"],
    )


@pytest.mark.parametrize("opset", TORCH_OPSETS)
@pytest.mark.parametrize("op", ["ReduceMean", "ReduceMax", "ReduceSum"])
def test_noop_with_empty_axes(op, opset):
    """Empty axes reduce everything, or nothing with noop_with_empty_axes=1."""
    nodes = [node(op, ["x"], ["all"], "all", keepdims=0)]
    inits = {}
    if opset >= 18 or op == "ReduceSum":  # the attribute and axes input came at 18
        nodes.append(node(op, ["x"], ["none"], "none", noop_with_empty_axes=1))
        inits["empty"] = np.zeros(0, np.int64)
        nodes.append(node(op, ["x", "empty"], ["e"], "empty", noop_with_empty_axes=1))
    model = make_model(nodes, {"x": (2, 3)}, [n.output[0] for n in nodes], inits, opset)
    model.ir_version = 10 if opset <= 22 else 11
    module, _ = check(model)
    assert sum(graph_ops(module).values()) == 1


def test_reshape_allowzero_with_a_zero_is_refused():
    inits = {"shape": np.array([0, 6], np.int64)}
    model = make_model(
        [node("Reshape", ["x", "shape"], allowzero=1)], {"x": (2, 3)}, ["y"], inits
    )
    with pytest.raises(
        OnnxImportError,
        match=r"Reshape node 'reshape': expected no 0 in the target shape with "
        r"allowzero=1 \(an empty dimension\), got \[0, 6\]",
    ):
        from_onnx(model)


def test_castlike_to_an_unsupported_dtype_is_refused():
    inits = {"like": np.array([1], np.complex64)}
    model = make_model(
        [node("CastLike", ["x", "like"])], {"x": (2, 3)}, {"y": (2, 3)}, inits
    )
    with pytest.raises(
        OnnxImportError, match="expected a cast to one of .*got complex64"
    ):
        from_onnx(model)


def test_identity_dropout_and_float_cast_disappear():
    model = make_model(
        [
            node("Identity", ["x"], ["a"], "id"),
            node("Dropout", ["a"], ["b"], "drop"),
            node("Cast", ["b"], ["c"], "cast", to=TensorProto.FLOAT),
            node("Relu", ["c"]),
        ],
        {"x": (3, 4)},
        ["y"],
    )
    module, _ = check(model)
    assert graph_ops(module) == Counter({"graph.relu": 1})


def test_shape_computations_fold_at_import():
    """torch's x.view(x.size(0), -1): Shape, Gather, Unsqueeze, Concat, Reshape."""
    model = make_model(
        [
            node("Shape", ["x"], ["s"], "shape"),
            node("Gather", ["s", "zero"], ["n"], "gather", axis=0),
            node("Unsqueeze", ["n", "axes0"], ["n1"], "unsqueeze"),
            node("Concat", ["n1", "minus_one"], ["target"], "concat", axis=0),
            node("Reshape", ["x", "target"], ["y"], "reshape"),
        ],
        {"x": (2, 3, 4, 5)},
        ["y"],
        {
            "zero": np.array(0, np.int64),
            "axes0": np.array([0], np.int64),
            "minus_one": np.array([-1], np.int64),
        },
    )
    module, params = check(model)
    assert graph_ops(module) == Counter({"graph.reshape": 1})
    assert params == {}


def test_squeeze_and_unsqueeze_of_computed_tensors_are_reshapes():
    model = make_model(
        [
            node("Unsqueeze", ["x", "a"], ["u"], "unsqueeze"),
            node("Relu", ["u"], ["r"], "relu"),
            node("Squeeze", ["r", "b"], ["y"], "squeeze"),
        ],
        {"x": (3, 1, 4)},
        ["y"],
        {"a": np.array([0, -1], np.int64), "b": np.array([0, 2], np.int64)},
    )
    module, _ = check(model)
    assert graph_ops(module)["graph.reshape"] == 2
    assert main_func(module).function_type.outputs.data[0].get_shape() == (3, 4, 1)


def test_constant_nodes():
    value = helper.make_tensor("v", TensorProto.FLOAT, [4], [1.0, 2.0, 3.0, 4.0])
    big = numpy_helper.from_array(rand(40, seed=3), "big")
    model = make_model(
        [
            node("Constant", [], ["c"], "const", value=value),
            node("Constant", [], ["d"], "const_big", value=big),
            node("Constant", [], ["s"], "const_scalar", value_float=2.0),
            node("Add", ["x", "c"], ["a"], "add"),
            node("Mul", ["a", "s"], ["m"], "mul"),
            node("Concat", ["m", "d"], ["y"], "concat", axis=0),
        ],
        {"x": (4,)},
        ["y"],
    )
    module, params = check(model)
    assert graph_ops(module)["graph.constant"] == 2
    assert list(params) == ["d"]  # a large folded value becomes a param


def test_layer_normalization_opset_17():
    d = 12
    model = make_model(
        [node("LayerNormalization", ["x", "g", "b"], axis=-1, epsilon=1e-5)],
        {"x": (2, 5, d)},
        ["y"],
        {"g": rand(d, seed=2), "b": rand(d, seed=3)},
    )
    check(model, ["graph.layer_norm"], absent=["graph.reduce_mean"])


# -- whole models -------------------------------------------------------------------


def test_mlp():
    module, params = check(onnx_models.mlp(), ["graph.dense", "graph.softmax"])
    assert sorted(params) == sorted(
        ["fc0.weight", "fc0.bias", "fc1.weight", "fc1.bias", "head.weight", "head.bias"]
    )


@pytest.mark.parametrize(
    "kwargs",
    [
        dict(),
        dict(layer_norm="onnx", shape_ops=True),
        dict(opset=18, shape_ops=True),
        dict(opset=13),
    ],
)
def test_transformer_block(kwargs):
    model = onnx_models.transformer_block(seq=16, d=32, heads=4, **kwargs)
    module, _ = check(model, ["graph.matmul", "graph.softmax", "graph.erf"])
    counts = graph_ops(module)
    onnx_norm = kwargs.get("layer_norm") == "onnx"
    assert counts["graph.reduce_mean"] == (0 if onnx_norm else 4)
    assert counts["graph.layer_norm"] == (2 if onnx_norm else 0)
    assert counts["graph.transpose"] == 5


def test_small_cnns_match_onnxruntime():
    mobilenet = onnx_models.mobilenet_v2(size=32, width=0.35, num_classes=10)
    module, params = check(mobilenet, rtol=1e-3, atol=1e-4)
    assert graph_ops(module)["graph.conv2d"] == 52
    resnet = onnx_models.resnet18(size=32, num_classes=10)
    check(resnet, ["graph.max_pool2d", "graph.flatten"], rtol=1e-3, atol=1e-4)


def test_full_size_models_import_quickly():
    model = onnx_models.mobilenet_v2()
    module, params = from_onnx(model)
    counts = graph_ops(module)
    assert counts["graph.conv2d"] == counts["graph.batch_norm"] == 52
    assert counts["graph.clip"] == 35
    assert counts["graph.add"] == 10
    assert counts["graph.dense"] == 1
    # initializers are params under their own names, with their own values
    for init in model.graph.initializer:
        if init.name.startswith("const_"):
            assert init.name not in params
        else:
            np.testing.assert_array_equal(
                params[init.name], numpy_helper.to_array(init)
            )
    fn = main_func(module)
    assert [tuple(t.get_shape()) for t in fn.function_type.outputs.data] == [(1, 1000)]
    assert fn.arg_attrs.data[0].data["ember.name"].data == "input"
    assert fn.res_attrs.data[0].data["ember.name"].data == "output"
    module, params = from_onnx(onnx_models.resnet18())
    assert graph_ops(module)["graph.conv2d"] == 20
    assert len(params) == 102


def test_path_and_printed_ir(tmp_path):
    path = tmp_path / "mlp.onnx"
    onnx.save(onnx_models.mlp(), str(path))
    for arg in (path, str(path)):
        module, params = from_onnx(arg)
        assert len(params) == 6
    text = str(module)
    assert 'graph.param "fc0.weight" : tensor<128x64xf32>' in text
    assert 'ember.name = "input"' in text


# -- shapes and dtypes --------------------------------------------------------------


def test_dynamic_batch_needs_a_shape():
    model = onnx_models.mlp(dynamic_batch=True)
    with pytest.raises(OnnxImportError, match="dynamic dimension 'N' at axis 0"):
        from_onnx(model)
    module, _ = from_onnx(model, shape={"input": (3, 64)})
    fn = main_func(module)
    assert fn.function_type.inputs.data[0].get_shape() == (3, 64)
    assert fn.function_type.outputs.data[0].get_shape() == (3, 10)
    feeds = {"input": rand(3, 64)}
    (expected,) = ort.InferenceSession(
        model.SerializeToString(), providers=["CPUExecutionProvider"]
    ).run(None, feeds)
    (got,) = run_graph(fn, [feeds["input"]], from_onnx(model, {"input": (3, 64)})[1])
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-6)


def test_shape_override_changes_a_static_shape():
    model = onnx_models.resnet18(size=32, num_classes=10)
    module, _ = from_onnx(model, shape={"input": (2, 3, 64, 64)})
    assert main_func(module).function_type.outputs.data[0].get_shape() == (2, 10)


@pytest.mark.parametrize(
    "shape, dtype, message",
    [
        (
            {"x": (3, 64)},
            "float32",
            r"expected shapes for inputs among \['input'\], got \['x'\]",
        ),
        (
            {"input": (3, 64, 1)},
            "float32",
            r"expected a shape of rank 2 .* got \[3, 64, 1\]",
        ),
        ({"input": (0, 64)}, "float32", "expected positive dims"),
        (
            {"input": (3, 64)},
            "float16",
            "expected dtype float32 for input 'input', got float16",
        ),
    ],
)
def test_bad_shapes_and_dtypes(shape, dtype, message):
    with pytest.raises(OnnxImportError, match=message):
        from_onnx(onnx_models.mlp(dynamic_batch=True), shape=shape, dtype=dtype)


def test_inputs_of_unsupported_dtypes_are_refused_naming_their_readers():
    graph = helper.make_graph(
        [node("Cast", ["ids"], to=TensorProto.FLOAT)],
        "ints",
        [helper.make_tensor_value_info("ids", TensorProto.BFLOAT16, [4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [4])],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    with pytest.raises(
        OnnxImportError,
        match=r"input 'ids' \(read by Cast\): expected a dtype among .* got bfloat16",
    ):
        from_onnx(model)


# -- unsupported operators ----------------------------------------------------------


def test_every_unsupported_op_is_listed_before_anything_is_built(monkeypatch):
    nodes = [
        node("RandomNormalLike", ["x"], ["a"], "random_1"),
        node("Relu", ["a"], ["b"], "relu"),
        node("RandomNormalLike", ["b"], ["c"], "random_2"),
        node("Bernoulli", ["c"], ["d"], "bernoulli"),
        node("Pad", ["d", "pads"], ["e"], "pad_mirror", mode="mirror"),
        node("Conv", ["e", "w"], ["f"], "conv4d", kernel_shape=[1, 1, 1, 1]),
        helper.make_node("MeanVarianceNormalization", ["f"], ["g"]),  # unnamed
        node("Shape", ["g"], ["s"], "shape"),
        node("RandomNormalLike", ["x"], ["x2"], "random_3"),
        node("Cast", ["x2"], ["xs"], "cast_to_int", to=TensorProto.BFLOAT16),
        node("Add", ["s", "xs"], ["s2"], "add_shapes"),
        node("Reshape", ["g", "s2"], ["y"], "reshape_dynamic"),
    ]
    model = make_model(
        nodes,
        {"x": (1, 2, 4, 4)},
        {"y": ["n"]},
        {"pads": np.zeros(8, np.int64), "w": rand(2, 2, 1, 1)},
    )
    monkeypatch.setattr(
        frontend._Importer, "convert", lambda *a: pytest.fail("built a node")
    )
    with pytest.raises(UnsupportedOperatorError) as info:
        from_onnx(model)
    error = info.value
    assert isinstance(error, EmberError)
    assert error.unsupported == {
        "RandomNormalLike": ["random_1", "random_2", "random_3"],
        "Bernoulli": ["bernoulli"],
        "MeanVarianceNormalization": ["#6 (output 'g')"],
        "Pad (mode='mirror')": ["pad_mirror"],
        "Conv (kernel_shape=[1, 1, 1, 1] (only 1-D, 2-D and 3-D))": ["conv4d"],
        "Cast (to=bfloat16)": ["cast_to_int"],
        "Reshape (the target shape computed by the model)": ["reshape_dynamic"],
    }
    message = str(error)
    assert message.startswith("ONNX model 'test': 7 unsupported ONNX operators")
    assert "\n  RandomNormalLike: 3 (random_1, random_2, random_3)" in message
    assert "  Pad (mode='mirror'): 1 (pad_mirror)" in message


def test_unsupported_attribute_values_and_domains():
    model = make_model(
        [
            node("Conv", ["x", "w"], ["a"], "conv", auto_pad="SAME_SIDEWAYS"),
            node("Pad", ["a", "pads"], ["b"], "pad", mode="mirror"),
            node("LpPool", ["b"], ["c"], "pool", kernel_shape=[2, 2], ceil_mode=1),
            helper.make_node(
                "FusedConv", ["c", "w"], ["y"], "fused", domain="com.microsoft"
            ),
        ],
        {"x": (1, 1, 8, 8)},
        {"y": (1, 1, 8, 8)},
        {"w": rand(1, 1, 1, 1), "pads": np.zeros(8, np.int64)},
        opset=19,
        extra_opsets=[helper.make_opsetid("com.microsoft", 1)],
    )
    with pytest.raises(UnsupportedOperatorError) as info:
        from_onnx(model)
    assert info.value.unsupported == {
        "Conv (auto_pad='SAME_SIDEWAYS')": ["conv"],
        "Pad (mode='mirror')": ["pad"],
        "LpPool (ceil_mode=1)": ["pool"],
        "com.microsoft.FusedConv": ["fused"],
    }


def test_a_node_that_fails_to_convert_is_named():
    model = make_model(
        [node("Conv", ["x", "w"], ["y"], "bad_conv", group=3)],
        {"x": (1, 4, 8, 8)},
        ["y"],
        {"w": rand(3, 1, 3, 3)},
    )
    with pytest.raises(
        OnnxImportError, match="Conv node 'bad_conv': expected input channels"
    ):
        from_onnx(model)


# -- files and opsets ---------------------------------------------------------------


@pytest.mark.parametrize(
    "content, message",
    [
        (b"", "is not an ONNX model"),
        (b"hello, this is a text file\n" * 20, "is not an ONNX model"),
        (
            bytes(np.random.default_rng(0).integers(0, 256, 4096, np.uint8)),
            "is not an ONNX model",
        ),
        ("truncated", "is not an ONNX model"),
    ],
    ids=["empty", "text", "random", "truncated"],
)
def test_files_that_are_not_onnx(tmp_path, content, message):
    path = tmp_path / "model.onnx"
    if content == "truncated":
        content = onnx_models.mlp().SerializeToString()[:1000]
    path.write_bytes(content)
    with pytest.raises(OnnxImportError, match=message) as info:
        from_onnx(path)
    assert str(path) in str(info.value)


def test_missing_file_and_directory(tmp_path):
    for path in (tmp_path / "nope.onnx", tmp_path):
        with pytest.raises(OnnxImportError, match="no such file") as info:
            from_onnx(path)
        assert str(path) in str(info.value)


def test_external_data(tmp_path):
    path = tmp_path / "mlp.onnx"
    model = onnx_models.mlp()
    weight = numpy_helper.to_array(model.graph.initializer[0])
    # onnx.save moves the tensors of the model it saves out to the data file
    onnx.save(model, str(path), save_as_external_data=True, location="mlp.data")
    _, params = from_onnx(path)
    np.testing.assert_array_equal(params[model.graph.initializer[0].name], weight)
    (tmp_path / "mlp.data").unlink()
    with pytest.raises(OnnxImportError, match="cannot load its external data"):
        from_onnx(path)


def test_a_model_the_checker_rejects():
    model = make_model([node("Relu", ["x"])], {"x": (2,)}, ["y"])
    model.graph.node[0].input[0] = "undefined"
    with pytest.raises(OnnxImportError, match="is not a valid ONNX model"):
        from_onnx(model)


NEWEST = frontend.SUPPORTED_OPSETS.stop - 1


@pytest.mark.parametrize("opset", [7, 11, 12])
def test_older_opsets_are_converted_to_13(opset):
    model = make_model(
        [node("Relu", ["x"], ["a"], "relu"), node("Softmax", ["a"], axis=1)],
        {"x": (2, 3)},
        ["y"],
        opset=opset,
    )
    check(model, ["graph.relu", "graph.softmax"])


def test_a_model_the_version_converter_cannot_take(monkeypatch):
    def refuse(model, target):
        raise RuntimeError("No Adapter For Upsample\nmore detail")

    monkeypatch.setattr(frontend.version_converter, "convert_version", refuse)
    model = make_model([node("Relu", ["x"])], {"x": (2,)}, ["y"], opset=11)
    with pytest.raises(
        OnnxImportError,
        match=f"expected opset 13..{NEWEST}, got 11, and onnx.version_converter "
        "could not convert it to opset 13: No Adapter For Upsample$",
    ):
        from_onnx(model)


@pytest.mark.parametrize("opset", range(13, onnx.defs.onnx_opset_version() + 1))
def test_every_supported_opset(opset):
    model = make_model(
        [node("Relu", ["x"], ["a"], "relu"), node("Softmax", ["a"], axis=-1)],
        {"x": (2, 3)},
        ["y"],
        opset=opset,
    )
    model.ir_version = 10 if opset <= 22 else 11
    check(model, ["graph.relu", "graph.softmax"])


# Where the default-domain schemas of the converted and folded ops changed after
# 13, as read for frontend.NEWEST_REVIEWED_OPSET: only types ember does not take,
# or changes the converters handle (axes inputs at 18, Pad's wrap and AveragePool's
# dilations at 19 computed; HardSwish, Mish and Gelu first appear at 14, 18 and
# 20). An op or a version missing here is a change nobody has read yet.
REVIEWED_CHANGES = {
    "Add": [14], "AveragePool": [19, 22], "BatchNormalization": [14, 15],
    "Cast": [19, 21, 23, 24, 25, 28], "CastLike": [15, 19, 21, 23, 24, 25],
    "Constant": [19, 21, 23, 24, 25], "ConstantOfShape": [20, 21, 23, 24, 25],
    "Conv": [22], "Div": [14], "Dropout": [22], "Elu": [22],
    "Flatten": [21, 23, 24, 25], "Gelu": [20], "GlobalAveragePool": [22],
    "GlobalMaxPool": [22], "HardSigmoid": [22], "HardSwish": [14, 22],
    "Identity": [14, 16, 19, 21, 23, 24, 25], "LayerNormalization": [17],
    "LeakyRelu": [16], "LogSoftmax": [], "MaxPool": [22], "Mish": [18, 22],
    "Mul": [14], "PRelu": [16], "Pad": [18, 19, 21, 23, 24, 25], "Pow": [15],
    # the reductions: axes as an input from 18 (axes_of reads both forms);
    # LogSum(Exp) at 28 add types only
    "ReduceL1": [18], "ReduceLogSum": [18, 28], "ReduceLogSumExp": [18, 28],
    "ReduceSumSquare": [18],
    "Range": [27], "ReduceL2": [18], "ReduceMax": [18, 20], "ReduceMean": [18],
    "ReduceMin": [18, 20], "ReduceProd": [18], "Relu": [14],
    "Reshape": [14, 19, 21, 23, 24, 25], "Selu": [22],
    "Shape": [15, 19, 21, 23, 24, 25], "Softplus": [22],
    "Squeeze": [21, 23, 24, 25], "Sub": [14], "Transpose": [21, 23, 24, 25],
    "Unsqueeze": [21, 23, 24, 25],
    # bfloat16 and string, which graph tensors do not hold; Mod at 28 defines
    # fmod=0 on floats (numpy's mod, which graph.mod computes)
    "Equal": [19], "GreaterOrEqual": [16], "LessOrEqual": [16], "Mod": [28],
    "Where": [16], "EyeLike": [22], "LpNormalization": [22],
    "NegativeLogLikelihoodLoss": [22], "OneHot": [28],
    # types ember does not compute (bfloat16, ...); Split's num_outputs (18),
    # GroupNormalization's per-channel scale (21; 18's form the checker refuses),
    # SpaceToDepth's mode (28), Trilu first at 14
    "InstanceNormalization": [22], "GroupNormalization": [18, 21], "Split": [18],
    "Trilu": [14], "CumSum": [14], "DepthToSpace": [28], "SpaceToDepth": [28],
    # Resize's antialias, axes and keep_aspect_ratio_policy (18) and
    # half_pixel_symmetric (19), computed
    "ConvTranspose": [22], "Resize": [18, 19],
    # the layout attribute (14, both values converted), bfloat16 (22)
    "LSTM": [14, 22], "GRU": [14, 22], "RNN": [14, 22],
    # unary math: bfloat16 (22), float8 (IsInf, IsNaN 20), float16 and double
    # (Celu 28, computed); RMSNormalization first at 23
    "Sin": [22], "Cos": [22], "Tan": [22], "Asin": [22], "Acos": [22],
    "Atan": [22], "Sinh": [22], "Cosh": [22], "Asinh": [22], "Acosh": [22],
    "Atanh": [22], "Round": [22], "Softsign": [22], "ThresholdedRelu": [22],
    "IsInf": [20], "IsNaN": [20], "Celu": [28], "RMSNormalization": [23],
    # Attention: nonpad_kv_seqlen (24) and sliding windows (25), computed;
    # RotaryEmbedding first at 23
    "Attention": [23, 24, 25], "RotaryEmbedding": [23],
    # tensor ops: bfloat16 (TopK 24, Einsum and Compress 28, LpPool 22);
    # Scatter's reduction add/mul (16, computed) and max/min (18, computed);
    # LpPool's ceil_mode (18, refused) and dilations (18, computed); CumProd
    # first at 26, CenterCropPad at 18, TensorScatter at 24
    "TopK": [24], "Einsum": [28], "Compress": [28], "LpPool": [18, 22],
    "ScatterND": [16, 18], "ScatterElements": [16, 18], "CumProd": [26],
    "CenterCropPad": [18], "TensorScatter": [24],
    # quantization: float8, int4, int2, float4 and float6 types and saturate
    # (float8 only) refused by type; int16/uint16, block_size, output_dtype
    # (21) and precision (23, float32 or float16) computed; QLinearMatMul's
    # float16 scales (21) computed
    "QuantizeLinear": [19, 21, 23, 24, 25, 28],
    "DequantizeLinear": [19, 21, 23, 24, 25, 28], "QLinearMatMul": [21],
    # bitwise ops first at 18 (integers only); BitShift's signed types (28:
    # arithmetic right shifts, a shift outside [0, bits) gives the sign fill),
    # computed; BitCast first at 26 (bfloat16, float8, int4 ... refused by type)
    "BitwiseAnd": [18], "BitwiseOr": [18], "BitwiseXor": [18],
    "BitwiseNot": [18], "BitShift": [28], "BitCast": [26],
    # GridSample's linear/cubic names and N-D data (20; 16's bilinear/bicubic
    # read too) and bfloat16 (22); AffineGrid first at 20, Col2Im at 18, the
    # windows at 17; Det's bfloat16 (22); the Optional ops' plain tensor and
    # sequence inputs (18) and new types (28), only tensors taken
    "GridSample": [16, 20, 22], "AffineGrid": [20], "Col2Im": [18],
    "BlackmanWindow": [17], "HammingWindow": [17], "HannWindow": [17],
    "Det": [22], "OptionalGetElement": [15, 18, 28],
    "OptionalHasElement": [15, 18, 28],
}  # fmt: skip


def test_every_schema_change_of_a_converted_op_was_reviewed():
    from ember.frontends import onnx_fold, onnx_ops

    newest = min(frontend.NEWEST_REVIEWED_OPSET, onnx.defs.onnx_opset_version())
    unread = {}
    for op in sorted(set(onnx_ops.CONVERTERS) | set(onnx_fold.FOLDERS)):
        if "." in op:
            continue
        changes = set()
        for version in range(14, newest + 1):
            try:
                since = onnx.defs.get_schema(op, version, "").since_version
            except onnx.defs.SchemaError:  # not defined yet at `version`
                continue
            if since >= 14:
                changes.add(since)
        missing = sorted(changes - set(REVIEWED_CHANGES.get(op, [])))
        if missing:
            unread[op] = missing
    assert not unread, f"schema changes nobody has read: {unread}"


def test_doc_example_values():
    assert math.isclose(frontend.SUPPORTED_OPSETS.start, 13)
    assert NEWEST == min(28, onnx.defs.onnx_opset_version())


def test_folding_slices_ranges_and_filled_tensors():
    """Shape computations and small constant tensors fold through Slice, Range,
    ConstantOfShape, Cast, Flatten, Transpose and integer Div; only the ops on the
    inputs are left."""
    fill = numpy_helper.from_array(np.array([0.5], np.float32), "fill")
    i64 = {
        "zero": np.array([0], np.int64),
        "one": np.array([1], np.int64),
        "three": np.array([3], np.int64),
        "two": np.array([2], np.int64),
        "minus": np.array([-1], np.int64),
        "start": np.array(0, np.int64),
        "limit": np.array(12, np.int64),
        "delta": np.array(1, np.int64),
    }
    model = make_model(
        [
            node("Shape", ["x"], ["s"], "shape"),
            node("Slice", ["s", "zero", "one"], ["n"], "slice_n"),
            node("Slice", ["s", "one", "three"], ["hw"], "slice_hw"),
            node("Div", ["hw", "two"], ["half"], "div_int"),  # (3, 4) // 2 = (1, 2)
            node("Concat", ["n", "half", "minus"], ["target"], "concat", axis=0),
            node("ConstantOfShape", ["hw"], ["filled"], "filled", value=fill),
            node("Flatten", ["filled"], ["flat"], "flatten", axis=-1),
            node("Transpose", ["flat"], ["filled_t"], "transpose"),
            node("Range", ["start", "limit", "delta"], ["r"], "range"),
            node("Cast", ["r"], ["rf"], "cast", to=TensorProto.FLOAT),
            node("Reshape", ["rf", "target_r"], ["rr"], "reshape_r"),
            node("Add", ["z", "filled_t"], ["a"], "add"),
            node("Add", ["a", "rr"], ["y0"], "add_r"),
            node("Reshape", ["x", "target"], ["y1"], "reshape_x"),
        ],
        {"x": (2, 3, 4, 5), "z": (4, 3)},
        ["y0", "y1"],
        {**i64, "target_r": np.array([4, 3], np.int64)},
    )
    module, params = check(model)
    assert graph_ops(module) == Counter(
        {"graph.add": 2, "graph.constant": 2, "graph.reshape": 1}
    )
    assert params == {}
    outputs = main_func(module).function_type.outputs.data
    assert outputs[1].get_shape() == (2, 1, 2, 30)


# -- compiled: imported op mixes through ember.compile_model --------------------------


def _conv_mix():
    return make_model(
        [
            node(
                "Conv",
                ["x", "w1", "b1"],
                ["a"],
                "conv_same_lower",
                auto_pad="SAME_LOWER",
                strides=[2, 2],
            ),
            node("Relu", ["a"], ["b"], "relu"),
            node(
                "Conv",
                ["b", "w2"],
                ["c"],
                "depthwise",
                group=8,
                pads=[0, 1, 2, 1],
                dilations=[2, 2],
            ),
            node("Clip", ["c", "lo", "hi"], ["d"], "clip"),
            node("Conv", ["d", "w3"], ["e"], "grouped", group=2, pads=[1, 1, 1, 1]),
            node(
                "MaxPool",
                ["e"],
                ["f"],
                "max_pool",
                kernel_shape=[3, 3],
                strides=[2, 2],
                ceil_mode=1,
            ),
            node(
                "AveragePool",
                ["f"],
                ["y"],
                "avg_pool",
                kernel_shape=[2, 2],
                pads=[1, 0, 0, 1],
                count_include_pad=1,
            ),
            node("GlobalMaxPool", ["e"], ["z"], "global_max"),
        ],
        {"x": (1, 4, 13, 11)},
        ["y", "z"],
        {
            "w1": rand(8, 4, 4, 4, seed=2) * 0.3,
            "b1": rand(8, seed=3),
            "w2": rand(8, 1, 3, 3, seed=4) * 0.5,
            "lo": np.float32(-1.0),
            "hi": np.float32(1.0),
            "w3": rand(6, 4, 3, 3, seed=5) * 0.3,
        },
    )


def _dense_mix():
    return make_model(
        [
            node(
                "Gemm", ["a", "B", "C"], ["g"], "gemm_kn", alpha=0.5, beta=2.0, transA=1
            ),
            node("Tanh", ["g"], ["t"], "tanh"),
            node("Gemm", ["t", "W", "bias"], ["h"], "gemm_nk", transB=1),
            node("Sigmoid", ["h"], ["s"], "sigmoid"),
            node("MatMul", ["s", "M"], ["m"], "matmul"),
            node("Max", ["m", "floor", "t2"], ["mx"], "max3"),
            node("Pow", ["mx", "two"], ["p"], "pow"),
            node("Softmax", ["p"], ["y"], "softmax", axis=0),
        ],
        {"a": (7, 3)},
        ["y"],
        {
            "B": rand(7, 6, seed=2),
            "C": rand(6, seed=3),
            "W": rand(5, 6, seed=4),
            "bias": rand(5, seed=5),
            "M": rand(5, 6, seed=6),
            "floor": np.float32(-0.5),
            "t2": rand(3, 6, seed=7),
            "two": np.float32(2.0),
        },
    )


def _shape_mix():
    return make_model(
        [
            node("Shape", ["x"], ["s"], "shape"),
            node("Gather", ["s", "zero"], ["n"], "gather", axis=0),
            node("Unsqueeze", ["n", "axes0"], ["n1"], "unsqueeze"),
            node("Concat", ["n1", "minus_one"], ["target"], "concat_shape", axis=0),
            node("Reshape", ["x", "target"], ["flat"], "reshape"),
            node("Transpose", ["x"], ["xt"], "transpose", perm=[0, 3, 1, 2]),
            node("Pad", ["xt", "pads", "pad_value"], ["xp"], "pad"),
            node("ReduceSum", ["xp", "axis1"], ["rs"], "reduce_sum", keepdims=0),
            node("ReduceMax", ["x"], ["rm"], "reduce_max", axes=[2, 3], keepdims=1),
            node("Flatten", ["rm"], ["rmf"], "flatten", axis=1),
            node("Concat", ["flat", "rmf"], ["cat"], "concat", axis=1),
            node("LayerNormalization", ["cat", "gamma", "beta"], ["ln"], "layer_norm"),
            node("Squeeze", ["rs", "axes0"], ["sq"], "squeeze"),
            node("Exp", ["sq"], ["ex"], "exp"),
            node("Log", ["ex"], ["lg"], "log"),
            node("Abs", ["lg"], ["ab"], "abs"),
            node("Sqrt", ["ab"], ["sr"], "sqrt"),
            node("Neg", ["sr"], ["ng"], "neg"),
            node("ReduceMean", ["ng"], ["y2"], "reduce_mean", axes=[-1], keepdims=0),
        ],
        {"x": (1, 3, 4, 5)},
        ["ln", "y2"],
        {
            "zero": np.array(0, np.int64),
            "axes0": np.array([0], np.int64),
            "minus_one": np.array([-1], np.int64),
            "pads": np.array([0, 1, 0, 2, 0, 0, 1, 1], np.int64),
            "pad_value": np.float32(0.25),
            "axis1": np.array([1], np.int64),
            "gamma": rand(63, seed=2),
            "beta": rand(63, seed=3),
        },
        opset=17,
    )


def _gelu_mix():
    return make_model(
        [node("Gelu", ["x"], ["g"], "gelu"), node("Erf", ["g"], ["y"], "erf")],
        {"x": (4, 33)},
        ["y"],
        opset=20,
    )


@pytest.fixture(scope="module")
def kernel_cache(tmp_path_factory):
    from ember.backends.kernel_cache import CompileCache

    return CompileCache(tmp_path_factory.mktemp("cache"))


@pytest.mark.parametrize("build", [_conv_mix, _dense_mix, _shape_mix, _gelu_mix])
def test_compiled_op_mixes_match_onnxruntime(build, kernel_cache):
    from ember.compiler.model import compile_model
    from ember.runtime import GraphModule, cpu

    model = build()
    feeds = {
        v.name: rand(*[d.dim_value for d in v.type.tensor_type.shape.dim], seed=9)
        for v in model.graph.input
    }
    session = ort.InferenceSession(
        model.SerializeToString(), providers=["CPUExecutionProvider"]
    )
    expected = session.run(None, feeds)
    module = GraphModule(compile_model(model, cache=kernel_cache)["default"](cpu()))
    for name, value in feeds.items():
        module.set_input(name, value)
    module.run()
    assert module.get_num_outputs() == len(expected)
    for i, want in enumerate(expected):
        got = module.get_output(i).numpy()
        assert got.shape == want.shape
        error = np.abs(got - want).max() / np.abs(want).max()
        assert error <= 1e-4, (model.graph.output[i].name, error)


def _conv_then(op, attrs, opset, slope=False):
    """Conv -> the activation -> Mul by 2: one kernel, the activation and the
    Mul in the conv's epilogue."""
    inits = {"w": rand(4, 3, 3, 3, seed=5), "b": rand(4, seed=6), "two": np.float32(2)}
    inputs = ["c"]
    if slope:
        inits["slope"] = rand(4, 1, 1, seed=7)
        inputs.append("slope")
    return make_model(
        [
            node("Conv", ["x", "w", "b"], ["c"], "conv", pads=[1, 1, 1, 1]),
            node(op, inputs, ["a"], "act", **attrs),
            node("Mul", ["a", "two"], ["y"], "mul"),
        ],
        {"x": (1, 3, 7, 9)},
        ["y"],
        inits,
        opset,
    )


def _compiled_matches_onnxruntime(model, feeds, cache, kernels):
    from ember.compiler.model import compile_model
    from ember.runtime import GraphModule, cpu

    (want,) = ort_session(model).run(None, feeds)
    compiled = compile_model(model, cache=cache)
    assert compiled.compile_stats.kernels == kernels
    module = GraphModule(compiled["default"](cpu()))
    for name, value in feeds.items():
        module.set_input(name, value)
    module.run()
    np.testing.assert_allclose(module.get_output(0).numpy(), want, rtol=1e-5, atol=1e-5)


@pytest.mark.parametrize("op, attrs, opset, graph_op", ACTIVATIONS, ids=ACTIVATION_IDS)
def test_compiled_activations_match_onnxruntime(
    op, attrs, opset, graph_op, kernel_cache
):
    """Each activation alone then fused with a Sub (one injective kernel), and
    in a conv's epilogue (one kernel)."""
    alone = make_model(
        [node(op, ["x"], ["a"], "act", **attrs), node("Sub", ["a", "x"], ["y"], "sub")],
        {"x": (3, 67)},
        ["y"],
        opset=opset,
    )
    feeds = {"x": activation_input(3, 67, seed=8)}
    _compiled_matches_onnxruntime(alone, feeds, kernel_cache, kernels=1)
    fused = _conv_then(op, attrs, opset)
    feeds = {"x": activation_input(1, 3, 7, 9, seed=9)}
    _compiled_matches_onnxruntime(fused, feeds, kernel_cache, kernels=1)


def test_compiled_prelu_per_channel_matches_onnxruntime(kernel_cache):
    fused = _conv_then("PRelu", {}, 17, slope=True)
    feeds = {"x": activation_input(1, 3, 7, 9, seed=10)}
    _compiled_matches_onnxruntime(fused, feeds, kernel_cache, kernels=1)
    alone = make_model(
        [node("PRelu", ["x", "slope"])],
        {"x": (2, 4, 3, 5)},
        ["y"],
        {"slope": rand(4, 1, 1, seed=11)},
    )
    feeds = {"x": activation_input(2, 4, 3, 5, seed=12)}
    _compiled_matches_onnxruntime(alone, feeds, kernel_cache, kernels=1)


@pytest.mark.parametrize("axis, shape", [(-1, (3, 40)), (1, (2, 5, 7)), (0, (6, 3))])
def test_log_softmax(axis, shape, kernel_cache):
    """Imported (the reference) and compiled, against onnxruntime: rows with
    large values that a log of softmax would underflow to -inf. Like softmax,
    a group of its own (the Neg after it is a second kernel)."""
    model = make_model([node("LogSoftmax", ["x"], axis=axis)], {"x": shape}, ["y"])
    x = activation_input(*shape, seed=13) * 10
    check(model, ["graph.log_softmax"], feeds={"x": x})
    _compiled_matches_onnxruntime(model, {"x": x}, kernel_cache, kernels=1)
    fused = make_model(
        [
            node("LogSoftmax", ["x"], ["a"], "log_softmax", axis=axis),
            node("Neg", ["a"], ["y"], "neg"),
        ],
        {"x": shape},
        ["y"],
    )
    _compiled_matches_onnxruntime(fused, {"x": x}, kernel_cache, kernels=2)
