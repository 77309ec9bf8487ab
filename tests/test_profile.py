"""Where the time goes: a model run kernel by kernel from the call plan in its
metadata gives `run()`'s outputs bit for bit, `GraphModule.profile` tables
every kernel with its graph ops, its Chrome trace is valid trace-event JSON,
`ember run --profile --trace` prints and writes them, and a damaged plan is an
error rather than a wild write."""

import copy
import json

import numpy as np
import pytest
from plan_util import model_input, small_model

import ember
from ember import runtime as rt
from ember.runtime.errors import EmberError
from ember.runtime.graph_steps import results
from ember.tools import ember_run

REPEAT = 3


@pytest.fixture(scope="module")
def compiled():
    return ember.compile_model(small_model(), debug=True)


@pytest.fixture(scope="module")
def library(compiled, tmp_path_factory):
    path = tmp_path_factory.mktemp("profile") / "small.so"
    compiled.export_library(str(path))
    return str(path)


def graph_module(lib) -> rt.GraphModule:
    return rt.GraphModule(lib["default"](rt.cpu()))


def check_trace(doc: dict) -> list[dict]:
    """Raise unless `doc` is a trace-event document (Chrome's format, what
    Perfetto opens) of complete events; returns its events."""
    assert set(doc) >= {"traceEvents"} and isinstance(doc["traceEvents"], list)
    assert doc.get("displayTimeUnit", "ms") in ("ms", "ns")
    json.loads(json.dumps(doc))  # plain JSON through and through
    for e in doc["traceEvents"]:
        assert set(e) >= {"name", "ph", "ts", "dur", "pid", "tid", "args"}, e
        assert isinstance(e["name"], str) and e["name"]
        assert e["ph"] == "X"
        for key in ("ts", "dur"):
            assert isinstance(e[key], int | float) and e[key] >= 0, e
        assert isinstance(e["pid"], int) and isinstance(e["tid"], int)
        assert isinstance(e["args"], dict)
    return doc["traceEvents"]


@pytest.mark.parametrize("exported", [False, True], ids=["jit", "so"])
def test_kernel_by_kernel_gives_the_outputs_of_run_bit_for_bit(
    compiled, library, exported
):
    lib = rt.load_module(library) if exported else compiled
    gm = graph_module(lib)
    x = model_input()
    (expected,) = gm(x=x)
    gm.set_input("x", x)
    steps = results(gm.module)
    assert len(steps) == len(lib.metadata["model"]["calls"])
    last_call, last = steps[-1]
    np.testing.assert_array_equal(last, expected)
    np.testing.assert_array_equal(gm.get_output(0).numpy(), expected)
    assert last_call.ops[-1]["op"] == "graph.softmax"


def test_the_profile_tables_every_kernel_with_its_ops_and_nodes(library):
    gm = graph_module(rt.load_module(library))
    profile = gm.profile(repeat=REPEAT, x=model_input())
    plan = gm.module.lib.metadata["model"]["calls"]
    rows = profile.rows()
    assert {r["kernel"] for r in rows} == {c["kernel"] for c in plan}
    assert sum(r["calls"] for r in rows) == REPEAT * len(plan)
    assert sum(r["share"] for r in rows) == pytest.approx(1.0)
    assert [r["total_s"] for r in rows] == sorted(
        (r["total_s"] for r in rows), reverse=True
    )
    for r in rows:
        assert r["mean_s"] == pytest.approx(r["total_s"] / r["calls"])
    by_ops = {r["ops"]: r for r in rows}
    assert by_ops["conv2d+relu"]["nodes"] == ["conv1", "relu1"]
    assert by_ops["conv2d+add"]["nodes"] == ["conv2", "add2"]
    assert by_ops["dense"]["nodes"] == ["fc"]
    table = str(profile)
    for r in rows:
        assert r["kernel"] in table
    assert "conv2d+add (conv2, add2)" in table
    assert f"{len(plan)} kernel calls per run, {REPEAT} runs" in table
    assert profile.seconds > 0 and profile.run_seconds > 0


