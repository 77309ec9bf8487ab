"""loop-vectorize and the vector lowering, proved by running the code.

Each kernel is loop-level IR text (a function over memrefs with a `vectorized`
loop) built by `ember.build` through the whole `ember-cpu` pipeline; its results
are compared with numpy. The IR after `loop-vectorize` is checked for what it
should have become (vector code, a strip-mined loop, a versioned guard, or a serial
loop saying why), and the machine code for AVX-512 vector instructions. The IR
checks vectorize for an AVX-512 target named in the module (`ember.target`), so
they hold on any host; the runs are the host's.
"""

import re

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from xdsl.dialects.builtin import ModuleOp
from xdsl.parser import Parser

import ember
from ember.backends.llvm.target import Target, set_module_target
from ember.dialects import loop
from ember.passes import get_context, run

DTYPES = {"f32": np.float32, "f64": np.float64, "i32": np.int32, "i8": np.int8}
RNG = np.random.default_rng(7)
AVX512 = "llvm -mtriple=x86_64-unknown-linux-gnu -mcpu=skylake-avx512"


def kernel(args: str, body: str, name: str = "f") -> str:
    """A function `@name(args)` running `body`; every `%cN` the body names is
    defined as the index constant N first."""
    numbers = sorted({int(n) for n in re.findall(r"%c(\d+)\b", body)})
    constants = "".join(f"  %c{n} = arith.constant {n} : index\n" for n in numbers)
    return f"func.func @{name}({args}) {{\n{constants}{body}\n  func.return\n}}\n"


def vectorized(text: str) -> ModuleOp:
    """The module after loop-vectorize, for AVX-512 (64-byte vectors)."""
    module = Parser(get_context(), text).parse_module()
    set_module_target(module, AVX512)
    return run(module, "loop-vectorize")


def failures(module: ModuleOp) -> list[str]:
    """The reasons loop-vectorize recorded on the loops it left serial."""
    return [
        op.attributes["ember.vectorize_failed"].data  # pyright: ignore
        for op in module.walk()
        if isinstance(op, loop.ForOp) and "ember.vectorize_failed" in op.attributes
    ]


def ops(module: ModuleOp) -> list[str]:
    return [op.name for op in module.walk()]


def random(shape: tuple[int, ...], dtype) -> np.ndarray:
    if np.issubdtype(dtype, np.floating):
        return RNG.uniform(-2, 2, shape).astype(dtype)
    info = np.iinfo(dtype)
    return RNG.integers(info.min, info.max, shape, endpoint=True).astype(dtype)


def check(got: np.ndarray, want: np.ndarray) -> None:
    if np.issubdtype(got.dtype, np.floating):
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
    else:
        np.testing.assert_array_equal(got, want)


# --- elementwise: widths, types, strip-mining --------------------------------------


@pytest.mark.parametrize("width", [4, 16, 32, 48, 100])
@pytest.mark.parametrize("t", sorted(DTYPES))
def test_elementwise(t: str, width: int):
    """C[i] = A[i] * B[i] + A[i], each width a vector (<= 64) or strip-mined."""
    mul, add = ("mulf", "addf") if t.startswith("f") else ("muli", "addi")
    m = f"memref<{width}x{t}>"
    text = kernel(
        f"%A: {m}, %B: {m}, %C: {m} {{ember.output}}",
        f"""  loop.for %i = %c0 to %c{width} step %c1 vectorized {{
    %a = memref.load %A[%i] : {m}
    %b = memref.load %B[%i] : {m}
    %p = arith.{mul} %a, %b : {t}
    %s = arith.{add} %p, %a : {t}
    memref.store %s, %C[%i] : {m}
  }}""",
    )
    after = vectorized(text)
    names = ops(after)
    assert "vector.load" in names and not failures(after)
    # Loops longer than four 64-byte vectors run chunks of one in a serial loop
    # (f64: 48 > 4 x 8; i8: 4 x 64 lanes hold even 100).
    lanes = Target(AVX512).vector_lanes(DTYPES[t])
    assert ("loop.for" in names) == (width > 4 * lanes)
    dtype = DTYPES[t]
    a, b = random((width,), dtype), random((width,), dtype)
    c = np.zeros(width, dtype)
    ember.build(text, name="f")(a, b, c)
    with np.errstate(over="ignore"):
        check(c, a * b + a)


