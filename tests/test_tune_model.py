"""Tuning a model: tasks from its kernels, trials shared by time, records that
`compile_model` applies, and the same outputs as onnxruntime with and without
them."""

import json

import numpy as np
import onnx
import pytest
from onnx import helper, numpy_helper
from xdsl.dialects import func

import ember
from ember import runtime as rt
from ember.compiler.model import lower_to_te
from ember.dialects.te_schedule import ScheduleOp
from ember.runtime.errors import EmberValueError
from ember.tune.model import KnobSpace, extract_tasks, schedule_text, tune_model
from ember.tune.records import load_records

ort = pytest.importorskip("onnxruntime")


def small_cnn() -> onnx.ModelProto:
    """conv3x3+relu -> conv3x3 + residual + relu -> depthwise 3x3 -> pool: a
    plain, a residual and a depthwise convolution kernel."""
    rng = np.random.default_rng(0)

    def init(name, *shape):
        return numpy_helper.from_array(
            (rng.standard_normal(shape) * 0.2).astype(np.float32), name
        )

    nodes = [
        helper.make_node("Conv", ["x", "w1", "b1"], ["c1"], pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["c1"], ["r1"]),
        helper.make_node("Conv", ["r1", "w2", "b2"], ["c2"], pads=[1, 1, 1, 1]),
        helper.make_node("Add", ["c2", "r1"], ["a2"]),
        helper.make_node("Relu", ["a2"], ["r2"]),
        helper.make_node(
            "Conv", ["r2", "w3"], ["c3"], pads=[1, 1, 1, 1], group=16, strides=[2, 2]
        ),
        helper.make_node("GlobalAveragePool", ["c3"], ["y"]),
    ]
    graph = helper.make_graph(
        nodes,
        "small_cnn",
        [helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT, [1, 8, 12, 12])],
        [helper.make_tensor_value_info("y", onnx.TensorProto.FLOAT, [1, 16, 1, 1])],
        [
            init("w1", 16, 8, 3, 3),
            init("b1", 16),
            init("w2", 16, 16, 3, 3),
            init("b2", 16),
            init("w3", 16, 1, 3, 3),
        ],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    return model


@pytest.fixture(scope="module")
def model():
    return small_cnn()


@pytest.fixture(scope="module")
def tuned(model, tmp_path_factory):
    """A short tuning run: its records path, result and progress reports."""
    path = tmp_path_factory.mktemp("tune") / "records.jsonl"
    seen: list[dict] = []
    result = tune_model(model, trials=6, batch=2, records=path, progress=seen.append)
    return path, result, seen


def run(mod, x):
    return rt.GraphModule(mod["default"](rt.cpu()))(x=x)[0]


def test_tasks_are_the_model_kernels_with_knobs(model):
    tasks = extract_tasks(model)
    assert [t.kind for t in tasks] == ["conv2d_relu", "conv2d_add_relu", "conv2d"]
    assert all(t.calls == 1 for t in tasks)
    depthwise = tasks[-1]
    assert depthwise.kernel.attrs["kernel"] == "depthwise"
    module, _ = lower_to_te(model)
    for t in tasks:
        space = KnobSpace(t.task, t.kernel)
        assert len(space) == len(space.configs()) >= 2
        # the default point is the schedule the model compiles with
        fn = next(
            op
            for op in module.ops
            if isinstance(op, func.FuncOp) and op.sym_name.data == t.symbol
        )
        (own,) = [op for op in fn.body.block.ops if isinstance(op, ScheduleOp)]
        assert space.render(t.default_config) == schedule_text(t.kernel) == str(own)


def test_tune_model_writes_records_that_compile_model_applies(model, tuned, tmp_path):
    path, result, seen = tuned
    assert result.trials == 6
    assert sum(t.trials for t in result.tasks) == 6
    assert all(t.best_s <= t.default_s for t in result.tasks)
    assert [s["trials"] for s in seen] == sorted(s["trials"] for s in seen)
    assert seen[-1]["trials"] == 6 and seen[-1]["estimate_s"] <= seen[-1]["default_s"]
    records = load_records(path)
    roles = [r.role for r in records]
    assert roles.count("trial") == 6 and roles.count("baseline") == 3
    # each task searched has its default and best two measured again
    tuned = [t for t in result.tasks if t.trials]
    assert len(tuned) <= roles.count("confirm") <= 3 * len(tuned)
    assert {r.workload for r in records} == {
        t.task.workload for t in extract_tasks(model)
    }
    table = result.table()
    assert "conv2d_add_relu" in table and "model (tuned kernels" in table

    x = np.random.default_rng(1).standard_normal((1, 8, 12, 12)).astype(np.float32)
    expected = ort.InferenceSession(
        model.SerializeToString(), providers=["CPUExecutionProvider"]
    ).run(None, {"x": x})[0]
    plain = ember.compile_model(model, tuning_records=False)
    with_records = ember.compile_model(model, tuning_records=str(path))
    assert plain.compile_stats.tuned == 0
    assert with_records.compile_stats.tuned == 3
    for mod in (plain, with_records):
        np.testing.assert_allclose(run(mod, x), expected, rtol=1e-4, atol=1e-5)


def test_records_under_the_cache_directory_apply_by_default(
    model, tuned, tmp_path, monkeypatch
):
    path, _, _ = tuned
    monkeypatch.setenv("EMBER_CACHE_DIR", str(tmp_path))
    assert ember.compile_model(model).compile_stats.tuned == 0
    (tmp_path / "tuning.jsonl").write_text(path.read_text())
    assert ember.compile_model(model).compile_stats.tuned == 3


