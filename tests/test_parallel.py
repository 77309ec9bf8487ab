"""Parallel loops run on libgomp: numerics against numpy, the thread count, threads
of the caller, libraries, and a clean exit (loop-outline-parallel and its runtime)."""

import ctypes
import os
import re
import subprocess
import sys
import textwrap
import threading
import time

import numpy as np
import pytest

import ember
from ember.runtime import EmberError, load_module


def elementwise(lo: int, hi: int, step: int, size: int) -> str:
    """B[i] = 2 * A[i] + 1 for i in range(lo, hi, step), in parallel."""
    return f"""
    func.func @k(%A: memref<{size}xf32> {{ember.name = "A"}},
                 %B: memref<{size}xf32> {{ember.name = "B", ember.output}}) {{
      %lo = arith.constant {lo} : index
      %hi = arith.constant {hi} : index
      %step = arith.constant {step} : index
      %one = arith.constant 1.0 : f32
      %two = arith.constant 2.0 : f32
      loop.for %i = %lo to %hi step %step parallel {{
        %a = memref.load %A[%i] : memref<{size}xf32>
        %b = arith.mulf %a, %two : f32
        %c = arith.addf %b, %one : f32
        memref.store %c, %B[%i] : memref<{size}xf32>
      }}
      func.return
    }}
    """


def check_elementwise(lo: int, hi: int, step: int, size: int) -> None:
    mod = ember.build(elementwise(lo, hi, step, size), name="k")
    a = np.random.default_rng(0).standard_normal(size).astype(np.float32)
    b = np.full(size, -7.0, np.float32)
    mod(a, b)
    want = np.full(size, -7.0, np.float32)
    want[lo:hi:step] = 2 * a[lo:hi:step] + 1
    np.testing.assert_array_equal(b, want)


@pytest.mark.parametrize(
    ("lo", "hi", "step", "size"),
    [
        (0, 1, 1, 1),  # one iteration: every thread but one has nothing to do
        (0, 2, 1, 2),
        (0, 3, 1, 3),
        (0, 101, 1, 101),  # odd: blocks of 51 and 50
        (0, 4099, 1, 4099),
        (3, 100, 7, 100),  # offset start and a step: 14 iterations
        (5, 5, 1, 8),  # empty
        (6, 2, 1, 8),  # upper below lower: empty, not negative
    ],
)
def test_elementwise(lo, hi, step, size):
    check_elementwise(lo, hi, step, size)


@pytest.mark.parametrize(("lo", "hi", "step", "size"), [(0, 3, 1, 3), (1, 30, 4, 30)])
def test_fewer_iterations_than_threads(monkeypatch, lo, hi, step, size):
    # Eight threads on three (or eight) iterations: some get empty blocks.
    monkeypatch.setenv("EMBER_NUM_THREADS", "8")
    check_elementwise(lo, hi, step, size)


ROWSUM = """
func.func @rowsum(%A: memref<37x53xf32> {ember.name = "A"},
                  %C: memref<37xf32> {ember.name = "C", ember.output}) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %rows = arith.constant 37 : index
  %cols = arith.constant 53 : index
  %zero = arith.constant 0.0 : f32
  loop.for %i = %c0 to %rows step %c1 parallel {
    %acc = loop.alloc local : memref<f32>
    memref.store %zero, %acc[] : memref<f32>
    loop.for %j = %c0 to %cols step %c1 {
      %a = memref.load %A[%i, %j] : memref<37x53xf32>
      %s = memref.load %acc[] : memref<f32>
      %t = arith.addf %s, %a : f32
      memref.store %t, %acc[] : memref<f32>
    }
    %r = memref.load %acc[] : memref<f32>
    memref.store %r, %C[%i] : memref<37xf32>
  }
  func.return
}
"""


def test_parallel_rows_serial_reduction():
    mod = ember.build(ROWSUM, name="rowsum")
    a = np.random.default_rng(1).standard_normal((37, 53)).astype(np.float32)
    c = np.zeros(37, np.float32)
    mod(a, c)
    np.testing.assert_allclose(c, a.sum(axis=1), rtol=1e-5, atol=1e-5)