def test_broadcast_offset_bounds_and_a_remainder():
    """Lanes 5..74 of a strip-mined loop (4 chunks of 16 and a vector of 6), a
    uniform operand broadcast, an index offset into another buffer."""
    text = kernel(
        "%A: memref<80xf32>, %B: memref<4xf32>, %C: memref<80xf32> {ember.output}",
        """  loop.for %i = %c5 to %c75 step %c1 vectorized {
    %j = arith.addi %i, %c3 : index
    %a = memref.load %A[%j] : memref<80xf32>
    %b = memref.load %B[%c2] : memref<4xf32>
    %s = arith.subf %a, %b : f32
    memref.store %s, %C[%i] : memref<80xf32>
  }""",
    )
    after = vectorized(text)
    types = {str(r.type) for op in after.walk() for r in op.results}
    assert {"vector<16xf32>", "vector<6xf32>"} <= types
    a, b = random((80,), np.float32), random((4,), np.float32)
    c = np.zeros(80, np.float32)
    ember.build(text, name="f")(a, b, c)
    want = np.zeros(80, np.float32)
    want[5:75] = a[8:78] - b[2]
    check(c, want)


# --- gathers, scatters, reversed and opaque indices ---------------------------------


def test_strided_reversed_and_column_accesses():
    """Stride 2 (a wide load and a shuffle), stride -1 (a reversed vector
    load), a column of a matrix (a gather), a column store and a stride-2
    store (scatters)."""
    text = kernel(
        "%A: memref<64xf32>, %M: memref<16x8xf32>, %C: memref<16x8xf32> "
        "{ember.output}, %D: memref<32xf32> {ember.output}",
        """  loop.for %i = %c0 to %c16 step %c1 vectorized {
    %two = arith.muli %i, %c2 : index
    %even = memref.load %A[%two] : memref<64xf32>
    %back = arith.subi %c63, %i : index
    %last = memref.load %A[%back] : memref<64xf32>
    %col = memref.load %M[%i, %c3] : memref<16x8xf32>
    %s = arith.addf %even, %last : f32
    %t = arith.mulf %s, %col : f32
    memref.store %t, %C[%i, %c5] : memref<16x8xf32>
    %odd = arith.addi %two, %c1 : index
    memref.store %last, %D[%odd] : memref<32xf32>
  }""",
    )
    after = vectorized(text)
    names = ops(after)
    assert "vector.shuffle" in names and "vector.insert" in names
    assert "vector.extract" in names and not failures(after)
    a, mat = random((64,), np.float32), random((16, 8), np.float32)
    c, d = np.zeros((16, 8), np.float32), np.zeros(32, np.float32)
    ember.build(text, name="f")(a, mat, c, d)
    want_c = np.zeros((16, 8), np.float32)
    want_c[:, 5] = (a[0:32:2] + a[63:47:-1]) * mat[:, 3]
    want_d = np.zeros(32, np.float32)
    want_d[1::2] = a[63:47:-1]
    check(c, want_c)
    check(d, want_d)


def test_trailing_unit_dimensions_are_contiguous():
    """Channel c of (1, C, 1, 1) tensors (a squeezed bias, a pooled vector) is
    element c: vector loads and stores, also reversed and at an offset; a
    dimension of extent 2 after the index is still a gather."""
    m4, m3 = "memref<1x40x1x1xf32>", "memref<1x40x1xf32>"
    text = kernel(
        f"%A: {m4}, %B: memref<40x2xf32>, %C: {m3} {{ember.output}}",
        f"""  loop.for %i = %c0 to %c32 step %c1 vectorized {{
    %j = arith.addi %i, %c8 : index
    %a = memref.load %A[%c0, %j, %c0, %c0] : {m4}
    %back = arith.subi %c39, %i : index
    %r = memref.load %A[%c0, %back, %c0, %c0] : {m4}
    %b = memref.load %B[%i, %c1] : memref<40x2xf32>
    %s = arith.addf %a, %r : f32
    %t = arith.mulf %s, %b : f32
    memref.store %t, %C[%c0, %i, %c0] : {m3}
  }}""",
    )
    after = vectorized(text)
    loads = [op for op in after.walk() if op.name == "vector.load"]
    stores = [op for op in after.walk() if op.name == "vector.store"]
    assert len(loads) == 2 and len(stores) == 1 and not failures(after)
    assert "vector.shuffle" in ops(after) and "vector.insert" in ops(after)
    a, b = random((1, 40, 1, 1), np.float32), random((40, 2), np.float32)
    c = np.zeros((1, 40, 1), np.float32)
    ember.build(text, name="f")(a, b, c)
    flat = a.reshape(40)
    want = np.zeros(40, np.float32)
    want[:32] = (flat[8:40] + flat[39:7:-1]) * b[:32, 1]
    check(c.reshape(40), want)


