"""Compile here, run and time on another machine: ember's RPC, end to end.

    .venv/bin/python examples/rpc_tutorial.py                  # a server started here
    .venv/bin/python examples/rpc_tutorial.py --host board.local --port 9090
                                                               # a server already running
                                                               # (key from $EMBER_RPC_KEY
                                                               # or --key-file, as the server's)

The story, as docs/rpc.md tells it:

1. A server. On the device, ``ember-rpc-server`` (part of the runtime: it
   needs numpy, ember's runtime and, for ``.tar`` libraries, a C compiler; no
   LLVM). Here the script starts one on a free loopback port with a random key
   handed over in ``$EMBER_RPC_KEY``, never on the command line, where every
   user of the machine could read it in ``ps``.
2. A kernel. A blocked, vectorized, parallel matmul written with ``ember.te``.
3. Two builds. For this machine (target ``llvm``: this CPU and all of its
   features) exported as ``.so``; and cross-compiled for a 64-bit Arm board
   (``llvm -mtriple=aarch64-linux-gnu -mattr=+neon``) exported as ``.tar``:
   objects and a manifest, which the board's own C compiler links when the
   library is loaded, so no cross linker is needed here.
4. The session. Connect with the key, look at the machine the server reports,
   upload the library built for it, load it, make arrays in the server's
   memory, call the kernel, fetch the result and check it against numpy; time
   it with ``time_evaluator`` on the server (the clock runs there, so the
   figure excludes the network) and compare with the same library timed here
   and with one call made from here over the network.
5. Files. List, download (byte-identical), remove; closing the session removes
   the server's copy of everything.

On an x86_64 machine talking to itself the aarch64 build is not run; the
script shows its size and triple, and that the server refuses to load it.
"""

import argparse
import json
import os
import platform
import re
import secrets
import shutil
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from pathlib import Path

import numpy as np

import ember
import ember.rpc
from ember import runtime, te

N = 256  # C = A @ B, all N x N float32
TILE = 32
CROSS_TARGET = "llvm -mtriple=aarch64-linux-gnu -mattr=+neon"
MACHINE_ALIASES = {"arm64": "aarch64", "amd64": "x86_64"}


def matmul_schedule(n: int):
    """C[i, j] = sum_k A[i, k] * B[k, j], in 32 x 32 blocks of C, k in steps
    of 4, the block's columns vectorized and its rows of blocks in parallel."""
    A = te.placeholder((n, n), name="A")
    B = te.placeholder((n, n), name="B")
    k = te.reduce_axis((0, n), name="k")
    C = te.compute((n, n), lambda i, j: te.sum(A[i, k] * B[k, j], axis=k), name="C")
    s = te.create_schedule(C.op)
    mo, no, mi, ni = s[C].tile(C.op.axis[0], C.op.axis[1], TILE, TILE)
    ko, ki = s[C].split(C.op.reduce_axis[0], factor=4)
    s[C].reorder(mo, no, ko, ki, mi, ni)
    s[C].vectorize(ni)
    s[C].parallel(mo)
    return s, [A, B, C]


def build(target: str, path: Path, n: int) -> tuple[Path, float]:
    """Build the matmul for ``target`` and export it to ``path`` (.so or .tar)."""
    start = time.perf_counter()
    s, args = matmul_schedule(n)
    ember.build(s, args, target=target, name="matmul").export_library(str(path))
    return path, time.perf_counter() - start


def machine_name(machine: str) -> str:
    return MACHINE_ALIASES.get(machine.lower(), machine)


def start_server(work: Path) -> tuple[subprocess.Popen, int, str]:
    """``ember-rpc-server --port 0`` with a fresh random key in its environment,
    its log in ``work/server.log`` and its sessions' workspaces under
    ``work/server``; returns the process, the port it chose and the key."""
    key = secrets.token_hex(32)
    here = shutil.which("ember-rpc-server", path=str(Path(sys.executable).parent))
    command = [here] if here else [sys.executable, "-m", "ember.rpc.server"]
    log_path = work / "server.log"
    (work / "server").mkdir()
    with open(log_path, "w") as log:
        server = subprocess.Popen(
            [*command, "--host", "127.0.0.1", "--port", "0"]
            + ["--workspace", str(work / "server")],
            env={**os.environ, "EMBER_RPC_KEY": key},
            stdout=subprocess.PIPE,
            stderr=log,
            text=True,
        )
    assert server.stdout is not None
    line = server.stdout.readline()  # "ember-rpc-server: listening on HOST:PORT"
    if "listening on" not in line:
        server.wait(10)
        raise SystemExit(f"the server did not start:\n{log_path.read_text()}")
    return server, int(line.rsplit(":", 1)[1]), key


