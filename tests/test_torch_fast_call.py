"""Torch tensors on the fast path: DLPack's C exchange API fills each DLTensor.

torch is not in the dev extra: the whole module skips cleanly without it.
"""

import ctypes
import threading
from pathlib import Path

import numpy as np
import pytest
from test_runtime_packed_func import Recorder, general_path_forbidden

from ember import runtime as rt
from ember.runtime import dlpack, fast_call, packed_func
from ember.runtime.packed_func import PACKED_FUNC_TYPE, TypeCode

torch = pytest.importorskip("torch")


def dltensor_of(call_arg):
    """(data, device type, dtype, shape, strides) as Recorder's _read gives it."""
    code, value = call_arg
    assert code == TypeCode.DLTENSOR_HANDLE
    return value


@pytest.fixture(scope="module")
def vecadd():
    import ember
    from ember import te

    A = te.placeholder((64,), name="A")
    B = te.placeholder((64,), name="B")
    C = te.compute((64,), lambda i: A[i] + B[i], name="C")
    return ember.build(te.create_schedule(C.op), [A, B, C], name="vecadd")["vecadd"]


def test_torch_tensors_have_the_exchange_api():
    filler = dlpack.exchange_filler(torch.Tensor)
    assert filler is not None and filler.version[0] == 1
    assert dlpack.exchange_filler(torch.Tensor) is filler  # cached per type
    assert dlpack.exchange_filler(np.ndarray) is None
    assert dlpack.exchange_filler(int) is None


def test_filled_tensor_is_zero_copy_and_the_fast_path_is_taken(monkeypatch):
    rec = Recorder()
    f = rec.func("f", outputs={2: "C"})
    a = torch.arange(6, dtype=torch.float32).reshape(2, 3)
    b = torch.zeros(5, dtype=torch.int64)
    c = torch.zeros(4, dtype=torch.float64)
    f(a, b, c)
    assert f._call.__name__ == "call_Tensor_Tensor_Tensor"
    assert "f0(id(a0), x0)" in f._call.source
    general_path_forbidden(monkeypatch)
    f(a, b, c)
    f(a, b, c)
    assert len(rec.calls) == 3
    for call in rec.calls:
        assert [dltensor_of(x) for x in call] == [
            (a.data_ptr(), 1, "float32", (2, 3), (3, 1)),
            (b.data_ptr(), 1, "int64", (5,), (1,)),
            (c.data_ptr(), 1, "float64", (4,), (1,)),
        ]


def test_mixed_signature_packs_scalars_and_other_tensors(monkeypatch):
    rec = Recorder(ret_code=TypeCode.INT, ret=11)
    f = rec.func("f")
    t, nd, x = torch.ones(3), rt.empty(2), np.zeros(4, np.int8)
    assert f(2.5, t, nd, 7, x, t[1:]) == 11
    general_path_forbidden(monkeypatch)
    assert f(2.5, t, nd, 7, x, t[1:]) == 11
    for call in rec.calls:
        assert call[0] == (2, 2.5) and call[3] == (0, 7)
        assert dltensor_of(call[1])[0] == t.data_ptr()
        assert dltensor_of(call[2])[0] == nd.data_ptr()
        assert dltensor_of(call[4])[0] == x.ctypes.data
        # a contiguous view starting one element in: the data pointer moves
        assert dltensor_of(call[5])[:4] == (t.data_ptr() + 4, 1, "float32", (2,))


def test_compiled_kernel_writes_torch_tensors_in_place(vecadd, monkeypatch):
    a, b = torch.rand(64), torch.rand(64)
    c = torch.zeros(64)
    where = c.data_ptr()
    vecadd(a, b, c)
    general_path_forbidden(monkeypatch)
    for _ in range(3):
        c.zero_()
        vecadd(a, b, c)
        assert torch.equal(c, a + b)
    assert c.data_ptr() == where
    # numpy arrays over the same memory see the writes too
    np.testing.assert_array_equal(c.numpy(), a.numpy() + b.numpy())


def general_message(f, args) -> tuple[type, str]:
    """The error the general path raises for ``args``."""
    with pytest.raises(Exception) as info:
        f._slow(args)
    return type(info.value), str(info.value)


@pytest.mark.parametrize(
    "bad",
    [
        lambda: torch.zeros(8, 8).t(),  # transposed
        lambda: torch.zeros(128)[::2],  # strided
        lambda: torch.zeros(64, requires_grad=True),
        lambda: torch.zeros(64, device="meta"),
        lambda: torch.zeros(64, dtype=torch.bfloat16),  # no numpy equivalent
        lambda: torch.zeros(64, dtype=torch.complex64).conj(),  # conjugate bit
        lambda: torch.zeros(64).to_sparse(),
    ],
    ids=["transposed", "strided", "requires-grad", "meta", "bf16", "conj", "sparse"],
)
@pytest.mark.parametrize("position", [0, 2])
def test_refusals_through_the_fast_path_keep_their_messages(vecadd, bad, position):
    a, b, c = torch.rand(64), torch.rand(64), torch.zeros(64)
    vecadd(a, b, c)  # warm up: the fast caller is installed
    fast = vecadd._call
    assert fast.__name__ == "call_Tensor_Tensor_Tensor"
    args = [a, b, c]
    args[position] = bad()
    kind, message = general_message(vecadd, tuple(args))
    with pytest.raises(kind) as info:
        vecadd(*args)
    assert str(info.value) == message
    assert message.startswith(f"vecadd: argument {position}: ")
    assert vecadd._call is fast  # still the fast caller, and it still works
    vecadd(a, b, c)
    assert torch.equal(c, a + b)


