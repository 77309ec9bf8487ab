"""PackedFunc argument packing, returns and errors, against packed functions that
are native function pointers implemented in Python with ctypes."""

import ctypes
import gc
import mmap
import weakref

import numpy as np
import pytest

from ember import runtime as rt
from ember.runtime import dlpack
from ember.runtime.packed_func import PACKED_FUNC_TYPE, EmberValue, TypeCode, describe


class Recorder:
    """A native packed function that records what it receives and returns a fixed
    (return code, type code, value)."""

    def __init__(self, rc=0, ret_code=TypeCode.NULL, ret=None):
        self.calls = []
        self.rc, self.ret_code, self.ret = rc, ret_code, ret
        self._message = None
        self.native = PACKED_FUNC_TYPE(self._run)

    def _run(self, values, codes, n, ret, ret_code):
        codes = list((ctypes.c_int32 * n).from_address(codes)) if n else []
        args = (EmberValue * n).from_address(values) if n else []
        self.calls.append([_read(code, v) for code, v in zip(codes, args, strict=True)])
        out = EmberValue.from_address(ret)
        if self.ret_code == TypeCode.STR and self.ret is None:
            out.v_handle = None
        elif self.ret_code == TypeCode.STR:
            self._message = ctypes.create_string_buffer(self.ret.encode())
            out.v_handle = ctypes.addressof(self._message)
        elif self.ret_code == TypeCode.FLOAT:
            out.v_float64 = self.ret
        elif self.ret_code != TypeCode.NULL:
            out.v_int64 = self.ret
        ctypes.c_int32.from_address(ret_code).value = self.ret_code
        return self.rc

    def func(self, name="f", outputs=None) -> rt.PackedFunc:
        address = ctypes.cast(self.native, ctypes.c_void_p).value
        return rt.PackedFunc(address, name=name, owner=self, outputs=outputs)


def _read(code, value):
    if code == TypeCode.FLOAT:
        return (code, value.v_float64)
    if code == TypeCode.STR:
        return (code, ctypes.string_at(value.v_handle).decode())
    if code == TypeCode.DLTENSOR_HANDLE:
        t = dlpack.DLTensor.from_address(value.v_handle)
        shape = tuple(t.shape[: t.ndim])
        strides = tuple(t.strides[: t.ndim]) if t.strides else None
        dtype = dlpack.dl_to_dtype(t.dtype.code, t.dtype.bits, t.dtype.lanes).name
        data = t.data + t.byte_offset
        return (code, (data, t.device.device_type, dtype, shape, strides))
    return (code, value.v_int64)


def test_scalar_arguments():
    rec = Recorder()
    assert rec.func()(3, -(2**63), True, 2.5, "héllo", None, np.int32(7)) is None
    assert rec.calls == [
        [
            (0, 3),
            (0, -(2**63)),
            (0, 1),
            (2, 2.5),
            (11, "héllo"),
            (4, 0),
            (0, 7),
        ]
    ]
    rec.func()(np.float32(0.5), np.bool_(True), 2**63 - 1)
    assert rec.calls[1] == [(2, 0.5), (0, 1), (0, 2**63 - 1)]


def test_ndarray_argument_is_its_dltensor():
    rec = Recorder()
    a = rt.array(np.zeros((2, 3), np.float32))
    rec.func()(a, a)
    (code, (data, device, dtype, shape, strides)) = rec.calls[0][0]
    t = dlpack.DLTensor.from_address(a._dltensor_address())
    assert code == TypeCode.DLTENSOR_HANDLE
    assert (data, device, dtype, shape, strides) == (t.data, 1, "float32", (2, 3), None)


@pytest.mark.parametrize(
    "x",
    [
        np.zeros((4, 5), np.float64),
        np.zeros((), np.int8),
        np.zeros((0,), np.float32),
        np.arange(10, dtype=np.int32)[2:],
    ],
)
def test_numpy_argument_is_zero_copy(x):
    rec = Recorder()
    rec.func()(x)
    (code, (data, device, dtype, shape, strides)) = rec.calls[0][0]
    assert code == TypeCode.DLTENSOR_HANDLE
    assert (device, dtype, shape) == (1, x.dtype.name, x.shape)
    if x.size:
        assert data == x.__array_interface__["data"][0]
    assert dlpack.is_compact(shape, strides)


