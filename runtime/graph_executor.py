"""The graph executor: a model library's state for running it, as TVM's
graph executor module offers it (``GraphModule`` in ``graph_module`` is the
Python wrapper users hold).

A model library (the AOT compiler's output: JIT module, ``.so`` or ``.tar``)
defines one packed function ``default_run(inputs..., outputs..., workspace,
params)`` and describes the model under ``"model"`` in its metadata::

    {"inputs": [{"name", "shape", "dtype"}], "outputs": [...],
     "workspace_bytes": N, "params_bytes": M, "bounds": {symbol: max},
     "params": {"name": {"offset", "shape", "dtype"}}, "params_embedded": bool}

``lib["default"]`` is then a factory: ``lib["default"](dev)`` returns a
``GraphExecutor`` module (type_key "graph_executor") that owns one NDArray per
input and output, the workspace (``workspace_bytes``, 64-byte aligned, for the
intermediates the compiler's static memory plan placed) and the params blob:
the library's ``__ember_params`` viewed in place when the params are embedded,
else zeros that ``load_params`` fills (running before every param is loaded is
an error, not garbage).

**Symbolic shapes** (one library for every batch size and sequence length).
A dim in ``"shape"`` is an int or a ``shape_expr`` expression text over
symbols (``"batch"``, ``"seq + 1"``, ``"batch * 12"``); ``"workspace_bytes"``
may be one too, and ``"bounds": {"seq": 512}`` gives symbols inclusive upper
bounds (a symbol without one is unbounded)::

    {"inputs": [{"name": "ids", "shape": ["batch", "seq"], "dtype": "int64"}],
     "outputs": [{"name": "y", "shape": ["batch", "seq + 1", 768], ...}],
     "workspace_bytes": "3072 * batch * seq", "bounds": {"seq": 512}, ...}

An input's dim that is one symbol alone binds it; every symbol must be bound
so (``check_model`` refuses the metadata otherwise, naming the symbol). Each
call binds the symbols from its inputs' shapes (``ember.runtime.model_dims``)
and refuses one that contradicts another input or its bound, naming both
inputs or the bound; it then allocates the outputs at their derived shapes
and passes a workspace of exactly the derived size (the head of a pooled
buffer that only grows), since ``default_run`` binds the symbols from the
same DLTensors and checks every dim. ``set_input`` of a new shape replaces
the input's array; ``get_output`` after ``run`` has the derived shape (and
raises before the first ``run``, as ``get_input`` does before ``set_input``).
A model whose dims are all ints does none of this work.

**Threads.** ``invoke(*inputs)`` (``GraphModule``'s ``m(**inputs)``) takes the
inputs and returns new outputs, as onnxruntime's ``session.run`` does: each
call takes a workspace from the executor's pool (one per call running at once,
kept for the next) and allocates its outputs, so any number of threads may
call it at once. ``set_input``/``run``/``get_output`` share the executor's one
set of inputs, outputs and workspace, so they are one thread's at a time: a
thread's ``set_input`` makes it the owner (with new output arrays, so outputs
another thread already holds are never overwritten); ``run``, ``get_output``
or ``get_input`` from any other thread, and anything while another thread is
in ``run``, raise ``EmberError``: never another thread's result.
``load_params`` while a run is in progress raises too.

``BaseGraphExecutor`` is what this executor shares with the one for models
compiled for a GPU (``ember.runtime.device_graph``): the inputs and outputs by
name and index, the functions, and the threading contract below.

**Lifetime.** The functions an executor hands out (``executor["run"]``) keep
it alive; it keeps them only weakly, so a dropped executor is freed by
reference counting at once, not later by the cycle collector.
"""

import json
import math
import threading
import weakref
from collections.abc import Iterator, Mapping
from contextlib import contextmanager

import numpy as np

from . import params as _params
from .abi import MODEL_ENTRY
from .abi import PARAMS_SYMBOL as _PARAMS_SYMBOL
from .errors import EmberError, EmberTypeError, EmberValueError, FunctionNotFoundError
from .model_dims import ModelDims
from .module import Module
from .ndarray import Device, NDArray, cpu, empty
from .packed_func import PackedFunc

