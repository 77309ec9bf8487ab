"""Kernels of an ahead-of-time model: te IR → code, once per structure.

Each kernel of a model is compiled on its own by its target's backend
(`Backend.compile_kernel`). For a CPU that is a relocatable object whose one
public symbol is the kernel's *bare-pointer* function (`@ember_<kind>_<hash>`:
one `ptr` per buffer, no argument checks): the model's entry, `default_run`,
has checked its own arguments and calls the kernels directly with views of its
workspace and params. For a GPU it is a piece of a launch plan
(`backends/source/gpu_model.py`). Kernels are cached by the sha256 of their te
IR, the resolved target, the kernel's passes and ember's own sources (see
`ember.backends.kernel_cache`), so identical layers compile once, and a warm cache
compiles nothing.

Every kernel first runs `KERNELS_TO_LOOP` (`ember.passes.pipelines`): its
`convert-te-to-loop` with `scratch-args`, so a kernel allocates nothing; each
intermediate buffer of its own (a padded or packed input, a pooling column
pass) is an `ember.scratch` argument after its output, which the model's entry
points into its planned memory (`scratch_buffers` of `convert-te-to-loop`
lists them before anything compiles, for the memory plan). The CPU backend
then runs `LOOP_TO_CF` and `TO_LLVM` (no packed entry, no metadata): every
buffer is `noalias` (the memory plan never gives a kernel an output that
overlaps another of its arguments), and `@__ember_num_threads` is an external
declaration, defined once by the model's entry, so the objects link together
(in the JIT and in a shared library) without duplicate symbols.

Cache misses compile in a pool of worker processes, one per core, since the
xDSL passes are Python and hold the GIL.
"""

from __future__ import annotations

import os
import struct
from collections import OrderedDict
from collections.abc import Callable, Iterator, Mapping, Sequence
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ember.backends.kernel_cache import CompileCache
from ember.runtime.errors import EmberValueError

if TYPE_CHECKING:
    from ember.backends.llvm import Target

HASHED_NAME = "kernel"
"""The function name a kernel's te IR carries when it is hashed, so that the
key depends on its structure only; it is renamed to its symbol afterwards."""


def kernel_passes(
    target: str | Mapping[str, Any] | Target | None = None,
) -> tuple[str, ...]:
    """The passes each kernel of a model for `target` runs: `KERNELS_TO_LOOP`,
    then its backend's (`Backend.kernel_passes`; the CPU's by default)."""
    from ember.backends import backend
    from ember.backends.source import target_kind
    from ember.passes.pipelines import KERNELS_TO_LOOP

    return (*KERNELS_TO_LOOP, *backend(target_kind(target)).kernel_passes())


@dataclass
class KernelBuild:
    """How `te-compile-kernels` compiles the kernels of the running pipeline:
    the cache, the worker processes, and who is told of each kernel."""

    cache: CompileCache | None = None
    """None: the process-wide cache (`ember.backends.kernel_cache.default_cache`)."""
    workers: int | None = None
    """Processes compiling misses; None: one per core."""
    report: Callable[[int, int, str, bool], None] | None = None
    """Called as `report(done, total, symbol, cache_hit)` after each kernel."""


_BUILD: ContextVar[KernelBuild | None] = ContextVar("ember_kernel_build", default=None)


@contextmanager
def kernel_build(build: KernelBuild) -> Iterator[KernelBuild]:
    """Compile the kernels of pipelines run inside the block as `build` says."""
    token = _BUILD.set(build)
    try:
        yield build
    finally:
        _BUILD.reset(token)


def current_build() -> KernelBuild:
    """The `KernelBuild` around the running pass, or the defaults."""
    return _BUILD.get() or KernelBuild()


_TE_SOURCES: OrderedDict[str, str] = OrderedDict()
_TE_SOURCES_KEPT = 4096


def keep_te_source(key: str, text: str) -> None:
    """Remember, in this process, the te IR of the kernel compiled under `key`
    (what `get_source` of a model's kernel lowers again); the last
    `_TE_SOURCES_KEPT` kernels are kept."""
    _TE_SOURCES[key] = text
    _TE_SOURCES.move_to_end(key)
    while len(_TE_SOURCES) > _TE_SOURCES_KEPT:
        _TE_SOURCES.popitem(last=False)


def te_source(key: str) -> str | None:
    """The te IR `keep_te_source` kept for `key`, if this process has it."""
    return _TE_SOURCES.get(key)


def kernel_key(text: str, target: str | Mapping[str, Any] | Target) -> str:
    """A kernel's cache key: its te IR, the target resolved to its triple, CPU
    and features (never the bare `llvm`), ember's sources and the kernel
    pipeline (an object compiled with other passes, or another calling
    convention, is not this kernel); see `CompileCache.key`."""
    return CompileCache.key(text, target, ",".join(kernel_passes(target)))


