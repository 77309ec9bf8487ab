"""The kernel compile cache: object code by key, in memory and on disk.

A model repeats kernels (MobileNetV2's inverted residual blocks, ResNet's
stages), and a model is compiled again and again while it is worked on, so
identical kernels compile once per process, and not at all once the disk cache
has them. The cache must never serve code that another compiler would not have
made, so a key is the sha256 of everything that generates the code:

- the kernel's te IR text (its shapes, computation and schedule) and whatever
  the caller adds (`kernel_key`: the kernel pass list);
- ember's own sources: every `.py` file of the installed package, hashed once
  per process (`source_digest`), so an edited lowering is a new key;
- the xDSL, llvmlite and LLVM versions;
- the target *resolved*: triple, CPU, features, ABI and opt level
  (`target_fingerprint`); `llvm` is the host CPU it names on this machine,
  never the bare word.

The disk cache lives in `$EMBER_CACHE_DIR`, else `$XDG_CACHE_HOME/ember`, else
`~/.cache/ember`, as `kernels/<key[:2]>/<key>.o`; `EMBER_CACHE=0` turns it off
for the process-wide cache (entries stay in memory). An entry is a header
(magic, its key, the sha256 of key and payload) and the object code. It is
written to a temporary file in the same folder, synced and renamed, so a
reader never sees half an entry and two processes compiling the same kernel
at once both write a whole one. An entry is read only as a regular file, never
through a symlink and without blocking (a FIFO or a device in its place is not
opened for reading); one that is unreadable, truncated, damaged, of another
format or stored under another key is removed with a `CacheEntryWarning`
naming it and why, and the kernel is built again; so is one whose code the
caller finds it cannot use (`CompileCache.discard`: an object cut short
before it was checksummed).

    cache = CompileCache()
    key = cache.key(te_ir_text, "llvm -mcpu=znver5")
    code = cache.get(key)
    if code is None:
        code = compile_it()
        cache.put(key, code)
"""

from __future__ import annotations

import errno
import functools
import hashlib
import importlib.util
import os
import re
import shutil
import stat
import struct
import sys
import tempfile
import warnings
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ember.runtime.errors import EmberValueError

if TYPE_CHECKING:
    from ember.backends.llvm import Target

_MAGIC = b"EMBERK2\n"
_DIGEST = 32
_KEY_LEN = struct.Struct("<H")
_SAFE_KEY = re.compile(r"[0-9A-Za-z_-]{2,255}")
_OFF = ("0", "off", "false", "no")
# Top-level subpackages of ember (pyproject's package-dir maps each to its own
# folder); nested ones (ember.backends.llvm, ember.rpc) are found under them.
_SUBPACKAGES = (
    "dialects",
    "passes",
    "backends",
    "runtime",
    "tools",
    "frontends",
    "topi",
    "te",
    "strategy",
    "compiler",
)


class CacheEntryWarning(RuntimeWarning):
    """A disk cache entry was discarded (its kernel is compiled again)."""


def default_directory() -> Path | None:
    """Where the process-wide cache keeps its entries, from the environment.

    `$EMBER_CACHE_DIR`, else `$XDG_CACHE_HOME/ember`, else `~/.cache/ember`;
    None (memory only) when `$EMBER_CACHE` is `0`, `off`, `false` or `no`, or
    when there is no home folder to put it in.
    """
    if os.environ.get("EMBER_CACHE", "").strip().lower() in _OFF:
        return None
    if env := os.environ.get("EMBER_CACHE_DIR"):
        return Path(env)
    xdg = os.environ.get("XDG_CACHE_HOME", "")
    if os.path.isabs(xdg):  # the XDG spec ignores a relative path
        return Path(xdg) / "ember"
    try:
        return Path.home() / ".cache" / "ember"
    except (RuntimeError, KeyError):
        return None


def source_files() -> dict[str, Path]:
    """Every `.py` file of the ember package as imported, by module name."""
    files: dict[str, Path] = {}
    for name in ("ember", *(f"ember.{s}" for s in _SUBPACKAGES)):
        spec = importlib.util.find_spec(name)
        for root in (spec and spec.submodule_search_locations) or ():
            _collect_sources(Path(root), name, files)
    return files


@functools.cache
def source_digest() -> str:
    """sha256 of ember's sources (`source_files`, by module name, so a wheel and
    an editable checkout of the same files agree) and of the Python and xDSL
    versions that run them; computed once per process."""
    import ember

    h = hashlib.sha256()
    h.update(f"python {sys.version_info[0]}.{sys.version_info[1]}\0".encode())
    h.update(f"xdsl {_version('xdsl')}\0ember {ember.__version__}\0".encode())
    files = source_files()
    for module in sorted(files):
        h.update(module.encode() + b"\0")
        try:
            h.update(files[module].read_bytes())
        except OSError:  # deleted since it was listed: a digest all the same
            h.update(b"\0unreadable")
        h.update(b"\0")
    return h.hexdigest()


