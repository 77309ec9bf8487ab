"""1-D and 3-D Conv, ConvTranspose and pooling against onnxruntime: 3-D Conv
as graph.conv2d over the kernel's depth taps (im2col for a weight computed
at run time), 3-D ConvTranspose as graph.conv2d_transpose per depth tap
placed by a depth matrix, 3-D pools as separable 2-D pools, the global pools
as reductions over every spatial axis; and the refusals. Each model holds
several nodes reading one input, so one compile checks many attribute
sets."""

import numpy as np
import onnx
import pytest
from onnx import helper, numpy_helper

import ember
from ember import runtime as rt
from ember.runtime.errors import EmberError

ort = pytest.importorskip("onnxruntime")

RNG = np.random.default_rng(14)


def rand(*shape):
    return RNG.standard_normal(shape).astype(np.float32)


def model_of(nodes, feeds, consts, opset=19):
    """One model of `nodes` (op, inputs, attributes) reading `feeds` and
    `consts`; node i writes output y{i}."""
    graph = helper.make_graph(
        [
            helper.make_node(op, inputs, [f"y{i}"], **attrs)
            for i, (op, inputs, attrs) in enumerate(nodes)
        ],
        "volumes",
        [helper.make_tensor_value_info(n, 1, v.shape) for n, v in feeds.items()],
        [onnx.ValueInfoProto(name=f"y{i}") for i in range(len(nodes))],
        [numpy_helper.from_array(v, n) for n, v in consts.items()],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 9
    model = onnx.shape_inference.infer_shapes(model, strict_mode=True)
    del model.graph.output[:]
    model.graph.output.extend(
        v for v in model.graph.value_info if v.name.startswith("y")
    )
    return model


def check_all(model, feeds, tolerance=1e-4):
    session = ort.InferenceSession(
        model.SerializeToString(), providers=["CPUExecutionProvider"]
    )
    expected = session.run(None, feeds)
    gm = rt.GraphModule(ember.compile_model(model)["default"](rt.cpu()))
    got = gm(**feeds)
    got = got if isinstance(got, list | tuple) else [got]
    assert len(got) == len(expected)
    for i, (g, e) in enumerate(zip(got, expected, strict=True)):
        g = np.asarray(g)
        assert g.shape == e.shape, f"output {i}"
        np.testing.assert_allclose(
            g, e, rtol=tolerance, atol=tolerance, err_msg=f"output {i}"
        )


CONVS = [
    # (weight shape, has bias, attributes)
    ((6, 4, 3, 3, 3), True, {"pads": [1, 1, 1, 1, 1, 1]}),
    (
        (6, 2, 3, 2, 3),
        True,
        {
            "group": 2,
            "strides": [2, 1, 2],
            "dilations": [2, 1, 1],
            "pads": [1, 0, 2, 0, 1, 1],
        },
    ),
    ((8, 4, 2, 3, 3), False, {"auto_pad": "SAME_UPPER", "strides": [2, 2, 1]}),
    ((4, 1, 3, 3, 1), True, {"auto_pad": "SAME_LOWER", "group": 4}),
    ((5, 4, 1, 2, 2), False, {"auto_pad": "VALID", "strides": [1, 2, 2]}),
    ((3, 4, 4, 1, 1), False, {"dilations": [2, 1, 1], "pads": [3, 0, 0, 0, 0, 0]}),
]


def test_conv_3d_with_groups_strides_dilations_and_padding():
    x = rand(2, 4, 7, 6, 5)
    nodes, consts = [], {}
    for i, (shape, bias, attrs) in enumerate(CONVS):
        consts[f"w{i}"] = rand(*shape)
        inputs = ["x", f"w{i}"]
        if bias:
            consts[f"b{i}"] = rand(shape[0])
            inputs.append(f"b{i}")
        nodes.append(("Conv", inputs, attrs))
    check_all(model_of(nodes, {"x": x}, consts), {"x": x})


def test_run_time_weights_and_1d_output_shape():
    x, w, w1 = rand(1, 4, 5, 6, 4), rand(4, 2, 2, 2, 2), rand(3, 4, 3)
    nodes = [
        (
            "Conv",
            ["x", "w", "b"],
            {"group": 2, "strides": [2, 2, 1], "auto_pad": "SAME_UPPER"},
        ),
        ("Conv", ["x1", "w1"], {"dilations": [2], "pads": [2, 1]}),
        (
            "ConvTranspose",
            ["x", "wt"],
            {"strides": [2, 1, 2], "pads": [1, 0, 0, 0, 1, 1]},
        ),
        # output_shape an odd total padding short: the larger half first
        ("ConvTranspose", ["x1", "w1t"], {"strides": [2], "output_shape": [18]}),
    ]
    feeds = {"x": x, "w": w, "x1": rand(2, 4, 9), "w1": w1, "wt": rand(4, 2, 3, 2, 2)}
    check_all(model_of(nodes, feeds, {"b": rand(4), "w1t": rand(4, 3, 3)}), feeds)


CONV_TRANSPOSES = [
    # (weight shape, has bias, attributes)
    ((4, 3, 3, 3, 3), True, {}),
    (
        (4, 3, 3, 2, 3),
        True,
        {
            "group": 2,
            "strides": [2, 1, 2],
            "dilations": [2, 1, 1],
            "pads": [1, 0, 2, 0, 1, 1],
            "output_padding": [1, 0, 1],
        },
    ),
    ((4, 2, 2, 3, 3), False, {"strides": [3, 2, 2], "output_shape": [10, 11, 6]}),
    ((4, 2, 3, 3, 1), True, {"strides": [2, 2, 1], "auto_pad": "SAME_LOWER"}),
    ((4, 5, 1, 2, 2), False, {"strides": [1, 2, 2], "pads": [0, 1, 0, 0, 0, 1]}),
]


def test_conv_transpose_3d_with_groups_strides_dilations_and_padding():
    x = rand(2, 4, 4, 5, 3)
    nodes, consts = [], {}
    for i, (shape, bias, attrs) in enumerate(CONV_TRANSPOSES):
        consts[f"w{i}"] = rand(*shape)
        inputs = ["x", f"w{i}"]
        if bias:
            consts[f"b{i}"] = rand(shape[1] * attrs.get("group", 1))
            inputs.append(f"b{i}")
        nodes.append(("ConvTranspose", inputs, attrs))
    check_all(model_of(nodes, {"x": x}, consts), {"x": x})


POOLS = [
    ("MaxPool", {"kernel_shape": [2, 3, 2], "pads": [1, 1, 0, 0, 1, 1]}),
    (
        "MaxPool",
        {"kernel_shape": [3, 2, 2], "strides": [2, 2, 1], "dilations": [1, 2, 1]},
    ),
    ("MaxPool", {"kernel_shape": [2, 2, 3], "strides": [2, 2, 2], "ceil_mode": 1}),
    (
        "AveragePool",
        {"kernel_shape": [3, 3, 2], "pads": [1, 1, 1, 1, 0, 1], "strides": [2, 1, 2]},
    ),
    (
        "AveragePool",
        {
            "kernel_shape": [3, 2, 3],
            "pads": [1, 0, 1, 1, 1, 0],
            "strides": [2, 2, 2],
            "count_include_pad": 1,
            "ceil_mode": 1,
        },
    ),
    ("AveragePool", {"kernel_shape": [2, 2, 2], "auto_pad": "SAME_UPPER"}),
    ("LpPool", {"kernel_shape": [2, 3, 2], "pads": [1, 1, 0, 0, 0, 1], "p": 2}),
    ("LpPool", {"kernel_shape": [3, 2, 2], "strides": [2, 1, 2], "p": 3}),
    ("GlobalAveragePool", {}),
    ("GlobalMaxPool", {}),
]


def test_pools_3d_and_global_pools_1d_and_3d():
    x, x1 = rand(2, 3, 7, 6, 5), rand(2, 3, 9)
    nodes = [(op, ["x"], attrs) for op, attrs in POOLS]
    nodes += [
        ("GlobalAveragePool", ["x1"], {}),
        ("GlobalMaxPool", ["x1"], {}),
        ("MaxPool", ["x1"], {"kernel_shape": [3], "strides": [2], "pads": [1, 1]}),
        ("AveragePool", ["x1"], {"kernel_shape": [4], "ceil_mode": 1, "strides": [3]}),
        ("LpPool", ["x1"], {"kernel_shape": [3], "pads": [1, 2], "p": 2}),
    ]
    feeds = {"x": x, "x1": x1}
    check_all(model_of(nodes, feeds, {}), feeds)


@pytest.mark.parametrize(
    ("op", "attrs", "outputs", "message"),
    [
        (
            "Conv",
            {"kernel_shape": [1, 1, 1, 1]},
            [(1, 2, 4, 4, 4, 4)],
            r"Conv \(kernel_shape=\[1, 1, 1, 1\] \(only 1-D, 2-D and 3-D\)\)",
        ),
        (
            "MaxPool",
            {"kernel_shape": [2, 2, 2]},
            [(1, 2, 3, 3, 3), (1, 2, 3, 3, 3)],
            "expected no Indices output, got one",
        ),
        (
            "LpPool",
            {"kernel_shape": [2, 2, 2], "ceil_mode": 1},
            [(1, 2, 3, 3, 3)],
            r"LpPool \(ceil_mode=1\)",
        ),
    ],
)
def test_refusals(op, attrs, outputs, message):
    conv = op == "Conv"
    node = helper.make_node(
        op,
        ["x", "w"] if conv else ["x"],
        [f"y{i}" for i in range(len(outputs))],
        **attrs,
    )
    graph = helper.make_graph(
        [node],
        "refused",
        [helper.make_tensor_value_info("x", 1, (1, 2, 4, 4, 4, 4)[: 6 if conv else 5])],
        [
            helper.make_tensor_value_info(f"y{i}", 1 if i == 0 else 7, shape)
            for i, shape in enumerate(outputs)
        ],
        [numpy_helper.from_array(rand(2, 2, 1, 1, 1, 1), "w")] if conv else [],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 19)])
    with pytest.raises(EmberError, match=message):
        ember.compile_model(model)
