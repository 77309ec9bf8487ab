"""The RPC server under bad input on the wire (issue 7, "Bad input and faults").

Frames are crafted on raw sockets: malformed, truncated and oversized frames,
unknown message types and bad fields, bad handshakes, upload names with paths
in them, and fuzzed streams. Each gets an ERROR reply or a closed connection
(asserted, with the message); a healthy session opened before the faults is
checked against numpy after each one; nothing is written outside the session
workspaces; and at the end a fresh session does a whole normal run. Faults of
sessions (libraries, clients leaving, remote errors, limits) are in
test_rpc_faults_session.py, the shared tools in rpc_faults.py.

Every test here runs against both servers: the Python one and the C one
(runtime/c/rpc_*.c, built by `ember build-runtime`), which must give the same
refusals. What differs by design is left to the Python server: its log lines,
and its handshake running in the listener (the C server forks on accept).
"""

import contextlib
import os
import resource
import shutil
import socket

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from rpc_faults import (
    KEY,
    MAX_FRAME,
    MAX_MEMORY,
    MAX_WORKSPACE,
    Raw,
    build_libs,
    check_a_normal_session,
    fault_server,
    frame,
    healthy_session,
    outside_sessions,
    payload,
    tree,
    wait_for,
)
from rpc_util import rpc_server

from ember.runtime import rpc
from ember.runtime.rpc import protocol as p
from ember.runtime.rpc.protocol import HEADER, MAGIC, VERSION, MsgType, RPCError
from ember.tools import build_runtime


@pytest.fixture(scope="module")
def libs(tmp_path_factory) -> dict[str, str]:
    return build_libs(tmp_path_factory.mktemp("libs"))


@pytest.fixture(scope="module")
def cwd(tmp_path_factory) -> str:
    return str(tmp_path_factory.mktemp("server-cwd"))


@contextlib.contextmanager
def c_fault_server(binary: str, cwd: str):
    """The C server, keyed and with fault_server's limits, as a RunningServer."""
    limits = ("--max-frame-bytes", MAX_FRAME, "--max-workspace-bytes", MAX_WORKSPACE)
    limits += ("--max-memory-bytes", MAX_MEMORY)
    core = resource.getrlimit(resource.RLIMIT_CORE)
    resource.setrlimit(resource.RLIMIT_CORE, (0, core[1]))
    try:
        with rpc_server(*map(str, limits), key=KEY, cwd=cwd, command=[binary]) as s:
            try:
                yield s
            finally:
                assert "ERROR" not in s.log()
    finally:
        resource.setrlimit(resource.RLIMIT_CORE, core)


@pytest.fixture(scope="module", params=["python", "c"])
def server(request, cwd, tmp_path_factory):
    if request.param == "python":
        with fault_server(cwd) as s:
            s.kind = "python"
            yield s
        return
    if shutil.which("cc") is None:
        pytest.skip("the C server needs a C compiler")
    out = tmp_path_factory.mktemp("c_runtime")
    assert build_runtime.main(["-o", str(out), "-q"]) == 0
    with c_fault_server(str(out / "ember-rpc-server"), cwd) as s:
        s.kind = "c"
        yield s


@pytest.fixture(scope="module")
def healthy(server, libs):
    with healthy_session(server, libs) as h:
        yield h


# Malformed frames.


CLOSING_FRAMES = {
    "bad magic": (
        frame(MsgType.LISTDIR, payload(b"{}"), magic=b"HTTP"),
        "not an ember RPC frame (magic b'HTTP')",
    ),
    "http request": (
        b"GET / HTTP/1.1\r\nHost: x\r\n\r\n",
        "not an ember RPC frame (magic b'GET ')",
    ),
    "version 2": (
        frame(MsgType.LISTDIR, payload(b"{}"), version=2),
        "protocol version 2 is not supported; this side speaks 1",
    ),
    "version 0": (
        frame(MsgType.LISTDIR, payload(b"{}"), version=0),
        "protocol version 0 is not supported",
    ),
    "oversized by one": (
        HEADER.pack(MAGIC, VERSION, MsgType.UPLOAD, 0, MAX_FRAME + 1),
        f"a frame of {MAX_FRAME + 1} bytes exceeds the limit of {MAX_FRAME} bytes",
    ),
    "oversized 2**63": (
        HEADER.pack(MAGIC, VERSION, MsgType.UPLOAD, 0, 1 << 63),
        f"a frame of {1 << 63} bytes exceeds the limit",
    ),
}


