"""Exporting compiled modules as libraries and loading them back: .so and .tar,
in this process and in a fresh one without the compiler, module hierarchies,
cross-compiled modules, and every kind of bad library."""

import ctypes
import errno
import io
import json
import os
import re
import subprocess
import sys
import tarfile
import tempfile
import textwrap
import time

import numpy as np
import pytest

import ember
from ember import runtime as rt
from ember import te
from ember.backends.llvm import Target
from ember.backends.llvm.codegen import embedded_metadata
from ember.runtime import cc, elf

N = 1000  # not a multiple of the vector width: the guarded tail runs too
ROWS, COLS = 8, 33


def axpy(name: str = "axpy", n: int = N):
    """C = A + 2 B, split by 16, vectorized inside, parallel outside."""
    A = te.placeholder((n,), name="A")
    B = te.placeholder((n,), name="B")
    C = te.compute((n,), lambda i: A[i] + B[i] * 2.0, name="C")
    s = te.create_schedule(C.op)
    outer, inner = s[C].split(C.op.axis[0], factor=16)
    s[C].vectorize(inner)
    s[C].parallel(outer)
    return ember.build(s, [A, B, C], name=name)


def row_sums(name: str = "row_sums"):
    """R[i] = sum_k X[i, k], rows in parallel."""
    X = te.placeholder((ROWS, COLS), name="X")
    k = te.reduce_axis((0, COLS), name="k")
    R = te.compute((ROWS,), lambda i: te.sum(X[i, k], axis=k), name="R")
    s = te.create_schedule(R.op)
    s[R].parallel(R.op.axis[0])
    return ember.build(s, [X, R], name=name)


def negate(name: str = "negate", target: str = "llvm"):
    """Y = -X on 4 floats, serial."""
    X = te.placeholder((4,), name="X")
    Y = te.compute((4,), lambda i: -X[i], name="Y")
    return ember.build(te.create_schedule(Y.op), [X, Y], target=target, name=name)


@pytest.fixture(scope="module")
def mod():
    return axpy()


@pytest.fixture(scope="module")
def tree():
    """axpy importing row_sums, which imports negate (and axpy imports it too)."""
    root, middle, leaf = axpy(), row_sums(), negate()
    middle.import_module(leaf)
    root.import_module(middle)
    root.import_module(leaf)
    return root


@pytest.fixture(scope="module")
def exported(mod, tmp_path_factory):
    directory = tmp_path_factory.mktemp("exported")
    mod.export_library(directory / "axpy.so")
    mod.export_library(directory / "axpy.tar")
    return directory


def inputs(seed: int = 0):
    rng = np.random.default_rng(seed)
    return rng.standard_normal(N, np.float32), rng.standard_normal(N, np.float32)


def check_axpy(f) -> None:
    a, b = inputs()
    c = np.zeros(N, np.float32)
    f(a, b, c)
    np.testing.assert_allclose(c, a + 2 * b, rtol=1e-6)


def check_tree(call, get) -> None:
    """Run the three kernels of `tree`: `call` is the entry, `get` finds one."""
    check_axpy(call)
    x = np.arange(ROWS * COLS, dtype=np.float32).reshape(ROWS, COLS)
    r = np.zeros(ROWS, np.float32)
    get("row_sums")(x, r)
    np.testing.assert_allclose(r, x.sum(axis=1))
    y = np.zeros(4, np.float32)
    get("negate")(x[0, :4].copy(), y)
    np.testing.assert_array_equal(y, -x[0, :4])


# --- export and load in this process ------------------------------------------


@pytest.mark.parametrize("suffix", [".so", ".tar"])
def test_export_and_load(mod, exported, suffix):
    loaded = rt.load_module(exported / f"axpy{suffix}")
    assert isinstance(loaded, rt.DSOModule)
    assert loaded.path == str(exported / f"axpy{suffix}")
    assert loaded.entry_name == mod.entry_name == "axpy"
    assert loaded.function_names() == mod.function_names() == ["axpy"]
    assert loaded.metadata["functions"] == mod.metadata["functions"]
    assert loaded.metadata["entry"] == "axpy"
    assert loaded.metadata["triple"] == mod.target.triple
    check_axpy(loaded)
    check_axpy(loaded["axpy"])
    # the library's argument checks travel with it
    with pytest.raises(rt.EmberError, match="expected 3 arguments"):
        loaded(np.zeros(N, np.float32))
    with pytest.raises(rt.EmberError, match=r"argument 1 \(B\): expected float32"):
        loaded(np.zeros(N, np.float32), np.zeros(N, np.int32), np.zeros(N, np.float32))
    with pytest.raises(rt.FunctionNotFoundError, match="no function 'nope'.*axpy"):
        loaded["nope"]


