"""Resampling and small ONNX ops against onnxruntime: Resize through its
import-time matrices (cubic with cubic_coeff_a and exclude_outside,
antialias, tf_crop_and_resize with an extrapolation value,
half_pixel_symmetric, linear over three axes), GridSample (every mode and
padding, 2-D and 3-D), AffineGrid, Col2Im (2-D and 3-D), Conv and Gemm whose
weight is a graph input, the window functions, Dropout's mask, Clip with
min > max and on integers, Det, BatchNormalization's training outputs and
the Optional ops on tensors; and the refusals of what ember does not take."""

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from ember.frontends.onnx import (
    OnnxImportError,
    UnsupportedOperatorError,
    from_onnx,
)

ort = pytest.importorskip("onnxruntime")

from onnx_util import check, single  # noqa: E402

RNG = np.random.default_rng(0)


def rand(*shape, scale=1.0):
    return (RNG.standard_normal(shape) * scale).astype(np.float32)


def f32(*values):
    return np.asarray(values, np.float32)


def i64(*values):
    return np.asarray(values, np.int64)


def graph_model(nodes, inputs, outputs, inits=(), opset=20):
    """A model of `nodes` over float32 `inputs` (name: array) and initializers
    `inits` (arrays), its `outputs` typed by shape inference."""
    graph = helper.make_graph(
        nodes,
        "model",
        [
            helper.make_tensor_value_info(n, TensorProto.FLOAT, v.shape)
            for n, v in inputs.items()
        ],
        [onnx.ValueInfoProto(name=n) for n in outputs],
        [numpy_helper.from_array(v, n) for n, v in dict(inits).items()],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = 10
    return onnx.shape_inference.infer_shapes(model)


def _refusal(model) -> str:
    with pytest.raises((UnsupportedOperatorError, OnnxImportError)) as info:
        from_onnx(model)
    return str(info.value)


# -- Resize ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "attrs, consts",
    [
        # cubic downsampling to sizes with a = -0.5 and the outside excluded
        (
            {"mode": "cubic", "cubic_coeff_a": -0.5, "exclude_outside": 1},
            {"sizes": i64(1, 2, 4, 7)},
        ),
        # antialiased linear downsampling, aspect ratio kept, over axes
        (
            {
                "mode": "linear",
                "antialias": 1,
                "axes": [2, 3],
                "keep_aspect_ratio_policy": "not_smaller",
            },
            {"sizes": i64(3, 3)},
        ),
        # antialiased cubic downsampling with the outside excluded
        (
            {"mode": "cubic", "antialias": 1, "exclude_outside": 1},
            {"scales": f32(1, 1, 0.6, 0.45)},
        ),
        # cubic with half_pixel_symmetric and uneven scales
        (
            {"mode": "cubic", "coordinate_transformation_mode": "half_pixel_symmetric"},
            {"scales": f32(1, 1, 1.7, 0.6)},
        ),
        # nearest tf_crop_and_resize with a fill past the input
        (
            {
                "mode": "nearest",
                "coordinate_transformation_mode": "tf_crop_and_resize",
                "extrapolation_value": 5.0,
            },
            {
                "roi": f32(0, 0, -0.2, 0.3, 1, 1, 0.8, 1.4),
                "sizes": i64(1, 2, 4, 6),
            },
        ),
    ],
)
def test_resize_matrices(attrs, consts):
    x = rand(1, 2, 6, 9)
    order = ["x", *(name if name in consts else "" for name in ("roi", "scales"))]
    order += ["sizes"] if "sizes" in consts else []
    model = single("Resize", {"x": x}, consts, order=order, opset=19, **attrs)
    check(model, {"x": x})


def test_trilinear_resize_of_three_axes():
    x = rand(1, 2, 3, 4, 5)
    scales = f32(1, 1, 2, 1.5, 0.6)
    model = single("Resize", {"x": x}, {"roi": f32(), "scales": scales}, mode="linear")
    check(model, {"x": x})


