"""Quantized models as onnxruntime's quantizer writes them run on integer
kernels: QDQ (DequantizeLinear -> Conv -> QuantizeLinear) and QOperator
(QLinearConv) convolutions become `graph.qconv2d`, and the outputs agree
with onnxruntime's QDQ semantics (graph optimizations disabled) within the
rounding its own fused int8 kernels show, with the same top-1."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

import ember
from ember.frontends.onnx import from_onnx
from ember.runtime import GraphModule, cpu

ort = pytest.importorskip("onnxruntime")
quantization = pytest.importorskip("onnxruntime.quantization")

SHAPE = (1, 3, 16, 16)


def float_cnn(seed: int = 0, conv_after_add: bool = False) -> onnx.ModelProto:
    """conv 3x3 + relu, depthwise 3x3 stride 2 + relu6 (Clip), pointwise conv
    added to a 1x1 strided shortcut, (a 1x1 conv,) global pool, dense: the
    blocks of ResNets and MobileNets."""
    rng = np.random.default_rng(seed)

    def w(*shape):
        return (rng.standard_normal(shape) * 0.3).astype(np.float32)

    consts = {
        "w1": w(16, 3, 3, 3), "b1": w(16), "wd": w(16, 1, 3, 3), "bd": w(16),
        "wp": w(24, 16, 1, 1), "bp": w(24), "ws": w(24, 3, 1, 1),
        "lo": np.float32(0), "hi": np.float32(6), "fc": w(10, 24),
    }  # fmt: skip
    if conv_after_add:
        consts["wa"] = w(24, 24, 1, 1)
    nodes = [
        helper.make_node("Conv", ["x", "w1", "b1"], ["c1"], pads=[1] * 4),
        helper.make_node("Relu", ["c1"], ["r1"]),
        helper.make_node(
            "Conv", ["r1", "wd", "bd"], ["cd"], pads=[1] * 4, group=16, strides=[2, 2]
        ),
        helper.make_node("Clip", ["cd", "lo", "hi"], ["rd"]),
        helper.make_node("Conv", ["rd", "wp", "bp"], ["cp"]),
        helper.make_node("Conv", ["x", "ws"], ["cs"], strides=[2, 2]),
        helper.make_node("Add", ["cp", "cs"], ["s" if conv_after_add else "a"]),
        *([helper.make_node("Conv", ["s", "wa"], ["a"])] if conv_after_add else []),
        helper.make_node("GlobalAveragePool", ["a"], ["g"]),
        helper.make_node("Flatten", ["g"], ["f"]),
        helper.make_node("Gemm", ["f", "fc"], ["y"], transB=1),
    ]
    graph = helper.make_graph(
        nodes,
        "cnn",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, SHAPE)],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, (1, 10))],
        [numpy_helper.from_array(np.asarray(v), k) for k, v in consts.items()],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    return model


def qdq_semantics(model):
    """onnxruntime with graph optimizations off: the model's QDQ semantics,
    float ops between quantizations, not its fused int8 kernels."""
    plain = ort.SessionOptions()
    plain.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    return ort.InferenceSession(model, plain, providers=["CPUExecutionProvider"])


def within_onnxruntime(path):
    """`compare(y, feeds)`: y agrees with the QDQ semantics within the
    rounding onnxruntime's own fused int8 kernels show against them (at
    least 2% of the output's range), plus a step of 2%; returns the
    semantics' output."""
    reference = qdq_semantics(str(path))
    fused = ort.InferenceSession(str(path), providers=["CPUExecutionProvider"])

    def compare(y: np.ndarray, feeds: dict) -> np.ndarray:
        (want,) = reference.run(None, feeds)
        (theirs,) = fused.run(None, feeds)
        span = float(np.ptp(want)) or 1.0
        ours = float(np.abs(y - want).max()) / span
        allowed = max(float(np.abs(theirs - want).max()) / span, 0.02) + 0.02
        assert ours <= allowed, (ours, allowed)
        return want

    return compare


def inputs(count: int, seed: int = 0) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    return [rng.standard_normal(SHAPE).astype(np.float32) for _ in range(count)]


