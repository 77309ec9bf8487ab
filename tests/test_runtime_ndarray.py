"""NDArray, Device and zero-copy DLPack exchange with numpy (and torch if present)."""

import ctypes
import gc
import sys

import numpy as np
import pytest

from ember import runtime as rt
from ember.runtime import dlpack

DTYPES = [
    "float16",
    "float32",
    "float64",
    "int8",
    "int16",
    "int32",
    "int64",
    "uint8",
    "uint16",
    "uint32",
    "uint64",
    "bool",
]


new_capsule = ctypes.PYFUNCTYPE(
    ctypes.py_object, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_void_p
)(("PyCapsule_New", ctypes.pythonapi))
CAPSULE_NAME = ctypes.create_string_buffer(b"dltensor")  # capsules keep the pointer


def data_ptr(a) -> int:
    """The data address of a numpy array or an NDArray."""
    if isinstance(a, rt.NDArray):
        tensor = dlpack.DLTensor.from_address(a._dltensor_address())
        return tensor.data + tensor.byte_offset
    return a.__array_interface__["data"][0]


def test_device():
    assert rt.cpu() == rt.cpu(0) == rt.device("cpu", 0) == rt.device(1)
    assert rt.device("llvm") == rt.cpu()
    assert rt.cpu(1) != rt.cpu(0)
    assert repr(rt.cpu()) == "cpu(0)"
    assert repr(rt.device("cuda", 2)) == "cuda(2)"
    assert len({rt.cpu(), rt.device("cpu")}) == 1
    with pytest.raises(ValueError, match="unknown device 'tpu'"):
        rt.device("tpu")


@pytest.mark.parametrize("dtype", DTYPES)
def test_numpy_round_trip(dtype):
    x = (np.arange(24) % 7).astype(dtype).reshape(2, 3, 4)
    a = rt.array(x)
    assert a.shape == (2, 3, 4)
    assert a.dtype == dtype
    assert a.ndim == 3
    assert a.device == rt.cpu(0)
    np.testing.assert_array_equal(a.numpy(), x)
    assert a.numpy().dtype == np.dtype(dtype)


def test_array_copies_and_numpy_copies():
    x = np.arange(4, dtype=np.float32)
    a = rt.array(x)
    assert data_ptr(a) != data_ptr(x)
    x[0] = 100
    assert a.numpy()[0] == 0
    view = a.numpy()
    view[1] = 100
    assert a.numpy()[1] == 1


def test_array_from_list_and_dtype():
    assert rt.array([1.0, 2.0]).dtype == "float64"
    assert rt.array([[1, 2], [3, 4]], dtype="int8").numpy().tolist() == [[1, 2], [3, 4]]
    assert rt.array(np.arange(6.0)[::2]).numpy().tolist() == [0.0, 2.0, 4.0]
    assert rt.array(rt.array([3.0])).numpy().tolist() == [3.0]


@pytest.mark.parametrize("shape", [(), (0,), (1,), (3, 5), (2, 3, 4, 5), 7])
def test_empty_is_aligned(shape):
    a = rt.empty(shape, "float32")
    assert a.shape == ((shape,) if isinstance(shape, int) else shape)
    assert data_ptr(a) % rt.ndarray.ALIGNMENT == 0
    assert rt.ndarray.ALIGNMENT == 64


def test_empty_rejects_bad_arguments():
    with pytest.raises(ValueError, match="non-negative"):
        rt.empty((2, -1))
    with pytest.raises(TypeError, match="unsupported dtype"):
        rt.empty((2,), "object")
    with pytest.raises(
        rt.EmberError, match=r"hexagon\(0\): ember has no runtime for hexagon devices"
    ):
        rt.empty((2,), device=rt.device("hexagon"))


