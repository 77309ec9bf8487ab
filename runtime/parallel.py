"""Parallel loops at run time: libgomp, and how many threads they use.

Compiled parallel loops run on libgomp (``GOMP_parallel``). A module that has
any defines the int32 global ``__ember_num_threads``: the team size every
parallel region of the module asks libgomp for (0: libgomp's own default). The
loader registers the module here (the JIT and ``load_module`` both do), and
this module keeps the global of every loaded module, weakly, so a count set
later reaches modules already loaded. A global rather than
``omp_set_num_threads`` because libgomp keeps that setting per calling thread:
a global holds for calls from every Python thread alike.

Who decides the count, first match wins:

1. ``set_num_threads(n)``: every module, loaded or loaded later, uses ``n``.
2. ``EMBER_NUM_THREADS=n`` as it is when a module is loaded: that module uses ``n``.
3. ``OMP_NUM_THREADS`` set: libgomp's choice (it reads the variable once).
4. Otherwise automatic: the cores this process may run on
   (``os.sched_getaffinity``), less those other processes keep busy, at least
   one. A libgomp team waits at the end of every parallel region for its
   slowest thread; a thread whose core another process holds arrives a
   scheduler slice late, and the whole team waits, region after region. So
   while other processes use a core, ember's loops leave it to them (see
   ``team_size``). A daemon thread measures, every ``WINDOW`` seconds while an
   automatic module is loaded, the CPU time the machine's cores spent on other
   processes (``/proc/stat``, less this process's own time) and writes the
   count into the modules' globals; each parallel region reads it afresh.
   Until its first window, the tasks running when the module is loaded
   (``/proc/loadavg``) make the guess. Without ``/proc`` the count is the
   cores of the affinity.

libgomp's spin-waiting (``GOMP_SPINCOUNT``, ``OMP_WAIT_POLICY``) is left at its
default: on a free machine its threads must spin to catch the next region
(sleeping made a model 3x slower), and under load the automatic count keeps
teams away from busy cores instead.
"""

import ctypes
import ctypes.util
import math
import os
import threading
import time
import weakref
from functools import cache

from .errors import EmberError, EmberTypeError, EmberValueError

NUM_THREADS_SYMBOL = "__ember_num_threads"
"""The int32 global of a module with parallel loops: threads per parallel
region, 0 for libgomp's default."""

NUM_THREADS_ENV = "EMBER_NUM_THREADS"
"""The environment variable that sets the thread count of modules loaded after
it is set; it wins over ``OMP_NUM_THREADS``."""

MAX_THREADS = 2**31 - 1

WINDOW = 0.1
"""Seconds between two decisions of the automatic count (``/proc/stat`` counts
in 10 ms ticks: a tenth of a core at this window)."""

SPARE = 0.25
"""The share of a core other processes may use that still counts as free.
Measured (MobileNetV2 224, 2 cores, a neighbour busy for a share of every
10 ms; runs a second, two threads vs one): 15% 314 vs 198 and 182 vs 198; 30%
287 vs 203, but once 3.5 (p90 1.1 s); 40% 153-171 vs 192-201; 50% 5.5 vs 206.
Two threads gain up to 1.6x beside a light neighbour and lose up to 50x beside
a heavier one, so a core is left to others from a quarter on."""


def num_threads_from_env() -> int:
    """The thread count ``EMBER_NUM_THREADS`` asks for; 0 when it is unset.

    Returns:
        A positive count, or 0 to leave the choice to ember's default.

    Raises:
        EmberError: the variable is set to something other than a positive
            integer.

    Example:
        >>> os.environ["EMBER_NUM_THREADS"] = "2"
        >>> num_threads_from_env()
        2
        >>> del os.environ["EMBER_NUM_THREADS"]
    """
    text = os.environ.get(NUM_THREADS_ENV, "").strip()
    if not text:
        return 0
    try:
        count = int(text)
    except ValueError:
        count = 0
    if count < 1 or count > MAX_THREADS:
        raise EmberError(f"{NUM_THREADS_ENV} must be a positive integer, got {text!r}")
    return count


def available_cores() -> int:
    """The cores this process may run on (its CPU affinity)."""
    return len(_affinity())


def _affinity() -> set[int]:
    try:
        return set(os.sched_getaffinity(os.getpid()))  # the main thread's
    except (AttributeError, OSError):
        return set(range(os.cpu_count() or 1))


