"""Param dicts (save_param_dict / load_param_dict), packed params blobs, and
the ELF objects that carry a blob into a library."""

import doctest
import struct
import zlib

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ember.runtime import (
    EmberError,
    NDArray,
    array,
    load_param_dict,
    pack_params,
    param_layout,
    save_param_dict,
)
from ember.runtime import data_object as data_object_module
from ember.runtime import params as params_module
from ember.runtime.data_object import data_object
from ember.runtime.errors import InvalidParamsError


def _params():
    rng = np.random.default_rng(0)
    return {
        "conv1.weight": rng.standard_normal((8, 3, 3, 3)).astype("float32"),
        "conv1.bias": rng.standard_normal(8).astype("float32"),
        "scalar": np.array(2.5, "float64"),
        "empty": np.zeros((0, 4), "float32"),
        "ids": np.arange(5, dtype="int64"),
        "mask": np.array([True, False, True]),
        "half": np.arange(3, dtype="float16"),
        "bytes": np.arange(7, dtype="uint8"),
        "名前": np.ones(2, "int32"),
    }


def test_round_trip_keeps_names_order_dtypes_shapes_values():
    params = _params()
    loaded = load_param_dict(save_param_dict(params))
    assert list(loaded) == list(params)
    for name, value in params.items():
        assert isinstance(loaded[name], NDArray)
        got = loaded[name].numpy()
        assert got.dtype == value.dtype and got.shape == value.shape, name
        np.testing.assert_array_equal(got, value)


def test_data_is_64_byte_aligned_in_the_file_and_in_memory():
    params = _params()
    blob = save_param_dict(params)
    for name, value in params.items():
        if value.nbytes >= 8:
            at = blob.find(value.tobytes())
            assert at % 64 == 0, name
    for value in load_param_dict(blob).values():
        assert value.data_ptr() % 64 == 0


def test_accepts_ndarrays_strided_arrays_and_big_endian():
    x = np.arange(12, dtype="float32").reshape(3, 4)
    be = np.arange(4, dtype=">i4")
    loaded = load_param_dict(
        save_param_dict({"nd": array(x), "t": x.T, "be": be, "view": x[:, ::2]})
    )
    np.testing.assert_array_equal(loaded["nd"].numpy(), x)
    np.testing.assert_array_equal(loaded["t"].numpy(), x.T)
    np.testing.assert_array_equal(loaded["view"].numpy(), x[:, ::2])
    assert loaded["be"].dtype == "int32"
    np.testing.assert_array_equal(loaded["be"].numpy(), be)


def test_the_format_is_as_documented():
    blob = save_param_dict({"w": np.array([1.0, 2.0], "float32")})
    assert blob[:8] == b"EMBERPRM"
    assert struct.unpack_from("<II", blob, 8) == (2, 1)
    assert struct.unpack_from("<I", blob, 16) == (1,)
    assert blob[20:21] == b"w"
    assert struct.unpack_from("<H", blob, 21) == (7,)
    assert blob[23:30] == b"float32"
    assert struct.unpack_from("<Iq", blob, 30) == (1, 2)
    assert struct.unpack_from("<Q", blob, 42) == (8,)
    assert blob[64:-4] == np.array([1.0, 2.0], "<f4").tobytes()
    assert struct.unpack("<I", blob[-4:]) == (zlib.crc32(blob[:-4]),)


def _reseal(blob: bytes) -> bytes:
    """``blob`` (a version 2 document, checksum included) with the checksum
    of what it holds now: a crafted document, not a damaged one."""
    return blob[:-4] + struct.pack("<I", zlib.crc32(blob[:-4]))


def _version_1(blob: bytes) -> bytes:
    """``blob`` in the first format: version 1, no checksum."""
    return blob[:8] + struct.pack("<I", 1) + blob[12:-4]


def test_version_1_documents_are_still_read():
    params = _params()
    loaded = load_param_dict(_version_1(save_param_dict(params)))
    assert list(loaded) == list(params)
    for name, value in params.items():
        np.testing.assert_array_equal(loaded[name].numpy(), value)


