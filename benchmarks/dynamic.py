"""Symbolic shapes side by side: one dynamic ember library vs a static build per size
vs onnxruntime, at every batch and sequence length in one run.

    .venv/bin/python benchmarks/dynamic.py            # both models, d 256, 8 sizes
    .venv/bin/python benchmarks/dynamic.py --quick    # d 64, 2 layers, 2 sizes, 1 round
    .venv/bin/python benchmarks/dynamic.py --model bert --hidden 768 --heads 12 --layers 12
    .venv/bin/python benchmarks/dynamic.py --rounds 5 --batch 1 --seq 128 --seq 384

Models (torch modules, exported by torch's classic ONNX exporter, `dynamo=False`,
with `dynamic_axes` {0: batch, 1: seq} on every input and the output, opset 17,
seeded random weights):

    bert     int64 ids and a float padding mask (batch x seq): token and
             position embeddings, a layer norm, then pre-norm encoder blocks
             (multi-head attention over the mask, a GELU MLP). The positions
             are numbered from the mask, as RoBERTa does (cumsum).
    gpt      float hidden states (batch x seq x d): pre-norm decoder blocks
             with a causal mask, then a layer norm. The mask is built in the
             graph, as Trilu of a tensor shaped like the scores.
    hf-gpt2  transformers' GPT2LMHeadModel (int64 ids and padding mask in,
             logits over a 1000-token vocabulary out), as Hugging Face writes
             it: its causal and padding masks are computed from the sizes at
             run time (graph.range, graph.sizes).

For each model, three runtimes, each in a worker process of its own:

    ember dynamic  ONE `ember.compile_model(model)` (no `shape=`): one library
                   for every size, loaded once, its inputs set for each size
    ember static   one `compile_model(model, shape=...)` per size, one library each
    onnxruntime    InferenceSession on the same ONNX file, default options

Every compile starts from an empty kernel cache (the compile line compares the
one dynamic build with all the static ones); the libraries are exported and
loaded with `load_module`, as deployed. Before anything is timed, ember's
outputs are compared with onnxruntime's at every size: max |difference| / max
|onnxruntime| must be at most 1e-4 (a WRONG row is never timed, and the run
exits 1). Then rounds: in each, every size, and at each size every runtime in
turn (the order rotated), one `common.measure` each. The table gives the median
over rounds, then dynamic / static and dynamic / onnxruntime (time ratios: above
1, the dynamic library is slower).
"""

from __future__ import annotations

import argparse
import math
import os
import statistics
import sys
import tempfile
import time
import warnings
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import common  # noqa: E402

DYNAMIC = "ember dynamic"
STATIC = "ember static"
ORT = "onnxruntime"
RUNTIMES = (DYNAMIC, STATIC, ORT)
MODELS = ("bert", "gpt", "hf-gpt2")
TOLERANCE = 1e-4
"""The largest |ember - onnxruntime| allowed, relative to the largest |onnxruntime|."""
VOCAB = 1000
MAX_LEN = 512
REPLY = "@dynamic-bench "
"""Prefix of a worker's answers on its stdout (anything else there is ignored)."""
SETTLE = 0.25
"""Seconds between two workers' measurements: the last one's thread pool stops
spinning, and ember's automatic thread count (a 0.1 s window) sees a free machine."""


@dataclass(frozen=True)
class Config:
    """One model's shape: its kind, width, depth and heads."""

    model: str
    hidden: int
    layers: int
    heads: int

    def describe(self) -> str:
        inputs = {
            "bert": "ids int64, mask float32 (batch x seq)",
            "gpt": f"x float32 (batch x seq x {self.hidden})",
            "hf-gpt2": "ids int64, mask int64 (batch x seq); logits out",
        }[self.model]
        return (
            f"{self.model}: d {self.hidden}, {self.layers} layers, {self.heads} "
            f"heads; {inputs}"
        )


# --------------------------------------------------------------------------- #
# The models, exported once into the run's directory.


