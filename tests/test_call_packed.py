"""Compiled code calling registered Python functions: te.extern / te.call_packed."""

import ctypes
import os
import shutil
import subprocess
import sys
import textwrap

import numpy as np
import pytest
from xdsl.utils.exceptions import PassFailedException

import ember
from ember import te
from ember.runtime import (
    EmberError,
    FunctionNotFoundError,
    NDArray,
    callbacks,
    register_func,
    remove_global_func,
)
from ember.te.schedule import ScheduleError

N = 64
RNG = np.random.default_rng(4)


@pytest.fixture
def registered():
    """Register functions for one test, removed afterwards."""
    names: list[str] = []

    def register(name, f):
        register_func(name, f, override=True)
        names.append(name)
        return f

    yield register
    for name in dict.fromkeys(names):
        remove_global_func(name)


def sort_between_computes() -> tuple[te.Tensor, te.Tensor]:
    A = te.placeholder((N,), name="A")
    A1 = te.compute((N,), lambda i: A[i] - 0.5, name="A1")
    B = te.extern(
        (N,),
        [A1],
        lambda ins, outs: te.call_packed("test.sort", ins[0], outs[0]),
        name="B",
    )
    C = te.compute((N,), lambda i: B[i] * 2.0, name="C")
    return A, C


def test_extern_sort_between_two_computes(registered):
    registered("test.sort", lambda x, y: y.copyfrom(np.sort(x.numpy())))
    A, C = sort_between_computes()
    mod = ember.build(te.create_schedule(C.op), [A, C], name="sorted")
    a = RNG.standard_normal(N).astype("float32")
    c = np.empty(N, "float32")
    mod(a, c)
    np.testing.assert_allclose(c, np.sort(a - 0.5) * 2.0, rtol=1e-6)
    assert 'loop.call_packed "test.sort"(%A1, %B)' in mod.get_source("loop")


def test_scalar_and_string_arguments(registered):
    seen = []

    def scaled_cumsum(x, y, scale, offset, mode):
        seen.append((scale, offset, mode))
        assert isinstance(scale, float) and isinstance(offset, int)
        total = (
            np.cumsum(x.numpy()) if mode == "forward" else np.cumsum(x.numpy()[::-1])
        )
        y.copyfrom((total * scale + offset).astype(y.dtype))

    registered("test.cumsum", scaled_cumsum)
    A = te.placeholder((4, 8), dtype="float64", name="A")
    B = te.extern(
        (32,),
        [A],
        lambda ins, outs: te.call_packed(
            "test.cumsum", ins[0], outs[0], 0.5, 3, "forward"
        ),
        name="B",
    )
    mod = ember.build(te.create_schedule(B.op), [A, B], name="cumsum")
    a = RNG.standard_normal((4, 8))
    b = np.empty(32)
    mod(a, b)
    np.testing.assert_allclose(b, np.cumsum(a.ravel()) * 0.5 + 3)
    assert seen == [(0.5, 3, "forward")]


def test_several_calls_in_one_kernel(registered):
    order = []

    def fill(out, value):
        order.append(("fill", value))
        out.copyfrom(np.full(out.shape, value, out.dtype))

    def add_into(out, x):
        order.append(("add", x.shape))
        out.copyfrom(out.numpy() + x.numpy())

    registered("test.fill", fill)
    registered("test.add_into", add_into)
    A = te.placeholder((N,), dtype="int32", name="A")
    # two calls in one extern, run in order ...
    B = te.extern(
        (N,),
        [A],
        lambda ins, outs: [
            te.call_packed("test.fill", outs[0], 7),
            te.call_packed("test.add_into", outs[0], ins[0]),
        ],
        name="B",
    )
    # ... and a second extern reading the first
    D = te.extern(
        (N,),
        [B],
        lambda ins, outs: [
            te.call_packed("test.fill", outs[0], -1),
            te.call_packed("test.add_into", outs[0], B),
        ],
        name="D",
    )
    E = te.compute((N,), lambda i: D[i] + A[i], name="E")
    mod = ember.build(te.create_schedule(E.op), [A, E], name="calls")
    a = RNG.integers(-100, 100, N).astype("int32")
    e = np.empty(N, "int32")
    mod(a, e)
    np.testing.assert_array_equal(e, a + 7 - 1 + a)
    assert order == [("fill", 7), ("add", (N,)), ("fill", -1), ("add", (N,))]