@pytest.fixture(scope="module", params=["qdq-u8", "qdq-s8", "qoperator"])
def quantized(request, tmp_path_factory):
    q = quantization
    folder = tmp_path_factory.mktemp(request.param)
    source = folder / "float.onnx"
    onnx.save(float_cnn(), source)

    class Reader(q.CalibrationDataReader):
        def __init__(self):
            self.feeds = iter({"x": x} for x in inputs(8, seed=1))

        def get_next(self):
            return next(self.feeds, None)

    out = folder / "quantized.onnx"
    q.quantize_static(
        str(source),
        str(out),
        Reader(),
        quant_format=q.QuantFormat.QOperator
        if request.param == "qoperator"
        else q.QuantFormat.QDQ,
        per_channel=True,
        activation_type=q.QuantType.QInt8
        if request.param == "qdq-s8"
        else q.QuantType.QUInt8,
    )
    return request.param, out


def test_a_quantized_residual_add_between_convolutions_stays_blocked(tmp_path):
    """The add of two quantized convolutions' bytes (dequantized, added,
    requantized: a group no epilogue takes) reads and writes the blocked
    activations as they lie, and agrees with onnxruntime."""
    from xdsl.dialects.builtin import StringAttr

    from ember.compiler.model import lower_to_te
    from ember.dialects import graph

    q = quantization
    source, path = tmp_path / "float.onnx", tmp_path / "quantized.onnx"
    onnx.save(float_cnn(conv_after_add=True), source)

    class Reader(q.CalibrationDataReader):
        def __init__(self):
            self.feeds = iter({"x": x} for x in inputs(4, seed=1))

        def get_next(self):
            return next(self.feeds, None)

    q.quantize_static(str(source), str(path), Reader(), per_channel=True)
    module, _ = lower_to_te(path)
    calls = [op for op in module.walk() if isinstance(op, graph.CallKernelOp)]
    adds = [c for c in calls if len(c.operands) == 2]  # convolutions read four
    assert len(adds) == 1
    assert adds[0].attributes.get("ember.layout") == StringAttr("NCHW8c")
    assert all(v.type.get_num_dims() == 5 for v in adds[0].operands)
    lib = ember.compile_model(path)
    gm = GraphModule(lib["default"](cpu()))
    compare = within_onnxruntime(path)
    for x in inputs(3, seed=7):
        (y,) = gm(x=x)
        compare(y, {"x": x})


def test_quantized_convolutions_run_as_integer_kernels(quantized):
    _, path = quantized
    module, _ = from_onnx(path)
    text = str(module)
    assert text.count("graph.qconv2d") == 4, text
    assert "graph.conv2d" not in text


def test_quantized_models_agree_with_onnxruntime(quantized):
    _, path = quantized
    lib = ember.compile_model(path)
    gm = GraphModule(lib["default"](cpu()))
    compare = within_onnxruntime(path)
    for x in inputs(4, seed=7):
        (y,) = gm(x=x)
        want = compare(y, {"x": x})
        assert y.argmax() == want.argmax()


def test_a_quantized_bert_encoder_runs_its_dense_layers_on_integers(tmp_path):
    """onnxruntime's QDQ BERT encoder: the MatMuls by weights and the Gemms
    become `graph.qdense` (the attention's matmuls of two activations stay
    exact float decompositions); outputs within onnxruntime's own rounding."""
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "examples"))
    import onnx_models

    q = quantization
    model = onnx_models.bert_encoder(seq=16, d=32, heads=2, layers=1, vocab=50)
    source, out = tmp_path / "float.onnx", tmp_path / "int8.onnx"
    onnx.save(model, source)

    class Reader(q.CalibrationDataReader):
        def __init__(self):
            self.feeds = iter(onnx_models.random_input(model, seed=s) for s in range(4))

        def get_next(self):
            return next(self.feeds, None)

    q.quantize_static(
        str(source), str(out), Reader(), quant_format=q.QuantFormat.QDQ,
        per_channel=True, activation_type=q.QuantType.QUInt8,
    )  # fmt: skip
    module, _ = from_onnx(out)
    assert str(module).count("graph.qdense") == 6  # q, k, v, out, two MLP layers
    lib = ember.compile_model(out)
    gm = GraphModule(lib["default"](cpu()))
    compare = within_onnxruntime(out)
    for seed in (7, 8):
        feeds = onnx_models.random_input(model, seed=seed)
        (y,) = gm(**feeds)
        compare(y, feeds)