RUN_FUNCTION = MODEL_ENTRY
"""The packed function a model library runs the whole model with."""
PARAMS_SYMBOL = _PARAMS_SYMBOL
"""The library symbol holding the packed params when they are embedded."""

_ONE_THREAD = (
    "set_input/run/get_output are one thread's at a time: call "
    "GraphModule(...)(**inputs) (the executor's invoke), safe from any number "
    "of threads, or give each thread its own executor"
)


def check_model(model: object) -> None:
    """Raise ValueError unless ``model`` has the shape of the metadata's
    "model" object (see the module docstring): its symbolic dims parse, every
    symbol is bound by an input and ``"bounds"`` are positive ints."""
    if not isinstance(model, dict):
        raise EmberValueError(f'"model" must be an object, got {type(model).__name__}')
    for key in ("inputs", "outputs"):
        tensors = model.get(key)
        if not isinstance(tensors, list):
            raise EmberValueError(f'model: "{key}" must be a list')
        names = set()
        for i, t in enumerate(tensors):
            where = f"model: {key}[{i}]"
            if not isinstance(t, dict) or not isinstance(t.get("name"), str):
                raise EmberValueError(f'{where} must be an object with a "name" string')
            if not isinstance(t.get("shape"), list):
                raise EmberValueError(f'{where}: "shape" must be a list of extents')
            if not isinstance(t.get("dtype"), str) or t["dtype"] not in _params.DTYPES:
                raise EmberValueError(f"{where}: unknown dtype {t.get('dtype')!r}")
            if t["name"] in names:
                raise EmberValueError(f"{where}: name {t['name']!r} appears twice")
            names.add(t["name"])
    workspace, params_bytes = model.get("workspace_bytes"), model.get("params_bytes")
    if not isinstance(workspace, str) and (type(workspace) is not int or workspace < 0):
        raise EmberValueError(
            'model: "workspace_bytes" must be a non-negative integer or an '
            f"expression text, got {workspace!r}"
        )
    if type(params_bytes) is not int or params_bytes < 0:
        raise EmberValueError(
            f'model: "params_bytes" must be a non-negative integer, got {params_bytes!r}'
        )
    if not isinstance(model.get("params_embedded"), bool):
        raise EmberValueError('model: "params_embedded" must be true or false')
    _params.check_layout(model.get("params"), model["params_bytes"])
    ModelDims(model)


def factory(lib: Module) -> PackedFunc:
    """``lib["default"]`` of a model library: ``f(dev)`` makes its executor."""

    def create(dev: Device | None = None) -> GraphExecutor:
        return GraphExecutor(lib, dev if dev is not None else cpu())

    return PackedFunc(create, name="default")


def _shape_text(shape) -> str:
    if any(isinstance(dim, str) for dim in shape):  # symbolic: (batch, seq + 1)
        return f"({', '.join(map(str, shape))})"
    return str(tuple(shape))


def _describe(shape, dtype) -> str:
    return f"{dtype} {_shape_text(shape)}"


def _output_array(shape: tuple[int, ...], dtype: str) -> np.ndarray:
    """A new uninitialized output: a numpy array (making an NDArray costs
    more than a small model's run), 64-byte aligned from 4 KiB on, where
    vector stores across cache lines would cost more than aligning (~2 us)."""
    nbytes = math.prod(shape) * np.dtype(dtype).itemsize
    if nbytes < 4096:
        return np.empty(shape, dtype)
    raw = np.empty(nbytes + 64, np.uint8)
    start = -raw.__array_interface__["data"][0] % 64
    return np.ndarray(shape, dtype, buffer=raw, offset=start)


def _head(workspace: NDArray, size: int) -> NDArray | np.ndarray:
    """The first ``size`` bytes of ``workspace``: itself where that is all of
    it (an NDArray passes faster than a numpy view, ~0.8 us)."""
    return workspace if workspace.shape[0] == size else np.asarray(workspace)[:size]


def _as_numpy(value, what: str) -> np.ndarray:
    if isinstance(value, NDArray):
        return np.asarray(value)
    if isinstance(value, np.ndarray):
        return value
    if hasattr(value, "__dlpack__"):
        try:
            return np.from_dlpack(value)
        except (BufferError, TypeError, RuntimeError) as e:
            raise EmberError(
                f"{what}: cannot read a {type(value).__name__}: {e}"
            ) from None
    if isinstance(value, list | tuple | int | float):
        return np.asarray(value)
    raise EmberTypeError(
        f"{what}: expected a numpy array, NDArray or DLPack tensor, "
        f"got {type(value).__name__}"
    )