def stop_server(server: subprocess.Popen) -> None:
    server.terminate()
    server.wait(10)
    if server.stdout is not None:
        server.stdout.close()


def round_trip_ms(f, *args, repeat: int = 20) -> float:
    """The median wall time of a remote call made from here, network included."""
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        f(*args)
        times.append(time.perf_counter() - start)
    return statistics.median(times) * 1e3


def summary(timing, flops: float) -> str:
    """A BenchmarkResult in milliseconds per call, and the best GFLOPS."""
    return (
        f"best {timing.min * 1e3:.3f} ms, median {timing.median * 1e3:.3f} ms "
        f"per call ({flops / timing.min / 1e9:.1f} GFLOPS)"
    )


def describe_tar(path: Path) -> str:
    """An exported .tar is a plain tar: objects and ember_library.json."""
    with tarfile.open(path) as tar:
        member = tar.extractfile("ember_library.json")
        assert member is not None
        manifest = json.load(member)
    return f"triple {manifest['triple']}, objects {', '.join(manifest['objects'])}"


def session_workspaces(server_dir: Path) -> list[str]:
    """The session workspaces on disk under a server's ``--workspace`` (each
    server's root there also holds its ``.lock``)."""
    return [
        s.name
        for root in server_dir.iterdir()
        for s in root.iterdir()
        if s.name.startswith("session-")
    ]


def session(
    host: str, port: int, key: str | None, work: Path, n: int, server_dir: Path | None
) -> None:
    """Build, connect, upload, run, check, time, and tidy up (the module
    docstring's steps 2 to 5); ``server_dir`` is the ``--workspace`` of a
    server started here, None for someone else's."""
    flops = 2.0 * n**3
    rng = np.random.default_rng(0)
    a = rng.uniform(-1, 1, (n, n)).astype("float32")
    b = rng.uniform(-1, 1, (n, n)).astype("float32")
    expected = a @ b

    print(
        f"kernel: matmul {n}x{n}x{n} float32, {TILE}x{TILE} blocks, vectorized, parallel"
    )
    native, seconds = build("llvm", work / f"matmul_{platform.machine()}.so", n)
    print(
        f"built for this machine ({ember.Target('llvm').cpu}): {native.name}, "
        f"{native.stat().st_size} bytes, {seconds:.2f} s"
    )
    cross, seconds = build(CROSS_TARGET, work / "matmul_aarch64.tar", n)
    print(
        f"cross-compiled for '{CROSS_TARGET}': {cross.name}, "
        f"{cross.stat().st_size} bytes, {seconds:.2f} s ({describe_tar(cross)})"
    )

    if server_dir is not None:  # a server with a key we know
        try:
            ember.rpc.connect(host, port, key="not the key").close()
        except ember.rpc.RPCError as e:
            print(f"a client with a wrong key: refused ({e})")
        else:
            raise SystemExit("the server accepted a wrong key")

    with ember.rpc.connect(host, port, key=key) as remote:
        there = machine_name(remote.info["machine"])
        here = machine_name(platform.machine())
        print(f"connected to {remote.address}: {there} {remote.info['system']}")
        if there == here:
            library = native
        elif there == "aarch64":
            library = cross  # the server links it with its C compiler on load
        else:
            raise SystemExit(
                f"the server is {there}: build for it, e.g. "
                f"target='llvm -mtriple={there}-linux-gnu'"
            )
        print(f"chosen for a {there} server: {library.name}")
        for path in (native, cross):
            remote.upload(path)
        print(f"uploaded: {', '.join(remote.listdir())}")

        lib = remote.load_module(library.name)
        matmul = lib["matmul"]
        dev = remote.cpu(0)
        A = runtime.array(a, device=dev)
        B = runtime.array(b, device=dev)
        C = runtime.empty((n, n), "float32", device=dev)
        matmul(A, B, C)
        c = C.numpy()
        error = float(np.abs(c - expected).max())
        ok = np.allclose(c, expected, rtol=1e-4, atol=1e-4)
        print(
            f"remote run: {'matches' if ok else 'DOES NOT MATCH'} numpy (max |error| {error:.2e})"
        )
        if not ok:
            raise SystemExit("the remote result differs from numpy")

        # Each of the 7 measurements times 10 calls; on a busy machine the best
        # one is the figure to compare, the median shows the noise.
        timing = lib.time_evaluator("matmul", dev, number=10, repeat=7)(A, B, C)
        print(f"time_evaluator on the server: {summary(timing, flops)}")
        if library is native:
            # The same library in this process, on arrays allocated as the
            # server allocates them (NDArrays, 64-byte aligned).
            local = runtime.load_module(str(native))
            timer = local.time_evaluator("matmul", runtime.cpu(), number=10, repeat=7)
            timing = timer(*(runtime.array(x) for x in (a, b, c)))
            print(f"time_evaluator here, same library: {summary(timing, flops)}")
        print(
            f"one call made from here, network included: "
            f"{round_trip_ms(matmul, A, B, C):.3f} ms"
        )

        if there != "aarch64":
            # The server checks a library's machine before linking or loading it.
            try:
                remote.load_module(cross.name)
            except runtime.EmberError as e:
                print(
                    f"the aarch64 .tar on this server: refused ({type(e).__name__}: {e})"
                )
            else:
                raise SystemExit(f"a {there} server loaded an aarch64 library")

        same = remote.download(library.name) == library.read_bytes()
        print(f"downloaded {library.name}: {'identical' if same else 'DIFFERENT'}")
        remote.remove(cross.name)
        print(f"after removing {cross.name}: {', '.join(remote.listdir())}")
    if server_dir is None:
        print("session closed: the server removes its workspace")
        return
    deadline = time.monotonic() + 5.0
    while session_workspaces(server_dir) and time.monotonic() < deadline:
        time.sleep(0.05)
    left = session_workspaces(server_dir)
    if left:
        raise SystemExit(f"the server kept session workspaces: {', '.join(left)}")
    print("session closed: its workspace on the server is gone")


