"""The RPC server under bad input and faults (issue 7, "Bad input and faults").

Frames are crafted on raw sockets: malformed, truncated and oversized frames,
unknown message types, bad handshakes, upload names with paths in them, files
that are not libraries, clients that vanish in the middle of an upload or a
call, remote functions that raise, the server's limits, a library that kills
its session's process, and fuzzed bytes. Each gets an ERROR reply or a closed
connection (asserted, with the message); a healthy session opened before the
faults is checked against numpy after each one; nothing is written outside the
session workspaces; and at the end a fresh session does a whole normal run.
"""

import os
import re
import resource
import socket
import struct
import subprocess
import tarfile
import time

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from rpc_util import export_vecadd, random_inputs, rpc_server

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
from ember.runtime.rpc.protocol import HEADER, MAGIC, VERSION, MsgType, RPCError

KEY = "fault-test-key"
N = 256
MAX_FRAME = 1 << 18
MAX_WORKSPACE = 1 << 20
MAX_MEMORY = 1 << 20
REPLY_LIMIT = 1 << 30


def wait_for(condition, what: str, deadline: float = 10.0):
    """Poll ``condition()`` until it is truthy; fail naming ``what``."""
    end = time.monotonic() + deadline
    while True:
        value = condition()
        if value:
            return value
        if time.monotonic() > end:
            raise AssertionError(f"timed out waiting for {what}")
        time.sleep(0.02)


def frame(type_: int, payload: bytes, *, magic=MAGIC, version=VERSION) -> bytes:
    """A frame with any fixed header and payload, however wrong."""
    return HEADER.pack(magic, version, type_, 0, len(payload)) + payload


def payload(header_json: bytes, data: bytes = b"", *, claim: int | None = None):
    """A payload whose JSON header length field says ``claim`` (default: true)."""
    size = len(header_json) if claim is None else claim
    return struct.pack("<I", size) + header_json + data


class Raw:
    """A client on a raw socket: it sends whatever bytes a test crafts."""

    def __init__(self, server, key: str | None = KEY, auth: bool = True):
        self.server = server
        before = set(server.sessions())
        self.sock = socket.create_connection(("127.0.0.1", server.port), timeout=10)
        self.hello = p.receive(self.sock, REPLY_LIMIT)
        assert self.hello.type == MsgType.HELLO, self.hello
        # The listener makes the session's directory before it forks the session.
        (self.session,) = set(server.sessions()) - before
        if auth:
            self.send(MsgType.AUTH, {"digest": self.digest(key)})
            assert self.reply().type == MsgType.OK

    def digest(self, key: str | None) -> str | None:
        nonce = bytes.fromhex(self.hello.header["nonce"])
        return None if key is None else p.expected_digest(key, nonce)

    def send(self, type_: int, header: dict | None = None, data: bytes = b""):
        p.send(self.sock, type_, header, data)

    def send_raw(self, data: bytes) -> None:
        self.sock.sendall(data)

    def reply(self) -> p.Message:
        return p.receive(self.sock, REPLY_LIMIT)

    def request(self, type_: int, header: dict | None = None, data: bytes = b""):
        self.send(type_, header, data)
        return self.reply()

    def error(self) -> dict:
        """The next reply, which must be an ERROR: its header."""
        msg = self.reply()
        assert msg.type == MsgType.ERROR, (msg.type, msg.header)
        return msg.header

    def ok(self, type_: int, header: dict | None = None, data: bytes = b"") -> dict:
        msg = self.request(type_, header, data)
        assert msg.type == MsgType.OK, (msg.type, msg.header)
        return msg.header

    def alive(self) -> None:
        """The session still answers requests."""
        assert "files" in self.ok(MsgType.LISTDIR)

    def closed(self) -> None:
        """The server has closed the connection (no more frames)."""
        try:
            rest = self.sock.recv(1 << 16)
        except ConnectionResetError:
            rest = b""
        assert rest == b"", f"expected the connection closed, got {rest[:80]!r}"

    def gone(self) -> None:
        """This session's process has ended and its workspace is removed."""
        wait_for(
            lambda: self.session not in self.server.sessions(),
            f"workspace {self.session} to be removed",
        )
        self.sock.close()

    @property
    def workspace(self) -> str:
        """This session's workspace directory on the server."""
        (root,) = os.listdir(self.server.workspace)
        return os.path.join(self.server.workspace, root, self.session)

    def log_lines(self) -> list[str]:
        """The server's log lines about this session."""
        number = self.session.split("-")[1]
        return [
            line
            for line in self.server.log().splitlines()
            if f"session {number} (" in line
        ]

    def close(self) -> None:
        self.sock.close()


# Fixtures: the libraries, one server for most faults, a healthy session on it.


CRASH_C = b"""
#include <stdlib.h>
__attribute__((constructor)) static void crash_on_load(void) { abort(); }
"""


@pytest.fixture(scope="module")
def libs(tmp_path_factory) -> dict[str, str]:
    d = tmp_path_factory.mktemp("libs")
    out = {"vecadd": export_vecadd(str(d / "vecadd.so"), N)}
    A = te.placeholder((N,), name="A")
    B = te.extern(
        (N,),
        [A],
        lambda ins, outs: te.call_packed(
            "name_not_registered_on_the_server", ins[0], outs[0]
        ),
        name="B",
    )
    mod = ember.build(te.create_schedule(B.op), [A, B], name="needs_callback")
    out["extern"] = str(d / "extern.so")
    mod.export_library(out["extern"])
    (d / "text.so").write_text("this is text, not a library\n")
    (d / "empty.so").write_bytes(b"")
    (d / "crash.c").write_bytes(CRASH_C)
    for name, flags in (("crash.so", ["-shared", "-fPIC"]), ("crash.o", ["-c"])):
        subprocess.run(
            ["cc", *flags, "-o", str(d / name), str(d / "crash.c")], check=True
        )
    (d / "notatar.tar").write_bytes(b"not a tar archive\0" * 64)
    with tarfile.open(d / "notalib.tar", "w") as tar:
        tar.add(d / "text.so", "lib0.o")
    out.update({k: str(d / k) for k in os.listdir(d)})
    return out


