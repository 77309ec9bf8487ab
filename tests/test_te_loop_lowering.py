"""te IR → convert-te-to-loop → convert-loop-to-scf, executed by xDSL's interpreter.

The lowered functions run on xDSL's interpreter (func, scf, arith, math, memref)
and are compared with numpy. xDSL's interpreter has no `arith.maxsi`/`minsi` and no
`memref.alloca`; the three small implementations below stand in for them.
"""

from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from xdsl.dialects import arith, memref
from xdsl.dialects.builtin import FunctionType, MemRefType, ModuleOp
from xdsl.interpreter import (
    Interpreter,
    InterpreterFunctions,
    PythonValues,
    impl,
    register_impls,
)
from xdsl.interpreters.arith import ArithFunctions
from xdsl.interpreters.builtin import xtype_for_el_type
from xdsl.interpreters.func import FuncFunctions
from xdsl.interpreters.math import MathFunctions
from xdsl.interpreters.memref import MemRefFunctions
from xdsl.interpreters.scf import ScfFunctions
from xdsl.interpreters.shaped_array import ShapedArray
from xdsl.interpreters.utils.ptr import TypedPtr
from xdsl.parser import Parser
from xdsl.utils.exceptions import PassFailedException

from ember import passes

PIPELINE = "convert-te-to-loop,convert-loop-to-scf"


@register_impls
class _Missing(InterpreterFunctions):
    """What xDSL's interpreter lacks and ember's lowering emits."""

    @impl(arith.MaxSIOp)
    def run_maxsi(
        self, interpreter: Interpreter, op: arith.MaxSIOp, args: PythonValues
    ):
        return (max(args),)

    @impl(arith.MinSIOp)
    def run_minsi(
        self, interpreter: Interpreter, op: arith.MinSIOp, args: PythonValues
    ):
        return (min(args),)

    @impl(memref.AllocaOp)
    def run_alloca(
        self, interpreter: Interpreter, op: memref.AllocaOp, args: PythonValues
    ):
        t = op.memref.type
        xtype = xtype_for_el_type(t.get_element_type(), interpreter.index_bitwidth)
        shape = list(t.get_shape())
        return (ShapedArray(TypedPtr.zeros(int(np.prod(shape)), xtype=xtype), shape),)


def lower(text: str, pipeline: str = PIPELINE) -> ModuleOp:
    ctx = passes.get_context()
    module = Parser(ctx, text).parse_module()
    passes.run(module, pipeline, ctx)
    module.verify()
    return module


def execute(module: ModuleOp, name: str, *inputs: np.ndarray) -> list[np.ndarray]:
    """Call `@name` with `inputs` as memrefs; return its out-parameters."""
    interpreter = Interpreter(module)
    for functions in (
        FuncFunctions(),
        ScfFunctions(),
        ArithFunctions(),
        MathFunctions(),
        MemRefFunctions(),
        _Missing(),
    ):
        interpreter.register_implementations(functions)
    fn = interpreter.get_op_for_symbol(name)
    signature = fn.function_type  # type: ignore[attr-defined]
    assert isinstance(signature, FunctionType)
    buffers: list[Any] = []
    for i, t in enumerate(signature.inputs.data):
        assert isinstance(t, MemRefType)
        xtype = xtype_for_el_type(t.element_type, interpreter.index_bitwidth)
        shape = list(t.get_shape())
        if i < len(inputs):
            data = inputs[i].reshape(-1).tolist()
            buffers.append(ShapedArray(TypedPtr.new(data, xtype=xtype), shape))
        else:
            size = int(np.prod(shape))
            buffers.append(ShapedArray(TypedPtr.zeros(size, xtype=xtype), shape))
    interpreter.call_op(name, tuple(buffers))
    return [np.array(b.data).reshape(b.shape) for b in buffers[len(inputs) :]]


def run(text: str, name: str, *inputs: np.ndarray) -> list[np.ndarray]:
    return execute(lower(text), name, *inputs)


rng = np.random.default_rng(0)


def test_vecadd():
    a, b = rng.standard_normal((2, 16), dtype=np.float32)
    (c,) = run(
        """
        func.func @vecadd(%A: tensor<16xf32>, %B: tensor<16xf32>) -> tensor<16xf32> {
          %C = te.compute "C" (%i) -> tensor<16xf32> {
            %x = te.read %A[%i] : tensor<16xf32>
            %y = te.read %B[%i] : tensor<16xf32>
            %s = arith.addf %x, %y : f32
            te.yield %s : f32
          }
          func.return %C : tensor<16xf32>
        }
        """,
        "vecadd",
        a,
        b,
    )
    np.testing.assert_allclose(c, a + b, rtol=1e-6)


