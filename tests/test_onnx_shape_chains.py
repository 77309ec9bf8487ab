"""Shape chains fold at import (issue 25): the Shape -> Gather -> arithmetic ->
Reshape/Slice/Pad/Expand chains torch's classic exporter writes for a
`nn.TransformerEncoder`, a ViT's class token and position slice and a Swin
block's window padding and partition are known at compile time when the input
shapes are static, so they fold to constants and the models compile and match
onnxruntime. Hand-written graphs check the ops one by one; a start that truly
depends on the data stays refused."""

import warnings
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

import ember
from ember import runtime as rt
from ember.frontends.onnx import OnnxImportError, UnsupportedOperatorError, from_onnx

ort = pytest.importorskip("onnxruntime")


def _check(model: onnx.ModelProto | Path, feeds: dict, rtol=1e-4, atol=1e-5):
    """`compile_model`'s library gives onnxruntime's outputs for `feeds`."""
    source = str(model) if isinstance(model, Path) else model.SerializeToString()
    session = ort.InferenceSession(source, providers=["CPUExecutionProvider"])
    want = session.run(None, feeds)
    gm = rt.GraphModule(ember.compile_model(model)["default"](rt.cpu()))
    got = gm(**feeds)
    got = got if isinstance(got, list | tuple) else [got]
    for g, w in zip(got, want, strict=True):
        assert np.asarray(g).shape == w.shape
        np.testing.assert_allclose(g, w, rtol=rtol, atol=atol)


# -- torch's classic exporter ---------------------------------------------------------


def _torch():
    return pytest.importorskip("torch", reason="torch is not installed")


def _export(module, args: tuple, names: list[str], path: Path) -> Path:
    """`module` exported to `path` by the classic exporter at opset 17."""
    torch = _torch()
    # with grad enabled: under no_grad an eval encoder takes torch's fused
    # fast path, which the exporter cannot write
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the exporter's deprecation, tracing
        torch.onnx.export(
            module.eval(), args, path, dynamo=False, opset_version=17, input_names=names
        )
    return path


def _numpy(args: tuple, names: list[str]) -> dict[str, np.ndarray]:
    return {n: a.numpy() for n, a in zip(names, args, strict=True)}