def test_callback_writes_in_place_zero_copy(registered):
    """The NDArrays a callback gets are views of the kernel's own buffers: here
    the caller's arrays, since the extern reads an input and writes the output."""
    pointers = []

    def negate(x, y):
        assert isinstance(x, NDArray) and isinstance(y, NDArray)
        pointers.append((x._arr.ctypes.data, y._arr.ctypes.data))
        np.negative(x._arr, out=y._arr)  # written in place, no copy back

    registered("test.negate", negate)
    A = te.placeholder((8, 8), name="A")
    B = te.extern(
        (8, 8),
        [A],
        lambda ins, outs: te.call_packed("test.negate", ins[0], outs[0]),
        name="B",
    )
    mod = ember.build(te.create_schedule(B.op), [A, B], name="negate")
    a = RNG.standard_normal((8, 8)).astype("float32")
    b = ember.runtime.empty((8, 8), "float32")
    mod(a, b)
    np.testing.assert_array_equal(b.numpy(), -a)
    assert pointers == [(a.ctypes.data, b._arr.ctypes.data)]


def test_python_exception_comes_back_as_itself(registered):
    calls = []

    def picky(x, y, limit):
        calls.append(limit)
        if limit < 0:
            raise KeyError(f"limit {limit} is negative")
        y.copyfrom(np.minimum(x.numpy(), limit))

    registered("test.picky", picky)

    def build(limit):
        A = te.placeholder((N,), name="A")
        B = te.extern(
            (N,),
            [A],
            lambda ins, outs: te.call_packed("test.picky", ins[0], outs[0], limit),
            name="B",
        )
        C = te.compute((N,), lambda i: B[i] + 1.0, name="C")
        return ember.build(te.create_schedule(C.op), [A, C], name="picky")

    bad, good = build(-1), build(2)
    a = RNG.standard_normal(N).astype("float32") * 4
    c = np.zeros(N, "float32")
    with pytest.raises(KeyError, match="limit -1 is negative") as info:
        bad(a, c)
    assert any("'test.picky'" in n and "'picky'" in n for n in info.value.__notes__)
    assert not c.any()  # the kernel stopped before its consumer ran
    for _ in range(3):  # the process, the hook and later calls are fine
        good(a, c)
        np.testing.assert_allclose(c, np.minimum(a, 2) + 1)
    with pytest.raises(KeyError):
        bad(a, c)
    assert calls == [-1, 2, 2, 2, -1]
    assert callbacks.take_error() is None  # nothing left behind


def test_failure_inside_loop_leaves_every_loop(registered):
    """A call inside a loop nest (hand-written loop IR) that fails stops the
    whole function: the rest of the iterations do not run."""
    seen = []

    def step(i):
        seen.append(i)
        if i == 2:
            raise ValueError("stop at 2")

    registered("test.step", step)
    src = """
    func.func @steps(%A: memref<4x4xf32> {ember.name = "A", ember.output}) {
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %c4 = arith.constant 4 : index
      loop.for %i = %c0 to %c4 step %c1 {
        loop.for %j = %c0 to %c4 step %c1 {
          %k = arith.muli %i, %c4 : index
          %n = arith.addi %k, %j : index
          loop.call_packed "test.step"(%n) : index
        }
      }
      func.return
    }
    """
    mod = ember.build(src, name="steps")
    with pytest.raises(ValueError, match="stop at 2"):
        mod(np.zeros((4, 4), "float32"))
    assert seen == [0, 1, 2]


def test_unregistered_name_is_an_ember_error(registered):
    registered("test.sorted_copy", lambda x, y: None)
    A = te.placeholder((N,), name="A")
    B = te.extern(
        (N,),
        [A],
        lambda ins, outs: te.call_packed("test.sorted_cpy", ins[0], outs[0]),
        name="B",
    )
    mod = ember.build(te.create_schedule(B.op), [A, B], name="missing")
    args = (np.zeros(N, "float32"), np.zeros(N, "float32"))
    with pytest.raises(FunctionNotFoundError, match="'test.sorted_cpy'") as info:
        mod(*args)
    assert isinstance(info.value, EmberError)
    assert "did you mean 'test.sorted_copy'" in str(info.value)
    registered("test.sorted_cpy", lambda x, y: y.copyfrom(np.sort(x.numpy())))
    mod(*args)  # registered later: found at the next call


