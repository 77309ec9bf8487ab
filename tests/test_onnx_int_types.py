"""int16 and unsigned integer tensors (uint8, uint16, uint32, uint64) through
the whole model path, and the bitwise ops (BitwiseAnd, BitwiseOr, BitwiseXor,
BitwiseNot, BitShift), against onnxruntime, or numpy where onnxruntime has no
kernel for the type. Operands reach above the signed range (uint8 200 / 3,
uint32 comparisons past 2**31, uint64 shifts of the top bit), where a signed
instruction would give another answer. One model per type holds every op, so
each type compiles once."""

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

import ember
from ember.frontends.onnx import OnnxImportError, UnsupportedOperatorError, from_onnx
from ember.runtime import cpu
from ember.runtime.graph_module import GraphModule

ort = pytest.importorskip("onnxruntime")

N = 12
TYPES = {
    "int16": TensorProto.INT16,
    "uint8": TensorProto.UINT8,
    "uint16": TensorProto.UINT16,
    "uint32": TensorProto.UINT32,
    "uint64": TensorProto.UINT64,
    "int8": TensorProto.INT8,
    "int32": TensorProto.INT32,
    "int64": TensorProto.INT64,
    "float16": TensorProto.FLOAT16,
    "float32": TensorProto.FLOAT,
    "float64": TensorProto.DOUBLE,
    "bool": TensorProto.BOOL,
}
BINARY = ["Add", "Sub", "Mul", "Div", "Mod", "Equal", "Greater", "Less"]
BINARY += ["GreaterOrEqual", "LessOrEqual", "BitwiseAnd", "BitwiseOr", "BitwiseXor"]
NO_ORT_KERNEL = {("Max", "int16"), ("Min", "int16"), ("Max", "uint16")}
NO_ORT_KERNEL |= {("Min", "uint16"), ("LEFT", "uint16"), ("RIGHT", "uint16")}
BOOL_RESULTS = ("Equal", "Greater", "Less", "GreaterOrEqual", "LessOrEqual")


