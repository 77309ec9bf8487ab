"""The static memory plan of an ahead-of-time model: one workspace for every
intermediate tensor, offsets reused by liveness.

A model's kernels run in one fixed (topological) order, so the lifetime of each
intermediate is known at compile time: from the step that writes it to the last
step that reads it. Two tensors whose lifetimes intersect need disjoint bytes;
the others may share. `plan_memory` places the tensors greedily by size, each at
the lowest 64-byte aligned offset free of every already placed tensor it is live
with (the "greedy by size" heuristic of TFLite's and TVM's planners), so the
workspace is usually close to the peak of live bytes, never more than their sum.

A tensor may alias another (a reshape or flatten of a contiguous tensor is the
same bytes seen with another shape): it takes its root's offset, and the root
lives as long as any of its aliases.

    plan = plan_memory([
        TensorLife("a", 4096, 0, 1),      # written by step 0, last read by step 1
        TensorLife("b", 4096, 1, 2),
        TensorLife("c", 4096, 2, 3),      # may reuse a's bytes
    ])
    plan.offsets == {"a": 0, "b": 4096, "c": 0}; plan.workspace_bytes == 8192
"""

from __future__ import annotations

from dataclasses import dataclass

from ember.runtime.errors import EmberValueError
from ember.runtime.shape_expr import Sym, SymExpr, evaluate, sym_floordiv

ALIGNMENT = 64
"""Every tensor starts on a cache line (and a full AVX-512 vector)."""


@dataclass(frozen=True)
class TensorLife:
    """One intermediate tensor: its size and the steps it is live in.

    Attributes:
        name: unique among the planned tensors.
        nbytes: its size in bytes.
        first: the step that writes it.
        last: the last step that reads it (`>= first`; equal if nothing reads it).
        alias_of: the name of a tensor whose bytes this one reuses (a reshape);
            None for a tensor with storage of its own.
    """

    name: str
    nbytes: int
    first: int
    last: int
    alias_of: str | None = None


@dataclass(frozen=True)
class MemoryPlan:
    """Where each tensor lives in the workspace.

    Attributes:
        offsets: tensor name -> byte offset (aliases share their root's).
        workspace_bytes: the workspace size (a multiple of `ALIGNMENT`).
        total_bytes: what the tensors would take without reuse (for reports).
    """

    offsets: dict[str, int]
    workspace_bytes: int
    total_bytes: int


