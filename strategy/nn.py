"""Strategies of the network ops: conv2d and conv2d_transpose, dense, matmul
and batch_matmul, the poolings, softmax and layer_norm: anchors, whose
elementwise consumers fuse as the epilogue (conv2d + bias + relu is one kernel).

    graph.conv2d {strides, padding, ...}(x, w, b)
        topi.conv2d(x, w's shape, strides=..., bias=True, epilogue=...)

A convolution also offers channel blocks (`_blocks`): the kernels between two
convolutions may then read and write blocked activations (`plan_blocks`).
"""

from __future__ import annotations

import math

from xdsl.dialects.builtin import TensorType

from ember import te
from ember.backends.llvm.target import Target
from ember.dialects import graph
from ember.dialects.graph_shapes import dims_of
from ember.passes.graph_mixed_precision import (
    is_weight,
    marked_precision,
    takes_bf16,
)
from ember.passes.pass_context import PassContext
from ember.strategy.registry import anchor_strategy
from ember.topi import pool, spatial
from ember.topi import reduce as topi_reduce
from ember.topi.attention import attention
from ember.topi.bf16 import BITS, conv2d_bf16, dense_bf16, on_floats
from ember.topi.conv2d import (
    Blocks,
    Conv2dShape,
    _group_span,
    channel_block,
    conv2d,
    conv2d_shape,
)
from ember.topi.conv2d_int8 import conv2d_int8
from ember.topi.conv2d_winograd import winograd_applies
from ember.topi.dense import (
    batch_matmul,
    dense,
    dense_dequant,
    dense_int8,
    matmul,
    matmul_weight,
)
from ember.topi.kernel import Kernel


def _blocks(op, target: Target) -> Blocks:
    """The channel blocks a convolution op reads and writes blocked
    activations in (`AnchorStrategy.blocks`): those of the NCHWc and
    depthwise kernels, where the block is at least half a vector (or 4) so
    the next kernel's vectors stay wide; none for the direct kernel."""
    _, c, _, _ = dims_of(op.operands[0].type)
    o = dims_of(op.weight.type)[0]
    groups = op.config["groups"]
    if not (groups == 1 or groups == c == o or _grouped_kernel(op, target)):
        return Blocks()
    return Blocks(_block(c, target), _block(o, target))


def _grouped_kernel(op, target: Target) -> bool:
    """Whether a float convolution of several groups is `topi.conv2d`'s
    grouped kernel (blocks of output channels over whole groups: RegNetY's),
    which packs blocked data as it packs NCHW and writes any block."""
    if not isinstance(op, graph.Conv2DOp):
        return False
    return bool(_group_span(_shape_of(op), target.vector_lanes("float32")))


def _shape_of(op) -> Conv2dShape:
    """The geometry of a convolution op."""
    cfg = op.config
    return conv2d_shape(
        tuple(dims_of(op.operands[0].type)),
        tuple(dims_of(op.weight.type)),
        cfg["strides"],
        cfg["padding"],
        cfg["dilation"],
        cfg["groups"],
    )