def test_resize_unknown_mode_is_refused():
    x = rand(1, 1, 4, 4)
    model = single("Resize", {"x": x}, {"roi": f32(), "scales": f32(1, 1, 2, 2)})
    model.graph.node[0].attribute.append(helper.make_attribute("mode", "lanczos"))
    message = _refusal(model)
    assert "Resize" in message and "mode='lanczos'" in message


# -- GridSample, AffineGrid -----------------------------------------------------------


@pytest.mark.parametrize(
    "mode, padding, align",
    [
        ("cubic", "reflection", 0),
        ("cubic", "border", 0),
        ("linear", "reflection", 1),
        ("nearest", "zeros", 0),
    ],
)
def test_grid_sample_2d(mode, padding, align):
    x, grid = rand(2, 3, 5, 6), rand(2, 4, 7, 2, scale=1.2)
    model = single("GridSample", {"x": x, "grid": grid}, mode=mode,
                   padding_mode=padding, align_corners=align)  # fmt: skip
    check(model, {"x": x, "grid": grid})


def test_grid_sample_3d_border():
    x, grid = rand(1, 2, 3, 4, 5), rand(1, 2, 3, 4, 3, scale=1.3)
    model = single("GridSample", {"x": x, "grid": grid}, mode="linear",
                   padding_mode="border")  # fmt: skip
    check(model, {"x": x, "grid": grid})


def test_grid_sample_3d_cubic_is_refused():
    x, grid = rand(1, 1, 2, 3, 4), rand(1, 2, 2, 2, 3)
    message = _refusal(single("GridSample", {"x": x, "grid": grid}, mode="cubic"))
    assert "GridSample" in message and "mode='cubic'" in message


def test_grid_sample_unknown_padding_is_refused():
    x, grid = rand(1, 1, 3, 3), rand(1, 2, 2, 2)
    model = single("GridSample", {"x": x, "grid": grid}, padding_mode="wrap")
    message = _refusal(model)
    assert "GridSample" in message and "padding_mode='wrap'" in message


@pytest.mark.parametrize("align", [0, 1])
def test_affine_grid_then_sample(align):
    """An affine warp as models write it: AffineGrid feeding GridSample."""
    x, theta = rand(2, 3, 5, 7), rand(2, 2, 3, scale=0.5)
    nodes = [
        helper.make_node("AffineGrid", ["theta", "size"], ["grid"],
                         align_corners=align),
        helper.make_node("GridSample", ["x", "grid"], ["y"], align_corners=align),
    ]  # fmt: skip
    inits = {"size": i64(2, 3, 4, 6)}
    model = graph_model(nodes, {"x": x, "theta": theta}, ["y"], inits)
    check(model, {"x": x, "theta": theta})


def test_affine_grid_computed_size_is_refused():
    theta, size = rand(1, 2, 3), i64(1, 1, 2, 2)
    message = _refusal(single("AffineGrid", {"theta": theta, "size": size}, opset=20))
    assert "AffineGrid" in message and "size computed by the model" in message


# -- Col2Im, Conv and Gemm with weights given at run time ---------------------------


def test_col2im_2d_strides_pads_dilations():
    x = rand(1, 2 * 6, 12)
    consts = {"image": i64(6, 7), "block": i64(2, 3)}
    model = single("Col2Im", {"x": x}, consts, opset=18, strides=[2, 1],
                   pads=[1, 0, 0, 1], dilations=[1, 2])  # fmt: skip
    check(model, {"x": x})


def test_col2im_3d():
    x = rand(2, 3 * 8, 16)
    consts = {"image": i64(3, 4, 5), "block": i64(2, 2, 2)}
    check(single("Col2Im", {"x": x}, consts, opset=18, strides=[1, 2, 1]), {"x": x})


