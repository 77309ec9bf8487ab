"""DeviceModule: GPU kernels run from a launch plan.

The compiler describes what it built for a GPU as a *launch plan*, a
JSON-serializable dict (``PLAN_FORMAT``)::

    {
      "format": "ember.device/1",
      "kind": "cuda" | "opencl" | ...,   # a DLPack device name
      "source": "<the whole CUDA C or OpenCL C translation unit>",
      "binary": "<PTX text>" | None,   # cuda: PTX; opencl: None (built from source)
      "source_format": "cu",           # optional: get_source's name of the source
      "binary_format": "ptx",          # optional: and of the binary
      "functions": {
        "vecadd": {
          "args": [{"name": "A", "shape": [1024], "dtype": "float32",
                    "output": False}, ...],       # inputs first, then outputs
          "buffers": [{"shape": [64, 64], "dtype": "float32"}],  # intermediates
          "launches": [                            # in order, on one stream/queue
            {"kernel": "vecadd_kernel0", "grid": [16, 1, 1], "block": [64, 1, 1],
             "args": [{"arg": 0}, {"arg": 1}, {"arg": 2}, {"buffer": 0}],
             "shared_bytes": 0},
          ],
        },
      },
    }

``grid`` counts blocks (CUDA's gridDim); for OpenCL the global size is
grid × block per dimension and the local size is block. Each kernel parameter
is one device pointer (a ``cl_mem`` for OpenCL). Two optional keys: ``"entry"``
names the function ``mod(...)`` calls (default: the first); ``"params"``
(``{name: {"shape", "dtype"}}``) declares constants a launch may pass as
``{"param": name}``, whose values the module is given (``DeviceModule(plan,
params=...)``) and uploads once per device. ``check_plan`` validates a plan and
names the field that is wrong.

A DeviceModule is built anywhere (the compiler makes one for ``get_source``);
only calling a function touches the driver. The device is chosen at the first
call from the arguments' device (``cuda(0)`` / ``opencl(0)`` when all are numpy
arrays); the program is loaded once per device and kept. A function's
intermediate buffers are allocated at its first call on a device and reused by
every later call: calls on one device are serialized by a lock around their
launches, and the launches of one call run in order on the device's one
in-order stream or queue, so two calls never share a buffer at the same time.
"""

import json
import os
import threading
from collections.abc import Mapping

import numpy as np

from . import cc as _cc
from . import data_object, elf
from .device_api import DeviceAPI, DeviceNDArray, check_device
from .dlpack import DL_CPU, dtype_to_dl
from .errors import EmberError, EmberTypeError, EmberValueError, ExportError
from .graph_executor import RUN_FUNCTION
from .module import MODEL_FACTORY, Module
from .ndarray import DEVICE_KINDS, Device, NDArray, array, device, empty, from_dlpack
from .packed_func import PackedFunc

PLAN_FORMAT = "ember.device/1"
"""The ``"format"`` of the launch plans this runtime runs."""
PLAN_SYMBOL = "__ember_device_plan"
"""A device library's plan: its length (8 bytes, little-endian), then JSON."""
PARAM_SYMBOL = "__ember_param_"
"""A device library's params, ``__ember_param_<i>`` in the plan's order."""
DOCUMENT_SYMBOL = "__ember_library_document"
"""The library's merged metadata document, as JSON data (no code to return it)."""


def _fail(where: str, expected: str, got: object) -> EmberValueError:
    shown = json.dumps(got) if _jsonable(got) else type(got).__name__
    if len(shown) > 60:
        shown = shown[:57] + "..."
    return EmberValueError(f"launch plan: {where}: expected {expected}, got {shown}")


def _jsonable(value) -> bool:
    try:
        json.dumps(value)
    except (TypeError, ValueError):
        return False
    return True


def _is_int(value, least: int) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and value >= least


def _check_tensor(where: str, spec, with_name: bool) -> None:
    if not isinstance(spec, dict):
        raise _fail(where, "an object", spec)
    shape = spec.get("shape")
    if not isinstance(shape, list) or not all(_is_int(d, 0) for d in shape):
        raise _fail(f'{where}["shape"]', "a list of non-negative ints", shape)
    dtype = spec.get("dtype")
    try:
        if not isinstance(dtype, str):
            raise TypeError
        dtype_to_dl(np.dtype(dtype))
    except TypeError:
        raise _fail(
            f'{where}["dtype"]', 'a dtype name such as "float32"', dtype
        ) from None
    if with_name:
        if not isinstance(spec.get("name"), str):
            raise _fail(f'{where}["name"]', "a string", spec.get("name"))
        if not isinstance(spec.get("output"), bool):
            raise _fail(f'{where}["output"]', "true or false", spec.get("output"))


