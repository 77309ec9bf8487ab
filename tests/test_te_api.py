"""The Python TE API and its lowering to te IR (no code generation here)."""

import pytest

import ember
from ember import te
from ember.dialects import te as te_ir


def matmul_stage(n=8, m=3, k=4):
    A = te.placeholder((n, k), name="A")
    B = te.placeholder((k, m), name="B")
    r = te.reduce_axis((0, k), name="r")
    C = te.compute((n, m), lambda i, j: te.sum(A[i, r] * B[r, j], axis=r), name="C")
    return A, B, C


def test_lower_matmul_is_one_reduction_compute():
    A, B, C = matmul_stage()
    mod = ember.lower(te.create_schedule(C.op), [A, B, C], name="mm")
    text = str(mod)
    assert 'func.func @mm(%A: tensor<8x4xf32> {ember.name = "A"}' in text
    (compute,) = [op for op in mod.walk() if isinstance(op, te_ir.ComputeOp)]
    assert compute.reduce is not None and compute.reduce.data == "sum"
    assert compute.extents == (4,)
    assert len(compute.body.block.args) == 3
    mod.verify()


def test_intermediate_stages_are_emitted_in_dependency_order():
    X = te.placeholder((4, 5), name="X")
    r = te.reduce_axis((0, 5), name="r")
    M = te.compute((4,), lambda i: te.max(X[i, r], axis=r), name="M")
    E = te.compute((4, 5), lambda i, j: te.exp(X[i, j] - M[i]), name="E")
    mod = ember.lower(te.create_schedule(E.op), [X, E], name="f")
    names = [
        op.tensor_name.data for op in mod.walk() if isinstance(op, te_ir.ComputeOp)
    ]
    assert names == ["M", "E"]


def test_reduce_axis_with_offset_shifts_reads():
    A = te.placeholder((10,), name="A")
    r = te.reduce_axis((2, 6), name="r")
    S = te.compute((1,), lambda i: te.sum(A[r], axis=r), name="S")
    mod = ember.lower(te.create_schedule(S.op), [A, S], name="f")
    (compute,) = [op for op in mod.walk() if isinstance(op, te_ir.ComputeOp)]
    assert compute.extents == (4,)
    assert "arith.addi" in str(mod)


def test_index_in_float_arithmetic_is_cast():
    A = te.placeholder((4,), name="A")
    B = te.compute((4,), lambda i: A[i] + i, name="B")
    text = str(ember.lower(te.create_schedule(B.op), [A, B]))
    assert "arith.index_cast" in text and "arith.sitofp" in text


@pytest.mark.parametrize(
    "dtype", ["float16", "float32", "float64", "int8", "int32", "int64"]
)
def test_dtypes_lower(dtype):
    A = te.placeholder((4,), dtype=dtype, name="A")
    B = te.compute((4,), lambda i: A[i] * 2 + A[i], name="B")
    mod = ember.lower(te.create_schedule(B.op), [A, B])
    mod.verify()


def test_errors_are_clear():
    A = te.placeholder((4, 4), name="A")
    with pytest.raises(IndexError, match="has 2 dimensions, got 1"):
        te.compute((4,), lambda i: A[i], name="B")
    r = te.reduce_axis((0, 4), name="r")
    with pytest.raises(ValueError, match="whole body of a compute"):
        te.compute((4,), lambda i: te.sum(A[i, r], axis=r) + 1.0, name="B")
    with pytest.raises(ValueError, match="reduce_axis"):
        te.sum(A[0, 0], axis=[])
    with pytest.raises(ValueError, match="positive int extents"):
        te.placeholder((0, 3), name="Z")
    with pytest.raises(ValueError, match="unsupported dtype"):
        te.placeholder((3,), dtype="complex64")
    ints = te.placeholder((4,), dtype="int32", name="I")
    with pytest.raises(TypeError, match="astype"):
        te.compute((4,), lambda i: ints[i] + A[i, i], name="B")
    with pytest.raises(TypeError, match="does not fit int32"):
        te.compute((4,), lambda i: ints[i] + 2**40, name="B")
    with pytest.raises(TypeError, match="need integer operands"):
        te.compute((4,), lambda i: A[i, i] // 2.0, name="B")
    flags = te.placeholder((4,), dtype="bool", name="F")
    with pytest.raises(TypeError, match="of bool values"):
        te.compute((4,), lambda i: flags[i] + flags[i], name="B")
    with pytest.raises(TypeError, match="truth value"):
        te.compute((4,), lambda i: A[i, i] if A[i, i] else 0.0)


@pytest.mark.parametrize("name", ["x y", "", "1st", None, 'a"b'])
def test_function_names_are_checked(name):
    A = te.placeholder((4,), name="A")
    B = te.compute((4,), lambda i: A[i] + 1.0, name="B")
    with pytest.raises(ValueError, match="expected a function name"):
        ember.lower(te.create_schedule(B.op), [A, B], name=name)


def test_tensor_names_need_not_be_identifiers():
    A = te.placeholder((4,), name="input image")
    B = te.compute((4,), lambda i: A[i] + 1.0, name="é")
    ember.lower(te.create_schedule(B.op), [A, B], name="f").verify()


def test_build_argument_order_is_checked():
    A = te.placeholder((4,), name="A")
    B = te.compute((4,), lambda i: A[i] + 1.0, name="B")
    s = te.create_schedule(B.op)
    with pytest.raises(ValueError, match="inputs \\(placeholders\\) first"):
        ember.lower(s, [B, A])
    other = te.placeholder((4,), name="O")
    C = te.compute((4,), lambda i: A[i] + other[i], name="C")
    with pytest.raises(ValueError, match="'O' is used but not among the arguments"):
        ember.lower(te.create_schedule(C.op), [A, C])
