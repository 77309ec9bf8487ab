"""ember.compile_model: graphs to one default_run, checked against the graph's
numpy semantics (graph_reference) and onnxruntime; the kernel cache, the
memory plan, exported libraries, outputs that need copies, errors."""

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from xdsl.parser import Parser

import ember
from ember.backends.kernel_cache import CompileCache
from ember.backends.kernels import compile_kernel, object_symbols
from ember.compiler.model import ModelCompileError, compile_model
from ember.passes import get_context
from ember.passes.graph_reference import run_graph
from ember.runtime import GraphModule, cpu, save_param_dict
from ember.runtime.errors import EmberError

EXAMPLES = Path(__file__).resolve().parents[1] / "examples"

BLOCK = """
func.func @main(%x: tensor<1x8x16x16xf32> {ember.name = "x"}) -> tensor<1x2048xf32> {
  %w1 = graph.param "w1" : tensor<16x8x3x3xf32>
  %b1 = graph.param "b1" : tensor<16xf32>
  %w2 = graph.param "w2" : tensor<16x16x3x3xf32>
  %w3 = graph.param "w3" : tensor<16x16x3x3xf32>
  %s = graph.param "s" : tensor<16x1x1xf32>
  %c1 = graph.conv2d %x, %w1, %b1 {strides = [2, 2], padding = [1, 1, 1, 1]} : (tensor<1x8x16x16xf32>, tensor<16x8x3x3xf32>, tensor<16xf32>) -> tensor<1x16x8x8xf32>
  %r1 = graph.relu %c1 : (tensor<1x16x8x8xf32>) -> tensor<1x16x8x8xf32>
  %c2 = graph.conv2d %r1, %w2 {padding = [1, 1, 1, 1]} : (tensor<1x16x8x8xf32>, tensor<16x16x3x3xf32>) -> tensor<1x16x8x8xf32>
  %m = graph.mul %c2, %s : (tensor<1x16x8x8xf32>, tensor<16x1x1xf32>) -> tensor<1x16x8x8xf32>
  %a = graph.add %m, %r1 : (tensor<1x16x8x8xf32>, tensor<1x16x8x8xf32>) -> tensor<1x16x8x8xf32>
  %r2 = graph.clip %a {min = 0.0 : f32, max = 6.0 : f32} : (tensor<1x16x8x8xf32>) -> tensor<1x16x8x8xf32>
  %c3 = graph.conv2d %r2, %w3 {padding = [1, 1, 1, 1]} : (tensor<1x16x8x8xf32>, tensor<16x16x3x3xf32>) -> tensor<1x16x8x8xf32>
  %t = graph.transpose %c3 {perm = [0, 2, 3, 1]} : (tensor<1x16x8x8xf32>) -> tensor<1x8x8x16xf32>
  %f = graph.flatten %t {axis = 1} : (tensor<1x8x8x16xf32>) -> tensor<1x1024xf32>
  %g = graph.sigmoid %f : (tensor<1x1024xf32>) -> tensor<1x1024xf32>
  %cc = graph.concat %g, %f {axis = 1} : (tensor<1x1024xf32>, tensor<1x1024xf32>) -> tensor<1x2048xf32>
  func.return %cc : tensor<1x2048xf32>
}
"""

HEAD = """
func.func @main(%x: tensor<1x8x16x16xf32> {ember.name = "x"}) -> tensor<1x8xf32> {
  %p = graph.max_pool2d %x {kernel = [3, 3], strides = [2, 2], padding = [1, 1, 1, 1]} : (tensor<1x8x16x16xf32>) -> tensor<1x8x8x8xf32>
  %r = graph.relu %p : (tensor<1x8x8x8xf32>) -> tensor<1x8x8x8xf32>
  %g = graph.global_avg_pool2d %r : (tensor<1x8x8x8xf32>) -> tensor<1x8x1x1xf32>
  %f = graph.flatten %g {axis = 1} : (tensor<1x8x1x1xf32>) -> tensor<1x8xf32>
  %s = graph.softmax %f {axis = 1} : (tensor<1x8xf32>) -> tensor<1x8xf32>
  func.return %s : tensor<1x8xf32>
}
"""


def _params(seed=0):
    rng = np.random.default_rng(seed)
    return {
        "w1": rng.standard_normal((16, 8, 3, 3)).astype("float32") * 0.2,
        "b1": rng.standard_normal(16).astype("float32"),
        "w2": rng.standard_normal((16, 16, 3, 3)).astype("float32") * 0.1,
        "w3": rng.standard_normal((16, 16, 3, 3)).astype("float32") * 0.1,
        "s": rng.standard_normal((16, 1, 1)).astype("float32"),
    }


