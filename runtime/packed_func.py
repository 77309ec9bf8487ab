"""PackedFunc: calls through ember's packed, type-erased C ABI.

Every compiled function is exported as::

    int32_t f(EmberValue* args, int32_t* type_codes, int32_t num_args,
              EmberValue* ret, int32_t* ret_type_code);

A call converts each Python argument to one 8-byte ``EmberValue`` and a type code
(TVM's codes, ``TypeCode``), packs them with a cached ``struct.Struct`` per argument
signature, and turns a non-zero return code into an ``EmberError``. Tensors travel
as ``DLTensor*``: an NDArray's own, or one built for the call around a numpy array's
memory (zero-copy). Arguments the function writes (its outputs, as a module's
metadata lists them) must be writeable: a read-only array there is refused before
the call.

Calls are fast (about a microsecond for three tensors): the first call with a new
signature of argument types generates a small Python function for it (see
``fast_call``) that the PackedFunc keeps calling while the types stay the same.
Torch tensors stay under 2 us too: their DLTensors are filled through DLPack's C
exchange API (``_exchange_recipe``) rather than ``from_dlpack``.
"""

import ctypes
import operator
import struct
import weakref
from collections.abc import Callable, Iterable, Mapping
from ctypes import CFUNCTYPE, Structure, Union, c_double, c_int32, c_int64, c_void_p
from typing import Any

import numpy as np

from . import dlpack, fast_call
from .abi import TypeCode
from .dlpack import VERSIONED_TENSOR_OFFSET, capsule_pointer
from .errors import EmberError, EmberTypeError, EmberValueError
from .ndarray import NDArray, from_dlpack


class EmberValue(Union):
    """One packed argument or return value: 8 bytes, read according to its code."""

    _fields_ = [("v_int64", c_int64), ("v_float64", c_double), ("v_handle", c_void_p)]


class _Ret(Structure):
    _fields_ = [("value", EmberValue), ("code", c_int32)]


PACKED_FUNC_TYPE = CFUNCTYPE(c_int32, c_void_p, c_void_p, c_int32, c_void_p, c_void_p)
"""The ctypes prototype of a packed C function."""

# Calls go through a prototype without argtypes: ctypes passes bytes and ctypes
# arrays as pointers and the count as a C int, skipping the per-argument
# conversion that is most of the cost of a call through PACKED_FUNC_TYPE. The GIL
# is released for the duration of the native call.
_UNCHECKED_TYPE = CFUNCTYPE(c_int32)


# How each Python argument type becomes an EmberValue: a struct format character,
# a type code and a getter. Kinds without a getter need per-call memory (below).
_TENSOR, _STR, _DLPACK = "tensor", "str", "dlpack"
_SIMPLE_KINDS: dict[type, tuple[str, int, Callable[[Any], int | float]]] = {
    NDArray: ("Q", TypeCode.DLTENSOR_HANDLE, operator.attrgetter("_handle")),
    bool: ("q", TypeCode.INT, int),
    int: ("q", TypeCode.INT, operator.index),
    float: ("d", TypeCode.FLOAT, float),
    type(None): ("q", TypeCode.NULL, lambda _: 0),
}


class _Plan:
    """How to pack the arguments of one signature (tuple of argument types)."""

    __slots__ = ("types", "pack", "codes", "getters", "kinds", "fast")

    def __init__(self, types: tuple[type, ...]):
        fmt, codes, getters, kinds = [], [], [], []
        for i, t in enumerate(types):
            kind = _kind_of(t, i)
            kinds.append(kind)
            if isinstance(kind, tuple):
                fmt.append(kind[0])
                codes.append(kind[1])
                getters.append(kind[2])
            else:
                fmt.append("Q")
                codes.append(TypeCode.STR if kind == _STR else TypeCode.DLTENSOR_HANDLE)
        self.types = types
        self.pack = struct.Struct("@" + "".join(fmt)).pack
        self.codes = struct.pack(f"@{len(codes)}i", *codes)
        self.kinds = tuple(kinds)
        self.getters = tuple(getters) if len(getters) == len(types) else None
        # output positions (as they matter to this signature) -> fast caller
        self.fast: dict[tuple[int, ...], Callable | None] = {}


