"""Tools of the RPC fault tests (test_rpc_faults*.py): frames crafted by hand,
a raw-socket client, the libraries and the server the faults use, a healthy
session that is checked after every fault, and the closing normal session."""

import contextlib
import os
import resource
import socket
import struct
import subprocess
import tarfile
import time

import numpy as np
from rpc_util import export_vecadd, random_inputs, rpc_server

import ember
from ember import runtime as rt
from ember import te
from ember.runtime import rpc
from ember.runtime.rpc import protocol as p
from ember.runtime.rpc.protocol import HEADER, MAGIC, VERSION, MsgType

KEY = "fault-test-key-0123"
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
        host, port = self.sock.getsockname()[:2]
        self.peer = f"{host}:{port}"
        self.hello = p.receive(self.sock, REPLY_LIMIT)
        assert self.hello.type == MsgType.HELLO, self.hello
        self.session: str | None = None  # its workspace's name, once it has one
        if auth:
            self.send(MsgType.AUTH, {"digest": self.digest(key)})
            assert self.reply().type == MsgType.OK
            # The listener makes the session's directory before it forks the session.
            (self.session,) = set(server.sessions()) - before

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
        if self.session is not None:
            wait_for(
                lambda: self.session not in self.server.sessions(),
                f"workspace {self.session} to be removed",
            )
        self.sock.close()

    @property
    def workspace(self) -> str:
        """This session's workspace directory on the server."""
        assert self.session is not None, "no session before AUTH"
        (root,) = os.listdir(self.server.workspace)
        return os.path.join(self.server.workspace, root, self.session)

    def log_lines(self) -> list[str]:
        """The server's log lines about this connection and its session."""
        return [
            line for line in self.server.log().splitlines() if f"({self.peer})" in line
        ]

    def close(self) -> None:
        self.sock.close()


CRASH_C = b"""
#include <stdlib.h>
__attribute__((constructor)) static void crash_on_load(void) { abort(); }
"""


def build_libs(d) -> dict[str, str]:
    """The libraries of the faults, built in directory ``d``: name -> path."""
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


@contextlib.contextmanager
def fault_server(cwd: str):
    """The keyed server with small limits that most faults go to."""
    # A session killed by a signal must leave no core file in the server's cwd.
    core = resource.getrlimit(resource.RLIMIT_CORE)
    resource.setrlimit(resource.RLIMIT_CORE, (0, core[1]))
    try:
        with rpc_server(
            "--max-frame-bytes",
            str(MAX_FRAME),
            "--max-workspace-bytes",
            str(MAX_WORKSPACE),
            "--max-memory-bytes",
            str(MAX_MEMORY),
            key=KEY,
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


@contextlib.contextmanager
def healthy_session(server, libs):
    """A Healthy session, checked once, with the listener's file count then."""
    h = Healthy(server, libs)
    h.check()
    h.open_files = server.open_files()
    try:
        yield h
    finally:
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


def check_a_normal_session(server, healthy, libs, cwd) -> None:
    """After the faults: a fresh session uploads, loads, runs and times
    vecadd against numpy; the healthy one still works; nothing was left
    behind; the listener holds the files it held before the faults."""
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
