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
    mod = ember.lower(te.create_schedule(C.op), [A, B, C], name="mm", emit="te")
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
    mod = ember.lower(te.create_schedule(E.op), [X, E], name="f", emit="te")
    names = [
        op.tensor_name.data for op in mod.walk() if isinstance(op, te_ir.ComputeOp)
    ]
    assert names == ["M", "E"]


def test_reduce_axis_with_offset_shifts_reads():
    A = te.placeholder((10,), name="A")
    r = te.reduce_axis((2, 6), name="r")
    S = te.compute((1,), lambda i: te.sum(A[r], axis=r), name="S")
    mod = ember.lower(te.create_schedule(S.op), [A, S], name="f", emit="te")
    (compute,) = [op for op in mod.walk() if isinstance(op, te_ir.ComputeOp)]
    assert compute.extents == (4,)
    assert "arith.addi" in str(mod)


def test_index_in_float_arithmetic_is_cast():
    A = te.placeholder((4,), name="A")
    B = te.compute((4,), lambda i: A[i] + i, name="B")
    text = str(ember.lower(te.create_schedule(B.op), [A, B], emit="te"))
    assert "arith.index_cast" in text and "arith.sitofp" in text


@pytest.mark.parametrize(
    "dtype", ["float16", "float32", "float64", "int8", "int32", "int64"]
)
def test_dtypes_lower(dtype):
    A = te.placeholder((4,), dtype=dtype, name="A")
    B = te.compute((4,), lambda i: A[i] * 2 + A[i], name="B")
    mod = ember.lower(te.create_schedule(B.op), [A, B], emit="te")
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
        ember.lower(te.create_schedule(B.op), [A, B], name=name, emit="te")


def test_tensor_names_need_not_be_identifiers():
    A = te.placeholder((4,), name="input image")
    B = te.compute((4,), lambda i: A[i] + 1.0, name="é")
    ember.lower(te.create_schedule(B.op), [A, B], name="f", emit="te").verify()


def test_build_argument_order_is_checked():
    A = te.placeholder((4,), name="A")
    B = te.compute((4,), lambda i: A[i] + 1.0, name="B")
    s = te.create_schedule(B.op)
    with pytest.raises(ValueError, match="inputs \\(placeholders\\) first"):
        ember.lower(s, [B, A], emit="te")
    other = te.placeholder((4,), name="O")
    C = te.compute((4,), lambda i: A[i] + other[i], name="C")
    with pytest.raises(ValueError, match="'O' is used but not among the arguments"):
        ember.lower(te.create_schedule(C.op), [A, C], emit="te")


def lowered(outputs, args):
    return str(
        ember.lower(
            te.create_schedule([t.op for t in outputs]), args, name="f", emit="te"
        )
    )


def test_comparisons_are_bool_expressions_with_numpy_predicates():
    A = te.placeholder((4,), name="A")
    N = te.placeholder((4,), dtype="int32", name="N")
    F = te.placeholder((4,), dtype="bool", name="F")
    for e in (A[0] < 1.0, 1.0 <= A[0], A[0] > A[1], A[0] >= 0, te.equal(A[0], 2)):
        assert isinstance(e, te.Compare) and e.dtype == "bool"
    C = te.compute(
        (4,),
        lambda i: te.all(
            A[i] < 1.0,
            te.not_equal(A[i], 0.0),
            N[i] >= 2,
            te.equal(N[i], 3),
            F[i] > F[0],
            i < 3,
        ),
        name="C",
    )
    text = lowered([C], [A, N, F, C])
    for predicate in ("cmpf olt", "cmpf une", "cmpi sge", "cmpi eq", "cmpi ugt"):
        assert f"arith.{predicate}" in text, predicate
    assert "arith.cmpi slt" in text and ": index" in text
    assert text.count("arith.andi") == 5
    assert "-> tensor<4xi1>" in text