def _torch_module(config: Config):
    """The model as a torch module (torch is needed only to export it)."""
    import torch
    from torch import nn

    class Block(nn.Module):
        """A pre-norm transformer block whose views read `x.shape`, as exporters
        keep symbolic: multi-head attention, a GELU MLP."""

        def __init__(self, d: int, heads: int, causal: bool):
            super().__init__()
            self.heads, self.causal = heads, causal
            self.qkv, self.o = nn.Linear(d, 3 * d), nn.Linear(d, d)
            self.ln1, self.ln2 = nn.LayerNorm(d), nn.LayerNorm(d)
            self.ff = nn.Sequential(nn.Linear(d, 4 * d), nn.GELU(), nn.Linear(4 * d, d))

        def forward(self, x, mask=None):
            b, t, d = x.shape
            dh = d // self.heads
            q, k, v = self.qkv(self.ln1(x)).split(d, dim=-1)
            q, k, v = (z.view(b, t, self.heads, dh).transpose(1, 2) for z in (q, k, v))
            s = q @ k.transpose(-1, -2) / math.sqrt(dh)
            if mask is not None:
                s = s + (1.0 - mask[:, None, None, :]) * -1e4
            if self.causal:  # Trilu of a tensor of the scores' symbolic shape
                s = s + torch.triu(s * 0 - 1e4, diagonal=1)
            a = torch.softmax(s, -1) @ v
            x = x + self.o(a.transpose(1, 2).reshape(b, t, d))
            return x + self.ff(self.ln2(x))

    class Bert(nn.Module):
        def __init__(self, d: int, heads: int, layers: int):
            super().__init__()
            self.tok, self.pos = nn.Embedding(VOCAB, d), nn.Embedding(MAX_LEN, d)
            self.ln = nn.LayerNorm(d)
            self.blocks = nn.ModuleList(Block(d, heads, False) for _ in range(layers))

        def forward(self, ids, mask):
            pos = (torch.cumsum(mask, 1) - 1).clamp(min=0).long()
            x = self.ln(self.tok(ids) + self.pos(pos))
            for block in self.blocks:
                x = block(x, mask)
            return x

    class Gpt(nn.Module):
        def __init__(self, d: int, heads: int, layers: int):
            super().__init__()
            self.blocks = nn.ModuleList(Block(d, heads, True) for _ in range(layers))
            self.ln = nn.LayerNorm(d)

        def forward(self, x):
            for block in self.blocks:
                x = block(x)
            return self.ln(x)

    class HfGpt2(nn.Module):
        """transformers' GPT2LMHeadModel: (ids, mask) -> logits."""

        def __init__(self, d: int, heads: int, layers: int):
            super().__init__()
            import transformers

            cfg = transformers.GPT2Config(
                n_embd=d,
                n_head=heads,
                n_layer=layers,
                vocab_size=VOCAB,
                n_positions=MAX_LEN,
                use_cache=False,
            )
            self.model = transformers.GPT2LMHeadModel(cfg)

        def forward(self, ids, mask):
            return self.model(input_ids=ids, attention_mask=mask).logits

    torch.manual_seed(0)
    kind = {"bert": Bert, "gpt": Gpt, "hf-gpt2": HfGpt2}[config.model]
    return kind(config.hidden, config.heads, config.layers).eval()


def export(config: Config, path: Path) -> None:
    """Write the model as ONNX with dynamic batch and sequence axes."""
    import torch

    example = {k: torch.from_numpy(v) for k, v in feeds(config, 2, 7, 0).items()}
    axes = {name: {0: "batch", 1: "seq"} for name in [*example, "y"]}
    with warnings.catch_warnings(), torch.no_grad():
        warnings.simplefilter("ignore")  # the tracer's notes on shape reads
        torch.onnx.export(
            _torch_module(config),
            tuple(example.values()),
            str(path),
            dynamo=False,
            input_names=list(example),
            output_names=["y"],
            dynamic_axes=axes,
            opset_version=17,
        )


