"""ONNX normalizations and data movement as computation (frontends/onnx_data.py):
LayerNormalization (and the decomposed form older exporters write),
InstanceNormalization, GroupNormalization, Gelu's erf form written out, Slice,
Split, Expand, Tile, Trilu, CumSum, DepthToSpace, SpaceToDepth. Each imported
and checked by its numpy semantics against onnxruntime, then compiled and run
against onnxruntime, alone and fused with its neighbours."""

import numpy as np
import pytest

pytest.importorskip("onnxruntime")

from test_onnx_frontend import (  # noqa: E402
    check,
    make_model,
    node,
    ort_session,
    rand,
)

from ember.frontends.onnx import OnnxImportError, from_onnx  # noqa: E402


@pytest.fixture(scope="module")
def kernel_cache(tmp_path_factory):
    from ember.backends.kernel_cache import CompileCache

    return CompileCache(tmp_path_factory.mktemp("cache"))


def compiled(model, feeds, cache, kernels=None, rtol=1e-5, atol=1e-5):
    """Compile `model`, run it on `feeds` and compare every output with
    onnxruntime's; `kernels`: how many kernels the model compiles to."""
    from ember.compiler.model import compile_model
    from ember.runtime import GraphModule, cpu

    want = ort_session(model).run(None, feeds)
    mod = compile_model(model, cache=cache)
    if kernels is not None:
        assert mod.compile_stats.kernels == kernels
    module = GraphModule(mod["default"](cpu()))
    for name, value in feeds.items():
        module.set_input(name, value)
    module.run()
    for i, w in enumerate(want):
        got = module.get_output(i).numpy()
        assert got.shape == w.shape
        np.testing.assert_allclose(got, w, rtol=rtol, atol=atol)


def i64(*values):
    return np.array(values, np.int64)


# -- normalizations -------------------------------------------------------------------


@pytest.mark.parametrize("axis, bias", [(-1, True), (1, True), (0, False)])
def test_layer_normalization(axis, bias, kernel_cache):
    inits = {"g": rand(*(2, 5, 12)[axis:], seed=2)}
    if bias:
        inits["b"] = rand(*(2, 5, 12)[axis:], seed=3)
    model = make_model(
        [node("LayerNormalization", ["x", *inits], axis=axis, epsilon=1e-3)],
        {"x": (2, 5, 12)},
        ["y"],
        inits,
    )
    module, _ = check(model, ["graph.layer_norm"], absent=["graph.reduce_mean"])
    compiled(model, {"x": rand(2, 5, 12, seed=4)}, kernel_cache, kernels=1)


def test_layer_normalization_mean_and_inv_std_dev_outputs(kernel_cache):
    model = make_model(
        [node("LayerNormalization", ["x", "g"], ["y", "mean", "inv"], axis=1)],
        {"x": (3, 4, 5)},
        ["y", "mean", "inv"],
        {"g": rand(4, 5, seed=2)},
    )
    check(model, ["graph.layer_norm", "graph.reduce_mean"])
    compiled(model, {"x": rand(3, 4, 5, seed=4)}, kernel_cache)


def test_layer_normalization_takes_its_neighbours_as_an_epilogue(kernel_cache):
    """LayerNorm -> Mul by a param -> Add a residual -> Gelu: one kernel."""
    model = make_model(
        [
            node("LayerNormalization", ["x", "g", "b"], ["n"], "ln"),
            node("Mul", ["n", "s"], ["m"], "mul"),
            node("Add", ["m", "r"], ["a"], "add"),
            node("Gelu", ["a"], ["y"], "gelu"),
        ],
        {"x": (4, 7, 40), "r": (4, 7, 40)},
        ["y"],
        {"g": rand(40, seed=2), "b": rand(40, seed=3), "s": rand(40, seed=5)},
        opset=20,
    )
    feeds = {"x": rand(4, 7, 40, seed=6), "r": rand(4, 7, 40, seed=7)}
    compiled(model, feeds, kernel_cache, kernels=1)