def check_param_names(names, known: list[str]) -> None:
    """Refuse a name in ``names`` that is not one of the model's params."""
    unknown = [name for name in names if name not in known]
    if unknown:
        shown = ", ".join(map(repr, known[:6])) + (", ..." if len(known) > 6 else "")
        raise EmberError(
            f"load_params: the model has no param {unknown[0]!r}"
            + (f" (nor {len(unknown) - 1} others)" if len(unknown) > 1 else "")
            + f"; its params are {shown or 'none'}"
        )


def check_param_type(name: str, expected: dict, shape, dtype: str) -> None:
    """Refuse a value of ``shape`` and ``dtype`` for param ``name``, which the
    kernels read as ``expected["shape"]`` and ``expected["dtype"]``."""
    if list(shape) != list(expected["shape"]) or dtype != expected["dtype"]:
        raise EmberError(
            f"load_params: param {name!r} must be "
            f"{_describe(expected['shape'], expected['dtype'])} (as the compiled "
            f"kernels read it), got {_describe(shape, dtype)}"
        )


class BaseGraphExecutor(Module):
    """What every graph executor shares (type_key "graph_executor", so that
    ``GraphModule`` wraps it): the model's inputs and outputs by name and
    index, the functions handed out, and the threading contract of the module
    docstring. ``GraphExecutor`` runs a CPU library, ``DeviceGraphExecutor``
    (``ember.runtime.device_graph``) a GPU launch plan.

    A subclass sets ``self._inputs`` and ``self._outputs`` (one array per
    tensor) and defines ``_new_outputs`` (fresh output arrays, for a thread
    taking the stateful API over) and ``_run_model`` (run on given arrays).
    """

    type_key = "graph_executor"

    _FUNCTIONS = (
        "set_input",
        "run",
        "invoke",
        "get_output",
        "get_input",
        "get_num_outputs",
        "get_num_inputs",
        "load_params",
        "get_input_index",
        "get_io_info",
    )

    def __init__(self, model: dict):
        """``model`` holds ``"inputs"`` and ``"outputs"``: ``[{"name",
        "shape", "dtype"}]``, names unique in each list."""
        super().__init__()
        self.model = model
        self._input_names = [t["name"] for t in model["inputs"]]
        self._output_names = [t["name"] for t in model["outputs"]]
        self._input_types = [(tuple(t["shape"]), t["dtype"]) for t in model["inputs"]]
        self._output_types = [(tuple(t["shape"]), t["dtype"]) for t in model["outputs"]]
        self._inputs: list = []
        self._outputs: list = []
        # A symbolic model's dims (GraphExecutor); None keeps static models'
        # calls free of symbol work.
        self._dims: ModelDims | None = None
        # Guards the fields below (see the module docstring, "Threads").
        self._lock = threading.Lock()
        self._owner: int | None = None  # the thread the stateful API is for
        self._running: int | None = None  # the thread inside run(), if any
        self._calls = 0  # run() and invoke() calls in progress
        # the thread that last set each input: run() takes none of another's
        self._setters: list[int | None] = [None] * len(self._input_names)
        # The functions handed out hold the executor; it holds them weakly, so
        # that a dropped executor is freed at once, not by the cycle collector.
        self._handed_out: weakref.WeakValueDictionary[str, PackedFunc] = (
            weakref.WeakValueDictionary()
        )

    def _new_outputs(self) -> list:
        raise NotImplementedError

    def _run_model(self, inputs: list, outputs: list) -> None:
        raise NotImplementedError

    def _check_params(self, what: str) -> None:
        """Raise if the model cannot run yet (params missing)."""

    def _find(self, name: str, query_imports: bool) -> PackedFunc | None:
        func = self._handed_out.get(name)
        if func is None and name in self._FUNCTIONS:
            func = PackedFunc(getattr(self, name), name=name)
            self._handed_out[name] = func
        return func

    def function_names(self) -> list[str]:
        return list(self._FUNCTIONS)

    def get_input_index(self, name: str) -> int:
        """The position of the input ``name``, or -1 (as TVM)."""
        return self._input_names.index(name) if name in self._input_names else -1

    def _index(self, key, names: list[str], kind: str) -> int:
        if isinstance(key, str):
            if key in names:
                return names.index(key)
            raise EmberError(
                f"model has no {kind} named {key!r}; its {kind}s are "
                f"{', '.join(map(repr, names)) or 'none'}"
            )
        if isinstance(key, bool) or not isinstance(key, int | np.integer):
            raise EmberTypeError(f"{kind} must be a name or an index, got {key!r}")
        if not 0 <= key < len(names):
            raise EmberError(
                f"{kind} index {key} is out of range: the model has "
                f"{len(names)} {kind}(s)"
            )
        return int(key)

    def _check_input_type(self, i: int, shape, dtype: str, what: str) -> None:
        """Refuse a value of ``shape`` and ``dtype`` for input ``i``."""
        expected_shape, expected_dtype = self._input_types[i]
        if tuple(shape) != expected_shape or dtype != expected_dtype:
            # a symbolic shape's dims are checked when its symbols are bound
            if (
                self._dims is None
                or dtype != expected_dtype
                or len(shape) != len(expected_shape)
            ):
                raise EmberError(
                    f"{what}: expected {_describe(expected_shape, expected_dtype)}, "
                    f"got {_describe(shape, dtype)}"
                )

    def _check_count(self, inputs: tuple) -> None:
        names = self._input_names
        if len(inputs) != len(names):
            raise EmberError(
                f"invoke: the model takes {len(names)} input(s) "
                f"({', '.join(map(repr, names))}), got {len(inputs)}"
            )

    def _claim(self, what: str, take: bool = False) -> None:
        """Let the calling thread use the stateful API, or raise: another
        thread is in ``run``, or (unless ``take``, for ``set_input``) another
        thread set the inputs. A thread taking over gets new output arrays,
        so outputs the previous owner holds are never overwritten."""
        with self._lock:
            self._claim_locked(what, take)

    def _claim_input_locked(self, i: int) -> None:
        """Claim the stateful API for ``set_input`` of input ``i``."""
        self._claim_locked(f"set_input {self._input_names[i]!r}", take=True)
        self._setters[i] = threading.get_ident()

    def _claim_locked(self, what: str, take: bool) -> None:
        me = threading.get_ident()
        if self._running is not None and self._running != me:
            raise EmberError(
                f"{what}: another thread is running this graph executor; {_ONE_THREAD}"
            )
        if self._owner is None or self._owner == me:
            self._owner = me
        elif take:
            self._owner = me
            self._outputs = self._new_outputs()
        else:
            raise EmberError(
                f"{what}: another thread has set this graph executor's inputs "
                f"since this thread did; {_ONE_THREAD}"
            )

    def get_input(self, key) -> NDArray:
        """The executor's own NDArray of input ``key`` (a name or an index)."""
        i = self._index(key, self._input_names, "input")
        self._claim("get_input")
        array = self._inputs[i]
        if array is None:
            raise EmberError(
                f"get_input {self._input_names[i]!r}: its shape "
                f"{_shape_text(self._input_types[i][0])} is symbolic and it is "
                "not set yet: set_input it first"
            )
        return array

    def get_num_outputs(self) -> int:
        return len(self._outputs)

    def get_io_info(self) -> str:
        """The model's inputs and outputs as JSON: ``{"inputs": [{"name",
        "shape", "dtype"}], "outputs": [...]}``."""
        return json.dumps({k: self.model[k] for k in ("inputs", "outputs")})

    def get_num_inputs(self) -> int:
        return len(self._inputs)

    def run(self) -> None:
        """Run the model on the current inputs, into the executor's outputs.

        Raises:
            EmberError: another thread owns or is running the executor, or
                params are still missing (a library without embedded params,
                before ``load_params``).
        """
        with self.running("run") as (inputs, outputs):
            self._run_model(inputs, outputs)

    @contextmanager
    def running(self, what: str) -> Iterator[tuple[list, list]]:
        """Hold the executor as ``run`` does (the calling thread's inputs,
        params loaded, no other run) and give its inputs and outputs: for
        running the model another way, kernel by kernel
        (``ember.runtime.graph_steps``)."""
        with self._lock:
            self._claim_locked(what, take=False)
            me = threading.get_ident()
            foreign = [
                name
                for name, setter in zip(self._input_names, self._setters, strict=True)
                if setter not in (None, me)
            ]
            if foreign:
                raise EmberError(
                    f"{what}: input {foreign[0]!r} was last set by another thread, "
                    f"not this one; {_ONE_THREAD}"
                )
            if self._running is not None:  # this thread, from a callback
                raise EmberError(f"{what}: this graph executor is already running")
            self._check_params(what)
            self._running, self._calls = threading.get_ident(), self._calls + 1
            inputs, outputs = list(self._inputs), list(self._outputs)
        try:
            yield inputs, outputs
        finally:
            with self._lock:
                self._running, self._calls = None, self._calls - 1

    @contextmanager
    def _counting(self, what: str) -> Iterator[None]:
        """Count an ``invoke`` as running (``load_params`` waits for none)."""
        with self._lock:
            self._check_params(what)
            self._calls += 1
        try:
            yield
        finally:
            with self._lock:
                self._calls -= 1

    @contextmanager
    def _loading(self) -> Iterator[None]:
        """Hold the executor while params change: a run in progress would
        read half old and half new weights, so it is refused; runs that
        start meanwhile wait."""
        with self._lock:
            if self._calls:
                raise EmberError(
                    "load_params: the model is running in another thread; load "
                    "params before running it, or in an executor of its own"
                )
            yield


