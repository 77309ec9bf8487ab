"""Blocked activations between convolutions, (N, C/b, H, W, b): the kernels
that read and write them match numpy, the plan keeps them only where every
reader takes them, and random chains of convolutions (strides, padding,
depthwise, residuals, odd channel counts) give onnxruntime's result."""

import numpy as np
import onnx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from onnx import helper, numpy_helper
from test_topi_conv import conv_reference

import ember
from ember import runtime as rt
from ember import te, topi
from ember.backends.llvm import Target
from ember.compiler.model import lower_to_te
from ember.dialects import graph
from ember.runtime.errors import EmberValueError
from ember.topi.conv2d import channel_block

ort = pytest.importorskip("onnxruntime")


def to_blocks(x: np.ndarray, b: int) -> np.ndarray:
    n, c, h, w = x.shape
    return np.ascontiguousarray(x.reshape(n, c // b, b, h, w).transpose(0, 1, 3, 4, 2))


def from_blocks(x: np.ndarray) -> np.ndarray:
    n, cb, h, w, b = x.shape
    return x.transpose(0, 1, 4, 2, 3).reshape(n, cb * b, h, w)


@pytest.mark.parametrize(
    "c, o, k, stride, pad, groups",
    [
        (16, 32, 1, 1, 0, 1),  # read as it is
        (24, 16, 3, 1, 1, 1),  # blocks of 8, padded
        (32, 24, 1, 2, 0, 1),  # strided 1x1, O padded inside
        (48, 48, 3, 2, 1, 48),  # depthwise
        (48, 48, 3, 1, 1, 6),  # grouped, two groups a vector
        (64, 64, 3, 2, 1, 2),  # grouped, a vector inside a group
    ],
)
def test_kernels_read_and_write_blocks(c, o, k, stride, pad, groups):
    target = Target.current()
    rng = np.random.default_rng(c + o + k)
    bi, bo = channel_block(c, target), channel_block(o, target)
    x = rng.uniform(-1, 1, (1, c, 9, 9)).astype(np.float32)
    w = rng.uniform(-1, 1, (o, c // groups, k, k)).astype(np.float32)
    xt = te.placeholder((1, c // bi, 9, 9, bi), name="x")
    kern = topi.conv2d(
        xt,
        w.shape,
        strides=stride,
        padding=pad,
        groups=groups,
        data_block=bi,
        out_block=bo,
        name="conv",
    )
    mod = ember.build(kern.schedule(), kern.args, name="conv")
    y = np.full(kern.output.shape, np.nan, np.float32)
    mod(to_blocks(x, bi), kern.transform("conv.weight", w), y)
    expected = conv_reference(x, w, (stride,) * 2, (pad,) * 4, (1, 1), groups)
    np.testing.assert_allclose(from_blocks(y), expected, rtol=1e-4, atol=1e-4)


def test_a_block_the_kernel_does_not_use_is_refused():
    x = te.placeholder((1, 2, 5, 5, 12), name="x")
    with pytest.raises(EmberValueError, match="takes no channel block 12"):
        topi.conv2d(x, (8, 24, 1, 1), data_block=12)
    x = te.placeholder((1, 8, 5, 5), name="x")
    with pytest.raises(EmberValueError, match="takes no channel block"):
        # groups of one output channel: the direct kernel
        topi.conv2d(x, (4, 2, 3, 3), groups=4, out_block=4)


def _model(layers, seed=0):
    """A chain of Conv (+Relu) nodes on a 1xCxHxW input; a layer may add the
    input of the layer before it (a residual) when the shapes agree."""
    rng = np.random.default_rng(seed)
    nodes, inits, shapes = [], [], {}
    c, h = layers[0]["c_in"], 11
    x = "x"
    shapes[x] = (c, h)
    for i, layer in enumerate(layers):
        o, k, s, dw = layer["o"], layer["k"], layer["stride"], layer["dw"]
        groups = c if dw else 1
        o = c if dw else o
        w = (rng.standard_normal((o, c // groups, k, k)) * 0.3).astype(np.float32)
        inits += [numpy_helper.from_array(w, f"w{i}")]
        inits += [numpy_helper.from_array(rng.standard_normal(o).astype("f"), f"b{i}")]
        out = f"c{i}"
        nodes.append(
            helper.make_node(
                "Conv",
                [x, f"w{i}", f"b{i}"],
                [out],
                pads=[k // 2] * 4,
                strides=[s, s],
                group=groups,
            )
        )
        h = (h + 2 * (k // 2) - k) // s + 1
        if layer["residual"] and shapes[x] == (o, h):
            nodes.append(helper.make_node("Add", [out, x], [f"a{i}"]))
            out = f"a{i}"
        if layer["relu"]:
            nodes.append(helper.make_node("Relu", [out], [f"r{i}"]))
            out = f"r{i}"
        pool = layer.get("pool")
        if pool == "max" or (pool == "avg" and h >= 2):
            kind = "MaxPool" if pool == "max" else "AveragePool"
            more = (
                {"kernel_shape": [3, 3], "pads": [1] * 4}
                if pool == "max"
                else {"kernel_shape": [2, 2], "ceil_mode": 1}
            )
            nodes.append(
                helper.make_node(kind, [out], [f"p{i}"], strides=[2, 2], **more)
            )
            out = f"p{i}"
            h = (h - 1) // 2 + 1 if pool == "max" else -(-(h - 2) // 2) + 1
        x, c = out, o
        shapes[x] = (c, h)
    graph_ = helper.make_graph(
        nodes,
        "chain",
        [
            helper.make_tensor_value_info(
                "x", onnx.TensorProto.FLOAT, [1, layers[0]["c_in"], 11, 11]
            )
        ],
        [helper.make_tensor_value_info(x, onnx.TensorProto.FLOAT, [1, c, h, h])],
        inits,
    )
    model = helper.make_model(graph_, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    return model


def _onnx(nodes, inits, name: str, x_shape: list, y_shape: list) -> onnx.ModelProto:
    """An opset-17 model of `nodes` from input "x" to output "y"."""
    graph_ = helper.make_graph(
        nodes,
        name,
        [helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT, x_shape)],
        [helper.make_tensor_value_info("y", onnx.TensorProto.FLOAT, y_shape)],
        inits,
    )
    model = helper.make_model(graph_, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    return model


def _check(model):
    x = (
        np.random.default_rng(3)
        .standard_normal(
            [d.dim_value for d in model.graph.input[0].type.tensor_type.shape.dim]
        )
        .astype(np.float32)
    )
    session = ort.InferenceSession(
        model.SerializeToString(), providers=["CPUExecutionProvider"]
    )
    expected = session.run(None, {"x": x})[0]
    mod = ember.compile_model(model, tuning_records=False)
    got = rt.GraphModule(mod["default"](rt.cpu()))(x=x)[0]
    # Winograd F(4, 3) rounds within a few ulps of the outputs' scale: in
    # chains whose values grow to tens, a small output among them is off by
    # more than 1e-4 of itself
    scale = max(1.0, float(np.abs(expected).max()))
    np.testing.assert_allclose(got, expected, rtol=1e-4, atol=1e-5 * scale)


def _blocked(model) -> int:
    module, _ = lower_to_te(model)
    return sum(
        op.result.type.get_num_dims() == 5
        for op in module.walk()
        if isinstance(op, graph.CallKernelOp)
    )


LAYER = st.fixed_dictionaries(
    {
        "o": st.sampled_from([8, 12, 16, 24, 32]),
        "k": st.sampled_from([1, 3]),
        "stride": st.sampled_from([1, 1, 2]),
        "dw": st.booleans(),
        "relu": st.booleans(),
        "residual": st.booleans(),
        "pool": st.sampled_from([None, None, "max", "avg"]),
    }
)


@settings(max_examples=4, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.sampled_from([8, 16, 24]), st.lists(LAYER, min_size=2, max_size=4))
def test_random_chains_of_convolutions_match_onnxruntime(c_in, layers):
    layers[0]["c_in"] = c_in
    _check(_model(layers))


def test_the_plan_blocks_values_between_convolutions_only():
    layers = [
        {"c_in": 16, "o": 32, "k": 1, "stride": 1, "dw": False, "relu": True},
        {"o": 32, "k": 3, "stride": 1, "dw": True, "relu": True, "residual": True},
        {"o": 16, "k": 1, "stride": 1, "dw": False, "relu": False},
    ]
    for layer in layers:
        layer.setdefault("residual", False)
    model = _model(layers)
    # the two results convolutions read are blocked; the returned one is not
    assert _blocked(model) == 2
    _check(model)
    # 12 channels: blocks of 4 leave vectors too narrow, NCHW stays
    narrow = [dict(layers[0], o=12), dict(layers[2])]
    assert _blocked(_model(narrow)) == 0
    _check(_model(narrow))


def test_poolings_between_convolutions_keep_the_blocks():
    # conv -> max pool -> conv -> concat -> avg pool (ceil) -> conv -> global
    # average: every pooling between convolutions reads and writes blocks, as
    # does the concatenation of two convolutions; the global one sums them
    rng = np.random.default_rng(5)

    def conv(name, x, c, o, k=1):
        w = (rng.standard_normal((o, c, k, k)) * 0.3).astype(np.float32)
        inits.append(numpy_helper.from_array(w, f"{name}.w"))
        nodes.append(
            helper.make_node("Conv", [x, f"{name}.w"], [name], pads=[k // 2] * 4)
        )
        nodes.append(helper.make_node("Relu", [name], [f"{name}.r"]))
        return f"{name}.r"

    nodes, inits = [], []
    a = conv("a", "x", 8, 16, 3)
    nodes.append(
        helper.make_node(
            "MaxPool", [a], ["p1"], kernel_shape=[3, 3], strides=[2, 2], pads=[1] * 4
        )
    )
    b, c = conv("b", "p1", 16, 16), conv("c", "p1", 16, 16, 3)
    nodes.append(helper.make_node("Concat", [b, c], ["cat"], axis=1))
    nodes.append(
        helper.make_node(
            "AveragePool", ["cat"], ["p2"], kernel_shape=[2, 2], strides=[2, 2],
            ceil_mode=1,
        )
    )  # fmt: skip
    d = conv("d", "p2", 32, 32)
    nodes.append(helper.make_node("GlobalAveragePool", [d], ["y"]))
    model = _onnx(nodes, inits, "pools", [1, 8, 11, 11], [1, 32, 1, 1])
    _check(model)
    # all but the global pooling's result, which is returned: the
    # concatenation joins b's and c's blocks along its blocks of channels
    assert _blocked(model) == 7


@pytest.mark.parametrize("gate", ["Sigmoid", "HardSigmoid"])
def test_squeeze_and_excitation_stays_blocked(gate):
    # the multiply by a (1, C, 1, 1) gate reads it blocked, (1, C/b, 1, 1, b),
    # broadcast over the blocked activation: no kernel of the block is NCHW
    rng = np.random.default_rng(7)
    inits = [
        numpy_helper.from_array((rng.standard_normal(s) * 0.3).astype(np.float32), n)
        for n, s in [
            ("w1", (32, 16, 3, 3)),
            ("ws", (8, 32, 1, 1)),
            ("we", (32, 8, 1, 1)),
            ("w2", (24, 32, 1, 1)),
        ]
    ]
    nodes = [
        helper.make_node("Conv", ["x", "w1"], ["c1"], pads=[1] * 4),
        helper.make_node("Relu", ["c1"], ["a"]),
        helper.make_node("GlobalAveragePool", ["a"], ["p"]),
        helper.make_node("Conv", ["p", "ws"], ["s"]),
        helper.make_node("Relu", ["s"], ["sr"]),
        helper.make_node("Conv", ["sr", "we"], ["e"]),
        helper.make_node(gate, ["e"], ["g"]),
        helper.make_node("Mul", ["a", "g"], ["m"]),
        helper.make_node("Conv", ["m", "w2"], ["y"]),
    ]
    model = _onnx(nodes, inits, "se", [1, 16, 9, 9], [1, 24, 9, 9])
    _check(model)
    # the convolution, the pooling, both gate convolutions and the multiply
    assert _blocked(model) == 5


@pytest.mark.parametrize(
    "c, width, stride",
    [
        (48, 8, 1),  # RegNetY: two groups a vector of output channels
        (104, 8, 2),  # blocks of 8, spans of 16: the last span padded
        (64, 32, 1),  # a vector inside one group
        (32, 4, 2),
    ],
)
def test_grouped_convolutions_read_and_write_blocks(c, width, stride):
    rng = np.random.default_rng(c + width)
    inits = [
        numpy_helper.from_array((rng.standard_normal(s) * 0.3).astype(np.float32), n)
        for n, s in [
            ("w1", (c, 16, 1, 1)),
            ("wg", (c, width, 3, 3)),
            ("bg", (c,)),
            ("w2", (16, c, 1, 1)),
        ]
    ]
    nodes = [
        helper.make_node("Conv", ["x", "w1"], ["a"]),
        helper.make_node(
            "Conv",
            ["a", "wg", "bg"],
            ["g"],
            pads=[1] * 4,
            strides=[stride] * 2,
            group=c // width,
        ),  # fmt: skip
        helper.make_node("Relu", ["g"], ["r"]),
        helper.make_node("Conv", ["r", "w2"], ["y"]),
    ]
    h = (9 - 1) // stride + 1
    model = _onnx(nodes, inits, "grouped", [1, 16, 9, 9], [1, 16, h, h])
    _check(model)
    assert _blocked(model) == 2  # the grouped convolution's data and result


@pytest.mark.parametrize(
    "axis, widths", [(1, (16, 32)), (-3, (16, 16, 16)), (1, (8, 24))]
)
def test_concatenations_of_blocks(axis, widths):
    # a fire module: convolutions concatenated along channels, then read by a
    # convolution; joined blocked where every part is blocked alike (8 and 24
    # channels: blocks of 8 and 8, but 32 channels read as blocks of 16: NCHW)
    rng = np.random.default_rng(len(widths))
    inits, nodes, parts = [], [], []
    for i, o in enumerate(widths):
        w = (rng.standard_normal((o, 16, 3, 3)) * 0.3).astype(np.float32)
        inits.append(numpy_helper.from_array(w, f"w{i}"))
        nodes.append(helper.make_node("Conv", ["x", f"w{i}"], [f"c{i}"], pads=[1] * 4))
        parts.append(f"c{i}")
    total = sum(widths)
    w = (rng.standard_normal((16, total, 1, 1)) * 0.3).astype(np.float32)
    inits.append(numpy_helper.from_array(w, "wy"))
    nodes += [
        helper.make_node("Concat", parts, ["cat"], axis=axis),
        helper.make_node("Conv", ["cat", "wy"], ["y"]),
    ]
    model = _onnx(nodes, inits, "fire", [1, 16, 7, 7], [1, 16, 7, 7])
    _check(model)
    blocked = len(widths) + 1 if widths != (8, 24) else 0
    assert _blocked(model) == blocked
