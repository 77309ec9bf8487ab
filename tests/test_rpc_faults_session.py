"""The RPC server under faults of a session (issue 7, "Bad input and faults").

Files that are not libraries, clients that vanish in the middle of an upload or
a call, remote functions that raise, the server's limits, and a library that
kills its session's process. Each gets an ERROR reply or a closed connection; a
healthy session opened before the faults is checked against numpy after each
one; and at the end a fresh session does a whole normal run. The shared tools
are in rpc_faults.py.
"""

import os
import re
import socket
import time

import numpy as np
import pytest
from rpc_faults import (
    KEY,
    MAX_MEMORY,
    MAX_WORKSPACE,
    REPLY_LIMIT,
    N,
    Raw,
    build_libs,
    check_a_normal_session,
    fault_server,
    healthy_session,
    outside_sessions,
    wait_for,
)
from rpc_util import rpc_server

import ember
from ember import runtime as rt
from ember import te
from ember.runtime import rpc
from ember.runtime.errors import (
    EmberError,
    FunctionNotFoundError,
    IncompatibleLibraryError,
    InvalidLibraryError,
)
from ember.runtime.rpc import protocol as p
from ember.runtime.rpc.protocol import MsgType, RPCError


@pytest.fixture(scope="module")
def libs(tmp_path_factory) -> dict[str, str]:
    return build_libs(tmp_path_factory.mktemp("libs"))


@pytest.fixture(scope="module")
def cwd(tmp_path_factory) -> str:
    return str(tmp_path_factory.mktemp("server-cwd"))


@pytest.fixture(scope="module")
def server(cwd):
    with fault_server(cwd) as s:
        yield s


@pytest.fixture(scope="module")
def healthy(server, libs):
    with healthy_session(server, libs) as h:
        yield h


# Files that are not libraries.


NOT_LIBRARIES = {
    "text.so": (InvalidLibraryError, "text.so is"),
    "empty.so": (InvalidLibraryError, "empty.so is"),
    "text.o": (InvalidLibraryError, "text.o is not an ELF object file"),
    "crash.lib": (EmberError, "expected a shared library (.so), a library archive"),
    "object.so": (InvalidLibraryError, "a relocatable object file, not a shared"),
    "notatar.tar": (InvalidLibraryError, "notatar.tar"),
    "notalib.tar": (EmberError, "notalib.tar"),
    "missing.so": (FileNotFoundError, "no file 'missing.so' in the session workspace"),
}


@pytest.mark.parametrize("name", NOT_LIBRARIES)
def test_loading_what_is_not_a_library(server, healthy, libs, name):
    error, message = NOT_LIBRARIES[name]
    source = {
        "object.so": libs["crash.o"],
        "text.o": libs["text.so"],
        "crash.lib": libs["crash.o"],
    }.get(name, libs.get(name))
    with rpc.connect("127.0.0.1", server.port, key=KEY) as remote:
        if source is not None:
            remote.upload(source, name)
        with pytest.raises(error, match=re.escape(message)) as info:
            remote.load_module(name)
        assert server.workspace not in str(info.value), "a server path in a reply"
        assert remote.listdir() == ([name] if source else [])
    healthy.check()


def test_library_for_another_machine(server, healthy, tmp_path):
    A = te.placeholder((4,), name="A")
    B = te.compute((4,), lambda i: A[i] * 2.0, name="B")
    mod = ember.build(
        te.create_schedule(B.op),
        [A, B],
        target="llvm -mtriple=aarch64-linux-gnu",
        name="arm",
    )
    mod.export_library(str(tmp_path / "arm.tar"))
    with rpc.connect("127.0.0.1", server.port, key=KEY) as remote:
        remote.upload(tmp_path / "arm.tar")
        with pytest.raises(IncompatibleLibraryError, match="built for aarch64"):
            remote.load_module("arm.tar")
    healthy.check()


# Clients that leave in the middle.


