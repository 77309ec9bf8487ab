"""A model library run kernel by kernel, from the call plan in its metadata:
where the time goes (``GraphModule.profile``, ``ember run --profile``) and
each kernel's result (what ``ember debug`` compares).

The plan is the ``"calls"`` list of the metadata's ``"model"``, written by the
compiler's ``graph-plan-memory``: every kernel call of ``default_run``, in
order::

    {"kernel": "ember_conv2d_relu_<hash>",       # its bare-pointer symbol
     "args": [{"buffer": "input" | "output" | "workspace" | "params",
               "index": i,                        # inputs and outputs only
               "offset": bytes, "shape": [...], "dtype": "float32"}, ...],
     "result": 2,                                 # which arg it writes
     "ops": [{"op": "graph.conv2d", "nodes": ["conv1"], "tensor": "c1"}, ...],
     "layout": "NCHW16c"}                         # a blocked result only

Scratch buffers follow the result. ``nodes`` and ``tensor`` (the source
model's node names, and the tensor the op's result is) are there in libraries
built with ``ember-compile --debug``. A kernel takes one pointer per argument
(``void f(void*, ...)``): the runtime finds its symbol in the library
(``Module.symbol_address``; a library exports its kernels) and calls it through
ctypes, each pointer checked to lie with its extent inside its buffer, so a
damaged plan is an ``EmberError``, never a write out of bounds. Running the
calls in order is exactly what ``default_run`` does, so the outputs are the
same, bit for bit.
"""

import ctypes
import gc
import json
import math
import os
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from typing import Any

import numpy as np

from .errors import EmberError, EmberValueError
from .shape_expr import evaluate, parse

BUFFERS = ("input", "output", "workspace", "params")
"""Where a kernel argument lives."""


class KernelCall:
    """One kernel call of the plan, bound to an executor's buffers.

    Attributes:
        index: its position in the plan.
        kernel: the kernel's symbol.
        ops: the graph ops it computes (``{"op", "nodes"?, "tensor"?}``).
        layout: its result's layout when blocked (``"NCHW16c"``), else None.
    """

    def __init__(self, index: int, entry: dict, fn, pointers, result: np.ndarray):
        self.index = index
        self.kernel: str = entry["kernel"]
        self.ops: list[dict] = entry.get("ops", [])
        self.layout: str | None = entry.get("layout")
        self._fn = fn
        self._pointers = pointers
        self._result = result

    def __call__(self) -> None:
        self._fn(*self._pointers)  # buffers, then the size symbols' values

    def result(self) -> np.ndarray:
        """A copy of the result buffer as the kernel wrote it (blocked
        layouts as they are)."""
        return self._result.copy()

    def op_names(self) -> str:
        """Its graph ops, ``conv2d+relu``."""
        return "+".join(o["op"].removeprefix("graph.") for o in self.ops) or "-"

    def nodes(self) -> list[str]:
        """The source nodes of its ops, where the plan names them."""
        return [n for o in self.ops for n in o.get("nodes", [])]


def plan_of(lib) -> list[dict]:
    """The call plan of a model library, checked for shape.

    Raises:
        EmberError: the library has no plan (compiled before plans existed),
            or it is malformed.
    """
    model = lib.metadata.get("model") or {}
    calls = model.get("calls")
    if not isinstance(calls, list):
        raise EmberError(
            f"{lib._describe()} has no kernel call plan in its metadata; "
            "compile it again with this version of ember"
        )
    for i, entry in enumerate(calls):
        where = f"{lib._describe()}: calls[{i}]"
        if not isinstance(entry, dict) or not isinstance(entry.get("kernel"), str):
            raise EmberError(f'{where}: expected an object with a "kernel" name')
        args = entry.get("args")
        result = entry.get("result")
        if not isinstance(args, list) or type(result) is not int:
            raise EmberError(f'{where}: expected "args" and a "result" index')
        if not 0 <= result < len(args):
            raise EmberError(f"{where}: result {result} is not one of its arguments")
    return calls


def bind(executor, inputs: Sequence, outputs: Sequence) -> list[KernelCall]:
    """The executor's plan bound to ``inputs``, ``outputs`` (arrays, as
    ``GraphExecutor.running`` gives them), its workspace and params.

    Raises:
        EmberError: the plan is malformed, an argument lies outside its
            buffer, or the library lacks a kernel's symbol.
    """
    lib = executor.lib
    buffers = {
        "input": [_bytes(a) for a in inputs],
        "output": [_bytes(a) for a in outputs],
        "workspace": [_bytes(executor._workspace)],
        "params": [_bytes(executor._params)],
    }
    dims = executor._dims  # a symbolic model: the inputs' shapes bind the sizes
    env = dims.bind([np.shape(a) for a in inputs]) if dims is not None else {}
    calls = []
    for i, entry in enumerate(plan_of(lib)):
        address = lib.symbol_address(entry["kernel"])
        if not address:
            raise EmberError(
                f"{lib._describe()} does not export kernel {entry['kernel']} "
                f"(calls[{i}] of its plan)"
            )
        views = [
            _view(buffers, arg, f"calls[{i}].args[{j}]", env)
            for j, arg in enumerate(entry["args"])
        ]
        sizes = [_size(name, env, f"calls[{i}]") for name in entry.get("symbols", [])]
        pointers = [v.__array_interface__["data"][0] for v in views] + sizes
        types = [ctypes.c_void_p] * len(views) + [ctypes.c_int64] * len(sizes)
        fn = ctypes.CFUNCTYPE(None, *types)(address)
        calls.append(KernelCall(i, entry, fn, pointers, views[entry["result"]]))
    return calls


