"""The `c` target: te schedules printed as C99, compiled by the system C
compiler, matched against numpy; its packed entries fail exactly as the LLVM
entries do; exported libraries load in a fresh process; micro mode compiles
for a Cortex-M4 with no heap or thread calls."""

import ctypes
import json
import shutil
import subprocess
import sys
import textwrap

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import ember
from ember import te, topi
from ember.backends.source.c import CModule
from ember.runtime import elf, load_module
from ember.runtime.cc import compiler
from ember.runtime.dlpack import DLTensor, dtype_to_dl
from ember.runtime.errors import (
    CompilerNotFoundError,
    EmberError,
    EmberValueError,
    ExportError,
)
from ember.topi import elementwise


def _has_compiler() -> bool:
    try:
        compiler()
    except CompilerNotFoundError:
        return False
    return True


pytestmark = pytest.mark.skipif(
    not _has_compiler(),
    reason="no C compiler ($CC, else cc) to compile the c target's source",
)

ARM_GCC = "arm-none-eabi-gcc"
CORTEX_M4 = [
    "-mcpu=cortex-m4",
    "-mthumb",
    "-mfloat-abi=hard",
    "-mfpu=fpv4-sp-d16",
    "-O2",
    "-std=c99",
    "-c",
]
RNG = np.random.default_rng(17)


def vecadd_schedule(n: int = 64):
    A = te.placeholder((n,), name="A")
    B = te.placeholder((n,), name="B")
    C = te.compute((n,), lambda i: A[i] + B[i], name="C")
    return te.create_schedule(C.op), [A, B, C]


def axes(t: te.Tensor):
    """The data-parallel axes of a computed tensor."""
    assert isinstance(t.op, te.ComputeOp)
    return t.op.axis


def run(mod, *arrays):
    """Call the module's entry on numpy arrays; returns them."""
    mod(*arrays)
    return arrays


def rand(*shape, dtype="float32"):
    return RNG.standard_normal(shape).astype(dtype)


def test_vecadd_source_and_result():
    s, args = vecadd_schedule()
    mod = ember.build(s, args, target="c", name="vecadd")
    assert isinstance(mod, CModule) and mod.type_key == "c"
    assert mod.entry_name == "vecadd" and mod.function_names() == ["vecadd"]
    source = mod.get_source()
    assert source == mod.get_source("c")
    assert "static int32_t ember_vecadd_impl(" in source
    assert "int32_t vecadd(EmberValue* args" in source
    assert "#ifndef EMBER_RUNTIME_H_" in source  # the header, inlined
    assert "loop.for" in mod.get_source("loop")
    with pytest.raises(EmberValueError, match="unknown source format 'll'"):
        mod.get_source("ll")
    a, b, c = rand(64), rand(64), np.zeros(64, "float32")
    run(mod, a, b, c)
    np.testing.assert_allclose(c, a + b)
    assert mod.metadata["functions"]["vecadd"]["args"][2]["output"] is True


def test_tiled_matmul():
    n = 48
    A, B = te.placeholder((n, n), name="A"), te.placeholder((n, n), name="B")
    k = te.reduce_axis((0, n), name="k")
    C = te.compute((n, n), lambda i, j: te.sum(A[i, k] * B[k, j], axis=k), name="C")
    s = te.create_schedule(C.op)
    io, ii = s[C].split(axes(C)[0], factor=8)
    jo, ji = s[C].split(axes(C)[1], factor=16)
    s[C].reorder(io, jo, k, ii, ji)
    s[C].vectorize(ji)
    s[C].unroll(ii)
    s[C].parallel(io)  # serial in C
    mod = ember.build(s, [A, B, C], target="c", name="matmul")
    a, b, c = rand(n, n), rand(n, n), np.zeros((n, n), "float32")
    run(mod, a, b, c)
    np.testing.assert_allclose(c, a @ b, rtol=1e-4, atol=1e-4)