def test_disconnect_in_the_middle_of_a_multi_chunk_upload(server, healthy):
    raw = Raw(server)
    for i in range(3):
        raw.ok(
            MsgType.UPLOAD,
            {"name": "big.so", "offset": i * 1000, "last": False},
            bytes(1000),
        )
    raw.send_raw(
        p.frame_head(
            MsgType.UPLOAD, {"name": "big.so", "offset": 3000, "last": True}, 1000
        )
        + bytes(300)
    )
    raw.close()
    raw.gone()
    healthy.check()


def alloc(raw: Raw, shape=(N,)) -> int:
    header = {"shape": list(shape), "dtype": "float32", "device": [1, 0]}
    return raw.ok(MsgType.ALLOC, header)["array"]


def load_vecadd(raw: Raw, libs) -> int:
    with open(libs["vecadd"], "rb") as f:
        raw.ok(MsgType.UPLOAD, {"name": "v.so", "offset": 0, "last": True}, f.read())
    return raw.ok(MsgType.LOAD_MODULE, {"name": "v.so"})["module"]


@pytest.mark.parametrize("request_type", ["CALL cut short", "TIME_EVALUATOR running"])
def test_disconnect_in_the_middle_of_a_call(server, healthy, libs, request_type):
    """The session's process notices its client has gone while a call runs,
    and ends at once rather than when the call returns (here: 30 s)."""
    raw = Raw(server)
    module = load_vecadd(raw, libs)
    arrays = [{"array": alloc(raw)} for _ in range(3)]
    timing = {
        "module": module,
        "name": "vecadd",
        "device_id": 0,
        "number": 1,
        "repeat": 1,
        "cooldown_interval_ms": 0,
        "repeats_to_cooldown": 1,
        "args": arrays,
    }
    if request_type == "CALL cut short":
        # A call cut off in the middle of its frame ...
        raw.send_raw(
            p.frame_head(
                MsgType.CALL, {"module": module, "name": "vecadd", "args": arrays}, 64
            )[:-5]
        )
    else:
        # ... and one that would run for 30 s on the server.
        raw.send(MsgType.TIME_EVALUATOR, {**timing, "min_repeat_ms": 30_000})
        time.sleep(0.2)
    started = time.monotonic()
    raw.close()
    raw.gone()
    assert time.monotonic() - started < 5
    if request_type == "TIME_EVALUATOR running":
        assert any(
            "the client left during TIME_EVALUATOR" in x for x in raw.log_lines()
        )
    healthy.check()


# Remote functions that raise.


def local_and_remote_errors(f_local, f_remote, local_args, remote_args):
    with pytest.raises(Exception) as local:
        f_local(*local_args)
    with pytest.raises(Exception) as remote:
        f_remote(*remote_args)
    return local.value, remote.value


BAD_CALLS = {
    "too few arguments": lambda arr: (arr((N,)), arr((N,))),
    "too many arguments": lambda arr: (arr((N,)),) * 4,
    "wrong shape": lambda arr: (arr((N,)), arr((N + 1,)), arr((N,))),
    "wrong ndim": lambda arr: (arr((N,)), arr((N, 1)), arr((N,))),
    "wrong dtype": lambda arr: (arr((N,)), arr((N,), "float64"), arr((N,))),
    "int dtype": lambda arr: (arr((N,), "int32"), arr((N,)), arr((N,))),
    "a scalar for an array": lambda arr: (arr((N,)), 1.5, arr((N,))),
    "a string for an array": lambda arr: (arr((N,)), "A", arr((N,))),
    "None for an array": lambda arr: (None, arr((N,)), arr((N,))),
}


@pytest.mark.parametrize("case", BAD_CALLS)
def test_remote_error_is_the_local_error(healthy, libs, case):
    local_f = rt.load_module(libs["vecadd"])["vecadd"]
    dev = healthy.remote.cpu(0)

    def local(shape, dtype="float32"):
        return rt.array(np.zeros(shape, dtype))

    def remote(shape, dtype="float32"):
        return rt.array(np.zeros(shape, dtype), device=dev)

    want, got = local_and_remote_errors(
        local_f, healthy.f, BAD_CALLS[case](local), BAD_CALLS[case](remote)
    )
    assert type(got) is type(want)
    assert str(got) == str(want)
    healthy.check()