# Each iteration fills its own 16-element scratch buffer (indexed by a loop
# variable, so LLVM keeps it in memory), then reduces it: threads sharing one
# buffer would mix their rows.
SCRATCH = """
func.func @scratch(%A: memref<64x16xf32> {ember.name = "A"},
                   %C: memref<64xf32> {ember.name = "C", ember.output}) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c16 = arith.constant 16 : index
  %c64 = arith.constant 64 : index
  %zero = arith.constant 0.0 : f32
  loop.for %i = %c0 to %c64 step %c1 parallel {
    %T = loop.alloc local : memref<16xf32>
    loop.for %k = %c0 to %c16 step %c1 {
      %a = memref.load %A[%i, %k] : memref<64x16xf32>
      %kk = arith.index_cast %k : index to i32
      %kf = arith.sitofp %kk : i32 to f32
      %p = arith.mulf %a, %kf : f32
      memref.store %p, %T[%k] : memref<16xf32>
    }
    %acc = loop.alloc local : memref<f32>
    memref.store %zero, %acc[] : memref<f32>
    loop.for %k = %c0 to %c16 step %c1 {
      %r = arith.subi %c16, %k : index
      %rr = arith.subi %r, %c1 : index
      %t = memref.load %T[%rr] : memref<16xf32>
      %s = memref.load %acc[] : memref<f32>
      %u = arith.addf %s, %t : f32
      memref.store %u, %acc[] : memref<f32>
    }
    %v = memref.load %acc[] : memref<f32>
    memref.store %v, %C[%i] : memref<64xf32>
  }
  func.return
}
"""


def scratch_reference(a: np.ndarray) -> np.ndarray:
    return (a * np.arange(16, dtype=np.float32)).sum(axis=1)


def test_local_buffer_per_iteration():
    mod = ember.build(SCRATCH, name="scratch")
    a = np.random.default_rng(2).standard_normal((64, 16)).astype(np.float32)
    c = np.zeros(64, np.float32)
    for _ in range(20):
        c[:] = 0
        mod(a, c)
        np.testing.assert_allclose(c, scratch_reference(a), rtol=1e-5, atol=1e-5)
    # The scratch buffer is a static alloca in the entry block of the outlined
    # function, not in its loop.
    source = mod.get_source("ll-unopt")
    start = re.search(r'define internal void @"?scratch_parallel0"?\(', source)
    assert start is not None
    body = source[start.start() : source.index("\n}", start.start())]
    _, entry, *loops = re.split(r"\n[\w.\"]+:\n", body)
    assert loops
    assert entry.count(" alloca ") == 2
    assert body.count(" alloca ") == 2


# Scalars and an index captured from a private function's arguments, a parallel
# loop inside a serial one (capturing its induction variable), a global buffer
# captured by the loop, and a parallel loop nested in a parallel loop.
CAPTURES = """
func.func @captures(%A: memref<6x40xf32> {ember.name = "A"},
                    %B: memref<6x40xf32> {ember.name = "B", ember.output}) {
  %n = arith.constant 37 : index
  %s = arith.constant 0.5 : f32
  %k = arith.constant 3 : i32
  func.call @helper(%A, %B, %n, %s, %k)
      : (memref<6x40xf32>, memref<6x40xf32>, index, f32, i32) -> ()
  func.return
}
func.func private @helper(%A: memref<6x40xf32>, %B: memref<6x40xf32>, %n: index,
                          %s: f32, %k: i32) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c6 = arith.constant 6 : index
  %T = loop.alloc : memref<40xf32>
  loop.for %r = %c0 to %c6 step %c1 {
    loop.for %i = %c0 to %n step %c1 parallel {
      %a = memref.load %A[%r, %i] : memref<6x40xf32>
      %kf = arith.sitofp %k : i32 to f32
      %ri = arith.index_cast %r : index to i32
      %rf = arith.sitofp %ri : i32 to f32
      %x = arith.mulf %a, %s : f32
      %y = arith.addf %x, %kf : f32
      %z = arith.addf %y, %rf : f32
      memref.store %z, %T[%i] : memref<40xf32>
    }
    loop.for %i = %c0 to %n step %c1 parallel {
      loop.for %j = %c0 to %c1 step %c1 parallel {
        %t = memref.load %T[%i] : memref<40xf32>
        %ij = arith.addi %i, %j : index
        memref.store %t, %B[%r, %ij] : memref<6x40xf32>
      }
    }
  }
  func.return
}
"""


def test_captured_scalars_buffers_and_nesting():
    mod = ember.build(CAPTURES, name="captures")
    a = np.random.default_rng(3).standard_normal((6, 40)).astype(np.float32)
    b = np.full((6, 40), -1.0, np.float32)
    mod(a, b)
    want = np.full((6, 40), -1.0, np.float32)
    rows = np.arange(6, dtype=np.float32)[:, None]
    want[:, :37] = (a * 0.5 + 3.0 + rows)[:, :37]
    np.testing.assert_allclose(b, want, rtol=1e-6)