def test_without_a_hook_the_call_fails_cleanly(registered):
    registered("test.sort", lambda x, y: y.copyfrom(np.sort(x.numpy())))
    A, C = sort_between_computes()
    mod = ember.build(te.create_schedule(C.op), [A, C], name="nohook")
    hook = mod._engine.get_global_value_address(callbacks.HOOK_SYMBOL)
    slot = ctypes.c_void_p.from_address(hook)
    assert slot.value  # installed by the JIT
    slot.value = None
    args = (np.zeros(N, "float32"), np.zeros(N, "float32"))
    with pytest.raises(EmberError, match="nohook: no host function table: cannot"):
        mod(*args)
    callbacks.install(hook)
    mod(*args)


def test_callback_results_and_bad_results(registered):
    registered("test.answer", lambda out: 42)
    registered("test.junk", lambda out: [1, 2])
    A = te.placeholder((2,), name="A")
    for name, outcome in (("test.answer", None), ("test.junk", TypeError)):
        B = te.extern(
            (2,),
            [A],
            lambda ins, outs, name=name: te.call_packed(name, outs[0]),
            name="B",
        )
        mod = ember.build(te.create_schedule(B.op), [A, B], name="results")
        args = (np.zeros(2, "float32"), np.zeros(2, "float32"))
        if outcome is None:
            mod(*args)  # an int result is fine; the kernel ignores it
        else:
            with pytest.raises(TypeError, match="returned a list"):
                mod(*args)


def test_consumers_schedule_normally_extern_stages_refuse(registered):
    registered("test.sort", lambda x, y: y.copyfrom(np.sort(x.numpy())))
    A = te.placeholder((N,), name="A")
    A1 = te.compute((N,), lambda i: A[i] - 0.5, name="A1")
    B = te.extern(
        (N,),
        [A1],
        lambda ins, outs: te.call_packed("test.sort", ins[0], outs[0]),
        name="B",
    )
    C = te.compute((N,), lambda i: B[i] * 2.0, name="C")
    s = te.create_schedule(C.op)
    xo, xi = s[C].split(C.op.axis[0], factor=16)
    s[C].vectorize(xi)
    xo2, xi2 = s[A1].split(A1.op.axis[0], factor=8)
    s[A1].unroll(xi2)
    with pytest.raises(ScheduleError, match="'B' is an extern stage"):
        s[B].parallel(xo)
    with pytest.raises(ScheduleError, match="'B' is an extern stage"):
        s[B].compute_inline()
    with pytest.raises(ScheduleError, match="'B' is an extern stage"):
        s[B].compute_at(s[C], xo)
    with pytest.raises(ScheduleError, match="extern stage"):
        s.cache_write(B, "local")
    with pytest.raises(ScheduleError, match="'B' is an extern stage"):
        s.cache_read(A1, "local", [B])
    with pytest.raises(ScheduleError, match="'A1' is read by extern stage 'B'"):
        s[A1].compute_inline()
    with pytest.raises(ScheduleError, match="'A1' is read by extern stage 'B'"):
        s[A1].compute_at(s[C], xo)
    s[B].compute_root()  # the default: allowed
    mod = ember.build(s, [A, C], name="scheduled")
    a = RNG.standard_normal(N).astype("float32")
    c = np.empty(N, "float32")
    mod(a, c)
    np.testing.assert_allclose(c, np.sort(a - 0.5) * 2.0, rtol=1e-6)
    loop_ir = mod.get_source("loop")
    assert "vectorized" in loop_ir and "unrolled" in loop_ir


def test_extern_api_errors():
    A = te.placeholder((4,), name="A")
    other = te.placeholder((4,), name="other")

    def call(args):
        return lambda ins, outs: te.call_packed("f", *args(ins, outs))

    with pytest.raises(ValueError, match="several outputs are not supported"):
        te.extern([(4,), (4,)], [A], call(lambda i, o: [i[0]]), name="B")
    with pytest.raises(TypeError, match="expected fcompute to return"):
        te.extern((4,), [A], lambda ins, outs: ins[0], name="B")
    with pytest.raises(ValueError, match="tensor 'other' is not among"):
        te.extern((4,), [A], call(lambda i, o: [other, o[0]]), name="B")
    with pytest.raises(TypeError, match="argument 1: expected a buffer"):
        te.extern((4,), [A], call(lambda i, o: [o[0], [1, 2]]), name="B")
    with pytest.raises(ValueError, match="does not fit in int64"):
        te.call_packed("f", 2**64)
    with pytest.raises(ValueError, match="expected a function name"):
        te.call_packed("")
    B = te.extern([(4,)], [A], call(lambda i, o: [A, o[0], True, 1.5]), name="B")
    assert B.dtype == "float32" and B.shape == (4,)
    assert B.op.calls[0].args[0] is B.op.input_buffers[0]
    assert B.op.calls[0].args[2:] == [1, 1.5]


