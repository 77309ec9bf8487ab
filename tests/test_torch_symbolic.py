"""torch models with symbolic sizes (issue 25): `torch.export` programs with
`Dim`s import symbolically (each of torch's size symbols named after the first
input and axis it is the size of, sizes computed in the graph as expressions,
never the example value a SymInt's `int()` gives) and compile to one library
that runs every shape; `torch.compile(backend="ember")` compiles a graph
dynamo traced with symbolic sizes once, for every shape, against eager
PyTorch."""

import warnings

import numpy as np
import pytest

import ember
import ember.compiler.model
from ember.dialects.graph_shapes import dims_of
from ember.runtime import GraphModule, cpu
from ember.runtime.shape_expr import Sym

torch = pytest.importorskip("torch")
from ember.frontends import torch as ember_torch  # noqa: E402
from ember.frontends.torch import from_exported_program  # noqa: E402

# torch's own pytree, on every export
pytestmark = pytest.mark.filterwarnings("ignore:.*LeafSpec:FutureWarning")


@pytest.fixture(autouse=True)
def fresh_dynamo():
    """Dynamo caches graphs by code object, and ember their libraries by
    what they compute, across tests."""
    torch._dynamo.reset()
    ember_torch._LIBRARIES.clear()


def assert_close(got, want: torch.Tensor) -> None:
    """Relative error (to the largest value) at most 1e-4."""
    want = want.detach().numpy()
    assert np.shape(got) == want.shape
    assert np.abs(np.asarray(got) - want).max() <= 1e-4 * np.abs(want).max()


def _export(module, args, dynamic_shapes):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return torch.export.export(module.eval(), args, dynamic_shapes=dynamic_shapes)


