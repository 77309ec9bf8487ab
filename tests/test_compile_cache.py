"""The kernel compile cache: keys that cover everything that makes the code
(ember's sources, the toolchain, the resolved target), memory and disk hits,
damaged or foreign entries discarded and rebuilt, two processes writing at
once, the cache's location, and an edited lowering that is never served stale."""

import errno
import json
import os
import shutil
import signal
import subprocess
import sys
import time
import tomllib
from pathlib import Path

import llvmlite
import llvmlite.binding as llvm
import numpy as np
import pytest

import ember.backends.kernel_cache as compile_cache
from ember.backends.kernel_cache import (
    CacheEntryWarning,
    CompileCache,
    cache_info,
    clear,
    default_cache,
    default_directory,
    source_digest,
    target_fingerprint,
)
from ember.backends.kernels import kernel_key
from ember.backends.llvm import Target

ROOT = Path(__file__).resolve().parents[1]
ADD = """
func.func @main(%a: tensor<4x8xf32> {ember.name = "a"}, %b: tensor<4x8xf32> {ember.name = "b"}) -> tensor<4x8xf32> {
  %c = graph.add %a, %b : (tensor<4x8xf32>, tensor<4x8xf32>) -> tensor<4x8xf32>
  func.return %c : tensor<4x8xf32>
}
"""


# --- keys ---------------------------------------------------------------------


def test_key_depends_on_text_target_and_extra():
    k = CompileCache.key("func @k", "llvm")
    assert k == CompileCache.key("func @k", "llvm")
    assert k != CompileCache.key("func @k2", "llvm")
    assert k != CompileCache.key("func @k", "llvm -opt-level=2")
    # another CPU: a different key (the host is one of them at most)
    others = {
        CompileCache.key("func @k", f"llvm -mcpu={c}") for c in ("znver4", "haswell")
    }
    assert len(others) == 2 and len(others - {k}) >= 1
    assert k != CompileCache.key("func @k", "llvm -mattr=-avx2")
    assert k != CompileCache.key("func @k", "llvm", "other-passes")
    assert len(k) == 64


def test_host_target_resolves_to_the_concrete_cpu():
    host = llvm.get_host_cpu_name()
    for spec in ("llvm", f"llvm -mcpu={host}", Target("llvm"), {"kind": "llvm"}):
        fingerprint = target_fingerprint(spec)
        assert f"cpu={host} " in fingerprint
        assert f"triple={llvm.get_process_triple()} " in fingerprint
    # `llvm` is the host with every feature LLVM detects on it, named in the key
    assert "features=+" in target_fingerprint("llvm")
    key = CompileCache.key("k", "llvm")
    assert key == CompileCache.key("k", "llvm -mcpu=native")
    assert key == CompileCache.key("k", Target("llvm"))
    assert kernel_key("k", "llvm") == kernel_key("k", Target("llvm"))


def test_key_changes_when_the_target_resolves_differently(monkeypatch):
    before = CompileCache.key("k", "llvm")
    before_kernel = kernel_key("k", "llvm")
    # The same word on another machine (the target reads the host's CPU name)
    monkeypatch.setattr(llvm, "get_host_cpu_name", lambda: "someothercpu")
    assert "cpu=someothercpu " in target_fingerprint("llvm")
    assert CompileCache.key("k", "llvm") != before
    assert kernel_key("k", "llvm") != before_kernel


def test_key_changes_with_the_toolchain(monkeypatch):
    before = CompileCache.key("k", "llvm")
    monkeypatch.setattr(llvmlite, "__version__", "0.0.0-other")
    assert CompileCache.key("k", "llvm") != before
    monkeypatch.undo()
    assert CompileCache.key("k", "llvm") == before
    monkeypatch.setattr(llvm, "llvm_version_info", (1, 2, 3))
    assert CompileCache.key("k", "llvm") != before


def test_key_changes_with_embers_sources(monkeypatch):
    before = CompileCache.key("k", "llvm")
    before_kernel = kernel_key("k", "llvm")
    monkeypatch.setattr(compile_cache, "source_digest", lambda: "0" * 64)
    assert CompileCache.key("k", "llvm") != before
    assert kernel_key("k", "llvm") != before_kernel


