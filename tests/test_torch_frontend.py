"""ember.frontends.torch: torch.export programs to graph IR, and
torch.compile(backend="ember"), against eager PyTorch (rtol 1e-4, same argmax)."""

import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

torch = pytest.importorskip(
    "torch", reason="torch is not installed (pip install -e '.[torch]')"
)

from torch import nn  # noqa: E402

from ember.frontends import torch as ember_torch  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "examples"))
import torch_models  # noqa: E402

# torch's own pytree, on every export
pytestmark = pytest.mark.filterwarnings("ignore:.*LeafSpec:FutureWarning")

MODELS = {
    "mobilenet_v2": lambda: (
        torch_models.mobilenet_v2(num_classes=10, width=0.35),
        torch.randn(2, 3, 32, 32, generator=torch.Generator().manual_seed(1)),
    ),
    "transformer_block": lambda: (
        torch_models.transformer_block(d=32, heads=4),
        torch.randn(1, 8, 32, generator=torch.Generator().manual_seed(1)),
    ),
    "multihead_attention_block": lambda: (
        torch_models.torch_attention_block(d=32, heads=4),
        torch.randn(1, 8, 32, generator=torch.Generator().manual_seed(1)),
    ),
}


@pytest.fixture(autouse=True)
def fresh_dynamo():
    """Dynamo caches graphs by code object, across tests."""
    torch._dynamo.reset()


def assert_matches(got: torch.Tensor, want: torch.Tensor) -> None:
    scale = float(want.abs().max())
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-4, atol=1e-5 * scale)
    assert torch.equal(got.argmax(-1), want.argmax(-1))


@pytest.mark.parametrize(
    "name",
    [
        pytest.param(n, marks=pytest.mark.slow) if n == "mobilenet_v2" else n
        for n in MODELS
    ],
)
def test_exported_program_matches_eager(name):
    model, x = MODELS[name]()
    with torch.no_grad():
        want = model(x)
    compiled = ember_torch.compile(model, (x,))
    assert_matches(compiled(x), want)


@pytest.mark.parametrize(
    "name",
    [
        # the CNN compiles through torch.compile in test_torch_symbolic too
        pytest.param(n, marks=pytest.mark.slow) if n == "mobilenet_v2" else n
        for n in MODELS
    ],
)
def test_torch_compile_matches_eager(name):
    model, x = MODELS[name]()
    with torch.no_grad():
        want = model(x)
        got = torch.compile(model, backend="ember")(x)
    assert_matches(got, want)


def test_from_exported_program_names_inputs_and_params():
    model = torch_models.mobilenet_v2(num_classes=10, width=0.35)
    ep = torch.export.export(model, (torch.randn(1, 3, 32, 32),))
    module, params = ember_torch.from_exported_program(ep)
    text = str(module)
    assert '{ember.name = "x"}' in text and '{ember.name = "output"}' in text
    assert 'graph.param "features.0.0.weight"' in text
    assert "graph.batch_norm" in text and "graph.dense" in text
    state = model.state_dict()
    assert "features.0.1.running_var" in params
    for name, value in params.items():
        np.testing.assert_array_equal(value, state[name].numpy())
    assert "features.0.1.num_batches_tracked" not in params  # int64, unused


class Unsupported(nn.Module):
    def forward(self, x):
        y = nn.functional.interpolate(x, scale_factor=2.0)
        y = torch.cumprod(y, dim=1) + torch.cumprod(y, dim=2)
        return y.flatten(1).sort(-1)[0]


def test_unsupported_ops_are_listed_in_one_message():
    ep = torch.export.export(Unsupported(), (torch.randn(1, 2, 4, 4),))
    with pytest.raises(ember_torch.UnsupportedOperatorError) as info:
        ember_torch.from_exported_program(ep)
    message = str(info.value)
    assert "3 unsupported aten operators" in message
    assert "aten.cumprod.default: 2 (cumprod, cumprod_1)" in message
    assert "aten.sort.default: 1 (sort)" in message
    assert "aten.upsample_nearest2d.vec: 1" in message
    assert info.value.unsupported["aten.sort.default"] == ["sort"]


