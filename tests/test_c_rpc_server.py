"""The RPC server in C (runtime/c/rpc_*.c), built by `ember build-runtime`:
`ember.rpc.connect` works against it unchanged. Kernels and a compiled model
upload, load, run and time there to the Python runtime's results (one with
symbolic shapes at each shape it is given); the key is checked by HMAC; bad
frames and bad requests get the Python server's kinds of refusal (an ERROR,
then the connection closed for a frame that cannot be read, the session going
on for a bad message); a library that crashes ends only its session, whose
workspace the listener removes. Built for aarch64 it serves the same under
qemu-user, and so does the riscv64 build."""

import os
import shutil
import signal
import socket
import subprocess
import time
from contextlib import contextmanager
from pathlib import Path

import masked_model
import numpy as np
import pytest
import small_cnn

import ember
from ember import te
from ember.runtime import (
    EmberError,
    FunctionNotFoundError,
    GraphModule,
    array,
    cpu,
    empty,
    load_module,
)
from ember.runtime.rpc import RPCError, connect
from ember.runtime.rpc import protocol as p
from ember.runtime.rpc.protocol import HEADER, MsgType
from ember.tools import build_runtime

KEY = "c-server-test-key-0123456789"
N = 256
LIMITS = ["--max-frame-bytes", str(1 << 18), "--max-memory-bytes", str(1 << 20)]
LIMITS += ["--max-workspace-bytes", str(1 << 20)]

pytestmark = pytest.mark.skipif(shutil.which("cc") is None, reason="needs a C compiler")


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> Path:
    out = tmp_path_factory.mktemp("c_runtime")
    assert build_runtime.main(["-o", str(out), "-q"]) == 0
    return out


