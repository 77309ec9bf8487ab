"""ONNX conformance (`ember.tools.conformance`): a quick slice of onnx's node
tests, none wrong and none crashing, and the classifier on fake cases.

The full run is `make conformance`; its figures are in docs/architecture.md.
"""

from __future__ import annotations

import json
import sys
import textwrap
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto
from onnx import helper as h

from ember.runtime import EmberError
from ember.tools import conformance as C
from ember.tools import conformance_worker as W

# Crashes found by `make conformance` and left to their owners (not
# tolerated anywhere else; a new wrong or crash fails the test):
KNOWN_CRASHES: set[str] = set()


def test_quick_slice():
    pytest.importorskip("onnxruntime")  # the baseline (the dev extra brings it)
    root = C.cache_root()
    cases = C.quick_slice(C.load_cases(root))
    assert len(cases) >= 50
    assert {c.name for c in cases} >= set(C.QUICK_NAMED)
    baseline = C.load_baseline(root)
    try:
        results = C.run_cases(cases, jobs=2, timeout=60, baseline=baseline)
    finally:
        C.save_baseline(root, baseline)
    print(C.summary(results))
    bad = [
        f"{r['class']}: {r['name']}: {r['message']}"
        for r in results
        if r["class"] in (W.WRONG, W.CRASH) and r["name"] not in KNOWN_CRASHES
    ]
    assert not bad, "\n".join(bad)
    by_name = {r["name"]: r for r in results}
    assert by_name["test_relu"]["class"] == W.PASS
    assert by_name["test_argmax_default_axis_example"]["class"] == W.PASS
    nms = by_name["test_nonmaxsuppression_center_point_box_format"]
    assert nms["class"] == W.REFUSED and "NonMaxSuppression" in nms["message"]
    if "test_identity_sequence" in by_name:  # a sequence input, refused naming it
        sequence = by_name["test_identity_sequence"]
        assert sequence["class"] == W.REFUSED, sequence
    assert all(r["message"] for r in results if r["class"] != W.PASS)


def _model(op: str = "Conv", **attrs) -> onnx.ModelProto:
    graph = h.make_graph(
        [h.make_node(op, ["x"], ["y"], **attrs)],
        "test_conv_basic",
        [h.make_tensor_value_info("x", TensorProto.FLOAT, [1])],
        [h.make_tensor_value_info("y", TensorProto.FLOAT, [1])],
    )
    return h.make_model(graph)


def test_compare():
    a = np.array([1.0, 2.0, np.nan], np.float32)
    assert W.compare([a], [a.copy()], 1e-3, 1e-7) is None
    assert "shape" in W.compare([a], [a[:2]], 1e-3, 1e-7)
    assert "dtype" in W.compare([a], [a.astype(np.float64)], 1e-3, 1e-7)
    assert "output 0" in W.compare([a], [a + 1], 1e-3, 1e-7)
    assert "2 outputs" in W.compare([a, a], [a], 1e-3, 1e-7)
    ints = np.array([1, 2], np.int64)
    assert "exact" in W.compare([ints], [ints + 1], 1e-3, 10)
    assert W.compare([[a], None], [[a], None], 1e-3, 1e-7) is None
    assert "list" in W.compare([[a]], [a], 1e-3, 1e-7)


def test_names_the_op():
    model = _model("Conv", auto_pad="SAME_UPPER")
    assert W.names_the_op("Conv: #0 (output 'y')", model)
    assert W.names_the_op("graph.fused 'fused_conv2d_0': weight", model)
    assert W.names_the_op("auto_pad='SAME_UPPER' is not supported", model)
    # the model's name, and words that merely start like the op, do not count
    assert not W.names_the_op("ONNX model 'test_conv_basic': bad input", model)
    assert not W.names_the_op("convert-graph-to-te failed", model)
    assert not W.names_the_op("a conv computation", model)
    assert not W.names_the_op("ConvTranspose: no", model)


def test_classify_exception():
    model = _model("Conv")
    assert W.classify_exception(EmberError("Conv: no"), model)["class"] == W.REFUSED
    unclear = W.classify_exception(EmberError("expected float32"), model)
    assert unclear == {"class": W.UNCLEAR, "message": "EmberError: expected float32"}
    with pytest.raises(KeyError) as info:
        {}["k"]
    crash = W.classify_exception(info.value, model)
    assert crash["class"] == W.CRASH
    assert crash["message"].startswith("KeyError: 'k' (at test_onnx_conformance.py:")


# A stand-in worker: answers by the case folder's last name.
FAKE_WORKER = textwrap.dedent(
    """
    import json, os, signal, sys, time
    print(json.dumps({"step": "ready"}), flush=True)
    for line in sys.stdin:
        req = json.loads(line)
        kind = os.path.basename(req["case"])
        if req["ort"]:
            print(json.dumps({"step": "ort", "pass": True, "message": ""}), flush=True)
        if kind == "segv":
            os.kill(os.getpid(), signal.SIGSEGV)
        if kind == "hang":
            time.sleep(60)
        if kind == "exit":
            sys.stderr.write("dying words\\n"); sys.stderr.flush(); os._exit(3)
        cls = {"wrong": "wrong", "refused": "refused"}.get(kind, "pass")
        print(json.dumps({"step": "ember", "class": cls, "message": kind}), flush=True)
    """
)


