"""bfloat16 products (`precision="bf16"`, `ember.topi.bf16`): the rounding
against torch's, the kernels against numpy on the rounded operands (random
shapes, hypothesis), the model against onnxruntime's float32 within
bfloat16's error with the same top-1, and the refusals."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import onnx
import pytest
import torch
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import ember
from ember import te
from ember.backends.llvm import Target
from ember.compiler.model import ModelCompileError
from ember.dialects.graph_numpy import bf16_halves
from ember.passes.convert_dot_to_llvm import bf16_instructions
from ember.runtime import GraphModule, cpu
from ember.runtime.errors import EmberValueError
from ember.topi.bf16 import conv2d_bf16, dense_bf16, pairs, widened
from ember.topi.dense import matmul_weight

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "examples"))
import onnx_models  # noqa: E402

HOST_BF16 = bool(bf16_instructions(Target("llvm")))
needs_bf16 = pytest.mark.skipif(
    not HOST_BF16,
    reason="this CPU has no bfloat16 dot product (x86 avx512bf16, aarch64 bf16): "
    "compile_model refuses precision='bf16' for it",
)
EPS = 2.0**-8
"""bfloat16's relative rounding error bound (8 bits of significand, to
nearest)."""


def rounded(x: np.ndarray, axis: int = -1) -> np.ndarray:
    """x rounded to bfloat16, as float64 (through `pairs`)."""
    return (
        widened(pairs(x, axis), axis)
        .take(range(x.shape[axis]), axis)
        .astype(np.float64)
    )


def conv_reference(x, w, b, strides, padding, dilation):
    return torch.nn.functional.conv2d(
        torch.from_numpy(x),
        torch.from_numpy(w),
        None if b is None else torch.from_numpy(b).double(),
        stride=strides,
        padding=padding,
        dilation=dilation,
    ).numpy()


def test_rounding_is_torchs_round_to_nearest_even():
    """`te.bf16_word` in a kernel and `pairs` in numpy round as torch's
    bfloat16 does: ties to even, infinities and NaNs kept, overflow to
    infinity, subnormals rounded too."""
    rng = np.random.default_rng(0)
    special = [np.inf, -np.inf, np.nan, -0.0, 3.4e38, -3.4e38, 1e-40, -1e-39]
    ties = (np.arange(1, 9, dtype=np.uint32) << 16 | 0x8000).view(np.float32)
    x = np.concatenate([special, ties, rng.standard_normal(48) * 100]).astype(
        np.float32
    )
    want = torch.from_numpy(x).bfloat16().float().numpy()
    assert np.array_equal(widened(pairs(x, 0), 0), want, equal_nan=True)

    a = te.placeholder(x.shape, name="a")
    words = te.compute(
        (x.size // 2,), lambda i: te.bf16_word(a[2 * i], a[2 * i + 1]), name="w"
    )
    got = np.zeros(x.size // 2, np.int32)
    ember.build(te.create_schedule(words.op), [a, words])(x, got)
    assert np.array_equal(got, pairs(x, 0))


@pytest.mark.parametrize("target", ["llvm", "llvm -mcpu=haswell"], ids=["host", "avx2"])
def test_to_bf16_rounds_as_bf16_bits_with_and_without_the_instruction(target):
    """`te.to_bf16` (LLVM's fptrunc to bfloat: `vcvtneps2bf16` where the
    target has it, LLVM's expansion elsewhere) gives `bf16_bits`'s high half:
    ties to even, infinities kept, NaNs NaNs, overflow to infinity; a
    subnormal either rounded or, as the instruction reads it, zero."""
    rng = np.random.default_rng(2)
    special = [np.inf, -np.inf, np.nan, -0.0, 0.0, 3.4e38, -3.4e38]
    ties = ((0x3F80 + np.arange(8, dtype=np.uint32)) << 16 | 0x8000).view(np.float32)
    subnormal = np.array([1e-40, -1e-39, 3e-39], np.float32)
    x = np.concatenate(
        [special, ties, subnormal, rng.standard_normal(45) * 100]
    ).astype(np.float32)
    a = te.placeholder(x.shape, name="a")
    bits = te.compute(x.shape, lambda i: te.to_bf16(a[i]), name="bits")
    s = te.create_schedule(bits.op)
    s[bits].vectorize(s[bits].op.axis[0])
    got = np.zeros(x.size, np.uint16)
    ember.build(s, [a, bits], target=target)(x, got)
    want = bf16_halves(x)
    as_float = (got.astype(np.uint32) << 16).view(np.float32)
    normal = ~np.isin(x, subnormal)
    nan = np.isnan(x)
    assert np.array_equal(got[normal & ~nan], want[normal & ~nan])
    assert np.isnan(as_float[nan]).all()
    tiny = ~normal
    assert np.all((got[tiny] == want[tiny]) | (as_float[tiny] == 0))


@pytest.mark.parametrize("target", ["llvm", "llvm -mcpu=haswell"], ids=["host", "avx2"])
def test_dot_bf16_is_the_instructions_sum_with_and_without_it(target):
    """te.dot_bf16 summed: on vdpbf16ps where the target has it, on fused
    multiply-adds of the widened halves elsewhere; the same float32 sums
    (the products are exact, the odd pair added first in both)."""
    rng = np.random.default_rng(1)
    m, k2, n = 5, 37, 48
    a = te.placeholder((m, k2), "int32", name="a")
    b = te.placeholder((n, k2), "int32", name="b")
    r = te.reduce_axis((0, k2), name="r")
    c = te.compute(
        (m, n), lambda i, j: te.sum(te.dot_bf16(a[i, r], b[j, r]), axis=r), name="c"
    )
    s = te.create_schedule(c.op)
    s[c].vectorize(s[c].op.axis[1])
    x = pairs(rng.standard_normal((m, 2 * k2)).astype(np.float32), 1)
    w = pairs(rng.standard_normal((n, 2 * k2)).astype(np.float32), 1)
    got = np.zeros((m, n), np.float32)
    ember.build(s, [a, b, c], target=target)(x, w, got)
    xf, wf = widened(x, 1).astype(np.float64), widened(w, 1).astype(np.float64)
    want = xf @ wf.T
    bound = np.abs(xf) @ np.abs(wf).T * 2.0**-22
    assert np.all(np.abs(got - want) <= bound)


@settings(max_examples=6, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    c=st.integers(1, 24),
    o=st.integers(1, 40),
    hw=st.tuples(st.integers(3, 11), st.integers(3, 11)),
    k=st.sampled_from([1, 3, 5]),
    stride=st.sampled_from([1, 2]),
    pad=st.integers(0, 2),
    dilation=st.sampled_from([1, 2]),
    bias=st.booleans(),
    seed=st.integers(0, 2**16),
)
def test_direct_convolutions_sum_the_rounded_operands(
    c, o, hw, k, stride, pad, dilation, bias, seed
):
    """The NCHWc kernel on pairs computes the convolution of the operands
    rounded to bfloat16, up to float32 summation."""
    if (hw[0] + 2 * pad - dilation * (k - 1) - 1) < 0 or (
        hw[1] + 2 * pad - dilation * (k - 1) - 1
    ) < 0:
        return
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((1, c, *hw)).astype(np.float32)
    w = rng.standard_normal((o, c, k, k)).astype(np.float32)
    b = rng.standard_normal(o).astype(np.float32) if bias else None
    cfg = {"strides": stride, "padding": pad, "dilation": dilation}
    kern = conv2d_bf16(
        te.placeholder(x.shape, name="x"),
        w.shape,
        bias=bias,
        epilogue=lambda v, _: te.max(v, 0.0),
        algorithm="direct",
        **cfg,
    )
    args = [x, kern.transform("conv2d.weight", w), *([b] if bias else [])]
    y = np.zeros(kern.output.shape, np.float32)
    ember.build(kern.schedule(), kern.args)(*args, y)
    xr, wr = rounded(x, 1), rounded(w, 1)
    want = np.maximum(conv_reference(xr, wr, b, **cfg), 0)
    bound = conv_reference(np.abs(xr), np.abs(wr), None, **cfg) * 2.0**-20 + 1e-6
    assert np.all(np.abs(y - want) <= bound)


@pytest.mark.parametrize(
    ("c", "hw", "k", "stride", "padding", "bits"),
    [
        (3, (30, 28), 7, 2, 3, False),  # a stem: 11 words a kernel row, not 14
        (1, (9, 8), 3, 2, 0, False),
        (5, (11, 13), 5, 2, (0, 1, 2, 0), False),  # asymmetric border
        (3, (10, 10), 3, 4, 1, False),
        (3, (12, 9), 3, 2, 1, True),  # bfloat16 bits in blocks of 3
    ],
)
def test_odd_channels_pair_columns_and_channels_of_a_kernel_row(
    c, hw, k, stride, padding, bits
):
    """With C odd and stride x C even, the kernel pairs each kernel row's
    (column, channel) elements, not channels (whose pairs would multiply a
    zero channel a pixel), and still sums the rounded operands."""
    rng = np.random.default_rng(c + k)
    x = rng.standard_normal((1, c, *hw)).astype(np.float32)
    w = rng.standard_normal((20, c, k, k)).astype(np.float32)
    b = rng.standard_normal(20).astype(np.float32)
    data = x
    if bits:
        data = bf16_halves(x.transpose(0, 2, 3, 1)[:, None]).astype(np.uint16)
        data = np.ascontiguousarray(data)
    kern = conv2d_bf16(
        te.placeholder(data.shape, data.dtype.name, name="x"),
        w.shape,
        strides=stride,
        padding=padding,
        bias=True,
        data_block=c if bits else None,
    )
    assert kern.attrs["kernel"] == "columns_bf16"
    assert kern.attrs["taps"] == -(-k * c // 2)
    y = np.zeros(kern.output.shape, np.float32)
    ember.build(kern.schedule(), kern.args)(
        data, kern.transform("conv2d.weight", w), b, y
    )
    if isinstance(padding, tuple):
        top, left, bottom, right = padding
        x = np.pad(x, ((0, 0), (0, 0), (top, bottom), (left, right)))
        padding = 0
    xr, wr = rounded(x, 1), rounded(w, 1)
    want = conv_reference(xr, wr, b, stride, padding, 1)
    bound = conv_reference(np.abs(xr), np.abs(wr), None, stride, padding, 1) * 2.0**-20
    assert np.all(np.abs(y - want) <= bound + 1e-6)


@pytest.mark.parametrize("algorithm", ["auto", "winograd-2"])
def test_winograd_in_bfloat16_stays_within_its_rounding(algorithm):
    """3x3 stride-1 layers take Winograd F(2x2, 3x3) on pairs: the
    transformed operands are rounded, so the error is a few bfloat16 steps
    of the products' sizes, not the direct kernel's exact sums; blocked data
    in, blocked out."""
    rng = np.random.default_rng(3)
    x = np.maximum(rng.standard_normal((1, 4, 12, 12, 16)), 0).astype(np.float32)
    w = (rng.standard_normal((32, 64, 3, 3)) * 0.1).astype(np.float32)
    kern = conv2d_bf16(
        te.placeholder(x.shape, name="x"),
        w.shape,
        padding=1,
        data_block=16,
        out_block=16,
        algorithm=algorithm,
    )
    assert kern.attrs["kernel"] == "winograd_bf16" and kern.attrs["m"] == 2
    y = np.zeros(kern.output.shape, np.float32)
    ember.build(kern.schedule(), kern.args)(x, kern.transform("conv2d.weight", w), y)
    nchw = x.transpose(0, 1, 4, 2, 3).reshape(1, 64, 12, 12)
    want = conv_reference(nchw.astype(np.float64), w.astype(np.float64), None, 1, 1, 1)
    scale = conv_reference(np.abs(nchw), np.abs(w), None, 1, 1, 1)
    got = y.transpose(0, 1, 4, 2, 3).reshape(want.shape)
    assert np.abs(got - want).max() <= 8 * EPS * scale.max()


@pytest.mark.parametrize(
    ("shape", "l2", "l3", "kernel", "m"),
    [
        ((1, 32, 16, 16), 1 << 20, 1 << 25, "winograd_bf16", 2),  # within L2: F(2x2)
        ((1, 32, 16, 16), 1 << 16, 1 << 25, "winograd", 4),  # beyond: float32 F(4x4)
        ((1, 32, 16, 16), 1 << 12, 100_000, "nchwc_bf16", None),  # direct
        # weights beyond L2 (295 KB), transformed tiles within: still F(2x2)
        ((1, 128, 4, 4), 1 << 16, 1 << 25, "winograd_bf16", 2),
    ],
)
def test_auto_takes_the_winograd_kernel_the_caches_favour(shape, l2, l3, kernel, m):
    """Where bfloat16 F(2x2)'s transformed input or products leave the cores'
    L2s, "auto" takes float32 F(4x4) where float32 would, else the direct
    kernel on pairs; weights beyond L2 do not count (the direct kernel reads
    them from memory too); the results stay those of a convolution."""
    target = Target(f"llvm -l2-bytes={l2} -l3-bytes={l3} -num-cores=1")
    rng = np.random.default_rng(5)
    x = rng.standard_normal(shape).astype(np.float32)
    w = (rng.standard_normal((shape[1], shape[1], 3, 3)) * 0.1).astype(np.float32)
    kern = conv2d_bf16(
        te.placeholder(x.shape, name="x"), w.shape, padding=1, target=target
    )
    assert kern.attrs["kernel"] == kernel and kern.attrs.get("m") == m
    y = np.zeros(kern.output.shape, np.float32)
    ember.build(kern.schedule(), kern.args)(x, kern.transform("conv2d.weight", w), y)
    want = conv_reference(x.astype(np.float64), w.astype(np.float64), None, 1, 1, 1)
    scale = conv_reference(np.abs(x), np.abs(w), None, 1, 1, 1)
    assert np.abs(y - want).max() <= 8 * EPS * scale.max()


@pytest.mark.parametrize("padding", [0, 1])
def test_blocked_bits_are_read_where_they_lie_where_there_is_no_border(padding):
    """A convolution of blocked bfloat16 bits without a border reads each
    word where its halves lie (no pack stage); with one it packs; both sum
    the bits' values."""
    from ember.te.lowering import lower

    rng = np.random.default_rng(6)
    floats = rng.standard_normal((1, 32, 5, 5)).astype(np.float32)
    blocked = np.ascontiguousarray(
        floats.reshape(1, 2, 16, 5, 5).transpose(0, 1, 3, 4, 2)
    )
    bits = bf16_halves(blocked).astype(np.uint16)
    w = (rng.standard_normal((16, 32, 1, 1)) * 0.1).astype(np.float32)
    kern = conv2d_bf16(
        te.placeholder(bits.shape, "uint16", name="x"),
        w.shape,
        padding=padding,
        data_block=16,
        target=Target("llvm -mcpu=znver4"),
    )
    text = str(lower(kern.schedule(), kern.args))
    assert ('te.compute_inline "conv2d.data_pack"' in text) != bool(padding)
    y = np.zeros(kern.output.shape, np.float32)
    ember.build(kern.schedule(), kern.args)(bits, kern.transform("conv2d.weight", w), y)
    x = (bits.astype(np.uint32) << 16).view(np.float32).transpose(0, 1, 4, 2, 3)
    x = x.reshape(floats.shape).astype(np.float64)
    want = conv_reference(
        x, widened(pairs(w, 1), 1).astype(np.float64), None, 1, padding, 1
    )
    np.testing.assert_allclose(y, want, rtol=1e-5, atol=1e-5)


def test_winograd_4_is_refused_in_bfloat16():
    x = te.placeholder((1, 16, 8, 8), name="x")
    with pytest.raises(EmberValueError, match="winograd-4 amplifies bfloat16"):
        conv2d_bf16(x, (16, 16, 3, 3), padding=1, algorithm="winograd-4")


@settings(max_examples=5, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    m=st.integers(1, 20),
    k=st.integers(1, 70),
    n=st.integers(1, 50),
    bias=st.booleans(),
    seed=st.integers(0, 2**16),
)
def test_dense_and_matmul_sum_the_rounded_operands(m, k, n, bias, seed):
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((m, k)).astype(np.float32)
    w = rng.standard_normal((n, k)).astype(np.float32)
    b = rng.standard_normal(n).astype(np.float32)
    xr, wr = rounded(x), rounded(w)
    want = xr @ wr.T + (b if bias else 0)
    bound = np.abs(xr) @ np.abs(wr).T * 2.0**-20 + 1e-6

    kern = dense_bf16(te.placeholder((m, k), name="x"), (n, k), bias=bias)
    y = np.zeros((m, n), np.float32)
    args = [x, kern.transform("dense.weight", w), *([b] if bias else [])]
    ember.build(kern.schedule(), kern.args)(*args, y)
    assert np.all(np.abs(y - want) <= bound)

    batched = x.reshape(1, m, k)
    kern = matmul_weight(te.placeholder(batched.shape, name="a"), (k, n), bf16=True)
    y = np.zeros((1, m, n), np.float32)
    mod = ember.build(kern.schedule(), kern.args)
    mod(batched, kern.transform("matmul.weight", w.T), y)
    assert np.all(np.abs(y[0] - (want - (b if bias else 0))) <= bound)


@needs_bf16
def test_rows_known_at_run_time_take_the_gemm_and_its_gemv_variant():
    """A dense layer over symbolic rows: one library, the GEMM for many rows
    and its GEMV variant for one, both on pairs."""
    text = """func.func @main(%x: tensor<?x40xf32, ["m"]>) -> tensor<?x24xf32, ["m"]> {
  %w = graph.param "w" : tensor<24x40xf32>
  %y = graph.dense %x, %w : (tensor<?x40xf32, ["m"]>, tensor<24x40xf32>) -> tensor<?x24xf32, ["m"]>
  func.return %y : tensor<?x24xf32, ["m"]>
}"""
    rng = np.random.default_rng(5)
    w = rng.standard_normal((24, 40)).astype(np.float32)
    lib = ember.compile_model(text, {"w": w}, precision="bf16")
    gm = GraphModule(lib["default"](cpu()))
    for m in (1, 7):
        x = rng.standard_normal((m, 40)).astype(np.float32)
        (y,) = gm(input0=x)
        np.testing.assert_allclose(y, rounded(x) @ rounded(w).T, rtol=1e-5, atol=1e-5)


def small_cnn() -> onnx.ModelProto:
    """A 3x3 stem, a 3x3 layer Winograd takes, a strided 3x3 with a 1x1
    strided shortcut added, global pooling and a classifier: every bfloat16
    kernel in five kernels."""
    from onnx import helper

    rng = np.random.default_rng(7)

    def w(*shape):
        fan_in = int(np.prod(shape[1:])) or 1
        return (rng.standard_normal(shape) * np.sqrt(2 / fan_in)).astype(np.float32)

    weights = {
        "w1": w(16, 3, 3, 3), "w2": w(32, 16, 3, 3), "b2": w(32)[:, None][:, 0],
        "w3": w(32, 32, 3, 3), "ws": w(32, 32, 1, 1), "fc": w(10, 32),
    }  # fmt: skip
    nodes = [
        helper.make_node("Conv", ["x", "w1"], ["c1"], pads=[1] * 4),
        helper.make_node("Relu", ["c1"], ["r1"]),
        helper.make_node("Conv", ["r1", "w2", "b2"], ["c2"], pads=[1] * 4),
        helper.make_node("Relu", ["c2"], ["r2"]),
        helper.make_node("Conv", ["r2", "w3"], ["c3"], pads=[1] * 4, strides=[2, 2]),
        helper.make_node("Conv", ["r2", "ws"], ["cs"], strides=[2, 2]),
        helper.make_node("Add", ["c3", "cs"], ["a"]),
        helper.make_node("GlobalAveragePool", ["a"], ["g"]),
        helper.make_node("Flatten", ["g"], ["f"]),
        helper.make_node("Gemm", ["f", "fc"], ["y"], transB=1),
    ]
    return _model(nodes, weights, (1, 3, 32, 32), (1, 10))


def _model(nodes, weights: dict, x_shape, y_shape) -> onnx.ModelProto:
    """An opset-17 model of `nodes` from input "x" to output "y", the
    `weights` its initializers."""
    from onnx import TensorProto, helper, numpy_helper

    graph = helper.make_graph(
        nodes,
        "model",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, x_shape)],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, y_shape)],
        [numpy_helper.from_array(v, k) for k, v in weights.items()],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    return model


