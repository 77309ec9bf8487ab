"""Models written by torch 2.13's default ONNX exporter (`torch.onnx.export`,
the dynamo-based one, opset 18+: Reshape with allowzero, reductions with axes
as inputs, LayerNormalization, ...) compile and match onnxruntime. Skips,
saying why, without torch or onnxscript (which that exporter needs)."""

import sys
import warnings
from pathlib import Path

import numpy as np
import pytest

import ember
from ember import runtime as rt

torch = pytest.importorskip("torch", reason="torch is not installed")
pytest.importorskip(
    "onnxscript", reason="onnxscript (torch's ONNX exporter) is missing"
)
ort = pytest.importorskip("onnxruntime")

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "examples"))
import torch_models  # noqa: E402


def exported(model, x):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        program = torch.onnx.export(model.eval(), (x,), dynamo=True, verbose=False)
    return program.model_proto


def check(model, x):
    proto = exported(model, x)
    assert max(o.version for o in proto.opset_import if o.domain == "") >= 18
    feeds = {proto.graph.input[0].name: x.numpy()}
    session = ort.InferenceSession(
        proto.SerializeToString(), providers=["CPUExecutionProvider"]
    )
    (expected,) = session.run(None, feeds)
    gm = rt.GraphModule(ember.compile_model(proto)["default"](rt.cpu()))
    (got,) = gm(**feeds)
    scale = np.abs(expected).max()
    assert np.abs(got - expected).max() <= 1e-4 * scale
    assert np.array_equal(got.argmax(-1), expected.argmax(-1))


@pytest.mark.slow  # 15 s; the transformer block covers the exporter
def test_mobilenet_v2_from_the_default_exporter():
    torch.manual_seed(0)
    check(torch_models.mobilenet_v2(num_classes=100), torch.randn(1, 3, 64, 64))


def test_a_transformer_block_from_the_default_exporter():
    torch.manual_seed(0)
    check(torch_models.transformer_block(d=64, heads=4), torch.randn(1, 16, 64))
