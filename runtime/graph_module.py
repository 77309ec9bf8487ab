"""Running a compiled model from Python: ``GraphModule``, TVM's wrapper of a
graph executor (``ember.runtime.graph_executor``), local or remote::

    from ember.runtime import GraphModule, cpu, load_module
    m = GraphModule(load_module("model.so")["default"](cpu()))
    m.set_input("input", x)
    m.run()
    y = m.get_output(0).numpy()
    (y,) = m(input=x)  # the same, safe from any number of threads

A model compiled for a GPU (``compile_model(..., target="opencl")``, a
``DeviceModule``) runs the same way, ``GraphModule(mod["default"](opencl(0)))``,
its inputs and outputs in device memory (``ember.runtime.device_graph``):
``get_output`` returns a device array, ``m(**inputs)`` numpy arrays.

A model compiled with symbolic dims (``batch``, ``seq``) runs at any size its
bounds allow: each call binds the symbols from the inputs' shapes and returns
outputs of the shapes they give; ``get_input_info()`` shows such a dim as its
text (``('batch', 'seq')``).

``m(**inputs)`` may be called from any number of threads at once;
``set_input``/``run``/``get_output`` are one thread's at a time (another
thread's use is an ``EmberError``, never its result). See
``ember.runtime.graph_executor`` for the model contract and the details.
"""

import json
import threading
from collections.abc import Mapping
from typing import TYPE_CHECKING

import numpy as np

from . import params as _params
from .errors import EmberError, EmberTypeError
from .graph_executor import (
    PARAMS_SYMBOL,
    RUN_FUNCTION,
    GraphExecutor,
    _as_numpy,
    check_model,
    factory,
)
from .ndarray import Device
from .profiling import BenchmarkResult

if TYPE_CHECKING:
    from .graph_steps import Profile


