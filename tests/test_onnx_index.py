"""ONNX Gather on computed tensors (`graph.gather`): embedding lookups by
int64 token ids, a class token taken out by a scalar index, negative indices,
int32 indices, and a gather fused with its neighbours, against onnxruntime."""

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

import ember
from ember import runtime as rt

ort = pytest.importorskip("onnxruntime")


def model(nodes, inputs, output, initializers=()):
    g = helper.make_graph(
        nodes,
        "gather",
        [helper.make_tensor_value_info(n, t, s) for n, t, s in inputs],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, output)],
        [numpy_helper.from_array(np.asarray(v), n) for n, v in initializers],
    )
    m = helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)])
    m.ir_version = 8
    onnx.checker.check_model(m)
    return m


def run_both(m, feeds):
    session = ort.InferenceSession(
        m.SerializeToString(), providers=["CPUExecutionProvider"]
    )
    (expected,) = session.run(None, feeds)
    gm = rt.GraphModule(ember.compile_model(m)["default"](rt.cpu()))
    (got,) = gm(**feeds)
    np.testing.assert_allclose(got, expected, rtol=1e-6, atol=1e-6)
    return got


RNG = np.random.default_rng(0)
TABLE = RNG.standard_normal((50, 8)).astype(np.float32)


def test_embedding_of_int64_ids_with_negative_ones_and_positions_added():
    pos = RNG.standard_normal((1, 6, 8)).astype(np.float32)
    m = model(
        [
            helper.make_node("Gather", ["table", "ids"], ["e"], axis=0),
            helper.make_node("Add", ["e", "pos"], ["y"]),
        ],
        [("ids", TensorProto.INT64, [2, 6])],
        [2, 6, 8],
        [("table", TABLE), ("pos", pos)],
    )
    ids = np.array([[0, 1, 49, -1, -50, 7], [3, 3, 3, 2, 1, 0]], np.int64)
    run_both(m, {"ids": ids})


def test_scalar_index_takes_the_class_token_of_a_computed_tensor():
    m = model(
        [
            helper.make_node("Relu", ["x"], ["r"]),
            helper.make_node("Gather", ["r", "zero"], ["y"], axis=1),
        ],
        [("x", TensorProto.FLOAT, [2, 5, 8])],
        [2, 8],
        [("zero", np.array(0, np.int64))],
    )
    run_both(m, {"x": RNG.standard_normal((2, 5, 8)).astype(np.float32)})


def test_int32_indices_on_the_last_axis():
    m = model(
        [helper.make_node("Gather", ["x", "i"], ["y"], axis=-1)],
        [("x", TensorProto.FLOAT, [3, 7]), ("i", TensorProto.INT32, [2, 2])],
        [3, 2, 2],
    )
    feeds = {
        "x": RNG.standard_normal((3, 7)).astype(np.float32),
        "i": np.array([[6, 0], [-7, 3]], np.int32),
    }
    run_both(m, feeds)


def test_out_of_range_indices_are_clamped_as_tvms_take():
    """onnxruntime refuses them; ember reads the nearest row, never outside."""
    x = np.arange(12, dtype=np.float32).reshape(4, 3)
    m = model(
        [helper.make_node("Gather", ["x", "i"], ["y"], axis=0)],
        [("x", TensorProto.FLOAT, [4, 3]), ("i", TensorProto.INT64, [3])],
        [3, 3],
    )
    gm = rt.GraphModule(ember.compile_model(m)["default"](rt.cpu()))
    (got,) = gm(x=x, i=np.array([9, -9, 2**40], np.int64))
    np.testing.assert_array_equal(got, x[[3, 0, 3]])


def test_float_indices_are_refused_naming_the_op():
    m = model(
        [
            helper.make_node("Cast", ["i"], ["f"], to=TensorProto.FLOAT),
            helper.make_node("Gather", ["x", "f"], ["y"], axis=0),
        ],
        [("x", TensorProto.FLOAT, [4, 3]), ("i", TensorProto.INT64, [2])],
        [2, 3],
    )
    with pytest.raises(Exception, match="Gather|gather"):
        ember.compile_model(m)