@pytest.mark.parametrize("case", CLOSING_FRAMES)
def test_unreadable_frame_gets_an_error_and_a_closed_connection(server, healthy, case):
    data, message = CLOSING_FRAMES[case]
    raw = Raw(server)
    raw.send_raw(data)  # an oversized frame's payload is never sent: no reading it
    header = raw.error()
    assert header["error"] == "FrameError"
    assert message in header["message"]
    raw.closed()
    raw.gone()
    if server.kind == "python":
        assert message in server.log()
    healthy.check()


TRUNCATED = {
    "half a frame header": (
        frame(MsgType.LISTDIR, payload(b"{}"))[:7],
        "connection closed after 7 of 16 bytes of a frame header",
    ),
    "frame header only": (
        HEADER.pack(MAGIC, VERSION, MsgType.UPLOAD, 0, 100),
        "connection closed after 0 of 100 bytes of a frame",
    ),
    "half a payload": (
        HEADER.pack(MAGIC, VERSION, MsgType.UPLOAD, 0, 100) + bytes(50),
        "connection closed after 50 of 100 bytes of a frame",
    ),
}


@pytest.mark.parametrize("case", TRUNCATED)
def test_truncated_frame_then_end_of_stream(server, healthy, case):
    data, message = TRUNCATED[case]
    raw = Raw(server)
    raw.send_raw(data)
    raw.sock.shutdown(socket.SHUT_WR)  # the client stops sending, still reads
    header = raw.error()
    assert (header["error"], header["message"]) == ("FrameError", message)
    raw.closed()
    raw.gone()
    healthy.check()


def test_truncated_frame_then_close(server, healthy):
    raw = Raw(server)
    raw.send_raw(HEADER.pack(MAGIC, VERSION, MsgType.CALL, 0, 4096) + bytes(1000))
    raw.close()
    raw.gone()
    healthy.check()


SURVIVABLE = {
    "header length beyond the payload": (
        frame(MsgType.LISTDIR, payload(b"{}", claim=1000)),
        "MessageError",
        "the JSON header claims 1000 bytes, the payload has 2",
    ),
    "header length 2**32-1": (
        frame(MsgType.LISTDIR, payload(b"{}", claim=(1 << 32) - 1)),
        "MessageError",
        "the JSON header claims 4294967295 bytes",
    ),
    "invalid JSON": (
        frame(MsgType.LISTDIR, payload(b"{'name': 1}")),
        "MessageError",
        "the message header is not valid JSON",
    ),
    "invalid UTF-8": (
        frame(MsgType.LISTDIR, payload(b'{"name": "\xff\xfe"}')),
        "MessageError",
        "the message header is not valid JSON",
    ),
    "deeply nested JSON": (
        frame(MsgType.LISTDIR, payload(b"[" * 100_000)),
        "MessageError",
        "the message header is not valid JSON",
    ),
    "JSON array": (
        frame(MsgType.LISTDIR, payload(b"[1, 2]")),
        "MessageError",
        "the message header must be a JSON object, got list",
    ),
    "JSON string": (
        frame(MsgType.LISTDIR, payload(b'"x"')),
        "MessageError",
        "the message header must be a JSON object, got str",
    ),
    "empty payload": (
        frame(MsgType.LISTDIR, b""),
        "MessageError",
        "a payload of 0 bytes has no header length",
    ),
    "3-byte payload": (
        frame(MsgType.LISTDIR, b"\x02\x00\x00"),
        "MessageError",
        "a payload of 3 bytes has no header length",
    ),
    "unknown type 99": (
        frame(99, payload(b"{}")),
        "MessageError",
        "unknown message type 99",
    ),
    "unknown type 0": (
        frame(0, payload(b"{}")),
        "MessageError",
        "unknown message type 0",
    ),
    "HELLO from a client": (
        frame(MsgType.HELLO, payload(b"{}")),
        "MessageError",
        "unknown message type 1",
    ),
    "AUTH twice": (
        frame(MsgType.AUTH, payload(b'{"digest": null}')),
        "MessageError",
        "unknown message type 2",
    ),
    "an OK reply from a client": (
        frame(MsgType.OK, payload(b"{}")),
        "MessageError",
        "unknown message type 3",
    ),
    "field missing": (
        frame(MsgType.UPLOAD, payload(b'{"offset": 0, "last": true}')),
        "MessageError",
        "the message lacks the field 'name'",
    ),
    "field mistyped": (
        frame(MsgType.UPLOAD, payload(b'{"name": "x.so", "offset": 0, "last": 1}')),
        "MessageError",
        "field 'last': expected bool, got int",
    ),
    "download of a missing file": (
        frame(MsgType.DOWNLOAD, payload(b'{"name": "x.so", "offset": 0}')),
        "FileNotFoundError",
        "no file 'x.so' in the session workspace",
    ),
    "huge integer": (
        frame(MsgType.ALLOC, payload(b'{"shape": [' + b"9" * 5000 + b"]}")),
        "MessageError",
        "the message header is not valid JSON",
    ),
    "bad dtype": (
        frame(
            MsgType.ALLOC,
            payload(b'{"shape": [4], "dtype": "object", "device": [1, 0]}'),
        ),
        "MessageError",
        "unknown dtype 'object'",
    ),
    "negative extent": (
        frame(
            MsgType.ALLOC,
            payload(b'{"shape": [4, -1], "dtype": "float32", "device": [1, 0]}'),
        ),
        "MessageError",
        "field 'shape': expected a list of extents, got [4, -1]",
    ),
    "a GPU device": (
        frame(
            MsgType.ALLOC,
            payload(b'{"shape": [4], "dtype": "float32", "device": [2, 0]}'),
        ),
        "RPCError",
        "this server runs on the cpu; got device type 2",
    ),
    "copy into no array": (
        frame(MsgType.COPY_IN, payload(b'{"array": 999, "offset": 0}', b"xx")),
        "MessageError",
        "handle 999 is not an array of this session",
    ),
}