def test_source_digest_covers_every_package_file():
    """Every .py file of every package pyproject installs is hashed, under its
    module name (so an installed wheel and the editable checkout agree)."""
    with (ROOT / "pyproject.toml").open("rb") as f:
        setuptools = tomllib.load(f)["tool"]["setuptools"]
    mapping = setuptools["package-dir"]
    hashed = compile_cache.source_files()
    expected = {
        f"{name}.{p.stem}"
        for name in setuptools["packages"]
        for p in _package_folder(mapping, name).glob("*.py")
    }
    assert expected - hashed.keys() == set()
    assert "ember.passes.convert_arith_to_llvm" in expected
    assert "ember.backends.llvm.codegen" in expected
    assert len(source_digest()) == 64 and source_digest() == source_digest()


def _package_folder(mapping: dict[str, str], name: str) -> Path:
    """The folder of package `name` under setuptools' package-dir rules."""
    parts = name.split(".")
    for i in range(len(parts), 0, -1):
        if (prefix := ".".join(parts[:i])) in mapping:
            return ROOT / mapping[prefix] / Path(*parts[i:])
    return ROOT / Path(*parts)


# --- memory and disk ----------------------------------------------------------


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


def test_a_key_that_is_not_a_file_name_is_refused(tmp_path):
    with pytest.raises(ValueError, match="expected a cache key"):
        CompileCache(tmp_path).put("../../escape", b"code")


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes read-only directories")
def test_unwritable_directory_keeps_memory(tmp_path):
    tmp_path.chmod(0o500)
    try:
        cache = CompileCache(tmp_path / "sub")
        cache.put("k" * 64, b"code")
        assert cache.get("k" * 64) == b"code"
    finally:
        tmp_path.chmod(0o700)


# --- damaged entries ----------------------------------------------------------

KEY = "ab" * 32
OTHER = "cd" * 32


def _entry(directory: Path, key: str) -> Path:
    CompileCache(directory).put(key, f"object code for {key}".encode())
    return directory / "kernels" / key[:2] / f"{key}.o"


def _damaged_then_rebuilt(directory: Path, path: Path, reason: str) -> None:
    """A fresh cache discards the entry at `path` with a warning naming it and
    `reason`, never blocking; a rebuilt entry is then served."""
    signal.signal(signal.SIGALRM, _too_slow)
    signal.alarm(10)
    try:
        cache = CompileCache(directory)
        with pytest.warns(CacheEntryWarning) as caught:
            assert cache.get(KEY) is None
    finally:
        signal.alarm(0)
    (message,) = [str(w.message) for w in caught]
    assert str(path) in message and reason in message
    assert cache.stats.corrupt == 1 and cache.stats.misses == 1
    assert not os.path.lexists(path)
    cache.put(KEY, b"rebuilt")
    assert CompileCache(directory).get(KEY) == b"rebuilt"


def _too_slow(signum, frame):
    raise TimeoutError("reading a cache entry blocked")


@pytest.mark.parametrize(
    "damage,reason",
    [
        (lambda data: data[:-3], "checksum"),  # truncated
        (lambda data: data[:20], "truncated header"),
        (lambda data: data[:5], "not an ember cache entry"),
        (lambda data: data[:-1] + bytes([data[-1] ^ 1]), "checksum"),  # a bit
        (lambda data: data[:12] + bytes([data[12] ^ 1]) + data[13:], "checksum"),
        (lambda data: b"EMBERK1\n" + data[8:], "not an ember cache entry"),
        (lambda data: b"not a cache entry", "not an ember cache entry"),
        (lambda data: b"", "not an ember cache entry"),
    ],
)
def test_corrupt_entries_are_discarded_and_rebuilt(tmp_path, damage, reason):
    path = _entry(tmp_path, KEY)
    path.write_bytes(damage(path.read_bytes()))
    _damaged_then_rebuilt(tmp_path, path, reason)


def test_an_entry_for_another_key_is_discarded(tmp_path):
    """A whole entry with a valid checksum, copied to another key's place."""
    path = _entry(tmp_path, KEY)
    path.write_bytes(_entry(tmp_path, OTHER).read_bytes())
    _damaged_then_rebuilt(tmp_path, path, f"stored for another key ({OTHER})")
    assert CompileCache(tmp_path).get(OTHER) == f"object code for {OTHER}".encode()


