"""Where a wrong result comes from: a compiled model run kernel by kernel, each
kernel's result compared with onnxruntime's value of the same ONNX tensor.

    report = ember.debug.compare("model.onnx", inputs={"x": x})
    print(report)            # one line per kernel call, then the verdict
    report.first             # the first kernel whose result differs, or None

The model is compiled now with `compile_model(debug=True)`, or a library built
by `ember-compile --debug` is given: its call plan (`graph-plan-memory{debug}`)
names, for every kernel call, the graph ops it computes, their ONNX nodes and
the ONNX tensor its result is. The runtime runs the calls one at a time
(`ember.runtime.graph_steps.results`), and onnxruntime runs the ONNX model with
those tensors added as graph outputs. A blocked result (`NCHW16c`: the buffer
is (N, C/b, H, W, b)) is converted to NCHW first. A kernel whose result is no
ONNX tensor (a folded batch norm's convolution, a copy of an output, a tensor
the frontend split across kernels) is not compared, and the report says so.
Errors propagate, so the first kernel that differs is where to look.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ember.runtime import EmberError, GraphModule, Module, cpu, load_module
from ember.runtime.graph_steps import KernelCall, results


@dataclass
class KernelCheck:
    """One kernel call compared.

    Attributes:
        index: the call's position in the model's run.
        kernel: the kernel's symbol.
        ops: the graph ops it computes (`{"op", "nodes", "tensor"}`).
        tensor: the ONNX tensor its result was compared with, or None.
        status: "ok", "differs" or "not compared".
        error: the largest absolute difference (None if not compared).
        scale: the largest absolute expected value.
        note: why it was not compared, or what differs.
    """

    index: int
    kernel: str
    ops: list[dict]
    tensor: str | None
    status: str
    error: float | None = None
    scale: float = 0.0
    note: str = ""

    def nodes(self) -> list[str]:
        """The ONNX nodes of its ops."""
        return [n for o in self.ops for n in o.get("nodes", [])]

    def describe(self) -> str:
        """`call 3 ember_dense_<hash> (graph.dense; ONNX node 'fc')`."""
        ops = ", ".join(o["op"] for o in self.ops) or "no graph op"
        nodes = self.nodes()
        where = f"; ONNX node {', '.join(map(repr, nodes))}" if nodes else ""
        return f"call {self.index} {self.kernel} ({ops}{where})"


@dataclass
class DebugReport:
    """Every kernel call of a run, compared in order (see the module docstring).

    Attributes:
        checks: one `KernelCheck` per kernel call.
        rtol, atol: a result differs where max |got - expected| > atol + rtol *
            max |expected| (integers and booleans: any difference).
    """

    checks: list[KernelCheck] = field(default_factory=list)
    rtol: float = 1e-4
    atol: float = 1e-5

    @property
    def first(self) -> KernelCheck | None:
        """The first kernel call whose result differs, or None."""
        return next((c for c in self.checks if c.status == "differs"), None)

    def verdict(self) -> str:
        """One line: the first kernel that differs, with its error, or that
        every compared result matches."""
        compared = sum(c.status != "not compared" for c in self.checks)
        first = self.first
        if first is None:
            return (
                f"all {compared} compared kernel results match onnxruntime "
                f"({len(self.checks) - compared} not comparable)"
            )
        return (
            f"first difference: {first.describe()}: tensor {first.tensor!r} "
            f"{first.note}"
        )

    def __str__(self) -> str:
        lines = []
        for c in self.checks:
            error = "-" if c.error is None else f"{c.error:.3g}"
            tensor = f" -> {c.tensor!r}" if c.tensor else ""
            note = f"  ({c.note})" if c.status == "not compared" else ""
            lines.append(
                f"{c.index:>4}  {c.status:<12}  max err {error:>9}  "
                f"{c.kernel}{tensor}{note}"
            )
        lines.append(self.verdict())
        return "\n".join(lines)


def compare(
    model: Any,
    inputs: Mapping[str, np.ndarray] | None = None,
    library: str | os.PathLike | Module | None = None,
    rtol: float = 1e-4,
    atol: float = 1e-5,
    shape: Mapping[str, Any] | None = None,
    seed: int = 0,
) -> DebugReport:
    """Run a compiled ONNX model kernel by kernel and compare every kernel's
    result with onnxruntime's value of the ONNX tensor it computes.

    Args:
        model: the ONNX model (a path or a `ModelProto`): onnxruntime's
            reference, and what is compiled when `library` is None.
        inputs: input arrays by name; inputs not given are random (seeded by
            `seed`), the same for both runs.
        library: a model library built by `ember-compile --debug` (a path
            or a loaded module), or None to compile `model` now.
        rtol, atol: the tolerance (see `DebugReport`).
        shape: input shapes, for models with symbolic dimensions.

    Returns:
        A `DebugReport`; `report.first` is the first kernel that differs.

    Raises:
        EmberError: the library's plan names no ONNX tensors (not built with
            `--debug`), or its inputs are not the model's.

    Example:
        >>> r = compare("model.onnx", {"x": x})  # doctest: +SKIP
        >>> r.first.describe()  # doctest: +SKIP
        "call 3 ember_dense_c805cc52f619f2b3 (graph.dense; ONNX node 'fc')"
    """
    from ember.frontends.onnx import load_model

    proto, _ = load_model(model)
    if library is None:
        from ember.compiler.model import compile_model

        lib: Module = compile_model(proto, shape=shape, debug=True)
    elif isinstance(library, Module):
        lib = library
    else:
        lib = load_module(library)
    gm = GraphModule(lib["default"](cpu()))
    feeds = _inputs(lib.metadata["model"]["inputs"], inputs or {}, seed)
    gm.set_input(**feeds)
    calls = results(gm.module)
    tensors = [_tensor(call) for call, _ in calls]
    if not any(tensors):
        raise EmberError(
            "the library's call plan names no ONNX tensors: build it with "
            "`ember-compile --debug` (compile_model(debug=True))"
        )
    expected = _reference(proto, feeds, [t for t in tensors if t])
    report = DebugReport(rtol=rtol, atol=atol)
    for (call, got), tensor in zip(calls, tensors, strict=True):
        report.checks.append(_check(call, got, tensor, expected, rtol, atol))
    return report


def _inputs(
    specs: list[dict], given: Mapping[str, np.ndarray], seed: int
) -> dict[str, np.ndarray]:
    names = [t["name"] for t in specs]
    unknown = sorted(set(given) - set(names))
    if unknown:
        raise EmberError(
            f"the model has no input {unknown[0]!r}; its inputs are "
            f"{', '.join(map(repr, names))}"
        )
    rng = np.random.default_rng(seed)
    feeds = {}
    for t in specs:
        shape, dtype = tuple(t["shape"]), np.dtype(t["dtype"])
        if t["name"] in given:
            feeds[t["name"]] = np.asarray(given[t["name"]])
        elif dtype == np.bool_:
            feeds[t["name"]] = rng.integers(0, 2, shape).astype(bool)
        elif dtype.kind in "iu":
            feeds[t["name"]] = rng.integers(0, 10, shape).astype(dtype)
        else:
            feeds[t["name"]] = rng.standard_normal(shape).astype(dtype)
    return feeds


def _tensor(call: KernelCall) -> str | None:
    """The ONNX tensor a call's result is: that of its last graph op."""
    return call.ops[-1].get("tensor") if call.ops else None