@dataclass(frozen=True)
class KernelJob:
    """One kernel to compile: its te IR text (function `@kernel`), its symbol,
    its key, and the types of its scratch arguments (as `scratch_buffers` of
    `convert-te-to-loop` gives them, printed)."""

    text: str
    symbol: str
    key: str
    scratch: tuple[str, ...] = ()


@dataclass(frozen=True)
class KernelCode:
    """A model's kernel as its backend compiled it (`Backend.compile_kernel`),
    for the link step: its symbol, its code, and its te IR where this process
    kept it (`keep_te_source`)."""

    symbol: str
    code: bytes
    te_source: str | None = None


def compile_kernel(
    text: str, symbol: str, target: str, scratch: Sequence[str] | None = None
) -> bytes:
    """Compile a kernel's te IR for `target` through `KERNELS_TO_LOOP` and its
    backend's `compile_kernel` (a relocatable object for a CPU).

    Args:
        text: te IR of one function named `@kernel` (its schedule included).
        symbol: the name the function gets in the code.
        target: a target string.
        scratch: the scratch argument types the caller planned for (checked
            against what the lowering made); None checks nothing.

    Returns:
        The code, defining `symbol` with one buffer per argument: inputs,
        output, then scratch buffers.

    Raises:
        ValueError: the kernel's scratch arguments are not `scratch`.
    """
    from xdsl.dialects import func
    from xdsl.dialects.builtin import DictionaryAttr, StringAttr
    from xdsl.parser import Parser

    from ember.backends import backend
    from ember.backends.source import resolve_target, target_kind
    from ember.backends.source.target import set_target
    from ember.passes import get_context, run
    from ember.passes.pipelines import KERNELS_TO_LOOP

    ctx = get_context()
    module = Parser(ctx, text, "<kernel>").parse_module()
    resolved = resolve_target(target)
    set_target(module, resolved)  # the schedule's passes read the target's facts
    run(module, ",".join(KERNELS_TO_LOOP), ctx)
    for op in module.ops:
        if isinstance(op, func.FuncOp) and op.sym_name.data == HASHED_NAME:
            op.sym_name = StringAttr(symbol)
            old = (
                op.arg_attrs.data
                if op.arg_attrs
                else [DictionaryAttr({})] * len(op.args)
            )
            made = tuple(
                str(arg.type)
                for arg, d in zip(op.args, old, strict=True)
                if "ember.scratch" in d.data
            )
            if scratch is not None and made != tuple(scratch):
                raise EmberValueError(
                    f"kernel {symbol}: expected scratch buffers "
                    f"[{', '.join(scratch)}], got [{', '.join(made)}]"
                )
    return backend(target_kind(resolved)).compile_kernel(module, symbol, resolved)


def _compile_job(job: KernelJob, target: str) -> bytes:
    return compile_kernel(job.text, job.symbol, target, job.scratch)


def compile_kernels(
    jobs: Sequence[KernelJob],
    target: str,
    cache: CompileCache,
    workers: int | None = None,
    progress: Callable[[int, int, str, bool], None] | None = None,
) -> dict[str, bytes]:
    """Object code for every job, from the cache or compiled (in parallel).

    Args:
        jobs: distinct kernels (by key).
        target: the target string.
        cache: where compiled kernels are looked up and stored.
        workers: processes compiling misses; by default one per core (1: in
            this process).
        progress: called as `progress(done, total, symbol, cache_hit)` after
            each kernel.

    Returns:
        symbol → object code.
    """
    from ember.backends import backend
    from ember.backends.source import target_kind

    problem = backend(target_kind(target)).kernel_problem
    objects: dict[str, bytes] = {}
    misses: list[KernelJob] = []
    total = len(jobs)
    for job in jobs:
        code = cache.get(job.key)
        if code is not None and (why := problem(code, job.symbol)):
            cache.discard(job.key, why)
            code = None
        if code is None:
            misses.append(job)
            continue
        objects[job.symbol] = code
        if progress:
            progress(len(objects), total, job.symbol, True)

    def done(job: KernelJob, code: bytes) -> None:
        cache.put(job.key, code)
        objects[job.symbol] = code
        if progress:
            progress(len(objects), total, job.symbol, False)

    if workers is None:
        workers = min(len(misses), os.cpu_count() or 1)
    if workers <= 1 or len(misses) <= 1:
        for job in misses:
            done(job, _compile_job(job, target))
        return objects
    # Largest kernels first keeps both workers busy to the end.
    misses.sort(key=lambda j: -len(j.text))

    pool = ProcessPoolExecutor(
        workers,
        mp_context=_fork_context(),
        initializer=_die_with_parent,
        initargs=(os.getpid(),),
    )
    futures = {pool.submit(_compile_job, j, target): j for j in misses}
    pending = set(futures)
    try:
        while pending:
            finished, pending = wait(pending, STALL_SECONDS, FIRST_COMPLETED)
            if not finished:  # a task lost between the pool's queues: go on here
                _stop(pool)
                for future in pending:
                    done(futures[future], _compile_job(futures[future], target))
                return objects
            for future in finished:
                done(futures[future], future.result())
    finally:
        pool.shutdown(wait=not pending, cancel_futures=True)
    return objects


