"""Damaged library contents (the metadata JSON inside a .so, a .tar's
manifest and metadata object) are EmberErrors naming the file, never a
UnicodeDecodeError, RecursionError or TypeError from deep inside."""

import io
import json
import re
import tarfile

import numpy as np
import pytest

import ember
from ember import runtime as rt
from ember import te
from ember.runtime import cc

METADATA_JSON = re.compile(rb'\{"entry": ')


@pytest.fixture(scope="module")
def exported(tmp_path_factory):
    A = te.placeholder((64,), name="A")
    B = te.compute((64,), lambda i: A[i] * 2.0, name="B")
    mod = ember.build(te.create_schedule(B.op), [A, B], name="twice")
    directory = tmp_path_factory.mktemp("damage")
    mod.export_library(directory / "twice.so")
    mod.export_library(directory / "twice.tar")
    return directory


def _patched(data: bytes, change) -> bytes:
    """``data`` with ``change(json_bytes) -> same-length bytes`` applied to
    every metadata JSON in it (the library's, and each module's own)."""
    out = bytearray(data)
    starts = [m.start() for m in METADATA_JSON.finditer(data)]
    assert starts, "no metadata JSON found"
    for start in starts:
        end = data.index(b"\0", start)
        new = change(bytes(data[start:end]))
        assert len(new) == end - start
        out[start:end] = new
    return bytes(out)


def _write(path, data: bytes):
    path.write_bytes(data)
    return path


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda j: j[:12] + b"\xff" + j[13:], r"the JSON is not UTF-8 \(byte 0xff"),
        (lambda j: j[:12] + b"\xc3(" + j[14:], "the JSON is not UTF-8"),
        (lambda j: j.replace(b'"twice"', b"1234567", 1), '"entry" must be a string'),
        (lambda j: b"[" * (len(j) - 1) + b"]", "nested too deeply|Expecting"),
        (lambda j: b"x" + j[1:], "Expecting value"),
    ],
)
def test_damaged_metadata_in_a_so(exported, tmp_path, change, message):
    path = _write(
        tmp_path / "bad.so", _patched((exported / "twice.so").read_bytes(), change)
    )
    with pytest.raises(rt.EmberError, match=message) as caught:
        rt.load_module(path)
    assert str(path) in str(caught.value)
    assert "invalid __ember_metadata" in str(caught.value)


def _tar_with(source, tmp_path, name: str, change) -> "object":
    """A copy of the .tar ``source`` with member ``name`` changed."""
    path = tmp_path / f"bad_{name.replace('.', '_')}.tar"
    with tarfile.open(source) as old, tarfile.open(path, "w") as new:
        for member in old.getmembers():
            f = old.extractfile(member)
            assert f is not None
            data = f.read()
            if member.name == name:
                data = change(data)
            info = tarfile.TarInfo(member.name)
            info.size = len(data)
            new.addfile(info, io.BytesIO(data))
    return path


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (
            lambda d: d.replace(b'"format"', b'"f\xffrmat"'),
            "invalid ember_library.json",
        ),
        (lambda d: b"[" * 100_000, "invalid ember_library.json"),
        (lambda d: b'{"format": "ember-library", "version": []}', "has version \\[\\]"),
    ],
)
def test_damaged_tar_manifest(exported, tmp_path, change, message):
    path = _tar_with(exported / "twice.tar", tmp_path, cc.MANIFEST, change)
    with pytest.raises(rt.InvalidLibraryError, match=message) as caught:
        rt.load_module(path)
    assert str(path) in str(caught.value)


def test_damaged_metadata_object_in_a_tar(exported, tmp_path):
    def change(data: bytes) -> bytes:
        return _patched(data, lambda j: j[:12] + b"\xff" + j[13:])

    path = _tar_with(exported / "twice.tar", tmp_path, "__ember_metadata.o", change)
    with pytest.raises(rt.EmberError, match="the JSON is not UTF-8") as caught:
        rt.load_module(path)
    assert str(path) in str(caught.value)


def test_flipped_bits_in_the_metadata_load_or_raise_ember_errors(exported, tmp_path):
    """Each flip either leaves valid metadata (a changed name, say) or is an
    EmberError; the library's functions still check their arguments."""
    data = (exported / "twice.so").read_bytes()
    starts = [m.start() for m in METADATA_JSON.finditer(data)]
    start = starts[-1]  # the library's merged metadata comes last
    end = data.index(b"\0", start)
    rng = np.random.default_rng(0)
    for k, bit in enumerate(rng.choice(8 * (end - start), 60, replace=False)):
        damaged = bytearray(data)
        for s in starts:
            damaged[s + bit // 8] ^= 1 << (bit % 8)
        path = _write(tmp_path / f"flip{k}.so", bytes(damaged))
        try:
            mod = rt.load_module(path)
        except rt.EmberError:
            continue
        assert isinstance(mod.metadata, dict)
        json.dumps(mod.metadata)
