"""Running a wasm32 model library in wasmtime: the documented Wasm host.

A model compiled for ``wasm32-unknown-unknown`` is exported as a ``.tar``
(``embed_params=False``: a Wasm module holds no ELF params object) and linked by
``wasm-ld`` into one module, here or beforehand. ``WasmModule`` instantiates it,
reads its ``__ember_metadata`` through the packed ABI inside the instance, keeps
the params blob and the workspace in the instance's linear memory (a heap above
``__heap_base``, which also serves the module's ``malloc``/``free`` imports),
writes wasm32 DLTensors (40 bytes, 4-byte pointers) for each run and calls the
model's packed ``default_run``. wasmtime is imported only when a module is
loaded; this file imports nothing of the compiler.
"""

import json
import math
import os
import shutil
import struct
import subprocess
import tempfile
from collections.abc import Callable, Mapping
from typing import Any

import numpy as np

from . import cc as _cc
from .abi import METADATA_FUNCTION, MODEL_ENTRY, SCRATCH_RELEASE, TypeCode
from .errors import (
    CompilerNotFoundError,
    EmberError,
    EmberValueError,
    InvalidLibraryError,
    LibraryNotFoundError,
    LinkError,
)
from .params import MAGIC as PARAMS_MAGIC
from .params import load_param_dict, pack_params

WASM_PAGE = 65536
DLTENSOR_WASM32 = struct.Struct(
    "<IiiiBBHII4xQ"
)  # data, device, ndim, dtype, shape, strides, offset
DTYPE_CODES = {"i": 0, "u": 1, "f": 2, "b": 1}

# libm functions a kernel may import, computed by numpy in the import's precision.
_LIBM: dict[str, Callable[..., Any]] = {
    "exp": np.exp,
    "log": np.log,
    "sqrt": np.sqrt,
    "tanh": np.tanh,
    "sin": np.sin,
    "cos": np.cos,
    "pow": np.power,
    "erf": np.vectorize(math.erf),
}


def _wasmtime():
    try:
        import wasmtime
    except ImportError:
        raise EmberError(
            "ember.runtime.wasm needs the wasmtime package: pip install wasmtime "
            "(or pip install -e '.[dev]')"
        ) from None
    return wasmtime


def link_wasm(objects: list[str], output: str, wasm_ld: str | None = None) -> str:
    """Link wasm32 objects into a module exporting its functions, memory and
    ``__heap_base``; undefined functions become imports from ``env``.

    Args:
        objects: the object files (a ``.tar`` library's, see ``extract_objects``).
        output: the ``.wasm`` file to write.
        wasm_ld: the linker; by default ``$EMBER_WASM_LD`` or ``wasm-ld``.

    Returns:
        ``output``.

    Example:
        >>> link_wasm(["0_default_run.o", "__ember_metadata.o"], "m.wasm")  # doctest: +SKIP
    """
    program = wasm_ld or os.environ.get("EMBER_WASM_LD", "wasm-ld")
    found = shutil.which(program)
    if found is None:
        raise CompilerNotFoundError(
            f"{program} not found: linking a wasm32 library needs LLVM's wasm-ld "
            "(apt-get install lld), or pass a linked .wasm"
        )
    command = [found, "--no-entry", "--export-all", "--export=__heap_base"]
    command += ["--allow-undefined", "-o", output, *objects]
    done = subprocess.run(command, capture_output=True, text=True)
    if done.returncode != 0:
        raise LinkError(f"{' '.join(command)} failed:\n{done.stderr}")
    return output


def _read_code(path: str, wasm_ld: str | None) -> bytes:
    if not os.path.exists(path):
        raise LibraryNotFoundError(f"{path}: no such file")
    with open(path, "rb") as f:
        head = f.read(4)
    if head == b"\0asm":
        with open(path, "rb") as f:
            return f.read()
    if not path.endswith(".tar"):
        raise InvalidLibraryError(
            f"{path}: not a Wasm module (magic {head!r}) nor a .tar library"
        )
    with tempfile.TemporaryDirectory(prefix="ember-wasm-") as tmp:
        manifest, objects = _cc.extract_objects(path, tmp)
        if not manifest.get("triple", "").startswith("wasm32"):
            raise InvalidLibraryError(
                f"{path}: compiled for {manifest.get('triple')}, expected wasm32"
            )
        output = link_wasm(objects, os.path.join(tmp, "module.wasm"), wasm_ld)
        with open(output, "rb") as f:
            return f.read()


