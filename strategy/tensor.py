"""Strategies of the data-movement ops: reshape, transpose, concat, pad
(`dialects/graph_tensor.py`), slice, broadcast_to, tile, range, trilu,
depth_to_space, space_to_depth (`graph_data.py`), gather (`graph_index.py`) and resize
(`graph_spatial.py`) as tensor forms, which join an injective group; scatter_nd
as an anchor (its matching rows are a reduction).

    graph.transpose {perm}(x)    topi.transform.transpose(x, perm)
    graph.gather {axis}(x, i)    topi.index.gather(x, i, axis)
"""

from __future__ import annotations

from ember import te
from ember.dialects import graph
from ember.dialects.graph_shapes import dims_of
from ember.strategy.registry import (
    NUMBERS,
    anchor_strategy,
    injective_strategy,
    tensor_operand,
)
from ember.topi import data as topi_data
from ember.topi import index, spatial, transform
from ember.topi.kernel import Kernel


@injective_strategy(graph.ReshapeOp, graph.FlattenOp)
def _reshape_form(op, args: list, name: str) -> te.Tensor:
    shape = dims_of(op.result.type)
    return transform.reshape(tensor_operand(args[0], op), shape, name)


@injective_strategy(graph.TransposeOp)
def _transpose_form(op, args: list, name: str) -> te.Tensor:
    return transform.transpose(tensor_operand(args[0], op), op.config["perm"], name)


@injective_strategy(graph.ConcatOp)
def _concat_form(op, args: list, name: str) -> te.Tensor:
    tensors = [tensor_operand(a, op) for a in args]
    # the op's own axis, so blocked operands (N, C/b, H, W, b) join along
    # their blocks of channels (a layout-free concat, `strategy.lower`)
    axis = op.config["axis"] % len(dims_of(op.result.type))
    return transform.concat(tensors, axis, name)


@injective_strategy(graph.PadOp)
def _pad_form(op, args: list, name: str) -> te.Tensor:
    cfg = op.config
    x = tensor_operand(args[0], op)
    return transform.pad(x, cfg["pads"], cfg["value"] or 0.0, name)


@injective_strategy(graph.SliceOp)
def _slice_form(op, args: list, name: str) -> te.Tensor:
    cfg = op.config
    shape = dims_of(op.result.type)
    x = tensor_operand(args[0], op)
    return topi_data.slice_(x, cfg["starts"], cfg["steps"], shape, name)


@injective_strategy(graph.BroadcastToOp)
def _broadcast_to_form(op, args: list, name: str) -> te.Tensor:
    shape = tuple(dims_of(op.result.type))
    return topi_data.broadcast_to(tensor_operand(args[0], op), shape, name)


@injective_strategy(graph.TileOp)
def _tile_form(op, args: list, name: str) -> te.Tensor:
    return topi_data.tile(tensor_operand(args[0], op), op.config["repeats"], name)


@injective_strategy(graph.RangeOp)
def _range_form(op, args: list, name: str) -> te.Tensor:
    cfg = op.config
    shape = dims_of(op.result.type)
    return topi_data.arange(cfg["start"], cfg["delta"], shape, name)


@injective_strategy(graph.SizesOp)
def _sizes_form(op, args: list, name: str) -> te.Tensor:
    return topi_data.sizes(op.config["values"], op.config["shape"], name)


@injective_strategy(graph.TriluOp)
def _trilu_form(op, args: list, name: str) -> te.Tensor:
    cfg = op.config
    x = tensor_operand(args[0], op)
    return topi_data.trilu(x, cfg["upper"], cfg["k"], name)


@injective_strategy(graph.DepthToSpaceOp)
def _depth_to_space_form(op, args: list, name: str) -> te.Tensor:
    cfg = op.config
    x = tensor_operand(args[0], op)
    return topi_data.depth_to_space(x, cfg["blocksize"], cfg["crd"], name)


@injective_strategy(graph.SpaceToDepthOp)
def _space_to_depth_form(op, args: list, name: str) -> te.Tensor:
    cfg = op.config
    x = tensor_operand(args[0], op)
    return topi_data.space_to_depth(x, cfg["blocksize"], cfg["crd"], name)


@injective_strategy(graph.GatherOp)
def _gather_form(op, args: list, name: str) -> te.Tensor:
    data, indices = (tensor_operand(a, op) for a in args)
    return index.gather(data, indices, op.config["axis"], name)


@injective_strategy(graph.ResizeOp)
def _resize_form(op, args: list, name: str) -> te.Tensor:
    return spatial.resize(tensor_operand(args[0], op), **op.config, name=name)


@anchor_strategy(graph.ScatterNDOp, data=(0, 1, 2), dtypes=(*NUMBERS, "float64"))
def _scatter_nd_strategy(op, data, epilogue, epilogue_inputs, target) -> Kernel:
    return index.scatter_nd(
        *data,
        **op.config,
        epilogue=epilogue,
        epilogue_tensors=epilogue_inputs,
    )