def test_decomposed_layer_norm_as_older_exporters_write_it(kernel_cache):
    """ReduceMean, Sub, Pow, ReduceMean, Add, Sqrt, Div, Mul, Add."""
    model = make_model(
        [
            node("ReduceMean", ["x"], ["mean"], "mean", axes=[-1]),
            node("Sub", ["x", "mean"], ["d"], "sub"),
            node("Pow", ["d", "two"], ["sq"], "pow"),
            node("ReduceMean", ["sq"], ["var"], "var", axes=[-1]),
            node("Add", ["var", "eps"], ["ve"], "add_eps"),
            node("Sqrt", ["ve"], ["std"], "sqrt"),
            node("Div", ["d", "std"], ["n"], "div"),
            node("Mul", ["n", "g"], ["m"], "mul"),
            node("Add", ["m", "b"], ["y"], "add"),
        ],
        {"x": (2, 6, 32)},
        ["y"],
        {
            "two": np.float32(2),
            "eps": np.float32(1e-5),
            "g": rand(32, seed=2),
            "b": rand(32, seed=3),
        },
    )
    check(model, ["graph.reduce_mean", "graph.pow"])
    compiled(model, {"x": rand(2, 6, 32, seed=4)}, kernel_cache)


def test_decomposed_erf_gelu(kernel_cache):
    """x * 0.5 * (1 + erf(x / sqrt 2)) as torch's exporter writes it before
    opset 20: Div, Erf, Add, Mul, Mul, one injective kernel."""
    model = make_model(
        [
            node("Div", ["x", "sqrt2"], ["s"], "div"),
            node("Erf", ["s"], ["e"], "erf"),
            node("Add", ["e", "one"], ["p"], "add"),
            node("Mul", ["x", "p"], ["m"], "mul"),
            node("Mul", ["m", "half"], ["y"], "mul_half"),
        ],
        {"x": (3, 50)},
        ["y"],
        {
            "sqrt2": np.float32(np.sqrt(2)),
            "one": np.float32(1),
            "half": np.float32(0.5),
        },
    )
    feeds = {"x": 4 * rand(3, 50, seed=4)}
    check(model, ["graph.erf"], feeds=feeds)
    compiled(model, feeds, kernel_cache, kernels=1)


def test_instance_normalization(kernel_cache):
    model = make_model(
        [node("InstanceNormalization", ["x", "s", "b"], epsilon=1e-4)],
        {"x": (2, 3, 5, 6)},
        ["y"],
        {"s": rand(3, seed=2), "b": rand(3, seed=3)},
    )
    check(model, ["graph.layer_norm"])
    compiled(model, {"x": rand(2, 3, 5, 6, seed=4)}, kernel_cache)


def test_group_normalization(kernel_cache):
    """Opset 21's form (scale and bias per channel; onnx's checker refuses the
    deprecated opset-18 form, per group)."""
    model = make_model(
        [node("GroupNormalization", ["x", "s", "b"], num_groups=2, epsilon=1e-4)],
        {"x": (2, 6, 3, 4)},
        {"y": (2, 6, 3, 4)},
        {"s": rand(6, seed=2), "b": rand(6, seed=3)},
        opset=21,
    )
    check(model, ["graph.layer_norm"])
    compiled(model, {"x": rand(2, 6, 3, 4, seed=4)}, kernel_cache)


# -- data movement --------------------------------------------------------------------

SLICES = [
    # starts, ends, axes, steps
    ((1, 0), (3, 4), (0, 1), (1, 2)),
    ((-1,), (-100,), (1,), (-1,)),  # reversed, the end clamped
    ((5, -3), (1, 2**62), (1, 0), (-2, 1)),
    ((2,), (1000,), (-1,), (3,)),
]


@pytest.mark.parametrize("starts, ends, axes, steps", SLICES)
def test_slice_of_a_computed_tensor(starts, ends, axes, steps, kernel_cache):
    model = make_model(
        [
            node("Relu", ["x"], ["r"], "relu"),
            node("Slice", ["r", "st", "en", "ax", "sp"], ["y"], "slice"),
        ],
        {"x": (5, 9)},
        ["y"],
        {"st": i64(*starts), "en": i64(*ends), "ax": i64(*axes), "sp": i64(*steps)},
    )
    check(model, ["graph.slice"])
    compiled(model, {"x": rand(5, 9, seed=4)}, kernel_cache, kernels=1)