def test_so_is_linked_with_libgomp(exported):
    data = (exported / "axpy.so").read_bytes()
    assert elf.parse_header(data).type == 3  # ET_DYN
    assert b"libgomp.so" in data  # DT_NEEDED: loads without ember's help


def test_parallel_library_takes_the_thread_count(exported, monkeypatch, tmp_path):
    monkeypatch.setenv("EMBER_NUM_THREADS", "3")
    path = tmp_path / "threads.so"
    path.write_bytes((exported / "axpy.so").read_bytes())
    loaded = rt.load_module(path)
    assert ctypes.c_int32.in_dll(loaded._lib, "__ember_num_threads").value == 3
    check_axpy(loaded)


def test_tar_contents(exported):
    with tarfile.open(exported / "axpy.tar") as tar:
        names = tar.getnames()
        manifest = json.load(tar.extractfile(cc.MANIFEST))
        objects = {n: tar.extractfile(n).read() for n in manifest["objects"]}
    assert names == ["0_axpy.o", "__ember_metadata.o", cc.MANIFEST]
    assert manifest["format"] == "ember-library" and manifest["version"] == 1
    assert manifest["objects"] == ["0_axpy.o", "__ember_metadata.o"]
    assert manifest["openmp"] is True
    assert manifest["metadata"]["functions"]["axpy"]["args"][2]["name"] == "C"
    for code in objects.values():
        assert elf.parse_header(code).type == 1  # relocatable objects


def test_tar_temporary_files_are_removed(exported, monkeypatch, tmp_path):
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(scratch))
    check_axpy(rt.load_module(exported / "axpy.tar"))
    assert list(scratch.iterdir()) == []


def test_tar_links_with_the_given_compiler(exported):
    with pytest.raises(rt.CompilerNotFoundError, match="no-such-cc"):
        rt.load_module(exported / "axpy.tar", cc="no-such-cc")
    check_axpy(rt.load_module(exported / "axpy.tar", cc=["cc"]))


def test_export_is_fast_and_overwrites_atomically(mod, tmp_path):
    path = tmp_path / "again.so"
    first = rt.load_module(_export(mod, path))
    inode = path.stat().st_ino
    start = time.perf_counter()
    mod.export_library(path)
    took = time.perf_counter() - start
    assert path.stat().st_ino != inode  # renamed over, never rewritten in place
    check_axpy(first)  # the library loaded from the old file still runs
    assert took < 2.0, f"export took {took:.2f} s"


def test_a_tar_export_failing_midway_leaves_the_old_file(mod, tmp_path, monkeypatch):
    """A disk full after the first member: the previous .tar is intact, as a
    failed .so link leaves its file, and no temporary is left beside it."""
    path = _export(mod, tmp_path / "m.tar")
    before = path.read_bytes()
    addfile = tarfile.TarFile.addfile

    def full(self, tarinfo, fileobj=None):
        addfile(self, tarinfo, fileobj)
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(tarfile.TarFile, "addfile", full)
    with pytest.raises(OSError, match="No space left on device"):
        mod.export_library(path)
    assert path.read_bytes() == before
    assert [p.name for p in tmp_path.iterdir()] == ["m.tar"]
    monkeypatch.undo()
    check_axpy(rt.load_module(path))


def _export(mod, path):
    mod.export_library(path)
    return path


def test_reexport_to_the_same_path_loads_the_new_code(tmp_path):
    path = tmp_path / "scale.so"
    X = te.placeholder((4,), name="X")
    results = []
    for k in (2.0, 3.0):
        Y = te.compute((4,), lambda i, k=k: X[i] * k, name="Y")
        ember.build(te.create_schedule(Y.op), [X, Y], name="scale").export_library(path)
        y = np.zeros(4, np.float32)
        rt.load_module(path)(np.ones(4, np.float32), y)
        results.append(y[0])
    assert results == [2.0, 3.0]


