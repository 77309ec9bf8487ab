"""The kernel compile cache: object code by structural hash, in memory and on disk.

A model repeats kernels (MobileNetV2's inverted residual blocks, ResNet's
stages), and a model is compiled again and again while it is worked on. A
kernel's key is the sha256 of its te IR text (which holds its shapes, its
computation and its schedule: the whole input of the compiler), the target
string and ember's version; the value is the relocatable object file LLVM made
from it. Identical layers therefore compile once per process, and not at all
once the disk cache has them.

The disk cache lives in `$EMBER_CACHE_DIR`, else `~/.cache/ember`, as
`kernels/<key[:2]>/<key>.o`. An entry is a small header (magic, the payload's
sha256) followed by the object code; it is written to a temporary file and
renamed, so a reader never sees half an entry, and two processes compiling the
same kernel at once both write a whole one. An entry that is truncated, damaged
or of another format is ignored (and removed), and the kernel is built again.

    cache = CompileCache()
    key = cache.key(te_ir_text, "llvm -mcpu=znver5")
    code = cache.get(key)
    if code is None:
        code = compile_it()
        cache.put(key, code)
"""

from __future__ import annotations

import hashlib
import os
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

_MAGIC = b"EMBERK1\n"
_DIGEST = 32


def default_directory() -> Path:
    """`$EMBER_CACHE_DIR`, else `~/.cache/ember`."""
    env = os.environ.get("EMBER_CACHE_DIR")
    return Path(env) if env else Path.home() / ".cache" / "ember"


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

    @staticmethod
    def key(text: str, target: str) -> str:
        """The key of a kernel: sha256 of its IR text, target and ember's version."""
        from ember import __version__

        h = hashlib.sha256()
        for part in (f"ember {__version__}", target, text):
            h.update(part.encode())
            h.update(b"\0")
        return h.hexdigest()

    def _path(self, key: str) -> Path | None:
        if self.directory is None:
            return None
        return self.directory / "kernels" / key[:2] / f"{key}.o"

    def get(self, key: str) -> bytes | None:
        """The object code stored under `key`, or None (a miss)."""
        if (code := self._memory.get(key)) is not None:
            self.stats.memory_hits += 1
            return code
        path = self._path(key)
        if path is not None:
            code = self._read(path)
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
        entry = _MAGIC + hashlib.sha256(code).digest() + code
        try:
            path.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".tmp-")
            try:
                with os.fdopen(fd, "wb") as f:
                    f.write(entry)
                os.replace(tmp, path)
            except BaseException:
                os.unlink(tmp)
                raise
        except OSError:
            pass

    def _read(self, path: Path) -> bytes | None:
        try:
            data = path.read_bytes()
        except OSError:
            return None
        header = len(_MAGIC) + _DIGEST
        code = data[header:]
        if (
            data[: len(_MAGIC)] != _MAGIC
            or len(data) < header
            or hashlib.sha256(code).digest() != data[len(_MAGIC) : header]
        ):
            self.stats.corrupt += 1
            try:
                path.unlink()
            except OSError:
                pass
            return None
        return code

    def clear_memory(self) -> None:
        """Forget the in-memory entries (the disk cache stays)."""
        self._memory.clear()


_DEFAULT: CompileCache | None = None


def default_cache() -> CompileCache:
    """The process-wide cache; its directory follows `$EMBER_CACHE_DIR` as it is
    now (a changed variable gives a new cache)."""
    global _DEFAULT
    directory = default_directory()
    if _DEFAULT is None or _DEFAULT.directory != directory:
        _DEFAULT = CompileCache(directory)
    return _DEFAULT


__all__ = ["CacheStats", "CompileCache", "default_cache", "default_directory"]