def test_pool_survives_dead_and_hanging_workers(tmp_path: Path):
    script = tmp_path / "fake_worker.py"
    script.write_text(FAKE_WORKER)
    kinds = ["pass", "segv", "pass", "hang", "wrong", "exit", "refused", "pass"]
    cases = [C.Case(f"c{i}_{k}", "Op", 1, tmp_path / k) for i, k in enumerate(kinds)]
    results = C.run_cases(
        cases, jobs=2, timeout=2, worker=[sys.executable, str(script)]
    )
    got = {r["name"]: r for r in results}
    assert [r["class"] for r in results] == [
        "pass", "crash", "pass", "crash", "wrong", "crash", "refused", "pass",
    ]  # fmt: skip
    assert "SIGSEGV" in got["c1_segv"]["message"]
    assert "timed out after 2 s" in got["c3_hang"]["message"]
    assert "exit status 3" in got["c5_exit"]["message"]
    assert "dying words" in got["c5_exit"]["message"]
    assert all(r["ort_pass"] for r in results)
    table = C.summary(results)
    assert "crash" in table and "ember passes 3 of the 8" in table


def test_cli_report(tmp_path: Path, monkeypatch, capsys):
    monkeypatch.setattr(
        C,
        "run_cases",
        lambda cases, *a, **k: [
            {"name": c.name, "op": c.op, "class": "pass", "message": "",
             "ort_pass": True, "ort_message": "", "seconds": 0.0, "single_op": True}
            for c in cases
        ],
    )  # fmt: skip
    report = tmp_path / "r.jsonl"
    code = C.main(["--filter", "^test_relu$", "--report", str(report), "--jobs", "1"])
    assert code == 0
    lines = [json.loads(s) for s in report.read_text().splitlines()]
    assert [r["name"] for r in lines] == ["test_relu"]
    assert "ember passes 1 of the 1" in capsys.readouterr().out


def test_a_broken_build_runs_no_case(tmp_path: Path):
    script = tmp_path / "broken_worker.py"
    script.write_text(
        'import json; print(json.dumps({"step": "broken", "message": "no Relu"}))'
    )
    cases = [C.Case(f"c{i}", "Op", 1, tmp_path / "pass") for i in range(4)]
    with pytest.raises(C.WorkerError, match="did not start: no Relu"):
        C.run_cases(cases, jobs=2, timeout=5, worker=[sys.executable, str(script)])


def test_onnxruntime_baseline_converts_newer_opsets():
    pytest.importorskip("onnxruntime")
    newest = onnx.defs.onnx_opset_version()
    if newest <= W.ort_newest_opset():
        pytest.skip("onnxruntime runs every opset this onnx defines")
    graph = h.make_graph(
        [h.make_node("Relu", ["x"], ["y"])],
        "relu",
        [h.make_tensor_value_info("x", TensorProto.FLOAT, [2])],
        [h.make_tensor_value_info("y", TensorProto.FLOAT, [2])],
    )
    model = h.make_model_gen_version(graph, opset_imports=[h.make_opsetid("", newest)])
    x = np.array([-1.0, 2.0], np.float32)
    verdict = W.run_ort(model, [x], [np.maximum(x, 0)], 1e-3, 1e-7)
    assert verdict == {
        "pass": True,
        "message": f"(converted from opset {newest} to {W.ort_newest_opset()})",
    }
    assert not W.run_ort(model, [x], [x], 1e-3, 1e-7)["pass"]


def test_inputs_fixed_at_compile_time_are_only_shape_like_ones():
    """A node test passes axes and shapes as graph inputs; those, and only
    those, are fixed at compile time (an embedding's ids stay inputs)."""

    def model(node, inputs, out=(2, 1)):
        g = h.make_graph(
            [node],
            "m",
            [h.make_tensor_value_info(n, t, s) for n, t, s in inputs],
            [h.make_tensor_value_info("y", TensorProto.FLOAT, list(out))],
        )
        return h.make_model(g, opset_imports=[h.make_opsetid("", 18)])

    reduce = model(
        h.make_node("ReduceSum", ["x", "axes"], ["y"]),
        [("x", TensorProto.FLOAT, [2, 3]), ("axes", TensorProto.INT64, [1])],
    )
    assert W.compile_time_inputs(reduce) == {"axes"}
    gather = model(
        h.make_node("Gather", ["x", "ids"], ["y"]),
        [("x", TensorProto.FLOAT, [5, 3]), ("ids", TensorProto.INT64, [2])],
        out=(2, 3),
    )
    assert W.compile_time_inputs(gather) == set()
    # a recurrent op's weights, and only that op's ("LSTM.W"): Conv's W stays
    lstm = model(
        h.make_node("LSTM", ["x", "w", "r"], ["y"], hidden_size=1),
        [
            ("x", TensorProto.FLOAT, [1, 2, 3]),
            ("w", TensorProto.FLOAT, [1, 4, 3]),
            ("r", TensorProto.FLOAT, [1, 4, 1]),
        ],
    )
    assert W.compile_time_inputs(lstm) == {"w", "r"}
    conv = model(
        h.make_node("Conv", ["x", "w"], ["y"]),
        [
            ("x", TensorProto.FLOAT, [1, 1, 3, 3]),
            ("w", TensorProto.FLOAT, [1, 1, 1, 1]),
        ],
    )
    assert W.compile_time_inputs(conv) == set()
    x = np.arange(6, dtype=np.float32).reshape(2, 3)
    result = W.run_ember(
        reduce, [x, np.array([1], np.int64)], [x.sum(1, keepdims=True)], 1e-6, 0
    )
    assert result["class"] == W.PASS, result