def test_metadata_with_unusual_names_survives_export(tmp_path):
    A = te.placeholder((3,), name='A "quoted" \\ ü')
    B = te.compute((3,), lambda i: A[i] + 1.0, name="B\tß")
    mod = ember.build(te.create_schedule(B.op), [A, B], name="odd")
    assert json.loads(embedded_metadata(mod.get_source("ll"))) == mod.metadata
    mod.export_library(tmp_path / "odd.so")
    loaded = rt.load_module(tmp_path / "odd.so")
    args = loaded.metadata["functions"]["odd"]["args"]
    assert [a["name"] for a in args] == ['A "quoted" \\ ü', "B\tß"]


# --- a fresh process without the compiler ---------------------------------------

FRESH = r"""
import json, sys
sys.modules["xdsl"] = None
sys.modules["llvmlite"] = None
for name in ("xdsl", "llvmlite", "llvmlite.binding"):
    try:
        __import__(name)
    except ImportError:
        pass
    else:
        raise SystemExit(f"{name} is importable")
import numpy as np
import ember.runtime as rt

out = {}
for path in sys.argv[1:]:
    mod = rt.load_module(path)
    rng = np.random.default_rng(1)
    a = rng.standard_normal(1000, np.float32)
    b = rng.standard_normal(1000, np.float32)
    c = np.zeros(1000, np.float32)
    mod(a, b, c)
    entry = {"error": float(np.abs(c - (a + 2 * b)).max()),
             "functions": mod.function_names(), "entry": mod.entry_name}
    if "row_sums" in mod.function_names():
        x = rng.standard_normal((8, 33), np.float32)
        r = np.zeros(8, np.float32)
        mod["row_sums"](x, r)
        entry["row_error"] = float(np.abs(r - x.sum(axis=1)).max())
    out[path] = entry
out["compiler_modules"] = sorted(
    m for m in sys.modules
    if m.startswith(("ember.backends", "ember.passes", "ember.dialects"))
    or (m.split(".")[0] in ("xdsl", "llvmlite") and sys.modules[m] is not None)
)
print(json.dumps(out))
"""


def test_fresh_process_without_the_compiler(tree, exported, tmp_path):
    tree.export_library(tmp_path / "tree.so")
    tree.export_library(tmp_path / "tree.tar")
    paths = [
        str(exported / "axpy.so"),
        str(exported / "axpy.tar"),
        str(tmp_path / "tree.so"),
        str(tmp_path / "tree.tar"),
    ]
    done = subprocess.run(
        [sys.executable, "-c", FRESH, *paths], capture_output=True, text=True
    )
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)
    assert out.pop("compiler_modules") == []
    for path in paths:
        assert out[path]["error"] < 1e-5
        assert out[path]["entry"] == "axpy"
    assert out[paths[2]]["functions"] == ["axpy", "row_sums", "negate"]
    assert out[paths[3]]["row_error"] < 1e-4


# --- module hierarchy -----------------------------------------------------------


def test_hierarchy_in_process(tree):
    middle, leaf = tree.imported_modules
    assert tree.type_key == middle.type_key == "llvm"
    assert middle.imported_modules == [leaf]
    assert tree.get_function("negate", query_imports=True) is leaf["negate"]
    with pytest.raises(rt.FunctionNotFoundError):
        tree.get_function("row_sums")
    check_tree(tree, lambda name: tree.get_function(name, query_imports=True))


@pytest.mark.parametrize("suffix", [".so", ".tar"])
def test_hierarchy_exported_as_one_library(tree, tmp_path, suffix):
    tree.export_library(tmp_path / f"tree{suffix}")
    loaded = rt.load_module(tmp_path / f"tree{suffix}")
    assert loaded.entry_name == "axpy"
    assert loaded.function_names() == ["axpy", "row_sums", "negate"]
    assert loaded.imported_modules == []  # flattened, as in TVM
    for name in ("axpy", "row_sums", "negate"):
        assert name in loaded
    check_tree(loaded, loaded.get_function)
    negate_args = loaded.metadata["functions"]["negate"]["args"]
    assert [(a["name"], a["output"]) for a in negate_args] == [
        ("X", False),
        ("Y", True),
    ]