def _reference(ir, inputs, params):
    module = Parser(get_context(), ir).parse_module()
    main = next(iter(module.ops))
    return run_graph(main, inputs, params)


def _run(mod, inputs: dict, params_blob: bytes | None = None):
    gm = GraphModule(mod["default"](cpu()))
    if params_blob is not None:
        gm.load_params(params_blob)
    for name, value in inputs.items():
        gm.set_input(name, value)
    gm.run()
    return [gm.get_output(i).numpy() for i in range(gm.get_num_outputs())]


def _rel_err(got, want):
    return float(np.abs(got - want).max() / max(np.abs(want).max(), 1e-30))


@pytest.fixture(scope="module")
def cache(tmp_path_factory):
    """One kernel cache for the module's tests (identical kernels compile once);
    the cache's own behaviour is tested on fresh directories."""
    return CompileCache(tmp_path_factory.mktemp("cache"))


@pytest.mark.parametrize("opt_level", [0, 3])
def test_block_matches_graph_semantics(cache, opt_level):
    params = _params()
    x = np.random.default_rng(1).standard_normal((1, 8, 16, 16)).astype("float32")
    mod = compile_model(BLOCK, params, opt_level=opt_level, cache=cache)
    (y,) = _run(mod, {"x": x})
    (want,) = _reference(BLOCK, [x], params)
    assert _rel_err(y, want) <= 1e-5
    stats = mod.compile_stats
    if opt_level == 3:  # conv+relu, conv*s+r1 clip, conv, transpose, sig+concat
        assert stats.calls < 9
    # conv2 and conv3 have one structure: one kernel, two calls (opt 0: the
    # epilogue-free convs; opt 3: conv3 alone differs from conv2's group)
    assert stats.kernels <= stats.calls


def test_pooling_softmax_head(cache):
    x = np.random.default_rng(2).standard_normal((1, 8, 16, 16)).astype("float32")
    mod = compile_model(HEAD, {}, cache=cache)
    (y,) = _run(mod, {"x": x})
    (want,) = _reference(HEAD, [x], {})
    assert _rel_err(y, want) <= 1e-5


def test_identical_layers_compile_once_and_cache_hits(tmp_path):
    cache = CompileCache(tmp_path)
    mod = compile_model(BLOCK, _params(), opt_level=0, cache=cache)
    first = mod.compile_stats
    # conv2 and conv3: the same shapes, no epilogue at opt_level 0
    assert first.kernels < first.calls
    assert first.cache_hits == 0 and first.compiled == first.kernels
    again = compile_model(BLOCK, _params(1), opt_level=0, cache=CompileCache(tmp_path))
    stats = again.compile_stats
    assert stats.cache_hits == stats.kernels and stats.compiled == 0
    x = np.ones((1, 8, 16, 16), "float32")
    (y,) = _run(again, {"x": x})
    (want,) = _reference(BLOCK, [x], _params(1))
    assert _rel_err(y, want) <= 1e-5


def test_memory_plan_reuses_the_workspace(cache):
    mod = compile_model(BLOCK, _params(), opt_level=0, cache=cache)
    stats = mod.compile_stats
    assert stats.workspace_bytes < stats.intermediate_bytes
    model = mod.metadata["model"]
    assert model["workspace_bytes"] == stats.workspace_bytes
    assert model["inputs"] == [
        {"name": "x", "shape": [1, 8, 16, 16], "dtype": "float32"}
    ]


def test_reshapes_are_aliases(cache):
    # flatten (opt 0: a lone op) costs no kernel: its users read conv3's bytes
    mod = compile_model(BLOCK, _params(), opt_level=0, cache=cache)
    source = mod.get_source("ll-unopt")
    assert "flatten" not in source and "ember_transpose" in source


EDGE = """
func.func @main(%x: tensor<2x8xf32> {ember.name = "x"}) -> (tensor<2x8xf32>, tensor<16xf32>, tensor<2x8xf32>, tensor<4x4xf32>) {
  %w = graph.param "w" : tensor<2x8xf32>
  %e = graph.exp %x : (tensor<2x8xf32>) -> tensor<2x8xf32>
  %r = graph.reshape %e : (tensor<2x8xf32>) -> tensor<16xf32>
  %r2 = graph.reshape %e : (tensor<2x8xf32>) -> tensor<4x4xf32>
  func.return %x, %r, %w, %r2 : tensor<2x8xf32>, tensor<16xf32>, tensor<2x8xf32>, tensor<4x4xf32>
}
"""