STALL_SECONDS = 300
"""How long the compile pool may go without finishing any kernel before the
jobs left are compiled in this process instead: a forked worker can lose a
task (seen once in CI: every worker waiting for work, the parent for
results), and a compile never hangs silently. A kernel takes seconds."""


def _stop(pool: ProcessPoolExecutor) -> None:
    """End a stalled pool's workers (its manager thread then ends too, so
    the interpreter's exit does not wait for it)."""
    for process in list(getattr(pool, "_processes", {}).values()):
        process.terminate()


def _fork_context():
    import multiprocessing

    # fork: workers inherit the imported compiler (spawn would import it again,
    # ~1 s each); the parent has started no threads of its own that matter.
    methods = multiprocessing.get_all_start_methods()
    return multiprocessing.get_context("fork" if "fork" in methods else None)


_PR_SET_PDEATHSIG = 1


def _die_with_parent(parent: int) -> None:
    """A compile worker's initializer: the kernel sends it SIGKILL when its
    parent dies (however it dies: SIGTERM, kill -9), so a stopped
    `ember-compile` leaves no workers behind.

    The parent may have died between the fork and the `prctl`; then the worker
    is already orphaned (its parent pid is no longer `parent`) and exits.
    Outside Linux there is no PR_SET_PDEATHSIG and workers outlive a killed
    parent until their pipe to it closes.
    """
    import ctypes
    import signal
    import sys

    if sys.platform.startswith("linux"):
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    if os.getppid() != parent:
        os._exit(1)


def object_problem(code: bytes, symbol: str) -> str | None:
    """Why `code` cannot be the object of the kernel `symbol`, or None: not
    an object, cut short (a section or the section headers past its end) or
    not defining `symbol`. A Wasm object is taken on its magic alone."""
    from ember.runtime.elf import parse_header
    from ember.runtime.export import WASM_MAGIC

    if code.startswith(WASM_MAGIC):
        return None
    header = parse_header(code)
    if header is None:
        return "not an ELF object (or a truncated one)"
    end = header.shoff + header.shnum * header.shentsize
    if not header.shnum or end > len(code):
        return f"truncated: its section headers end at byte {end} of {len(code)}"
    e = "<" if header.byteorder == "little" else ">"
    layout = e + ("IIQQQQ" if header.bits == 64 else "IIIIII")
    if header.shentsize < struct.calcsize(layout):
        return f"a damaged ELF header (section headers of {header.shentsize} bytes)"
    for i in range(header.shnum):
        at = header.shoff + i * header.shentsize
        _, kind, _, _, offset, size = struct.unpack_from(layout, code, at)
        if kind != _SHT_NOBITS and offset + size > len(code):
            return f"truncated: section {i} ends at byte {offset + size} of {len(code)}"
    if header.bits != 64 or header.byteorder != "little":
        return None  # object_symbols reads this machine's objects only
    try:
        defined, _ = object_symbols(code)
    except Exception as e:  # any damage: bad offsets, indices, names
        return f"a damaged symbol table ({type(e).__name__}: {e})"
    return None if symbol in defined else f"defines no symbol {symbol}"


_SHT_NOBITS = 8


def object_symbols(code: bytes) -> tuple[set[str], set[str]]:
    """The global symbols an ELF64 little-endian object defines and those it
    needs (undefined), read from its symbol table."""
    if code[:4] != b"\x7fELF" or code[4] != 2 or code[5] != 1:
        raise EmberValueError("expected a little-endian ELF64 object")
    (shoff,) = struct.unpack_from("<Q", code, 0x28)
    shentsize, shnum = struct.unpack_from("<HH", code, 0x3A)
    sections = [
        struct.unpack_from("<IIQQQQIIQQ", code, shoff + i * shentsize)
        for i in range(shnum)
    ]
    defined: set[str] = set()
    needed: set[str] = set()
    for sh in sections:
        if sh[1] != 2:  # SHT_SYMTAB
            continue
        strtab = sections[sh[6]]
        strings = code[strtab[4] : strtab[4] + strtab[5]]
        for offset in range(sh[4], sh[4] + sh[5], sh[9] or 24):
            name, info, _, shndx, _, _ = struct.unpack_from("<IBBHQQ", code, offset)
            if info >> 4 not in (1, 2):  # STB_GLOBAL, STB_WEAK
                continue
            text = strings[name : strings.index(b"\0", name)].decode()
            (needed if shndx == 0 else defined).add(text)
    return defined, needed


__all__ = [
    "HASHED_NAME",
    "KernelBuild",
    "KernelCode",
    "KernelJob",
    "compile_kernel",
    "compile_kernels",
    "current_build",
    "kernel_build",
    "kernel_key",
    "kernel_passes",
    "keep_te_source",
    "te_source",
    "object_problem",
    "object_symbols",
]
