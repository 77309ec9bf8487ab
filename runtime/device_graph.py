"""The graph executor of a model compiled for a GPU: what ``GraphModule`` runs
when the model is a ``DeviceModule`` (``compile_model(..., target="cuda")`` or
``"opencl"``) rather than a CPU library::

    mod = ember.compile_model("m.onnx", target="opencl")
    gm = GraphModule(mod["default"](opencl(0)))
    gm.set_input("input", x)
    gm.run()
    y = gm.get_output(0).numpy()  # get_output: the executor's DeviceNDArray
    (y,) = gm(input=x)  # numpy outputs, from any number of threads

The plan's function ``default_run`` takes the model's inputs, then its outputs
(its ``args``, in order; ``output`` marks the outputs); the executor owns one
array per input and per output on its device, allocated once and zeroed, and
has the CPU executor's functions, errors and threading contract
(``ember.runtime.graph_executor``): ``set_input``/``run``/``get_output`` are one
thread's at a time, ``invoke`` (``gm(**inputs)``) is any thread's.

**Launches.** ``run()`` queues the model's launches and returns; reading an
output (``numpy()``, ``get_output(i, out)``) or ``dev.sync()`` waits for them,
and a later ``set_input`` is ordered after them. ``invoke`` waits for its
outputs. Each call of ``invoke`` takes device arrays for its inputs and outputs
from a pool (one set per call running at once, kept for the next). The
intermediates are the module's, one set per device shared by all its
executors: ``DeviceModule`` queues one call's launches under a lock on the
device's one in-order queue (stream), so no call's kernels touch them while
another call's kernels are still using them.

**Params.** The module holds the params and uploads them once per device.
``load_params`` replaces params by name for this executor only (each gets a
device array of its own, overwritten in place by later loads), as each CPU
executor has its own params: other executors of the module keep its values.
It takes ``save_param_dict``'s bytes or a dict of arrays, each entry one of the
plan's params with its shape and dtype (a weight the compiler repacked has the
packed name and shape, e.g. ``"W.packed.8ecc9ba9"``, as the error lists); a
packed blob (``pack_params``) is a CPU library's layout and is refused.
"""

from collections.abc import Mapping
from typing import cast

import numpy as np

from . import params as _params
from .device_api import DeviceNDArray, check_device
from .device_module import DeviceModule
from .errors import EmberError, EmberTypeError
from .graph_executor import (
    RUN_FUNCTION,
    BaseGraphExecutor,
    _as_numpy,
    _describe,
    _shape_text,
    check_param_names,
    check_param_type,
)
from .ndarray import Device, NDArray, _on_gpu, empty, from_dlpack
from .packed_func import PackedFunc


def factory(module: DeviceModule) -> PackedFunc:
    """``module["default"]`` of a model's ``DeviceModule``: ``f(dev=None)``
    makes its executor on ``dev`` (default: device 0 of the module's kind)."""

    def create(dev: Device | None = None) -> DeviceGraphExecutor:
        if dev is None:
            dev = Device(module.device_type, 0)
        return DeviceGraphExecutor(module, dev)

    return PackedFunc(create, name="default")


def _readable(value, what: str) -> NDArray | np.ndarray:
    """``value`` as an array whose shape and dtype can be read: an NDArray
    (any device) as it is, a GPU DLPack tensor as a DeviceNDArray, anything
    else as numpy."""
    if isinstance(value, NDArray | np.ndarray):
        return value
    if hasattr(value, "__dlpack__") and _on_gpu(value):
        try:
            return from_dlpack(value)
        except EmberError as e:
            raise type(e)(f"{what}: {e}") from None
    return _as_numpy(value, what)


def _dtype(array: NDArray | np.ndarray) -> str:
    return np.dtype(array.dtype).name