def test_bogus_and_foreign_handles(server, healthy, libs):
    other = Raw(server)
    foreign = [alloc(other, (4,)) for _ in range(40)][-1]
    raw = Raw(server)
    module = load_vecadd(raw, libs)
    a = alloc(raw)
    assert foreign > a
    requests = [
        (MsgType.COPY_OUT, {"array": foreign, "offset": 0, "size": 4}),
        (MsgType.COPY_IN, {"array": 10**30, "offset": 0}),
        (MsgType.COPY_OUT, {"array": -1, "offset": 0, "size": 4}),
        (MsgType.COPY_OUT, {"array": module, "offset": 0, "size": 4}),
        (MsgType.CALL, {"module": a, "name": "vecadd", "args": []}),
        (MsgType.CALL, {"module": foreign, "name": "vecadd", "args": []}),
        (MsgType.GET_FUNCTION, {"module": 0, "name": "vecadd"}),
        (MsgType.TIME_EVALUATOR, {"module": 77, "name": "vecadd"}),
    ]
    bad_args = [
        {"array": foreign},
        {"array": module},
        {"array": True},
        {"tensor": a},
        {"bytes": [0, 10]},
        {"array": a, "extra": 1},
        [a],
    ]
    requests += [
        (MsgType.CALL, {"module": module, "name": "vecadd", "args": [x, a, a]})
        for x in bad_args
    ]
    for type_, header in requests:
        error = raw.request(type_, header).header
        assert error["error"] == "MessageError"
        assert re.fullmatch(
            r"handle -?\d+ is not (an array|a module) of this session"
            r"|argument 0: cannot decode .*",
            error["message"],
        ), error["message"]
    args = [{"array": a}, {"array": a}, {"array": alloc(raw)}]
    raw.ok(MsgType.CALL, {"module": module, "name": "vecadd", "args": args})
    other.alive()
    other.close()
    raw.close()
    # The client refuses another session's array before sending anything.
    with rpc.connect("127.0.0.1", server.port, key=KEY) as remote:
        b = rt.empty((N,), "float32", device=remote.cpu(0))
        A, B, C = healthy.arrays
        with pytest.raises(EmberError, match="belongs to another RPC session"):
            healthy.f(A, b, C)
    healthy.check()


def test_unregistered_call_packed_on_the_server(server, healthy, libs):
    with rpc.connect("127.0.0.1", server.port, key=KEY) as remote:
        remote.upload(libs["extern"])
        mod = remote.load_module("extern.so")
        dev = remote.cpu(0)
        a = rt.array(np.ones(N, "float32"), device=dev)
        b = rt.empty((N,), "float32", device=dev)
        with pytest.raises(
            FunctionNotFoundError, match="'name_not_registered_on_the_server'"
        ):
            mod["needs_callback"](a, b)
        with pytest.raises(FunctionNotFoundError, match="no_such_function"):
            mod["no_such_function"]
        np.testing.assert_array_equal(a.numpy(), np.ones(N, "float32"))
    healthy.check()


# Limits.