def test_a_max_pool_between_quantizations_of_one_scale_pools_the_bytes():
    """DequantizeLinear -> MaxPool -> QuantizeLinear (one scale and zero
    point) is the MaxPool of the bytes: exactly the same values."""
    x = np.random.default_rng(3).integers(0, 256, (1, 4, 9, 9)).astype(np.uint8)
    nodes = [
        helper.make_node("DequantizeLinear", ["x", "s", "z"], ["real"]),
        helper.make_node(
            "MaxPool", ["real"], ["pooled"], kernel_shape=[3, 3], strides=[2, 2],
            pads=[1, 1, 1, 1],
        ),
        helper.make_node("QuantizeLinear", ["pooled", "s", "z"], ["y"]),
    ]  # fmt: skip
    consts = [
        numpy_helper.from_array(np.float32(0.05), "s"),
        numpy_helper.from_array(np.uint8(17), "z"),
    ]
    graph = helper.make_graph(
        nodes, "pool",
        [helper.make_tensor_value_info("x", TensorProto.UINT8, x.shape)],
        [helper.make_tensor_value_info("y", TensorProto.UINT8, (1, 4, 5, 5))],
        consts,
    )  # fmt: skip
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    module, _ = from_onnx(model)
    assert "graph.max_pool2d" in str(module) and ": (tensor<1x4x9x9xui8>) ->" in str(
        module
    )
    lib = ember.compile_model(model)
    (y,) = GraphModule(lib["default"](cpu()))(x=x)
    session = ort.InferenceSession(
        model.SerializeToString(), providers=["CPUExecutionProvider"]
    )
    np.testing.assert_array_equal(y, session.run(None, {"x": x})[0])


def test_a_weight_quantized_in_the_graph_is_folded():
    """PyTorch's PT2E export quantizes float weights in the graph
    (QuantizeLinear of an initializer, per channel): that weight is known at
    import time, so the convolution is still `graph.qconv2d`."""
    rng = np.random.default_rng(5)
    x = rng.integers(0, 256, (1, 3, 8, 8)).astype(np.uint8)
    w = (rng.standard_normal((8, 3, 3, 3)) * 0.2).astype(np.float32)
    ws = (np.abs(w).reshape(8, -1).max(1) / 127).astype(np.float32)
    nodes = [
        helper.make_node("DequantizeLinear", ["x", "xs", "xz"], ["xd"]),
        helper.make_node("QuantizeLinear", ["w", "ws", "wz"], ["wq"], axis=0),
        helper.make_node("DequantizeLinear", ["wq", "ws", "wz"], ["wd"], axis=0),
        helper.make_node("Conv", ["xd", "wd"], ["c"], pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["c"], ["r"]),
        helper.make_node("QuantizeLinear", ["r", "ys", "yz"], ["y"]),
    ]
    consts = {
        "xs": np.float32(0.02), "xz": np.uint8(120), "w": w, "ws": ws,
        "wz": np.zeros(8, np.int8), "ys": np.float32(0.05), "yz": np.uint8(0),
    }  # fmt: skip
    graph = helper.make_graph(
        nodes, "pt2e",
        [helper.make_tensor_value_info("x", TensorProto.UINT8, x.shape)],
        [helper.make_tensor_value_info("y", TensorProto.UINT8, (1, 8, 8, 8))],
        [numpy_helper.from_array(np.asarray(v), k) for k, v in consts.items()],
    )  # fmt: skip
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    assert "graph.qconv2d" in str(from_onnx(model)[0])
    lib = ember.compile_model(model)
    (y,) = GraphModule(lib["default"](cpu()))(x=x)
    want = qdq_semantics(model.SerializeToString()).run(None, {"x": x})[0]
    assert np.abs(y.astype(int) - want.astype(int)).max() <= 1


