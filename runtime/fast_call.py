"""Fast callers: the Python a PackedFunc runs for an argument signature it knows.

For each signature (tuple of argument types) a native PackedFunc calls with,
``generate`` writes a small function, as Python source, and compiles it: guards
(the argument count and each argument's exact type; else back to the
PackedFunc's ``_dispatch``), the checks the common case needs (else the general
path, ``_slow``, which raises the proper error), one ``struct`` call packing the
arguments, and the native call with a return area taken from a pool. For three
NDArrays that is ~0.75 us a call against 0.24 us for the bare ctypes call.

Tensors whose type offers DLPack's C exchange API (``__dlpack_c_exchange_api__``,
torch's tensors) are filled, one C call each, into DLTensors that live in the
call's pooled area next to its return value (see ``new_area``).
"""

import re
import struct
import sys
from collections.abc import Callable, Sequence
from ctypes import addressof, c_int32, c_int64, c_void_p
from typing import Any, Literal, NamedTuple

import numpy as np

from .dlpack import (
    CPU_DEVICE_WORD,
    FILL_TAKES_ADDRESS,
    capsule_pointer,
    dltensor_is_compact,
)

NULL = 4
"""The NULL type code (``TypeCode.NULL``) a pooled return area's code reads."""

RetArea = c_int64 * 2
"""A call's return value and type code (a ``_Ret``'s 16 bytes) as a ctypes
array, which ctypes passes as a pointer without ``byref``."""
CodeSlot = c_int32 * 1
"""A view of the type code, 8 bytes into a RetArea."""

# Spare return areas, each (area, code slot) with the code slot reading NULL.
# A call pops one and puts it back, so calls share a few areas instead of
# allocating one each; list.pop and list.append are atomic under the GIL, so
# concurrent calls from several threads (the GIL is released while native code
# runs) and calls nested inside callbacks each get their own.
SPARE_RETS: list[tuple[Any, Any]] = []


def new_ret() -> tuple[Any, Any]:
    """A new (area, code slot) pair whose code reads NULL."""
    area = RetArea()
    code = CodeSlot.from_buffer(area, 8)
    code[0] = NULL
    return area, code


DLTENSOR_SLOTS = 6
"""A DLTensor's 48 bytes in int64 slots: data, device, ndim and dtype, shape,
strides, byte_offset."""

# Spare call areas of signatures with exchange-API tensors, by their number of
# such tensors; each entry is what ``new_area`` returns. Shared and thread-safe
# as SPARE_RETS is.
SPARE_AREAS: dict[int, list[tuple[Any, ...]]] = {}


def new_area(count: int) -> tuple[Any, ...]:
    """A call area for ``count`` filled DLTensors: ``(area, code, values, *addresses)``.

    ``area`` is one ctypes int64 array: the return value (slot 0), its type
    code (slot 1, reading NULL) and ``count`` DLTensors from slot 2 on, 48
    bytes each; ``code`` views the type code; ``values`` is the argument array
    of a signature of ``count`` such tensors and nothing else (their addresses,
    packed once); then the address of each DLTensor.
    """
    area = (c_int64 * (2 + DLTENSOR_SLOTS * count))()
    code = CodeSlot.from_buffer(area, 8)
    code[0] = NULL
    base = addressof(area) + 16
    addresses = [base + 48 * j for j in range(count)]
    return (area, code, struct.pack(f"@{count}Q", *addresses), *addresses)


def metadata_reader(count: int) -> Callable[[Any], tuple[int, ...]]:
    """``read(area)``: each filled DLTensor's device and dtype, as ints.

    Returns ``(device 0, dtype 0, device 1, ...)``: the ``DLDevice`` as one
    native int64 (``dlpack.CPU_DEVICE_WORD`` for cpu(0)) and the
    ``DLDataType`` as one native uint32 (``dlpack.dtype_word``), skipping
    ndim. One ``struct`` call reads them all (~100 ns for three tensors against
    ~75 ns a tensor through a memoryview).
    """
    # the first device is 24 bytes in: the return area (16) and data (8)
    tensor = "q4xI"  # device, ndim (skipped), dtype: 16 bytes; 32 more to the next
    return struct.Struct("@24x" + "32x".join([tensor] * count)).unpack_from