def _check_launch(
    where: str, launch, kind: str, n_args: int, n_buffers: int, params: dict
) -> None:
    if not isinstance(launch, dict):
        raise _fail(where, "an object", launch)
    if not isinstance(launch.get("kernel"), str) or not launch["kernel"]:
        raise _fail(f'{where}["kernel"]', "a kernel name", launch.get("kernel"))
    for key in ("grid", "block"):
        dims = launch.get(key)
        if not (
            isinstance(dims, list)
            and len(dims) == 3
            and all(_is_int(d, 1) for d in dims)
        ):
            raise _fail(f'{where}["{key}"]', "3 positive ints", dims)
    shared = launch.get("shared_bytes")
    if not _is_int(shared, 0):
        raise _fail(f'{where}["shared_bytes"]', "an int >= 0", shared)
    args = launch.get("args")
    if not isinstance(args, list):
        raise _fail(f'{where}["args"]', "a list", args)
    for j, ref in enumerate(args):
        here = f'{where}["args"][{j}]'
        if isinstance(ref, dict) and len(ref) == 1:
            (key, index), limit = next(iter(ref.items())), 0
            limit = {"arg": n_args, "buffer": n_buffers}.get(key)
            if limit is not None and _is_int(index, 0) and index < limit:
                continue
            if limit is not None:
                raise _fail(here, f"an index of {key}s below {limit}", ref)
            if key == "param":
                if index in params:
                    continue
                raise _fail(here, "the name of one of the plan's params", ref)
        raise _fail(here, '{"arg": i}, {"buffer": j} or {"param": name}', ref)


def check_plan(plan) -> dict:
    """Check that ``plan`` is a launch plan this runtime runs (see the module
    docstring for the format).

    Args:
        plan: the plan, as the compiler made it or as JSON parsed it.

    Returns:
        ``plan`` itself.

    Raises:
        EmberValueError: a field is missing or wrong; the message names it, e.g.
            ``launch plan: functions["f"]["launches"][0]["grid"]: expected 3
            positive ints, got [16, 1]``.

    Example:
        >>> check_plan({"format": "ember.device/1"})
        Traceback (most recent call last):
        ...
        ember.runtime.errors.EmberValueError: launch plan: kind: expected a device kind (cuda, opencl, vulkan, metal, rocm, oneapi, webgpu, hexagon), got null
    """
    if not isinstance(plan, dict):
        raise _fail("the plan", "an object", plan)
    if plan.get("format") != PLAN_FORMAT:
        raise _fail("format", f'"{PLAN_FORMAT}"', plan.get("format"))
    kind = plan.get("kind")
    if kind not in DEVICE_KINDS:
        raise _fail("kind", f"a device kind ({', '.join(DEVICE_KINDS)})", kind)
    if not isinstance(plan.get("source"), str):
        raise _fail("source", "the kernels' source text", plan.get("source"))
    if not isinstance(plan.get("binary"), str | None):
        raise _fail("binary", "the device binary's text or null", plan.get("binary"))
    for key in ("source_format", "binary_format"):
        if not isinstance(plan.get(key, ""), str):
            raise _fail(key, "a format name", plan.get(key))
    params = plan.get("params", {})
    if not isinstance(params, dict):
        raise _fail("params", "an object", params)
    for name, param in params.items():
        _check_tensor(f"params[{json.dumps(name)}]", param, with_name=False)
    functions = plan.get("functions")
    if not isinstance(functions, dict) or not functions:
        raise _fail("functions", "an object of at least one function", functions)
    for name, function in functions.items():
        where = f"functions[{json.dumps(name)}]"
        if not isinstance(function, dict):
            raise _fail(where, "an object", function)
        lists = {key: function.get(key) for key in ("args", "buffers", "launches")}
        for key, value in lists.items():
            if not isinstance(value, list):
                raise _fail(f'{where}["{key}"]', "a list", value)
        args, buffers, launches = lists["args"], lists["buffers"], lists["launches"]
        for i, arg in enumerate(args or ()):
            _check_tensor(f'{where}["args"][{i}]', arg, with_name=True)
        for i, buffer in enumerate(buffers or ()):
            _check_tensor(f'{where}["buffers"][{i}]', buffer, with_name=False)
        for i, launch in enumerate(launches or ()):
            n_args, n_buffers = len(args or ()), len(buffers or ())
            _check_launch(
                f'{where}["launches"][{i}]', launch, kind, n_args, n_buffers, params
            )
    entry = plan.get("entry")
    if entry is not None and entry not in functions:
        raise _fail("entry", "the name of one of the functions or null", entry)
    return plan