def test_exp():
    a = rng.standard_normal((3, 5), dtype=np.float32)
    (e,) = run(
        """
        func.func @expo(%A: tensor<3x5xf32>) -> tensor<3x5xf32> {
          %E = te.compute "E" (%i, %j) -> tensor<3x5xf32> {
            %x = te.read %A[%i, %j] : tensor<3x5xf32>
            %e = math.exp %x : f32
            te.yield %e : f32
          }
          func.return %E : tensor<3x5xf32>
        }
        """,
        "expo",
        a,
    )
    np.testing.assert_allclose(e, np.exp(a), rtol=1e-6)


MATMUL = """
func.func @matmul(%A: tensor<{n}x{k}xf32>, %B: tensor<{k}x{m}xf32>) -> tensor<{n}x{m}xf32> {{
  %C = te.compute "C" (%i, %j) reduce sum (%r : {k}) -> tensor<{n}x{m}xf32> {{
    %a = te.read %A[%i, %r] : tensor<{n}x{k}xf32>
    %b = te.read %B[%r, %j] : tensor<{k}x{m}xf32>
    %p = arith.mulf %a, %b : f32
    te.yield %p : f32
  }}
  func.return %C : tensor<{n}x{m}xf32>
}}
"""


def test_matmul():
    a = rng.standard_normal((4, 8), dtype=np.float32)
    b = rng.standard_normal((8, 3), dtype=np.float32)
    (c,) = run(MATMUL.format(n=4, k=8, m=3), "matmul", a, b)
    np.testing.assert_allclose(c, a @ b, rtol=1e-5, atol=1e-5)


@settings(max_examples=15, deadline=None)
@given(
    n=st.integers(1, 4),
    k=st.integers(1, 5),
    m=st.integers(1, 4),
    seed=st.integers(0, 2**32 - 1),
)
def test_matmul_any_shape(n: int, k: int, m: int, seed: int):
    gen = np.random.default_rng(seed)
    a = gen.standard_normal((n, k), dtype=np.float32)
    b = gen.standard_normal((k, m), dtype=np.float32)
    (c,) = run(MATMUL.format(n=n, k=k, m=m), "matmul", a, b)
    np.testing.assert_allclose(c, a @ b, rtol=1e-5, atol=1e-5)


ROW_REDUCE = """
func.func @rows(%X: tensor<4x6x{t}>) -> tensor<4x{t}> {{
  %R = te.compute "R" (%i) reduce {combiner} (%k : 6) -> tensor<4x{t}> {{
    %x = te.read %X[%i, %k] : tensor<4x6x{t}>
    te.yield %x : {t}
  }}
  func.return %R : tensor<4x{t}>
}}
"""


@pytest.mark.parametrize(
    "combiner, reference", [("max", np.max), ("min", np.min), ("sum", np.sum)]
)
def test_row_reductions_f32(combiner: str, reference: Any):
    # all-negative rows for max and all-positive rows for min would expose a
    # wrong identity (0 instead of -inf / +inf)
    x = rng.standard_normal((4, 6), dtype=np.float32)
    x[0] = -np.abs(x[0]) - 1
    x[1] = np.abs(x[1]) + 1
    (r,) = run(ROW_REDUCE.format(t="f32", combiner=combiner), "rows", x)
    np.testing.assert_allclose(r, reference(x, axis=1), rtol=1e-5)


@pytest.mark.parametrize(
    "combiner, reference", [("max", np.max), ("min", np.min), ("sum", np.sum)]
)
def test_row_reductions_i32(combiner: str, reference: Any):
    x = rng.integers(-(2**31), 2**31 - 1, (4, 6), dtype=np.int32)
    (r,) = run(ROW_REDUCE.format(t="i32", combiner=combiner), "rows", x)
    # the sum wraps around in 32 bits, as numpy's int32 sum does
    np.testing.assert_array_equal(r, reference(x, axis=1).astype(np.int32))


def test_rowmax_keeps_nan():
    """maximumf propagates NaN, like numpy's max."""
    x = rng.standard_normal((4, 6), dtype=np.float32)
    x[2, 3] = np.nan
    (r,) = run(ROW_REDUCE.format(t="f32", combiner="max"), "rows", x)
    np.testing.assert_allclose(r, np.max(x, axis=1))
    assert np.isnan(r[2])


