"""Shape inference for the `graph` dialect, on plain Python tuples.

Each function takes the operand shapes and the op's attributes as Python values and
returns the result shape, or raises `ShapeError` ("expected X, got Y") when the
operands or attributes do not fit. The ops' verifiers and `build_inferred` builders
(`dialects/graph.py`) share these, so what a builder accepts is what verifies.

A dimension is an `int` or a symbolic expression (`ember.runtime.shape_expr`:
`seq`, `seq + 1`, `batch * 12`), so the rules compute with Python's operators
and decide equalities with `sym_eq`. A tensor type carries its symbolic dims
as MLIR's dynamic dims plus an encoding naming each, in order:

    tensor<?x?x768xf32, ["batch", "seq + 1"]>      # dims_of: (batch, seq + 1, 768)
"""

from collections.abc import Callable, Sequence
from math import ceil

from xdsl.dialects import arith
from xdsl.dialects.builtin import (
    DYNAMIC_INDEX,
    ArrayAttr,
    MemRefType,
    NoneAttr,
    StringAttr,
    TensorType,
)
from xdsl.ir import Attribute, Operation, SSAValue
from xdsl.utils.exceptions import VerifyException

from ember.runtime.errors import EmberValueError
from ember.runtime.shape_expr import SymExpr, parse, sym_eq, sym_prod

Dim = int | SymExpr
"""A dimension: a known size or an expression."""
Shape = tuple[int, ...]
"""A shape as the rules see it. In a symbolic graph some dims are `SymExpr`s,
which compute as ints do (`+ - * // %`) and refuse to be compared as ints
(`sym_eq` decides), so the rules are typed for ints, the common case."""


class ShapeError(VerifyException, EmberValueError):
    """Operands or attributes an op cannot take; the message says what was expected."""


def dims_of(t: Attribute) -> Shape:
    """The dims of a tensor or memref type: ints, and the expressions its
    encoding names for its dynamic dims.

    Raises:
        ShapeError: a dynamic dim without its expression, or an encoding that
            is not one expression per dynamic dim.
    """
    assert isinstance(t, TensorType | MemRefType)
    shape = t.get_shape()
    dynamic = [i for i, d in enumerate(shape) if d < 0]
    if not dynamic:
        return tuple(shape)
    names = getattr(t, "encoding", None)
    if not isinstance(names, ArrayAttr) or len(names.data) != len(dynamic):
        raise ShapeError(
            f"expected a name for each dynamic dim of {t} (as in "
            'tensor<?x768xf32, ["seq"]>), got '
            + ("none" if names is None or isinstance(names, NoneAttr) else str(names))
        )
    dims: list = list(shape)
    for i, name in zip(dynamic, names.data, strict=True):
        if not isinstance(name, StringAttr):
            raise ShapeError(f"expected a dimension expression string, got {name}")
        try:
            dims[i] = parse(name.data)
        except EmberValueError as e:
            raise ShapeError(str(e)) from None
        if isinstance(dims[i], int):
            raise ShapeError(
                f"expected a symbolic expression for dynamic dim {i} of {t}, got "
                f"the constant {dims[i]}: write it as a static dim"
            )
    return tuple(dims)


def tensor_of(element: Attribute, dims: Sequence[Dim]) -> TensorType:
    """The tensor type of `element`s with `dims` (see the module docstring)."""
    symbolic = [str(d) for d in dims if isinstance(d, SymExpr)]
    if not symbolic:
        return TensorType(element, [d for d in dims if isinstance(d, int)])
    shape = [DYNAMIC_INDEX if isinstance(d, SymExpr) else d for d in dims]
    return TensorType(element, shape, ArrayAttr([StringAttr(n) for n in symbolic]))


