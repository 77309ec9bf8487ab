"""PackedFunc argument packing, returns and errors, against packed functions that
are native function pointers implemented in Python with ctypes."""

import ctypes
import gc
import mmap
import weakref

import numpy as np
import pytest

from ember import runtime as rt
from ember.runtime import dlpack, fast_call, packed_func
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


# --- the fast path ---------------------------------------------------------


def general_path_forbidden(monkeypatch):
    """Make the general path (and the signature lookup) fail if taken."""

    def fail(*_):
        raise AssertionError("the general path was taken")

    monkeypatch.setattr(rt.PackedFunc, "_slow", fail)
    monkeypatch.setattr(rt.PackedFunc, "_dispatch", fail)


def test_fast_path_is_taken_once_the_signature_is_known(monkeypatch):
    rec = Recorder()
    f = rec.func(outputs={2: "C"})
    a, c = rt.empty(4), rt.empty(4)
    x = np.arange(4, dtype=np.float32)
    f(a, x, c, 3, 2.5, None, True, np.int64(5))
    assert f._call.__name__ == (
        "call_NDArray_ndarray_NDArray_int_float_NoneType_bool_int64"
    )
    general_path_forbidden(monkeypatch)
    for _ in range(3):
        f(a, x, c, 3, 2.5, None, True, np.int64(5))
    assert len(rec.calls) == 4
    for call in rec.calls:
        data = dlpack.DLTensor.from_address(a._handle).data
        assert call[0] == (7, (data, 1, "float32", (4,), None))
        assert call[1][1][0] == x.__array_interface__["data"][0]
        assert call[3:] == [(0, 3), (2, 2.5), (4, 0), (0, 1), (0, 5)]


def test_fast_calls_keep_nothing(monkeypatch):
    import tracemalloc

    native = PACKED_FUNC_TYPE(lambda *_: 0)
    address = ctypes.cast(native, ctypes.c_void_p).value
    # one signature each: switching signatures goes through _dispatch
    f, g = rt.PackedFunc(address, outputs=[2]), rt.PackedFunc(address, outputs=[2])
    a, b, c = rt.empty(16), rt.empty(16), rt.empty(16)
    x = np.zeros(16, np.float32)
    for _ in range(10):  # warm up: the fast callers exist, the spare areas too
        f(a, b, c)
        g(x, x, c)
    spares = len(fast_call.SPARE_RETS)
    general_path_forbidden(monkeypatch)
    tracemalloc.start()
    try:
        before, _ = tracemalloc.get_traced_memory()
        for _ in range(2000):
            f(a, b, c)
            g(x, x, c)
        after, _ = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert after - before < 1024  # nothing per call stays allocated
    assert len(fast_call.SPARE_RETS) == spares  # every return area came back


def test_fast_path_keeps_every_check():
    rec = Recorder()
    f = rec.func("f", outputs={1: "C"})
    x, out = np.ones(4, np.float32), np.zeros(4, np.float32)
    nd_out = rt.empty(4)
    f(x, out)
    f(x, nd_out)
    with pytest.raises(rt.EmberError, match=r"argument 1 \(C\) is an output but"):
        f(x, read_only(np.zeros(4, np.float32)))
    with pytest.raises(rt.EmberError, match=r"argument 1 \(C\) is an output but"):
        f(x, rt.from_dlpack(read_only(np.zeros(4, np.float32))))
    with pytest.raises(ValueError, match=r"^f: argument 0: expected a C-contiguous"):
        f(np.ones(8, np.float32)[::2], out)
    f(read_only(np.ones(4, np.float32)), out)  # a read-only input is fine
    f(1, 2)
    with pytest.raises(OverflowError, match="argument 1: 9223372036854775808 does"):
        f(1, 2**63)
    assert len(rec.calls) == 4


def test_signatures_can_alternate():
    rec = Recorder()
    f = rec.func()
    a = rt.empty(2)
    for _ in range(3):
        f(a, 1)
        f(1.5, a)
        f()
    assert [len(c) for c in rec.calls] == [2, 2, 0] * 3
    assert rec.calls[-2][0] == (2, 1.5) and rec.calls[-3][1] == (0, 1)