def test_outputs_that_are_inputs_params_aliases_or_shared(cache):
    x = np.random.default_rng(3).standard_normal((2, 8)).astype("float32")
    w = np.arange(16, dtype="float32").reshape(2, 8)
    mod = compile_model(EDGE, {"w": w}, cache=cache)
    got = _run(mod, {"x": x})
    want = _reference(EDGE, [x], {"w": w})
    assert [g.shape for g in got] == [(2, 8), (16,), (2, 8), (4, 4)]
    for g, e in zip(got, want, strict=True):
        np.testing.assert_allclose(g, e, rtol=1e-6)


def test_separate_params_and_export(tmp_path, cache):
    params = _params()
    x = np.random.default_rng(4).standard_normal((1, 8, 16, 16)).astype("float32")
    mod = compile_model(BLOCK, params, embed_params=False, cache=cache)
    assert mod.metadata["model"]["params_embedded"] is False
    blob = save_param_dict(mod.params)
    (want,) = _reference(BLOCK, [x], params)
    (y,) = _run(mod, {"x": x}, blob)
    assert _rel_err(y, want) <= 1e-5
    embedded = compile_model(BLOCK, params, cache=cache)
    lib = tmp_path / "block.so"
    embedded.export_library(str(lib))
    np.save(tmp_path / "x.npy", x)
    code = f"""
import sys
import numpy as np
from ember.runtime import GraphModule, cpu, load_module
gm = GraphModule(load_module({str(lib)!r})["default"](cpu()))
gm.set_input("x", np.load({str(tmp_path / "x.npy")!r}))
gm.run()
np.save({str(tmp_path / "y.npy")!r}, gm.get_output(0).numpy())
assert "xdsl" not in sys.modules and "llvmlite" not in sys.modules
"""
    subprocess.run([sys.executable, "-c", code], check=True)
    assert _rel_err(np.load(tmp_path / "y.npy"), want) <= 1e-5


