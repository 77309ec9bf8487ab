"""ember.runtime.wasm, the documented Wasm host: a wasm32 model library as
export_library writes it (a .tar, linked here by wasm-ld) runs in wasmtime with
its metadata read from the instance and its DLTensors written by the host, not
by the test. The small CNN (tests/small_cnn.py) is checked against
onnxruntime."""

import shutil
import subprocess
import sys

import numpy as np
import pytest
import small_cnn

WASM32 = "llvm -mtriple=wasm32-unknown-unknown -mattr=+simd128"

pytest.importorskip(
    "wasmtime", reason="wasmtime not installed: pip install -e '.[dev]'"
)
if shutil.which("wasm-ld") is None:
    pytest.skip("wasm-ld not installed: apt-get install lld", allow_module_level=True)


@pytest.fixture(scope="module")
def library(tmp_path_factory):
    import ember
    from ember.backends.kernel_cache import CompileCache
    from ember.runtime import save_param_dict

    mod = ember.compile_model(
        small_cnn.model(), target=WASM32, cache=CompileCache(None), embed_params=False
    )
    path = tmp_path_factory.mktemp("wasm") / "cnn.tar"
    mod.export_library(str(path))
    return path, save_param_dict(mod.params), mod.params


def test_the_cnn_runs_in_wasmtime_through_the_host_and_matches_onnxruntime(library):
    """Metadata from `__ember_metadata` in the instance, params from a param
    dict, the output equal to onnxruntime's."""
    onnxruntime = pytest.importorskip("onnxruntime")
    from ember.runtime.wasm import WasmModule

    path, param_dict, _ = library
    m = WasmModule(str(path), params=param_dict)
    assert m.metadata["triple"].startswith("wasm32")
    assert [i["name"] for i in m.model["inputs"]] == ["x"]
    x = small_cnn.random_input()
    session = onnxruntime.InferenceSession(small_cnn.model().SerializeToString())
    (want,) = session.run(None, {"x": x})
    (got,) = m.run(x=x)
    np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)
    (again,) = m.run(x=x)  # a second run reuses the instance's memory
    np.testing.assert_array_equal(again, got)


def test_a_linked_wasm_and_params_as_a_dict_give_the_same_output(library, tmp_path):
    from ember.runtime.cc import extract_objects
    from ember.runtime.wasm import WasmModule, link_wasm

    path, param_dict, params = library
    _, objects = extract_objects(str(path), str(tmp_path))
    linked = link_wasm(objects, str(tmp_path / "cnn.wasm"))
    x = small_cnn.random_input()
    (a,) = WasmModule(linked, params=params).run(x=x)
    (b,) = WasmModule(str(path), params=param_dict).run(x=x)
    np.testing.assert_array_equal(a, b)


def test_wrong_inputs_and_missing_params_are_refused_with_clear_messages(library):
    from ember.runtime import EmberError, EmberValueError
    from ember.runtime.wasm import WasmModule

    path, param_dict, _ = library
    m = WasmModule(str(path))
    x = small_cnn.random_input()
    with pytest.raises(EmberError, match="params are not loaded"):
        m.run(x=x)
    m.load_params(param_dict)
    with pytest.raises(
        EmberValueError,
        match=r"input 'x': expected shape \(1, 3, 8, 8\) float32, got \(1, 3, 9, 9\)",
    ):
        m.run(x=np.zeros((1, 3, 9, 9), "float32"))
    with pytest.raises(EmberValueError, match=r"unknown \['y'\], missing \['x'\]"):
        m.run(y=x)
    (y,) = m.run(x=x)  # the refusals left the module usable
    assert y.shape == small_cnn.OUTPUT_SHAPE


def test_the_host_imports_nothing_of_the_compiler():
    probe = (
        "import json, sys; import ember.runtime.wasm; "
        "print(json.dumps(sorted(sys.modules)))"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    forbidden = ("xdsl", "llvmlite", "wasmtime", "ember.passes", "ember.backends")
    assert [m for m in done.stdout.split('"') if m.startswith(forbidden)] == []