@pytest.mark.parametrize("case", SURVIVABLE)
def test_bad_message_gets_an_error_and_the_session_goes_on(server, healthy, case):
    data, error, message = SURVIVABLE[case]
    raw = Raw(server)
    raw.send_raw(data)
    header = raw.error()
    assert header["error"] == error
    assert message in header["message"]
    raw.alive()
    raw.close()
    healthy.check()


def test_free_of_garbage_has_no_reply(server, healthy):
    raw = Raw(server)
    for header in ({}, {"handles": "all"}, {"handles": [1.5, None, -3, 10**30, "x"]}):
        raw.send(MsgType.FREE, header)
    raw.alive()  # the next reply is LISTDIR's: FREE answered nothing
    raw.close()
    healthy.check()


def test_offsets_out_of_range(server, healthy):
    raw = Raw(server)
    raw.ok(MsgType.UPLOAD, {"name": "f.bin", "offset": 0, "last": False}, bytes(10))
    raw.send(MsgType.UPLOAD, {"name": "f.bin", "offset": 20, "last": True}, b"x")
    assert raw.error()["message"] == "upload of 'f.bin': expected offset 10, got 20"
    raw.ok(MsgType.UPLOAD, {"name": "f.bin", "offset": 10, "last": True}, b"x")
    raw.send(MsgType.DOWNLOAD, {"name": "f.bin", "offset": -1, "size": 4})
    assert raw.error()["message"] == (
        "field 'offset': expected a non-negative integer, got -1"
    )
    out = raw.request(MsgType.DOWNLOAD, {"name": "f.bin", "offset": 10**6, "size": 4})
    assert (out.type, out.header, bytes(out.data)) == (MsgType.OK, {"total": 11}, b"")
    array = raw.ok(MsgType.ALLOC, {"shape": [4], "dtype": "float32", "device": [1, 0]})[
        "array"
    ]
    raw.send(MsgType.COPY_IN, {"array": array, "offset": 12}, bytes(8))
    assert raw.error()["message"] == (
        "copy of 8 bytes at offset 12 overruns an array of 16 bytes"
    )
    out = raw.request(MsgType.COPY_OUT, {"array": array, "offset": 10**6, "size": 8})
    assert (out.type, bytes(out.data)) == (MsgType.OK, b"")
    raw.close()
    healthy.check()


# The handshake.


def auth_frame(digest) -> bytes:
    return p.frame_head(MsgType.AUTH, {"digest": digest}, 0)