def test_blob_holds_only_params_kernels_read(cache):
    """Packed weights replace their originals; every param in the layout is
    read (garbage in its bytes changes the output), and `mod.params` is exactly
    what `load_params` takes."""
    params = _params()
    x = np.random.default_rng(5).standard_normal((1, 8, 16, 16)).astype("float32")
    mod = compile_model(BLOCK, params, embed_params=False, cache=cache, opt_level=0)
    model = mod.metadata["model"]
    layout = model["params"]
    assert set(layout) == set(mod.params)
    packed = {n.split(".packed.")[0] for n in layout if ".packed." in n}
    assert packed == {"w1", "w2", "w3"}, layout
    assert not packed & set(layout), "an original is kept beside its packed form"
    end = max(e["offset"] + 4 * int(np.prod(e["shape"])) for e in layout.values())
    assert model["params_bytes"] == -(-end // 64) * 64
    (want,) = _run(mod, {"x": x}, save_param_dict(mod.params))
    for name, value in mod.params.items():
        noisy = dict(mod.params)
        noisy[name] = np.full_like(value, 1e3)
        (got,) = _run(mod, {"x": x}, save_param_dict(noisy))
        assert not np.allclose(got, want), f"param {name!r} is never read"


def test_kernels_allocate_nothing(cache):
    """Convolutions' padded inputs and pooling's column passes are workspace
    slices (scratch arguments), not heap allocations on every run."""
    mod = compile_model(BLOCK, _params(), cache=cache)
    objects = [m._obj for m in mod.imported_modules if hasattr(m, "_obj")]
    assert len(objects) == mod.compile_stats.kernels
    for obj in objects:
        _, needed = object_symbols(obj.code)
        assert not needed & {"aligned_alloc", "malloc", "free"}, obj.name
    # Three padded convolutions and a pool's scratch live in the workspace.
    head = compile_model(HEAD, {}, cache=cache)
    x = np.random.default_rng(6).standard_normal((1, 8, 16, 16)).astype("float32")
    (got,) = _run(head, {"x": x})
    (want,) = _reference(HEAD, [x], {})
    assert _rel_err(got, want) <= 1e-5
    for obj in (m._obj for m in head.imported_modules if hasattr(m, "_obj")):
        assert not object_symbols(obj.code)[1] & {"aligned_alloc", "free"}
    # Built on its own, the same convolution still allocates its padded input.
    from ember import te, topi

    k = topi.conv2d(
        te.placeholder((1, 8, 16, 16), name="x"), (16, 8, 3, 3), padding=(1, 1, 1, 1)
    )
    alone = ember.build(k.schedule(), k.args, name="conv")
    assert "@aligned_alloc" in alone.get_source("ll")


def test_scratch_buffers_are_planned():
    """A kernel's scratch buffers are live during its own call only: two
    kernels in a row share the bytes, and a kernel's output never overlaps
    its scratch (read off `default_run` as `graph-plan-memory` writes it)."""
    import json

    from xdsl.dialects import func, memref

    from ember.passes import run
    from ember.passes.pipelines import model_passes

    module = Parser(get_context(), BLOCK).parse_module()
    run(module, ",".join(model_passes(until="loop")))
    kernels = {
        op.sym_name.data: op
        for op in module.ops
        if isinstance(op, func.FuncOp) and op.sym_name.data != "default_run"
    }
    entry = next(
        op
        for op in module.ops
        if isinstance(op, func.FuncOp) and op.sym_name.data == "default_run"
    )
    workspace = entry.args[-2]
    scratch_calls = 0
    for call in entry.walk():
        if not isinstance(call, func.CallOp):
            continue
        kernel = kernels[call.callee.string_value()]
        assert kernel.arg_attrs is not None
        spans = []
        for value, attrs in zip(call.arguments, kernel.arg_attrs.data, strict=True):
            view = value.owner
            if isinstance(view, memref.ViewOp) and view.source is workspace:
                start = view.byte_shift.owner.value.value.data  # type: ignore[attr-defined]
                end = start + int(np.prod(value.type.get_shape())) * 4  # type: ignore[attr-defined]
                spans.append((start, end, "ember.scratch" in attrs.data))
        scratch = [(a, b) for a, b, is_scratch in spans if is_scratch]
        scratch_calls += bool(scratch)
        for a, b in scratch:
            for c, d, _ in spans:
                if (c, d) != (a, b):
                    assert b <= c or d <= a, "scratch overlaps an operand"
    assert scratch_calls >= 3  # the padded convolutions
    model = json.loads(module.attributes["ember.model"].data)  # type: ignore[attr-defined]
    assert model["workspace_bytes"] < model["intermediate_bytes"]


def test_kernel_compiler_checks_the_planned_scratch():
    """The kernel compiler checks the lowered signature against the plan's."""
    from ember.backends.llvm import Target
    from ember.passes import run
    from ember.passes.pipelines import model_passes
    from ember.passes.te_compile_kernels import take_kernels

    module = Parser(get_context(), BLOCK).parse_module()
    run(module, ",".join(model_passes(until="te")))
    job = next(j for j in take_kernels(module, str(Target())) if j.scratch)
    with pytest.raises(
        ValueError, match=r"expected scratch buffers \[\], got \[memref"
    ):
        compile_kernel(job.text, job.symbol, "llvm", ())


def test_errors(cache):
    with pytest.raises(ModelCompileError, match=r"got none for b1, s, w1, w2, w3 \(0"):
        compile_model(BLOCK, {}, cache=cache)
    bad = dict(_params(), s=np.ones((16, 2, 1), "float32"))
    with pytest.raises(ModelCompileError, match=r'"s": expected shape \(16, 1, 1\)'):
        compile_model(BLOCK, bad, cache=cache, opt_level=0)
    with pytest.raises(ModelCompileError, match="invalid graph IR"):
        wrong = "padding = [1, 1, 1, 1]} : (tensor<1x8x16x16xf32>"
        compile_model(
            BLOCK.replace(wrong, wrong.replace("[1, 1, 1, 1]", "[0, 0, 0, 0]")),
            _params(),
        )
    with pytest.raises(ModelCompileError, match="invalid graph IR"):
        compile_model(BLOCK.replace("graph.relu", "graph.rleu"), _params())
    with pytest.raises(ModelCompileError, match="func.func @main"):
        compile_model("builtin.module {}", {})
    # a model without outputs has nothing to compute
    nothing = (
        """func.func @main(%x: tensor<2xf32> {ember.name = "x"}) { func.return }"""
    )
    with pytest.raises(ModelCompileError, match="computes nothing .no outputs"):
        compile_model(nothing, {})


def test_a_model_whose_output_is_its_input_copies_it():
    """An ONNX Identity alone imports as this: the output is a copy of the
    input (its own buffer), as for every other output."""
    identity = """func.func @main(%x: tensor<2xf32> {ember.name = "x"})
        -> (tensor<2xf32> {ember.name = "y"}) { func.return %x : tensor<2xf32> }"""
    gm = GraphModule(compile_model(identity, {})["default"](cpu()))
    x = np.array([1.5, -2.0], np.float32)
    (y,) = gm(x=x)
    assert np.array_equal(y, x) and y.ctypes.data != x.ctypes.data


def test_facade():
    assert ember.compile_model is compile_model


def _onnx_case(name, cache, target="llvm", **kwargs):
    onnxruntime = pytest.importorskip("onnxruntime")
    sys.path.insert(0, str(EXAMPLES))
    try:
        import onnx_models
    finally:
        sys.path.remove(str(EXAMPLES))
    model = getattr(onnx_models, name)(**kwargs)
    inputs = onnx_models.random_input(model)
    mod = compile_model(model, cache=cache, target=target)
    got = _run(mod, inputs)
    session = onnxruntime.InferenceSession(model.SerializeToString())
    want = session.run(None, inputs)
    for g, w in zip(got, want, strict=True):
        assert g.shape == w.shape
        assert _rel_err(g, w) <= 1e-4, name
    return mod


@pytest.mark.parametrize("name", ["mlp", "transformer_block"])
def test_small_models_match_onnxruntime(name, cache):
    _onnx_case(name, cache)


@pytest.mark.parametrize("name", ["mobilenet_v2", "resnet18"])
def test_cnn_models_match_onnxruntime(name, cache):
    mod = _onnx_case(name, cache)
    assert mod.compile_stats.kernels < mod.compile_stats.calls
    # The blob holds each weight once (packed), beside nothing unread:
    # MobileNetV2's 3.5M floats are ~14 MB, not twice that.
    model = mod.metadata["model"]
    floats = sum(a.size for a in mod.params.values())
    assert model["params_bytes"] <= 4 * floats + 64 * len(mod.params)
    assert not any(f"{n}.packed." in m for n in mod.params for m in mod.params)
    if name == "mobilenet_v2":
        assert 3.4e6 < floats < 3.6e6


@pytest.mark.parametrize(
    "name, cpu",
    [
        ("mobilenet_v2", "haswell"),
        pytest.param("mobilenet_v2", "x86-64", marks=pytest.mark.slow),
        pytest.param("resnet18", "haswell", marks=pytest.mark.slow),
        pytest.param("resnet18", "x86-64", marks=pytest.mark.slow),
    ],
)
def test_cnn_models_for_narrower_x86_match_onnxruntime(name, cpu, cache):
    """Built for AVX2 (haswell) and SSE2 (x86-64), the models run on this host
    (its features include theirs) with schedules for those widths."""
    from ember.backends.llvm import Target

    target = Target(f"llvm -mcpu={cpu}")
    assert target.is_host, target.not_host_reason
    mod = _onnx_case(name, cache, target=str(target))
    assert f"-mcpu={cpu}" in str(mod.target)  # type: ignore[attr-defined]


@pytest.mark.parametrize("ir", [BLOCK, HEAD], ids=["block", "head"])
def test_the_pipeline_on_one_module_runs_as_compile_model(ir, cache):
    """`ember-model` run as one pass list (as `ember-opt -p ember-model` runs
    it), then linked, gives the library `compile_model` gives, and both the
    graph's numpy semantics."""
    from ember.backends.llvm import Target
    from ember.compiler.model import link_model
    from ember.passes import run
    from ember.passes.bound_params import bind_params
    from ember.passes.pipelines import model_passes

    params = _params() if "w1" in ir else {}
    x = np.random.default_rng(3).standard_normal((1, 8, 16, 16)).astype("float32")
    module = Parser(get_context(), ir).parse_module()
    with bind_params(params) as bound:
        run(module, ",".join(model_passes()))
    got = _run(link_model(module, Target(), bound.values), {"x": x})
    want = _run(compile_model(ir, params, cache=cache), {"x": x})
    reference = _reference(ir, [x], params)
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-5)
    np.testing.assert_allclose(got[0], reference[0], rtol=1e-4, atol=1e-4)


def test_get_source_shows_the_models_loops_and_each_kernels(cache):
    """A model's `get_source("loop")` is its entry, then each kernel's loop
    nest, lowered again from the te IR the compiling process keeps; a kernel's own
    module gives its te IR too (before: `kernel-object module has no source`)."""
    mod = compile_model(BLOCK, _params(), cache=cache)
    text = mod.get_source("loop")
    assert text.count("func.func @default_run(") == 1
    kernels = [m for m in mod.imported_modules if m.type_key == "kernel-object"]
    assert len(kernels) == mod.compile_stats.kernels >= 2
    for kernel in kernels:
        symbol = kernel._obj.name.removesuffix(".o")
        assert f"func.func @{symbol}(" in kernel.get_source("loop")
        assert "loop.for" in kernel.get_source()
        assert "te.compute" in kernel.get_source("te")
        assert kernel.get_source("loop") in text
    with pytest.raises(EmberError, match="has sources 'te' and 'loop', not 'asm'"):
        kernels[0].get_source("asm")