def _size(name: object, env: dict, where: str) -> int:
    if not isinstance(name, str) or name not in env:
        raise EmberError(f"{where}: the size symbol {name!r} is not the model's")
    return env[name]


def _value(dim: Any, env: dict, where: str) -> Any:
    """An offset or dim of the plan: an int, or an expression's text
    evaluated with the symbols' values (a symbolic model)."""
    if not isinstance(dim, str):
        return dim
    try:
        return evaluate(parse(dim), env)
    except EmberValueError as e:
        raise EmberError(f"{where}: {e}") from None


def _bytes(array) -> np.ndarray:
    return np.asarray(array).reshape(-1).view(np.uint8)


def _view(buffers: dict, arg: dict, where: str, env: dict) -> np.ndarray:
    """The bytes of ``arg`` in its buffer, as an array of its shape."""
    try:
        kind, offset = arg["buffer"], _value(arg["offset"], env, where)
        dtype = np.dtype(arg["dtype"])
        shape = tuple(_value(d, env, where) for d in arg["shape"])
        index = arg.get("index", 0)
    except (KeyError, TypeError) as e:
        raise EmberError(f"{where}: malformed argument {arg!r}: {e}") from None
    if kind not in BUFFERS or type(index) is not int:
        raise EmberError(f"{where}: unknown buffer {kind!r} (index {index!r})")
    if not 0 <= index < len(buffers[kind]):
        raise EmberError(f"{where}: the model has no {kind} {index}")
    if type(offset) is not int or not all(type(n) is int and n > 0 for n in shape):
        raise EmberError(f"{where}: expected an offset and positive extents")
    buffer = buffers[kind][index]
    nbytes = math.prod(shape) * dtype.itemsize
    if offset < 0 or offset + nbytes > buffer.size:
        raise EmberError(
            f"{where}: {nbytes} bytes at {offset} lie outside the {kind} "
            f"({buffer.size} bytes)"
        )
    return buffer[offset : offset + nbytes].view(dtype).reshape(shape)


@contextmanager
def _no_gc() -> Iterator[None]:
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def profile(executor, repeat: int = 10) -> "Profile":
    """Run the executor's model ``repeat`` times kernel by kernel on its
    current inputs (after one run to warm up) and time every call.

    Raises:
        EmberError: as ``run`` (another thread's inputs, params missing), or
            the library has no usable plan.
    """
    if repeat < 1:
        raise EmberError(f"profile: repeat must be at least 1, got {repeat}")
    with executor.running("profile") as (inputs, outputs):
        calls = bind(executor, inputs, _sized(executor, inputs, outputs))
        clock = time.perf_counter_ns
        start = clock()
        times = np.zeros((repeat, len(calls)), np.int64)
        begins = np.zeros((repeat, len(calls)), np.int64)
        with _no_gc():
            for call in calls:  # warm up
                call()
            for r in range(repeat):
                for i, call in enumerate(calls):
                    t0 = clock()
                    call()
                    t1 = clock()
                    begins[r, i], times[r, i] = t0 - start, t1 - t0
            whole = []
            for _ in range(repeat):
                t0 = clock()
                executor._run_model(inputs, outputs)
                whole.append(clock() - t0)
    return Profile(executor.lib._describe(), calls, begins, times, whole)


def _sized(executor, inputs: list, outputs: list) -> list:
    """The outputs to run kernel by kernel into: a symbolic model's, and its
    workspace, allocated for the inputs' shapes by one whole run."""
    if executor._dims is None:
        return outputs
    executor._run_model(inputs, outputs)
    return list(executor._outputs)


def results(executor) -> list[tuple[KernelCall, np.ndarray]]:
    """Run the executor's model once kernel by kernel on its current inputs,
    and return each call with a copy of its result as it left it."""
    with executor.running("results") as (inputs, outputs):
        out = []
        for call in bind(executor, inputs, _sized(executor, inputs, outputs)):
            call()
            out.append((call, call.result()))
        return out