class GraphExecutor(BaseGraphExecutor):
    """A model library's state for running it: its inputs, outputs, workspace
    and params, and the functions that use them (TVM's graph executor module).

    Functions: ``set_input(name_or_index, value)``, ``run()``,
    ``get_output(i[, out])``, ``get_input(name_or_index)``,
    ``invoke(*inputs)`` (outputs returned; from any thread),
    ``get_num_outputs()``, ``get_num_inputs()``, ``load_params(bytes)``,
    ``get_input_index(name)``, ``get_io_info()``. Use it through
    ``GraphModule``.

    Attributes:
        lib: the model library.
        model: its metadata's "model" object, dims that are constant texts
            (``"768"``) as ints.
    """

    def __init__(self, lib: Module, dev: Device):
        if not isinstance(dev, Device):
            raise EmberTypeError(f"expected a Device such as cpu(), got {dev!r}")
        if dev.device_type != cpu().device_type:
            raise EmberError(f"compiled models run on the cpu; got {dev}")
        self.lib = lib
        dims = ModelDims(lib.metadata["model"])
        model = dims.normalized(lib.metadata["model"])
        super().__init__(model)
        self.device = dev
        try:
            self._run = lib.get_function(RUN_FUNCTION)
        except FunctionNotFoundError:
            raise EmberError(
                f"{lib._describe()} describes a model but defines no {RUN_FUNCTION}"
            ) from None
        if dims.symbolic:
            self._dims = dims
        self._output_dtypes = [dtype for _, dtype in self._output_types]
        self._inputs = [self._zeros(t) for t in model["inputs"]]
        self._outputs = self._new_outputs()
        # a symbolic model's grows to the size its first run needs
        self._workspace = self._new_workspace(0 if dims.symbolic else None)
        # Workspaces of invoke() calls that have returned, for the next ones.
        self._free_workspaces: list[NDArray] = []
        self._layout: dict[str, dict] = model["params"]
        nbytes = model["params_bytes"]
        self._missing: set[str] = set()
        if model["params_embedded"]:
            params = lib.get_data(PARAMS_SYMBOL, nbytes)
            if params is None:
                raise EmberError(
                    f"{lib._describe()}: the metadata says the params are "
                    f"embedded, but the library has no {PARAMS_SYMBOL}"
                )
            self._params = params
        else:
            self._params = self._allocate((nbytes,), "uint8", "the params")
            np.asarray(self._params)[:] = 0
            self._missing = set(self._layout)

    def _allocate(self, shape, dtype: str, what: str) -> NDArray:
        try:
            return empty(shape, dtype)
        except (MemoryError, ValueError) as e:
            raise EmberError(
                f"{self._describe()}: cannot allocate {what} "
                f"({_describe(shape, dtype)}): {e}"
            ) from None

    def _zeros(self, tensor: dict) -> NDArray | None:
        """A zeroed array for ``tensor``; None where its shape is symbolic
        (sized by ``set_input`` or ``run``)."""
        if any(isinstance(dim, str) for dim in tensor["shape"]):
            return None
        array = self._allocate(tensor["shape"], tensor["dtype"], repr(tensor["name"]))
        np.asarray(array)[...] = 0
        return array

    def _new_outputs(self) -> list[NDArray | None]:
        return [self._zeros(t) for t in self.model["outputs"]]

    def _new_workspace(self, size: int | None = None) -> NDArray:
        """A workspace of ``size`` bytes (default: the static model's)."""
        if size is None:
            size = self.model["workspace_bytes"]
        return self._allocate((size,), "uint8", "the workspace")

    def _describe(self) -> str:
        return f"graph executor of {self.lib._describe()}"

    def set_input(self, key, value) -> None:
        """Copy ``value`` into input ``key`` (a name or an index).

        Raises:
            EmberError: no such input (the message lists them), or a shape
                or dtype other than the input's.
        """
        i = self._index(key, self._input_names, "input")
        what = f"set_input {self._input_names[i]!r}"
        source = self._checked_input(i, value, what)
        resized = None
        if self._dims is not None:
            shapes: list = [None] * len(self._inputs)
            shapes[i] = source.shape
            self._dims.bind(shapes, "set_input: ")
            array = self._inputs[i]
            if array is None or array.shape != source.shape:
                resized = self._allocate(source.shape, source.dtype.name, what)
        with self._lock:  # a copy after another thread's claim would be theirs
            self._claim_input_locked(i)
            if resized is not None:
                self._inputs[i] = resized
            np.copyto(np.asarray(self._inputs[i]), source)

    def _checked_input(self, i: int, value, what: str) -> np.ndarray:
        """``value`` as numpy, refused unless it has input ``i``'s shape and dtype."""
        source = _as_numpy(value, what)
        self._check_input_type(i, source.shape, source.dtype.name, what)
        return source

    def get_output(self, index, out=None) -> NDArray:
        """Output ``index`` (or its name): the executor's own NDArray, which
        the next ``run`` overwrites; with ``out`` (an NDArray or a writeable
        numpy array of the output's shape and dtype), a copy into ``out``."""
        i = self._index(index, self._output_names, "output")
        self._claim("get_output")
        output = self._outputs[i]
        what = f"get_output {self._output_names[i]!r}"
        if output is None:
            shape = self.model["outputs"][i]["shape"]
            raise EmberError(
                f"{what}: its shape {_shape_text(shape)} is symbolic: run the "
                "model first"
            )
        if out is None:
            return output
        target = _as_numpy(out, what)
        if target.shape != output.shape or target.dtype.name != output.dtype:
            raise EmberError(
                f"{what}: out must be {_describe(output.shape, output.dtype)}, "
                f"got {_describe(target.shape, target.dtype.name)}"
            )
        np.copyto(target, np.asarray(output))
        return out

    def _run_model(self, inputs: list, outputs: list) -> None:
        if self._dims is None:
            self._run(*inputs, *outputs, self._workspace, self._params)
            return
        unset = [n for n, a in zip(self._input_names, inputs, strict=True) if a is None]
        if unset:
            raise EmberError(
                f"run: input {unset[0]!r} has a symbolic shape and is not set: "
                "set_input it first"
            )
        shapes, size = self._dims.derive([a.shape for a in inputs], "run: ")
        outputs = [
            output
            if output is not None and output.shape == shape
            else self._allocate(shape, dtype, f"output {name!r}")
            for output, shape, name, (_, dtype) in zip(
                outputs, shapes, self._output_names, self._output_types, strict=True
            )
        ]
        # this thread is running, so no other reads or replaces them meanwhile
        self._outputs = outputs
        if self._workspace.shape[0] < size:
            self._workspace = self._new_workspace(size)
        self._run(*inputs, *outputs, _head(self._workspace, size), self._params)

    def invoke(self, *inputs) -> list[np.ndarray]:
        """Run the model on ``inputs`` (one per model input, in order) and
        return its outputs as new numpy arrays. Safe from any number of threads
        at once: each call has its own workspace (from a pool) and outputs,
        and the executor's ``set_input`` state is neither used nor changed.

        Raises:
            EmberError: a wrong number of inputs, an input's shape or dtype
                other than the model's, or params still missing.
        """
        self._check_count(inputs)
        names = self._input_names
        arrays = []
        for i, value in enumerate(inputs):
            array = self._checked_input(i, value, f"input {names[i]!r}")
            flags = array.flags
            if not (flags.c_contiguous and flags.aligned and array.dtype.isnative):
                array = np.ascontiguousarray(array, array.dtype.newbyteorder("="))
            arrays.append(array)
        dims, size = self._dims, None
        if dims is None:
            outputs = [_output_array(s, dtype) for s, dtype in self._output_types]
        else:
            shapes, size = dims.derive([a.shape for a in arrays])
            outputs = list(map(_output_array, shapes, self._output_dtypes))
        # load_params waits for the calls counted, so the params stay as read
        with self._counting("invoke"):
            try:
                workspace = self._free_workspaces.pop()  # atomic under the GIL
            except IndexError:
                workspace = self._new_workspace(size)
            try:
                if size is None:
                    self._run(*arrays, *outputs, workspace, self._params)
                else:
                    if workspace.shape[0] < size:  # kept instead of the smaller
                        workspace = self._new_workspace(size)
                    head = _head(workspace, size)
                    self._run(*arrays, *outputs, head, self._params)
            finally:
                self._free_workspaces.append(workspace)
        return outputs

    def _check_params(self, what: str) -> None:
        if self._missing:
            missing = sorted(self._missing)
            shown = ", ".join(map(repr, missing[:8]))
            more = f" and {len(missing) - 8} more" if len(missing) > 8 else ""
            raise EmberError(
                f"{what}: params {shown}{more} are not loaded; the library keeps "
                "its params separate: call load_params(...) first"
            )

    def _writable_params(self) -> np.ndarray:
        params = np.asarray(self._params)
        if not params.flags.writeable:  # the library's own read-only bytes
            copy = empty(params.shape, "uint8")
            np.asarray(copy)[:] = params
            self._params = copy
            params = np.asarray(copy)
        return params

    def load_params(self, data) -> None:
        """Load params: a param dict (``save_param_dict``'s bytes, or a dict of
        arrays) whose entries are some of the model's params, each with its
        (packed) shape and dtype; or the whole packed blob (``params_bytes``
        raw bytes, as ``pack_params`` makes it).

        Raises:
            EmberError: a name the model has no param for (the message lists
                some), a shape or dtype unlike the param's, or a raw blob of
                the wrong size; ``InvalidParamsError`` (an EmberError) for a
                damaged, truncated or corrupt param dict.
        """
        if isinstance(data, Mapping):
            with self._loading():
                self._load_dict(data)
            return
        if not isinstance(data, bytes | bytearray | memoryview):
            raise EmberTypeError(
                f"load_params: expected bytes or a dict of arrays, got "
                f"{type(data).__name__}"
            )
        raw = memoryview(data).cast("B")
        if bytes(raw[: len(_params.MAGIC)]) == _params.MAGIC:
            params = _params.load_param_dict(raw)
            with self._loading():
                self._load_dict(params)
            return
        nbytes = self.model["params_bytes"]
        if len(raw) != nbytes:
            raise EmberError(
                f"load_params: a packed params blob for this model has {nbytes} "
                f"bytes, got {len(raw)} (and no param dict header)"
            )
        with self._loading():
            self._writable_params()[:] = np.frombuffer(raw, np.uint8)
            self._missing.clear()

    def _load_dict(self, params: Mapping) -> None:
        check_param_names(params, list(self._layout))
        arrays = {}
        for name, value in params.items():
            array = _as_numpy(value, f"load_params {name!r}")
            check_param_type(name, self._layout[name], array.shape, array.dtype.name)
            arrays[name] = array
        blob = self._writable_params()
        for name, array in arrays.items():
            offset = self._layout[name]["offset"]
            data = np.ascontiguousarray(array).reshape(-1).view(np.uint8)
            blob[offset : offset + data.nbytes] = data
            self._missing.discard(name)


__all__ = ["BaseGraphExecutor", "GraphExecutor", "check_model", "factory"]
