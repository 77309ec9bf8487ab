"""Text generation side by side: ember.llm vs transformers eager, torch.compile
and onnxruntime, float32: the prompt's prefill time and decode tokens/s.

    .venv/bin/python benchmarks/generate.py            # three models, 64 new tokens, 5 rounds
    .venv/bin/python benchmarks/generate.py --quick    # the two small models, 8 tokens, 1 round
    .venv/bin/python benchmarks/generate.py --quick --models gpt2-small-ish
    .venv/bin/python benchmarks/generate.py --models gpt2-124m --new-tokens 128 --rounds 3

Models (built by transformers from a config with seeded random weights of
standard deviation 0.2, written by `save_pretrained` into the run's directory;
nothing is downloaded):

    gpt2-small-ish  GPT-2: 4 layers, d 256, 4 heads, vocabulary 2000
    llama-gqa       Llama with grouped-query attention: 4 layers, hidden 256,
                    8 heads sharing 2 key/value heads, MLP 688, vocabulary 2000
    gpt2-124m       GPT-2 small's own config: 12 layers, d 768, 12 heads,
                    vocabulary 50257 (124 M parameters; not with --quick)

The prompt is 32 fixed token ids; greedy decoding. Four runtimes, each in a
worker process of its own, all started together:

    ember          `ember.llm.load(folder, max_context=256)`: `prefill` of the
                   prompt in one call, then one `decode` call a token
    torch-eager    the transformers model: `model(ids, use_cache=True)` on the
                   prompt, then `model(token, cache=..., use_cache=True)` a
                   token (not `generate`, so that prefill and decode are timed
                   apart), under torch.no_grad, torch.set_num_threads(cores)
    torch-compile  the same calls on `torch.compile(model)` (backend inductor
                   unless --compile-backend says otherwise); a failed compile
                   is a row that says why
    onnxruntime    one ONNX graph of a step with its KV cache, exported by
                   torch's classic exporter (`dynamo=False`): inputs ids, the
                   attention mask and every layer's past keys and values
                   (dynamic sequence and past lengths), outputs the last
                   position's logits and the grown keys and values; a prefill
                   is the step with an empty past. InferenceSession on the
                   CPUExecutionProvider, default options

Every runtime first generates once (its warm-up, and torch.compile's compile):
its greedy ids must equal transformers' `generate(do_sample=False)` ids, or the
row is WRONG, never timed, and the run exits 1. Then rounds: in each, every
runtime in turn (the order rotated) generates once; only the model calls are
timed (the argmax is not). The table gives the medians over rounds: the
prefill's time, decode tokens/s (decode calls / their seconds), ember's
decode speed over each runtime's, and the float32 weights a decode step reads
(every parameter but the embedding rows a token looks up) per second, as a
share of the memory bandwidth measured once, STREAM-like, in numpy (weights
that fit in the L3, or a runtime that streams faster than numpy, pass 100%).
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
import warnings
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))

import common  # noqa: E402

EMBER = "ember"
EMBER_INT8 = "ember-int8"
EMBER_INT4 = "ember-int4"
QUANTIZED = {EMBER_INT8: ("int8", 1 / 4), EMBER_INT4: ("int4", (1 / 2 + 4 / 32) / 4)}
"""ember.llm's `quantize=` of each quantized row, and the bytes a weight
takes as a share of its float32 bytes (int4: half a byte and a float scale
per group of 32; int8: one byte, a scale per channel)."""
EAGER = "torch-eager"
COMPILED = "torch-compile"
ORT = "onnxruntime"
RUNTIMES = (EMBER, EMBER_INT8, EMBER_INT4, EAGER, COMPILED, ORT)
MODELS = {
    "gpt2-small-ish": (
        "GPT2",
        dict(n_layer=4, n_embd=256, n_head=4, vocab_size=2000, n_positions=512),
    ),
    "llama-gqa": (
        "Llama",
        dict(
            num_hidden_layers=4,
            hidden_size=256,
            num_attention_heads=8,
            num_key_value_heads=2,
            intermediate_size=688,
            vocab_size=2000,
        ),
    ),
    "gpt2-124m": ("GPT2", {}),  # GPT-2 small's own config
}
"""Each model's transformers config class (`<family>Config`) and its fields."""
QUICK_MODELS = ("gpt2-small-ish", "llama-gqa")
PROMPT = tuple(np.random.default_rng(0).integers(0, 2000, 32).tolist())
MAX_CONTEXT = 256
INIT_RANGE = 0.2
"""The weights' standard deviation. transformers' 0.02 makes a random model
repeat one token, which checks little; at 0.2 the greedy ids vary and the top
two logits stay at least 1e-2 apart, far above float32's differences."""
REPLY = "@generate-bench "
"""Prefix of a worker's answers on its stdout (anything else there is ignored)."""
SETTLE = 0.25
"""Seconds between two workers' generations: the last one's thread pool stops
spinning before the next one starts."""