def team_size(cores: int, others: float) -> int:
    """The automatic team size: `cores` less those other processes keep busy.

    Args:
        cores: the cores this process may run on.
        others: how many cores other processes used, on average, lately.

    Returns:
        The cores left free, a core counting as free while others use less
        than ``SPARE`` (a quarter) of it; at least 1.

    Example:
        >>> team_size(2, 0.2), team_size(2, 0.3), team_size(2, 1.9)
        (2, 1, 1)
    """
    return max(1, min(cores, math.floor(cores - others + SPARE)))


# Module → the address of its global, weakly: a module's global dies with it
# (JIT code is freed with its engine). `_fixed` holds the count of the modules
# that do not follow the automatic count (EMBER_NUM_THREADS at load, or
# OMP_NUM_THREADS: 0).
_modules: "weakref.WeakKeyDictionary[object, int]" = weakref.WeakKeyDictionary()
_fixed: "weakref.WeakKeyDictionary[object, int]" = weakref.WeakKeyDictionary()
_lock = threading.Lock()
_requested = 0  # set_num_threads: 0 when never called (or reset)
_auto = 0  # the automatic count of the last window; 0 before the first
_monitor: "threading.Thread | None" = None


def _write(address: int, count: int) -> None:
    ctypes.c_int32.from_address(address).value = count


def _count_for(module: object) -> int:
    if _requested:
        return _requested
    if module in _fixed:
        return _fixed[module]
    return _auto or available_cores()


def register(module: object, address: int) -> None:
    """Give a loaded module with parallel loops its thread count, now and
    whenever it changes.

    Args:
        module: the module object owning the global; the global is forgotten
            when the module is.
        address: where the module's ``__ember_num_threads`` is.

    Raises:
        EmberError: ``EMBER_NUM_THREADS`` is not a positive integer.
    """
    env = num_threads_from_env()
    global _auto
    with _lock:
        _modules[module] = address
        if env or os.environ.get("OMP_NUM_THREADS", "").strip():
            _fixed[module] = env
        elif not _auto:
            _auto = _first_guess()
        _write(address, _count_for(module))
        if module not in _fixed:
            _start_monitor()


def configure_library(lib: ctypes.CDLL, module: object) -> None:
    """Register a loaded library, if it has parallel loops (see ``register``).

    Args:
        lib: the library, loaded with ctypes.
        module: the module object that keeps `lib` loaded.

    Raises:
        EmberError: ``EMBER_NUM_THREADS`` is not a positive integer.
    """
    try:
        count = ctypes.c_int32.in_dll(lib, NUM_THREADS_SYMBOL)
    except ValueError:
        return  # no parallel loops
    register(module, ctypes.addressof(count))


def set_num_threads(count: int) -> None:
    """Set the threads of every parallel loop, in modules loaded and loaded later.

    Args:
        count: threads per parallel region; 0 goes back to the default
            (``EMBER_NUM_THREADS`` as it was when each module was loaded, else
            the automatic count, see ``ember.runtime.parallel``).

    Raises:
        EmberTypeError: `count` is not an int (also a ``TypeError``).
        EmberValueError: `count` is negative or above 2**31 - 1 (also a
            ``ValueError``).

    Example:
        >>> import ember.runtime
        >>> ember.runtime.set_num_threads(1)  # one thread: no team at all
        >>> ember.runtime.get_num_threads()
        1
        >>> ember.runtime.set_num_threads(0)
    """
    global _requested
    if isinstance(count, bool) or not isinstance(count, int):
        raise EmberTypeError(
            f"set_num_threads expects an int, got {type(count).__name__} {count!r}"
        )
    if count < 0 or count > MAX_THREADS:
        raise EmberValueError(
            f"set_num_threads expects a count in 1..{MAX_THREADS}, or 0 for the "
            f"default, got {count}"
        )
    with _lock:
        _requested = count
        for module, address in list(_modules.items()):
            _write(address, _count_for(module))
        if not count:
            _start_monitor()