def test_eq_builds_an_expression_and_keeps_identity_semantics_for_python():
    i, j = te.Var("i", 0, 4), te.Var("j", 0, 4)
    assert isinstance(i == j, te.Compare) and (i == j).dtype == "bool"
    assert isinstance(i != 2, te.Compare)
    # Python's own questions are answered by identity, as TVM does.
    assert i in [j, i] and j not in [i]
    assert [i, j].index(j) == 1
    assert bool(i == i) and not bool(i == j) and bool(i != j)
    assert {i: 1, j: 2}[j] == 2
    assert (i == "i") is False and (i == None) is False  # noqa: E711
    A = te.placeholder((4,), name="A")
    with pytest.raises(TypeError, match="no truth value"):
        te.compute((4,), lambda i: 1.0 if A[i] == 0 else 2.0)
    with pytest.raises(TypeError, match="te.all"):
        te.compute((4,), lambda i: A[i] if 0 <= i < 3 else 0.0)


def test_logic_operators_and_their_errors():
    F = te.placeholder((4,), dtype="bool", name="F")
    N = te.placeholder((4,), dtype="int8", name="N")
    A = te.placeholder((4,), name="A")
    C = te.compute((4,), lambda i: (F[i] & ~F[0]) | (F[i] ^ True), name="C")
    D = te.compute((4,), lambda i: (N[i] & 6) | ~N[i], name="D")
    text = lowered([C, D], [F, N, A, C, D])
    assert "arith.andi" in text and "arith.ori" in text and "arith.xori" in text
    with pytest.raises(TypeError, match="'&' needs bool or integer operands"):
        te.compute((4,), lambda i: A[i] & A[i])
    with pytest.raises(TypeError, match="'~' needs a bool or integer operand"):
        te.compute((4,), lambda i: ~A[i])
    with pytest.raises(TypeError, match="expected a bool condition, got float32"):
        te.all(A[0] > 0, A[1])
    with pytest.raises(ValueError, match="at least one condition"):
        te.any()
    with pytest.raises(TypeError, match="te.logical_not: expected a bool condition"):
        te.logical_not(N[0])
    assert te.logical_not(F[0]).dtype == "bool"
    assert te.all(True, F[0]).dtype == "bool"


def test_if_then_else_branches_only_where_a_side_reads():
    A = te.placeholder((8,), name="A")
    pad = te.compute(
        (10,),
        lambda i: te.if_then_else(te.all(i >= 1, i < 9), A[i - 1], 0.0),
        name="P",
    )
    text = lowered([pad], [A, pad])
    assert "scf.if" in text and "arith.select" not in text
    # the read and its index arithmetic sit inside the branch
    branch = text[text.index("scf.if") :]
    assert "arith.subi" in branch and "te.read" in branch
    # no reads: a select, even for if_then_else
    R = te.compute((8,), lambda i: te.if_then_else(i < 4, 1.0, -1.0), name="R")
    assert "scf.if" not in lowered([R], [R]) and "arith.select" in lowered([R], [R])
    # te.select evaluates both sides: never a branch
    S = te.compute((8,), lambda i: te.select(A[i] > 0, A[i], A[7 - i]), name="S")
    text = lowered([S], [A, S])
    assert "scf.if" not in text and "arith.select" in text

    # a side already read before the condition (the same expression) needs no
    # branch
    def relu_squared(i):
        a = A[i]
        return a * te.if_then_else(a > 0, a, 0.0)

    T = te.compute((8,), relu_squared, name="T")
    assert "scf.if" not in lowered([T], [A, T])


def test_values_emitted_in_a_branch_stay_in_it():
    A = te.placeholder((8,), name="A")
    twice = A[0] * 2.0  # used inside the branch and after it
    C = te.compute(
        (8,), lambda i: te.if_then_else(i > 2, twice, A[i]) + twice, name="C"
    )
    mod = ember.lower(te.create_schedule(C.op), [A, C], name="f", emit="te")
    mod.verify()
    assert str(mod).count("arith.mulf") == 2