def test_fused_index_divided():
    """A fused loop: i // 5 and i % 5 are per-lane values (opaque indices)."""
    text = kernel(
        "%A: memref<4x5xi32>, %C: memref<5x4xi32> {ember.output}",
        """  loop.for %f = %c0 to %c20 step %c1 vectorized {
    %i = arith.floordivsi %f, %c5 : index
    %j = arith.remsi %f, %c5 : index
    %a = memref.load %A[%i, %j] : memref<4x5xi32>
    %k = arith.index_cast %f : index to i32
    %s = arith.addi %a, %k : i32
    memref.store %s, %C[%j, %i] : memref<5x4xi32>
  }""",
    )
    assert not failures(vectorized(text))
    a = random((4, 5), np.int32) // 4
    c = np.zeros((5, 4), np.int32)
    ember.build(text, name="f")(a, c)
    check(c, (a + np.arange(20, dtype=np.int32).reshape(4, 5)).T)


# --- nested loops and reductions -----------------------------------------------------


def test_reduction_in_an_inner_loop():
    """C[i] = sum_k A[i, k] * B[k] with i vectorized: the accumulator is carried
    through memory, each lane at its own C[i]; the multiply-add is an FMA."""
    text = kernel(
        "%A: memref<24x37xf32>, %B: memref<37xf32>, %C: memref<24xf32> {ember.output}",
        """  %zero = arith.constant 0.0 : f32
  loop.for %i = %c0 to %c24 step %c1 vectorized {
    memref.store %zero, %C[%i] : memref<24xf32>
    loop.for %k = %c0 to %c37 step %c1 {
      %a = memref.load %A[%i, %k] : memref<24x37xf32>
      %b = memref.load %B[%k] : memref<37xf32>
      %acc = memref.load %C[%i] : memref<24xf32>
      %p = arith.mulf %a, %b : f32
      %s = arith.addf %acc, %p : f32
      memref.store %s, %C[%i] : memref<24xf32>
    }
  }""",
    )
    after = vectorized(text)
    assert "vector.store" in ops(after) and not failures(after)
    a, b = random((24, 37), np.float32), random((37,), np.float32)
    c = np.zeros(24, np.float32)
    mod = ember.build(text, name="f")
    mod(a, b, c)
    check(c, a @ b)
    assert "vfmadd" in mod.get_source("asm")


def test_reduction_over_the_vectorized_loop_stays_serial():
    """sum_i A[i] stores a varying value to one element: a serial loop, why."""
    text = kernel(
        "%A: memref<32xf64>, %C: memref<1xf64> {ember.output}",
        """  %zero = arith.constant 0.0 : f64
  memref.store %zero, %C[%c0] : memref<1xf64>
  loop.for %i = %c0 to %c32 step %c1 vectorized {
    %a = memref.load %A[%i] : memref<32xf64>
    %acc = memref.load %C[%c0] : memref<1xf64>
    %s = arith.addf %acc, %a : f64
    memref.store %s, %C[%c0] : memref<1xf64>
  }""",
    )
    (why,) = failures(vectorized(text))
    assert "a reduction over the vectorized loop" in why
    a = random((32,), np.float64)
    c = np.zeros(1, np.float64)
    ember.build(text, name="f")(a, c)
    check(c, a.sum(keepdims=True))


def test_dependence_between_lanes_stays_serial():
    """A[i + 1] = A[i] * 2 carries a value from one iteration to the next."""
    text = kernel(
        "%A: memref<17xi32> {ember.output}",
        """  loop.for %i = %c0 to %c16 step %c1 vectorized {
    %a = memref.load %A[%i] : memref<17xi32>
    %s = arith.addi %a, %a : i32
    %j = arith.addi %i, %c1 : index
    memref.store %s, %A[%j] : memref<17xi32>
  }""",
    )
    (why,) = failures(vectorized(text))
    assert "lanes may access the same element of %A" in why
    a = np.ones(17, np.int32)
    ember.build(text, name="f")(a)
    check(a, 2 ** np.arange(17, dtype=np.int32))