def test_reductions_sum_and_max():
    A = te.placeholder((6, 20), name="A")
    k = te.reduce_axis((0, 20), name="k")
    r = te.reduce_axis((0, 20), name="r")
    S = te.compute((6,), lambda i: te.sum(A[i, k], axis=k), name="S")
    M = te.compute((6,), lambda i: te.max(A[i, r], axis=r), name="M")
    Ai = te.placeholder((5, 7), dtype="int32", name="Ai")
    q = te.reduce_axis((0, 7), name="q")
    Mi = te.compute((5,), lambda i: te.max(Ai[i, q], axis=q), name="Mi")
    a = -np.abs(rand(6, 20)) - 1  # all negative: max must start from -inf
    ai = RNG.integers(-(2**31), -(2**30), (5, 7)).astype("int32")  # from INT_MIN
    for out, args, inputs, expected in [
        (S, [A, S], [a], a.sum(1)),
        (M, [A, M], [a], a.max(1)),
        (Mi, [Ai, Mi], [ai], ai.max(1)),
    ]:
        mod = ember.build(te.create_schedule(out.op), args, target="c", name="red")
        result = np.zeros(expected.shape, expected.dtype)
        run(mod, *inputs, result)
        np.testing.assert_allclose(result, expected, rtol=1e-5)


def test_math_functions():
    X = te.placeholder((4, 33), name="X")
    Y = te.compute((4, 33), lambda i, j: te.exp(X[i, j]) + te.tanh(X[i, j]), name="Y")
    sig = elementwise.injective(elementwise.sigmoid(X), [X])
    x = rand(4, 33) * 3
    libm = ember.build(te.create_schedule(Y.op), [X, Y], target="c", name="em")
    assert "expf(" in libm.get_source() and "tanhf(" in libm.get_source()
    y = np.zeros_like(x)
    run(libm, x, y)
    np.testing.assert_allclose(y, np.exp(x) + np.tanh(x), rtol=1e-5, atol=1e-6)
    mod = ember.build(sig.schedule(), sig.args, target="c", name="sig")
    run(mod, x, y)
    np.testing.assert_allclose(y, 1 / (1 + np.exp(-x)), rtol=1e-5, atol=1e-6)


MORE_MATH = {
    "sin": (np.sin, 3),
    "cos": (np.cos, 3),
    "tan": (np.tan, 1.4),
    "asin": (np.arcsin, 1),
    "acos": (np.arccos, 1),
    "atan": (np.arctan, 9),
    "sinh": (np.sinh, 5),
    "cosh": (np.cosh, 5),
    "asinh": (np.arcsinh, 50),
    "acosh": (np.arccosh, 50),
    "atanh": (np.arctanh, 0.99),
    "floor": (np.floor, 4),
    "ceil": (np.ceil, 4),
    "roundeven": (np.round, 4),
}


@pytest.mark.parametrize("fn", sorted(MORE_MATH))
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_more_math_functions_match_llvm_and_numpy(fn, dtype):
    """The C printer's libm names (`rint` for roundeven: half to even in the
    default rounding mode) against the LLVM backend's intrinsics and numpy."""
    reference, scale = MORE_MATH[fn]
    X = te.placeholder((70,), dtype=dtype, name="X")
    Y = te.compute((70,), lambda i: getattr(te, fn)(X[i]), name="Y")
    x = np.linspace(-1, 1, 70).astype(dtype) * scale
    if fn == "acosh":
        x = np.abs(x) + 1
    if fn == "roundeven":
        x = np.round(x * 2) / 2  # every half
    expected = reference(x)
    for target in ("c", "llvm"):
        mod = ember.build(
            te.create_schedule(Y.op), [X, Y], target=target, name=f"k_{fn}"
        )
        y = np.zeros_like(x)
        run(mod, x, y)
        rtol = 1e-6 if dtype == "float32" else 1e-14
        np.testing.assert_allclose(y, expected, rtol=rtol, atol=rtol, err_msg=target)