def test_select_types_and_errors():
    A = te.placeholder((4,), name="A")
    N = te.placeholder((4,), dtype="int32", name="N")
    assert te.if_then_else(A[0] > 0, A[0], 1).dtype == "float32"
    assert te.select(N[0] > 0, 1, N[0]).dtype == "int32"
    assert te.select(True, 1.0, 2.0).dtype == "float32"
    idx = te.compute((4,), lambda i: te.select(i < 2, i, 3 - i), name="I")
    assert idx.dtype == "int32"  # an index result is cast like any index body
    with pytest.raises(TypeError, match="te.if_then_else of float32 and int32"):
        te.if_then_else(A[0] > 0, A[0], N[0])
    with pytest.raises(TypeError, match="te.select: expected a bool condition"):
        te.select(A[0], 1.0, 2.0)


def test_comm_reducer_lowers_to_a_combine_region():
    A = te.placeholder((4, 6), dtype="int32", name="A")
    k = te.reduce_axis((1, 5), name="k")
    prod = te.comm_reducer(lambda x, y: x * y, lambda t: te.const(1, t), name="prod")
    P = te.compute((4,), lambda i: prod(A[i, k], axis=k), name="P")
    text = lowered([P], [A, P])
    assert "reduce prod (%k : 4)" in text
    assert "combine (%acc, %x) identity 1 : i32 {" in text
    (compute,) = [
        op
        for op in ember.lower(te.create_schedule(P.op), [A, P], emit="te").walk()
        if isinstance(op, te_ir.ComputeOp)
    ]
    assert compute.combine_block is not None
    assert [o.name for o in compute.combine_block.ops] == ["arith.muli", "te.yield"]


def test_comm_reducer_errors():
    A = te.placeholder((4, 4), name="A")
    k = te.reduce_axis((0, 4), name="k")
    one = lambda t: te.const(1, t)  # noqa: E731
    with pytest.raises(ValueError, match="'sum' is the name of te.sum"):
        te.comm_reducer(lambda x, y: x + y, one, name="sum")
    with pytest.raises(ValueError, match="expected a name of letters"):
        te.comm_reducer(lambda x, y: x + y, one, name="my prod")
    with pytest.raises(TypeError, match="expected fcombine and fidentity"):
        te.comm_reducer(lambda x, y: x + y, 1.0)
    reads = te.comm_reducer(lambda x, y: x + y * A[0, 0], one, name="r")
    with pytest.raises(ValueError, match="a read of tensor 'A'"):
        reads(A[0, k], axis=k)
    to_int = te.comm_reducer(lambda x, y: (x * y).astype("int32"), one, name="r")
    with pytest.raises(TypeError, match="return float32, got int32"):
        to_int(A[0, k], axis=k)
    bad_identity = te.comm_reducer(lambda x, y: x * y, lambda t: te.const(1, "int32"))
    with pytest.raises(TypeError, match="a float32 constant, got a int32 const"):
        bad_identity(A[0, k], axis=k)
    not_constant = te.comm_reducer(lambda x, y: x * y, lambda t: A[0, 0])
    with pytest.raises(TypeError, match="a float32 constant, got a float32 read"):
        not_constant(A[0, k], axis=k)
    prod = te.comm_reducer(lambda x, y: x * y, one, name="prod")
    with pytest.raises(ValueError, match="axis must be reduce_axis"):
        prod(A[0, 0], axis=[])
    with pytest.raises(ValueError, match="whole body of a compute"):
        te.compute((4,), lambda i: prod(A[i, k], axis=k) + 1.0)
    leaked = []
    keep = te.comm_reducer(lambda x, y: leaked.append(x) or x * y, one, name="keep")
    keep(A[0, k], axis=k)
    with pytest.raises(ValueError, match="used outside its combiner"):
        te.compute((4,), lambda i: leaked[0] + A[i, i])
    with pytest.raises(TypeError, match="te.const: expected a number"):
        te.const("1")
    with pytest.raises(TypeError, match="does not fit int8"):
        te.const(300, "int8")