class _Heap:
    """``aligned_alloc``/``free`` over linear memory above ``__heap_base``: a
    bump pointer that falls back to the end of the highest live block."""

    def __init__(self, store, memory, base: int):
        self.store, self.memory, self.base = store, memory, base
        self.live: dict[int, int] = {}  # address: end

    def alloc(self, size: int, align: int = 64) -> int:
        if align <= 0 or align & (align - 1):
            return 0  # C11: an alignment that is not a power of two fails
        top = max(self.live.values(), default=self.base)
        start = -(-top // align) * align
        end = start + max(size, 1)
        have = self.memory.data_len(self.store)
        if end > have:
            self.memory.grow(self.store, -(-(end - have) // WASM_PAGE))
        self.live[start] = end
        return start

    def free(self, address: int) -> None:
        if address:
            del self.live[address]  # a KeyError: a free of what was not allocated


class WasmInstance:
    """A linked wasm32 module in wasmtime, with the host's side of the packed
    ABI: its ``env`` imports (``aligned_alloc``, ``malloc``, ``free`` over
    ``heap``, and libm's functions computed by numpy), its memory, wasm32
    DLTensors over copies of arrays (``tensor``) and packed calls
    (``call_packed``). ``WasmModule`` runs a model on it; tests call kernels.

    Args:
        code: the module's bytes.
    """

    def __init__(self, code: bytes):
        wasmtime = _wasmtime()
        engine = wasmtime.Engine()
        self._store = wasmtime.Store(engine)
        module = wasmtime.Module(engine, code)
        imports = [self._import(wasmtime, i) for i in module.imports]
        instance = wasmtime.Instance(self._store, module, imports)
        # Any: an export's kind (function, memory, global) is known by its name.
        self._exports: Any = instance.exports(self._store)
        self._memory: Any = self._exports["memory"]
        base = self._exports["__heap_base"].value(self._store)
        self.heap = _Heap(self._store, self._memory, base)

    def _import(self, wasmtime, item):
        heap_calls: dict[str, Callable] = {
            "aligned_alloc": lambda align, size: self.heap.alloc(size, align),
            "malloc": lambda size: self.heap.alloc(size, 16),
            "free": lambda address: self.heap.free(address),
        }
        if item.module == "env" and item.name in heap_calls:
            return wasmtime.Func(self._store, item.type, heap_calls[item.name])
        base, f32 = item.name.removesuffix("f"), item.name.endswith("f")
        if item.module != "env" or base not in _LIBM:
            raise InvalidLibraryError(
                f"the module imports {item.module}.{item.name}, which this host "
                "does not provide (it gives aligned_alloc, malloc, free and "
                f"libm's {', '.join(sorted(_LIBM))})"
            )
        dtype, fn = (np.float32 if f32 else np.float64), _LIBM[base]
        return wasmtime.Func(
            self._store, item.type, lambda *xs: float(fn(*(dtype(x) for x in xs)))
        )

    def release_scratch(self) -> None:
        """Free the heap blocks the module's kernels keep between calls (its
        `SCRATCH_RELEASE`, where it has one); later calls allocate again."""
        release = self._exports.get(SCRATCH_RELEASE)
        if release is not None:
            release(self._store)

    def write(self, address: int, data: bytes) -> None:
        self._memory.write(self._store, data, address)

    def read(self, address: int, size: int) -> bytes:
        return bytes(self._memory.read(self._store, address, address + size))

    def c_string(self, address: int) -> str:
        data = self._memory.read(
            self._store, address, self._memory.data_len(self._store)
        )
        return bytes(data[: bytes(data).index(0)]).decode()

    def tensor(self, array: np.ndarray) -> tuple[int, int]:
        """Write ``array`` and its wasm32 DLTensor; ``(tensor, data)`` addresses."""
        data = self.heap.alloc(array.nbytes)
        shape = self.heap.alloc(8 * array.ndim, 8)
        tensor = self.heap.alloc(DLTENSOR_WASM32.size, 8)
        self.write(data, np.ascontiguousarray(array).tobytes())
        self.write(shape, struct.pack(f"<{array.ndim}q", *array.shape))
        code, bits = DTYPE_CODES[array.dtype.kind], 8 * array.dtype.itemsize
        self.write(
            tensor,
            DLTENSOR_WASM32.pack(data, 1, 0, array.ndim, code, bits, 1, shape, 0, 0),
        )
        return tensor, data

    def call_packed(
        self, name: str, tensors: list[int], count: int | None = None
    ) -> tuple[int, int, int]:
        """Call packed ``name`` with DLTensor handles (``count`` of them in
        ``num_args``: by default all); ``(rc, ret, ret_code)``, ``ret`` the
        returned handle's address (a message when ``rc`` is not 0)."""
        n = len(tensors)
        args, codes = self.heap.alloc(8 * n + 8, 8), self.heap.alloc(4 * n + 4, 4)
        ret, ret_code = self.heap.alloc(8, 8), self.heap.alloc(4, 4)
        try:
            self.write(args, struct.pack(f"<{n}Q", *tensors))
            self.write(codes, struct.pack(f"<{n}i", *[TypeCode.DLTENSOR_HANDLE] * n))
            count = n if count is None else count
            rc = self._exports[name](self._store, args, codes, count, ret, ret_code)
            value = struct.unpack("<I", self.read(ret, 4))[0]
            return rc, value, struct.unpack("<i", self.read(ret_code, 4))[0]
        finally:
            for block in (args, codes, ret, ret_code):
                self.heap.free(block)


class WasmModule(WasmInstance):
    """A wasm32 model library in wasmtime, run with numpy arrays.

    Args:
        path: a linked ``.wasm`` module, or the ``.tar`` ``export_library``
            writes (linked here with ``wasm-ld``).
        params: the model's params: a dict of arrays, a param dict's bytes
            (``save_param_dict``) or the packed blob; or later ``load_params``.
        wasm_ld: the linker for a ``.tar``; by default ``$EMBER_WASM_LD`` or
            ``wasm-ld``.

    Example:
        >>> m = WasmModule("cnn.tar", params=save_param_dict(mod.params))  # doctest: +SKIP
        >>> (y,) = m.run(x=x)  # doctest: +SKIP
    """

    def __init__(self, path: str, params=None, wasm_ld: str | None = None):
        _wasmtime()  # missing: say so before reading or linking anything
        super().__init__(_read_code(str(path), wasm_ld))
        self.metadata: dict = json.loads(self._call(METADATA_FUNCTION, [], STR=True))
        model = self.metadata.get("model")
        if model is None:
            raise InvalidLibraryError(f"{path}: not a model library (no 'model')")
        self.model: dict = model
        if not isinstance(model.get("workspace_bytes"), int):
            raise InvalidLibraryError(
                f"{path}: a model with symbolic shapes (workspace "
                f"{model.get('workspace_bytes')!r}); the Wasm host runs models "
                "compiled for fixed shapes: compile with shape=..."
            )
        self._workspace = self.tensor(np.zeros(model["workspace_bytes"], np.uint8))
        self._params: int | None = None
        if params is not None:
            self.load_params(params)

    def _call(self, name: str, tensors: list[int], STR: bool = False) -> str:
        """Call packed ``name``; its string result if ``STR``. A failure is
        an ``EmberError`` with the function's message."""
        rc, value, got = self.call_packed(name, tensors)
        if rc != 0:
            raise EmberError(f"{name}: {self.c_string(value)}")
        if not STR:
            return ""
        if got != TypeCode.STR:
            raise EmberError(f"{name}: returned type code {got}, expected a string")
        return self.c_string(value)

    def load_params(self, params) -> None:
        """Set the model's params.

        Args:
            params: a dict of arrays, a param dict's bytes (``save_param_dict``)
                or the packed blob of the metadata's ``params_bytes``.

        Example:
            >>> m.load_params(save_param_dict(mod.params))  # doctest: +SKIP
        """
        nbytes = self.model["params_bytes"]
        if isinstance(params, (bytes, bytearray, memoryview)):
            if bytes(params[:8]) == PARAMS_MAGIC:
                params = load_param_dict(params)
        if isinstance(params, Mapping):
            params = pack_params(params, self.model["params"], nbytes)
        blob = np.frombuffer(bytes(params), np.uint8)
        if self._params is not None:
            self.heap.free(self._params)
        self._params = self.tensor(blob)[0]

    def run(self, **inputs: np.ndarray) -> list[np.ndarray]:
        """Run the model on ``inputs`` (by name).

        Returns:
            The outputs, in the metadata's order.

        Raises:
            EmberValueError: an input missing, unknown, or of another shape or
                dtype than the model's; EmberError: params not loaded, or the
                model's own message.

        Example:
            >>> (y,) = m.run(x=np.zeros((1, 3, 8, 8), "float32"))  # doctest: +SKIP
        """
        if self._params is None and self.model["params"]:
            raise EmberError(
                "run: the params are not loaded: pass params= or call load_params"
            )
        names = [i["name"] for i in self.model["inputs"]]
        unknown = sorted(set(inputs) - set(names))
        missing = [n for n in names if n not in inputs]
        if unknown or missing:
            raise EmberValueError(
                f"run: expected inputs {names}, got unknown {unknown}, missing {missing}"
            )
        mark = dict(self.heap.live)
        try:
            handles = [
                self._input(info, inputs[info["name"]]) for info in self.model["inputs"]
            ]
            outputs = [np.zeros(o["shape"], o["dtype"]) for o in self.model["outputs"]]
            written = [self.tensor(o) for o in outputs]
            params = self._params or self.tensor(np.zeros(0, np.uint8))[0]
            tensors = handles + [t for t, _ in written] + [self._workspace[0], params]
            self._call(MODEL_ENTRY, tensors)
            for out, (_, data) in zip(outputs, written, strict=True):
                out[...] = np.frombuffer(
                    self.read(data, out.nbytes), out.dtype
                ).reshape(out.shape)
            return outputs
        finally:
            self.heap.live = mark

    def _input(self, info: dict, value) -> int:
        array = np.asarray(value)
        shape, dtype = tuple(info["shape"]), np.dtype(info["dtype"])
        if array.shape != shape or array.dtype != dtype:
            raise EmberValueError(
                f"run: input {info['name']!r}: expected shape {shape} {dtype}, "
                f"got {array.shape} {array.dtype}"
            )
        return self.tensor(array)[0]


__all__ = ["WasmInstance", "WasmModule", "link_wasm"]