def emit_dim(
    value: Dim,
    symbol: Callable[[str], SSAValue],
    constant: Callable[[int], SSAValue],
    add: Callable[[Operation], SSAValue],
) -> SSAValue:
    """`value` as an `index` value computed by `arith` ops: `symbol(name)`
    gives a size symbol's value, `constant(k)` an index constant, `add(op)`
    places an op and gives its result. `//` and `%` floor, as in Python."""
    if isinstance(value, int):
        return constant(value)
    total: SSAValue | None = None
    for monomial, coeff in value.terms:
        term = None if coeff == 1 else constant(coeff)
        for atom in monomial:
            if atom.op is None:
                x = symbol(atom.name)
            else:
                a, b = (emit_dim(v, symbol, constant, add) for v in atom.args)
                if atom.op in ("min", "max"):
                    less = add(arith.CmpiOp(a, b, "slt"))
                    x = add(
                        arith.SelectOp(less, *((a, b) if atom.op == "min" else (b, a)))
                    )
                else:  # floor semantics, as Python's: `-(-n // 8)` rounds up
                    x = add(arith.FloorDivSIOp(a, b))
                    if atom.op == "mod":
                        x = add(arith.SubiOp(a, add(arith.MuliOp(x, b))))
            term = x if term is None else add(arith.MuliOp(term, x))
        assert term is not None
        total = term if total is None else add(arith.AddiOp(total, term))
    assert total is not None  # an expression has a term
    if value.const:
        total = add(arith.AddiOp(total, constant(value.const)))
    return total


def is_static(shape: Sequence[Dim]) -> bool:
    """Whether every dim is an int."""
    return all(isinstance(d, int) for d in shape)


def _fmt(shape: Sequence[Dim]) -> str:
    if not shape:
        return "scalar"
    return "x".join(str(d) if isinstance(d, int) else f"{{{d}}}" for d in shape)


def _differ(a: Dim, b: Dim) -> bool:
    """Whether `a` and `b` are not known to be equal."""
    return sym_eq(a, b) is not True


def prod(dims) -> Dim:
    """The product of `dims` (1 for none), symbolic or not."""
    return sym_prod(dims)


def _expect_len(name: str, values: Sequence[int], n: int) -> None:
    if len(values) != n:
        raise ShapeError(f"expected {n} values in '{name}', got {len(values)}")


def expect_rank(what: str, shape: Shape, rank: int) -> None:
    if len(shape) != rank:
        raise ShapeError(f"expected {what} of rank {rank}, got {_fmt(shape)}")


def _positive(name: str, values: Sequence[int]) -> None:
    if any(v < 1 for v in values):
        raise ShapeError(f"expected positive '{name}', got {list(values)}")


def _non_negative(name: str, values: Sequence[int]) -> None:
    if any(v < 0 for v in values):
        raise ShapeError(f"expected non-negative '{name}', got {list(values)}")


def normalize_axis(axis: int, rank: int, what: str = "axis") -> int:
    """`axis` in [-rank, rank) as a non-negative index."""
    if not -rank <= axis < rank:
        raise ShapeError(f"expected {what} in [{-rank}, {rank}), got {axis}")
    return axis % rank


def broadcast(*shapes: Shape) -> Shape:
    """numpy's broadcasting of `shapes` (right-aligned, 1 stretches). A
    symbolic dim broadcasts with 1 and with itself; against another size it
    might be 1 or not, which the kernels cannot both compute, so it is
    refused."""
    rank = max(len(s) for s in shapes)
    out = []
    for i in range(rank):
        dims = {s[len(s) - rank + i] for s in shapes if len(s) - rank + i >= 0}
        dims.discard(1)
        if len(dims) > 1:
            got = " and ".join(_fmt(s) for s in shapes)
            raise ShapeError(f"expected broadcast-compatible shapes, got {got}")
        out.append(dims.pop() if dims else 1)
    return tuple(out)


def broadcast_to(shape: Shape, target: Shape, what: str) -> Shape:
    """`target`, when `shape` broadcasts to it (ONNX's unidirectional rule)."""
    if len(shape) > len(target) or any(
        d != 1 and _differ(d, t)
        for d, t in zip(shape[::-1], target[::-1], strict=False)
    ):
        raise ShapeError(
            f"expected {what} that broadcasts to {_fmt(target)}, got {_fmt(shape)}"
        )
    return target


