"""The C-family printer's semantics: `arith`'s, not C's, checked by compiling
its C with the system compiler and running it against numpy."""

import ctypes
import shutil
import subprocess

import numpy as np
import pytest
from xdsl.parser import Parser

from ember.backends.source.faces import CUDAFace, OpenCLFace
from ember.backends.source.printer import SourceError, print_c
from ember.passes import get_context

N = 16
ELEMENTWISE = """
func.func @ops(%X: memref<16xi32>, %Y: memref<16xi32>, %F: memref<16xf32>,
               %G: memref<16xf32>, %I: memref<9x16xi32>, %O: memref<2x16xf32>) {
  %c0 = arith.constant 0 : index
  %c1 = arith.constant 1 : index
  %c16 = arith.constant 16 : index
  %c3 = arith.constant 3 : i32
  loop.for %i = %c0 to %c16 step %c1 {
    %x = memref.load %X[%i] : memref<16xi32>
    %y = memref.load %Y[%i] : memref<16xi32>
    %f = memref.load %F[%i] : memref<16xf32>
    %g = memref.load %G[%i] : memref<16xf32>
    %floor = arith.floordivsi %x, %y : i32
    %ceil = arith.ceildivsi %x, %y : i32
    %rem = arith.remsi %x, %y : i32
    %shr = arith.shrui %x, %c3 : i32
    %ult = arith.cmpf ult, %f, %g : f32
    %one = arith.cmpf one, %f, %g : f32
    %ueq = arith.cmpf ueq, %f, %g : f32
    %uno = arith.cmpf uno, %f, %g : f32
    %ugt = arith.cmpf ugt, %f, %g : f32
    %max = arith.maximumf %f, %g : f32
    %min = arith.minimumf %f, %g : f32
    %r0 = arith.constant 0 : index
    %r1 = arith.constant 1 : index
    %r2 = arith.constant 2 : index
    %r3 = arith.constant 3 : index
    %r4 = arith.constant 4 : index
    %r5 = arith.constant 5 : index
    %r6 = arith.constant 6 : index
    %r7 = arith.constant 7 : index
    %r8 = arith.constant 8 : index
    memref.store %floor, %I[%r0, %i] : memref<9x16xi32>
    memref.store %ceil, %I[%r1, %i] : memref<9x16xi32>
    memref.store %rem, %I[%r2, %i] : memref<9x16xi32>
    memref.store %shr, %I[%r3, %i] : memref<9x16xi32>
    %ult32 = arith.extui %ult : i1 to i32
    %one32 = arith.extui %one : i1 to i32
    %ueq32 = arith.extui %ueq : i1 to i32
    %uno32 = arith.extui %uno : i1 to i32
    %ugt32 = arith.extui %ugt : i1 to i32
    memref.store %ult32, %I[%r4, %i] : memref<9x16xi32>
    memref.store %one32, %I[%r5, %i] : memref<9x16xi32>
    memref.store %ueq32, %I[%r6, %i] : memref<9x16xi32>
    memref.store %uno32, %I[%r7, %i] : memref<9x16xi32>
    memref.store %ugt32, %I[%r8, %i] : memref<9x16xi32>
    memref.store %max, %O[%r0, %i] : memref<2x16xf32>
    memref.store %min, %O[%r1, %i] : memref<2x16xf32>
  }
  func.return
}
"""


def parse(text: str):
    return Parser(get_context(), text).parse_module()


