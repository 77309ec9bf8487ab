"""Extern stages of the TE language: `te.extern` and `te.call_packed`.

    B = te.extern((n,), [A], lambda ins, outs: te.call_packed(
        "my.sort", ins[0], outs[0]), name="B")

A tensor computed by host functions that compiled code calls by name (TVM's
`te.extern` with a `call_packed` body). `ember.te` re-exports these names; import
them from there.
"""

from __future__ import annotations

import builtins
import numbers
from collections.abc import Callable, Sequence

from ember.runtime.errors import EmberTypeError, EmberValueError
from ember.runtime.shape_expr import SymExpr
from ember.te import expr as _x
from ember.te.expr import FLOAT_DTYPES, Const, ExprLike
from ember.te.operation import Operation, Tensor, _shape


def _static(dims: tuple, what: str) -> tuple[int, ...]:
    """`dims`, which must be ints: an extern's buffers are the host
    function's, of fixed sizes."""
    if any(isinstance(d, SymExpr) for d in dims):
        raise EmberValueError(
            f"{what}: symbolic shapes ({', '.join(map(str, dims))}) are not "
            "supported by te.extern yet; give fixed sizes"
        )
    return dims


class ExternBuffer:
    """The memory of an input or the output of a `te.extern` stage, as its
    `fcompute` sees it (TVM's `tir.Buffer`): pass it to `te.call_packed`."""

    def __init__(self, name: str, shape: tuple[int, ...], dtype: str, role: str):
        self.name, self.shape, self.dtype, self.role = name, shape, dtype, role

    def __repr__(self) -> str:
        return f"ExternBuffer({self.role} {self.name}, {self.shape}, {self.dtype})"


PackedArg = ExternBuffer | int | float | str
"""An argument of `te.call_packed`: a buffer, or an int, float or str constant."""


class PackedCall:
    """A call of the function registered as `name`, made by `te.call_packed`."""

    def __init__(self, name: str, args: Sequence[PackedArg]):
        self.name, self.args = name, list(args)

    def __repr__(self) -> str:
        return f"call_packed({self.name!r}, {', '.join(map(repr, self.args))})"


def call_packed(name: str, *args: ExternBuffer | Tensor | ExprLike | str) -> PackedCall:
    """Call the function registered as `name` (`ember.runtime.register_func`)
    from compiled code, in the `fcompute` of a `te.extern`.

    Args:
        name: the registered name.
        *args: the extern's buffers (`ins[k]`, `outs[0]`, or an input tensor),
            which the function gets as NDArrays over the kernel's memory, and
            int (int64), float (float64), bool (int) or str constants.

    Returns:
        The call, for `fcompute` to return (alone or in a list).

    Example:
        >>> B = te.extern((n,), [A], lambda ins, outs: te.call_packed(
        ...     "my.sort", ins[0], outs[0]), name="B")
    """
    if not isinstance(name, str) or not name:
        raise EmberValueError(f"te.call_packed: expected a function name, got {name!r}")
    packed: list[ExternBuffer | Tensor | int | float | str] = []
    for k, a in enumerate(args):
        if isinstance(a, ExternBuffer | Tensor | str):
            packed.append(a)
        elif isinstance(a, Const) and a.dtype != "index":
            packed.append(a.value if a.dtype not in FLOAT_DTYPES else float(a.value))
        elif isinstance(a, numbers.Integral):
            if not -(2**63) <= int(a) < 2**63:
                raise EmberValueError(
                    f"te.call_packed '{name}': argument {k}: {a} does not fit in int64"
                )
            packed.append(int(a))
        elif isinstance(a, numbers.Real):
            packed.append(float(a))
        else:
            raise EmberTypeError(
                f"te.call_packed '{name}': argument {k}: expected a buffer of the "
                f"extern, an int, float or str constant, got {a!r}"
            )
    return PackedCall(name, packed)  # type: ignore[arg-type]


