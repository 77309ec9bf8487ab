"""GraphModule over model libraries (JIT, .so, .tar; params embedded or kept
separate) against numpy, and every error a user can make with one."""

import json
import os
import subprocess
import sys
import time

import handmade_model as hm
import numpy as np
import pytest

import ember
from ember.runtime import (
    EmberError,
    GraphModule,
    array,
    cpu,
    load_module,
    pack_params,
    save_param_dict,
)

PARAMS = hm.random_params()
X = np.random.default_rng(1).standard_normal((1, hm.K)).astype("float32")
EXPECTED = hm.reference(X, PARAMS)


@pytest.fixture(scope="module")
def separate():
    return hm.build()


@pytest.fixture(scope="module")
def embedded():
    return hm.build(PARAMS)


@pytest.fixture(scope="module")
def libraries(tmp_path_factory, separate, embedded):
    """Exported libraries: (kind, embedded) -> path."""
    root = tmp_path_factory.mktemp("models")
    paths = {}
    for suffix in (".so", ".tar"):
        for is_embedded, mod in ((False, separate), (True, embedded)):
            path = root / f"model_{is_embedded}{suffix}"
            mod.export_library(path)
            paths[suffix, is_embedded] = path
    return paths


def _module(kind: str, is_embedded: bool, separate, embedded, libraries):
    if kind == "jit":
        return embedded if is_embedded else separate
    return load_module(libraries[kind, is_embedded])


@pytest.mark.parametrize("kind", ["jit", ".so", ".tar"])
@pytest.mark.parametrize("is_embedded", [False, True])
def test_runs_like_numpy(kind, is_embedded, separate, embedded, libraries):
    lib = _module(kind, is_embedded, separate, embedded, libraries)
    executor = lib["default"](cpu())
    assert executor.type_key == "graph_executor"
    m = GraphModule(executor)
    if not is_embedded:
        m.load_params(save_param_dict(PARAMS))
    m.set_input("x", X)
    m.run()
    np.testing.assert_allclose(m.get_output(0).numpy(), EXPECTED, rtol=1e-5, atol=1e-5)
    assert m.get_num_inputs() == 1 and m.get_num_outputs() == 1


def test_embedded_params_are_the_librarys_memory_zero_copy(libraries):
    lib = load_module(libraries[".so", True])
    executor = lib["default"](cpu())
    params = np.asarray(executor._params)
    assert not params.flags.writeable
    address = lib._function_address("__ember_params")
    assert executor._params.data_ptr() == address and address % 64 == 0
    assert params.tobytes() == pack_params(PARAMS, hm.LAYOUT, hm.PARAMS_BYTES)


def test_metadata_describes_the_model(libraries):
    model = load_module(libraries[".so", False]).metadata["model"]
    assert model == json.loads(hm.model_json(False))


def test_set_input_forms_and_copies(separate):
    m = GraphModule(separate["default"](cpu()))
    m.load_params(PARAMS)
    m.set_input(0, X)
    first = m.get_output(0)
    m.run()
    np.testing.assert_allclose(first.numpy(), EXPECTED, rtol=1e-5, atol=1e-5)
    m.set_input(x=np.zeros_like(X))
    m.run()
    np.testing.assert_allclose(
        m.get_output(0).numpy(), hm.reference(np.zeros_like(X), PARAMS), atol=1e-5
    )
    m.run(x=array(X))  # an NDArray, copied
    np.testing.assert_allclose(
        m.get_output("y").numpy(), EXPECTED, rtol=1e-5, atol=1e-5
    )
    x = X.copy()
    m.set_input("x", x)
    x[:] = 0  # the input was copied
    np.testing.assert_array_equal(m.get_input("x").numpy(), X)
    assert m.get_input(0) is m.get_input("x")
    assert m.get_input_index("x") == 0 and m.get_input_index("nope") == -1
    assert m.get_input_info() == ({"x": (1, hm.K)}, {"x": "float32"})
    assert m.get_output_info() == ({"y": (1, hm.N)}, {"y": "float32"})


def test_set_input_from_torch(separate):
    torch = pytest.importorskip("torch")
    m = GraphModule(separate["default"](cpu()))
    m.load_params(PARAMS)
    m.run(x=torch.from_numpy(X))
    np.testing.assert_allclose(m.get_output(0).numpy(), EXPECTED, rtol=1e-5, atol=1e-5)