@needs_bf16
def test_a_cnn_in_bfloat16_agrees_with_onnxruntime():
    """Against onnxruntime's float32 within bfloat16's error, the same top-1;
    every convolution (Winograd, strided, 1x1) and the classifier take a
    bfloat16 kernel."""
    import onnxruntime
    from xdsl.dialects import func

    from ember.compiler.model import lower_to_te

    proto = small_cnn()
    module, _ = lower_to_te(proto, precision="bf16")
    kernels = [f for f in module.ops if isinstance(f, func.FuncOp)]
    products = [
        f for f in kernels if "conv2d" in f.sym_name.data or "dense" in f.sym_name.data
    ]
    assert len(products) == 5
    assert all("dot.bf16" in str(f) for f in products)
    assert sum("data_transform" in str(f) for f in products) == 1  # Winograd
    lib = ember.compile_model(proto, precision="bf16")
    session = onnxruntime.InferenceSession(proto.SerializeToString())
    gm = GraphModule(lib["default"](cpu()))
    rng = np.random.default_rng(8)
    for _ in range(4):
        x = rng.standard_normal((1, 3, 32, 32)).astype(np.float32)
        want = session.run(None, {"x": x})[0]
        (got,) = gm(x=x)
        assert np.abs(got - want).max() <= 0.03 * np.abs(want).max()
        assert got.argmax() == want.argmax()


