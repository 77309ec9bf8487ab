"""A small CNN as an ONNX model (conv + relu, max pool, flatten, dense: three
kernels, packed weights, a workspace), for the tests that deploy a compiled
model without the compiler (tests/test_runtime_package.py, test_c_runtime.py).

    y = dense(flatten(max_pool(relu(conv(x, w) + b))), d)   x (1, 3, 8, 8), y (1, 10)
"""

import numpy as np
import onnx
from onnx import helper, numpy_helper

INPUT_SHAPE = (1, 3, 8, 8)
OUTPUT_SHAPE = (1, 10)


def model(seed: int = 0) -> onnx.ModelProto:
    rng = np.random.default_rng(seed)
    weights = {
        "w": rng.standard_normal((4, 3, 3, 3)).astype("float32"),
        "b": rng.standard_normal(4).astype("float32"),
        "d": rng.standard_normal((10, 64)).astype("float32"),
    }
    nodes = [
        helper.make_node("Conv", ["x", "w", "b"], ["c"], pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["c"], ["r"]),
        helper.make_node("MaxPool", ["r"], ["p"], kernel_shape=[2, 2], strides=[2, 2]),
        helper.make_node("Flatten", ["p"], ["f"]),
        helper.make_node("Gemm", ["f", "d"], ["y"], transB=1),
    ]
    graph = helper.make_graph(
        nodes,
        "small_cnn",
        [helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT, INPUT_SHAPE)],
        [helper.make_tensor_value_info("y", onnx.TensorProto.FLOAT, OUTPUT_SHAPE)],
        [numpy_helper.from_array(v, k) for k, v in weights.items()],
    )
    proto = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    proto.ir_version = 8
    return proto


def random_input(seed: int = 1) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal(INPUT_SHAPE).astype("float32")
