"""Causal language models from a Hugging Face folder: compiled once, then
prefill, decode and generate with the KV cache in the runtime.

    engine = ember.llm.load("gpt2-folder", max_context=512)   # quantize="int4"
    for token in engine.generate([464, 2068], max_new_tokens=20):
        ...
    engine.export("gpt2.so")     # Engine(load_module("gpt2.so")) in any process

`load` reads `config.json` and the `*.safetensors` weights of a folder as
`save_pretrained` writes it (it never downloads), writes the architecture's
step in graph IR (`ember.llm.model`) and compiles it with `compile_model`:
one library over the symbols `n` (new tokens) and `past` (cached ones),
`past` bounded by `max_context`. Architectures: GPT-2 and the Llama family
(Llama, Mistral, Qwen2: RoPE, RMSNorm, SwiGLU, grouped-query attention).
"""

from __future__ import annotations

import os
from pathlib import Path

from ember.llm.config import Arch, read_config
from ember.runtime.errors import EmberValueError
from ember.runtime.llm import Engine

__all__ = ["Arch", "Engine", "compile_step", "load", "read_config"]


QUANTIZE = {"int8": (8, None), "int4": (4, 32)}
"""`quantize=` -> (bits, the default group size; None: one scale per output
channel)."""


def compile_step(
    model_dir: str | os.PathLike,
    target="llvm",
    max_context=None,
    quantize: str | None = None,
    group_size: int | None = None,
):
    """The compiled step library of the model in `model_dir` (what `load`
    wraps in an `Engine`).

    Args:
        target: the target to compile for (`compile_model`'s).
        max_context: the most tokens (prompt and generated) a sequence
            holds; default, and at most, the positions the model knows.
        quantize: "int8" or "int4": every dense layer's weight (the LM head's
            too) stored as integers with float scales and dequantized inside
            the product (`graph.dense_dequant`); None keeps float32.
        group_size: inputs sharing one scale, which must divide each layer's
            inputs (default: all of a channel's for int8; for int4 32, or the
            largest group that divides a layer's inputs).

    Raises:
        EmberValueError: the folder has no config or weights, an
            architecture or option ember does not build, a weight missing or
            of another shape, a max_context out of range (each named).
    """
    from ember.compiler.model import compile_model
    from ember.llm.model import step_module
    from ember.llm.weights import read_weights

    model_dir = Path(model_dir)
    arch = read_config(model_dir)
    if max_context is None:
        max_context = arch.max_positions
    if not isinstance(max_context, int) or not 1 <= max_context <= arch.max_positions:
        raise EmberValueError(
            f"max_context must be an int in [1, {arch.max_positions}] (the "
            f"positions {Path(model_dir).name} knows), got {max_context!r}"
        )
    if quantize is not None and quantize not in QUANTIZE:
        raise EmberValueError(
            f"quantize must be one of {', '.join(QUANTIZE)} or None, got {quantize!r}"
        )
    bits, group = QUANTIZE[quantize] if quantize else (None, None)
    if group_size is not None:
        if not isinstance(group_size, int) or group_size < 2 or group_size % 2:
            raise EmberValueError(
                f"group_size must be an even int >= 2, got {group_size!r}"
            )
        group = group_size
    fit = group_size is None  # a default group shrinks to divide a layer
    module, params = step_module(arch, read_weights(model_dir), bits, group, fit)
    return compile_model(module, params, target=target, bounds={"past": max_context})


def load(
    model_dir: str | os.PathLike,
    target="llvm",
    max_context=None,
    quantize: str | None = None,
    group_size: int | None = None,
) -> Engine:
    """An `Engine` for the model in `model_dir` (see `compile_step`)."""
    return Engine(compile_step(model_dir, target, max_context, quantize, group_size))
