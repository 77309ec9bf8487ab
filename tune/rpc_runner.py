"""Timing candidates on the device behind an ember RPC server.

    server = "board.local", 9090            # ember-rpc-server --key-file ... there
    runner = RPCRunner(*server, key=key)
    ember.tune.tune(args, runner=runner, records="mm.jsonl")

`RPCRunner` answers the requests `LocalRunner` answers (see
`ember.tune.runner`) through one RPC session: it uploads the candidate's
library, loads it there, copies the inputs there, runs the kernel once,
fetches its outputs and checks them here against the untuned kernel's (or
saves them as the reference), then times it with the server's
`time_evaluator`, whose clock runs there. The server gives each session a
process of its own, so a kernel that crashes or hangs ends that session only:
the runner records the candidate as a "crash" or a "timeout" and opens a new
session for the next one. A session the server ended between candidates
(idle past its timeout, or the server restarted) is replaced before the
candidate runs; a server that is gone is a "crash" for every candidate
until it is back.

The limit: `tune()` measures only targets that are this machine
(`Target.is_host`), and `Measurer` exports each candidate as a `.so` built
here, so today the server must run on a machine of this architecture and
CPU (another box, a container, a board of the same kind). A board of another
kind needs the task's target to be that board and its libraries exported as
`.tar`, which the server links with its own C compiler.
"""

from __future__ import annotations

import os

import numpy as np

from ember.runtime.rpc import RPCError, RPCSession, connect
from ember.tune.runner import compare_or_save


class RPCRunner:
    """Times libraries on an ember RPC server.

    Args:
        host, port: the server's address.
        key: its shared key, if it has one.
        timeout_s: seconds the server may take to answer any one request of a
            candidate (its run, its timing); past it the session is dropped,
            which ends its process on the server, and the candidate is
            recorded as a timeout.
        repeat, number, min_repeat_ms: `time_evaluator`'s.
        num_threads: the threads the server's kernels use, for the records;
            the runner cannot change it (the server's `EMBER_NUM_THREADS`
            decides). None: the server's default.
        rtol: the check's tolerance for floats (see `ember.tune.runner.check`).
        device_id: the server's CPU to time on.

    Example:
        >>> runner = RPCRunner("127.0.0.1", 9090, key=key)  # doctest: +SKIP
        >>> ember.tune.tune([A, B, C], runner=runner, trials=32)  # doctest: +SKIP
    """

    def __init__(
        self,
        host: str = "127.0.0.1",
        port: int = 9090,
        key: str | None = None,
        timeout_s: float = 20.0,
        repeat: int = 3,
        number: int = 1,
        min_repeat_ms: float = 20.0,
        num_threads: int | None = None,
        rtol: float = 1e-3,
        device_id: int = 0,
    ):
        self.host, self.port, self.key = host, port, key
        self.timeout_s = timeout_s
        self.repeat, self.number, self.min_repeat_ms = repeat, number, min_repeat_ms
        self.num_threads = num_threads
        self.rtol = rtol
        self.device_id = device_id
        self._session: RPCSession | None = None

    def run(self, request: dict) -> dict:
        """One request of `ember.tune.runner`'s protocol, its paths local
        files; the answer is {"costs": [...]} or {"error": kind, "message":
        ...}, never an exception."""
        request = {
            "repeat": self.repeat,
            "number": self.number,
            "min_repeat_ms": self.min_repeat_ms,
            "rtol": self.rtol,
            **request,
        }
        name = os.path.basename(request["lib"])
        try:
            session = self._holding(request["lib"], name)
            return self._run(session, name, request)
        except RPCError as e:
            return self._failed(e)
        except Exception as e:  # raised there, or by the check here
            return {"error": "run", "message": f"{type(e).__name__}: {e}"}

    def _holding(self, lib: str, name: str) -> RPCSession:
        """A session with `lib` uploaded as `name`. One that the server has
        ended since the last candidate (idle past its timeout, or restarted)
        is replaced: the candidate has not run yet, it is not its fault."""
        if self._session is not None:
            try:
                self._session.upload(lib, name)
                return self._session
            except RPCError:
                if not _lost(self._session):
                    raise
        self._session = None
        self._session = connect(self.host, self.port, self.key, timeout=self.timeout_s)
        self._session.upload(lib, name)
        return self._session

    def _failed(self, error: RPCError) -> dict:
        """The answer for an RPC failure: the server cannot be reached, the
        session was lost (the candidate crashed or hung it), or the server
        refused a request."""
        session = self._session
        if session is None:
            return {"error": "crash", "message": f"no RPC server: {error}"}
        if not _lost(session):
            return {"error": "run", "message": f"RPCError: {error}"}
        self._session = None
        kind = "timeout" if "within the timeout" in str(error) else "crash"
        return {"error": kind, "message": str(error)}

    def _run(self, session: RPCSession, name: str, request: dict) -> dict:
        module = session.load_module(name)
        session.remove(name)  # loaded: the workspace need not keep it
        entry = request["entry"]
        dev = session.cpu(self.device_id)
        with np.load(request["inputs"]) as data:
            local = [data[f"a{n}"] for n in range(len(data.files))]
        arrays = [session.array(a, dev) for a in local]
        module[entry](*arrays)
        results = [arrays[n].numpy() for n in request["outputs"]]
        wrong = compare_or_save(results, request)
        if wrong is not None:
            return wrong
        timer = module.time_evaluator(
            entry,
            dev,
            number=request["number"],
            repeat=request["repeat"],
            min_repeat_ms=request["min_repeat_ms"],
        )
        return {"costs": list(timer(*arrays).results)}

    def close(self) -> None:
        """End the session (the server removes what it holds)."""
        if self._session is not None:
            self._session.close()
            self._session = None


def _lost(session: RPCSession) -> bool:
    """Whether the session's connection is gone: the client closes it when the
    server stops answering (a timeout) or the connection drops, and only then."""
    return session._sock is None
