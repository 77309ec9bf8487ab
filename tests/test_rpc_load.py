"""The RPC server under load: many clients at once, and many sessions in a row.

Each client is a thread with its own ``ember.rpc.connect`` session (so its own
forked session process on the server), its own upload of the vecadd library
and its own remote arrays. The calls accumulate, ``C' = A + C``, on small
integers (exact in float32): after k calls C holds ``C0 + k * A``, so checking
every 20th call and the last proves that every call ran exactly once, in order,
on this client's arrays and no other's (a call reads the last result and writes
the other of two arrays: ember refuses in-place calls).

Afterwards the listener must be back where it started: the same open files, no
child processes (every session reaped, no zombie), no session workspace left,
and a log that shows each session start and end with no ERROR line. Run with
``-s`` to see the figures; ``-m slow`` runs a bigger load.
"""

import os
import threading
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
import pytest
from rpc_util import RunningServer, export_vecadd, rpc_server

import ember.rpc
import ember.runtime as rt

N = 1024
CHECK_EVERY = 20


@pytest.fixture(scope="module")
def vecadd_lib(tmp_path_factory) -> str:
    return export_vecadd(str(tmp_path_factory.mktemp("rpc-load") / "vecadd.so"), N)


@dataclass
class Watch:
    """Samples the listener's open files and children while clients run."""

    server: RunningServer
    fds: list[int] = field(default_factory=list)
    children: list[int] = field(default_factory=list)
    done: threading.Event = field(default_factory=threading.Event)

    def run(self) -> None:
        while not self.done.wait(0.005):
            try:
                self.fds.append(self.server.open_files())
                self.children.append(len(self.server.children()))
            except FileNotFoundError:  # a /proc entry that vanished mid-read
                pass


def listener_rss_kib(server: RunningServer) -> int:
    with open(f"/proc/{server.pid}/status") as f:
        line = next(line for line in f if line.startswith("VmRSS:"))
    return int(line.split()[1])


