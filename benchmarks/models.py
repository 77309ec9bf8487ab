"""Whole models side by side: ember vs onnxruntime vs OpenVINO vs PyTorch vs apache-tvm.

    .venv/bin/python benchmarks/models.py            # MobileNetV2 and ResNet-18, 224x224
    .venv/bin/python benchmarks/models.py --quick    # MobileNetV2 at 96x96, short timing
    .venv/bin/python benchmarks/models.py --model resnet18
    .venv/bin/python benchmarks/models.py --model bert --model vit_b16 --model mobilenet_v3_large
    .venv/bin/python benchmarks/models.py --mcpu haswell --mcpu x86-64   # more rows

Models: mobilenet_v2, resnet18 (224x224), mobilenet_v3_large (224x224), bert
(the BERT-style encoder: 4 layers, d 256, sequence 128, int64 ids and a
padding mask), vit_b16 (ViT-B/16 at 224x224), the audit zoo's squeezenet1_1,
efficientnet_b0, regnet_y_400mf and shufflenet_v2 (224x224), gpt_block (one
GPT-2-style causal block, d 256, sequence 128) and lstm (two LSTM layers, 64
features, hidden 128, 32 steps); --quick: 96x96, sequence 32, 8 steps.

Each model is the ONNX file `examples/onnx_models.py` writes (batch 1, fp32, seeded
random weights), fed the same input to every implementation in one process:

    onnxruntime   InferenceSession.run, default options (all graph optimizations)
    OpenVINO f32  OpenVINO's CPU plugin with INFERENCE_PRECISION_HINT f32
    OpenVINO default  its default precision: bfloat16 where the CPU has it
                  (checked to bfloat16's precision: rtol 0.05, atol 5% of the
                  output's largest magnitude)
    ember         ember.compile_model, then GraphModule.run (the AOT default_run);
                  the note gives the compile time with a cold and a warm kernel cache
    PyTorch eager the ONNX graph executed node by node with torch.nn.functional
                  ops on tensors made once from the same weights (what a model's
                  forward does in eager mode), under torch.inference_mode
    torch.compile the same forward compiled by torch.compile (inductor; the
                  weights frozen), first call excluded
    apache-tvm    relax's ONNX frontend, tvm.compile(target llvm -mcpu=<host>),
                  run by the Relax VM (TVM's default build, no tuning)

ember and apache-tvm also get a row per `--mcpu` (default: haswell, AVX2): the
same model compiled for that CPU, run on this one (whose features include it).

Every row is checked against onnxruntime's output (allclose, rtol = atol = 1e-4)
before it is timed; the table gives the median latency and the ratio to
onnxruntime, then the targets: ember faster than PyTorch eager, and at most
1.2x (MobileNetV2, MobileNetV3-large, EfficientNet-B0, RegNetY-400MF,
ShuffleNetV2) / 1.0x (ResNet-18, SqueezeNet 1.1) / 1.3x (BERT, ViT, the GPT
block, the LSTM) onnxruntime's latency on the host target.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "examples"))

import common  # noqa: E402
import onnx_models  # noqa: E402
from common import Impl, Prepared  # noqa: E402

ORT = "onnxruntime"
EMBER = "ember"
TORCH = "PyTorch eager"
TORCH_COMPILE = "torch.compile"
TVM = "apache-tvm default build"
OPENVINO_F32 = "OpenVINO f32"
OPENVINO_DEFAULT = "OpenVINO default"
BF16_TOLERANCE = (0.05, 0.05)
"""rtol, and atol relative to the output's largest magnitude, a bfloat16
computation is checked to (8 bits of mantissa, errors summed over layers)."""


def openvino_impl(model, inputs, f32: bool):
    def setup() -> Prepared:
        import openvino

        core = openvino.Core()
        config = {"INFERENCE_PRECISION_HINT": "f32"} if f32 else {}
        compiled = core.compile_model(
            core.read_model(model.SerializeToString(), b""), "CPU", config
        )
        request = compiled.create_infer_request()
        hint = compiled.get_property("INFERENCE_PRECISION_HINT")
        precision = getattr(hint, "get_type_name", lambda: str(hint))()

        def run():
            request.infer(inputs)

        return Prepared(
            run,
            lambda: request.get_output_tensor(0).data.copy(),
            f"openvino {openvino.__version__.split('-')[0]}, {precision}",
            tolerance=None if f32 else BF16_TOLERANCE,
        )

    return Impl(OPENVINO_F32 if f32 else OPENVINO_DEFAULT, setup, lambda: "default")


def onnxruntime_impl(model, inputs):
    def setup() -> Prepared:
        import onnxruntime

        session = onnxruntime.InferenceSession(
            model.SerializeToString(), providers=["CPUExecutionProvider"]
        )
        out: list = []

        def run():
            out[:] = session.run(None, inputs)

        return Prepared(run, lambda: out[0], f"onnxruntime {onnxruntime.__version__}")

    return Impl(ORT, setup, lambda: "default")


TARGETS = {
    "mobilenet_v2": 1.2,
    "resnet18": 1.0,
    "mobilenet_v3_large": 1.2,
    "bert": 1.3,
    "vit_b16": 1.3,
    "squeezenet1_1": 1.0,
    "efficientnet_b0": 1.2,
    "regnet_y_400mf": 1.2,
    "shufflenet_v2": 1.2,
    "gpt_block": 1.3,
    "lstm": 1.3,
}
"""ember's latency target, as a multiple of onnxruntime's, on the host target."""

MODELS = {
    "mobilenet_v2": lambda quick: onnx_models.mobilenet_v2(size=96 if quick else 224),
    "resnet18": lambda quick: onnx_models.resnet18(size=96 if quick else 224),
    "mobilenet_v3_large": lambda quick: onnx_models.mobilenet_v3(
        "large", size=96 if quick else 224
    ),
    "bert": lambda quick: onnx_models.bert_encoder(seq=32 if quick else 128),
    "vit_b16": lambda quick: onnx_models.vit(
        size=96 if quick else 224, layers=2 if quick else 12
    ),
    "squeezenet1_1": lambda quick: onnx_models.squeezenet(
        "1.1", size=96 if quick else 224
    ),
    "efficientnet_b0": lambda quick: onnx_models.efficientnet_b0(
        size=96 if quick else 224
    ),
    "regnet_y_400mf": lambda quick: onnx_models.regnet_y_400mf(
        size=96 if quick else 224
    ),
    "shufflenet_v2": lambda quick: onnx_models.shufflenet_v2(size=96 if quick else 224),
    "gpt_block": lambda quick: onnx_models.gpt_block(seq=32 if quick else 128),
    "lstm": lambda quick: onnx_models.lstm(seq=8 if quick else 32),
}
"""How each model is built (quick: smaller, for a smoke run)."""


def ember_impl(model, inputs, mcpu: str | None = None):
    target = f"llvm -mcpu={mcpu}" if mcpu else "llvm"

    def setup() -> Prepared:
        import ember
        from ember.backends.kernel_cache import CompileCache
        from ember.runtime import GraphModule, cpu

        with tempfile.TemporaryDirectory() as cache_dir:
            start = time.perf_counter()
            cache = CompileCache(Path(cache_dir))
            ember.compile_model(model, target=target, cache=cache)
            cold = time.perf_counter() - start
            start = time.perf_counter()
            cache = CompileCache(Path(cache_dir))
            mod = ember.compile_model(model, target=target, cache=cache)
            warm = time.perf_counter() - start
        gm = GraphModule(mod["default"](cpu()))
        for name, value in inputs.items():
            gm.set_input(name, value)
        stats = mod.compile_stats
        note = (
            f"compile {cold:.1f} s cold, {warm:.2f} s warm; {stats.kernels} kernels "
            f"for {stats.calls} calls"
        )
        return Prepared(
            gm.run,
            lambda: gm.get_output(0).numpy(),
            note,
            {"cold": cold, "warm": warm},
        )

    name = f"{EMBER} -mcpu={mcpu}" if mcpu else EMBER
    return Impl(name, setup, common.ember_threads)


def torch_impl(model, inputs, compiled: bool = False):
    def setup() -> Prepared:
        import torch

        run = _torch_forward(model, inputs)
        note = f"torch {torch.__version__}"
        if compiled:
            start = time.perf_counter()
            run = torch.compile(run)
            with torch.inference_mode():
                run()
            note += f", compile {time.perf_counter() - start:.1f} s"
        out: list = []

        def call():
            with torch.inference_mode():
                out[:] = [run()]

        return Prepared(call, lambda: out[0].numpy(), note)

    def threads() -> str:
        import torch

        return str(torch.get_num_threads())

    return Impl(TORCH_COMPILE if compiled else TORCH, setup, threads)


def _torch_ops():
    import torch

    binary = {
        "Add": torch.add,
        "Sub": torch.sub,
        "Mul": torch.mul,
        "Div": torch.div,
    }
    unary = {
        "Erf": torch.erf,
        "Sqrt": torch.sqrt,
        "HardSwish": torch.nn.functional.hardswish,
        "Sigmoid": torch.sigmoid,
        "Tanh": torch.tanh,
    }
    return binary, unary


def _torch_forward(model, inputs):
    """The ONNX graph as eager PyTorch: each node one torch op on tensors made
    once from the initializers (the ops these models use)."""
    import torch
    import torch.nn.functional as F
    from onnx import helper, numpy_helper

    binary, unary = _torch_ops()
    values = {
        t.name: torch.from_numpy(numpy_helper.to_array(t).copy())
        for t in model.graph.initializer
    }
    feeds = {k: torch.from_numpy(v) for k, v in inputs.items()}
    nodes = [
        (n, {a.name: helper.get_attribute_value(a) for a in n.attribute})
        for n in model.graph.node
    ]
    output = model.graph.output[0].name

    def pads(a):
        p = a.get("pads", [0, 0, 0, 0])
        if p[0] != p[2] or p[1] != p[3]:
            raise NotImplementedError("asymmetric padding")
        return (p[0], p[1])

    def node(op, a, x):
        if op == "Conv":
            return F.conv2d(
                x[0],
                x[1],
                x[2] if len(x) > 2 else None,
                a.get("strides", 1),
                pads(a),
                a.get("dilations", 1),
                a.get("group", 1),
            )
        if op == "BatchNormalization":
            return F.batch_norm(
                x[0], x[3], x[4], x[1], x[2], False, 0.0, a.get("epsilon", 1e-5)
            )
        if op == "Relu":
            return F.relu(x[0])
        if op == "Clip":
            return torch.clamp(x[0], float(x[1]), float(x[2]))
        if op == "Add":
            return x[0] + x[1]
        if op == "MaxPool":
            return F.max_pool2d(
                x[0],
                a["kernel_shape"],
                a.get("strides", 1),
                pads(a),
                ceil_mode=bool(a.get("ceil_mode", 0)),
            )
        if op == "Split":
            return torch.split(x[0], [int(s) for s in x[1]], a.get("axis", 0))
        if op == "ReduceMean":
            axes = a["axes"] if "axes" in a else [int(d) for d in x[1]]
            return torch.mean(x[0], axes, keepdim=bool(a.get("keepdims", 1)))
        if op == "GlobalAveragePool":
            return F.adaptive_avg_pool2d(x[0], 1)
        if op == "Flatten":
            return torch.flatten(x[0], a.get("axis", 1))
        if op == "Reshape":
            return torch.reshape(x[0], [int(d) for d in x[1]])
        if op == "Gemm":
            return F.linear(
                x[0],
                x[1] if a.get("transB", 0) else x[1].T,
                x[2] if len(x) > 2 else None,
            )
        if op in binary:
            return binary[op](x[0], x[1])
        if op in unary:
            return unary[op](x[0])
        if op == "HardSigmoid":
            return torch.clamp(x[0] * a.get("alpha", 0.2) + a.get("beta", 0.5), 0, 1)
        if op == "MatMul":
            return torch.matmul(x[0], x[1])
        if op == "Transpose":
            return x[0].permute(a["perm"])
        if op == "Softmax":
            return torch.softmax(x[0], a.get("axis", -1))
        if op == "LayerNormalization":
            shape = x[0].shape[a.get("axis", -1) :]
            return F.layer_norm(x[0], shape, x[1], x[2], a.get("epsilon", 1e-5))
        if op == "Gather":
            axis = a.get("axis", 0)
            if x[1].dim() == 0:
                return x[0].select(axis, int(x[1]))
            return torch.index_select(x[0], axis, x[1].reshape(-1)).reshape(
                *x[0].shape[:axis], *x[1].shape, *x[0].shape[axis + 1 :]
            )
        if op == "Cast":
            return x[0].to(torch.float32)
        if op == "Unsqueeze":
            y = x[0]
            for axis in sorted(int(d) for d in x[1]):
                y = y.unsqueeze(axis)
            return y
        if op == "Concat":
            return torch.cat(x, a["axis"])
        if op == "Where":
            return torch.where(x[0], x[1], x[2])
        raise NotImplementedError(f"PyTorch forward: no {op}")

    def forward():
        env = {**values, **feeds}
        for n, a in nodes:
            y = node(n.op_type, a, [env[i] for i in n.input])
            ys = y if isinstance(y, tuple) else (y,)  # Split's outputs
            env.update(zip(n.output, ys, strict=True))
        return env[output]

    return forward


def tvm_impl(model, inputs, mcpu: str | None = None):
    def setup() -> Prepared:
        import tvm
        from tvm import relax
        from tvm.relax.frontend.onnx import from_onnx

        start = time.perf_counter()
        mod = from_onnx(model, keep_params_in_input=False)
        mod = relax.transform.DecomposeOpsForInference()(mod)
        target = tvm.target.Target(
            {"kind": "llvm", "mcpu": mcpu} if mcpu else common.tvm_target()
        )
        exe = tvm.compile(mod, target=target)
        compile_s = time.perf_counter() - start
        dev = tvm.cpu()
        vm = relax.VirtualMachine(exe, dev)
        args = [tvm.runtime.tensor(v, dev) for v in inputs.values()]
        out: list = []

        def run():
            out[:] = [vm["main"](*args)]

        def fetch():
            result = out[0]
            return (
                result[0] if isinstance(result, tvm.ir.Array | list | tuple) else result
            ).numpy()

        return Prepared(run, fetch, f"tvm {tvm.__version__}, compile {compile_s:.1f} s")

    def threads() -> str:
        import tvm

        return str(tvm.runtime.num_threads())

    return Impl(f"{TVM} -mcpu={mcpu}" if mcpu else TVM, setup, threads)


def bench(
    name: str, quick: bool, timing: dict, skip_tvm: bool, mcpus: list[str]
) -> list:
    model = MODELS[name](quick)
    inputs = onnx_models.random_input(model)
    import onnxruntime

    expected = onnxruntime.InferenceSession(model.SerializeToString()).run(
        None, inputs
    )[0]
    shapes = ", ".join(
        f"{k} {'x'.join(map(str, v.shape))} {v.dtype}" for k, v in inputs.items()
    )
    print(f"\n{name}: {shapes}")
    impls = [
        onnxruntime_impl(model, inputs),
        openvino_impl(model, inputs, f32=True),
        openvino_impl(model, inputs, f32=False),
        ember_impl(model, inputs),
        *(ember_impl(model, inputs, mcpu) for mcpu in mcpus),
        torch_impl(model, inputs),
        torch_impl(model, inputs, compiled=True),
    ]
    if not skip_tvm:
        impls.append(tvm_impl(model, inputs))
        impls += [tvm_impl(model, inputs, mcpu) for mcpu in mcpus]
    rows = common.run_all(
        impls, expected, 1.0, ORT, table=common.print_latency_table, **timing
    )
    ember = next(r for r in rows if r.name == EMBER)
    ort = next(r for r in rows if r.name == ORT)
    for other in (OPENVINO_F32, OPENVINO_DEFAULT):
        row = next(r for r in rows if r.name == other)
        if ember.status == "ok" and row.status == "ok":
            ratio = ember.timing.median / row.timing.median
            print(
                f"  ember f32 / {other}: {ratio:.2f}x ({'at or below' if ratio <= 1 else 'above'} its latency)"
            )
    torch_row = next(r for r in rows if r.name == TORCH)
    if ember.status == "ok" and ort.status == "ok":
        ratio = ember.timing.median / ort.timing.median
        limit = TARGETS[name]
        print(
            f"  ember <= {limit}x onnxruntime: {'met' if ratio <= limit else 'NOT met'} ({ratio:.2f}x)"
        )
    if ember.status == "ok" and torch_row.status == "ok":
        faster = ember.timing.median < torch_row.timing.median
        print(
            f"  ember faster than PyTorch eager: {'met' if faster else 'NOT met'} ({torch_row.timing.median / ember.timing.median:.2f}x)"
        )
    if ember.status == "ok":
        cold, warm = ember.extra["cold"], ember.extra["warm"]
        print(
            f"  compile < 60 s cold, < 5 s warm: {'met' if cold < 60 and warm < 5 else 'NOT met'} ({cold:.1f} s, {warm:.2f} s)"
        )
    return rows


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--quick", action="store_true", help="MobileNetV2 at 96x96, short timing"
    )
    parser.add_argument("--model", choices=sorted(MODELS), action="append")
    parser.add_argument("--no-tvm", action="store_true", help="skip the apache-tvm row")
    parser.add_argument(
        "--mcpu",
        action="append",
        help="also compile for this CPU (default: haswell; --mcpu none: no more rows)",
    )
    common.add_timing_options(parser)
    opts = parser.parse_args(argv)
    timing = common.timing_options(opts)
    print(common.describe_machine())
    print(common.threads_note())
    models = opts.model or (
        ["mobilenet_v2"] if opts.quick else ["mobilenet_v2", "resnet18"]
    )
    mcpus = [m for m in (opts.mcpu or ["haswell"]) if m != "none"]
    for name in models:
        bench(name, opts.quick, timing, opts.no_tvm or opts.quick, mcpus)
    return 0


if __name__ == "__main__":
    sys.exit(main())