@pytest.mark.parametrize(
    "make,reason",
    [
        (os.mkfifo, "a FIFO"),
        (lambda p: p.symlink_to("/dev/zero"), "a symlink"),
        (lambda p: p.symlink_to(_entry(p.parents[2], OTHER)), "a symlink"),
        (lambda p: (p.mkdir(), (p / "x").write_bytes(b"x")), "a directory"),
    ],
    ids=["fifo", "symlink-to-device", "symlink-to-entry", "directory"],
)
def test_a_non_regular_file_in_an_entrys_place_is_discarded(tmp_path, make, reason):
    path = tmp_path / "kernels" / KEY[:2] / f"{KEY}.o"
    path.parent.mkdir(parents=True)
    make(path)
    _damaged_then_rebuilt(tmp_path, path, reason)
    assert Path("/dev/zero").exists()  # the link went, not what it named


@pytest.mark.parametrize("call", ["open", "read"])
def test_an_unreadable_entry_is_discarded(tmp_path, monkeypatch, call):
    """As root, chmod 000 reads anyway: the operating system's refusal (open)
    or an I/O error (read) is injected instead, on the first read only."""
    path = _entry(tmp_path, KEY)
    real_open, real_read = os.open, os.read
    failing: set[int] = set()
    failed: list[str] = []

    def fake_open(file, flags, *args, **kwargs):
        if os.fspath(file) != str(path) or failed:
            return real_open(file, flags, *args, **kwargs)
        if call == "open":
            failed.append(call)
            raise PermissionError(errno.EACCES, "Permission denied", str(path))
        fd = real_open(file, flags, *args, **kwargs)
        failing.add(fd)
        return fd

    def fake_read(fd, n):
        if fd in failing:
            failing.discard(fd)
            failed.append(call)
            raise OSError(errno.EIO, "Input/output error")
        return real_read(fd, n)

    monkeypatch.setattr(os, "open", fake_open)
    monkeypatch.setattr(os, "read", fake_read)
    _damaged_then_rebuilt(tmp_path, path, "unreadable")
    assert failed == [call]


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads files of mode 000")
def test_an_entry_without_read_permission_is_discarded(tmp_path):
    path = _entry(tmp_path, KEY)
    path.chmod(0)
    _damaged_then_rebuilt(tmp_path, path, "unreadable")