def test_calls_from_several_python_threads():
    # Each Python thread's calls get their own team of libgomp threads; a row's
    # result does not depend on who computes it, so every call must give exactly
    # the result of a lone call.
    mod = ember.build(SCRATCH, name="scratch")
    rng = np.random.default_rng(4)
    inputs = [rng.standard_normal((64, 16)).astype(np.float32) for _ in range(4)]
    expected = []
    for a in inputs:
        expected.append(np.zeros(64, np.float32))
        mod(a, expected[-1])
        np.testing.assert_allclose(expected[-1], scratch_reference(a), atol=1e-5)
    errors: list[BaseException] = []

    def run(a: np.ndarray, want: np.ndarray) -> None:
        c = np.zeros(64, np.float32)
        try:
            for _ in range(200):
                c[:] = 0
                mod(a, c)
                np.testing.assert_array_equal(c, want)
        except BaseException as e:  # reported by the main thread
            errors.append(e)

    workers = [
        threading.Thread(target=run, args=pair)
        for pair in zip(inputs, expected, strict=True)
    ]
    for w in workers:
        w.start()
    for w in workers:
        w.join()
    assert not errors, errors[0]


def test_invalid_thread_count(monkeypatch):
    monkeypatch.setenv("EMBER_NUM_THREADS", "lots")
    with pytest.raises(EmberError, match="EMBER_NUM_THREADS must be a positive"):
        ember.build(elementwise(0, 4, 1, 4), name="k")
    monkeypatch.setenv("EMBER_NUM_THREADS", "0")
    with pytest.raises(EmberError, match="got '0'"):
        ember.build(elementwise(0, 4, 1, 4), name="k")


# Each iteration records which thread ran it and the size of its team.
WHO = """
func.func @who(%T: memref<64xi32> {ember.name = "T", ember.output},
               %N: memref<64xi32> {ember.name = "N", ember.output}) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c64 = arith.constant 64 : index
  loop.for %i = %c0 to %c64 step %c1 parallel {
    %t = func.call @omp_get_thread_num() : () -> i32
    %n = func.call @omp_get_num_threads() : () -> i32
    memref.store %t, %T[%i] : memref<64xi32>
    memref.store %n, %N[%i] : memref<64xi32>
  }
  func.return
}
func.func private @omp_get_thread_num() -> i32
func.func private @omp_get_num_threads() -> i32
"""

WHO_SCRIPT = f"""
import numpy as np, ember
mod = ember.build('''{WHO}''', name="who")
t = np.full(64, -1, np.int32)
n = np.full(64, -1, np.int32)
mod(t, n)
print(sorted(set(t.tolist())), sorted(set(n.tolist())))
"""


def run_fresh(script: str, **env: str) -> subprocess.CompletedProcess:
    environ = {
        k: v
        for k, v in os.environ.items()
        if k not in ("EMBER_NUM_THREADS", "OMP_NUM_THREADS")
    }
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(script)],
        capture_output=True,
        text=True,
        timeout=120,
        env={**environ, **env},
    )


def default_threads() -> int:
    return len(os.sched_getaffinity(0))


@pytest.mark.parametrize(
    ("env", "threads"),
    [
        ({"EMBER_NUM_THREADS": "1"}, 1),
        ({"EMBER_NUM_THREADS": "2"}, 2),
        ({"EMBER_NUM_THREADS": "3"}, 3),
        ({"OMP_NUM_THREADS": "3"}, 3),
        ({"EMBER_NUM_THREADS": "1", "OMP_NUM_THREADS": "3"}, 1),
        ({}, None),
    ],
)
def test_thread_count_from_the_environment(env, threads):
    start = time.monotonic()
    done = run_fresh(WHO_SCRIPT, **env)
    elapsed = time.monotonic() - start
    assert done.returncode == 0, done.stderr
    if threads is None:  # automatic: the cores other processes leave free
        threads = int(done.stdout.split("[")[-1].rstrip("]\n"))
        assert 1 <= threads <= default_threads()
    # Every thread of the team got a block of the 64 iterations, and the process
    # exited promptly although libgomp's workers were still alive.
    assert done.stdout.strip() == f"{list(range(threads))} {[threads]}"
    assert elapsed < 60


