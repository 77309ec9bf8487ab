"""Indexing by values: gather (`graph.gather`, TVM's `take`). Injective, so a
gather joins the elementwise ops around it in one loop nest: an embedding
lookup and the position embeddings added to it are one kernel.

argmax / argmin (`graph.argmax`, `graph.argmin`) are two reductions, since a
te combiner holds one value: the extreme value along the axis, then the
smallest (or, with select_last_index, largest) index holding it.

    peak[i] = max(x[i, k] for k)
    index[i] = min(k if x[i, k] == peak[i] else n for k)
"""

from __future__ import annotations

import math

import numpy as np

from ember import te
from ember.dialects.graph_index import SCATTER_REDUCTIONS, gather_axis
from ember.topi.elementwise import inline_injective
from ember.topi.kernel import Epilogue, Kernel, apply_epilogue, epilogue_inputs
from ember.topi.reduce import PROD_REDUCER


def gather(data: te.Tensor, indices: te.Tensor, axis: int, name: str = "gather"):
    """data's entries along `axis` at `indices` (negative ones counted from
    the end, out-of-range ones clamped, as `graph.gather` defines)."""
    axis = gather_axis(axis, len(data.shape))
    n = data.shape[axis]
    k = len(indices.shape)
    shape = (*data.shape[:axis], *indices.shape, *data.shape[axis + 1 :])

    def element(*i: te.Expr) -> te.Expr:
        v = indices[tuple(i[axis : axis + k])].astype("index")
        v = te.if_then_else(v < 0, v + n, v)
        v = te.min(te.max(v, 0), n - 1)
        return data[(*i[:axis], v, *i[axis + k :])]

    return te.compute(shape, element, name=name)


def arg_reduce(
    x: te.Tensor,
    kind: str,
    axis: int = 0,
    keepdims: bool = True,
    select_last_index: bool = False,
    epilogue: Epilogue | None = None,
    epilogue_tensors: list[te.Tensor] | None = None,
    name: str | None = None,
) -> Kernel:
    """graph.argmax (`kind` "max") or graph.argmin ("min") of placeholder `x`
    along `axis`, as int64."""
    name = name or f"arg{kind}"
    axis = gather_axis(axis, x.ndim)
    n = x.shape[axis]
    kept = tuple(e for d, e in enumerate(x.shape) if d != axis) or (1,)
    extreme = te.max if kind == "max" else te.min

    def at(i: tuple[te.Expr, ...], k: te.Expr) -> te.Expr:
        i = i[: x.ndim - 1]
        return x[(*i[:axis], k, *i[axis:])]

    k = te.reduce_axis((0, n), "k")
    peak = te.compute(kept, lambda *i: extreme(at(i, k), axis=k), name=f"{name}.peak")
    j = te.reduce_axis((0, n), "j")
    if select_last_index:
        found = lambda *i: te.max(  # noqa: E731
            te.select(at(i, j) == peak[i], j.astype("int64"), -1), axis=j
        )
    else:
        found = lambda *i: te.min(  # noqa: E731
            te.select(at(i, j) == peak[i], j.astype("int64"), n - 1), axis=j
        )
    index = te.compute(kept, found, name=f"{name}.index")
    shape = tuple(
        1 if d == axis else e for d, e in enumerate(x.shape) if keepdims or d != axis
    )

    def element(*i: te.Expr) -> te.Expr:
        row = tuple(v for d, v in enumerate(i) if not keepdims or d != axis)
        value = index[row if x.ndim > 1 else (0,)]
        return apply_epilogue(epilogue, te.max(value, te.const(0, "int64")), i)

    out = te.compute(shape, element, name=name)
    return Kernel(
        out,
        [x, *epilogue_inputs(epilogue_tensors)],
        schedule_fn=inline_injective,
        attrs={"pattern": "reduce", "kind": f"arg{kind}"},
    )


def scatter_nd(
    data: te.Tensor,
    indices: te.Tensor,
    updates: te.Tensor,
    reduction: int = 0,
    epilogue: Epilogue | None = None,
    epilogue_tensors: list[te.Tensor] | None = None,
    name: str = "scatter_nd",
) -> Kernel:
    """graph.scatter_nd: each output element looks through the M index rows
    for those naming its slice (quadratic, M x the data's size, which suits
    the masks and small tables scatters build; not large embeddings). With no
    reduction the last matching row wins, found as the largest matching row
    number, then read; otherwise the matching updates combine with the data
    element (rows that do not match contribute the combiner's identity)."""
    m, q = indices.shape
    dims = data.shape[:q]
    k = te.reduce_axis((0, m), "k")

    def matches(head: tuple[te.Expr, ...]) -> te.Expr:
        found: te.Expr | None = None
        for c, (i, n) in enumerate(zip(head, dims, strict=True)):
            v = indices[k, c].astype("int64")
            hit = te.if_then_else(v < 0, v + n, v) == i.astype("int64")
            found = hit if found is None else te.all(found, hit)
        assert found is not None
        return found

    kind = SCATTER_REDUCTIONS[reduction]
    if kind == "none":
        last = te.compute(
            dims,
            lambda *i: te.max(te.select(matches(i), k.astype("int64"), -1), axis=k),
            name=f"{name}.row",
        )

        def element(*i: te.Expr) -> te.Expr:
            row = last[i[:q]]
            picked = updates[(te.max(row, 0).astype("index"), *i[q:])]
            return te.if_then_else(row >= 0, picked, data[i])

    else:
        combine, identity = {
            "add": (te.sum, 0),
            "mul": (PROD_REDUCER, 1),
            "max": (te.max, _extreme(data.dtype, low=True)),
            "min": (te.min, _extreme(data.dtype, low=False)),
        }[kind]
        fill = te.const(identity, data.dtype)
        total = te.compute(
            data.shape,
            lambda *i: combine(
                te.select(matches(i[:q]), updates[(k, *i[q:])], fill), axis=k
            ),
            name=f"{name}.total",
        )
        merge = {
            "add": lambda a, b: a + b,
            "mul": lambda a, b: a * b,
            "max": te.max,
            "min": te.min,
        }[kind]

        def element(*i: te.Expr) -> te.Expr:
            return merge(data[i], total[i])

    out = te.compute(
        data.shape,
        lambda *i: apply_epilogue(epilogue, element(*i), i),
        name=name,
    )
    return Kernel(
        out,
        [data, indices, updates, *epilogue_inputs(epilogue_tensors)],
        attrs={"pattern": "scatter"},
    )


def _extreme(dtype: str, low: bool) -> float | int:
    """The identity of max (`low`) or min: an infinity, or the integer
    type's end (0 for unsigned max)."""
    if dtype.startswith("float"):
        return -math.inf if low else math.inf
    info = np.iinfo(dtype)
    return int(info.min if low else info.max)
