"""examples/onnx_models.py: the generated models are valid ONNX, run in
onnxruntime with the promised shapes and well-scaled outputs, and are deterministic
by seed."""

import collections
import subprocess
import sys
from pathlib import Path

import numpy as np
import onnx
import pytest

ort = pytest.importorskip("onnxruntime")

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "examples"))
import onnx_models  # noqa: E402


def run(model: onnx.ModelProto, feeds=None) -> np.ndarray:
    session = ort.InferenceSession(
        model.SerializeToString(), providers=["CPUExecutionProvider"]
    )
    feeds = onnx_models.random_input(model) if feeds is None else feeds
    (out,) = session.run(None, feeds)
    return out


def op_counts(model: onnx.ModelProto) -> collections.Counter:
    return collections.Counter(node.op_type for node in model.graph.node)


def param_count(model: onnx.ModelProto) -> int:
    """Trainable parameters (batch-norm running statistics left out), as
    torchvision counts them."""
    return sum(
        int(np.prod(t.dims))
        for t in model.graph.initializer
        if not t.name.endswith(("running_mean", "running_var"))
        and not t.name.startswith("const_")
    )


def assert_well_scaled(out: np.ndarray):
    """Finite, not collapsed to a constant, not blown up."""
    assert np.isfinite(out).all()
    assert 0.05 < out.std() < 20, out.std()


def test_mobilenet_v2_is_the_standard_architecture():
    model = onnx_models.mobilenet_v2()
    counts = op_counts(model)
    # 1 stem + 17 blocks (16 with an expansion conv: 3 convs, 1 without: 2) + 1 head.
    assert counts["Conv"] == 1 + 16 * 3 + 2 + 1 == 52
    assert counts["BatchNormalization"] == 52
    assert counts["Clip"] == 1 + 16 * 2 + 1 + 1 == 35
    assert counts["Add"] == 10  # residual connections
    assert counts["Gemm"] == counts["GlobalAveragePool"] == counts["Reshape"] == 1
    depthwise = [
        n
        for n in model.graph.node
        if n.op_type == "Conv"
        and any(a.name == "group" and a.i > 1 for a in n.attribute)
    ]
    assert len(depthwise) == 17
    assert param_count(model) == 3_504_872  # torchvision's mobilenet_v2
    out = run(model)
    assert out.shape == (1, 1000)
    assert_well_scaled(out)


def test_resnet18_is_the_standard_architecture():
    model = onnx_models.resnet18()
    counts = op_counts(model)
    assert counts["Conv"] == 1 + 16 + 3 == 20
    assert counts["BatchNormalization"] == 20
    assert counts["Relu"] == 1 + 16
    assert counts["Add"] == 8
    assert counts["MaxPool"] == counts["Flatten"] == counts["Gemm"] == 1
    assert param_count(model) == 11_689_512  # torchvision's resnet18
    out = run(model)
    assert out.shape == (1, 1000)
    assert_well_scaled(out)


@pytest.mark.parametrize("opset", [13, 18])
def test_small_cnns_at_other_sizes_and_opsets(opset):
    mobilenet = onnx_models.mobilenet_v2(
        batch=2, size=64, num_classes=10, width=0.5, opset=opset
    )
    assert mobilenet.opset_import[0].version == opset
    assert run(mobilenet).shape == (2, 10)
    resnet = onnx_models.resnet18(batch=2, size=64, num_classes=10, opset=opset)
    out = run(resnet)
    assert out.shape == (2, 10)
    assert_well_scaled(out)


def test_mlp_softmax_rows_sum_to_one():
    model = onnx_models.mlp(batch=4, in_features=32, hidden=(48, 24), num_classes=5)
    assert {"Gemm", "MatMul", "Add", "Relu", "Dropout", "Softmax"} <= set(
        op_counts(model)
    )
    out = run(model)
    assert out.shape == (4, 5)
    np.testing.assert_allclose(out.sum(axis=1), 1, rtol=1e-5)
    assert out.std() > 0.01  # the classes are not all equally likely


