"""`graph-mixed-precision`: each layer in bfloat16 where a calibration batch
shows its error stays under a bound, float32 elsewhere (`precision="auto"`).

    ember-opt model.onnx -p 'graph-mixed-precision{bound=0.01}' --mcpu znver4
    ember.compile_model("m.onnx", precision="auto", calibration=[{"x": x0}, ...])

The layers that can take bfloat16 products (`takes_bf16`: convolutions of one
group, dense layers, matmuls by a weight) are measured one by one, as TVM's
ToMixedPrecision would convert them but guarded by data: the graph runs on the
calibration batch in numpy (`graph_reference`); each such layer is evaluated
again on its float32 inputs with its activations and weights rounded to
bfloat16, as the kernels of `topi.bf16` round them; its error is

    |y_bf16 - y_f32| / |y_f32|          (2-norms over the whole batch)

and the layer is marked `ember.precision = "bf16"` where that is at most
`bound`, `"float32"` where it is more. `convert-graph-to-te` then builds each
marked layer in its precision. A well-conditioned layer's error is a few units
of bfloat16's rounding (2^-9 relative per operand); it grows where the sum
cancels (outputs small against their terms), which is where float32 stays.

Without a calibration batch (`calibrate`, or the `calibration` option: an
`.npz` of the inputs by name) the inputs are synthetic: standard normal floats,
zero integers, a symbolic size `SYNTHETIC_SIZE`. Where numpy cannot run the
graph (ops of symbolic sizes, as a transformer exported with a dynamic
sequence has), each layer is measured alone, on standard normal data and its
weights, with a warning. On a target without a bfloat16 dot product nothing is
marked: every layer stays float32.
"""

import warnings
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass

import numpy as np
from xdsl.context import Context
from xdsl.dialects import func
from xdsl.dialects.builtin import ModuleOp, StringAttr, TensorType
from xdsl.ir import Block, BlockArgument, Operation, SSAValue
from xdsl.passes import ModulePass
from xdsl.utils.exceptions import PassFailedException

from ember.dialects import graph
from ember.dialects.graph_base import dtype_of
from ember.dialects.graph_numpy import bf16_halves
from ember.dialects.graph_shapes import dims_of
from ember.passes.graph_reference import evaluate

PRECISION_ATTR = "ember.precision"
"""The attribute a layer's precision is marked with: "float32" or "bf16"."""

BOUND = 2**-6
"""The largest relative error (2-norm of the difference over the 2-norm of the
float32 output, on the calibration batch) a layer may show in bfloat16: 1.6%,
about seven times a well-conditioned layer's (0.20-0.29% on every layer of
ResNet-18, MobileNetV2 and a BERT encoder: both operands rounded, 2^-9
relative each, errors of random sign)."""

SYNTHETIC_SIZE = 4
"""A symbolic size's value in the synthetic calibration batch."""

_EXAMPLES: ContextVar[Sequence[Mapping[str, np.ndarray]] | None] = ContextVar(
    "ember_calibration", default=None
)


@contextmanager
def calibrate(
    examples: Mapping[str, np.ndarray] | Sequence[Mapping[str, np.ndarray]] | None,
) -> Iterator[None]:
    """Measure `graph-mixed-precision` run inside the block on `examples`: the
    model's inputs by name, or a list of them (None: a synthetic example)."""
    if isinstance(examples, Mapping):
        examples = [examples]
    token = _EXAMPLES.set(examples)
    try:
        yield
    finally:
        _EXAMPLES.reset(token)


def takes_bf16(op: Operation) -> bool:
    """Whether `op` has a bfloat16 kernel (`strategy.nn`): a convolution of
    one group, a dense layer, a 2-D matmul by a param or literal."""
    if isinstance(op, graph.Conv2DOp):
        return op.config["groups"] == 1
    if isinstance(op, graph.DenseOp):
        return True
    if isinstance(op, graph.MatmulOp):
        a, b = (v.type for v in op.operands)
        return (
            is_weight(op.operands[1])
            and isinstance(a, TensorType)
            and isinstance(b, TensorType)
            and len(b.get_shape()) == 2
            and len(a.get_shape()) >= 2
        )
    return False