def test_read_only_numpy_argument():
    x = np.arange(3.0)
    x.flags.writeable = False
    rec = Recorder()
    rec.func()(x)
    assert rec.calls[0][0][1][0] == x.__array_interface__["data"][0]


class Foreign:
    """A DLPack tensor that is neither a numpy array nor an NDArray."""

    def __init__(self, array):
        self.array = array

    def __dlpack__(self, **kwargs):
        return self.array.__dlpack__(**kwargs)

    def __dlpack_device__(self):
        return self.array.__dlpack_device__()


def read_only(array: np.ndarray) -> np.ndarray:
    array.flags.writeable = False
    return array


def test_other_dlpack_tensors_are_zero_copy():
    x = np.arange(4, dtype=np.int64)
    rec = Recorder()
    rec.func()(Foreign(x))
    assert rec.calls[0][0][1][0] == x.__array_interface__["data"][0]


@pytest.mark.parametrize(
    "make",
    [
        lambda x: x,
        lambda x: rt.from_dlpack(x),  # an NDArray over read-only memory
        lambda x: Foreign(x),  # opened only while packing
    ],
    ids=["numpy", "ndarray", "dlpack"],
)
def test_read_only_output_is_refused_before_the_call(make):
    rec = Recorder()
    f = rec.func("f", outputs={2: "C"})
    assert f.outputs == (2,)
    a, b = np.ones(4, np.float32), np.ones(4, np.float32)
    out = read_only(np.zeros(4, np.float32))
    with pytest.raises(rt.EmberError) as info:
        f(a, b, make(out))
    assert str(info.value) == (
        "f: argument 2 (C) is an output but the array is read-only"
    )
    # a read-only input is fine, and so is a writeable output
    f(make(read_only(np.ones(4, np.float32))), b, make(np.zeros(4, np.float32)))
    assert len(rec.calls) == 1


def test_output_positions_without_names():
    rec = Recorder()
    f = rec.func("g", outputs=[1, 0])
    assert f.outputs == (0, 1)
    ro = read_only(np.zeros(2))
    with pytest.raises(rt.EmberError, match=r"^g: argument 1 is an output but"):
        f(rt.empty(2), ro)
    f(rt.empty(2))  # fewer arguments than outputs: the callee reports the count
    f(ro.copy(), 3)  # a scalar in an output position: the callee rejects it
    assert len(rec.calls) == 2
    assert rec.func("h").outputs == ()
    with pytest.raises(ValueError, match="output positions must be >= 0"):
        rec.func("h", outputs=[-1])


def test_output_over_read_only_mmap_is_refused(tmp_path):
    path = tmp_path / "zeros.bin"
    path.write_bytes(bytes(64))
    with (
        open(path, "rb") as file,
        mmap.mmap(file.fileno(), 0, access=mmap.ACCESS_READ) as mapped,
    ):
        out = np.frombuffer(mapped, np.float32)
        rec = Recorder()
        with pytest.raises(rt.EmberError, match="argument 1 .*read-only"):
            rec.func("f", outputs={1: "C"})(np.ones(16, np.float32), out)
        assert rec.calls == []
        del out


def test_strided_numpy_argument_is_rejected_before_the_call():
    rec = Recorder()
    x = np.zeros((4, 4), np.float32)
    with pytest.raises(ValueError, match=r"^f: argument 1: expected a C-contiguous"):
        rec.func()(1, x[:, ::2])
    with pytest.raises(ValueError, match="argument 0: expected a C-contiguous"):
        rec.func()(x.T)
    assert rec.calls == []