def conv2d(
    x: Shape,
    w: Shape,
    b: Shape | None,
    strides: Sequence[int],
    padding: Sequence[int],
    dilation: Sequence[int],
    groups: int,
) -> Shape:
    expect_rank("data (NCHW)", x, 4)
    expect_rank("weight (OIHW)", w, 4)
    _expect_len("strides", strides, 2)
    _expect_len("padding", padding, 4)
    _expect_len("dilation", dilation, 2)
    _positive("strides", strides)
    _positive("dilation", dilation)
    _non_negative("padding", padding)
    if groups < 1:
        raise ShapeError(f"expected positive groups, got {groups}")
    n, c, h, wd = x
    o, i, kh, kw = w
    if not is_static((c, o, i, kh, kw)):
        raise ShapeError(
            f"expected static channels and kernel sizes, got data {_fmt(x)} and "
            f"weight {_fmt(w)}"
        )
    if c % groups:
        raise ShapeError(
            f"expected input channels divisible by groups {groups}, got {c}"
        )
    if o % groups:
        raise ShapeError(
            f"expected output channels divisible by groups {groups}, got {o}"
        )
    if i != c // groups:
        raise ShapeError(
            f"expected weight input channels {c // groups} (channels {c} / groups "
            f"{groups}), got {i}"
        )
    if b is not None and b != (o,):
        raise ShapeError(f"expected bias of shape {o}, got {_fmt(b)}")
    t, left, bot, r = padding
    oh = (h + t + bot - dilation[0] * (kh - 1) - 1) // strides[0] + 1
    ow = (wd + left + r - dilation[1] * (kw - 1) - 1) // strides[1] + 1
    if any(isinstance(d, int) and d < 1 for d in (oh, ow)):
        raise ShapeError(
            f"expected a kernel {kh}x{kw} that fits the padded input {h}x{wd}, "
            f"got an output of {oh}x{ow}"
        )
    return (n, o, oh, ow)


def dense(x: Shape, w: Shape, b: Shape | None) -> Shape:
    expect_rank("data (M, K)", x, 2)
    expect_rank("weight (N, K)", w, 2)
    if _differ(x[1], w[1]):
        raise ShapeError(f"expected weight with K = {x[1]}, got {_fmt(w)}")
    if b is not None and b != (w[0],):
        raise ShapeError(f"expected bias of shape {w[0]}, got {_fmt(b)}")
    return (x[0], w[0])


def matmul(a: Shape, b: Shape) -> Shape:
    if not a or not b:
        raise ShapeError(f"expected operands of rank >= 1, got {_fmt(a)} and {_fmt(b)}")
    a2 = (1, *a) if len(a) == 1 else a
    b2 = (*b, 1) if len(b) == 1 else b
    if _differ(a2[-1], b2[-2]):
        raise ShapeError(
            f"expected the contraction dims to match, got {_fmt(a)} and {_fmt(b)}"
        )
    out = (*broadcast(a2[:-2], b2[:-2]), a2[-2], b2[-1])
    if len(a) == 1:
        out = out[:-2] + out[-1:]
    if len(b) == 1:
        out = out[:-1]
    return out


def batch_matmul(a: Shape, b: Shape) -> Shape:
    expect_rank("lhs (B, M, K)", a, 3)
    expect_rank("rhs (B, K, N)", b, 3)
    if _differ(a[2], b[1]):
        raise ShapeError(f"expected rhs with K = {a[2]}, got {_fmt(b)}")
    if _differ(a[0], b[0]) and 1 not in (a[0], b[0]):
        raise ShapeError(f"expected equal batch sizes, got {a[0]} and {b[0]}")
    return (*broadcast((a[0],), (b[0],)), a[1], b[2])


def batch_norm(x: Shape, *channel_params: Shape) -> Shape:
    if len(x) < 2:
        raise ShapeError(f"expected data of rank >= 2, got {_fmt(x)}")
    for name, p in zip(("gamma", "beta", "mean", "var"), channel_params, strict=True):
        if p != (x[1],):
            raise ShapeError(f"expected {name} of shape {x[1]}, got {_fmt(p)}")
    return x