def _stored_bf16(proto: onnx.ModelProto, **config) -> list[str]:
    """The kernels whose results a bfloat16 compilation of `proto` stores as
    bfloat16 bits (`ui16` call results)."""
    from ember.compiler.model import lower_to_te
    from ember.dialects import graph
    from ember.passes.pass_context import PassContext

    with PassContext(config=config):
        module, _ = lower_to_te(proto, precision="bf16")
    return [
        op.callee.string_value()
        for op in module.walk()
        if isinstance(op, graph.CallKernelOp) and "xui16>" in str(op.result.type)
    ]


def _convolutions_only() -> onnx.ModelProto:
    """1x1 -> strided 3x3 -> 1x1 convolutions, each read only by the next."""
    from onnx import helper

    rng = np.random.default_rng(11)
    weights = {
        "w1": rng.standard_normal((32, 16, 1, 1)).astype(np.float32) / 4,
        "w2": rng.standard_normal((32, 32, 3, 3)).astype(np.float32) / 16,
        "w3": rng.standard_normal((16, 32, 1, 1)).astype(np.float32) / 6,
    }
    nodes = [
        helper.make_node("Conv", ["x", "w1"], ["c1"]),
        helper.make_node("Relu", ["c1"], ["r1"]),
        helper.make_node("Conv", ["r1", "w2"], ["c2"], pads=[1] * 4, strides=[2, 2]),
        helper.make_node("Relu", ["c2"], ["r2"]),
        helper.make_node("Conv", ["r2", "w3"], ["y"]),
    ]
    return _model(nodes, weights, (1, 16, 14, 14), (1, 16, 7, 7))


