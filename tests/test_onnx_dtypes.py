"""Non-float32 tensors through the whole model path (issue 14): ONNX models with
int64, int32, int8, bool and float16 inputs and outputs, and the dtype ops
(comparisons, And/Or/Xor/Not, Where, Mod, Sign, Cast, CastLike, integer
arithmetic), imported, compiled by `compile_model` and run by `GraphModule`,
against onnxruntime: integers and booleans exactly, floats within tolerance."""

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

import ember
from ember.frontends.onnx import OnnxImportError, from_onnx
from ember.runtime import cpu
from ember.runtime.graph_module import GraphModule

ort = pytest.importorskip("onnxruntime")

ONNX_TYPES = {
    "float32": TensorProto.FLOAT,
    "float16": TensorProto.FLOAT16,
    "float64": TensorProto.DOUBLE,
    "int64": TensorProto.INT64,
    "int32": TensorProto.INT32,
    "int8": TensorProto.INT8,
    "uint8": TensorProto.UINT8,
    "bool": TensorProto.BOOL,
}


def model_of(nodes, inputs, outputs, initializers=None, opset=17):
    """A model: inputs and outputs {name: (shape, dtype)}."""
    graph = helper.make_graph(
        nodes,
        "dtypes",
        [
            helper.make_tensor_value_info(n, ONNX_TYPES[t], s)
            for n, (s, t) in inputs.items()
        ],
        [
            helper.make_tensor_value_info(n, ONNX_TYPES[t], s)
            for n, (s, t) in outputs.items()
        ],
        [
            numpy_helper.from_array(np.asarray(a), n)
            for n, a in (initializers or {}).items()
        ],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    return model


def run_both(model, feeds, reference=None):
    """ember's outputs (compile_model, GraphModule) and onnxruntime's, or
    `reference(**feeds)`'s where onnxruntime has no kernel for the dtype."""
    try:
        session = ort.InferenceSession(
            model.SerializeToString(), providers=["CPUExecutionProvider"]
        )
        expected = session.run(None, feeds)
    except ort.capi.onnxruntime_pybind11_state.NotImplemented:
        if reference is None:
            raise
        expected = [reference(**feeds)]
    gm = GraphModule(ember.compile_model(model)["default"](cpu()))
    gm.run(**feeds)
    got = [gm.get_output(i).numpy() for i in range(gm.get_num_outputs())]
    return got, expected


def assert_same(got, expected, rtol=1e-6, atol=1e-6):
    assert len(got) == len(expected)
    for g, e in zip(got, expected, strict=True):
        assert g.dtype == e.dtype and g.shape == e.shape
        if e.dtype.kind == "f":
            np.testing.assert_allclose(g, e, rtol=rtol, atol=atol)
        else:
            np.testing.assert_array_equal(g, e)


def values(dtype, shape, seed=0, nonzero=False):
    rng = np.random.default_rng(seed)
    if dtype == "bool":
        return rng.integers(0, 2, shape).astype(bool)
    if dtype.startswith("float"):
        x = (rng.standard_normal(shape) * 40).astype(dtype)
        x.flat[:3] = [0.0, -2.5, 2.5][: x.size]  # ties and zero
        return x
    x = rng.integers(-100, 100, shape).astype(dtype)
    if nonzero:
        x[x == 0] = 7
    return x


def node(op, inputs, outputs=("y",), **attrs):
    return helper.make_node(op, list(inputs), list(outputs), **attrs)


# -- comparisons, logic, where ---------------------------------------------------------


@pytest.mark.parametrize(
    "op", ["Equal", "Less", "LessOrEqual", "Greater", "GreaterOrEqual"]
)
@pytest.mark.parametrize("dtype", ["float32", "float16", "int64", "int32"])
def test_comparisons(op, dtype):
    model = model_of(
        [node(op, ["a", "b"])],
        {"a": ((3, 4), dtype), "b": ((4,), dtype)},
        {"y": ((3, 4), "bool")},
    )
    a, b = values(dtype, (3, 4)), values(dtype, (4,), seed=1)
    a[0, :] = b  # some equal pairs
    assert_same(*run_both(model, {"a": a, "b": b}))


@pytest.mark.parametrize("op", ["And", "Or", "Xor"])
def test_logical(op):
    model = model_of(
        [node(op, ["a", "b"], ["t"]), node("Not", ["t"])],
        {"a": ((2, 5), "bool"), "b": ((5,), "bool")},
        {"y": ((2, 5), "bool")},
    )
    feeds = {"a": values("bool", (2, 5)), "b": values("bool", (5,), seed=1)}
    assert_same(*run_both(model, feeds))


@pytest.mark.parametrize(
    "dtype", ["float32", "float16", "int64", "int32", "int8", "bool"]
)
def test_where(dtype):
    """onnxruntime has no int8 or bool Where: numpy's is the reference there."""
    model = model_of(
        [node("Where", ["c", "x", "z"])],
        {"c": ((2, 3), "bool"), "x": ((2, 3), dtype), "z": ((3,), dtype)},
        {"y": ((2, 3), dtype)},
    )
    feeds = {
        "c": values("bool", (2, 3)),
        "x": values(dtype, (2, 3), seed=1),
        "z": values(dtype, (3,), seed=2),
    }
    where = lambda c, x, z: np.where(c, x, z)  # noqa: E731
    assert_same(*run_both(model, feeds, reference=where))


# -- integer arithmetic ----------------------------------------------------------------


@pytest.mark.parametrize("op", ["Add", "Sub", "Mul", "Div", "Max", "Min"])
@pytest.mark.parametrize("dtype", ["int64", "int32", "int8", "float64"])
def test_integer_and_float64_arithmetic(op, dtype):
    model = model_of(
        [node(op, ["a", "b"])],
        {"a": ((4, 6), dtype), "b": ((6,), dtype)},
        {"y": ((4, 6), dtype)},
    )
    a = values(dtype, (4, 6))
    b = values(dtype, (6,), seed=1, nonzero=True)
    b[:2] = [-3, 3]  # ONNX's integer Div truncates toward zero: -7 / 3 = -2
    assert_same(*run_both(model, {"a": a, "b": b}))


def test_integer_div_truncates_toward_zero():
    model = model_of(
        [node("Div", ["a", "b"])],
        {"a": ((4,), "int64"), "b": ((4,), "int64")},
        {"y": ((4,), "int64")},
    )
    feeds = {"a": np.array([-7, 7, -7, 7]), "b": np.array([2, -2, -2, 2])}
    got, expected = run_both(model, feeds)
    np.testing.assert_array_equal(got[0], [-3, -3, 3, 3])
    assert_same(got, expected)


@pytest.mark.parametrize("op", ["Neg", "Abs", "Sign"])
@pytest.mark.parametrize("dtype", ["int64", "int32", "int8", "float32"])
def test_integer_unary(op, dtype):
    model = model_of([node(op, ["x"])], {"x": ((3, 5), dtype)}, {"y": ((3, 5), dtype)})
    assert_same(*run_both(model, {"x": values(dtype, (3, 5))}))


@pytest.mark.parametrize("fmod", [0, 1])
@pytest.mark.parametrize("dtype", ["int64", "int32", "int8", "float32", "float16"])
def test_mod_sign_rules(fmod, dtype):
    if dtype.startswith("float") and not fmod:
        pytest.skip("ONNX defines fmod=0 on floats only from opset 28")
    model = model_of(
        [node("Mod", ["a", "b"], fmod=fmod)],
        {"a": ((4, 6), dtype), "b": ((6,), dtype)},
        {"y": ((4, 6), dtype)},
    )
    a = values(dtype, (4, 6))
    b = values(dtype, (6,), seed=1, nonzero=True)
    if dtype.startswith("float"):
        b[b == 0] = 3.0
    a[0, :4], b[:4] = [-7, 7, -7, 7], [3, -3, -3, 3]  # every sign pair
    got, expected = run_both(model, {"a": a, "b": b})
    reference = (np.fmod if fmod else np.mod)(a, b)
    np.testing.assert_array_equal(got[0], reference)
    assert_same(got, expected)


def test_float_mod_is_numpys_from_opset_28():
    """Mod with fmod=0 on floats (opset 28, past onnxruntime's): numpy's mod."""
    x = np.array([-7.5, 7.5, -7.5, 7.5, 0.0, 5.0], np.float32)
    d = np.array([2.0, -2.0, -2.0, 2.0, 3.0, np.inf], np.float32)
    model = model_of(
        [node("Mod", ["a", "b"])],
        {"a": ((6,), "float32"), "b": ((6,), "float32")},
        {"y": ((6,), "float32")},
        opset=28,
    )
    model.ir_version = 13
    gm = GraphModule(ember.compile_model(model)["default"](cpu()))
    gm.run(a=x, b=d)
    np.testing.assert_array_equal(gm.get_output(0).numpy(), np.mod(x, d))


# -- cast --------------------------------------------------------------------------------

CAST_TYPES = ["float32", "float16", "int64", "int32", "int8", "bool"]


@pytest.mark.parametrize("to", CAST_TYPES)
@pytest.mark.parametrize("source", CAST_TYPES)
def test_cast_pairs(source, to):
    """float to int truncates toward zero; anything to bool is `!= 0`; integers
    narrow by wrapping (int64 300 to int8 is 44), as onnxruntime. A cast to
    the input's own type imports as nothing (and a model computing nothing is
    refused), so those pairs cast to and back."""
    nodes = [node("Cast", ["x"], to=ONNX_TYPES[to])]
    if source == to:
        nodes = [
            node("Cast", ["x"], ["t"], to=ONNX_TYPES["float64"]),
            node("Cast", ["t"], to=ONNX_TYPES[to]),
        ]
    model = model_of(nodes, {"x": ((4, 5), source)}, {"y": ((4, 5), to)})
    x = values(source, (4, 5))
    if source.startswith("float"):
        x.flat[3:7] = [-0.7, 0.7, 99.9, -99.9]
    elif source != "bool" and source != "int8":
        x.flat[3:6] = [300, -300, 128]
    assert_same(*run_both(model, {"x": x}))


def test_cast_nan_to_bool_is_true():
    model = model_of(
        [node("Cast", ["x"], to=TensorProto.BOOL)],
        {"x": ((3,), "float32")},
        {"y": ((3,), "bool")},
    )
    got, expected = run_both(model, {"x": np.array([np.nan, 0.0, -0.0], np.float32)})
    np.testing.assert_array_equal(got[0], [True, False, False])
    assert_same(got, expected)


@pytest.mark.parametrize("like", ["int64", "float16", "bool"])
def test_castlike_to_a_computed_tensors_type(like):
    model = model_of(
        [node("CastLike", ["x", "t"])],
        {"x": ((2, 3), "float32"), "t": ((1,), like)},
        {"y": ((2, 3), like)},
    )
    feeds = {"x": values("float32", (2, 3)), "t": values(like, (1,))}
    assert_same(*run_both(model, feeds))


def test_a_cast_to_bfloat16_is_refused_naming_it():
    model = model_of(
        [node("Cast", ["x"], to=TensorProto.BFLOAT16)],
        {"x": ((3,), "float32")},
        {"y": ((3,), "float32")},
    )
    with pytest.raises(OnnxImportError, match=r"Cast \(to=bfloat16\)"):
        from_onnx(model)


def test_a_float16_conv_is_refused_naming_the_op_and_dtype():
    w = np.ones((2, 1, 1, 1), np.float16)
    model = model_of(
        [node("Conv", ["x", "w"])],
        {"x": ((1, 1, 2, 2), "float16")},
        {"y": ((1, 2, 2, 2), "float16")},
        {"w": w},
    )
    with pytest.raises(
        ember.runtime.errors.EmberError, match="no float16 kernel for 'graph.conv2d'"
    ):
        ember.compile_model(model)


# -- float16 ---------------------------------------------------------------------------


def test_float16_elementwise_chain_computes_in_float32():
    """A fused float16 chain computes in float32 and rounds its result once, as
    onnxruntime's CPU kernels (float16 Mul, Add, Div, Relu, Sub run as float32
    between casts; rounding after each op differs by up to 2% here)."""
    model = model_of(
        [
            node("Mul", ["a", "b"], ["m"]),
            node("Add", ["m", "a"], ["s"]),
            node("Div", ["s", "b"], ["d"]),
            node("Relu", ["d"], ["r"]),
            node("Sub", ["r", "a"]),
        ],
        {"a": ((8, 16), "float16"), "b": ((16,), "float16")},
        {"y": ((8, 16), "float16")},
    )
    b = values("float16", (16,), seed=1)
    b[b == 0] = 1.0
    got, expected = run_both(model, {"a": values("float16", (8, 16)), "b": b})
    assert_same(got, expected, rtol=1e-3, atol=1e-3)


# -- a model with token ids and a mask --------------------------------------------------


def test_token_ids_and_mask_model():
    """int64 token ids and a bool attention mask: the ids' parity and range
    select between two float paths, masked scores go to -1e4 before a softmax;
    int64, bool and float32 outputs."""
    scale = np.linspace(-1, 1, 16, dtype=np.float32)
    model = model_of(
        [
            node("Cast", ["ids"], ["f"], to=TensorProto.FLOAT),
            node("Mul", ["f", "scale"], ["scores"]),
            node("Mod", ["ids", "two"], ["parity"]),
            node("Equal", ["parity", "zero"], ["even"]),
            node("Less", ["ids", "limit"], ["small"]),
            node("And", ["even", "small"], ["keep"]),
            node("Or", ["keep", "mask"], ["either"]),
            node("Not", ["mask"], ["masked"]),
            node("Where", ["masked", "neg", "scores"], ["hidden"]),
            node("Softmax", ["hidden"], ["probs"], axis=-1),
            node("CastLike", ["either", "ids"], ["count"]),
            node("Add", ["count", "ids"], ["shifted"]),
        ],
        {"ids": ((2, 16), "int64"), "mask": ((2, 16), "bool")},
        {
            "probs": ((2, 16), "float32"),
            "shifted": ((2, 16), "int64"),
            "either": ((2, 16), "bool"),
        },
        {
            "scale": scale,
            "two": np.array(2, np.int64),
            "zero": np.array(0, np.int64),
            "limit": np.array(500, np.int64),
            "neg": np.array(-1e4, np.float32),
        },
    )
    rng = np.random.default_rng(3)
    feeds = {
        "ids": rng.integers(0, 1000, (2, 16)).astype(np.int64),
        "mask": rng.integers(0, 2, (2, 16)).astype(bool),
    }
    got, expected = run_both(model, feeds)
    assert_same(got, expected, rtol=1e-5, atol=1e-6)


def test_params_of_every_dtype_in_the_blob_and_an_exported_library(tmp_path):
    """int64, int8, float16 and bool weights (past the literal size) are params:
    the model metadata names their dtypes, the separate blob and an exported
    library both carry them, and the results match onnxruntime."""
    from ember.runtime import load_module
    from ember.runtime.params import save_param_dict

    rng = np.random.default_rng(7)
    weights = {
        "offsets": rng.integers(-50, 50, (32,)).astype(np.int64),
        "bias8": rng.integers(-20, 20, (32,)).astype(np.int8),
        "scale16": rng.standard_normal(32).astype(np.float16),
        "keep": rng.integers(0, 2, (32,)).astype(bool),
    }
    model = model_of(
        [
            node("Add", ["ids", "offsets"], ["shifted"]),
            node("Cast", ["shifted"], ["narrow"], to=TensorProto.INT8),
            node("Add", ["narrow", "bias8"], ["y8"]),
            node("Cast", ["ids"], ["h"], to=TensorProto.FLOAT16),
            node("Mul", ["h", "scale16"], ["y16"]),
            node("Not", ["keep"], ["drop"]),
            node("Or", ["drop", "mask"], ["ymask"]),
        ],
        {"ids": ((2, 32), "int64"), "mask": ((2, 32), "bool")},
        {
            "y8": ((2, 32), "int8"),
            "y16": ((2, 32), "float16"),
            "ymask": ((2, 32), "bool"),
        },
        weights,
    )
    feeds = {
        "ids": rng.integers(0, 60, (2, 32)).astype(np.int64),
        "mask": rng.integers(0, 2, (2, 32)).astype(bool),
    }
    session = ort.InferenceSession(
        model.SerializeToString(), providers=["CPUExecutionProvider"]
    )
    expected = session.run(None, feeds)

    mod = ember.compile_model(model, embed_params=False)
    meta = mod.metadata["model"]
    assert [t["dtype"] for t in meta["inputs"]] == ["int64", "bool"]
    assert [t["dtype"] for t in meta["outputs"]] == ["int8", "float16", "bool"]
    assert {e["dtype"] for e in meta["params"].values()} == {
        "int64",
        "int8",
        "float16",
        "bool",
    }
    gm = GraphModule(mod["default"](cpu()))
    gm.load_params(save_param_dict(mod.params))
    gm.run(**feeds)
    got = [gm.get_output(i).numpy() for i in range(3)]
    assert_same(got, expected, rtol=1e-3, atol=1e-3)

    lib = tmp_path / "dtypes.so"
    ember.compile_model(model).export_library(str(lib))
    loaded = GraphModule(load_module(str(lib))["default"](cpu()))
    loaded.run(**feeds)
    got = [loaded.get_output(i).numpy() for i in range(3)]
    assert_same(got, expected, rtol=1e-3, atol=1e-3)


@pytest.mark.parametrize(
    "op", ["Sigmoid", "Tanh", "Exp", "Sqrt", "Relu", "Neg", "Abs", "Erf", "Softplus"]
)
def test_float16_unary_ops(op):
    """float16 math computed in float32 (fastmath's forms) and rounded once:
    against onnxruntime, or float32 numpy rounded where it has no float16 kernel."""
    import math

    numpy_forms = {
        "Sigmoid": lambda x: 1 / (1 + np.exp(-x)),
        "Tanh": np.tanh,
        "Exp": np.exp,
        "Sqrt": np.sqrt,
        "Relu": lambda x: np.maximum(x, 0),
        "Neg": np.negative,
        "Abs": np.abs,
        "Erf": np.vectorize(math.erf),
        "Softplus": lambda x: np.log1p(np.exp(x)),
    }
    model = model_of(
        [node(op, ["x"])], {"x": ((4, 8), "float16")}, {"y": ((4, 8), "float16")}
    )
    x = (np.random.default_rng(2).standard_normal((4, 8)) * 2).astype(np.float16)
    if op == "Sqrt":
        x = np.abs(x)

    def reference(x):
        return numpy_forms[op](x.astype(np.float64)).astype(np.float16)

    got, expected = run_both(model, {"x": x}, reference=reference)
    assert_same(got, expected, rtol=2e-3, atol=2e-3)
