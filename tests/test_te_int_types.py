"""int16 and unsigned integers in te, built for LLVM and for C against numpy:
te IR is signless, so the lowering must pick the unsigned ops for uint<N>
(division, remainder, comparisons, max/min and their reductions, shifts,
conversions to float and indices) on values above the signed range."""

import numpy as np
import pytest

import ember
from ember import te
from ember.runtime.errors import EmberError, EmberTypeError

N = 8
INT_TYPES = ["int16", "uint8", "uint16", "uint32", "uint64"]


def _operands(dtype):
    """a spans the type (its largest value, the top half for unsigned ones),
    b is small and positive but one zero (a division by zero gives 0)."""
    info = np.iinfo(dtype)
    rng = np.random.default_rng(0)
    low = info.min if info.min else info.max // 2
    a = rng.integers(low, info.max, N, dtype=dtype, endpoint=True)
    a[:3] = [info.max, info.max // 2 + 1, 200 if info.max >= 255 else 1]
    b = rng.integers(1, 7, N, dtype=dtype)
    b[1] = 0
    return a, b


def _module(dtype, target):
    A, B = te.placeholder((N,), dtype, "A"), te.placeholder((N,), dtype, "B")
    k = te.reduce_axis((0, N), "k")
    outs = [
        te.compute((N,), lambda i: A[i] // B[i], name="div"),
        te.compute((N,), lambda i: A[i] % B[i], name="mod"),
        te.compute((N,), lambda i: (A[i] > B[i]).astype(dtype), name="gt"),
        te.compute((N,), lambda i: te.max(A[i], B[i]), name="max"),
        te.compute((N,), lambda i: A[i].astype("float64"), name="wide"),
        te.compute((N,), lambda i: A[i] >> (B[i] % 3), name="shr"),
        te.compute((N,), lambda i: ~A[i], name="invert"),
        te.compute((1,), lambda i: te.max(A[k], axis=k), name="top"),
        te.compute((1,), lambda i: te.min(A[k], axis=k), name="bottom"),
    ]
    s = te.create_schedule([t.op for t in outs])
    return ember.build(s, [A, B, *outs], target=target, name="ints"), outs


def _expected(a, b):
    safe = np.where(b == 0, 1, b)
    return [
        np.where(b == 0, 0, a // safe),
        np.where(b == 0, 0, a % safe),
        (a > b).astype(a.dtype),
        np.maximum(a, b),
        a.astype(np.float64),
        a >> (b % 3),
        ~a,
        a.max(keepdims=True),
        a.min(keepdims=True),
    ]


@pytest.mark.parametrize("target", ["llvm", "c"])
@pytest.mark.parametrize("dtype", INT_TYPES)
def test_integer_ops_match_numpy(dtype, target):
    mod, outs = _module(dtype, target)
    a, b = _operands(dtype)
    got = [np.zeros(t.shape, t.dtype) for t in outs]
    mod(a, b, *got)
    for t, g, e in zip(outs, got, _expected(a, b), strict=True):
        np.testing.assert_array_equal(g, e, err_msg=f"{dtype} {t.name}")


def test_a_uint_buffer_is_checked_as_uint():
    A = te.placeholder((N,), "uint8", "A")
    B = te.compute((N,), lambda i: A[i] + 1, name="B")
    mod = ember.build(te.create_schedule(B.op), [A, B], name="inc")
    out = np.zeros(N, np.uint8)
    mod(np.full(N, 255, np.uint8), out)
    np.testing.assert_array_equal(out, 0)  # wraps
    with pytest.raises(EmberError, match=r"argument 0 \(A\): expected uint8 tensor"):
        mod(np.zeros(N, np.int8), out)


def test_an_unsigned_index_reads_past_the_signed_range():
    table = te.placeholder((256,), "float32", "T")
    ids = te.placeholder((2,), "uint8", "I")
    out = te.compute((2,), lambda i: table[ids[i].astype("index")], name="out")
    mod = ember.build(te.create_schedule(out.op), [table, ids, out], name="take")
    t = np.arange(256, dtype=np.float32)
    got = np.zeros(2, np.float32)
    mod(t, np.array([200, 255], np.uint8), got)
    np.testing.assert_array_equal(got, [200.0, 255.0])


def test_negative_constants_do_not_fit_unsigned_types():
    A = te.placeholder((N,), "uint32", "A")
    with pytest.raises(EmberTypeError, match="the constant -1 does not fit uint32"):
        A[0] + (-1)
    with pytest.raises(EmberTypeError, match="'<<' needs integer operands"):
        te.placeholder((N,), "float32", "F")[0] << 1


@pytest.mark.parametrize(
    "src, dst",
    [
        ("int8", "uint8"),  # the same bits: no instruction at all
        ("uint16", "int16"),
        ("int64", "uint64"),
        ("uint8", "uint64"),  # zero-extended
        ("int8", "uint32"),  # sign-extended, then seen unsigned
        ("uint64", "uint8"),
        ("uint16", "int32"),
        ("uint32", "float32"),
        ("uint64", "float64"),
        ("float32", "uint32"),
    ],
)
def test_casts_match_numpy(src, dst):
    A = te.placeholder((4,), src, "A")
    B = te.compute((4,), lambda i: A[i].astype(dst), name="B")
    mod = ember.build(te.create_schedule(B.op), [A, B], name="cast")
    if src.startswith("float"):
        a = np.array([1.5, 3e9, 0.0, 4e9], src)  # past int32, inside uint32
    else:
        info = np.iinfo(src)
        a = np.array([info.max, info.min, 3, info.max // 2 + 1], src)
    got = np.zeros(4, dst)
    mod(a, got)
    np.testing.assert_array_equal(got, a.astype(dst))


def _no_opencl() -> str | None:
    from ember import runtime as rt

    try:
        rt.empty((1,), device=rt.opencl(0))
    except Exception as error:  # noqa: BLE001 - any failure means no device
        return str(error)
    return None


@pytest.mark.parametrize("dtype", ["uint8", "uint32", "uint64"])
def test_unsigned_ops_on_opencl(dtype):
    """The OpenCL printer's unsigned casts around division, comparison and
    shifts; the launch plan names the buffers uint<N>."""
    from ember import runtime as rt

    if (missing := _no_opencl()) is not None:
        pytest.skip(missing)
    A, B = te.placeholder((N,), dtype, "A"), te.placeholder((N,), dtype, "B")
    C = te.compute(
        (N,),
        lambda i: te.if_then_else(A[i] > B[i], A[i] // B[i], A[i] >> (B[i] % 3)),
        name="C",
    )
    s = te.create_schedule(C.op)
    s[C].bind(C.op.axis[0], te.thread_axis("threadIdx.x"))
    mod = ember.build(s, [A, B, C], target="opencl", name="mix")
    dtypes = [a["dtype"] for a in mod.plan["functions"]["mix"]["args"]]  # type: ignore[attr-defined]
    assert dtypes == [dtype] * 3
    a, b = _operands(dtype)
    b[1] = 5
    device = rt.opencl(0)
    out = rt.empty((N,), dtype, device)
    mod(rt.array(a, device=device), rt.array(b, device=device), out)
    expected = np.where(a > b, a // b, a >> (b % 3))
    np.testing.assert_array_equal(out.numpy(), expected)