def test_records_of_another_machine_do_not_apply(model, tuned, tmp_path):
    path, _, _ = tuned
    foreign = tmp_path / "foreign.jsonl"
    with open(foreign, "w") as f:
        for line in path.read_text().splitlines():
            record = json.loads(line)
            record["target"] = "x86_64-unknown-linux-gnu|skylake|+avx2"
            f.write(json.dumps(record) + "\n")
    mod = ember.compile_model(model, tuning_records=str(foreign))
    assert mod.compile_stats.tuned == 0


def test_plot_of_best_so_far(tuned, tmp_path):
    _, result, _ = tuned
    result.plot(tmp_path / "curve.png")
    assert (tmp_path / "curve.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_a_model_without_knobs_is_refused():
    node = helper.make_node("Relu", ["x"], ["y"])
    graph = helper.make_graph(
        [node],
        "relu",
        [helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT, [4])],
        [helper.make_tensor_value_info("y", onnx.TensorProto.FLOAT, [4])],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    with pytest.raises(EmberValueError, match="no kernel with knobs"):
        tune_model(model, trials=2)


def test_damaged_records_are_skipped_and_the_model_stays_right(model, tuned, tmp_path):
    """A log whose every schedule splits by a negative factor, or does not
    parse, or nests JSON too deeply, is faster on paper than any good record:
    each is skipped with a warning and the model computes what onnxruntime
    does (before: garbage with a negative split, exit 3 on one bad line)."""
    path, _, _ = tuned
    damaged = tmp_path / "damaged.jsonl"
    with open(damaged, "w") as f:
        for line in path.read_text().splitlines():
            record = {**json.loads(line), "costs": [1e-12]}
            negative = record["schedule"].replace("factor ", "factor -")
            f.write(line + "\n")
            f.write(json.dumps({**record, "schedule": negative}) + "\n")
            f.write(json.dumps({**record, "schedule": "te.schedule { te.split"}) + "\n")
        f.write("[" * 100_000 + "\n")
    x = np.random.default_rng(2).standard_normal((1, 8, 12, 12)).astype(np.float32)
    expected = ort.InferenceSession(
        model.SerializeToString(), providers=["CPUExecutionProvider"]
    ).run(None, {"x": x})[0]
    with pytest.warns(Warning) as caught:
        mod = ember.compile_model(model, tuning_records=str(damaged))
    messages = " ".join(str(w.message) for w in caught)
    assert "expected a positive split" in messages and "nested too deeply" in messages
    assert mod.compile_stats.tuned == 3  # the good records under the damaged ones
    np.testing.assert_allclose(run(mod, x), expected, rtol=1e-4, atol=1e-5)


@pytest.mark.slow  # 19 s: two tuning runs' compiles
def test_a_symbolic_model_is_tuned_at_the_sizes_it_is_planned_for(tmp_path):
    """A dynamic batch: each kernel is measured at the sizes its schedule is
    planned for (the bound, else PLANNING_SIZE) and keyed by them, so the
    model compiled with the same bounds takes the records and one compiled
    for other sizes does not; the one library runs at every batch."""
    from ember.passes.convert_graph_to_te import PLANNING_SIZE

    model = small_cnn()
    for value in (*model.graph.input, *model.graph.output):
        value.type.tensor_type.shape.dim[0].dim_param = "batch"
    open_ = extract_tasks(model)
    bounded = extract_tasks(model, bounds={"batch": 4})
    assert [t.task.sizes for t in open_] == [{"batch": PLANNING_SIZE}] * 3
    assert [t.task.sizes for t in bounded] == [{"batch": 4}] * 3
    assert bounded[0].task.args[0] == ((4, 8, 12, 12), "float32", False)
    assert not {t.task.workload for t in open_} & {t.task.workload for t in bounded}

    path = tmp_path / "records.jsonl"
    tune_model(model, trials=2, batch=2, records=path, tasks=bounded)
    records = load_records(path)
    assert {json.dumps(r.sizes) for r in records} == {'{"batch": 4}'}
    assert all(r.ok for r in records if r.role == "trial")
    tuned = ember.compile_model(model, tuning_records=str(path), bounds={"batch": 4})
    assert tuned.compile_stats.tuned == 3
    other = ember.compile_model(model, tuning_records=str(path))
    assert other.compile_stats.tuned == 0
    session = ort.InferenceSession(
        model.SerializeToString(), providers=["CPUExecutionProvider"]
    )
    for batch in (1, 3, 4):
        x = np.random.default_rng(batch).standard_normal((batch, 8, 12, 12))
        x = x.astype(np.float32)
        expected = session.run(None, {"x": x})[0]
        np.testing.assert_allclose(run(tuned, x), expected, rtol=1e-4, atol=1e-5)
        np.testing.assert_allclose(run(other, x), expected, rtol=1e-4, atol=1e-5)


def test_task_sizes_must_name_the_kernels_symbols():
    from ember import te
    from ember.tune.task import Task

    n = te.var("n")
    A = te.placeholder((n, 8), name="A")
    B = te.compute((n, 8), lambda i, j: A[i, j] * 2.0, name="B")
    assert Task.from_tensors([A, B], sizes={"n": 5}).args[0][0] == (5, 8)
    with pytest.raises(EmberValueError, match="no symbol 'm'.*its symbols: n"):
        Task.from_tensors([A, B], sizes={"m": 5})
    with pytest.raises(EmberValueError, match="positive ints, got n = 0"):
        Task.from_tensors([A, B], sizes={"n": 0})
    C = te.placeholder((4, 8), name="C")
    D = te.compute((4, 8), lambda i, j: C[i, j] * 2.0, name="D")
    with pytest.raises(EmberValueError, match="no symbol 'n'$"):
        Task.from_tensors([C, D], sizes={"n": 5})