class _Loaded:
    """A plan's program on one device, its kernels and the functions' buffers."""

    def __init__(self, api: DeviceAPI, dev: Device, plan: dict, params: dict):
        self.api, self.dev = api, dev
        self.lock = threading.Lock()
        self.program = 0
        self.kernels: dict[str, int] = {}
        self.buffers: dict[str, list[NDArray]] = {}
        self.params = {name: array(value, device=dev) for name, value in params.items()}
        self.program = api.load(dev.device_id, plan["source"], plan["binary"])

    def kernel(self, name: str) -> int:
        kernel = self.kernels.get(name)
        if kernel is None:
            kernel = self.kernels[name] = self.api.get_kernel(
                self.dev.device_id, self.program, name
            )
        return kernel

    def __del__(self):
        program = getattr(self, "program", 0)
        if program:
            self.program = 0
            try:
                self.api.unload(
                    self.dev.device_id, program, list(self.kernels.values())
                )
            except Exception:  # noqa: BLE001 - a dying context at exit frees it too
                pass


class DeviceModule(Module):
    """GPU kernels and the functions that launch them, from a launch plan.

    ``mod["f"](*args)`` (or ``mod(*args)`` for the entry function) checks the
    count, shape, dtype and device of each argument, allocates the function's
    buffers on first use, launches its kernels in order and returns without
    waiting for them (copies back to the host and ``dev.sync()`` wait). An
    argument is an NDArray on the module's device, a DLPack tensor on it (a
    torch CUDA tensor, zero-copy), or, for convenience, a host array (numpy or
    a cpu NDArray): copied to the device before the launches, and copied back
    after them if the plan marks it an output (which waits for the kernels).

    A model's module (``compile_model(..., target="opencl")``, a plan with a
    ``default_run`` function) also has ``mod["default"]``, the factory of its
    graph executor: ``GraphModule(mod["default"](opencl(0)))`` runs it as a
    CPU model runs (see ``ember.runtime.device_graph``).

    Attributes:
        plan: the launch plan (checked).
        kind: "cuda" or "opencl".

    Example:
        >>> mod = DeviceModule(plan)  # doctest: +SKIP
        >>> a = array(np.ones(1024, "float32"), device=opencl(0))  # doctest: +SKIP
        >>> mod["vecadd"](a, a, c)  # doctest: +SKIP
        >>> mod.get_source("cl")  # doctest: +SKIP
        >>> model = ember.compile_model("m.onnx", target="opencl")  # doctest: +SKIP
        >>> gm = GraphModule(model["default"](opencl(0)))  # doctest: +SKIP
    """

    type_key = "device"

    def __init__(self, plan: dict, params: Mapping | None = None):
        """Check ``plan`` (see ``check_plan``); touch no driver.

        Args:
            plan: the launch plan.
            params: a host array (numpy, NDArray, DLPack) for each of the
                plan's ``"params"``, uploaded to a device when a function first
                runs there.

        Raises:
            EmberValueError: the plan is malformed (the message names the
                field), or a param is missing or of another shape or dtype.
        """
        check_plan(plan)
        self.params = _check_params(plan.get("params", {}), params or {})
        functions = plan["functions"]
        super().__init__(plan.get("entry") or next(iter(functions)))
        self.plan = plan
        self.kind: str = plan["kind"]
        self.device_type = device(self.kind).device_type
        self._metadata = {
            "entry": self.entry_name,
            "functions": {name: {"args": f["args"]} for name, f in functions.items()},
        }
        self._loaded: dict[Device, _Loaded] = {}
        self._loading = threading.Lock()

    def function_names(self) -> list[str]:
        """The plan's functions, in its order."""
        return list(self.plan["functions"])

    def _find(self, name: str, query_imports: bool) -> PackedFunc | None:
        func = self._functions.get(name)
        if func is None and name in self.plan["functions"]:

            def call(*args):
                return self._run(name, args)

            func = self._functions[name] = PackedFunc(call, name=name, owner=self)
        if (
            func is None
            and name == MODEL_FACTORY
            and RUN_FUNCTION in self.plan["functions"]
        ):
            from .device_graph import factory

            func = self._functions[name] = factory(self)
        if func is None and query_imports:
            for imported in self._imports:
                func = imported._find(name, True)
                if func is not None:
                    break
        return func

    def _function_address(self, name: str) -> int:
        return 0

    def _describe(self) -> str:
        return f"{self.kind} device module"

    def get_source(self, fmt: str = "") -> str:
        """The kernels' source, or the PTX.

        Args:
            fmt: "", "cuda" or "cu" (a cuda module's CUDA C), "", "cl" or
                "opencl" (an opencl module's OpenCL C), "ptx" (a cuda module's
                PTX, if the plan has it), "loop" (the loop IR the kernels were
                printed from, where the compiler kept it).

        Returns:
            The text.

        Raises:
            EmberError: another format; the message lists those the module has.

        Example:
            >>> print(mod.get_source("ptx"))  # doctest: +SKIP
        """
        if fmt == "loop" and self.loop_source is not None:
            return self.loop_source
        source_formats = ["", self.kind, self.plan.get("source_format") or ""]
        binary_format = self.plan.get("binary_format") or "binary"
        formats = list(dict.fromkeys(source_formats))
        if self.loop_source is not None:
            formats.append("loop")
        if self.plan["binary"] is not None:
            formats.append(binary_format)
        if fmt not in formats:
            known = ", ".join(repr(f) for f in formats)
            raise EmberError(
                f"{self._describe()} has no source in format {fmt!r}; it has {known}"
            )
        text = self.plan["binary"] if fmt == binary_format else self.plan["source"]
        return str(text)

    def save(self, path: str | os.PathLike) -> None:
        """Write the launch plan as JSON, which ``load_module`` reads back (a
        plan with ``"params"`` is exported as a library instead: ``export_library``
        writes the plan and the params' values, as data, into a ``.so``,
        ``.tar`` or ``.o`` that ``load_module`` opens without the compiler).

        Args:
            path: the file to write, ending in ``.json``.

        Example:
            >>> mod.save("vecadd.json")  # doctest: +SKIP
            >>> load_module("vecadd.json")["vecadd"](a, b, c)  # doctest: +SKIP
        """
        path = os.fspath(path)
        if self.params:
            raise ExportError(
                f"{self._describe()} holds params, which a JSON plan does not carry: "
                'export a library instead (export_library("m.so"), or ".tar")'
            )
        if not path.endswith(".json"):
            raise EmberValueError(
                f"DeviceModule.save: a launch plan is saved as .json, got {path}"
            )
        with open(path, "w", encoding="utf-8") as f:
            json.dump(self.plan, f, indent=1)

    loop_source: str | None = None
    """The loop IR the kernels were printed from, where the compiler kept it
    (`get_source("loop")`)."""

    def _object_file(self, name: str) -> "_cc.ObjectFile":
        """The launch plan and the params as data of this machine's host
        (``__ember_device_plan``, ``__ember_param_<i>``): ``export_library``
        writes a library that ``load_module`` turns back into this module in
        a process that has no compiler."""
        host = elf.host_template()
        if host is None:
            raise ExportError(
                f"{self._describe()}: this machine's ELF header is unknown"
            )
        plan = json.dumps(self.plan).encode()
        blobs: dict[str, object] = {
            PLAN_SYMBOL: np.frombuffer(len(plan).to_bytes(8, "little") + plan, np.uint8)
        }
        for i, param in enumerate(self.plan.get("params", {})):
            blobs[f"{PARAM_SYMBOL}{i}"] = np.ascontiguousarray(self.params[param])
        machine = elf.host_machine() or "unknown"
        return _cc.ObjectFile(
            name=name,
            code=data_object.data_object(host, blobs),
            triple=f"{machine}-unknown-linux-gnu",
            metadata={"functions": self.metadata["functions"]},
            symbols=tuple(blobs),
        )

    def _metadata_object(self, document: dict) -> bytes:
        host = elf.host_template()
        assert host is not None  # _object_file refused already
        text = json.dumps(document).encode()
        return data_object.data_object(host, {DOCUMENT_SYMBOL: text})

    def _load(self, dev: Device) -> _Loaded:
        loaded = self._loaded.get(dev)
        if loaded is None:
            with self._loading:
                loaded = self._loaded.get(dev)
                if loaded is None:
                    api = check_device(dev, self._describe())
                    loaded = _Loaded(api, dev, self.plan, self.params)
                    self._loaded[dev] = loaded
        return loaded

    def _device_of(self, name: str, args: tuple) -> Device:
        found = None
        for i, arg in enumerate(args):
            if isinstance(arg, DeviceNDArray) or (
                not isinstance(arg, NDArray | np.ndarray) and hasattr(arg, "__dlpack__")
            ):
                dev = arg.device if isinstance(arg, NDArray) else _dlpack_device(arg)
                if dev is None or dev.device_type == DL_CPU:
                    continue
                if dev.device_type != self.device_type:
                    raise EmberValueError(
                        f"{name}: argument {i} is on {dev}; this {self.kind} "
                        f"module runs on {self.kind} devices"
                    )
                if found is not None and dev != found:
                    raise EmberValueError(
                        f"{name}: argument {i} is on {dev}, an earlier one on "
                        f"{found}; copy them to one device"
                    )
                found = dev
        return found or Device(self.device_type, 0)

    def _run(
        self, name: str, args: tuple, params: Mapping[str, NDArray] | None = None
    ) -> None:
        """Launch function ``name`` on ``args``; ``params`` (arrays on the
        arguments' device) stand in for the module's params of their names."""
        function = self.plan["functions"][name]
        specs = function["args"]
        if len(args) != len(specs):
            raise EmberTypeError(
                f"{name}: expected {len(specs)} arguments, got {len(args)}"
            )
        dev = self._device_of(name, args)
        loaded = self._load(dev)
        pointers, copy_back = [], []
        for i, (arg, spec) in enumerate(zip(args, specs, strict=True)):
            if not isinstance(arg, NDArray | np.ndarray):
                arg = _from_dlpack(arg, name, i)
            on_device = _on_device(arg, dev, name, i)
            label = f"{name}: argument {i} ({spec['name']})"
            _check_arg(label, spec, on_device if on_device is not None else arg)
            if on_device is None:  # a host array: through a device copy
                on_device = empty(tuple(spec["shape"]), spec["dtype"], dev)
                on_device.copyfrom(arg)
                if spec["output"]:
                    copy_back.append((arg, on_device))
            pointers.append(on_device)
        device_params = loaded.params if not params else {**loaded.params, **params}
        with loaded.lock:
            buffers = loaded.buffers.get(name)
            if buffers is None:
                buffers = loaded.buffers[name] = [
                    empty(tuple(b["shape"]), b["dtype"], dev)
                    for b in function["buffers"]
                ]
            for launch in function["launches"]:
                handles = [
                    (
                        pointers[ref["arg"]]
                        if "arg" in ref
                        else buffers[ref["buffer"]]
                        if "buffer" in ref
                        else device_params[ref["param"]]
                    ).data_ptr()
                    for ref in launch["args"]
                ]
                loaded.api.launch(
                    dev.device_id,
                    loaded.kernel(launch["kernel"]),
                    tuple(launch["grid"]),
                    tuple(launch["block"]),
                    launch["shared_bytes"],
                    handles,
                )
        for host, on_device in copy_back:
            if isinstance(host, NDArray):
                host.copyfrom(on_device)
            else:
                on_device.copy_into_host(host)


