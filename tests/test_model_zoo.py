"""The architectures people bring, compiled by ember and checked against
onnxruntime: each model from `examples/onnx_models.py` with seeded random
weights, relative error at most 1e-4 and the same argmax (issue 14's proof
models, as they land), and compiled through `ember-opt -p ember-model` too,
with the same outputs bit for bit (one pipeline; the CNNs and the LSTM,
whose pipelines the smaller models' cover, only in their `slow` variants).
The larger variants are `slow`."""

import sys
from pathlib import Path

import numpy as np
import pytest

import ember
from ember import runtime as rt

ort = pytest.importorskip("onnxruntime")

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "examples"))
import onnx_models  # noqa: E402
from test_one_pipeline import run_both_ways  # noqa: E402


def check(model, both_ways: bool = True) -> None:
    """`model` against onnxruntime; compiled through ember-opt too unless
    `both_ways` is False (a large model whose pipeline is the smaller one's)."""
    feeds = onnx_models.random_input(model)
    session = ort.InferenceSession(
        model.SerializeToString(), providers=["CPUExecutionProvider"]
    )
    expected = session.run(None, feeds)
    if both_ways:
        got = run_both_ways(model, feeds)
    else:
        gm = rt.GraphModule(ember.compile_model(model)["default"](rt.cpu()))
        got = [np.array(o) for o in gm(**feeds)]
    for g, e in zip(got, expected, strict=True):
        scale = np.abs(e).max()
        assert np.abs(g - e).max() <= 1e-4 * scale, "relative error above 1e-4"
        assert np.array_equal(g.argmax(-1), e.argmax(-1))


@pytest.mark.slow  # 24 s; hard-swish and squeeze-excite have tests of their own
def test_mobilenet_v3_small():
    check(onnx_models.mobilenet_v3("small", size=64, num_classes=100), both_ways=False)


@pytest.mark.slow
@pytest.mark.parametrize("variant", ["small", "large"])
def test_mobilenet_v3_at_224(variant):
    check(onnx_models.mobilenet_v3(variant))


@pytest.mark.slow  # 19 s; the channel shuffle's ops have tests of their own
def test_shufflenet_v2():
    check(onnx_models.shufflenet_v2(size=64, num_classes=100), both_ways=False)


@pytest.mark.slow
def test_shufflenet_v2_at_224():
    check(onnx_models.shufflenet_v2())


def test_shufflenet_v2_is_torchvisions_architecture():
    model = onnx_models.shufflenet_v2()
    ops = [n.op_type for n in model.graph.node]
    assert ops.count("Conv") == 56
    assert ops.count("Split") == 13  # every unit but the first of a stage
    assert ops.count("Transpose") == 16  # one channel shuffle per unit


def test_gpt_block_with_a_causal_mask():
    check(onnx_models.gpt_block(seq=32, d=128))


def test_bert_encoder_with_int64_ids_and_a_padding_mask():
    check(onnx_models.bert_encoder(seq=32, d=128, layers=2))


def test_vit_small():
    check(onnx_models.vit(size=32, d=96, heads=3, layers=2, num_classes=10))


@pytest.mark.slow
def test_bert_encoder_4_layers_at_seq_128():
    check(onnx_models.bert_encoder())


@pytest.mark.slow
def test_vit_b16():
    check(onnx_models.vit())


@pytest.mark.slow  # 13 s; test_torch_zoo runs an LSTM too
def test_lstm():
    """Two LSTM layers over 32 steps, unrolled (frontends/onnx_rnn.py)."""
    check(onnx_models.lstm(), both_ways=False)


def test_the_transformer_builders_are_valid_onnx_that_onnxruntime_runs():
    """BERT (int64 ids and mask), ViT and the LSTM as onnxruntime sees them:
    well-scaled outputs of the promised shapes (what ember must match)."""
    cases = [
        (onnx_models.bert_encoder(seq=16, d=64, layers=2), (1, 16, 64)),
        (onnx_models.vit(size=32, d=48, heads=3, layers=1, num_classes=10), (1, 10)),
        (onnx_models.lstm(seq=8), (8, 1, 128)),
    ]
    for model, shape in cases:
        feeds = onnx_models.random_input(model)
        session = ort.InferenceSession(
            model.SerializeToString(), providers=["CPUExecutionProvider"]
        )
        (out,) = session.run(None, feeds)
        assert out.shape == shape and 0.01 < float(out.std()) < 10
    bert = onnx_models.bert_encoder(seq=16, d=64, layers=1)
    feeds = onnx_models.random_input(bert)
    assert feeds["input_ids"].dtype == np.int64 and feeds["input_ids"].max() < 1000
    assert feeds["attention_mask"][0].tolist() == [1] * 12 + [0] * 4


@pytest.mark.slow  # 86M random weights
def test_vit_b16_has_torchvisions_parameter_count():
    model = onnx_models.vit()
    params = sum(int(np.prod(t.dims)) for t in model.graph.initializer)
    assert abs(params - 86_567_656) < 100  # torchvision's vit_b_16, plus constants


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
