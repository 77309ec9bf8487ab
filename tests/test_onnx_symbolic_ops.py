"""Sizes from symbolic dims that used to be refused on a symbolic import
(issue 25): a Range to the sequence length (`torch.arange(t)`), a buffer
sliced by it (GPT-2's causal mask `bias[:, :, :t, :t]`, BERT's
`position_ids[:, :t]`), ConstantOfShape, Expand and Tile to a symbolic shape
(`torch.ones(t, t).tril()`). They no longer fold at import but become graph
ops computed at run time (graph.range, graph.slice with an expression end,
graph.broadcast_to, graph.tile), a slice to `seq` of a buffer of 16 rows
bounds seq by 16, and each model compiles once (`compile_model`, no shape=)
to a library that matches onnxruntime at every length, 1 and primes
included. What still folds (known ranges, shape values sliced by known
bounds) folds, and what ember cannot bound is refused naming it."""

import math
from typing import Any

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper
from onnx_util import export_classic

import ember
from ember.dialects.graph_shapes import dims_of
from ember.frontends.onnx import OnnxImportError, from_onnx
from ember.runtime import GraphModule, cpu
from ember.runtime.errors import EmberValueError
from ember.runtime.shape_expr import Sym

ort = pytest.importorskip("onnxruntime")

n, b = Sym("n"), Sym("b")


def _graph(nodes, inputs, outputs, consts=()) -> onnx.ModelProto:
    """A hand-built opset-17 model; constants given as ints or lists are int64."""
    initializers = [
        numpy_helper.from_array(
            v if isinstance(v, np.ndarray) else np.array(v, np.int64), k
        )
        for k, v in consts
    ]
    graph = helper.make_graph(nodes, "g", inputs, outputs, initializers)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8  # onnxruntime's newest may trail onnx's
    return model


def _tensor(name: str, elem: int, dims: list) -> onnx.ValueInfoProto:
    return helper.make_tensor_value_info(name, elem, dims)


def _run(model: onnx.ModelProto, library, feeds_at, sizes) -> None:
    """The library gives onnxruntime's outputs (relative error <= 1e-4) for
    the feeds at each size."""
    m = GraphModule(library["default"](cpu()))
    session = ort.InferenceSession(model.SerializeToString())
    for size in sizes:
        feeds = feeds_at(*size)
        got, want = m(**feeds), session.run(None, feeds)
        got = got if isinstance(got, list | tuple) else [got]
        for y, r in zip(got, want, strict=True):
            assert y.shape == r.shape, size
            scale = max(float(np.abs(r).max(initial=0.0)), 1e-30)
            assert float(np.abs(y - r).max(initial=0.0)) / scale <= 1e-4, size


def _ops(module) -> list[str]:
    return [op.name for op in module.walk()]


def _found(module, name: str) -> list[Any]:
    """`module`'s ops named `name`, in order."""
    return [op for op in module.walk() if op.name == name]


def _symbols(*inputs: tuple[str, list]) -> list:
    """float32 graph inputs by (name, dims)."""
    return [_tensor(k, TensorProto.FLOAT, dims) for k, dims in inputs]


def _size_of(axis: int, source: str, out: str) -> list:
    """Nodes giving `out`: dim `axis` of `source` as a 1-element int64 shape."""
    return [
        helper.make_node("Shape", [source], [f"{out}.shape"]),
        helper.make_node("Gather", [f"{out}.shape", f"i{axis}"], [f"{out}.dim"]),
        helper.make_node("Unsqueeze", [f"{out}.dim", "zero1"], [out]),
    ]


# -- Range ----------------------------------------------------------------------------


