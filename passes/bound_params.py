"""The values behind a compilation's `graph.param`s, for the passes that use them.

Weights are bound by name, as Relay binds params: the IR holds `graph.param
"conv1.weight" : tensor<...>` and the arrays live beside it, so big models never
pass through text. A pass that computes with weights (`graph-fold-constants`
folds them, `convert-graph-to-te` packs them into a kernel's layout) reads and
extends the params bound around it; run from text (`ember-opt`), with nothing
bound, the same passes change the IR alike and only compute no values.

    with bind_params(params) as bound:
        run(module, "graph-fold-constants,graph-fuse-ops,convert-graph-to-te")
    bound.values        # the originals, folded and packed params by name
"""

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field

import numpy as np


@dataclass
class BoundParams:
    """The params of one compilation by name; passes add the ones they make."""

    values: dict[str, np.ndarray] = field(default_factory=dict)


_BOUND: ContextVar[BoundParams | None] = ContextVar("ember_bound_params", default=None)


@contextmanager
def bind_params(params: Mapping[str, np.ndarray]) -> Iterator[BoundParams]:
    """Bind `params` for the passes run inside the block.

    Yields:
        The bound params; passes add folded and packed params to `values`.
    """
    bound = BoundParams(dict(params))
    token = _BOUND.set(bound)
    try:
        yield bound
    finally:
        _BOUND.reset(token)


def bound_params() -> BoundParams | None:
    """The params bound around the running pass, or None (IR only)."""
    return _BOUND.get()


__all__ = ["BoundParams", "bind_params", "bound_params"]