# --------------------------------------------------------------------------- #
# The machine: its CPU and its memory bandwidth.


def cpu_model() -> str:
    """The CPU's name as /proc/cpuinfo gives it."""
    try:
        with open("/proc/cpuinfo") as info:
            for line in info:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return "?"


def _l3_bytes() -> int:
    """The last-level cache's size (32 MiB when the kernel does not say)."""
    try:
        text = Path("/sys/devices/system/cpu/cpu0/cache/index3/size").read_text()
        return int(text.strip().rstrip("K")) * 1024
    except (OSError, ValueError):
        return 32 << 20


def memory_bandwidth(repeat: int) -> tuple[float, str]:
    """The best GB/s of a STREAM-like copy (c = a) and triad (a = b + 3 c) on
    float64 arrays 8 times the L3, split over one thread per core (numpy lets
    go of the GIL); the triad goes by blocks that stay in cache, so each array
    crosses memory once. Also a line saying so."""
    n = max(8 * _l3_bytes(), 64 << 20) // 8
    a, b, c = np.full(n, 1.0), np.full(n, 2.0), np.full(n, 0.5)
    bounds = np.linspace(0, n, common.cores() + 1, dtype=np.int64)
    los, his = bounds[:-1].tolist(), bounds[1:].tolist()
    block = 1 << 16

    def copy(lo: int, hi: int) -> None:
        np.copyto(c[lo:hi], a[lo:hi])

    def triad(lo: int, hi: int) -> None:
        scratch = np.empty(block)
        for i in range(lo, hi, block):
            j = min(i + block, hi)
            np.multiply(c[i:j], 3.0, out=scratch[: j - i])
            np.add(b[i:j], scratch[: j - i], out=a[i:j])

    best = {}
    with ThreadPoolExecutor(len(los)) as pool:
        for kernel, arrays in ((copy, 2), (triad, 3)):
            for _ in range(repeat):
                start = time.perf_counter()
                list(pool.map(kernel, los, his))
                rate = arrays * 8 * n / (time.perf_counter() - start) / 1e9
                best[kernel.__name__] = max(best.get(kernel.__name__, 0.0), rate)
    line = (
        f"memory bandwidth {max(best.values()):.1f} GB/s: best of {repeat} runs, "
        f"copy {best['copy']:.1f}, triad {best['triad']:.1f} GB/s, "
        f"{len(los)} threads, arrays of {8 * n >> 20} MiB"
    )
    return max(best.values()), line


# --------------------------------------------------------------------------- #
# The models: built, saved, checked by transformers, exported to ONNX once.


@dataclass
class Model:
    """What the parent knows of one model: its reference ids, the bytes of
    weights a decode step reads, and why an ONNX export failed, if it did."""

    name: str
    parameters: int = 0
    weight_bytes: int = 0
    reference: list[int] = field(default_factory=list)
    export_error: str | None = None


def _weight_bytes(model) -> int:
    """float32 bytes of the weights one decode step reads: every parameter but
    the embedding tables, of which a token reads one row (a table tied to the
    LM head is read whole there, so it counts)."""
    import torch

    head = model.get_output_embeddings().weight
    looked_up = sum(
        m.weight.numel()
        for m in model.modules()
        if isinstance(m, torch.nn.Embedding) and m.weight is not head
    )
    return 4 * (sum(p.numel() for p in model.parameters()) - looked_up)