def _graph_model(nodes, inputs, outputs, opset=18):
    graph = helper.make_graph(
        nodes,
        "ints",
        [helper.make_tensor_value_info(n, TYPES[t], s) for n, (s, t) in inputs.items()],
        [
            helper.make_tensor_value_info(n, TYPES[t], s)
            for n, (s, t) in outputs.items()
        ],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    return model


def _operands(dtype):
    """a spans the type, its top half for unsigned ones (200 for uint8); b is
    positive (no division by zero) with values past the signed range too."""
    info = np.iinfo(dtype)
    rng = np.random.default_rng(1)
    low = info.min if info.min else info.max // 2
    a = rng.integers(low, info.max, N, dtype=dtype, endpoint=True)
    a[:4] = [info.max, info.max // 2 + 1, 200 if info.max >= 255 else -200, 3]
    b = rng.integers(1, 9, N, dtype=dtype)
    b[:4] = [3, 3, 3, info.max // 2 + 7]
    shift = (np.arange(N) % (info.bits - 1) + 1).astype(dtype)
    return {"a": a, "b": b, "s": shift}


def _ops(dtype):
    """(output name, node) for every op of the type's model."""
    ops = [(op, helper.make_node(op, ["a", "b"], [op])) for op in BINARY]
    ops += [(m, helper.make_node(m, ["a", "b"], [m])) for m in ("Max", "Min")]
    ops.append(("BitwiseNot", helper.make_node("BitwiseNot", ["a"], ["BitwiseNot"])))
    ops.append(("ToFloat", helper.make_node("Cast", ["a"], ["ToFloat"], to=1)))
    if dtype.startswith("uint"):
        for d in ("LEFT", "RIGHT"):
            ops.append((d, helper.make_node("BitShift", ["a", "s"], [d], direction=d)))
    return ops


def _out_type(name, dtype):
    if name in BOOL_RESULTS:
        return "bool"
    return "float32" if name == "ToFloat" else dtype


def _numpy(name, a, b, s):
    """ONNX's definition where onnxruntime has no kernel."""
    if name in ("Max", "Min"):
        return (np.maximum if name == "Max" else np.minimum)(a, b)
    return np.left_shift(a, s) if name == "LEFT" else np.right_shift(a, s)


@pytest.fixture(scope="module", params=["int16", "uint8", "uint16", "uint32", "uint64"])
def compiled(request):
    """(dtype, feeds, {output: ember's result}, {output: expected})."""
    dtype = request.param
    ops = _ops(dtype)
    feeds = _operands(dtype)
    inputs = {n: ((N,), dtype) for n in feeds}
    outputs = {name: ((N,), _out_type(name, dtype)) for name, _ in ops}
    model = _graph_model([n for _, n in ops], inputs, outputs)
    gm = GraphModule(ember.compile_model(model)["default"](cpu()))
    gm.run(**feeds)
    got = {name: gm.get_output(i).numpy() for i, name in enumerate(outputs)}
    expected = {}
    for name, n in ops:
        if (name, dtype) in NO_ORT_KERNEL:
            expected[name] = _numpy(name, **feeds)
            continue
        one = _graph_model(
            [n],
            {k: v for k, v in inputs.items() if k in n.input},
            {name: outputs[name]},
        )
        session = ort.InferenceSession(
            one.SerializeToString(), providers=["CPUExecutionProvider"]
        )
        expected[name] = session.run(None, {k: feeds[k] for k in n.input})[0]
    return dtype, feeds, got, expected


@pytest.mark.parametrize("op", [*BINARY, "Max", "Min", "BitwiseNot", "ToFloat"])
def test_ops_match_onnxruntime(compiled, op):
    dtype, _, got, expected = compiled
    assert got[op].dtype == expected[op].dtype, op
    np.testing.assert_array_equal(got[op], expected[op], err_msg=f"{op} {dtype}")


@pytest.mark.parametrize("direction", ["LEFT", "RIGHT"])
def test_unsigned_shifts(compiled, direction):
    dtype, feeds, got, expected = compiled
    if not dtype.startswith("uint"):
        pytest.skip("BitShift takes signed integers from opset 28 (tested below)")
    np.testing.assert_array_equal(got[direction], expected[direction])
    if direction == "RIGHT":  # logical: the top bit shifts in as 0
        assert got["RIGHT"][0] == np.iinfo(dtype).max >> int(feeds["s"][0])


def test_unsigned_edge_values():
    """The cases a signed instruction gets wrong, spelled out."""
    a = np.array([200, 255, 129], np.uint8)
    b = np.array([3, 2, 128], np.uint8)
    nodes = [helper.make_node(op, ["a", "b"], [op]) for op in ("Div", "Mod", "Max")]
    nodes.append(helper.make_node("Greater", ["a", "b"], ["Greater"]))
    outputs = {"Div": "uint8", "Mod": "uint8", "Max": "uint8", "Greater": "bool"}
    model = _graph_model(
        nodes,
        {"a": ((3,), "uint8"), "b": ((3,), "uint8")},
        {k: ((3,), t) for k, t in outputs.items()},
    )
    gm = GraphModule(ember.compile_model(model)["default"](cpu()))
    gm.run(a=a, b=b)
    div, mod, top, greater = (gm.get_output(i).numpy() for i in range(4))
    np.testing.assert_array_equal(div, [66, 127, 1])
    np.testing.assert_array_equal(mod, [2, 1, 1])
    np.testing.assert_array_equal(top, [200, 255, 129])
    np.testing.assert_array_equal(greater, [True, True, True])


def test_signed_shifts_follow_onnx_28():
    """BitShift on signed integers (opset 28): arithmetic right shifts, and a
    shift outside [0, bits) gives the sign fill (-1 or 0); onnxruntime has no
    kernel, numpy the definition."""
    x = np.array([-128, -7, 64, 5, -1, 3, -128, 100], np.int8)
    y = np.array([1, 2, 1, 8, 9, -1, 7, 3], np.int8)
    nodes = [
        helper.make_node("BitShift", ["x", "y"], [d], direction=d)
        for d in ("LEFT", "RIGHT")
    ]
    model = _graph_model(
        nodes,
        {"x": ((8,), "int8"), "y": ((8,), "int8")},
        {"LEFT": ((8,), "int8"), "RIGHT": ((8,), "int8")},
        opset=28,
    )
    gm = GraphModule(ember.compile_model(model)["default"](cpu()))
    gm.run(x=x, y=y)
    left, right = gm.get_output(0).numpy(), gm.get_output(1).numpy()
    np.testing.assert_array_equal(left, [0, -28, -128, 0, 0, 0, 0, 32])
    np.testing.assert_array_equal(right, [-64, -2, 32, 0, -1, 0, -1, 12])


def test_a_fused_unsigned_chain_past_the_signed_range():
    """Not among the conformance cases: uint32 values past 2**31 through a
    fused group (a division, a comparison, a bitwise op, where, a cast to
    float), and uint8 max pooling with padding."""
    a = np.array([3_000_000_000, 2**32 - 1, 7, 2**31], np.uint32)
    b = np.array([2, 2**31, 3, 2**31 - 1], np.uint32)
    nodes = [
        helper.make_node("Div", ["a", "b"], ["q"]),
        helper.make_node("Greater", ["a", "b"], ["m"]),
        helper.make_node("BitwiseXor", ["a", "q"], ["x"]),
        helper.make_node("Where", ["m", "x", "b"], ["w"]),
        helper.make_node("Cast", ["w"], ["y"], to=1),
        helper.make_node(
            "MaxPool", ["p"], ["z"], kernel_shape=[2, 2], pads=[1, 1, 1, 1]
        ),
    ]
    model = _graph_model(
        nodes,
        {"a": ((4,), "uint32"), "b": ((4,), "uint32"), "p": ((1, 1, 3, 3), "uint8")},
        {"y": ((4,), "float32"), "z": ((1, 1, 4, 4), "uint8")},
    )
    p = np.array([200, 1, 255, 3, 128, 0, 9, 250, 17], np.uint8).reshape(1, 1, 3, 3)
    feeds = {"a": a, "b": b, "p": p}
    session = ort.InferenceSession(
        model.SerializeToString(), providers=["CPUExecutionProvider"]
    )
    expected = session.run(None, feeds)
    gm = GraphModule(ember.compile_model(model)["default"](cpu()))
    gm.run(**feeds)
    for i, e in enumerate(expected):
        got = gm.get_output(i).numpy()
        assert got.dtype == e.dtype
        np.testing.assert_array_equal(got, e)


def test_an_unknown_shift_direction_is_refused():
    node = helper.make_node("BitShift", ["a", "b"], ["y"], direction="UP")
    graph = helper.make_graph(
        [node],
        "shift",
        [helper.make_tensor_value_info(n, TensorProto.UINT8, [4]) for n in "ab"],
        [helper.make_tensor_value_info("y", TensorProto.UINT8, [4])],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])
    with pytest.raises(UnsupportedOperatorError) as info:
        from_onnx(model)
    assert info.value.unsupported == {"BitShift (direction='UP')": ["#0 (output 'y')"]}


def test_bitwise_ops_on_floats_are_refused():
    node = helper.make_node("BitwiseAnd", ["a", "b"], ["y"])
    graph = helper.make_graph(
        [node],
        "bits",
        [helper.make_tensor_value_info(n, TensorProto.FLOAT, [4]) for n in "ab"],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [4])],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])
    with pytest.raises(
        OnnxImportError, match="expected integers for graph.bitwise_and, got f32"
    ):
        from_onnx(model)


