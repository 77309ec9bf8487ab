"""ONNX Attention and RotaryEmbedding against onnxruntime: 4-D and 3-D
inputs, grouped-query heads with a causal mask and a past cache, a float mask
with softcap and scale, a bool mask with a fully masked row, the
qk_matmul_output modes, float16, softmax_precision, and (against onnx's
reference, which onnxruntime refuses) a mask shorter than the keys; rotary
embeddings halved or interleaved, partial, with and without position_ids.
Sliding windows (opset 25, which onnxruntime does not run) against onnx's
reference. A bfloat16 softmax is refused naming the attribute."""

import numpy as np
import numpy.typing as npt
import onnx
import pytest
from onnx import TensorProto, helper
from onnx.reference import ReferenceEvaluator

import ember
from ember import runtime as rt
from ember.frontends.onnx import UnsupportedOperatorError, from_onnx

ort = pytest.importorskip("onnxruntime")

_TYPES = {
    np.dtype(np.float32): TensorProto.FLOAT,
    np.dtype(np.float16): TensorProto.FLOAT16,
    np.dtype(np.int64): TensorProto.INT64,
    np.dtype(np.bool_): TensorProto.BOOL,
}


def _model(op, inputs, outputs, opset=23, **attrs):
    """A one-node model over `inputs` (name -> array; None for an absent
    optional input) with `outputs` (names; "" for an absent one)."""
    given = {name: a for name, a in inputs.items() if a is not None}
    node = helper.make_node(
        op, [n if inputs[n] is not None else "" for n in inputs], outputs, **attrs
    )
    graph = helper.make_graph(
        [node],
        op.lower(),
        [
            helper.make_tensor_value_info(n, _TYPES[a.dtype], a.shape)
            for n, a in given.items()
        ],
        [
            helper.make_tensor_value_info(n, TensorProto.UNDEFINED, None)
            for n in outputs
            if n
        ],
    )
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    m.ir_version = 10
    return onnx.shape_inference.infer_shapes(m, strict_mode=True), given


def _ember(model, feeds) -> list[np.ndarray]:
    gm = rt.GraphModule(ember.compile_model(model)["default"](rt.cpu()))
    got = gm(**feeds)
    return list(got) if isinstance(got, (list, tuple)) else [got]


def _reference(model, feeds) -> list[np.ndarray]:
    return [np.asarray(a) for a in ReferenceEvaluator(model).run(None, feeds)]


def _check(model, feeds, rtol=1e-5, atol=1e-5):
    session = ort.InferenceSession(
        model.SerializeToString(), providers=["CPUExecutionProvider"]
    )
    expected = session.run(None, feeds)
    got = _ember(model, feeds)
    assert len(got) == len(expected)
    for g, e in zip(got, expected, strict=True):
        assert g.shape == e.shape and g.dtype == e.dtype
        np.testing.assert_allclose(g, e, rtol=rtol, atol=atol)


def _rand(*shape: int, dtype: npt.DTypeLike = np.float32, seed: int = 0):
    return np.random.default_rng(seed + len(shape)).standard_normal(shape).astype(dtype)


def test_gqa_causal_4d():
    """Six query heads over two key heads, causal, qk output raw (mode 0)."""
    model, feeds = _model(
        "Attention",
        {
            "Q": _rand(2, 6, 5, 8),
            "K": _rand(2, 2, 7, 8, seed=1),
            "V": _rand(2, 2, 7, 8, seed=2),
        },
        ["Y", "", "", "qk"],
        is_causal=1,
    )
    _check(model, feeds)


def test_gqa_causal_3d_with_past():
    """3-D GQA with a past cache (the causal frontier offset by its length),
    a value head size unlike the key's, and the present outputs."""
    model, feeds = _model(
        "Attention",
        {
            "Q": _rand(2, 3, 4 * 8),
            "K": _rand(2, 3, 2 * 8, seed=1),
            "V": _rand(2, 3, 2 * 6, seed=2),
            "attn_mask": None,
            "past_key": _rand(2, 2, 4, 8, seed=3),
            "past_value": _rand(2, 2, 4, 6, seed=4),
        },
        ["Y", "present_key", "present_value"],
        is_causal=1,
        q_num_heads=4,
        kv_num_heads=2,
    )
    _check(model, feeds)