class GraphModule:
    """TVM's ``graph_executor.GraphModule`` for ember model libraries.

    Args:
        module: ``lib["default"](dev)``, a graph executor module: a local
            one (of a CPU library, or of a GPU model's ``DeviceModule`` on
            its device), or a remote one of an RPC session (``ember.rpc``), whose
            model then runs on the server. With a remote module, inputs
            given as local arrays are copied to the server, and
            ``get_output`` returns a ``RemoteNDArray`` (``.numpy()`` fetches it).

    Example:
        >>> lib = load_module("model.so")  # doctest: +SKIP
        >>> m = GraphModule(lib["default"](cpu()))  # doctest: +SKIP
        >>> m.set_input("input", x); m.run()  # doctest: +SKIP
        >>> y = m.get_output(0).numpy()  # doctest: +SKIP
    """

    def __init__(self, module):
        if getattr(module, "type_key", None) != GraphExecutor.type_key:
            raise EmberTypeError(
                'GraphModule wraps a graph executor, lib["default"](dev); got '
                f"{module!r}"
            )
        self.module = module
        session = getattr(module, "session", None)  # an RPC session's module
        self._remote_device = session.cpu() if session is not None else None
        self._set_input = module["set_input"]
        self._run = module["run"]
        self._get_output = module["get_output"]
        self._get_input = module["get_input"]
        self._load_params = module["load_params"]
        self._io: dict | None = None
        if self._remote_device is None:
            self._invoke = module["invoke"]
        self._remote_lock = threading.Lock()  # __call__ on a remote executor

    def _here(self, value):
        """``value`` where the executor is: copied to the server if it is remote."""
        if (
            self._remote_device is None
            or getattr(value, "device", None) == self._remote_device
        ):
            return value
        from .ndarray import array

        return array(_as_numpy(value, "set_input"), device=self._remote_device)

    def set_input(self, key=None, value=None, **params) -> None:
        """Set inputs: ``set_input("x", x)``, ``set_input(0, x)`` or
        ``set_input(x=x, y=y)``; values are copied.

        Raises:
            EmberError: an unknown input name (the message lists the names),
                or a shape or dtype other than the input's.
        """
        if key is not None:
            if value is None:
                raise EmberTypeError(f"set_input({key!r}): no value given")
            self._set_input(key, self._here(value))
        for name, v in params.items():
            self._set_input(name, self._here(v))

    def run(self, **inputs) -> None:
        """Run the model, after setting ``inputs`` (name=value) if given."""
        if inputs:
            self.set_input(**inputs)
        self._run()

    def __call__(self, *args, **inputs) -> list[np.ndarray]:
        """Run the model on the given inputs and return its outputs, like
        onnxruntime's ``session.run``: safe from any number of threads at
        once (each call has its own workspace and outputs), and independent
        of ``set_input``/``get_output``.

        Args:
            args: inputs in the model's order.
            inputs: inputs by name (numpy arrays, NDArrays or DLPack tensors
                of the inputs' shapes and dtypes, not copied when C-contiguous).

        Returns:
            The outputs in the model's order, new numpy arrays.

        Raises:
            EmberError: an input missing, given twice or unknown, or of
                another shape or dtype than the model's (for a symbolic
                model: sizes that contradict one another or a bound).

        Example:
            >>> (y,) = m(input=x)  # doctest: +SKIP
        """
        names = list(self.get_input_info()[0])
        if len(args) > len(names):
            raise EmberError(
                f"the model takes {len(names)} input(s), got {len(args)} positional"
            )
        given = dict(zip(names, args, strict=False))
        for name, value in inputs.items():
            if name not in names:
                raise EmberError(
                    f"model has no input named {name!r}; its inputs are "
                    f"{', '.join(map(repr, names)) or 'none'}"
                )
            if name in given:
                raise EmberError(f"input {name!r} given twice")
            given[name] = value
        missing = [name for name in names if name not in given]
        if missing:
            raise EmberError(
                f"input(s) {', '.join(map(repr, missing))} not given: a call "
                "takes every input (set_input's values are not used)"
            )
        if self._remote_device is None:
            return [np.asarray(y) for y in self._invoke(*(given[n] for n in names))]
        # The server runs one request at a time; the lock keeps this call's
        # set_input, run and get_output together.
        with self._remote_lock:
            for name in names:
                self._set_input(name, self._here(given[name]))
            self._run()
            return [
                self._get_output(i).numpy()
                for i in range(len(self._info("outputs")[0]))
            ]

    def get_output(self, index, out=None):
        """Output ``index``: the executor's NDArray, or a copy into ``out``."""
        if self._remote_device is None:
            return self._get_output(index, out)
        output = self._get_output(index)
        return output if out is None else output.copyto(out)

    def get_input(self, index):
        """The executor's NDArray of input ``index`` (a name or an index)."""
        return self._get_input(index)

    def get_num_outputs(self) -> int:
        return self.module["get_num_outputs"]()

    def get_num_inputs(self) -> int:
        return self.module["get_num_inputs"]()

    def get_input_index(self, name: str) -> int:
        return self.module["get_input_index"](name)

    def _info(self, kind: str) -> tuple[dict[str, tuple], dict[str, str]]:
        io = self._io
        if io is None:
            io = self._io = json.loads(self.module["get_io_info"]())
        tensors = io[kind]
        return (
            {t["name"]: tuple(t["shape"]) for t in tensors},
            {t["name"]: t["dtype"] for t in tensors},
        )

    def get_input_info(self) -> tuple[dict[str, tuple], dict[str, str]]:
        """``(shapes, dtypes)`` of the inputs by name, as TVM returns them.

        A symbolic dim is its expression's text, as the metadata writes it.

        Example:
            >>> m.get_input_info()  # doctest: +SKIP
            ({'ids': ('batch', 'seq')}, {'ids': 'int64'})
        """
        return self._info("inputs")

    def get_output_info(self) -> tuple[dict[str, tuple], dict[str, str]]:
        """``(shapes, dtypes)`` of the outputs by name; a symbolic dim is its
        text (``('batch', 'seq + 1', 768)``), its value known after a run
        from ``get_output(i).shape``."""
        return self._info("outputs")

    def load_params(self, params) -> None:
        """Load params: ``save_param_dict`` bytes, a dict of arrays, or the
        packed blob (see ``GraphExecutor.load_params``)."""
        if self._remote_device is not None and isinstance(params, Mapping):
            params = _params.save_param_dict(params)
        self._load_params(params)

    def profile(self, repeat: int = 10, **inputs) -> "Profile":
        """Where the time goes: run the model ``repeat`` times kernel by
        kernel (after setting ``inputs``, name=value, if given) and time
        every kernel call (``ember.runtime.graph_steps``).

        Returns:
            A ``Profile``: ``print(p)`` shows each kernel's calls, total and
            mean time, share and graph ops; ``p.save_trace("t.json")`` writes
            a Chrome trace that Perfetto opens.

        Raises:
            EmberError: a remote or GPU executor, or a library without a
                call plan; and as ``run``.

        Example:
            >>> print(m.profile(repeat=20, input=x))  # doctest: +SKIP
        """
        from .graph_steps import profile

        if inputs:
            self.set_input(**inputs)
        return profile(self._local("profile"), repeat)

    def _local(self, what: str) -> GraphExecutor:
        if not isinstance(self.module, GraphExecutor):
            raise EmberError(
                f"{what}: runs kernel by kernel only in a local CPU graph executor, "
                f"not a {type(self.module).__name__}"
            )
        return self.module

    def benchmark(
        self,
        device: Device | None = None,
        func_name: str = "run",
        repeat: int = 5,
        number: int = 5,
        min_repeat_ms: float = 0,
    ) -> BenchmarkResult:
        """Time ``func_name`` (the whole model) with ``time_evaluator``, on
        the server when the module is remote.

        Returns:
            A ``BenchmarkResult`` (seconds per run: mean, median, min, ...).
        """
        timer = self.module.time_evaluator(
            func_name,
            device if device is not None else getattr(self.module, "device", None),
            number=number,
            repeat=repeat,
            min_repeat_ms=min_repeat_ms,
        )
        return timer()


__all__ = [
    "PARAMS_SYMBOL",
    "RUN_FUNCTION",
    "GraphExecutor",
    "GraphModule",
    "check_model",
    "factory",
]