class Profile:
    """Where a model's time goes: each kernel call of ``repeat`` runs, timed.

    ``str(profile)`` (or ``table()``) is a table of the kernels, the slowest
    first: calls, total and mean time, share of the time in kernels, and the
    graph ops (and, in ``--debug`` libraries, source nodes) each holds.
    ``trace()`` is a Chrome trace (Perfetto, ``chrome://tracing``).

    Attributes:
        library: the library's description.
        calls: the ``KernelCall``s of one run, in order.
        runs: how many runs were timed.
        seconds: the kernels' time per run (their sum), median over runs.
        run_seconds: ``run()``'s own time (``default_run``), median.

    Example:
        >>> p = gm.profile(repeat=20)  # doctest: +SKIP
        >>> print(p)  # doctest: +SKIP
        >>> p.save_trace("trace.json")  # doctest: +SKIP
    """

    def __init__(self, library: str, calls, begins, times, whole: Sequence[int]):
        self.library = library
        self.calls: list[KernelCall] = list(calls)
        self.runs = times.shape[0]
        self._begins, self._times = begins, times
        self.seconds = float(np.median(times.sum(axis=1))) * 1e-9
        self.run_seconds = float(np.median(whole)) * 1e-9

    def rows(self) -> list[dict]:
        """One dict per kernel, the most time first: ``kernel``, ``calls``
        (over all runs), ``total_s``, ``mean_s`` (per call), ``share`` (of
        the time in kernels), ``ops`` (``conv2d+relu``) and ``nodes``."""
        total = max(int(self._times.sum()), 1)
        rows: dict[str, dict] = {}
        for i, call in enumerate(self.calls):
            row = rows.setdefault(
                call.kernel,
                {
                    "kernel": call.kernel,
                    "calls": 0,
                    "ns": 0,
                    "ops": call.op_names(),
                    "nodes": [],
                },
            )
            row["calls"] += self.runs
            row["ns"] += int(self._times[:, i].sum())
            row["nodes"] += [n for n in call.nodes() if n not in row["nodes"]]
        out = []
        for row in rows.values():
            ns = row.pop("ns")
            row["total_s"], row["mean_s"] = ns * 1e-9, ns * 1e-9 / row["calls"]
            row["share"] = ns / total
            out.append(row)
        return sorted(out, key=lambda r: -r["total_s"])

    def table(self) -> str:
        """The kernels as a text table (see the class docstring)."""
        rows = self.rows()
        width = max([len("kernel"), *(len(r["kernel"]) for r in rows)])
        lines = [
            f"{'kernel':<{width}}  {'calls':>6}  {'total ms':>9}  {'mean us':>9}  "
            f"{'share':>6}  graph ops (nodes)"
        ]
        for r in rows:
            nodes = r["nodes"]
            shown = ", ".join(nodes[:3]) + (", ..." if len(nodes) > 3 else "")
            lines.append(
                f"{r['kernel']:<{width}}  {r['calls']:>6}  "
                f"{r['total_s'] * 1e3:>9.3f}  {r['mean_s'] * 1e6:>9.1f}  "
                f"{r['share']:>6.1%}  {r['ops']}" + (f" ({shown})" if nodes else "")
            )
        lines.append(
            f"{len(self.calls)} kernel calls per run, {self.runs} runs: "
            f"{self.seconds * 1e3:.3f} ms per run kernel by kernel (median), "
            f"run() {self.run_seconds * 1e3:.3f} ms"
        )
        return "\n".join(lines)

    __str__ = table

    def trace(self) -> dict:
        """The timed calls in Chrome's trace-event format (a JSON object;
        Perfetto and ``chrome://tracing`` open it): one complete ("X") event
        per run and one per kernel call inside it, timestamps and durations
        in microseconds, each call's graph ops, nodes and position in
        ``args``."""
        pid, events = os.getpid(), []
        for r in range(self.runs):
            begin = int(self._begins[r, 0])
            end = int(self._begins[r, -1] + self._times[r, -1])
            events.append(
                _event(f"run {r}", "run", begin, end - begin, pid, {"run": r})
            )
            for i, call in enumerate(self.calls):
                args = {"run": r, "call": i, "ops": call.op_names()}
                if call.nodes():
                    args["nodes"] = ", ".join(call.nodes())
                events.append(
                    _event(
                        call.kernel,
                        "kernel",
                        int(self._begins[r, i]),
                        int(self._times[r, i]),
                        pid,
                        args,
                    )
                )
        return {
            "traceEvents": events,
            "displayTimeUnit": "ms",
            "otherData": {"library": self.library, "runs": self.runs},
        }

    def save_trace(self, path: str | os.PathLike) -> None:
        """Write ``trace()`` as JSON to ``path``."""
        with open(path, "w") as f:
            json.dump(self.trace(), f)


def _event(name: str, cat: str, ns: int, dur_ns: int, pid: int, args: dict) -> dict:
    return {
        "name": name,
        "cat": cat,
        "ph": "X",
        "ts": ns / 1e3,
        "dur": dur_ns / 1e3,
        "pid": pid,
        "tid": 0,
        "args": args,
    }


__all__ = ["KernelCall", "Profile", "bind", "plan_of", "profile", "results"]
