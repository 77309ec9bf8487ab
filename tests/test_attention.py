"""Scaled dot-product attention: `topi.attention` against numpy (float64) on
shapes the row tile and the key panels do not divide, masks of every
broadcast, an epilogue, random shapes (hypothesis); `graph-fuse-attention`
on ONNX models against onnxruntime, and the patterns it must leave alone."""

from __future__ import annotations

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from onnx import TensorProto, helper, numpy_helper
from topi_util import run_kernel

import ember
from ember import runtime as rt
from ember import te
from ember.runtime.errors import EmberValueError
from ember.topi.attention import attention

RNG = np.random.default_rng(7)


def reference(q, kt, v, mask=None, scale=1.0):
    s = q.astype(np.float64) @ kt.astype(np.float64) * scale
    if mask is not None:  # added in float32, as the graph does (-1e4 + s rounds)
        s = (s.astype(np.float32) + mask).astype(np.float64)
    e = np.exp(s - s.max(-1, keepdims=True))
    return (e / e.sum(-1, keepdims=True)) @ v.astype(np.float64)


def run(batch, s, d, t, e, mask_shape=None, scale=0.125, epilogue=None):
    q, kt, v = (
        RNG.standard_normal(shape).astype(np.float32)
        for shape in ((*batch, s, d), (*batch, d, t), (*batch, t, e))
    )
    args = [q, kt, v]
    tensors = [
        te.placeholder(a.shape, name=n) for a, n in zip(args, "qkv", strict=True)
    ]
    mask = None
    if mask_shape is not None:
        mask = np.where(RNG.random(mask_shape) < 0.3, -1e4, 0).astype(np.float32)
        args.append(mask)
        tensors.append(te.placeholder(mask.shape, name="mask"))
    k = attention(*tensors, scale=scale, epilogue=epilogue)
    return run_kernel(k, *args), reference(q, kt, v, mask, scale), k


@pytest.mark.parametrize(
    ("batch", "s", "d", "t", "e", "mask_shape"),
    [
        ((1, 12), 197, 64, 197, 64, None),  # ViT-B/16: 11-row tiles, 7 key panels
        ((1, 4), 128, 64, 128, 64, (1, 1, 1, 128)),  # BERT's padding mask
        ((2, 3), 7, 5, 9, 3, (2, 1, 7, 9)),  # nothing divides
        ((5,), 40, 24, 33, 20, (40, 33)),  # one batch dim, a full mask
        ((), 1, 16, 300, 48, (1,)),  # one query row (a decode step), a scalar
    ],
)
def test_attention_matches_numpy(batch, s, d, t, e, mask_shape):
    got, expected, _ = run(batch, s, d, t, e, mask_shape)
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=2e-6)


def test_the_epilogue_applies_to_each_result_element():
    got, expected, _ = run((2,), 9, 8, 10, 16, epilogue=lambda x, idx: x * 2.0 + 1.0)
    np.testing.assert_allclose(got, expected * 2 + 1, rtol=1e-5, atol=2e-6)


@pytest.mark.parametrize("nan_to_zero", [False, True])
def test_a_fully_masked_row_is_nan_as_numpy_gives_or_zeros(nan_to_zero):
    q, kt, v = (np.ones(s, np.float32) for s in ((1, 2, 4), (1, 4, 3), (1, 3, 4)))
    mask = np.zeros((1, 2, 3), np.float32)
    mask[0, 1] = -np.inf
    tensors = [
        te.placeholder(a.shape, name=n)
        for a, n in zip((q, kt, v, mask), "qkvm", strict=True)
    ]
    k = attention(*tensors, nan_to_zero=nan_to_zero)
    got = run_kernel(k, q, kt, v, mask)
    np.testing.assert_allclose(got[0, 0], 1.0, rtol=1e-6)
    if nan_to_zero:  # torch's exported SDPA: where(isnan(p), 0, p)
        np.testing.assert_array_equal(got[0, 1], 0.0)
    else:
        assert np.isnan(got[0, 1]).all()


@pytest.mark.parametrize("fill", [-np.inf, np.finfo(np.float32).min])
def test_a_boolean_mask_selects_the_scores_and_fills_the_rest(fill):
    """A causal mask; with a finite fill (HF's float32 minimum) a row masked
    whole is uniform, as where(mask, s, fill) then softmax gives."""
    q, kt, v = (
        RNG.standard_normal(s).astype(np.float32)
        for s in ((2, 6, 8), (2, 8, 6), (2, 6, 5))
    )
    mask = np.tril(np.ones((6, 6), bool))
    mask[2] = False  # a row masked whole
    tensors = [
        te.placeholder(a.shape, a.dtype.name, name=n)
        for a, n in zip((q, kt, v, mask), "qkvm", strict=True)
    ]
    k = attention(*tensors, scale=0.5, fill=float(fill))
    got = np.zeros(k.output.shape, np.float32)
    ember.build(k.schedule(), k.args)(q, kt, v, mask, got)  # a bool operand
    s = np.where(mask, (q.astype(np.float64) @ kt) * 0.5, fill)
    with np.errstate(invalid="ignore"):
        e = np.exp(s - s.max(-1, keepdims=True))
        expected = (e / e.sum(-1, keepdims=True)) @ v
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=2e-6)
    if fill == -np.inf:
        assert np.isnan(got[:, 2]).all()
    else:
        np.testing.assert_allclose(got[:, 2], v.mean(1), rtol=1e-5, atol=1e-6)


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    heads=st.integers(1, 3),
    s=st.integers(1, 40),
    d=st.integers(1, 40),
    t=st.integers(1, 70),
    e=st.integers(1, 40),
    masked=st.booleans(),
)
def test_random_shapes_match_numpy(heads, s, d, t, e, masked):
    got, expected, _ = run((heads,), s, d, t, e, (1, t) if masked else None, 0.3)
    np.testing.assert_allclose(got, expected, rtol=1e-4, atol=1e-5)


