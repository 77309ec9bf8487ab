"""The non-conv layers of MobileNetV2, ResNet-18 and a transformer block side by
side: ember's topi kernels (default schedules) vs onnxruntime (one-node models,
io binding) and PyTorch eager, each checked against numpy before it is timed.

    .venv/bin/python benchmarks/layers_misc.py            # every layer
    .venv/bin/python benchmarks/layers_misc.py --quick    # shorter timing
    .venv/bin/python benchmarks/layers_misc.py --only softmax
    .venv/bin/python benchmarks/layers_misc.py --threads 1   # one core each

On a machine other processes keep busy, libgomp's and the other pools'
barriers wait for descheduled threads (a call then takes a scheduler quantum,
~8 ms); `--threads 1` compares the kernels themselves.

Layers (batch 1, fp32, NCHW): ResNet-18's 3x3/2 max pool and residual
add + relu, MobileNetV2's relu6 and global average pool, the classifier's
softmax, and the transformer's attention softmax (4x64x64), layer norm and
gelu (erf form). The reference is onnxruntime; ratio above 1: faster than it.
"""

from __future__ import annotations

import argparse
import math
import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import numpy as np
from common import (
    Impl,
    Prepared,
    add_timing_options,
    cores,
    describe_machine,
    print_latency_table,
    run_all,
    threads_note,
    timing_options,
)

REFERENCE = "onnxruntime"


@dataclass
class Layer:
    """One benchmark case: inputs, the numpy reference, the ember kernel, the
    one-node ONNX graph and the torch call."""

    name: str
    inputs: dict[str, np.ndarray]
    numpy: Callable[..., np.ndarray]
    ember: Callable[..., object]  # placeholders -> Kernel
    onnx_nodes: Callable[[], list]
    torch: Callable[..., object]
    opset: int = 18
    initializers: dict[str, np.ndarray] = field(default_factory=dict)


def _erf(x: np.ndarray) -> np.ndarray:
    return np.vectorize(math.erf, otypes=[np.float64])(x)


def layers(rng: np.random.Generator) -> list[Layer]:
    from onnx import helper

    from ember.topi import elementwise as ew
    from ember.topi import pool, reduce

    def r(*shape: int) -> np.ndarray:
        return rng.uniform(-2, 2, shape).astype(np.float32)

    node = helper.make_node
    g, b = r(768), r(768)
    return [
        Layer(
            "max_pool 3x3/2 1x64x112x112 (ResNet-18)",
            {"x": r(1, 64, 112, 112)},
            _maxpool_numpy,
            lambda x: pool.max_pool2d(x, 3, 2, (1, 1, 1, 1)),
            lambda: [
                node(
                    "MaxPool",
                    ["x"],
                    ["y"],
                    kernel_shape=[3, 3],
                    strides=[2, 2],
                    pads=[1, 1, 1, 1],
                )
            ],
            lambda t, F: F.max_pool2d(t["x"], 3, 2, 1),
        ),
        Layer(
            "add + relu 1x64x56x56 (ResNet-18)",
            {"x": r(1, 64, 56, 56), "r": r(1, 64, 56, 56)},
            lambda x, r_: np.maximum(x + r_, 0),
            lambda x, r_: ew.injective(ew.relu(ew.add(x, r_)), [x, r_]),
            lambda: [node("Add", ["x", "r"], ["s"]), node("Relu", ["s"], ["y"])],
            lambda t, F: F.relu(t["x"] + t["r"]),
        ),
        Layer(
            "relu6 1x144x56x56 (MobileNetV2)",
            {"x": r(1, 144, 56, 56) * 4},
            lambda x: np.clip(x, 0, 6),
            lambda x: ew.injective(ew.clip(x, 0.0, 6.0), [x]),
            lambda: [node("Clip", ["x", "lo", "hi"], ["y"])],
            lambda t, F: F.relu6(t["x"]),
            initializers={"lo": np.float32(0), "hi": np.float32(6)},
        ),
        Layer(
            "global_avg_pool 1x1280x7x7 (MobileNetV2)",
            {"x": r(1, 1280, 7, 7)},
            lambda x: x.mean(axis=(2, 3), keepdims=True),
            lambda x: pool.global_avg_pool2d(x),
            lambda: [node("GlobalAveragePool", ["x"], ["y"])],
            lambda t, F: F.adaptive_avg_pool2d(t["x"], 1),
        ),
        Layer(
            "softmax 1x1000 (classifier)",
            {"x": r(1, 1000) * 5},
            lambda x: _softmax(x, -1),
            lambda x: reduce.softmax(x, -1),
            lambda: [node("Softmax", ["x"], ["y"], axis=-1)],
            lambda t, F: F.softmax(t["x"], -1),
        ),
        Layer(
            "softmax 4x64x64 (attention)",
            {"x": r(4, 64, 64) * 5},
            lambda x: _softmax(x, -1),
            lambda x: reduce.softmax(x, -1),
            lambda: [node("Softmax", ["x"], ["y"], axis=-1)],
            lambda t, F: F.softmax(t["x"], -1),
        ),
        Layer(
            "layer_norm 1x128x768 (transformer)",
            {"x": r(1, 128, 768)},
            lambda x: (
                (x - x.mean(-1, keepdims=True))
                / np.sqrt(x.var(-1, keepdims=True) + 1e-5)
                * g
                + b
            ),
            lambda x: _layer_norm_kernel(x, reduce),
            lambda: [
                node(
                    "LayerNormalization", ["x", "g", "b"], ["y"], axis=-1, epsilon=1e-5
                )
            ],
            lambda t, F: F.layer_norm(t["x"], (768,), t["g"], t["b"], 1e-5),
            initializers={"g": g, "b": b},
        ),
        Layer(
            "gelu 1x128x3072 (transformer MLP)",
            {"x": r(1, 128, 3072)},
            lambda x: 0.5 * x * (1 + _erf(x / np.sqrt(2))),
            lambda x: ew.injective(ew.gelu(x), [x]),
            lambda: [node("Gelu", ["x"], ["y"])],
            lambda t, F: F.gelu(t["x"]),
            opset=20,
        ),
    ]