class _Heads(torch.nn.Module):
    """Attention heads from views that read `x.shape`."""

    def __init__(self):
        super().__init__()
        self.qkv = torch.nn.Linear(16, 48)

    def forward(self, x):
        b, t, d = x.shape
        q, k, v = self.qkv(x).split(d, dim=-1)
        q, k, v = (z.view(b, t, 2, d // 2).transpose(1, 2) for z in (q, k, v))
        a = torch.softmax(q @ k.transpose(-1, -2), -1) @ v
        return a.transpose(1, 2).reshape(b * t, d)


def test_a_program_exported_with_dims_imports_symbolically():
    batch, seq = torch.export.Dim("batch"), torch.export.Dim("seq")
    ep = _export(_Heads(), (torch.randn(2, 3, 16),), {"x": {0: batch, 1: seq}})
    module, _ = from_exported_program(ep)
    main = next(iter(module.ops))
    b, t = Sym("x.dim0"), Sym("x.dim1")
    assert dims_of(main.args[0].type) == (b, t, 16)
    assert dims_of(main.function_type.outputs.data[0]) == (b * t, 16)
    shapes = {dims_of(r.type) for op in module.walk() for r in op.results}
    assert (b, 2, t, t) in shapes  # the scores, from the heads' views


def test_static_programs_import_as_before():
    ep = _export(_Heads(), (torch.randn(2, 3, 16),), None)
    module, _ = from_exported_program(ep)
    main = next(iter(module.ops))
    assert dims_of(main.args[0].type) == (2, 3, 16)


def _cnn():
    torch.manual_seed(0)
    return torch.nn.Sequential(
        torch.nn.Conv2d(3, 8, 3, padding=1),
        torch.nn.BatchNorm2d(8),
        torch.nn.ReLU(),
        torch.nn.MaxPool2d(2),
        torch.nn.Conv2d(8, 8, 3, padding=1),
        torch.nn.ReLU(),
        torch.nn.AdaptiveAvgPool2d(1),
        torch.nn.Flatten(),
        torch.nn.Linear(8, 10),
    ).eval()


def test_heads_exported_with_dims_compile_once_and_run_every_shape():
    model = _Heads().eval()
    batch, seq = torch.export.Dim("batch"), torch.export.Dim("seq")
    ep = _export(model, (torch.randn(2, 3, 16),), {"x": {0: batch, 1: seq}})
    module, params = from_exported_program(ep)
    lib = ember.compile_model(module, params=params)
    run = GraphModule(lib["default"](cpu()))
    for b in (1, 3, 8):
        for t in (1, 5, 17):
            x = torch.randn(b, t, 16)
            (y,) = run(x.numpy())
            assert_close(y, model(x))


def test_a_cnn_exported_with_a_dynamic_batch_runs_every_batch():
    model = _cnn()
    batch = torch.export.Dim("batch")
    ep = _export(model, (torch.randn(2, 3, 16, 16),), ({0: batch},))
    module, params = from_exported_program(ep)
    lib = ember.compile_model(module, params=params)
    run = GraphModule(lib["default"](cpu()))
    for b in (1, 3, 8):
        x = torch.randn(b, 3, 16, 16)
        (y,) = run(x.numpy())
        assert_close(y, model(x))


def test_compile_takes_dynamic_shapes():
    """`ember.frontends.torch.compile(..., dynamic_shapes=)` exports with the
    `Dim`s: one compiled model, called on tensors of every batch."""
    model = _cnn()
    batch = torch.export.Dim("batch")
    compiled = ember_torch.compile(
        model, (torch.randn(2, 3, 16, 16),), dynamic_shapes=({0: batch},)
    )
    for b in (1, 3, 8):
        x = torch.randn(b, 3, 16, 16)
        with torch.no_grad():
            assert_close(compiled(x).numpy(), model(x))


@pytest.fixture
def compiles(monkeypatch):
    """The graphs the ember backend compiles, as their @main's types."""
    seen = []
    compile_model = ember.compiler.model.compile_model

    def counting(module, **kwargs):
        seen.append(str(next(iter(module.ops)).function_type))
        return compile_model(module, **kwargs)

    monkeypatch.setattr(ember.compiler.model, "compile_model", counting)
    return seen


def test_torch_compile_dynamic_compiles_once_for_every_shape(compiles):
    """dynamic=True: one symbolic library for every batch and length. A
    batch of 1 is a graph of its own, which dynamo specializes to it; this
    model reads the batch as an int (`view(b, ...)`), so that graph holds a
    constant 1 and compiles once more, as does the one of a single token."""
    model = _Heads().eval()
    compiled = torch.compile(model, backend="ember", dynamic=True)
    with torch.no_grad():
        for b, t in ((3, 5), (8, 17), (2, 4)):
            x = torch.randn(b, t, 16)
            assert_close(compiled(x).numpy(), model(x))
        assert len(compiles) == 1 and "?x?x16" in compiles[0]
        for t in (5, 9):
            x = torch.randn(1, t, 16)
            assert_close(compiled(x).numpy(), model(x))
        assert len(compiles) == 2 and "1x?x16" in compiles[1]
        x = torch.randn(1, 1, 16)
        assert_close(compiled(x).numpy(), model(x))
    assert len(compiles) == 3 and "1x1x16" in compiles[2]


def test_torch_s_size_oblivious_tracing_compiles_batch_1_with_the_rest(compiles):
    """With torch's `backed_size_oblivious` (the user's switch: it makes dynamo
    reject some programs), dynamo keeps sizes of 1 symbolic; the graphs it
    still retraces for contiguity checks import alike and share one library,
    so even a model that reads the batch as an int compiles once."""
    import torch.fx.experimental._config as fx_config

    model = _Heads().eval()
    compiled = torch.compile(model, backend="ember", dynamic=True)
    with torch.no_grad(), fx_config.patch(backed_size_oblivious=True):
        for b, t in ((1, 5), (3, 5), (8, 17), (1, 1)):
            x = torch.randn(b, t, 16)
            assert_close(compiled(x).numpy(), model(x))
    assert len(compiles) == 1 and "?x?x16" in compiles[0]


@pytest.mark.parametrize("batches", [(1, 3, 8, 1), (8, 3, 1)])
def test_torch_compile_dynamic_runs_batch_1_3_and_8_with_one_compile(compiles, batches):
    """A CNN with batch norm (whose `eps` and `momentum` dynamo passes as 0-d
    tensors) under dynamic=True: the graph dynamo specializes to a batch of 1
    compiles with the batch symbolic, and the graph it traces for the other
    batches imports to the same IR and shares that library."""
    model = _cnn()
    compiled = torch.compile(model, backend="ember", dynamic=True)
    with torch.no_grad():
        for b in batches:
            x = torch.randn(b, 3, 16, 16)
            assert_close(compiled(x).numpy(), model(x))
    assert len(compiles) == 1 and "?x3x?x?" in compiles[0]


def test_a_float_argument_is_a_constant_of_the_compiled_graph(compiles):
    """dynamo passes a float argument as a 0-d tensor: it is compiled in as
    a constant, and a new value compiles again (as a changed weight does)."""
    model = _cnn()

    def scaled(x, s):
        return model(x) * s

    compiled = torch.compile(scaled, backend="ember", dynamic=True)
    with torch.no_grad():
        for b, s in ((4, 0.5), (5, 0.5), (5, 2.0)):
            x = torch.randn(b, 3, 16, 16)
            assert_close(compiled(x, s).numpy(), scaled(x, s))
    assert len(compiles) == 2


def test_automatic_dynamic_compiles_the_static_graph_and_one_symbolic(compiles):
    """Without `dynamic=`, dynamo traces a second batch with a symbolic
    batch: compiled once, it runs every later batch."""
    model = _cnn()
    compiled = torch.compile(model, backend="ember")
    with torch.no_grad():
        for b in (2, 3, 8, 5):
            x = torch.randn(b, 3, 16, 16)
            assert_close(compiled(x).numpy(), model(x))
    static, symbolic = compiles
    assert "2x3x16x16" in static and "?x3x16x16" in symbolic


def test_a_symbolic_graph_recompiles_when_a_weight_changes(compiles):
    """The weight checks of a static graph: a write through `p.data` makes
    the next call, at any shape, compile the symbolic graph again."""
    model = _Heads().eval()
    compiled = torch.compile(model, backend="ember", dynamic=True)
    with torch.no_grad():
        x = torch.randn(3, 5, 16)
        assert_close(compiled(x).numpy(), model(x))
        model.qkv.weight.data.mul_(2.0)
        x = torch.randn(4, 6, 16)
        assert_close(compiled(x).numpy(), model(x))
    assert len(compiles) == 2 and all("?x?x16" in c for c in compiles)


class _Rows(torch.nn.Module):
    def forward(self, x, n):
        return x.reshape(n, -1) * 2.0


def test_a_size_that_is_no_input_dim_is_compiled_per_shape(compiles):
    """An int argument dynamo makes symbolic is no tensor's dim: the graph is
    compiled for each value, as a constant."""
    model = _Rows()
    runners = []

    def backend(gm, example_inputs):
        runners.append(ember_torch.ember_backend(gm, example_inputs))
        return runners[-1]

    compiled = torch.compile(model, backend=backend)
    with torch.no_grad():
        for n in (2, 3, 4):
            x = torch.randn(12)
            assert_close(compiled(x, n).numpy(), model(x, n))
    assert not runners[-1].symbolic and len(compiles) == 3


def test_a_graph_ember_cannot_compile_symbolically_falls_back(monkeypatch):
    """A symbolic compilation that fails (here: a stand-in for a kernel
    without symbolic sizes) leaves the graph compiled per shape, right."""
    compile_model = ember.compiler.model.compile_model

    def static_only(module, **kwargs):
        if "?" in str(next(iter(module.ops)).function_type):
            raise TypeError("no symbolic sizes here")
        return compile_model(module, **kwargs)

    monkeypatch.setattr(ember.compiler.model, "compile_model", static_only)
    model, runners = _Heads().eval(), []

    def backend(gm, example_inputs):
        runners.append(ember_torch.ember_backend(gm, example_inputs))
        return runners[-1]

    compiled = torch.compile(model, backend=backend, dynamic=True)
    with torch.no_grad():
        for b in (3, 8):
            x = torch.randn(b, 5, 16)
            assert_close(compiled(x).numpy(), model(x))
    (runner,) = runners
    assert not runner.symbolic and isinstance(runner.symbolic_error, TypeError)
    assert len(runner.compiled) == 2


class _Masks(torch.nn.Module):
    """The mask code of Hugging Face's decoders, small: positions by a
    cumsum of the padding mask, a causal mask from `arange(t)`, the padding
    mask read by advanced indexing, both joined by `&`, rotary-like sines of
    the positions, and an integer tensor plus a scalar."""

    def forward(self, x, mask):
        b, t, _ = x.shape
        pos = torch.cumsum(mask, 1) - 1
        causal = torch.arange(t)[None, :] <= torch.arange(t)[:, None]
        padding = mask.bool()[torch.arange(b)[:, None], torch.arange(t)[None, :]]
        both = causal[None] & padding[:, None, :]
        scores = (x @ x.transpose(1, 2)).masked_fill(~both, -1e4)
        angle = pos[..., None].float() * torch.ones(x.shape[-1])
        return torch.softmax(scores, -1) @ x + torch.sin(angle) * torch.cos(angle)


def test_mask_code_converts_symbolically():
    """One library for every shape, 1 included, of the converters that
    tests/test_hf_symbolic.py runs on whole Hugging Face models (slow)."""
    model = _Masks().eval()
    batch, seq = torch.export.Dim("batch"), torch.export.Dim("seq")
    example = (torch.randn(2, 5, 8), torch.ones(2, 5, dtype=torch.int64))
    ep = _export(model, example, ({0: batch, 1: seq}, {0: batch, 1: seq}))
    module, params = from_exported_program(ep)
    m = GraphModule(ember.compile_model(module, params=params)["default"](cpu()))
    for b, t in ((1, 1), (2, 7), (3, 16)):
        x, mask = torch.randn(b, t, 8), torch.ones(b, t, dtype=torch.int64)
        mask[0, t - t // 3 :] = 0
        (got,) = m(x=x.numpy(), mask=mask.numpy())
        with torch.no_grad():
            assert_close(got, model(x, mask))
