"""GPU backends and their models: kernels compiled apart, linked into one plan.

A `GPUBackend` (`opencl`, `cuda`, `vulkan`, `metal`) runs the same
`ember-model` as a CPU up to `graph-plan-memory`, whose rule is "buffers"
(`Backend.memory`): a kernel argument is a whole device buffer (an OpenCL
`cl_mem` takes no offset), so each intermediate lives in a slot, a buffer
reused by liveness. Its kernels are compiled apart by `te-compile-kernels`,
each to a *piece* of a launch plan (`gpu.kernel_piece`: its kernels' source,
the helpers and features they use, its launch function), cached like a CPU
kernel's object. Linking joins the pieces into one translation unit
(`gpu.join_pieces`), compiles its device binary where the kind has one (CUDA's
PTX), and turns the plan's calls (`ember.model`) into the launches of
`default_run`:

- its arguments are the model's inputs, then its outputs;
- its buffers are the slots (`{"shape": [bytes], "dtype": "uint8"}`), then
  the buffers a kernel allocates itself, if any;
- a param is `{"param": name}`, uploaded once per device;
- each call's kernel launches, in order, on one stream.

    mod = ember.compile_model("mobilenet_v2.onnx", target="opencl")
    gm = ember.runtime.GraphModule(mod["default"](ember.runtime.opencl(0)))
    mod.export_library("mobilenet_v2.so")   # plan and params as data
"""

from __future__ import annotations

import json
from typing import Any, ClassVar

from ember.backends import Backend
from ember.runtime.abi import MODEL_ENTRY
from ember.runtime.errors import EmberValueError


class GPUBackend(Backend):
    """A kind whose code is GPU kernels and a launch plan (see the module)."""

    is_gpu: ClassVar[bool] = True
    models: ClassVar[bool] = True
    memory: ClassVar[str] = "buffers"

    def build(self, module, target, entry):
        from ember.backends.source.gpu import build_gpu

        return build_gpu(module, target, entry)

    def compile_kernel(self, module, symbol, target) -> bytes:
        from ember.backends.source.gpu import kernel_piece

        piece = kernel_piece(module, target)
        if symbol not in piece["functions"]:
            raise EmberValueError(f"kernel {symbol}: no function of that name")
        piece["loop"] = str(module)
        return json.dumps(piece).encode()

    def kernel_problem(self, code, symbol):
        try:
            piece = json.loads(code)
        except ValueError as e:
            return f"not a launch plan piece ({e})"
        if not isinstance(piece, dict) or symbol not in piece.get("functions", {}):
            return f"a launch plan piece without function {symbol}"
        return None

    def link_model(self, module, target, info, params, kernels, entry_loop):
        from ember.runtime.device_module import DeviceModule

        plan = self.model_plan(info, kernels, target)
        binary = self.binary(plan["source"], target)
        if binary is not None:
            plan["binary"] = binary
            plan["binary_format"] = self.binary_format
        mod = DeviceModule(plan, params=params)
        loops = (json.loads(k.code)["loop"] for k in kernels)
        mod.loop_source = "\n".join([entry_loop or "", *loops])
        return mod

    def model_plan(self, info: dict, kernels: list, target) -> dict:
        """The launch plan of a model (its binary not compiled yet): the
        kernels' pieces joined, `default_run` made of the model's calls
        (`info`, its `ember.model`), the params declared."""
        from ember.backends.source.gpu import join_pieces

        plan = join_pieces([json.loads(k.code) for k in kernels], target)
        plan["functions"][MODEL_ENTRY] = model_function(info, plan["functions"])
        plan["entry"] = MODEL_ENTRY
        plan["params"] = {
            name: {"shape": entry["shape"], "dtype": entry["dtype"]}
            for name, entry in info["params"].items()
        }
        return plan


def model_function(info: dict, functions: dict[str, dict]) -> dict:
    """`default_run` of a launch plan: the calls of the model's plan
    (`info["calls"]`, `graph-plan-memory{memory=buffers}`) as the launches of
    the kernels' functions (see the module docstring).

    Raises:
        EmberValueError: a call names no kernel of the plan, gives it another
            number of arguments, or places a value at an offset.
    """
    inputs, outputs = info["inputs"], info["outputs"]
    args = [{**spec, "output": False} for spec in inputs]
    args += [{**spec, "output": True} for spec in outputs]
    buffers: list[dict[str, Any]] = [
        {"shape": [n], "dtype": "uint8"} for n in info.get("slots", [])
    ]
    own: dict[str, list[int]] = {}  # kernel -> the indices of its own buffers
    launches = []
    for i, call in enumerate(info["calls"]):
        symbol = call["kernel"]
        kernel = functions.get(symbol)
        if kernel is None:
            raise EmberValueError(f"calls[{i}]: no kernel {symbol} in the plan")
        outer = [_ref(place, len(inputs), f"calls[{i}]") for place in call["args"]]
        if len(outer) != len(kernel["args"]):
            raise EmberValueError(
                f"calls[{i}]: kernel {symbol} takes {len(kernel['args'])} "
                f"arguments, the call gives {len(outer)}"
            )
        if symbol not in own:
            own[symbol] = list(
                range(len(buffers), len(buffers) + len(kernel["buffers"]))
            )
            buffers += [dict(b) for b in kernel["buffers"]]
        for launch in kernel["launches"]:
            refs = [
                outer[a["arg"]] if "arg" in a else {"buffer": own[symbol][a["buffer"]]}
                for a in launch["args"]
            ]
            launches.append({**launch, "args": refs})
    return {"args": args, "buffers": buffers, "launches": launches}


def _ref(place: dict, n_inputs: int, where: str) -> dict:
    """A launch argument for a value's place in the model's plan."""
    kind = place["buffer"]
    if kind == "params":  # a buffer of its own on a device, by name
        return {"param": place["name"]}
    if place.get("offset", 0) != 0:
        raise EmberValueError(
            f"{where}: a value at offset {place['offset']} of a {kind} buffer; a "
            "device kernel takes whole buffers (graph-plan-memory{memory=buffers})"
        )
    if kind == "input":
        return {"arg": place["index"]}
    if kind == "output":
        return {"arg": n_inputs + place["index"]}
    if kind == "slot":
        return {"buffer": place["index"]}
    raise EmberValueError(f"{where}: a device plan has no {kind!r} buffer")


__all__ = ["GPUBackend", "model_function"]
