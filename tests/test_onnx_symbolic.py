"""ONNX models with symbolic inputs imported symbolically (issue 25):
`from_onnx(model, symbolic=True)` keeps `dim_param` and unnamed dims as
symbols, and the shape computations on them (Shape, Gather, Concat, arithmetic,
Equal/Where, Slice, Split, Unsqueeze) become expressions, so a Reshape's target
is `[batch, seq, 4, 8]`. Kernels over symbolic sizes are the next stage: the
pipeline stops at convert-graph-to-te naming a symbolic type, and
`compile_model` still asks for `shape=`."""

import io
import math
import warnings

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

from ember.dialects.graph_shapes import dims_of
from ember.frontends.onnx import InputShapeError, OnnxImportError, from_onnx
from ember.passes.pipelines import optimize_graph
from ember.runtime.shape_expr import Sym

torch = pytest.importorskip("torch")

batch, seq = Sym("batch"), Sym("seq")


def _export(module, args, names, axes) -> onnx.ModelProto:
    f = io.BytesIO()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(
            module.eval(),
            args,
            f,
            dynamo=False,
            input_names=names,
            output_names=["y"],
            dynamic_axes=axes,
            opset_version=17,
        )
    return onnx.load_from_string(f.getvalue())


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
    return _export(_Encoder(), (ids, mask), ["ids", "mask"], axes)


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


def test_the_pipeline_stops_before_kernels_naming_a_symbolic_type(encoder):
    from ember.passes import run
    from ember.passes.bound_params import bind_params

    module, params = from_onnx(encoder, symbolic=True)
    with bind_params(params), pytest.raises(Exception, match="symbolic dimensions"):
        run(module, "ember-graph,convert-graph-to-te")


def test_compile_model_still_asks_for_shapes(encoder):
    import ember

    with pytest.raises(InputShapeError, match="dynamic dimension 'batch'"):
        ember.compile_model(encoder)


def test_a_cnn_with_a_dynamic_batch():
    model = _export(
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


def test_a_size_baked_in_by_the_exporter_is_refused_not_guessed():
    """torch's classic export of nn.TransformerEncoder writes the traced
    length 7 into a Reshape target (onnxruntime fails at length 9 too): with a
    symbolic length the element counts differ, and the import says so."""
    torch.manual_seed(0)
    layer = torch.nn.TransformerEncoderLayer(16, 2, 32, batch_first=True, dropout=0.0)
    model = _export(
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


def test_a_range_of_symbolic_length_is_refused_naming_it():
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, ["n"])
    y = helper.make_tensor_value_info("y", TensorProto.INT64, ["r"])
    consts = [
        numpy_helper.from_array(np.array(v, np.int64), n)
        for n, v in [("i0", 0), ("one", 1), ("zero", 0)]
    ]
    nodes = [
        helper.make_node("Shape", ["x"], ["s"]),
        helper.make_node("Gather", ["s", "i0"], ["n0"]),
        helper.make_node("Range", ["zero", "n0", "one"], ["y"]),
    ]
    with pytest.raises(
        OnnxImportError, match="a range of symbolic length is not supported yet"
    ):
        from_onnx(_graph(nodes, [x], [y], consts), symbolic=True)


def test_ember_opt_shows_a_dynamic_model_symbolically(tmp_path):
    """ember-opt prints a model's open dims as symbols; --input-shapes fixes
    them; the pipeline stops where it needs them, naming the flag."""
    import subprocess
    import sys
    from pathlib import Path

    model = _export(
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
    stopped = run("-p", "ember-model")
    assert stopped.returncode == 1
    assert "--input-shapes to ember-compile and ember-opt" in stopped.stderr
    assert "Traceback" not in stopped.stderr