@needs_bf16
def test_activations_only_bfloat16_kernels_read_round_where_they_are_written():
    """Between convolutions that only bfloat16 kernels read, the activations
    are stored as bfloat16 bits: the rounding moves from the reader's pack to
    the writer's epilogue, so the result is bit for bit that of float32
    activations (`bf16.activations` off)."""
    proto = _convolutions_only()
    assert len(_stored_bf16(proto)) == 2
    assert _stored_bf16(proto, **{"bf16.activations": False}) == []
    from ember.passes.pass_context import PassContext

    x = np.random.default_rng(12).standard_normal((1, 16, 14, 14)).astype(np.float32)
    results = []
    for stored in (True, False):
        with PassContext(config={"bf16.activations": stored}):
            lib = ember.compile_model(proto, precision="bf16")
        (y,) = GraphModule(lib["default"](cpu()))(x=x)
        results.append(y)
    assert np.array_equal(results[0], results[1])


@needs_bf16
def test_a_mobilenet_with_bfloat16_activations_agrees_with_onnxruntime():
    """MobileNetV2 (width 0.35, 64x64) in bfloat16: the expansions' and the
    depthwise convolutions' results are stored as bfloat16 (those a residual
    add also reads stay float32); against onnxruntime's float32 within a few
    percent of the range, the same top-1."""

    proto = onnx_models.mobilenet_v2(size=64, width=0.35, num_classes=100)
    stored = _stored_bf16(proto)
    assert len(stored) >= 30  # of 52 convolutions
    _agrees_with_onnxruntime(proto, seeds=3, scale=np.ptp)


