"""The graph dialect: builders' shape inference against numpy's and onnxruntime's
shapes, the numpy semantics (graph_reference) against onnxruntime, verifier errors,
and printing/parsing of built IR."""

import numpy as np
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper
from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp, TensorType, f32
from xdsl.ir import Block, Region
from xdsl.parser import Parser
from xdsl.utils.exceptions import VerifyException

from ember.dialects import graph
from ember.dialects.graph import ShapeError
from ember.passes import get_context
from ember.passes.graph_reference import evaluate, run_graph

RNG = np.random.default_rng(0)


def _arg(shape):
    return Block(arg_types=[TensorType(f32, shape)]).args[0]


def _randn(*shape):
    return RNG.standard_normal(shape).astype(np.float32)


def _onnx_run(op_type, inputs, attrs, opset=17):
    """onnxruntime's result of one ONNX node on `inputs`."""
    names = [f"in{i}" for i in range(len(inputs))]
    node = helper.make_node(op_type, names, ["out"], **attrs)
    model = helper.make_model(
        helper.make_graph(
            [node],
            "g",
            [
                helper.make_tensor_value_info(n, TensorProto.FLOAT, a.shape)
                for n, a in zip(names, inputs, strict=True)
            ],
            [helper.make_tensor_value_info("out", TensorProto.FLOAT, None)],
        ),
        opset_imports=[helper.make_opsetid("", opset)],
        ir_version=9,
    )
    sess = ort.InferenceSession(
        model.SerializeToString(), providers=["CPUExecutionProvider"]
    )
    return sess.run(None, dict(zip(names, inputs, strict=True)))[0]


def _check(op, inputs, expected):
    """`op`'s inferred type has `expected`'s shape, and the reference its values."""
    op.verify()
    assert tuple(op.results[0].type.get_shape()) == expected.shape
    got = evaluate(op, inputs)
    assert got.dtype == np.float32
    np.testing.assert_allclose(got, expected, rtol=1e-4, atol=1e-5)


CONV_CASES = [
    # x shape, w shape, strides, padding (t, l, b, r), dilation, groups
    ((1, 3, 9, 9), (8, 3, 3, 3), (1, 1), (1, 1, 1, 1), (1, 1), 1),
    ((2, 4, 10, 7), (6, 4, 3, 2), (2, 1), (0, 1, 2, 0), (1, 1), 1),
    ((1, 8, 12, 12), (8, 1, 3, 3), (2, 2), (1, 1, 1, 1), (1, 1), 8),
    ((1, 6, 11, 11), (4, 3, 3, 3), (1, 2), (2, 2, 2, 2), (2, 2), 2),
    ((1, 4, 5, 5), (2, 4, 1, 1), (1, 1), (0, 0, 0, 0), (1, 1), 1),
]


@pytest.mark.parametrize(
    ("xs", "ws", "strides", "padding", "dilation", "groups"), CONV_CASES
)
@pytest.mark.parametrize("bias", [False, True])
def test_conv2d_matches_onnxruntime(xs, ws, strides, padding, dilation, groups, bias):
    x, w, b = _randn(*xs), _randn(*ws), _randn(ws[0])
    operands = [_arg(xs), _arg(ws)] + ([_arg(b.shape)] if bias else [])
    op = graph.Conv2DOp.build_inferred(
        *operands, strides=strides, padding=padding, dilation=dilation, groups=groups
    )
    assert op.config == {
        "strides": strides,
        "padding": padding,
        "dilation": dilation,
        "groups": groups,
    }
    inputs = [x, w] + ([b] if bias else [])
    # ONNX pads are [top, left, bottom, right] too (begin..., end...)
    attrs = dict(strides=strides, pads=padding, dilations=dilation, group=groups)
    _check(op, inputs, _onnx_run("Conv", inputs, attrs))


POOL_CASES = [
    # kernel, strides, padding, dilation, ceil_mode, count_include_pad
    ((3, 3), (2, 2), (1, 1, 1, 1), (1, 1), False, False),
    ((3, 3), (2, 2), (0, 0, 0, 0), (1, 1), True, False),
    ((2, 3), (2, 2), (1, 0, 0, 1), (1, 1), True, True),
    ((2, 2), (1, 1), (1, 1, 1, 1), (1, 1), False, True),
    ((3, 3), (1, 1), (2, 2, 2, 2), (2, 2), False, False),
]