def test_two_parallel_modules_share_the_thread_count(tmp_path, monkeypatch):
    root = axpy()
    root.import_module(row_sums())
    root.export_library(tmp_path / "both.so")
    symbols = subprocess.run(
        ["nm", "-D", "--defined-only", str(tmp_path / "both.so")],
        capture_output=True,
        text=True,
    )
    if symbols.returncode == 0:
        lines = [ln.split() for ln in symbols.stdout.splitlines()]
        assert ["V", "__ember_num_threads"] in [ln[1:] for ln in lines]
        assert [ln[2] for ln in lines].count("__ember_metadata") == 1
    monkeypatch.setenv("EMBER_NUM_THREADS", "2")
    loaded = rt.load_module(tmp_path / "both.so")
    assert ctypes.c_int32.in_dll(loaded._lib, "__ember_num_threads").value == 2


def test_same_function_in_two_modules_is_refused(tmp_path):
    root = negate()
    root.import_module(negate())
    with pytest.raises(rt.ExportError) as info:
        root.export_library(tmp_path / "twice.so")
    assert str(info.value) == (
        f"export_library: cannot write {tmp_path / 'twice.so'}: function 'negate' "
        "is defined by both the exported module (llvm: negate) and imported "
        "module #1 (llvm: negate); rename one of them"
    )
    assert not (tmp_path / "twice.so").exists()


def test_save_of_a_module_with_imports_explains(tree, tmp_path):
    with pytest.raises(rt.ExportError, match=r"imports 2 other module\(s\).*export_"):
        tree.save(tmp_path / "tree.o")


def test_loaded_library_cannot_be_exported_again(exported, tmp_path):
    loaded = rt.load_module(exported / "axpy.so")
    with pytest.raises(rt.ExportError, match="axpy.so cannot be exported: it has no"):
        loaded.export_library(tmp_path / "again.so")


# --- export errors ----------------------------------------------------------------


@pytest.mark.parametrize("name", ["m.dylib", "m.a", "m"])
def test_export_wrong_suffix(mod, tmp_path, name):
    with pytest.raises(rt.ExportError, match=r"ending in \.so .*, \.tar .* or \.o"):
        mod.export_library(tmp_path / name)


def test_export_to_one_object_that_load_module_links(mod, tmp_path):
    """`export_library("m.o")`: every object, the metadata and the data
    linked into one relocatable object (`cc -r`)."""
    mod.export_library(tmp_path / "m.o")
    assert (tmp_path / "m.o").read_bytes()[:4] == b"\x7fELF"
    loaded = rt.load_module(tmp_path / "m.o")
    assert loaded.function_names() == mod.function_names()


def test_export_missing_compiler(mod, tmp_path, monkeypatch):
    with pytest.raises(rt.CompilerNotFoundError) as info:
        mod.export_library(tmp_path / "m.so", cc="no-such-cc-4711")
    assert str(info.value) == (
        "C compiler 'no-such-cc-4711' (cc=) not found; install one, set $CC or "
        "pass cc=<compiler>"
    )
    monkeypatch.setenv("CC", "/nowhere/cc")
    with pytest.raises(rt.CompilerNotFoundError, match=r"'/nowhere/cc' \(\$CC\)"):
        mod.export_library(tmp_path / "m.so")
    assert not (tmp_path / "m.so").exists()


def test_export_with_a_compiler_command(mod, tmp_path):
    mod.export_library(tmp_path / "m.so", cc="cc -Wl,--no-undefined")
    check_axpy(rt.load_module(tmp_path / "m.so"))


def test_link_failure_is_short(mod, tmp_path):
    (tmp_path / "m.so").write_bytes(b"old")
    with pytest.raises(rt.LinkError) as info:
        mod.export_library(tmp_path / "m.so", options=["-lnonexistent_ember_lib"])
    message = str(info.value)
    lines = message.splitlines()
    assert lines[0].startswith("linking library.so failed (exit status 1): ")
    assert " -shared -fPIC " in lines[0] and "-lnonexistent_ember_lib" in lines[0]
    assert any("nonexistent_ember_lib" in line for line in lines[1:])
    assert len(lines) <= 8
    assert (tmp_path / "m.so").read_bytes() == b"old"  # left as it was
    assert [p.name for p in tmp_path.iterdir()] == ["m.so"]