# --- guards ------------------------------------------------------------------------


def test_guard_of_a_split_that_does_not_divide():
    """s[C].split(i, 32) of 100: the guard io*32 + ii < 100 versions each chunk;
    the last runs the serial loop."""
    text = kernel(
        "%A: memref<100xf32>, %C: memref<100xf32> {ember.output}",
        """  loop.for %io = %c0 to %c4 step %c1 {
    loop.for %ii = %c0 to %c32 step %c1 vectorized {
      %t = arith.muli %io, %c32 : index
      %i = arith.addi %t, %ii : index
      %in = arith.cmpi slt, %i, %c100 : index
      scf.if %in {
        %a = memref.load %A[%i] : memref<100xf32>
        %e = math.exp %a : f32
        memref.store %e, %C[%i] : memref<100xf32>
      }
    }
  }""",
    )
    after = vectorized(text)
    assert "scf.if" in ops(after) and "vector.load" in ops(after)
    a = random((100,), np.float32)
    c = np.zeros(100, np.float32)
    ember.build(text, name="f")(a, c)
    check(c, np.exp(a))


@pytest.mark.parametrize(
    "lower, upper",
    [(0, 16), (3, 16), (0, 9), (2, 14), (-5, 40), (20, 30)],
)
def test_guard_of_padding(lower: int, upper: int):
    """A window lo <= i - 2 < hi (an andi of sge and ult, unsigned): the vector
    code where every lane is inside, the serial loop elsewhere."""
    text = kernel(
        "%A: memref<64xf32>, %W: memref<2xindex>, %C: memref<48xf32> {ember.output}",
        """  %lo = memref.load %W[%c0] : memref<2xindex>
  %hi = memref.load %W[%c1] : memref<2xindex>
  loop.for %io = %c0 to %c3 step %c1 {
    loop.for %ii = %c0 to %c16 step %c1 vectorized {
      %t = arith.muli %io, %c16 : index
      %i = arith.addi %t, %ii : index
      %x = arith.subi %i, %c2 : index
      %ge = arith.cmpi sge, %x, %lo : index
      %lt = arith.cmpi ult, %x, %hi : index
      %in = arith.andi %ge, %lt : i1
      %v = scf.if %in -> (f32) {
        %a = memref.load %A[%x] : memref<64xf32>
        scf.yield %a : f32
      } else {
        %z = arith.constant -1.0 : f32
        scf.yield %z : f32
      }
      memref.store %v, %C[%i] : memref<48xf32>
    }
  }""",
    )
    assert not failures(vectorized(text))
    a = random((64,), np.float32)
    c = np.zeros(48, np.float32)
    window = np.array([lower, upper], np.int64)
    ember.build(text, name="f")(a, window, c)
    x = np.arange(48) - 2
    inside = (x >= lower) & (x.astype(np.uint64) < np.uint64(upper))
    check(c, np.where(inside, a[np.clip(x, 0, 63)], np.float32(-1)))


def test_guard_that_is_not_monotone_stays_serial():
    text = kernel(
        "%A: memref<16xi32>, %C: memref<16xi32> {ember.output}",
        """  loop.for %i = %c0 to %c16 step %c1 vectorized {
    %r = arith.remsi %i, %c2 : index
    %even = arith.cmpi eq, %r, %c0 : index
    scf.if %even {
      %a = memref.load %A[%i] : memref<16xi32>
      memref.store %a, %C[%i] : memref<16xi32>
    }
  }""",
    )
    (why,) = failures(vectorized(text))
    assert "scf.if condition differs across lanes" in why
    a = random((16,), np.int32)
    c = np.zeros(16, np.int32)
    ember.build(text, name="f")(a, c)
    check(c, np.where(np.arange(16) % 2 == 0, a, 0))