def _align(n: int) -> int:
    return -(-n // ALIGNMENT) * ALIGNMENT


def _roots(tensors: list[TensorLife]) -> dict[str, str]:
    """Each tensor's root: the tensor with storage that its alias chain ends in."""
    by_name = {t.name: t for t in tensors}
    if len(by_name) != len(tensors):
        seen: set[str] = set()
        duplicate = next(t.name for t in tensors if t.name in seen or seen.add(t.name))
        raise EmberValueError(f"plan_memory: tensor '{duplicate}' is given twice")
    roots: dict[str, str] = {}
    for t in tensors:
        chain = [t.name]
        current = t
        while current.alias_of is not None:
            if current.alias_of not in by_name:
                raise EmberValueError(
                    f"plan_memory: tensor '{current.name}' aliases "
                    f"'{current.alias_of}', which is not planned"
                )
            current = by_name[current.alias_of]
            if current.name in chain:
                raise EmberValueError(
                    f"plan_memory: alias cycle {' -> '.join([*chain, current.name])}"
                )
            chain.append(current.name)
        if t.nbytes > current.nbytes:
            raise EmberValueError(
                f"plan_memory: tensor '{t.name}' ({t.nbytes} bytes) cannot alias "
                f"'{current.name}' ({current.nbytes} bytes)"
            )
        roots[t.name] = current.name
    return roots


def plan_memory(tensors: list[TensorLife]) -> MemoryPlan:
    """Place `tensors` in one workspace, reusing the bytes of dead tensors.

    Args:
        tensors: the intermediates with their sizes and live steps.

    Returns:
        The offsets and the workspace size.

    Raises:
        ValueError: a bad lifetime, a duplicate name, or a bad alias.

    Example:
        >>> plan_memory([TensorLife("a", 100, 0, 1), TensorLife("b", 100, 2, 3)])
        MemoryPlan(offsets={'a': 0, 'b': 0}, workspace_bytes=128, total_bytes=256)
    """
    for t in tensors:
        if t.nbytes < 0 or t.last < t.first:
            raise EmberValueError(
                f"plan_memory: tensor '{t.name}': expected nbytes >= 0 and "
                f"last >= first, got nbytes={t.nbytes}, first={t.first}, "
                f"last={t.last}"
            )
    roots = _roots(tensors)
    # A root lives from its first write to the last read of it or any alias.
    spans: dict[str, tuple[int, int, int]] = {}
    for t in tensors:
        root = roots[t.name]
        size, first, last = spans.get(root, (0, t.first, t.last))
        own = t.nbytes if root == t.name else 0
        spans[root] = (max(size, own), min(first, t.first), max(last, t.last))
    order = sorted(spans, key=lambda r: (-spans[r][0], spans[r][1], r))
    placed: list[tuple[int, int, int, int]] = []  # (offset, end, first, last)
    offsets: dict[str, int] = {}
    for root in order:
        size, first, last = spans[root]
        size = _align(max(size, 1))
        busy = sorted(
            (start, end)
            for start, end, f, la in placed
            if f <= last and first <= la  # lifetimes intersect
        )
        offset = 0
        for start, end in busy:
            if offset + size <= start:
                break
            offset = max(offset, end)
        offsets[root] = offset
        placed.append((offset, offset + size, first, last))
    workspace = max((end for _, end, _, _ in placed), default=0)
    return MemoryPlan(
        offsets={t.name: offsets[roots[t.name]] for t in tensors},
        workspace_bytes=workspace,
        total_bytes=sum(_align(t.nbytes) for t in tensors if t.alias_of is None),
    )


@dataclass(frozen=True)
class SymbolicPlan:
    """A workspace plan over symbolic sizes (`plan_symbolic`).

    Attributes:
        offsets: tensor name -> byte offset, an int or an expression.
        workspace_bytes: the workspace size, an int or an expression.
        total_bytes: what the tensors would take without reuse, at the
            representative sizes (for reports).
    """

    offsets: dict[str, int | SymExpr]
    workspace_bytes: int | SymExpr
    total_bytes: int


def plan_symbolic(
    tensors: list[tuple[str, int | SymExpr, int, int]], sizes: dict[str, int]
) -> SymbolicPlan:
    """Place tensors whose sizes are expressions over size symbols: (name,
    nbytes, first, last) each, `sizes` the symbols' representative values.

    The tensors are placed as `plan_memory` places them at those sizes; then
    each tensor sits above every tensor placed below it that it is live with,
    at any size: its offset is the end of the highest of them, an upper bound
    kept a polynomial (`upper_bound`: the coefficient-wise maximum of the
    candidates, ceilings bounded above) and aligned up, so no two live
    tensors meet whatever values the symbols take. The workspace is the
    largest end.

    Example:
        >>> n = Sym("n")
        >>> plan = plan_symbolic([("a", 4 * n, 0, 1), ("b", 4 * n, 1, 2)], {"n": 16})
        >>> plan.offsets["b"]
        64 * ((4 * n + 126) // 64)
    """
    lives = [
        TensorLife(name, evaluate(nbytes, sizes), first, last)
        for name, nbytes, first, last in tensors
    ]
    planned = plan_memory(lives)
    size = {name: upper_bound(nbytes) for name, nbytes, _, _ in tensors}
    order = sorted(lives, key=lambda t: (planned.offsets[t.name], t.first, t.name))
    start: dict[str, int | SymExpr] = {}  # an upper bound of each offset, unaligned
    done: list[TensorLife] = []
    end: int | SymExpr = 0
    for t in order:
        low: int | SymExpr = 0
        for below in done:
            if below.first <= t.last and t.first <= below.last:
                low = poly_max(
                    low, start[below.name] + ALIGNMENT - 1 + size[below.name]
                )
        start[t.name] = low
        end = poly_max(end, low + ALIGNMENT - 1 + size[t.name])
        done.append(t)
    return SymbolicPlan(
        {name: _aligned(low) for name, low in start.items()},
        _aligned(poly_max(end, ALIGNMENT)),
        planned.total_bytes,
    )


def _aligned(value: int | SymExpr) -> int | SymExpr:
    return sym_floordiv(value + ALIGNMENT - 1, ALIGNMENT) * ALIGNMENT


def upper_bound(value: int | SymExpr) -> int | SymExpr:
    """An expression at least `value` for every value of the symbols (sizes:
    never negative) whose terms are all non-negative: positive coefficients
    of products of symbols and of `//` of such sums by positive ints. So
    `poly_max` of two of them bounds both. `8 * ((n + 7) // 8)` stays itself,
    `-8 * ((-n) // 8)` (a ceiling) becomes `8 * ((n + 7) // 8)`."""
    if isinstance(value, int):
        return max(value, 0)
    total: int | SymExpr = max(value.const, 0)
    for monomial, coeff in value.terms:
        symbols = [a for a in monomial if a.op is None]
        atoms = [a for a in monomial if a.op is not None]
        factor: int | SymExpr = abs(coeff)
        for a in symbols:
            factor = factor * Sym(a.name)
        if coeff > 0:
            for atom in atoms:
                factor = factor * _atom_upper(atom)
        elif len(atoms) == 1 and atoms[0].op == "floordiv":
            # -(a // c) is (-a + c - 1) // c, at most (upper(-a) + c - 1) // c
            a, c = atoms[0].args
            if not (isinstance(c, int) and c > 0):
                raise EmberValueError(f"cannot bound the size {value} above")
            factor = factor * sym_floordiv(upper_bound(-a) + c - 1, c)
        elif all(atom.op == "mod" or _nonneg(atom) for atom in atoms):
            continue  # a non-positive term
        else:
            raise EmberValueError(f"cannot bound the size {value} above")
        total = total + factor
    return total


def _atom_upper(atom) -> int | SymExpr:
    a, b = atom.args
    if atom.op == "mod" and isinstance(b, int) and b > 0:
        return b - 1
    if atom.op == "floordiv" and isinstance(b, int) and b > 0:
        return sym_floordiv(upper_bound(a), b)
    if atom.op in ("min", "max"):
        x, y = upper_bound(a), upper_bound(b)
        return poly_max(x, y)
    raise EmberValueError(f"cannot bound the size {atom.text()} above")


def _nonneg(atom) -> bool:
    from ember.runtime.shape_expr import sym_le

    return sym_le(0, SymExpr(((((atom,), 1),)), 0))


def poly_max(a: int | SymExpr, b: int | SymExpr) -> int | SymExpr:
    """The coefficient-wise maximum of two polynomials with non-negative
    coefficients: at least each of them for all non-negative symbols."""
    ta = dict(a.terms) if isinstance(a, SymExpr) else {}
    tb = dict(b.terms) if isinstance(b, SymExpr) else {}
    ca = a.const if isinstance(a, SymExpr) else a
    cb = b.const if isinstance(b, SymExpr) else b
    terms = {m: max(ta.get(m, 0), tb.get(m, 0)) for m in {*ta, *tb}}
    return SymExpr._make(terms, max(ca, cb))


@dataclass(frozen=True)
class BufferPlan:
    """Which buffer each tensor lives in, where a kernel argument must be a
    whole buffer (an OpenCL `cl_mem`, a Vulkan binding).

    Attributes:
        slots: tensor name -> the index of its buffer.
        sizes: each buffer's bytes (the largest tensor it holds, aligned).
        total_bytes: what the tensors would take without reuse.
    """

    slots: dict[str, int]
    sizes: list[int]
    total_bytes: int


def plan_buffers(tensors: list[TensorLife]) -> BufferPlan:
    """Give `tensors` buffers, a buffer reused once every tensor in it is dead.

    In the order tensors are written, each takes the free buffer (free: its
    last tensor died before this one's first step) whose size is closest to
    its own, growing it if needed, else a new one. Aliases are refused: a
    view is given its root's buffer by the caller.

    Example:
        >>> plan_buffers([TensorLife("a", 100, 0, 1), TensorLife("b", 60, 2, 3)])
        BufferPlan(slots={'a': 0, 'b': 0}, sizes=[128], total_bytes=192)
    """
    slots: dict[str, int] = {}
    sizes: list[int] = []
    free_after: list[int] = []  # the last step a buffer's tensor is read in
    for t in sorted(tensors, key=lambda t: (t.first, t.last, t.name)):
        if t.alias_of is not None or t.nbytes < 0 or t.last < t.first:
            raise EmberValueError(f"plan_buffers: tensor '{t.name}' is not plannable")
        size = _align(max(t.nbytes, 1))
        free = [i for i, last in enumerate(free_after) if last < t.first]
        if free:
            i = min(free, key=lambda i: (abs(sizes[i] - size), i))
            sizes[i] = max(sizes[i], size)
            free_after[i] = t.last
        else:
            i = len(sizes)
            sizes.append(size)
            free_after.append(t.last)
        slots[t.name] = i
    total = sum(_align(max(t.nbytes, 1)) for t in tensors)
    return BufferPlan(slots=slots, sizes=sizes, total_bytes=total)


__all__ = [
    "ALIGNMENT",
    "BufferPlan",
    "MemoryPlan",
    "TensorLife",
    "SymbolicPlan",
    "plan_buffers",
    "plan_memory",
    "plan_symbolic",
]