@pytest.mark.parametrize("mode", [1, 2])
def test_float_mask_softcap_scale(mode):
    """A float mask (-inf at a key) added after the softcap; qk output
    soft-capped (mode 1) or biased (mode 2)."""
    mask = _rand(1, 4, 6, seed=5)
    mask[:, :, 3] = -np.inf
    model, feeds = _model(
        "Attention",
        {
            "Q": _rand(2, 3, 4, 8),
            "K": _rand(2, 3, 6, 8, seed=1),
            "V": _rand(2, 3, 6, 8, seed=2),
            "attn_mask": mask,
        },
        ["Y", "", "", "qk"],
        scale=0.3,
        softcap=2.0,
        qk_matmul_output_mode=mode,
    )
    _check(model, feeds)


@pytest.mark.parametrize("dtype", [np.float32, np.bool_])
def test_short_mask_is_padded(dtype):
    """A mask shorter than the keys masks the rest (onnxruntime refuses it:
    against onnx's reference)."""
    mask = _rand(3, 4, seed=5) > 0 if dtype == np.bool_ else _rand(3, 4, seed=5)
    model, feeds = _model(
        "Attention",
        {
            "Q": _rand(1, 2, 3, 4),
            "K": _rand(1, 2, 6, 4, seed=1),
            "V": _rand(1, 2, 6, 4, seed=2),
            "attn_mask": mask.astype(dtype),
        },
        ["Y"],
        is_causal=1,
    )
    (expected,) = _reference(model, feeds)
    (got,) = _ember(model, feeds)
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-6)


@pytest.mark.parametrize("nonpad", [False, True])
def test_sliding_window(nonpad):
    """A window two keys left and three right, capped at 0 by is_causal, over
    a past cache or the nonpad lengths (a query row of batch 1 sees no key)."""
    inputs = {
        "Q": _rand(2, 4, 3, 4),
        "K": _rand(2, 2, 5, 4, seed=1),
        "V": _rand(2, 2, 5, 4, seed=2),
        "attn_mask": _rand(3, 8, seed=3) > -1,
    }
    if nonpad:
        inputs["attn_mask"] = inputs["attn_mask"][:, :5]
        inputs |= {
            "past_key": None,
            "past_value": None,
            "nonpad_kv_seqlen": np.array([5, 1], np.int64),
        }
    else:
        inputs |= {
            "past_key": _rand(2, 2, 3, 4, seed=4),
            "past_value": _rand(2, 2, 3, 4, seed=5),
        }
    model, feeds = _model(
        "Attention",
        inputs,
        ["Y"],
        opset=25,
        is_causal=1,
        left_window_size=2,
        right_window_size=3,
    )
    (expected,) = _reference(model, feeds)
    (got,) = _ember(model, feeds)
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-6)


def test_bool_mask_with_a_fully_masked_row():
    """A query that sees no key gets a zero row in Y and the probabilities
    (mode 3), not NaN."""
    mask = np.array([[True, False, True], [False, False, False]])
    model, feeds = _model(
        "Attention",
        {
            "Q": _rand(1, 2, 2, 4),
            "K": _rand(1, 2, 3, 4, seed=1),
            "V": _rand(1, 2, 3, 4, seed=2),
            "attn_mask": mask,
        },
        ["Y", "", "", "probs"],
        qk_matmul_output_mode=3,
    )
    _check(model, feeds)