def is_weight(value: SSAValue) -> bool:
    """Whether a graph value is a param or constant (a block argument of a
    fused group: the group's operand)."""
    if isinstance(value, BlockArgument):
        parent = value.owner.parent_op()
        if isinstance(parent, graph.FusedOp):
            value = parent.inputs[value.index]
    return isinstance(value.owner, graph.ParamOp | graph.ConstantOp)


def marked_precision(op: Operation) -> str | None:
    """The precision `op` is marked with (`PRECISION_ATTR`), or None."""
    attr = op.attributes.get(PRECISION_ATTR)
    return attr.data if isinstance(attr, StringAttr) else None


def rounded(x: np.ndarray) -> np.ndarray:
    """float32 `x` rounded to bfloat16 (to nearest, ties to even, NaNs kept),
    as float32 values."""
    return (bf16_halves(x) << 16).view(np.float32)


@dataclass
class Error:
    """A layer's error over calibration examples: the squared 2-norms of its
    bfloat16 result's difference and of its float32 result."""

    diff: float = 0.0
    norm: float = 0.0

    def __add__(self, other: "Error") -> "Error":
        return Error(self.diff + other.diff, self.norm + other.norm)

    @property
    def relative(self) -> float:
        if self.norm == 0:
            return 0.0 if self.diff == 0 else float("inf")
        return float(np.sqrt(self.diff / self.norm))


def layer_error(op: Operation, inputs: list[np.ndarray], y: np.ndarray) -> Error:
    """The error of `op` in bfloat16 on `inputs` (its float32 operands) against
    its float32 result `y`, both product operands rounded, a bias not."""
    low = [rounded(v) if i < 2 else v for i, v in enumerate(inputs)]
    diff = (evaluate(op, low) - y).astype(np.float64)
    return Error(
        float(np.sum(diff * diff)), float(np.sum(np.square(y, dtype=np.float64)))
    )


@dataclass(frozen=True)
class GraphMixedPrecision(ModulePass):
    """Marks each layer that has a bfloat16 kernel "bf16" or "float32" by its
    error on a calibration batch (see the module's doc)."""

    name = "graph-mixed-precision"

    bound: float = BOUND
    calibration: str = ""
    """An `.npz` of the inputs by name (one example); "": the examples of
    `calibrate`, else a synthetic one."""

    def apply(self, ctx: Context, op: ModuleOp) -> None:
        from ember.backends.llvm.target import Target
        from ember.backends.source.target import target_of
        from ember.passes.convert_dot_to_llvm import bf16_instructions

        try:
            target = target_of(op)
        except ValueError as e:
            raise PassFailedException(f"graph-mixed-precision: {e}") from None
        if not (isinstance(target, Target) and bf16_instructions(target)):
            return
        examples = self._examples()
        for f in op.ops:
            if isinstance(f, func.FuncOp) and f.sym_name.data == "main":
                _mark(f, examples, self.bound)

    def _examples(self) -> Sequence[Mapping[str, np.ndarray]] | None:
        if not self.calibration:
            return _EXAMPLES.get()
        try:
            with np.load(self.calibration) as data:
                return [{name: data[name] for name in data.files}]
        except (OSError, ValueError) as e:
            raise PassFailedException(
                f"graph-mixed-precision: cannot read the calibration batch "
                f"'{self.calibration}': {e}"
            ) from None


def _mark(
    main: func.FuncOp,
    examples: Sequence[Mapping[str, np.ndarray]] | None,
    bound: float,
) -> None:
    """Mark `main`'s unmarked layers by their error over `examples`."""
    from ember.passes.graph_plan_memory import io_names

    args = main.body.block.args
    names = io_names(main.arg_attrs, len(args), "input")
    measure = _Measure()
    try:
        for example in examples or [None]:
            inputs = [
                _input(name, arg, example)
                for name, arg in zip(names, args, strict=True)
            ]
            measure.block(main.body.block, inputs)
    except _CannotRun as e:
        warnings.warn(
            f"graph-mixed-precision: the calibration cannot run through the "
            f"graph in numpy ({e}); each layer is measured alone on standard "
            "normal inputs instead",
            stacklevel=2,
        )
        measure = _Measure()
        measure.alone(main.body.block)
    for op, error in measure.errors.items():
        chosen = "bf16" if error.relative <= bound else "float32"
        op.attributes[PRECISION_ATTR] = StringAttr(chosen)


