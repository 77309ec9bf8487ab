"""convert-arith/math/index-to-llvm, proved by running the code.

Each op is wrapped in a loop kernel written in the llvm dialect (load the operands
of element i from arrays, apply the op, store the results), lowered by the pass and
`reconcile-unrealized-casts`, translated with ember's llvmlite translator (ember's
`llvm.select` and `llvm.fcmp`, which take vectors, replace xDSL's), JIT compiled and
run over arrays of inputs; results are compared with Python's own arithmetic or
numpy. i8 division is checked on every pair of operands.
"""

import ctypes
import gc
import math
import statistics
import time
from collections.abc import Callable

import llvmlite.binding as llvm
import numpy as np
import pytest
from xdsl.context import Context
from xdsl.parser import Parser
from xdsl.utils.exceptions import PassFailedException

from ember.backends.llvm import translate
from ember.passes import get_context, run

llvm.initialize_native_target()
llvm.initialize_native_asmprinter()

LOWER = "convert-arith-to-llvm,convert-math-to-llvm,reconcile-unrealized-casts"
DTYPES = {
    "i1": np.bool_,
    "i8": np.int8,
    "i16": np.int16,
    "i32": np.int32,
    "i64": np.int64,
    "index": np.int64,
    "f32": np.float32,
    "f64": np.float64,
}


def _context() -> Context:
    ctx = get_context()
    ctx.allow_unregistered = True  # the index dialect (xDSL has none)
    return ctx


# --- kernels -----------------------------------------------------------------------


def _storage(t: str) -> str:
    """How a value of type `t` sits in memory: index as i64, i1 as i8."""
    return (
        t.replace("index", "i64").replace("i1>", "i8>").replace("xi1", "xi8")
        if ("vector" in t)
        else {"index": "i64", "i1": "i8"}.get(t, t)
    )


def _load(k: int, arg: str, t: str) -> str:
    s = _storage(t)
    lines = [
        f"  %{arg}_at = llvm.getelementptr %{arg}_in[%i] : (!llvm.ptr, i64) -> !llvm.ptr, {s}",
        f"  %{arg}_raw = llvm.load %{arg}_at {{alignment = 1 : i64}} : !llvm.ptr -> {s}",
    ]
    if "index" in t:
        lines.append(
            f"  %{arg} = builtin.unrealized_conversion_cast %{arg}_raw : {s} to {t}"
        )
    elif t == "i1":
        lines.append(f"  %{arg} = llvm.trunc %{arg}_raw : i8 to i1")
    else:
        lines[-1] = lines[-1].replace(f"%{arg}_raw =", f"%{arg} =")
    return "\n".join(lines)


def _store(k: int, t: str) -> str:
    s = _storage(t)
    value = f"%r{k}"
    lines = []
    if "index" in t:
        lines.append(
            f"  %r{k}_raw = builtin.unrealized_conversion_cast {value} : {t} to {s}"
        )
        value = f"%r{k}_raw"
    elif t == "i1":
        lines.append(f"  %r{k}_raw = llvm.zext {value} : i1 to i8")
        value = f"%r{k}_raw"
    lines += [
        f"  %q{k} = llvm.getelementptr %o{k}[%i] : (!llvm.ptr, i64) -> !llvm.ptr, {s}",
        f"  llvm.store {value}, %q{k} {{alignment = 1 : i64}} : {s}, !llvm.ptr",
    ]
    return "\n".join(lines)


def kernel(name: str, ins: list[str], outs: list[str], body: str) -> str:
    """`llvm.func @kernel_<name>(in pointers..., out pointers..., n)` applying `body`
    (which reads %a, %b, %c and defines %r0, %r1, ...) to elements 0..n-1; the
    prefix keeps kernels from shadowing the libm functions they call."""
    args = [chr(ord("a") + k) for k in range(len(ins))]
    params = [f"%{a}_in: !llvm.ptr" for a in args] + [
        f"%o{k}: !llvm.ptr" for k in range(len(outs))
    ]
    loads = "\n".join(
        _load(k, a, t) for k, (a, t) in enumerate(zip(args, ins, strict=True))
    )
    stores = "\n".join(_store(k, t) for k, t in enumerate(outs))
    return f"""
llvm.func @kernel_{name}({", ".join(params)}, %n: i64) {{
  %zero = llvm.mlir.constant(0) : i64
  %one = llvm.mlir.constant(1) : i64
  llvm.br ^loop(%zero : i64)
^loop(%i: i64):
  %done = llvm.icmp "sge" %i, %n : i64
  llvm.cond_br %done, ^exit, ^body
^body:
{loads}
{body}
{stores}
  %next = llvm.add %i, %one : i64
  llvm.br ^loop(%next : i64)
^exit:
  llvm.return
}}"""


HOST_FEATURES = llvm.get_host_cpu_features()


def _host() -> llvm.TargetMachine:
    """The host CPU with its features, as ember's `llvm` target: with a generic CPU,
    f16 conversions become compiler-rt calls an MCJIT in Python cannot resolve."""
    return llvm.Target.from_default_triple().create_target_machine(
        cpu=llvm.get_host_cpu_name(), features=HOST_FEATURES.flatten()
    )