@contextmanager
def c_server(binary: Path, workspace: Path, *args: str, prefix=(), key=KEY):
    env = {k: v for k, v in os.environ.items() if k != "EMBER_RPC_KEY"}
    if key is not None:
        env["EMBER_RPC_KEY"] = key
    process = subprocess.Popen(
        [*prefix, str(binary), "--port", "0", "--workspace", str(workspace), *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    try:
        assert process.stdout is not None
        line = process.stdout.readline()
        assert line.startswith("ember-rpc-server: listening on 127.0.0.1:"), line
        yield int(line.rsplit(":", 1)[1])
    finally:
        process.send_signal(signal.SIGTERM)
        _, err = process.communicate(timeout=30)
    assert "ERROR" not in err, err
    assert os.listdir(workspace) == [], "the server left its root behind"


@pytest.fixture(scope="module")
def server(built, tmp_path_factory):
    workspace = tmp_path_factory.mktemp("c_server")
    with c_server(built / "ember-rpc-server", workspace, *LIMITS, "-q") as port:
        yield {"port": port, "workspace": workspace}


@pytest.fixture(scope="module")
def sanitized_server(tmp_path_factory):
    """The server built under AddressSanitizer/UBSan: a report on its stderr,
    from the listener or a session, fails the test (c_server's check)."""
    out = tmp_path_factory.mktemp("c_runtime_asan")
    cc = "cc -fsanitize=address,undefined -fno-sanitize-recover=all -g"
    assert build_runtime.main(["-o", str(out), "--cc", cc, "-q"]) == 0
    workspace = tmp_path_factory.mktemp("c_server_asan")
    with c_server(out / "ember-rpc-server", workspace, *LIMITS, "-q") as port:
        yield {"port": port, "workspace": workspace}


@pytest.fixture(params=["server", "sanitized_server"])
def any_server(request):
    return request.getfixturevalue(request.param)


@pytest.fixture(scope="module")
def libs(tmp_path_factory) -> dict:
    root = tmp_path_factory.mktemp("c_server_libs")
    A = te.placeholder((N,), name="A")
    B = te.placeholder((N,), name="B")
    C = te.compute((N,), lambda i: A[i] + B[i], name="C")
    s = te.create_schedule(C.op)
    s[C].vectorize(s[C].split(C.op.axis[0], factor=8)[1])
    ember.build(s, [A, B, C], name="vecadd").export_library(root / "vecadd.so")
    model = small_cnn.model()
    ember.compile_model(model).export_library(root / "cnn.so")
    separate = ember.compile_model(model, embed_params=False)
    separate.export_library(root / "cnn_separate.so")
    (root / "crash.c").write_text(
        "#include <stdlib.h>\n"
        "__attribute__((constructor)) static void crash(void) { abort(); }\n"
    )
    subprocess.run(
        ["cc", "-shared", "-fPIC", "-o", str(root / "crash.so"), str(root / "crash.c")],
        check=True,
    )
    x = small_cnn.random_input()
    m = GraphModule(load_module(root / "cnn.so")["default"](cpu()))
    m.run(x=x)
    return {
        "root": root,
        "x": x,
        "y": m.get_output(0).numpy(),
        "params": separate.params,
    }


def test_build_runtime_writes_the_library_headers_and_server(built, capsys, tmp_path):
    assert {p.name for p in built.iterdir()} == {
        "libember_runtime.a",
        "include",
        "ember-rpc-server",
    }
    assert {p.name for p in (built / "include").iterdir()} == {
        "ember_runtime.h",
        "ember_crt.h",
    }
    assert build_runtime.main(["-o", str(tmp_path), "-q"]) == 0
    out = capsys.readouterr().out
    print(out)
    code = int(out.split("the RPC server, ")[1].split(" bytes")[0])
    assert code < 50 * 1024  # the budget: runtime + server
    assert build_runtime.main(["-o", str(tmp_path), "--target", "mips-nowhere"]) == 1
    assert "no C compiler for mips-nowhere" in capsys.readouterr().err


def test_kernels_upload_run_and_time_there(server, libs):
    a_np = np.arange(N, dtype="float32")
    with connect("127.0.0.1", server["port"], key=KEY) as remote:
        assert remote.info["machine"] and remote.info["key_required"] is True
        remote.upload(libs["root"] / "vecadd.so")
        assert remote.listdir() == ["vecadd.so"]
        assert remote.download("vecadd.so") == (libs["root"] / "vecadd.so").read_bytes()
        lib = remote.load_module("vecadd.so")
        assert (lib.type_key, lib.entry_name) == ("dso", "vecadd")
        assert lib.function_names() == ["vecadd"]
        dev = remote.cpu(0)
        a, c = array(a_np, device=dev), empty((N,), "float32", device=dev)
        lib["vecadd"](a, a, c)
        np.testing.assert_array_equal(c.numpy(), 2 * a_np)
        result = lib.time_evaluator("vecadd", dev, number=50, repeat=3)(a, a, c)
        assert len(result.results) == 3 and 0 < result.mean < 1e-3
        with pytest.raises(EmberError, match=r"vecadd: argument 1 \(B\): expected"):
            lib["vecadd"](a, empty((N - 1,), "float32", device=dev), c)
        with pytest.raises(FunctionNotFoundError, match="no function 'vecadd_impl'"):
            lib["vecadd_impl"]
        remote.remove("vecadd.so")
        assert remote.listdir() == []
        with pytest.raises(FileNotFoundError, match="no file 'vecadd.so'"):
            remote.load_module("vecadd.so")


def test_a_model_runs_there_through_graph_module(any_server, libs):
    with connect("127.0.0.1", any_server["port"], key=KEY) as remote:
        remote.upload(libs["root"] / "cnn.so")
        remote.upload(libs["root"] / "cnn_separate.so")
        m = GraphModule(remote.load_module("cnn.so")["default"](remote.cpu(0)))
        m.run(x=libs["x"])
        np.testing.assert_array_equal(m.get_output(0).numpy(), libs["y"])
        assert m.get_input_info() == ({"x": (1, 3, 8, 8)}, {"x": "float32"})
        assert m.get_output_info() == ({"y": (1, 10)}, {"y": "float32"})
        assert m.get_num_inputs() == 1 and m.get_input_index("x") == 0
        assert m.benchmark(number=3, repeat=2).mean > 0
        (y,) = m(x=libs["x"])
        np.testing.assert_array_equal(y, libs["y"])
        with pytest.raises(EmberError, match="expected a compact CPU float32"):
            m.set_input("x", libs["x"].astype("float64"))
        with pytest.raises(EmberError, match="no input x2"):
            m.set_input("x2", libs["x"])
        separate = GraphModule(
            remote.load_module("cnn_separate.so")["default"](remote.cpu())
        )
        with pytest.raises(EmberError, match="params not loaded"):
            separate.run(x=libs["x"])
        separate.load_params(libs["params"])  # a param dict document goes over
        separate.run()
        np.testing.assert_array_equal(separate.get_output(0).numpy(), libs["y"])


def test_a_symbolic_model_runs_there_at_each_shape(server, tmp_path):
    """The C runtime's EmberModel behind graph_executor: set_input of a new
    shape, outputs of the derived shapes, the Python runtime's refusal."""
    ember.compile_model(masked_model.model()).export_library(tmp_path / "m.so")
    local = GraphModule(load_module(tmp_path / "m.so")["default"](cpu()))
    with connect("127.0.0.1", server["port"], key=KEY) as remote:
        remote.upload(tmp_path / "m.so")
        m = GraphModule(remote.load_module("m.so")["default"](remote.cpu(0)))
        assert m.get_input_info()[0] == {"x": ("batch", "seq"), "mask": ("seq",)}
        for b, s in [(2, 7), (3, 16), (1, 4)]:
            feeds = masked_model.feeds(b, s)
            m.run(**feeds)
            for i, want in enumerate(local(**feeds)):
                np.testing.assert_array_equal(m.get_output(i).numpy(), want)
        m.set_input("mask", np.ones(8, np.float32))
        with pytest.raises(EmberError, match="input 'mask': dim 0 is 'seq' = 8, bu"):
            m.run()


def test_the_key_is_checked(server):
    with pytest.raises(RPCError, match="client sent a wrong key"):
        connect("127.0.0.1", server["port"], key="not-the-key-at-all-0000")
    with pytest.raises(RPCError, match="requires a key"):
        connect("127.0.0.1", server["port"])


class Raw:
    """A session on a raw socket, for frames no client would send."""

    def __init__(self, port: int):
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=10)
        hello = p.receive(self.sock, 1 << 20)
        digest = p.expected_digest(KEY, bytes.fromhex(hello.header["nonce"]))
        p.send(self.sock, MsgType.AUTH, {"digest": digest})
        assert p.receive(self.sock, 1 << 20).type == MsgType.OK

    def request(self, type_: int, header: dict | None = None, data: bytes = b""):
        p.send(self.sock, type_, header, data)
        return p.receive(self.sock, 1 << 30)

    def error(self, type_: int, header: dict | None = None, data: bytes = b""):
        reply = self.request(type_, header, data)
        assert reply.type == MsgType.ERROR, reply.header
        return reply.header

    def closed(self) -> bool:
        return self.sock.recv(1 << 16) == b""


def test_bad_messages_get_an_error_and_the_session_goes_on(any_server, libs):
    raw = Raw(any_server["port"])
    cases = [
        (MsgType.LOAD_MODULE, {}, b"", "MessageError", "lacks the field 'name'"),
        (MsgType.LOAD_MODULE, {"name": "../etc/passwd"}, b"", "ValueError", "plain"),
        (
            MsgType.UPLOAD,
            {"name": "a.so", "offset": 5, "last": True},
            b"x",
            "MessageError",
            "expected offset 0, got 5",
        ),
        (
            MsgType.UPLOAD,
            {"name": "big", "offset": 0, "last": False},
            b"\0" * 200_000,
            "RPCError",
            None,
        ),
        (
            MsgType.CALL,
            {"module": 999, "name": "f", "args": []},
            b"",
            "MessageError",
            "handle 999 is not",
        ),
        (
            MsgType.ALLOC,
            {"shape": [1 << 20], "dtype": "float32", "device": [1, 0]},
            b"",
            "RPCError",
            "memory limit",
        ),
        (
            MsgType.ALLOC,
            {"shape": [4], "dtype": "float31", "device": [1, 0]},
            b"",
            "MessageError",
            "unknown dtype",
        ),
        (
            MsgType.ALLOC,
            {"shape": [4], "dtype": "float32", "device": [2, 0]},
            b"",
            "RPCError",
            "runs on the cpu",
        ),
        (99, {}, b"", "MessageError", "unknown message type 99"),
    ]
    for type_, header, data, error, message in cases:
        if type_ == MsgType.UPLOAD and header["name"] == "big":
            for i in range(8):  # past the 1 MiB workspace limit
                header = {"name": "big", "offset": 200_000 * i, "last": False}
                reply = raw.request(type_, header, data)
                if reply.type == MsgType.ERROR:
                    break
            got = reply.header
        else:
            got = raw.error(type_, header, data)
        assert got["error"] == error and (message is None or message in got["message"])
    h = raw.request(MsgType.ALLOC, {"shape": [4], "dtype": "float32", "device": [1, 0]})
    got = raw.error(
        MsgType.COPY_IN, {"array": h.header["array"], "offset": 8}, b"x" * 9
    )
    assert "overruns an array of 16 bytes" in got["message"]
    p.send(raw.sock, MsgType.FREE, {"handles": [h.header["array"], "junk"]})
    bad_json = HEADER.pack(b"EMRP", 1, MsgType.LISTDIR, 0, 6) + b"\2\0\0\0{x"
    raw.sock.sendall(bad_json)
    assert p.receive(raw.sock, 1 << 20).header["error"] == "MessageError"
    for name in ("text.so", "lib.tar"):
        (libs["root"] / name).write_bytes(b"not a library\n" * 40)
    (libs["root"] / "lib.tar").write_bytes(b"\0" * 257 + b"ustar" + b"\0" * 250)
    for name, message in (
        ("text.so", "not an ELF file"),
        ("lib.tar", "a .tar library"),
    ):
        raw.request(
            MsgType.UPLOAD,
            {"name": name, "offset": 0, "last": True},
            (libs["root"] / name).read_bytes(),
        )
        got = raw.error(MsgType.LOAD_MODULE, {"name": name})
        assert got["error"] == "LibraryLoadError" and message in got["message"]
    assert "files" in raw.request(MsgType.LISTDIR).header  # still serving


@pytest.mark.parametrize(
    "frame, message",
    [
        (b"XXXX" + bytes(12), "not an ember RPC frame"),
        (HEADER.pack(b"EMRP", 9, MsgType.LISTDIR, 0, 4), "protocol version 9"),
        (HEADER.pack(b"EMRP", 1, MsgType.LISTDIR, 0, 1 << 40), "exceeds the limit"),
    ],
)
def test_an_unreadable_frame_gets_an_error_and_closes(any_server, frame, message):
    raw = Raw(any_server["port"])
    raw.sock.sendall(frame)
    reply = p.receive(raw.sock, 1 << 20)
    assert reply.header["error"] == "FrameError" and message in reply.header["message"]
    assert raw.closed()


def test_a_crashing_library_ends_only_its_session(server, libs):
    with connect("127.0.0.1", server["port"], key=KEY) as remote:
        remote.upload(libs["root"] / "crash.so")
        with pytest.raises(RPCError, match="closed the connection"):
            remote.load_module("crash.so")
    with connect("127.0.0.1", server["port"], key=KEY) as remote:
        assert remote.listdir() == []
    root = server["workspace"]
    (server_root,) = os.listdir(root)
    deadline = 50
    while os.listdir(root / server_root) and deadline:
        deadline -= 1
        time.sleep(0.1)
    assert os.listdir(root / server_root) == []  # every session's files removed


QEMU = {
    "aarch64": ["qemu-aarch64", "-L", "/usr/aarch64-linux-gnu", "-cpu", "cortex-a72"],
    "riscv64": ["qemu-riscv64", "-L", "/usr/riscv64-linux-gnu", "-cpu", "rv64"],
}
CROSS = {
    "aarch64": "llvm -mtriple=aarch64-linux-gnu -mcpu=cortex-a72",
    "riscv64": "llvm -mtriple=riscv64-linux-gnu -mattr=+m,+a,+f,+d,+c",
}


def _cross_tools_or_skip(arch: str) -> None:
    tools = (f"{arch}-linux-gnu-gcc", f"qemu-{arch}")
    missing = [t for t in tools if shutil.which(t) is None]
    if missing or not os.path.exists(f"/usr/{arch}-linux-gnu/lib/crti.o"):
        pytest.skip(
            f"needs {', '.join(missing) or f'/usr/{arch}-linux-gnu/lib/crti.o'}:"
            " gcc-ARCH-linux-gnu, libc6-dev-ARCH-cross and qemu-user"
            " (make system-deps)".replace("ARCH", arch)
        )


@pytest.mark.parametrize("arch", ["aarch64", "riscv64"])
def test_the_server_built_for_another_machine_serves_under_qemu(libs, tmp_path, arch):
    _cross_tools_or_skip(arch)
    out = tmp_path / arch
    triple = f"{arch}-linux-gnu"
    assert build_runtime.main(["-o", str(out), "--target", triple, "-q"]) == 0
    target, cc = CROSS[arch], f"{triple}-gcc"
    A = te.placeholder((N,), name="A")
    C = te.compute((N,), lambda i: A[i] * 2.0, name="C")
    kernel = ember.build(te.create_schedule(C.op), [A, C], target=target, name="double")
    kernel.export_library(tmp_path / "double.so", cc=cc)
    ember.compile_model(small_cnn.model(), target=target).export_library(
        tmp_path / "cnn.so", cc=cc
    )
    workspace = tmp_path / "ws"
    workspace.mkdir()
    with c_server(out / "ember-rpc-server", workspace, "-q", prefix=QEMU[arch]) as port:
        with connect("127.0.0.1", port, key=KEY) as remote:
            assert remote.info["machine"] == arch
            remote.upload(tmp_path / "double.so")
            lib = remote.load_module("double.so")
            a = array(np.arange(N, dtype="float32"), device=remote.cpu())
            c = empty((N,), "float32", device=remote.cpu())
            lib["double"](a, c)
            np.testing.assert_array_equal(c.numpy(), 2 * np.arange(N, dtype="float32"))
            assert lib.time_evaluator("double", remote.cpu(), number=20)(a, c).mean > 0
            remote.upload(tmp_path / "cnn.so")
            m = GraphModule(remote.load_module("cnn.so")["default"](remote.cpu()))
            m.run(x=libs["x"])
            np.testing.assert_allclose(
                m.get_output(0).numpy(), libs["y"], rtol=1e-5, atol=1e-5
            )
            assert m.benchmark(number=2, repeat=2).mean > 0


def test_the_tuner_measures_through_it(server, tmp_path):
    """ember.tune's RPC runner (what `ember-tune --rpc` uses) against the C
    server: candidates timed there, checked here, records written."""
    from test_tune_measure import _kernel

    from ember.tune.measure import LocalBuilder
    from ember.tune.records import load_records
    from ember.tune.rpc_runner import RPCRunner
    from ember.tune.search import tune
    from ember.tune.task import Task

    builder = LocalBuilder(workers=1)
    runner = RPCRunner("127.0.0.1", server["port"], key=KEY, timeout_s=20)
    log = tmp_path / "log.jsonl"
    try:
        result = tune(
            Task.from_tensors(_kernel(lambda A, B, i: A[i] * 2.0 + B[i])),
            trials=3,
            batch=3,
            strategy="random",
            builder=builder,
            runner=runner,
            records=log,
        )
    finally:
        runner.close()
        builder.close()
    assert result.best_cost < float("inf")
    records = load_records(log)
    assert sum(r.error_kind is None for r in records) >= 2, records


@pytest.mark.slow  # 9 s: a tuning run under qemu
def test_ember_tune_tunes_through_the_c_server_under_qemu(tmp_path, monkeypatch):
    """`ember-tune --rpc` against the C server built for aarch64 and run
    under qemu-aarch64: candidates compiled for aarch64 are linked by the
    cross compiler (`--cc`), uploaded, timed there and logged."""
    from ember.tools import ember_tune
    from ember.tune.records import load_records

    _cross_tools_or_skip("aarch64")
    out = tmp_path / "rt"
    assert (
        build_runtime.main(["-o", str(out), "--target", "aarch64-linux-gnu", "-q"]) == 0
    )
    model = tmp_path / "cnn.onnx"
    model.write_bytes(small_cnn.model().SerializeToString())
    log = tmp_path / "log.jsonl"
    workspace = tmp_path / "ws"
    workspace.mkdir()
    monkeypatch.setenv("EMBER_RPC_KEY", KEY)
    with c_server(
        out / "ember-rpc-server", workspace, "-q", prefix=QEMU["aarch64"]
    ) as port:
        code = ember_tune.main(
            [
                str(model),
                "-o",
                str(log),
                "--trials",
                "2",
                "--rpc",
                f"127.0.0.1:{port}",
                "--cc",
                "aarch64-linux-gnu-gcc",
                "--target",
                CROSS["aarch64"],
                "--no-cache-records",
                "-q",
            ]
        )
    assert code == 0
    records = load_records(log)
    assert any(r.error_kind is None for r in records), records


def test_a_library_replaced_under_its_name_loads_anew(server, tmp_path):
    """dlopen hands back a library already loaded under the same name, even
    when the file was replaced since: a tuner uploads candidate after
    candidate as one name, so each load goes through a name of its own."""
    N2 = 8
    A = te.placeholder((N2,), name="A")
    first = te.compute((N2,), lambda i: A[i] + 1.0, name="B")
    second = te.compute((N2,), lambda i: A[i] * 3.0, name="B")
    for tag, out in (("one", first), ("two", second)):
        ember.build(te.create_schedule(out.op), [A, out], name=tag).export_library(
            tmp_path / f"{tag}.so"
        )
    with connect("127.0.0.1", server["port"], key=KEY) as remote:
        dev = remote.cpu()
        a = array(np.arange(N2, dtype="float32"), device=dev)
        for tag, expected in (
            ("one", np.arange(N2) + 1.0),
            ("two", np.arange(N2) * 3.0),
        ):
            remote.upload(tmp_path / f"{tag}.so", "kernel.so")
            lib = remote.load_module("kernel.so")
            remote.remove("kernel.so")
            b = empty((N2,), "float32", device=dev)
            lib[tag](a, b)
            np.testing.assert_array_equal(b.numpy(), expected.astype("float32"))