def test_chained_computes():
    """T = exp(A) lives in a loop.alloc'd buffer; U = T * T + B is the result."""
    a, b = rng.standard_normal((2, 8), dtype=np.float32)
    text = """
    func.func @chain(%A: tensor<8xf32>, %B: tensor<8xf32>) -> tensor<8xf32> {
      %T = te.compute "T" (%i) -> tensor<8xf32> {
        %x = te.read %A[%i] : tensor<8xf32>
        %e = math.exp %x : f32
        te.yield %e : f32
      }
      %U = te.compute "U" (%i) -> tensor<8xf32> {
        %t = te.read %T[%i] : tensor<8xf32>
        %b = te.read %B[%i] : tensor<8xf32>
        %s = arith.mulf %t, %t : f32
        %u = arith.addf %s, %b : f32
        te.yield %u : f32
      }
      func.return %U : tensor<8xf32>
    }
    """
    module = lower(text)
    names = [op.name for op in module.walk()]
    assert names.count("memref.alloc") == names.count("memref.dealloc") == 1
    (u,) = execute(module, "chain", a, b)
    np.testing.assert_allclose(u, np.exp(a) ** 2 + b, rtol=1e-5)


def test_int32_arithmetic_wraps():
    a = rng.integers(-(2**31), 2**31 - 1, (3, 4), dtype=np.int32)
    b = rng.integers(-(2**31), 2**31 - 1, (3, 4), dtype=np.int32)
    (c,) = run(
        """
        func.func @ints(%A: tensor<3x4xi32>, %B: tensor<3x4xi32>) -> tensor<3x4xi32> {
          %C = te.compute "C" (%i, %j) -> tensor<3x4xi32> {
            %a = te.read %A[%i, %j] : tensor<3x4xi32>
            %b = te.read %B[%i, %j] : tensor<3x4xi32>
            %p = arith.muli %a, %b : i32
            %s = arith.addi %p, %a : i32
            %d = arith.subi %s, %b : i32
            te.yield %d : i32
          }
          func.return %C : tensor<3x4xi32>
        }
        """,
        "ints",
        a,
        b,
    )
    with np.errstate(over="ignore"):
        np.testing.assert_array_equal(c, a * b + a - b)


def test_transposed_read_and_index_math():
    """Reads at computed indices: C[i, j] = A[j, 2 - i] + i."""
    a = rng.integers(-100, 100, (4, 3), dtype=np.int32)
    (c,) = run(
        """
        func.func @shuffle(%A: tensor<4x3xi32>) -> tensor<3x4xi32> {
          %two = arith.constant 2 : index
          %C = te.compute "C" (%i, %j) -> tensor<3x4xi32> {
            %r = arith.subi %two, %i : index
            %a = te.read %A[%j, %r] : tensor<4x3xi32>
            %ii = arith.index_cast %i : index to i32
            %s = arith.addi %a, %ii : i32
            te.yield %s : i32
          }
          func.return %C : tensor<3x4xi32>
        }
        """,
        "shuffle",
        a,
    )
    np.testing.assert_array_equal(c, a[:, ::-1].T + np.arange(3)[:, None])


def test_returned_input_and_repeated_result_are_copied():
    a = rng.standard_normal((2, 3), dtype=np.float32)
    c, a_out, c_again = run(
        """
        func.func @copies(%A: tensor<2x3xf32>) -> (tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>) {
          %C = te.compute "C" (%i, %j) -> tensor<2x3xf32> {
            %x = te.read %A[%i, %j] : tensor<2x3xf32>
            %y = arith.addf %x, %x : f32
            te.yield %y : f32
          }
          func.return %C, %A, %C : tensor<2x3xf32>, tensor<2x3xf32>, tensor<2x3xf32>
        }
        """,
        "copies",
        a,
    )
    np.testing.assert_allclose(c, 2 * a, rtol=1e-6)
    np.testing.assert_array_equal(a_out, a)
    np.testing.assert_array_equal(c_again, c)