@pytest.mark.parametrize(
    "opset, attrs, split", [(13, {}, (2, 5, 1)), (18, {"num_outputs": 3}, None)]
)
def test_split(opset, attrs, split, kernel_cache):
    inputs, inits = ["x"], {}
    if split:
        inputs.append("split")
        inits["split"] = i64(*split)
    model = make_model(
        [node("Split", inputs, ["a", "b", "c"], "split", axis=1, **attrs)],
        {"x": (3, 8)},
        ["a", "b", "c"],
        inits,
        opset=opset,
    )
    module, _ = check(model, ["graph.slice"])
    compiled(model, {"x": rand(3, 8, seed=4)}, kernel_cache)


def test_expand_tile_trilu_fuse_into_one_kernel(kernel_cache):
    """Expand (3, 1) by (2, 3, 4), Tile (1, 1, 2), Trilu lower k=1, Add."""
    model = make_model(
        [
            node("Expand", ["x", "shape"], ["e"], "expand"),
            node("Tile", ["e", "reps"], ["t"], "tile"),
            node("Trilu", ["t", "k"], ["l"], "trilu", upper=0),
            node("Add", ["l", "z"], ["y"], "add"),
        ],
        {"x": (3, 1), "z": (2, 3, 8)},
        ["y"],
        {"shape": i64(2, 3, 4), "reps": i64(1, 1, 2), "k": i64(1)},
    )
    check(model, ["graph.broadcast_to", "graph.tile", "graph.trilu"])
    feeds = {"x": rand(3, 1, seed=4), "z": rand(2, 3, 8, seed=5)}
    compiled(model, feeds, kernel_cache, kernels=1)


@pytest.mark.parametrize("exclusive, reverse", [(0, 0), (1, 0), (0, 1), (1, 1)])
def test_cumsum(exclusive, reverse, kernel_cache):
    model = make_model(
        [
            node("CumSum", ["x", "axis"], ["c"], exclusive=exclusive, reverse=reverse),
            node("Mul", ["c", "two"], ["y"], "mul"),
        ],
        {"x": (3, 7)},
        ["y"],
        {"axis": i64(-1), "two": np.float32(2)},
    )
    check(model, ["graph.cumsum"])
    compiled(model, {"x": rand(3, 7, seed=4)}, kernel_cache, kernels=1)


@pytest.mark.parametrize("mode", ["DCR", "CRD"])
def test_depth_to_space_and_back(mode, kernel_cache):
    model = make_model(
        [
            node("DepthToSpace", ["x"], ["d"], "d2s", blocksize=2, mode=mode),
            node("SpaceToDepth", ["d"], ["y"], "s2d", blocksize=2),
        ],
        {"x": (1, 8, 3, 2)},
        ["y"],
    )
    check(model, ["graph.depth_to_space", "graph.space_to_depth"])
    compiled(model, {"x": rand(1, 8, 3, 2, seed=4)}, kernel_cache, kernels=1)


def test_computed_slice_bounds_are_refused_naming_them():
    model = make_model(
        [node("Slice", ["x", "st", "en"], ["y"], "slice")],
        {"x": (4,), "st": (1,), "en": (1,)},
        {"y": (2,)},
    )
    # onnx's checker wants int64 bounds; the float inputs stand for computed ones
    with pytest.raises(OnnxImportError, match="Slice .starts computed by the model"):
        from_onnx(model)


def test_an_empty_slice_as_an_output_is_refused():
    """An empty slice is known at import (Concat drops it:
    tests/test_onnx_symbolic_ops.py); ember's tensors have elements, so a
    model that returns one is refused."""
    model = make_model(
        [node("Slice", ["x", "st", "en"], ["y"], "slice")],
        {"x": (4,)},
        ["y"],
        {"st": i64(3), "en": i64(1)},
    )
    with pytest.raises(OnnxImportError, match=r"output 'y' is empty \(shape \[0\]\)"):
        from_onnx(model)


# -- images ---------------------------------------------------------------------------