def test_shapes_that_do_not_fit_are_refused():
    q = te.placeholder((2, 4, 8), name="q")
    with pytest.raises(EmberValueError, match="same batch dims"):
        attention(q, te.placeholder((3, 8, 4), name="k"), te.placeholder((2, 4, 8)))
    with pytest.raises(EmberValueError, match=r"kt \(\.\.\., 8, T\)"):
        attention(q, te.placeholder((2, 7, 4), name="k"), te.placeholder((2, 4, 8)))


# --- graph-fuse-attention on ONNX models ----------------------------------------


def attention_model(
    mask: bool,
    div: bool = True,
    extra_output: bool = False,
    causal: bool = False,
    nan_to_zero: bool = False,
):
    """MatMul(q, kt) / 8 (or * 0.125) [+ mask] -> Softmax -> MatMul(., v), as
    exporters write it; `causal`: Where(tril, scores, float32 min) instead of
    the mask's Add, as a GPT block; `nan_to_zero`: Where(IsNaN(p), 0, p)
    after the softmax; `extra_output` also returns the probabilities."""
    f = TensorProto.FLOAT
    scale = "Div" if div else "Mul"
    nodes = [
        helper.make_node("MatMul", ["q", "kt"], ["s"]),
        helper.make_node(scale, ["s", "c"], ["d"]),
    ]
    last = "d"
    inputs = [
        helper.make_tensor_value_info("q", f, [1, 3, 20, 16]),
        helper.make_tensor_value_info("kt", f, [1, 3, 16, 20]),
        helper.make_tensor_value_info("v", f, [1, 3, 20, 8]),
    ]
    initializers = []
    if causal:
        tril = np.tril(np.ones((1, 1, 20, 20), bool))
        low = np.array(np.finfo(np.float32).min, np.float32)
        initializers += [
            numpy_helper.from_array(tril, "tril"),
            numpy_helper.from_array(low, "low"),
        ]
        nodes.append(helper.make_node("Where", ["tril", "d", "low"], ["w"]))
        last = "w"
    if mask:
        nodes.append(helper.make_node("Add", ["m", last], ["a"]))  # the mask first
        inputs.append(helper.make_tensor_value_info("m", f, [1, 1, 1, 20]))
        last = "a"
    nodes.append(helper.make_node("Softmax", [last], ["p"], axis=-1))
    probs = "p"
    if nan_to_zero:  # torch's SDPA export: NaN probabilities (masked rows) are 0
        zero = numpy_helper.from_array(np.array(0.0, np.float32), "zero")
        initializers.append(zero)
        nodes += [
            helper.make_node("IsNaN", ["p"], ["isnan"]),
            helper.make_node("Where", ["isnan", "zero", "p"], ["pz"]),
        ]
        probs = "pz"
    nodes.append(helper.make_node("MatMul", [probs, "v"], ["o"]))
    outputs = [helper.make_tensor_value_info("o", f, [1, 3, 20, 8])]
    if extra_output:
        outputs.append(helper.make_tensor_value_info("p", f, [1, 3, 20, 20]))
    c = np.array(8.0 if div else 0.125, np.float32)
    graph = helper.make_graph(
        nodes,
        "attention",
        inputs,
        outputs,
        [numpy_helper.from_array(c, "c"), *initializers],
    )
    return helper.make_model(
        graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8
    )


def feeds_for(m: onnx.ModelProto) -> dict[str, np.ndarray]:
    out = {}
    for i in m.graph.input:
        shape = [d.dim_value for d in i.type.tensor_type.shape.dim]
        x = RNG.standard_normal(shape).astype(np.float32)
        out[i.name] = (
            np.where(x > 0.5, -1e4, 0).astype(np.float32) if i.name == "m" else x
        )
    return out


def kernels_of(lib) -> str:
    return lib.get_source("ll")


@pytest.mark.parametrize(
    ("mask", "div", "causal"),
    [(True, True, False), (False, False, False), (False, True, True)],
)
def test_exported_attention_is_one_kernel_equal_to_onnxruntime(mask, div, causal):
    m = attention_model(mask, div, causal=causal)
    feeds = feeds_for(m)
    (expected,) = ort.InferenceSession(m.SerializeToString()).run(None, feeds)
    lib = ember.compile_model(m)
    gm = rt.GraphModule(lib["default"](rt.cpu()))
    (got,) = gm(**feeds)
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-6)
    source = kernels_of(lib)
    assert "ember_attention" in source and "ember_softmax" not in source


