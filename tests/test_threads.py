"""The thread count of parallel loops: set_num_threads / get_num_threads reach
modules loaded before and after, EMBER_NUM_THREADS, bad values, the automatic
count that leaves busy cores to other processes (ember.runtime.parallel)."""

import gc
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import ember
from ember.runtime import (
    EmberError,
    EmberTypeError,
    EmberValueError,
    get_num_threads,
    load_module,
    parallel,
    set_num_threads,
)

WHO = """
func.func @who(%A: memref<64xf32> {ember.name = "A"},
               %B: memref<64xf32> {ember.name = "B", ember.output},
               %N: memref<64xi32> {ember.name = "N", ember.output}) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c64 = arith.constant 64 : index
  %two = arith.constant 2.0 : f32
  loop.for %i = %c0 to %c64 step %c1 parallel {
    %n = func.call @omp_get_num_threads() : () -> i32
    memref.store %n, %N[%i] : memref<64xi32>
    %a = memref.load %A[%i] : memref<64xf32>
    %b = arith.mulf %a, %two : f32
    memref.store %b, %B[%i] : memref<64xf32>
  }
  func.return
}
func.func private @omp_get_num_threads() -> i32
"""
"""B = 2 * A, and in N the team size each iteration ran in."""


def team(mod) -> int:
    """Run `mod` once; check its result and return the team size it used."""
    a = np.arange(64, dtype=np.float32)
    b = np.zeros(64, np.float32)
    n = np.full(64, -1, np.int32)
    mod(a, b, n)
    np.testing.assert_array_equal(b, 2 * a)
    assert len(set(n.tolist())) == 1, n
    return int(n[0])


@pytest.fixture(autouse=True)
def default_count(monkeypatch):
    monkeypatch.delenv("EMBER_NUM_THREADS", raising=False)
    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    yield
    set_num_threads(0)


def test_set_num_threads_reaches_modules_loaded_before_and_after(tmp_path):
    before = ember.build(WHO, name="who")
    before.export_library(tmp_path / "who.so")
    set_num_threads(3)
    assert get_num_threads() == 3
    after = ember.build(WHO, name="who")
    library = load_module(tmp_path / "who.so")
    assert (team(before), team(after), team(library)) == (3, 3, 3)
    set_num_threads(1)
    assert (team(before), team(after), team(library)) == (1, 1, 1)
    assert get_num_threads() == 1


def test_the_call_wins_over_the_environment(monkeypatch):
    monkeypatch.setenv("EMBER_NUM_THREADS", "3")
    mod = ember.build(WHO, name="who")
    assert team(mod) == 3
    assert get_num_threads() == 3
    set_num_threads(2)
    assert team(mod) == 2
    set_num_threads(0)  # back to what the module was loaded with
    assert team(mod) == 3


def test_the_default_follows_the_free_cores(monkeypatch):
    mod = ember.build(WHO, name="who")
    cores = len(os.sched_getaffinity(0))
    assert 1 <= team(mod) <= cores
    assert 1 <= get_num_threads() <= cores


@pytest.mark.parametrize("bad", ["2", 2.0, True, None])
def test_a_count_that_is_not_an_int(bad):
    with pytest.raises(EmberTypeError, match="set_num_threads expects an int, got"):
        set_num_threads(bad)  # pyright: ignore[reportArgumentType]


@pytest.mark.parametrize("bad", [-1, 2**31])
def test_a_count_out_of_range(bad):
    with pytest.raises(
        EmberValueError, match=rf"expects a count in 1\.\..*, got {bad}"
    ):
        set_num_threads(bad)


def test_a_bad_environment_value_is_an_error_at_load_and_in_get(monkeypatch):
    monkeypatch.setenv("EMBER_NUM_THREADS", "many")
    with pytest.raises(EmberError, match="EMBER_NUM_THREADS must be a positive"):
        get_num_threads()
    with pytest.raises(EmberError, match="EMBER_NUM_THREADS must be a positive"):
        ember.build(WHO, name="who")


def test_omp_num_threads_is_left_to_libgomp(monkeypatch):
    monkeypatch.setenv("OMP_NUM_THREADS", "3,1")
    assert get_num_threads() == 3


def test_a_module_is_forgotten_with_its_code():
    mod = ember.build(WHO, name="who")
    assert mod in parallel._modules
    gc.collect()  # earlier tests' garbage first: then only `mod` goes
    count = len(parallel._modules)
    del mod
    gc.collect()
    assert len(parallel._modules) == count - 1
    set_num_threads(2)  # writes only to the globals of live modules


