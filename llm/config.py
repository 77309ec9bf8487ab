"""A Hugging Face causal LM's `config.json`, read into what the step graph
needs (`Arch`), refusing what ember does not build yet by name."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

from ember.runtime.errors import EmberValueError

GPT2 = ("GPT2LMHeadModel",)
LLAMA = (
    "LlamaForCausalLM",
    "MistralForCausalLM",
    "Qwen2ForCausalLM",
)
"""The architectures (`config.json`'s "architectures") by family: the Llama
family differs only in config fields (biases on q, k and v; head_dim)."""

_ACTIVATIONS = {
    "gelu_new": "gelu_tanh",
    "gelu_pytorch_tanh": "gelu_tanh",
    "gelu_fast": "gelu_tanh",
    "gelu": "gelu",
    "relu": "relu",
    "silu": "silu",
    "swish": "silu",
}


@dataclass(frozen=True)
class Arch:
    """One decoder's shape and numerics.

    Attributes:
        family: "gpt2" (learned positions, LayerNorm, GELU MLP, fused qkv
            with biases) or "llama" (RoPE, RMSNorm, SwiGLU, grouped-query
            attention).
        heads, kv_heads, head_dim: attention heads, key/value heads (as many
            as heads without grouped-query attention) and each head's width.
        max_positions: the longest context the model knows positions for.
    """

    family: str
    name: str
    layers: int
    hidden: int
    heads: int
    kv_heads: int
    head_dim: int
    intermediate: int
    vocab: int
    eps: float
    activation: str
    max_positions: int
    rope_theta: float = 10000.0
    qkv_bias: bool = False
    out_bias: bool = False
    mlp_bias: bool = False
    tied: bool = False
    eos_token_id: int | None = None


def read_config(model_dir: str | Path) -> Arch:
    """`model_dir`'s config.json as an `Arch`.

    Raises:
        EmberValueError: no config.json, or an architecture, activation or
            option ember does not build (named).
    """
    path = Path(model_dir) / "config.json"
    try:
        cfg = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise EmberValueError(
            f"{model_dir}: no config.json (expected a folder written by "
            "save_pretrained)"
        ) from None
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as e:
        raise EmberValueError(f"{path}: not a readable JSON config ({e})") from None
    if not isinstance(cfg, dict):
        raise EmberValueError(f"{path}: expected a JSON object")
    archs = cfg.get("architectures") or []
    name = next((a for a in archs if a in GPT2 + LLAMA), None)
    if name is None:
        raise EmberValueError(
            f"{path}: architecture {archs or cfg.get('model_type')!r} is not one "
            f"ember.llm builds; it builds {', '.join(GPT2 + LLAMA)}"
        )
    try:
        return _gpt2(cfg, name) if name in GPT2 else _llama(cfg, name, path)
    except (KeyError, TypeError, ValueError) as e:
        raise EmberValueError(f"{path}: missing or invalid field ({e})") from None


def _activation(name: str, path) -> str:
    if name not in _ACTIVATIONS:
        raise EmberValueError(
            f"{path}: activation {name!r} is not supported; supported: "
            f"{', '.join(sorted(_ACTIVATIONS))}"
        )
    return _ACTIVATIONS[name]


def _gpt2(cfg: dict, name: str) -> Arch:
    hidden, heads = int(cfg["n_embd"]), int(cfg["n_head"])
    for flag in ("scale_attn_by_inverse_layer_idx", "reorder_and_upcast_attn"):
        if cfg.get(flag):
            raise EmberValueError(f"GPT-2 config: {flag} is not supported")
    if cfg.get("scale_attn_weights") is False:
        raise EmberValueError("GPT-2 config: scale_attn_weights=false is not supported")
    return Arch(
        family="gpt2",
        name=name,
        layers=int(cfg["n_layer"]),
        hidden=hidden,
        heads=heads,
        kv_heads=heads,
        head_dim=hidden // heads,
        intermediate=int(cfg.get("n_inner") or 4 * hidden),
        vocab=int(cfg["vocab_size"]),
        eps=float(cfg.get("layer_norm_epsilon", 1e-5)),
        activation=_activation(cfg.get("activation_function", "gelu_new"), "GPT-2"),
        max_positions=int(cfg["n_positions"]),
        qkv_bias=True,
        out_bias=True,
        mlp_bias=True,
        tied=True,
        eos_token_id=cfg.get("eos_token_id"),
    )


def _llama(cfg: dict, name: str, path) -> Arch:
    hidden, heads = int(cfg["hidden_size"]), int(cfg["num_attention_heads"])
    kv_heads = int(cfg.get("num_key_value_heads") or heads)
    scaling = cfg.get("rope_scaling")
    rope = cfg.get("rope_parameters") or {}
    if scaling and scaling.get("rope_type", scaling.get("type")) != "default":
        raise EmberValueError(f"{path}: rope_scaling {scaling!r} is not supported")
    if rope and rope.get("rope_type", "default") != "default":
        raise EmberValueError(f"{path}: rope_parameters {rope!r} is not supported")
    theta = rope.get("rope_theta", cfg.get("rope_theta", 10000.0))
    if heads % kv_heads:
        raise EmberValueError(
            f"{path}: {heads} attention heads do not share {kv_heads} key/value heads"
        )
    window = cfg.get("sliding_window") if cfg.get("use_sliding_window", True) else None
    attention_bias = bool(cfg.get("attention_bias", False))
    return Arch(
        family="llama",
        name=name,
        layers=int(cfg["num_hidden_layers"]),
        hidden=hidden,
        heads=heads,
        kv_heads=kv_heads,
        head_dim=int(cfg.get("head_dim") or hidden // heads),
        intermediate=int(cfg["intermediate_size"]),
        vocab=int(cfg["vocab_size"]),
        eps=float(cfg.get("rms_norm_eps", 1e-6)),
        activation=_activation(cfg.get("hidden_act", "silu"), path),
        max_positions=int(
            min(cfg.get("max_position_embeddings", 2048), window or 1 << 62)
        ),
        rope_theta=float(theta),
        qkv_bias=name == "Qwen2ForCausalLM" or attention_bias,
        out_bias=attention_bias,
        mlp_bias=bool(cfg.get("mlp_bias", False)),
        tied=bool(cfg.get("tie_word_embeddings", False)),
        eos_token_id=cfg.get("eos_token_id"),
    )