def _ranges(x_dims: list) -> onnx.ModelProto:
    """Range(0, n, 1), Range(1, n + 1, 1) as int32 and Range(0, n, 2), n the
    length of x, each added to a slice of x so that the output keeps x's dtype."""
    nodes = [
        helper.make_node("Shape", ["x"], ["s"]),
        helper.make_node("Gather", ["s", "i0"], ["len"]),
        helper.make_node("Range", ["zero", "len", "one"], ["r0"]),
        helper.make_node("Add", ["len", "one"], ["len1"]),
        helper.make_node("Cast", ["one"], ["one32"], to=TensorProto.INT32),
        helper.make_node("Cast", ["len1"], ["len132"], to=TensorProto.INT32),
        helper.make_node("Range", ["one32", "len132", "one32"], ["y1"]),
        helper.make_node("Range", ["zero", "len", "two"], ["y2"]),
        helper.make_node("Cast", ["r0"], ["r0f"], to=TensorProto.FLOAT),
        helper.make_node("Add", ["x", "r0f"], ["y0"]),
    ]
    consts = [("i0", 0), ("zero", 0), ("one", 1), ("two", 2)]
    outputs = [
        _tensor("y0", TensorProto.FLOAT, ["n"]),
        _tensor("y1", TensorProto.INT32, ["n"]),
        _tensor("y2", TensorProto.INT64, ["m"]),
    ]
    return _graph(nodes, _symbols(("x", x_dims)), outputs, consts)


def _x(length: int) -> dict:
    return {"x": np.random.default_rng(length).standard_normal(length, np.float32)}