def test_get_output_into_out(embedded):
    m = GraphModule(embedded["default"](cpu()))
    m.run(x=X)
    out = np.empty((1, hm.N), "float32")
    assert m.get_output(0, out) is out
    np.testing.assert_allclose(out, EXPECTED, rtol=1e-5, atol=1e-5)
    nd = ember.runtime.empty((1, hm.N))
    m.get_output(0, nd)
    np.testing.assert_array_equal(nd.numpy(), out)
    with pytest.raises(EmberError, match=r"out must be float32 \(1, 4\), got float64"):
        m.get_output(0, np.empty((1, hm.N)))


def test_input_errors(embedded):
    m = GraphModule(embedded["default"](cpu()))
    with pytest.raises(
        EmberError, match="model has no input named 'data'; its inputs are 'x'"
    ):
        m.set_input("data", X)
    with pytest.raises(
        EmberError, match=r"input index 1 is out of range: the model has 1"
    ):
        m.set_input(1, X)
    with pytest.raises(
        EmberError,
        match=r"set_input 'x': expected float32 \(1, 8\), got float64 \(1, 8\)",
    ):
        m.set_input("x", X.astype("float64"))
    with pytest.raises(
        EmberError, match=r"expected float32 \(1, 8\), got float32 \(8,\)"
    ):
        m.set_input("x", X[0])
    with pytest.raises(TypeError, match="expected a numpy array, NDArray or DLPack"):
        m.set_input("x", object())
    with pytest.raises(TypeError, match="no value given"):
        m.set_input("x")
    with pytest.raises(EmberError, match="output index 3 is out of range"):
        m.get_output(3)
    with pytest.raises(EmberError, match="model has no output named 'z'"):
        m.get_output("z")


def test_running_before_params_are_loaded_is_an_error(separate):
    m = GraphModule(separate["default"](cpu()))
    m.set_input("x", X)
    with pytest.raises(
        EmberError, match="params 'b1', 'b2', 'w1', 'w2' are not loaded"
    ):
        m.run()
    m.load_params({"w1": PARAMS["w1"], "b1": PARAMS["b1"]})
    with pytest.raises(EmberError, match="params 'b2', 'w2' are not loaded"):
        m.run()
    m.load_params(save_param_dict({"w2": PARAMS["w2"], "b2": PARAMS["b2"]}))
    m.run()
    np.testing.assert_allclose(m.get_output(0).numpy(), EXPECTED, rtol=1e-5, atol=1e-5)


def test_load_params_errors(separate):
    m = GraphModule(separate["default"](cpu()))
    with pytest.raises(
        EmberError, match="has no param 'conv.weight'.*its params are 'w1'"
    ):
        m.load_params({"conv.weight": np.zeros(3, "float32")})
    with pytest.raises(
        EmberError,
        match=r"param 'w1' must be float32 \(16, 8\) .*got float32 \(8, 16\)",
    ):
        m.load_params({"w1": PARAMS["w1"].T.copy()})
    with pytest.raises(EmberError, match="has 896 bytes, got 10"):
        m.load_params(b"0123456789")
    with pytest.raises(EmberError, match="damaged param dict"):
        m.load_params(save_param_dict(PARAMS)[:-3])
    with pytest.raises(TypeError, match="expected bytes or a dict"):
        m.load_params(3)


def test_a_flipped_weight_bit_is_refused(separate):
    """It loaded silently before the param dict had a checksum."""
    m = GraphModule(separate["default"](cpu()))
    blob = bytearray(save_param_dict(PARAMS))
    at = bytes(blob).find(PARAMS["w2"].tobytes()) + 5
    blob[at] ^= 0x10
    with pytest.raises(EmberError, match="damaged param dict"):
        m.load_params(bytes(blob))
    with pytest.raises(EmberError, match="are not loaded"):
        m.run(x=X)


def test_load_params_raw_blob_and_over_embedded(embedded):
    m = GraphModule(embedded["default"](cpu()))
    doubled = {name: 2 * value for name, value in PARAMS.items()}
    m.load_params(pack_params(doubled, hm.LAYOUT, hm.PARAMS_BYTES))
    m.run(x=X)
    np.testing.assert_allclose(
        m.get_output(0).numpy(), hm.reference(X, doubled), rtol=1e-5, atol=1e-5
    )
    # Another executor of the same library still has the embedded params.
    other = GraphModule(embedded["default"](cpu()))
    other.run(x=X)
    np.testing.assert_allclose(
        other.get_output(0).numpy(), EXPECTED, rtol=1e-5, atol=1e-5
    )


def test_executors_are_independent(embedded):
    a = GraphModule(embedded["default"](cpu()))
    b = GraphModule(embedded["default"](cpu()))
    a.run(x=X)
    b.run(x=np.zeros_like(X))
    np.testing.assert_allclose(a.get_output(0).numpy(), EXPECTED, rtol=1e-5, atol=1e-5)