def _collect_sources(
    folder: Path, package: str, files: dict[str, Path], seen: set[Path] | None = None
) -> None:
    seen = set() if seen is None else seen
    if folder.resolve() in seen:  # a symlink loop
        return
    seen.add(folder.resolve())
    for entry in sorted(folder.iterdir()):
        if entry.name.startswith((".", "__pycache__")):
            continue
        if entry.is_dir():
            _collect_sources(entry, f"{package}.{entry.name}", files, seen)
        elif entry.suffix == ".py":
            files[f"{package}.{entry.stem}"] = entry


def _version(distribution: str) -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version(distribution)
    except PackageNotFoundError:
        return "unknown"


def target_fingerprint(target: str | Mapping[str, Any] | Target) -> str:
    """The target as code generation sees it: `llvm` resolved to this machine's
    triple, CPU and features, with the ABI and opt level.

    The machine's other facts (cores, caches, registers) are not in it: the
    strategies that read them decide a kernel's schedule, which is part of its
    te IR, and the passes after te read only what the features determine.

    Example:
        >>> target_fingerprint("llvm")
        'triple=x86_64-unknown-linux-gnu cpu=znver5 features=+64bit,... abi= opt=3'
    """
    from ember.backends.llvm import Target
    from ember.backends.source import DeviceTarget, target_kind

    if target_kind(target) != "llvm":  # a source kind: its options name it
        return str(DeviceTarget(target))  # type: ignore[arg-type]
    t = Target(target)  # type: ignore[arg-type]
    return (
        f"triple={t.triple} cpu={t.cpu} features={t.features} "
        f"abi={t.mabi} opt={t.opt_level}"
    )


def toolchain() -> str:
    """The llvmlite and LLVM versions that emit the code."""
    import llvmlite
    import llvmlite.binding as llvm

    version = ".".join(map(str, llvm.llvm_version_info))
    return f"llvmlite {llvmlite.__version__} llvm {version}"


@dataclass
class CacheStats:
    """Counts since the cache was made (or `reset`)."""

    memory_hits: int = 0
    disk_hits: int = 0
    misses: int = 0
    corrupt: int = 0

    @property
    def hits(self) -> int:
        return self.memory_hits + self.disk_hits


@dataclass
class CompileCache:
    """Compiled kernels by key, in this process and (optionally) on disk.

    Attributes:
        directory: the disk cache's root; None keeps entries in memory only.
        stats: hit and miss counts.
    """

    directory: Path | None = field(default_factory=default_directory)
    stats: CacheStats = field(default_factory=CacheStats)
    _memory: dict[str, bytes] = field(default_factory=dict, repr=False)

    def __post_init__(self) -> None:
        if self.directory is not None:  # a str or any path-like, as documented
            self.directory = Path(self.directory)

    @staticmethod
    def key(text: str, target: str | Mapping[str, Any] | Target, *extra: str) -> str:
        """The key of a kernel: sha256 of its IR text, the resolved target,
        ember's sources, the toolchain's versions and `extra` (anything else
        the caller's compilation depends on)."""
        h = hashlib.sha256()
        parts = (source_digest(), toolchain(), target_fingerprint(target), *extra)
        for part in (*parts, text):
            h.update(part.encode())
            h.update(b"\0")
        return h.hexdigest()

    def _path(self, key: str) -> Path | None:
        if self.directory is None:
            return None
        if not _SAFE_KEY.fullmatch(key):
            raise EmberValueError(f"expected a cache key of [0-9A-Za-z_-], got {key!r}")
        return self.directory / "kernels" / key[:2] / f"{key}.o"

    def get(self, key: str) -> bytes | None:
        """The object code stored under `key`, or None (a miss)."""
        if (code := self._memory.get(key)) is not None:
            self.stats.memory_hits += 1
            return code
        path = self._path(key)
        if path is not None:
            code = self._read(path, key)
            if code is not None:
                self._memory[key] = code
                self.stats.disk_hits += 1
                return code
        self.stats.misses += 1
        return None

    def put(self, key: str, code: bytes) -> None:
        """Store `code` under `key`, in memory and, atomically, on disk.

        A disk that cannot be written (read-only, full) leaves the entry in
        memory only: the cache speeds compilation up, it never fails it.
        """
        self._memory[key] = code
        path = self._path(key)
        if path is None:
            return
        name = key.encode()
        header = _MAGIC + _KEY_LEN.pack(len(name)) + name
        entry = header + hashlib.sha256(name + code).digest() + code
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-")
            try:
                with os.fdopen(fd, "wb") as f:
                    f.write(entry)
                    f.flush()
                    os.fsync(f.fileno())
                os.replace(tmp, path)
            except BaseException:
                os.unlink(tmp)
                raise
        except OSError:
            pass

    def _read(self, path: Path, key: str) -> bytes | None:
        flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
        try:
            fd = os.open(path, flags)
        except FileNotFoundError:
            return None
        except OSError as e:
            why = "a symlink" if e.errno == errno.ELOOP else f"unreadable ({e})"
            return self._discard(path, why, None)
        try:
            st = os.fstat(fd)
            if not stat.S_ISREG(st.st_mode):
                return self._discard(path, f"not a regular file ({_kind(st)})", st)
            chunks = []
            while chunk := os.read(fd, 1 << 20):
                chunks.append(chunk)
        except OSError as e:
            return self._discard(path, f"unreadable ({e})", None)
        finally:
            os.close(fd)
        code, why = _parse_entry(b"".join(chunks), key)
        if code is None:
            return self._discard(path, why, st)
        return code

    def discard(self, key: str, why: str) -> None:
        """Forget the entry under `key`, in memory and on disk, with a
        `CacheEntryWarning` naming it and `why`: for code that was served
        whole but does not load or link (truncated before it was checksummed),
        so that it is compiled again and stored afresh, not served forever."""
        self._memory.pop(key, None)
        entry = self._path(key) or f"the in-memory entry {key}"
        self._discard(entry, why, None, stacklevel=3)

    def _discard(
        self,
        path: Path | str,
        why: str,
        st: os.stat_result | None,
        stacklevel: int = 4,
    ) -> None:
        """Count, report and remove a damaged entry (a `path` that is a str
        names one in memory only). With `st`, only the file that was read is
        removed, not one a concurrent writer put there since."""
        self.stats.corrupt += 1
        warnings.warn(
            f"ember kernel cache: discarding {path}: {why}; the kernel is "
            "compiled again",
            CacheEntryWarning,
            stacklevel=stacklevel,
        )
        if isinstance(path, str):
            return None
        try:
            now = os.lstat(path)
            if st is not None and (now.st_dev, now.st_ino) != (st.st_dev, st.st_ino):
                return None
            if stat.S_ISDIR(now.st_mode):
                shutil.rmtree(path)
            else:
                path.unlink()
        except OSError:
            pass
        return None

    def clear_memory(self) -> None:
        """Forget the in-memory entries (the disk cache stays)."""
        self._memory.clear()