def test_refusal_messages():
    rec = Recorder()
    f = rec.func("f", outputs=[1])
    x = torch.zeros(4)
    f(x, x)

    def message(*args):
        with pytest.raises((ValueError, BufferError, rt.EmberError, TypeError)) as e:
            f(*args)
        return str(e.value)

    assert "expected a compact row-major tensor" in message(torch.zeros(2, 2).t(), x)
    assert "requires grad" in message(x, torch.zeros(4, requires_grad=True))
    assert "meta" in message(torch.zeros(4, device="meta"), x)
    assert "bfloat16" in message(x, torch.zeros(4, dtype=torch.bfloat16))
    assert "conjugate bit" in message(torch.zeros(4, dtype=torch.cfloat).conj(), x)
    assert len(rec.calls) == 1


def test_complex_tensors_without_the_conjugate_bit_still_pass():
    rec = Recorder()
    f = rec.func("f")
    z = torch.zeros(3, dtype=torch.complex64)
    f(z)
    f(z)
    assert [dltensor_of(c[0])[:3] for c in rec.calls] == [
        (z.data_ptr(), 1, "complex64")
    ] * 2


def test_inference_tensors_are_writeable_outputs():
    """As on the general path: torch never exports read-only memory."""
    rec = Recorder()
    f = rec.func("f", outputs=[0])
    with torch.inference_mode():
        out = torch.zeros(4)
    f(out)
    f(out)
    assert len(rec.calls) == 2


def test_subclasses_take_the_general_path():
    rec = Recorder()
    f = rec.func("f")
    p = torch.nn.Parameter(torch.zeros(3), requires_grad=False)
    f(p)
    assert f._call is rt.PackedFunc._dispatch  # no fast caller for Parameter
    assert dltensor_of(rec.calls[0][0])[0] == p.data_ptr()
    assert packed_func._exchange_recipe(torch.nn.Parameter, False) is None
    assert packed_func._exchange_recipe(torch.Tensor, True) is not None


def test_error_returns_give_the_area_back():
    rec = Recorder(rc=-3, ret_code=TypeCode.STR, ret="f: argument 1: bad shape")
    f = rec.func("f")
    x = torch.zeros(4)
    for _ in range(3):
        with pytest.raises(rt.EmberError, match="bad shape; got float32 tensor of"):
            f(x, x)
    spares = len(fast_call.SPARE_AREAS[2])
    for _ in range(5):
        with pytest.raises(rt.EmberError):
            f(x, x)
    assert len(fast_call.SPARE_AREAS[2]) == spares


def test_fast_torch_calls_keep_nothing(monkeypatch):
    import tracemalloc

    native = PACKED_FUNC_TYPE(lambda *_: 0)
    address = ctypes.cast(native, ctypes.c_void_p).value
    f = rt.PackedFunc(address, outputs=[2])
    a, b, c = torch.zeros(16), torch.zeros(16), torch.zeros(16)
    for _ in range(10):
        f(a, b, c)
    spares = len(fast_call.SPARE_AREAS[3])
    general_path_forbidden(monkeypatch)
    # what the call path keeps, not what other threads (ember's load monitor)
    # allocate meanwhile
    ours = [
        tracemalloc.Filter(True, str(Path(rt.__file__).parent / "*")),
        tracemalloc.Filter(True, "<ember fast call*"),
        # the load monitor's thread (runtime/parallel.py) allocates as the
        # machine's load changes, whatever the calls do
        tracemalloc.Filter(False, str(Path(rt.__file__).parent / "parallel.py")),
    ]
    tracemalloc.start()
    try:
        before = tracemalloc.take_snapshot().filter_traces(ours)
        for _ in range(2000):
            f(a, b, c)
        after = tracemalloc.take_snapshot().filter_traces(ours)
    finally:
        tracemalloc.stop()
    assert sum(d.size_diff for d in after.compare_to(before, "filename")) < 1024
    assert len(fast_call.SPARE_AREAS[3]) == spares


def test_nested_calls_get_their_own_areas():
    inner = Recorder(ret_code=TypeCode.INT, ret=7)
    inner_f = inner.func("inner")
    inner_t = torch.full((2,), 3.0)
    seen = []

    class Outer(Recorder):
        def _run(self, *args):
            seen.append(inner_f(inner_t))  # fills an area while the outer's is in use
            return super()._run(*args)

    outer = Outer(ret_code=TypeCode.FLOAT, ret=0.5)
    f = outer.func("outer")
    t = torch.zeros(5)
    assert [f(t) for _ in range(3)] == [0.5] * 3
    assert seen == [7] * 3
    # the outer tensor was read after the inner call filled its own area
    assert {dltensor_of(c[0])[0] for c in outer.calls} == {t.data_ptr()}
    assert {dltensor_of(c[0])[0] for c in inner.calls} == {inner_t.data_ptr()}


def test_threads_call_with_torch_tensors(vecadd):
    errors = []

    def work(seed: int):
        a = torch.full((64,), float(seed))
        b, c = torch.arange(64, dtype=torch.float32), torch.empty(64)
        for _ in range(500):
            vecadd(a, b, c)
            if not torch.equal(c, a + b):
                errors.append(seed)
                return

    threads = [threading.Thread(target=work, args=(s,)) for s in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