def test_the_trace_is_chrome_trace_events_with_calls_inside_runs(library, tmp_path):
    gm = graph_module(rt.load_module(library))
    profile = gm.profile(repeat=REPEAT, x=model_input())
    path = tmp_path / "trace.json"
    profile.save_trace(path)
    events = check_trace(json.loads(path.read_text()))
    runs = [e for e in events if e["args"].get("call") is None]
    calls = [e for e in events if e["args"].get("call") is not None]
    assert len(runs) == REPEAT
    assert len(calls) == REPEAT * len(profile.calls)
    for e in calls:
        run = runs[e["args"]["run"]]
        assert run["ts"] <= e["ts"] + 1e-3
        assert e["ts"] + e["dur"] <= run["ts"] + run["dur"] + 1e-3
        assert e["name"] == profile.calls[e["args"]["call"]].kernel
    starts = [e["ts"] for e in calls]
    assert starts == sorted(starts)


def test_a_library_keeps_its_kernels_graph_ops_and_only_with_debug_its_nodes():
    plain = ember.compile_model(small_model())
    calls = plain.model_info["calls"]
    assert [o["op"] for o in calls[0]["ops"]] == ["graph.conv2d", "graph.relu"]
    assert all(set(o) == {"op"} for c in calls for o in c["ops"])
    print(graph_module(plain).profile(repeat=1))  # no nodes: still a table


def test_the_plan_describes_each_argument_and_the_result(compiled):
    calls = compiled.model_info["calls"]
    first, last = calls[0], calls[-1]
    assert first["args"][0] == {
        "buffer": "input",
        "index": 0,
        "offset": 0,
        "shape": [1, 3, 8, 8],
        "dtype": "float32",
    }
    assert first["args"][1]["buffer"] == "params"
    assert first["ops"][-1] == {"op": "graph.relu", "nodes": ["relu1"], "tensor": "r1"}
    assert last["args"][last["result"]]["buffer"] == "output"
    for call in calls:
        result = call["args"][call["result"]]
        if "layout" in call:  # (N, C/b, H, W, b)
            b = int(call["layout"][4:-1])
            assert call["layout"] == f"NCHW{b}c" and result["shape"][-1] == b


def test_ember_run_profile_prints_the_table_and_writes_the_trace(
    library, tmp_path, capsys
):
    trace = tmp_path / "t.json"
    argv = [library, "--profile", "--trace", str(trace), "--repeat", "2", "-q"]
    assert ember_run.main(argv) == 0
    out = capsys.readouterr().out
    assert "profile (2 run(s) kernel by kernel):" in out
    assert "conv2d+relu (conv1, relu1)" in out
    assert f"trace written to {trace}" in out
    assert len(check_trace(json.loads(trace.read_text()))) == 2 * (1 + 5)


def test_ember_run_trace_needs_profile(library, tmp_path, capsys):
    assert ember_run.main([library, "--trace", str(tmp_path / "t.json")]) == 2
    assert "--trace needs --profile" in capsys.readouterr().err


def test_a_damaged_plan_is_an_error_not_a_wild_write(compiled):
    gm = graph_module(compiled)
    lib = gm.module.lib
    good = lib.metadata
    try:
        damaged = copy.deepcopy(good)
        damaged["model"]["calls"][1]["args"][0]["offset"] = 1 << 40
        lib._metadata = damaged
        with pytest.raises(EmberError, match=r"calls\[1\]\.args\[0\].*outside"):
            gm.profile(repeat=1)
        damaged = copy.deepcopy(good)
        damaged["model"]["calls"][0]["kernel"] = "ember_missing"
        lib._metadata = damaged
        with pytest.raises(EmberError, match="does not export kernel ember_missing"):
            gm.profile(repeat=1)
        damaged = copy.deepcopy(good)
        del damaged["model"]["calls"]
        lib._metadata = damaged
        with pytest.raises(EmberError, match="no kernel call plan"):
            gm.profile(repeat=1)
    finally:
        lib._metadata = good
    gm.profile(repeat=1)