HANDSHAKES = {
    "wrong key": (
        lambda raw: auth_frame(raw.digest("not-the-key")),
        "refused: the server requires a key and the client sent a wrong key",
        "refused: the client sent a wrong key",
    ),
    "no key": (
        lambda raw: auth_frame(None),
        "refused: the server requires a key and the client sent no key",
        "refused: the client sent no key",
    ),
    "a digest of another nonce": (
        lambda raw: auth_frame(p.expected_digest(KEY, bytes(32))),
        "the client sent a wrong key",
        "refused: the client sent a wrong key",
    ),
    "a non-ASCII digest": (
        lambda raw: auth_frame("\u00e9" * 64),
        "the client sent a wrong key",
        "refused: the client sent a wrong key",
    ),
    "a lone surrogate digest": (
        lambda raw: auth_frame("\ud800" * 64),
        "the client sent a wrong key",
        "refused: the client sent a wrong key",
    ),
    "the key itself": (
        lambda raw: auth_frame(KEY),
        "the client sent a wrong key",
        "refused: the client sent a wrong key",
    ),
    "digest not a string": (
        lambda raw: auth_frame(12345),
        "the client sent a wrong key",
        "refused: the client sent a wrong key",
    ),
    "no digest field": (
        lambda raw: p.frame_head(MsgType.AUTH, {}, 0),
        "the client sent no key",
        "refused: the client sent no key",
    ),
    "a request before AUTH": (
        lambda raw: p.frame_head(MsgType.LISTDIR, {}, 0),
        "expected an AUTH frame, got message type 12",
        "refused: message type 12 before AUTH",
    ),
    "an upload before AUTH": (
        lambda raw: p.frame_head(MsgType.UPLOAD, {"name": "x.so"}, 4) + b"\x7fELF",
        "expected an AUTH frame, got message type 10",
        "refused: message type 10 before AUTH",
    ),
    "garbage instead of AUTH": (
        lambda raw: b"\x00garbage\xff" * 8,
        "expected an AUTH frame: not an ember RPC frame",
        "refused: no valid AUTH frame (not an ember RPC frame",
    ),
    "an oversized AUTH": (
        lambda raw: p.frame_head(MsgType.AUTH, {"digest": "0" * 5000}, 0),
        "expected an AUTH frame: a frame of 5017 bytes exceeds the limit of 4096 bytes",
        "refused: no valid AUTH frame (a frame of 5017 bytes",
    ),
    "AUTH with invalid JSON": (
        lambda raw: frame(MsgType.AUTH, payload(b"{digest}")),
        "expected an AUTH frame: the message header is not valid JSON",
        "refused: no valid AUTH frame (the message header is not valid JSON",
    ),
}


@pytest.mark.parametrize("case", HANDSHAKES)
def test_bad_handshake_is_refused_before_anything_else(server, healthy, case):
    make, message, logged = HANDSHAKES[case]
    sessions, children = server.sessions(), server.children()
    raw = Raw(server, auth=False)
    # Before AUTH a connection has no workspace, and in Python no process.
    assert set(server.sessions()) <= set(sessions)
    if server.kind == "python":
        assert set(server.children()) <= set(children)
    # A request right behind the bad AUTH must not be served.
    upload = p.frame_head(
        MsgType.UPLOAD, {"name": "x.so", "offset": 0, "last": True}, 3
    )
    raw.send_raw(make(raw) + upload + b"abc")
    header = raw.error()
    assert header["error"] == "RPCError"
    assert message in header["message"]
    raw.closed()
    raw.gone()
    if server.kind != "python":
        assert set(server.sessions()) <= set(sessions)
        healthy.check()
        return
    lines = wait_for(
        lambda: [x for x in raw.log_lines() if logged in x] and raw.log_lines(),
        "the refusal in the log",
    )
    assert not any("session started" in x or "uploaded" in x for x in lines)
    healthy.check()


def test_client_api_wrong_or_missing_key(server, healthy):
    with pytest.raises(RPCError, match="client sent a wrong key"):
        rpc.connect("127.0.0.1", server.port, key="guess")
    with pytest.raises(RPCError, match="requires a key; pass key="):
        rpc.connect("127.0.0.1", server.port)
    healthy.check()


# Names with paths in them.


BAD_NAMES = {
    "../x.so": "must be a plain name without a directory",
    "../../x.so": "must be a plain name without a directory",
    "../../../../../../../../tmp/x.so": "must be a plain name without a directory",
    "ABSOLUTE": "must be a plain name without a directory",
    "a/b.so": "must be a plain name without a directory",
    "a\\b.so": "must be a plain name without a directory",
    "x.so/": "must be a plain name without a directory",
    ".hidden": "must not start with '.'",
    ".": "must not start with '.'",
    "..": "must not start with '.'",
    ".upload-x.so": "must not start with '.'",
    "": "a file name must be a non-empty string, got ''",
    "x\0.so": "must be a plain name without a directory",
    "x" * 300: "file name of 300 bytes exceeds the limit of 240",
    "\u00e9" * 200: "file name of 400 bytes exceeds the limit of 240",
    "\ud800.so": "file name '\\ud800.so' is not valid UTF-8",
}