def test_mlp_dynamic_batch_is_symbolic():
    model = onnx_models.mlp(dynamic_batch=True)
    dim = model.graph.input[0].type.tensor_type.shape.dim[0]
    assert dim.dim_param == "N"
    x = np.random.default_rng(0).standard_normal((3, 64)).astype(np.float32)
    assert run(model, {"input": x}).shape == (3, 10)


@pytest.mark.parametrize("opset", [13, 17, 18])
def test_transformer_block_variants_agree(opset):
    """Layer norm written out or as LayerNormalization, the head split's shape as a
    constant or computed by Shape/Gather/Unsqueeze/Concat: the same function."""
    kwargs = dict(batch=2, seq=16, d=32, heads=4, opset=opset)
    base = onnx_models.transformer_block(**kwargs)
    counts = op_counts(base)
    assert {"MatMul", "Softmax", "ReduceMean", "Sqrt", "Erf", "Reshape"} <= set(counts)
    assert counts["Transpose"] == 5
    feeds = onnx_models.random_input(base)
    expected = run(base, feeds)
    assert expected.shape == (2, 16, 32)
    assert_well_scaled(expected)
    shaped = onnx_models.transformer_block(shape_ops=True, **kwargs)
    assert {"Shape", "Gather", "Unsqueeze", "Concat"} <= set(op_counts(shaped))
    np.testing.assert_array_equal(run(shaped, feeds), expected)
    if opset >= 17:
        fused = onnx_models.transformer_block(layer_norm="onnx", **kwargs)
        assert "LayerNormalization" in op_counts(fused)
        assert "ReduceMean" not in op_counts(fused)
        np.testing.assert_allclose(run(fused, feeds), expected, rtol=1e-4, atol=1e-4)


def test_reduce_mean_axes_follow_the_opset():
    def axes_inputs(opset):
        model = onnx_models.transformer_block(seq=8, d=16, heads=2, opset=opset)
        nodes = [n for n in model.graph.node if n.op_type == "ReduceMean"]
        return {len(n.input) for n in nodes}, {len(n.attribute) for n in nodes}

    assert axes_inputs(17) == ({1}, {2})  # axes and keepdims attributes
    assert axes_inputs(18) == ({2}, {1})  # axes input, keepdims attribute


def test_deterministic_by_seed():
    a = onnx_models.mobilenet_v2(size=32, width=0.35, seed=3).SerializeToString()
    b = onnx_models.mobilenet_v2(size=32, width=0.35, seed=3).SerializeToString()
    c = onnx_models.mobilenet_v2(size=32, width=0.35, seed=4).SerializeToString()
    assert a == b
    assert a != c
    x = onnx_models.random_input(onnx_models.mlp())
    assert (
        x["input"].tobytes()
        == onnx_models.random_input(onnx_models.mlp())["input"].tobytes()
    )


def test_invalid_arguments_are_refused():
    with pytest.raises(ValueError, match="expected an opset in 13..18, got 12"):
        onnx_models.resnet18(opset=12)
    with pytest.raises(ValueError, match="needs opset 17 or later, got 16"):
        onnx_models.transformer_block(layer_norm="onnx", opset=16)
    with pytest.raises(ValueError, match="expected d divisible by heads"):
        onnx_models.transformer_block(d=30, heads=4)
    with pytest.raises(ValueError, match="symbolic dimension"):
        onnx_models.random_input(onnx_models.mlp(dynamic_batch=True))


def test_cli_writes_a_loadable_model(tmp_path):
    path = tmp_path / "t.onnx"
    script = str(ROOT / "examples" / "onnx_models.py")
    args = ["transformer_block", "-o", str(path), "--seq", "8", "--d", "16"]
    out = subprocess.run(
        [sys.executable, script, *args, "--heads", "2", "--opset", "18"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert "wrote" in out and "transformer_block" in out
    model = onnx.load(str(path))
    onnx.checker.check_model(model)
    assert model.opset_import[0].version == 18
    assert run(model).shape == (1, 8, 16)

    bad = subprocess.run(
        [sys.executable, script, "mlp", "-o", str(path), "--size", "32"],
        capture_output=True,
        text=True,
    )
    assert bad.returncode == 2
    assert "--size does not apply to mlp" in bad.stderr