def test_uniform_guard_and_inner_loop_kept():
    """An scf.if on a uniform condition and an inner loop stay, vectorized inside."""
    text = kernel(
        "%A: memref<8x16xf32>, %N: memref<1xindex>, %C: memref<8x16xf32> "
        "{ember.output}",
        """  %n = memref.load %N[%c0] : memref<1xindex>
  loop.for %j = %c0 to %c16 step %c1 vectorized {
    loop.for %k = %c0 to %c8 step %c1 {
      %small = arith.cmpi slt, %k, %n : index
      %v = scf.if %small -> (f32) {
        %a = memref.load %A[%k, %j] : memref<8x16xf32>
        scf.yield %a : f32
      } else {
        %z = arith.constant 0.5 : f32
        scf.yield %z : f32
      }
      memref.store %v, %C[%k, %j] : memref<8x16xf32>
    }
  }""",
    )
    after = vectorized(text)
    assert {"scf.if", "loop.for", "vector.load"} <= set(ops(after))
    assert not failures(after)
    a = random((8, 16), np.float32)
    c = np.zeros((8, 16), np.float32)
    ember.build(text, name="f")(a, np.array([3]), c)
    check(c, np.where(np.arange(8)[:, None] < 3, a, np.float32(0.5)))


# --- compares, selects, casts, bool buffers ----------------------------------------


def test_compare_select_and_bool_output():
    """Leaky relu by cmpf + select, its mask stored to a bool buffer (i1 lanes
    are scattered: LLVM's vectors of i1 are bits, bool buffers bytes)."""
    text = kernel(
        "%A: memref<40xf32>, %C: memref<40xf32> {ember.output}, "
        "%M: memref<40xi1> {ember.output}",
        """  %k = arith.constant 0.125 : f32
  %zero = arith.constant 0.0 : f32
  loop.for %i = %c0 to %c40 step %c1 vectorized {
    %a = memref.load %A[%i] : memref<40xf32>
    %pos = arith.cmpf ogt, %a, %zero : f32
    %small = arith.mulf %a, %k : f32
    %r = arith.select %pos, %a, %small : f32
    memref.store %r, %C[%i] : memref<40xf32>
    memref.store %pos, %M[%i] : memref<40xi1>
  }""",
    )
    after = vectorized(text)
    assert {"llvm.fcmp", "llvm.select"} <= set(ops(after))
    a = random((40,), np.float32)
    c, mask = np.zeros(40, np.float32), np.zeros(40, np.bool_)
    ember.build(text, name="f")(a, c, mask)
    check(c, np.where(a > 0, a, a * np.float32(0.125)))
    check(mask, a > 0)


def test_integer_select_division_and_index_select():
    """Division by a varying divisor guarded by a select, and a select of
    indices used as an address (a gather)."""
    text = kernel(
        "%A: memref<16xi32>, %B: memref<16xi32>, %C: memref<16xi32> {ember.output}",
        """  %zero = arith.constant 0 : i32
  %one = arith.constant 1 : i32
  loop.for %i = %c0 to %c16 step %c1 vectorized {
    %a = memref.load %A[%i] : memref<16xi32>
    %b = memref.load %B[%i] : memref<16xi32>
    %z = arith.cmpi eq, %b, %zero : i32
    %safe = arith.select %z, %one, %b : i32
    %q = arith.divsi %a, %safe : i32
    %low = arith.cmpi ult, %i, %c8 : index
    %j = arith.select %low, %c15, %i : index
    %x = memref.load %A[%j] : memref<16xi32>
    %s = arith.addi %q, %x : i32
    memref.store %s, %C[%i] : memref<16xi32>
  }""",
    )
    assert not failures(vectorized(text))
    a = RNG.integers(-1000, 1000, 16).astype(np.int32)
    b = RNG.integers(-5, 5, 16).astype(np.int32)
    c = np.zeros(16, np.int32)
    ember.build(text, name="f")(a, b, c)
    safe = np.where(b == 0, 1, b)
    q = np.trunc(a / safe).astype(np.int32)
    check(c, q + a[np.where(np.arange(16) < 8, 15, np.arange(16))])