class _Measure:
    """Runs a graph on examples in numpy, summing each unmarked layer's error."""

    def __init__(self):
        from ember.passes.bound_params import bound_params

        bound = bound_params()
        self.params = bound.values if bound else {}
        self.errors: dict[Operation, Error] = {}

    def block(self, block: Block, inputs: list[np.ndarray]) -> list[np.ndarray]:
        env: dict[SSAValue, np.ndarray] = dict(zip(block.args, inputs, strict=True))
        for op in block.ops:
            if isinstance(op, func.ReturnOp | graph.YieldOp):
                return [env[v] for v in op.operands]
            values = [env[v] for v in op.operands]
            if isinstance(op, graph.ParamOp):
                env[op.result] = self._param(op)
            elif isinstance(op, graph.FusedOp):
                (env[op.results[0]],) = self.block(op.body.block, values)
            else:
                env[op.results[0]] = self._evaluate(op, values)
        return []

    def _param(self, op: graph.ParamOp) -> np.ndarray:
        name = op.param_name.data
        if name not in self.params:
            raise PassFailedException(
                f"graph-mixed-precision: param '{name}' has no value; measuring "
                "each layer needs the weights (compile the model with its params, "
                "or ask for precision 'bf16' or 'float32')"
            )
        return np.asarray(self.params[name])

    def _evaluate(self, op: Operation, values: list[np.ndarray]) -> np.ndarray:
        try:
            with np.errstate(all="ignore"):
                y = evaluate(op, values)
        except Exception as e:  # an op numpy cannot run here: symbolic sizes
            raise _CannotRun(f"'{op.name}': {e}") from None
        if takes_bf16(op) and marked_precision(op) is None:
            self.errors[op] = self.errors.get(op, Error()) + layer_error(op, values, y)
        return y

    def alone(self, block: Block) -> None:
        """Measure each unmarked layer of `block` on standard normal data of
        its input's shape (a symbolic size `SYNTHETIC_SIZE`) and its weights:
        where the graph cannot run, the weights' conditioning alone."""
        rng = np.random.default_rng(0)
        for op in block.ops:
            if not takes_bf16(op) or marked_precision(op) is not None:
                continue
            shape = [
                d if isinstance(d, int) else SYNTHETIC_SIZE
                for d in dims_of(op.operands[0].type)  # type: ignore[arg-type]
            ]
            values = [rng.standard_normal(shape).astype(np.float32)]
            for v in op.operands[1:]:
                owner = v.owner
                if isinstance(owner, graph.ParamOp):
                    values.append(self._param(owner))
                elif isinstance(owner, graph.ConstantOp):
                    values.append(owner.numpy())
                else:
                    break
            else:
                y = evaluate(op, values)
                self.errors[op] = layer_error(op, values, y)


class _CannotRun(Exception):
    """The calibration cannot run through the graph in numpy."""


def _input(
    name: str, arg: SSAValue, example: Mapping[str, np.ndarray] | None
) -> np.ndarray:
    """The calibration value of input `name` (`arg` of @main): the example's,
    or a synthetic one of its type."""
    t = arg.type
    assert isinstance(t, TensorType)
    dtype = dtype_of(t.element_type)
    dims = dims_of(t)
    if example is None:
        shape = [d if isinstance(d, int) else SYNTHETIC_SIZE for d in dims]
        if np.issubdtype(dtype, np.floating):
            return np.random.default_rng(0).standard_normal(shape).astype(dtype)
        return np.zeros(shape, dtype)
    if name not in example:
        raise PassFailedException(
            f"graph-mixed-precision: the calibration example has no input "
            f"'{name}' (it has {sorted(example)})"
        )
    value = np.asarray(example[name], dtype=dtype)
    fits = value.ndim == len(dims) and all(
        not isinstance(d, int) or d == n for d, n in zip(dims, value.shape, strict=True)
    )
    if not fits:
        raise PassFailedException(
            f"graph-mixed-precision: calibration input '{name}' has shape "
            f"{value.shape}; the model's is {tuple(map(str, dims))}"
        )
    return value


__all__ = [
    "BOUND",
    "Error",
    "PRECISION_ATTR",
    "GraphMixedPrecision",
    "calibrate",
    "is_weight",
    "layer_error",
    "marked_precision",
    "rounded",
    "takes_bf16",
]