def test_fast_caller_with_the_capsule_api(monkeypatch):
    """Where a capsule's pointer cannot be read at its offset, the API is used."""
    monkeypatch.setattr(
        fast_call, "CAPSULE_POINTER", 'capsule_pointer(c{i}, b"dltensor")'
    )
    plan = packed_func._Plan((np.ndarray, np.ndarray))
    caller = packed_func._fast_caller(plan, ())
    assert caller is not None and "peek" not in caller.source
    rec = Recorder()
    x, y = np.arange(3.0), np.arange(5, dtype=np.int8)
    caller(rec.func(), (x, y))
    assert [c[1][0] for c in rec.calls[0]] == [
        x.__array_interface__["data"][0],
        y.__array_interface__["data"][0],
    ]
    assert fast_call.CAPSULE_POINTER_AT == 16  # CPython: the offset is used


def test_nested_calls_get_their_own_return_areas():
    inner = Recorder(ret_code=TypeCode.INT, ret=7)
    inner_f = inner.func("inner")
    seen = []

    class Outer(Recorder):
        def _run(self, *args):
            seen.append(inner_f(rt.empty(1)))
            return super()._run(*args)

    outer = Outer(ret_code=TypeCode.FLOAT, ret=0.25)
    f = outer.func("outer")
    assert [f(rt.empty(1)) for _ in range(3)] == [0.25] * 3
    assert seen == [7] * 3