def get_num_threads() -> int:
    """The threads a parallel loop of a module loaded now would use.

    Returns:
        ``set_num_threads``'s count, else ``EMBER_NUM_THREADS``, else the first
        count of ``OMP_NUM_THREADS``, else the automatic count.

    Raises:
        EmberError: ``EMBER_NUM_THREADS`` is not a positive integer.
    """
    if _requested:
        return _requested
    if env := num_threads_from_env():
        return env
    omp = os.environ.get("OMP_NUM_THREADS", "").split(",")[0].strip()
    if omp.isdigit() and int(omp) > 0:
        return int(omp)
    return _auto or available_cores()


def _start_monitor() -> None:
    """Start the thread that follows the load, unless it runs (hold `_lock`)."""
    global _monitor
    if _requested or (_monitor is not None and _monitor.is_alive()):
        return
    if _busy_ticks(_affinity()) is None:
        return  # no /proc/stat: the count stays the cores of the affinity
    _monitor = threading.Thread(target=_follow_load, name="ember-threads", daemon=True)
    _monitor.start()


def _busy_ticks(cpus: set[int], text: str | None = None) -> int | None:
    """Busy time of `cpus` since boot in clock ticks (``/proc/stat``: all but
    idle and iowait; steal counts as busy, the core was not ours)."""
    if text is None:
        try:
            with open("/proc/stat") as f:
                text = f.read()
        except OSError:
            return None
    total = 0
    for line in text.splitlines():
        name, _, rest = line.partition(" ")
        if not (name.startswith("cpu") and name[3:].isdigit()):
            continue
        if int(name[3:]) in cpus:
            fields = [int(v) for v in rest.split()]
            total += sum(fields[:8]) - fields[3] - fields[4]
    return total


def _first_guess(text: str | None = None) -> int:
    """The automatic count before the monitor's first window: from the tasks
    running this instant (``/proc/loadavg``'s fourth field, this thread
    included), so that a model loaded on a busy machine does not run its first
    calls with a team the other processes keep waiting."""
    try:
        if text is None:
            with open("/proc/loadavg") as f:
                text = f.read()
        running = int(text.split()[3].split("/")[0])
    except (OSError, IndexError, ValueError):
        return 0
    return team_size(available_cores(), max(0, running - 1))


def _automatic() -> list[tuple[object, int]]:
    """The modules that follow the automatic count (hold `_lock`)."""
    if _requested:
        return []
    return [(m, a) for m, a in list(_modules.items()) if m not in _fixed]


def _follow_load() -> None:
    """Every WINDOW: others' busy cores → the team size of automatic modules;
    ends when none is left."""
    global _auto, _monitor
    hz = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100
    cpus = _affinity()
    before = (time.monotonic(), _busy_ticks(cpus), time.process_time())
    while True:
        time.sleep(WINDOW)
        now_cpus = _affinity()
        after = (time.monotonic(), _busy_ticks(now_cpus), time.process_time())
        if now_cpus != cpus or before[1] is None or after[1] is None:
            cpus, before = now_cpus, after  # the affinity changed: measure anew
            continue
        wall = after[0] - before[0]
        others = (after[1] - before[1]) / hz - (after[2] - before[2])
        before = after
        with _lock:
            modules = _automatic()
            if not modules:
                # Under the lock: a module registered after this sees no
                # monitor and starts one.
                _auto, _monitor = 0, None
                return
            _auto = team_size(len(cpus), max(0.0, others / wall))
            for _, address in modules:
                _write(address, _auto)
            del modules  # held through the next sleep, it would keep them alive


def _after_fork() -> None:
    # The monitor does not survive fork; the child starts its own.
    global _monitor, _lock
    _lock = threading.Lock()
    _monitor = None
    if _automatic():
        _start_monitor()


if hasattr(os, "register_at_fork"):
    os.register_at_fork(after_in_child=_after_fork)


def needs_openmp(error: OSError) -> bool:
    """Whether a library failed to load because libgomp is not loaded."""
    message = str(error)
    return "undefined symbol: GOMP_" in message or "undefined symbol: omp_" in message


@cache
def load_openmp() -> bool:
    """Load libgomp into this process for every library after it (RTLD_GLOBAL).

    Returns:
        False if this system has no libgomp.
    """
    for name in (ctypes.util.find_library("gomp"), "libgomp.so.1"):
        if name:
            try:
                ctypes.CDLL(name, mode=ctypes.RTLD_GLOBAL)
            except OSError:
                continue
            return True
    return False