@pytest.mark.slow  # 20 s: 21 kernels compiled
@needs_bf16
def test_a_resnet_in_bfloat16_agrees_with_onnxruntime():
    """A ResNet-18 at 32x32 (the stem, Winograd and strided layers, 1x1
    shortcuts, the classifier) against onnxruntime's float32: within a few
    percent, the same top-1; every convolution and the classifier take a
    bfloat16 kernel."""
    from xdsl.dialects import func

    from ember.compiler.model import lower_to_te

    proto = onnx_models.resnet18(size=32, num_classes=100)
    module, _ = lower_to_te(proto, precision="bf16")
    kernels = [f for f in module.ops if isinstance(f, func.FuncOp)]
    products = [
        f for f in kernels if "conv2d" in f.sym_name.data or "dense" in f.sym_name.data
    ]
    assert len(products) >= 10
    assert all("dot.bf16" in str(f) for f in products)
    _agrees_with_onnxruntime(proto, seeds=4, scale=lambda y: np.abs(y).max())


def _agrees_with_onnxruntime(proto: onnx.ModelProto, seeds: int, scale) -> None:
    """`proto` in bfloat16 against onnxruntime's float32 on random inputs:
    within 3% of `scale(output)`, the same top-1."""
    import onnxruntime

    lib = ember.compile_model(proto, precision="bf16")
    session = onnxruntime.InferenceSession(proto.SerializeToString())
    gm = GraphModule(lib["default"](cpu()))
    for seed in range(seeds):
        feed = onnx_models.random_input(proto, seed=seed)
        want = session.run(None, feed)[0]
        gm.set_input(**feed)
        gm.run()
        got = gm.get_output(0).numpy()
        assert np.abs(got - want).max() <= 0.03 * scale(want)
        assert got.argmax() == want.argmax()


