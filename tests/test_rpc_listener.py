"""The RPC listener's own faults: it cannot start a session (no process, no
disk), it is stopped while a session runs a library's code, or a session
process will not stop. In each, the listener refuses or ends what it must and
goes on (or stops) cleanly: no process, workspace or file left behind."""

import os
import subprocess
import sys
import threading
import time

import numpy as np
import pytest
from rpc_util import export_vecadd, random_inputs, rpc_server

import ember
import ember.rpc
import ember.runtime as rt
from ember import te
from ember.rpc import RPCError

FAIL_FIRST_FORK = """
import errno, os
_fork, _failed = os.fork, []
def _fork_once_failing():
    if not _failed:
        _failed.append(1)
        raise BlockingIOError(errno.EAGAIN, "Resource temporarily unavailable")
    return _fork()
os.fork = _fork_once_failing
"""

FAIL_FIRST_WORKSPACE = """
import errno, tempfile
_mkdtemp, _failed = tempfile.mkdtemp, []
def _mkdtemp_once_failing(*args, prefix=None, **kwargs):
    if prefix and prefix.startswith("session-") and not _failed:
        _failed.append(1)
        raise OSError(errno.ENOSPC, "No space left on device")
    return _mkdtemp(*args, prefix=prefix, **kwargs)
tempfile.mkdtemp = _mkdtemp_once_failing
"""


def a_session_works(port: int, lib: str) -> None:
    with ember.rpc.connect("127.0.0.1", port, timeout=30) as remote:
        remote.upload(lib)
        f = remote.load_module("vecadd.so")["vecadd"]
        a, b = random_inputs(64)
        dev = remote.cpu(0)
        c = rt.empty((64,), "float32", device=dev)
        f(rt.array(a, device=dev), rt.array(b, device=dev), c)
        np.testing.assert_array_equal(c.numpy(), a + b)


@pytest.mark.parametrize(
    "prelude, logged",
    [
        (FAIL_FIRST_FORK, "cannot start its process: [Errno 11]"),
        (FAIL_FIRST_WORKSPACE, "cannot make its workspace: [Errno 28]"),
    ],
    ids=["fork", "workspace"],
)
def test_a_session_that_cannot_start_is_refused_and_the_next_served(
    tmp_path, prelude, logged
):
    lib = export_vecadd(str(tmp_path / "vecadd.so"), 64)
    with rpc_server(prelude=prelude) as server:
        fds = server.open_files()
        with pytest.raises(RPCError, match="the server cannot start a session"):
            ember.rpc.connect("127.0.0.1", server.port, timeout=10)
        a_session_works(server.port, lib)
        deadline = time.monotonic() + 10
        while (server.children() or server.sessions()) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert (server.children(), server.sessions()) == ([], [])
        assert server.open_files() == fds
        assert server.process.poll() is None
        log = server.log()
    assert logged in log, log
    assert log.count(": session started") == 1, log


def export_spin(path: str) -> str:
    """A kernel that runs for many minutes: 2**40 dependent float adds."""
    A = te.placeholder((1,), name="A")
    k = te.reduce_axis((0, 1 << 40), name="k")
    C = te.compute((1,), lambda i: te.sum(A[i] * 1.5, axis=k), name="C")
    s = te.create_schedule(C.op)
    ember.build(s, [A, C], target="llvm", name="spin").export_library(path)
    return path


def test_the_server_stops_while_a_session_runs_a_library(tmp_path):
    """SIGTERM reaches a session process stuck in native code (a Python
    handler would wait for the next bytecode, forever)."""
    lib = export_spin(str(tmp_path / "spin.so"))
    with rpc_server() as server:
        remote = ember.rpc.connect("127.0.0.1", server.port, timeout=None)
        remote.upload(lib)
        spin = remote.load_module("spin.so")["spin"]
        dev = remote.cpu(0)
        a = rt.array(np.ones(1, "float32"), device=dev)
        c = rt.empty((1,), "float32", device=dev)
        outcome: list[BaseException] = []

        def call() -> None:
            try:
                spin(a, c)
            except BaseException as e:
                outcome.append(e)

        caller = threading.Thread(target=call, daemon=True)
        caller.start()
        (session,) = server.children()
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:  # until the kernel burns CPU time
            with open(f"/proc/{session}/stat") as f:
                if int(f.read().rsplit(")", 1)[1].split()[11]) > 20:  # utime ticks
                    break
            time.sleep(0.02)
        start = time.monotonic()
        server.process.terminate()
        server.process.wait(10)
        stopped = time.monotonic() - start
        caller.join(10)
        remote.close()
        assert not caller.is_alive()
        assert len(outcome) == 1 and "during CALL" in str(outcome[0]), outcome
        assert stopped < 5, f"the server took {stopped:.1f} s to stop"
        assert server.process.returncode == 0
        with pytest.raises(FileNotFoundError):
            open(f"/proc/{session}/stat")
        assert os.listdir(server.workspace) == []


STUBBORN_SESSIONS = """
import logging, os, signal, sys, time
from ember.runtime.rpc.server import Server

logging.basicConfig(level=logging.INFO, stream=sys.stdout, format="%(message)s")
server = Server("127.0.0.1", 0, workspace=sys.argv[1])
ready_r, ready_w = os.pipe()
stubborn = os.fork()
if stubborn == 0:  # blocks SIGTERM, as a library might
    signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGTERM})
    os.write(ready_w, b"x")
    time.sleep(60)
    os._exit(0)
polite = os.fork()
if polite == 0:
    os.write(ready_w, b"x")
    time.sleep(60)
    os._exit(0)
assert os.read(ready_r, 1) + os.read(ready_r, 1) == b"xx"
server.sessions = {stubborn: ("session 1", server.root), polite: ("session 2", server.root)}
start = time.monotonic()
server.close(grace=0.5)
print(f"closed in {time.monotonic() - start:.2f} s")
for pid in (stubborn, polite):
    try:
        os.waitpid(pid, 0)
        print(f"{pid} not reaped")
    except ChildProcessError:
        pass
print("root left" if os.path.exists(server.root) else "root removed")
"""


def test_close_kills_a_session_that_ignores_sigterm(tmp_path):
    out = subprocess.run(
        [sys.executable, "-c", STUBBORN_SESSIONS, str(tmp_path)],
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    ).stdout
    assert "session 1: still running 0.5 s after SIGTERM; killed" in out, out
    assert "session 2" not in out, out
    assert "not reaped" not in out and "root removed" in out, out
    seconds = float(out.split("closed in ")[1].split()[0])
    assert 0.5 <= seconds < 5, out