def test_parallel_loop_with_a_call_is_refused():
    src = """
    func.func @par(%A: memref<4xf32> {ember.name = "A", ember.output}) {
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %c4 = arith.constant 4 : index
      loop.for %i = %c0 to %c4 step %c1 parallel {
        loop.call_packed "test.step"(%i) : index
      }
      func.return
    }
    """
    with pytest.raises(PassFailedException, match="cannot run in a parallel loop"):
        ember.build(src, name="par")


def test_exported_library_calls_back_after_load_module(tmp_path):
    """Export in this process, load and run in a fresh one that has registered the
    function and imports neither xdsl nor llvmlite."""
    A, C = sort_between_computes()
    mod = ember.build(te.create_schedule(C.op), [A, C], name="sorted")
    if not hasattr(mod, "export_library"):
        pytest.skip("export_library has not landed")
    library = tmp_path / "sorted.so"
    mod.export_library(str(library))
    script = textwrap.dedent(
        f"""
        import sys
        sys.modules["xdsl"] = None; sys.modules["llvmlite"] = None
        import numpy as np
        from ember import runtime
        calls = []
        @runtime.register_func("test.sort")
        def sort(x, y):
            calls.append(x.shape)
            y.copyfrom(np.sort(x.numpy()))
        f = runtime.load_module({str(library)!r})["sorted"]
        a = np.random.default_rng(0).standard_normal({N}).astype("float32")
        c = np.empty({N}, "float32")
        f(a, c)
        assert np.allclose(c, np.sort(a - 0.5) * 2.0), c
        @runtime.register_func("test.sort", override=True)
        def broken(x, y):
            raise ZeroDivisionError("in the library")
        try:
            f(a, c)
        except ZeroDivisionError as e:
            assert "in the library" in str(e)
        else:
            raise AssertionError("no exception")
        assert "xdsl" not in sys.modules or sys.modules["xdsl"] is None
        print("ok", calls)
        """
    )
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, env=env
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == f"ok [({N},)]"


def negate_kernel(name: str, callback: str) -> ember.runtime.Module:
    A = te.placeholder((N,), name="A")
    B = te.extern(
        (N,),
        [A],
        lambda ins, outs: te.call_packed(callback, ins[0], outs[0]),
        name="B",
    )
    return ember.build(te.create_schedule(B.op), [A, B], name=name)


def test_nested_callbacks_report_the_innermost_exception(registered):
    """A callback that runs compiled code whose callback raises: the exception
    travels out through both kernels, each adding a note."""
    inner = negate_kernel("inner", "test.fails")
    outer = negate_kernel("outer", "test.runs_inner")
    registered("test.fails", lambda x, y: 1 / 0)
    registered("test.runs_inner", lambda x, y: inner(x, y))
    a, b = np.ones(N, "float32"), np.zeros(N, "float32")
    with pytest.raises(ZeroDivisionError) as info:
        outer(a, b)
    notes = info.value.__notes__
    assert "'test.fails', called by compiled function 'inner'" in notes[0]
    assert "'test.runs_inner', called by compiled function 'outer'" in notes[1]
    registered("test.fails", lambda x, y: y.copyfrom(-x.numpy()))
    outer(a, b)
    np.testing.assert_array_equal(b, -a)