def _kind_of(t: type, index: int):
    for base in t.__mro__:
        if base in _SIMPLE_KINDS:
            return _SIMPLE_KINDS[base]
        if base is np.ndarray:
            return _TENSOR
        if base is str:
            return _STR
    from .module import Module  # module.py imports this file

    if issubclass(t, Module):
        return _MODULE_KIND
    if issubclass(t, np.bool_):
        return _SIMPLE_KINDS[bool]
    if issubclass(t, np.integer):
        return _SIMPLE_KINDS[int]
    if issubclass(t, np.floating):
        return _SIMPLE_KINDS[float]
    if hasattr(t, "__dlpack__"):
        return _DLPACK
    raise EmberTypeError(
        f"argument {index}: cannot pass a {t.__name__} to a packed function; "
        "expected an NDArray, a numpy array, a DLPack tensor, int, float, str, "
        "None, a PackedFunc or a Module"
    )


_PLANS: dict[tuple[type, ...], _Plan] = {}

# Modules passed as arguments, by handle, while they live.
_MODULES: "weakref.WeakValueDictionary[int, Any]" = weakref.WeakValueDictionary()


def module_handle(module) -> int:
    """The opaque handle (type code 9) a Module is passed as.

    Args:
        module: an ``ember.runtime.Module``.

    Returns:
        A non-zero integer that ``module_from_handle`` maps back to the module
        while it is alive.

    Example:
        >>> from ember.runtime import Module
        >>> m = Module()
        >>> module_from_handle(module_handle(m)) is m
        True
    """
    handle = id(module)
    _MODULES[handle] = module
    return handle


def module_from_handle(handle: int):
    """The Module a handle from ``module_handle`` stands for.

    Args:
        handle: the value of a type-code-9 argument or return value.

    Returns:
        The Module.

    Raises:
        EmberError: no living module was passed with that handle.

    Example:
        >>> module_from_handle(0)
        Traceback (most recent call last):
        ...
        ember.runtime.errors.EmberError: no living module has handle 0x0
    """
    module = _MODULES.get(handle)
    if module is None:
        raise EmberError(f"no living module has handle {handle:#x}")
    return module


_MODULE_KIND = ("Q", TypeCode.MODULE_HANDLE, module_handle)

# Python PackedFuncs by the address of their trampoline, while they live.
_TRAMPOLINES: "weakref.WeakValueDictionary[int, PackedFunc]" = (
    weakref.WeakValueDictionary()
)


def packed_func_from_handle(address: int) -> "PackedFunc":
    """The PackedFunc a type-code-10 value (a packed C function's address) is.

    Args:
        address: the function's address.

    Returns:
        The Python PackedFunc whose trampoline has that address, or a new
        PackedFunc calling the native function there (which the caller must
        keep alive while it is used).

    Raises:
        ValueError: the address is null.

    Example:
        >>> f = PackedFunc(abs, name="abs")
        >>> packed_func_from_handle(f.handle) is f
        True
    """
    func = _TRAMPOLINES.get(address)
    return func if func is not None else PackedFunc(address)


def _plan_for(types: tuple[type, ...]) -> _Plan:
    plan = _PLANS.get(types)
    if plan is None:
        plan = _PLANS[types] = _Plan(types)
    return plan


def _numpy_capsule(arr: np.ndarray) -> tuple[object, int]:
    """A DLPack capsule of a C-contiguous numpy array and its DLTensor's address.

    numpy builds the DLTensor in C, several times faster than doing it here; the
    capsule, left unconsumed, frees it when the call drops the capsule.
    """
    if not arr.flags.c_contiguous:
        raise EmberValueError(
            f"expected a C-contiguous array, got a strided {arr.dtype} view of "
            f"shape {arr.shape}; pass np.ascontiguousarray(x)"
        )
    try:
        capsule = arr.__dlpack__()
        return capsule, capsule_pointer(capsule, b"dltensor")
    except BufferError:
        if arr.flags.writeable:
            raise
    # Only DLPack 1.0 capsules can carry a read-only array.
    capsule = arr.__dlpack__(max_version=(1, 0))
    address = capsule_pointer(capsule, b"dltensor_versioned")
    return capsule, address + VERSIONED_TENSOR_OFFSET


class _ReadOnlyOutput(Exception):
    """Argument ``index``, an output, turned out read-only once opened."""

    def __init__(self, index: int):
        super().__init__(index)
        self.index = index