def export_onnx(model, path: Path) -> None:
    """Write one step of `model` with its KV cache as ONNX: (ids, mask, past
    keys and values of each layer) -> (last logits, present keys and values)."""
    import torch
    from transformers import DynamicCache

    with torch.no_grad():
        example = model(torch.tensor([[1, 2, 3]]), use_cache=True).cache
    past = [t for layer in example.layers for t in (layer.keys, layer.values)]
    layers = len(example.layers)

    class Step(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.model = model

        def forward(self, ids, mask, *flat):
            cache = DynamicCache(
                [(flat[2 * i], flat[2 * i + 1]) for i in range(layers)]
            )
            out = self.model(
                input_ids=ids, attention_mask=mask, cache=cache, use_cache=True
            )
            grown = [
                t for layer in out.cache.layers for t in (layer.keys, layer.values)
            ]
            return (out.logits[:, -1], *grown)

    names = [f"{role}.{i}" for i in range(layers) for role in ("key", "value")]
    axes = {"ids": {1: "n"}, "mask": {1: "total"}}
    axes |= {f"past_{name}": {2: "past"} for name in names}
    axes |= {f"present_{name}": {2: "total"} for name in names}
    with warnings.catch_warnings(), torch.no_grad():
        warnings.simplefilter("ignore")  # the tracer's notes on shape reads
        torch.onnx.export(
            Step(),
            (torch.tensor([[4, 5]]), torch.ones(1, 5, dtype=torch.int64), *past),
            str(path),
            dynamo=False,
            input_names=["ids", "mask", *(f"past_{n}" for n in names)],
            output_names=["logits", *(f"present_{n}" for n in names)],
            dynamic_axes=axes,
            opset_version=17,
        )


def prepare(name: str, directory: Path, new_tokens: int) -> Model:
    """Build `name` with seeded weights, save it, take transformers' greedy
    ids as the reference and export the ONNX step."""
    import torch
    import transformers

    transformers.utils.logging.disable_progress_bar()
    family, fields = MODELS[name]
    config = getattr(transformers, f"{family}Config")(
        **fields, initializer_range=INIT_RANGE, bos_token_id=None, eos_token_id=None
    )
    torch.manual_seed(0)
    model = transformers.AutoModelForCausalLM.from_config(config).eval()
    model.save_pretrained(directory / "hf")
    ids = torch.tensor([PROMPT])
    with torch.no_grad():
        out = model.generate(
            ids,
            attention_mask=torch.ones_like(ids),
            max_new_tokens=new_tokens,
            do_sample=False,
            pad_token_id=0,
        )
    result = Model(
        name,
        sum(p.numel() for p in model.parameters()),
        _weight_bytes(model),
        out[0, len(PROMPT) :].tolist(),
    )
    try:
        export_onnx(model, directory / "model.onnx")
    except Exception as exc:
        result.export_error = f"ONNX export: {common._first_line(exc)}"
    return result


# --------------------------------------------------------------------------- #
# A worker process: one runtime, generating on request (JSON lines on stdin).


def _torch_steps(directory: Path, compiled: bool, backend: str):
    """prefill(ids) and decode(token) on the transformers model, each returning
    the next token's logits."""
    import torch
    import transformers

    torch.set_num_threads(common.cores())
    model = transformers.AutoModelForCausalLM.from_pretrained(
        directory / "hf", dtype=torch.float32
    ).eval()
    forward = torch.compile(model, backend=backend) if compiled else model
    state = {}

    @torch.no_grad()
    def prefill(ids):
        out = forward(torch.tensor([ids]), use_cache=True)
        state["cache"] = out.cache
        return out.logits[0, -1]

    @torch.no_grad()
    def decode(token):
        out = forward(torch.tensor([[token]]), cache=state["cache"], use_cache=True)
        return out.logits[0, -1]

    note = f"torch {torch.__version__}, {torch.get_num_threads()} threads"
    return prefill, decode, note + (f", backend {backend}" if compiled else "")


def _ort_steps(directory: Path):
    """prefill(ids) and decode(token) on the ONNX step, the KV cache carried
    from one call's outputs to the next's inputs."""
    import onnxruntime

    session = onnxruntime.InferenceSession(
        str(directory / "model.onnx"), providers=["CPUExecutionProvider"]
    )
    pasts = [i for i in session.get_inputs() if i.name.startswith("past_")]
    state = {}

    def step(ids):
        past = state["past"]
        feeds = {
            "ids": np.array([ids], np.int64),
            "mask": np.ones((1, past[0].shape[2] + len(ids)), np.int64),
            **{i.name: value for i, value in zip(pasts, past, strict=True)},
        }
        logits, *state["past"] = session.run(None, feeds)
        return logits[0]

    def prefill(ids):
        state["past"] = [
            np.zeros([0 if isinstance(d, str) else d for d in i.shape], np.float32)
            for i in pasts
        ]
        return step(ids)

    def decode(token):
        return step([token])

    return prefill, decode, f"onnxruntime {onnxruntime.__version__}"


def _ember_steps(directory: Path, quantize: str | None):
    """prefill(ids) and decode(token) on ember.llm's engine."""
    import ember.llm

    start = time.perf_counter()
    engine = ember.llm.load(
        directory / "hf", max_context=MAX_CONTEXT, quantize=quantize
    )
    seconds = time.perf_counter() - start

    def prefill(ids):
        engine.reset()
        return engine.prefill(ids)

    note = (
        f"compiled in {seconds:.1f} s (as the other workers loaded), "
        f"threads {common.ember_threads()}"
    )
    return prefill, engine.decode, note


def generate(prefill, decode, prompt: list[int], new_tokens: int) -> dict:
    """Greedy ids after `prompt`, the prefill's seconds and each decode call's."""
    start = time.perf_counter()
    logits = prefill(prompt)
    prefill_s = time.perf_counter() - start
    ids, decode_s = [int(logits.argmax())], []
    while len(ids) < new_tokens:
        start = time.perf_counter()
        logits = decode(ids[-1])
        decode_s.append(time.perf_counter() - start)
        ids.append(int(logits.argmax()))
    return {"ids": ids, "prefill": prefill_s, "decode": decode_s}


def forced(prefill, decode, prompt: list[int], stream: list[int]) -> list[int]:
    """The most likely id at each step of `stream` after `prompt`, each step
    fed the stream's own id (teacher forcing): a quantized model's top-1
    agreement with float32's, step by step, not compounding."""
    logits = prefill(prompt)
    ids = [int(logits.argmax())]
    for token in stream[:-1]:
        ids.append(int(decode(token).argmax()))
    return ids


def worker(runtime: str, directory: Path, backend: str) -> None:
    """Load `runtime`'s model, then answer each command line with one greedy
    generation, timed (or, given `forced`, the top-1 ids along that stream)."""

    def load():
        if runtime == EMBER or runtime in QUANTIZED:
            quantize = QUANTIZED[runtime][0] if runtime in QUANTIZED else None
            prefill, decode, note = _ember_steps(directory, quantize)
        elif runtime == ORT:
            prefill, decode, note = _ort_steps(directory)
        else:
            prefill, decode, note = _torch_steps(
                directory, runtime == COMPILED, backend
            )
        return (prefill, decode), note

    def answer(steps, command: dict) -> dict:
        if "forced" in command:
            return {"ids": forced(*steps, command["prompt"], command["forced"])}
        return generate(*steps, command["prompt"], command["new_tokens"])

    common.serve(REPLY, load, answer)


# --------------------------------------------------------------------------- #
# The driver: prepare, check, interleaved rounds, the table.


@dataclass
class Result:
    """One model's rows: each runtime's status, note and times per round."""

    model: Model
    status: dict = field(default_factory=dict)  # runtime -> "ok", "WRONG", ...
    note: dict = field(default_factory=dict)  # runtime -> text
    prefill: dict = field(default_factory=dict)  # runtime -> [seconds]
    per_token: dict = field(default_factory=dict)  # runtime -> [decode seconds]

    def decode_rate(self, runtime: str) -> float | None:
        """Decode tokens/s: the median over rounds."""
        times = self.per_token.get(runtime)
        return 1 / statistics.median(times) if times else None


def _mismatch(got: list[int], expected: list[int]) -> str:
    if len(got) != len(expected):
        return f"{len(got)} ids, expected {len(expected)}"
    at = next(i for i, (a, b) in enumerate(zip(got, expected, strict=True)) if a != b)
    return f"token {at}: id {got[at]}, expected {expected[at]} (transformers generate)"


def check(result: Result, workers: dict, new_tokens: int) -> None:
    """Generate once with each runtime (its warm-up); a runtime whose ids are
    not transformers' is WRONG and is not timed."""
    for runtime, w in workers.items():
        start = time.perf_counter()
        answer = w.ask(prompt=list(PROMPT), new_tokens=new_tokens)
        seconds = time.perf_counter() - start
        if answer["status"] != "ok":
            result.status[runtime] = "failed"
            result.note[runtime] = answer["note"]
        elif runtime in QUANTIZED:  # quantized: its top-1 agreement, teacher forced
            reference = result.model.reference
            ids = w.ask(prompt=list(PROMPT), forced=reference).get("ids", [])
            same = sum(a == b for a, b in zip(ids, reference, strict=False))
            result.note[runtime] += (
                f", top-1 agreement {same}/{len(reference)} (teacher forced)"
            )
        elif answer["ids"] != result.model.reference:
            result.status[runtime] = "WRONG"
            result.note[runtime] = _mismatch(answer["ids"], result.model.reference)
        elif runtime == COMPILED:
            result.note[runtime] += (
                f", compiled in the first generation ({seconds:.1f} s)"
            )


def measure_rounds(result: Result, workers: dict, new_tokens: int, rounds: int) -> None:
    """Every round, every checked runtime generates once (the order rotated)."""
    order = [r for r in workers if result.status[r] == "ok"]
    for round_ in range(rounds):
        load = os.getloadavg()[0]
        print(
            f"  round {round_ + 1} of {rounds} (load average {load:.2f}) ...",
            flush=True,
        )
        for runtime in order:
            time.sleep(SETTLE)
            answer = workers[runtime].ask(prompt=list(PROMPT), new_tokens=new_tokens)
            if answer["status"] != "ok":
                result.status[runtime] = "failed"
                result.note[runtime] = answer["note"]
                continue
            result.prefill.setdefault(runtime, []).append(answer["prefill"])
            per_token = statistics.fmean(answer["decode"])
            result.per_token.setdefault(runtime, []).append(per_token)
        order = [r for r in order[1:] + order[:1] if result.status[r] == "ok"]


def bench(name: str, new_tokens: int, rounds: int, backend: str) -> Result:
    """One model: prepare it, start the workers, check, measure."""
    print(f"\n{name}: preparing ...", flush=True)
    with tempfile.TemporaryDirectory(prefix="ember-generate-bench-") as tmp:
        directory = Path(tmp)
        result = Result(prepare(name, directory, new_tokens))
        if result.model.export_error:
            result.status[ORT], result.note[ORT] = "failed", result.model.export_error
        # started together: each loads (imports, compiles) while the others do
        workers = {
            runtime: common.Worker(
                __file__, REPLY, runtime, directory, "--compile-backend", backend
            )
            for runtime in RUNTIMES
            if runtime not in result.status
        }
        try:
            for runtime, w in list(workers.items()):
                ready = w.read()
                result.status[runtime] = ready["status"]
                result.note[runtime] = ready["note"]
                if ready["status"] == "ok":
                    print(f"  {runtime} worker ready: {ready['note']}", flush=True)
                else:
                    del workers[runtime]
                    w.close()
                    w.wait()
            check(result, workers, new_tokens)
            measure_rounds(result, workers, new_tokens, rounds)
        finally:  # all closed first: torch takes seconds to exit
            for w in workers.values():
                w.close()
            for w in workers.values():
                w.wait()
    return result


def _versus(ember: float | None, other: float | None) -> str:
    """ember's decode speed over another's, in words."""
    if not ember or not other:
        return "-"
    ratio = ember / other
    return f"{ratio:.2f}x faster" if ratio >= 1 else f"{1 / ratio:.2f}x slower"


def print_table(result: Result, bandwidth: float) -> None:
    """One row a runtime: check, prefill ms, decode tokens/s, ember / it, the
    weights' GB/s and their share of the memory bandwidth."""
    model = result.model
    print(
        f"\n{model.name}: {model.parameters / 1e6:.1f} M parameters, "
        f"{model.weight_bytes / 1e6:.1f} MB of float32 weights read a decode step; "
        f"prompt {len(PROMPT)} tokens, {len(model.reference)} new"
    )
    head = (
        f"{'runtime':<13}  {'check':>13}  {'prefill ms':>10}  {'decode tok/s':>12}  "
        f"{'ember/this decode':>17}  {'weights GB/s':>12}  {'of bw':>5}  notes"
    )
    print(head)
    print("-" * len(head))
    ember = result.decode_rate(EMBER)
    for runtime in RUNTIMES:
        status, note = result.status.get(runtime, "-"), result.note.get(runtime, "")
        rate = result.decode_rate(runtime)
        prefill = result.prefill.get(runtime)
        cells = f"{runtime:<13}  {status:>13}  "
        if prefill and rate:
            share = QUANTIZED[runtime][1] if runtime in QUANTIZED else 1
            weights = model.weight_bytes * share * rate / 1e9
            versus = "-" if runtime == EMBER else _versus(ember, rate)
            cells += (
                f"{statistics.median(prefill) * 1e3:10.2f}  {rate:12.1f}  "
                f"{versus:>17}  {weights:12.1f}  {weights / bandwidth:5.0%}"
            )
        else:
            cells += f"{'':>10}  {'':>12}  {'':>17}  {'':>12}  {'':>5}"
        print(f"{cells}  {note}".rstrip())
    print(
        "check: greedy ids equal to transformers' generate (the quantized rows: "
        "their top-1 ids fed transformers' stream); prefill: the prompt in "
        "one call; decode: tokens/s over the decode calls; ember/this: ember's "
        "decode tokens/s over this row's; weights GB/s: the weights' bytes times "
        f"tokens/s; of bw: their share of {bandwidth:.1f} GB/s. Medians over rounds."
    )
    fastest = max(map(result.decode_rate, RUNTIMES), key=lambda r: r or 0)
    if model.weight_bytes < _l3_bytes():
        print(
            f"  the weights fit in the {_l3_bytes() >> 20} MiB L3: a decode step can "
            "read them from cache, past 100% of the memory bandwidth"
        )
    elif fastest and model.weight_bytes * fastest / 1e9 > bandwidth:
        print(
            "  past 100%: a runtime streams the weights faster than numpy's copy and "
            "triad do; the measured bandwidth is a floor, not the machine's peak"
        )


def parse(argv) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--quick", action="store_true", help="the small models, 8 new tokens, 1 round"
    )
    parser.add_argument(
        "--models",
        nargs="+",
        choices=list(MODELS),
        help=f"default: all ({', '.join(QUICK_MODELS)} with --quick)",
    )
    parser.add_argument(
        "--new-tokens", type=int, help="greedy tokens (default 64, 8 quick)"
    )
    parser.add_argument("--rounds", type=int, help="rounds (default 5, 1 quick)")
    parser.add_argument(
        "--compile-backend",
        default="inductor",
        help="torch.compile's backend (default inductor)",
    )
    parser.add_argument("--worker", nargs=2, help=argparse.SUPPRESS)
    return parser.parse_args(argv)


