"""RPC sessions end to end: a server on a free loopback port, libraries uploaded,
loaded and run there on remote arrays, checked against numpy; remote timing;
files; models through GraphModule; the server without the compiler."""

import gc
import json
import os
import subprocess
import sys
import time

import handmade_model as hm
import numpy as np
import pytest
from rpc_util import export_vecadd, random_inputs, rpc_server

import ember
import ember.rpc
from ember import te
from ember.rpc import RemoteModule, RemoteNDArray, RPCError
from ember.runtime import (
    BenchmarkResult,
    EmberError,
    FunctionNotFoundError,
    GraphModule,
    InvalidLibraryError,
    array,
    cpu,
    empty,
)

KEY = "correct horse battery staple"
N = 1024


@pytest.fixture(scope="module")
def server():
    with rpc_server(key=KEY) as running:
        yield running


@pytest.fixture(scope="module")
def libs(tmp_path_factory):
    root = tmp_path_factory.mktemp("rpc_libs")
    export_vecadd(str(root / "vecadd.so"), N)
    export_vecadd(str(root / "vecadd.tar"), N)
    return root


@pytest.fixture
def remote(server):
    with ember.rpc.connect("127.0.0.1", server.port, key=KEY) as session:
        yield session


def _vecadd(remote, libs):
    remote.upload(libs / "vecadd.so")
    return remote.load_module("vecadd.so")


def test_upload_load_run_with_remote_arrays(remote, libs):
    lib = _vecadd(remote, libs)
    assert isinstance(lib, RemoteModule)
    assert lib.function_names() == ["vecadd"] and lib.entry_name == "vecadd"
    dev = remote.cpu(0)
    x, y = random_inputs(N)
    a, b = array(x, device=dev), array(y, device=dev)
    c = empty((N,), "float32", dev)
    assert isinstance(a, RemoteNDArray) and a.shape == (N,) and a.dtype == "float32"
    lib["vecadd"](a, b, c)
    np.testing.assert_allclose(c.numpy(), x + y, rtol=1e-6)
    lib(b, b, c)  # the entry function
    np.testing.assert_allclose(c.numpy(), 2 * y, rtol=1e-6)


def test_remote_time_evaluator_times_on_the_server(remote, libs):
    lib = _vecadd(remote, libs)
    dev = remote.cpu(0)
    a, b, c = (
        array(v, device=dev) for v in (*random_inputs(N), np.zeros(N, "float32"))
    )
    timer = lib.time_evaluator("vecadd", dev, number=50, repeat=3)
    result = timer(a, b, c)
    assert isinstance(result, BenchmarkResult) and len(result.results) == 3
    # A vector add of 1024 floats takes well under the ~100 µs of one round trip.
    assert 0 < result.median < 50e-6
    np.testing.assert_allclose(c.numpy(), a.numpy() + b.numpy(), rtol=1e-6)
    grown = lib.time_evaluator("vecadd", dev, number=1, repeat=1, min_repeat_ms=5)(
        a, b, c
    )
    assert grown.mean < 50e-6  # number grew until a measurement lasted 5 ms
    with pytest.raises(EmberError, match="expected 3 arguments"):
        timer(a, b)
    with pytest.raises(FunctionNotFoundError, match="no function 'nope'"):
        lib.time_evaluator("nope", dev)


def test_tar_library_is_linked_on_the_server(remote, libs):
    remote.upload(libs / "vecadd.tar", target_name="lib.tar")
    lib = remote.load_module("lib.tar")
    dev = remote.cpu()
    x, y = random_inputs(N, seed=3)
    c = empty((N,), "float32", dev)
    lib["vecadd"](array(x, device=dev), array(y, device=dev), c)
    np.testing.assert_allclose(c.numpy(), x + y, rtol=1e-6)


def test_files_upload_download_listdir_remove(remote, libs, tmp_path):
    assert remote.listdir() == []
    remote.upload(libs / "vecadd.so")
    remote.upload(libs / "vecadd.so", target_name="copy.so")
    assert remote.listdir() == ["copy.so", "vecadd.so"]
    assert remote.download("copy.so") == (libs / "vecadd.so").read_bytes()
    empty_file = tmp_path / "empty.bin"
    empty_file.write_bytes(b"")
    remote.upload(empty_file)
    assert remote.download("empty.bin") == b""
    remote.remove("copy.so")
    assert remote.listdir() == ["empty.bin", "vecadd.so"]
    with pytest.raises(FileNotFoundError, match="no file 'copy.so'"):
        remote.download("copy.so")
    with pytest.raises(FileNotFoundError):
        remote.remove("copy.so")
    with pytest.raises(ValueError, match="plain name"):
        remote.upload(libs / "vecadd.so", target_name="../escape.so")


