"""A model with symbolic shapes as ONNX, for the tests that run one library at
several shapes without the compiler (test_c_runtime.py, test_c_rpc_server.py):
x (batch, seq) times mask (seq,), then three outputs whose shapes are
expressions of the inputs'.

    pad   = pad(x * mask, 1 column before, 2 after)   (batch, seq + 3)
    slice = (x * mask)[:, ::2]                         (batch, (seq + 1) // 2)
    sum   = sum(x * mask, axis=1, keepdims)            (batch, 1)
"""

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

OUTPUTS = ("pad", "slice", "sum")


def model() -> onnx.ModelProto:
    def value(name: str, shape: list) -> onnx.ValueInfoProto:
        return helper.make_tensor_value_info(name, TensorProto.FLOAT, shape)

    consts = [
        numpy_helper.from_array(np.array(v, np.int64), name)
        for name, v in [
            ("one", [1]),
            ("zero", [0]),
            ("two", [2]),
            ("pads", [0, 1, 0, 2]),
            ("end", [2**63 - 1]),
        ]
    ]
    nodes = [
        helper.make_node("Mul", ["x", "mask"], ["p"]),
        helper.make_node("Pad", ["p", "pads"], ["pad"]),
        helper.make_node("Slice", ["p", "zero", "end", "one", "two"], ["slice"]),
        helper.make_node("ReduceSum", ["p", "one"], ["sum"], keepdims=1),
    ]
    inputs = [value("x", ["batch", "seq"]), value("mask", ["seq"])]
    outputs = [value("pad", ["b", "s3"]), value("slice", ["b", "h"])]
    outputs.append(value("sum", ["b", 1]))
    graph = helper.make_graph(nodes, "masked", inputs, outputs, consts)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def feeds(batch: int, seq: int) -> dict[str, np.ndarray]:
    """Random inputs of the shapes (batch, seq) and (seq,)."""
    rng = np.random.default_rng(10 * batch + seq)
    return {
        "x": rng.standard_normal((batch, seq), np.float32),
        "mask": rng.standard_normal(seq, np.float32),
    }
