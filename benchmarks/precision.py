"""Precision side by side: float32, bfloat16 and int8 in ember, onnxruntime
and OpenVINO.

    .venv/bin/python benchmarks/precision.py                 # resnet18, mobilenet_v2, bert
    .venv/bin/python benchmarks/precision.py --quick         # 64x64 images, 1 round
    .venv/bin/python benchmarks/precision.py --model resnet18 --rounds 5

Each model is `examples/onnx_models.py`'s (batch 1, seeded weights), run through
onnxruntime's `quant_pre_process` (batch norms folded) and quantized by
`onnxruntime.quantization.quantize_static`: QDQ format, int8 weights per
channel, uint8 activations, calibrated on 8 seeded random inputs (bert is
`bert_encoder`: 4 layers, d 256, 128 tokens; 32 with --quick). The
runtimes, each in a worker process of its own:

    ember f32          ember.compile_model(float model), exported and loaded
    ember bf16         ember.compile_model(float model, precision="bf16"):
                       convolutions and dense layers on bfloat16 dot products
                       (a CPU without them: the row says why not)
    ember int8         ember.compile_model(QDQ model): convolutions and dense
                       layers on byte dot products (graph.qconv2d, qdense)
    onnxruntime f32    InferenceSession, default options
    onnxruntime int8   the same on the QDQ model (its fused int8 kernels)
    openvino f32       OpenVINO's CPU plugin, INFERENCE_PRECISION_HINT f32
    openvino default   its default precision (bfloat16 where the CPU has it)
    openvino int8      the QDQ model

Each runtime classifies 16 fixed inputs (images of seeded normal noise; for
bert, random token ids): "top-1" is how many of its argmaxes (one per image;
for bert, one per token over the hidden features) are onnxruntime float32's.
Then rounds: in each, every runtime in turn (the order rotated), one
`common.measure` on the first input. The table gives the median over rounds and the ratio to ember's float32
(above 1: slower).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
import warnings
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent / "examples"))

import common  # noqa: E402

REPLY = "PRECISION "
SETTLE = 0.2
IMAGES = 16
"""Inputs each runtime classifies."""
CALIBRATION = 8
RUNTIMES = (
    "ember f32",
    "ember bf16",
    "ember int8",
    "onnxruntime f32",
    "onnxruntime int8",
    "openvino f32",
    "openvino default",
    "openvino int8",
)
MODELS = ("resnet18", "mobilenet_v2", "bert")
REFERENCE = "onnxruntime f32"


def _model_file(runtime: str) -> str:
    return "int8.onnx" if runtime.endswith("int8") else "float.onnx"


def prepare(model: str, size: int, directory: Path) -> None:
    """The float and QDQ models, the inputs and ember's libraries."""
    import onnx
    import onnx_models
    from onnxruntime.quantization import (
        CalibrationDataReader,
        QuantFormat,
        QuantType,
        quantize_static,
    )
    from onnxruntime.quantization.shape_inference import quant_pre_process

    import ember
    from ember.compiler.model import ModelCompileError

    raw = directory / "raw.onnx"
    if model == "bert":
        proto = onnx_models.bert_encoder(seq=128 if size >= 224 else 32)
    else:
        proto = getattr(onnx_models, model)(size=size)
    onnx.save(proto, raw)
    quant_pre_process(str(raw), str(directory / "float.onnx"))

    def inputs(count: int, seed: int) -> list[dict[str, np.ndarray]]:
        return [
            onnx_models.random_input(proto, seed=seed * 100 + i) for i in range(count)
        ]

    class Reader(CalibrationDataReader):
        def __init__(self):
            self.feeds = iter(inputs(CALIBRATION, 1))

        def get_next(self):
            return next(self.feeds, None)

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        quantize_static(
            str(directory / "float.onnx"),
            str(directory / "int8.onnx"),
            Reader(),
            quant_format=QuantFormat.QDQ,
            per_channel=True,
            activation_type=QuantType.QUInt8,
            weight_type=QuantType.QInt8,
        )
    arrays = {
        f"{i}/{k}": v for i, f in enumerate(inputs(IMAGES, 2)) for k, v in f.items()
    }
    np.savez(directory / "inputs.npz", **arrays)
    for precision, source in (
        ("f32", "float.onnx"),
        ("bf16", "float.onnx"),
        ("int8", "int8.onnx"),
    ):
        start = time.perf_counter()
        try:
            lib = ember.compile_model(
                str(directory / source),
                precision="bf16" if precision == "bf16" else "float32",
            )
        except ModelCompileError as e:  # no bfloat16 dot product here
            print(f"  ember {precision}: {e}")
            continue
        lib.export_library(str(directory / f"ember_{precision}.so"))
        print(f"  ember {precision}: compiled in {time.perf_counter() - start:.1f} s")


