"""TVM's spellings work in ember: a TVM lesson runs with `tvm` replaced by `ember`."""

import numpy as np
import pytest

import ember
from ember import te
from ember.runtime.errors import EmberValueError, FunctionNotFoundError


def vecadd(n=1024):
    A = te.placeholder((n,), name="A")
    B = te.placeholder((n,), name="B")
    C = te.compute(A.shape, lambda i: A[i] + B[i], name="C")
    return A, B, C


def test_the_runtime_lesson_runs_with_tvm_replaced_by_ember(tmp_path):
    n = 1024
    A, B, C = vecadd(n)
    s = te.create_schedule(C.op)
    f = ember.build(s, [A, B, C], target="llvm", name="vecadd")
    dev = ember.cpu(0)
    a = ember.nd.array(np.random.uniform(size=n).astype(A.dtype), dev)
    b = ember.nd.array(np.random.uniform(size=n).astype(B.dtype), dev)
    c = ember.nd.array(np.zeros(n, dtype=C.dtype), dev)
    f(a, b, c)
    np.testing.assert_allclose(c.numpy(), a.numpy() + b.numpy())
    f.export_library(str(tmp_path / "x.so"))
    m = ember.runtime.load_module(str(tmp_path / "x.so"))
    c2 = ember.nd.empty((n,), C.dtype, dev)
    m["vecadd"](a, b, c2)
    np.testing.assert_array_equal(c2.numpy(), c.numpy())
    assert C.op.input_tensors == [A, B]
    assert "Tensor(A" in repr(C.op.input_tensors)
    evaluator = f.time_evaluator(f.entry_name, dev, number=3)
    assert evaluator(a, b, c).mean > 0
    dev.sync()


def test_the_schedule_lesson_spellings():
    n = 1024
    A, B, C = vecadd(n)
    assert (A.dtype, A.shape, len(C.op.axis)) == ("float32", (n,), 1)
    s = te.create_schedule(C.op)
    xo, xi = s[C].split(C.op.axis[0], factor=64)
    s[C].vectorize(xi)
    s[C].parallel(xo)
    f = ember.build(s, [A, B, C], target="llvm", name="vecadd")
    x, y = np.arange(n, dtype="float32"), np.ones(n, "float32")
    out = ember.nd.empty((n,), "float32")
    f(ember.nd.array(x), ember.nd.array(y), out)
    np.testing.assert_array_equal(out.numpy(), x + y)
    assert (out.shape, out.dtype) == ((n,), "float32")


def test_devices_by_tvm_names():
    assert ember.device("cpu", 0) == ember.device("llvm", 0) == ember.cpu(0)
    assert ember.device("cuda", 1) == ember.cuda(1)
    assert ember.device("opencl") == ember.opencl(0)
    assert ember.nd.cpu(0) == ember.cpu(0) and ember.nd.NDArray is ember.runtime.NDArray
    with pytest.raises(EmberValueError, match="unknown device 'tpu'"):
        ember.device("tpu", 0)


def test_global_functions_by_tvm_names():
    @ember.register_func("test_tvm_names.twice")
    def twice(x):
        return 2 * x

    try:
        assert ember.get_global_func("test_tvm_names.twice")(21) == 42
        assert ember.get_global_func("test_tvm_names.none", allow_missing=True) is None
        with pytest.raises(FunctionNotFoundError):
            ember.get_global_func("test_tvm_names.none")
    finally:
        ember.runtime.remove_global_func("test_tvm_names.twice")


def test_input_tensors_lists_each_read_tensor_once():
    A, B, C = vecadd(8)
    D = te.compute(A.shape, lambda i: C[i] * A[i] + C[i], name="D")
    assert D.op.input_tensors == [C, A]
    assert A.op.input_tensors == []


def test_lower_shows_a_split_as_two_nested_loops():
    A, B, C = vecadd(1024)
    s = te.create_schedule(C.op)
    s[C].split(C.op.axis[0], factor=64)
    text = str(ember.lower(s, [A, B, C], simple_mode=True))
    lines = [line.strip() for line in text.splitlines()]
    loops = [line for line in lines if line.startswith("loop.for")]
    assert [line.split()[1] for line in loops] == ["%i_outer", "%i_inner"]
    outer = lines.index(loops[0])
    assert lines[outer + 1] == loops[1]  # the inner loop is the outer's body
    assert "te." not in text


def test_lower_emits_te_ir_when_asked():
    A, B, C = vecadd(16)
    s = te.create_schedule(C.op)
    s[C].split(C.op.axis[0], factor=4)
    text = str(ember.lower(s, [A, B, C], name="f", emit="te"))
    assert 'te.split "C" "i" factor 4' in text and "loop.for" not in text
    with pytest.raises(EmberValueError, match="expected emit to be one of te, loop"):
        ember.lower(s, [A, B, C], emit="llvm")
