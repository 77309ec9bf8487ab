"""The strategy registry: which topi builder computes each graph op class.

Three kinds of registration, each naming the dtypes its kernel computes
(`dtypes=`: anchors float32, scalar forms float32 and float16, tensor forms
every dtype by default); a group holding an op on another dtype is refused
naming the op and the dtype:

- `anchor_strategy(OpClass, data=..., weights=...)`: an op that takes an
  elementwise epilogue (conv2d, dense, matmul, pooling, softmax, reductions).
  The builder gets the op, its data placeholders, the epilogue, the tensors
  the epilogue reads and the target, and returns a `topi.Kernel`.
- `scalar_strategy(OpClass)`: an elementwise op's scalar form, `form(op, args)`
  on te expressions (or numbers): it can join an anchor's epilogue or an
  injective group. Float16 scalar forms compute in float32, and a kernel
  rounds to float16 where it writes its result, as onnxruntime's CPU kernels
  compute float16 chains in float32.
- `injective_strategy(OpClass)`: an injective op's tensor form, `form(op,
  args, name)` on te tensors (reshape, transpose, concat, pad, batch_norm).

    @scalar_strategy(graph.SoftsignOp)
    def _softsign(op, args):
        return args[0] / (1.0 + te.abs(args[0]))
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from xdsl.ir import Operation

from ember import te
from ember.runtime.errors import EmberValueError

if TYPE_CHECKING:
    from ember.topi.kernel import Kernel

Value = te.Expr | float
AnchorBuilder = Callable[..., "Kernel"]
"""`build(op, data, epilogue, epilogue_inputs, target) -> Kernel`."""
ScalarForm = Callable[[Any, list[Value]], te.Expr]
TensorForm = Callable[[Any, list[Any], str], te.Tensor]

FLOATS = ("float32", "float16")
"""The dtypes a scalar form computes unless it says otherwise."""
INTEGERS = (*te.INT_DTYPES,)
NUMBERS = (*FLOATS, *INTEGERS)
ALL_DTYPES = (*NUMBERS, "float64", "bool")


class StrategyError(EmberValueError):
    """A graph op or group no strategy can lower; the message names the op."""


@dataclass(frozen=True)
class AnchorStrategy:
    """How an anchor op becomes a kernel: its builder, which operands are data
    placeholders and which are weights the builder makes placeholders for."""

    build: AnchorBuilder
    data: tuple[int, ...]
    weights: tuple[int, ...]
    packable: tuple[int, ...] = ()
    """Data operands the builder may pack as weights when they are params or
    literals: it receives None for them and makes their placeholder itself."""
    blocks: Callable[[Any, Any], Any] | None = None
    """`blocks(op, target) -> topi.conv2d.Blocks`: the channel blocks in which
    the builder can read its data (operand 0) and write its result, as
    (N, C/b, H, W, b) activations between kernels that take them; the
    builder then gets `layout=Blocks(...)` saying which it does."""


ANCHORS: dict[type[Operation], AnchorStrategy] = {}
SCALARS: dict[type[Operation], ScalarForm] = {}
TENSORS: dict[type[Operation], TensorForm] = {}
DTYPES: dict[type[Operation], tuple[str, ...]] = {}


def anchor_strategy(
    *ops: type[Operation],
    data: tuple[int, ...] = (0,),
    weights: tuple[int, ...] = (),
    dtypes: tuple[str, ...] = ("float32",),
    packable: tuple[int, ...] = (),
    blocks: Callable[[Any, Any], Any] | None = None,
) -> Callable[[AnchorBuilder], AnchorBuilder]:
    """Register the decorated builder as the strategy of `ops` (anchor ops)
    on tensors of `dtypes`."""

    def register(build: AnchorBuilder) -> AnchorBuilder:
        for op in ops:
            ANCHORS[op] = AnchorStrategy(build, data, weights, packable, blocks)
            DTYPES[op] = dtypes
        return build

    return register


def scalar_strategy(
    *ops: type[Operation], dtypes: tuple[str, ...] = FLOATS
) -> Callable[[ScalarForm], ScalarForm]:
    """Register the decorated scalar form for elementwise `ops` on `dtypes`
    (float16 ones computed in float32)."""

    def register(form: ScalarForm) -> ScalarForm:
        for op in ops:
            SCALARS[op] = form
            DTYPES[op] = dtypes
        return form

    return register


def injective_strategy(
    *ops: type[Operation], dtypes: tuple[str, ...] = ALL_DTYPES
) -> Callable[[TensorForm], TensorForm]:
    """Register the decorated tensor form for injective `ops` on `dtypes`."""

    def register(form: TensorForm) -> TensorForm:
        for op in ops:
            TENSORS[op] = form
            DTYPES[op] = dtypes
        return form

    return register


def registered() -> None:
    """Import the modules that register ember's own strategies."""
    from ember.strategy import elementwise, logic, nn, reduce, tensor

    del elementwise, logic, nn, reduce, tensor


def as_expr(value: Value) -> te.Expr:
    """A number as a float32 constant; an expression as itself."""
    return value if isinstance(value, te.Expr) else te.const(float(value))


def tensor_operand(value: te.Tensor | te.Expr | float, op: Operation) -> te.Tensor:
    """`value` as a tensor: an injective form's operand must not be a literal."""
    if isinstance(value, te.Tensor):
        return value
    raise StrategyError(
        f"'{op.name}': expected a tensor operand, got the constant {value}"
    )