@pytest.mark.parametrize(
    "name",
    BAD_NAMES,
    ids=lambda n: repr(n[:20]) + (f"+{len(n)}" if len(n) > 20 else ""),
)
def test_bad_upload_names_write_nothing_outside(server, healthy, cwd, tmp_path, name):
    message = BAD_NAMES[name]
    target = tmp_path / "abs"
    target.mkdir()
    if name == "ABSOLUTE":
        name = str(target / "x.so")
    before = outside_sessions(server, cwd)
    raw = Raw(server)
    for type_, header in (
        (MsgType.UPLOAD, {"name": name, "offset": 0, "last": True}),
        (MsgType.UPLOAD, {"name": name, "offset": 0, "last": False}),
        (MsgType.DOWNLOAD, {"name": name, "offset": 0, "size": 100}),
        (MsgType.REMOVE, {"name": name}),
        (MsgType.LOAD_MODULE, {"name": name}),
    ):
        header = raw.request(type_, header, b"\x7fELF-not-really").header
        assert header["error"] == "ValueError"
        assert message in header["message"]
    assert raw.ok(MsgType.LISTDIR) == {"files": []}
    # The C session's workspace holds its files itself.
    assert tree(raw.workspace) == (
        {os.path.join(raw.workspace, d) for d in ("files", "tmp")}
        if server.kind == "python"
        else set()
    )
    raw.close()
    raw.gone()
    assert outside_sessions(server, cwd) == before
    assert os.listdir(target) == []
    healthy.check()


def test_client_refuses_bad_names_the_longest_name_works(server, healthy, libs):
    with rpc.connect("127.0.0.1", server.port, key=KEY) as remote:
        for name in ("../x.so", "/abs/x.so", ".hidden", "", "n" * 241):
            with pytest.raises(ValueError):
                remote.upload(libs["vecadd"], name)
        with pytest.raises(ValueError, match="plain name"):
            remote.download("../../server.log")
        longest = ["n" * 236 + ".so", "\u00e9" * 118 + ".so"]  # 240 bytes each
        for name in longest:
            remote.upload(libs["vecadd"], name)
        assert sorted(remote.listdir()) == sorted(longest)
        assert remote.load_module(longest[1]).function_names() == ["vecadd"]
    healthy.check()


# Fuzzing.


def _seed_frames() -> list[bytes]:
    def f(type_, header, data=b""):
        return p.frame_head(type_, header, len(data)) + data

    return [
        f(MsgType.LISTDIR, {}),
        f(MsgType.UPLOAD, {"name": "a.so", "offset": 0, "last": True}, b"hello"),
        f(MsgType.DOWNLOAD, {"name": "a.so", "offset": 0, "size": 3}),
        f(MsgType.REMOVE, {"name": "a.so"}),
        f(MsgType.LOAD_MODULE, {"name": "a.so"}),
        f(MsgType.ALLOC, {"shape": [2, 3], "dtype": "float32", "device": [1, 0]}),
        f(MsgType.COPY_IN, {"array": 1, "offset": 0}, bytes(8)),
        f(MsgType.COPY_OUT, {"array": 1, "offset": 0, "size": 24}),
        f(MsgType.CALL, {"module": 1, "name": "f", "args": [{"array": 1}, 2.5]}),
        f(MsgType.FREE, {"handles": [1]}),
    ]


SEEDS = _seed_frames()


@st.composite
def mutated_stream(draw) -> bytes:
    frames = draw(st.lists(st.sampled_from(SEEDS), min_size=1, max_size=4))
    data = bytearray(b"".join(frames))
    for _ in range(draw(st.integers(0, 4))):
        i = draw(st.integers(0, len(data) - 1))
        kind = draw(st.sampled_from(["flip", "set", "cut", "insert"]))
        if kind == "flip":
            data[i] ^= 1 << draw(st.integers(0, 7))
        elif kind == "set":
            data[i] = draw(st.integers(0, 255))
        elif kind == "cut":
            del data[i : i + draw(st.integers(1, 16))]
        else:
            data[i:i] = draw(st.binary(min_size=1, max_size=16))
        if not data:
            break
    return bytes(data)


@settings(max_examples=60, deadline=None)
@given(
    stream=st.one_of(st.binary(max_size=200), mutated_stream()),
    authenticated=st.booleans(),
)
def test_fuzzed_input_never_takes_the_server_down(
    server, healthy, stream, authenticated
):
    raw = Raw(server, auth=authenticated)
    try:
        raw.send_raw(stream)
        raw.sock.shutdown(socket.SHUT_WR)
    except OSError:  # the server may refuse and close before it has read it all
        pass
    # Whatever came in, what comes back is well-formed frames, then the end.
    while True:
        try:
            msg = raw.reply()
        except (p.ConnectionClosed, ConnectionResetError):
            break
        assert msg.type in (MsgType.OK, MsgType.ERROR)
    raw.close()
    healthy.check()


def test_after_the_faults_a_normal_session_works(server, healthy, libs, cwd):
    check_a_normal_session(server, healthy, libs, cwd)