def test_executor_module_functions(embedded):
    executor = embedded["default"](cpu())
    assert set(executor.function_names()) >= {
        "set_input",
        "run",
        "get_output",
        "get_num_outputs",
        "get_num_inputs",
        "get_input",
        "load_params",
    }
    executor["set_input"]("x", X)
    executor["run"]()
    assert executor["get_num_outputs"]() == 1
    np.testing.assert_allclose(
        executor["get_output"](0).numpy(), EXPECTED, rtol=1e-5, atol=1e-5
    )
    result = GraphModule(executor).benchmark(cpu(), repeat=3, number=2)
    assert len(result.results) == 3 and result.median > 0


def test_factory_errors(embedded):
    with pytest.raises(EmberError, match="compiled models run on the cpu"):
        embedded["default"](ember.runtime.device("cuda"))
    with pytest.raises(TypeError, match="wraps a graph executor"):
        GraphModule(embedded)


def test_a_kernel_library_has_no_factory():
    from ember import te

    A = te.placeholder((4,), name="A")
    B = te.compute((4,), lambda i: A[i] + 1, name="B")
    mod = ember.build(te.create_schedule(B.op), [A, B], name="inc")
    with pytest.raises(
        ember.runtime.FunctionNotFoundError, match="no function 'default'"
    ):
        mod["default"]


def test_embedded_but_missing_blob_is_an_error():
    mod = ember.build(hm.model_ir(embedded=True), name="default_run")
    with pytest.raises(
        EmberError, match="params are embedded, but the library has no __ember_params"
    ):
        mod["default"](cpu())


@pytest.mark.parametrize(
    "change, message",
    [
        (lambda m: m.pop("inputs"), '"inputs" must be a list'),
        (
            lambda m: m.update(workspace_bytes=-1),
            '"workspace_bytes" must be a non-negative',
        ),
        (
            lambda m: m.update(params_embedded="yes"),
            '"params_embedded" must be true or false',
        ),
        (lambda m: m["inputs"][0].update(dtype="float128"), "unknown dtype 'float128'"),
        (lambda m: m["params"]["w1"].update(offset=3), "multiple of 64, got 3"),
        (lambda m: m.update(params_bytes=100), "past the end of the 100-byte"),
        (lambda m: m["inputs"][0].update(dtype=["float32"]), "unknown dtype"),
        (lambda m: m["params"]["w1"].update(dtype={}), "must be a dtype name"),
        (lambda m: m["params"]["w1"].update(shape=[2**62, 2**62]), "past the end"),
    ],
)
def test_invalid_model_metadata_names_the_problem(change, message):
    from ember.runtime.module import _check_metadata

    model = json.loads(hm.model_json(False))
    change(model)
    with pytest.raises(ValueError, match=message):
        _check_metadata({"functions": {}, "model": model})


def test_big_embedded_params_export_quickly(tmp_path):
    """A 64 MB blob goes into a .so and a .tar as a data object, not LLVM IR."""
    blob = np.random.default_rng(0).integers(0, 256, 64 << 20, dtype=np.uint8)
    mod = ember.build(hm.model_ir(embedded=False), name="default_run")
    mod.add_data("__ember_big", blob)
    for suffix in (".so", ".tar"):
        start = time.perf_counter()
        mod.export_library(tmp_path / f"big{suffix}")
        elapsed = time.perf_counter() - start
        assert elapsed < 5, f"{suffix} export took {elapsed:.1f} s"
        lib = load_module(tmp_path / f"big{suffix}")
        view = lib.get_data("__ember_big", blob.size)
        assert view is not None and np.array_equal(np.asarray(view), blob)


def test_runs_in_a_fresh_process_without_the_compiler(libraries, tmp_path):
    np.save(tmp_path / "x.npy", X)
    code = f"""
import sys
import numpy as np
from ember.runtime import GraphModule, cpu, load_module
m = GraphModule(load_module({str(libraries[".so", True])!r})["default"](cpu()))
m.run(x=np.load({str(tmp_path / "x.npy")!r}))
np.save({str(tmp_path / "y.npy")!r}, m.get_output(0).numpy())
assert not any(k.startswith(("xdsl", "llvmlite")) for k in sys.modules), "compiler imported"
"""
    subprocess.run([sys.executable, "-c", code], check=True, env={**os.environ})
    np.testing.assert_allclose(
        np.load(tmp_path / "y.npy"), EXPECTED, rtol=1e-5, atol=1e-5
    )