def metadata_checker(
    dtypes: Sequence[frozenset[int]], known: set[tuple[int, ...]]
) -> Callable[[tuple[int, ...]], bool]:
    """``check(metadata)``: whether every tensor is on cpu(0) with a dtype taken.

    Args:
        dtypes: the dtype words taken, per filled tensor.
        known: metadata already accepted; an accepted one is added (the set is
            cleared past 256 entries), so a caller checks each combination of
            devices and dtypes once.
    """

    def check(metadata: tuple[int, ...]) -> bool:
        for j, taken in enumerate(dtypes):
            if metadata[2 * j] != CPU_DEVICE_WORD or metadata[2 * j + 1] not in taken:
                return False
        if len(known) >= 256:
            known.clear()
        known.add(metadata)
        return True

    return check


class Exchange(NamedTuple):
    """How a fast caller passes one tensor through the DLPack exchange API."""

    fill: Callable[[Any, int], int]
    """``dltensor_from_py_object_no_sync`` (see ``dlpack.exchange_filler``)."""
    refuse: str | None
    """A Python expression over the argument ``{a}``, true when the tensor must
    take the general path (checked before filling), or None."""
    compact: bool
    """Whether ``refuse`` already proves the tensor compact; if not, the filled
    DLTensor's strides are checked (slowly, in Python)."""
    dtypes: frozenset[int]
    """The ``dlpack.dtype_word`` values the fast path takes; others go to the
    general path."""


def _capsule_pointer_offset() -> int | None:
    """Where a capsule object holds its pointer, if reading it there is right.

    ``PyCapsule_GetPointer`` is a ctypes foreign call (~200 ns); reading the
    field, which follows the object header in CPython's ``PyCapsule``, costs
    ~120 ns. The offset is checked on a real numpy capsule; anywhere it does not
    hold (another layout, another interpreter) calls use the API.
    """
    if sys.implementation.name != "cpython":
        return None
    offset = object.__basicsize__
    probe = np.zeros(1).__dlpack__()
    if c_void_p.from_address(id(probe) + offset).value != capsule_pointer(
        probe, b"dltensor"
    ):
        return None
    return offset


CAPSULE_POINTER_AT = _capsule_pointer_offset()
"""The offset of a capsule's pointer in the capsule object, or None: use the API."""
CAPSULE_POINTER = (
    f"peek(id(c{{i}}) + {CAPSULE_POINTER_AT}).value"
    if CAPSULE_POINTER_AT is not None
    else 'capsule_pointer(c{i}, b"dltensor")'
)
"""How a fast caller reads numpy capsule ``c{i}``'s DLTensor address."""

# Each argument contributes a guard, checks and an expression packed into the
# argument array. Numpy arrays go through numpy's C DLPack export; their
# capsules (c0, c1, ...) are locals, alive until the native call has returned,
# then freed unconsumed.
_TEMPLATE = """\
def {name}(self, args):
    if len(args) != {n}:
        return self._dispatch(args)
    {unpack}
    if {guards}:
        return self._dispatch(args)
    {checks}
    try:
        {capsules}
        values = pack({values})
    except Exception:  # the general path raises it with its context
        return self._slow(args)
    try:
        area, code = pop_ret()
    except IndexError:
        area, code = new_ret()
    rc = self._cfunc(values, codes, {n}, area, code)
    if rc or code[0] != {null}:
        return self._finish(rc, area, code, args)
    push_ret((area, code))
    return None
"""

# Signatures with exchange-API tensors take a call area (return value and
# DLTensors) from SPARE_AREAS instead; the fills and their checks raise
# Fallback, which sends the call to the general path.
_EXCHANGE_TEMPLATE = """\
def {name}(self, args):
    if len(args) != {n}:
        return self._dispatch(args)
    {unpack}
    if {guards}:
        return self._dispatch(args)
    {checks}
    try:
        item = pop_area()
    except IndexError:
        item = new_area({count})
    area, code, {packed}, {tensors} = item
    try:
        {capsules}
        if (
            {fills}
            or (meta := read_meta(area)) not in known and not check_meta(meta)
        ):
            raise Fallback
        {pack}
    except Exception:  # the general path raises it with its context
        push_area(item)
        return self._slow(args)
    rc = self._cfunc(values, codes, {n}, area, code)
    if rc or code[0] != {null}:
        return self._finish(rc, area, code, args, push_area, item)
    push_area(item)
    return None
"""


class Fallback(Exception):
    """A filled tensor the fast path does not take: the general path decides."""