def test_dltensor_describes_the_array():
    a = rt.empty((2, 3), "int16")
    assert a._dltensor_address() == a._dltensor_address()
    t = dlpack.DLTensor.from_address(a._dltensor_address())
    assert (t.device.device_type, t.device.device_id) == (1, 0)
    assert (t.ndim, t.shape[0], t.shape[1]) == (2, 2, 3)
    assert (t.dtype.code, t.dtype.bits, t.dtype.lanes) == (0, 16, 1)
    assert not t.strides
    assert t.byte_offset == 0


def test_copyfrom_and_copyto():
    a = rt.empty((2, 2), "float32")
    assert a.copyfrom(np.ones((2, 2), np.float32)) is a
    np.testing.assert_array_equal(a.numpy(), np.ones((2, 2)))
    a.copyfrom([[1, 2], [3, 4]])
    b = rt.empty((2, 2), "float32")
    assert a.copyto(b) is b
    np.testing.assert_array_equal(b.numpy(), [[1, 2], [3, 4]])
    c = b.copyto(rt.cpu())
    assert c.shape == (2, 2) and data_ptr(c) != data_ptr(b)
    a.copyfrom(np.arange(8, dtype=np.float32).reshape(2, 4)[:, ::2])  # strided source
    np.testing.assert_array_equal(a.numpy(), [[0, 2], [4, 6]])


def test_copyfrom_errors_are_clear():
    a = rt.empty((2, 2), "float32")
    with pytest.raises(ValueError, match=r"expected shape \(2, 2\), got shape \(4,\)"):
        a.copyfrom(np.zeros(4, np.float32))
    with pytest.raises(ValueError, match="expected dtype float32, got dtype float64"):
        a.copyfrom(np.zeros((2, 2)))
    with pytest.raises(ValueError, match="expected shape"):
        a.copyto(rt.empty((3,), "float32"))
    with pytest.raises(TypeError, match="expected an NDArray or a Device"):
        a.copyto("cpu")


def test_repr():
    text = repr(rt.array(np.array([1, 2], np.int32)))
    assert text.startswith("<ember.runtime.NDArray shape=(2,), int32, cpu(0)>")
    assert "array([1, 2], dtype=int32)" in text


def test_numpy_consumes_ndarray_zero_copy():
    a = rt.array(np.arange(6, dtype=np.float32).reshape(2, 3))
    x = np.from_dlpack(a)
    assert data_ptr(x) == data_ptr(a)
    x[1, 2] = 42
    assert a.numpy()[1, 2] == 42
    assert a.__dlpack_device__() == (1, 0)


def test_numpy_view_outlives_ndarray():
    a = rt.array(np.arange(1000, dtype=np.int64))
    x = np.from_dlpack(a)
    del a
    gc.collect()
    np.testing.assert_array_equal(x, np.arange(1000))


def test_from_dlpack_numpy_zero_copy():
    x = np.arange(12, dtype=np.float64).reshape(3, 4)
    a = rt.from_dlpack(x)
    assert data_ptr(a) == data_ptr(x)
    assert (a.shape, a.dtype) == ((3, 4), "float64")
    x[0, 0] = -1
    assert a.numpy()[0, 0] == -1


def test_from_dlpack_keeps_producer_alive():
    x = np.arange(100_000, dtype=np.float32)
    refs = sys.getrefcount(x)
    a = rt.from_dlpack(x)
    assert sys.getrefcount(x) == refs + 1
    del x
    gc.collect()
    np.testing.assert_array_equal(a.numpy(), np.arange(100_000, dtype=np.float32))


def test_from_dlpack_releases_producer():
    x = np.arange(10.0)
    refs = sys.getrefcount(x)
    a = rt.from_dlpack(x)
    y = np.from_dlpack(a)  # a view of a view keeps the producer too
    del a
    gc.collect()
    assert sys.getrefcount(x) == refs + 1
    del y
    gc.collect()
    assert sys.getrefcount(x) == refs