@pytest.mark.skipif(shutil.which("cc") is None, reason="no C compiler (cc)")
def test_c_follows_arith_semantics(tmp_path):
    source = print_c(parse(ELEMENTWISE))
    source += (
        "int32_t call(const int32_t* X, const int32_t* Y, const float* F, "
        "const float* G, int32_t* I, float* O) "
        "{ return ember_ops_impl(X, Y, F, G, I, O); }\n"
    )
    (tmp_path / "ops.c").write_text(source)
    lib = tmp_path / "ops.so"
    subprocess.run(
        ["cc", "-std=c99", "-O2", "-shared", "-fPIC", str(tmp_path / "ops.c"),
         "-o", str(lib), "-lm"],
        check=True,
    )  # fmt: skip
    x = np.array([7, -7, 7, -7, 0, -1, 1, -8, 9, -9, 100, -100, 5, -5, 6, -6], "int32")
    y = np.array([2, 2, -2, -2, 3, 3, 3, 4, -4, 4, 7, 7, -3, -3, 3, 3], "int32")
    nan = np.float32("nan")
    f = np.array([1, 2, nan, 0.0, -0.0, 3, nan, -1, 5, 5, 2, 1, 0.0, -2, 4, nan], "f4")
    g = np.array([2, 1, 1, -0.0, 0.0, 3, nan, nan, -5, 5, 2, 0, 0.0, -3, 4, 1], "f4")
    ints = np.zeros((9, N), "int32")
    floats = np.zeros((2, N), "float32")
    fn = ctypes.CDLL(str(lib)).call
    ptr = [a.ctypes.data_as(ctypes.c_void_p) for a in (x, y, f, g, ints, floats)]
    assert fn(*ptr) == 0
    either_nan = np.isnan(f) | np.isnan(g)
    with np.errstate(invalid="ignore"):
        np.testing.assert_array_equal(ints[0], np.floor_divide(x, y))
        np.testing.assert_array_equal(ints[1], -np.floor_divide(-x, y))
        np.testing.assert_array_equal(ints[2], np.fmod(x, y))
        np.testing.assert_array_equal(ints[3], (x.view("uint32") >> 3).view("int32"))
        np.testing.assert_array_equal(ints[4], either_nan | (f < g))
        np.testing.assert_array_equal(ints[5], ~either_nan & (f != g))
        np.testing.assert_array_equal(ints[6], either_nan | (f == g))
        np.testing.assert_array_equal(ints[7], either_nan)
        np.testing.assert_array_equal(ints[8], either_nan | (f > g))
    np.testing.assert_array_equal(floats[0], np.maximum(f, g))  # NaN propagates
    np.testing.assert_array_equal(floats[1], np.minimum(f, g))
    # -0 < +0 for maximumf / minimumf, in either order
    assert not np.signbit(floats[0][3]) and not np.signbit(floats[0][4])
    assert np.signbit(floats[1][3]) and np.signbit(floats[1][4])


def test_an_unknown_op_is_named():
    module = parse(
        """
        func.func @f(%A: memref<4xi32>) {
          %c0 = arith.constant 0 : index
          %x = memref.load %A[%c0] : memref<4xi32>
          %n = math.ctlz %x : i32
          memref.store %n, %A[%c0] : memref<4xi32>
          func.return
        }
        """
    )
    for face in (None, OpenCLFace(), CUDAFace()):
        with pytest.raises(SourceError, match=r"unsupported op 'math.ctlz'"):
            print_c(module, face)


def test_names_come_from_the_ir():
    source = print_c(parse(ELEMENTWISE))
    assert "static int32_t ember_ops_impl(const int32_t* restrict X," in source
    assert "int32_t floor_1 = ember_floordiv_i32(x, y);" in source  # floor() is C's
    assert "I[i + 16] = ceil_1;" in source
    assert "for (int64_t i = 0; i < 16; ++i) {" in source


def topi_kernels():
    """A few of topi's kernels, each with its default (CPU) schedule."""
    from ember import te, topi
    from ember.topi import pool
    from ember.topi import reduce as reductions

    x = te.placeholder((1, 8, 10, 10), name="x")
    m = te.placeholder((6, 16), name="m")
    return {
        "conv2d": topi.conv2d(x, (16, 8, 3, 3), padding=1, bias=True),
        "depthwise": topi.conv2d(x, (8, 1, 3, 3), padding=1, groups=8),
        "dense": topi.dense(m, (12, 16), bias=True),
        "max_pool": pool.max_pool2d(x, 2, 2),
        "avg_pool": pool.avg_pool2d(x, 3, 1, (1, 1, 1, 1)),
        "global_pool": pool.global_avg_pool2d(x),
        "softmax": reductions.softmax(m),
    }


@pytest.mark.skipif(shutil.which("cc") is None, reason="no C compiler (cc)")
@pytest.mark.parametrize("name", list(topi_kernels()))
def test_topi_kernels_print_with_every_face(name, tmp_path):
    """Their CPU schedules (split, vectorize, parallel, unroll, cache_write,
    compute_at) print with all three faces; the C compiles warning-free."""
    import ember

    kernel = topi_kernels()[name]
    module = ember.lower(kernel.schedule(), kernel.args, name=name)
    for face in (OpenCLFace(), CUDAFace()):
        assert "ember_" in print_c(module, face)
    (tmp_path / "k.c").write_text(print_c(module))
    done = subprocess.run(
        ["cc", "-std=c99", "-Wall", "-Wextra", "-Wno-unused-function", "-c",
         str(tmp_path / "k.c"), "-o", str(tmp_path / "k.o")],
        capture_output=True, text=True,
    )  # fmt: skip
    assert done.returncode == 0 and not done.stderr, done.stderr