@pytest.mark.parametrize("masked", [False, True])
@pytest.mark.parametrize("batch_first", [True, False])
def test_a_transformer_encoder_compiles_and_matches(tmp_path, batch_first, masked):
    """nn.TransformerEncoder's attention splits heads with a Reshape and slices
    q, k, v with Slices whose bounds the exporter computes from Shape (through
    Mod and Div), and expands a key padding mask through Equal/Where/Expand."""
    torch = _torch()
    torch.manual_seed(0)
    layer = torch.nn.TransformerEncoderLayer(
        32, 4, 64, dropout=0.0, batch_first=batch_first
    )

    class Encoder(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.encoder = torch.nn.TransformerEncoder(
                layer, 1, enable_nested_tensor=False
            )

        def forward(self, x, mask=None):
            return self.encoder(x, src_key_padding_mask=mask)

    x = torch.randn((2, 7, 32) if batch_first else (7, 2, 32))
    args, names = (x,), ["x"]
    if masked:
        args, names = (x, torch.arange(14).reshape(2, 7) % 7 >= 5), ["x", "mask"]
    model = _export(Encoder(), args, names, tmp_path / "encoder.onnx")
    _check(model, _numpy(args, names))


def test_a_vit_class_token_and_position_slice_compile_and_match(tmp_path):
    """torchvision's ViT: the class token expanded to the batch read off
    x.shape, the position embedding sliced to the sequence length, x[:, 0].
    Seven tokens of 32, as in the encoder test, whose kernels it reuses."""
    torch = _torch()
    torch.manual_seed(0)
    nn = torch.nn

    class ViT(nn.Module):
        def __init__(self):
            super().__init__()
            self.proj = nn.Conv2d(3, 32, 4, 4)
            self.cls = nn.Parameter(torch.randn(1, 1, 32))
            self.pos = nn.Parameter(torch.randn(1, 20, 32))
            layer = nn.TransformerEncoderLayer(32, 4, 64, dropout=0.0, batch_first=True)
            self.encoder = nn.TransformerEncoder(layer, 1, enable_nested_tensor=False)

        def forward(self, x):
            n, _, h, w = x.shape
            x = self.proj(x).reshape(n, 32, (h // 4) * (w // 4)).permute(0, 2, 1)
            x = torch.cat([self.cls.expand(n, -1, -1), x], dim=1)
            x = x + self.pos[:, : x.shape[1]]
            return self.encoder(x)[:, 0]

    x = torch.randn(2, 3, 8, 12)
    _check(_export(ViT(), (x,), ["x"], tmp_path / "vit.onnx"), {"x": x.numpy()})


def _swin_block(torch, dim=8, heads=2, ws=4, shift=2):
    """torchvision's shifted_window_attention and patch merging, shrunk: the
    pads, window counts, the shifted windows' attention mask and the relative
    position bias all come from shapes."""
    nn, F = torch.nn, torch.nn.functional

    class Swin(nn.Module):
        def __init__(self):
            super().__init__()
            self.qkv, self.proj = nn.Linear(dim, 3 * dim), nn.Linear(dim, dim)
            self.table = nn.Parameter(torch.randn((2 * ws - 1) ** 2, heads))
            coords = torch.stack(
                torch.meshgrid(torch.arange(ws), torch.arange(ws), indexing="ij")
            )
            rel = (coords.flatten(1)[:, :, None] - coords.flatten(1)[:, None, :]) + (
                ws - 1
            )
            self.register_buffer("index", (rel[0] * (2 * ws - 1) + rel[1]).flatten())
            self.merge = nn.Linear(4 * dim, 2 * dim)

        def forward(self, x):
            B, H, W, C = x.shape
            x = F.pad(x, (0, 0, 0, (ws - W % ws) % ws, 0, (ws - H % ws) % ws))
            _, pH, pW, _ = x.shape
            x = torch.roll(x, shifts=(-shift, -shift), dims=(1, 2))
            nw = (pH // ws) * (pW // ws)
            x = x.view(B, pH // ws, ws, pW // ws, ws, C).permute(0, 1, 3, 2, 4, 5)
            x = x.reshape(B * nw, ws * ws, C)
            qkv = self.qkv(x).reshape(x.size(0), x.size(1), 3, heads, C // heads)
            q, k, v = qkv.permute(2, 0, 3, 1, 4)
            attn = (q * (C // heads) ** -0.5) @ k.transpose(-2, -1)
            bias = self.table[self.index].view(ws * ws, ws * ws, -1)
            attn = attn + bias.permute(2, 0, 1).contiguous().unsqueeze(0)
            mask = x.new_zeros((pH, pW))
            count = 0
            for h in ((0, -ws), (-ws, -shift), (-shift, None)):
                for w in ((0, -ws), (-ws, -shift), (-shift, None)):
                    mask[h[0] : h[1], w[0] : w[1]] = count
                    count += 1
            mask = mask.view(pH // ws, ws, pW // ws, ws).permute(0, 2, 1, 3)
            mask = mask.reshape(nw, ws * ws)
            mask = mask.unsqueeze(1) - mask.unsqueeze(2)
            mask = mask.masked_fill(mask != 0, -100.0).masked_fill(mask == 0, 0.0)
            attn = attn.view(x.size(0) // nw, nw, heads, x.size(1), x.size(1))
            attn = attn + mask.unsqueeze(1).unsqueeze(0)
            attn = attn.view(-1, heads, x.size(1), x.size(1)).softmax(-1)
            x = (attn @ v).transpose(1, 2).reshape(x.size(0), x.size(1), C)
            x = self.proj(x).view(B, pH // ws, pW // ws, ws, ws, C)
            x = x.permute(0, 1, 3, 2, 4, 5).reshape(B, pH, pW, C)
            x = torch.roll(x, shifts=(shift, shift), dims=(1, 2))
            x = x[:, :H, :W, :].contiguous()
            # patch merging: pad to even sizes, then four strided slices
            H, W = x.shape[-3:-1]
            x = F.pad(x, (0, 0, 0, W % 2, 0, H % 2))
            parts = [x[..., i::2, j::2, :] for i, j in ((0, 0), (1, 0), (0, 1), (1, 1))]
            return self.merge(torch.cat(parts, -1))

    return Swin()


def test_a_swin_block_compiles_and_matches(tmp_path):
    """Swin-T's padding to whole windows (pads computed with Mod and Sub from
    the shape), window partition and reverse, the cyclic shift and its mask."""
    torch = _torch()
    torch.manual_seed(0)
    x = torch.randn(2, 7, 5, 8)
    model = _export(_swin_block(torch), (x,), ["x"], tmp_path / "swin.onnx")
    _check(model, {"x": x.numpy()})


# -- hand-written chains --------------------------------------------------------------


def _ints(name: str, *values: int) -> onnx.TensorProto:
    return numpy_helper.from_array(np.array(values, np.int64), name)


def _model(nodes, shape, out_shape, initializers=()) -> onnx.ModelProto:
    graph = helper.make_graph(
        [helper.make_node(op, ins, outs, **attrs) for op, ins, outs, attrs in nodes],
        "chain",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, shape)],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, out_shape)],
        list(initializers),
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    onnx.checker.check_model(model)
    return model


def _feeds(shape) -> dict[str, np.ndarray]:
    return {"x": np.random.default_rng(0).standard_normal(shape).astype(np.float32)}


def _dim(i: int, out: str) -> list:
    """Nodes making `out`, dimension `i` of x as a 0-d int64 (Shape, Gather)."""
    return [
        ("Shape", ["x"], [f"s{i}"], {}),
        ("Gather", [f"s{i}", f"i{i}"], [out], {"axis": 0}),
    ]


def _index(i: int) -> onnx.TensorProto:
    return numpy_helper.from_array(np.array(i, np.int64), f"i{i}")


def test_shape_gather_div_mul_concat_reshape():
    """(2, 6, 8) -> (2, 12, 4) with the target shape computed from x's."""
    nodes = [
        *_dim(0, "b"),
        *_dim(1, "t"),
        *_dim(2, "d"),
        ("Div", ["d", "two"], ["half"], {}),
        ("Mul", ["t", "two"], ["twice"], {}),
        *[("Unsqueeze", [v, "zero"], [f"{v}1"], {}) for v in ("b", "twice", "half")],
        ("Concat", ["b1", "twice1", "half1"], ["shape"], {"axis": 0}),
        ("Reshape", ["x", "shape"], ["y"], {}),
    ]
    two = numpy_helper.from_array(np.array(2, np.int64), "two")
    inits = [*map(_index, range(3)), two, _ints("zero", 0)]
    _check(_model(nodes, [2, 6, 8], [2, 12, 4], inits), _feeds([2, 6, 8]))


def test_slice_bounds_from_mod_sub_and_where():
    """A Slice whose start is (T - T % 4) and whose end is a Where between the
    length and a clamp: Mod, Sub, Less, Where, Min and Max fold."""
    nodes = [
        *_dim(1, "t"),
        ("Mod", ["t", "four"], ["r"], {}),
        ("Sub", ["t", "r"], ["start"], {}),
        ("Less", ["t", "big"], ["short"], {}),
        ("Where", ["short", "t", "big"], ["end"], {}),
        ("Max", ["start", "zero", "zero"], ["start2"], {}),
        ("Min", ["end", "big", "big"], ["end2"], {}),
        ("Unsqueeze", ["start2", "axis"], ["starts"], {}),
        ("Unsqueeze", ["end2", "axis"], ["ends"], {}),
        ("Slice", ["x", "starts", "ends", "one"], ["y"], {}),  # axes [1]
    ]
    scalars = {"four": 4, "big": 100, "zero": 0}
    inits = [_index(1), _ints("one", 1), _ints("axis", 0)] + [
        numpy_helper.from_array(np.array(v, np.int64), k) for k, v in scalars.items()
    ]
    _check(_model(nodes, [2, 7, 3], [2, 3, 3], inits), _feeds([2, 7, 3]))


def test_pads_to_whole_windows_and_an_expand():
    """Swin's pads, (ws - W % ws) % ws from the shape, concatenated and cast;
    then an Expand whose shape's -1 is replaced by Equal/Where, and a Size."""
    nodes = [
        *_dim(2, "w"),
        ("Mod", ["w", "ws"], ["m"], {}),
        ("Sub", ["ws", "m"], ["p"], {}),
        ("Mod", ["p", "ws"], ["pad"], {}),
        ("Unsqueeze", ["pad", "zero"], ["pad1"], {}),
        ("Cast", ["pad1"], ["pad32"], {"to": TensorProto.INT32}),
        ("Concat", ["zeros", "pad32"], ["pads32"], {"axis": 0}),
        ("Cast", ["pads32"], ["pads"], {"to": TensorProto.INT64}),
        ("Pad", ["x", "pads"], ["padded"], {}),
        ("Size", ["padded"], ["n"], {}),
        ("Equal", ["want", "minus"], ["open"], {}),
        ("Shape", ["padded"], ["have"], {}),
        ("Where", ["open", "have", "want"], ["to"], {}),
        ("Expand", ["padded", "to"], ["e"], {}),
        ("Cast", ["n"], ["nf"], {"to": TensorProto.FLOAT}),
        ("Div", ["e", "nf"], ["y"], {}),
    ]
    inits = [
        _index(2),
        numpy_helper.from_array(np.array(4, np.int64), "ws"),
        _ints("zero", 0),
        numpy_helper.from_array(np.zeros(5, np.int32), "zeros"),
        _ints("want", 3, -1, -1),
        _ints("minus", -1),
    ]
    model = _model(nodes, [1, 3, 5], [3, 3, 8], inits)
    mod, _ = from_onnx(model)
    main = mod.body.block.first_op
    ops = [op.name for op in main.body.block.ops]  # type: ignore[union-attr]
    assert ops == [
        "graph.pad",
        "graph.broadcast_to",
        "graph.constant",
        "graph.div",
        "func.return",
    ]
    assert "pads = [0, 0, 0, 0, 0, 3]" in str(mod)
    _check(model, _feeds([1, 3, 5]))


def test_a_start_computed_from_the_data_stays_refused():
    """ArgMax of x as a Slice's start depends on the data: refused, naming it."""
    nodes = [
        ("ReduceMax", ["x"], ["top"], {"keepdims": 0}),
        ("Cast", ["top"], ["start0"], {"to": TensorProto.INT64}),
        ("Unsqueeze", ["start0", "zero"], ["start"], {}),
        ("Slice", ["x", "start", "end"], ["y"], {}),
    ]
    inits = [_ints("zero", 0), _ints("end", 4)]
    with pytest.raises(UnsupportedOperatorError) as error:
        from_onnx(_model(nodes, [4], [None], inits))
    assert "Slice (starts computed by the model)" in str(error.value)


def test_folds_stay_bounded():
    """An Expand of known values to 10^4 elements is past MAX_FOLDED_ELEMENTS:
    it stays a graph op on a literal, and its result is still right."""
    nodes = [
        ("Expand", ["one", "big"], ["e"], {}),
        ("Add", ["x", "e"], ["y"], {}),
    ]
    inits = [numpy_helper.from_array(np.ones(1, np.float32), "one")]
    model = _model(nodes, [100, 100], [100, 100], [*inits, _ints("big", 100, 100)])
    mod, params = from_onnx(model)
    assert "graph.broadcast_to" in str(mod) and not params
    _check(model, _feeds([100, 100]))


def test_an_op_ember_never_computes_folds_on_known_inputs():
    """NonZero has no converter: on an initializer it folds (onnx's reference
    evaluator), past MAX_FOLDED_ELEMENTS it is refused naming the bound, and on
    x it stays an unsupported operator."""
    nodes = [
        ("NonZero", ["mask"], ["where"], {}),
        ("Cast", ["where"], ["wf"], {"to": TensorProto.FLOAT}),
        ("Add", ["x", "wf"], ["y"], {}),
    ]
    mask = numpy_helper.from_array(np.array([0, 3, 0, 5], np.int64), "mask")
    _check(_model(nodes, [1, 2], [1, 2], [mask]), _feeds([1, 2]))

    big = numpy_helper.from_array(np.ones(5000, np.int64), "mask")
    with pytest.raises(OnnxImportError, match="at most 4096 elements to fold it"):
        from_onnx(_model(nodes, [1, 5000], [1, 5000], [big]))

    nodes[0] = ("NonZero", ["x"], ["where"], {})
    with pytest.raises(UnsupportedOperatorError, match="NonZero"):
        from_onnx(_model(nodes, [1, 2], [1, 2]))