@pytest.mark.slow
@pytest.mark.parametrize("name", ["resnet18", "mobilenet_v2"])
@pytest.mark.parametrize("fmt", ["QDQ", "QOperator"])
def test_quantized_zoo_cnns_agree_with_onnxruntime(name, fmt, tmp_path):
    """ResNet-18 and MobileNetV2 (64x64) as onnxruntime's quantizer writes
    them after its pre-processing (batch norms folded), per-channel weights,
    uint8 activations: every convolution on integers, outputs within
    onnxruntime's own rounding, the same top-1."""
    import sys
    from pathlib import Path

    sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "examples"))
    import onnx_models
    from onnxruntime.quantization.shape_inference import quant_pre_process

    q = quantization
    raw, pre, out = (tmp_path / f for f in ("raw.onnx", "pre.onnx", "int8.onnx"))
    onnx.save(getattr(onnx_models, name)(size=64), raw)
    quant_pre_process(str(raw), str(pre))

    def images(count, seed):
        rng = np.random.default_rng(seed)
        return [
            rng.standard_normal((1, 3, 64, 64)).astype(np.float32) for _ in range(count)
        ]

    input_name = onnx.load(pre).graph.input[0].name

    class Reader(q.CalibrationDataReader):
        def __init__(self):
            self.feeds = iter({input_name: x} for x in images(4, 1))

        def get_next(self):
            return next(self.feeds, None)

    q.quantize_static(
        str(pre), str(out), Reader(), quant_format=getattr(q.QuantFormat, fmt),
        per_channel=True, activation_type=q.QuantType.QUInt8,
    )  # fmt: skip
    module, _ = from_onnx(out)
    convs = sum(n.op_type in ("Conv", "QLinearConv") for n in onnx.load(out).graph.node)
    assert str(module).count("graph.qconv2d") == convs
    lib = ember.compile_model(out)
    gm = GraphModule(lib["default"](cpu()))
    compare = within_onnxruntime(out)
    for x in images(2, 9):
        (y,) = gm(x)
        want = compare(y, {input_name: x})
        assert y.argmax() == want.argmax()


def test_uint8_weights_around_128_are_signed_weights():
    """QLinearConv with uint8 weights of zero point 128 (onnxruntime's
    QOperator with weight_type QUInt8): w - 128 is an int8 weight, so the
    convolution runs on integers, exactly."""
    rng = np.random.default_rng(6)
    x = rng.integers(0, 256, (1, 4, 6, 6)).astype(np.uint8)
    w = rng.integers(0, 256, (8, 4, 3, 3)).astype(np.uint8)
    consts = {
        "xs": np.float32(0.02), "xz": np.uint8(100), "w": w,
        "ws": np.float32(0.01), "wz": np.uint8(128), "ys": np.float32(0.3),
        "yz": np.uint8(7),
    }  # fmt: skip
    node = helper.make_node(
        "QLinearConv", ["x", "xs", "xz", "w", "ws", "wz", "ys", "yz"], ["y"],
        pads=[1, 1, 1, 1],
    )  # fmt: skip
    graph = helper.make_graph(
        [node], "u8w",
        [helper.make_tensor_value_info("x", TensorProto.UINT8, x.shape)],
        [helper.make_tensor_value_info("y", TensorProto.UINT8, (1, 8, 6, 6))],
        [numpy_helper.from_array(np.asarray(v), k) for k, v in consts.items()],
    )  # fmt: skip
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    assert "graph.qconv2d" in str(from_onnx(model)[0])
    lib = ember.compile_model(model)
    (y,) = GraphModule(lib["default"](cpu()))(x=x)
    session = ort.InferenceSession(
        model.SerializeToString(), providers=["CPUExecutionProvider"]
    )
    want = session.run(None, {"x": x})[0]
    assert np.abs(y.astype(int) - want.astype(int)).max() <= 1