def test_from_dlpack_capsule_and_round_trip():
    x = np.arange(5, dtype=np.uint8)
    capsule = x.__dlpack__()
    a = rt.from_dlpack(capsule)
    assert data_ptr(a) == data_ptr(x)
    with pytest.raises(BufferError, match="unconsumed"):
        rt.from_dlpack(capsule)
    b = rt.from_dlpack(a)
    assert data_ptr(b) == data_ptr(x)


@pytest.mark.parametrize("shape", [(), (0,), (0, 4), (1, 1, 1)])
def test_from_dlpack_edge_shapes(shape):
    x = np.ones(shape, np.float32)
    a = rt.from_dlpack(x)
    assert a.shape == shape
    np.testing.assert_array_equal(a.numpy(), x)


def test_from_dlpack_rejects_strided_views():
    x = np.arange(12.0).reshape(3, 4)
    with pytest.raises(ValueError, match=r"compact row-major.*strides \(1, 4\)"):
        rt.from_dlpack(x.T)
    with pytest.raises(ValueError, match="compact row-major"):
        rt.from_dlpack(x[:, ::2])
    assert rt.from_dlpack(x[1:]).shape == (2, 4)  # an offset view is still compact


def test_from_dlpack_read_only_stays_read_only():
    x = np.arange(3.0)
    x.flags.writeable = False
    a = rt.from_dlpack(x)
    with pytest.raises(ValueError, match="read-only"):
        a.copyfrom(np.zeros(3))


def test_from_dlpack_rejects_non_dlpack_and_non_cpu():
    with pytest.raises(TypeError, match="expected an object with __dlpack__"):
        rt.from_dlpack([1, 2, 3])

    class OnGpu:
        def __dlpack__(self, **kwargs):
            raise AssertionError("must not be exported")

        def __dlpack_device__(self):
            return (16, 0)  # hexagon, which ember has no runtime for

    with pytest.raises(
        rt.EmberError,
        match=r"from_dlpack: .*cpu, cuda.* memory; got a .*OnGpu on hexagon\(0\)",
    ):
        rt.from_dlpack(OnGpu())


def test_from_dlpack_calls_the_deleter_once():
    """A producer written with ctypes: its deleter must run exactly once."""
    deleted = []
    data = (ctypes.c_float * 4)(1, 2, 3, 4)
    shape = (ctypes.c_int64 * 1)(4)

    @ctypes.CFUNCTYPE(None, ctypes.c_void_p)
    def deleter(address):
        deleted.append(address)

    managed = dlpack.DLManagedTensor()
    managed.dl_tensor.data = ctypes.addressof(data)
    managed.dl_tensor.device = dlpack.DLDevice(1, 0)
    managed.dl_tensor.ndim = 1
    managed.dl_tensor.dtype = dlpack.DLDataType(2, 32, 1)
    managed.dl_tensor.shape = shape
    managed.deleter = ctypes.cast(deleter, ctypes.c_void_p).value

    class Producer:
        def __dlpack__(self, stream=None):  # a pre-1.0 producer: no max_version
            return new_capsule(ctypes.addressof(managed), CAPSULE_NAME, None)

    a = rt.from_dlpack(Producer())
    assert a.numpy().tolist() == [1, 2, 3, 4]
    assert deleted == []
    del a
    gc.collect()
    assert deleted == [ctypes.addressof(managed)]


def test_torch_round_trip():
    torch = pytest.importorskip("torch")
    t = torch.arange(6, dtype=torch.float32).reshape(2, 3)
    a = rt.from_dlpack(t)
    assert data_ptr(a) == t.data_ptr()
    back = torch.from_dlpack(a)
    assert back.data_ptr() == t.data_ptr()
    back[0, 0] = 7
    assert t[0, 0].item() == 7