def feeds(config: Config, batch: int, seq: int, seed: int) -> dict[str, np.ndarray]:
    """The model's inputs at one size; bert's sequences end in padding."""
    rng = np.random.default_rng(seed)
    if config.model == "gpt":
        return {"x": rng.standard_normal((batch, seq, config.hidden), np.float32)}
    kind = np.int64 if config.model == "hf-gpt2" else np.float32
    mask = np.ones((batch, seq), kind)
    for row in range(batch):
        mask[row, seq - (row % 4) * seq // 8 :] = 0  # 0 to 3/8 of it padding
    return {"ids": rng.integers(0, VOCAB, (batch, seq)).astype(np.int64), "mask": mask}


def _tag(size: tuple[int, int]) -> str:
    return f"{size[0]}x{size[1]}"


def compile_ember(onnx_path: Path, out: Path, shape: dict | None = None) -> float:
    """Compile (from an empty kernel cache), export the library; the seconds taken."""
    import ember
    from ember.backends.kernel_cache import CompileCache

    with tempfile.TemporaryDirectory(prefix="ember-dynamic-cache-") as cache_dir:
        start = time.perf_counter()
        mod = ember.compile_model(
            onnx_path, shape=shape, cache=CompileCache(Path(cache_dir))
        )
        seconds = time.perf_counter() - start
    mod.export_library(out)
    return seconds


# --------------------------------------------------------------------------- #
# A worker process: one runtime, every size, driven by JSON lines on stdin.


def _loader(runtime: str, directory: Path):
    """`size -> (run, fetch)` for `runtime`, with the model loaded once."""
    if runtime == ORT:
        import onnxruntime

        session = onnxruntime.InferenceSession(
            str(directory / "model.onnx"), providers=["CPUExecutionProvider"]
        )

        def ort_runner(size):
            inputs, out = dict(np.load(directory / f"feeds_{_tag(size)}.npz")), []

            def run():
                out[:] = session.run(None, inputs)

            return run, lambda: out[0]

        return ort_runner, f"onnxruntime {onnxruntime.__version__}"

    from ember.runtime import GraphModule, cpu, load_module

    def graph_module(name: str) -> GraphModule:
        return GraphModule(load_module(directory / name)["default"](cpu()))

    dynamic = graph_module("dynamic.so") if runtime == DYNAMIC else None
    static = {
        p.stem.removeprefix("static_"): graph_module(p.name)
        for p in directory.glob("static_*.so")
        if runtime == STATIC
    }

    def ember_runner(size):
        gm = dynamic or static[_tag(size)]
        gm.set_input(**dict(np.load(directory / f"feeds_{_tag(size)}.npz")))
        return gm.run, lambda: gm.get_output(0).numpy()

    return ember_runner, f"threads {common.ember_threads()}"


def worker(runtime: str, directory: Path) -> None:
    """Load `runtime`'s model, then answer each command line: check (run once,
    save the output) or time one size."""

    def answer(runner, command: dict) -> dict:
        size = tuple(command["size"])
        run, fetch = runner(size)
        if command["op"] == "check":
            run()
            np.save(directory / f"out_{runtime.split()[-1]}_{_tag(size)}.npy", fetch())
            return {}
        t = common.measure(run, command["min_time"], command["repeat"])
        return {"median": t.median}

    common.serve(REPLY, lambda: _loader(runtime, directory), answer)


# --------------------------------------------------------------------------- #
# The driver: export, compile, check, interleaved rounds, the table.


@dataclass
class Result:
    """One model's figures: compile seconds, errors and latencies by size."""

    config: Config
    compile_dynamic: float | None = None
    compile_static: dict = field(default_factory=dict)  # size -> seconds
    status: dict = field(default_factory=dict)  # (runtime, size) -> status
    error: dict = field(default_factory=dict)  # (runtime, size) -> relative
    times: dict = field(default_factory=dict)  # (runtime, size) -> [seconds]

    def median(self, runtime: str, size) -> float | None:
        times = self.times.get((runtime, size))
        return statistics.median(times) if times else None


def relative_error(got: np.ndarray, expected: np.ndarray) -> float:
    """max |got - expected| / max |expected| (inf when the shapes differ)."""
    if got.shape != expected.shape:
        return math.inf
    return float(np.abs(got - expected).max() / max(np.abs(expected).max(), 1e-30))


def build(result: Result, sizes: list, directory: Path) -> None:
    """Export the model and its inputs; compile the dynamic and static libraries."""
    config = result.config
    export(config, directory / "model.onnx")
    for n, size in enumerate(sizes):
        np.savez(directory / f"feeds_{_tag(size)}.npz", **feeds(config, *size, n + 1))
    try:
        seconds = compile_ember(directory / "model.onnx", directory / "dynamic.so")
        result.compile_dynamic = seconds
        print(f"  ember dynamic: compiled once in {seconds:.1f} s", flush=True)
    except Exception as exc:
        result.status |= {
            (DYNAMIC, s): f"failed: {common._first_line(exc)}" for s in sizes
        }
    for size in sizes:
        names = feeds(config, *size, 0)
        shape = {name: list(value.shape) for name, value in names.items()}
        try:
            out = directory / f"static_{_tag(size)}.so"
            seconds = compile_ember(directory / "model.onnx", out, shape)
            result.compile_static[size] = seconds
            print(
                f"  ember static {_tag(size)}: compiled in {seconds:.1f} s", flush=True
            )
        except Exception as exc:
            result.status[STATIC, size] = f"failed: {common._first_line(exc)}"


def check(result: Result, workers: dict, sizes: list, directory: Path) -> None:
    """Run every runtime once at every size; compare ember's outputs with
    onnxruntime's. A wrong or failed (runtime, size) is not timed."""
    for size in sizes:
        for runtime, w in workers.items():
            if (runtime, size) in result.status:
                continue
            answer = w.ask(op="check", size=size)
            if answer["status"] != "ok":
                result.status[runtime, size] = f"failed: {answer['note']}"
        reference = directory / f"out_onnxruntime_{_tag(size)}.npy"
        for runtime in (DYNAMIC, STATIC):
            if (runtime, size) in result.status:
                continue
            if not reference.exists():
                result.error[runtime, size] = None  # nothing to check against
                continue
            got = np.load(directory / f"out_{runtime.split()[-1]}_{_tag(size)}.npy")
            error = relative_error(got, np.load(reference))
            result.error[runtime, size] = error
            if not error <= TOLERANCE:
                result.status[runtime, size] = "WRONG"


def measure_rounds(
    result: Result, workers: dict, sizes: list, rounds: int, timing: dict
) -> None:
    """Every round: every size, every runtime in turn (the order rotated)."""
    order = list(workers)
    for round_ in range(rounds):
        load = os.getloadavg()[0]
        print(
            f"  round {round_ + 1} of {rounds} (load average {load:.2f}) ...",
            flush=True,
        )
        for size in sizes:
            for runtime in order:
                if (runtime, size) in result.status:
                    continue
                time.sleep(SETTLE)
                answer = workers[runtime].ask(op="time", size=size, **timing)
                if answer["status"] != "ok":
                    result.status[runtime, size] = f"failed: {answer['note']}"
                    continue
                result.times.setdefault((runtime, size), []).append(answer["median"])
            order = order[1:] + order[:1]


def bench(config: Config, sizes: list, rounds: int, timing: dict) -> Result:
    """One model: build, start the workers, check, measure."""
    result = Result(config)
    print(f"\n{config.describe()}", flush=True)
    with tempfile.TemporaryDirectory(prefix="ember-dynamic-bench-") as tmp:
        directory = Path(tmp)
        build(result, sizes, directory)
        workers = {
            runtime: common.Worker(__file__, REPLY, runtime, directory)
            for runtime in RUNTIMES
        }
        try:
            for runtime, w in workers.items():
                ready = w.read()
                if ready["status"] != "ok":
                    why = f"{ready['status']}: {ready['note']}"
                    result.status |= {(runtime, s): why for s in sizes}
                else:
                    print(f"  {runtime} worker ready: {ready['note']}")
            check(result, workers, sizes, directory)
            measure_rounds(result, workers, sizes, rounds, timing)
        finally:
            for w in workers.values():
                w.close()
            for w in workers.values():
                w.wait()
    return result


def _cell(result: Result, runtime: str, size) -> str:
    status = result.status.get((runtime, size))
    if status is not None:
        return status.split(":")[0]
    median = result.median(runtime, size)
    return f"{median * 1e3:.3f}" if median is not None else "-"


def _ratio(a: float | None, b: float | None) -> str:
    return f"{a / b:.2f}x" if a and b else "-"


def _error(result: Result, runtime: str, size) -> str:
    error = result.error.get((runtime, size))
    return "-" if error is None else f"{error:.1e}"


def print_table(result: Result, sizes: list) -> None:
    """Per size: the medians (ms), the two ratios and ember's errors."""
    head = (
        f"{'batch':>5}  {'seq':>4}  {'dynamic ms':>10}  {'static ms':>10}  "
        f"{'onnxrt ms':>10}  {'dyn/static':>10}  {'dyn/onnxrt':>10}  "
        f"{'err dyn':>8}  {'err static':>10}"
    )
    print(head)
    print("-" * len(head))
    for size in sizes:
        dyn, static, ort = (result.median(r, size) for r in RUNTIMES)
        print(
            f"{size[0]:>5}  {size[1]:>4}  {_cell(result, DYNAMIC, size):>10}  "
            f"{_cell(result, STATIC, size):>10}  {_cell(result, ORT, size):>10}  "
            f"{_ratio(dyn, static):>10}  {_ratio(dyn, ort):>10}  "
            f"{_error(result, DYNAMIC, size):>8}  {_error(result, STATIC, size):>10}"
        )
    print(
        "ms: median over rounds of each round's median latency; ratios: dynamic "
        "time / the other's (above 1: the dynamic library is slower); err: max "
        "|ember - onnxruntime| / max |onnxruntime| (at most 1e-4)."
    )
    why: dict = {}  # (runtime, message) -> sizes
    for (runtime, size), status in result.status.items():
        if ":" in status:
            why.setdefault((runtime, status), []).append(_tag(size))
    for (runtime, status), tags in why.items():
        print(f"  {runtime} ({', '.join(tags)}): {status}")
    if any(
        result.median(r, s) and result.error.get((r, s)) is None
        for r in (DYNAMIC, STATIC)
        for s in sizes
    ):
        print("  ember's outputs not checked where err is '-': onnxruntime did not run")
    static = sum(result.compile_static.values())
    each = sorted(result.compile_static.values())
    line = f"compile (empty kernel cache): {DYNAMIC} "
    line += (
        f"{result.compile_dynamic:.1f} s once" if result.compile_dynamic else "failed"
    )
    if each:
        line += (
            f"; {STATIC} {static:.1f} s for {len(each)} sizes "
            f"({each[0]:.1f} to {each[-1]:.1f} s each)"
        )
    if each and result.compile_dynamic:
        line += f": static / dynamic {static / result.compile_dynamic:.2f}x"
    print(line)


def parse(argv) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--quick", action="store_true", help="d 64, 2 layers, 2 sizes, 1 round"
    )
    parser.add_argument("--model", choices=MODELS, action="append")
    parser.add_argument("--hidden", type=int, help="width (default 256, 64 quick)")
    parser.add_argument("--layers", type=int, help="blocks (default 4, 2 quick)")
    parser.add_argument("--heads", type=int, help="attention heads (default 4)")
    parser.add_argument(
        "--batch", type=int, action="append", help="batch sizes (default 1 and 8)"
    )
    parser.add_argument(
        "--seq",
        type=int,
        action="append",
        help="sequence lengths (default 16, 64, 128 and 384; quick: 16 and 64)",
    )
    parser.add_argument("--rounds", type=int, help="rounds (default 3, 1 quick)")
    parser.add_argument("--worker", nargs=2, help=argparse.SUPPRESS)
    common.add_timing_options(parser)
    return parser.parse_args(argv)