# --- cross-compiled modules -----------------------------------------------------


@pytest.fixture(scope="module")
def aarch64():
    return negate(target="llvm -mtriple=aarch64-linux-gnu")


def test_cross_module_exports_tar_not_so(aarch64, tmp_path):
    host = elf.host_machine()
    if host == "aarch64":
        pytest.skip("this machine is aarch64")
    with pytest.raises(rt.ExportError) as info:
        aarch64.export_library(tmp_path / "arm.so")
    assert (
        f"is compiled for {aarch64.target.triple}, not this {host} machine; "
        "linking" in str(info.value)
    )
    assert "pass cc=, e.g. cc='aarch64-linux-gnu-gcc'" in str(info.value)
    aarch64.export_library(tmp_path / "arm.tar")
    manifest = cc.read_manifest(str(tmp_path / "arm.tar"))
    assert manifest["triple"] == aarch64.target.triple == "aarch64-linux-gnu"
    assert manifest["openmp"] is False
    with tarfile.open(tmp_path / "arm.tar") as tar:
        for name in manifest["objects"]:
            header = elf.parse_header(tar.extractfile(name).read())
            assert (header.machine_name, header.bits, header.type) == ("aarch64", 64, 1)
    with pytest.raises(rt.IncompatibleLibraryError) as info:
        rt.load_module(tmp_path / "arm.tar")
    assert str(info.value) == (
        f"{tmp_path / 'arm.tar'} was built for aarch64 (aarch64-linux-gnu), "
        f"this machine is {host}"
    )


def test_cross_module_with_a_cross_compiler(aarch64, tmp_path):
    """A named compiler is used as given; here a fake one proves the call."""
    fake = tmp_path / "aarch64-fake-gcc"
    fake.write_text(
        '#!/bin/sh\nwhile [ "$1" != -o ]; do shift; done\n'
        'printf "%s\\n" "$@" > "$(dirname "$0")/args"; touch "$2"\n'
    )
    fake.chmod(0o755)
    aarch64.export_library(tmp_path / "arm.so", cc=str(fake))
    args = (tmp_path / "args").read_text().split()
    assert args[2].endswith("_negate.o") and args[3].endswith("__ember_metadata.o")
    assert "-lgomp" not in args
    assert (tmp_path / "arm.so").exists()


def test_modules_for_different_machines_are_refused(aarch64, tmp_path):
    root = negate("host_negate")
    root.import_module(aarch64)
    with pytest.raises(rt.ExportError, match=r"cannot link imported module #1 "):
        root.export_library(tmp_path / "mixed.tar")


# --- bad libraries ----------------------------------------------------------------


def test_missing_library(tmp_path):
    with pytest.raises(rt.LibraryNotFoundError, match="no such file: .*gone.tar"):
        rt.load_module(tmp_path / "gone.tar")


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (b"", "the file is empty"),
        (b"int main() { return 0; }\n", "it is a text file \\(starting 'int main"),
        (bytes(range(7, 71)), "it starts with bytes 07 08 09 0a"),
        (b"\0asm\1\0\0\0", "it is a WebAssembly module"),
        (b"\x7fELF\2\1\1", "its ELF header is cut short or damaged"),
    ],
)
def test_not_a_shared_library(tmp_path, content, message):
    path = tmp_path / "bad.so"
    path.write_bytes(content)
    with pytest.raises(
        rt.InvalidLibraryError, match=f"bad.so is not an ELF shared library: {message}"
    ):
        rt.load_module(path)


def test_object_file_is_not_a_library(mod, tmp_path):
    mod.save(tmp_path / "axpy.o")
    os.rename(tmp_path / "axpy.o", tmp_path / "axpy.so")
    with pytest.raises(
        rt.InvalidLibraryError,
        match="axpy.so is a relocatable object file, not a shared library; link it",
    ):
        rt.load_module(tmp_path / "axpy.so")


