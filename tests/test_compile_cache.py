"""The kernel compile cache: keys, memory and disk hits, atomic and corrupt
entries, an unwritable directory."""

import os

import pytest

from ember.compile_cache import CompileCache, default_cache


def test_key_depends_on_text_target_and_version():
    k = CompileCache.key("func @k", "llvm")
    assert k == CompileCache.key("func @k", "llvm")
    assert k != CompileCache.key("func @k2", "llvm")
    assert k != CompileCache.key("func @k", "llvm -mcpu=znver4")
    assert len(k) == 64


def test_memory_then_disk(tmp_path):
    cache = CompileCache(tmp_path)
    key = CompileCache.key("kernel", "llvm")
    assert cache.get(key) is None
    cache.put(key, b"\x7fELF object")
    assert cache.get(key) == b"\x7fELF object"
    assert (cache.stats.misses, cache.stats.memory_hits) == (1, 1)
    # A new process (a new cache over the same directory) reads the disk.
    again = CompileCache(tmp_path)
    assert again.get(key) == b"\x7fELF object"
    assert again.get(key) == b"\x7fELF object"
    assert (again.stats.disk_hits, again.stats.memory_hits) == (1, 1)
    files = list(tmp_path.rglob("*"))
    assert [p.name for p in files if p.is_file()] == [f"{key}.o"]  # no temporaries


def test_memory_only():
    cache = CompileCache(None)
    cache.put("k", b"code")
    assert cache.get("k") == b"code"
    cache.clear_memory()
    assert cache.get("k") is None


@pytest.mark.parametrize(
    "damage",
    [
        lambda data: data[:-3],  # truncated
        lambda data: data[:20],  # truncated inside the header
        lambda data: data[:-1] + bytes([data[-1] ^ 1]),  # a flipped bit
        lambda data: b"not a cache entry",
        lambda data: b"",
    ],
)
def test_corrupt_entries_are_ignored_and_rebuilt(tmp_path, damage):
    key = CompileCache.key("kernel", "llvm")
    CompileCache(tmp_path).put(key, b"object code bytes")
    (path,) = [p for p in tmp_path.rglob("*.o")]
    path.write_bytes(damage(path.read_bytes()))
    cache = CompileCache(tmp_path)
    assert cache.get(key) is None
    assert cache.stats.corrupt == 1 and cache.stats.misses == 1
    assert not path.exists()
    cache.put(key, b"object code bytes")
    assert CompileCache(tmp_path).get(key) == b"object code bytes"


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes read-only directories")
def test_unwritable_directory_keeps_memory(tmp_path):
    tmp_path.chmod(0o500)
    try:
        cache = CompileCache(tmp_path / "sub")
        cache.put("k" * 64, b"code")
        assert cache.get("k" * 64) == b"code"
    finally:
        tmp_path.chmod(0o700)


def test_default_cache_follows_environment(tmp_path, monkeypatch):
    monkeypatch.setenv("EMBER_CACHE_DIR", str(tmp_path / "a"))
    a = default_cache()
    assert a.directory == tmp_path / "a" and default_cache() is a
    monkeypatch.setenv("EMBER_CACHE_DIR", str(tmp_path / "b"))
    assert default_cache().directory == tmp_path / "b"