def _pack_slow(
    plan: _Plan, args: tuple, outputs: frozenset[int] = frozenset()
) -> tuple[bytes, list]:
    """Pack arguments that need memory for the call; also returns that memory.

    Raises:
        _ReadOnlyOutput: a DLPack tensor in an output position is read-only.
    """
    values, keep = [], []
    for i, (kind, arg) in enumerate(zip(plan.kinds, args, strict=True)):
        try:
            if kind is _TENSOR:
                capsule, address = _numpy_capsule(arg)
                keep.append(capsule)
            elif kind is _STR:
                buf = ctypes.create_string_buffer(arg.encode())
                keep.append(buf)
                address = ctypes.addressof(buf)
            elif kind is _DLPACK:
                tensor = from_dlpack(arg)
                keep.append(tensor)
                address = tensor._handle
                if i in outputs and not tensor._arr.flags.writeable:
                    raise _ReadOnlyOutput(i)
            else:
                address = kind[2](arg)  # a scalar, or an NDArray's DLTensor*
        except _ARGUMENT_ERRORS as e:
            raise _with_context(e, f"argument {i}") from None
        values.append(address)
    return plan.pack(*values), keep


_ARGUMENT_ERRORS = (EmberError, TypeError, ValueError, BufferError)


def _with_context(error: Exception, context: str) -> Exception:
    """The same kind of error with ``context: `` in front of its message (the
    nearest of `_ARGUMENT_ERRORS` where the class takes more than a message,
    as ``UnicodeEncodeError`` does)."""
    message = f"{context}: {error}"
    try:
        return type(error)(message)
    except TypeError:
        kind = next(
            k for k in (*_ARGUMENT_ERRORS[1:], EmberError) if isinstance(error, k)
        )
        return kind(message)


def _overflow_message(args: tuple) -> str:
    for i, arg in enumerate(args):
        if isinstance(arg, int) and not -(2**63) <= arg < 2**63:
            return f"argument {i}: {arg} does not fit in int64"
    return "an argument does not fit in its packed slot"


def describe(arg) -> str:
    """How an argument reads in an error message: "float32 tensor of shape (64,)".

    Args:
        arg: any argument passed to a packed function.

    Returns:
        A short description of its type (and dtype and shape for tensors).

    Example:
        >>> describe(np.zeros(64, "float32")), describe(3)
        ('float32 tensor of shape (64,)', 'int')
    """
    if hasattr(arg, "shape") and hasattr(arg, "dtype"):
        dtype = str(arg.dtype).removeprefix("torch.")
        where = ""
        if isinstance(arg, NDArray) and arg.device.device_type != dlpack.DL_CPU:
            where = f" on {arg.device}"
        return f"{dtype} tensor of shape {tuple(arg.shape)}{where}"
    return "None" if arg is None else type(arg).__name__


_RETURN_READERS: dict[int, Callable[[EmberValue], Any]] = {
    TypeCode.INT: lambda v: v.v_int64,
    TypeCode.UINT: lambda v: v.v_int64 & 0xFFFF_FFFF_FFFF_FFFF,
    TypeCode.FLOAT: lambda v: v.v_float64,
    TypeCode.HANDLE: lambda v: v.v_handle,
    TypeCode.STR: lambda v: ctypes.string_at(v.v_handle).decode(),
    TypeCode.MODULE_HANDLE: lambda v: module_from_handle(v.v_handle or 0),
    TypeCode.PACKED_FUNC_HANDLE: lambda v: packed_func_from_handle(v.v_handle or 0),
}
# Plain ints: an IntEnum member costs a descriptor lookup on every use.
_NULL, _STR_CODE = int(TypeCode.NULL), int(TypeCode.STR)
_CALLBACK_ERROR = -100  # a registered function it called failed (runtime.callbacks)


# What the fast callers check of tensors filled through DLPack's exchange API,
# by producer (the exact type's module and qualified name): an expression true
# when a tensor must take the general path, before it is filled, and the dtypes
# taken. A torch tensor that requires grad is refused by torch's __dlpack__ (the
# filler does not check); is_contiguous() is torch's test of compact row-major
# (~60 ns, against ~1 us to read the filled strides here); complex tensors may
# carry the conjugate bit, which only __dlpack__ checks, so they take the
# general path. torch never exports read-only memory (its versioned capsules
# carry no read-only flag), so its tensors may be outputs, as they may on the
# general path. Subclasses of a listed type (which may change __dlpack__ or
# __torch_function__, e.g. torch.nn.Parameter) take the general path.
_EXCHANGE_PRODUCERS: dict[tuple[str, str], tuple[str, frozenset[int]]] = {
    ("torch", "Tensor"): (
        "{a}.requires_grad or not {a}.is_contiguous()",
        dlpack.REAL_DTYPE_WORDS,
    ),
}


