"""The static memory planner: reuse by liveness, alignment, aliases, and the
property that no two tensors live at the same step share a byte."""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ember.passes.memory_plan import ALIGNMENT, TensorLife, plan_memory


def test_chain_reuses_dead_buffers():
    # A chain a -> b -> c -> d: each tensor is read by the next step only, so two
    # buffers suffice for any length.
    tensors = [TensorLife(f"t{i}", 1000, i, i + 1) for i in range(6)]
    plan = plan_memory(tensors)
    assert plan.workspace_bytes == 2 * 1024
    assert plan.total_bytes == 6 * 1024
    assert len(set(plan.offsets.values())) == 2


def test_long_lived_tensor_keeps_its_bytes():
    # A residual: 'skip' is live across the whole block, the others come and go.
    tensors = [
        TensorLife("skip", 4096, 0, 3),
        TensorLife("a", 4096, 1, 2),
        TensorLife("b", 4096, 2, 3),
        TensorLife("c", 4096, 3, 4),
    ]
    plan = plan_memory(tensors)
    o = plan.offsets
    assert o["skip"] not in (o["a"], o["b"])
    assert o["a"] != o["b"]
    assert plan.workspace_bytes == 3 * 4096


def test_offsets_are_aligned_and_sizes_rounded():
    plan = plan_memory([TensorLife("a", 3, 0, 5), TensorLife("b", 70, 0, 5)])
    assert all(off % ALIGNMENT == 0 for off in plan.offsets.values())
    assert plan.workspace_bytes == 64 + 128


def test_alias_shares_root_and_extends_its_life():
    # 'flat' is a reshape of 'conv' read at step 4: conv's bytes stay taken until
    # then, so 'other' (live at 2..3) cannot reuse them.
    tensors = [
        TensorLife("conv", 4096, 0, 1),
        TensorLife("flat", 4096, 1, 4, alias_of="conv"),
        TensorLife("other", 4096, 2, 3),
    ]
    plan = plan_memory(tensors)
    assert plan.offsets["flat"] == plan.offsets["conv"]
    assert plan.offsets["other"] != plan.offsets["conv"]
    assert plan.total_bytes == 2 * 4096


def test_empty_plan():
    plan = plan_memory([])
    assert plan.workspace_bytes == 0 and plan.offsets == {}


@pytest.mark.parametrize(
    ("tensors", "message"),
    [
        ([TensorLife("a", 8, 3, 2)], "expected nbytes >= 0 and last >= first"),
        ([TensorLife("a", 8, 0, 1), TensorLife("a", 8, 0, 1)], "given twice"),
        ([TensorLife("a", 8, 0, 1, alias_of="z")], "'z', which is not planned"),
        (
            [TensorLife("a", 8, 0, 1, alias_of="b"), TensorLife("b", 8, 0, 1, "a")],
            "alias cycle",
        ),
        (
            [TensorLife("a", 8, 0, 1), TensorLife("b", 16, 0, 1, alias_of="a")],
            "cannot alias 'a' (8 bytes)",
        ),
    ],
)
def test_errors(tensors, message):
    with pytest.raises(
        ValueError, match=message.replace("(", r"\(").replace(")", r"\)")
    ):
        plan_memory(tensors)


lives = st.lists(
    st.tuples(
        st.integers(0, 5000), st.integers(0, 20), st.integers(0, 6)
    ),  # size, first, length
    min_size=0,
    max_size=40,
)


@settings(max_examples=300, deadline=None)
@given(lives)
def test_no_overlap_between_tensors_live_together(spec):
    tensors = [
        TensorLife(f"t{i}", size, first, first + length)
        for i, (size, first, length) in enumerate(spec)
    ]
    plan = plan_memory(tensors)
    span = {
        t.name: (plan.offsets[t.name], plan.offsets[t.name] + t.nbytes) for t in tensors
    }
    for i, a in enumerate(tensors):
        start, end = span[a.name]
        assert start % ALIGNMENT == 0
        assert end <= plan.workspace_bytes
        for b in tensors[i + 1 :]:
            if a.first <= b.last and b.first <= a.last and a.nbytes and b.nbytes:
                other = span[b.name]
                assert end <= other[0] or other[1] <= start, (a, b, plan)
    # Never worse than no reuse; never better than the peak of live bytes.
    assert plan.workspace_bytes <= plan.total_bytes + ALIGNMENT * (
        sum(1 for t in tensors if t.nbytes == 0)
    )
    peak = max(
        (
            sum(
                -(-t.nbytes // ALIGNMENT) * ALIGNMENT
                for t in tensors
                if t.first <= s <= t.last
            )
            for s in range(30)
        ),
        default=0,
    )
    assert plan.workspace_bytes >= peak


def test_a_fire_module_writes_its_expansions_into_the_concatenation():
    """SqueezeNet's fire module: both expansions write their slabs of the
    concatenation in place (no concat kernel runs), and the result is
    onnxruntime's."""
    import numpy as np
    import onnx
    import onnxruntime as ort
    from onnx import TensorProto, helper, numpy_helper

    import ember
    from ember.runtime import GraphModule, cpu

    rng = np.random.default_rng(4)
    weights = {
        "ws": rng.standard_normal((8, 16, 1, 1)),
        "w1": rng.standard_normal((16, 8, 1, 1)),
        "w3": rng.standard_normal((16, 8, 3, 3)),
        "wn": rng.standard_normal((8, 32, 1, 1)),
    }
    nodes = [
        helper.make_node("Conv", ["x", "ws"], ["s"]),
        helper.make_node("Relu", ["s"], ["sr"]),
        helper.make_node("Conv", ["sr", "w1"], ["e1"]),
        helper.make_node("Relu", ["e1"], ["r1"]),
        helper.make_node("Conv", ["sr", "w3"], ["e3"], pads=[1] * 4),
        helper.make_node("Relu", ["e3"], ["r3"]),
        helper.make_node("Concat", ["r1", "r3"], ["cat"], axis=1),
        helper.make_node("Conv", ["cat", "wn"], ["y"]),
    ]
    graph = helper.make_graph(
        nodes,
        "fire",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 16, 12, 12])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1, 8, 12, 12])],
        [
            numpy_helper.from_array(w.astype(np.float32) / 4, n)
            for n, w in weights.items()
        ],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    x = rng.standard_normal((1, 16, 12, 12)).astype(np.float32)
    gm = GraphModule(ember.compile_model(model)["default"](cpu()))
    (y,) = gm(x=x)
    (want,) = ort.InferenceSession(model.SerializeToString()).run(None, {"x": x})
    np.testing.assert_allclose(y, want, rtol=1e-4, atol=1e-4)
    kernels = str(gm.profile(repeat=1))
    assert "conv2d" in kernels and "concat" not in kernels