@pytest.mark.parametrize("dtype", ["int8", "int32", "int64"])
def test_integer_floordiv_floormod(dtype):
    n = 40
    A = te.placeholder((n,), dtype=dtype, name="A")
    B = te.placeholder((n,), dtype=dtype, name="B")
    Q = te.compute((n,), lambda i: A[i] // B[i], name="Q")
    R = te.compute((n,), lambda i: A[i] % B[i], name="R")
    info = np.iinfo(dtype)
    a = RNG.integers(info.min, info.max, n, endpoint=True).astype(dtype)
    b = RNG.integers(-9, 10, n).astype(dtype)
    a[:4] = [info.min, info.min, -7, 7]
    b[:4] = [-1, 0, 2, -2]  # MIN // -1 wraps; by zero gives 0 as in numpy
    with np.errstate(divide="ignore", over="ignore"):
        expected = [a // b, a % b]
    for out, want in zip((Q, R), expected, strict=True):
        mod = ember.build(te.create_schedule(out.op), [A, B, out], target="c")
        got = np.zeros(n, dtype)
        run(mod, a, b, got)
        np.testing.assert_array_equal(got, want)


@pytest.mark.parametrize("dtype", ["float16", "float64"])
def test_other_float_dtypes_and_bool(dtype):
    n = 24
    A = te.placeholder((n,), dtype=dtype, name="A")
    B = te.placeholder((n,), dtype=dtype, name="B")
    Y = te.compute((n,), lambda i: A[i] * B[i] + te.exp(A[i]), name="Y")
    G = te.compute((n,), lambda i: A[i] > B[i], name="G")
    a, b = rand(n, dtype=dtype), rand(n, dtype=dtype)
    y, g = np.zeros(n, dtype), np.zeros(n, "bool")
    for out, result in ((Y, y), (G, g)):
        mod = ember.build(te.create_schedule(out.op), [A, B, out], target="c")
        run(mod, a, b, result)
    wide = a.astype("float64")
    tol = 1e-2 if dtype == "float16" else 1e-12  # float16 rounds each step
    np.testing.assert_allclose(y, wide * b + np.exp(wide), rtol=tol, atol=tol)
    np.testing.assert_array_equal(g, a > b)


def conv_kernel():
    """A topi conv2d, NCHW 1x3x10x10 with 3x3 filters into 8 channels,
    padding 1, bias and relu; its inputs and numpy's result."""
    x = te.placeholder((1, 3, 10, 10), name="x")
    k = topi.conv2d(
        x,
        (8, 3, 3, 3),
        padding=1,
        bias=True,
        epilogue=lambda v, idx: te.max(v, 0.0),
        name="conv",
    )
    data, w, bias = rand(1, 3, 10, 10), rand(8, 3, 3, 3), rand(8)
    padded = np.pad(data, ((0, 0), (0, 0), (1, 1), (1, 1)))
    windows = np.lib.stride_tricks.sliding_window_view(padded, (3, 3), axis=(2, 3))
    expected = np.einsum("nchwij,ocij->nohw", windows, w) + bias[:, None, None]
    inputs = [data, k.transform("conv.weight", w), bias]
    return k, inputs, np.maximum(expected, 0).astype("float32")


def test_conv2d_padding_bias_relu():
    k, inputs, expected = conv_kernel()
    mod = ember.build(k.schedule(), k.args, target="c", name="conv")
    out = np.zeros(expected.shape, "float32")
    run(mod, *inputs, out)
    np.testing.assert_allclose(out, expected, rtol=1e-4, atol=1e-4)


@settings(
    max_examples=4,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)
@given(st.integers(1, 24), st.integers(1, 24), st.booleans(), st.sampled_from([0, 1]))
def test_split_factors_property(fi, fj, vectorize, unroll_axis):
    """Any split factors (dividing the extent or not) give the same result."""
    A = te.placeholder((13, 21), name="A")
    B = te.compute((13, 21), lambda i, j: A[i, j] * 2.0 + 1.0, name="B")
    s = te.create_schedule(B.op)
    io, ii = s[B].split(axes(B)[0], factor=fi)
    jo, ji = s[B].split(axes(B)[1], factor=fj)
    s[B].reorder(io, jo, ii, ji)
    if vectorize:
        s[B].vectorize(ji)
    s[B].unroll((ii, ji)[unroll_axis] if not vectorize else ii)
    mod = ember.build(s, [A, B], target="c", name="scale")
    a, b = rand(13, 21), np.zeros((13, 21), "float32")
    run(mod, a, b)
    np.testing.assert_allclose(b, a * 2 + 1, rtol=1e-6)


# -- errors: the C entry and the LLVM entry fail alike ------------------------


def raw_call(address: int, values: list, codes: list[int]):
    """Call a packed C function with raw values (DLTensors or None) and type
    codes; returns (return code, return type code, message or None)."""
    n = len(values)
    args = (ctypes.c_uint64 * max(n, 1))()
    for i, v in enumerate(values):
        args[i] = ctypes.addressof(v) if v is not None else 0
    type_codes = (ctypes.c_int32 * max(n, 1))(*codes)
    ret, ret_code = ctypes.c_uint64(0), ctypes.c_int32(-7)
    f = ctypes.CFUNCTYPE(
        ctypes.c_int32, *[ctypes.c_void_p] * 2, ctypes.c_int32, *[ctypes.c_void_p] * 2
    )(address)
    rc = f(args, type_codes, n, ctypes.byref(ret), ctypes.byref(ret_code))
    message = ctypes.string_at(ret.value).decode() if rc else None
    return rc, ret_code.value, message


def dltensor(arr: np.ndarray, **fields) -> DLTensor:
    code, bits, _ = dtype_to_dl(arr.dtype)
    shape = fields.pop("shape", arr.shape)
    strides = fields.pop("strides", None)
    t = DLTensor()
    t.data, t.ndim = arr.ctypes.data, len(shape)
    t.device.device_type = fields.pop("device_type", 1)
    t.dtype.code, t.dtype.bits, t.dtype.lanes = code, bits, 1
    t.shape = (ctypes.c_int64 * len(shape))(*shape) if shape else None
    t.strides = (ctypes.c_int64 * len(strides))(*strides) if strides else None
    for name, value in fields.items():
        if name in ("code", "bits", "lanes"):
            setattr(t.dtype, name, value)
        else:
            setattr(t, name, value)
    t._keep = (arr, t.shape, t.strides)  # pyright: ignore[reportAttributeAccessIssue]
    return t


def _bad_calls():
    """(name, values, codes) of calls every entry must refuse, over 4x6
    float32 inputs A, B and output C."""
    a, b, c = rand(4, 6), rand(4, 6), np.zeros((4, 6), "float32")
    big = np.zeros(64, "float32")
    A, B, C = dltensor(a), dltensor(b), dltensor(c)
    ok = [7, 7, 7]
    yield "count", [A, B], [7, 7]
    yield "too many", [A, B, C, C], [7] * 4
    for code in (0, 2, 3, 4, 11):
        yield f"type code {code}", [A, B, C], [7, code, 7]
    yield "null", [A, None, C], ok
    yield "device", [A, B, dltensor(c, device_type=2)], ok
    yield "ndim", [A, dltensor(b, shape=(24,)), C], ok
    yield "extent", [A, dltensor(b, shape=(4, 5)), C], ok
    yield "dtype code", [dltensor(a, code=0), B, C], ok
    yield "dtype bits", [dltensor(a, bits=64), B, C], ok
    yield "lanes", [dltensor(a, lanes=4), B, C], ok
    yield "strides", [A, dltensor(b, strides=(1, 4)), C], ok
    shared = dltensor(big, shape=(4, 6))
    yield "overlap", [shared, B, dltensor(big, shape=(4, 6), byte_offset=8)], ok
    yield "in place", [A, B, A], ok
    yield "compact strides", [A, dltensor(b, strides=(6, 1)), C], ok  # accepted
    yield "ndarray code", [A, B, C], [13, 13, 13]  # accepted


def _matrix_add_modules():
    A, B = te.placeholder((4, 6), name="A"), te.placeholder((4, 6), name="B")
    C = te.compute((4, 6), lambda i, j: A[i, j] + B[i, j], name="C")
    s = te.create_schedule(C.op)
    return [ember.build(s, [A, B, C], target=t, name="madd") for t in ("c", "llvm")]


def test_entry_errors_match_llvm():
    c_mod, llvm_mod = _matrix_add_modules()
    c_address = c_mod["madd"].handle
    llvm_address = llvm_mod["madd"].handle
    for name, values, codes in _bad_calls():
        got = raw_call(c_address, values, codes)
        assert got == raw_call(llvm_address, values, codes), name
        if name in ("compact strides", "ndarray code"):
            assert got == (0, 4, None), name
        else:
            assert got[0] < 0 and got[1] == 11, (name, got)
    # Through Python: the same exception and message, "got ..." included.
    a, c = rand(4, 6), np.zeros((4, 6), "float32")
    for bad in [(a, a), (a, a.astype("float64"), c), (a, a[:2], c), (a, a, a)]:
        errors = []
        for mod in (c_mod, llvm_mod):
            with pytest.raises(EmberError) as info:
                mod(*bad)
            errors.append((type(info.value), str(info.value)))
        assert errors[0] == errors[1]
    read_only = np.zeros((4, 6), "float32")
    read_only.flags.writeable = False
    with pytest.raises(EmberError, match="is an output but the array is read-only"):
        c_mod(a, a, read_only)


def test_bad_function_name():
    s, args = vecadd_schedule()
    for name in ("int", "exp", "DLTensor", "size_t", "ember_f", "f.1"):
        with pytest.raises(EmberValueError, match="cannot be a C function"):
            ember.build(s, args, target="c", name=name)


def test_bound_loops_need_a_gpu_target():
    A = te.placeholder((64,), name="A")
    B = te.compute((64,), lambda i: A[i] * 2.0, name="B")
    s = te.create_schedule(B.op)
    xo, xi = s[B].split(axes(B)[0], factor=16)
    s[B].bind(xo, te.thread_axis("blockIdx.x"))
    with pytest.raises(EmberValueError, match="bind needs a GPU target"):
        ember.build(s, [A, B], target="c", name="f")


@pytest.mark.skipif(sys.platform != "linux", reason="reads /proc/self/status")
def test_out_of_memory_is_an_error_not_a_crash():
    """A failed malloc of an intermediate buffer: the entry returns
    EMBER_ERR_ALLOC (-101) with a message (in a process whose address space
    is limited, so that the 1 GiB buffer cannot be had)."""
    script = textwrap.dedent(
        """
        import resource
        import numpy as np
        import ember
        from ember import te
        A = te.placeholder((16,), name="A")
        T = te.compute((2**28,), lambda i: A[i % 16] + 1.0, name="T")
        B = te.compute((16,), lambda i: T[i * 7], name="B")
        mod = ember.build(te.create_schedule(B.op), [A, B], target="c", name="big")
        status = open("/proc/self/status").read().split("VmSize:")[1]
        used = int(status.split()[0]) * 1024
        resource.setrlimit(resource.RLIMIT_AS, (used + (256 << 20), -1))
        try:
            mod(np.ones(16, "float32"), np.zeros(16, "float32"))
        except ember.runtime.EmberError as e:
            print(e)
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=True
    )
    expected = "big: out of memory: an intermediate buffer could not be allocated"
    assert done.stdout.strip() == expected


def test_no_c_compiler(monkeypatch):
    s, args = vecadd_schedule()
    monkeypatch.setenv("CC", "/nonexistent/ember-cc")
    with pytest.raises(CompilerNotFoundError, match="ember-cc.*not found"):
        ember.build(s, args, target="c", name="vecadd")
    # Micro code is compiled for this machine only when it is called.
    mod = ember.build(s, args, target="c -mcpu=cortex-m4", name="vecadd")
    assert "int32_t vecadd(" in mod.get_source()
    with pytest.raises(CompilerNotFoundError):
        mod(rand(64), rand(64), np.zeros(64, "float32"))


# -- libraries -----------------------------------------------------------------


def test_export_and_load_in_a_fresh_process(tmp_path):
    s, args = vecadd_schedule()
    mod = ember.build(s, args, target="c", name="vecadd")
    mod.export_library(tmp_path / "vecadd.so")
    mod.export_library(tmp_path / "vecadd.tar")
    mod.export_library(tmp_path / "vecadd.c")
    assert (tmp_path / "vecadd.c").read_text() == mod.get_source()
    # The .c alone, compiled by hand, is a library load_module reads too.
    hand = ["-O2", "-std=c99", "-shared", "-fPIC", "-o", tmp_path / "hand.so"]
    subprocess.run([*compiler(), *hand, tmp_path / "vecadd.c", "-lm"], check=True)
    script = textwrap.dedent(
        """
        import json, sys
        import numpy as np
        from ember.runtime import load_module
        out = {}
        for name in sys.argv[1:]:
            mod = load_module(name)
            a = np.arange(64, dtype="float32"); c = np.zeros(64, "float32")
            mod(a, a, c)
            out[name] = [float(c.sum()), mod.metadata["entry"]]
        print(json.dumps(out))
        """
    )
    paths = [str(tmp_path / f) for f in ("vecadd.so", "vecadd.tar", "hand.so")]
    done = subprocess.run(
        [sys.executable, "-c", script, *paths],
        capture_output=True,
        text=True,
        check=True,
    )
    result = json.loads(done.stdout)
    assert all(v == [2 * sum(range(64)), "vecadd"] for v in result.values()), result
    assert load_module(tmp_path / "vecadd.so").metadata["triple"]


TWO_FUNCTIONS = """
builtin.module {
  func.func @add1(%A: memref<8xf32> {ember.name = "A"},
                  %B: memref<8xf32> {ember.name = "B", ember.output}) {
    %c0 = arith.constant 0 : index
    %c8 = arith.constant 8 : index
    %c1 = arith.constant 1 : index
    %one = arith.constant 1.0 : f32
    loop.for %i = %c0 to %c8 step %c1 {
      %x = memref.load %A[%i] : memref<8xf32>
      %y = arith.addf %x, %one : f32
      memref.store %y, %B[%i] : memref<8xf32>
    }
    func.return
  }
  func.func @neg(%A: memref<8xf32> {ember.name = "A"},
                 %B: memref<8xf32> {ember.name = "B", ember.output}) {
    %c0 = arith.constant 0 : index
    %c8 = arith.constant 8 : index
    %c1 = arith.constant 1 : index
    loop.for %i = %c0 to %c8 step %c1 {
      %x = memref.load %A[%i] : memref<8xf32>
      %y = arith.negf %x : f32
      memref.store %y, %B[%i] : memref<8xf32>
    }
    func.return
  }
}
"""


def test_loop_ir_with_two_functions_and_an_llvm_import(tmp_path):
    """Loop IR in, a packed function each, no entry; exported with an
    imported llvm module into one library."""
    mod = ember.build(TWO_FUNCTIONS, target="c")
    assert mod.function_names() == ["add1", "neg"] and mod.entry_name is None
    a, b = np.arange(8, dtype="float32"), np.zeros(8, "float32")
    mod["neg"](a, b)
    np.testing.assert_array_equal(b, -a)
    with pytest.raises(EmberError, match="c module has no entry function"):
        mod(a, b)
    s, args = vecadd_schedule()
    mod.import_module(ember.build(s, args, target="llvm", name="vecadd"))
    mod.export_library(tmp_path / "both.so")
    loaded = load_module(tmp_path / "both.so")
    assert sorted(loaded.function_names()) == ["add1", "neg", "vecadd"]
    loaded["add1"](a, b)
    np.testing.assert_array_equal(b, a + 1)
    with pytest.raises(ExportError, match="other module"):
        mod.export_library(tmp_path / "both.c")


def test_export_with_a_cross_compiler(tmp_path):
    gcc = "aarch64-linux-gnu-gcc"
    if shutil.which(gcc) is None:
        pytest.skip(f"no {gcc} (apt-get install gcc-aarch64-linux-gnu)")
    s, args = vecadd_schedule()
    mod = ember.build(s, args, target="c", name="vecadd")
    mod.export_library(tmp_path / "vecadd.so", cc=gcc)
    header = elf.parse_header((tmp_path / "vecadd.so").read_bytes()[:64])
    assert header is not None and header.machine_name == "aarch64"


# -- micro mode ------------------------------------------------------------------

_LIBM = {
    name + suffix
    for name in (
        "exp tanh log sqrt fabs floor ceil round rint trunc pow fmax fmin fmod erf "
        "exp2 expm1 log2 log10 log1p cbrt sinh cosh sin cos tan asin acos atan "
        "asinh acosh atanh erfc atan2 copysign fma"
    ).split()
    for suffix in ("", "f")
}
_STRING_H = {"memcpy", "memset", "memmove"}


def test_micro_conv2d_for_cortex_m4(tmp_path):
    k, inputs, expected = conv_kernel()
    mod = ember.build(k.schedule(), k.args, target="c -mcpu=cortex-m4", name="conv")
    source = mod.get_source()
    assert "malloc(" not in source and "free(" not in source
    assert "#include <stdlib.h>" not in source and "static float" in source
    # The same source compiled for this machine: numpy's result.
    out = np.zeros(expected.shape, "float32")
    run(mod, *inputs, out)
    np.testing.assert_allclose(out, expected, rtol=1e-4, atol=1e-4)
    if shutil.which(ARM_GCC) is None:
        print(f"skipped the Cortex-M4 compile: no {ARM_GCC} (gcc-arm-none-eabi)")
        pytest.skip(f"no {ARM_GCC} (apt-get install gcc-arm-none-eabi)")
    path = tmp_path / "conv.c"
    path.write_text(source)
    obj = tmp_path / "conv.o"
    subprocess.run(
        [ARM_GCC, *CORTEX_M4, "-Wall", "-Werror", "-o", obj, path],
        check=True,
        text=True,
    )
    nm = subprocess.run(
        ["arm-none-eabi-nm", "-u", obj], capture_output=True, text=True, check=True
    )
    undefined = {line.split()[-1] for line in nm.stdout.splitlines() if line.strip()}
    unexpected = {
        u
        for u in undefined
        if u not in _LIBM | _STRING_H and not u.startswith("__aeabi")
    }
    assert not unexpected, f"undefined symbols beyond libm: {sorted(unexpected)}"
    defined = subprocess.run(
        ["arm-none-eabi-nm", "--defined-only", obj],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert " T conv" in defined and " T __ember_metadata" in defined
