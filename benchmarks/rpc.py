"""RPC side by side: ember's RPC and apache-tvm's, each against its own server on
loopback, driven from this process.

    .venv/bin/python benchmarks/rpc.py            # 16 MiB transfers, 8 x 500 calls
    .venv/bin/python benchmarks/rpc.py --quick    # 1 MiB transfers, 8 x 20 calls

Servers: `python -m ember.rpc.server` (a forked process per session), and TVM's
Python RPC server (`tvm.rpc.server`'s listener, run in a process of its own as
`python -m tvm.exec.rpc_server` runs it; `tvm.rpc.Server` would need cloudpickle,
which the bench extra lacks). Each runtime compiles the same TE vector add,
C = A + B over float32, exports it as a shared library, uploads and loads it
remotely. Rows:

    session             connect, one request, close (sessions one after another)
    call vecadd n=16    one remote call on remote arrays, from this process
    time_evaluator      the same library timed by the runtime's time_evaluator in
                        this process (local) and on the server (remote): they
                        should agree. tvm's timing loop is C++, ember's Python
                        (about 0.8 us a call), so at n=16 they time different things
    upload / download   a file of the transfer size, to and from the workspace
    copy-in / copy-out  a float32 array of the transfer size, to and from the
                        server's memory
    8 clients           8 threads at once, each its own session: connect, upload,
                        load, arrays, N calls, check, close; all calls / wall time.
                        "one server": all against one server (tvm's serves one
                        session at a time and listens with a backlog of 1, so
                        clients beyond its queue are reset); "a server each": 8
                        servers started for the row (not with --quick)

Every row is checked before it is timed: results against numpy, files and arrays
against what was sent. A tvm cell says "not installed" where tvm is absent. The
ratio column is ember's advantage: tvm's time over ember's, or ember's rate over
tvm's (above 1: ember is faster).
"""

from __future__ import annotations

import argparse
import math
import os
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
from common import (
    add_timing_options,
    describe_machine,
    measure,
    timing_options,
    tvm_target,
)

TVM_SERVER = """
import sys
from tvm.rpc.server import PopenRPCServerState
state = PopenRPCServerState("127.0.0.1", int(sys.argv[1]), int(sys.argv[2]), silent=True)
print(f"listening on 127.0.0.1:{state.port}", flush=True)
state.thread.join()
"""
CLIENTS = 8


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def start_servers(commands: list[list[str]]) -> list[tuple[subprocess.Popen, int]]:
    """Start servers that print "listening on HOST:PORT" (all at once); their
    processes and ports."""
    processes = [
        subprocess.Popen(
            command, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True
        )
        for command in commands
    ]
    started = []
    try:
        for process in processes:
            assert process.stdout is not None
            line = process.stdout.readline()
            if "listening on" not in line:
                raise RuntimeError(f"a server did not start: {line!r}")
            started.append((process, int(line.rsplit(":", 1)[1])))
    except BaseException:
        for process in processes:
            stop_server(process)
        raise
    return started


def stop_server(process: subprocess.Popen) -> None:
    process.kill()
    process.wait()
    if process.stdout is not None:
        process.stdout.close()


class Runtime:
    """One RPC implementation: its servers, its client, its kernels. Sessions,
    remote modules and remote arrays are the client's own objects."""

    name = ""

    def __init__(self, workdir: str, sizes: tuple[int, ...]):
        self.workdir = workdir
        self.libs = {n: self.export_vecadd(n) for n in sizes}
        self.processes: list[subprocess.Popen] = []
        (self.port,) = self.servers(1)

    def servers(self, count: int) -> list[int]:
        """Start ``count`` more servers at once; their ports."""
        started = start_servers([self.server_command() for _ in range(count)])
        self.processes += [process for process, _ in started]
        return [port for _, port in started]

    def stop(self) -> None:
        for process in self.processes:
            stop_server(process)

    def lib_path(self, n: int) -> str:
        return os.path.join(self.workdir, f"vecadd{n}_{self.name}.so")

    def loaded(self, n: int, port: int = 0):
        """A new session with the n-element kernel uploaded and loaded."""
        sess = self.connect(port)
        self.upload(sess, self.libs[n])
        return sess, self.load(sess, os.path.basename(self.libs[n]))

    # Each implementation's own way.
    def server_command(self) -> list[str]: ...
    def export_vecadd(self, n: int) -> str: ...
    def connect(self, port: int = 0): ...
    def ping(self, sess) -> None: ...
    def close(self, sess) -> None: ...
    def upload(self, sess, path: str) -> None: ...
    def download(self, sess, name: str) -> bytes: ...
    def load(self, sess, name: str): ...
    def to_remote(self, sess, x: np.ndarray): ...
    def copy_in(self, array, x: np.ndarray) -> None: ...
    def time_local(self, n: int, args: list[np.ndarray], opts: dict) -> float: ...
    def time_remote(self, sess, module, args: list, opts: dict) -> float: ...

    @staticmethod
    def to_numpy(array) -> np.ndarray:
        return array.numpy()