def _dlpack_device(arg) -> Device | None:
    try:
        return Device(*map(int, arg.__dlpack_device__()))
    except Exception:  # noqa: BLE001 - from_dlpack says what is wrong
        return None


def _on_device(arg, dev: Device, name: str, index: int) -> DeviceNDArray | None:
    """``arg`` (an NDArray or a numpy array) as an array on ``dev``; None for a
    host array (to be copied)."""
    if isinstance(arg, NDArray):
        if arg.device == dev:
            return arg  # pyright: ignore[reportReturnType]
        if arg.device.device_type == DL_CPU:
            return None
        raise EmberValueError(f"{name}: argument {index} is on {arg.device}, not {dev}")
    if isinstance(arg, np.ndarray):
        if not arg.flags.c_contiguous:
            raise EmberValueError(
                f"{name}: argument {index}: expected a C-contiguous numpy array, got "
                f"a {arg.shape} view with byte strides {arg.strides}"
            )
        return None
    return None


def _from_dlpack(arg, name: str, index: int) -> NDArray:
    if not hasattr(arg, "__dlpack__"):
        raise EmberTypeError(
            f"{name}: argument {index}: expected an NDArray, a numpy array or a "
            f"DLPack tensor, got {type(arg).__name__}"
        )
    try:
        return from_dlpack(arg)
    except EmberError as e:
        raise type(e)(f"{name}: argument {index}: {e}") from None