def test_loop_kinds_and_local_buffers():
    """Unrolled, parallel and vectorized loops and a local buffer compute the same
    thing as serial loops: Y[i] = sum_j X[i, j] * W[j]."""
    x = rng.standard_normal((5, 3), dtype=np.float32)
    w = rng.standard_normal(3, dtype=np.float32)
    text = """
    func.func @kinds(%X: memref<5x3xf32>, %W: memref<3xf32>, %Y: memref<5xf32>) {
      %c0 = arith.constant 0 : index
      %c1 = arith.constant 1 : index
      %c3 = arith.constant 3 : index
      %c5 = arith.constant 5 : index
      %zero = arith.constant 0.0 : f32
      %acc = loop.alloc local : memref<f32>
      %tmp = loop.alloc : memref<3xf32>
      loop.for %i = %c0 to %c5 step %c1 parallel {
        memref.store %zero, %acc[] : memref<f32>
        loop.for %j = %c0 to %c3 step %c1 vectorized {
          %x = memref.load %X[%i, %j] : memref<5x3xf32>
          %w = memref.load %W[%j] : memref<3xf32>
          %p = arith.mulf %x, %w : f32
          memref.store %p, %tmp[%j] : memref<3xf32>
        }
        loop.for %j = %c0 to %c3 step %c1 unrolled {
          %p = memref.load %tmp[%j] : memref<3xf32>
          %a = memref.load %acc[] : memref<f32>
          %s = arith.addf %a, %p : f32
          memref.store %s, %acc[] : memref<f32>
        }
        %r = memref.load %acc[] : memref<f32>
        memref.store %r, %Y[%i] : memref<5xf32>
      }
      func.return
    }
    """
    module = lower(text, "convert-loop-to-scf")
    ops = [op.name for op in module.walk()]
    assert not any(name.startswith("loop.") for name in ops)
    assert ops.count("scf.for") == 2
    assert ops.count("memref.alloca") == ops.count("memref.dealloc") == 1
    (y,) = execute(module, "kinds", x, w)
    np.testing.assert_allclose(y, x @ w, rtol=1e-5)


def test_signature_and_no_te_left():
    module = lower(MATMUL.format(n=2, k=3, m=4))
    assert not any(op.dialect_name() in ("te", "loop") for op in module.walk())
    (fn,) = module.ops
    assert str(fn.function_type) == (  # type: ignore[attr-defined]
        "(memref<2x3xf32>, memref<3x4xf32>, memref<2x4xf32>) -> ()"
    )
    names = [d.data["ember.name"].data for d in fn.arg_attrs.data]  # type: ignore[attr-defined]
    assert names == ["A", "B", "C"]
    outputs = ["ember.output" in d.data for d in fn.arg_attrs.data]  # type: ignore[attr-defined]
    assert outputs == [False, False, True]


def test_untranslatable_tensor_fails():
    text = """
    func.func @bad() -> tensor<4xf32> {
      %E = tensor.empty() : tensor<4xf32>
      func.return %E : tensor<4xf32>
    }
    """
    with pytest.raises(PassFailedException, match="'tensor.empty'"):
        lower(text)


def test_python_te_api_program():
    """te IR built by `ember.te` (a shifted reduce_axis, two stages) lowers and runs."""
    from ember import te
    from ember.te.lowering import lower as lower_te

    X = te.placeholder((4, 6), name="X")
    k = te.reduce_axis((2, 6), name="k")
    S = te.compute((4,), lambda i: te.sum(X[i, k], axis=k), name="S")
    T = te.compute((4,), lambda i: S[i] * 2.0, name="T")
    module = lower_te(te.create_schedule(T.op), [X, T], name="stages")
    passes.run(module, PIPELINE)
    module.verify()
    x = rng.standard_normal((4, 6), dtype=np.float32)
    (t,) = execute(module, "stages", x)
    np.testing.assert_allclose(t, 2 * x[:, 2:].sum(axis=1), rtol=1e-5)


@pytest.mark.parametrize(
    "name, hint",
    [
        ("C", "C"),
        ("x y", "x_y"),
        ('a"b', "a_b"),
        ("back\\slash", "back_slash"),
        ("  padded  ", "padded"),
        ("2nd", "nd"),
        ("_x.1$", "_x.1$"),
        ("é", None),
        ("aé", "a"),
        ("", None),
        ("42", None),
    ],
)
def test_ssa_name(name: str, hint: str | None):
    from ember.passes.names import ssa_name

    assert ssa_name(name) == hint


@pytest.mark.parametrize(
    "name, printed, hint", [("x y", '"x y"', "%x_y"), ("é", '"\\C3\\A9"', "%0")]
)
def test_any_compute_name(name: str, printed: str, hint: str):
    """A compute's name becomes the out-parameter's `ember.name` as it is, and its
    SSA name only where it is a valid one."""
    text = f"""
    func.func @f(%A: tensor<4xf32>) -> tensor<4xf32> {{
      %R = te.compute "{name}" (%i) -> tensor<4xf32> {{
        %x = te.read %A[%i] : tensor<4xf32>
        te.yield %x : f32
      }}
      func.return %R : tensor<4xf32>
    }}
    """
    module = lower(text)
    assert f"{hint}: memref<4xf32> {{ember.name = {printed}" in str(module)
    a = rng.standard_normal(4, dtype=np.float32)
    (r,) = execute(module, "f", a)
    np.testing.assert_array_equal(r, a)