class DeviceGraphExecutor(BaseGraphExecutor):
    """A GPU model's state for running it on one device: its inputs and
    outputs as device arrays, and the graph executor's functions over them
    (see the module docstring). Made by ``mod["default"](dev)``; use it
    through ``GraphModule``.

    Functions: ``set_input(name_or_index, value)`` (numpy, an NDArray on any
    device, a DLPack tensor), ``run()``, ``get_output(i[, out])`` (a
    DeviceNDArray, or a copy into ``out``), ``get_input(name_or_index)``,
    ``invoke(*inputs)`` (numpy outputs; from any thread),
    ``get_num_outputs()``, ``get_num_inputs()``, ``load_params(bytes)``,
    ``get_input_index(name)``, ``get_io_info()``.

    Attributes:
        lib: the DeviceModule.
        device: the device it runs on.
        model: ``{"inputs": [{"name", "shape", "dtype"}], "outputs": [...]}``.

    Example:
        >>> mod = ember.compile_model("m.onnx", target="opencl")  # doctest: +SKIP
        >>> gm = GraphModule(mod["default"](opencl(0)))  # doctest: +SKIP
        >>> gm.set_input("input", x); gm.run()  # doctest: +SKIP
        >>> y = gm.get_output(0).numpy()  # doctest: +SKIP
        >>> (y,) = gm(input=x)  # doctest: +SKIP
    """

    def __init__(self, module: DeviceModule, dev: Device):
        """Allocate the inputs and outputs on ``dev``.

        Raises:
            EmberError: ``dev`` is not a device of the module's kind (a cpu,
                say) or does not exist, or ``default_run`` does not take the
                inputs first, then the outputs, each name once.
        """
        kind = module.kind
        if not isinstance(dev, Device):
            raise EmberTypeError(f"expected a Device such as {kind}(0), got {dev!r}")
        if dev.device_type != module.device_type:
            raise EmberError(
                f"{module._describe()}: a model compiled for {kind} runs on "
                f"{kind} devices, such as {kind}(0); got {dev}"
            )
        check_device(dev, module._describe())
        self.lib = module
        super().__init__(_model(module))
        self.device = dev
        self.device_type = dev.device_type  # time_evaluator's device check
        self.kind = kind
        self._param_types: dict[str, dict] = module.plan.get("params", {})
        self._own_params: dict[str, NDArray] = {}
        self._inputs = self._new_arrays(self.model["inputs"])
        self._outputs = self._new_outputs()
        # Inputs and outputs of invoke() calls that have returned, for the next.
        self._free_io: list[tuple[list[DeviceNDArray], list[DeviceNDArray]]] = []

    def _new_arrays(
        self, tensors: list[dict], zero: bool = True
    ) -> list[DeviceNDArray]:
        arrays = []
        for t in tensors:
            array = cast(
                DeviceNDArray, empty(tuple(t["shape"]), t["dtype"], self.device)
            )
            if zero:
                array.copyfrom(np.zeros(t["shape"], t["dtype"]))
            arrays.append(array)
        return arrays

    def _new_outputs(self) -> list[DeviceNDArray]:
        return self._new_arrays(self.model["outputs"])

    def _describe(self) -> str:
        return f"graph executor of {self.lib._describe()} on {self.device}"

    def _checked_input(self, i: int, value, what: str) -> NDArray | np.ndarray:
        source = _readable(value, what)
        self._check_input_type(i, source.shape, _dtype(source), what)
        return source

    def set_input(self, key, value) -> None:
        """Copy ``value`` into input ``key`` (a name or an index) on the device.

        Args:
            key: the input's name or index.
            value: a numpy array, an NDArray on any device, a DLPack tensor.

        Raises:
            EmberError: no such input (the message lists them), or a shape
                or dtype other than the input's (the message names it).

        Example:
            >>> executor["set_input"]("input", np.zeros((1, 3, 8, 8), "float32"))  # doctest: +SKIP
        """
        i = self._index(key, self._input_names, "input")
        source = self._checked_input(i, value, f"set_input {self._input_names[i]!r}")
        with self._lock:  # a copy after another thread's claim would be theirs
            self._claim_input_locked(i)
            self._inputs[i].copyfrom(source)

    def get_output(self, index, out=None) -> NDArray:
        """Output ``index`` (or its name): the executor's own DeviceNDArray,
        which the next ``run`` overwrites (``.numpy()`` waits and copies it);
        with ``out`` (an NDArray on any device, a writeable numpy array or a
        DLPack tensor of the output's shape and dtype), a copy into ``out``.

        Example:
            >>> y = executor["get_output"](0).numpy()  # doctest: +SKIP
        """
        i = self._index(index, self._output_names, "output")
        self._claim("get_output")
        output: DeviceNDArray = self._outputs[i]
        if out is None:
            return output
        what = f"get_output {self._output_names[i]!r}"
        target = _readable(out, what)
        if target.shape != output.shape or _dtype(target) != output.dtype:
            raise EmberError(
                f"{what}: out must be {_describe(output.shape, output.dtype)}, "
                f"got {_describe(target.shape, _dtype(target))}"
            )
        if isinstance(target, NDArray):
            target.copyfrom(output)
        elif not target.flags.writeable:
            raise EmberError(f"{what}: out is a read-only array")
        elif target.flags.c_contiguous:
            output.copy_into_host(target)
        else:
            np.copyto(target, output.numpy())
        return out

    def _run_model(self, inputs: list, outputs: list) -> None:
        self.lib._run(RUN_FUNCTION, (*inputs, *outputs), self._own_params)

    def invoke(self, *inputs) -> list[np.ndarray]:
        """Run the model on ``inputs`` (one per model input, in order) and
        return its outputs as new numpy arrays, once the kernels are done.
        Safe from any number of threads at once: each call has its own device
        inputs and outputs (from a pool), and the executor's ``set_input``
        state is neither used nor changed. An input already on the executor's
        device is used in place.

        Raises:
            EmberError: a wrong number of inputs, or an input's shape or dtype
                other than the model's.

        Example:
            >>> (y,) = executor["invoke"](x)  # doctest: +SKIP
        """
        self._check_count(inputs)
        names = self._input_names
        sources = [
            self._checked_input(i, value, f"input {names[i]!r}")
            for i, value in enumerate(inputs)
        ]
        results = [np.empty(shape, dtype) for shape, dtype in self._output_types]
        # load_params waits for the calls counted, so the params stay as read
        with self._counting("invoke"):
            try:
                own_inputs, outputs = self._free_io.pop()  # atomic under the GIL
            except IndexError:
                own_inputs = self._new_arrays(self.model["inputs"], zero=False)
                outputs = self._new_arrays(self.model["outputs"], zero=False)
            try:
                args = [
                    source
                    if isinstance(source, DeviceNDArray)
                    and source.device == self.device
                    else own.copyfrom(source)
                    for source, own in zip(sources, own_inputs, strict=True)
                ]
                self._run_model(args, outputs)
                for result, output in zip(results, outputs, strict=True):
                    output.copy_into_host(result)
            finally:
                self._free_io.append((own_inputs, outputs))
        return results

    def load_params(self, data) -> None:
        """Replace params by name for this executor (see the module docstring).

        Args:
            data: ``save_param_dict``'s bytes, or a dict of arrays (numpy,
                NDArrays on any device, DLPack tensors): some of the plan's
                params, each with its shape and dtype.

        Raises:
            EmberError: a name the plan has no param for (the message lists
                some), a shape or dtype unlike the param's, a packed blob, or
                a run in progress in another thread; ``InvalidParamsError``
                (an EmberError) for a damaged param dict.

        Example:
            >>> gm.load_params(save_param_dict({"B": b}))  # doctest: +SKIP
        """
        if isinstance(data, bytes | bytearray | memoryview):
            raw = memoryview(data).cast("B")
            if bytes(raw[: len(_params.MAGIC)]) != _params.MAGIC:
                raise EmberError(
                    f"load_params: expected a param dict (save_param_dict's "
                    f"bytes), got {len(raw)} bytes without its header; a model "
                    "on a device takes its params by name, not as a packed blob"
                )
            data = _params.load_param_dict(raw)
        if not isinstance(data, Mapping):
            raise EmberTypeError(
                f"load_params: expected bytes or a dict of arrays, got "
                f"{type(data).__name__}"
            )
        check_param_names(data, list(self._param_types))
        sources = {}
        for name, value in data.items():
            source = _readable(value, f"load_params {name!r}")
            check_param_type(
                name, self._param_types[name], source.shape, _dtype(source)
            )
            sources[name] = source
        with self._loading():
            for name, source in sources.items():
                own = self._own_params.get(name)
                if own is None:
                    spec = self._param_types[name]
                    own = empty(tuple(spec["shape"]), spec["dtype"], self.device)
                    self._own_params[name] = own
                # in place, after the launches queued so far (one in-order queue)
                own.copyfrom(source)