def test_a_range_to_a_symbolic_limit_is_a_graph_range():
    module, _ = from_onnx(_ranges(["n"]), symbolic=True)
    ranges = _found(module, "graph.range")
    assert [dims_of(op.result.type) for op in ranges] == [(n,), (n,), ((n + 1) // 2,)]
    assert [op.config["start"] for op in ranges] == [0, 1, 0]
    assert "graph.cast" in _ops(module)  # the int32 range


def test_a_range_compiles_once_and_runs_at_any_length():
    model = _ranges(["n"])
    _run(model, ember.compile_model(model), _x, [(1,), (2,), (7,), (13,)])


def test_a_range_of_known_length_still_folds():
    """Static dims, or shape= fixing the symbol: the ranges are constants."""
    for module, _ in (
        from_onnx(_ranges([5])),
        from_onnx(_ranges(["n"]), shape={"x": [5]}, symbolic=True),
    ):
        assert "graph.range" not in _ops(module)


def test_a_shape_value_sliced_by_known_bounds_still_folds():
    """Shape(x)[0:1] ++ [-1] as a Reshape target: a shape computation, no
    graph.slice."""
    nodes = [
        helper.make_node("Shape", ["x"], ["s"]),
        helper.make_node("Slice", ["s", "zero1", "one1"], ["lead"]),
        helper.make_node("Concat", ["lead", "minus1"], ["target"], axis=0),
        helper.make_node("Reshape", ["x", "target"], ["y"]),
    ]
    consts = [("zero1", [0]), ("one1", [1]), ("minus1", [-1])]
    model = _graph(
        nodes,
        _symbols(("x", ["b", "n", 4])),
        [_tensor("y", TensorProto.FLOAT, ["b", "k"])],
        consts,
    )
    module, _ = from_onnx(model, symbolic=True)
    assert "graph.slice" not in _ops(module)
    (reshape,) = _found(module, "graph.reshape")
    assert dims_of(reshape.result.type) == (b, 4 * n)


# -- a buffer sliced to the sequence length ------------------------------------------


def _causal_mask_model() -> onnx.ModelProto:
    """scores [b, n, n] masked where bias[:n, :n] (a stored 16 x 16 lower
    triangle) is 0, then softmax: GPT-2's mask as the exporter writes it, one
    Slice per axis."""
    nodes = [
        *_size_of(1, "scores", "t"),
        helper.make_node("Slice", ["bias", "zero1", "t", "zero1"], ["rows"]),
        helper.make_node("Slice", ["rows", "zero1", "t", "one1"], ["mask"]),
        helper.make_node("Equal", ["mask", "fzero"], ["masked"]),
        helper.make_node("Where", ["masked", "big", "scores"], ["filled"]),
        helper.make_node("Softmax", ["filled"], ["y"], axis=-1),
    ]
    consts = [
        ("i1", 1),
        ("zero1", [0]),
        ("one1", [1]),
        ("bias", np.tril(np.ones((16, 16), np.float32))),
        ("fzero", np.zeros(1, np.float32)),
        ("big", np.full(1, -1e9, np.float32)),
    ]
    y = _tensor("y", TensorProto.FLOAT, ["b", "n", "n"])
    return _graph(nodes, _symbols(("scores", ["b", "n", "n"])), [y], consts)


@pytest.fixture(scope="module")
def causal_mask():
    model = _causal_mask_model()
    return model, ember.compile_model(model)


def _scores(batch: int, length: int) -> dict:
    rng = np.random.default_rng(length)
    return {"scores": rng.standard_normal((batch, length, length), np.float32)}


def test_a_buffer_sliced_to_a_symbolic_end_is_a_graph_slice_bounded_by_it():
    module, params = from_onnx(_causal_mask_model(), symbolic=True)
    slices = _found(module, "graph.slice")
    assert [op.config["ends"] for op in slices] == [(n, 16), (n, n)]
    assert dims_of(slices[-1].result.type) == (n, n)
    assert "bias" in params  # the buffer stays a param, read at run time
    assert "n = 16" in str(module.attributes["ember.bounds"])


def test_a_causal_mask_compiles_once_and_runs_at_any_length(causal_mask):
    model, library = causal_mask
    assert library.model_info["bounds"] == {"n": 16}
    _run(model, library, _scores, [(1, 1), (2, 7), (3, 13), (1, 16)])


def test_a_length_past_the_buffer_is_refused_naming_the_bound(causal_mask):
    _, library = causal_mask
    m = GraphModule(library["default"](cpu()))
    with pytest.raises(EmberValueError, match=r"n = 17 is above its bound 16"):
        m(**_scores(1, 17))


def test_an_end_ember_cannot_bound_is_refused_naming_it():
    """x[:n + m] of a 16-element buffer: two symbols, no bound of one."""
    nodes = [
        *_size_of(0, "x", "t"),
        *_size_of(0, "z", "u"),
        helper.make_node("Add", ["t", "u"], ["end"]),
        helper.make_node("Slice", ["buffer", "zero1", "end"], ["y"]),
    ]
    consts = [("i0", 0), ("zero1", [0]), ("buffer", np.ones((16, 1), np.float32))]
    model = _graph(
        nodes,
        _symbols(("x", ["n"]), ("z", ["m"])),
        [_tensor("y", TensorProto.FLOAT, ["k", 1])],
        consts,
    )
    with pytest.raises(
        OnnxImportError, match=r"Slice node .*got m \+ n, which ember cannot bound"
    ):
        from_onnx(model, symbolic=True)


def _sizes_as_data() -> onnx.ModelProto:
    """Sizes used as data: x * (1 / sqrt(float(n))) + the int64 row index
    times n (HF's `batch_idx * seq + kv_idx`), from x [b, n]."""
    nodes = [
        helper.make_node("Shape", ["x"], ["s"]),
        helper.make_node("Gather", ["s", "one"], ["len"]),
        helper.make_node("Cast", ["len"], ["lenf"], to=TensorProto.FLOAT),
        helper.make_node("Sqrt", ["lenf"], ["root"]),
        helper.make_node("Div", ["x", "root"], ["scaled"]),
        helper.make_node("Gather", ["s", "zero"], ["rows"]),
        helper.make_node("Range", ["zero", "rows", "one"], ["r"]),
        helper.make_node("Mul", ["r", "len"], ["starts"]),
        helper.make_node("Cast", ["starts"], ["startsf"], to=TensorProto.FLOAT),
        helper.make_node("Unsqueeze", ["startsf", "one1"], ["column"]),
        helper.make_node("Add", ["scaled", "column"], ["y"]),
    ]
    consts = [("zero", 0), ("one", 1), ("one1", [1])]
    outputs = [_tensor("y", TensorProto.FLOAT, ["b", "n"])]
    return _graph(nodes, _symbols(("x", ["b", "n"])), outputs, consts)


def test_sizes_used_as_data_are_computed_at_run_time():
    """A size cast to float or multiplied into a tensor becomes graph.sizes,
    computed from the symbols when the library is called."""
    model = _sizes_as_data()
    module, _ = from_onnx(model, symbolic=True)
    assert {
        str(v) for op in _found(module, "graph.sizes") for v in op.config["values"]
    } == {"n"}

    def feeds(rows: int, length: int) -> dict:
        rng = np.random.default_rng(length)
        return {"x": rng.standard_normal((rows, length), np.float32)}

    _run(model, ember.compile_model(model), feeds, [(1, 1), (2, 7), (5, 16)])


def test_a_symbolic_model_runs_kernel_by_kernel_at_each_shape():
    """profile and `graph_steps.results` (`ember debug`) bind the plan's
    offsets, dims and each kernel's size symbols from the inputs' shapes."""
    from ember.runtime import graph_steps

    model = _sizes_as_data()
    m = GraphModule(ember.compile_model(model)["default"](cpu()))
    session = ort.InferenceSession(model.SerializeToString())
    for rows, length in ((2, 7), (5, 16), (1, 1)):
        x = np.random.default_rng(length).standard_normal((rows, length), np.float32)
        profile = m.profile(repeat=2, x=x)
        assert "sizes" in str(profile)
        (want,) = session.run(None, {"x": x})
        *_, (call, last) = graph_steps.results(m.module)
        assert last.shape == want.shape
        assert np.abs(last - want).max() <= 1e-5 * np.abs(want).max()


# -- ConstantOfShape, Trilu, Expand, Tile to symbolic shapes --------------------------


def _filled_model() -> onnx.ModelProto:
    """From x [b, n, n]: x * tril(ones(n, n)) + triu(full(n, n, -2), 1); a
    4-vector expanded to [b, 4]; a [1, 4] row tiled b times."""
    value = numpy_helper.from_array(np.array([1.0], np.float32), "value")
    minus2 = numpy_helper.from_array(np.array([-2.0], np.float32), "value")
    nodes = [
        *_size_of(0, "x", "bb"),
        *_size_of(1, "x", "t"),
        helper.make_node("Concat", ["t", "t"], ["square"], axis=0),
        helper.make_node("ConstantOfShape", ["square"], ["ones"], value=value),
        helper.make_node("Trilu", ["ones"], ["lower"], upper=0),
        helper.make_node("ConstantOfShape", ["square"], ["twos"], value=minus2),
        helper.make_node("Trilu", ["twos", "k1"], ["upper"], upper=1),
        helper.make_node("Mul", ["x", "lower"], ["kept"]),
        helper.make_node("Add", ["kept", "upper"], ["y"]),
        helper.make_node("Concat", ["bb", "four"], ["rows"], axis=0),
        helper.make_node("Expand", ["vector", "rows"], ["expanded"]),
        helper.make_node("Concat", ["bb", "one1"], ["repeats"], axis=0),
        helper.make_node("Tile", ["row", "repeats"], ["tiled"]),
    ]
    consts = [
        ("i0", 0),
        ("i1", 1),
        ("zero1", [0]),
        ("one1", [1]),
        ("four", [4]),
        ("k1", 1),
        ("vector", np.arange(4, dtype=np.float32)),
        ("row", np.array([[1.0, -1.0, 2.0, 0.5]], np.float32)),
    ]
    outputs = [
        _tensor("y", TensorProto.FLOAT, ["b", "n", "n"]),
        _tensor("expanded", TensorProto.FLOAT, ["b", 4]),
        _tensor("tiled", TensorProto.FLOAT, ["b", 4]),
    ]
    return _graph(nodes, _symbols(("x", ["b", "n", "n"])), outputs, consts)


def test_shapes_filled_expanded_and_tiled_symbolically_run_at_any_shape():
    model = _filled_model()
    module, _ = from_onnx(model, symbolic=True)
    ops = _ops(module)
    assert ops.count("graph.broadcast_to") == 3 and ops.count("graph.trilu") == 2
    (tile,) = _found(module, "graph.tile")
    assert tile.config["repeats"] == (b, 1)
    feeds = lambda bb, t: {  # noqa: E731
        "x": np.random.default_rng(t).standard_normal((bb, t, t), np.float32)
    }
    _run(model, ember.compile_model(model), feeds, [(1, 1), (2, 7), (3, 13)])


# -- torch's classic exporter ---------------------------------------------------------

torch = pytest.importorskip("torch")


class _GPT2Attention(torch.nn.Module):
    """GPT-2's attention: a registered causal `bias` of n_positions rows
    sliced `[:, :, :t, :t]`, scores masked by `masked_fill` and by `where`."""

    def __init__(self, d=16, h=2, positions=16):
        super().__init__()
        self.h = h
        self.c_attn, self.c_proj = torch.nn.Linear(d, 3 * d), torch.nn.Linear(d, d)
        mask = torch.tril(torch.ones(positions, positions))
        self.register_buffer("bias", mask.view(1, 1, positions, positions))

    def forward(self, x):
        b, t, d = x.shape
        q, k, v = self.c_attn(x).split(d, dim=2)
        q, k, v = (z.view(b, t, self.h, d // self.h).transpose(1, 2) for z in (q, k, v))
        s = q @ k.transpose(-1, -2) / math.sqrt(d // self.h)
        causal = self.bias[:, :, :t, :t]
        s = s.masked_fill(causal == 0, float("-inf"))
        s = torch.where(causal.bool(), s, torch.tensor(torch.finfo(s.dtype).min))
        a = torch.softmax(s, -1) @ v
        return self.c_proj(a.transpose(1, 2).reshape(b, t, d))


class _Embeddings(torch.nn.Module):
    """Token embeddings plus position embeddings looked up at `torch.arange(t)`
    and at a registered `position_ids` buffer sliced `[:, :t]` and expanded
    to the batch (BERT's)."""

    def __init__(self, vocab=50, d=8, positions=16):
        super().__init__()
        self.words = torch.nn.Embedding(vocab, d)
        self.positions = torch.nn.Embedding(positions, d)
        self.register_buffer("position_ids", torch.arange(positions).unsqueeze(0))
        self.norm = torch.nn.LayerNorm(d)

    def forward(self, ids):
        b, t = ids.shape
        stored = self.position_ids[:, :t].expand(b, -1)
        x = self.words(ids) + self.positions(torch.arange(t)) + self.positions(stored)
        return self.norm(x)


class _TrilMasks(torch.nn.Module):
    """Masks made at the sequence's length: `torch.ones(t, t).tril()` and
    nn.Transformer's `triu(full((t, t), -inf), 1)`."""

    def forward(self, x):
        t = x.shape[1]
        s = x @ x.transpose(-1, -2)
        keep = torch.ones(t, t).tril()
        s = s.masked_fill(keep == 0, -1e9) + torch.triu(
            torch.full((t, t), float("-inf")), 1
        )
        return torch.softmax(s, -1) @ x


_SEQ = {0: "batch", 1: "seq"}


@pytest.fixture(scope="module")
def gpt2_attention() -> onnx.ModelProto:
    torch.manual_seed(0)
    return export_classic(
        _GPT2Attention(), (torch.randn(2, 7, 16),), ["x"], {"x": _SEQ}
    )


def _hidden(batch: int, length: int, d: int = 16) -> dict:
    rng = np.random.default_rng(length)
    return {"x": rng.standard_normal((batch, length, d), np.float32)}


def test_gpt2_attention_with_a_sliced_causal_buffer(gpt2_attention):
    library = ember.compile_model(gpt2_attention)
    assert library.model_info["bounds"] == {"seq": 16}
    _run(gpt2_attention, library, _hidden, [(1, 1), (2, 7), (3, 13), (1, 16)])


def test_embeddings_at_arange_and_sliced_position_ids():
    torch.manual_seed(0)
    model = export_classic(
        _Embeddings(), (torch.randint(0, 50, (2, 7)),), ["ids"], {"ids": _SEQ}
    )
    module, _ = from_onnx(model, symbolic=True)
    assert "graph.range" in _ops(module)

    def ids(batch: int, length: int) -> dict:
        rng = np.random.default_rng(length)
        return {"ids": rng.integers(0, 50, (batch, length)).astype(np.int64)}

    _run(model, ember.compile_model(model), ids, [(1, 1), (2, 7), (3, 13), (2, 16)])


def test_tril_masks_made_at_the_sequence_length():
    torch.manual_seed(0)
    model = export_classic(_TrilMasks(), (torch.randn(2, 7, 8),), ["x"], {"x": _SEQ})
    feeds = lambda bb, t: _hidden(bb, t, 8)  # noqa: E731
    _run(model, ember.compile_model(model), feeds, [(1, 1), (2, 7), (3, 13), (1, 23)])


# -- empty slices ---------------------------------------------------------------------


def _rotary_pass_through(dims: list) -> onnx.ModelProto:
    """Phi-3's partial rotary embedding when it rotates every channel: the
    pass-through `x[..., 4:]` of 4 channels is empty, concatenated after the
    rotated part (here x * 2), and its shape read."""
    nodes = [
        helper.make_node("Mul", ["x", "two"], ["rotated"]),
        helper.make_node("Slice", ["x", "four", "big", "minus1"], ["rest"]),
        helper.make_node("Concat", ["rotated", "rest"], ["y"], axis=-1),
        helper.make_node("Shape", ["rest"], ["rest_shape"]),
    ]
    consts = [
        ("two", np.array(2.0, np.float32)),
        ("four", [4]),
        ("big", [2**62]),
        ("minus1", [-1]),
    ]
    outputs = [
        _tensor("y", TensorProto.FLOAT, [*dims[:-1], 4]),
        _tensor("rest_shape", TensorProto.INT64, [len(dims)]),
    ]
    return _graph(nodes, _symbols(("x", dims)), outputs, consts)


@pytest.mark.parametrize("dims", [[3, 4], ["b", 4]])
def test_an_empty_slice_is_dropped_by_concat_and_its_shape_read(dims):
    model = _rotary_pass_through(dims)

    def feeds(rows: int) -> dict:
        return {"x": np.random.default_rng(rows).standard_normal((rows, 4), np.float32)}

    sizes = [(3,)] if dims[0] == 3 else [(1,), (3,), (6,)]
    _run(model, ember.compile_model(model), feeds, sizes)


def test_an_empty_tensor_used_by_any_other_op_is_refused_naming_it():
    model = _rotary_pass_through([3, 4])
    model.graph.node.append(helper.make_node("Relu", ["rest"], ["r"]))
    model.graph.output.append(_tensor("r", TensorProto.FLOAT, [3, 0]))
    with pytest.raises(
        OnnxImportError, match=r"Relu node .*empty tensor of shape \[3, 0\]"
    ):
        from_onnx(model)


def test_a_concat_along_symbolic_axes_runs_at_any_lengths():
    """A cache grown by the new tokens: Concat of [b, n, 4] and [b, m, 4]
    along the symbolic axis, [b, n + m, 4]."""
    nodes = [
        helper.make_node("Concat", ["past", "new"], ["joined"], axis=1),
        helper.make_node("Relu", ["joined"], ["y"]),
    ]
    inputs = _symbols(("past", ["b", "n", 4]), ("new", ["b", "m", 4]))
    model = _graph(nodes, inputs, [_tensor("y", TensorProto.FLOAT, ["b", "k", 4])])
    module, _ = from_onnx(model, symbolic=True)
    (concat,) = _found(module, "graph.concat")
    assert dims_of(concat.result.type) == (b, Sym("n") + Sym("m"), 4)

    def feeds(rows: int, past: int, new: int) -> dict:
        rng = np.random.default_rng(past)
        return {
            "past": rng.standard_normal((rows, past, 4), np.float32),
            "new": rng.standard_normal((rows, new, 4), np.float32),
        }

    _run(model, ember.compile_model(model), feeds, [(1, 1, 1), (2, 3, 5), (3, 17, 4)])
