"""Symbolic shapes in the graph executor (issue 25): one model library run at
every batch size and sequence length, its symbols bound from the inputs.

The libraries here are fakes, so nothing compiles: ``default_run`` is numpy
behind the packed C ABI (its tensors arrive as DLTensors, as a compiled
library's do), and it checks, as a compiled one does, that the outputs and the
workspace have exactly the shapes the symbols give.
"""

import copy
import json
import threading

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ember.runtime import EmberError, GraphModule, cpu
from ember.runtime.device_graph import _model as device_model
from ember.runtime.errors import EmberValueError
from ember.runtime.model_dims import ModelDims
from ember.runtime.module import Module, _check_metadata
from ember.runtime.packed_func import PackedFunc

# y = [x * mask, sum over seq]: (batch, seq + 1); the workspace holds x * mask
MODEL = {
    "inputs": [
        {"name": "x", "shape": ["batch", "seq"], "dtype": "float32"},
        {"name": "mask", "shape": ["seq"], "dtype": "float32"},
    ],
    "outputs": [{"name": "y", "shape": ["batch", "seq + 1"], "dtype": "float32"}],
    "workspace_bytes": "4 * batch * seq",
    "bounds": {"seq": 512},
    "params_bytes": 0,
    "params": {},
    "params_embedded": False,
}


class FakeLibrary(Module):
    """A model library whose ``default_run`` is a Python function, called
    through the packed C ABI like a compiled library's."""

    type_key = "fake"

    def __init__(self, model: dict, run):
        super().__init__()
        self._metadata = _check_metadata({"functions": {}, "model": model})
        self.python_run = PackedFunc(run, name="default_run")
        self._functions["default_run"] = PackedFunc(
            self.python_run.handle, name="default_run", owner=self.python_run
        )

    def _function_address(self, name: str) -> int:
        return 0


class MaskedSum:
    """``default_run`` of ``MODEL``, recording each call's workspace."""

    def __init__(self):
        self.workspaces: list[tuple[int, int]] = []  # (address, bytes)

    def __call__(self, x, mask, y, workspace, params):
        batch, seq = x.shape
        assert mask.shape == (seq,) and y.shape == (batch, seq + 1)
        assert workspace.dtype == "uint8" and workspace.shape == (4 * batch * seq,)
        self.workspaces.append((workspace.data_ptr(), workspace.shape[0]))
        scratch = np.asarray(workspace).view("float32").reshape(batch, seq)
        np.multiply(np.asarray(x), np.asarray(mask), out=scratch)
        out = np.asarray(y)
        out[:, :seq] = scratch
        out[:, seq] = scratch.sum(axis=1)


def expected(x: np.ndarray, mask: np.ndarray) -> np.ndarray:
    product = x * mask
    return np.concatenate([product, product.sum(axis=1, keepdims=True)], axis=1)