def test_torch_sdpa_form_zeroes_a_row_masked_whole_as_onnxruntime():
    m = attention_model(True, nan_to_zero=True)
    feeds = feeds_for(m)
    feeds["m"][..., :] = 0.0
    feeds["m"][..., 3:7] = -np.inf  # the mask broadcasts over rows: mask keys
    feeds["q"][0, 1, 2] = np.nan  # and a NaN query row: NaN scores, zeros
    (expected,) = ort.InferenceSession(m.SerializeToString()).run(None, feeds)
    lib = ember.compile_model(m)
    (got,) = rt.GraphModule(lib["default"](rt.cpu()))(**feeds)
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-6)
    np.testing.assert_array_equal(got[0, 1, 2], 0.0)
    assert "ember_attention" in kernels_of(lib)


def test_probabilities_read_elsewhere_keep_the_three_kernels():
    m = attention_model(True, extra_output=True)
    feeds = feeds_for(m)
    expected = ort.InferenceSession(m.SerializeToString()).run(None, feeds)
    lib = ember.compile_model(m)
    got = rt.GraphModule(lib["default"](rt.cpu()))(**feeds)
    for g, e in zip(got, expected, strict=True):
        np.testing.assert_allclose(g, e, rtol=1e-5, atol=1e-6)
    source = kernels_of(lib)
    assert "ember_attention" not in source and "ember_softmax" in source


def test_opt_level_one_keeps_the_matmuls():
    m = attention_model(True)
    with ember.PassContext(opt_level=1):
        source = kernels_of(ember.compile_model(m))
    assert "ember_attention" not in source and "ember_softmax" in source


# --- the op in text IR: its numpy reference against its kernel ------------------

OP_IR = """
func.func @main(%q: tensor<2x5x8xf32> {ember.name = "q"}, %kt: tensor<2x8x9xf32> {ember.name = "kt"}, %v: tensor<2x9x3xf32> {ember.name = "v"}, %m: tensor<5x9xi1> {ember.name = "m"}) -> tensor<2x5x3xf32> {
  %o = graph.attention %q, %kt, %v, %m {scale = 0.5 : f32, fill = -1.0e+30 : f32, nan_to_zero = true} : (tensor<2x5x8xf32>, tensor<2x8x9xf32>, tensor<2x9x3xf32>, tensor<5x9xi1>) -> tensor<2x5x3xf32>
  func.return %o : tensor<2x5x3xf32>
}
"""


def test_the_op_reference_and_its_kernel_agree():
    from xdsl.parser import Parser

    from ember.passes import get_context
    from ember.passes.graph_reference import run_graph

    inputs = {
        "q": RNG.standard_normal((2, 5, 8)).astype(np.float32),
        "kt": RNG.standard_normal((2, 8, 9)).astype(np.float32),
        "v": RNG.standard_normal((2, 9, 3)).astype(np.float32),
        "m": RNG.random((5, 9)) < 0.6,
    }
    inputs["m"][3] = False  # a row masked whole: uniform under a finite fill
    main = next(iter(Parser(get_context(), OP_IR).parse_module().ops))
    (expected,) = run_graph(main, list(inputs.values()), {})
    (got,) = rt.GraphModule(ember.compile_model(OP_IR, {})["default"](rt.cpu()))(
        **inputs
    )
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(got[:, 3], inputs["v"].mean(1), rtol=1e-5)


def test_gpu_kinds_keep_the_three_kernels():
    """The fused kernel's schedule is a CPU's: a GPU pipeline leaves the pass out."""
    from ember.passes.pipelines import model_segments

    assert "graph-fuse-attention" in dict(model_segments(kind="llvm"))["graph"]
    for kind in ("opencl", "cuda"):
        assert "graph-fuse-attention" not in dict(model_segments(kind=kind))["graph"]


def test_every_row_tile_of_the_knobs_gives_the_same_result():
    """Tuning changes the row tile (divisors of the padded rows), never results."""
    q, kt, v = (
        RNG.standard_normal(shape).astype(np.float32)
        for shape in ((2, 21, 16), (2, 16, 37), (2, 37, 8))
    )
    tensors = [
        te.placeholder(a.shape, name=n) for a, n in zip((q, kt, v), "qkv", strict=True)
    ]
    k = attention(*tensors, scale=0.25)
    assert len(k.knobs.space["rows"]) > 2
    expected = reference(q, kt, v, scale=0.25)
    for rows in k.knobs.space["rows"]:
        got = np.zeros(k.output.shape, np.float32)
        ember.build(k.schedule(config={"rows": rows}), k.args)(q, kt, v, got)
        np.testing.assert_allclose(
            got, expected, rtol=1e-5, atol=2e-6, err_msg=str(rows)
        )