def run_threads(
    count: int, work: Callable[[int], int], on_error: Callable[[], None] = lambda: None
) -> tuple[int, list[str]]:
    """Run ``work(i)`` in ``count`` threads; the sum of what they return and
    the tracebacks of those that raised (``on_error`` runs after each)."""
    done: list[int] = []
    errors: list[str] = []

    def target(i: int) -> None:
        try:
            done.append(work(i))
        except BaseException:
            errors.append(f"client {i}:\n{traceback.format_exc()}")
            on_error()

    threads = [threading.Thread(target=target, args=(i,)) for i in range(count)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(300)
    assert not any(t.is_alive() for t in threads), "a client thread hung"
    return sum(done), errors


def settle(server: RunningServer, fds_before: int, deadline: float = 15.0) -> int:
    """Wait until every session is reaped; the listener's open files then."""
    end = time.monotonic() + deadline
    while time.monotonic() < end:
        fds = server.open_files()
        if fds == fds_before and not server.children() and not server.sessions():
            return fds
        time.sleep(0.05)
    return server.open_files()


def check_listener(server: RunningServer, fds_before: int, sessions: int) -> int:
    fds_after = settle(server, fds_before)
    assert server.process.poll() is None, "the server died"
    assert fds_after == fds_before, (
        f"the listener held {fds_before} files before, {fds_after} after: "
        f"{sorted(os.listdir(f'/proc/{server.pid}/fd'))}"
    )
    assert server.children() == [], "session processes not reaped (zombies)"
    assert server.sessions() == [], "session workspaces left on disk"
    log = server.log()
    errors = [line for line in log.splitlines() if " ERROR " in line]
    assert errors == [], "\n".join(errors)
    assert log.count(": session started") == sessions, log[-4000:]
    assert log.count(": ended") == sessions, log[-4000:]
    return fds_after


def accumulate(port: int, lib: str, seed: int, calls: int, start) -> int:
    """One client's session: ``calls`` calls of vecadd adding A to the last
    result (two output arrays in turn: a call may not write its input)."""
    with ember.rpc.connect("127.0.0.1", port, timeout=60) as remote:
        remote.upload(lib)
        f = remote.load_module(os.path.basename(lib))["vecadd"]
        rng = np.random.default_rng(seed)
        a = (rng.integers(1, 9, N) * rng.choice([-1, 1], N)).astype("float32")
        c0 = rng.integers(-1000, 1000, N).astype("float32")
        dev = remote.cpu(0)
        A = rt.array(a, device=dev)
        C = [rt.array(c0, device=dev), rt.empty((N,), "float32", device=dev)]
        start()
        for k in range(1, calls + 1):
            f(A, C[(k - 1) % 2], C[k % 2])
            if k % CHECK_EVERY == 0 or k == calls:
                got = C[k % 2].numpy()
                if not np.array_equal(got, c0 + k * a):
                    bad = int(np.argmax(got != c0 + k * a))
                    raise AssertionError(
                        f"seed {seed}, after {k} calls: C[{bad}] = {got[bad]}, "
                        f"expected {c0[bad] + k * a[bad]}"
                    )
    return calls


def concurrent_calls(vecadd_lib: str, clients: int, calls: int) -> None:
    with rpc_server("--max-sessions", str(max(16, clients))) as server:
        fds_before, rss_before = server.open_files(), listener_rss_kib(server)
        assert server.children() == []
        watch = Watch(server)
        sampler = threading.Thread(target=watch.run)
        sampler.start()
        started: list[float] = []  # when the last client is ready, calls begin
        ready = threading.Barrier(
            clients, action=lambda: started.append(time.perf_counter()), timeout=120
        )
        try:
            done, errors = run_threads(
                clients,
                lambda i: accumulate(server.port, vecadd_lib, i, calls, ready.wait),
                on_error=ready.abort,
            )
            wall = time.perf_counter() - started[0] if started else float("nan")
        finally:
            watch.done.set()
            sampler.join()
        assert errors == [], "\n".join(errors)
        assert done == clients * calls
        fds_after = check_listener(server, fds_before, clients)
        # The listener holds each connection until it has authenticated and
        # the fork hands it over: at most one per client at once.
        assert max(watch.fds) <= fds_before + clients, watch.fds
        print(
            f"\nRPC load: {clients} concurrent clients x {calls} calls = {done} calls "
            f"(every {CHECK_EVERY}th checked) in {wall:.2f} s: "
            f"{done / wall:.0f} calls/s; listener open files {fds_before} before, "
            f"{max(watch.fds)} at most during, {fds_after} after; "
            f"session processes at most {max(watch.children)} at once; "
            f"listener RSS {rss_before} KiB before, {listener_rss_kib(server)} KiB after"
        )


def short_sessions(port: int, lib: str, thread: int, sessions: int) -> int:
    """``sessions`` sessions in a row: connect, upload, load, call, check, close."""
    name = os.path.basename(lib)
    for s in range(sessions):
        with ember.rpc.connect("127.0.0.1", port, timeout=60) as remote:
            remote.upload(lib)
            f = remote.load_module(name)["vecadd"]
            a = np.full(N, thread, "float32")
            b = np.arange(N, dtype="float32") * s
            dev = remote.cpu(0)
            A, B = rt.array(a, device=dev), rt.array(b, device=dev)
            C = rt.empty((N,), "float32", device=dev)
            f(A, B, C)
            np.testing.assert_array_equal(C.numpy(), a + b)
            assert remote.listdir() == [name]
    return sessions


def repeated_sessions(vecadd_lib: str, threads: int, sessions: int) -> None:
    with rpc_server() as server:
        fds_before = server.open_files()
        watch = Watch(server)
        sampler = threading.Thread(target=watch.run)
        sampler.start()
        t0 = time.perf_counter()
        try:
            done, errors = run_threads(
                threads,
                lambda i: short_sessions(server.port, vecadd_lib, i, sessions),
            )
        finally:
            watch.done.set()
            sampler.join()
        wall = time.perf_counter() - t0
        assert errors == [], "\n".join(errors)
        assert done == threads * sessions
        fds_after = check_listener(server, fds_before, done)
        assert max(watch.fds) <= fds_before + threads, watch.fds
        print(
            f"\nRPC sessions: {threads} threads x {sessions} sessions = {done} "
            f"sessions (connect, upload, load, call, check, close) in {wall:.2f} s: "
            f"{done / wall:.1f} sessions/s; listener open files {fds_before} before, "
            f"{max(watch.fds)} at most during, {fds_after} after; session processes "
            f"at most {max(watch.children)} at once"
        )


def test_eight_concurrent_clients_200_calls_each(vecadd_lib):
    concurrent_calls(vecadd_lib, clients=8, calls=200)


def test_repeated_short_sessions_leave_nothing_behind(vecadd_lib):
    repeated_sessions(vecadd_lib, threads=4, sessions=15)


@pytest.mark.slow
def test_sixteen_concurrent_clients_2000_calls_each(vecadd_lib):
    concurrent_calls(vecadd_lib, clients=16, calls=2000)


@pytest.mark.slow
def test_400_short_sessions(vecadd_lib):
    repeated_sessions(vecadd_lib, threads=4, sessions=100)