def test_every_flipped_bit_is_an_error():
    """Before the checksum, a flipped bit in a weight loaded silently."""
    blob = save_param_dict(_params())
    rng = np.random.default_rng(0)
    bits = list(range(0, 8 * 200)) + list(rng.integers(0, 8 * len(blob), 2000))
    bits += list(range(8 * len(blob) - 64, 8 * len(blob)))  # the checksum itself
    for bit in bits:
        damaged = bytearray(blob)
        damaged[bit // 8] ^= 1 << (bit % 8)
        with pytest.raises(EmberError) as caught:
            load_param_dict(bytes(damaged))
        assert isinstance(caught.value, InvalidParamsError | ValueError)
        assert "param dict" in str(caught.value), bit


def test_a_lost_or_added_byte_is_an_error():
    blob = save_param_dict({"w": np.arange(4, dtype="float32")})
    for at in range(len(blob)):
        with pytest.raises(InvalidParamsError):
            load_param_dict(blob[:at] + blob[at + 1 :])
        with pytest.raises(InvalidParamsError):
            load_param_dict(blob[:at] + b"\0" + blob[at:])


def test_empty_dict():
    assert load_param_dict(save_param_dict({})) == {}


@pytest.mark.parametrize(
    "value, message",
    [
        ({"x": np.zeros(2, "complex64")}, "unsupported dtype complex64"),
        ({"": np.zeros(2)}, "non-empty strings"),
        ({3: np.zeros(2)}, "non-empty strings"),
        ({"x": [1, 2]}, "expected a numpy array or NDArray, got list"),
    ],
)
def test_save_refuses(value, message):
    with pytest.raises(TypeError, match=message):
        save_param_dict(value)


def test_not_a_param_dict():
    with pytest.raises(ValueError, match="not an ember param dict"):
        load_param_dict(b"\x7fELF" + bytes(100))
    with pytest.raises(ValueError, match="not an ember param dict"):
        load_param_dict(b"")
    with pytest.raises(TypeError, match="expected bytes, got str"):
        load_param_dict("EMBERPRM")  # type: ignore[arg-type]


def test_other_version():
    blob = bytearray(save_param_dict({}))
    blob[8] = 9
    with pytest.raises(InvalidParamsError, match="version 9 is not supported"):
        load_param_dict(bytes(blob))


def test_every_truncation_is_a_clear_error():
    blob = save_param_dict({"a": np.arange(20, dtype="float32"), "b": np.ones(3)})
    for n in range(8, len(blob)):
        with pytest.raises(InvalidParamsError, match="truncated param dict|damaged"):
            load_param_dict(blob[:n])
    old = _version_1(blob)
    for n in range(8, len(old)):
        with pytest.raises(InvalidParamsError, match="truncated param dict|corrupt"):
            load_param_dict(old[:n])


def test_trailing_bytes():
    with pytest.raises(InvalidParamsError, match="damaged param dict: the CRC-32"):
        load_param_dict(save_param_dict({}) + b"abc")
    with pytest.raises(ValueError, match="3 bytes after the last of 0 entries"):
        load_param_dict(_reseal(save_param_dict({})[:-4] + b"abc" + bytes(4)))


def _corrupt(offset: int, value: bytes) -> bytes:
    blob = bytearray(save_param_dict({"w": np.arange(4, dtype="float32")}))
    blob[offset : offset + len(value)] = value
    return _reseal(bytes(blob))


@pytest.mark.parametrize(
    "offset, value, message",
    [
        (16, struct.pack("<I", 2**31), "name needs 2147483648 bytes"),
        (12, struct.pack("<I", 1000), "entry 1: the name length needs 4 bytes"),
        (23, b"floatXX", "unknown dtype b'floatXX'"),
        (30, struct.pack("<I", 99), "ndim 99 exceeds 32"),
        (34, struct.pack("<q", -4), "negative shape"),
        (34, struct.pack("<q", 5), "16 bytes of data for float32 \\(5,\\)"),
        (42, struct.pack("<Q", 2**62), "bytes of data for float32"),
        (20, b"\xff", "name is not UTF-8"),
    ],
)
def test_corrupt_fields_are_named(offset, value, message):
    with pytest.raises(ValueError, match=message):
        load_param_dict(_corrupt(offset, value))


def test_duplicate_names():
    one = save_param_dict({"w": np.zeros(1, "float32")})
    entry = one[16:-4]
    blob = _reseal(b"EMBERPRM" + struct.pack("<II", 2, 2) + entry + entry + bytes(4))
    with pytest.raises(ValueError, match="'w' appears twice"):
        load_param_dict(blob)


@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=300), st.integers(0, 200))
def test_random_damage_raises_only_value_errors(noise, at):
    blob = bytearray(save_param_dict(_params()))
    blob[at : at + len(noise)] = noise
    for document in (bytes(blob), _reseal(bytes(blob))):
        try:
            load_param_dict(document)
        except InvalidParamsError:
            pass