def _check_params(declared: dict, given: Mapping) -> dict[str, np.ndarray]:
    """The host value of each declared param, checked."""
    values = {}
    for name, spec in declared.items():
        if name not in given:
            raise EmberValueError(
                f"DeviceModule: the plan's param {name!r} has no value; pass "
                "params={name: array, ...}"
            )
        value = given[name]
        if isinstance(value, NDArray):
            value = value.numpy()
        value = np.ascontiguousarray(value)
        _check_arg(f"DeviceModule: param {name!r}", {**spec, "output": False}, value)
        values[name] = value
    extra = sorted(set(given) - set(declared))
    if extra:
        raise EmberValueError(f"DeviceModule: the plan declares no param {extra[0]!r}")
    return values


def _check_arg(label: str, spec: dict, arg) -> None:
    shape = tuple(arg.shape)
    if shape != tuple(spec["shape"]):
        raise EmberValueError(
            f"{label}: expected shape {tuple(spec['shape'])}, got {shape}"
        )
    dtype = np.dtype(arg.dtype).name
    if dtype != spec["dtype"]:
        raise EmberValueError(f"{label}: expected dtype {spec['dtype']}, got {dtype}")
    if spec["output"] and isinstance(arg, np.ndarray) and not arg.flags.writeable:
        raise EmberValueError(f"{label}: is an output but the array is read-only")