def test_library_without_libgomp_linked(tmp_path):
    # An object linked without -lgomp: load_module loads libgomp first, and the
    # library takes its thread count from EMBER_NUM_THREADS.
    mod = ember.build(WHO, name="who")
    mod.save(tmp_path / "who.o")
    so = tmp_path / "who.so"
    linked = subprocess.run(
        ["cc", "-shared", "-o", str(so), str(tmp_path / "who.o")],
        capture_output=True,
        text=True,
    )
    if linked.returncode != 0:
        pytest.skip(f"no system linker: {linked.stderr.strip()}")
    script = f"""
    import numpy as np
    from ember.runtime import load_module
    mod = load_module({str(so)!r})
    t = np.full(64, -1, np.int32)
    n = np.full(64, -1, np.int32)
    mod(t, n)
    print(sorted(set(t.tolist())), sorted(set(n.tolist())))
    """
    done = run_fresh(script, EMBER_NUM_THREADS="3")
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[0, 1, 2] [3]"
    bad = run_fresh(script, EMBER_NUM_THREADS="-2")
    assert bad.returncode != 0
    assert "EMBER_NUM_THREADS must be a positive integer, got '-2'" in bad.stderr


def test_library_thread_count_in_process(tmp_path, monkeypatch):
    mod = ember.build(WHO, name="who")
    mod.save(tmp_path / "who.o")
    so = tmp_path / "who.so"
    if subprocess.run(
        ["cc", "-shared", "-o", str(so), str(tmp_path / "who.o")]
    ).returncode:
        pytest.skip("no system linker")
    monkeypatch.setenv("EMBER_NUM_THREADS", "2")
    lib = load_module(so)
    count = ctypes.c_int32.in_dll(lib._lib, "__ember_num_threads")  # type: ignore[attr-defined]
    assert count.value == 2
    t = np.full(64, -1, np.int32)
    n = np.full(64, -1, np.int32)
    lib(t, n)
    assert set(n.tolist()) == {2}
    assert set(t.tolist()) == {0, 1}


def test_loop_that_captures_nothing():
    # The worker gets a null pointer for its data; the loop asks only libgomp.
    mod = ember.build(
        """
        func.func @nothing() {
          %c0 = arith.constant 0 : index
          %c1 = arith.constant 1 : index
          %c8 = arith.constant 8 : index
          loop.for %i = %c0 to %c8 step %c1 parallel {
            %t = func.call @omp_get_thread_num() : () -> i32
          }
          func.return
        }
        func.func private @omp_get_thread_num() -> i32
        """,
        name="nothing",
    )
    mod()


def test_te_schedule_parallel():
    # The TVM-style schedule: a split loop whose outer part is parallel, and a
    # reduction whose rows are.
    from ember import te

    n = 1000
    A = te.placeholder((n,), name="A")
    B = te.placeholder((n,), name="B")
    C = te.compute((n,), lambda i: A[i] * B[i] + 1.0, name="C")
    s = te.create_schedule(C.op)
    xo, xi = s[C].split(C.op.axis[0], factor=64)
    s[C].vectorize(xi)
    s[C].parallel(xo)
    mod = ember.build(s, [A, B, C], name="fma")
    assert "GOMP_parallel" in mod.get_source("ll")
    rng = np.random.default_rng(5)
    a, b = rng.standard_normal((2, n)).astype(np.float32)
    c = np.zeros(n, np.float32)
    mod(a, b, c)
    np.testing.assert_allclose(c, a * b + 1, rtol=1e-6, atol=1e-6)  # fused

    M = te.placeholder((33, 70), name="M")
    k = te.reduce_axis((0, 70), name="k")
    R = te.compute((33,), lambda i: te.sum(M[i, k], axis=k), name="R")
    s = te.create_schedule(R.op)
    s[R].parallel(R.op.axis[0])
    mod = ember.build(s, [M, R], name="rows")
    m = rng.standard_normal((33, 70)).astype(np.float32)
    r = np.zeros(33, np.float32)
    mod(m, r)
    np.testing.assert_allclose(r, m.sum(axis=1), rtol=1e-5, atol=1e-5)


def test_exit_after_freeing_parallel_code():
    # libgomp's idle workers outlive the JIT code they ran; freeing the module,
    # compiling another and exiting must neither crash nor hang.
    script = f"""
    import gc
    import numpy as np, ember
    for _ in range(3):
        mod = ember.build('''{elementwise(0, 257, 1, 257)}''', name="k")
        a = np.ones(257, np.float32)
        b = np.zeros(257, np.float32)
        mod(a, b)
        assert (b == 3).all()
        del mod
        gc.collect()
    print("done")
    """
    start = time.monotonic()
    done = run_fresh(script, EMBER_NUM_THREADS="4")
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "done"
    assert time.monotonic() - start < 60
