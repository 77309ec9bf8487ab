"""Models on devices: `compile_model(..., target="cuda")` or `"opencl"`.

The graph and te segments of `ember-model` run as for a CPU, with the target
recorded on the module: `convert-graph-to-te` then gives every fusion group the
host's computation under the generic GPU schedule (`ember.topi.gpu`). The
kernels go through the te-to-loop segment together, one translation unit for
the device (`ember.backends.source.gpu`), and the model function becomes one
more function of the launch plan, `default_run`:

- its arguments are the model's inputs, then its outputs;
- every intermediate value is a device buffer of its own, and so is each
  kernel's own scratch (one per kernel, calls run one after another);
- every param a kernel reads is uploaded once, when the model first runs on a
  device; views (reshape, flatten) are the buffer they view;
- the launches are the kernels' launches, call after call, on one stream.

The CPU path plans one workspace by liveness (`graph-plan-memory`); a device
plan keeps buffers apart because an OpenCL kernel argument is a whole `cl_mem`.

    mod = ember.compile_model("mobilenet_v2.onnx", target="opencl")
    gm = ember.runtime.GraphModule(mod["default"](ember.runtime.opencl(0)))
    (y,) = gm(input=x)
"""

from __future__ import annotations

import time
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp, StringAttr, TensorType
from xdsl.ir import SSAValue

from ember.aot import (
    ENTRY,
    CompileStats,
    ModelCompileError,
    _check_params,
    _load,
    _main,
    _pass_context,
    _run,
)
from ember.dialects import graph

if TYPE_CHECKING:
    from ember.backends.source import DeviceTarget
    from ember.runtime.device_module import DeviceModule

VIEWS = (graph.ReshapeOp, graph.FlattenOp)


def compile_device_model(
    model: Any,
    params: Mapping[str, np.ndarray] | None,
    target: DeviceTarget,
    shape: Mapping[str, Sequence[int]] | None = None,
    opt_level: int | None = None,
    disabled_pass: Sequence[str] = (),
) -> DeviceModule:
    """`compile_model` for a GPU target (see the module docstring).

    Returns:
        A `DeviceModule` whose `default_run(inputs..., outputs...)` runs the
        model, holding the params it uploads; `mod["default"](dev)` is a graph
        executor for `GraphModule`, `mod.params` the params by name.
    """
    from ember.backends.llvm.target import MODULE_ATTR
    from ember.backends.source.gpu import build_gpu
    from ember.passes.bound_params import bind_params
    from ember.passes.convert_graph_to_te import KERNEL_ATTR
    from ember.passes.pipelines import TE_TO_LOOP, model_segments

    start = time.perf_counter()
    module, params = _load(model, params, shape)
    main = _main(module)
    _check_params(main, params)
    module.attributes[MODULE_ATTR] = StringAttr(str(target))
    # no tuning records on GPUs yet: their schedules are not the CPU's
    context = _pass_context(opt_level, disabled_pass)
    segments = dict(model_segments(context, records=""))
    with bind_params(params) as bound:
        _run(module, segments["graph"])
        _run(module, segments["te"])
    main = _main(module)
    kernels = ModuleOp([])
    kernels.attributes[MODULE_ATTR] = StringAttr(str(target))
    for op in module.ops:
        if isinstance(op, func.FuncOp) and KERNEL_ATTR in op.attributes:
            copy = op.clone()
            copy.sym_visibility = None
            kernels.body.block.add_op(copy)
    _run(kernels, TE_TO_LOOP)
    loop_source = str(kernels)
    device = build_gpu(kernels, target, None)
    plan = dict(device.plan)
    model_plan, used = _model_function(main, plan["functions"])
    values = {name: np.asarray(bound.values[name], order="C") for name in used}
    plan["functions"] = {**plan["functions"], ENTRY: model_plan}
    plan["params"] = {
        name: {"shape": list(v.shape), "dtype": str(v.dtype)}
        for name, v in values.items()
    }
    from ember.runtime.device_module import DeviceModule

    mod = DeviceModule(plan, params=values)
    mod.loop_source = loop_source
    mod.compile_stats = CompileStats(  # type: ignore[attr-defined]
        kernels=len(list(kernels.ops)),
        calls=sum(isinstance(op, graph.CallKernelOp) for op in main.walk()),
        compiled=len(list(kernels.ops)),
        params_bytes=sum(v.nbytes for v in values.values()),
        seconds={"total": time.perf_counter() - start},
    )
    mod.params = values  # type: ignore[attr-defined]
    return mod