def _exchange_recipe(t: type, output: bool) -> "fast_call.Recipe | None":
    """How a fast caller fills a ``t`` through the exchange API, or None.

    Known producers (``_EXCHANGE_PRODUCERS``) are checked as listed there.
    None where the type has no usable exchange API, for a subclass of a known
    type, where a type overrides the ``__dlpack__`` of the class that offers
    the API (its export may differ from the filler's), and for an output of an
    unknown producer (its DLTensor cannot say whether the memory is read-only).
    """
    filler = dlpack.exchange_filler(t)
    if filler is None:
        return None
    for i, base in enumerate(t.__mro__):
        known = _EXCHANGE_PRODUCERS.get((base.__module__, base.__qualname__))
        if known is None:
            continue
        if i:  # a subclass of a known type: its own rules are unknown
            return None
        refuse, dtypes = known
        return ("exchange", fast_call.Exchange(filler.fill, refuse, True, dtypes))
    owner = next(c for c in t.__mro__ if "__dlpack_c_exchange_api__" in vars(c))
    if output or getattr(t, "__dlpack__", None) is not getattr(
        owner, "__dlpack__", None
    ):
        return None
    return (
        "exchange",
        fast_call.Exchange(filler.fill, None, False, dlpack.DTYPE_WORDS),
    )


def _fast_caller(plan: _Plan, outputs: tuple[int, ...]) -> Callable | None:
    """The fast caller of ``plan``'s signature, or None if it has none.

    ``outputs`` are the NDArray and DLPack-tensor positions the function writes;
    NDArray outputs' ``writeable`` flags are checked on every call. Numpy arrays
    need no such check: numpy's (unversioned) DLPack export refuses read-only
    arrays, which sends the call to the general path and its error. Tensors
    with DLPack's C exchange API are filled into the call's area (see
    ``_exchange_recipe``); strings and other DLPack tensors need per-call memory
    and take the general path.
    """
    recipes: list[fast_call.Recipe] = []
    for i, (kind, t) in enumerate(zip(plan.kinds, plan.types, strict=True)):
        if kind is _TENSOR:
            recipes.append(("numpy", None))
        elif kind is _DLPACK:
            recipe = _exchange_recipe(t, i in outputs)
            if recipe is None:
                return None
            recipes.append(recipe)
        elif not isinstance(kind, tuple):
            return None
        elif kind is _SIMPLE_KINDS[NDArray]:
            recipes.append(("ndarray output" if i in outputs else "ndarray", None))
        elif t in (int, bool, float):
            recipes.append(("as is", None))
        elif t is type(None):
            recipes.append(("zero", None))
        else:
            recipes.append(("getter", kind[2]))
    return fast_call.generate(plan.types, recipes, plan.pack, plan.codes)


def _python_trampoline(pyfunc: Callable, name: str) -> Callable:
    """The body of a Python PackedFunc's packed C entry point."""
    from . import callbacks  # callbacks.py imports this file

    def trampoline(args, codes, num_args, ret, ret_code) -> int:
        try:
            values = (EmberValue * num_args).from_address(args) if num_args else ()
            types = (c_int32 * num_args).from_address(codes) if num_args else ()
            converted = [
                callbacks._argument(values[i], types[i], i)  # pyright: ignore
                for i in range(num_args)
            ]
            callbacks._write_return(pyfunc(*converted), ret or 0, ret_code or 0)
            return 0
        except BaseException as error:  # noqa: BLE001 - nothing may unwind into C
            callbacks._state.error = (error, name)
            if ret and ret_code:
                message = f"'{name}' raised {type(error).__name__}: {error}"
                c_void_p.from_address(ret).value = callbacks._keep_string(message)
                c_int32.from_address(ret_code).value = _STR_CODE
            return -1

    return trampoline


def _call_python(self: "PackedFunc", args: tuple) -> Any:
    return self._pyfunc(*args)  # pyright: ignore[reportOptionalCall]