def _loader(runtime: str, directory: Path):
    """(run(feeds) -> output, note) of `runtime`, its model loaded once."""
    path = str(directory / _model_file(runtime))
    if runtime.startswith("onnxruntime"):
        import onnxruntime

        session = onnxruntime.InferenceSession(path, providers=["CPUExecutionProvider"])
        return (lambda feeds: session.run(None, feeds)[0]), onnxruntime.__version__
    if runtime.startswith("openvino"):
        import openvino

        core = openvino.Core()
        config = {"INFERENCE_PRECISION_HINT": "f32"} if runtime.endswith("f32") else {}
        compiled = core.compile_model(core.read_model(path), "CPU", config)
        request = compiled.create_infer_request()
        hint = compiled.get_property("INFERENCE_PRECISION_HINT")

        def run_openvino(feeds):
            request.infer(feeds)
            return request.get_output_tensor(0).data

        precision = getattr(hint, "get_type_name", lambda: str(hint))()
        return run_openvino, f"{openvino.__version__.split('-')[0]}, {precision}"
    from ember.runtime import GraphModule, cpu, load_module

    precision = runtime.split()[-1]
    gm = GraphModule(load_module(directory / f"ember_{precision}.so")["default"](cpu()))

    def run_ember(feeds):
        gm.set_input(**feeds)
        gm.run()
        return gm.get_output(0).numpy()

    return run_ember, f"threads {common.ember_threads()}"


def worker(runtime: str, directory: Path) -> None:
    """Load `runtime`'s model, then answer: "classify" (the argmaxes of every
    input's output, over its last axis) or "time" (one measurement on the
    first input)."""
    feeds: list[dict[str, np.ndarray]] = []
    for key, value in np.load(directory / "inputs.npz").items():
        index, name = key.split("/", 1)
        while len(feeds) <= int(index):
            feeds.append({})
        feeds[int(index)][name] = value

    def answer(run, command: dict) -> dict:
        if command["op"] == "classify":
            top = [np.argmax(run(f), axis=-1).reshape(-1).tolist() for f in feeds]
            return {"top1": [int(c) for t in top for c in t]}
        t = common.measure(
            lambda: run(feeds[0]), command["min_time"], command["repeat"]
        )
        return {"median": t.median}

    common.serve(REPLY, lambda: _loader(runtime, directory), answer)


def bench(model: str, size: int, rounds: int, timing: dict) -> dict:
    """One model: prepare, start the workers, classify, measure."""
    print(f"\n{model} {size}x{size}", flush=True)
    times: dict[str, list[float]] = {}
    status: dict[str, str] = {}
    top1: dict[str, list[int]] = {}
    with tempfile.TemporaryDirectory(prefix="ember-precision-bench-") as tmp:
        directory = Path(tmp)
        prepare(model, size, directory)
        workers = {r: common.Worker(__file__, REPLY, r, directory) for r in RUNTIMES}
        try:
            for runtime, w in workers.items():
                ready = w.read()
                if ready["status"] != "ok":
                    status[runtime] = f"{ready['status']}: {ready['note']}"
                    continue
                print(f"  {runtime} ready: {ready['note']}")
                answer = w.ask(op="classify")
                if answer["status"] != "ok":
                    status[runtime] = f"failed: {answer['note']}"
                    continue
                top1[runtime] = answer["top1"]
            order = [r for r in RUNTIMES if r not in status]
            for round_ in range(rounds):
                load = os.getloadavg()[0]
                print(f"  round {round_ + 1} of {rounds} (load {load:.2f}) ...")
                for runtime in order:
                    time.sleep(SETTLE)
                    answer = workers[runtime].ask(op="time", **timing)
                    if answer["status"] != "ok":
                        status[runtime] = f"failed: {answer['note']}"
                        continue
                    times.setdefault(runtime, []).append(answer["median"])
                order = order[1:] + order[:1]
        finally:
            for w in workers.values():
                w.close()
            for w in workers.values():
                w.wait()
    return {"times": times, "status": status, "top1": top1}


def print_table(model: str, result: dict) -> None:
    times, status, top1 = result["times"], result["status"], result["top1"]
    medians = {r: statistics.median(t) for r, t in times.items() if t}
    base = medians.get("ember f32")
    reference = top1.get(REFERENCE)
    print(
        f"\n{model}: median ms (ratio to ember f32; top-1 agreement with {REFERENCE})"
    )
    print(f"  {'runtime':<18} {'ms':>9} {'vs ember f32':>13} {'top-1':>7}")
    for runtime in RUNTIMES:
        if runtime in status:
            print(f"  {runtime:<18} {status[runtime]}")
            continue
        if runtime not in medians:
            continue
        ms = medians[runtime] * 1e3
        ratio = f"{medians[runtime] / base:.2f}x" if base else "-"
        agree = "-"
        if reference is not None and runtime in top1:
            same = sum(a == b for a, b in zip(top1[runtime], reference, strict=True))
            agree = f"{same}/{len(reference)}"
        print(f"  {runtime:<18} {ms:>9.3f} {ratio:>13} {agree:>7}")


def parse(argv) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--model", action="append", choices=MODELS)
    p.add_argument("--size", type=int, default=224, help="image side (default 224)")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument(
        "--quick", action="store_true", help="64x64 images (bert: 32 tokens), one round"
    )
    p.add_argument("--worker", nargs=2, help=argparse.SUPPRESS)
    common.add_timing_options(p)
    return p.parse_args(argv)


def main(argv=None) -> int:
    opts = parse(argv)
    if opts.worker:
        worker(opts.worker[0], Path(opts.worker[1]))
        return 0
    size, rounds = (64, 1) if opts.quick else (opts.size, opts.rounds)
    print(common.describe_machine())
    print(common.threads_note())
    for model in opts.model or MODELS:
        result = bench(model, size, rounds, common.timing_options(opts))
        print_table(model, result)
    return 0


if __name__ == "__main__":
    sys.exit(main())
