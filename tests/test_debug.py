"""Where a wrong result comes from: `ember.debug.compare` and `ember debug`
run a model kernel by kernel against onnxruntime and name the first kernel,
graph op and ONNX node whose result differs: a kernel made wrong on purpose,
and a `--debug` library built from a copy of the model with one weight
changed; a right model matches everywhere (blocked results converted, folded
batch norms compared with the tensor they compute)."""

import numpy as np
import onnx
import pytest
from onnx import helper, numpy_helper
from plan_util import model_input, small_model

import ember
from ember.debug import compare, from_blocks
from ember.runtime.errors import EmberError
from ember.runtime.graph_steps import KernelCall
from ember.tools import cli, ember_compile

pytest.importorskip("onnxruntime")


@pytest.fixture(scope="module")
def model_file(tmp_path_factory):
    path = tmp_path_factory.mktemp("debug") / "small.onnx"
    onnx.save(small_model(), str(path))
    return path


def test_a_right_model_matches_onnxruntime_at_every_kernel():
    report = compare(small_model(), {"x": model_input()})
    assert report.first is None
    assert [c.status for c in report.checks] == ["ok"] * 5
    assert [c.tensor for c in report.checks] == ["r1", "a2", "p", "y", "out"]
    assert "all 5 compared kernel results match" in str(report)


def test_a_kernel_made_wrong_is_named_with_its_ops_node_and_error(monkeypatch):
    """The residual kernel (conv2 + add2) adds 0.5 to one element of its
    result: every later kernel differs too, the report names this one."""
    run = KernelCall.__call__

    def wrong(self: KernelCall) -> None:
        run(self)
        if self.ops[-1].get("nodes") == ["add2"]:
            self._result.reshape(-1)[7] += 0.5

    monkeypatch.setattr(KernelCall, "__call__", wrong)
    report = compare(small_model(), {"x": model_input()})
    first = report.first
    assert first is not None and first.index == 1
    assert [o["op"] for o in first.ops] == ["graph.conv2d", "graph.add"]
    assert first.nodes() == ["conv2", "add2"] and first.tensor == "a2"
    assert first.error == pytest.approx(0.5, rel=1e-4)
    assert report.checks[0].status == "ok"
    assert "first difference: call 1 ember_conv2d_add_" in report.verdict()
    assert "ONNX node 'conv2', 'add2'" in report.verdict()


def test_a_debug_library_of_changed_weights_is_traced_to_its_node(
    model_file, tmp_path, capsys
):
    """`ember debug model.onnx --library wrong.so`, the library compiled
    with --debug from a copy whose dense weight changed: the dense kernel
    ('fc') differs first; exit status 1."""
    wrong = tmp_path / "wrong.onnx"
    onnx.save(small_model(nudge="wd"), str(wrong))
    library = tmp_path / "wrong.so"
    argv = [str(wrong), "-o", str(library), "--debug", "-q"]
    assert ember_compile.main(argv) == 0
    inputs = tmp_path / "inputs.npz"
    np.savez(inputs, x=model_input())
    argv = ["debug", str(model_file), "--library", str(library)]
    assert cli.main([*argv, "--inputs", str(inputs)]) == 1
    out, err = capsys.readouterr()
    lines = out.splitlines()
    assert [line.split()[1] for line in lines[:4]] == ["ok"] * 3 + ["differs"]
    verdict = "first difference: call 3 ember_dense_"
    assert verdict in lines[-1] and "(graph.dense; ONNX node 'fc')" in lines[-1]
    assert "tensor 'y' max abs error" in lines[-1]
    assert verdict in err


def test_ember_debug_of_a_right_model_exits_0(model_file, capsys):
    assert cli.main(["debug", str(model_file), "-q"]) == 0
    assert "all 5 compared kernel results match" in capsys.readouterr().out


def test_a_library_without_debug_is_refused_saying_so(model_file, tmp_path):
    library = ember.compile_model(small_model())
    with pytest.raises(EmberError, match="ember-compile --debug"):
        compare(model_file, library=library)


def test_blocked_results_are_compared_as_nchw():
    x = np.arange(2 * 32 * 3 * 5, dtype=np.float32).reshape(2, 32, 3, 5)
    blocked = x.reshape(2, 4, 8, 3, 5).transpose(0, 1, 3, 4, 2)
    np.testing.assert_array_equal(from_blocks(blocked), x)


def test_a_folded_batch_norm_is_compared_with_the_tensor_it_computes():
    """conv -> batch norm -> relu: the convolution takes the batch norm, so
    its kernel computes 'bn' (no kernel computes 'c' any more)."""
    rng = np.random.default_rng(3)
    weights = {
        "w": rng.uniform(-1, 1, (8, 4, 3, 3)),
        "g": rng.uniform(0.5, 1.5, 8),
        "b": rng.uniform(-1, 1, 8),
        "m": rng.uniform(-1, 1, 8),
        "v": rng.uniform(0.5, 1.5, 8),
    }
    nodes = [
        helper.make_node("Conv", ["x", "w"], ["c"], name="conv"),
        helper.make_node(
            "BatchNormalization", ["c", "g", "b", "m", "v"], ["bn"], name="norm"
        ),
        helper.make_node("Relu", ["bn"], ["r"], name="relu"),
        helper.make_node("Mul", ["r", "r"], ["out"], name="square"),
    ]
    graph = helper.make_graph(
        nodes,
        "bn",
        [helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT, [1, 4, 6, 6])],
        [helper.make_tensor_value_info("out", onnx.TensorProto.FLOAT, [1, 8, 4, 4])],
        [numpy_helper.from_array(v.astype(np.float32), k) for k, v in weights.items()],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    report = compare(model)
    assert report.first is None, str(report)
    nodes = [n for c in report.checks for n in c.nodes()]
    assert nodes[:3] == ["conv", "norm", "relu"]
    assert report.checks[-1].tensor == "out"