def main(argv=None) -> int:
    opts = parse(argv)
    if opts.worker:
        worker(opts.worker[0], Path(opts.worker[1]), opts.compile_backend)
        return 0
    models = opts.models or (QUICK_MODELS if opts.quick else list(MODELS))
    new_tokens = opts.new_tokens or (8 if opts.quick else 64)
    rounds = opts.rounds or (1 if opts.quick else 5)
    if rounds < 1 or not 2 <= new_tokens <= MAX_CONTEXT - len(PROMPT):
        raise SystemExit(
            f"--rounds must be positive, --new-tokens in [2, {MAX_CONTEXT - len(PROMPT)}]"
        )
    print(
        f"cpu {cpu_model()}, {common.cores()} threads (every runtime may use them all)"
    )
    print(common.describe_machine())
    bandwidth, line = memory_bandwidth(2 if opts.quick else 7)
    print(line)
    try:
        import torch  # noqa: F401
        import transformers  # noqa: F401
    except ImportError as exc:
        print(f"not installed ({exc.name}): the models are built by transformers")
        return 0
    wrong = []
    for name in dict.fromkeys(models):
        result = bench(name, new_tokens, rounds, opts.compile_backend)
        print_table(result, bandwidth)
        wrong += [
            f"{name} {runtime}: {result.note[runtime]}"
            for runtime, status in result.status.items()
            if status == "WRONG"
        ]
    if wrong:
        print("\nWRONG: greedy ids differ from transformers' generate:")
        print("\n".join(f"  {line}" for line in wrong))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