def test_pack_params_at_layout_offsets():
    params = {"a": np.arange(3, dtype="float32"), "b": np.arange(20, dtype="int64")}
    layout, nbytes = param_layout(params)
    assert layout == {
        "a": {"offset": 0, "shape": [3], "dtype": "float32"},
        "b": {"offset": 64, "shape": [20], "dtype": "int64"},
    }
    assert nbytes == 256
    blob = pack_params(params, layout, nbytes)
    assert len(blob) == 256
    np.testing.assert_array_equal(np.frombuffer(blob, "float32", 3), params["a"])
    np.testing.assert_array_equal(np.frombuffer(blob, "int64", 20, 64), params["b"])
    assert blob[12:64] == bytes(52) and blob[224:] == bytes(32)
    assert len(pack_params(params, layout)) == 256


def test_pack_params_refuses_what_does_not_fit():
    params = {"a": np.zeros(3, "float32"), "b": np.zeros(2, "float32")}
    layout, nbytes = param_layout(params)
    with pytest.raises(ValueError, match="missing 'b'; not in the layout: 'c'"):
        pack_params({"a": params["a"], "c": params["b"]}, layout, nbytes)
    with pytest.raises(ValueError, match=r"'a': expected float32 \(3,\), got float64"):
        pack_params({**params, "a": np.zeros(3)}, layout, nbytes)
    with pytest.raises(ValueError, match="past the end of the 70-byte params blob"):
        pack_params(params, layout, 70)
    overlapping = {**layout, "b": {**layout["b"], "offset": 0}}
    with pytest.raises(ValueError, match="'[ab]' and '[ab]' overlap"):
        pack_params(params, overlapping, nbytes)
    unaligned = {**layout, "b": {**layout["b"], "offset": 8}}
    with pytest.raises(ValueError, match="multiple of 64, got 8"):
        pack_params(params, unaligned, nbytes)


def test_docstring_examples():
    result = doctest.testmod(params_module, optionflags=doctest.ELLIPSIS)
    assert result.attempted > 0 and result.failed == 0


# --- data objects --------------------------------------------------------


def _template(triple: str = "x86_64-unknown-linux-gnu") -> bytes:
    from ember.backends.llvm.codegen import metadata_object
    from ember.backends.llvm.target import Target

    return metadata_object(
        "{}", Target(f"llvm -mtriple={triple}").create_target_machine()
    )


def test_data_object_symbols_are_aligned_and_sized(tmp_path):
    """readelf reads the object as the linker will: two global objects in an
    allocated read-only section aligned to 64."""
    import shutil
    import subprocess

    if shutil.which("readelf") is None:
        pytest.skip("needs readelf")
    path = tmp_path / "d.o"
    path.write_bytes(data_object(_template(), {"first": b"abc", "second": bytes(100)}))
    symbols = subprocess.run(
        ["readelf", "-sW", str(path)], capture_output=True, text=True, check=True
    ).stdout
    rows = {
        line.split()[-1]: line.split()
        for line in symbols.splitlines()
        if "GLOBAL" in line
    }
    assert rows["first"][1:4] == ["0000000000000000", "3", "OBJECT"]
    assert rows["second"][1:4] == ["0000000000000040", "100", "OBJECT"]
    sections = subprocess.run(
        ["readelf", "-SW", str(path)], capture_output=True, text=True, check=True
    ).stdout
    line = next(x for x in sections.splitlines() if ".rodata.ember" in x)
    assert line.split()[-1] == "64" and " A " in line
    assert ".note.GNU-stack" in sections


@pytest.mark.parametrize(
    "triple", ["aarch64-linux-gnu", "riscv64-linux-gnu", "armv7-linux-gnueabihf"]
)
def test_data_object_copies_the_targets_identity(triple):
    template = _template(triple)
    code = data_object(template, {"blob": bytes(10)})
    assert code[:16] == template[:16]  # class, byte order, OS ABI
    assert code[18:20] == template[18:20]  # machine
    flags_at = 48 if template[4] == 2 else 36
    assert code[flags_at : flags_at + 4] == template[flags_at : flags_at + 4]


def test_data_object_refusals():
    with pytest.raises(ValueError, match="only be made for ELF targets"):
        data_object(b"\0asm" + bytes(60), {"x": b""})
    with pytest.raises(ValueError, match="invalid symbol name"):
        data_object(_template(), {"": b"x"})
    assert data_object_module.is_elf(_template())