@pytest.mark.parametrize(
    ("kind", "kernel", "strides", "padding", "dil", "ceil", "cip"),
    # avg pooling has no dilation
    [
        (k, *case)
        for k in ("max", "avg")
        for case in POOL_CASES
        if k == "max" or case[3] == (1, 1)
    ],
)
def test_pool2d_matches_onnxruntime(kind, kernel, strides, padding, dil, ceil, cip):
    x = _randn(1, 3, 10, 9)
    attrs = dict(
        kernel_shape=kernel, strides=strides, pads=padding, ceil_mode=int(ceil)
    )
    if kind == "max":
        op = graph.MaxPool2DOp.build_inferred(
            _arg(x.shape),
            kernel=kernel,
            strides=strides,
            padding=padding,
            dilation=dil,
            ceil_mode=ceil,
        )
        attrs["dilations"] = dil
        expected = _onnx_run("MaxPool", [x], attrs)
    else:
        op = graph.AvgPool2DOp.build_inferred(
            _arg(x.shape),
            kernel=kernel,
            strides=strides,
            padding=padding,
            ceil_mode=ceil,
            count_include_pad=cip,
        )
        attrs["count_include_pad"] = int(cip)
        expected = _onnx_run("AveragePool", [x], attrs)
    _check(op, [x], expected)


def test_global_avg_pool_softmax_dense():
    x = _randn(2, 5, 3, 4)
    _check(
        graph.GlobalAvgPool2DOp.build_inferred(_arg(x.shape)),
        [x],
        _onnx_run("GlobalAveragePool", [x], {}),
    )
    for axis in (1, -1, 0):
        s = _randn(3, 7)
        _check(
            graph.SoftmaxOp.build_inferred(_arg(s.shape), axis=axis),
            [s],
            _onnx_run("Softmax", [s], {"axis": axis}),
        )
    a, w, b = _randn(4, 6), _randn(5, 6), _randn(5)
    _check(
        graph.DenseOp.build_inferred(_arg(a.shape), _arg(w.shape), _arg(b.shape)),
        [a, w, b],
        _onnx_run("Gemm", [a, w, b], {"transB": 1}),
    )


@pytest.mark.parametrize(
    ("a", "b"),
    [((4, 6), (6, 3)), ((2, 1, 4, 6), (5, 6, 3)), ((6,), (2, 6, 3)), ((2, 4, 6), (6,))],
)
def test_matmul_broadcasting(a, b):
    x, y = _randn(*a), _randn(*b)
    op = graph.MatmulOp.build_inferred(_arg(a), _arg(b))
    _check(op, [x, y], np.matmul(x, y))


def test_batch_matmul_and_batch_norm():
    a, b = _randn(3, 4, 5), _randn(1, 5, 2)
    _check(
        graph.BatchMatmulOp.build_inferred(_arg(a.shape), _arg(b.shape)), [a, b], a @ b
    )
    x = _randn(2, 4, 3, 3)
    g, be, m = _randn(4), _randn(4), _randn(4)
    v = np.abs(_randn(4)) + 0.1
    op = graph.BatchNormOp.build_inferred(
        *(_arg(t.shape) for t in (x, g, be, m, v)), epsilon=1e-3
    )
    expected = _onnx_run("BatchNormalization", [x, g, be, m, v], {"epsilon": 1e-3})
    _check(op, [x, g, be, m, v], expected)


UNARY = {
    graph.ReluOp: ("Relu", {}),
    graph.SigmoidOp: ("Sigmoid", {}),
    graph.TanhOp: ("Tanh", {}),
    graph.ExpOp: ("Exp", {}),
    graph.ErfOp: ("Erf", {}),
    graph.NegOp: ("Neg", {}),
    graph.AbsOp: ("Abs", {}),
}


@pytest.mark.parametrize("cls", list(UNARY), ids=lambda c: c.name)
def test_unary_matches_onnxruntime(cls):
    x = _randn(3, 5)
    onnx_op, attrs = UNARY[cls]
    _check(cls.build_inferred(_arg(x.shape)), [x], _onnx_run(onnx_op, [x], attrs))


def test_positive_domain_unary_and_gelu():
    x = np.abs(_randn(3, 5)) + 0.1
    _check(graph.SqrtOp.build_inferred(_arg(x.shape)), [x], np.sqrt(x))
    _check(graph.LogOp.build_inferred(_arg(x.shape)), [x], np.log(x))
    y = _randn(4, 4)
    expected = _onnx_run("Gelu", [y], {}, opset=20)
    _check(graph.GeluOp.build_inferred(_arg(y.shape)), [y], expected)
    clip = graph.ClipOp.build_inferred(_arg(y.shape), min=0.0, max=6.0)
    assert clip.config == {"min": 0.0, "max": 6.0}
    _check(clip, [y * 10], np.clip(y * 10, 0, 6))
    one_sided = graph.ClipOp.build_inferred(_arg(y.shape), max=0.5)
    assert "min" not in one_sided.properties
    _check(one_sided, [y], np.minimum(y, 0.5))