def pool2d(
    x: Shape,
    kernel: Sequence[int],
    strides: Sequence[int],
    padding: Sequence[int],
    dilation: Sequence[int],
    ceil_mode: bool,
) -> Shape:
    expect_rank("data (NCHW)", x, 4)
    _expect_len("kernel", kernel, 2)
    _expect_len("strides", strides, 2)
    _expect_len("padding", padding, 4)
    _expect_len("dilation", dilation, 2)
    _positive("kernel", kernel)
    _positive("strides", strides)
    _positive("dilation", dilation)
    _non_negative("padding", padding)
    out = []
    for d in range(2):
        size = x[2 + d] + padding[d] + padding[d + 2]
        span = dilation[d] * (kernel[d] - 1) + 1
        if isinstance(size, SymExpr):
            if ceil_mode:  # the last window's start would need a run-time test
                raise ShapeError(
                    f"expected a static axis {2 + d} for ceil_mode pooling, got "
                    f"{x[2 + d]}"
                )
            out.append((size - span) // strides[d] + 1)
            continue
        steps = (size - span) / strides[d]
        o = (ceil(steps) if ceil_mode else int(steps // 1)) + 1
        # as ONNX and PyTorch: the last window must start inside the input or its
        # leading padding
        if ceil_mode and (o - 1) * strides[d] >= x[2 + d] + padding[d]:
            o -= 1
        if o < 1 or size < span:
            raise ShapeError(
                f"expected a window {kernel[0]}x{kernel[1]} that fits the padded "
                f"input {x[2]}x{x[3]}, got an output of size {o} on axis {2 + d}"
            )
        out.append(o)
    return (x[0], x[1], *out)


def reshape(x: Shape, shape: Sequence[Dim]) -> Shape:
    """ONNX's Reshape rule: one -1 is inferred, 0 copies the input's dim."""
    dims = [x[i] if d == 0 and i < len(x) else d for i, d in enumerate(shape)]
    wrong = [d for d in dims if isinstance(d, int) and (d < -1 or d == 0)]
    if dims.count(-1) > 1 or wrong:
        raise ShapeError(
            f"expected positive dims with at most one -1, got {list(shape)}"
        )
    total = prod(x)
    if -1 in dims:
        known = prod(d for d in dims if d != -1)
        if sym_eq(total % known, 0) is not True:
            raise ShapeError(
                f"expected a shape dividing {total} elements, got {tuple(shape)}"
            )
        dims[dims.index(-1)] = total // known
    if _differ(prod(dims), total):
        raise ShapeError(
            f"expected a shape of {total} elements, got {_fmt(dims)} ({prod(dims)})"
        )
    return tuple(dims)  # type: ignore[return-value]  # dims: see Shape


def flatten(x: Shape, axis: int) -> Shape:
    if not -len(x) <= axis <= len(x):
        raise ShapeError(f"expected axis in [{-len(x)}, {len(x)}], got {axis}")
    if axis < 0:
        axis += len(x)
    return (prod(x[:axis]), prod(x[axis:]))  # type: ignore[return-value]


def transpose(x: Shape, perm: Sequence[int]) -> Shape:
    if sorted(perm) != list(range(len(x))):
        raise ShapeError(f"expected a permutation of 0..{len(x) - 1}, got {list(perm)}")
    return tuple(x[p] for p in perm)


def concat(shapes: Sequence[Shape], axis: int) -> Shape:
    if not shapes:
        raise ShapeError("expected at least one operand, got none")
    first = shapes[0]
    axis = normalize_axis(axis, len(first))
    for s in shapes[1:]:
        if len(s) != len(first) or any(
            _differ(a, b)
            for i, (a, b) in enumerate(zip(s, first, strict=True))
            if i != axis
        ):
            raise ShapeError(
                f"expected shapes equal except on axis {axis}, got {_fmt(first)} "
                f"and {_fmt(s)}"
            )
    return (*first[:axis], sum(s[axis] for s in shapes), *first[axis + 1 :])


def pad(x: Shape, pads: Sequence[int]) -> Shape:
    _expect_len("pads", pads, 2 * len(x))
    _non_negative("pads", pads)
    r = len(x)
    return tuple(d + pads[i] + pads[i + r] for i, d in enumerate(x))


def reduce(x: Shape, axes: Sequence[int], keepdims: bool) -> Shape:
    """Reduces `axes`, every axis when it is empty."""
    norm = [normalize_axis(a, len(x)) for a in axes] or list(range(len(x)))
    if len(set(norm)) != len(norm):
        raise ShapeError(f"expected distinct axes, got {list(axes)}")
    if keepdims:
        return tuple(1 if i in norm else d for i, d in enumerate(x))
    return tuple(d for i, d in enumerate(x) if i not in norm)