def test_chunked_transfers_under_a_small_frame_limit(libs, tmp_path):
    with rpc_server("--max-frame-bytes", "131072") as small:
        with ember.rpc.connect("127.0.0.1", small.port) as remote:
            blob = os.urandom(300_000 + 7)
            (tmp_path / "blob.bin").write_bytes(blob)
            remote.upload(tmp_path / "blob.bin")
            assert remote.download("blob.bin") == blob
            x = np.random.default_rng(0).standard_normal((300, 257)).astype("float32")
            a = array(x, device=remote.cpu())
            np.testing.assert_array_equal(a.numpy(), x)
            lib = _vecadd(remote, libs)
            c = empty((N,), "float32", remote.cpu())
            v = np.arange(N, dtype="float32")
            lib["vecadd"](
                array(v, device=remote.cpu()), array(v, device=remote.cpu()), c
            )
            np.testing.assert_array_equal(c.numpy(), 2 * v)


@pytest.mark.parametrize(
    "dtype",
    ["float32", "float64", "float16", "int8", "uint8", "int32", "int64", "bool"],
)
def test_remote_arrays_round_trip(remote, dtype):
    rng = np.random.default_rng(1)
    x = (rng.standard_normal((3, 5, 7)) * 50).astype(dtype)
    a = array(x, device=remote.cpu())
    np.testing.assert_array_equal(a.numpy(), x)
    assert a.numpy().dtype == x.dtype and a.ndim == 3 and a.nbytes == x.nbytes
    y = x[::-1].copy()
    a.copyfrom(y)
    np.testing.assert_array_equal(a.numpy(), y)
    local = a.copyto(cpu())
    np.testing.assert_array_equal(local.numpy(), y)
    out = np.empty_like(x)
    a.copyto(out)
    np.testing.assert_array_equal(out, y)
    other = a.copyto(remote.cpu())
    assert isinstance(other, RemoteNDArray) and other.handle != a.handle
    np.testing.assert_array_equal(other.numpy(), y)


def test_zero_size_and_list_inputs(remote):
    z = empty((0, 4), "float32", remote.cpu())
    assert z.numpy().shape == (0, 4)
    a = array([[1, 2], [3, 4]], device=remote.cpu(), dtype="int32")
    np.testing.assert_array_equal(a.numpy(), [[1, 2], [3, 4]])
    a.copyfrom([[5, 6], [7, 8]])
    np.testing.assert_array_equal(a.numpy(), [[5, 6], [7, 8]])


def test_copy_errors_match_the_local_ones(remote):
    a = empty((4,), "float32", remote.cpu())
    with pytest.raises(ValueError, match=r"expected shape \(4,\), got shape \(5,\)"):
        a.copyfrom(np.zeros(5, "float32"))
    with pytest.raises(ValueError, match="expected dtype float32, got dtype float64"):
        a.copyfrom(np.zeros(4))
    with pytest.raises(ValueError, match="expected a float32 array of shape"):
        a.copyto(np.zeros(4))


def test_argument_mistakes_give_clear_errors(server, remote, libs):
    lib = _vecadd(remote, libs)
    dev = remote.cpu()
    a = array(np.zeros(N, "float32"), device=dev)
    with pytest.raises(
        TypeError, match=r"local ndarray cannot be passed .*device=remote.cpu\(0\)"
    ):
        lib["vecadd"](a, a, np.zeros(N, "float32"))
    with pytest.raises(EmberError, match="shape"):
        lib["vecadd"](a, a, array(np.zeros(N + 1, "float32"), device=dev))
    with pytest.raises(EmberError, match="expected float32 tensor .*got int32"):
        lib["vecadd"](a, a, array(np.zeros(N, "int32"), device=dev))
    with pytest.raises(TypeError, match="cannot be sent over RPC"):
        lib["vecadd"](a, a, object())
    with pytest.raises(FunctionNotFoundError, match="available: vecadd"):
        lib["nope"]
    with ember.rpc.connect("127.0.0.1", server.port, key=KEY) as other:
        foreign = array(np.zeros(N, "float32"), device=other.cpu())
        with pytest.raises(EmberError, match="belongs to another RPC session"):
            lib["vecadd"](a, a, foreign)
    # The session is fine after every mistake.
    c = empty((N,), "float32", dev)
    lib["vecadd"](a, a, c)
    np.testing.assert_array_equal(c.numpy(), np.zeros(N, "float32"))