def test_workspace_limit(server, healthy, tmp_path):
    big = tmp_path / "big.bin"
    big.write_bytes(os.urandom(MAX_WORKSPACE * 6 // 10))
    with rpc.connect("127.0.0.1", server.port, key=KEY) as remote:
        remote.upload(big, "one.bin")
        with pytest.raises(RPCError, match="would exceed its limit of 1048576 bytes"):
            remote.upload(big, "two.bin")  # refused at its third chunk
        assert remote.listdir() == ["one.bin"]
        raw_files = remote.download("one.bin")
        assert raw_files == big.read_bytes()
        remote.remove("one.bin")
        remote.upload(big, "two.bin")
        assert remote.listdir() == ["two.bin"]
    healthy.check()


def test_memory_limit(server, healthy):
    with rpc.connect("127.0.0.1", server.port, key=KEY) as remote:
        dev = remote.cpu(0)
        first = rt.empty((MAX_MEMORY * 6 // 10,), "uint8", device=dev)
        with pytest.raises(RPCError, match="exceed the session's memory limit"):
            rt.empty((MAX_MEMORY * 6 // 10,), "uint8", device=dev)
        with pytest.raises(RPCError, match="memory limit"):
            rt.empty((1 << 40, 1 << 40), "float64", device=dev)
        del first  # freed on the server with the next request
        second = rt.empty((MAX_MEMORY * 6 // 10,), "uint8", device=dev)
        second.copyfrom(np.full(second.shape, 7, "uint8"))
        assert (second.numpy() == 7).all()
    healthy.check()


def test_idle_timeout_closes_silent_connections():
    with rpc_server("--idle-timeout", "0.5") as small:
        silent = Raw(small)
        before_auth = Raw(small, auth=False)
        busy = rpc.connect("127.0.0.1", small.port)
        for _ in range(10):  # a client that keeps talking stays
            assert busy.listdir() == []
            time.sleep(0.1)
        header = before_auth.error()
        assert header["message"] == "expected an AUTH frame: timed out"
        before_auth.closed()
        silent.closed()
        for raw in (silent, before_auth):
            raw.gone()
        assert busy.listdir() == []
        busy.close()
        wait_for(lambda: "idle for 0.5 s; closing" in small.log(), "the log")


def test_a_frame_sent_a_byte_at_a_time_is_cut_off():
    """Each byte resets no clock: a frame must be whole within --idle-timeout
    of its first byte, so a slow drip cannot hold a session forever."""
    with rpc_server("--idle-timeout", "1") as small:
        drip = Raw(small)
        frame = p.frame_head(MsgType.LISTDIR, {}, 0)
        started = time.monotonic()
        for byte in frame[:3]:  # each byte well inside the idle timeout
            drip.send_raw(bytes([byte]))
            time.sleep(0.45)
        header = drip.error()
        assert "frame header was still incomplete at its deadline" in header["message"]
        assert time.monotonic() - started < 4
        drip.closed()
        drip.gone()


def test_max_sessions_replies_server_busy():
    with rpc_server("--max-sessions", "2") as small:
        first = rpc.connect("127.0.0.1", small.port)
        second = rpc.connect("127.0.0.1", small.port)
        with pytest.raises(RPCError, match="server busy: 2 sessions running"):
            rpc.connect("127.0.0.1", small.port)
        sock = socket.create_connection(("127.0.0.1", small.port), timeout=5)
        refusal = p.receive(sock, REPLY_LIMIT)
        assert refusal.type == MsgType.ERROR
        assert sock.recv(1) == b""
        sock.close()
        assert second.listdir() == []
        first.close()
        third = wait_for(lambda: _try_connect(small.port), "a free session slot")
        assert third.listdir() == [] and second.listdir() == []
        third.close()
        second.close()
        assert "refused: 2 sessions already running" in small.log()


def _try_connect(port: int):
    try:
        return rpc.connect("127.0.0.1", port)
    except RPCError:
        return None


# A library that kills its session's process.


def test_library_that_aborts_kills_only_its_session(server, healthy, libs, cwd):
    before = outside_sessions(server, cwd)
    sessions = set(server.sessions())
    remote = rpc.connect("127.0.0.1", server.port, key=KEY)
    (session,) = set(server.sessions()) - sessions
    remote.upload(libs["crash.so"])
    with pytest.raises(RPCError, match="closed the connection during LOAD_MODULE"):
        remote.load_module("crash.so")
    remote.close()
    wait_for(lambda: session not in server.sessions(), "the workspace removed")
    wait_for(lambda: "its process died of SIGABRT" in server.log(), "the log")
    assert outside_sessions(server, cwd) == before
    healthy.check()


def test_after_the_faults_a_normal_session_works(server, healthy, libs, cwd):
    check_a_normal_session(server, healthy, libs, cwd)