@needs_bf16
def test_the_encoder_runs_its_dense_layers_in_bfloat16():
    import onnxruntime

    proto = onnx_models.bert_encoder(seq=16, d=64, heads=2, layers=2, vocab=50)
    lib = ember.compile_model(proto, precision="bf16")
    session = onnxruntime.InferenceSession(proto.SerializeToString())
    feed = onnx_models.random_input(proto, seed=0)
    (got,) = GraphModule(lib["default"](cpu()))(**feed)
    want = session.run(None, feed)[0]
    assert np.abs(got - want).max() <= 0.05 * np.abs(want).max()
    assert lib.compile_stats.params_bytes < 0.7 * sum(
        onnx.numpy_helper.to_array(t).nbytes for t in proto.graph.initializer
    )


@pytest.mark.parametrize(
    "precision, target, message",
    [
        ("bf16", "llvm -mcpu=haswell", "needs a CPU with a bfloat16 dot product"),
        ("bf16", "llvm -mtriple=riscv64-linux-gnu", "bfloat16 dot product"),
        ("fp8", "llvm", "expected precision 'float32' or 'bf16' or 'auto', got 'fp8'"),
    ],
)
def test_a_precision_the_target_cannot_compute_is_refused(precision, target, message):
    with pytest.raises(ModelCompileError, match=message):
        ember.compile_model(onnx_models.mlp(), precision=precision, target=target)