def test_remote_arrays_and_devices_stay_out_of_local_code(remote):
    a = array(np.zeros(4, "float32"), device=remote.cpu())
    assert remote.cpu() != cpu() and remote.cpu().device_type == 129
    assert "remote[" in repr(remote.cpu()) and "RemoteNDArray" in repr(a)
    with pytest.raises(TypeError, match="RemoteNDArray"):
        np.add(a, 1)  # no silent download: a remote array is not array-like here
    with pytest.raises(EmberError, match="cpu"):
        ember.runtime.GraphExecutor  # noqa: B018 - importable
        from ember.runtime.ndarray import _check_cpu

        _check_cpu(remote.cpu(), "local")  # type: ignore[arg-type]


def test_freed_arrays_give_memory_back(libs):
    with rpc_server("--max-memory-bytes", "10000") as small:
        with ember.rpc.connect("127.0.0.1", small.port) as remote:
            for _ in range(5):
                a = empty((2000,), "float32", remote.cpu())  # 8000 of 10000 bytes
                del a
                gc.collect()
            b = empty((2000,), "float32", remote.cpu())
            with pytest.raises(RPCError, match="memory limit of 10000 bytes"):
                empty((1000,), "float32", remote.cpu())
            assert b.numpy().shape == (2000,)


def test_loading_a_non_library_is_an_error_and_the_session_goes_on(
    remote, libs, tmp_path
):
    bad = tmp_path / "notes.so"
    bad.write_text("hello\n")
    remote.upload(bad)
    with pytest.raises(InvalidLibraryError, match="notes.so"):
        remote.load_module("notes.so")
    with pytest.raises(FileNotFoundError, match="no file 'missing.so'"):
        remote.load_module("missing.so")
    assert _vecadd(remote, libs).function_names() == ["vecadd"]


def test_sessions_are_isolated_and_their_workspaces_removed(server, libs):
    with ember.rpc.connect("127.0.0.1", server.port, key=KEY) as one:
        one.upload(libs / "vecadd.so")
        with ember.rpc.connect("127.0.0.1", server.port, key=KEY) as two:
            assert two.listdir() == []
            assert one.listdir() == ["vecadd.so"]
            assert len(server.sessions()) >= 2
    deadline = time.monotonic() + 10
    while server.sessions() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert server.sessions() == []


def test_key_is_checked(server):
    with pytest.raises(RPCError, match="requires a key"):
        ember.rpc.connect("127.0.0.1", server.port)
    with pytest.raises(RPCError, match="wrong key"):
        ember.rpc.connect("127.0.0.1", server.port, key="guess")
    assert "refused: the client sent a wrong key" in server.log()


def test_connection_errors(server, remote):
    with pytest.raises(RPCError, match="cannot connect"):
        ember.rpc.connect("127.0.0.1", 1, timeout=2)
    remote.close()
    with pytest.raises(RPCError, match="closed"):
        remote.listdir()
    assert "closed" in repr(remote)


def test_a_model_runs_remotely_through_graph_module(remote, tmp_path):
    params = hm.random_params()
    x = np.random.default_rng(2).standard_normal((1, hm.K)).astype("float32")
    expected = hm.reference(x, params)
    hm.build(params).export_library(tmp_path / "mlp.so")
    hm.build().export_library(tmp_path / "mlp_separate.so")
    remote.upload(tmp_path / "mlp.so")
    remote.upload(tmp_path / "mlp_separate.so")

    m = GraphModule(remote.load_module("mlp.so")["default"](remote.cpu(0)))
    m.set_input("x", x)  # a local array is copied to the server
    m.run()
    out = m.get_output(0)
    assert isinstance(out, RemoteNDArray)
    np.testing.assert_allclose(out.numpy(), expected, rtol=1e-5, atol=1e-5)
    m.run(x=array(2 * x, device=remote.cpu()))
    into = np.empty_like(expected)
    m.get_output(0, into)
    np.testing.assert_allclose(into, hm.reference(2 * x, params), rtol=1e-5, atol=1e-5)
    assert m.get_num_inputs() == 1 and m.get_num_outputs() == 1
    assert m.get_input_index("x") == 0
    assert m.get_input_info() == ({"x": (1, hm.K)}, {"x": "float32"})
    assert m.get_output_info() == ({"y": (1, hm.N)}, {"y": "float32"})
    assert m.benchmark(number=3, repeat=2).mean > 0
    with pytest.raises(EmberError, match="expected float32 .1, 8., got float64"):
        m.set_input("x", x.astype("float64"))
    with pytest.raises(EmberError, match="no input named 'nope'"):
        m.set_input("nope", x)

    separate = GraphModule(
        remote.load_module("mlp_separate.so")["default"](remote.cpu(0))
    )
    with pytest.raises(EmberError, match="not loaded"):
        separate.run(x=x)
    separate.load_params(params)  # a dict goes over as a param dict document
    separate.run()
    np.testing.assert_allclose(
        separate.get_output(0).numpy(), expected, rtol=1e-5, atol=1e-5
    )