def test_a_model_with_damaged_entries_compiles_again(tmp_path):
    from ember.compiler.model import compile_model

    a = np.arange(32, dtype="float32").reshape(4, 8)
    b = np.full((4, 8), 2, "float32")
    first = compile_model(ADD, {}, cache=CompileCache(tmp_path), workers=1)
    assert first.compile_stats.compiled >= 1
    entries = sorted((tmp_path / "kernels").glob("*/*.o"))
    assert len(entries) == first.compile_stats.kernels
    for path in entries:
        data = path.read_bytes()
        path.write_bytes(data[: len(data) // 2])
    with pytest.warns(CacheEntryWarning, match="checksum mismatch"):
        again = compile_model(ADD, {}, cache=CompileCache(tmp_path), workers=1)
    stats = again.compile_stats
    assert stats.cache_hits == 0 and stats.compiled == stats.kernels
    assert np.array_equal(_run_add(again, a, b), a + b)
    warm = compile_model(ADD, {}, cache=CompileCache(tmp_path), workers=1)
    assert warm.compile_stats.cache_hits == warm.compile_stats.kernels


def _cut_short(directory: Path) -> dict[Path, bytes]:
    """Each entry re-stored with half its code, header and checksum right (as
    a writer that lost the tail before checksumming would leave it); the
    whole code by entry."""
    whole = {}
    for path in sorted((directory / "kernels").glob("*/*.o")):
        key = path.stem
        code = CompileCache(directory).get(key)
        assert code is not None
        whole[path] = code
        CompileCache(directory).put(key, code[: len(code) // 2])
        assert CompileCache(directory).get(key) == code[: len(code) // 2]
    return whole


def test_a_model_whose_cached_code_is_cut_short_compiles_again(tmp_path):
    """An entry whose checksum holds but whose object is truncated is found
    unusable, purged with a warning naming it, compiled afresh and re-stored:
    not an internal error on every compile."""
    from ember.compiler.model import compile_model

    a = np.arange(32, dtype="float32").reshape(4, 8)
    b = np.full((4, 8), 2, "float32")
    compile_model(ADD, {}, cache=CompileCache(tmp_path), workers=1)
    whole = _cut_short(tmp_path)
    with pytest.warns(CacheEntryWarning, match="truncated") as caught:
        again = compile_model(ADD, {}, cache=CompileCache(tmp_path), workers=1)
    messages = [str(w.message) for w in caught]
    for path in whole:
        assert any(f"discarding {path}: truncated" in m for m in messages)
    stats = again.compile_stats
    assert stats.cache_hits == 0 and stats.compiled == stats.kernels == len(whole)
    assert np.array_equal(_run_add(again, a, b), a + b)
    for path, code in whole.items():
        assert CompileCache(tmp_path).get(path.stem) == code  # whole again
    warm = compile_model(ADD, {}, cache=CompileCache(tmp_path), workers=1)
    assert warm.compile_stats.cache_hits == warm.compile_stats.kernels


@pytest.mark.skipif(shutil.which(os.environ.get("CC", "cc")) is None, reason="no cc")
def test_a_c_module_whose_cached_library_is_cut_short_compiles_again(
    tmp_path, monkeypatch
):
    """The c target's cached shared library, truncated under a right
    checksum, does not load: purged, compiled again, re-stored."""
    import ember
    from ember import te

    monkeypatch.setenv("EMBER_CACHE_DIR", str(tmp_path))
    A = te.placeholder((8,), name="A")
    B = te.compute((8,), lambda i: A[i] * 2.0, name="B")
    args = (te.create_schedule(B.op), [A, B])
    ember.build(*args, target="c", name="twice")
    default_cache().clear_memory()
    ((path, code),) = _cut_short(tmp_path).items()
    with pytest.warns(CacheEntryWarning, match=f"discarding {path}: does not load"):
        mod = ember.build(*args, target="c", name="twice")
    a, out = np.arange(8, dtype="float32"), np.zeros(8, "float32")
    mod(a, out)
    assert np.array_equal(out, 2 * a)
    assert CompileCache(tmp_path).get(path.stem) == code  # whole again


def _run_add(mod, a, b):
    from ember.runtime import GraphModule, cpu

    gm = GraphModule(mod["default"](cpu()))
    gm.set_input("a", a)
    gm.set_input("b", b)
    gm.run()
    return gm.get_output(0).numpy()


# --- two processes at once ----------------------------------------------------

HAMMER = """
import sys, time, warnings
from pathlib import Path
sys.path.insert(0, sys.argv[3])
from ember.backends.kernel_cache import CacheEntryWarning, CompileCache

warnings.simplefilter("error", CacheEntryWarning)
directory, start = Path(sys.argv[1]), float(sys.argv[2])
keys = [f"{i:02x}" * 32 for i in range(4)]
# a megabyte or more each: a write that is not atomic is seen half done
payload = {k: k.encode() * 16384 + bytes(range(256)) * (7 + i) for i, k in enumerate(keys)}
while time.time() < start:
    time.sleep(0.005)
reads = writes = 0
while time.time() < start + 1.5 or reads < 20:
    cache = CompileCache(directory)
    for key in keys:
        code = cache.get(key)
        if code is not None:
            assert code == payload[key], f"{key}: {len(code)} bytes, not the entry"
            reads += 1
        cache.put(key, payload[key])
        writes += 1
    if reads + writes > 20000:
        break
print(reads, writes, cache.stats.corrupt)
"""


def test_two_processes_writing_the_same_keys_never_see_a_partial_entry(tmp_path):
    start = time.time() + 1.0  # both have imported the cache by then
    package = str(Path(compile_cache.__file__).parents[1])  # this very ember
    procs = [
        subprocess.Popen(
            [sys.executable, "-c", HAMMER, str(tmp_path), str(start), package],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        for _ in range(2)
    ]
    for proc in procs:
        out, err = proc.communicate(timeout=120)
        assert proc.returncode == 0, err
        reads, writes, corrupt = map(int, out.split())
        assert reads >= 20 and writes >= 20 and corrupt == 0
    assert cache_info(tmp_path).temporaries == 0
    assert cache_info(tmp_path).entries == 4


# --- where the cache is -------------------------------------------------------


def test_default_cache_follows_environment(tmp_path, monkeypatch):
    monkeypatch.delenv("EMBER_CACHE", raising=False)
    monkeypatch.setenv("EMBER_CACHE_DIR", str(tmp_path / "a"))
    a = default_cache()
    assert a.directory == tmp_path / "a" and default_cache() is a
    monkeypatch.setenv("EMBER_CACHE_DIR", str(tmp_path / "b"))
    assert default_cache().directory == tmp_path / "b"


def test_directory_follows_xdg_then_home(tmp_path, monkeypatch):
    monkeypatch.delenv("EMBER_CACHE", raising=False)
    monkeypatch.delenv("EMBER_CACHE_DIR", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert default_directory() == tmp_path / "xdg" / "ember"
    monkeypatch.setenv("XDG_CACHE_HOME", "relative/ignored")
    assert default_directory() == tmp_path / "home" / ".cache" / "ember"
    monkeypatch.delenv("XDG_CACHE_HOME")
    assert default_directory() == tmp_path / "home" / ".cache" / "ember"
    monkeypatch.setenv("EMBER_CACHE_DIR", str(tmp_path / "mine"))
    assert default_directory() == tmp_path / "mine"


@pytest.mark.parametrize("value", ["0", "off", "false", "no", "OFF"])
def test_ember_cache_0_keeps_the_default_cache_in_memory(tmp_path, monkeypatch, value):
    monkeypatch.setenv("EMBER_CACHE_DIR", str(tmp_path))
    monkeypatch.setenv("EMBER_CACHE", value)
    cache = default_cache()
    assert cache.directory is None
    cache.put(KEY, b"code")
    assert cache.get(KEY) == b"code"
    assert not any(tmp_path.iterdir())
    monkeypatch.setenv("EMBER_CACHE", "1")
    assert default_cache().directory == tmp_path


def test_cache_info_and_clear(tmp_path, monkeypatch):
    monkeypatch.delenv("EMBER_CACHE", raising=False)
    monkeypatch.setenv("EMBER_CACHE_DIR", str(tmp_path))
    assert cache_info() == compile_cache.CacheInfo(tmp_path, 0, 0, 0)
    cache = default_cache()
    cache.put(KEY, b"x" * 100)
    cache.put(OTHER, b"y" * 10)
    (tmp_path / "kernels" / "ab" / ".tmp-dead").write_bytes(b"half")
    info = cache_info()
    assert (info.entries, info.temporaries) == (2, 1) and info.size > 110
    assert clear() == 2
    assert cache_info() == compile_cache.CacheInfo(tmp_path, 0, 0, 0)
    assert cache.get(KEY) is None  # the process-wide memory went too


# --- an edited lowering is never served from the cache ------------------------

RUN_ADD = """
import json, sys
tree, cache_dir, pinned = sys.argv[1:4]
sys.path.insert(0, tree)
from pathlib import Path
import numpy as np
import ember, ember.backends.kernel_cache, ember.passes
assert Path(ember.__file__).is_relative_to(tree), ember.__file__
assert Path(ember.passes.__file__).is_relative_to(tree), ember.passes.__file__
digest = ember.backends.kernel_cache.source_digest()
if pinned:  # a key that ignores ember's sources, as it once did
    ember.backends.kernel_cache.source_digest = lambda: pinned
from ember.compiler.model import compile_model
from ember.runtime import GraphModule, cpu
mod = compile_model(sys.stdin.read(), {}, workers=1,
                    cache=ember.backends.kernel_cache.CompileCache(Path(cache_dir)))
gm = GraphModule(mod["default"](cpu()))
gm.set_input("a", np.arange(32, dtype="float32").reshape(4, 8))
gm.set_input("b", np.full((4, 8), 2, "float32"))
gm.run()
s = mod.compile_stats
print(json.dumps({"digest": digest, "hits": s.cache_hits, "compiled": s.compiled,
                  "out": gm.get_output(0).numpy().tolist()}))
"""


def _copy_import_tree(dest: Path) -> None:
    """ember as a wheel lays it out (pyproject's package-dir), as real files."""
    with (ROOT / "pyproject.toml").open("rb") as f:
        mapping = tomllib.load(f)["tool"]["setuptools"]["package-dir"]
    for name, folder in sorted(mapping.items()):
        shutil.copytree(
            ROOT / folder,
            dest.joinpath(*name.split(".")),
            dirs_exist_ok=True,
            ignore=shutil.ignore_patterns("__pycache__"),
        )


def _run_copy(tree: Path, cache_dir: Path, pinned: str = "") -> dict:
    done = subprocess.run(
        # -I: no PYTHONPATH, user site or current folder; the editable
        # install's finder comes after sys.path, so the copy is imported
        [sys.executable, "-I", "-c", RUN_ADD, str(tree), str(cache_dir), pinned],
        input=ADD,
        capture_output=True,
        text=True,
        timeout=300,
        cwd=tree,
    )
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_an_edited_lowering_is_compiled_again(tmp_path):
    tree, cache_dir = tmp_path / "tree", tmp_path / "cache"
    _copy_import_tree(tree)
    a = np.arange(32, dtype="float32").reshape(4, 8)
    first = _run_copy(tree, cache_dir)
    assert first["compiled"] >= 1 and first["hits"] == 0
    assert np.array_equal(first["out"], a + 2)

    lowering = tree / "ember" / "passes" / "convert_arith_to_llvm.py"
    text = lowering.read_text()
    addf = "arith.AddfOp: _float_binary(llvm.FAddOp, contract=True),"
    assert text.count(addf) == 1
    lowering.write_text(text.replace(addf, addf.replace("FAddOp", "FSubOp")))

    # Were ember's sources left out of the key, the edited compiler would be
    # served the old object: the bug this key prevents.
    stale = _run_copy(tree, cache_dir, pinned=first["digest"])
    assert stale["digest"] != first["digest"]
    assert stale["hits"] >= 1 and stale["compiled"] == 0
    assert np.array_equal(stale["out"], a + 2)

    edited = _run_copy(tree, cache_dir)
    assert edited["hits"] == 0 and edited["compiled"] >= 1
    assert np.array_equal(edited["out"], a - 2)


def test_a_directory_given_as_a_string_is_a_path(tmp_path):
    cache = CompileCache(str(tmp_path))  # type: ignore[arg-type]
    cache.put("a" * 64, b"code")
    assert CompileCache(tmp_path).get("a" * 64) == b"code"


def test_a_stalled_compile_pool_hands_its_jobs_to_this_process(monkeypatch, tmp_path):
    """Where the worker pool finishes nothing for STALL_SECONDS (a lost task),
    the kernels left compile here: the model is complete and runs."""
    from ember.backends import kernels
    from ember.compiler.model import compile_model
    from ember.runtime import GraphModule, cpu

    stopped = []
    stop = kernels._stop
    monkeypatch.setattr(kernels, "STALL_SECONDS", 0)
    monkeypatch.setattr(kernels, "_stop", lambda pool: stopped.append(stop(pool)))
    lib = compile_model(TWO_KERNELS, {}, cache=CompileCache(tmp_path), workers=2)
    assert stopped and lib.compile_stats.compiled >= 2
    x = np.linspace(-1, 1, 4, dtype=np.float32)
    (y,) = GraphModule(lib["default"](cpu()))(input0=x)
    e = np.exp(-x)
    np.testing.assert_allclose(y, np.exp(e) / np.exp(e).sum() + e, rtol=1e-5)


TWO_KERNELS = """func.func @main(%x: tensor<4xf32>) -> tensor<4xf32> {
  %n = graph.neg %x : (tensor<4xf32>) -> tensor<4xf32>
  %e = graph.exp %n : (tensor<4xf32>) -> tensor<4xf32>
  %s = graph.softmax %e {axis = 0} : (tensor<4xf32>) -> tensor<4xf32>
  %t = graph.add %s, %e : (tensor<4xf32>, tensor<4xf32>) -> tensor<4xf32>
  func.return %t : tensor<4xf32>
}"""