class Ember(Runtime):
    name = "ember"

    def __init__(self, workdir: str, sizes: tuple[int, ...]):
        import ember.rpc
        import ember.runtime

        self.rpc, self.rt = ember.rpc, ember.runtime
        super().__init__(workdir, sizes)

    def server_command(self) -> list[str]:
        return [sys.executable, "-m", "ember.rpc.server", "--port", "0", "-q"]

    def export_vecadd(self, n: int) -> str:
        import ember
        from ember import te

        A = te.placeholder((n,), name="A")
        B = te.placeholder((n,), name="B")
        C = te.compute((n,), lambda i: A[i] + B[i], name="C")
        mod = ember.build(te.create_schedule(C.op), [A, B, C], name="vecadd")
        mod.export_library(self.lib_path(n))
        return self.lib_path(n)

    def connect(self, port: int = 0):
        return self.rpc.connect("127.0.0.1", port or self.port)

    def ping(self, sess) -> None:
        sess.listdir()

    def close(self, sess) -> None:
        sess.close()

    def upload(self, sess, path: str) -> None:
        sess.upload(path)

    def download(self, sess, name: str) -> bytes:
        return sess.download(name)

    def load(self, sess, name: str):
        return sess.load_module(name)

    def to_remote(self, sess, x: np.ndarray):
        return self.rt.array(x, device=sess.cpu(0))

    def copy_in(self, array, x: np.ndarray) -> None:
        array.copyfrom(x)

    def time_local(self, n: int, args: list[np.ndarray], opts: dict) -> float:
        mod = self.rt.load_module(self.libs[n])
        arrays = [self.rt.array(x) for x in args]
        seconds = mod.time_evaluator("vecadd", self.rt.cpu(), **opts)(*arrays).median
        check(arrays[2].numpy(), args[0] + args[1], "vecadd's result")
        return seconds

    def time_remote(self, sess, module, args: list, opts: dict) -> float:
        return module.time_evaluator("vecadd", sess.cpu(0), **opts)(*args).median


class Tvm(Runtime):
    name = "apache-tvm"

    def __init__(self, workdir: str, sizes: tuple[int, ...]):
        import tvm
        import tvm.rpc

        self.tvm = tvm
        super().__init__(workdir, sizes)

    def server_command(self) -> list[str]:
        # TVM binds the first free port from the one it is given
        port = free_port()
        return [sys.executable, "-c", TVM_SERVER, str(port), str(port + 100)]

    def export_vecadd(self, n: int) -> str:
        from tvm import te

        A = te.placeholder((n,), name="A")
        B = te.placeholder((n,), name="B")
        C = te.compute((n,), lambda i: A[i] + B[i], name="C")
        prim = te.create_prim_func([A, B, C]).with_attr("global_symbol", "vecadd")
        lib = self.tvm.compile(self.tvm.IRModule({"vecadd": prim}), target=tvm_target())
        lib.export_library(self.lib_path(n))
        return self.lib_path(n)

    def connect(self, port: int = 0):
        return self.tvm.rpc.connect("127.0.0.1", port or self.port)

    def ping(self, sess) -> None:
        sess.get_function("tvm.rpc.server.workpath")

    def close(self, sess) -> None:
        pass  # a tvm session closes when its last reference goes

    def upload(self, sess, path: str) -> None:
        sess.upload(path)

    def download(self, sess, name: str) -> bytes:
        return bytes(sess.download(name))

    def load(self, sess, name: str):
        return sess.load_module(name)

    def to_remote(self, sess, x: np.ndarray):
        return self.tvm.runtime.tensor(x, sess.cpu(0))

    def copy_in(self, array, x: np.ndarray) -> None:
        array.copyfrom(x)

    def time_local(self, n: int, args: list[np.ndarray], opts: dict) -> float:
        mod = self.tvm.runtime.load_module(self.libs[n])
        dev = self.tvm.cpu()
        arrays = [self.tvm.runtime.tensor(x, dev) for x in args]
        seconds = mod.time_evaluator("vecadd", dev, **opts)(*arrays).median
        check(arrays[2].numpy(), args[0] + args[1], "vecadd's result")
        return seconds

    def time_remote(self, sess, module, args: list, opts: dict) -> float:
        return module.time_evaluator("vecadd", sess.cpu(0), **opts)(*args).median