CONV_TRANSPOSE = [
    # (data shape, weight shape, attributes)
    ((1, 3, 4, 5), (3, 2, 3, 3), {}),
    ((2, 4, 3, 3), (4, 3, 3, 2), {"strides": [2, 3], "pads": [1, 0, 0, 1]}),
    ((1, 4, 4, 4), (4, 2, 3, 3), {"strides": [2, 2], "output_padding": [1, 1], "group": 2}),
    ((1, 2, 3, 4), (2, 2, 2, 2), {"dilations": [2, 1], "pads": [0, 1, 1, 0]}),
    ((1, 2, 3, 3), (2, 3, 3, 3), {"strides": [3, 2], "output_shape": [10, 8]}),
    ((1, 2, 3, 3), (2, 1, 3, 3), {"strides": [2, 2], "auto_pad": "SAME_UPPER"}),
    ((2, 3, 7), (3, 2, 3), {"strides": [2], "pads": [1, 0]}),  # 1-D
]  # fmt: skip


@pytest.mark.parametrize("x_shape, w_shape, attrs", CONV_TRANSPOSE)
def test_conv_transpose_then_relu(x_shape, w_shape, attrs, kernel_cache):
    out_channels = w_shape[1] * attrs.get("group", 1)
    model = make_model(
        [
            node("ConvTranspose", ["x", "w", "b"], ["c"], "deconv", **attrs),
            node("Relu", ["c"], ["y"], "relu"),
        ],
        {"x": x_shape},
        ["y"],
        {"w": rand(*w_shape, seed=2), "b": rand(out_channels, seed=3)},
    )
    check(model, ["graph.conv2d_transpose"])
    # 1-D: reshapes around the 2-D op keep the Relu out of its epilogue
    kernels = 1 if len(x_shape) == 4 else None
    compiled(model, {"x": rand(*x_shape, seed=4)}, kernel_cache, kernels=kernels)


RESIZES = [
    # (attributes, scales, sizes)
    ({"mode": "nearest"}, [1, 1, 2, 2], None),
    ({"mode": "nearest", "nearest_mode": "floor",
      "coordinate_transformation_mode": "asymmetric"}, [1, 1, 0.5, 1.5], None),
    ({"mode": "nearest", "nearest_mode": "round_prefer_ceil",
      "coordinate_transformation_mode": "align_corners"}, None, [1, 2, 7, 3]),
    ({"mode": "nearest", "nearest_mode": "ceil"}, None, [1, 2, 3, 9]),
    ({"mode": "linear"}, [1, 1, 2, 2], None),
    ({"mode": "linear", "coordinate_transformation_mode": "align_corners"},
     None, [1, 2, 9, 4]),
    ({"mode": "linear", "coordinate_transformation_mode": "pytorch_half_pixel"},
     None, [1, 2, 3, 1]),
]  # fmt: skip


@pytest.mark.parametrize("attrs, scales, sizes", RESIZES)
def test_resize_then_add_is_one_kernel(attrs, scales, sizes, kernel_cache):
    inputs = ["x", "", "scales"] if scales else ["x", "", "", "sizes"]
    inits = (
        {"scales": np.array(scales, np.float32)} if scales else {"sizes": i64(*sizes)}
    )
    x_shape = (1, 2, 4, 6)
    out = sizes or [int(n * s) for n, s in zip(x_shape, scales, strict=True)]
    model = make_model(
        [
            node("Resize", inputs, ["r"], "resize", **attrs),
            node("Add", ["r", "z"], ["y"], "add"),
        ],
        {"x": x_shape, "z": tuple(out)},
        ["y"],
        inits,
        opset=19,
    )
    check(model, ["graph.resize"])
    feeds = {"x": rand(*x_shape, seed=4), "z": rand(*out, seed=5)}
    compiled(model, feeds, kernel_cache, kernels=1)


def test_unknown_resize_mode_is_refused_naming_the_mode():
    model = make_model(
        [node("Resize", ["x", "", "scales"], ["y"], "resize", mode="lanczos")],
        {"x": (1, 1, 2, 2)},
        {"y": (1, 1, 4, 4)},
        {"scales": np.array([1, 1, 2, 2], np.float32)},
    )
    with pytest.raises(OnnxImportError, match="Resize .mode='lanczos'"):
        from_onnx(model)


