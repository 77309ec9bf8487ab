"""ONNX LSTM, GRU and RNN unrolled into graph ops (`frontends/onnx_rnn.py`), against
onnxruntime (and onnx's reference evaluator for layout 1, which onnxruntime
does not run): every direction, with and without initial states, every
output, both GRU reset orders, the 2-layer example model, the steps sharing
their kernels, and each refusal."""

import re
import sys
from collections import Counter
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper
from xdsl.dialects import func

import ember
from ember import runtime as rt
from ember.frontends.onnx import OnnxImportError, UnsupportedOperatorError, from_onnx

ort = pytest.importorskip("onnxruntime")
sys.path.insert(0, str(Path(__file__).parents[1] / "examples"))
import onnx_models  # noqa: E402

GATES = {"LSTM": 4, "GRU": 3, "RNN": 1}


def rnn_model(
    op,
    direction="forward",
    initial=True,
    outputs=("Y", "Y_h", "Y_c"),
    layout=0,
    seq=5,
    batch=2,
    features=3,
    hidden=4,
    extra_inputs=(),
    **attrs,
):
    """One LSTM, GRU or RNN node with random W, R and B initializers. hidden=4 keeps
    each gate's weights under 16 elements, so they become literals (two literal
    weights of one dense kernel once shared their packed param)."""
    rng = np.random.default_rng(0)
    gates, dirs = GATES[op], 2 if direction == "bidirectional" else 1
    inits = [
        numpy_helper.from_array(a.astype(np.float32), name)
        for name, a in [
            ("W", rng.standard_normal((dirs, gates * hidden, features))),
            ("R", rng.standard_normal((dirs, gates * hidden, hidden))),
            ("B", rng.standard_normal((dirs, 2 * gates * hidden))),
        ]
    ]
    x_shape = [batch, seq, features] if layout else [seq, batch, features]
    state = [batch, dirs, hidden] if layout else [dirs, batch, hidden]
    y_shape = [batch, seq, dirs, hidden] if layout else [seq, dirs, batch, hidden]
    graph_inputs = [helper.make_tensor_value_info("X", TensorProto.FLOAT, x_shape)]
    names = ["X", "W", "R", "B", ""]
    states = ["initial_h", "initial_c"][: 2 if op == "LSTM" else 1]
    for name in states if initial else []:
        names.append(name)
        graph_inputs.append(
            helper.make_tensor_value_info(name, TensorProto.FLOAT, state)
        )
    for index, name, value in extra_inputs:
        names += [""] * (index + 1 - len(names))
        names[index] = name
        inits.append(numpy_helper.from_array(value, name))
    outputs = list(outputs)[: 3 if op == "LSTM" else 2]
    shapes = {"Y": y_shape, "Y_h": state, "Y_c": state}
    node = helper.make_node(
        op,
        names,
        outputs,
        "rnn",
        hidden_size=hidden,
        direction=direction,
        **({"layout": layout} if layout else {}),
        **attrs,
    )
    g = helper.make_graph(
        [node],
        op.lower(),
        graph_inputs,
        [
            helper.make_tensor_value_info(n, TensorProto.FLOAT, shapes[n])
            for n in outputs
            if n
        ],
        inits,
    )
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    onnx.checker.check_model(m)
    return m


def feeds_of(m):
    rng = np.random.default_rng(1)
    return {
        v.name: rng.standard_normal(
            [d.dim_value for d in v.type.tensor_type.shape.dim]
        ).astype(np.float32)
        for v in m.graph.input
        if v.name not in {t.name for t in m.graph.initializer}
    }


def run_both(m, reference="onnxruntime"):
    feeds = feeds_of(m)
    if reference == "onnxruntime":
        session = ort.InferenceSession(
            m.SerializeToString(), providers=["CPUExecutionProvider"]
        )
        expected = session.run(None, feeds)
    else:
        from onnx.reference import ReferenceEvaluator

        expected = ReferenceEvaluator(m).run(None, feeds)
    gm = rt.GraphModule(ember.compile_model(m)["default"](rt.cpu()))
    got = gm(**feeds)
    assert len(got) == len(expected)
    for g, e in zip(got, expected, strict=True):
        assert g.shape == e.shape
        np.testing.assert_allclose(g, e, rtol=1e-4, atol=1e-5)