def inputs(batch: int, seq: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((batch, seq)).astype("float32")
    return x, rng.standard_normal(seq).astype("float32")


def executor(model: dict = MODEL, run=None):
    lib = FakeLibrary(model, run if run is not None else MaskedSum())
    return lib, lib["default"](cpu())


def test_one_executor_runs_at_every_shape():
    """One executor binds batch and seq anew at each call (0 included) and
    returns outputs of the shapes they give."""
    _, ex = executor()
    m = GraphModule(ex)
    for batch, seq in ((1, 3), (4, 16), (2, 5), (3, 0)):
        x, mask = inputs(batch, seq)
        (y,) = m(x=x, mask=mask)
        assert y.shape == (batch, seq + 1)
        np.testing.assert_allclose(y, expected(x, mask), rtol=1e-6)


def test_the_workspace_grows_and_is_kept_when_shapes_shrink():
    """invoke passes exactly the derived size, the head of a pooled buffer
    that is replaced only when too small and kept when the shapes shrink."""
    lib, ex = executor()
    run = lib.python_run._pyfunc
    for batch, seq in ((2, 8), (4, 16), (1, 2), (4, 16)):
        ex["invoke"](*inputs(batch, seq))
    (small, _), (big, _), (kept, _), (again, _) = run.workspaces
    assert [n for _, n in run.workspaces] == [64, 256, 8, 256]
    assert big != small and kept == big and again == big
    (pooled,) = ex._free_workspaces
    assert pooled.shape == (256,)


def test_the_stateful_workspace_grows_and_is_kept():
    """run does the same with the executor's own workspace."""
    lib, ex = executor()
    run = lib.python_run._pyfunc
    m = GraphModule(ex)
    for batch, seq in ((4, 16), (1, 2)):
        m.run(x=inputs(batch, seq)[0], mask=inputs(batch, seq)[1])
    assert [n for _, n in run.workspaces] == [256, 8]
    assert run.workspaces[0][0] == run.workspaces[1][0]


def test_an_inconsistent_shape_names_both_inputs_and_the_values():
    _, ex = executor()
    x, _ = inputs(2, 20)
    _, mask = inputs(2, 16)
    with pytest.raises(
        EmberValueError,
        match=r"input 'mask': dim 0 is 'seq' = 16, but input 'x' gave seq = 20",
    ):
        GraphModule(ex)(x=x, mask=mask)


def test_a_size_above_its_bound_is_refused():
    _, ex = executor()
    with pytest.raises(
        EmberValueError, match=r"input 'x': seq = 600 is above its bound 512"
    ):
        ex["invoke"](*inputs(1, 600))
    ex["invoke"](*inputs(1, 512))  # the bound is inclusive


def test_rank_and_dtype_are_checked_with_the_symbolic_shape():
    _, ex = executor()
    x, mask = inputs(2, 3)
    with pytest.raises(
        EmberError, match=r"input 'x': expected float32 \(batch, seq\), got float32"
    ):
        ex["invoke"](x[None], mask)
    with pytest.raises(EmberError, match=r"expected float32 \(seq\), got float64"):
        ex["invoke"](x, mask.astype("float64"))


def test_a_derived_input_dim_is_checked_and_outputs_cannot_be_negative():
    model = {
        **MODEL,
        "inputs": [
            {"name": "a", "shape": ["n"], "dtype": "float32"},
            {"name": "b", "shape": ["2 * n", 3], "dtype": "float32"},
        ],
        "outputs": [{"name": "c", "shape": ["n - 1"], "dtype": "float32"}],
        "workspace_bytes": 0,
        "bounds": {},
    }
    _, ex = executor(model, run=lambda a, b, c, workspace, params: None)
    a = np.zeros(3, "float32")
    with pytest.raises(
        EmberValueError, match=r"input 'b': dim 0 is '2 \* n' = 6 \(n = 3\), got 5"
    ):
        ex["invoke"](a, np.zeros((5, 3), "float32"))
    with pytest.raises(EmberValueError, match=r"input 'b': dim 1 must be 3, got 4"):
        ex["invoke"](a, np.zeros((6, 4), "float32"))
    (c,) = ex["invoke"](a, np.zeros((6, 3), "float32"))
    assert c.shape == (2,)
    with pytest.raises(
        EmberValueError,
        match=r"output 'c': dim 0 is 'n - 1' = -1 \(n = 0\), which is negative",
    ):
        ex["invoke"](np.zeros(0, "float32"), np.zeros((0, 3), "float32"))


def test_info_reports_symbolic_dims_as_their_text():
    _, ex = executor()
    m = GraphModule(ex)
    assert m.get_input_info() == (
        {"x": ("batch", "seq"), "mask": ("seq",)},
        {"x": "float32", "mask": "float32"},
    )
    assert m.get_output_info()[0] == {"y": ("batch", "seq + 1")}


def test_the_stateful_api_at_two_shapes():
    """set_input of a new shape replaces the input, run binds from the
    current inputs, get_output has the derived shape; before that, each
    says what to call first."""
    _, ex = executor()
    m = GraphModule(ex)
    with pytest.raises(EmberError, match=r"get_output 'y': its shape .* is symbolic"):
        m.get_output(0)
    with pytest.raises(EmberError, match=r"get_input 'x': .* set_input it first"):
        m.get_input("x")
    first = inputs(2, 3)
    m.set_input(x=first[0])
    with pytest.raises(EmberError, match=r"run: input 'mask' .* set_input it first"):
        m.run()
    m.run(mask=first[1])
    y_first = m.get_output(0)
    assert y_first.shape == (2, 4)
    np.testing.assert_allclose(y_first.numpy(), expected(*first), rtol=1e-6)

    second = inputs(3, 5, seed=1)
    m.set_input(x=second[0], mask=second[1])
    assert m.get_input("x").shape == (3, 5)
    m.run()
    assert m.get_output(0).shape == (3, 6)
    np.testing.assert_allclose(m.get_output(0).numpy(), expected(*second), rtol=1e-6)
    # a new shape gets new arrays: the first run's output is as it was
    np.testing.assert_allclose(y_first.numpy(), expected(*first), rtol=1e-6)

    m.set_input(mask=inputs(1, 4)[1])
    with pytest.raises(
        EmberValueError,
        match=r"run: input 'mask': dim 0 is 'seq' = 4, but input 'x' gave seq = 5",
    ):
        m.run()


def test_set_input_refuses_a_size_above_its_bound():
    _, ex = executor()
    with pytest.raises(
        EmberValueError, match=r"set_input: input 'x': seq = 600 is above its bound"
    ):
        GraphModule(ex).set_input("x", inputs(1, 600)[0])


def test_threads_at_different_shapes():
    """Calls at different shapes from several threads share the pool, each
    with a workspace large enough for its own."""
    _, ex = executor()
    m = GraphModule(ex)
    errors = []

    def work(seq: int) -> None:
        try:
            for batch in (1, 3, 2) * 5:
                x, mask = inputs(batch, seq, seed=seq)
                (y,) = m(x, mask)
                np.testing.assert_allclose(y, expected(x, mask), rtol=1e-6)
        except Exception as e:  # noqa: BLE001 - reported below
            errors.append(e)

    threads = [threading.Thread(target=work, args=(seq,)) for seq in (2, 7, 31, 64)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors


# every kind of dim derive computes: a repeated symbol, a bound, an int and a
# derived input dim, quotients and remainders (by symbols too, which may be 0),
# min, max, differences that may be negative; symbols named as no Python
# local could be
DERIVED = {
    "inputs": [
        {"name": "a", "shape": ["n", "lambda"]},
        {"name": "b", "shape": ["2 * n + 1", "lambda", 3]},
        {"name": "c", "shape": ["k.v"]},
    ],
    "outputs": [
        {"name": "y", "shape": ["(n + 15) // 16", "max(n, lambda)", "min(n, 2)"]},
        {
            "name": "z",
            "shape": [
                "n + 4 - lambda",
                "lambda % 3",
                "k.v * (lambda // n)",
                "n // (2 * k.v)",
            ],
        },
        {"name": "w", "shape": ["(n * lambda) % k.v", "n"]},
    ],
    "workspace_bytes": "4 * n * lambda - 8",
    "bounds": {"lambda": 16},
}


def _bound_then_derived(dims: ModelDims, shapes, prefix: str):
    env = dims.bind(shapes, prefix)
    return dims.output_shapes(env), dims.workspace_bytes(env)


def _outcome(f, *args):
    try:
        return f(*args)
    except EmberValueError as e:
        return str(e)


@settings(max_examples=300, deadline=None)
@given(
    st.integers(0, 20),
    st.integers(0, 20),
    st.integers(1, 4),  # k.v = 0 would divide by 0 in every example
    st.lists(st.none() | st.integers(0, 45), min_size=3, max_size=3),
)
def test_derive_agrees_with_bind_and_output_shapes(n, lam, kv, wrong):
    """derive's generated function gives what bind, output_shapes and
    workspace_bytes give, or the same refusal, for consistent shapes and
    inconsistent ones (``wrong`` replaces some of b's dims)."""
    dims = ModelDims(DERIVED)
    b = [2 * n + 1, lam, 3]
    b = [d if w is None else w for d, w in zip(b, wrong, strict=True)]
    shapes = [(n, lam), tuple(b), (kv,)]
    assert _outcome(dims.derive, shapes, "run: ") == _outcome(
        _bound_then_derived, dims, shapes, "run: "
    )


def test_derive_reads_no_metadata_text():
    """The generated source names the symbols by its own locals, so a symbol
    that is a Python keyword or dotted is no code."""
    dims = ModelDims(DERIVED)
    assert dims.derive([(6, 6), (13, 6, 3), (5,)]) == (
        [(1, 6, 2), (4, 0, 5, 0), (1, 6)],
        136,
    )
    source = dims._fast.source
    assert "lambda" not in source and "k.v" not in source


def test_a_division_by_a_zero_symbol_is_refused_as_bind_says():
    dims = ModelDims(DERIVED)
    with pytest.raises(
        EmberValueError, match=r"output 'z': dim 2: lambda // n: division by zero"
    ):
        dims.derive([(0, 0), (1, 0, 3), (5,)])


def _static_model() -> dict:
    model = copy.deepcopy(MODEL)
    model["inputs"][0]["shape"] = [2, 3]
    model["inputs"][1]["shape"] = [3]
    model["outputs"][0]["shape"] = [2, 4]
    model["workspace_bytes"] = 24
    del model["bounds"]
    return model


def test_a_static_model_runs_as_before():
    """No symbol work: the pooled workspace itself is passed, not a view."""
    lib, ex = executor(_static_model())
    run = lib.python_run._pyfunc
    assert ex._dims is None
    m = GraphModule(ex)
    x, mask = inputs(2, 3)
    (y,) = m(x=x, mask=mask)
    np.testing.assert_allclose(y, expected(x, mask), rtol=1e-6)
    m(x=x, mask=mask)
    m.run(x=x, mask=mask)
    np.testing.assert_allclose(m.get_output(0).numpy(), expected(x, mask), rtol=1e-6)
    (pooled,) = ex._free_workspaces
    assert run.workspaces[:2] == [(pooled.data_ptr(), 24)] * 2
    assert run.workspaces[2] == (ex._workspace.data_ptr(), 24)
    with pytest.raises(EmberError, match=r"expected float32 \(2, 3\), got float32"):
        m(x=x[:1], mask=mask)


def _refused(change, message: str) -> None:
    model = copy.deepcopy(MODEL)
    change(model)
    with pytest.raises(EmberValueError, match=message):
        _check_metadata({"functions": {}, "model": model})


@pytest.mark.parametrize(
    "change, message",
    [
        (
            lambda m: m["outputs"][0].update(shape=["batch", "hidden"]),
            r"outputs\[0\] \('y'\): dim 1 is 'hidden', which uses symbol 'hidden'; "
            "no input binds it",
        ),
        (
            lambda m: m.update(workspace_bytes="4 * tokens"),
            r'"workspace_bytes" is \'4 \* tokens\', which uses symbol \'tokens\'',
        ),
        (
            lambda m: m["inputs"][1].update(shape=["2 * width"]),
            r"inputs\[1\] \('mask'\): dim 0 is '2 \* width', which uses symbol 'width'",
        ),
        (
            lambda m: m["inputs"][0].update(shape=["batch", "seq +"]),
            r"inputs\[0\] \('x'\): dim 1: dimension expression 'seq \+'",
        ),
        (
            lambda m: m["outputs"][0].update(shape=["batch", 2.5]),
            r"dim 1: expected a non-negative int or an expression text, got 2.5",
        ),
        (lambda m: m["outputs"][0].update(shape=[-1]), "got -1"),
        (lambda m: m["outputs"][0].update(shape=["0 - 1"]), "'0 - 1' is negative"),
        (lambda m: m.update(workspace_bytes=-1), '"workspace_bytes" must be a non-neg'),
        (
            lambda m: m.update(bounds={"seq": -4}),
            "'seq' must be a positive int, got -4",
        ),
        (lambda m: m.update(bounds={"seq": 0}), "'seq' must be a positive int, got 0"),
        (lambda m: m.update(bounds={"seq": "512"}), "positive int, got '512'"),
        (lambda m: m.update(bounds={"seq": True}), "positive int, got True"),
        (
            lambda m: m.update(bounds={"hidden": 8}),
            "bounds: 'hidden' is not a symbol of the model's inputs; its symbols "
            "are 'batch', 'seq'",
        ),
        (lambda m: m.update(bounds=[512]), '"bounds" must be an object'),
    ],
)
def test_check_model_refuses_malformed_symbolic_metadata(change, message):
    _refused(change, message)


def test_check_model_accepts_symbolic_metadata():
    model = copy.deepcopy(MODEL)
    model["outputs"].append(
        {
            "name": "z",
            "shape": ["(seq + 15) // 16", "max(batch, 2)", "4"],
            "dtype": "int8",
        }
    )
    document = json.loads(json.dumps({"functions": {}, "model": model}))
    assert _check_metadata(document)["model"] == model


def test_the_gpu_executor_refuses_symbolic_shapes():
    """A GPU plan with a symbolic dim is refused, naming the argument."""

    class Plan:
        plan = {
            "functions": {
                "default_run": {
                    "args": [
                        {
                            "name": "x",
                            "shape": ["batch", 8],
                            "dtype": "float32",
                            "output": False,
                        },
                    ]
                }
            }
        }

        def _describe(self) -> str:
            return "opencl module"

    with pytest.raises(
        EmberError,
        match=r"opencl module: default_run argument 0 \('x'\) has the symbolic "
        r"shape \(batch, 8\); symbolic shapes run on CPU libraries only for now",
    ):
        device_model(Plan())


def test_dims_written_as_constant_text_are_static():
    """A dim written as text that is a constant ("2", "1 + 2") is an int:
    the model takes the static path and reports ints."""
    model = _static_model()
    model["inputs"][0]["shape"] = ["2", "1 + 2"]
    model["workspace_bytes"] = "24"
    _, ex = executor(model)
    assert ex._dims is None
    m = GraphModule(ex)
    assert m.get_input_info()[0] == {"x": (2, 3), "mask": (3,)}
    x, mask = inputs(2, 3)
    np.testing.assert_allclose(m(x, mask)[0], expected(x, mask), rtol=1e-6)
