"""The DLPack structs match dlpack.h, dtypes map both ways, and compiled functions
take DLPack tensors (numpy, PyTorch) directly."""

import ctypes

import numpy as np
import pytest

from ember import runtime as rt
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
    with pytest.raises(TypeError, match=r"dtype float32x4 \(code=2, bits=32, lanes=4"):
        dlpack.dl_to_dtype(2, 32, 4)
    with pytest.raises(TypeError, match="dtype bfloat16 .*convert the tensor first"):
        dlpack.dl_to_dtype(4, 16)


@pytest.mark.parametrize(
    "dl, name",
    [
        ((0, 8, 1), "int8"),
        ((4, 16, 1), "bfloat16"),
        ((5, 32, 1), "complex32"),
        ((6, 8, 1), "bool8"),
        ((10, 8, 1), "float8_e4m3fn"),
        ((12, 8, 2), "float8_e5m2x2"),
        ((17, 4, 1), "float4_e2m1fn"),
        ((99, 8, 1), "type code 99, 8 bits"),
    ],
)
def test_dl_type_names(dl, name):
    assert dlpack.dl_type_name(*dl) == name


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


# Compiled functions take DLPack tensors directly: zero-copy in, results written
# in place, every refusal naming the argument and what is wrong with it.


@pytest.fixture(scope="module")
def vecadd():
    import ember
    from ember import te

    A = te.placeholder((3, 4), name="A")
    B = te.placeholder((3, 4), name="B")
    C = te.compute((3, 4), lambda i, j: A[i, j] + B[i, j], name="C")
    return ember.build(te.create_schedule(C.op), [A, B, C], name="vecadd")


def test_compiled_function_writes_numpy_views_in_place(vecadd):
    a = np.arange(12, dtype=np.float32).reshape(3, 4)
    b = np.full((3, 4), 0.5, np.float32)
    big = np.zeros((5, 4), np.float32)
    out = big[1:4]  # compact, 16 bytes into big
    vecadd(a, b, out)
    np.testing.assert_array_equal(big[1:4], a + b)
    assert not big[0].any() and not big[4].any()
    with pytest.raises(ValueError, match="argument 0: expected a C-contiguous"):
        vecadd(np.asfortranarray(a), b, out)


def test_compiled_function_takes_torch_tensors_zero_copy(vecadd):
    torch = pytest.importorskip("torch")
    a = torch.arange(12, dtype=torch.float32).reshape(3, 4)
    b = torch.full((3, 4), 0.25)
    c = torch.empty(3, 4)
    pointer = c.data_ptr()
    vecadd(a, b, c)
    assert c.data_ptr() == pointer
    torch.testing.assert_close(c, a + b)
    big = torch.zeros(5, 4)
    vecadd(a, b, big[1:4])  # a slice: its offset travels in the DLTensor
    torch.testing.assert_close(big[1:4], a + b)
    assert big[0].abs().sum().item() == 0 == big[4].abs().sum().item()
    # mixing frameworks in one call
    out = np.zeros((3, 4), np.float32)
    vecadd(a, rt.array(b.numpy()), out)
    np.testing.assert_array_equal(out, (a + b).numpy())


def test_compiled_function_refuses_bad_torch_tensors(vecadd):
    torch = pytest.importorskip("torch")
    a, b, c = torch.rand(3, 4), torch.rand(3, 4), torch.empty(3, 4)
    cases = [
        (
            (a, b, torch.empty(3, 4, device="meta")),
            rt.EmberError,
            "vecadd: argument 2: from_dlpack: a torch.Tensor on device meta",
        ),
        (
            (torch.rand(4, 3).t(), b, c),
            ValueError,
            r"vecadd: argument 0: .*compact row-major .*strides \(1, 3\)",
        ),
        (
            (a, torch.rand(3, 4, requires_grad=True), c),
            BufferError,
            r"vecadd: argument 1: .*requires grad.*t\.detach\(\)",
        ),
        (
            (a.bfloat16(), b, c),
            TypeError,
            "vecadd: argument 0: unsupported DLPack dtype bfloat16",
        ),
        (
            (a.double(), b, c),
            rt.EmberError,
            r"argument 0 \(A\): expected float32 tensor of shape \(3, 4\); "
            r"got float64 tensor of shape \(3, 4\)",
        ),
        (
            (a, b, torch.empty(4, 3)),
            rt.EmberError,
            r"argument 2 \(C\): expected float32 tensor of shape \(3, 4\)",
        ),
    ]
    for args, error, message in cases:
        with pytest.raises(error, match=message):
            vecadd(*args)
    vecadd(a, b, c)  # the function still works after every refusal
    torch.testing.assert_close(c, a + b)