@pytest.fixture(scope="module")
def cwd(tmp_path_factory) -> str:
    return str(tmp_path_factory.mktemp("server-cwd"))


@pytest.fixture(scope="module")
def server(cwd):
    # A session killed by a signal must leave no core file in the server's cwd.
    core = resource.getrlimit(resource.RLIMIT_CORE)
    resource.setrlimit(resource.RLIMIT_CORE, (0, core[1]))
    try:
        with rpc_server(
            "--key",
            KEY,
            "--max-frame-bytes",
            str(MAX_FRAME),
            "--max-workspace-bytes",
            str(MAX_WORKSPACE),
            "--max-memory-bytes",
            str(MAX_MEMORY),
            cwd=cwd,
        ) as s:
            yield s
    finally:
        resource.setrlimit(resource.RLIMIT_CORE, core)


class Healthy:
    """A normal session opened before the faults; ``check`` runs vecadd there."""

    def __init__(self, server, libs):
        self.server = server
        before = set(server.sessions())
        self.remote = rpc.connect("127.0.0.1", server.port, key=KEY, timeout=30)
        (self.session,) = set(server.sessions()) - before
        self.remote.upload(libs["vecadd"])
        self.f = self.remote.load_module("vecadd.so")["vecadd"]
        dev = self.remote.cpu(0)
        self.arrays = [rt.empty((N,), "float32", device=dev) for _ in range(3)]
        self.seed = 0

    def check(self) -> None:
        assert self.server.process.poll() is None, "the listener has exited"
        self.seed += 1
        a, b = random_inputs(N, self.seed)
        A, B, C = self.arrays
        A.copyfrom(a)
        B.copyfrom(b)
        self.f(A, B, C)
        np.testing.assert_allclose(C.numpy(), a + b, rtol=1e-6)


@pytest.fixture(scope="module")
def healthy(server, libs):
    h = Healthy(server, libs)
    h.check()
    h.open_files = server.open_files()
    yield h
    h.remote.close()


def tree(*roots: str) -> set[str]:
    """Every path under ``roots``."""
    return {
        os.path.join(d, name)
        for root in roots
        for d, dirs, files in os.walk(root)
        for name in dirs + files
    }


def outside_sessions(server, cwd: str) -> set[str]:
    """What lies in the server's cwd and around its workspaces, the sessions'
    own directories left out (they come and go with the sessions)."""
    sessions = os.path.join(server.workspace, "")
    return {
        q
        for q in tree(cwd, os.path.dirname(server.workspace))
        if not (q.startswith(sessions) and "/session-" in q[len(sessions) :])
    }


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
    raw = Raw(server, auth=False)
    assert os.listdir(raw.workspace) == [], "a workspace file before AUTH"
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
    assert tree(raw.workspace) == {
        os.path.join(raw.workspace, "files"),
        os.path.join(raw.workspace, "tmp"),
    }
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


# Files that are not libraries.


NOT_LIBRARIES = {
    "text.so": (InvalidLibraryError, "text.so is"),
    "empty.so": (InvalidLibraryError, "empty.so is"),
    "crash.o": (EmberError, "expected a shared library (.so) or a library archive"),
    "object.so": (InvalidLibraryError, "a relocatable object file, not a shared"),
    "notatar.tar": (InvalidLibraryError, "notatar.tar"),
    "notalib.tar": (EmberError, "notalib.tar"),
    "missing.so": (FileNotFoundError, "no file 'missing.so' in the session workspace"),
}


@pytest.mark.parametrize("name", NOT_LIBRARIES)
def test_loading_what_is_not_a_library(server, healthy, libs, name):
    error, message = NOT_LIBRARIES[name]
    source = {"object.so": libs["crash.o"]}.get(name, libs.get(name))
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
    with pytest.raises(RPCError, match="lost"):
        remote.load_module("crash.so")
    remote.close()
    wait_for(lambda: session not in server.sessions(), "the workspace removed")
    wait_for(lambda: "its process died of SIGABRT" in server.log(), "the log")
    assert outside_sessions(server, cwd) == before
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
    wait_for(lambda: len(server.sessions()) == 1, "only the healthy session left")
    before = outside_sessions(server, cwd)
    a, b = random_inputs(N, 99)
    with rpc.connect("127.0.0.1", server.port, key=KEY) as remote:
        remote.upload(libs["vecadd"], "fresh.so")
        assert remote.listdir() == ["fresh.so"]
        mod = remote.load_module("fresh.so")
        dev = remote.cpu(0)
        A, B = rt.array(a, device=dev), rt.array(b, device=dev)
        C = rt.empty((N,), "float32", device=dev)
        mod["vecadd"](A, B, C)
        np.testing.assert_allclose(C.numpy(), a + b, rtol=1e-6)
        timing = mod.time_evaluator("vecadd", dev, number=20, repeat=3)(A, B, C)
        assert len(timing.results) == 3 and all(0 < t < 0.1 for t in timing.results)
    healthy.check()
    wait_for(lambda: len(server.sessions()) == 1, "the fresh session removed")
    assert outside_sessions(server, cwd) == before
    assert os.listdir(cwd) == []
    assert server.open_files() == healthy.open_files
