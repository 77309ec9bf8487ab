"""The architectures people bring, compiled by ember and checked against
onnxruntime: each model from `examples/onnx_models.py` with seeded random
weights, relative error at most 1e-4 and the same argmax (issue 14's proof
models, as they land). The larger variants are `slow`."""

import sys
from pathlib import Path

import numpy as np
import pytest

import ember
from ember import runtime as rt

ort = pytest.importorskip("onnxruntime")

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "examples"))
import onnx_models  # noqa: E402


def check(model) -> None:
    feeds = onnx_models.random_input(model)
    session = ort.InferenceSession(
        model.SerializeToString(), providers=["CPUExecutionProvider"]
    )
    expected = session.run(None, feeds)
    gm = rt.GraphModule(ember.compile_model(model)["default"](rt.cpu()))
    got = gm(**feeds)
    for g, e in zip(got, expected, strict=True):
        scale = np.abs(e).max()
        assert np.abs(g - e).max() <= 1e-4 * scale, "relative error above 1e-4"
        assert np.array_equal(g.argmax(-1), e.argmax(-1))


def test_mobilenet_v3_small():
    check(onnx_models.mobilenet_v3("small", size=64, num_classes=100))


@pytest.mark.slow
@pytest.mark.parametrize("variant", ["small", "large"])
def test_mobilenet_v3_at_224(variant):
    check(onnx_models.mobilenet_v3(variant))


def test_shufflenet_v2():
    check(onnx_models.shufflenet_v2(size=64, num_classes=100))


@pytest.mark.slow
def test_shufflenet_v2_at_224():
    check(onnx_models.shufflenet_v2())


def test_shufflenet_v2_is_torchvisions_architecture():
    model = onnx_models.shufflenet_v2()
    ops = [n.op_type for n in model.graph.node]
    assert ops.count("Conv") == 56
    assert ops.count("Split") == 13  # every unit but the first of a stage
    assert ops.count("Transpose") == 16  # one channel shuffle per unit


def test_mobilenet_v3_is_torchvisions_architecture():
    """Layer counts of torchvision's mobilenet_v3_large / _small exports."""
    for variant, convs, se in (("large", 62, 8), ("small", 52, 9)):
        model = onnx_models.mobilenet_v3(variant)
        ops = [n.op_type for n in model.graph.node]
        assert ops.count("Conv") == convs
        assert ops.count("HardSigmoid") == se
        assert ops.count("Gemm") == 2
    with pytest.raises(ValueError, match="opset 14"):
        onnx_models.mobilenet_v3(opset=13)
