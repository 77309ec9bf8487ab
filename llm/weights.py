"""A model folder's weights: every `*.safetensors` file (one, or the shards an
index names), read with `safetensors` and widened to float32."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from ember.runtime.errors import EmberValueError

_DTYPES = {"F32": np.float32, "F16": np.float16, "F64": np.float64}


def read_weights(model_dir: str | Path) -> dict[str, np.ndarray]:
    """Every tensor of `model_dir`'s safetensors files by name, as float32
    (bfloat16 and float16 widened exactly).

    Raises:
        EmberValueError: no safetensors file, a file safetensors cannot read,
            or a tensor of a type other than a float (named).
    """
    try:
        from safetensors import SafetensorError, deserialize
    except ImportError:
        raise EmberValueError(
            "ember.llm reads weights with safetensors: pip install 'ember[llm]'"
        ) from None

    files = sorted(Path(model_dir).glob("*.safetensors"))
    if not files:
        raise EmberValueError(
            f"{model_dir}: no *.safetensors file (ember.llm reads the weights "
            "save_pretrained writes; it never downloads)"
        )
    weights: dict[str, np.ndarray] = {}
    for path in files:
        try:
            tensors = deserialize(path.read_bytes())
        except (SafetensorError, OSError) as e:
            raise EmberValueError(
                f"{path}: not a readable safetensors file ({e})"
            ) from None
        for name, spec in tensors:
            weights[name] = _array(spec, f"{path.name}: {name}")
    return weights


def _array(spec: dict, what: str) -> np.ndarray:
    dtype, shape, data = spec["dtype"], tuple(spec["shape"]), spec["data"]
    if dtype == "BF16":  # the high half of a float32
        bits = np.frombuffer(data, np.uint16).astype(np.uint32) << 16
        return bits.view(np.float32).reshape(shape)
    if dtype not in _DTYPES:
        raise EmberValueError(f"{what}: expected a float tensor, got {dtype}")
    return np.frombuffer(data, _DTYPES[dtype]).astype(np.float32).reshape(shape)