def test_library_for_another_machine(exported, tmp_path):
    data = bytearray((exported / "axpy.so").read_bytes())
    host = elf.host_machine()
    machine = 243 if host == "aarch64" else 183  # riscv or aarch64
    data[18:20] = machine.to_bytes(2, sys.byteorder)
    (tmp_path / "other.so").write_bytes(data)
    built = "riscv64" if machine == 243 else "aarch64"
    with pytest.raises(rt.IncompatibleLibraryError) as info:
        rt.load_module(tmp_path / "other.so")
    assert str(info.value) == (
        f"{tmp_path / 'other.so'} was built for {built}, this machine is {host}"
    )
    data[18:20] = elf.host_header().machine.to_bytes(2, sys.byteorder)
    data[4] = 1  # 32-bit
    (tmp_path / "narrow.so").write_bytes(data)
    narrow = "x32" if host == "x86_64" else f"32-bit {host}"
    with pytest.raises(
        rt.IncompatibleLibraryError, match=f"narrow.so was built for {narrow}, this"
    ):
        rt.load_module(tmp_path / "narrow.so")


TRUNCATED = r"""
import sys
import ember.runtime as rt
for path in sys.argv[1:]:
    try:
        rt.load_module(path)
    except rt.LibraryLoadError as e:
        print(type(e).__name__, str(e).split(": ", 1)[0].split(" is ")[-1][:9])
    else:
        print("loaded")
"""