def test_torch_compile_raises_the_list():
    with pytest.raises(Exception, match="aten.cumprod.default: 2") as info:
        with torch.no_grad():
            torch.compile(Unsupported(), backend="ember")(torch.randn(1, 2, 4, 4))
    assert "UnsupportedOperatorError" in str(info.value)


def test_unsupported_argument_values_are_named():
    model = nn.Sequential(nn.Conv1d(3, 4, 3), nn.Dropout(0.5)).eval()
    ep = torch.export.export(model, (torch.randn(1, 3, 8),))
    with pytest.raises(ember_torch.UnsupportedOperatorError) as info:
        ember_torch.from_exported_program(ep)
    assert "aten.convolution.default (1-D (only 2-D)): 1" in str(info.value)


class Zoo(nn.Module):
    """Most ops the frontend converts, each once."""

    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(4, 8, 3, stride=2, padding=1, dilation=1, groups=2)
        self.up = nn.ConvTranspose2d(8, 8, 3, stride=2, padding=1, output_padding=1)
        self.prelu = nn.PReLU(8)
        self.fc = nn.Linear(8, 5, bias=False)

    def forward(self, x):
        y = self.conv(nn.functional.pad(x, (1, 0, 0, 1)))
        y = self.up(y)[:, :, 1:-1:2, :9]
        acts = [
            nn.functional.leaky_relu(y, 0.2),
            nn.functional.elu(y),
            nn.functional.selu(y),
            nn.functional.hardswish(y),
            nn.functional.hardsigmoid(y),
            nn.functional.silu(y),
            nn.functional.gelu(y, approximate="tanh"),
            nn.functional.softplus(y),
            nn.functional.mish(y),
            torch.sigmoid(y) * torch.tanh(y) - torch.exp(-y.abs()),
            torch.rsqrt(y * y + 1) + torch.clamp(y, -0.5, 0.5) / 2,
            self.prelu(y) ** 2,
        ]
        y = torch.cat(acts, dim=1)
        y = torch.where(y > 0.5, y, torch.full_like(y, 0.25)) + y[:, 0:1] * y[:, -1:]
        y = nn.functional.max_pool2d(y, 2) + nn.functional.avg_pool2d(y, 2)
        z = y.mean(dim=(2, 3)) - y.amax(dim=(2, 3)) + y.sum(dim=(2, 3)) / 16
        z = z.reshape(z.shape[0], -1, 8).sum(1)
        return nn.functional.log_softmax(self.fc(z), dim=-1), z.t()


def test_op_zoo_matches_eager():
    torch.manual_seed(0)
    model = Zoo().eval()
    x = torch.randn(2, 4, 9, 9)
    with torch.no_grad():
        want = model(x)
    got = ember_torch.compile(model, (x,))(x)
    assert isinstance(got, tuple) and len(got) == 2  # the model's structure
    for g, w in zip(got, want, strict=True):
        np.testing.assert_allclose(g.numpy(), w.numpy(), rtol=1e-4, atol=1e-5)


def test_inputs_and_outputs_are_not_copied():
    model = torch_models.transformer_block(d=16, heads=2)
    x = torch.randn(1, 4, 16)
    compiled = ember_torch.compile(model, (x,))
    seen = {}
    real = compiled.graph_module

    def spy(*arrays):
        seen["inputs"], seen["outputs"] = arrays, real(*arrays)
        return seen["outputs"]

    compiled.graph_module = spy  # type: ignore[assignment]
    y = compiled(x)
    assert seen["inputs"][0].data_ptr() == x.data_ptr()
    assert y.data_ptr() == seen["outputs"][0].ctypes.data


def test_torch_compile_freezes_weights_and_recompiles_on_change():
    model = torch_models.transformer_block(d=16, heads=2)
    x = torch.randn(1, 4, 16)
    runners = []

    def backend(gm, example_inputs):
        runners.append(ember_torch.ember_backend(gm, example_inputs))
        return runners[-1]

    with torch.no_grad():
        compiled = torch.compile(model, backend=backend)
        compiled(x)
        (runner,) = runners
        assert len(runner.frozen) == 16 and len(runner.user) == 1
        first = runner.model
        model.mlp[0].bias.add_(1.0)
        assert_matches(compiled(x), model(x))
    assert runner.model is not first