def _model_function(
    main: func.FuncOp, functions: Mapping[str, dict]
) -> tuple[dict, list[str]]:
    """`main`'s calls as one plan function, and the params it reads in order."""
    from ember.passes.graph_plan_memory import io_names

    block = main.body.block
    ret = block.last_op
    if not isinstance(ret, func.ReturnOp):
        raise ModelCompileError("@main: expected func.return at the end")
    inputs = io_names(main.arg_attrs, len(block.args), "input")
    outputs = io_names(main.res_attrs, len(ret.arguments), "output")
    args = [
        _describe(name, arg.type, False)
        for name, arg in zip(inputs, block.args, strict=True)
    ]
    args += [
        _describe(name, value.type, True)
        for name, value in zip(outputs, ret.arguments, strict=True)
    ]
    refs: dict[SSAValue, dict] = {arg: {"arg": i} for i, arg in enumerate(block.args)}
    for i, value in enumerate(ret.arguments):
        root = _root(value)
        if root in refs or not isinstance(root.owner, graph.CallKernelOp):
            raise ModelCompileError(
                f"result {i} of @main is not computed by a kernel of its own "
                "(convert-graph-to-te copies such results)"
            )
        refs[root] = {"arg": len(block.args) + i}
    buffers: list[dict] = []
    scratch: dict[str, list[int]] = {}
    launches: list[dict] = []
    used: list[str] = []

    def ref(value: SSAValue) -> dict:
        root = _root(value)
        if root not in refs:
            owner = root.owner
            if isinstance(owner, graph.ParamOp):
                name = owner.param_name.data
                used.append(name)
                refs[root] = {"param": name}
            else:
                refs[root] = {"buffer": len(buffers)}
                buffers.append(_describe("", root.type, False))
        return refs[root]

    for op in block.ops:
        if isinstance(op, graph.CallKernelOp):
            symbol = op.callee.string_value()
            kernel = functions.get(symbol)
            if kernel is None:
                raise ModelCompileError(f"@main calls @{symbol}, which is no kernel")
            outer = [ref(v) for v in (*op.args, op.result)]
            if len(outer) != len(kernel["args"]):
                raise ModelCompileError(
                    f"kernel @{symbol}: expected {len(kernel['args'])} arguments, "
                    f"the call gives {len(outer)}"
                )
            if symbol not in scratch:
                scratch[symbol] = list(
                    range(len(buffers), len(buffers) + len(kernel["buffers"]))
                )
                buffers += [dict(b) for b in kernel["buffers"]]
            own = scratch[symbol]
            for launch in kernel["launches"]:
                launches.append(
                    {
                        **launch,
                        "args": [
                            outer[a["arg"]]
                            if "arg" in a
                            else {"buffer": own[a["buffer"]]}
                            for a in launch["args"]
                        ],
                    }
                )
        elif not isinstance(op, (graph.ParamOp, func.ReturnOp, *VIEWS)):
            raise ModelCompileError(
                f"'{op.name}' in @main: expected only graph.call_kernel, "
                "graph.param, views and func.return"
            )
    return {"args": args, "buffers": buffers, "launches": launches}, list(
        dict.fromkeys(used)
    )


def _root(value: SSAValue) -> SSAValue:
    while isinstance(value.owner, VIEWS):
        value = value.owner.operands[0]
    return value


def _describe(name: str, t, output: bool) -> dict:
    from ember.passes.graph_plan_memory import dtype_name

    assert isinstance(t, TensorType)
    return {
        "name": name,
        "shape": list(t.get_shape()),
        "dtype": dtype_name(t),
        "output": output,
    }


__all__ = ["compile_device_model"]