def _maxpool_numpy(x: np.ndarray) -> np.ndarray:
    p = np.pad(x, ((0, 0), (0, 0), (1, 1), (1, 1)), constant_values=-np.inf)
    oh, ow = (x.shape[2] - 1) // 2 + 1, (x.shape[3] - 1) // 2 + 1
    out = np.full((*x.shape[:2], oh, ow), -np.inf, np.float32)
    for i in range(3):
        for j in range(3):
            out = np.maximum(out, p[:, :, i : i + 2 * oh : 2, j : j + 2 * ow : 2])
    return out


def _softmax(x: np.ndarray, axis: int) -> np.ndarray:
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def _layer_norm_kernel(x, reduce):
    from ember import te

    gamma = te.placeholder((x.shape[-1],), name="g")
    beta = te.placeholder((x.shape[-1],), name="b")
    return reduce.layer_norm(x, gamma, beta, 1e-5)


def implementations(layer: Layer, threads: int) -> list[Impl]:
    arrays = list(layer.inputs.values())

    def ember_setup() -> Prepared:
        import ember
        from ember import te

        placeholders = [
            te.placeholder(a.shape, name=n) for n, a in layer.inputs.items()
        ]
        kernel = layer.ember(*placeholders)
        start = time.perf_counter()
        mod = ember.build(kernel.schedule(), kernel.args, name="layer")
        compile_s = time.perf_counter() - start
        extra = [layer.initializers[p.name] for p in kernel.placeholders[len(arrays) :]]
        out = np.empty(kernel.output.shape, np.float32)
        args = [*arrays, *extra, out]
        return Prepared(
            lambda: mod(*args),
            lambda: out,
            f"compiled in {compile_s:.2f} s",
            {"compile_s": compile_s},
        )

    def ort_setup() -> Prepared:
        import onnxruntime as ort
        from onnx import TensorProto, helper, numpy_helper

        expected = layer.numpy(*arrays)
        graph = helper.make_graph(
            layer.onnx_nodes(),
            "layer",
            [
                helper.make_tensor_value_info(n, TensorProto.FLOAT, a.shape)
                for n, a in layer.inputs.items()
            ],
            [helper.make_tensor_value_info("y", TensorProto.FLOAT, expected.shape)],
            [
                numpy_helper.from_array(np.asarray(v), n)
                for n, v in layer.initializers.items()
            ],
        )
        model = helper.make_model(
            graph, opset_imports=[helper.make_opsetid("", layer.opset)]
        )
        model.ir_version = 8
        options = ort.SessionOptions()
        options.intra_op_num_threads = threads
        session = ort.InferenceSession(
            model.SerializeToString(), options, providers=["CPUExecutionProvider"]
        )
        out = np.empty(expected.shape, np.float32)
        binding = session.io_binding()
        for n, a in layer.inputs.items():
            binding.bind_cpu_input(n, a)
        binding.bind_output("y", "cpu", 0, np.float32, list(out.shape), out.ctypes.data)
        return Prepared(
            lambda: session.run_with_iobinding(binding),
            lambda: out,
            f"onnxruntime {ort.__version__}, io binding",
        )

    def torch_setup() -> Prepared:
        import torch
        import torch.nn.functional as F

        torch.set_num_threads(threads)
        tensors = {n: torch.from_numpy(a) for n, a in layer.inputs.items()}
        tensors.update(
            {n: torch.from_numpy(np.asarray(v)) for n, v in layer.initializers.items()}
        )
        result: list = [None]

        def run() -> None:
            with torch.no_grad():
                result[0] = layer.torch(tensors, F)

        return Prepared(
            run, lambda: result[0].numpy(), f"torch {torch.__version__} eager"
        )

    return [
        Impl(REFERENCE, ort_setup),
        Impl("torch", torch_setup),
        Impl("ember", ember_setup),
    ]


def main(argv: list[str] | None = None) -> dict[str, list]:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="shorter timing")
    parser.add_argument(
        "--only", default="", help="run the layers whose name contains this text"
    )
    parser.add_argument(
        "--threads", type=int, default=0, help="threads of every library (0: all cores)"
    )
    add_timing_options(parser)
    opts = parser.parse_args(argv)
    threads = opts.threads or cores()
    if opts.threads:
        # read by ember's runtime before its first parallel call
        os.environ["EMBER_NUM_THREADS"] = str(threads)
    print(describe_machine())
    print(
        threads_note() if not opts.threads else f"threads: {threads} in every library"
    )
    results = {}
    for layer in layers(np.random.default_rng(0)):
        if opts.only not in layer.name:
            continue
        print(f"\n{layer.name}")
        expected = layer.numpy(*layer.inputs.values()).astype(np.float32)
        results[layer.name] = run_all(
            implementations(layer, threads),
            expected,
            0.0,
            REFERENCE,
            table=print_latency_table,
            **timing_options(opts),
        )
    return results


if __name__ == "__main__":
    main()