def server_log(path: Path) -> list[str]:
    """The server's log lines without their timestamp and process id."""
    lines = path.read_text().splitlines()
    return [re.sub(r"^.*?ember-rpc-server\[\d+\] ", "", line) for line in lines]


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--host", default="127.0.0.1", help="server address")
    parser.add_argument("--port", type=int, help="use the server on this port")
    keys = parser.add_mutually_exclusive_group()
    keys.add_argument(
        "--key-file",
        type=Path,
        help="a file whose first line is the server's key (default $EMBER_RPC_KEY)",
    )
    keys.add_argument(
        "--key",
        default=os.environ.get("EMBER_RPC_KEY"),
        help="the server's key itself (visible to other users in ps)",
    )
    parser.add_argument("--size", type=int, default=N, help="matrix size (default 256)")
    parser.add_argument(
        "--show-log",
        action="store_true",
        help="print the log of the server started here",
    )
    args = parser.parse_args(argv)
    if args.size <= 0:
        parser.error(f"--size must be positive, got {args.size}")
    if args.key_file is not None:
        try:
            args.key = args.key_file.read_text().splitlines()[0]
        except (OSError, IndexError) as e:
            parser.error(f"cannot read a key from --key-file {args.key_file}: {e}")
    try:
        tutorial(args)
    except runtime.EmberError as e:  # RPCError included: no traceback for these
        raise SystemExit(f"rpc_tutorial: {type(e).__name__}: {e}") from None


def tutorial(args: argparse.Namespace) -> None:
    with tempfile.TemporaryDirectory(prefix="ember-rpc-tutorial-") as tmp:
        work = Path(tmp)
        if args.port is not None:
            print(f"server: {args.host}:{args.port} (already running)")
            session(args.host, args.port, args.key, work, args.size, None)
            return
        server, port, key = start_server(work)
        print(
            f"server: ember-rpc-server on 127.0.0.1:{port}, random key in $EMBER_RPC_KEY"
        )
        try:
            session("127.0.0.1", port, key, work, args.size, work / "server")
        finally:
            stop_server(server)
            print("server stopped")
            if args.show_log:
                print("server log:", *server_log(work / "server.log"), sep="\n  ")


if __name__ == "__main__":
    main()