@pytest.mark.parametrize(
    "op, attrs",
    [
        ("Conv", {"strides": [2], "pads": [1, 2], "dilations": [2]}),
        ("Conv", {"auto_pad": "SAME_UPPER", "group": 2}),
        ("MaxPool", {"kernel_shape": [3], "strides": [2], "pads": [1, 1]}),
        ("AveragePool", {"kernel_shape": [2], "count_include_pad": 1, "pads": [1, 0]}),
    ],
)
def test_one_dimensional_conv_and_pools_as_rows(op, attrs, kernel_cache):
    inputs, inits = ["x"], {}
    if op == "Conv":
        inputs += ["w", "b"]
        inits = {"w": rand(6, 4 // attrs.get("group", 1), 3, seed=2), "b": rand(6)}
    model = make_model(
        [node(op, inputs, ["c"], "op", **attrs), node("Relu", ["c"], ["y"], "relu")],
        {"x": (2, 4, 11)},
        ["y"],
        inits,
    )
    check(model)
    compiled(model, {"x": rand(2, 4, 11, seed=4)}, kernel_cache)


@pytest.mark.parametrize("dtype", [np.int64, np.int32, np.float64])
def test_cumsum_of_integers_and_doubles(dtype, kernel_cache):
    """Position ids from a mask (int64 CumSum), and the other dtypes CumSum
    computes."""
    from onnx import helper, numpy_helper

    elem = helper.np_dtype_to_tensor_dtype(np.dtype(dtype))
    graph = helper.make_graph(
        [node("CumSum", ["x", "axis"], ["y"], "cumsum", exclusive=1)],
        "test",
        [helper.make_tensor_value_info("x", elem, (2, 9))],
        [helper.make_tensor_value_info("y", elem, (2, 9))],
        [numpy_helper.from_array(i64(1), "axis")],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    x = np.random.default_rng(3).integers(-5, 5, (2, 9)).astype(dtype)
    compiled(model, {"x": x}, kernel_cache, kernels=1)


def test_conv_transpose_with_a_weight_computed_at_run_time(kernel_cache):
    """A weight that is a model input cannot be flipped at compile time: the
    gathering kernel computes it."""
    model = make_model(
        [
            node(
                "ConvTranspose",
                ["x", "w"],
                ["y"],
                "deconv",
                strides=[2, 2],
                pads=[1, 0, 0, 1],
            )
        ],
        {"x": (1, 4, 3, 5), "w": (4, 2, 3, 3)},
        ["y"],
    )
    feeds = {"x": rand(1, 4, 3, 5, seed=4), "w": rand(4, 2, 3, 3, seed=5)}
    compiled(model, feeds, kernel_cache, kernels=1)


@pytest.mark.parametrize(
    "op, attrs",
    [
        ("MaxPool", {"kernel_shape": [2, 3, 2], "strides": [2, 1, 2], "pads": [1, 0, 1, 0, 1, 1]}),
        ("MaxPool", {"kernel_shape": [3, 2, 2], "dilations": [2, 1, 1], "ceil_mode": 1, "strides": [2, 2, 2]}),
        ("AveragePool", {"kernel_shape": [3, 3, 2], "pads": [1, 1, 0, 1, 1, 1], "strides": [2, 2, 1]}),
        ("AveragePool", {"kernel_shape": [2, 2, 2], "pads": [1, 0, 1, 1, 0, 1], "count_include_pad": 1}),
        ("AveragePool", {"kernel_shape": [3, 2, 3], "auto_pad": "SAME_UPPER", "strides": [2, 2, 2]}),
        ("AveragePool", {"kernel_shape": [2, 3, 2], "ceil_mode": 1, "strides": [2, 2, 2], "pads": [0, 1, 0, 0, 1, 0]}),
    ],
)  # fmt: skip
def test_three_dimensional_pools_as_two_separable_pools(op, attrs, kernel_cache):
    model = make_model(
        [node(op, ["x"], ["y"], "pool", **attrs)], {"x": (2, 3, 7, 6, 5)}, ["y"]
    )
    check(model)
    compiled(model, {"x": rand(2, 3, 7, 6, 5, seed=4)}, kernel_cache)