def test_truncated_library_in_a_fresh_process(exported, tmp_path):
    data = (exported / "axpy.so").read_bytes()
    cuts = [len(data) // 2, len(data) - 1, 40, 200, len(data) // 8]
    paths = []
    for cut in cuts:
        paths.append(tmp_path / f"cut{cut}.so")
        paths[-1].write_bytes(data[:cut])
    done = subprocess.run(
        [sys.executable, "-c", TRUNCATED, *map(str, paths)],
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr  # the process survived
    assert done.stdout.splitlines() == [
        "InvalidLibraryError truncated",
        "InvalidLibraryError truncated",
        "InvalidLibraryError not an EL",
        "InvalidLibraryError truncated",
        "InvalidLibraryError truncated",
    ]
    with pytest.raises(
        rt.InvalidLibraryError,
        match=rf"truncated: its .* end at byte \d+, the file has {cuts[0]} bytes",
    ):
        rt.load_module(paths[0])


BARE = r"""
#include <stdint.h>
int32_t twice(void* args, int32_t* codes, int32_t n, void* ret, int32_t* ret_code) {
  *(int64_t*)ret = 2 * *(int64_t*)args; *ret_code = 0; return 0;
}
"""


def test_library_without_metadata_says_so(tmp_path):
    (tmp_path / "bare.c").write_text(BARE)
    subprocess.run(
        ["cc", "-shared", "-fPIC", "-o", tmp_path / "bare.so", tmp_path / "bare.c"],
        check=True,
    )
    loaded = rt.load_module(tmp_path / "bare.so")
    assert loaded["twice"](21) == 42
    assert loaded.metadata == {} and loaded.function_names() == []
    with pytest.raises(
        rt.EmberError, match="no entry function .it defines no __ember_metadata"
    ):
        loaded()
    with pytest.raises(
        rt.FunctionNotFoundError,
        match=r"no function 'thrice'; available: none listed \(.*bare.so defines no",
    ):
        loaded["thrice"]


def _tar(path, files: dict):
    with tarfile.open(path, "w") as tar:
        for name, data in files.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return path


def _manifest(**changes):
    document = {
        "format": "ember-library",
        "version": 1,
        "triple": "x86_64-unknown-linux-gnu",
        "objects": ["a.o"],
    }
    document.update(changes)
    return json.dumps(document).encode()


@pytest.mark.parametrize(
    ("files", "message"),
    [
        ({"a.o": b"x"}, "is not an ember library: the archive has no ember_library"),
        ({cc.MANIFEST: b"{oops"}, "invalid ember_library.json: Expecting"),
        ({cc.MANIFEST: b"[]"}, 'expected "format": "ember-library"'),
        (
            {cc.MANIFEST: _manifest(version=7)},
            "has version 7, this runtime reads version 1",
        ),
        ({cc.MANIFEST: _manifest(objects=["../evil.o"])}, "plain .o file names"),
        ({cc.MANIFEST: _manifest(objects=[])}, "plain .o file names"),
        ({cc.MANIFEST: _manifest()}, "the archive has no file a.o"),
    ],
)
def test_corrupt_tar(tmp_path, files, message):
    path = _tar(tmp_path / "bad.tar", files)
    with pytest.raises(rt.InvalidLibraryError, match=message):
        rt.load_module(path)


def test_not_a_tar_and_truncated_tar(exported, tmp_path):
    (tmp_path / "text.tar").write_text("hello")
    with pytest.raises(rt.InvalidLibraryError, match="text.tar is not a tar archive"):
        rt.load_module(tmp_path / "text.tar")
    data = (exported / "axpy.tar").read_bytes()
    (tmp_path / "cut.tar").write_bytes(data[: len(data) // 3])
    with pytest.raises(rt.InvalidLibraryError, match="cut.tar"):
        rt.load_module(tmp_path / "cut.tar")


def test_tar_with_a_corrupt_object_fails_to_link_briefly(tmp_path):
    if elf.host_machine() is None:
        pytest.skip("unknown host machine")
    triple = f"{elf.host_machine()}-unknown-linux-gnu"
    path = _tar(
        tmp_path / "junk.tar",
        {"a.o": b"\x7fELF garbage" * 50, cc.MANIFEST: _manifest(triple=triple)},
    )
    with pytest.raises(rt.LinkError, match="linking library.so failed") as info:
        rt.load_module(path)
    assert len(str(info.value).splitlines()) <= 8


def test_wrong_device_argument_on_a_loaded_library(exported):
    loaded = rt.load_module(exported / "axpy.so")
    a, b = inputs()
    tensor = rt.from_dlpack(a)
    tensor._dltensor.device.device_type = 2  # claims to live on a CUDA device
    try:
        with pytest.raises(rt.EmberError, match=r"argument 0 \(A\): expected a CPU"):
            loaded(tensor, b, np.zeros(N, np.float32))
    finally:
        tensor._dltensor.device.device_type = 1


def test_library_in_a_child_survives_every_bad_input(exported, tmp_path):
    """Each bad input in one child process, which must exit normally."""
    (tmp_path / "text.so").write_text("not a library")
    script = textwrap.dedent(
        """
        import sys
        import numpy as np
        import ember.runtime as rt
        good, bad = sys.argv[1:3]
        errors = []
        for attempt in (
            lambda: rt.load_module(bad),
            lambda: rt.load_module(good)["missing"],
            lambda: rt.load_module(good)(np.zeros(3, np.float32)),
            lambda: rt.load_module(good)(1, 2, 3),
            lambda: rt.load_module(good)("a", "b", "c"),
        ):
            try:
                attempt()
            except rt.EmberError as e:
                errors.append(type(e).__name__)
        print(" ".join(errors))
        """
    )
    done = subprocess.run(
        [
            sys.executable,
            "-c",
            script,
            str(exported / "axpy.so"),
            str(tmp_path / "text.so"),
        ],
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == [
        "InvalidLibraryError",
        "FunctionNotFoundError",
        "EmberError",
        "EmberError",
        "EmberError",
    ]


def test_library_for_a_cpu_with_more_features(tmp_path):
    table = elf._CPUINFO_FLAGS.get(elf.host_machine() or "", {})
    lacking = [f for f in table if elf.missing_cpu_features([f])]
    if not lacking:
        pytest.skip("this CPU has every feature ember checks for")
    feature = lacking[-1]
    mod = negate(target=f"llvm -mattr=+{feature}")
    assert not mod.target.is_host
    mod.export_library(tmp_path / "wide.so")  # the host's compiler links it
    with pytest.raises(rt.IncompatibleLibraryError) as info:
        rt.load_module(tmp_path / "wide.so")
    message = str(info.value)  # the feature, and any it implies
    assert message.startswith(f"{tmp_path / 'wide.so'} was built for a CPU with ")
    assert feature in message.split(", which this CPU lacks; export it for a")[0]
    assert (
        feature
        in rt.load_module(tmp_path / "wide.so", check_cpu=False).metadata["features"]
    )


def test_host_library_records_the_features_it_uses(exported):
    features = rt.load_module(exported / "axpy.so").metadata["features"]
    assert elf.missing_cpu_features(features) == []
    if elf.host_machine() == "x86_64" and "avx2" in (elf.host_cpu_flags() or ()):
        assert "avx2" in features


@pytest.mark.parametrize(
    ("triple", "magic"),
    [("riscv64-linux-gnu", b"\x7fELF\x02\x01"), ("wasm32-unknown-unknown", b"\0asm")],
)
def test_cross_targets_export_tar(tmp_path, triple, magic):
    mod = negate(target=f"llvm -mtriple={triple}")
    mod.export_library(tmp_path / "m.tar")
    manifest = cc.read_manifest(str(tmp_path / "m.tar"))
    assert manifest["triple"] == triple
    with tarfile.open(tmp_path / "m.tar") as tar:
        for name in manifest["objects"]:
            assert tar.extractfile(name).read().startswith(magic)
    with pytest.raises(
        rt.IncompatibleLibraryError, match=f"was built for {triple[:6]}"
    ):
        rt.load_module(tmp_path / "m.tar")


def test_damaged_headers_never_escape_as_other_errors(exported, tmp_path):
    """Random changes to the ELF header and program headers: the check passes
    or raises a LibraryLoadError, never anything else (pure Python, no dlopen)."""
    data = (exported / "axpy.so").read_bytes()
    rng = np.random.default_rng(7)
    path = tmp_path / "damaged.so"
    outcomes = set()
    for _ in range(300):
        damaged = bytearray(data)
        for _ in range(rng.integers(1, 4)):
            damaged[rng.integers(4, 64 + 56 * 4)] = rng.integers(256)
        path.write_bytes(damaged)
        try:
            elf.check_library(str(path))
        except rt.LibraryLoadError as e:
            outcomes.add(type(e).__name__)
        else:
            outcomes.add("ok")
    assert outcomes <= {"ok", "InvalidLibraryError", "IncompatibleLibraryError"}
    assert "InvalidLibraryError" in outcomes and "ok" in outcomes


NEWER_CPUS = {
    "x86_64": ("graniterapids", "sapphirerapids", "znver5", "znver4", "icelake-server"),
    "aarch64": ("neoverse-v2", "cortex-x4", "a64fx", "neoverse-n1"),
}


def test_a_named_newer_cpu_records_every_feature_it_implies(tmp_path):
    """`-mcpu=<a newer CPU>` without `-mattr` used to record no features: the
    load-time check passed on an older CPU and the first call died of SIGILL."""
    machine = elf.host_machine() or ""
    for cpu in NEWER_CPUS.get(machine, ()):
        target = Target(f"llvm -mcpu={cpu}")
        lacking = elf.missing_cpu_features(target.code_features())
        if lacking:
            break
    else:
        pytest.skip(f"this CPU has every feature of {NEWER_CPUS.get(machine)}")
    assert not target.is_host and lacking[0] in target.not_host_reason
    mod = negate(target=str(target))
    mod.export_library(tmp_path / "newer.so")
    with pytest.raises(rt.IncompatibleLibraryError, match=f"CPU with .*{lacking[0]}"):
        rt.load_module(tmp_path / "newer.so")
    recorded = rt.load_module(tmp_path / "newer.so", check_cpu=False).metadata
    assert set(recorded["features"]) == set(target.code_features())


def test_a_cpu_is_refused_only_for_features_code_can_use():
    """A Zen 4 VM lacks `pku`, which `-mcpu=skylake-avx512` implies: no
    generated instruction uses it, so the target still runs in-process."""
    if elf.host_machine() != "x86_64":
        pytest.skip("the CPUs named are x86-64 ones")
    usable = set(elf.code_features(elf.host_machine() or ""))
    for cpu in ("skylake-avx512", "icelake-server", *NEWER_CPUS.get("x86_64", ())):
        reason = Target(f"llvm -mcpu={cpu}").not_host_reason
        named = set(re.findall(r"\+([\w.-]+)", reason))
        assert named <= usable, (cpu, reason)
    assert "pku" not in usable and "avx512f" in elf.code_features("x86_64")
