"""Tensor expressions in Python, TVM's TE: `placeholder`, `compute`, `reduce_axis`.

    A = te.placeholder((n,), name="A")
    B = te.compute((n,), lambda i: A[i] * 2.0, name="B")
    P = te.compute((n + 2,), lambda i: te.if_then_else(
        te.all(i >= 1, i < n + 1), A[i - 1], 0.0), name="P")
    s = te.create_schedule(B.op)

Expressions are small Python trees (`expr.py`, with the typing rules of their
operators); `operation.py` holds the tensors, their operations and the
functions on expressions, `extern.py` the external calls (`te.extern`,
`te.call_packed`), `schedule.py` the schedules, and `lowering.py` turns them
into te IR (`te.compute` ops in a `func.func`), the first text stage of every
compilation (`ember.lower`).
"""

from typing import Any

from ember.te.expr import (
    DTYPES,
    FLOAT_DTYPES,
    INT_DTYPES,
    SIGNED_DTYPES,
    UNSIGNED_DTYPES,
    Binary,
    Call,
    Cast,
    Compare,
    Const,
    Expr,
    ExprLike,
    Param,
    Read,
    Reduce,
    Select,
    Size,
    Var,
    walk,
)
from ember.te.extern import ExternBuffer, ExternOp, PackedCall, call_packed, extern
from ember.te.operation import (
    BUILTIN_COMBINERS,
    CommReducer,
    ComputeOp,
    Operation,
    PlaceholderOp,
    Tensor,
    abs,
    acos,
    acosh,
    all,
    any,
    asin,
    asinh,
    atan,
    atanh,
    ceil,
    comm_reducer,
    compute,
    const,
    cos,
    cosh,
    create_schedule,
    dot_u8i8,
    equal,
    exp,
    floor,
    if_then_else,
    log,
    logical_not,
    max,
    min,
    not_equal,
    placeholder,
    reduce_axis,
    reinterpret,
    roundeven,
    select,
    sin,
    sinh,
    sqrt,
    sum,
    tan,
    tanh,
    thread_axis,
    var,
)

__all__ = [  # the API, the expression nodes included
    "placeholder",
    "var",
    "Size",
    "compute",
    "reduce_axis",
    "Tensor",
    "Operation",
    "PlaceholderOp",
    "ComputeOp",
    "sum",
    "max",
    "min",
    "comm_reducer",
    "CommReducer",
    "BUILTIN_COMBINERS",
    "const",
    "equal",
    "not_equal",
    "all",
    "any",
    "logical_not",
    "if_then_else",
    "select",
    "exp",
    "log",
    "sqrt",
    "tanh",
    "abs",
    "sin",
    "cos",
    "tan",
    "asin",
    "acos",
    "atan",
    "sinh",
    "cosh",
    "asinh",
    "acosh",
    "atanh",
    "floor",
    "ceil",
    "roundeven",
    "reinterpret",
    "dot_u8i8",
    "extern",
    "call_packed",
    "ExternOp",
    "ExternBuffer",
    "PackedCall",
    "create_schedule",
    "thread_axis",
    "DTYPES",
    "FLOAT_DTYPES",
    "INT_DTYPES",
    "SIGNED_DTYPES",
    "UNSIGNED_DTYPES",
    "Binary",
    "Call",
    "Cast",
    "Compare",
    "Const",
    "Expr",
    "ExprLike",
    "Param",
    "Read",
    "Reduce",
    "Select",
    "Var",
    "walk",
]


def __getattr__(name: str) -> Any:
    if name == "Schedule":  # te.Schedule, imported on first use
        from ember.te.schedule import Schedule

        return Schedule
    raise AttributeError(f"module 'ember.te' has no attribute '{name}'")