def test_bad_argument_types_name_the_argument():
    rec = Recorder()
    with pytest.raises(TypeError, match=r"^f: argument 2: cannot pass a list"):
        rec.func()(1, 2, [3])
    with pytest.raises(BufferError, match="argument 0: .*DLPack only supports"):
        rec.func()(np.array(["a"]))
    with pytest.raises(OverflowError, match=r"argument 1: 18446744073709551616 does"):
        rec.func()(1, 2**64)
    assert rec.calls == []


@pytest.mark.parametrize(
    "code, value, expected",
    [
        (TypeCode.INT, -5, -5),
        (TypeCode.UINT, -1, 2**64 - 1),
        (TypeCode.FLOAT, 1.25, 1.25),
        (TypeCode.STR, "ok", "ok"),
        (TypeCode.NULL, None, None),
        (TypeCode.HANDLE, 4096, 4096),
    ],
)
def test_return_values(code, value, expected):
    assert Recorder(ret_code=code, ret=value).func()() == expected


def test_null_string_return_is_an_error():
    with pytest.raises(rt.EmberError, match="^f: returned a null string"):
        Recorder(ret_code=TypeCode.STR, ret=None).func()()


def test_unsupported_return_code():
    with pytest.raises(rt.EmberError, match="unsupported return type code 7"):
        Recorder(ret_code=TypeCode.DLTENSOR_HANDLE, ret=0).func()()


def test_argument_error_appends_what_was_passed():
    rec = Recorder(
        rc=-3, ret_code=TypeCode.STR, ret="k: argument 1 (B): expected shape (1024,)"
    )
    with pytest.raises(rt.EmberError) as info:
        rec.func("k")(rt.empty(1024), np.zeros(64, np.float32))
    assert str(info.value) == (
        "k: argument 1 (B): expected shape (1024,); got float32 tensor of shape (64,)"
    )
    with pytest.raises(rt.EmberError, match=r"\(1024,\); got int$"):
        rec.func("k")(None, 3)


def test_argument_count_error_appends_the_count():
    rec = Recorder(rc=-1, ret_code=TypeCode.STR, ret="k: expected 3 arguments")
    with pytest.raises(
        rt.EmberError, match="^k: expected 3 arguments; got 2 arguments$"
    ):
        rec.func("k")(1, 2)
    with pytest.raises(rt.EmberError, match="; got 1 argument$"):
        rec.func("k")(1)


def test_error_without_message():
    with pytest.raises(rt.EmberError, match="^k: failed with return code -42$"):
        Recorder(rc=-42).func("k")(1)
    # an argument index past the arguments adds nothing
    with pytest.raises(rt.EmberError, match="^k: failed with return code -9$"):
        Recorder(rc=-9).func("k")(1)
    assert issubclass(rt.EmberError, RuntimeError)


def test_describe():
    assert describe(rt.empty((2, 3), "int8")) == "int8 tensor of shape (2, 3)"
    assert describe(1.0) == "float"
    assert describe(None) == "None"
    assert describe("s") == "str"


def test_python_callable():
    f = rt.PackedFunc(lambda *args: args, name="echo")
    x = np.zeros(3)
    assert f(1, x)[1] is x
    assert f.address is None
    assert "echo (python)" in repr(f)
    assert rt.PackedFunc(len)("abc") == 3
    with pytest.raises(TypeError, match="expected a function address or a callable"):
        rt.PackedFunc("not callable")
    with pytest.raises(ValueError, match="null function pointer"):
        rt.PackedFunc(0)


def test_packed_func_keeps_its_owner_alive():
    rec = Recorder()
    f = rec.func()
    alive = weakref.ref(rec)
    del rec
    gc.collect()
    assert alive() is not None
    f(1)
    del f
    gc.collect()
    assert alive() is None


def test_plans_are_cached_per_signature():
    rec = Recorder()
    f = rec.func()
    a = rt.empty(2)
    for _ in range(3):
        f(a, 1, 2.0)
        f(a, 1.0, 2)
    assert rec.calls[0][1:] == [(0, 1), (2, 2.0)]
    assert rec.calls[1][1:] == [(2, 1.0), (0, 2)]