def test_float16_nonpad_causal():
    """float16 with the external-cache lengths (opset 24): each batch sees its
    first nonpad keys, causally aligned to the last of them."""
    model, feeds = _model(
        "Attention",
        {
            "Q": _rand(2, 4, 3, 8, dtype=np.float16),
            "K": _rand(2, 2, 6, 8, seed=1, dtype=np.float16),
            "V": _rand(2, 2, 6, 8, seed=2, dtype=np.float16),
            "attn_mask": None,
            "past_key": None,
            "past_value": None,
            "nonpad_kv_seqlen": np.array([6, 4], np.int64),
        },
        ["Y"],
        opset=24,
        is_causal=1,
    )
    _check(model, feeds, rtol=2e-3, atol=2e-3)


@pytest.mark.parametrize(
    ("interleaved", "rotary_dim", "positions"),
    [(0, 0, True), (1, 4, True), (1, 0, False), (0, 6, False)],
)
def test_rotary_embedding_4d(interleaved, rotary_dim, positions):
    half = (rotary_dim or 8) // 2
    inputs = {"X": _rand(2, 3, 5, 8)}
    if positions:
        inputs |= {"cos": _rand(10, half, seed=1), "sin": _rand(10, half, seed=2)}
        inputs["position_ids"] = np.array([[0, 1, 2, 3, 4], [9, 2, 2, 7, 0]])
    else:
        inputs |= {"cos": _rand(2, 5, half, seed=1), "sin": _rand(2, 5, half, seed=2)}
    attrs = {"rotary_embedding_dim": rotary_dim} if rotary_dim else {}
    model, feeds = _model(
        "RotaryEmbedding", inputs, ["Y"], interleaved=interleaved, **attrs
    )
    _check(model, feeds)


def test_rotary_embedding_3d_partial_interleaved():
    """3-D input with num_heads, a partial interleaved rotation."""
    model, feeds = _model(
        "RotaryEmbedding",
        {
            "X": _rand(2, 5, 3 * 8),
            "cos": _rand(6, 3, seed=1),
            "sin": _rand(6, 3, seed=2),
            "position_ids": np.array([[0, 1, 2, 3, 4]] * 2),
        },
        ["Y"],
        interleaved=1,
        num_heads=3,
        rotary_embedding_dim=6,
    )
    _check(model, feeds)


@pytest.mark.parametrize(
    ("opset", "attrs", "named"),
    [
        (23, {"softmax_precision": TensorProto.BFLOAT16}, "softmax_precision=16"),
        (24, {"qk_matmul_output_mode": 4}, "qk_matmul_output_mode=4"),
    ],
)
def test_refused_attributes(opset, attrs, named):
    model, _ = _model(
        "Attention",
        {"Q": _rand(1, 2, 3, 4), "K": _rand(1, 2, 3, 4), "V": _rand(1, 2, 3, 4)},
        ["Y"],
        opset=opset,
        **attrs,
    )
    with pytest.raises(UnsupportedOperatorError, match=f"Attention \\({named}\\)"):
        from_onnx(model)


@pytest.mark.parametrize("precision", [TensorProto.FLOAT16, TensorProto.DOUBLE])
def test_softmax_precision(precision):
    """The softmax of float32 scores in float16 or float64 (no graph.softmax
    kernel for either: written in its steps)."""
    model, feeds = _model(
        "Attention",
        {
            "Q": _rand(1, 2, 3, 4),
            "K": _rand(1, 2, 5, 4, seed=1),
            "V": _rand(1, 2, 5, 4, seed=2),
        },
        ["Y"],
        is_causal=1,
        softmax_precision=precision,
    )
    _check(model, feeds, rtol=1e-3, atol=1e-3)


def test_rotary_embedding_float16():
    model, feeds = _model(
        "RotaryEmbedding",
        {
            "X": _rand(1, 2, 3, 8, dtype=np.float16),
            "cos": _rand(1, 3, 4, seed=1, dtype=np.float16),
            "sin": _rand(1, 3, 4, seed=2, dtype=np.float16),
        },
        ["Y"],
        interleaved=1,
    )
    _check(model, feeds, rtol=1e-3, atol=1e-3)