def test_ember_compile_refuses_bf16_for_a_target_without_it(tmp_path):
    model = tmp_path / "mlp.onnx"
    onnx.save(onnx_models.mlp(), model)
    done = subprocess.run(
        [
            sys.executable, "-m", "ember.tools.ember_compile", str(model),
            "-o", str(tmp_path / "m.so"), "--target", "llvm -mcpu=haswell",
            "--precision", "bf16",
        ],
        capture_output=True,
        text=True,
    )  # fmt: skip
    assert done.returncode == 1
    assert "needs a CPU with a bfloat16 dot product" in done.stderr
    assert "Traceback" not in done.stderr


def test_the_tuner_measures_kernels_of_bfloat16_activations_on_their_floats():
    """A kernel reading and writing bfloat16 bits (uint16) is measured on the
    bits of floats in [-1, 1], not on tiny integers (subnormals, which the
    products flush), and its outputs compare as floats within two bfloat16
    units: a reordered sum may round to the neighbour, a wrong one may not."""
    from ember.tune.model import extract_tasks
    from ember.tune.runner import check

    proto = _convolutions_only()
    tasks = extract_tasks(proto, target="llvm -mcpu=znver4", precision="bf16")
    bits = [
        t.task for t in tasks if any(dtype == "uint16" for _, dtype, _ in t.task.args)
    ]
    assert bits
    for task in bits:
        for array, (_, dtype, output) in zip(
            task.random_inputs(3), task.args, strict=True
        ):
            if dtype == "uint16" and not output:
                floats = (array.astype(np.uint32) << 16).view(np.float32)
                assert np.abs(floats).max() <= 1 and np.abs(floats).max() > 0.5
    want = bf16_halves(np.array([1.0, -3.0, 100.0], np.float32)).astype(np.uint16)
    assert check([want + np.uint16(1)], [want], 1e-3) == ""
    assert "differ" in check([want + np.uint16(9)], [want], 1e-3)