class ExternOp(Operation):
    """A stage computed by host functions (`te.extern`): opaque to schedules."""

    def __init__(
        self,
        name: str,
        inputs: list[Tensor],
        input_buffers: list[ExternBuffer],
        output_buffer: ExternBuffer,
        calls: list[PackedCall],
    ):
        self.name, self.inputs, self.calls = name, inputs, calls
        self.input_buffers, self.output_buffer = input_buffers, output_buffer

    @property
    def input_tensors(self) -> list[Tensor]:
        found: dict[int, Tensor] = {}
        for t in self.inputs:
            found.setdefault(id(t), t)
        return list(found.values())


def extern(
    shape: int | Sequence[int] | Sequence[Sequence[int]],
    inputs: Sequence[Tensor],
    fcompute: Callable[[list[ExternBuffer], list[ExternBuffer]], object],
    name: str = "extern",
    dtype: str | Sequence[str] | None = None,
) -> Tensor:
    """A tensor computed by host code: `fcompute(ins, outs)` returns the
    `te.call_packed` calls (one or a list, run in order) that fill it.

    Args:
        shape: the result's static extents (TVM's list of shapes with one entry
            is accepted; several outputs are not supported yet).
        inputs: the tensors the calls read, whole.
        fcompute: takes the input buffers and the output buffers (one).
        name: the tensor's name.
        dtype: the result's element type; by default the first input's, else
            float32.

    Returns:
        The tensor; other stages read it like any other. Its stage is opaque to
        the schedule: it runs whole, at the root, and cannot be inlined.

    Example:
        >>> B = te.extern((n,), [A], lambda ins, outs: te.call_packed(
        ...     "my.sort", ins[0], outs[0]), name="B")
    """
    what = f"te.extern '{name}'"
    if (
        not isinstance(shape, int | SymExpr)
        and shape
        and not isinstance(shape[0], int | SymExpr)
    ):
        shapes = list(shape)
        if len(shapes) != 1:
            raise EmberValueError(
                f"{what}: several outputs are not supported yet; got {len(shapes)} "
                "shapes, expected one"
            )
        shape = shapes[0]  # type: ignore[assignment]
    dims = _static(_shape(shape, what), what)  # type: ignore[arg-type]
    if not isinstance(dtype, str | None):
        dtypes = list(dtype)
        if len(dtypes) != 1:
            raise EmberValueError(
                f"{what}: several outputs are not supported yet; got {len(dtypes)} "
                "dtypes, expected one"
            )
        dtype = dtypes[0]
    inputs = list(inputs)
    for t in inputs:
        if not isinstance(t, Tensor):
            raise EmberTypeError(f"{what}: expected te tensors as inputs, got {t!r}")
    dtype = _x.check_dtype(dtype or (inputs[0].dtype if inputs else "float32"))
    ins = [ExternBuffer(t.name, t.shape, t.dtype, "input") for t in inputs]
    out = ExternBuffer(name, dims, dtype, "output")
    body = fcompute(ins, [out])
    calls = [body] if isinstance(body, PackedCall) else body
    if not isinstance(calls, list | tuple) or not builtins.all(
        isinstance(c, PackedCall) for c in calls
    ):
        raise EmberTypeError(
            f"{what}: expected fcompute to return te.call_packed(...) or a list of "
            f"them, got {body!r}"
        )
    if not calls:
        raise EmberValueError(
            f"{what}: fcompute returned no calls; the output is unset"
        )
    for call in calls:
        for k, a in enumerate(call.args):
            if isinstance(a, Tensor):
                at = next((i for i, t in enumerate(inputs) if t is a), None)
                if at is None:
                    raise EmberValueError(
                        f"{what}: te.call_packed '{call.name}' argument {k}: tensor "
                        f"'{a.name}' is not among the extern's inputs"
                    )
                call.args[k] = ins[at]
            elif isinstance(a, ExternBuffer) and not builtins.any(
                a is b for b in (*ins, out)
            ):
                raise EmberValueError(
                    f"{what}: te.call_packed '{call.name}' argument {k}: buffer "
                    f"'{a.name}' belongs to another extern"
                )
    return Tensor(dims, dtype, ExternOp(name, inputs, ins, out, list(calls)))
