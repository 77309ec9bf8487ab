"""Generating text with a compiled causal LM: the KV cache, prefill, decode,
sampling. Imports nothing from the compiler, so an engine exported as a
library generates in any process with the runtime::

    from ember.runtime.llm import Engine
    engine = Engine(load_module("gpt2.so"))
    for token in engine.generate([464, 2068], max_new_tokens=20):
        print(token)

The library is an `ember.llm` step (`ember.llm.model`): inputs `ids` (n) and
each layer's `past_key.i` / `past_value.i` (past, H_kv, D); outputs the last
position's `logits` (1, V) and each layer's new `key.i` / `value.i` (n, H_kv,
D). The engine reads all it needs from the library's model metadata: the
layers, heads and head width from the cache inputs, the vocabulary from the
logits, the context from the bound of `past`.

The cache is the engine's: one preallocated (max_context, H_kv, D) array per
layer and role, token-major, so the first `past` rows are a contiguous
prefix passed to the step as it lies (no copy), and the step's new rows are
written after it. Prefill runs the whole prompt in one call; decode one
token a call.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence

import numpy as np

from .errors import EmberValueError
from .graph_module import GraphModule
from .ndarray import cpu


class Engine:
    """A causal LM's step with its KV cache, for one sequence.

    Args:
        lib: the loaded (or just compiled) step library.

    Attributes:
        length: tokens in the cache (the prompt and what was generated).
        max_context: the most tokens the cache holds.
    """

    def __init__(self, lib):
        self.lib = lib
        self.module = GraphModule(lib["default"](cpu()))
        model = lib.metadata.get("model") or {}
        inputs = {t["name"]: t for t in model.get("inputs", [])}
        outputs = {t["name"]: t for t in model.get("outputs", [])}
        self.layers = sum(1 for n in inputs if n.startswith("past_key."))
        cache = inputs.get("past_key.0", {}).get("shape", [])
        logits = outputs.get("logits", {}).get("shape", [])
        if "ids" not in inputs or len(cache) != 3 or len(logits) != 2:
            raise EmberValueError(
                "Engine: expected an ember.llm step library (inputs ids and "
                "past_key.* of (past, heads, width), output logits (1, vocab)), "
                f"got inputs {sorted(inputs)}"
            )
        _, self.kv_heads, self.head_dim = cache
        self.vocab = logits[-1]
        bound = (model.get("bounds") or {}).get("past")
        if not isinstance(bound, int):
            raise EmberValueError("Engine: the step library has no bound on 'past'")
        self.max_context = bound
        shape = (self.layers, 2, self.max_context, self.kv_heads, self.head_dim)
        self.cache = np.zeros(shape, np.float32)
        self.length = 0
        self._outputs = [n["name"] for n in model["outputs"]]

    def export(self, path) -> None:
        """Write the step library (weights included) to `path` (`.so` or
        `.tar`): `Engine(load_module(path))` generates in any process."""
        self.lib.export_library(path)

    def reset(self) -> None:
        """Forget the sequence: the next call is a prefill."""
        self.length = 0

    def prefill(self, ids: Sequence[int]) -> np.ndarray:
        """Run the prompt `ids` (after any tokens already in the cache) in one
        call; the logits (V,) of the token after it."""
        return self._step(ids)

    def decode(self, token: int) -> np.ndarray:
        """Append one token; the logits (V,) of the token after it."""
        return self._step([token])

    def _step(self, tokens: Sequence[int]) -> np.ndarray:
        ids = np.asarray(tokens, np.int64).reshape(-1)
        past, n = self.length, ids.shape[0]
        if n == 0:
            raise EmberValueError("expected at least one token, got none")
        if past + n > self.max_context:
            raise EmberValueError(
                f"the context holds {self.max_context} tokens: {past} in the "
                f"cache and {n} more do not fit (load with a larger max_context)"
            )
        if ids.min() < 0 or ids.max() >= self.vocab:
            raise EmberValueError(
                f"token ids must be in [0, {self.vocab}), got {int(ids.min())} "
                f"to {int(ids.max())}"
            )
        feeds: dict[str, np.ndarray] = {"ids": ids}
        for i in range(self.layers):
            feeds[f"past_key.{i}"] = self.cache[i, 0, :past]
            feeds[f"past_value.{i}"] = self.cache[i, 1, :past]
        results = dict(zip(self._outputs, self.module(**feeds), strict=True))
        for i in range(self.layers):
            self.cache[i, 0, past : past + n] = results[f"key.{i}"]
            self.cache[i, 1, past : past + n] = results[f"value.{i}"]
        self.length = past + n
        return results["logits"].reshape(-1)

    def generate(
        self,
        input_ids: Sequence[int],
        max_new_tokens: int,
        *,
        greedy: bool = True,
        temperature: float = 1.0,
        top_k: int | None = None,
        top_p: float | None = None,
        seed: int | None = None,
        eos_token_id: int | Sequence[int] | None = None,
    ) -> Iterator[int]:
        """The next `max_new_tokens` ids after the prompt `input_ids`, one at
        a time as each is decoded (a new sequence: the cache is reset).

        Args:
            greedy: take the most likely token (the default); False samples
                from the logits / `temperature`, kept to the `top_k` most
                likely and the smallest set of probability `top_p`.
            seed: the sampling's random seed.
            eos_token_id: stop after this token (or any of these).
        """
        if max_new_tokens < 0:
            raise EmberValueError(f"max_new_tokens must be >= 0, got {max_new_tokens}")
        if not greedy and not temperature > 0:
            raise EmberValueError(f"temperature must be > 0, got {temperature}")
        if top_k is not None and top_k < 1:
            raise EmberValueError(f"top_k must be >= 1, got {top_k}")
        if top_p is not None and not 0 < top_p <= 1:
            raise EmberValueError(f"top_p must be in (0, 1], got {top_p}")
        stop = (
            {eos_token_id} if isinstance(eos_token_id, int) else set(eos_token_id or ())
        )
        rng = np.random.default_rng(seed)
        self.reset()
        if max_new_tokens == 0:
            return
        logits = self.prefill(input_ids)
        for step in range(max_new_tokens):
            token = _pick(logits, greedy, temperature, top_k, top_p, rng)
            yield token
            if token in stop or step == max_new_tokens - 1:
                return
            logits = self.decode(token)


def _pick(logits: np.ndarray, greedy: bool, temperature, top_k, top_p, rng) -> int:
    """The next token from `logits` (V,): its argmax, or a sample."""
    if greedy:
        return int(np.argmax(logits))
    scaled = logits.astype(np.float64) / temperature
    order = np.argsort(-scaled, kind="stable")
    if top_k is not None:
        order = order[:top_k]
    probs = np.exp(scaled[order] - scaled[order[0]])
    probs /= probs.sum()
    if top_p is not None:  # the smallest head whose mass reaches top_p
        keep = int(np.searchsorted(np.cumsum(probs), top_p) + 1)
        order, probs = order[:keep], probs[:keep] / probs[:keep].sum()
    return int(order[rng.choice(len(order), p=probs)])
