"""ONNX models with symbolic inputs imported symbolically (issue 25):
`from_onnx(model, symbolic=True)` keeps `dim_param` and unnamed dims as
symbols, and the shape computations on them (Shape, Gather, Concat, arithmetic,
Equal/Where, Slice, Split, Unsqueeze) become expressions, so a Reshape's target
is `[batch, seq, 4, 8]`; and such a model compiles without `shape=` to one
library that runs at any consistent shape, matching onnxruntime."""

import math

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper
from onnx_util import export_classic

from ember.dialects.graph_shapes import dims_of
from ember.frontends.onnx import OnnxImportError, from_onnx
from ember.passes.pipelines import optimize_graph
from ember.runtime.errors import EmberValueError
from ember.runtime.shape_expr import Sym

torch = pytest.importorskip("torch")

batch, seq = Sym("batch"), Sym("seq")


class _Block(torch.nn.Module):
    """A BERT/GPT-style block whose views read `x.shape`, as exporters keep
    symbolic: attention over a padding mask, layer norms, a GELU MLP."""

    def __init__(self, d=32, h=4):
        super().__init__()
        self.h = h
        self.qkv, self.o = torch.nn.Linear(d, 3 * d), torch.nn.Linear(d, d)
        self.ln1, self.ln2 = torch.nn.LayerNorm(d), torch.nn.LayerNorm(d)
        self.ff = torch.nn.Sequential(
            torch.nn.Linear(d, 4 * d), torch.nn.GELU(), torch.nn.Linear(4 * d, d)
        )

    def forward(self, x, mask):
        b, t, d = x.shape
        q, k, v = self.qkv(self.ln1(x)).split(d, dim=-1)
        q, k, v = (z.view(b, t, self.h, d // self.h).transpose(1, 2) for z in (q, k, v))
        s = q @ k.transpose(-1, -2) / math.sqrt(d // self.h)
        a = torch.softmax(s + (1.0 - mask[:, None, None, :]) * -1e4, -1) @ v
        x = x + self.o(a.transpose(1, 2).reshape(b, t, d))
        return x + self.ff(self.ln2(x))


class _Encoder(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = torch.nn.Embedding(100, 32)
        self.blocks = torch.nn.ModuleList([_Block(), _Block()])

    def forward(self, ids, mask):
        x = self.emb(ids)
        for block in self.blocks:
            x = block(x, mask)
        return x


@pytest.fixture(scope="module")
def encoder() -> onnx.ModelProto:
    torch.manual_seed(0)
    axes = {n: {0: "batch", 1: "seq"} for n in ("ids", "mask", "y")}
    ids, mask = torch.randint(0, 100, (2, 7)), torch.ones(2, 7)
    return export_classic(_Encoder(), (ids, mask), ["ids", "mask"], axes)


def _types(module) -> list:
    return [r.type for op in module.walk() for r in op.results]


def test_an_encoder_with_dynamic_batch_and_sequence_imports_symbolically(encoder):
    module, params = from_onnx(encoder, symbolic=True)
    main = next(iter(module.ops))
    assert [dims_of(a.type) for a in main.args] == [(batch, seq), (batch, seq)]
    shapes = {dims_of(t) for t in _types(module) if hasattr(t, "get_shape")}
    # the heads' view, computed from Shape -> Gather -> Concat at import
    assert (batch, seq, 4, 8) in shapes
    assert (batch, 4, seq, seq) in shapes  # the attention scores
    assert (batch, 1, 1, seq) in shapes  # the mask, broadcast against them
    assert not any(isinstance(d, int) and d < 0 for s in shapes for d in s)
    optimize_graph(module, params)  # the graph passes take symbolic types
    module.verify()


@pytest.fixture(scope="module")
def encoder_library(encoder):
    import ember

    return ember.compile_model(encoder)


def _feeds(b: int, s: int, seed: int) -> dict:
    rng = np.random.default_rng(seed)
    mask = np.ones((b, s), np.float32)
    mask[:, s - s // 3 :] = 0.0  # padding at the end of each sequence
    return {"ids": rng.integers(0, 100, (b, s)).astype(np.int64), "mask": mask}


def _session(model: onnx.ModelProto):
    ort = pytest.importorskip("onnxruntime")
    return ort.InferenceSession(model.SerializeToString())


def _relative(y: np.ndarray, r: np.ndarray) -> float:
    return float(np.abs(y - r).max() / max(np.abs(r).max(), 1e-30))


def test_an_encoder_compiles_once_and_runs_at_any_shape(encoder, encoder_library):
    """No `shape=`: one library, several (batch, seq) pairs, onnxruntime's
    results; the metadata gives the dims and the workspace as expressions."""
    from ember.runtime import GraphModule, cpu

    m = GraphModule(encoder_library["default"](cpu()))
    session = _session(encoder)
    for n, (b, s) in enumerate([(2, 7), (1, 1), (1, 16), (3, 33)]):
        feeds = _feeds(b, s, n)
        (y,) = m(**feeds)
        (r,) = session.run(None, feeds)
        assert y.shape == (b, s, 32)
        assert _relative(y, r) <= 1e-4, (b, s)
    info = encoder_library.model_info
    assert info["inputs"][0]["shape"] == ["batch", "seq"]
    assert isinstance(info["workspace_bytes"], str)
    inputs, _ = m.get_input_info()
    assert inputs["ids"] == ("batch", "seq")


def test_an_inconsistent_shape_is_refused_naming_the_symbol(encoder_library):
    from ember.runtime import GraphModule, cpu

    m = GraphModule(encoder_library["default"](cpu()))
    feeds = _feeds(2, 7, 0)
    feeds["mask"] = np.ones((2, 8), np.float32)
    with pytest.raises(
        EmberValueError,
        match=r"input 'mask': dim 1 is 'seq' = 8, but input 'ids' gave seq = 7",
    ):
        m(**feeds)


def test_bounds_plan_the_workspace_once_and_refuse_larger_sizes(encoder):
    """`bounds=`: the workspace is an int, planned for the bound; a larger
    size is refused naming the symbol and its bound."""
    import ember
    from ember.runtime import GraphModule, cpu

    lib = ember.compile_model(encoder, bounds={"seq": 16, "batch": 2})
    assert isinstance(lib.model_info["workspace_bytes"], int)
    m = GraphModule(lib["default"](cpu()))
    session = _session(encoder)
    feeds = _feeds(2, 16, 3)
    assert _relative(m(**feeds)[0], session.run(None, feeds)[0]) <= 1e-4
    with pytest.raises(Exception, match=r"seq = 17 is above its bound 16"):
        m(**_feeds(1, 17, 4))
    with pytest.raises(Exception, match="no size symbol 'len'"):
        ember.compile_model(encoder, bounds={"len": 4})


def test_shape_fixes_the_symbols(encoder):
    import ember

    lib = ember.compile_model(encoder, shape={"ids": [2, 7], "mask": [2, 7]})
    assert lib.model_info["inputs"][0]["shape"] == [2, 7]
    assert isinstance(lib.model_info["workspace_bytes"], int)


def test_a_cnn_with_a_dynamic_batch():
    import ember
    from ember.runtime import GraphModule, cpu

    torch.manual_seed(0)
    model = export_classic(
        torch.nn.Sequential(
            torch.nn.Conv2d(3, 8, 3, padding=1),
            torch.nn.ReLU(),
            torch.nn.AdaptiveAvgPool2d(1),
            torch.nn.Flatten(),
            torch.nn.Linear(8, 5),
        ),
        (torch.randn(2, 3, 16, 16),),
        ["x"],
        {"x": {0: "batch"}, "y": {0: "batch"}},
    )
    module, _ = from_onnx(model, symbolic=True)
    text = str(module)
    assert 'tensor<?x8x16x16xf32, ["batch"]>' in text
    assert '-> (tensor<?x5xf32, ["batch"]> {ember.name = "y"})' in text
    m = GraphModule(ember.compile_model(model)["default"](cpu()))
    session = _session(model)
    for b in (1, 3, 8):
        x = np.random.default_rng(b).standard_normal((b, 3, 16, 16), np.float32)
        (y,) = m(x=x)
        assert y.shape == (b, 5)
        assert _relative(y, session.run(None, {"x": x})[0]) <= 1e-4


def test_a_size_baked_in_by_the_exporter_is_refused_not_guessed():
    """torch's classic export of nn.TransformerEncoder writes the traced
    length 7 into a Reshape target (onnxruntime fails at length 9 too): with a
    symbolic length the element counts differ, and the import says so."""
    torch.manual_seed(0)
    layer = torch.nn.TransformerEncoderLayer(16, 2, 32, batch_first=True, dropout=0.0)
    model = export_classic(
        torch.nn.TransformerEncoder(layer, 1, enable_nested_tensor=False),
        (torch.randn(2, 7, 16),),
        ["x"],
        {"x": {0: "batch", 1: "seq"}, "y": {0: "batch", 1: "seq"}},
    )
    with pytest.raises(
        OnnxImportError,
        match=r"Reshape node .*expected a shape of 16 \* batch \* seq elements, got 7x",
    ):
        from_onnx(model, symbolic=True)


def _graph(nodes, inputs, outputs, initializers=()) -> onnx.ModelProto:
    graph = helper.make_graph(nodes, "g", inputs, outputs, list(initializers))
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def test_shape_chains_become_expressions_and_unnamed_dims_are_named():
    """Shape -> Gather -> Mul -> Concat -> Reshape: the target of a reshape
    of x [n, ?, 6] to [n * 2, ?, 3] is computed symbolically; the unnamed dim
    is named after the input and axis."""
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["n", None, 6])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, ["a", "b", 3])
    consts = [
        numpy_helper.from_array(np.array(v, np.int64), n)
        for n, v in [("i0", 0), ("i1", 1), ("two", [2]), ("three", [3])]
    ]
    nodes = [
        helper.make_node("Shape", ["x"], ["s"]),
        helper.make_node("Gather", ["s", "i0"], ["n0"]),
        helper.make_node("Gather", ["s", "i1"], ["t0"]),
        helper.make_node("Unsqueeze", ["n0", "zero_axes"], ["n1"]),
        helper.make_node("Unsqueeze", ["t0", "zero_axes"], ["t1"]),
        helper.make_node("Mul", ["n1", "two"], ["n2"]),
        helper.make_node("Concat", ["n2", "t1", "three"], ["target"], axis=0),
        helper.make_node("Reshape", ["x", "target"], ["y"]),
    ]
    consts.append(numpy_helper.from_array(np.array([0], np.int64), "zero_axes"))
    module, _ = from_onnx(_graph(nodes, [x], [y], consts), symbolic=True)
    (out,) = [o for o in module.walk() if o.name == "graph.reshape"]
    assert str(out.result.type) == 'tensor<?x?x3xf32, ["2 * n", "x.dim1"]>'


def test_a_range_from_a_symbolic_start_is_refused_naming_it():
    """graph.range takes a symbolic limit (tests/test_onnx_symbolic_ops.py),
    not a symbolic start."""
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["n"])
    y = helper.make_tensor_value_info("y", TensorProto.INT64, ["r"])
    consts = [
        numpy_helper.from_array(np.array(v, np.int64), n)
        for n, v in [("i0", 0), ("one", 1), ("two", 2)]
    ]
    nodes = [
        helper.make_node("Shape", ["x"], ["s"]),
        helper.make_node("Gather", ["s", "i0"], ["n0"]),
        helper.make_node("Mul", ["n0", "two"], ["n1"]),
        helper.make_node("Range", ["n0", "n1", "one"], ["y"]),
    ]
    with pytest.raises(
        OnnxImportError, match="expected an integer start and non-zero delta"
    ):
        from_onnx(_graph(nodes, [x], [y], consts), symbolic=True)


def test_ember_opt_shows_a_dynamic_model_symbolically(tmp_path):
    """ember-opt prints a model's open dims as symbols; --input-shapes fixes
    them; the model pipeline lowers the symbolic model: its entry checks the
    input against the symbolic shape it binds the batch from."""
    import subprocess
    import sys
    from pathlib import Path

    model = export_classic(
        torch.nn.Sequential(torch.nn.Conv2d(3, 4, 3), torch.nn.ReLU()),
        (torch.randn(2, 3, 8, 8),),
        ["x"],
        {"x": {0: "batch"}, "y": {0: "batch"}},
    )
    path = tmp_path / "m.onnx"
    onnx.save(model, path)
    opt = str(Path(sys.executable).parent / "ember-opt")

    def run(*args):
        return subprocess.run([opt, str(path), *args], capture_output=True, text=True)

    shown = run()
    assert shown.returncode == 0, shown.stderr
    assert 'tensor<?x3x8x8xf32, ["batch"]>' in shown.stdout
    fixed = run("--input-shapes", "x:2,3,8,8")
    assert "tensor<2x4x6x6xf32>" in fixed.stdout
    lowered = run("-p", "ember-model")
    assert lowered.returncode == 0, lowered.stderr
    assert "llvm.func @default_run(" in lowered.stdout
    assert "expected float32 tensor of shape (batch, 3, 8, 8)" in lowered.stdout