def test_a_compiled_onnx_model_runs_remotely(remote, tmp_path):
    ort = pytest.importorskip("onnxruntime")
    examples = os.path.join(os.path.dirname(__file__), "..", "examples")
    sys.path.insert(0, examples)
    try:
        import onnx_models
    finally:
        sys.path.remove(examples)
    model = onnx_models.mlp()
    inputs = onnx_models.random_input(model)
    ember.compile_model(model).export_library(tmp_path / "mlp.so")
    (expected,) = ort.InferenceSession(model.SerializeToString()).run(None, inputs)
    remote.upload(tmp_path / "mlp.so")
    m = GraphModule(remote.load_module("mlp.so")["default"](remote.cpu()))
    m.run(**inputs)
    np.testing.assert_allclose(m.get_output(0).numpy(), expected, rtol=1e-4, atol=1e-5)


SERVE_WITHOUT_COMPILER = r"""
import sys
sys.modules["xdsl"] = None
sys.modules["llvmlite"] = None
from ember.rpc.server import main
import ember.runtime.rpc.session  # what a session needs, loaded up front
loaded = [m for m in sys.modules if m.startswith(("xdsl", "llvmlite", "ember.backends",
          "ember.passes", "ember.dialects", "ember.te", "ember.compiler.build")) and sys.modules[m]]
if loaded:
    raise SystemExit(f"the server imported the compiler: {loaded}")
sys.exit(main(sys.argv[1:]))
"""


def test_the_server_needs_no_compiler(libs):
    process = subprocess.Popen(
        [sys.executable, "-c", SERVE_WITHOUT_COMPILER, "--port", "0", "-q"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert process.stdout is not None
        line = process.stdout.readline()
        assert "listening on" in line, process.communicate(timeout=10)
        port = int(line.rsplit(":", 1)[1])
        with ember.rpc.connect("127.0.0.1", port) as remote:
            lib = _vecadd(remote, libs)
            x, y = random_inputs(N)
            c = empty((N,), "float32", remote.cpu())
            lib["vecadd"](
                array(x, device=remote.cpu()), array(y, device=remote.cpu()), c
            )
            np.testing.assert_allclose(c.numpy(), x + y, rtol=1e-6)
    finally:
        process.terminate()
        process.wait(10)


def test_python_dash_m_and_console_script_agree():
    for command in (
        [sys.executable, "-m", "ember.rpc.server", "--help"],
        [os.path.join(os.path.dirname(sys.executable), "ember-rpc-server"), "--help"],
    ):
        done = subprocess.run(command, capture_output=True, text=True, timeout=30)
        assert done.returncode == 0 and "--max-frame-bytes" in done.stdout


def test_bad_command_lines_fail_with_one_line(tmp_path):
    busy = subprocess.run(
        [sys.executable, "-m", "ember.rpc.server", "--port", "-5"],
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert busy.returncode != 0 and "Traceback" not in busy.stderr
    small = subprocess.run(
        [sys.executable, "-m", "ember.rpc.server", "--max-frame-bytes", "100"],
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert small.returncode == 2 and "at least 131072" in small.stderr


def test_kernel_of_the_te_api_end_to_end(remote, tmp_path):
    """A freshly built, scheduled 2-d kernel: export, upload, run, compare."""
    m, n = 37, 53
    A = te.placeholder((m, n), name="A")
    B = te.compute((m, n), lambda i, j: A[i, j] * 2.0 + 1.0, name="B")
    s = te.create_schedule(B.op)
    s[B].parallel(B.op.axis[0])
    ember.build(s, [A, B], name="affine").export_library(tmp_path / "affine.so")
    remote.upload(tmp_path / "affine.so")
    f = remote.load_module("affine.so")["affine"]
    x = np.random.default_rng(5).standard_normal((m, n)).astype("float32")
    out = empty((m, n), "float32", remote.cpu())
    f(array(x, device=remote.cpu()), out)
    np.testing.assert_allclose(out.numpy(), x * 2 + 1, rtol=1e-6)
    assert json.loads(json.dumps(remote.info))["machine"] == os.uname().machine