@pytest.mark.parametrize(
    "update",
    [
        lambda p: p.data.mul_(2.0),
        lambda p: p.data.copy_(torch.randn_like(p)),
        lambda p: p.data.__setitem__(0, 7.0),  # one element
        lambda p: setattr(p, "data", p.data * 3.0),  # new storage
    ],
    ids=["data.mul_", "data.copy_", "one element", "data ="],
)
def test_torch_compile_sees_weights_changed_through_data(update):
    """Writes through `p.data` bypass torch's version counter; the compiled
    model compares its weights' bytes and recompiles (before: stale weights,
    results differing silently)."""
    model = torch_models.transformer_block(d=16, heads=2)
    x = torch.randn(1, 4, 16)
    with torch.no_grad():
        compiled = torch.compile(model, backend="ember")
        assert_matches(compiled(x), model(x))
        update(model.mlp[0].weight)
        assert_matches(compiled(x), model(x))
        update(model.mlp[2].bias)
        assert_matches(compiled(x), model(x))


def test_torch_compile_freezing_trusts_the_version_counter():
    """options={"freezing": True}: no comparison per call; writes torch counts
    still recompile."""
    model = torch_models.transformer_block(d=16, heads=2)
    x = torch.randn(1, 4, 16)
    with torch.no_grad():
        compiled = torch.compile(model, backend="ember", options={"freezing": True})
        before = compiled(x)
        model.mlp[0].bias.data.add_(1.0)  # invisible under freezing, by contract
        assert_matches(compiled(x), before)
        model.mlp[0].bias.add_(1.0)
        assert_matches(compiled(x), model(x))
    with pytest.raises(Exception, match="options=.'freezing': bool."):
        with torch.no_grad():
            torch.compile(nn.Linear(4, 2), backend="ember", options={"fast": 1})(
                torch.randn(1, 4)
            )


def test_torch_compile_runs_every_shape():
    """Dynamo traces a second shape with symbolic sizes, which is compiled
    once for every later shape (tests/test_torch_symbolic.py counts)."""
    model = torch_models.transformer_block(d=16, heads=2)
    with torch.no_grad():
        compiled = torch.compile(model, backend="ember")
        for n in (4, 6, 6, 4):
            x = torch.randn(2, n, 16)
            assert_matches(compiled(x), model(x))


def test_torch_compile_under_inference_mode():
    model = torch_models.transformer_block(d=16, heads=2)
    x = torch.randn(1, 4, 16)
    with torch.inference_mode():
        assert_matches(torch.compile(model, backend="ember")(x), model(x))


def test_torch_compile_refuses_training():
    model = nn.Linear(4, 2)
    with pytest.raises(Exception, match="inference graphs"):
        torch.compile(model, backend="ember")(torch.randn(1, 4))


def test_inputs_must_be_float32():
    class Double(nn.Module):
        def forward(self, x):
            return x * 2

    ep = torch.export.export(Double(), (torch.ones(3, dtype=torch.float64),))
    with pytest.raises(ember_torch.UnsupportedOperatorError, match="float64 result"):
        ember_torch.from_exported_program(ep)


def test_backend_is_found_without_importing_the_frontend():
    """The installed package's torch_dynamo_backends entry point."""
    code = textwrap.dedent(
        """
        import sys, torch
        from torch._dynamo import lookup_backend
        assert "ember.frontends.torch" not in sys.modules
        print(lookup_backend("ember").__module__)
        """
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout
    assert out.strip() == "ember.frontends.torch"


def test_ember_does_not_import_torch():
    code = (
        "import sys, ember, ember.runtime, ember.frontends.onnx, ember.compiler.model; "
        "print('torch' in sys.modules)"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True
    ).stdout
    assert out.strip() == "False"
