"""Every distinct conv2d / dense layer of MobileNetV2 and ResNet-18 (batch 1, 224x224,
fp32): ember's topi kernels beside onnxruntime and PyTorch, one layer at a time.

    .venv/bin/python benchmarks/layers.py            # every layer
    .venv/bin/python benchmarks/layers.py --quick    # a few layers, short timing
    .venv/bin/python benchmarks/layers.py --only m.b7

Each layer is a convolution with a bias (onnxruntime: a single-node ONNX `Conv` or
`Gemm` with its weights as initializers; torch: `F.conv2d` / `F.linear`; ember: the
kernel `ember.topi.conv2d` / `dense` chooses, its weights packed at compile time,
outside the timed call). every result is checked against numpy's float64 result
before it is timed (a wrong one is not timed). A row shows
the median ms of each, ember's GFLOPS, the ratios ember / onnxruntime and ember /
torch (times: above 1 is slower), the kernel chosen and ember's build time. Each runtime runs all its layers before the
next starts (their thread pools spin after a call and would slow each other). The
summary weighs each layer by how often the model holds it: the models' conv and
dense time in each runtime, the goal being ember <= 2.5 x onnxruntime and below
torch (`--target-ratio`).
"""

from __future__ import annotations

import argparse
import time
from dataclasses import dataclass

import numpy as np
from common import (
    add_timing_options,
    cores,
    describe_machine,
    measure,
    threads_note,
    timing_options,
)