@dataclass
class Config:
    quick: bool
    min_time: float
    repeat: int
    transfer: int  # bytes
    big: int  # elements of the larger time_evaluator kernel
    calls: int  # per concurrent client
    budget: float

    def measure(self, fn: Callable[[], object]) -> float:
        """Median seconds a call of ``fn`` (after one warm-up call)."""
        return measure(fn, self.min_time, self.repeat, self.budget).median


class Skipped(Exception):
    """A cell not measured in this mode."""


def inputs(n: int, seed: int = 0) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    a, b = (rng.standard_normal(n).astype("float32") for _ in range(2))
    return [a, b, np.zeros(n, "float32")]


def check(got: np.ndarray, expected: np.ndarray, what: str) -> None:
    if not np.array_equal(got, expected):
        raise AssertionError(f"WRONG: {what} differs from numpy's")


def session_time(rt: Runtime, cfg: Config) -> float:
    def once() -> None:
        sess = rt.connect()
        rt.ping(sess)
        rt.close(sess)

    return cfg.measure(once) * 1e3


def remote_inputs(rt: Runtime, sess, n: int, seed: int = 0) -> list:
    return [rt.to_remote(sess, x) for x in inputs(n, seed)]


def checked_call(rt: Runtime, f, args: list) -> None:
    f(*args)
    a, b, c = (rt.to_numpy(x) for x in args)
    check(c, a + b, "vecadd's result")


def call_time(rt: Runtime, cfg: Config) -> float:
    sess, module = rt.loaded(16)
    args = remote_inputs(rt, sess, 16)
    f = module["vecadd"]
    checked_call(rt, f, args)
    seconds = cfg.measure(lambda: f(*args))
    rt.close(sess)
    return seconds * 1e6


def evaluator_opts(cfg: Config) -> dict:
    # number grows until a repeat lasts min_repeat_ms (tvm takes whole ms)
    ms = max(1, round(cfg.min_time * 1e3))
    return {"number": 1, "repeat": cfg.repeat, "min_repeat_ms": ms}


def time_local(n: int) -> Callable[[Runtime, Config], float]:
    def run(rt: Runtime, cfg: Config) -> float:
        return rt.time_local(n, inputs(n), evaluator_opts(cfg)) * 1e6

    return run


def time_remote(n: int) -> Callable[[Runtime, Config], float]:
    def run(rt: Runtime, cfg: Config) -> float:
        sess, module = rt.loaded(n)
        args = remote_inputs(rt, sess, n)
        checked_call(rt, module["vecadd"], args)
        seconds = rt.time_remote(sess, module, args, evaluator_opts(cfg))
        rt.close(sess)
        return seconds * 1e6

    return run


def file_rate(direction: str) -> Callable[[Runtime, Config], float]:
    def run(rt: Runtime, cfg: Config) -> float:
        path = os.path.join(rt.workdir, f"blob_{rt.name}.bin")
        data = np.random.default_rng(1).bytes(cfg.transfer)
        with open(path, "wb") as f:
            f.write(data)
        name = os.path.basename(path)
        sess = rt.connect()
        rt.upload(sess, path)
        if rt.download(sess, name) != data:
            raise AssertionError("WRONG: the file came back different")
        if direction == "up":
            seconds = cfg.measure(lambda: rt.upload(sess, path))
        else:
            seconds = cfg.measure(lambda: rt.download(sess, name))
        rt.close(sess)
        return cfg.transfer / seconds / 1e6

    return run