def _model(module: DeviceModule) -> dict:
    """The inputs and outputs of the plan's ``default_run``, checked."""
    args = module.plan["functions"][RUN_FUNCTION]["args"]
    model: dict[str, list[dict]] = {"inputs": [], "outputs": []}
    for i, arg in enumerate(args):
        if not all(type(dim) is int for dim in arg["shape"]):
            raise EmberError(
                f"{module._describe()}: {RUN_FUNCTION} argument {i} "
                f"({arg['name']!r}) has the symbolic shape {_shape_text(arg['shape'])}; "
                "symbolic shapes run on CPU libraries only for now"
            )
        key = "outputs" if arg["output"] else "inputs"
        if key == "inputs" and model["outputs"]:
            raise EmberError(
                f"{module._describe()}: {RUN_FUNCTION} must take the inputs, then "
                f"the outputs; argument {i} ({arg['name']!r}) is an input after "
                "an output"
            )
        if any(t["name"] == arg["name"] for t in model[key]):
            raise EmberError(
                f"{module._describe()}: {RUN_FUNCTION} has two {key} named "
                f"{arg['name']!r}"
            )
        model[key].append({k: arg[k] for k in ("name", "shape", "dtype")})
    return model


__all__ = ["DeviceGraphExecutor", "factory"]