def _block(channels: int, target: Target) -> int | None:
    """The channel block of an activation of `channels`, where it is at
    least half a vector (or 4), so the next kernel's vectors stay wide."""
    block = channel_block(channels, target)
    return block if block >= max(4, target.vector_lanes("float32") // 2) else None


def _pool_blocks(op, target: Target) -> Blocks:
    """A pooling reads and writes the blocks of its channels (each channel
    is pooled alone), so a pooling between two convolutions keeps their
    activations blocked: ResNet's stem then writes vectors of channels
    instead of scattering them to NCHW (Zen 5: 602 -> 499 us in float32),
    and the max pooling reads a vector a tap (bound by memory either way)."""
    block = _block(dims_of(op.operands[0].type)[1], target)
    return Blocks(block, block)


_NCHW = Blocks()


@anchor_strategy(graph.Conv2DOp, data=(0,), weights=(1, 2), blocks=_blocks)
def _conv2d_strategy(
    op, data, epilogue, epilogue_inputs, target, layout: Blocks = _NCHW
) -> Kernel:
    cfg = op.config
    algorithm = PassContext.current().config.get("conv2d.algorithm", "auto")
    groups = cfg["groups"]
    build, more = (conv2d_bf16, {}) if _bf16(op) else (conv2d, {"groups": groups})

    def kernel(x: te.Tensor) -> Kernel:
        return build(
            x,
            dims_of(op.weight.type),
            **_convolution(cfg, epilogue, epilogue_inputs, target, layout),
            bias=len(op.operands) > 2,
            algorithm=algorithm if _computes(algorithm, op) else "direct",
            **more,
        )

    if data[0].dtype == BITS and build is conv2d:  # bfloat16 bits, float32 products
        return on_floats(data[0], kernel)
    return kernel(data[0])


def _convolution(cfg: dict, epilogue, epilogue_inputs, target, layout: Blocks) -> dict:
    """The arguments every convolution kernel builder takes alike: the op's
    geometry, the epilogue, the target and the blocked layouts."""
    return {
        "strides": cfg["strides"],
        "padding": cfg["padding"],
        "dilation": cfg["dilation"],
        "epilogue": epilogue,
        "epilogue_inputs": epilogue_inputs,
        "name": "conv2d",
        "target": target,
        "data_block": layout.data,
        "out_block": layout.out,
    }


def _bf16(op) -> bool:
    """Whether `op` takes the kernel of `topi.bf16`: one that has one
    (`takes_bf16`: a convolution of one group, a dense layer, a matmul by a
    weight), as `graph-mixed-precision` marked it (`precision="auto"`), else
    as the compilation asks (`convert-graph-to-te{precision=bf16}`,
    `compile_model(precision=...)`)."""
    if not takes_bf16(op):
        return False
    marked = marked_precision(op)
    if marked is not None:
        return marked == "bf16"
    return PassContext.current().config.get("precision", "float32") == "bf16"


def _computes(algorithm: str, op) -> bool:
    """Whether `algorithm`, asked of every convolution (`PassContext`'s
    "conv2d.algorithm"), computes `op`'s shape: Winograd only 3x3 stride-1
    convolutions; the others take the direct kernels."""
    if not algorithm.startswith("winograd"):
        return True
    return winograd_applies(_shape_of(op))


@anchor_strategy(graph.Conv2DTransposeOp, weights=(1, 2))
def _conv2d_transpose_strategy(op, data, epilogue, epilogue_inputs, target) -> Kernel:
    if is_weight(op.weight):
        return spatial.conv2d_transpose_as_conv2d(
            data[0],
            dims_of(op.weight.type),
            **op.config,
            bias=len(op.operands) > 2,
            epilogue=epilogue,
            epilogue_inputs_=epilogue_inputs,
            target=target,
        )
    return spatial.conv2d_transpose(
        data[0],
        dims_of(op.weight.type),
        **op.config,
        bias=len(op.operands) > 2,
        epilogue=epilogue,
        epilogue_inputs_=epilogue_inputs,
    )


@anchor_strategy(
    graph.QConv2DOp,
    data=(0,),
    weights=(1, 2, 3),
    dtypes=("uint8", "int8", "int32", "float32"),
    blocks=_blocks,
)
def _qconv2d_strategy(
    op, data, epilogue, epilogue_inputs, target, layout: Blocks = _NCHW
) -> Kernel:
    cfg = op.config
    return conv2d_int8(
        data[0],
        dims_of(op.weight.type),
        x_zero=cfg["x_zero"],
        y_zero=cfg["y_zero"],
        out_dtype="int8" if cfg["signed"] else "uint8",
        clip=tuple(cfg["clip"]),
        groups=cfg["groups"],
        **_convolution(cfg, epilogue, epilogue_inputs, target, layout),
    )


@anchor_strategy(
    graph.QDenseOp,
    data=(0,),
    weights=(1, 2, 3),
    dtypes=("uint8", "int8", "int32", "float32"),
)
def _qdense_strategy(op, data, epilogue, epilogue_inputs, target) -> Kernel:
    cfg = op.config
    return dense_int8(
        data[0],
        dims_of(op.weight.type)[0],
        x_zero=cfg["x_zero"],
        y_zero=cfg["y_zero"],
        out_dtype="int8" if cfg["signed"] else "uint8",
        clip=tuple(cfg["clip"]),
        epilogue=epilogue,
        epilogue_inputs=epilogue_inputs,
        name="dense",
        target=target,
    )


@anchor_strategy(graph.DenseOp, data=(0,), weights=(1, 2))
def _dense_strategy(op, data, epilogue, epilogue_inputs, target) -> Kernel:
    return (dense_bf16 if _bf16(op) else dense)(
        data[0],
        dims_of(op.weight.type),
        bias=len(op.operands) > 2,
        epilogue=epilogue,
        epilogue_inputs=epilogue_inputs,
        name="dense",
        target=target,
    )


@anchor_strategy(
    graph.DenseDequantOp,
    data=(0,),
    weights=(1, 2, 3),
    dtypes=("float32", "int8", "uint8"),
)
def _dense_dequant_strategy(op, data, epilogue, epilogue_inputs, target) -> Kernel:
    return dense_dequant(
        data[0],
        dims_of(op.weight.type)[0],
        **op.config,
        bias=len(op.operands) > 3,
        epilogue=epilogue,
        epilogue_inputs=epilogue_inputs,
        name="dense",
        target=target,
    )


@anchor_strategy(graph.MatmulOp, graph.BatchMatmulOp, data=(0, 1), packable=(1,))
def _matmul_strategy(op, data, epilogue, epilogue_inputs, target) -> Kernel:
    batched = isinstance(op, graph.BatchMatmulOp)
    build = batch_matmul if batched else matmul
    name = op.name.removeprefix("graph.")
    a, b = data
    if b is None:  # a param or literal right operand
        weight_type = op.operands[1].type
        assert isinstance(weight_type, TensorType)
        shape = tuple(dims_of(weight_type))
        if len(shape) == 2 and a.ndim >= 2 and not batched:
            return matmul_weight(
                a,
                shape,
                epilogue=epilogue,
                epilogue_inputs=epilogue_inputs,
                name=name,
                target=target,
                bf16=_bf16(op),
            )
        b = te.placeholder(shape, name="data1")
    return build(
        a,
        b,
        epilogue=epilogue,
        epilogue_inputs=epilogue_inputs,
        name=name,
        target=target,
    )


POOLS = {
    graph.MaxPool2DOp: pool.max_pool2d,
    graph.AvgPool2DOp: pool.avg_pool2d,
    graph.GlobalAvgPool2DOp: pool.global_avg_pool2d,
}


@anchor_strategy(
    graph.MaxPool2DOp, dtypes=("float32", *te.INT_DTYPES), blocks=_pool_blocks
)
@anchor_strategy(graph.AvgPool2DOp, graph.GlobalAvgPool2DOp, blocks=_pool_blocks)
def _pool_strategy(
    op, data, epilogue, epilogue_inputs, target, layout: Blocks = _NCHW
) -> Kernel:
    return POOLS[type(op)](
        data[0],
        **op.config,
        epilogue=epilogue,
        epilogue_tensors=epilogue_inputs,
        name=op.name.removeprefix("graph."),
        data_block=layout.data,
        out_block=layout.out,
    )


@anchor_strategy(graph.SoftmaxOp, graph.LogSoftmaxOp)
def _softmax_strategy(op, data, epilogue, epilogue_inputs, target) -> Kernel:
    return topi_reduce.softmax(
        data[0],
        log=isinstance(op, graph.LogSoftmaxOp),
        **op.config,
        epilogue=epilogue,
        epilogue_tensors=epilogue_inputs,
        name=op.name.removeprefix("graph."),
        target=target,
    )


@anchor_strategy(graph.AttentionOp, data=(0, 1, 2, 3), dtypes=("float32", "bool"))
def _attention_strategy(op, data, epilogue, epilogue_inputs, target) -> Kernel:
    return attention(
        *data,
        scale=op.config["scale"],
        fill=-math.inf if op.config["fill"] is None else op.config["fill"],
        nan_to_zero=bool(op.config["nan_to_zero"]),
        epilogue=epilogue,
        epilogue_tensors=epilogue_inputs,
        target=target,
    )


@anchor_strategy(graph.LayerNormOp, weights=(1, 2))
def _layer_norm_strategy(op, data, epilogue, epilogue_inputs, target) -> Kernel:
    gamma, beta, *_ = [
        te.placeholder(tuple(dims_of(v.type)), name=f"layer_norm.{what}")
        for v, what in zip(op.operands[1:], ("scale", "bias"), strict=False)
    ] + [None, None]
    return topi_reduce.layer_norm(
        data[0],
        gamma,
        beta,
        **op.config,
        epilogue=epilogue,
        epilogue_tensors=epilogue_inputs,
        target=target,
    )