def array_rate(direction: str) -> Callable[[Runtime, Config], float]:
    def run(rt: Runtime, cfg: Config) -> float:
        x = np.random.default_rng(2).standard_normal(cfg.transfer // 4)
        x = x.astype("float32")
        sess = rt.connect()
        array = rt.to_remote(sess, np.zeros_like(x))
        rt.copy_in(array, x)
        check(rt.to_numpy(array), x, "the array copied there and back")
        if direction == "in":
            seconds = cfg.measure(lambda: rt.copy_in(array, x))
        else:
            seconds = cfg.measure(lambda: rt.to_numpy(array))
        rt.close(sess)
        return cfg.transfer / seconds / 1e6

    return run


def concurrent_rate(servers: str) -> Callable[[Runtime, Config], float]:
    """CLIENTS threads at once, each a session of its own (on one server, or
    on a server each), doing cfg.calls calls: all calls / wall time."""

    def run(rt: Runtime, cfg: Config) -> float:
        if servers == "each" and cfg.quick:
            raise Skipped(f"skipped (--quick: starting {CLIENTS} servers is slow)")
        ports = rt.servers(CLIENTS) if servers == "each" else [rt.port] * CLIENTS
        errors: list[str] = []

        def client(i: int) -> None:
            try:
                sess, module = rt.loaded(16, ports[i])
                f = module["vecadd"]
                args = remote_inputs(rt, sess, 16, seed=i)
                for _ in range(cfg.calls - 1):
                    f(*args)
                checked_call(rt, f, args)
                rt.close(sess)
            except Exception as e:
                errors.append(f"client {i}: {type(e).__name__}: {e}")

        threads = [threading.Thread(target=client, args=(i,)) for i in range(CLIENTS)]
        start = time.perf_counter()
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        wall = time.perf_counter() - start
        if errors:
            raise RuntimeError(
                f"{len(errors)} of {CLIENTS} clients failed: {errors[0]}"
            )
        return CLIENTS * cfg.calls / wall

    return run


@dataclass
class Metric:
    """A row: how to measure it on one runtime, or (``ratio_of``) the ratio of
    two rows above it. ``lower_is_better`` orients the ember vs tvm column
    (None: no such column)."""

    label: str
    unit: str
    run: Callable[[Runtime, Config], float] | None = None
    lower_is_better: bool | None = True
    ratio_of: tuple[str, str] = ("", "")


def metrics(cfg: Config) -> list[Metric]:
    mib = f"{cfg.transfer / (1 << 20):g} MiB"
    big = f"{cfg.big >> 20}M" if cfg.big >= 1 << 20 else f"{cfg.big >> 10}K"
    calls = f"{CLIENTS} clients x {cfg.calls} calls"
    rows = [
        Metric("session: connect, 1 request, close", "ms", session_time),
        Metric("call vecadd n=16, round trip", "us", call_time),
    ]
    for n, name in ((16, "16"), (cfg.big, big)):
        local, remote = (
            f"time_evaluator n={name}, local",
            f"time_evaluator n={name}, remote",
        )
        rows += [
            Metric(local, "us", time_local(n)),
            Metric(remote, "us", time_remote(n)),
            Metric(
                f"time_evaluator n={name}, remote/local",
                "x",
                None,
                None,
                (remote, local),
            ),
        ]
    return rows + [
        Metric(f"upload {mib}", "MB/s", file_rate("up"), False),
        Metric(f"download {mib}", "MB/s", file_rate("down"), False),
        Metric(f"copy-in {mib} array", "MB/s", array_rate("in"), False),
        Metric(f"copy-out {mib} array", "MB/s", array_rate("out"), False),
        Metric(f"{calls}, one server", "calls/s", concurrent_rate("one"), False),
        Metric(f"{calls}, a server each", "calls/s", concurrent_rate("each"), False),
    ]


Value = float | str  # a figure, or why there is none: "failed (...)"


def first_line(e: BaseException) -> str:
    text = f"{type(e).__name__}: {e}".splitlines()[0]
    return text if len(text) < 120 else text[:117] + "..."


def start(kind: type[Runtime], workdir: str, sizes) -> Runtime | str:
    """A runtime with its server running, or why not ("not installed (tvm)")."""
    try:
        return kind(workdir, sizes)
    except ImportError as e:
        return f"not installed ({e.name or e})"
    except Exception as e:
        return f"failed ({first_line(e)})"


def evaluate(
    metric: Metric, rt: Runtime | str, cfg: Config, table: dict, i: int
) -> Value:
    if isinstance(rt, str):
        return rt
    if metric.run is None:
        over, under = (table[label][i] for label in metric.ratio_of)
        ok = not isinstance(over, str) and not isinstance(under, str)
        return over / under if ok else "-"
    try:
        return metric.run(rt, cfg)
    except Skipped as e:
        return str(e)
    except Exception as e:
        return f"failed ({first_line(e)})"


def main(argv: list[str] | None = None) -> dict[str, list[Value]]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small and short")
    parser.add_argument(
        "--transfer-mib", type=float, default=None, help="transfer size (default 16)"
    )
    parser.add_argument(
        "--calls", type=int, default=None, help="calls per concurrent client"
    )
    add_timing_options(parser)
    opts = parser.parse_args(argv)
    timing = timing_options(opts)
    mib = (
        opts.transfer_mib if opts.transfer_mib is not None else 1 if opts.quick else 16
    )
    cfg = Config(
        opts.quick,
        timing["min_time"],
        timing["repeat"],
        int(mib * (1 << 20)) // 4 * 4,
        1 << (16 if opts.quick else 20),
        opts.calls if opts.calls is not None else 20 if opts.quick else 500,
        budget=0.5 if opts.quick else 2.0,
    )
    if cfg.transfer < 4 or cfg.calls < 1:
        parser.error("--transfer-mib and --calls must be positive")
    print("RPC: ember vs apache-tvm, each against its own server on loopback")
    print(describe_machine())
    rows = metrics(cfg)
    table: dict[str, list[Value]] = {}
    with tempfile.TemporaryDirectory(prefix="ember-rpc-bench-") as workdir:
        runtimes = [start(kind, workdir, (16, cfg.big)) for kind in (Ember, Tvm)]
        try:
            for rt in runtimes:
                if isinstance(rt, Tvm):
                    print(f"apache-tvm {rt.tvm.__version__}, its Python RPC server")
            for metric in rows:
                print(f"  {metric.label} ...", flush=True)
                table[metric.label] = [
                    evaluate(metric, rt, cfg, table, i) for i, rt in enumerate(runtimes)
                ]
        finally:
            for rt in runtimes:
                if isinstance(rt, Runtime):
                    rt.stop()
    print_table(rows, table)
    return table


def cell(value: Value, unit: str) -> str:
    if isinstance(value, str):
        return value.split(" (")[0]
    digits = max(1, 3 - int(math.log10(value))) if value > 0 else 3
    return f"{value:.{digits}f} {unit}"


def ratio(metric: Metric, ember: Value, tvm: Value) -> str:
    if metric.lower_is_better is None or isinstance(ember, str) or isinstance(tvm, str):
        return "-"
    return f"{tvm / ember if metric.lower_is_better else ember / tvm:.2f}x"


def print_table(rows: list[Metric], table: dict[str, list[Value]]) -> None:
    width = max(len("measure"), *(len(m.label) for m in rows))
    head = (
        f"{'measure':<{width}}  {'ember':>15}  {'apache-tvm':>15}  "
        f"{'ember vs tvm':>12}  notes"
    )
    print()
    print(head)
    print("-" * len(head))
    for m in rows:
        ember, tvm = table[m.label]
        notes = "; ".join(
            f"{who}: {v.split(' (', 1)[1][:-1]}"
            for who, v in (("ember", ember), ("tvm", tvm))
            if isinstance(v, str) and " (" in v and not v.startswith("not installed")
        )
        print(
            f"{m.label:<{width}}  {cell(ember, m.unit):>15}  {cell(tvm, m.unit):>15}  "
            f"{ratio(m, ember, tvm):>12}  {notes}".rstrip()
        )
    print(
        "ms, us: median of repeated measurements; MB/s: size / median time; "
        "calls/s: all calls / wall time, sessions' setup included; ember vs tvm: "
        "tvm's time / ember's, or ember's rate / tvm's (above 1: ember is faster); "
        "remote/local: the server's time_evaluator / this process's (1: they agree)."
    )


if __name__ == "__main__":
    main()