class Jit:
    """Kernels lowered by `passes` and JIT-compiled; call `jit(name, *inputs,
    outs=[dtype, ...], lanes=1)`."""

    def __init__(self, kernels: list[str], passes: str = LOWER):
        module = Parser(_context(), "\n".join(kernels)).parse_module()
        run(module, passes, _context())
        module.verify()
        self.module = module
        ir = str(translate(module))
        self.llvm = llvm.parse_assembly(ir)
        self.llvm.verify()
        self.engine = llvm.create_mcjit_compiler(self.llvm, _host())
        self.engine.finalize_object()

    def __call__(
        self, name: str, *inputs: np.ndarray, outs: list, lanes: int = 1
    ) -> list[np.ndarray]:
        arrays = [np.ascontiguousarray(x) for x in inputs]
        n = len(arrays[0])
        results = [np.zeros(n, dtype=d) for d in outs]
        ptrs = [a.ctypes.data for a in (*arrays, *results)]
        fn = ctypes.CFUNCTYPE(None, *[ctypes.c_void_p] * len(ptrs), ctypes.c_int64)(
            self.engine.get_function_address(f"kernel_{name}")
        )
        fn(*ptrs, n // lanes)
        return results


# --- integer arithmetic ------------------------------------------------------------


def _signed(x: int, w: int) -> int:
    x &= (1 << w) - 1
    return x - (1 << w) if x >> (w - 1) else x


def _unsigned(x: int, w: int) -> int:
    return x & ((1 << w) - 1)


def _trunc_div(a: int, b: int) -> int:
    q = abs(a) // abs(b)
    return q if (a < 0) == (b < 0) else -q


Valid = Callable[[np.ndarray, np.ndarray, int], np.ndarray]


def NONZERO(a: np.ndarray, b: np.ndarray, w: int) -> np.ndarray:
    return b != 0


def SIGNED_DIV(a: np.ndarray, b: np.ndarray, w: int) -> np.ndarray:
    return (b != 0) & ~((a == -(1 << (w - 1))) & (b == -1))  # no INT_MIN / -1


def SHIFT(a: np.ndarray, b: np.ndarray, w: int) -> np.ndarray:
    return (b >= 0) & (b < w)


def ANY(a: np.ndarray, b: np.ndarray, w: int) -> np.ndarray:
    return np.ones_like(a, dtype=bool)


INT_OPS: dict[str, tuple[Callable[[int, int, int], int], Valid]] = {
    "addi": (lambda a, b, w: a + b, ANY),
    "subi": (lambda a, b, w: a - b, ANY),
    "muli": (lambda a, b, w: a * b, ANY),
    "divsi": (lambda a, b, w: _trunc_div(a, b), SIGNED_DIV),
    "remsi": (lambda a, b, w: a - b * _trunc_div(a, b), SIGNED_DIV),
    "floordivsi": (lambda a, b, w: a // b, SIGNED_DIV),
    "ceildivsi": (lambda a, b, w: -(-a // b), SIGNED_DIV),
    "divui": (lambda a, b, w: _unsigned(a, w) // _unsigned(b, w), NONZERO),
    "remui": (lambda a, b, w: _unsigned(a, w) % _unsigned(b, w), NONZERO),
    "ceildivui": (lambda a, b, w: -(-_unsigned(a, w) // _unsigned(b, w)), NONZERO),
    "andi": (lambda a, b, w: a & b, ANY),
    "ori": (lambda a, b, w: a | b, ANY),
    "xori": (lambda a, b, w: a ^ b, ANY),
    "shli": (lambda a, b, w: a << b, SHIFT),
    "shrsi": (lambda a, b, w: a >> b, SHIFT),
    "shrui": (lambda a, b, w: _unsigned(a, w) >> b, SHIFT),
    "maxsi": (lambda a, b, w: max(a, b), ANY),
    "minsi": (lambda a, b, w: min(a, b), ANY),
    "maxui": (lambda a, b, w: max(_unsigned(a, w), _unsigned(b, w)), ANY),
    "minui": (lambda a, b, w: min(_unsigned(a, w), _unsigned(b, w)), ANY),
}
WIDTH = {"i8": 8, "i16": 16, "i32": 32, "i64": 64, "index": 64}


def _int_pairs(t: str) -> tuple[np.ndarray, np.ndarray]:
    """Every pair for i8; edge values crossed with each other and random pairs for
    the wider types."""
    w = WIDTH[t]
    if w == 8:
        a, b = np.meshgrid(np.arange(-128, 128), np.arange(-128, 128))
        return a.ravel(), b.ravel()
    lo, hi = -(1 << (w - 1)), (1 << (w - 1)) - 1
    edges = [0, 1, -1, 2, -2, 3, -3, 7, -7, 13, -13, w - 1, lo, lo + 1, hi, hi - 1]
    a, b = (x.ravel() for x in np.meshgrid(edges, edges))
    rng = np.random.default_rng(w)
    ra = rng.integers(lo, hi, 2000, endpoint=True)
    rb = np.concatenate(
        [rng.integers(lo, hi, 1000, endpoint=True), rng.integers(-50, 50, 1000)]
    )
    return np.concatenate([a, ra]).astype(np.int64), np.concatenate([b, rb]).astype(
        np.int64
    )


@pytest.fixture(scope="module")
def int_jit() -> Jit:
    kernels = [
        kernel(f"{op}_{t}", [t, t], [t], f"  %r0 = arith.{op} %a, %b : {t}")
        for t in WIDTH
        for op in INT_OPS
    ]
    return Jit(kernels)


@pytest.mark.parametrize("t", list(WIDTH))
@pytest.mark.parametrize("op", list(INT_OPS))
def test_integer_op(int_jit: Jit, op: str, t: str):
    ref, valid = INT_OPS[op]
    w = WIDTH[t]
    a, b = _int_pairs(t)
    keep = valid(a, b, w)
    a, b = a[keep], b[keep]
    dtype = DTYPES[t]
    (got,) = int_jit(f"{op}_{t}", a.astype(dtype), b.astype(dtype), outs=[dtype])
    want = [
        _signed(ref(x, y, w), w) for x, y in zip(a.tolist(), b.tolist(), strict=True)
    ]
    assert got.astype(np.int64).tolist() == want


@pytest.fixture(scope="module")
def vector_jit() -> Jit:
    ops = ["addi", "floordivsi", "ceildivsi", "remsi", "maxsi", "minui", "shrsi"]
    return Jit(
        [
            kernel(
                f"{op}_{t}",
                [f"vector<4x{t}>"] * 2,
                [f"vector<4x{t}>"],
                f"  %r0 = arith.{op} %a, %b : vector<4x{t}>",
            )
            for op in ops
            for t in ("i32", "index")
        ]
    )


@pytest.mark.parametrize("t", ["i32", "index"])
@pytest.mark.parametrize(
    "op", ["addi", "floordivsi", "ceildivsi", "remsi", "maxsi", "minui", "shrsi"]
)
def test_integer_op_on_vectors(vector_jit: Jit, op: str, t: str):
    ref, valid = INT_OPS[op]
    w = WIDTH[t]
    a, b = _int_pairs(t)
    keep = valid(a, b, w)
    a, b = a[keep], b[keep]
    a, b = a[: len(a) // 4 * 4], b[: len(b) // 4 * 4]
    dtype = DTYPES[t]
    (got,) = vector_jit(
        f"{op}_{t}", a.astype(dtype), b.astype(dtype), outs=[dtype], lanes=4
    )
    want = [
        _signed(ref(x, y, w), w) for x, y in zip(a.tolist(), b.tolist(), strict=True)
    ]
    assert got.astype(np.int64).tolist() == want


CMPI = {
    "eq": lambda a, b, w: a == b,
    "ne": lambda a, b, w: a != b,
    "slt": lambda a, b, w: a < b,
    "sle": lambda a, b, w: a <= b,
    "sgt": lambda a, b, w: a > b,
    "sge": lambda a, b, w: a >= b,
    "ult": lambda a, b, w: _unsigned(a, w) < _unsigned(b, w),
    "ule": lambda a, b, w: _unsigned(a, w) <= _unsigned(b, w),
    "ugt": lambda a, b, w: _unsigned(a, w) > _unsigned(b, w),
    "uge": lambda a, b, w: _unsigned(a, w) >= _unsigned(b, w),
}


@pytest.mark.parametrize("t", ["i16", "index"])
def test_cmpi_every_predicate(t: str):
    jit = Jit(
        [
            kernel(f"{p}", [t, t], ["i1"], f"  %r0 = arith.cmpi {p}, %a, %b : {t}")
            for p in CMPI
        ]
    )
    w = WIDTH[t]
    a, b = _int_pairs(t)
    dtype = DTYPES[t]
    for p, ref in CMPI.items():
        (got,) = jit(p, a.astype(dtype), b.astype(dtype), outs=[np.uint8])
        want = [int(ref(x, y, w)) for x, y in zip(a.tolist(), b.tolist(), strict=True)]
        assert got.tolist() == want, p


# --- floating point ----------------------------------------------------------------

SPECIAL = [
    0.0,
    -0.0,
    1.0,
    -1.0,
    1.5,
    -2.5,
    3.0,
    0.1,
    1e-30,
    math.inf,
    -math.inf,
    math.nan,
]


def _float_pairs(dtype) -> tuple[np.ndarray, np.ndarray]:
    a, b = np.meshgrid(np.array(SPECIAL, dtype), np.array(SPECIAL, dtype))
    return a.ravel(), b.ravel()


def _maximum(a: float, b: float) -> float:
    if math.isnan(a) or math.isnan(b):
        return math.nan
    if a == b == 0:
        return a if math.copysign(1, a) > 0 else b  # +0 > -0
    return max(a, b)


def _minimum(a: float, b: float) -> float:
    if math.isnan(a) or math.isnan(b):
        return math.nan
    if a == b == 0:
        return a if math.copysign(1, a) < 0 else b
    return min(a, b)


def _maxnum(a: float, b: float) -> float:
    return b if math.isnan(a) else a if math.isnan(b) else max(a, b)


def _minnum(a: float, b: float) -> float:
    return b if math.isnan(a) else a if math.isnan(b) else min(a, b)


FLOAT_OPS = {
    "addf": lambda a, b: a + b,
    "subf": lambda a, b: a - b,
    "mulf": lambda a, b: a * b,
    "divf": lambda a, b: a / b,
    "maximumf": np.vectorize(_maximum),
    "minimumf": np.vectorize(_minimum),
    "maxnumf": np.vectorize(_maxnum),
    "minnumf": np.vectorize(_minnum),
}


def _same_floats(got: np.ndarray, want: np.ndarray) -> None:
    """Equal values, NaN where NaN, and the same sign of zero."""
    np.testing.assert_array_equal(got, want)
    assert (np.signbit(got) == np.signbit(want))[~np.isnan(want)].all()


@pytest.fixture(scope="module")
def float_jit() -> Jit:
    kernels = []
    for t in ("f32", "f64", "vector<4xf32>"):
        suffix = t.replace("vector<4x", "v4").rstrip(">")
        for op in FLOAT_OPS:
            kernels.append(
                kernel(
                    f"{op}_{suffix}", [t, t], [t], f"  %r0 = arith.{op} %a, %b : {t}"
                )
            )
        kernels.append(
            kernel(f"negf_{suffix}", [t], [t], f"  %r0 = arith.negf %a : {t}")
        )
    return Jit(kernels)


@pytest.mark.parametrize("t", ["f32", "f64", "v4f32"])
@pytest.mark.parametrize("op", list(FLOAT_OPS))
def test_float_op(float_jit: Jit, op: str, t: str):
    dtype = np.float64 if t == "f64" else np.float32
    a, b = _float_pairs(dtype)
    (got,) = float_jit(f"{op}_{t}", a, b, outs=[dtype], lanes=4 if t == "v4f32" else 1)
    with np.errstate(all="ignore"):
        want = np.asarray(FLOAT_OPS[op](a, b), dtype=dtype)
    _same_floats(got, want)


@pytest.mark.parametrize("t", ["f32", "f64", "v4f32"])
def test_negf(float_jit: Jit, t: str):
    dtype = np.float64 if t == "f64" else np.float32
    a = np.array(SPECIAL * 4, dtype)
    (got,) = float_jit(f"negf_{t}", a, outs=[dtype], lanes=4 if t == "v4f32" else 1)
    _same_floats(got, -a)


def _cmpf(p: str, a: float, b: float) -> bool:
    unordered = math.isnan(a) or math.isnan(b)
    rel = {
        "eq": a == b,
        "gt": a > b,
        "ge": a >= b,
        "lt": a < b,
        "le": a <= b,
        "ne": a != b,
    }
    if p in ("false", "true"):
        return p == "true"
    if p == "ord":
        return not unordered
    if p == "uno":
        return unordered
    if p[0] == "o":
        return not unordered and rel[p[1:]]
    return unordered or rel[p[1:]]


CMPF = [
    "false",
    "oeq",
    "ogt",
    "oge",
    "olt",
    "ole",
    "one",
    "ord",
    "ueq",
    "ugt",
    "uge",
    "ult",
    "ule",
    "une",
    "uno",
    "true",
]


@pytest.mark.parametrize("t", ["f32", "f64"])
def test_cmpf_every_predicate(t: str):
    jit = Jit(
        [
            kernel(p, [t, t], ["i1"], f"  %r0 = arith.cmpf {p}, %a, %b : {t}")
            for p in CMPF
        ]
    )
    a, b = _float_pairs(DTYPES[t])
    for p in CMPF:
        (got,) = jit(p, a, b, outs=[np.uint8])
        want = [
            int(_cmpf(p, x, y)) for x, y in zip(a.tolist(), b.tolist(), strict=True)
        ]
        assert got.tolist() == want, p


# --- casts, constants, select, extended arithmetic ---------------------------------

I32 = np.array(
    [0, 1, -1, 127, 128, -129, 255, 65535, 2**31 - 1, -(2**31), 123456789, -987654],
    np.int64,
)
F64 = np.array(
    [0.0, -0.0, 1.5, -1.5, 1e10, -3.75, 1e-40, 65504.0, math.inf, math.nan, 2.5, -1e300]
)
with np.errstate(over="ignore"):
    F32 = F64.astype(np.float32)
CASTS = [
    # op, from, to, input, reference
    ("extsi", "i8", "i32", I32.astype(np.int8), lambda x: x.astype(np.int32)),
    (
        "extui",
        "i8",
        "i32",
        I32.astype(np.int8),
        lambda x: x.view(np.uint8).astype(np.int32),
    ),
    ("trunci", "i32", "i8", I32.astype(np.int32), lambda x: x.astype(np.int8)),
    ("index_cast", "i32", "index", I32.astype(np.int32), lambda x: x.astype(np.int64)),
    ("index_cast", "index", "i16", I32 * 977, lambda x: x.astype(np.int16)),
    ("index_cast", "index", "i64", I32 * 977, lambda x: x),
    ("extf", "f32", "f64", F32, lambda x: x.astype(np.float64)),
    ("truncf", "f64", "f32", F64, lambda x: x.astype(np.float32)),
    ("sitofp", "i32", "f32", I32.astype(np.int32), lambda x: x.astype(np.float32)),
    ("sitofp", "i64", "f64", I32 * 10**9, lambda x: x.astype(np.float64)),
    ("bitcast", "f32", "i32", F32, lambda x: x.view(np.int32)),
    ("bitcast", "i64", "f64", I32 * 10**9, lambda x: x.view(np.float64)),
    ("bitcast", "index", "i64", I32, lambda x: x),
]


@pytest.mark.parametrize(
    "op, src, dst, x, ref", CASTS, ids=[f"{c[0]}-{c[1]}-{c[2]}" for c in CASTS]
)
def test_cast(op, src, dst, x, ref):
    jit = Jit([kernel("k", [src], [dst], f"  %r0 = arith.{op} %a : {src} to {dst}")])
    with np.errstate(all="ignore"):
        want = ref(x)
    (got,) = jit("k", x, outs=[DTYPES[dst]])
    np.testing.assert_array_equal(got, want)


def test_constants_and_select():
    jit = Jit(
        [
            kernel(
                "clamp",
                ["i32"],
                ["i32"],
                """
  %k = arith.constant -7 : i32
  %c = arith.cmpi slt, %a, %k : i32
  %r0 = arith.select %c, %k, %a : i32""",
            ),
            kernel(
                "big",
                ["index"],
                ["index"],
                """
  %k = arith.constant 1000000000000 : index
  %r0 = arith.addi %a, %k : index""",
            ),
            kernel(
                "lanes",
                ["vector<4xi32>"],
                ["vector<4xi32>"],
                """
  %k = arith.constant dense<[1, -2, 3, -4]> : vector<4xi32>
  %r0 = arith.muli %a, %k : vector<4xi32>""",
            ),
            kernel(
                "flanes",
                ["vector<4xf64>"],
                ["vector<4xf64>"],
                """
  %k = arith.constant dense<[0.5, -1.5, 2.0, 8.0]> : vector<4xf64>
  %t = arith.constant true
  %z = arith.constant dense<0.0> : vector<4xf64>
  %m = arith.mulf %a, %k : vector<4xf64>
  %r0 = arith.select %t, %m, %z : vector<4xf64>""",
            ),
        ]
    )
    x = np.arange(-12, 12, dtype=np.int32)
    assert jit("clamp", x, outs=[np.int32])[0].tolist() == np.maximum(x, -7).tolist()
    assert (
        jit("big", x.astype(np.int64), outs=[np.int64])[0].tolist()
        == (x.astype(np.int64) + 10**12).tolist()
    )
    k = np.tile([1, -2, 3, -4], 6)
    assert jit("lanes", x, outs=[np.int32], lanes=4)[0].tolist() == (x * k).tolist()
    f = x.astype(np.float64) / 3
    got = jit("flanes", f, outs=[np.float64], lanes=4)[0]
    np.testing.assert_array_equal(got, f * np.tile([0.5, -1.5, 2.0, 8.0], 6))


def test_extended_arithmetic():
    jit = Jit(
        [
            kernel(
                "addui",
                ["i32", "i32"],
                ["i32", "i1"],
                "  %r0, %r1 = arith.addui_extended %a, %b : i32, i1",
            ),
            kernel(
                "mului",
                ["i32", "i32"],
                ["i32", "i32"],
                "  %r0, %r1 = arith.mului_extended %a, %b : i32",
            ),
            kernel(
                "mulsi",
                ["i64", "i64"],
                ["i64", "i64"],
                "  %r0, %r1 = arith.mulsi_extended %a, %b : i64",
            ),
            kernel(
                "mulsi_v",
                ["vector<2xi64>", "vector<2xi64>"],
                ["vector<2xi64>"] * 2,
                "  %r0, %r1 = arith.mulsi_extended %a, %b : vector<2xi64>",
            ),
        ]
    )
    a, b = _int_pairs("i32")
    a32, b32 = a.astype(np.int32), b.astype(np.int32)
    s, o = jit("addui", a32, b32, outs=[np.int32, np.uint8])
    ua, ub = (x.astype(np.int64) & 0xFFFFFFFF for x in (a32, b32))
    assert s.tolist() == [
        _signed(x + y, 32) for x, y in zip(ua.tolist(), ub.tolist(), strict=True)
    ]
    assert o.tolist() == [
        int(x + y >= 2**32) for x, y in zip(ua.tolist(), ub.tolist(), strict=True)
    ]
    lo, hi = jit("mului", a32, b32, outs=[np.int32, np.int32])
    p = [x * y for x, y in zip(ua.tolist(), ub.tolist(), strict=True)]
    assert lo.tolist() == [_signed(v, 32) for v in p]
    assert hi.tolist() == [_signed(v >> 32, 32) for v in p]
    a64, b64 = _int_pairs("i64")
    a64, b64 = a64[: len(a64) // 2 * 2], b64[: len(b64) // 2 * 2]
    for name, lanes in (("mulsi", 1), ("mulsi_v", 2)):
        lo, hi = jit(name, a64, b64, outs=[np.int64, np.int64], lanes=lanes)
        p = [x * y for x, y in zip(a64.tolist(), b64.tolist(), strict=True)]
        assert lo.tolist() == [_signed(v, 64) for v in p], name
        assert hi.tolist() == [_signed(v >> 64, 64) for v in p], name


# --- math --------------------------------------------------------------------------

WIDE = np.linspace(-3.0, 3.0, 25)
POSITIVE = np.linspace(0.05, 9.0, 24)
UNIT = np.linspace(-0.95, 0.95, 20)
HALVES = np.arange(-3.0, 3.25, 0.25)  # x.5 ties for the rounding functions


def _round_half_away(x: float) -> float:
    return math.copysign(math.floor(abs(x) + 0.5), x)


UNARY = {
    # op: (reference, inputs)
    "absf": (abs, WIDE),
    "ceil": (math.ceil, HALVES),
    "floor": (math.floor, HALVES),
    "round": (_round_half_away, HALVES),
    "roundeven": (lambda x: float(np.round(x)), HALVES),
    "trunc": (math.trunc, HALVES),
    "sqrt": (math.sqrt, POSITIVE),
    "rsqrt": (lambda x: 1 / math.sqrt(x), POSITIVE),
    "exp": (math.exp, WIDE),
    "exp2": (lambda x: 2.0**x, WIDE),
    "expm1": (math.expm1, WIDE),
    "log": (math.log, POSITIVE),
    "log2": (math.log2, POSITIVE),
    "log10": (math.log10, POSITIVE),
    "log1p": (math.log1p, UNIT),
    "sin": (math.sin, WIDE),
    "cos": (math.cos, WIDE),
    "tan": (math.tan, UNIT),
    "asin": (math.asin, UNIT),
    "acos": (math.acos, UNIT),
    "atan": (math.atan, WIDE),
    "sinh": (math.sinh, WIDE),
    "cosh": (math.cosh, WIDE),
    "tanh": (math.tanh, WIDE),
    "asinh": (math.asinh, WIDE),
    "acosh": (math.acosh, POSITIVE + 1),
    "atanh": (math.atanh, UNIT),
    "erf": (math.erf, WIDE),
    "cbrt": (lambda x: math.copysign(abs(x) ** (1 / 3), x), WIDE),
}
TOLERANCE = {np.float32: 2e-6, np.float64: 1e-13}
# On vectors, the intrinsics work lane by lane; the libm calls are scalarized with
# ember's llvm.extractelement (every op, with fast-math flags: `ember_math_jit`).
VECTOR_INTRINSICS = ("exp", "sqrt", "tanh", "floor", "atan")


def _close(got: np.ndarray, want: np.ndarray, dtype) -> None:
    np.testing.assert_allclose(got, want, rtol=TOLERANCE[dtype], atol=TOLERANCE[dtype])


@pytest.fixture(scope="module")
def math_jit() -> Jit:
    kernels = [
        kernel(f"{op}_{t}", [t], [t], f"  %r0 = math.{op} %a : {t}")
        for op in UNARY
        for t in ("f32", "f64")
    ]
    kernels += [
        kernel(
            f"{op}_v4f32",
            ["vector<4xf32>"],
            ["vector<4xf32>"],
            f"  %r0 = math.{op} %a : vector<4xf32>",
        )
        for op in VECTOR_INTRINSICS
    ]
    return Jit(kernels)


@pytest.fixture(scope="module")
def ember_math_jit() -> Jit:
    """Every unary op on vectors, with a fast-math flag, the libm ones scalarized
    with ember's llvm.extractelement."""
    return Jit(
        [
            kernel(
                f"{op}_v4f32",
                ["vector<4xf32>"],
                ["vector<4xf32>"],
                f"  %r0 = math.{op} %a fastmath<nsz> : vector<4xf32>",
            )
            for op in UNARY
        ],
    )


@pytest.mark.parametrize(
    "op, t",
    [
        (op, t)
        for op in UNARY
        for t in ("f32", "f64", "v4f32", "v4f32-ember")
        if t != "v4f32" or op in VECTOR_INTRINSICS
    ],
)
def test_math_unary(request, op: str, t: str):
    jit = request.getfixturevalue("ember_math_jit" if "ember" in t else "math_jit")
    ref, xs = UNARY[op]
    dtype = np.float64 if t == "f64" else np.float32
    x = np.resize(xs, len(xs) // 4 * 4 + 4).astype(dtype)
    name = f"{op}_{t.removesuffix('-ember')}"
    (got,) = jit(name, x, outs=[dtype], lanes=1 if t[0] == "f" else 4)
    _close(got, np.array([ref(float(v)) for v in x]), dtype)


def test_math_binary_and_fma():
    jit = Jit(
        [
            kernel("powf", ["f64", "f64"], ["f64"], "  %r0 = math.powf %a, %b : f64"),
            kernel("atan2", ["f32", "f32"], ["f32"], "  %r0 = math.atan2 %a, %b : f32"),
            kernel(
                "copysign",
                ["vector<4xf32>"] * 2,
                ["vector<4xf32>"],
                "  %r0 = math.copysign %a, %b : vector<4xf32>",
            ),
            kernel("fma", ["f64"] * 3, ["f64"], "  %r0 = math.fma %a, %b, %c : f64"),
        ]
    )
    a = np.linspace(0.5, 4.0, 16)
    b = np.linspace(-2.0, 2.0, 16)
    c = np.linspace(-1.0, 3.0, 16)
    _close(jit("powf", a, b, outs=[np.float64])[0], a**b, np.float64)
    a32, b32 = a.astype(np.float32), b.astype(np.float32)
    _close(jit("atan2", b32, a32, outs=[np.float32])[0], np.arctan2(b, a), np.float32)
    got = jit("copysign", a32, b32, outs=[np.float32], lanes=4)[0]
    np.testing.assert_array_equal(got, np.copysign(a32, b32))
    _close(jit("fma", a, b, c, outs=[np.float64])[0], a * b + c, np.float64)


def test_fpowi():
    jit = Jit(
        [
            kernel(
                "f32_i32",
                ["f32", "i32"],
                ["f32"],
                "  %r0 = math.fpowi %a, %b : f32, i32",
            ),
            kernel(
                "f64_i64",
                ["f64", "i64"],
                ["f64"],
                "  %r0 = math.fpowi %a, %b : f64, i64",
            ),
            kernel(
                "f64_index",
                ["f64", "index"],
                ["f64"],
                "  %r0 = math.fpowi %a, %b : f64, index",
            ),
        ]
    )
    x = np.array([1.5, -2.0, 0.5, -1.0, 3.0, -0.75, 2.0, 10.0] * 2)
    n = np.array([0, 1, 2, 3, -1, -2, 5, -3, 7, 8, -4, 11, 4, 6, 2, -5])
    want = np.array([float(v) ** int(k) for v, k in zip(x, n, strict=True)])
    got = jit("f32_i32", x.astype(np.float32), n.astype(np.int32), outs=[np.float32])[0]
    _close(got, want, np.float32)
    for name in ("f64_i64", "f64_index"):
        _close(jit(name, x, n.astype(np.int64), outs=[np.float64])[0], want, np.float64)


def test_math_integer():
    jit = Jit(
        [
            kernel("absi", ["i32"], ["i32"], "  %r0 = math.absi %a : i32"),
            kernel("ctlz", ["i32"], ["i32"], "  %r0 = math.ctlz %a : i32"),
            kernel("cttz", ["i64"], ["i64"], "  %r0 = math.cttz %a : i64"),
            kernel("ctpop", ["index"], ["index"], "  %r0 = math.ctpop %a : index"),
        ]
    )
    x = I32.astype(np.int32)
    assert jit("absi", x, outs=[np.int32])[0].tolist() == [
        _signed(abs(v), 32)
        for v in x.tolist()  # abs(INT_MIN) wraps to INT_MIN
    ]
    assert jit("ctlz", x, outs=[np.int32])[0].tolist() == [
        32 - _unsigned(v, 32).bit_length()
        for v in x.tolist()  # ctlz(0) = 32
    ]
    y = I32 * 977
    assert jit("cttz", y, outs=[np.int64])[0].tolist() == [
        64 if v == 0 else (v & -v).bit_length() - 1 for v in y.tolist()
    ]
    assert jit("ctpop", y, outs=[np.int64])[0].tolist() == [
        bin(_unsigned(v, 64)).count("1") for v in y.tolist()
    ]


@pytest.mark.skipif(not HOST_FEATURES.get("f16c"), reason="f16 needs F16C in a JIT")
def test_libm_declared_once_and_f16_through_f32():
    src = "\n".join(
        [
            kernel("erf_f16", ["f16"], ["f16"], "  %r0 = math.erf %a : f16"),
            kernel(
                "erf_f32",
                ["f32"],
                ["f32"],
                """
  %e = math.erf %a : f32
  %r0 = math.erf %e : f32""",
            ),
        ]
    )
    module = Parser(_context(), src).parse_module()
    run(module, LOWER, _context())
    declared = [op for op in module.ops if op.properties.get("sym_name").data == "erff"]
    assert len(declared) == 1 and not declared[0].body.blocks
    jit = Jit([src])
    x = WIDE.astype(np.float32)
    got = jit("erf_f32", x, outs=[np.float32])[0]
    _close(got, np.array([math.erf(math.erf(float(v))) for v in x]), np.float32)
    h = WIDE.astype(np.float16)
    got = jit("erf_f16", h, outs=[np.float16])[0]
    np.testing.assert_array_equal(
        got, np.array([math.erf(float(v)) for v in h], np.float16)
    )


def test_ops_only_embers_translator_knows():
    """ember's llvm additions (fptosi, fptoui, uitofp) and fastmath intrinsic calls."""
    jit = Jit(
        [
            kernel("fptosi", ["f32"], ["i32"], "  %r0 = arith.fptosi %a : f32 to i32"),
            kernel("fptoui", ["f64"], ["i32"], "  %r0 = arith.fptoui %a : f64 to i32"),
            kernel("uitofp", ["i32"], ["f32"], "  %r0 = arith.uitofp %a : i32 to f32"),
            kernel(
                "fast",
                ["vector<4xf32>"] * 2,
                ["vector<4xf32>"],
                """
  %m = arith.maximumf %a, %b fastmath<nnan> : vector<4xf32>
  %r0 = math.exp %m fastmath<fast> : vector<4xf32>""",
            ),
        ],
    )
    f = np.array(
        [0.0, -0.0, 1.9, -1.9, 2.5, -2.5, 1e9, -2e9, 127.99, -128.5, 7.0, -7.0]
    )
    f32 = f.astype(np.float32)
    got = jit("fptosi", f32, outs=[np.int32])[0]
    np.testing.assert_array_equal(got, np.trunc(f32).astype(np.int32))
    u = np.abs(f) * 2  # in range of u32: up to 4e9
    got = jit("fptoui", u, outs=[np.int32])[0]
    np.testing.assert_array_equal(got.view(np.uint32), np.trunc(u).astype(np.uint32))
    i = I32.astype(np.int32)
    got = jit("uitofp", i, outs=[np.float32])[0]
    np.testing.assert_array_equal(got, i.view(np.uint32).astype(np.float32))
    a = np.linspace(-2, 2, 16, dtype=np.float32)
    got = jit("fast", a, a[::-1].copy(), outs=[np.float32], lanes=4)[0]
    _close(got, np.exp(np.maximum(a, a[::-1])), np.float32)
    assert "call fast <4 x float> @llvm.exp.v4f32" in str(jit.llvm)
    assert "call nnan <4 x float> @llvm.maximum.v4f32" in str(jit.llvm)


@pytest.mark.skipif(not HOST_FEATURES.get("f16c"), reason="f16 needs F16C in a JIT")
def test_libm_on_f16_vectors():
    """Scalarized, each lane through float (ember's translator: extractelement)."""
    jit = Jit(
        [
            kernel(
                "erf",
                ["vector<4xf16>"],
                ["vector<4xf16>"],
                "  %r0 = math.erf %a : vector<4xf16>",
            )
        ],
    )
    h = np.linspace(-2, 2, 16).astype(np.float16)
    got = jit("erf", h, outs=[np.float16], lanes=4)[0]
    np.testing.assert_array_equal(
        got, np.array([math.erf(float(v)) for v in h], np.float16)
    )


# --- the index dialect -------------------------------------------------------------

INDEX_OPS = {
    "add": "addi",
    "sub": "subi",
    "mul": "muli",
    "divs": "divsi",
    "divu": "divui",
    "rems": "remsi",
    "remu": "remui",
    "ceildivs": "ceildivsi",
    "ceildivu": "ceildivui",
    "floordivs": "floordivsi",
    "maxs": "maxsi",
    "maxu": "maxui",
    "mins": "minsi",
    "minu": "minui",
    "shl": "shli",
    "shrs": "shrsi",
    "shru": "shrui",
    "and": "andi",
    "or": "ori",
    "xor": "xori",
}
INDEX_LOWER = "convert-index-to-llvm,reconcile-unrealized-casts"


@pytest.fixture(scope="module")
def index_jit() -> Jit:
    binary = [
        kernel(
            op,
            ["index"] * 2,
            ["index"],
            f'  %r0 = "index.{op}"(%a, %b) : (index, index) -> index',
        )
        for op in INDEX_OPS
    ]
    cmp = [
        kernel(
            f"cmp_{p}",
            ["index"] * 2,
            ["i1"],
            f'  %r0 = "index.cmp"(%a, %b) <{{pred = #index<cmp_predicate {p}>}}>'
            " : (index, index) -> i1",
        )
        for p in CMPI
    ]
    return Jit(binary + cmp, INDEX_LOWER)


@pytest.mark.parametrize("op", list(INDEX_OPS))
def test_index_op(index_jit: Jit, op: str):
    ref, valid = INT_OPS[INDEX_OPS[op]]
    a, b = _int_pairs("index")
    keep = valid(a, b, 64)
    a, b = a[keep], b[keep]
    (got,) = index_jit(op, a, b, outs=[np.int64])
    assert got.tolist() == [
        _signed(ref(x, y, 64), 64) for x, y in zip(a.tolist(), b.tolist(), strict=True)
    ]


@pytest.mark.parametrize("p", list(CMPI))
def test_index_cmp(index_jit: Jit, p: str):
    a, b = _int_pairs("index")
    (got,) = index_jit(f"cmp_{p}", a, b, outs=[np.uint8])
    assert got.tolist() == [
        int(CMPI[p](x, y, 64)) for x, y in zip(a.tolist(), b.tolist(), strict=True)
    ]


def test_index_constants_and_casts():
    jit = Jit(
        [
            kernel(
                "k",
                ["i32", "index"],
                ["index", "index", "i16", "i16", "index"],
                """
  %k = "index.constant"() <{value = -5 : index}> : () -> index
  %s = "index.sizeof"() : () -> index
  %t = "index.bool.constant"() <{value = true}> : () -> i1
  %f = "index.bool.constant"() <{value = false}> : () -> i1
  %x = "index.casts"(%a) : (i32) -> index
  %r0 = "index.add"(%x, %k) : (index, index) -> index
  %r1 = "index.castu"(%a) : (i32) -> index
  %r2 = "index.casts"(%b) : (index) -> i16
  %r3 = "index.castu"(%b) : (index) -> i16
  %c = arith.select %t, %s, %k : index
  %r4 = arith.select %f, %k, %c : index""",
            )
        ],
        "convert-index-to-llvm,convert-arith-to-llvm,reconcile-unrealized-casts",
    )
    a = I32.astype(np.int32)
    b = I32 * 977
    r0, r1, r2, r3, r4 = jit(
        "k", a, b, outs=[np.int64, np.int64, np.int16, np.int16, np.int64]
    )
    assert r0.tolist() == (a.astype(np.int64) - 5).tolist()
    assert r1.tolist() == a.view(np.uint32).astype(np.int64).tolist()
    assert r2.tolist() == r3.tolist() == b.astype(np.int16).tolist()
    assert r4.tolist() == [64] * len(a)


# --- diagnostics and speed ---------------------------------------------------------


@pytest.mark.parametrize(
    "passes, src, message",
    [
        (
            "convert-arith-to-llvm",
            "%r = arith.addf %t, %t : tensor<2xf32>",
            "cannot lower 'arith.addf' in @f: expected integers, index or floats, 1-D "
            "vectors of them, or memrefs, got tensor<2xf32>",
        ),
        (
            "convert-math-to-llvm",
            "%r = math.ipowi %i, %i : i32",
            "cannot lower 'math.ipowi' in @f: LLVM has no integer power",
        ),
        (
            "convert-math-to-llvm",
            "%r = math.erf %q : f128",
            "cannot lower 'math.erf' in @f: expected f16, bf16, f32 or f64 for libm, got f128",
        ),
        (
            "convert-index-to-llvm",
            '%r = "index.frobnicate"(%n) : (index) -> index',
            "cannot lower 'index.frobnicate' in @f: unknown op of the index dialect",
        ),
    ],
)
def test_unconverted_op_is_named(passes: str, src: str, message: str):
    module = Parser(
        _context(),
        f"""
func.func @f(%t: tensor<2xf32>, %i: i32, %q: f128, %n: index) {{
  {src}
  func.return
}}""",
    ).parse_module()
    with pytest.raises(
        PassFailedException, match=message.replace("(", r"\(").replace(")", r"\)")
    ):
        run(module, passes, _context())


def _big_module(n: int) -> str:
    """n arith ops in chains over i32, f32 and index, like the scalar code of a
    loop nest: integer and float arithmetic, comparisons, selects, casts."""
    ops = [
        ("i", "arith.addi {i}, %a : i32"),
        ("i", "arith.muli {i}, %b : i32"),
        ("f", "arith.mulf {f}, %x : f32"),
        ("f", "arith.addf {f}, %y fastmath<fast> : f32"),
        ("n", "arith.addi {n}, %c1 : index"),
        ("n", "arith.muli {n}, %c4 : index"),
        ("c", "arith.cmpi slt, {i}, %b : i32"),
        ("i", "arith.select {c}, {i}, %a : i32"),
        ("f", "arith.maximumf {f}, %x : f32"),
        ("i", "arith.floordivsi {i}, %b : i32"),
        ("i", "arith.index_cast {n} : index to i32"),
        ("f", "arith.sitofp {i} : i32 to f32"),
    ]
    last = {"i": "%a", "f": "%x", "n": "%n", "c": "%t"}
    lines = [
        "func.func @big(%a: i32, %b: i32, %x: f32, %y: f32, %n: index) -> (i32, f32, index) {",
        "  %c1 = arith.constant 1 : index",
        "  %c4 = arith.constant 4 : index",
        "  %t = arith.constant true",
    ]
    for k in range(n - 3):
        kind, op = ops[k % len(ops)]
        lines.append(f"  %v{k} = " + op.format(**{key: v for key, v in last.items()}))
        last[kind] = f"%v{k}"
    lines.append(
        f"  func.return {last['i']}, {last['f']}, {last['n']} : i32, f32, index"
    )
    lines.append("}")
    return "\n".join(lines)


@pytest.mark.filterwarnings("ignore:Unable to remove cast")  # at the func boundary
def test_conversion_of_5000_ops():
    """Correctness only; the conversion rate is printed (pytest -s), never asserted."""
    src = _big_module(5000)
    rates = []
    for _ in range(3):
        module = Parser(_context(), src).parse_module()
        gc.collect()  # the garbage of earlier tests would be collected on our clock
        start = time.perf_counter()
        run(module, "convert-arith-to-llvm", _context())
        rates.append(5000 / (time.perf_counter() - start))
    module.verify()
    assert not [op for op in module.walk() if op.name.startswith("arith.")]
    run(module, "reconcile-unrealized-casts", _context())
    casts = [op for op in module.walk() if "unrealized" in op.name]
    assert len(casts) == 2  # the index argument and result of the func.func
    print(f"convert-arith-to-llvm: {statistics.median(rates):.0f} arith ops/s")