def test_bitcast_reinterprets_the_bits():
    """Not among the conformance cases: float16 and uint64 reinterpreted, and
    a float32's bits as uint32 (the sign bit sets the top bit)."""
    nodes = [
        helper.make_node("BitCast", ["h"], ["hi"], to=TensorProto.INT16),
        helper.make_node("BitCast", ["u"], ["ud"], to=TensorProto.DOUBLE),
        helper.make_node("BitCast", ["f"], ["fu"], to=TensorProto.UINT32),
    ]
    model = _graph_model(
        nodes,
        {"h": ((3,), "float16"), "u": ((3,), "uint64"), "f": ((3,), "float32")},
        {"hi": ((3,), "int16"), "ud": ((3,), "float64"), "fu": ((3,), "uint32")},
        opset=26,
    )
    feeds = {
        "h": np.array([1.5, -0.0, 65504], np.float16),
        "u": np.array([2**63, 4607182418800017408, 1], np.uint64),
        "f": np.array([-1.0, 2.5, -0.0], np.float32),
    }
    gm = GraphModule(ember.compile_model(model)["default"](cpu()))
    gm.run(**feeds)
    for i, (name, to) in enumerate([("h", "int16"), ("u", "float64"), ("f", "uint32")]):
        np.testing.assert_array_equal(gm.get_output(i).numpy(), feeds[name].view(to))