def from_library(library: Module) -> DeviceModule:
    """The DeviceModule a library exported from one holds (its
    ``__ember_device_plan`` and params).

    Raises:
        EmberValueError: the plan or the params in the library are damaged.
    """
    head = library.get_data(PLAN_SYMBOL, 8)
    where = library._describe()
    if head is None:
        raise EmberValueError(f"{where}: no {PLAN_SYMBOL}")
    size = int.from_bytes(bytes(head.numpy()), "little")
    if not 0 < size < 1 << 31:
        raise EmberValueError(f"{where}: {PLAN_SYMBOL} says {size} bytes")
    data = library.get_data(PLAN_SYMBOL, 8 + size)
    assert data is not None
    try:
        plan = json.loads(bytes(data.numpy()[8:]))
        check_plan(plan)
    except (ValueError, EmberValueError) as e:
        raise EmberValueError(f"{where}: its launch plan: {e}") from None
    params = {}
    for i, (name, spec) in enumerate(plan.get("params", {}).items()):
        dtype = np.dtype(spec["dtype"])
        nbytes = int(np.prod(spec["shape"], dtype=np.int64)) * dtype.itemsize
        blob = library.get_data(f"{PARAM_SYMBOL}{i}", nbytes)
        if blob is None:
            raise EmberValueError(f"{where}: no data for param {name!r}")
        params[name] = blob.numpy().view(dtype).reshape(spec["shape"]).copy()
    return DeviceModule(plan, params=params)


def load_plan(path: str | os.PathLike) -> DeviceModule:
    """A DeviceModule from a launch plan saved as JSON (``DeviceModule.save``).

    Raises:
        EmberValueError: the file is not JSON or not a launch plan.
    """
    path = os.fspath(path)
    with open(path, encoding="utf-8") as f:
        try:
            plan = json.load(f)
        except ValueError as e:
            raise EmberValueError(f"{path}: not a JSON launch plan: {e}") from None
    try:
        return DeviceModule(plan)
    except EmberValueError as e:
        raise EmberValueError(f"{path}: {e}") from None
