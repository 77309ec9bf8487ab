"""A small ONNX model for the kernel-by-kernel tests (tests/test_profile.py,
tests/test_debug.py): a 3x3 convolution and relu (a blocked result where the
target blocks), a 1x1 convolution with a bias and a residual add, a global
average pool, a flatten, a dense layer and a softmax; every node named."""

import numpy as np
import onnx
from onnx import helper, numpy_helper


def small_model(seed: int = 0, nudge: str | None = None) -> onnx.ModelProto:
    """The model; `nudge` names a weight to change by 1 at one place."""
    rng = np.random.default_rng(seed)
    weights = {
        "w1": rng.uniform(-1, 1, (16, 3, 3, 3)),
        "w2": rng.uniform(-1, 1, (16, 16, 1, 1)),
        "b2": rng.uniform(-1, 1, (16,)),
        "wd": rng.uniform(-1, 1, (10, 16)),
    }
    weights = {k: v.astype(np.float32) for k, v in weights.items()}
    if nudge is not None:
        weights[nudge].reshape(-1)[5] += 1.0
    node = helper.make_node
    nodes = [
        node("Conv", ["x", "w1"], ["c1"], name="conv1", pads=[1, 1, 1, 1]),
        node("Relu", ["c1"], ["r1"], name="relu1"),
        node("Conv", ["r1", "w2", "b2"], ["c2"], name="conv2"),
        node("Add", ["c2", "r1"], ["a2"], name="add2"),
        node("GlobalAveragePool", ["a2"], ["p"], name="gap"),
        node("Flatten", ["p"], ["f"], name="flat"),
        node("Gemm", ["f", "wd"], ["y"], name="fc", transB=1),
        node("Softmax", ["y"], ["out"], name="softmax", axis=1),
    ]
    graph = helper.make_graph(
        nodes,
        "small",
        [helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT, [1, 3, 8, 8])],
        [helper.make_tensor_value_info("out", onnx.TensorProto.FLOAT, [1, 10])],
        [numpy_helper.from_array(v, k) for k, v in weights.items()],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    return model


def model_input(seed: int = 1) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal((1, 3, 8, 8), np.float32)