def test_threads_keep_their_own_exceptions(registered):
    """Exceptions are kept per thread: concurrent calls each get their own."""
    import threading

    def by_sign(x, y):
        first = float(x.numpy()[0])
        if first < 0:
            raise ValueError(f"negative {first}")
        y.copyfrom(x.numpy() * 2)

    registered("test.by_sign", by_sign)
    mod = negate_kernel("by_sign", "test.by_sign")
    failures: list[str] = []

    def work(k: int) -> None:
        a = np.full(N, k - 1.5, "float32")
        b = np.zeros(N, "float32")
        for _ in range(50):
            try:
                mod(a, b)
            except ValueError as e:
                if k >= 2:
                    failures.append(f"thread {k}: unexpected {e}")
                elif str(e) != f"negative {k - 1.5}":
                    failures.append(f"thread {k}: someone else's {e}")
            else:
                if k < 2:
                    failures.append(f"thread {k}: no exception")
                elif not np.array_equal(b, a * 2):
                    failures.append(f"thread {k}: wrong result")

    threads = [threading.Thread(target=work, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert failures == []
    assert callbacks.take_error() is None


C_HOST = r"""
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>
#include "ember_runtime.h"

/* The host's own dispatcher: "c.fill"(out, value) fills a float32 tensor;
 * value < 0 fails with a message, as a host function would. */
static int32_t hook(const char* name, EmberValue* args, int32_t* codes,
                    int32_t n, EmberValue* ret, int32_t* ret_code) {
  if (strcmp(name, "c.fill") != 0 || n != 2 || codes[0] != EMBER_TYPE_DLTENSOR ||
      codes[1] != EMBER_TYPE_INT) {
    ret->v_handle = (void*)"c host: unexpected call";
    *ret_code = EMBER_TYPE_STR;
    return -1;
  }
  DLTensor* out = (DLTensor*)args[0].v_handle;
  if (args[1].v_int64 < 0) {
    ret->v_handle = (void*)"c host: negative fill";
    *ret_code = EMBER_TYPE_STR;
    return -1;
  }
  for (int64_t i = 0; i < out->shape[0]; i++)
    ((float*)out->data)[i] = (float)args[1].v_int64;
  *ret_code = EMBER_TYPE_NULL;
  return 0;
}

int main(int argc, char** argv) {
  void* lib = dlopen(argv[1], RTLD_NOW);
  if (!lib) { fprintf(stderr, "%s\n", dlerror()); return 2; }
  EmberPackedFunc f = (EmberPackedFunc)dlsym(lib, "filled");
  EmberCallPackedHook* slot = dlsym(lib, EMBER_CALL_PACKED_SYMBOL);
  if (!f || !slot) return 3;
  float x[4] = {1, 2, 3, 4}, y[4];
  int64_t shape[1] = {4};
  DLTensor tx = {x, {1, 0}, 1, {2, 32, 1}, shape, NULL, 0};
  DLTensor ty = {y, {1, 0}, 1, {2, 32, 1}, shape, NULL, 0};
  EmberValue args[2];
  int32_t codes[2] = {EMBER_TYPE_DLTENSOR, EMBER_TYPE_DLTENSOR};
  args[0].v_handle = &tx;
  args[1].v_handle = &ty;
  EmberValue ret;
  int32_t ret_code;
  int32_t rc = f(args, codes, 2, &ret, &ret_code);  /* no hook yet */
  printf("%d %s\n", rc, rc ? (const char*)ret.v_handle : "");
  *slot = hook;
  rc = f(args, codes, 2, &ret, &ret_code);
  printf("%d %g %g %g %g\n", rc, y[0], y[1], y[2], y[3]);
  return 0;
}
"""


@pytest.mark.skipif(not shutil.which("cc"), reason="no C compiler (cc) on PATH")
def test_c_host_installs_its_own_hook(tmp_path):
    """No Python at run time: a C program loads the library, calls the kernel
    without a hook (a clean error), then with its own dispatcher."""
    A = te.placeholder((4,), name="A")
    B = te.extern(
        (4,), [A], lambda ins, outs: te.call_packed("c.fill", outs[0], 7), name="B"
    )
    C = te.compute((4,), lambda i: B[i] + A[i], name="C")
    mod = ember.build(te.create_schedule(C.op), [A, C], name="filled")
    if not hasattr(mod, "export_library"):
        pytest.skip("export_library has not landed")
    library = tmp_path / "filled.so"
    mod.export_library(str(library))
    source = tmp_path / "host.c"
    source.write_text(C_HOST)
    include = os.path.join(os.path.dirname(ember.runtime.__file__), "include")
    host = tmp_path / "host"
    subprocess.run(
        [
            "cc",
            "-std=c99",
            "-D_GNU_SOURCE",
            "-I",
            include,
            str(source),
            "-o",
            str(host),
            "-ldl",
        ],
        check=True,
    )
    done = subprocess.run([str(host), str(library)], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [
        "-100 filled: no host function table: cannot call 'c.fill'",
        "0 8 9 10 11",
    ]