@dataclass(frozen=True)
class Layer:
    """One layer: conv2d (k > 0) or dense (k == 0: c inputs, o outputs)."""

    name: str
    c: int
    h: int
    o: int
    k: int = 1
    stride: int = 1
    groups: int = 1
    count: int = 1  # how many times the model holds this layer

    @property
    def pad(self) -> int:
        return self.k // 2

    @property
    def dense(self) -> bool:
        return self.k == 0

    @property
    def out_hw(self) -> int:
        return (self.h + 2 * self.pad - self.k) // self.stride + 1

    @property
    def flops(self) -> int:
        if self.dense:
            return 2 * self.c * self.o
        return 2 * self.o * self.out_hw**2 * (self.c // self.groups) * self.k**2

    def describe(self) -> str:
        if self.dense:
            return f"dense {self.c}->{self.o}"
        kind = "dw" if self.groups > 1 else f"{self.k}x{self.k}"
        return f"{kind} {self.c}->{self.o} @{self.h} s{self.stride}"


def _dw(name: str, c: int, h: int, stride: int = 1, count: int = 1) -> Layer:
    return Layer(name, c, h, c, 3, stride, c, count)


RESNET18 = [
    Layer("r.stem", 3, 224, 64, 7, 2),
    Layer("r.l1", 64, 56, 64, 3, 1, count=4),
    Layer("r.l2.s2", 64, 56, 128, 3, 2),
    Layer("r.l2.ds", 64, 56, 128, 1, 2),
    Layer("r.l2", 128, 28, 128, 3, 1, count=3),
    Layer("r.l3.s2", 128, 28, 256, 3, 2),
    Layer("r.l3.ds", 128, 28, 256, 1, 2),
    Layer("r.l3", 256, 14, 256, 3, 1, count=3),
    Layer("r.l4.s2", 256, 14, 512, 3, 2),
    Layer("r.l4.ds", 256, 14, 512, 1, 2),
    Layer("r.l4", 512, 7, 512, 3, 1, count=3),
    Layer("r.fc", 512, 1, 1000, 0),
]

MOBILENETV2 = [
    Layer("m.stem", 3, 224, 32, 3, 2),
    _dw("m.b0.dw", 32, 112),
    Layer("m.b0.pw", 32, 112, 16),
    Layer("m.b1.exp", 16, 112, 96),
    _dw("m.b1.dw", 96, 112, 2),
    Layer("m.b1.pw", 96, 56, 24),
    Layer("m.b2.exp", 24, 56, 144, count=2),
    _dw("m.b2.dw", 144, 56),
    Layer("m.b2.pw", 144, 56, 24),
    _dw("m.b3.dw", 144, 56, 2),
    Layer("m.b3.pw", 144, 28, 32),
    Layer("m.b4.exp", 32, 28, 192, count=3),
    _dw("m.b4.dw", 192, 28, count=2),
    Layer("m.b4.pw", 192, 28, 32, count=2),
    _dw("m.b6.dw", 192, 28, 2),
    Layer("m.b6.pw", 192, 14, 64),
    Layer("m.b7.exp", 64, 14, 384, count=4),
    _dw("m.b7.dw", 384, 14, count=4),
    Layer("m.b7.pw", 384, 14, 64, count=3),
    Layer("m.b10.pw", 384, 14, 96),
    Layer("m.b11.exp", 96, 14, 576, count=3),
    _dw("m.b11.dw", 576, 14, count=2),
    Layer("m.b11.pw", 576, 14, 96, count=2),
    _dw("m.b13.dw", 576, 14, 2),
    Layer("m.b13.pw", 576, 7, 160),
    Layer("m.b14.exp", 160, 7, 960, count=3),
    _dw("m.b14.dw", 960, 7, count=3),
    Layer("m.b14.pw", 960, 7, 160, count=2),
    Layer("m.b16.pw", 960, 7, 320),
    Layer("m.last", 320, 7, 1280),
    Layer("m.fc", 1280, 1, 1000, 0),
]

MODELS = {"MobileNetV2": MOBILENETV2, "ResNet-18": RESNET18}
QUICK = {"r.l3", "r.l4.ds", "m.b1.exp", "m.b2.dw", "m.b3.dw", "m.b11.pw", "m.fc"}


def reference(layer: Layer, x, w, b) -> np.ndarray:
    """numpy's float64 result (used when onnxruntime is not installed)."""
    x, w = x.astype(np.float64), w.astype(np.float64)
    if layer.dense:
        return (x @ w.T + b).astype(np.float32)
    p, s, k, oh = layer.pad, layer.stride, layer.k, layer.out_hw
    xp = np.pad(x, ((0, 0), (0, 0), (p, p), (p, p)))
    g = layer.groups
    ig, og = layer.c // g, layer.o // g
    y = np.zeros((1, layer.o, oh, oh))
    for i in range(k):
        for j in range(k):
            patch = xp[:, :, i : i + s * (oh - 1) + 1 : s, j : j + s * (oh - 1) + 1 : s]
            for gi in range(g):
                y[:, gi * og : (gi + 1) * og] += np.einsum(
                    "nchw,oc->nohw",
                    patch[:, gi * ig : (gi + 1) * ig],
                    w[gi * og : (gi + 1) * og, :, i, j],
                )
    return (y + b[None, :, None, None]).astype(np.float32)


def inputs(layer: Layer, rng: np.random.Generator):
    if layer.dense:
        x = rng.uniform(-1, 1, (1, layer.c))
        w = rng.uniform(-1, 1, (layer.o, layer.c)) / np.sqrt(layer.c)
    else:
        x = rng.uniform(-1, 1, (1, layer.c, layer.h, layer.h))
        fan_in = layer.c // layer.groups * layer.k**2
        w = rng.uniform(-1, 1, (layer.o, layer.c // layer.groups, layer.k, layer.k))
        w /= np.sqrt(fan_in)
    b = rng.uniform(-1, 1, layer.o)
    return x.astype(np.float32), w.astype(np.float32), b.astype(np.float32)


def out_shape(layer: Layer) -> tuple[int, ...]:
    return (1, layer.o) if layer.dense else (1, layer.o, layer.out_hw, layer.out_hw)


def onnxruntime_run(layer: Layer, x, w, b):
    """A single-node ONNX model in onnxruntime; returns (run, output array)."""
    import onnxruntime as ort
    from onnx import TensorProto, helper, numpy_helper

    if layer.dense:
        node = helper.make_node("Gemm", ["X", "W", "B"], ["Y"], transB=1)
    else:
        p = layer.pad
        node = helper.make_node(
            "Conv",
            ["X", "W", "B"],
            ["Y"],
            kernel_shape=[layer.k, layer.k],
            pads=[p, p, p, p],
            strides=[layer.stride] * 2,
            group=layer.groups,
        )
    shape = out_shape(layer)
    graph = helper.make_graph(
        [node],
        layer.name,
        [helper.make_tensor_value_info("X", TensorProto.FLOAT, list(x.shape))],
        [helper.make_tensor_value_info("Y", TensorProto.FLOAT, list(shape))],
        initializer=[numpy_helper.from_array(w, "W"), numpy_helper.from_array(b, "B")],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    session = ort.InferenceSession(
        model.SerializeToString(), providers=["CPUExecutionProvider"]
    )
    y = np.empty(shape, np.float32)
    binding = session.io_binding()
    binding.bind_cpu_input("X", x)
    binding.bind_output("Y", "cpu", 0, np.float32, list(shape), y.ctypes.data)
    return lambda: session.run_with_iobinding(binding), y


def torch_run(layer: Layer, x, w, b):
    import torch
    import torch.nn.functional as F

    torch.set_num_threads(cores())
    tx, tw, tb = (torch.from_numpy(a) for a in (x, w, b))
    if layer.dense:
        return lambda: F.linear(tx, tw, tb)
    return lambda: F.conv2d(
        tx, tw, tb, stride=layer.stride, padding=layer.pad, groups=layer.groups
    )


def ember_kernel(layer: Layer, x: np.ndarray):
    from ember import te, topi

    data = te.placeholder(x.shape, name="x")
    if layer.dense:
        return topi.dense(data, (layer.o, layer.c), bias=True, name="layer")
    p = layer.pad
    return topi.conv2d(
        data,
        (layer.o, layer.c // layer.groups, layer.k, layer.k),
        strides=layer.stride,
        padding=(p, p, p, p),
        groups=layer.groups,
        bias=True,
        name="layer",
    )


def ember_run(layer: Layer, x, w, b):
    """Build the layer's kernel; returns (run, output, build seconds, kernel note)."""
    import ember

    start = time.perf_counter()
    kernel = ember_kernel(layer, x)
    mod = ember.build(kernel.schedule(), kernel.args, name="layer")
    build_s = time.perf_counter() - start
    wp = kernel.transform("layer.weight", w)
    y = np.empty(out_shape(layer), np.float32)
    note = ",".join(
        f"{k}={v}" for k, v in kernel.attrs.items() if k not in ("flops", "kernel")
    )
    return (lambda: mod(x, wp, b, y)), y, build_s, f"{kernel.attrs['kernel']} {note}"


def bench_ember(layer: Layer, timing: dict) -> dict:
    """Build, check against numpy's float64 result, then time ember's kernel."""
    x, w, b = inputs(layer, np.random.default_rng(0))
    row: dict = {"layer": layer}
    try:
        run, y, row["build"], row["note"] = ember_run(layer, x, w, b)
        run()
    except Exception as exc:  # a failed layer is a row, not a crash
        row["status"] = f"failed: {type(exc).__name__}: {exc}"[:120]
        return row
    expected = reference(layer, x, w, b)
    if not np.allclose(y, expected, rtol=1e-4, atol=1e-4):
        row["status"] = f"WRONG: max |error| {np.abs(y - expected).max():.3g}"
        return row
    row["status"] = "ok"
    row["ember"] = measure(run, **timing).median
    return row


def bench_other(row: dict, key: str, timing: dict) -> None:
    """Time onnxruntime ("ort") or torch on the row's layer, checked like ember."""
    layer = row["layer"]
    x, w, b = inputs(layer, np.random.default_rng(0))
    try:
        if key == "ort":
            run, y = onnxruntime_run(layer, x, w, b)
            fetch = lambda: y  # noqa: E731
        else:
            call = torch_run(layer, x, w, b)
            out = {}

            def run():
                out["y"] = call()

            fetch = lambda: out["y"].numpy()  # noqa: E731
        run()
    except ImportError:
        return
    if np.allclose(fetch(), reference(layer, x, w, b), rtol=1e-4, atol=1e-4):
        row[key] = measure(run, **timing).median


def _ms(seconds: float | None) -> str:
    return f"{seconds * 1e3:8.3f}" if seconds is not None else f"{'-':>8}"


def _ratio(a: float | None, b: float | None) -> str:
    return f"{a / b:6.2f}x" if a is not None and b is not None else f"{'-':>7}"


def print_rows(rows: list[dict]) -> None:
    head = (
        f"{'layer':10} {'shape':24} {'ember ms':>8} {'ort ms':>8} {'torch ms':>8} "
        f"{'GFLOPS':>7} {'/ort':>7} {'/torch':>7} {'build s':>7}  kernel"
    )
    print(head)
    print("-" * len(head))
    for r in rows:
        layer = r["layer"]
        e = r.get("ember")
        gf = f"{layer.flops / e / 1e9:7.1f}" if e else f"{'-':>7}"
        build = f"{r['build']:7.2f}" if "build" in r else f"{'-':>7}"
        tail = r.get("note", "") if r["status"] == "ok" else r["status"]
        print(
            f"{layer.name:10} {layer.describe():24} {_ms(e)} {_ms(r.get('ort'))} "
            f"{_ms(r.get('torch'))} {gf} {_ratio(e, r.get('ort'))} "
            f"{_ratio(e, r.get('torch'))} {build}  {tail}"
        )
    print(
        "ms: median per call; /ort, /torch: ember's time over theirs (below 1 is "
        "ember faster); build s: ember's kernel construction + ember.build."
    )


def summarize(rows: list[dict], target_ratio: float) -> None:
    by_name = {r["layer"].name: r for r in rows}
    for model, layers in MODELS.items():
        mine = [by_name.get(layer.name) for layer in layers]
        if not all(mine):
            continue
        totals = {}
        for key in ("ember", "ort", "torch"):
            if all(key in r for r in mine):
                totals[key] = sum(r[key] * r["layer"].count for r in mine)
        builds = sum(r.get("build", 0.0) for r in mine)
        parts = ", ".join(f"{k} {v * 1e3:.2f} ms" for k, v in totals.items())
        print(f"{model} conv+dense layers, weighted by count: {parts}; ", end="")
        print(f"ember build of its {len(layers)} distinct kernels {builds:.1f} s")
        if "ember" in totals and "ort" in totals:
            ratio = totals["ember"] / totals["ort"]
            verdict = "met" if ratio <= target_ratio else "NOT met"
            print(
                f"  ember <= {target_ratio:g} x onnxruntime: {verdict} ({ratio:.2f}x)"
            )
        if "ember" in totals and "torch" in totals:
            verdict = "met" if totals["ember"] < totals["torch"] else "NOT met"
            ratio = totals["ember"] / totals["torch"]
            print(f"  ember faster than torch: {verdict} ({ratio:.2f}x)")


def main(argv: list[str] | None = None) -> list[dict]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="a few layers, short")
    parser.add_argument("--only", default="", help="layers whose name contains this")
    parser.add_argument("--model", choices=sorted(MODELS), help="one model's layers")
    parser.add_argument("--target-ratio", type=float, default=2.5)
    add_timing_options(parser)
    opts = parser.parse_args(argv)
    layers = [
        layer
        for name, model in MODELS.items()
        if opts.model in (None, name)
        for layer in model
    ]
    if opts.quick:
        layers = [layer for layer in layers if layer.name in QUICK]
    layers = [layer for layer in layers if opts.only in layer.name]
    timing = timing_options(opts)
    print("conv2d / dense layers of MobileNetV2 and ResNet-18, batch 1, fp32, bias")
    print(describe_machine())
    print(threads_note())
    # one runtime at a time: the thread pools of onnxruntime, torch and libgomp
    # spin after their work, and on a small machine two spinning pools slow each
    # other by a scheduler period a call
    rows = []
    for layer in layers:
        print(f"  ember {layer.name} ({layer.describe()}) ...", flush=True)
        rows.append(bench_ember(layer, timing))
    for key in ("ort", "torch"):
        time.sleep(0.5)
        print(f"  {key} ...", flush=True)
        for row in rows:
            bench_other(row, key, timing)
    print()
    print_rows(rows)
    summarize(rows, opts.target_ratio)
    return rows


if __name__ == "__main__":
    main()
