"""The architectures of the transformer-and-PyTorch issue, imported from PyTorch
directly (`examples/torch_zoo.py`): MobileNetV3-small and -large, ShuffleNetV2,
a BERT-style encoder (int64 token ids and mask), a GPT-style block (causal
mask from a buffer), ViT and a 2-layer LSTM, each against eager PyTorch."""

import sys
from pathlib import Path

import numpy as np
import pytest

torch = pytest.importorskip(
    "torch", reason="torch is not installed (pip install -e '.[torch]')"
)

from ember.frontends import torch as ember_torch  # noqa: E402

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "examples"))
import torch_zoo  # noqa: E402

pytestmark = [
    pytest.mark.filterwarnings("ignore:.*LeafSpec:FutureWarning"),
    # nn.LSTM sets its flat weights during export
    pytest.mark.filterwarnings("ignore:The tensor attributes self.lstm"),
]

# the CNNs and ViT take a minute and a half together on two cores
SLOW = {"mobilenet_v3_small", "mobilenet_v3_large", "shufflenet_v2", "vit"}
MODELS = torch_zoo.examples(small=True)


def assert_matches(got: torch.Tensor, want: torch.Tensor) -> None:
    scale = float(want.abs().max())
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-4, atol=1e-4 * scale)


@pytest.mark.parametrize(
    "name",
    [pytest.param(n, marks=pytest.mark.slow) if n in SLOW else n for n in MODELS],
)
def test_model_matches_eager(name):
    model, *inputs = MODELS[name]()
    with torch.no_grad():
        want = model(*inputs)
    assert_matches(ember_torch.compile(model, inputs)(*inputs), want)


def test_token_ids_through_torch_compile():
    model, ids, mask = MODELS["bert_encoder"]()
    with torch.no_grad():
        want = model(ids, mask)
        got = torch.compile(model, backend="ember")(ids, mask)
    assert_matches(got, want)


def test_buffers_fold_at_import_parameters_stay_params():
    """The causal mask (~buffer, masked_fill) and positions (arange) are
    computed at import; the weights stay named params."""
    model, x = MODELS["gpt_block"]()
    ep = torch.export.export(model, (x,))
    module, params = ember_torch.from_exported_program(ep)
    text = str(module)
    assert "graph.logical_not" not in text and "causal" not in " ".join(params)
    assert "attn.qkv.weight" in params and "ln1.weight" in params


def test_unsupported_dtypes_are_named():
    class Doubles(torch.nn.Module):
        def forward(self, x):
            return x.double() * 2

    ep = torch.export.export(Doubles(), (torch.ones(3),))
    with pytest.raises(ember_torch.UnsupportedOperatorError, match="to float64"):
        ember_torch.from_exported_program(ep)