def test_the_tuner_sees_bfloat16_kernels_whose_knobs_keep_results():
    """`extract_tasks(precision="bf16")` gives the bfloat16 kernels, with the
    float templates' knobs (tile, unroll, sweep; rows and panel order), and
    every config computes what the default does (the tuner's machinery
    itself is tested with the float and int8 kernels)."""
    import itertools

    from ember.tune.model import extract_tasks

    text = """func.func @main(%x: tensor<1x16x10x10xf32>) -> tensor<1x32x10x10xf32> {
  %w = graph.param "w" : tensor<32x16x1x1xf32>
  %y = graph.conv2d %x, %w {padding = [0, 0, 0, 0]} : (tensor<1x16x10x10xf32>, tensor<32x16x1x1xf32>) -> tensor<1x32x10x10xf32>
  func.return %y : tensor<1x32x10x10xf32>
}"""
    rng = np.random.default_rng(6)
    w = rng.standard_normal((32, 16, 1, 1)).astype(np.float32)
    (task,) = extract_tasks(
        text, {"w": w}, target="llvm -mcpu=znver4", precision="bf16"
    )
    assert task.kernel.attrs["kernel"] == "nchwc_bf16"
    assert {"tile", "unroll", "sweep"} <= set(task.kernel.knobs.space)

    k = conv2d_bf16(te.placeholder((1, 16, 10, 10), name="x"), w.shape, name="c")
    assert k.knobs is not None
    x = rng.standard_normal((1, 16, 10, 10)).astype(np.float32)
    packed = k.transform("c.weight", w)
    space = k.knobs.space
    configs = [
        dict(zip(space, values, strict=True))
        for values in itertools.product(*space.values())
    ]
    outputs = []
    for config in [k.knobs.default, *configs[:: max(1, len(configs) // 4)]]:
        y = np.zeros((1, 32, 10, 10), np.float32)
        ember.build(k.schedule(config=config), k.args, name="c")(x, packed, y)
        outputs.append(y)
    for y in outputs[1:]:
        np.testing.assert_allclose(y, outputs[0], rtol=1e-6, atol=1e-6)


@pytest.mark.parametrize(
    ("c", "k", "stride"), [(7, 3, 2), (255, 3, 2), (3, 3, 1), (3, 1, 2)]
)
def test_columns_pair_only_where_that_saves_a_share_of_the_words(c, k, stride):
    """Channel pairs stay where the column pairing saves less than one word
    of a kernel row in `COLUMNS_SAVING` (a wide odd C), where a column step
    is not a whole number of words (stride x C odd), or saves none (1x1)."""
    kern = conv2d_bf16(
        te.placeholder((1, c, 9, 9), name="x"), (16, c, k, k), strides=stride
    )
    assert kern.attrs["kernel"] == "nchwc_bf16"


def test_every_knob_of_the_column_pairing_kernel_keeps_its_results():
    """The (column, channel) kernel of an odd channel count takes the NCHWc
    knobs (tile, unroll, and sweep where its accumulators fit: reduction
    chunks of kernel rows); each config computes what the default does."""
    import itertools

    rng = np.random.default_rng(8)
    x = rng.standard_normal((1, 3, 22, 22)).astype(np.float32)
    w = rng.standard_normal((16, 3, 7, 7)).astype(np.float32)
    k = conv2d_bf16(
        te.placeholder(x.shape, name="x"), w.shape, strides=2, padding=3, name="c"
    )
    assert k.attrs["kernel"] == "columns_bf16" and k.knobs is not None
    space = k.knobs.space
    assert space["sweep"] == (False, True)
    configs = [
        dict(zip(space, values, strict=True))
        for values in itertools.product(*space.values())
    ]
    packed = k.transform("c.weight", w)
    want = None
    for config in [k.knobs.default, *configs]:  # 12
        y = np.zeros(k.output.shape, np.float32)
        ember.build(k.schedule(config=config), k.args, name="c")(x, packed, y)
        if want is None:
            want = y
        np.testing.assert_allclose(y, want, rtol=1e-6, atol=1e-6, err_msg=str(config))