def test_casts():
    """i8 to f32 and back, and the lane number itself as data."""
    text = kernel(
        "%A: memref<48xi8>, %C: memref<48xf32> {ember.output}, "
        "%D: memref<48xi8> {ember.output}",
        """  %half = arith.constant 0.5 : f32
  loop.for %i = %c0 to %c48 step %c1 vectorized {
    %a = memref.load %A[%i] : memref<48xi8>
    %f = arith.sitofp %a : i8 to f32
    %n = arith.index_cast %i : index to i32
    %nf = arith.sitofp %n : i32 to f32
    %g = arith.mulf %f, %half : f32
    %s = arith.addf %g, %nf : f32
    memref.store %s, %C[%i] : memref<48xf32>
    %w = arith.extsi %a : i8 to i32
    %t = arith.trunci %w : i32 to i8
    memref.store %t, %D[%i] : memref<48xi8>
  }""",
    )
    assert not failures(vectorized(text))
    a = random((48,), np.int8)
    c, d = np.zeros(48, np.float32), np.zeros(48, np.int8)
    ember.build(text, name="f")(a, c, d)
    check(c, a.astype(np.float32) * 0.5 + np.arange(48))
    check(d, a)


# --- fallbacks and small loops -------------------------------------------------------


@pytest.mark.parametrize(
    "body, why",
    [
        (
            """  loop.for %i = %c0 to %n step %c1 vectorized {
    %a = memref.load %A[%i] : memref<8xf32>
    memref.store %a, %C[%i] : memref<8xf32>
  }""",
            "expected a constant upper bound",
        ),
        (
            """  loop.for %i = %c0 to %c8 step %c2 vectorized {
    %a = memref.load %A[%i] : memref<8xf32>
    memref.store %a, %C[%i] : memref<8xf32>
  }""",
            "expected step 1, got 2",
        ),
        (
            """  loop.for %i = %c0 to %c8 step %c1 vectorized {
    %t = loop.alloc local : memref<1xf32>
    %a = memref.load %A[%i] : memref<8xf32>
    memref.store %a, %t[%c0] : memref<1xf32>
    %b = memref.load %t[%c0] : memref<1xf32>
    memref.store %b, %C[%i] : memref<8xf32>
  }""",
            "expected no loop.alloc in a vectorized loop",
        ),
        (
            """  loop.for %i = %c0 to %c8 step %c1 vectorized {
    %e = arith.addi %i, %c1 : index
    loop.for %k = %c0 to %e step %c1 {
      %a = memref.load %A[%k] : memref<8xf32>
      memref.store %a, %C[%i] : memref<8xf32>
    }
  }""",
            "an inner loop's bounds differ across lanes",
        ),
    ],
)
def test_fallbacks_keep_results(body: str, why: str):
    text = kernel(
        "%A: memref<8xf32>, %N: memref<1xindex>, %C: memref<8xf32> {ember.output}",
        "  %n = memref.load %N[%c0] : memref<1xindex>\n" + body,
    )
    after = vectorized(text)
    assert [why in w for w in failures(after)] == [True]
    assert all(
        op.kind.data != "vectorized"
        for op in after.walk()
        if isinstance(op, loop.ForOp)
    )
    a = random((8,), np.float32)
    c = np.zeros(8, np.float32)
    ember.build(text, name="f")(a, np.array([8]), c)
    want = a.copy()
    if "got 2" in why:
        want[1::2] = 0
    check(c, want)


def test_one_iteration_and_none():
    """A loop of one iteration is its body; one of none disappears."""
    text = kernel(
        "%A: memref<4xf32>, %C: memref<4xf32> {ember.output}",
        """  %zero = arith.constant 0.0 : f32
  loop.for %i = %c2 to %c3 step %c1 vectorized {
    %a = memref.load %A[%i] : memref<4xf32>
    memref.store %a, %C[%i] : memref<4xf32>
  }
  loop.for %i = %c3 to %c3 step %c1 vectorized {
    memref.store %zero, %C[%i] : memref<4xf32>
  }""",
    )
    after = vectorized(text)
    assert "loop.for" not in ops(after)
    a = random((4,), np.float32)
    c = np.zeros(4, np.float32)
    ember.build(text, name="f")(a, c)
    check(c, np.where(np.arange(4) == 2, a, 0))


# --- the vector ops themselves --------------------------------------------------