def test_data_ptr_and_numpy_view():
    x = np.arange(6, dtype=np.int32)
    a = rt.from_dlpack(x)
    assert a.data_ptr() == x.ctypes.data == data_ptr(a)
    view = np.asarray(a)
    assert view.ctypes.data == a.data_ptr()  # np.asarray shares memory
    view[0] = 9
    assert x[0] == 9
    copy = np.array(a)  # np.array copies, as for any array-like
    assert copy.ctypes.data != a.data_ptr()
    as_float = np.asarray(a, dtype=np.float64)
    assert as_float.dtype == np.float64 and as_float.tolist() == x.tolist()
    with pytest.raises(ValueError, match="cannot give a float64 view of int32"):
        np.asarray(a, dtype=np.float64, copy=False)


def test_ndarray_refuses_strided_memory_clearly():
    x = np.arange(12.0).reshape(3, 4)
    with pytest.raises(ValueError, match=r"C-contiguous, got a \(4, 3\) view"):
        rt.NDArray(x.T)


@pytest.mark.parametrize(
    "view",
    [
        lambda x: x.T,  # transposed
        lambda x: x[:, ::2],  # strided
        lambda x: x[::-1],  # negative strides
        lambda x: x[:, ::-1],
    ],
    ids=["transposed", "strided", "reversed-rows", "reversed-columns"],
)
def test_strided_views_rejected_for_sharing_copied_by_array(view):
    x = np.arange(12.0).reshape(3, 4)
    v = view(x)
    with pytest.raises(ValueError, match="compact row-major.*contiguous"):
        rt.from_dlpack(v)
    a = rt.array(v)  # a copy handles any layout
    np.testing.assert_array_equal(a.numpy(), v)
    b = rt.empty(v.shape, "float64").copyfrom(v)
    np.testing.assert_array_equal(b.numpy(), v)


def test_from_dlpack_honours_byte_offset():
    """A producer may point data at the allocation and put the view's start in
    byte_offset (TVM does): the NDArray starts at data + byte_offset."""
    data = (ctypes.c_float * 6)(0, 1, 2, 3, 4, 5)
    shape = (ctypes.c_int64 * 1)(4)
    managed = dlpack.DLManagedTensor()
    managed.dl_tensor.data = ctypes.addressof(data)
    managed.dl_tensor.device = dlpack.DLDevice(1, 0)
    managed.dl_tensor.ndim = 1
    managed.dl_tensor.dtype = dlpack.DLDataType(2, 32, 1)
    managed.dl_tensor.shape = shape
    managed.dl_tensor.byte_offset = 8

    class Producer:
        def __dlpack__(self, stream=None):
            return new_capsule(ctypes.addressof(managed), CAPSULE_NAME, None)

    a = rt.from_dlpack(Producer())
    assert a.data_ptr() == ctypes.addressof(data) + 8
    assert a.numpy().tolist() == [2, 3, 4, 5]
    t = dlpack.DLTensor.from_address(a._dltensor_address())
    assert t.data + t.byte_offset == ctypes.addressof(data) + 8


def test_slices_with_an_offset_are_shared():
    x = np.arange(20, dtype=np.float32).reshape(5, 4)
    rows = x[1:4]  # compact, starting 16 bytes into x
    a = rt.from_dlpack(rows)
    assert a.data_ptr() == x.ctypes.data + 16
    assert np.from_dlpack(a).ctypes.data == a.data_ptr()


def test_array_and_copyfrom_take_any_dlpack_object():
    class OnlyDLPack:  # no __array__: numpy's asarray cannot read it
        def __init__(self, arr):
            self.arr = arr

        def __dlpack__(self, **kwargs):
            return self.arr.__dlpack__(**kwargs)

        def __dlpack_device__(self):
            return self.arr.__dlpack_device__()

    x = np.arange(12, dtype=np.int16).reshape(3, 4)
    a = rt.array(OnlyDLPack(x.T))
    assert a.dtype == "int16" and a.data_ptr() != x.ctypes.data
    np.testing.assert_array_equal(a.numpy(), x.T)
    b = rt.empty((3, 4), "int16").copyfrom(OnlyDLPack(x))
    np.testing.assert_array_equal(b.numpy(), x)


