"""`ember generate`: text from a causal LM folder (or an exported engine).

    ember generate MODEL_DIR --prompt-ids 464,2068,7586 --max-new-tokens 20
    ember generate MODEL_DIR --prompt "Once upon a time" --max-new-tokens 20
    ember generate gpt2.so --prompt-ids 464,2068 --max-new-tokens 20
    ember generate MODEL_DIR --prompt-ids 464,2068 --quantize int4 --group-size 64

MODEL_DIR is a folder as `save_pretrained` writes it (`config.json`,
`*.safetensors`, optionally `tokenizer.json`); it is compiled first
(`ember.llm.load`), and `--export FILE` keeps the engine as a library. A
library file instead runs on the runtime alone. The generated ids (or, with
`--prompt`, the text) go to stdout as they are decoded; the prefill and
decode speed to stderr, with a progress line on a terminal. Greedy unless
`--temperature`, `--top-k` or `--top-p` ask for sampling.

Exit status as every ember tool (`ember.tools.common`).
"""

import argparse
import json
import logging
import sys
import time
from pathlib import Path

from ember.tools.common import UsageError, add_common_arguments, tool_main

log = logging.getLogger("ember.tools.generate")


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="ember generate",
        description="Generate tokens with a causal LM: a Hugging Face folder "
        "(compiled first) or an engine library.",
    )
    parser.add_argument(
        "model", help="the model folder, or an exported engine (.so/.tar)"
    )
    prompt = parser.add_mutually_exclusive_group(required=True)
    prompt.add_argument("--prompt-ids", metavar="IDS", help="token ids, e.g. 1,2,3")
    prompt.add_argument("--prompt", metavar="TEXT", help="text (needs tokenizer.json)")
    parser.add_argument("--max-new-tokens", type=int, default=32, metavar="N")
    parser.add_argument(
        "--max-context", type=int, metavar="N", help="tokens the cache holds"
    )
    parser.add_argument("--greedy", action="store_true", help="the default")
    parser.add_argument("--temperature", type=float, metavar="T")
    parser.add_argument("--top-k", type=int, metavar="K")
    parser.add_argument("--top-p", type=float, metavar="P")
    parser.add_argument("--seed", type=int, default=0, help="the sampling's seed")
    parser.add_argument(
        "--eos-token-id",
        type=int,
        metavar="ID",
        help="stop after this token (default: the config's eos_token_id)",
    )
    parser.add_argument(
        "--quantize",
        choices=("int8", "int4"),
        help="store the dense layers' weights as integers (dequantized in the product)",
    )
    parser.add_argument(
        "--group-size",
        type=int,
        metavar="N",
        help="weights sharing one scale (default: a channel's for int8, 32 for int4)",
    )
    parser.add_argument("--target", default="llvm", help="what to compile for")
    parser.add_argument("--export", metavar="FILE", help="also write the engine here")
    add_common_arguments(parser, "ember generate")
    return parser


def _ids(text: str) -> list[int]:
    try:
        ids = [int(t) for t in text.replace(" ", "").split(",") if t]
    except ValueError:
        raise UsageError(
            f"--prompt-ids: expected ints like 1,2,3, got {text!r}"
        ) from None
    if not ids:
        raise UsageError("--prompt-ids: expected at least one id")
    return ids


def _engine(opts: argparse.Namespace):
    path = Path(opts.model)
    if path.is_dir():
        import ember.llm

        engine = ember.llm.load(
            path, opts.target, opts.max_context, opts.quantize, opts.group_size
        )
        if opts.export:
            engine.export(opts.export)
            log.info("wrote %s", opts.export)
        return engine
    if not path.exists():
        raise UsageError(f"{path}: no such folder or library")
    if opts.max_context is not None or opts.export or opts.quantize:
        raise UsageError("--max-context, --quantize and --export need a model folder")
    from ember.runtime import load_module
    from ember.runtime.llm import Engine

    return Engine(load_module(str(path)))


def _eos(opts: argparse.Namespace):
    if opts.eos_token_id is not None:
        return opts.eos_token_id
    config = Path(opts.model) / "config.json"
    if config.is_file():
        return json.loads(config.read_text(encoding="utf-8")).get("eos_token_id")
    return None


def run(opts: argparse.Namespace) -> None:
    if opts.max_new_tokens < 1:
        raise UsageError(
            f"--max-new-tokens: expected a positive count, got {opts.max_new_tokens}"
        )
    sampling = any(x is not None for x in (opts.temperature, opts.top_k, opts.top_p))
    if sampling and opts.greedy:
        raise UsageError(
            "--greedy and sampling options (--temperature, --top-k, --top-p)"
        )
    tokenizer = None
    if opts.prompt is not None:
        found = Path(opts.model) / "tokenizer.json"
        if not found.is_file():
            raise UsageError(f"--prompt needs {found}; give --prompt-ids instead")
        try:
            from tokenizers import Tokenizer
        except ImportError:
            raise UsageError(
                "--prompt needs tokenizers: pip install 'ember[llm]'"
            ) from None

        tokenizer = Tokenizer.from_file(str(found))
        prompt = tokenizer.encode(opts.prompt).ids
    else:
        prompt = _ids(opts.prompt_ids)
    start = time.perf_counter()
    engine = _engine(opts)
    log.info("%s ready in %.1f s", opts.model, time.perf_counter() - start)
    tokens = engine.generate(
        prompt,
        opts.max_new_tokens,
        greedy=not sampling,
        temperature=opts.temperature or 1.0,
        top_k=opts.top_k,
        top_p=opts.top_p,
        seed=opts.seed,
        eos_token_id=_eos(opts),
    )
    bar = sys.stderr.isatty()
    times, out = [time.perf_counter()], []
    for token in tokens:
        times.append(time.perf_counter())
        out.append(token)
        if tokenizer is None:
            print(token, end=" ", flush=True)
        if bar:
            print(f"\r{len(out)}/{opts.max_new_tokens} tokens", end="", file=sys.stderr)
    if bar:
        print(file=sys.stderr)
    print(tokenizer.decode(out) if tokenizer is not None else "")
    prefill, decode = times[1] - times[0], times[-1] - times[1]
    log.info(
        "prefill: %d tokens in %.1f ms (%.0f tokens/s)",
        len(prompt),
        prefill * 1e3,
        len(prompt) / prefill,
    )
    if len(out) > 1:
        log.info(
            "decode: %d tokens in %.1f ms (%.1f tokens/s)",
            len(out) - 1,
            decode * 1e3,
            (len(out) - 1) / decode,
        )


def main(argv=None) -> int:
    opts = _parser().parse_args(argv)
    return tool_main("ember generate", opts, run)


if __name__ == "__main__":
    sys.exit(main())