BINARY = {
    graph.AddOp: np.add,
    graph.SubOp: np.subtract,
    graph.MulOp: np.multiply,
    graph.DivOp: np.divide,
    graph.MaximumOp: np.maximum,
    graph.MinimumOp: np.minimum,
    graph.PowOp: np.power,
}


@pytest.mark.parametrize("cls", list(BINARY), ids=lambda c: c.name)
@pytest.mark.parametrize(
    ("a", "b"), [((2, 3, 4), (4,)), ((3, 1), (1, 5)), ((), (2, 2))]
)
def test_binary_broadcasting(cls, a, b):
    x, y = np.abs(_randn(*a)) + 0.5, np.abs(_randn(*b)) + 0.5
    _check(cls.build_inferred(_arg(a), _arg(b)), [x, y], BINARY[cls](x, y))


def test_layout_ops():
    x = _randn(2, 3, 4)
    _check(
        graph.ReshapeOp.build_inferred(_arg(x.shape), shape=(0, -1)),
        [x],
        x.reshape(2, 12),
    )
    _check(graph.FlattenOp.build_inferred(_arg(x.shape), axis=-1), [x], x.reshape(6, 4))
    _check(graph.FlattenOp.build_inferred(_arg(x.shape), axis=0), [x], x.reshape(1, 24))
    t = graph.TransposeOp.build_inferred(_arg(x.shape))
    assert t.config["perm"] == (2, 1, 0)
    _check(t, [x], x.transpose())
    _check(
        graph.TransposeOp.build_inferred(_arg(x.shape), perm=(1, 0, 2)),
        [x],
        x.transpose(1, 0, 2),
    )
    y = _randn(2, 5, 4)
    _check(
        graph.ConcatOp.build_inferred(_arg(x.shape), _arg(y.shape), axis=-2),
        [x, y],
        np.concatenate([x, y], axis=1),
    )
    pads = (0, 1, 2, 1, 0, 3)
    _check(
        graph.PadOp.build_inferred(_arg(x.shape), pads=pads, value=-2.0),
        [x],
        np.pad(x, [(0, 1), (1, 0), (2, 3)], constant_values=-2.0),
    )


@pytest.mark.parametrize(
    ("cls", "fn"),
    [
        (graph.ReduceSumOp, np.sum),
        (graph.ReduceMeanOp, np.mean),
        (graph.ReduceMaxOp, np.max),
    ],
)
@pytest.mark.parametrize(
    ("axes", "keepdims"), [((1,), True), ((-1, 0), False), ((), False)]
)
def test_reductions(cls, fn, axes, keepdims):
    x = _randn(3, 4, 5)
    op = cls.build_inferred(_arg(x.shape), axes=axes, keepdims=keepdims)
    np_axes = tuple(a % 3 for a in axes) or None
    _check(op, [x], fn(x, axis=np_axes, keepdims=keepdims))


@pytest.mark.parametrize(
    ("build", "message"),
    [
        (
            lambda: graph.Conv2DOp.build_inferred(
                _arg((1, 6, 8, 8)), _arg((4, 3, 3, 3)), groups=4
            ),
            "expected input channels divisible by groups 4, got 6",
        ),
        (
            lambda: graph.DenseOp.build_inferred(_arg((2, 8)), _arg((4, 7))),
            "expected weight with K = 8, got 4x7",
        ),
        (
            lambda: graph.AddOp.build_inferred(_arg((2, 3)), _arg((3, 2))),
            "expected broadcast-compatible shapes, got 2x3 and 3x2",
        ),
        (
            lambda: graph.ReshapeOp.build_inferred(_arg((2, 3)), shape=(-1, -1)),
            "expected positive dims with at most one -1, got [-1, -1]",
        ),
        (
            lambda: graph.ReshapeOp.build_inferred(_arg((2, 3)), shape=(4, -1)),
            "expected a shape dividing 6 elements, got (4, -1)",
        ),
        (
            lambda: graph.MaxPool2DOp.build_inferred(_arg((1, 1, 4, 4))),
            "expected attribute 'kernel' of graph.max_pool2d, got none",
        ),
        (
            lambda: graph.SoftmaxOp.build_inferred(_arg((2, 3)), axes=(1,)),
            "expected attributes of graph.softmax among ['axis'], got ['axes']",
        ),
        (
            lambda: graph.ClipOp.build_inferred(_arg((2,)), min=1.0, max=0.0),
            "expected min <= max, got min 1.0 and max 0.0",
        ),
    ],
)
def test_builder_errors(build, message):
    with pytest.raises(ShapeError) as info:
        build()
    assert str(info.value) == message