def test_numpy_incompatible_dtypes_are_named():
    data = (ctypes.c_uint16 * 2)()
    shape = (ctypes.c_int64 * 1)(2)
    managed = dlpack.DLManagedTensor()
    managed.dl_tensor.data = ctypes.addressof(data)
    managed.dl_tensor.device = dlpack.DLDevice(1, 0)
    managed.dl_tensor.ndim = 1
    managed.dl_tensor.dtype = dlpack.DLDataType(4, 16, 1)  # kDLBfloat
    managed.dl_tensor.shape = shape
    with pytest.raises(TypeError, match=r"unsupported DLPack dtype bfloat16 \(code=4"):
        rt.from_dlpack(new_capsule(ctypes.addressof(managed), CAPSULE_NAME, None))


def test_device_names_in_errors():
    class OnHexagon:  # cuda and opencl memory: tests/test_runtime_cuda.py, _opencl.py
        def __dlpack__(self, **kwargs):
            raise AssertionError("must not be exported")

        def __dlpack_device__(self):
            return (16, 1)

    for call in (rt.from_dlpack, rt.array, rt.empty((1,), "float32").copyfrom):
        with pytest.raises(rt.EmberError, match=r"OnHexagon on hexagon\(1\)"):
            call(OnHexagon())


# PyTorch: zero-copy both ways, views, devices, autograd. torch is in the bench
# extra only, so these skip without it.


def test_torch_zero_copy_both_ways_and_lifetimes():
    torch = pytest.importorskip("torch")
    t = torch.arange(12, dtype=torch.float32).reshape(3, 4)
    a = rt.from_dlpack(t)
    assert a.data_ptr() == t.data_ptr() and (a.shape, a.dtype) == ((3, 4), "float32")
    del t
    gc.collect()  # the NDArray keeps torch's memory alive
    assert a.numpy()[2, 3] == 11

    b = rt.array(np.ones((2, 5), np.int64))
    back = torch.from_dlpack(b)
    assert back.data_ptr() == b.data_ptr() and back.dtype == torch.int64
    assert np.from_dlpack(b).ctypes.data == b.data_ptr()
    del b
    gc.collect()  # and torch keeps the NDArray's memory alive
    assert back.sum().item() == 10
    back[0, 0] = 7  # and writes through
    assert rt.from_dlpack(back).numpy()[0, 0] == 7


def test_torch_views():
    torch = pytest.importorskip("torch")
    t = torch.arange(20, dtype=torch.float32).reshape(5, 4)
    rows = rt.from_dlpack(t[1:4])  # torch puts a slice's offset in data
    assert rows.data_ptr() == t[1:4].data_ptr() == t.data_ptr() + 16
    with pytest.raises(ValueError, match=r"strides \(1, 4\).*x\.contiguous\(\)"):
        rt.from_dlpack(t.t())
    with pytest.raises(ValueError, match="compact row-major"):
        rt.from_dlpack(t[:, 1:])
    np.testing.assert_array_equal(rt.array(t.t()).numpy(), t.t().numpy())


def test_torch_device_dtype_and_grad_errors():
    torch = pytest.importorskip("torch")
    with pytest.raises(rt.EmberError, match="torch.Tensor on device meta"):
        rt.from_dlpack(torch.empty(3, device="meta"))
    with pytest.raises(TypeError, match="unsupported DLPack dtype bfloat16"):
        rt.from_dlpack(torch.zeros(3, dtype=torch.bfloat16))
    with pytest.raises(TypeError, match="float8_e4m3fn"):
        rt.array(torch.zeros(3, dtype=torch.float8_e4m3fn))
    with pytest.raises(BufferError, match=r"requires grad .*t\.detach\(\)"):
        rt.from_dlpack(torch.zeros(3, requires_grad=True))
    assert rt.from_dlpack(torch.zeros(3, requires_grad=True).detach()).shape == (3,)
    with pytest.raises(BufferError, match="refused to export.*conjugate"):
        rt.from_dlpack(torch.zeros(3, dtype=torch.complex64).conj())
