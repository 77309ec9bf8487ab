"""Starting an ember RPC server for a test: a child process on a free loopback port."""

import contextlib
import os
import subprocess
import sys
import tempfile
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import numpy as np


@dataclass
class RunningServer:
    process: subprocess.Popen
    port: int
    log_path: str
    workspace: str

    @property
    def pid(self) -> int:
        return self.process.pid

    def log(self) -> str:
        with open(self.log_path) as f:
            return f.read()

    def open_files(self) -> int:
        """File descriptors the listener process holds now."""
        return len(os.listdir(f"/proc/{self.pid}/fd"))

    def children(self) -> list[int]:
        """The listener's child processes (session processes, reaped or not)."""
        pids = []
        for task in os.listdir(f"/proc/{self.pid}/task"):
            with open(f"/proc/{self.pid}/task/{task}/children") as f:
                pids += [int(pid) for pid in f.read().split()]
        return pids

    def sessions(self) -> list[str]:
        """Session workspaces still on disk."""
        roots = os.listdir(self.workspace)
        return [
            s
            for r in roots
            for s in os.listdir(os.path.join(self.workspace, r))
            if s.startswith("session-")
        ]


_PRELUDE_MAIN = """{}
import sys
from ember.rpc.server import main
sys.exit(main())
"""


@contextlib.contextmanager
def rpc_server(
    *args: str,
    key: str | None = None,
    timeout: float = 30.0,
    cwd: str | None = None,
    prelude: str = "",
    workspace: str | None = None,
    command: Sequence[str] = (),
) -> Iterator[RunningServer]:
    """Run ``python -m ember.rpc.server --port 0 *args`` (or ``command``, another
    server such as the C one, with the same options) until the block ends.

    ``key`` goes to the server in ``$EMBER_RPC_KEY`` (which is unset when
    there is none); without a key, a loopback server warns that it has none
    and serves anyone. Its log goes to a file (``server.log()``) and its
    sessions' workspaces under a directory of their own (``server.workspace``,
    or ``workspace`` if given); ``cwd`` is its working directory (default: the
    caller's). ``prelude``, Python code, runs in the server's process before
    the server starts (to inject a fault).
    """
    env = {k: v for k, v in os.environ.items() if k != "EMBER_RPC_KEY"}
    if key is not None:
        env["EMBER_RPC_KEY"] = key
    with tempfile.TemporaryDirectory(prefix="ember-rpc-test-") as tmp:
        log_path = os.path.join(tmp, "server.log")
        if workspace is None:
            workspace = os.path.join(tmp, "workspace")
            os.mkdir(workspace)
        launch = (
            ("-c", _PRELUDE_MAIN.format(prelude))
            if prelude
            else ("-m", "ember.rpc.server")
        )
        program = list(command) or [sys.executable, *launch]
        with open(log_path, "w") as log:
            process = subprocess.Popen(
                [
                    *program,
                    "--port",
                    "0",
                    "--workspace",
                    workspace,
                    *args,
                ],
                stdout=subprocess.PIPE,
                stderr=log,
                text=True,
                cwd=cwd,
                env=env,
            )
        try:
            assert process.stdout is not None
            line = process.stdout.readline()
            if "listening on" not in line:
                process.wait(timeout)
                raise RuntimeError(
                    f"the server did not start: {line!r}\n{open(log_path).read()}"
                )
            port = int(line.rsplit(":", 1)[1])
            yield RunningServer(process, port, log_path, workspace)
        finally:
            process.terminate()
            process.wait(timeout)
            if process.stdout is not None:
                process.stdout.close()


def export_vecadd(path: str, n: int = 1024) -> str:
    """Build and export a scheduled vector add ``vecadd(A, B, C)`` to ``path``."""
    import ember
    from ember import te

    A = te.placeholder((n,), name="A")
    B = te.placeholder((n,), name="B")
    C = te.compute((n,), lambda i: A[i] + B[i], name="C")
    s = te.create_schedule(C.op)
    xo, xi = s[C].split(C.op.axis[0], factor=16)
    s[C].vectorize(xi)
    ember.build(s, [A, B, C], target="llvm", name="vecadd").export_library(path)
    return path


def random_inputs(n: int, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    return rng.standard_normal(n).astype("float32"), rng.standard_normal(n).astype(
        "float32"
    )