@pytest.mark.parametrize("direction", ["forward", "reverse", "bidirectional"])
@pytest.mark.parametrize("initial", [True, False])
def test_lstm(direction, initial):
    run_both(rnn_model("LSTM", direction, initial))


@pytest.mark.parametrize(
    "outputs", [("Y",), ("", "Y_h"), ("", "", "Y_c"), ("Y", "", "Y_c")]
)
def test_lstm_any_subset_of_outputs(outputs):
    run_both(rnn_model("LSTM", "bidirectional", outputs=outputs))


@pytest.mark.parametrize("op", ["LSTM", "GRU", "RNN"])
def test_layout_1_batch_first(op):
    m = rnn_model(op, "bidirectional", layout=1)
    run_both(m, reference="onnx")


@pytest.mark.parametrize("direction", ["forward", "reverse", "bidirectional"])
@pytest.mark.parametrize("linear_before_reset", [0, 1])
def test_gru(direction, linear_before_reset):
    m = rnn_model("GRU", direction, linear_before_reset=linear_before_reset)
    run_both(m)


@pytest.mark.parametrize("linear_before_reset", [0, 1])
def test_gru_without_initial_state_and_a_sequence_lens_of_full_lengths(
    linear_before_reset,
):
    lens = np.full(2, 5, np.int32)
    m = rnn_model(
        "GRU",
        initial=False,
        linear_before_reset=linear_before_reset,
        extra_inputs=[(4, "lens", lens)],
    )
    run_both(m)


@pytest.mark.parametrize("direction", ["forward", "reverse", "bidirectional"])
@pytest.mark.parametrize("initial", [True, False])
def test_rnn(direction, initial):
    run_both(rnn_model("RNN", direction, initial))


def test_two_layer_example_model():
    run_both(onnx_models.lstm(seq=6, features=8, hidden=16))


def _kernels(m) -> Counter:
    from ember.passes import run
    from ember.passes.bound_params import bind_params
    from ember.passes.pipelines import optimize_graph

    mod, params = from_onnx(m)
    with bind_params(optimize_graph(mod, params)):
        run(mod, "convert-graph-to-te")
    names = [o.sym_name.data for o in mod.ops if isinstance(o, func.FuncOp)]
    # a kernel's name counts the ops past its first few ("_10more"): Y's
    # concatenation reads one piece a step
    return Counter(
        re.sub(r"_\d+more$", "", n.rsplit("_", 1)[0])
        for n in names
        if n.startswith("ember_")
    )


def test_steps_share_their_kernels():
    short, long = (_kernels(rnn_model("LSTM", seq=n, hidden=8)) for n in (3, 12))
    assert short == long


def refusal(m) -> str:
    with pytest.raises(UnsupportedOperatorError) as info:
        from_onnx(m)
    return str(info.value)


@pytest.mark.parametrize(
    "attrs, expected",
    [
        ({"clip": 3.0}, "clip=3.0"),
        ({"input_forget": 1}, "input_forget=1"),
        (
            {"activations": ["Relu", "Tanh", "Tanh"]},
            "activations=['Relu', 'Tanh', 'Tanh'] (only the defaults)",
        ),
    ],
)
def test_unsupported_attributes_are_refused_naming_them(attrs, expected):
    assert f"LSTM ({expected}): 1 (rnn)" in refusal(rnn_model("LSTM", **attrs))


def test_default_activations_written_out_are_accepted():
    acts = ["Sigmoid", "Tanh"] * 2
    run_both(rnn_model("GRU", "bidirectional", activations=acts))


def test_peepholes_are_refused():
    p = np.zeros((1, 12), np.float32)
    m = rnn_model("LSTM", initial=False, extra_inputs=[(7, "P", p)])
    assert "LSTM (peepholes P): 1 (rnn)" in refusal(m)


def test_sequence_lens_computed_by_the_model_is_refused():
    m = rnn_model("GRU", initial=False)
    m.graph.node[0].input[4] = "lens"
    m.graph.input.append(helper.make_tensor_value_info("lens", TensorProto.INT32, [2]))
    assert "GRU (sequence_lens computed by the model): 1 (rnn)" in refusal(m)


def test_sequence_lens_shorter_than_the_sequence_is_refused():
    lens = np.array([5, 3], np.int32)
    m = rnn_model("LSTM", initial=False, extra_inputs=[(4, "lens", lens)])
    with pytest.raises(OnnxImportError, match=r"sequence_lens"):
        from_onnx(m)