def _reference(proto, feeds: dict, tensors: list[str]) -> dict[str, np.ndarray]:
    """onnxruntime's values of `tensors`, added as graph outputs."""
    import onnx
    import onnxruntime as ort

    model = onnx.ModelProto()
    model.CopyFrom(proto)
    typed = {v.name: v for v in model.graph.value_info}
    try:
        typed.update(
            {
                v.name: v
                for v in onnx.shape_inference.infer_shapes(model).graph.value_info
            }
        )
    except Exception:  # shape inference is a help here, not a requirement
        pass
    present = {o.name for o in model.graph.output}
    known = {o for n in model.graph.node for o in n.output}
    for name in dict.fromkeys(tensors):
        if name not in present and name in known:
            model.graph.output.append(typed.get(name) or onnx.ValueInfoProto(name=name))
    session = ort.InferenceSession(
        model.SerializeToString(), providers=["CPUExecutionProvider"]
    )
    names = [o.name for o in session.get_outputs()]
    values = session.run(names, feeds)
    return {n: np.asarray(v) for n, v in zip(names, values, strict=True)}


def _check(
    call: KernelCall,
    got: np.ndarray,
    tensor: str | None,
    expected: dict[str, np.ndarray],
    rtol: float,
    atol: float,
) -> KernelCheck:
    check = KernelCheck(call.index, call.kernel, call.ops, tensor, "not compared")
    if tensor is None:
        check.note = "its result is no ONNX tensor"
        return check
    if tensor not in expected:
        check.note = f"the ONNX model has no tensor {tensor!r}"
        return check
    want = np.asarray(expected[tensor])
    if call.layout is not None:
        got = from_blocks(got)
    if got.size != want.size:
        check.note = f"shape {got.shape}, ONNX {want.shape}"
        return check
    got = got.reshape(want.shape)
    exact = want.dtype.kind in "biu"
    g, w = got.astype(np.float64), want.astype(np.float64)
    both_nan = np.isnan(g) & np.isnan(w)
    diff = np.where(both_nan, 0.0, np.abs(g - w))
    diff = np.where(np.isnan(diff), np.inf, diff)
    check.error = float(diff.max()) if diff.size else 0.0
    finite = np.abs(w[np.isfinite(w)])
    check.scale = float(finite.max()) if finite.size else 0.0
    tolerance = 0.0 if exact else atol + rtol * check.scale
    check.status = "differs" if check.error > tolerance else "ok"
    if check.status == "differs":
        at = np.unravel_index(int(np.argmax(diff)), diff.shape)
        check.note = (
            f"max abs error {check.error:.4g} at {tuple(int(i) for i in at)} "
            f"(got {g[at]:.6g}, onnxruntime {w[at]:.6g}; max |expected| "
            f"{check.scale:.4g}, tolerance {tolerance:.3g})"
        )
    return check


def from_blocks(x: np.ndarray) -> np.ndarray:
    """A blocked activation (N, C/b, H, W, b) as NCHW."""
    n, cb, h, w, b = x.shape
    return x.transpose(0, 1, 4, 2, 3).reshape(n, cb * b, h, w)


def load_inputs(path: str | os.PathLike) -> dict[str, np.ndarray]:
    """The arrays of an `.npz` file by name."""
    with np.load(Path(path), allow_pickle=False) as archive:
        return {k: archive[k] for k in archive.files}


__all__ = ["DebugReport", "KernelCheck", "compare", "from_blocks", "load_inputs"]