def _parse_entry(data: bytes, key: str) -> tuple[bytes | None, str]:
    """The object code of an entry for `key`, or None and why `data` is not one."""
    start = len(_MAGIC) + _KEY_LEN.size
    if len(data) < start or data[: len(_MAGIC)] != _MAGIC:
        return None, "not an ember cache entry (bad magic, or truncated)"
    (n,) = _KEY_LEN.unpack_from(data, len(_MAGIC))
    body = start + n + _DIGEST
    if len(data) < body:
        return None, "truncated header"
    name, code = data[start : start + n], data[body:]
    if hashlib.sha256(name + code).digest() != data[start + n : body]:
        return None, "checksum mismatch (truncated or corrupted)"
    if name != key.encode():
        return None, f"stored for another key ({name.decode(errors='replace')})"
    return code, ""


def _kind(st: os.stat_result) -> str:
    for test, kind in (
        (stat.S_ISDIR, "a directory"),
        (stat.S_ISFIFO, "a FIFO"),
        (stat.S_ISCHR, "a character device"),
        (stat.S_ISBLK, "a block device"),
        (stat.S_ISSOCK, "a socket"),
    ):
        if test(st.st_mode):
            return kind
    return f"mode {st.st_mode:o}"


@dataclass(frozen=True)
class CacheInfo:
    """What a disk cache holds.

    Attributes:
        directory: its root (None: the disk cache is off).
        entries: kernel entries.
        size: their bytes.
        temporaries: files left by writers that died mid-write.
    """

    directory: Path | None
    entries: int
    size: int
    temporaries: int


def cache_info(directory: Path | None = None) -> CacheInfo:
    """Count the entries of the disk cache at `directory` (default: where the
    process-wide cache is)."""
    directory = directory if directory is not None else default_directory()
    entries = size = temporaries = 0
    root = directory / "kernels" if directory is not None else None
    if root is not None and root.is_dir():
        for path in root.glob("*/*"):
            try:
                st = path.lstat()
            except OSError:
                continue
            if path.name.startswith(".tmp-"):
                temporaries += 1
            elif path.suffix == ".o" and stat.S_ISREG(st.st_mode):
                entries += 1
                size += st.st_size
    return CacheInfo(directory, entries, size, temporaries)


def clear(directory: Path | None = None) -> int:
    """Remove every kernel of the disk cache at `directory` (default: where the
    process-wide cache is) and the in-memory ones of the process-wide cache;
    return how many entries were on disk."""
    directory = directory if directory is not None else default_directory()
    if _DEFAULT is not None and _DEFAULT.directory == directory:
        _DEFAULT.clear_memory()
    if directory is None:
        return 0
    removed = cache_info(directory).entries
    shutil.rmtree(directory / "kernels", ignore_errors=True)
    return removed


_DEFAULT: CompileCache | None = None


def default_cache() -> CompileCache:
    """The process-wide cache; its directory follows the environment as it is
    now (see `default_directory`: a changed variable gives a new cache)."""
    global _DEFAULT
    directory = default_directory()
    if _DEFAULT is None or _DEFAULT.directory != directory:
        _DEFAULT = CompileCache(directory)
    return _DEFAULT


__all__ = [
    "CacheEntryWarning",
    "CacheInfo",
    "CacheStats",
    "CompileCache",
    "cache_info",
    "clear",
    "default_cache",
    "default_directory",
    "source_digest",
    "source_files",
    "target_fingerprint",
    "toolchain",
]