@pytest.mark.parametrize("n", [0, 3, 8])
def test_vector_ops_run(n: int):
    """What convert-vector-to-llvm lowers, run: broadcast, fma, shuffle,
    create_mask (with llvm.select), reductions, static and dynamic extracts."""
    text = kernel(
        "%A: memref<8xf32>, %B: memref<8xf32>, %N: memref<1xindex>, "
        "%C: memref<8xf32> {ember.output}, %R: memref<4xf32> {ember.output}",
        """  %zero = arith.constant 0.0 : f32
  %a = vector.load %A[%c0] : memref<8xf32>, vector<8xf32>
  %b = vector.load %B[%c0] : memref<8xf32>, vector<8xf32>
  %x = memref.load %B[%c7] : memref<8xf32>
  %bx = vector.broadcast %x : f32 to vector<8xf32>
  %f = vector.fma %a, %b, %bx : vector<8xf32>
  %s = vector.shuffle %f, %a [7, 6, 5, 4, 11, 10, 9, 8] : vector<8xf32>, vector<8xf32>
  %n = memref.load %N[%c0] : memref<1xindex>
  %m = vector.create_mask %n : vector<8xi1>
  %z = vector.broadcast %zero : f32 to vector<8xf32>
  %k = llvm.select %m, %s, %z : vector<8xi1>, vector<8xf32>
  vector.store %k, %C[%c0] : memref<8xf32>, vector<8xf32>
  %sum = vector.reduction <add>, %a fastmath<reassoc> : vector<8xf32> into f32
  %max = vector.reduction <maximumf>, %b, %x : vector<8xf32> into f32
  %last = arith.constant 7 : index
  %lane = arith.minsi %n, %last : index
  %e0 = vector.extract %a[%lane] : f32 from vector<8xf32>
  %e1 = vector.extract %b[3] : f32 from vector<8xf32>
  memref.store %sum, %R[%c0] : memref<4xf32>
  memref.store %max, %R[%c1] : memref<4xf32>
  memref.store %e0, %R[%c2] : memref<4xf32>
  memref.store %e1, %R[%c3] : memref<4xf32>""",
    )
    a, b = random((8,), np.float32), random((8,), np.float32)
    c, r = np.zeros(8, np.float32), np.zeros(4, np.float32)
    ember.build(text, name="f")(a, b, np.array([n]), c, r)
    f = a * b + b[7]
    s = np.concatenate([f[7:3:-1], a[3::-1]])
    check(c, np.where(np.arange(8) < n, s, np.float32(0)))
    check(r, np.array([a.sum(), b.max(), a[min(n, 7)], b[3]], np.float32))


# --- machine code ------------------------------------------------------------------


def test_vecadd_uses_vector_registers():
    text = kernel(
        "%A: memref<16xf32>, %B: memref<16xf32>, %C: memref<16xf32> {ember.output}",
        """  loop.for %i = %c0 to %c16 step %c1 vectorized {
    %a = memref.load %A[%i] : memref<16xf32>
    %b = memref.load %B[%i] : memref<16xf32>
    %s = arith.addf %a, %b : f32
    memref.store %s, %C[%i] : memref<16xf32>
  }""",
        name="vecadd",
    )
    mod = ember.build(text, name="vecadd")
    asm = mod.get_source("asm")
    assert re.search(r"vaddps\s.*%[yz]mm", asm), asm


def test_multiply_add_becomes_fma():
    """arith.mulf feeding arith.addf is one fused multiply-add (`contract`)."""
    text = kernel(
        "%A: memref<16xf32>, %B: memref<16xf32>, %C: memref<16xf32> {ember.output}",
        """  loop.for %i = %c0 to %c16 step %c1 vectorized {
    %a = memref.load %A[%i] : memref<16xf32>
    %b = memref.load %B[%i] : memref<16xf32>
    %p = arith.mulf %a, %b : f32
    %s = arith.addf %p, %b : f32
    memref.store %s, %C[%i] : memref<16xf32>
  }""",
    )
    mod = ember.build(text, name="f")
    assert re.search(r"vfmadd\w*ps\s.*%zmm", mod.get_source("asm"))
    a, b = random((16,), np.float32), random((16,), np.float32)
    c = np.zeros(16, np.float32)
    mod(a, b, c)
    check(c, a * b + b)


# --- property -----------------------------------------------------------------------