class PackedFunc:
    """A function called with packed arguments: native code or a Python callable.

    Native functions follow the packed C ABI (see the module docstring) and take:
    NDArray (its DLTensor*), C-contiguous numpy array (zero-copy DLTensor*), a
    tensor whose type has DLPack's C exchange API (torch; zero-copy, filled in
    C), any other DLPack tensor (zero-copy, via ``from_dlpack``), bool and int (int64),
    float (double), str (UTF-8, NUL-terminated), None, a PackedFunc (its
    ``handle``, type code 10) and a Module (``module_handle``, type code 9).
    They return None, an int, a float, a str, a PackedFunc or a Module; a
    non-zero return code raises ``EmberError``. Python callables (for
    ``register_func``) are called with the arguments as given.

    A native function's ``outputs`` are the positions it writes: a read-only
    array (``writeable=False``, e.g. over a read-only mmap, or a read-only DLPack
    tensor) passed there raises ``EmberError`` before the call.

    Example:
        >>> f = PackedFunc(lambda x: x + 1, name="inc")
        >>> f(41)
        42
    """

    __slots__ = (
        "name",
        "_call",
        "_cfunc",
        "_pyfunc",
        "_address",
        "_owner",
        "_outputs",
        "_output_set",
        "_output_names",
        "_trampoline",
        "__weakref__",
    )

    def __init__(
        self,
        func,
        name: str | None = None,
        owner=None,
        outputs: "Mapping[int, str | None] | Iterable[int] | None" = None,
    ):
        """Wrap a native function address or a Python callable.

        Args:
            func: the address (int) of a packed C function, or a callable.
            name: the name used in messages; defaults to the callable's name.
            owner: an object that must outlive the call target (e.g. the Module
                whose code holds the function); kept alive by this PackedFunc.
            outputs: the argument positions the function writes, or a mapping
                from those positions to the arguments' names (for messages).
                Only native functions check them.
        """
        self._owner = owner
        self._trampoline = None
        names = dict(outputs) if isinstance(outputs, Mapping) else {}
        indices = sorted({operator.index(i) for i in (outputs or ())})
        if any(i < 0 for i in indices):
            raise EmberValueError(f"output positions must be >= 0, got {indices}")
        self._outputs: tuple[int, ...] = tuple(indices)
        self._output_set: frozenset[int] = frozenset(indices)
        self._output_names: dict[int, str | None] = {i: names.get(i) for i in indices}
        if isinstance(func, int) and not isinstance(func, bool):
            if not func:
                raise EmberValueError("cannot wrap a null function pointer")
            self._address = func
            self._cfunc = _UNCHECKED_TYPE(func)
            self._pyfunc = None
            self._call = PackedFunc._dispatch
            self.name = name or f"<packed function at {func:#x}>"
        elif callable(func):
            self._address = None
            self._cfunc = None
            self._pyfunc = func
            self._call = _call_python
            self.name = name or getattr(func, "__name__", repr(func))
        else:
            raise EmberTypeError(
                f"expected a function address or a callable, got {func!r}"
            )

    @property
    def address(self) -> int | None:
        """The native function's address, or None for a Python callable."""
        return self._address

    @property
    def handle(self) -> int:
        """The address native code calls this function at (type code 10).

        A native function's own address; for a Python callable, a ctypes
        trampoline with the packed C signature, made on first use and alive as
        long as this PackedFunc. The trampoline converts the packed arguments to
        Python values (tensors as zero-copy NDArrays, type code 10 as a
        PackedFunc, 9 as the Module) and the result back; an exception returns
        -1 with its message in ``ret`` and is kept for the caller's PackedFunc
        to raise again (as ``__ember_call_packed`` does; see
        ``ember.runtime.callbacks``).
        """
        if self._address is not None or self._pyfunc is None:
            return self._address or 0
        if self._trampoline is None:
            trampoline = PACKED_FUNC_TYPE(_python_trampoline(self._pyfunc, self.name))
            address = ctypes.cast(trampoline, c_void_p).value or 0
            self._trampoline = (trampoline, address)
            _TRAMPOLINES[address] = self
        return self._trampoline[1]

    @property
    def outputs(self) -> tuple[int, ...]:
        """The positions of the arguments the function writes, ascending."""
        return self._outputs

    def __call__(self, *args) -> Any:
        # A native function's _call is the fast caller of the last signature it
        # saw (which checks it still applies), else _dispatch.
        return self._call(self, args)

    def _dispatch(self, args: tuple) -> Any:
        """Find the plan of ``args``' signature; switch to its fast caller."""
        try:
            plan = _plan_for(tuple(map(type, args)))
        except TypeError as e:
            raise _with_context(e, self.name) from None
        tensors = (_SIMPLE_KINDS[NDArray], _DLPACK)
        outputs = tuple(
            i for i in self._outputs if i < len(args) and plan.kinds[i] in tensors
        )
        try:
            fast = plan.fast[outputs]
        except KeyError:
            fast = plan.fast[outputs] = _fast_caller(plan, outputs)
        if fast is None:
            return self._slow(args, plan)
        self._call = fast
        return fast(self, args)

    def _slow(self, args: tuple, plan: _Plan | None = None) -> Any:
        """Any call, with every check in order and its proper error."""
        for i in self._outputs:  # ascending; other DLPack tensors: _pack_slow
            if i >= len(args):
                break
            arg = args[i]
            if isinstance(arg, NDArray):
                arg = arg._arr
            elif not isinstance(arg, np.ndarray):
                continue
            if not arg.flags.writeable:
                raise EmberError(self._read_only_message(i))
        keep = None  # memory the arguments point into, alive until the call returns
        try:
            if plan is None:
                plan = _plan_for(tuple(map(type, args)))
            values = None
            if plan.getters is not None:
                getters = plan.getters  # map(operator.call, ...) puzzles pyright
                try:
                    values = plan.pack(*map(operator.call, getters, args))  # pyright: ignore
                except _ARGUMENT_ERRORS:
                    pass  # packed again one by one, to say which argument failed
            if values is None:
                values, keep = _pack_slow(plan, args, self._output_set)
        except struct.error:
            raise OverflowError(f"{self.name}: {_overflow_message(args)}") from None
        except _ARGUMENT_ERRORS as e:
            raise _with_context(e, self.name) from None
        except _ReadOnlyOutput as e:
            raise EmberError(self._read_only_message(e.index)) from None
        try:
            area, code = fast_call.SPARE_RETS.pop()
        except IndexError:
            area, code = fast_call.new_ret()
        rc = self._cfunc(values, plan.codes, len(args), area, code)  # pyright: ignore
        del keep
        return self._finish(rc, area, code, args)

    def _finish(
        self,
        rc: int,
        area,
        code,
        args: tuple,
        give_back: Callable[[Any], None] | None = None,
        item: Any = None,
    ) -> Any:
        """The result of a call that returned ``rc``, its return area given back.

        The area goes back to ``fast_call.SPARE_RETS``, or, if ``give_back`` is
        given, as ``give_back(item)`` (a call area of ``fast_call.new_area``).
        """
        try:
            ret = _Ret.from_buffer(area)
            if rc:
                if rc == _CALLBACK_ERROR:
                    self._reraise_callback_error()
                raise EmberError(self._error_message(rc, ret, args))
            kind = ret.code
            if kind == _NULL:
                return None
            reader = _RETURN_READERS.get(kind)
            if reader is None:
                raise EmberError(f"{self.name}: unsupported return type code {kind}")
            if kind == _STR_CODE and not ret.value.v_handle:
                raise EmberError(f"{self.name}: returned a null string (type code 11)")
            return reader(ret.value)
        finally:
            code[0] = _NULL
            if give_back is None:
                fast_call.SPARE_RETS.append((area, code))
            else:
                give_back(item)

    def _reraise_callback_error(self) -> None:
        """Raise again what a registered function called by this one raised."""
        from .callbacks import take_error

        pending = take_error()
        if pending is not None:
            error, callback = pending
            error.add_note(
                f"raised in callback '{callback}', called by compiled function "
                f"'{self.name}'"
            )
            raise error

    def _read_only_message(self, index: int) -> str:
        name = self._output_names.get(index)
        label = f"argument {index} ({name})" if name else f"argument {index}"
        return f"{self.name}: {label} is an output but the array is read-only"

    def _error_message(self, rc: int, ret: _Ret, args: tuple) -> str:
        if ret.code == _STR_CODE and ret.value.v_handle:
            message = ctypes.string_at(ret.value.v_handle).decode(errors="replace")
        else:
            message = f"{self.name}: failed with return code {rc}"
        index = -2 - rc
        if rc == -1:
            count = len(args)
            message += f"; got {count} argument{'' if count == 1 else 's'}"
        elif 0 <= index < len(args):
            message += f"; got {describe(args[index])}"
        return message

    def __repr__(self) -> str:
        where = "python" if self._address is None else f"{self._address:#x}"
        return f"<PackedFunc {self.name} ({where})>"


_SIMPLE_KINDS[PackedFunc] = (
    "Q",
    TypeCode.PACKED_FUNC_HANDLE,
    operator.attrgetter("handle"),
)
