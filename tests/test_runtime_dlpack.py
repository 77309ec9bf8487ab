"""The DLPack structs match dlpack.h, and dtypes map both ways."""

import ctypes

import numpy as np
import pytest

from ember.runtime import dlpack


def test_dltensor_layout_matches_dlpack_h():
    assert ctypes.sizeof(dlpack.DLDevice) == 8
    assert ctypes.sizeof(dlpack.DLDataType) == 4
    assert ctypes.sizeof(dlpack.DLTensor) == 48
    fields = [name for name, _ in dlpack.DLTensor._fields_]
    offsets = {name: getattr(dlpack.DLTensor, name).offset for name in fields}
    assert offsets == {
        "data": 0,
        "device": 8,
        "ndim": 16,
        "dtype": 20,
        "shape": 24,
        "strides": 32,
        "byte_offset": 40,
    }


def test_managed_tensor_layouts():
    assert ctypes.sizeof(dlpack.DLManagedTensor) == 64
    assert dlpack.DLManagedTensor.deleter.offset == 56
    assert ctypes.sizeof(dlpack.DLManagedTensorVersioned) == 80
    assert dlpack.VERSIONED_TENSOR_OFFSET == 32


@pytest.mark.parametrize(
    "name, dl",
    [
        ("float16", (2, 16, 1)),
        ("float32", (2, 32, 1)),
        ("float64", (2, 64, 1)),
        ("int8", (0, 8, 1)),
        ("int64", (0, 64, 1)),
        ("uint8", (1, 8, 1)),
        ("uint64", (1, 64, 1)),
        ("bool", (6, 8, 1)),
        ("complex64", (5, 64, 1)),
    ],
)
def test_dtype_round_trip(name, dl):
    assert dlpack.dtype_to_dl(name) == dl
    assert dlpack.dtype_to_dl(np.dtype(name)) == dl
    assert dlpack.dl_to_dtype(*dl) == np.dtype(name)


def test_unsupported_dtypes_are_named():
    with pytest.raises(TypeError, match="unsupported dtype object"):
        dlpack.dtype_to_dl(object)
    with pytest.raises(TypeError, match="lanes=4"):
        dlpack.dl_to_dtype(2, 32, 4)


@pytest.mark.parametrize(
    "shape, strides, compact",
    [
        ((2, 3), None, True),
        ((2, 3), (3, 1), True),
        ((2, 3), (1, 2), False),
        ((2, 1, 3), (3, 99, 1), True),  # extent-1 strides do not matter
        ((0, 3), (7, 7), True),
        ((4,), (2,), False),
        ((), (), True),
    ],
)
def test_is_compact(shape, strides, compact):
    assert dlpack.is_compact(shape, strides) is compact


def test_read_and_consume_numpy_capsule():
    x = np.arange(6, dtype=np.int16).reshape(2, 3)
    capsule = x.__dlpack__()
    opened = dlpack.read_capsule(capsule)
    assert opened.tensor.ndim == 2
    assert opened.tensor.shape[:2] == [2, 3]
    assert opened.tensor.data == x.__array_interface__["data"][0]
    owner = dlpack.consume_capsule(capsule, opened)
    assert "used_dltensor" in repr(capsule)
    with pytest.raises(BufferError, match="unconsumed DLPack capsule"):
        dlpack.read_capsule(capsule)
    del owner  # runs numpy's deleter exactly once


def test_versioned_capsule_carries_read_only():
    x = np.arange(3.0)
    x.flags.writeable = False
    opened = dlpack.read_capsule(x.__dlpack__(max_version=(1, 0)))
    assert opened.name == b"dltensor_versioned"
    assert opened.read_only