@settings(max_examples=25, deadline=None)
@given(
    lower=st.integers(0, 9),
    width=st.integers(1, 140),
    stride=st.sampled_from([1, -1, 2, 3, 4, 0]),
    offset=st.integers(0, 3),
    tight=st.booleans(),
    limit=st.one_of(st.none(), st.integers(0, 160)),
    t=st.sampled_from(["f32", "i32", "f64"]),
)
def test_any_loop_keeps_results(lower, width, stride, offset, tight, limit, t):
    """Random bounds, access strides and offsets, guards, and rows that end
    at the last element read: always what the serial loop computes."""
    upper = lower + width
    reach = max(stride, 1) * (upper - 1) + offset + 1
    size = max(upper, reach) + (0 if tight else 2)
    m = f"memref<{size}x{t}>"
    index = {
        1: "%x = arith.addi %i, %c0 : index",
        -1: f"%x = arith.subi %c{size - 1}, %i : index",
        0: "%x = arith.divui %i, %c3 : index",
    }.get(
        stride,
        f"""%y = arith.muli %i, %c{stride} : index
      %x = arith.addi %y, %c{offset} : index""",
    )
    add = "addf" if t.startswith("f") else "addi"
    compute = f"""%a = memref.load %A[%x] : {m}
      %b = memref.load %B[%i] : {m}
      %s = arith.{add} %a, %b : {t}
      memref.store %s, %C[%i] : {m}"""
    if limit is not None:
        compute = f"""%in = arith.cmpi slt, %i, %c{limit} : index
      scf.if %in {{
        {compute}
      }}"""
    text = kernel(
        f"%A: {m}, %B: {m}, %C: {m} {{ember.output}}",
        f"""  loop.for %i = %c{lower} to %c{upper} step %c1 vectorized {{
      {index}
      {compute}
  }}""",
    )
    dtype = DTYPES[t]
    a, b = random((size,), dtype), random((size,), dtype)
    if t == "i32":
        a, b = a // 4, b // 4
    c = np.zeros(size, dtype)
    ember.build(text, name="f")(a, b, c)
    want = np.zeros(size, dtype)
    for i in range(lower, min(upper, size) if limit is None else min(upper, limit)):
        x = {1: i, -1: size - 1 - i, 0: i // 3}.get(stride, stride * i + offset)
        want[i] = a[x] + b[i]
    check(c, want)


def test_no_vectorized_loop_is_left():
    """Whatever happens, loop-vectorize leaves no `vectorized` loop and records
    a reason on each serial one."""
    text = kernel(
        "%A: memref<8xf32>",
        """  loop.for %i = %c0 to %c8 step %c1 vectorized {
    loop.for %j = %c0 to %c8 step %c1 vectorized {
      %a = memref.load %A[%j] : memref<8xf32>
      memref.store %a, %A[%i] : memref<8xf32>
    }
  }""",
    )
    after = vectorized(text)
    kinds = [op.kind.data for op in after.walk() if isinstance(op, loop.ForOp)]
    assert kinds == ["serial", "serial"]
    inner, outer = sorted(failures(after))
    assert "a reduction over the vectorized loop" in outer
    assert "lanes may access the same element of %A" in inner


@pytest.mark.parametrize("n", [16, 37])
def test_boolean_vectors_load_and_store_as_bytes(n):
    """Masks read and comparisons written a vector at a time (a boolean is a
    byte in ember's buffers, LLVM's vector of i1 bits): a where on a mask and
    a greater-than equal numpy's, tails included."""
    from ember import te

    a = te.placeholder((3, n), name="a")
    m = te.placeholder((3, n), "bool", name="m")
    gt = te.compute((3, n), lambda i, j: a[i, j] > 0.5, name="gt")
    pick = te.compute(
        (3, n), lambda i, j: te.select(m[i, j], a[i, j], -1.0), name="pick"
    )
    s = te.create_schedule([gt.op, pick.op])
    for t in (gt, pick):
        s[t].vectorize(s[t].op.axis[1])
    mod = ember.build(s, [a, m, gt, pick])
    rng = np.random.default_rng(n)
    x = rng.random((3, n)).astype(np.float32)
    mask = rng.random((3, n)) > 0.5
    got_gt, got_pick = np.zeros((3, n), bool), np.zeros((3, n), np.float32)
    mod(x, mask, got_gt, got_pick)
    np.testing.assert_array_equal(got_gt, x > 0.5)
    np.testing.assert_array_equal(got_pick, np.where(mask, x, -1.0))
    ll = mod.get_source("ll")
    assert re.search(r"load <\d+ x i8>", ll)  # the mask's bytes
    assert re.search(r"store <\d+ x i8>", ll)  # the comparisons'