def main(argv=None) -> int:
    opts = parse(argv)
    if opts.worker:
        worker(opts.worker[0], Path(opts.worker[1]))
        return 0
    timing = common.timing_options(opts)
    hidden = opts.hidden or (64 if opts.quick else 256)
    layers = opts.layers or (2 if opts.quick else 4)
    heads = opts.heads or 4
    rounds = opts.rounds or (1 if opts.quick else 3)
    if opts.quick and not (opts.batch or opts.seq):
        sizes = [(1, 16), (8, 64)]
    else:
        seqs = opts.seq or [16, 64, 128, 384]
        sizes = [(b, s) for b in (opts.batch or [1, 8]) for s in seqs]
    if hidden % heads or min(hidden, layers, heads, rounds) < 1:
        raise SystemExit("--hidden must be a multiple of --heads; all positive")
    if max(s for _, s in sizes) > MAX_LEN or min(min(size) for size in sizes) < 1:
        raise SystemExit(f"batch and seq must be positive, seq at most {MAX_LEN}")
    print(common.describe_machine())
    print(common.threads_note())
    try:
        import onnx  # noqa: F401
        import torch  # noqa: F401
    except ImportError as exc:
        print(f"not installed ({exc.name}): the models are exported by torch")
        return 0
    wrong = []
    for model in dict.fromkeys(opts.model or MODELS):
        config = Config(model, hidden, layers, heads)
        result = bench(config, sizes, rounds, timing)
        print()
        print(config.describe())
        print_table(result, sizes)
        wrong += [
            f"{model} {runtime} {_tag(size)}: max relative error "
            f"{result.error[runtime, size]:.3g}"
            for (runtime, size), status in result.status.items()
            if status == "WRONG"
        ]
    if wrong:
        print(f"\nWRONG: ember differs from onnxruntime by more than {TOLERANCE:g}:")
        print("\n".join(f"  {line}" for line in wrong))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