def test_threads_call_one_function_at_once():
    import threading

    import ember
    from ember import te

    A = te.placeholder((64,), name="A")
    B = te.placeholder((64,), name="B")
    C = te.compute((64,), lambda i: A[i] + B[i], name="C")
    f = ember.build(te.create_schedule(C.op), [A, B, C], name="vecadd")["vecadd"]
    errors = []

    def work(seed: int):
        a = np.full(64, seed, np.float32)
        b, c = rt.array(np.arange(64, dtype=np.float32)), np.empty(64, np.float32)
        for _ in range(500):
            f(a, b, c)
            if not np.array_equal(c, a + b.numpy()):
                errors.append(seed)
                return

    threads = [threading.Thread(target=work, args=(s,)) for s in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []


# --- PackedFunc and Module arguments (type codes 10 and 9) ------------------


def call_native(address: int, *values: tuple[int, object]):
    """Call the packed C function at ``address`` with (type code, value) pairs;
    returns (return code, (ret type code, ret value))."""
    n = len(values)
    args = (EmberValue * max(n, 1))()
    codes = (ctypes.c_int32 * max(n, 1))()
    keep = []
    for i, (code, value) in enumerate(values):
        codes[i] = code
        if code == TypeCode.FLOAT:
            args[i].v_float64 = value
        elif code == TypeCode.STR:
            keep.append(ctypes.create_string_buffer(value.encode()))
            args[i].v_handle = ctypes.addressof(keep[-1])
        else:
            args[i].v_int64 = value
    ret, ret_code = EmberValue(), ctypes.c_int32(TypeCode.NULL)
    fn = PACKED_FUNC_TYPE(address)
    rc = fn(
        ctypes.addressof(args),
        ctypes.addressof(codes),
        n,
        ctypes.addressof(ret),
        ctypes.addressof(ret_code),
    )
    return rc, _read(ret_code.value, ret) if ret_code.value != TypeCode.NULL else None


def test_python_packed_func_trampoline_round_trip():
    got = []

    def body(*args):
        got.append(args)
        return "done"

    f = rt.PackedFunc(body, name="body")
    x = rt.array(np.arange(3, dtype=np.float32))
    other = rt.PackedFunc(len, name="len")
    mod = rt.Module()
    rc, ret = call_native(
        f.handle,
        (TypeCode.INT, -4),
        (TypeCode.FLOAT, 0.5),
        (TypeCode.STR, "hé"),
        (TypeCode.NULL, 0),
        (TypeCode.DLTENSOR_HANDLE, x._handle),
        (TypeCode.PACKED_FUNC_HANDLE, other.handle),
        (TypeCode.MODULE_HANDLE, packed_func.module_handle(mod)),
    )
    assert (rc, ret) == (0, (TypeCode.STR, "done"))
    (args,) = got
    assert args[:4] == (-4, 0.5, "hé", None)
    assert isinstance(args[4], rt.NDArray) and args[4].numpy().tolist() == [0, 1, 2]
    assert args[5] is other and args[6] is mod
    assert f.handle == f.handle  # made once, kept by f


def test_python_packed_func_trampoline_reports_exceptions():
    from ember.runtime import callbacks

    def boom(x):
        raise KeyError(x)

    f = rt.PackedFunc(boom, name="boom")
    rc, ret = call_native(f.handle, (TypeCode.INT, 3))
    assert rc == -1
    assert ret == (TypeCode.STR, "'boom' raised KeyError: 3")
    error, name = callbacks.take_error()
    assert isinstance(error, KeyError) and name == "boom"


def test_packed_funcs_and_modules_are_passed_as_handles():
    rec = Recorder()
    native = Recorder().func("native")
    python = rt.PackedFunc(abs, name="abs")
    mod = rt.Module()
    rec.func()(native, python, mod)
    assert rec.calls[0] == [
        (TypeCode.PACKED_FUNC_HANDLE, native.address),
        (TypeCode.PACKED_FUNC_HANDLE, python.handle),
        (TypeCode.MODULE_HANDLE, id(mod)),
    ]
    assert packed_func.packed_func_from_handle(python.handle) is python
    assert packed_func.packed_func_from_handle(native.address).address == (
        native.address
    )
    assert packed_func.module_from_handle(id(mod)) is mod
    handle = id(mod)
    del mod
    gc.collect()
    with pytest.raises(rt.EmberError, match="no living module has handle"):
        packed_func.module_from_handle(handle)


def test_native_code_calls_a_packed_func_it_is_given():
    """A native function receiving a PackedFunc (type code 10) calls it."""

    def run(values, codes, n, ret, ret_code):
        handle = EmberValue.from_address(values).v_handle
        rc, result = call_native(handle, (TypeCode.INT, 20), (TypeCode.INT, 22))
        EmberValue.from_address(ret).v_int64 = result[1]
        ctypes.c_int32.from_address(ret_code).value = TypeCode.INT
        return rc

    native = PACKED_FUNC_TYPE(run)
    apply = rt.PackedFunc(ctypes.cast(native, ctypes.c_void_p).value, name="apply")
    assert apply(rt.PackedFunc(lambda a, b: a + b, name="add")) == 42


def test_packed_func_and_module_return_values():
    python = rt.PackedFunc(abs, name="abs")
    mod = rt.Module()
    got = Recorder(ret_code=TypeCode.PACKED_FUNC_HANDLE, ret=python.handle).func()()
    assert got is python
    handle = packed_func.module_handle(mod)
    assert Recorder(ret_code=TypeCode.MODULE_HANDLE, ret=handle).func()() is mod


def test_fast_callers_of_oddly_named_types():
    odd = type("odd-array é", (rt.NDArray,), {})
    a = odd(np.arange(3, dtype=np.float32))
    rec = Recorder()
    f = rec.func()
    f(a, a)
    f(a, a)
    assert f._call.__name__ == "call_odd_array_é_odd_array_é"
    assert rec.calls[1][0][1][3] == (3,)


def test_fast_path_errors_keep_their_context():
    class Flaky(float):
        """A float whose conversion fails once the signature is known."""

        fail = False

        def __float__(self):
            if Flaky.fail:
                raise TypeError("no float today")
            return 0.5

    rec = Recorder()
    f = rec.func()
    f(Flaky(1.0))
    assert rec.calls == [[(TypeCode.FLOAT, 0.5)]]
    Flaky.fail = True
    with pytest.raises(TypeError, match=r"^f: argument 0: no float today$"):
        f(Flaky(1.0))


def test_fast_call_agrees_with_the_abi():
    assert fast_call.NULL == TypeCode.NULL
    assert ctypes.sizeof(fast_call.RetArea) == ctypes.sizeof(packed_func._Ret)
    area, code = fast_call.new_ret()
    ret = packed_func._Ret.from_buffer(area)
    assert ret.code == TypeCode.NULL
    code[0] = TypeCode.STR
    assert ret.code == TypeCode.STR
