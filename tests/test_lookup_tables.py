"""`graph-lookup-tables`: elementwise chains on one byte tensor become 256-entry
tables; the compiled model then computes exactly the graph's numpy semantics."""

from __future__ import annotations

import numpy as np
import onnx
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from onnx import TensorProto, helper, numpy_helper

import ember
from ember.compiler.model import _load
from ember.passes.graph_reference import run_graph
from ember.runtime import GraphModule, cpu

UNARY = ("Erf", "Sigmoid", "Tanh", "Exp", "Softplus")
BINARY = ("Mul", "Add", "Div")


def chain(dtype: str, shape, steps, quantize_out: bool) -> onnx.ModelProto:
    """Dequantize a byte input, run `steps` (a unary op, a binary op with a
    scalar, a quantize round trip, or x * f(x)), maybe quantize at the end."""
    elem = TensorProto.UINT8 if dtype == "uint8" else TensorProto.INT8
    zero = 128 if dtype == "uint8" else 0
    inits = {
        "s": np.array(0.04, np.float32),
        "z": np.array(zero, np.dtype(dtype)),
        "c": np.array(1.5, np.float32),
    }
    nodes = [helper.make_node("DequantizeLinear", ["q", "s", "z"], ["v0"])]
    current, x = "v0", "v0"
    for i, step in enumerate(steps, 1):
        out = f"v{i}"
        if step in UNARY:
            nodes.append(helper.make_node(step, [current], [out]))
        elif step in BINARY:
            nodes.append(helper.make_node(step, [current, "c"], [out]))
        elif step == "QDQ":
            nodes += [
                helper.make_node("QuantizeLinear", [current, "s", "z"], [f"q{i}"]),
                helper.make_node("DequantizeLinear", [f"q{i}", "s", "z"], [out]),
            ]
        else:  # "x*": the chain's first value times the current one
            nodes.append(helper.make_node("Mul", [x, current], [out]))
        current = out
    out_type = TensorProto.FLOAT
    if quantize_out:
        nodes.append(helper.make_node("QuantizeLinear", [current, "s", "z"], ["y"]))
        out_type = elem
    else:
        nodes.append(helper.make_node("Identity", [current], ["y"]))
    graph = helper.make_graph(
        nodes,
        "chain",
        [helper.make_tensor_value_info("q", elem, shape)],
        [helper.make_tensor_value_info("y", out_type, shape)],
        [numpy_helper.from_array(v, k) for k, v in inits.items()],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    return model


@settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    dtype=st.sampled_from(["uint8", "int8"]),
    shape=st.lists(st.integers(1, 9), min_size=1, max_size=3),
    first=st.sampled_from(UNARY),
    rest=st.lists(st.sampled_from(UNARY + BINARY + ("QDQ", "x*")), max_size=4),
    quantize_out=st.booleans(),
    seed=st.integers(0, 2**16),
)
def test_tabulated_chains_compute_the_graphs_numpy_semantics(
    dtype, shape, first, rest, quantize_out, seed
):
    """Every byte value's result is the graph reference's exactly (the table
    is that reference, evaluated at compile time); the chain is one gather."""
    model = chain(dtype, shape, [first, *rest], quantize_out)
    info = np.iinfo(dtype)
    rng = np.random.default_rng(seed)
    q = rng.integers(info.min, info.max + 1, shape).astype(dtype)
    module, params = _load(model, None, None)
    main = next(op for op in module.ops if op.sym_name.data == "main")
    with np.errstate(all="ignore"):
        (want,) = run_graph(main, [q], params)
    lib = ember.compile_model(model)
    (got,) = GraphModule(lib["default"](cpu()))(q=q)
    np.testing.assert_array_equal(got, want)
    assert lib.compile_stats.calls == 1


def test_a_table_covers_every_byte_value():
    """All 256 inputs at once, int8 (negative values index from the end)."""
    model = chain("int8", [256], ["Tanh", "x*", "QDQ", "Sigmoid"], True)
    q = np.arange(-128, 128, dtype=np.int8)
    module, params = _load(model, None, None)
    main = next(op for op in module.ops if op.sym_name.data == "main")
    (want,) = run_graph(main, [q], params)
    (got,) = GraphModule(ember.compile_model(model)["default"](cpu()))(q=q)
    np.testing.assert_array_equal(got, want)