def test_team_size():
    # a core is free while others use less than a quarter of it
    assert [parallel.team_size(2, o) for o in (0.0, 0.2, 0.3, 1.0, 2.0, 5.0)] == [
        2,
        2,
        1,
        1,
        1,
        1,
    ]
    assert [parallel.team_size(8, o) for o in (0.0, 1.0, 2.8, 7.9)] == [8, 7, 5, 1]
    assert parallel.team_size(1, 0.0) == 1


PROC_STAT = """cpu  300 5 40 1000 7 0 1 2 0 0
cpu0 100 1 10 500 3 0 1 1 0 0
cpu1 200 4 30 500 4 0 0 1 0 0
intr 123
"""


def test_busy_ticks_count_all_but_idle_of_the_cpus_of_the_affinity():
    # user nice system idle iowait irq softirq steal: idle and iowait are free
    assert parallel._busy_ticks({0}, PROC_STAT) == 100 + 1 + 10 + 1 + 1
    assert parallel._busy_ticks({1}, PROC_STAT) == 200 + 4 + 30 + 1
    assert parallel._busy_ticks({0, 1}, PROC_STAT) == 113 + 235


def test_the_first_guess_counts_the_tasks_running_now():
    cores = parallel.available_cores()
    assert parallel._first_guess("0.5 0.4 0.3 1/99 123") == cores  # only us
    assert parallel._first_guess("0.5 0.4 0.3 9/99 123") == 1
    assert parallel._first_guess("garbage") == 0  # unknown: the monitor decides


FOLLOW = """
import os, time
import numpy as np
import ember
from ember.runtime import parallel

cores = len(os.sched_getaffinity(0))
ticks = [0]

def busy(cpus, text=None):
    # Other processes keep every core busy: the clock-tick count of the
    # affinity's cores grows by `cores` a tick.
    ticks[0] += int(os.environ["BUSY"]) * cores * 100
    return ticks[0]

parallel._busy_ticks = busy
parallel.WINDOW = 0.02
mod = ember.build('''{who}''', name="who")
a = np.arange(64, dtype=np.float32)
b = np.zeros(64, np.float32)
n = np.zeros(64, np.int32)
time.sleep(0.3)
mod(a, b, n)
assert (b == 2 * a).all()
print(cores, n[0], ember.runtime.get_num_threads())
"""


@pytest.mark.parametrize("others", ["busy", "idle"])
def test_the_automatic_count_leaves_busy_cores_to_others(others):
    # In a fresh process: its monitor thread sees what the fake /proc/stat says.
    env = {k: v for k, v in os.environ.items() if "NUM_THREADS" not in k}
    env["BUSY"] = "1" if others == "busy" else "0"
    done = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(FOLLOW.format(who=WHO))],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
    )
    assert done.returncode == 0, done.stderr
    cores, used, reported = map(int, done.stdout.split())
    # Busy: every core is taken, one thread is left. Idle: this process's own
    # time counts as nobody's, so every core is free.
    assert used == reported == (1 if others == "busy" else cores)


AFFINITY = """
import os, time
import numpy as np
import ember
from ember.runtime import parallel

parallel._busy_ticks = lambda cpus, text=None: 0  # nobody else is busy
parallel.WINDOW = 0.02
mod = ember.build('''{who}''', name="who")
a = np.arange(64, dtype=np.float32)
b = np.zeros(64, np.float32)
n = np.zeros(64, np.int32)

def team():
    time.sleep(0.3)  # a few windows
    mod(a, b, n)
    assert (b == 2 * a).all()
    return int(n[0])

cores = len(os.sched_getaffinity(0))
first = team()
os.sched_setaffinity(0, {{min(os.sched_getaffinity(0))}})  # taskset -p, in effect
print(cores, first, team())
"""


def test_the_default_follows_the_cpu_affinity():
    env = {k: v for k, v in os.environ.items() if "NUM_THREADS" not in k}
    done = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(AFFINITY.format(who=WHO))],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
    )
    assert done.returncode == 0, done.stderr
    cores, first, later = map(int, done.stdout.split())
    # Every core of the affinity while nobody else is busy; one core once the
    # process is restricted to one (libgomp alone would keep its first count).
    assert (first, later) == (cores, 1)


MONITOR = """
import gc, time
import ember
from ember.runtime import parallel

parallel.WINDOW = 0.01
mod = ember.build('''{who}''', name="who")
first = parallel._monitor
alive = first is not None and first.is_alive()
del mod
gc.collect()
first.join(5)  # no automatic module left: the monitor ends
again = ember.build('''{who}''', name="who")
print(alive, first.is_alive(), parallel._monitor is not first, parallel._monitor.is_alive())
"""


def test_the_monitor_runs_while_an_automatic_module_is_loaded():
    env = {k: v for k, v in os.environ.items() if "NUM_THREADS" not in k}
    done = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(MONITOR.format(who=WHO))],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["True", "False", "True", "True"]
