"""The audit zoo's CNNs: SqueezeNet, EfficientNet-B0 and RegNetY-400MF from
`examples/onnx_models.py`, laid out as torchvision exports them (torchvision's
parameter counts, to the parameter), valid ONNX that onnxruntime runs with
well-scaled outputs, and compiled by ember to onnxruntime's outputs (relative
error at most 1e-4, the same argmax; `test_model_zoo.check`). The comparisons
against ember are `slow`."""

import collections
import sys
from pathlib import Path

import numpy as np
import onnx
import pytest

ort = pytest.importorskip("onnxruntime")

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "examples"))
import onnx_models  # noqa: E402
from test_model_zoo import check  # noqa: E402

BUILDERS = {
    "squeezenet1_0": lambda **kw: onnx_models.squeezenet("1.0", **kw),
    "squeezenet1_1": lambda **kw: onnx_models.squeezenet("1.1", **kw),
    "efficientnet_b0": onnx_models.efficientnet_b0,
    "regnet_y_400mf": onnx_models.regnet_y_400mf,
}

# torchvision's parameter counts, and the ops its export writes at 224x224.
TORCHVISION = {
    "squeezenet1_0": (1_248_424, {"Conv": 26, "MaxPool": 3, "Concat": 8}),
    "squeezenet1_1": (1_235_496, {"Conv": 26, "MaxPool": 3, "Concat": 8}),
    "efficientnet_b0": (
        5_288_548,
        {"Conv": 81, "BatchNormalization": 49, "Sigmoid": 65, "Add": 9},
    ),
    "regnet_y_400mf": (
        4_344_144,
        {"Conv": 85, "BatchNormalization": 53, "Sigmoid": 16, "Add": 16},
    ),
}


def param_count(model: onnx.ModelProto) -> int:
    """Trainable parameters, as torchvision counts them: no batch-norm running
    statistics, no literal constants."""
    return sum(
        int(np.prod(t.dims))
        for t in model.graph.initializer
        if not t.name.endswith(("running_mean", "running_var"))
        and not t.name.startswith("const_")
    )


@pytest.mark.parametrize("name", sorted(BUILDERS))
def test_the_builder_is_torchvisions_architecture(name):
    model = BUILDERS[name]()
    params, ops = TORCHVISION[name]
    assert param_count(model) == params
    counts = collections.Counter(node.op_type for node in model.graph.node)
    assert {op: counts[op] for op in ops} == ops
    assert "Dropout" not in counts and "SiLU" not in counts


@pytest.mark.parametrize("name", sorted(BUILDERS))
def test_a_small_model_is_valid_onnx_that_onnxruntime_runs(name):
    model = BUILDERS[name](batch=2, size=32, num_classes=10)
    onnx.checker.check_model(model, full_check=True)
    session = ort.InferenceSession(
        model.SerializeToString(), providers=["CPUExecutionProvider"]
    )
    (out,) = session.run(None, onnx_models.random_input(model))
    assert out.shape == (2, 10)
    assert np.isfinite(out).all() and 0.01 < float(out.std()) < 10


def test_squeezenet_pools_with_ceil_mode_and_refuses_unknown_versions():
    model = onnx_models.squeezenet(size=64)
    ceil_modes = [
        onnx.helper.get_attribute_value(a)
        for n in model.graph.node
        if n.op_type == "MaxPool"
        for a in n.attribute
        if a.name == "ceil_mode"
    ]
    assert ceil_modes == [1, 1, 1]
    with pytest.raises(ValueError, match="expected version '1.0' or '1.1'"):
        onnx_models.squeezenet("1.2")


@pytest.mark.slow  # 9-27 s each, kernel cache cold (5-17 s warm; 5-23 s at 32x32)
@pytest.mark.parametrize("name", sorted(BUILDERS))
def test_ember_matches_onnxruntime(name):
    check(BUILDERS[name](size=64, num_classes=10), both_ways=False)