@pytest.mark.parametrize(
    "shape, w_shape, attrs",
    [
        ((1, 4, 7, 6), (6, 2, 3, 2), {"group": 2, "strides": [2, 1], "pads": [1, 0, 1, 1]}),
        ((2, 3, 9), (4, 3, 3), {"dilations": [2], "pads": [2, 1], "strides": [2]}),
    ],
)  # fmt: skip
def test_conv_weight_given_at_run_time(shape, w_shape, attrs):
    x, w, b = rand(*shape), rand(*w_shape), rand(w_shape[0])
    check(single("Conv", {"x": x, "w": w, "b": b}, **attrs), {"x": x, "w": w, "b": b})


def test_gemm_transposed_weight_given_at_run_time():
    a, b, c = rand(3, 5), rand(4, 5), rand(4)
    model = single("Gemm", {"a": a, "b": b, "c": c}, transB=1, alpha=0.5, beta=2.0)
    check(model, {"a": a, "b": b, "c": c})


# -- windows, Dropout, Clip, Det, BatchNormalization, Optional ---------------------


@pytest.mark.parametrize("op", ["BlackmanWindow", "HammingWindow", "HannWindow"])
def test_windows(op):
    x = rand(7)
    node = helper.make_node(op, ["size"], ["w"], periodic=0,
                            output_datatype=TensorProto.DOUBLE)  # fmt: skip
    scaled = helper.make_node("Mul", ["x", "w32"], ["y"])
    cast = helper.make_node("Cast", ["w"], ["w32"], to=TensorProto.FLOAT)
    model = graph_model([node, cast, scaled], {"x": x}, ["y", "w"],
                        {"size": np.array(7, np.int64)}, opset=17)  # fmt: skip
    check(model, {"x": x})


def test_dropout_mask_and_zero_ratio_training():
    x = rand(3, 4)
    consts = {"ratio": np.array(0.0, np.float32), "training": np.array(True)}
    check(single("Dropout", {"x": x}, consts, outputs=2), {"x": x})


def test_dropout_random_training_is_refused():
    x = rand(3, 4)
    consts = {"ratio": np.array(0.3, np.float32), "training": np.array(True)}
    message = _refusal(single("Dropout", {"x": x}, consts, outputs=2))
    assert "Dropout" in message and "ratio 0.3" in message


def test_clip_min_above_max_and_on_integers():
    x = rand(2, 5)
    check(single("Clip", {"x": x}, {"lo": f32(0.5), "hi": f32(-0.5)}), {"x": x})
    n = RNG.integers(-50, 50, (2, 5)).astype(np.int32)
    consts = {"lo": np.array(-7, np.int32), "hi": np.array(9, np.int32)}
    check(single("Clip", {"n": n}, consts), {"n": n})


def test_det_batch_of_4x4():
    x = rand(2, 3, 4, 4)
    check(single("Det", {"x": x}), {"x": x}, rtol=1e-4)


def test_large_det_is_refused():
    message = _refusal(single("Det", {"x": rand(6, 6)}))
    assert "Det" in message and "order 1 to 5" in message


def test_batch_norm_training_outputs():
    x = rand(2, 3, 4, 5)
    params = {"s": rand(3), "b": rand(3), "m": rand(3), "v": np.abs(rand(3)) + 0.5}
    model = single("BatchNormalization", {"x": x}, params, outputs=3,
                   training_mode=1, momentum=0.8)  # fmt: skip
    check(model, {"x": x}, atol=1e-4)


def test_optional_ops_on_tensors():
    x = rand(3)
    nodes = [
        helper.make_node("OptionalGetElement", ["x"], ["y"]),
        helper.make_node("OptionalHasElement", ["x"], ["has"]),
        helper.make_node("OptionalHasElement", [""], ["none"]),
    ]
    model = graph_model(nodes, {"x": x}, ["y", "has", "none"], opset=18)
    check(model, {"x": x})


def test_resize_nearest_excluding_outside_is_refused():
    """onnxruntime takes exclude_outside only for cubic and antialiased linear
    filters."""
    x = rand(1, 1, 4, 4)
    model = single("Resize", {"x": x}, {"scales": f32(1, 1, 2, 2)},
                   order=["x", "", "scales"], exclude_outside=1)  # fmt: skip
    message = _refusal(model)
    assert "Resize" in message and "exclude_outside=1" in message