def test_a_bitcast_to_another_width_is_refused():
    node = helper.make_node("BitCast", ["x"], ["y"], to=TensorProto.INT16)
    graph = helper.make_graph(
        [node],
        "bits",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4])],
        [helper.make_tensor_value_info("y", TensorProto.INT16, [4])],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 26)])
    with pytest.raises(
        OnnxImportError, match="expected a target of 32 bits for graph.bitcast"
    ):
        from_onnx(model)


@pytest.mark.parametrize("reduction", ["max", "min"])
def test_scatter_nd_reduces_unsigned_values(reduction):
    """Unsigned max and min start from the type's ends (0, all ones)."""
    data = np.array([10, 200, 30, 255], np.uint8)
    indices = np.array([[1], [3], [1]], np.int64)
    updates = np.array([250, 7, 100], np.uint8)
    model = _graph_model(
        [helper.make_node("ScatterND", ["d", "i", "u"], ["y"], reduction=reduction)],
        {"d": ((4,), "uint8"), "i": ((3, 1), "int64"), "u": ((3,), "uint8")},
        {"y": ((4,), "uint8")},
    )
    gm = GraphModule(ember.compile_model(model)["default"](cpu()))
    gm.run(d=data, i=indices, u=updates)
    expected = data.copy()
    combine = np.maximum if reduction == "max" else np.minimum
    for (row,), value in zip(indices, updates, strict=True):
        expected[row] = combine(expected[row], value)
    np.testing.assert_array_equal(gm.get_output(0).numpy(), expected)


def test_float64_reductions_and_fmod():
    """float64 kernels the strategies used to refuse: reduce_max (under
    ReduceLogSumExp too) and mod, against onnxruntime."""
    nodes = [
        helper.make_node("ReduceMax", ["x"], ["top"], axes=[1], keepdims=0),
        helper.make_node("ReduceLogSumExp", ["x"], ["lse"], axes=[1], keepdims=1),
        helper.make_node("Mod", ["x", "d"], ["r"], fmod=1),
    ]
    model = _graph_model(
        nodes,
        {"x": ((3, 5), "float64"), "d": ((5,), "float64")},
        {
            "top": ((3,), "float64"),
            "lse": ((3, 1), "float64"),
            "r": ((3, 5), "float64"),
        },
        opset=17,
    )
    rng = np.random.default_rng(3)
    feeds = {
        "x": rng.standard_normal((3, 5)) * 300,
        "d": np.array([7, -3, 2.5, 1e-3, 9]),
    }
    session = ort.InferenceSession(
        model.SerializeToString(), providers=["CPUExecutionProvider"]
    )
    expected = session.run(None, feeds)
    gm = GraphModule(ember.compile_model(model)["default"](cpu()))
    gm.run(**feeds)
    for i, e in enumerate(expected):
        got = gm.get_output(i).numpy()
        assert got.dtype == np.float64
        np.testing.assert_allclose(got, e, rtol=1e-12, atol=1e-12)