Recipe = tuple[
    Literal[
        "numpy", "ndarray", "ndarray output", "as is", "zero", "getter", "exchange"
    ],
    Callable[[Any], int | float] | Exchange | None,
]
"""How one argument is packed: a C-contiguous numpy array's DLTensor, an
NDArray's handle (an output's array must be writeable), the value itself (int,
bool, float), 0 (None), the value a getter returns, or a DLTensor filled
through the exchange API."""


def generate(
    types: Sequence[type], recipes: Sequence[Recipe], pack: Callable, codes: bytes
) -> Callable:
    """Compile the fast caller of one signature.

    Args:
        types: the exact type of each argument.
        recipes: how each argument is packed.
        pack: ``struct.Struct(...).pack`` of the argument array.
        codes: the packed int32 type codes.

    Returns:
        ``caller(packed_func, args)``; its source is ``caller.source``.
    """
    n = len(types)
    names = [f"a{i}" for i in range(n)]
    namespace: dict[str, Any] = {
        "pack": pack,
        "codes": codes,
        "pop_ret": SPARE_RETS.pop,
        "push_ret": SPARE_RETS.append,
        "new_ret": new_ret,
        "capsule_pointer": capsule_pointer,
        "peek": c_void_p.from_address,
    }
    checks, capsules, values, fills, dtypes, refusals = [], [], [], [], [], []
    for i, (t, (how, getter), a) in enumerate(zip(types, recipes, names, strict=True)):
        namespace[f"t{i}"] = t
        if how == "exchange":
            assert isinstance(getter, Exchange)
            j = len(fills)
            namespace[f"f{i}"] = getter.fill
            dtypes.append(getter.dtypes)
            if getter.refuse is not None:
                refusals.append(getter.refuse.format(a=a))
            obj = f"id({a})" if FILL_TAKES_ADDRESS else a
            fill = f"f{i}({obj}, x{j})"
            if not getter.compact:
                fill += f" or not compact(x{j})"
            fills.append(fill)
            values.append(f"x{j}")
            continue
        if how == "numpy":
            checks.append(f"if not {a}.flags.c_contiguous: return self._slow(args)")
            capsules.append(f"c{i} = {a}.__dlpack__()")
            values.append(CAPSULE_POINTER.format(i=i))
        elif how in ("ndarray", "ndarray output"):
            if how == "ndarray output":
                checks.append(
                    f"if not {a}._arr.flags.writeable: return self._slow(args)"
                )
            values.append(f"{a}._handle")
        elif how == "as is":
            values.append(a)
        elif how == "zero":
            values.append("0")
        else:
            namespace[f"g{i}"] = getter
            values.append(f"g{i}({a})")
    name = re.sub(r"\W", "_", "call_" + "_".join(t.__name__ for t in types))
    if not name.isidentifier():
        name = "call"
    if refusals:  # one test for all: ~10 ns a tensor less than one each
        checks.append(f"if {' or '.join(refusals)}: return self._slow(args)")
    if fills:
        count = len(fills)
        areas = SPARE_AREAS.setdefault(count, [])
        known: set[tuple[int, ...]] = set()
        namespace.update(
            pop_area=areas.pop,
            push_area=areas.append,
            new_area=new_area,
            Fallback=Fallback,
            compact=dltensor_is_compact,
            id=id,
            read_meta=metadata_reader(count),
            known=known,
            check_meta=metadata_checker(dtypes, known),
        )
    source = (_EXCHANGE_TEMPLATE if fills else _TEMPLATE).format(
        name=name,
        n=n,
        unpack=f"({', '.join(names)},) = args" if n else "",
        guards=" or ".join(f"type({a}) is not t{i}" for i, a in enumerate(names))
        or "False",
        checks="\n    ".join(checks),
        capsules="\n        ".join(capsules),
        values=", ".join(values),
        null=NULL,
        count=len(fills),
        tensors=", ".join(f"x{j}" for j in range(len(fills))),
        fills="\n            or ".join(fills),  # inside parentheses
        # an argument array packed once per area, if the tensors are all there is
        packed="values" if len(fills) == n else "_",
        pack="" if len(fills) == n else f"values = pack({', '.join(values)})",
    )
    exec(compile(source, f"<ember fast call {name}>", "exec"), namespace)
    caller = namespace[name]
    caller.source = source
    return caller