def test_verifier_checks_result_type_and_element_types():
    op = graph.ReluOp.create(
        operands=[_arg((2, 3))], result_types=[TensorType(f32, (3, 2))]
    )
    with pytest.raises(
        VerifyException, match=r"expected tensor<2x3xf32>, got tensor<3x2xf32>"
    ):
        op.verify()


def test_constant_numpy_round_trip():
    for a in (
        np.arange(6, dtype=np.float32).reshape(2, 3),
        np.array([1, -(2**40)], np.int64),
        np.float32(2.5),
        np.array([1, 2], np.int32),
        np.array([True, False, True]),
        np.array([-128, 127], np.int8),
        np.array([1.5, -65504], np.float16),
    ):
        c = graph.ConstantOp.from_numpy(a)
        c.verify()
        np.testing.assert_array_equal(c.numpy(), a)
        assert c.numpy().dtype == a.dtype
    with pytest.raises(
        ValueError, match="expected an array of float32, .*, bool, got complex64"
    ):
        graph.ConstantOp.from_numpy(np.array([1], np.complex64))


def _model() -> tuple[ModuleOp, dict[str, np.ndarray]]:
    """A small conv net built only with builders, as a frontend would."""
    block = Block(arg_types=[TensorType(f32, (1, 3, 16, 16))])
    x = block.args[0]
    params = {
        "c1.w": _randn(8, 3, 3, 3),
        "c1.b": _randn(8),
        "fc.w": _randn(10, 8),
        "fc.b": _randn(10),
    }
    ops = []

    def add(op):
        ops.append(op)
        return op.results[0]

    p = {k: add(graph.ParamOp(k, TensorType(f32, v.shape))) for k, v in params.items()}
    y = add(
        graph.Conv2DOp.build_inferred(
            x, p["c1.w"], p["c1.b"], strides=(2, 2), padding=(1, 1, 1, 1)
        )
    )
    y = add(graph.ClipOp.build_inferred(y, min=0.0, max=6.0))
    y = add(graph.MaxPool2DOp.build_inferred(y, kernel=(2, 2), strides=(2, 2)))
    y = add(graph.GlobalAvgPool2DOp.build_inferred(y))
    y = add(graph.FlattenOp.build_inferred(y, axis=1))
    y = add(graph.DenseOp.build_inferred(y, p["fc.w"], p["fc.b"]))
    y = add(graph.SoftmaxOp.build_inferred(y, axis=-1))
    ops.append(func.ReturnOp(y))
    block.add_ops(ops)
    fn = func.FuncOp("main", ((x.type,), (y.type,)), Region(block))
    module = ModuleOp([fn])
    module.verify()
    return module, params


def test_built_model_prints_parses_and_runs():
    module, params = _model()
    text = str(module)
    assert (
        "{strides = [2, 2], padding = [1, 1, 1, 1], dilation = [1, 1], groups = 1}"
        in text
    )
    reparsed = Parser(get_context(), text).parse_module()
    reparsed.verify()
    assert str(reparsed) == text
    x = _randn(1, 3, 16, 16)
    (out,) = run_graph(reparsed.body.block.first_op, [x], params)
    assert out.shape == (1, 10)
    np.testing.assert_allclose(out.sum(), 1.0, rtol=1e-5)
    (again,) = run_graph(module.body.block.first_op, [x], params)
    np.testing.assert_array_equal(out, again)


def test_patterns():
    assert graph.Conv2DOp.PATTERN == "out-elemwise-fusable"
    assert graph.AddOp.PATTERN == "broadcast"
    assert graph.ReluOp.PATTERN == "elemwise"
    assert graph.ReshapeOp.PATTERN == "injective"
    assert graph.ReduceSumOp.PATTERN == "comm-reduce"
    assert graph.SoftmaxOp.PATTERN == "opaque"
    assert set(graph.ELEMENTWISE_OPS) >= {graph.ClipOp, graph.GeluOp, graph.PowOp}
