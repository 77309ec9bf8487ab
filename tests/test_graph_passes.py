"""Graph passes keep a model's numerics (numpy reference before and after) and do
what they promise: folded params, batch norms gone, every op in a fusion group,
the groups a ResNet/MobileNet-style block should get; and PassContext."""

import numpy as np
import pytest
from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp, TensorType, f32
from xdsl.ir import Block, Region, SSAValue

import ember
from ember.dialects import graph
from ember.passes.graph_fold_batch_norm import fold_batch_norm, rewrite_batch_norms
from ember.passes.graph_fold_constants import fold_constants
from ember.passes.graph_fuse_ops import fuse_ops
from ember.passes.graph_reference import run_graph
from ember.passes.pass_context import PassContext
from ember.passes.pipelines import graph_pipeline, optimize_graph


class Net:
    """Builds a graph @main with the builders, as a frontend does."""

    def __init__(self, *input_shapes, seed=0):
        self.rng = np.random.default_rng(seed)
        self.block = Block(arg_types=[TensorType(f32, s) for s in input_shapes])
        self.params: dict[str, np.ndarray] = {}

    @property
    def inputs(self):
        return self.block.args

    def param(self, name, *shape, positive=False):
        value = self.rng.standard_normal(shape).astype(np.float32)
        if positive:
            value = np.abs(value) + 0.5
        self.params[name] = value
        return self.op(graph.ParamOp(name, TensorType(f32, shape)))

    def op(self, op):
        self.block.add_op(op)
        return op.results[0]

    def __getattr__(self, name):
        cls = {
            "conv": graph.Conv2DOp,
            "bn": graph.BatchNormOp,
            "relu": graph.ReluOp,
            "clip": graph.ClipOp,
            "add": graph.AddOp,
            "mul": graph.MulOp,
            "dense": graph.DenseOp,
            "transpose": graph.TransposeOp,
            "gap": graph.GlobalAvgPool2DOp,
            "flatten": graph.FlattenOp,
            "softmax": graph.SoftmaxOp,
            "matmul": graph.MatmulOp,
            "mean": graph.ReduceMeanOp,
            "sub": graph.SubOp,
            "sqrt": graph.SqrtOp,
            "div": graph.DivOp,
            "gelu": graph.GeluOp,
            "const": None,
        }[name]
        if cls is None:
            return lambda v: self.op(
                graph.ConstantOp.from_numpy(np.asarray(v, np.float32))
            )
        return lambda *a, **k: self.op(cls.build_inferred(*a, **k))

    def conv_bn(self, x, name, cin, cout, k=3, stride=1, groups=1):
        w = self.param(f"{name}.weight", cout, cin // groups, k, k)
        y = self.conv(
            x, w, strides=(stride, stride), padding=(k // 2,) * 4, groups=groups
        )
        stats = [
            self.param(f"{name}.bn.gamma", cout),
            self.param(f"{name}.bn.beta", cout),
            self.param(f"{name}.bn.mean", cout),
            self.param(f"{name}.bn.var", cout, positive=True),
        ]
        return self.bn(y, *stats, epsilon=1e-5)

    def finish(self, *outputs: SSAValue) -> ModuleOp:
        self.block.add_op(func.ReturnOp(*outputs))
        fn = func.FuncOp(
            "main",
            ([a.type for a in self.inputs], [o.type for o in outputs]),
            Region(self.block),
        )
        module = ModuleOp([fn])
        module.verify()
        return module

    def data(self):
        return [
            self.rng.standard_normal(a.type.get_shape()).astype(np.float32)
            for a in self.inputs
        ]


def _main(module):
    return module.body.block.first_op


def _graph_ops(module, cls=graph.GraphOp):
    return [op for op in _main(module).body.block.ops if isinstance(op, cls)]


def _run(module, inputs, params):
    return run_graph(_main(module), inputs, params)


def _assert_close(got, expected):
    for g, e in zip(got, expected, strict=True):
        np.testing.assert_allclose(g, e, rtol=1e-4, atol=1e-4)


def resnet_block():
    net = Net((1, 8, 8, 8))
    (x,) = net.inputs
    y = net.relu(net.conv_bn(x, "c1", 8, 8))
    y = net.conv_bn(y, "c2", 8, 8)
    y = net.relu(net.add(y, x))
    return net, net.finish(y)


def mobilenet_block():
    net = Net((1, 8, 16, 16))
    (x,) = net.inputs
    y = net.clip(net.conv_bn(x, "expand", 8, 32, k=1), min=0.0, max=6.0)
    y = net.clip(net.conv_bn(y, "dw", 32, 32, stride=2, groups=32), min=0.0, max=6.0)
    y = net.conv_bn(y, "project", 32, 16, k=1)
    y = net.flatten(net.gap(y))
    y = net.dense(y, net.param("fc.weight", 10, 16), net.param("fc.bias", 10))
    return net, net.finish(net.softmax(y, axis=1))


def test_fold_constants_folds_param_subgraphs_into_new_params():
    net = Net((2, 4))
    (x,) = net.inputs
    w = net.param("fc.weight", 4, 3)
    scale = net.const([2.0])
    wt = net.transpose(net.mul(w, scale), perm=(1, 0))
    module = net.finish(net.dense(x, wt))
    inputs, params = net.data(), dict(net.params, unused=np.zeros(3, np.float32))
    expected = _run(module, inputs, params)
    folded = fold_constants(module, params)
    assert set(folded) == {"fc.weight.folded"}
    np.testing.assert_array_equal(
        folded["fc.weight.folded"], (2 * net.params["fc.weight"]).T
    )
    assert [type(op) for op in _graph_ops(module)] == [graph.DenseOp]
    _assert_close(_run(module, inputs, folded), expected)
    # the caller's mapping is left alone
    assert set(params) == {"fc.weight", "unused"}


def test_fold_constants_without_params_keeps_param_ops():
    net = Net((2, 4))
    w = net.param("w", 3, 4)
    module = net.finish(net.dense(net.inputs[0], net.relu(w)))
    assert fold_constants(module) == {}
    assert len(_graph_ops(module)) == 2


@pytest.mark.parametrize("builder", [resnet_block, mobilenet_block])
def test_fold_batch_norm_numerics_and_no_batch_norm_left(builder):
    net, module = builder()
    inputs = net.data()
    expected = _run(module, inputs, net.params)
    params = fold_batch_norm(module, net.params)
    assert not _graph_ops(module, graph.BatchNormOp)
    # every conv reads folded params directly: nothing is computed on weights at run time
    for conv in _graph_ops(module, graph.Conv2DOp):
        assert all(isinstance(v.owner, graph.ParamOp) for v in conv.operands[1:])
        assert conv.bias is not None
    assert not any(
        name.startswith(("c1.bn", "dw.bn")) and "folded" not in name for name in params
    )
    _assert_close(_run(module, inputs, params), expected)


def test_batch_norm_that_cannot_fold_becomes_mul_add():
    net = Net((1, 4, 3, 3))
    (x,) = net.inputs
    y = net.conv(x, net.param("w", 4, 4, 1, 1))
    z = net.bn(y, *(net.param(n, 4, positive=n == "v") for n in "gbmv"))
    module = net.finish(z, y)  # the conv's result has a second reader
    inputs = net.data()
    expected = _run(module, inputs, net.params)
    params = fold_batch_norm(module, net.params)
    kinds = [type(op) for op in _graph_ops(module)]
    assert kinds == [graph.Conv2DOp, graph.MulOp, graph.AddOp]
    assert params["g.folded"].shape == (4, 1, 1)
    _assert_close(_run(module, inputs, params), expected)


def test_fold_batch_norm_pass_form_is_symbolic():
    net, module = resnet_block()
    rewrite_batch_norms(module)
    assert not _graph_ops(module, graph.BatchNormOp)
    inputs = net.data()
    _assert_close(
        _run(module, inputs, net.params), _run(resnet_block()[1], inputs, net.params)
    )


def _fused(module):
    return _graph_ops(module, graph.FusedOp)


def test_fuse_ops_resnet_block_groups_and_numerics():
    net, module = resnet_block()
    params = fold_batch_norm(module, net.params)
    inputs = net.data()
    expected = _run(module, inputs, params)
    fused = fuse_ops(module)
    assert [f.group_name.data for f in fused] == [
        "fused_conv2d_relu_0",
        "fused_conv2d_add_relu_1",
    ]
    # the residual add's other operand (the block input) is an extra group input
    assert fused[1].inputs[-1] is net.inputs[0]
    assert not _graph_ops(module)  # every graph op is in a group
    _assert_close(_run(module, inputs, params), expected)


def test_fuse_ops_mobilenet_block():
    net, module = mobilenet_block()
    params = fold_batch_norm(module, net.params)
    inputs = net.data()
    expected = _run(module, inputs, params)
    names = [f.group_name.data for f in fuse_ops(module)]
    assert names == [
        "fused_conv2d_clip_0",
        "fused_conv2d_clip_1",
        "fused_conv2d_2",
        "fused_global_avg_pool2d_3",
        "fused_flatten_4",
        "fused_dense_5",
        "fused_softmax_6",
    ]
    _assert_close(_run(module, inputs, params), expected)


def test_fuse_ops_transformer_block():
    """matmul + bias + gelu, a layer-norm-like chain of reductions and elementwise
    ops, attention-like softmax: numerics survive, reductions stand alone."""
    net = Net((4, 16))
    (x,) = net.inputs
    h = net.gelu(net.add(net.matmul(x, net.param("w1", 16, 32)), net.param("b1", 32)))
    h = net.matmul(h, net.param("w2", 32, 16))
    y = net.add(h, x)
    mu = net.mean(y, axes=(-1,), keepdims=True)
    d = net.sub(y, mu)
    var = net.mean(net.mul(d, d), axes=(-1,), keepdims=True)
    eps = net.const(1e-5)
    norm = net.div(d, net.sqrt(net.add(var, eps)))
    out = net.add(net.mul(norm, net.param("ln.g", 16)), net.param("ln.b", 16))
    scores = net.softmax(net.matmul(out, net.transpose(out)), axis=-1)
    module = net.finish(scores)
    inputs = net.data()
    expected = _run(module, inputs, net.params)
    names = [f.group_name.data for f in fuse_ops(module)]
    assert names == [
        "fused_matmul_add_gelu_0",
        "fused_matmul_add_1",
        "fused_reduce_mean_2",
        "fused_sub_3",  # two readers: the square and the division
        "fused_mul_4",
        "fused_reduce_mean_5",
        # the literal epsilon is copied in; the chain grows (4, 1) to (4, 16)
        "fused_add_sqrt_div_mul_add_6",
        "fused_transpose_7",
        "fused_matmul_8",
        "fused_softmax_9",
    ]
    _assert_close(_run(module, inputs, net.params), expected)


def test_pass_context_nesting_and_pipeline():
    assert PassContext.current().opt_level == 2
    assert ember.PassContext is PassContext
    with PassContext(opt_level=0):
        assert graph_pipeline() == ()
        with PassContext(opt_level=1, disabled_pass=["FuseOps"]) as inner:
            assert PassContext.current() is inner
            assert graph_pipeline() == ("graph-fold-constants",)
        assert PassContext.current().opt_level == 0
    assert graph_pipeline(PassContext(opt_level=3)) == (
        "graph-fold-batch-norm",
        "graph-fuse-layer-norm",
        "graph-merge-matmuls",
        "cse",
        "graph-fold-constants",
        "graph-fuse-attention",
        "graph-lookup-tables",
        "dce",
        "graph-fuse-ops",
    )
    with pytest.raises(ValueError, match="expected opt_level in 0..4, got 7"):
        PassContext(opt_level=7)
    with pytest.raises(TypeError, match="expected a list of pass names"):
        PassContext(disabled_pass="graph-fuse-ops")


@pytest.mark.parametrize("opt_level", [0, 1, 2, 3])
def test_optimize_graph_by_opt_level(opt_level):
    net, module = mobilenet_block()
    inputs = net.data()
    expected = _run(module, inputs, net.params)
    with PassContext(opt_level=opt_level):
        params = optimize_graph(module, net.params)
    _assert_close(_run(module, inputs, params), expected)
    if opt_level == 0:
        assert not _fused(module) and params == net.params
    else:
        assert _fused(module) and not _graph_ops(module)
    batch_norms = [
        op
        for f in _fused(module)
        for op in f.body.block.ops
        if isinstance(op, graph.BatchNormOp)
    ]
    assert bool(batch_norms) == (opt_level == 1)


def test_optimize_graph_disabled_fold_keeps_weights_as_params():
    net, module = resnet_block()
    with PassContext(opt_level=2, disabled_pass=["graph-fold-batch-norm"]):
        params = optimize_graph(module, net.params)
    assert set(params) == set(net.params)


@pytest.mark.parametrize("name", ["mobilenet_v2", "resnet18", "transformer_block"])
def test_imported_models_keep_onnxruntime_numerics_after_the_graph_pipeline(name):
    """The real networks (examples/onnx_models.py through the ONNX frontend): after
    opt_level 3 no batch norm is left, every op is in a group, and the reference
    semantics of the optimized graph still match onnxruntime."""
    import importlib.util
    from pathlib import Path

    import onnxruntime as ort

    from ember.frontends.onnx import from_onnx

    path = Path(__file__).parent.parent / "examples" / "onnx_models.py"
    spec = importlib.util.spec_from_file_location("onnx_models", path)
    assert spec is not None and spec.loader is not None
    models = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(models)
    model = getattr(models, name)()
    feeds = models.random_input(model)
    session = ort.InferenceSession(
        model.SerializeToString(), providers=["CPUExecutionProvider"]
    )
    expected = session.run(None, feeds)
    module, params = from_onnx(model)
    with PassContext(opt_level=3):
        folded = optimize_graph(module, params)
    ops = list(_main(module).body.block.ops)
    assert not any(isinstance(op, graph.GraphOp) for op in ops)
    inner = [op for f in _fused(module) for op in f.body.block.ops]
    assert not any(isinstance(op, graph.BatchNormOp) for op in inner)
    assert len(folded) < len(params) or name == "transformer_block"
    got = run_graph(_main(module), list(feeds.values()), folded)
    for g, e in zip(got, expected, strict=True):
        assert np.abs(g - e).max() <= 1e-4 * np.abs(e).max()
